import ExperimentCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Keeps a client's datafile fresh: the asynchronous start (fetch, else the cached datafile, else the
/// bundled one), then polling on a timer or, in cache-TTL mode, a refresh when a decision finds the
/// datafile stale. Fetches run on the manager's own thread (or the caller's, for exp_client_refresh),
/// one at a time; a fetched datafile is compiled there and swapped in, never on the decision path.
final class ConfigManager: @unchecked Sendable {
    typealias ReadyCallback = @Sendable (ErrorCode?) -> Void

    private weak var client: Client?
    private let state: DatafileState
    private let logger: Logger
    let sdkKey: String
    private let fetcher: DatafileFetcher
    /// Polling period; nil when polling is off (interval 0, or cache-TTL mode).
    let pollingMs: Int64?
    /// Cache-TTL mode: the datafile counts as stale this long after the last fetch attempt.
    let ttlMs: Int64?

    /// Serializes fetches and guards everything below.
    private let fetchLock = Lock()
    private var cache: DatafileCache?
    private var validators = DatafileFetcher.Validators()
    private var installedBodyHash: UInt64? = nil
    private var lastAttemptAt: Int64 = 0
    /// Config changes made under fetchLock, announced to listeners after it is released (a listener may
    /// call back into the client, even exp_client_refresh).
    private var unannounced: [ConfigChange] = []
    /// How each fetch under fetchLock ended, announced the same way (EXP_NOTIFY_DATAFILE_FETCH).
    private var unannouncedFetches: [FetchRecord] = []

    struct FetchRecord {
        let outcome: String
        let error: ClientError?
    }

    private let refreshRequested = Atomic<Bool>(false)
    /// The thread, once started; `stopped` keeps a stop that comes first from being outrun by run().
    private let thread = Locked<(worker: BackgroundWorker?, stopped: Bool)>((nil, false))

    /// Test-only time scale: EXPERIMENT_TEST_SECOND_MS=50 makes each "second" of polling_interval_s and
    /// cache_ttl_s last 50 ms, so tests can watch polling without waiting the 10 s minimum.
    static let millisPerSecond: Int64 = {
        if let raw = getenv("EXPERIMENT_TEST_SECOND_MS"), let value = Int64(String(cString: raw)), value > 0 { return value }
        return 1000
    }()

    init(client: Client, state: DatafileState, sdkKey: String) {
        self.client = client
        self.state = state
        self.logger = client.logger
        self.sdkKey = sdkKey
        let options = client.options
        fetcher = DatafileFetcher(options: options, sdkKey: sdkKey, maxBytes: DatafileCompiler.maxBytes)
        if let ttl = options.cacheTTLSeconds, ttl > 0 {
            var seconds = ttl
            if seconds < ClientOptions.minPollingIntervalSeconds {
                client.logger.log(.warning, "cache_ttl_s \(ttl) is below the minimum; using \(ClientOptions.minPollingIntervalSeconds) s")
                seconds = ClientOptions.minPollingIntervalSeconds
            }
            ttlMs = Int64(seconds) * Self.millisPerSecond
            pollingMs = nil
        } else {
            ttlMs = nil
            var seconds = options.pollingIntervalSeconds
            if seconds > 0 && seconds < ClientOptions.minPollingIntervalSeconds {
                client.logger.log(.warning, "polling_interval_s \(seconds) is below the minimum; polling every "
                                  + "\(ClientOptions.minPollingIntervalSeconds) s")
                seconds = ClientOptions.minPollingIntervalSeconds
            }
            pollingMs = seconds > 0 ? Int64(seconds) * Self.millisPerSecond : nil
        }
        do {
            cache = try DatafileCache(directory: StateDirectory(option: options.stateDir))
        } catch {
            client.logger.log(.warning, "datafile cache unavailable (\(error.message)); continuing without it")
            record { $0.lastErrorCode = error.code; $0.lastError = error.message }
        }
    }

    // MARK: thread

    /// Starts the manager's thread: the initial fetch (falling back to cache, then `fallback`), `onReady`
    /// once, then the refresh loop.
    func run(fallback: [UInt8]?, onReady: @escaping ReadyCallback) {
        let started = thread.withLock { thread -> Bool in
            guard !thread.stopped else { return false }
            thread.worker = BackgroundWorker(name: "exp-datafile") { [self] worker in
                let outcome = initialStart(fallback: fallback, worker: worker)
                state.gate.update { if outcome != nil { state.startFailure = outcome } }
                onReady(worker.isStopping && outcome != nil ? .closed : outcome)
                refreshLoop(worker)
            }
            return true
        }
        if !started { onReady(.closed) }  // closed before the thread could start
    }

    /// Stops the thread (cancelling a fetch in flight) and waits for it. Idempotent.
    func stop() {
        let running = thread.withLock { thread -> BackgroundWorker? in
            thread.stopped = true
            return thread.worker
        }
        running?.stop()
    }

    /// Wakes the thread to fetch now (cache-TTL refresh on use).
    func requestRefresh() {
        refreshRequested.store(true, ordering: .relaxed)
        thread.withLock { $0.worker }?.wake()
    }

    private func refreshLoop(_ worker: BackgroundWorker) {
        var nextPoll = pollingMs.map { monotonicMillis() + $0 }
        while true {
            let now = monotonicMillis()
            var sleepMs: Int64 = 3_600_000
            if let nextPoll { sleepMs = max(0, nextPoll - now) }
            if let ttlMs, !state.stale.load(ordering: .relaxed) {
                sleepMs = min(sleepMs, max(0, fetchLock.withLock { lastAttemptAt } + ttlMs - now))
            }
            guard worker.sleep(milliseconds: sleepMs) else { return }
            let woken = monotonicMillis()
            if refreshRequested.exchange(false, ordering: .relaxed) {
                _ = refresh(pause: { worker.sleep(milliseconds: $0) })
            } else if let due = nextPoll, woken >= due {
                _ = refresh(pause: { worker.sleep(milliseconds: $0) })
                nextPoll = monotonicMillis() + pollingMs!
            }
            if let ttlMs, woken - fetchLock.withLock({ lastAttemptAt }) >= ttlMs {
                // Stale: the next decision asks for a refresh (Sigma's lazy mode), no timer-driven fetch.
                state.stale.store(true, ordering: .relaxed)
            }
        }
    }

    // MARK: start

    /// The async start: nil when the client ended up ready, else the reason it did not.
    private func initialStart(fallback: [UInt8]?, worker: BackgroundWorker) -> ErrorCode? {
        guard let client else { return .closed }
        defer { announce(client) }
        let failure: ClientError? = fetchLock.withLock {
            let cached = loadCache()
            if let cached { validators = .init(etag: cached.etag, lastModified: cached.lastModified) }
            let pause = { worker.sleep(milliseconds: $0) }
            let outcome = fetchAndInstall(client, cached: cached, pause: pause)
            if client.isReady { return nil }
            if let cached, install(client, cached.body, .cache, sameProject: false) {
                validators = .init(etag: cached.etag, lastModified: cached.lastModified)
                return nil
            }
            if let fallback, install(client, fallback, .bundled, sameProject: false) { return nil }
            validators = .init()
            return outcome ?? ClientError(.fetchFailed, "no datafile")
        }
        guard let failure else { return nil }
        logger.log(.error, "datafile start failed: \(failure.message); no cached or bundled datafile to fall back on")
        return failure.code
    }

    private func loadCache() -> DatafileCache.Entry? {
        do {
            return try cache?.load(sdkKey: sdkKey)
        } catch {
            logger.log(.warning, error.message)
            return nil
        }
    }

    // MARK: fetch

    /// One refresh (exp_client_refresh, polling, TTL): nil when the client has the newest datafile.
    func refresh(pause: @escaping (Int64) -> Bool) -> ClientError? {
        guard let client else { return ClientError(.closed, "the client is closed") }
        defer { announce(client) }
        return fetchLock.withLock { fetchAndInstall(client, cached: nil, pause: pause) }
    }

    /// Fetches and installs a new datafile (under fetchLock). With `cached` (start only), a 304 installs it.
    private func fetchAndInstall(_ client: Client, cached: DatafileCache.Entry?,
                                 pause: (Int64) -> Bool) -> ClientError? {
        lastAttemptAt = monotonicMillis()
        record { $0.fetches += 1 }
        let state = self.state
        let outcome = fetcher.fetch(validators: validators, log: { logger.log(.warning, $0) }, pause: pause,
                                    isCancelled: { state.isClosing })
        switch outcome {
        case .failed(let message):
            let error = ClientError(.fetchFailed, "datafile fetch failed: \(message)")
            logger.log(.warning, error.message + (client.isReady ? "; keeping the current datafile" : ""))
            record { $0.fetchFailures += 1; $0.lastErrorCode = error.code; $0.lastError = error.message }
            unannouncedFetches.append(.init(outcome: "failed", error: error))
            return error
        case .notModified:
            record { $0.notModified += 1; $0.lastSuccessAt = monotonicMillis() }
            if let cached, !client.isReady, install(client, cached.body, .cache, sameProject: false) {
                installedBodyHash = Self.hash(cached.body)
            }
            confirmCache()
            unannouncedFetches.append(.init(outcome: "not_modified", error: nil))
            return nil
        case .fetched(let body, let etag, let lastModified):
            record { $0.lastSuccessAt = monotonicMillis() }
            let hash = Self.hash(body)
            if hash == installedBodyHash && client.isReady {
                // The same bytes again (a server without validators): nothing to compile.
                record { $0.notModified += 1 }
                unannouncedFetches.append(.init(outcome: "not_modified", error: nil))
                return nil
            }
            do {
                let change = try client.installQuietly(datafile: body, source: .fetch, requireSameProject: true)
                unannounced.append(change)
                let config = change.config
                installedBodyHash = hash
                validators = .init(etag: etag, lastModified: lastModified)
                saveCache(body, etag: etag, lastModified: lastModified, revision: config.revision)
                unannouncedFetches.append(.init(outcome: "updated", error: nil))
                return nil
            } catch {
                record { $0.rejected += 1; $0.lastErrorCode = error.code; $0.lastError = "fetched datafile rejected: \(error.message)" }
                unannouncedFetches.append(.init(outcome: "rejected", error: error))
                return error
            }
        }
    }

    /// Installs a cached or bundled datafile; false (logged, counted) when it is rejected.
    private func install(_ client: Client, _ body: [UInt8], _ source: DatafileSource, sameProject: Bool) -> Bool {
        do {
            unannounced.append(try client.installQuietly(datafile: body, source: source, requireSameProject: sameProject))
            if source == .cache { installedBodyHash = Self.hash(body) }
            return true
        } catch {
            record { $0.rejected += 1; $0.lastErrorCode = error.code; $0.lastError = "\(source.rawValue) datafile rejected: \(error.message)" }
            return false
        }
    }

    private func saveCache(_ body: [UInt8], etag: String?, lastModified: String?, revision: String) {
        do {
            try cache?.save(sdkKey: sdkKey, body: body, etag: etag, lastModified: lastModified, revision: revision)
            record { $0.cacheWrites += 1 }
        } catch {
            logger.log(.warning, "\(error.message); the new datafile is in use but not cached")
            record { $0.lastErrorCode = error.code; $0.lastError = error.message }
        }
    }

    private func confirmCache() {
        do { try cache?.confirm(sdkKey: sdkKey) } catch { logger.log(.warning, error.message) }
    }

    /// Tells the listeners, outside fetchLock, about new revisions (config_update) and then about how each
    /// fetch ended (datafile_fetch), in the order they happened.
    private func announce(_ client: Client) {
        let (changes, fetches) = fetchLock.withLock { () -> ([ConfigChange], [FetchRecord]) in
            defer { unannounced.removeAll(); unannouncedFetches.removeAll() }
            return (unannounced, unannouncedFetches)
        }
        for change in changes { client.announce(change) }
        for fetch in fetches { announceFetch(fetch, client) }
    }

    /// {"outcome": "updated" | "not_modified" | "failed" | "rejected", "ready", "revision" (in use),
    /// "error_code", "error"}: lets a host tell a fresh datafile from a stale one (OpenFeature's STALE).
    private func announceFetch(_ fetch: FetchRecord, _ client: Client) {
        client.notifications.notify(.datafileFetch) {
            let revision = state.stats.withLock { $0.revision }
            var writer = JSONWriter()
            writer.beginObject()
            writer.field("outcome", fetch.outcome)
            writer.field("ready", client.isReady)
            writer.field("revision", revision)
            writer.key("error_code"); fetch.error.map { writer.int(Int64($0.code.rawValue)) } ?? writer.null()
            writer.field("error", fetch.error?.message)
            writer.endObject()
            return writer.text
        }
    }


    // MARK: synchronous start (Swift SDK modes S1-S3; see Client+SyncStart.swift)

    /// The synchronous start, on the caller's thread: the cached datafile of the last good fetch for the
    /// SDK key when there is one (the Swift SDK's manager looks for it first), else `bundled`. Throws when
    /// neither is there or usable; the client keeps what it had.
    func startSynchronously(bundled: [UInt8]?, givenFirst: Bool) throws(ClientError) -> DatafileSource {
        guard let client else { throw ClientError(.closed, "the client is closed") }
        defer { announce(client) }
        let outcome: Result<DatafileSource, ClientError> = fetchLock.withLock {
            let cached = givenFirst && bundled != nil ? nil : loadCache()
            if let cached, install(client, cached.body, .cache, sameProject: false) {
                validators = .init(etag: cached.etag, lastModified: cached.lastModified)
                return .success(.cache)
            }
            guard let bundled else {
                return .failure(ClientError(.notReady, "no cached datafile for this sdk_key and no bundled datafile given"))
            }
            do throws(ClientError) {
                unannounced.append(try client.installQuietly(datafile: bundled, source: .bundled, requireSameProject: false))
                return .success(.bundled)
            } catch {
                return .failure(error)
            }
        }
        return try outcome.get()
    }

    /// After a synchronous start: one background fetch, then (`applyNow`) polling per the options. With
    /// `applyNow` the fetched datafile is used at once (S2, S3); without, it is only cached, for the next
    /// start (S1), and no polling follows.
    func runAfterSynchronousStart(applyNow: Bool) {
        thread.withLock { thread in
            guard !thread.stopped else { return }
            thread.worker = BackgroundWorker(name: "exp-datafile") { [self] worker in
                let pause = { worker.sleep(milliseconds: $0) }
                if applyNow {
                    _ = refresh(pause: pause)
                    refreshLoop(worker)
                } else {
                    fetchForNextStart(pause: pause)
                }
            }
        }
    }

    /// S1: fetches the newest datafile and caches it (validated, same project) without using it.
    private func fetchForNextStart(pause: @escaping (Int64) -> Bool) {
        guard let client else { return }
        fetchLock.withLock {
            lastAttemptAt = monotonicMillis()
            record { $0.fetches += 1 }
            let state = self.state
            switch fetcher.fetch(validators: validators, log: { logger.log(.warning, $0) }, pause: pause,
                                 isCancelled: { state.isClosing }) {
            case .failed(let message):
                let error = ClientError(.fetchFailed, "datafile fetch failed: \(message)")
                logger.log(.warning, error.message + "; the next start uses the current datafile")
                record { $0.fetchFailures += 1; $0.lastErrorCode = error.code; $0.lastError = error.message }
            case .notModified:
                record { $0.notModified += 1; $0.lastSuccessAt = monotonicMillis() }
                confirmCache()
            case .fetched(let body, let etag, let lastModified):
                record { $0.lastSuccessAt = monotonicMillis() }
                let compiled: Result<ProjectConfig, ClientError> = body.withUnsafeBytes { bytes in
                    do throws(DatafileError) { return .success(try DatafileCompiler.compile(bytes)) } catch {
                        return .failure(ClientError(error))
                    }
                }
                switch compiled {
                case .success(let config):
                    if let current = try? client.config(), current.projectId != config.projectId {
                        record { $0.rejected += 1; $0.lastErrorCode = .invalidDatafile
                                 $0.lastError = "fetched datafile rejected: it belongs to project \(config.projectId)" }
                        return
                    }
                    saveCache(body, etag: etag, lastModified: lastModified, revision: config.revision)
                    logger.log(.info, "datafile revision \(config.revision) downloaded and cached: used at the next start")
                case .failure(let error):
                    record { $0.rejected += 1; $0.lastErrorCode = error.code; $0.lastError = "fetched datafile rejected: \(error.message)" }
                }
            }
        }
    }

    private func record(_ change: (inout DatafileStats) -> Void) { state.stats.withLock(change) }

    /// FNV-1a: recognizes a body identical to the one in use without keeping a copy.
    static func hash(_ bytes: [UInt8]) -> UInt64 {
        var value: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { value = (value ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return value
    }
}
