import ExperimentCore
import Synchronization

/// A datafile that was swapped in, to be announced to config-update listeners.
public struct ConfigChange: Sendable {
    public let config: ProjectConfig
    public let previousRevision: String?
    public let source: DatafileSource
    public var revisionChanged: Bool { previousRevision != config.revision }
}

/// The datafile lifecycle of a client: synchronous and asynchronous start, readiness, refresh, tags, status.
extension Client {
    /// Compiles and swaps in `datafile`, then tells config-update listeners when the revision changed.
    @discardableResult
    public func install(datafile: UnsafeRawBufferPointer, source: DatafileSource,
                        requireSameProject: Bool = false) throws(ClientError) -> ProjectConfig {
        let change = try installQuietly(datafile: datafile, source: source, requireSameProject: requireSameProject)
        announce(change)
        return change.config
    }

    @discardableResult
    public func install(datafile: [UInt8], source: DatafileSource, requireSameProject: Bool = false)
        throws(ClientError) -> ProjectConfig
    {
        let change = try installQuietly(datafile: datafile, source: source, requireSameProject: requireSameProject)
        announce(change)
        return change.config
    }

    func installQuietly(datafile: [UInt8], source: DatafileSource, requireSameProject: Bool)
        throws(ClientError) -> ConfigChange
    {
        let result: Result<ConfigChange, ClientError> = datafile.withUnsafeBytes { bytes in
            do throws(ClientError) {
                return .success(try installQuietly(datafile: bytes, source: source, requireSameProject: requireSameProject))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// The swap, the stats and the readiness wake-up, without notifying listeners (the caller announces).
    func installQuietly(datafile: UnsafeRawBufferPointer, source: DatafileSource, requireSameProject: Bool)
        throws(ClientError) -> ConfigChange
    {
        let swapped: (previousRevision: String?, config: ProjectConfig)
        do {
            swapped = try swapConfig(datafile, requireSameProject: requireSameProject)
        } catch {
            if error.code != .closed {
                datafileState.stats.withLock { $0.lastErrorCode = error.code; $0.lastError = error.message }
            }
            throw error
        }
        let change = ConfigChange(config: swapped.config, previousRevision: swapped.previousRevision, source: source)
        datafileState.stats.withLock { stats in
            stats.source = source
            stats.revision = change.config.revision
            if change.revisionChanged { stats.updates += 1 }
        }
        return change
    }

    /// Tells config-update listeners about `change` when its revision differs from the previous one, then
    /// wakes exp_client_wait_ready (see `DatafileState.firstDatafileAnnounced`).
    public func announce(_ change: ConfigChange) {
        defer { datafileState.gate.update { datafileState.firstDatafileAnnounced = true } }
        guard change.revisionChanged else { return }
        notifications.notify(.configUpdate) {
            var writer = JSONWriter()
            writer.beginObject()
            writer.field("revision", change.config.revision)
            writer.field("previous_revision", change.previousRevision)
            writer.field("project_id", change.config.projectId)
            writer.field("sdk_key", options.sdkKey)
            writer.field("source", change.source.rawValue)
            writer.endObject()
            return writer.text
        }
    }

    /// exp_client_start_async: fetch in the background (else cache, else `fallback`), `onReady` once.
    public func startAsync(fallback: [UInt8]?, onReady: @escaping @Sendable (ErrorCode?) -> Void) throws(ClientError) {
        try ensureOpen()
        guard let sdkKey = options.sdkKey, !sdkKey.isEmpty else {
            throw ClientError(.invalidOption, "exp_client_start_async needs the sdk_key option (it names the datafile URL and cache entry)")
        }
        let manager = ConfigManager(client: self, state: datafileState, sdkKey: sdkKey)
        guard datafileState.adopt(manager) else {
            throw ClientError(.invalidArgument, "the client was already started asynchronously")
        }
        if closed {  // closed while the manager was being set up: do not start a thread close() will not stop
            datafileState.close()
            throw ClientError(.closed, "the client is closed")
        }
        manager.run(fallback: fallback, onReady: onReady)
    }

    /// Waits until the client has a datafile. `timeoutMs < 0` waits the default 2000 ms.
    /// Answers the async start's failure code as soon as it gave up with nothing to use.
    public func waitReady(timeoutMs: Int64) throws(ClientError) {
        try ensureOpen()
        let timeout = timeoutMs < 0 ? 2_000 : timeoutMs
        var failure: ErrorCode? = nil
        var closedWhileWaiting = false
        let ready = datafileState.gate.wait(timeoutMs: timeout) {
            if datafileState.firstDatafileAnnounced && isReady { return true }
            if datafileState.closing { closedWhileWaiting = true; return true }
            failure = datafileState.startFailure
            return failure != nil
        }
        if closedWhileWaiting { throw ClientError(.closed, "the client was closed while waiting for it to be ready") }
        if ready, let failure {
            let detail = datafileState.stats.withLock { $0.lastError } ?? ""
            throw ClientError(failure, "the asynchronous start found no usable datafile: \(detail)")
        }
        if !ready { throw ClientError(.timeout, "the client was not ready within \(timeout) ms") }
    }

    /// exp_client_run_when_ready: `callback` gets once what `waitReady(timeoutMs:)` would answer (nil: ready),
    /// without blocking the caller: on the calling thread before this returns when the client is ready now,
    /// else on a callback thread as soon as it is ready, the asynchronous start gave up, the timeout passed
    /// or the client closed. Throws (and never calls back) when the client is closed or no thread can start.
    public func runWhenReady(timeoutMs: Int64, _ callback: @escaping @Sendable (ClientError?) -> Void) throws(ClientError) {
        try ensureOpen()
        if datafileState.isAnnouncedReady(self) { return callback(nil) }
        let started = callbacks.spawn(unless: { closed }) { [self] in
            do throws(ClientError) {
                try waitReady(timeoutMs: timeoutMs)
                callback(nil)
            } catch {
                callback(error)
            }
        }
        if !started {
            try ensureOpen()
            throw ClientError(.internalError, "cannot start a thread to wait for the client to be ready")
        }
    }

    /// exp_client_refresh: fetch now on the calling thread; the current datafile stays on any failure.
    public func refreshDatafile() throws(ClientError) {
        try ensureOpen()
        guard let manager = datafileState.manager else {
            throw ClientError(.notReady, "exp_client_refresh needs a client started with exp_client_start_async")
        }
        let state = datafileState
        if let error = manager.refresh(pause: { ms in !state.gate.wait(timeoutMs: ms) { state.closing } }) {
            // A fetch cut short by exp_client_close is the close's doing, not the network's.
            if state.isClosing { throw ClientError(.closed, "the client was closed during the refresh") }
            throw error
        }
    }

    /// The lifecycle's state and counters as JSON (exp_client_datafile_status_json).
    public func datafileStatusJSON() -> String {
        let stats = datafileState.stats.withLock { $0 }
        let manager = datafileState.manager
        var writer = JSONWriter()
        writer.beginObject()
        writer.field("ready", isReady)
        writer.field("revision", stats.revision)
        writer.field("source", stats.source?.rawValue)
        writer.field("managed", manager != nil)
        writer.key("polling_interval_ms"); manager?.pollingMs.map { writer.int($0) } ?? writer.null()
        writer.key("cache_ttl_ms"); manager?.ttlMs.map { writer.int($0) } ?? writer.null()
        writer.key("fetches"); writer.int(Int64(stats.fetches))
        writer.key("fetch_failures"); writer.int(Int64(stats.fetchFailures))
        writer.key("not_modified"); writer.int(Int64(stats.notModified))
        writer.key("rejected"); writer.int(Int64(stats.rejected))
        writer.key("updates"); writer.int(Int64(stats.updates))
        writer.key("cache_writes"); writer.int(Int64(stats.cacheWrites))
        writer.key("last_error_code"); stats.lastErrorCode.map { writer.int(Int64($0.rawValue)) } ?? writer.null()
        writer.field("last_error", stats.lastError)
        writer.key("last_success_age_ms")
        stats.lastSuccessAt.map { writer.int(monotonicMillis() - $0) } ?? writer.null()
        // The datafile in use is accepted; these are what it has that is likely a mistake.
        writer.key("warnings")
        writer.beginArray()
        for warning in datafileWarnings {
            writer.beginObject()
            writer.field("place", warning.place)
            writer.field("message", warning.message)
            writer.field("severity", warning.severity.rawValue)
            writer.endObject()
        }
        writer.endArray()
        writer.endObject()
        return writer.text
    }

    /// Part of close(): stops the poller (waking readiness waiters) and frees the client's tag.
    func closeDatafileLifecycle() {
        datafileState.close()
        if let tag = options.tag { ClientRegistry.release(tag, for: self) }
    }
}
