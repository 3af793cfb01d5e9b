import ExperimentCore

/// How a synchronous start keeps its datafile fresh (the Swift SDK's synchronous modes).
public enum SyncDatafileUpdate: Int32, Sendable {
    /// Keep the datafile the start used (no fetching).
    case none = 0
    /// S1: fetch the newest datafile once in the background and cache it: it is used at the next start.
    case nextStart = 1
    /// S2 / S3: fetch the newest datafile in the background and use it at once; then poll every
    /// polling_interval_s (0: no polling, S2).
    case now = 2
}

extension Client {
    /// The synchronous start of the Swift SDK: at once, from the cached datafile of the last good fetch for
    /// the sdk_key (state_dir) when there is one, else from `bundled`; then keeps it fresh as `update` says.
    /// Returns where the datafile came from. With `givenFirst`, `bundled` wins over a cached datafile
    /// (optimizely-sdk's start with both a datafile and an sdk_key). Without an sdk_key there is no cache and no fetching: `bundled`
    /// is installed as by `start(datafile:)`.
    @discardableResult
    public func startSynchronously(bundled: [UInt8]?, update: SyncDatafileUpdate, givenFirst: Bool = false)
        throws(ClientError) -> DatafileSource
    {
        try ensureOpen()
        guard let sdkKey = options.sdkKey, !sdkKey.isEmpty else {
            guard let bundled else {
                throw ClientError(.invalidArgument, "a synchronous start needs a datafile, or an sdk_key whose datafile is cached")
            }
            try install(datafile: bundled, source: .start)
            return .start
        }
        let manager = ConfigManager(client: self, state: datafileState, sdkKey: sdkKey)
        guard datafileState.adopt(manager) else {
            throw ClientError(.invalidArgument, "the client was already started with datafile management")
        }
        if closed {
            datafileState.close()
            throw ClientError(.closed, "the client is closed")
        }
        let source = try manager.startSynchronously(bundled: bundled, givenFirst: givenFirst)
        // datafile_url_template "none" (EXPERIMENT_DATAFILE_URL_TEMPLATE=none, as test suites set it): no fetching.
        if update != .none && options.datafileURLTemplate != ClientOptions.disabledEventEndpoint {
            manager.runAfterSynchronousStart(applyNow: update == .now)
        }
        return source
    }
}
