import ExperimentCore

extension Client {
    /// optimizely-sdk's OptimizelyConfig of the datafile in use, as the JSON document
    /// `OptimizelyConfigDocument` describes. Computed once per config, on first request; needs the datafile
    /// text (the option "keep_datafile"), which the document carries and which it is computed from.
    public func optimizelyConfigJSON() throws(ClientError) -> String {
        try ensureOpen()
        let config = try self.config()
        if let cached = optimizelyConfigCache.withLock({ $0 }), cached.config === config { return cached.document }
        _ = try datafileText()  // the errors: not ready, text not kept
        // The config and its text are read together, so a revision swapped in meanwhile cannot mix them.
        let (current, text) = configWithDatafile
        guard let current, let text else { return try optimizelyConfigJSON() }
        let document: String
        do {
            document = try OptimizelyConfigDocument.build(datafile: text)
        } catch {
            throw ClientError(error)
        }
        optimizelyConfigCache.withLock { $0 = (current, document) }
        return document
    }
}
