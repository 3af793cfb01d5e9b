import ExperimentCore

/// Real-time segments (ODP) on the client: fetching a user's qualified segments (which decisions then
/// use for `qualified` audience conditions), reading and writing them directly, ODP events, the VUID.
extension Client {
    /// Fetches the user's qualified segments (cache first) and makes them the user's segments for
    /// decisions. Blocks up to `odp.fetch_timeout_ms`.
    public func fetchQualifiedSegments(userId: String, options: SegmentFetchOptions) throws(ClientError) -> [String] {
        let config = try config()
        try odp.ensureEnabled()
        odp.identifyIfFirstSeen(userId: userId, config: config)
        let result = odp.fetchSegments(userId: userId, config: config, options: options)
        Self.record(result, userId: userId, in: segments)
        return try result.get()
    }

    /// A fetch's outcome becomes the user's segments; a failed fetch leaves the user with none, as the
    /// reference's user context does (decisions must not run on segments ODP could not confirm).
    private static func record(_ result: Result<[String], ClientError>, userId: String, in store: QualifiedSegmentsStore) {
        switch result {
        case .success(let fetched): store.set(fetched, for: userId)
        case .failure(let error) where error.code == .fetchFailed || error.code == .invalidUserId:
            store.set(nil, for: userId)
        case .failure: break
        }
    }

    /// As `fetchQualifiedSegments`, on the ODP fetch thread; `completion` runs there exactly once when this
    /// call does not throw.
    public func fetchQualifiedSegmentsAsync(userId: String, options: SegmentFetchOptions,
                                            completion: @escaping @Sendable (Result<[String], ClientError>) -> Void)
        throws(ClientError)
    {
        let config = try config()
        try odp.ensureEnabled()
        odp.identifyIfFirstSeen(userId: userId, config: config)
        let store = segments
        try odp.fetchSegmentsAsync(userId: userId, config: config, options: options) { result in
            Self.record(result, userId: userId, in: store)
            completion(result)
        }
    }

    /// The user's qualified segments, or nil when none were fetched or set.
    public func qualifiedSegments(of userId: String) throws(ClientError) -> [String]? {
        try ensureOpen()
        return segments.segments(of: userId)?.names
    }

    /// Replaces the user's qualified segments (nil forgets them), bypassing ODP.
    public func setQualifiedSegments(_ list: [String]?, for userId: String) throws(ClientError) {
        try ensureOpen()
        segments.set(list, for: userId)
    }

    public func isQualified(userId: String, for segment: String) throws(ClientError) -> Bool {
        try ensureOpen()
        return segments.segments(of: userId)?.names.contains { $0.sameCodePoints(segment) } ?? false
    }

    /// Queues an identify event linking the user to the VUID (once per user and client).
    public func identifyUser(_ userId: String) throws(ClientError) {
        try ensureOpen()
        try odp.ensureEnabled()
        let config = try? config()
        guard odp.endpoint(for: config) != nil else {
            throw ClientError(.odpNotEnabled, "ODP is not integrated: the datafile has no odp integration and "
                              + "options.odp.host/api_key are not set")
        }
        odp.identifyIfFirstSeen(userId: userId, config: config)
    }

    /// Queues a custom ODP event (type defaults to "fullstack").
    public func sendODPEvent(type: String?, action: String, identifiers: [(String, String)],
                             data: JSONValue?) throws(ClientError)
    {
        try ensureOpen()
        try odp.ensureEnabled()
        guard !action.isEmpty else { throw ClientError(.invalidArgument, "ODP action is not valid (cannot be empty)") }
        guard !identifiers.isEmpty else {
            throw ClientError(.invalidArgument, "ODP events must have at least one key-value pair in identifiers")
        }
        let type = (type?.isEmpty ?? true) ? "fullstack" : type!
        try odp.sendEvent(type: type, action: action, identifiers: identifiers, data: data, config: try? config())
    }

    /// The visitor id of this client's state directory (created and persisted on first use).
    public func vuid() throws(ClientError) -> String {
        try ensureOpen()
        return odp.vuid()
    }
}
