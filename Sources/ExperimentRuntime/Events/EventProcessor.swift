import ExperimentCore
import Synchronization

/// Counters of the event path, reported by exp_client_stats.
public final class EventStats: @unchecked Sendable {
    /// Events accepted into the durable queue by this client.
    public let queued = Atomic<Int>(0)
    /// Events delivered: acknowledged with a 2xx, or accepted by the host's dispatcher.
    public let sent = Atomic<Int>(0)
    /// Events scheduled for another attempt after a failed one (an event retried twice counts twice).
    public let retried = Atomic<Int>(0)
    /// Failed deliveries: failed POSTs (transient or poison) and host-dispatcher refusals.
    public let failed = Atomic<Int>(0)
    /// Events that were never queued or were evicted: no dispatcher, queue full, state file failure.
    public let dropped = Atomic<Int>(0)
    /// Events the endpoint refused for good (4xx), kept in the `event_dead_letter` table.
    public let poisoned = Atomic<Int>(0)
    /// Successful POSTs.
    public let batches = Atomic<Int>(0)
    private let lastError = Locked<String?>(nil)

    public init() {}

    func recordError(_ message: String) { lastError.withLock { $0 = message } }

    /// The counters as a JSON object; `pending` is what waits on disk now.
    public func json(pending: Int?) -> String {
        var writer = JSONWriter()
        writer.beginObject()
        let counts = [("queued", queued.load(ordering: .relaxed)), ("sent", sent.load(ordering: .relaxed)),
                      ("retried", retried.load(ordering: .relaxed)), ("failed", failed.load(ordering: .relaxed)),
                      ("dropped", dropped.load(ordering: .relaxed)), ("poisoned", poisoned.load(ordering: .relaxed)),
                      ("batches_sent", batches.load(ordering: .relaxed))]
        for (name, count) in counts { writer.key(name); writer.int(Int64(count)) }
        writer.key("pending"); writer.int(Int64(pending ?? 0))
        writer.field("last_error", lastError.withLock { $0 })
        writer.endObject()
        return writer.text
    }
}

/// The built-in event pipeline the client uses when the host installed no dispatcher: a durable queue
/// in the state file and a dispatcher thread POSTing batches to `event_endpoint`.
public final class EventProcessor: @unchecked Sendable {
    private let queue: EventQueue
    /// The fast front of the queue (nil when it cannot be created: events then go to SQLite directly).
    private let journal: EventJournal?
    private let dispatcher: EventDispatcher
    private let options: ClientOptions
    private let stats: EventStats
    private let logger: Logger
    /// Events appended since the dispatcher was last woken for a full batch.
    private let sinceWake = Atomic<Int>(0)

    public init(options: ClientOptions, stats: EventStats, logger: Logger,
                notifications: NotificationCenter) throws(ClientError)
    {
        let directory = try StateDirectory(option: options.stateDir)
        let database = try directory.openDatabase()
        do {
            queue = try EventQueue(database: database)
        } catch {
            throw ClientError(.storeFailed, "event queue: \(error.message)")
        }
        EventJournal.recoverAbandoned(in: directory.path, into: queue, logger: logger)
        do {
            journal = try EventJournal(directory: directory.path, segmentBytes: Self.journalSegmentBytes)
        } catch {
            journal = nil
            logger.log(.warning, "\(error.message); events are written to the state file one by one (slower)")
        }
        self.options = options
        self.stats = stats
        self.logger = logger
        let settings = EventDispatcher.Settings(batchSize: options.eventBatchSize,
                                                flushIntervalMs: options.eventFlushIntervalMs,
                                                requestTimeoutMs: options.requestTimeoutMs)
        dispatcher = EventDispatcher(queue: queue, journal: journal, settings: settings, stats: stats, logger: logger,
                                     notifications: notifications)
        let waiting = queue.count
        if waiting > 0 {
            logger.log(.info, "event queue: \(waiting) events left by an earlier run will be sent")
            dispatcher.wake()
        }
    }

    /// 4 MB: about 6,000 typical events per segment between two ingests.
    static let journalSegmentBytes = 4 << 20

    /// Appends the batch's event to the queue (the journal, else the SQLite table): on disk or in the page
    /// cache, so it survives the process being killed, before returning.
    public func enqueue(_ batch: EventBatch, uuid: String) throws(ClientError) {
        guard let journal else {
            guard let parts = batch.splitVisitor() else {
                stats.dropped.add(1, ordering: .relaxed)
                throw ClientError(.internalError, "event batch not in the expected format")
            }
            return try enqueueDirectly(parts, uuid: uuid)
        }
        var evicted = false
        if queue.count + journal.count >= options.eventQueueCapacity {
            guard options.eventQueueFullPolicy == .dropOldest else { return try refuseFull() }
            evicted = try storeOperation { () throws(SQLiteError) in
                try journal.ingest(into: queue)
                _ = try queue.removeOldest()
            }
        }
        var outcome = journal.append(uuid: uuid, url: options.eventEndpoint, body: batch.body)
        if outcome == .noRoom {
            // The dispatcher has not kept up: ingest here, once.
            _ = try storeOperation { () throws(SQLiteError) in try journal.ingest(into: queue) }
            outcome = journal.append(uuid: uuid, url: options.eventEndpoint, body: batch.body)
            if outcome == .noRoom {
                stats.dropped.add(1, ordering: .relaxed)
                throw ClientError(.tooLarge, "event too large for the event journal")
            }
        }
        accepted(evictedOldest: evicted, wake: outcome == .appendedHalfFull)
    }

    private func refuseFull() throws(ClientError) {
        stats.dropped.add(1, ordering: .relaxed)
        throw ClientError(.queueFull, "the event queue holds \(options.eventQueueCapacity) events "
                          + "(event_queue_capacity) and its policy is \"reject\"")
    }

    /// Runs a state-file operation for an event being accepted; a failure drops the event, reported.
    private func storeOperation(_ body: () throws(SQLiteError) -> Void) throws(ClientError) -> Bool {
        do {
            try body()
            return true
        } catch {
            stats.dropped.add(1, ordering: .relaxed)
            stats.recordError("event queue: \(error.message)")
            logger.log(.error, "event queue: cannot store an event: \(error.message)")
            throw ClientError(.storeFailed, "event queue: \(error.message)")
        }
    }

    private func accepted(evictedOldest: Bool, wake: Bool) {
        if evictedOldest {
            stats.dropped.add(1, ordering: .relaxed)
            logger.log(.warning, "event queue full (\(options.eventQueueCapacity)): dropped the oldest event")
        }
        stats.queued.add(1, ordering: .relaxed)
        if wake || sinceWake.add(1, ordering: .relaxed).newValue >= options.eventBatchSize {
            sinceWake.store(0, ordering: .relaxed)
            dispatcher.wake()
        }
    }

    /// Without a journal: one SQLite transaction per event.
    private func enqueueDirectly(_ parts: (prefix: String, visitor: String), uuid: String) throws(ClientError) {
        let outcome: EventQueue.AppendOutcome
        do {
            outcome = try queue.append(uuid: uuid, url: options.eventEndpoint, batchPrefix: parts.prefix,
                                       visitor: parts.visitor, capacity: options.eventQueueCapacity,
                                       dropOldest: options.eventQueueFullPolicy == .dropOldest,
                                       now: EventIdentity.timestampMillis())
        } catch {
            stats.dropped.add(1, ordering: .relaxed)
            stats.recordError("event queue: \(error.message)")
            logger.log(.error, "event queue: cannot store an event: \(error.message)")
            throw ClientError(.storeFailed, "event queue: \(error.message)")
        }
        if outcome == .full { return try refuseFull() }
        accepted(evictedOldest: outcome == .appendedAfterDroppingOldest, wake: false)
    }

    /// Events on disk now (journal and queue).
    public var pending: Int { queue.count + (journal?.count ?? 0) }

    /// Sends everything now (backoff ignored) and waits up to `timeoutMs`; the events still queued after.
    public func flush(timeoutMs: Int) -> Int {
        _ = dispatcher.flush(timeoutMs: timeoutMs)
        return pending
    }

    /// The state file was deleted (or replaced) while this client ran: its connection still writes the old,
    /// unlinked file, which vanishes at close. Move what is still queued into a state file at the path
    /// again, so the next client sends it.
    private func rescueIfStateFileIsGone() {
        guard queue.count > 0, queue.fileIsGone else { return }
        do throws(ClientError) {
            let events: [QueuedEvent]
            do { events = try queue.all() } catch { throw ClientError(.storeFailed, error.message) }
            let fresh = try StateDirectory(option: options.stateDir).openDatabase()
            do {
                try EventQueue(database: fresh).insert(events, attempts: 0, at: EventIdentity.timestampMillis())
            } catch {
                throw ClientError(.storeFailed, error.message)
            }
            logger.log(.warning, "event queue: the state file was deleted while the client ran; moved "
                       + "\(events.count) undelivered events into a new \(fresh.path)")
        } catch {
            stats.recordError("event queue: \(error.message)")
            logger.log(.error, "event queue: the state file was deleted while the client ran and "
                       + "\(queue.count) undelivered events could not be moved to a new one: \(error.message)")
        }
    }

    /// Drains within `timeoutMs` and stops the dispatcher; the rest stays on disk for the next client.
    public func close(timeoutMs: Int) {
        dispatcher.close(timeoutMs: timeoutMs)
        journal?.close(into: queue)
        rescueIfStateFileIsGone()
        let left = pending
        if left > 0 {
            logger.log(.warning, "event queue: \(left) events not delivered within close_timeout_ms; "
                       + "they stay in the state file and the next client sends them")
        }
    }
}
