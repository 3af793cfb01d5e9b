import ExperimentCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

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
    /// Events moved to `event_dead_letter` after `event_max_attempts` attempts or `event_max_age_s`.
    public let expired = Atomic<Int>(0)
    /// Events of this client (not those other programs left in the state file) the pipeline delivered:
    /// what an asynchronous flush reports as sent.
    public let ownSent = Atomic<Int>(0)
    private let lastError = Locked<String?>(nil)
    /// What the state file held when the pipeline closed (stats after close report it).
    let countsAtClose = Locked<PendingCounts?>(nil)

    public init() {}

    func recordError(_ message: String) { lastError.withLock { $0 = message } }

    /// The counters as a JSON object, with what waits on disk now.
    public func json(counts: PendingCounts?) -> String {
        var writer = JSONWriter()
        writer.beginObject()
        let counters = [("queued", queued.load(ordering: .relaxed)), ("sent", sent.load(ordering: .relaxed)),
                      ("retried", retried.load(ordering: .relaxed)), ("failed", failed.load(ordering: .relaxed)),
                      ("dropped", dropped.load(ordering: .relaxed)), ("poisoned", poisoned.load(ordering: .relaxed)),
                      ("batches_sent", batches.load(ordering: .relaxed)), ("expired", expired.load(ordering: .relaxed))]
        for (name, count) in counters { writer.key(name); writer.int(Int64(count)) }
        let disk = counts ?? countsAtClose.withLock { $0 } ?? PendingCounts()
        writer.key("pending"); writer.int(Int64(disk.pending))
        writer.key("backlog"); writer.int(Int64(disk.backlog))
        writer.key("dead_letter"); writer.int(Int64(disk.deadLetters))
        writer.field("last_error", lastError.withLock { $0 })
        writer.endObject()
        return writer.text
    }
}

/// Events on disk, as the state file counts them.
public struct PendingCounts: Sendable {
    /// This client's undelivered events: its journal plus its rows of event_queue.
    public var pending = 0
    /// Every row of event_queue (other programs' and earlier runs' included) plus this client's journal.
    public var backlog = 0
    /// Rows of event_dead_letter (poison and expired events).
    public var deadLetters = 0
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
    /// Repeating problems (a full disk refusing every event) are logged once per interval.
    private let throttled: ThrottledLog
    /// Events appended since the dispatcher was last woken for a full batch.
    private let sinceWake = Atomic<Int>(0)

    public init(options: ClientOptions, stats: EventStats, logger: Logger,
                notifications: NotificationCenter, watch: DeliveryWatch? = nil) throws(ClientError)
    {
        let directory = try StateDirectory(option: options.stateDir, logger: logger)
        let database = try directory.openDatabase()
        do {
            queue = try EventQueue(database: database, owner: Self.newOwnerId())
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
        throttled = ThrottledLog(logger: logger)
        let settings = EventDispatcher.Settings(batchSize: options.eventBatchSize,
                                                flushIntervalMs: options.eventFlushIntervalMs,
                                                requestTimeoutMs: options.requestTimeoutMs,
                                                endpoint: options.eventEndpoint,
                                                maxAttempts: options.eventMaxAttempts,
                                                maxAgeMs: Int64(options.eventMaxAgeSeconds) * 1000,
                                                maxInflight: options.eventMaxInflight, caFile: options.caFile)
        dispatcher = EventDispatcher(queue: queue, journal: journal, settings: settings, stats: stats, logger: logger,
                                     throttled: throttled, reserve: DiskReserve(directory: directory.path),
                                     notifications: notifications, watch: watch)
        let waiting = queue.count
        if waiting > 0 {
            logger.log(.info, "event queue: \(waiting) events left by other programs or earlier runs will be sent "
                       + "in the background (to \(options.eventEndpoint))")
            dispatcher.wake()
        }
    }

    /// Names this client's rows in event_queue: unique across processes and clients.
    private static func newOwnerId() -> String {
        "\(getpid())-\(EventIdentity.uuid().prefix(13))"
    }

    /// 4 MB: about 6,000 typical events per segment between two ingests.
    static let journalSegmentBytes = 4 << 20
    /// How long a producer that filled a segment waits for the dispatcher's drain of the other one (once per
    /// drain) before it writes to SQLite instead.
    static let drainWaitMs: Int64 = 250

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
                // The oldest may still be journaled; a drain under way (the dispatcher's) is not waited for.
                _ = try journal.ingestIfIdle(into: queue)
                _ = try queue.removeOldest()
            }
        }
        var outcome = journal.append(uuid: uuid, url: options.eventEndpoint, body: batch.body)
        if outcome == .noRoom {
            guard journal.fits(uuid: uuid, url: options.eventEndpoint, body: batch.body) else {
                stats.dropped.add(1, ordering: .relaxed)
                throw ClientError(.tooLarge, "event of \(batch.body.utf8.count) bytes is larger than an event journal "
                                  + "segment (\(Self.journalSegmentBytes) bytes)")
            }
            // The active segment is full (the dispatcher has not kept up): switch to the other segment once
            // its drain ended (waiting a little for it), or move the journal to SQLite; when other threads
            // filled the fresh segment first, again; and if the drain is slow (a stalling endpoint), this
            // event goes to the SQLite queue directly. A full segment is never "too large".
            var attempts = 0
            while outcome == .noRoom && attempts < 3 {
                attempts += 1
                var madeRoom = false
                _ = try storeOperation { () throws(SQLiteError) in
                    madeRoom = try journal.makeRoom(into: queue, waitMs: Self.drainWaitMs)
                }
                dispatcher.wake()
                guard madeRoom else { break }
                outcome = journal.append(uuid: uuid, url: options.eventEndpoint, body: batch.body)
            }
            if outcome == .noRoom {
                guard let parts = batch.splitVisitor() else {
                    stats.dropped.add(1, ordering: .relaxed)
                    throw ClientError(.internalError, "event batch not in the expected format")
                }
                dispatcher.wake()
                return try enqueueDirectly(parts, uuid: uuid)
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
            throttled.log(.error, kind: "store", "event queue: cannot store an event: \(error.message)")
            throw ClientError(.storeFailed, "event queue: \(error.message)")
        }
    }

    private func accepted(evictedOldest: Bool, wake: Bool) {
        if evictedOldest {
            stats.dropped.add(1, ordering: .relaxed)
            throttled.log(.warning, kind: "evicted", "event queue full (\(options.eventQueueCapacity)): dropped the oldest event")
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
            throttled.log(.error, kind: "store", "event queue: cannot store an event: \(error.message)")
            throw ClientError(.storeFailed, "event queue: \(error.message)")
        }
        if outcome == .full { return try refuseFull() }
        accepted(evictedOldest: outcome == .appendedAfterDroppingOldest, wake: false)
    }

    /// Events on disk now, counted by the state file (this process's own count when it cannot be read).
    public var counts: PendingCounts {
        let journaled = journal?.count ?? 0
        guard let rows = try? queue.counts() else {
            return PendingCounts(pending: queue.count + journaled, backlog: queue.count + journaled, deadLetters: 0)
        }
        return PendingCounts(pending: rows.own + journaled, backlog: rows.total + journaled, deadLetters: rows.deadLetters)
    }

    /// This client's events not delivered yet (journal and its event_queue rows).
    private var ownPending: Int {
        let journaled = journal?.count ?? 0
        return ((try? queue.ownCount()) ?? queue.count) + journaled
    }

    /// Sends this client's events now and keeps retrying those that fail, with backoff shortened to fit,
    /// until none is left or `timeoutMs` passed; the number still undelivered (on disk, retried later).
    /// Events other programs left in the state file are not waited for (the background rounds send them).
    public func flush(timeoutMs: Int) -> Int {
        drain(until: deadlineMillis(after: Int64(timeoutMs)))
    }

    private func drain(until deadline: Int64) -> Int {
        var pause: Int64 = 50
        while true {
            _ = dispatcher.flush(until: deadline)
            let left = ownPending
            let remaining = deadline - monotonicMillis()
            if left == 0 || remaining <= 0 || dispatcher.isStopped { return left }
            // Backoff between passes, never past the deadline (half of what is left, at most).
            let wait = min(pause, max(1, remaining / 2))
            usleep(UInt32(min(wait, 2_000) * 1000))
            pause = min(pause * 2, 2_000)
        }
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
                try EventQueue(database: fresh, owner: queue.owner).insert(events, attempts: 0, at: EventIdentity.timestampMillis())
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

    /// In a forked child, lets go of the parent's journal files (unmapped and closed, not removed: the
    /// parent keeps appending to and delivering them). Nothing else is touched: the SQLite connection, the
    /// threads and their locks are the parent's.
    func releaseAfterFork() {
        journal?.releaseAfterFork()
    }

    /// Retries this client's events within `timeoutMs` and stops the dispatcher; what is left stays on
    /// disk for the next client. Returns how many of this client's events were left.
    public func close(timeoutMs: Int) -> Int {
        let deadline = deadlineMillis(after: Int64(timeoutMs))
        dispatcher.beginClosing(deadline: deadline)
        _ = drain(until: deadline)
        dispatcher.stop()
        journal?.close(into: queue)
        let final = counts
        stats.countsAtClose.withLock { $0 = final }
        do {
            try queue.disown(now: EventIdentity.timestampMillis())
        } catch {
            logger.log(.warning, "event queue: cannot hand this client's undelivered events over: \(error.message); "
                       + "they are sent once their retry is due")
        }
        rescueIfStateFileIsGone()
        throttled.flush(.warning)
        if final.pending > 0 {
            logger.log(.warning, "event queue: \(final.pending) events not delivered within close_timeout_ms "
                       + "(\(timeoutMs) ms); they stay in the state file and the next client sends them")
        }
        return final.pending
    }
}
