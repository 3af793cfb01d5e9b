import ExperimentCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// ODP events on their way to `<host>/v3/events`: kept in their own table of the state file until ODP
/// accepts them, so they survive endpoint outages and restarts (delivered at least once), and sent in
/// batches by one background thread.
///
/// Self-contained on purpose (the Optimizely event pipeline has another endpoint and format): the
/// interface is `enqueue`, `flush` and `close`.
final class ODPEventQueue: @unchecked Sendable {
    static let maxBackoffMs: Int64 = 30_000
    private let batchSize: Int
    private let flushIntervalMs: Int64
    private let capacity: Int

    private let database: SQLiteDatabase
    /// One connection shared by callers, the worker and the VUID: every use holds this lock.
    private let lock: Lock
    private let pending = Atomic<Int>(0)
    private let timeoutMs: Int
    private let caFile: String?
    private let logger: Logger
    private let endpoint: @Sendable () -> ODPEndpoint?
    private var worker: BackgroundWorker? = nil

    init(database: SQLiteDatabase, lock: Lock, options: ODPOptions, logger: Logger,
         endpoint: @escaping @Sendable () -> ODPEndpoint?) throws(ClientError)
    {
        self.database = database
        self.lock = lock
        self.timeoutMs = options.eventTimeoutMs
        self.caFile = options.caFile
        self.batchSize = options.eventBatchSize
        self.flushIntervalMs = Int64(options.eventFlushIntervalMs)
        self.capacity = options.eventQueueCapacity
        self.logger = logger
        self.endpoint = endpoint
        do throws(SQLiteError) {
            try locked { () throws(SQLiteError) in
                try database.execute("""
                    CREATE TABLE IF NOT EXISTS odp_event_queue (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        event BLOB NOT NULL,
                        queued_at_ms INTEGER NOT NULL)
                    """)
                let count = try database.prepare("SELECT COUNT(*) FROM odp_event_queue")
                try count.step()
                pending.store(Int(count.int64(0)), ordering: .relaxed)
            }
        } catch {
            throw ClientError(.storeFailed, "ODP event queue: \(error.message)")
        }
        let interval = flushIntervalMs
        worker = BackgroundWorker(name: "exp-odp-events") { [weak self] worker in
            var delayMs = interval
            while worker.sleep(milliseconds: delayMs) {
                guard let self else { return }
                delayMs = self.deliverAll() ? interval : self.nextBackoff()
            }
        }
        if pending.load(ordering: .relaxed) > 0 { worker?.wake() }
    }

    var pendingCount: Int { pending.load(ordering: .acquiring) }

    /// Stores one event (a JSON object); refused when the queue holds `capacity` events already.
    func enqueue(_ event: [UInt8]) throws(ClientError) {
        guard pending.load(ordering: .acquiring) < capacity else {
            throw ClientError(.queueFull, "ODP event queue is full (\(capacity) events wait for delivery)")
        }
        do throws(SQLiteError) {
            try locked { () throws(SQLiteError) in
                let insert = try database.prepare("INSERT INTO odp_event_queue (event, queued_at_ms) VALUES (?, ?)")
                try insert.bind(1, String(decoding: event, as: UTF8.self))
                try insert.bind(2, EventIdentity.timestampMillis())
                try insert.step()
            }
        } catch {
            throw ClientError(.storeFailed, "ODP event queue: \(error.message)")
        }
        if pending.add(1, ordering: .acquiringAndReleasing).newValue >= batchSize { worker?.wake() }
    }

    /// Runs `body` holding the connection's lock, keeping its typed error.
    private func locked<T>(_ body: () throws(SQLiteError) -> T) throws(SQLiteError) -> T {
        let result: Result<T, SQLiteError> = lock.withLock {
            do throws(SQLiteError) { return .success(try body()) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// Sends what is queued now; true when the queue emptied within `timeoutMs`.
    /// Gives up early when a delivery attempt made after the call failed (ODP down: waiting is pointless).
    func flush(timeoutMs: Int) -> Bool {
        let deadline = deadlineMillis(after: Int64(timeoutMs))
        let attemptsBefore = attempts.load(ordering: .acquiring)
        while pending.load(ordering: .acquiring) > 0 {
            worker?.wake()
            if monotonicMillis() >= deadline { return false }
            if attempts.load(ordering: .acquiring) > attemptsBefore && lastDeliveryFailed.load(ordering: .acquiring) {
                return false
            }
            usleep(5_000)
        }
        return true
    }

    /// Delivers what it can within `timeoutMs`, then stops the thread; undelivered events stay on disk.
    func close(timeoutMs: Int) {
        // While ODP is failing, waiting would only delay the host: the events stay on disk.
        if pendingCount > 0, endpoint() != nil, !lastDeliveryFailed.load(ordering: .acquiring) {
            _ = flush(timeoutMs: timeoutMs)
        }
        worker?.stop()
    }

    // MARK: delivery (worker thread)

    private var consecutiveFailures = 0 {
        didSet { lastDeliveryFailed.store(consecutiveFailures > 0, ordering: .releasing) }
    }
    private let lastDeliveryFailed = Atomic<Bool>(false)
    /// Delivery attempts so far (flush watches it).
    private let attempts = Atomic<Int>(0)

    private func nextBackoff() -> Int64 {
        let shift = min(consecutiveFailures, 10)
        return min(Self.maxBackoffMs, 200 << Int64(shift))
    }

    /// Sends batches until the queue is empty (true) or a delivery must be retried later (false).
    private func deliverAll() -> Bool {
        while pending.load(ordering: .acquiring) > 0 {
            guard let endpoint = endpoint() else { return true }  // not integrated (yet): events wait
            guard let batch = nextBatch() else { return false }
            // Another client on the same state file may have delivered them: trust the table.
            guard !batch.events.isEmpty else { recount(); return true }
            let outcome = send(batch.events, to: endpoint)
            defer { attempts.add(1, ordering: .releasing) }
            switch outcome {
            case .delivered, .rejected:
                consecutiveFailures = 0
                remove(through: batch.lastId)
            case .retry:
                consecutiveFailures += 1
                return false
            }
        }
        return true
    }

    private func nextBatch() -> (events: [[UInt8]], lastId: Int64)? {
        do throws(SQLiteError) {
            return try locked { () throws(SQLiteError) in
                let select = try database.prepare("SELECT id, event FROM odp_event_queue ORDER BY id LIMIT ?")
                try select.bind(1, Int64(batchSize))
                var events: [[UInt8]] = []
                var lastId: Int64 = 0
                while try select.step() {
                    lastId = select.int64(0)
                    events.append(select.bytes(1))
                }
                return (events, lastId)
            }
        } catch {
            logger.log(.error, "ODP event queue: \(error.message)")
            return nil
        }
    }

    private func remove(through lastId: Int64) {
        do throws(SQLiteError) {
            try locked { () throws(SQLiteError) in
                let delete = try database.prepare("DELETE FROM odp_event_queue WHERE id <= ?")
                try delete.bind(1, lastId)
                try delete.step()
                let count = try database.prepare("SELECT COUNT(*) FROM odp_event_queue")
                try count.step()
                pending.store(Int(count.int64(0)), ordering: .releasing)
            }
        } catch {
            logger.log(.error, "ODP event queue: \(error.message)")
        }
    }

    private func recount() {
        do throws(SQLiteError) {
            try locked { () throws(SQLiteError) in
                let count = try database.prepare("SELECT COUNT(*) FROM odp_event_queue")
                try count.step()
                pending.store(Int(count.int64(0)), ordering: .releasing)
            }
        } catch {
            logger.log(.error, "ODP event queue: \(error.message)")
        }
    }

    private enum Outcome { case delivered, rejected, retry }

    /// POSTs one batch as a JSON array, as the reference does; network errors and 5xx are retried, a 4xx
    /// answer can never succeed and drops the batch.
    private func send(_ events: [[UInt8]], to endpoint: ODPEndpoint) -> Outcome {
        var body: [UInt8] = [UInt8(ascii: "[")]
        for (index, event) in events.enumerated() {
            if index > 0 { body.append(contentsOf: ", ".utf8) }
            body.append(contentsOf: event)
        }
        body.append(UInt8(ascii: "]"))
        var request = HTTPRequest(method: "POST", url: endpoint.host + "/v3/events",
                                  headers: ["content-type: application/json", "x-api-key: \(endpoint.apiKey)"],
                                  body: body, timeoutMs: timeoutMs)
        request.caFile = caFile
        switch HTTPClient.perform(request) {
        case .failure(let error):
            logger.log(.warning, "ODP event send failed (network error: \(error.message)); will retry")
            return .retry
        case .success(let response):
            if response.isSuccess {
                logger.log(.debug, "ODP events delivered: \(events.count)")
                return .delivered
            }
            if (400..<500).contains(response.status) {
                logger.log(.error, "ODP event send failed (HTTP \(response.status)): dropping \(events.count) events")
                return .rejected
            }
            logger.log(.warning, "ODP event send failed (HTTP \(response.status)); will retry")
            return .retry
        }
    }
}
