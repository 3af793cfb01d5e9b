import ExperimentCore
#if canImport(Glibc)
import Glibc
#endif

/// Options of one segments fetch (bits of the C API's `options` argument).
public struct SegmentFetchOptions: OptionSet, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// Neither read nor write the segments cache for this fetch.
    public static let ignoreCache = SegmentFetchOptions(rawValue: 1)
    /// Empty the whole segments cache before fetching.
    public static let resetCache = SegmentFetchOptions(rawValue: 2)
    public static let all: SegmentFetchOptions = [.ignoreCache, .resetCache]
}

/// Real-time segments (ODP) of one client: where ODP is (options or the datafile's integration), the
/// segments cache and fetches, ODP events and the visitor id. Nothing here runs on the decision path;
/// threads and the state file are opened on first use.
public final class ODPManager: @unchecked Sendable {
    public let options: ODPOptions
    let logger: Logger
    private let stateDir: String?
    private let cache: SegmentCache
    /// The endpoint and segments the cache was filled for: a change resets it, as in the reference.
    private let cacheScope = Locked<String?>(nil)
    /// Users an identify event was sent for (bounded; "first seen" per client).
    private let identified: Locked<LRUCache<Bool>>
    private let state = Locked<LazyState>(LazyState())
    /// Guards the ODP connection to the state file (shared by the event queue and the VUID).
    private let databaseLock = Lock()
    /// The endpoint of the config in use, read by the event thread.
    private let currentEndpoint = Locked<ODPEndpoint?>(nil)

    private struct LazyState {
        var closed = false
        var fetchWorker: BackgroundWorker? = nil
        var fetchJobs: [@Sendable () -> Void] = []
        var database: SQLiteDatabase?? = nil
        var events: ODPEventQueue? = nil
        var vuid: String? = nil
    }

    /// How long close waits for queued ODP events to be delivered (the client's close_timeout_ms).
    private let closeTimeoutMs: Int

    public init(options: ODPOptions, stateDir: String?, closeTimeoutMs: Int = 2_000, logger: Logger) {
        self.options = options
        self.closeTimeoutMs = closeTimeoutMs
        self.stateDir = stateDir
        self.logger = logger
        cache = SegmentCache(capacity: options.segmentsCacheSize, timeoutSeconds: options.segmentsCacheTimeoutSeconds)
        identified = Locked(LRUCache(capacity: 10_000))
    }

    public var isEnabled: Bool { !options.disabled }

    /// Options win over the datafile's integration, field by field.
    public func endpoint(for config: ProjectConfig?) -> ODPEndpoint? {
        let host = options.host ?? config?.odpIntegration?.host
        let key = options.apiKey ?? config?.odpIntegration?.publicKey
        guard let host, !host.isEmpty, let key, !key.isEmpty else { return nil }
        return ODPEndpoint(host: host.hasSuffix("/") ? String(host.dropLast()) : host, apiKey: key)
    }

    func ensureEnabled() throws(ClientError) {
        guard isEnabled else { throw ClientError(.odpNotEnabled, "ODP is not enabled (options.odp.disabled is true)") }
    }

    /// ODP's identifier kind for a user id: visitor ids ("vuid_...") are anonymous users.
    public static func userKey(for userId: String) -> String {
        isVUID(userId) ? SegmentFetcher.vuidKey : SegmentFetcher.userIdKey
    }

    public static func isVUID(_ id: String) -> Bool { id.hasPrefix("vuid_") }

    // MARK: segments

    /// The segments of `config`'s audiences that `userId` qualifies for: from the cache, else from ODP.
    /// Blocking (up to the fetch timeout).
    public func fetchSegments(userId: String, config: ProjectConfig,
                              options fetchOptions: SegmentFetchOptions) -> Result<[String], ClientError>
    {
        do throws(ClientError) { try ensureEnabled() } catch { return .failure(error) }
        guard !userId.isEmpty else {
            return .failure(ClientError(.invalidUserId,
                                        "audience segments fetch failed (invalid identifier: empty user id)"))
        }
        guard let endpoint = endpoint(for: config) else {
            return .failure(SegmentFetcher.failed("api_key/api_host not defined: the datafile has no odp integration "
                                                  + "and options.odp.host/api_key are not set"))
        }
        let segments = config.segments
        guard !segments.isEmpty else {
            logger.log(.debug, "no segments are used in the project: nothing to fetch")
            return .success([])
        }
        resetCacheIfScopeChanged(endpoint: endpoint, segments: segments)
        let userKey = Self.userKey(for: userId)
        let cacheKey = SegmentCache.key(userKey: userKey, userValue: userId)
        let ignoreCache = fetchOptions.contains(.ignoreCache)
        let resetCache = fetchOptions.contains(.resetCache)
        if resetCache { cache.reset() }
        if !ignoreCache && !resetCache, let cached = cache.lookup(cacheKey) {
            logger.log(.debug, "ODP cache hit for \(userKey) \(userId)")
            return .success(cached)
        }
        let result = SegmentFetcher.fetch(endpoint, userKey: userKey, userValue: userId, segments: segments,
                                          timeoutMs: options.fetchTimeoutMs, caFile: options.caFile)
        switch result {
        case .success(let fetched):
            if !ignoreCache { cache.save(fetched, for: cacheKey) }
        case .failure(let error):
            logger.log(error.code == .invalidUserId ? .warning : .error, error.message)
        }
        return result
    }

    /// Runs `fetchSegments` on the ODP fetch thread and hands the result to `completion` there. After
    /// close, jobs not yet run complete with EXP_ERR_CLOSED.
    public func fetchSegmentsAsync(userId: String, config: ProjectConfig, options fetchOptions: SegmentFetchOptions,
                                   completion: @escaping @Sendable (Result<[String], ClientError>) -> Void)
        throws(ClientError)
    {
        try ensureEnabled()
        let job: @Sendable () -> Void = { [self] in
            if isClosed { return completion(.failure(ClientError(.closed, "the client is closed"))) }
            completion(fetchSegments(userId: userId, config: config, options: fetchOptions))
        }
        let accepted = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.fetchJobs.append(job)
            if state.fetchWorker == nil {
                state.fetchWorker = BackgroundWorker(name: "exp-odp-fetch") { [weak self] worker in
                    while worker.sleep(milliseconds: 60_000) {
                        guard let self else { return }
                        self.runFetchJobs()
                    }
                    self?.cancelFetchJobs()
                }
            }
            return true
        }
        guard accepted else { throw ClientError(.closed, "the client is closed") }
        state.withLock { $0.fetchWorker }?.wake()
    }

    private func runFetchJobs() {
        while let job = state.withLock({ $0.fetchJobs.isEmpty ? nil : $0.fetchJobs.removeFirst() }) { job() }
    }

    private func cancelFetchJobs() {
        let jobs = state.withLock { state -> [@Sendable () -> Void] in
            defer { state.fetchJobs.removeAll() }
            return state.fetchJobs
        }
        // A job's completion must still be called once: run it against a closed manager, which fails fast.
        for job in jobs { job() }
    }

    private func resetCacheIfScopeChanged(endpoint: ODPEndpoint, segments: [String]) {
        let scope = endpoint.host + "\u{1}" + endpoint.apiKey + "\u{1}" + segments.joined(separator: "\u{1}")
        let changed = cacheScope.withLock { current -> Bool in
            defer { current = scope }
            return current != nil && current != scope
        }
        if changed {
            logger.log(.info, "ODP integration or segments changed: segments cache reset")
            cache.reset()
        }
    }

    // MARK: events

    /// Queues an identify event for `userId` the first time this client sees the user: it links the
    /// user id and the visitor id in ODP. A visitor id alone links nothing, so none is sent for it.
    public func identifyIfFirstSeen(userId: String, config: ProjectConfig?) {
        guard isEnabled, !userId.isEmpty, endpoint(for: config) != nil else { return }
        let firstSeen = identified.withLock { seen -> Bool in
            if seen.value(for: userId) != nil { return false }
            seen.set(true, for: userId)
            return true
        }
        guard firstSeen, !Self.isVUID(userId) else { return }
        let identifiers = [(SegmentFetcher.vuidKey, vuid()), (SegmentFetcher.userIdKey, userId)]
        do {
            try sendEvent(type: "fullstack", action: "identified", identifiers: identifiers, data: nil, config: config)
        } catch {
            logger.log(.warning, "ODP identify event for \(userId) not queued: \(error.message)")
        }
    }

    /// Queues an event for ODP. `data` is a JSON object of scalars (already validated); the common
    /// fields (idempotence id, source) come first, as in the reference.
    public func sendEvent(type: String, action: String, identifiers: [(String, String)], data: JSONValue?,
                          config: ProjectConfig?) throws(ClientError)
    {
        try ensureEnabled()
        guard let endpoint = endpoint(for: config) else {
            throw ClientError(.odpNotEnabled, "ODP is not integrated: the datafile has no odp integration and "
                              + "options.odp.host/api_key are not set")
        }
        currentEndpoint.withLock { $0 = endpoint }
        let queue = try eventQueue()
        try queue.enqueue(Self.eventJSON(type: type, action: action, identifiers: identifiers, data: data))
    }

    /// A new datafile is in use: events go to its endpoint from now on, and events a previous client left
    /// in the state file start moving again.
    public func configDidChange(_ config: ProjectConfig) {
        guard isEnabled, let endpoint = endpoint(for: config) else { return }
        currentEndpoint.withLock { $0 = endpoint }
        let queueOpen = state.withLock { $0.events != nil }
        // Only a state file that exists can hold such events: never create one here.
        let path = (stateDir ?? StateDirectory.defaultPath()) + "/" + StateDirectory.databaseFileName
        guard !queueOpen, access(path, F_OK) == 0 else { return }
        do {
            _ = try eventQueue()
        } catch {
            logger.log(.warning, "ODP events left by an earlier client stay queued: \(error.message)")
        }
    }

    /// Sends queued ODP events now; false when some remain after `timeoutMs`.
    public func flushEvents(timeoutMs: Int) -> Bool {
        guard let queue = state.withLock({ $0.events }) else { return true }
        return queue.flush(timeoutMs: timeoutMs)
    }

    public var pendingEvents: Int { state.withLock { $0.events }?.pendingCount ?? 0 }

    static func eventJSON(type: String, action: String, identifiers: [(String, String)], data: JSONValue?) -> [UInt8] {
        var json = PythonStyleJSON()
        json.raw("{\"type\": "); json.string(type)
        json.raw(", \"action\": "); json.string(action)
        json.raw(", \"identifiers\": {")
        for (index, (key, value)) in identifiers.enumerated() {
            if index > 0 { json.raw(", ") }
            json.string(key); json.raw(": "); json.string(value)
        }
        // The common fields first; a host value for one of them replaces it in place (the reference
        // builds the dict of common fields, then updates it with the host's data).
        var fields: [(key: String, write: (inout PythonStyleJSON) -> Void)] = [
            ("idempotence_id", { [uuid = EventIdentity.uuid()] in $0.string(uuid) }),
            ("data_source_type", { $0.string("sdk") }),
            ("data_source", { $0.string("libexperiment") }),
            ("data_source_version", { $0.string(LibraryVersion.string) }),
        ]
        for (key, value) in data?.members ?? [] {
            let write: (inout PythonStyleJSON) -> Void = { $0.scalar(value) }
            if let index = fields.firstIndex(where: { $0.key.sameCodePoints(key) }) { fields[index].write = write }
            else { fields.append((key, write)) }
        }
        json.raw("}, \"data\": {")
        for (index, field) in fields.enumerated() {
            if index > 0 { json.raw(", ") }
            json.string(field.key); json.raw(": "); field.write(&json)
        }
        json.raw("}}")
        return json.text
    }

    private func eventQueue() throws(ClientError) -> ODPEventQueue {
        let existing = state.withLock { $0.events }
        if let existing { return existing }
        let database = try openDatabase()
        let endpointBox = currentEndpoint
        let result = state.withLock { state -> Result<ODPEventQueue, ClientError> in
            if let events = state.events { return .success(events) }
            guard !state.closed else { return .failure(ClientError(.closed, "the client is closed")) }
            do throws(ClientError) {
                let queue = try ODPEventQueue(database: database, lock: databaseLock, options: options,
                                              logger: logger, endpoint: { endpointBox.withLock { $0 } })
                state.events = queue
                return .success(queue)
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// The ODP connection to the state file (opened once; nil and logged when it cannot be opened).
    private func openDatabase() throws(ClientError) -> SQLiteDatabase {
        if let opened = state.withLock({ $0.database }) {
            guard let opened else { throw ClientError(.storeFailed, "ODP: the state file could not be opened") }
            return opened
        }
        var failure: ClientError? = nil
        var database: SQLiteDatabase? = nil
        do {
            database = try StateDirectory(option: stateDir).openDatabase()
        } catch {
            failure = error
            logger.log(.warning, "ODP: \(error.message)")
        }
        let result = state.withLock { state -> SQLiteDatabase? in
            if let existing = state.database { return existing }
            state.database = .some(database)
            return database
        }
        guard let result else { throw failure ?? ClientError(.storeFailed, "ODP: the state file could not be opened") }
        return result
    }

    // MARK: visitor id

    /// The visitor id of this state directory: created once ("vuid_" and 27 random hex digits, 32 characters
    /// as other Optimizely SDKs make them) and kept in the state file, so restarts reuse it. Without a state
    /// file it lives as long as the client.
    public func vuid() -> String {
        if let known = state.withLock({ $0.vuid }) { return known }
        let fresh = "vuid_" + String(EventIdentity.uuid().filter { $0 != "-" }.prefix(27))
        var chosen = fresh
        if let database = try? openDatabase() {
            let stored: Result<String, SQLiteError> = databaseLock.withLock {
                do throws(SQLiteError) { return .success(try Self.storedVUID(database, proposing: fresh)) }
                catch { return .failure(error) }
            }
            switch stored {
            case .success(let value): chosen = value
            case .failure(let error): logger.log(.warning, "ODP: visitor id not persisted: \(error.message)")
            }
        }
        return state.withLock { state -> String in
            if let known = state.vuid { return known }
            state.vuid = chosen
            return chosen
        }
    }

    /// The state file's VUID, storing `fresh` when it has none yet (first writer wins across processes).
    private static func storedVUID(_ database: SQLiteDatabase, proposing fresh: String) throws(SQLiteError) -> String {
        try database.transaction { () throws(SQLiteError) -> String in
            try database.execute("CREATE TABLE IF NOT EXISTS odp_state (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            let insert = try database.prepare("INSERT OR IGNORE INTO odp_state (key, value) VALUES ('vuid', ?)")
            try insert.bind(1, fresh)
            try insert.step()
            let select = try database.prepare("SELECT value FROM odp_state WHERE key = 'vuid'")
            return try select.step() ? select.text(0) : fresh
        }
    }

    // MARK: lifecycle

    /// Stops the ODP threads: queued fetches complete with EXP_ERR_CLOSED, queued events get up to
    /// close_timeout_ms to be delivered and otherwise stay in the state file for the next client.
    public func close() {
        let (worker, events) = state.withLock { state -> (BackgroundWorker?, ODPEventQueue?) in
            state.closed = true
            return (state.fetchWorker, state.events)
        }
        worker?.stop()
        events?.close(timeoutMs: closeTimeoutMs)
    }

    var isClosed: Bool { state.withLock { $0.closed } }
}
