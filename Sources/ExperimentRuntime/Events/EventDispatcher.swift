import ExperimentCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The built-in dispatcher: a background thread that takes ready events from the durable queue, merges
/// those sharing a batch header into one reference-format POST (several visitors in one payload, as the
/// reference's batch processor does), and removes them only after a 2xx. Up to `event_max_inflight` POSTs
/// run at once (`SenderPool`), so a stalled request does not hold up the rest.
///
/// - Every event goes to this client's `event_endpoint`, whatever endpoint it was queued under: a client
///   restarted with a corrected endpoint delivers what the old one could not (the queue is per state
///   directory, and an endpoint is where this program's events go, not part of the event).
/// - 5xx, 408, 429 and transport errors (refused, reset, timeout, DNS): the events stay queued and are
///   retried with exponential backoff and jitter; the round stops (the endpoint is likely down). After
///   `event_max_attempts` attempts, or `event_max_age_s` after it was queued, an event moves to
///   `event_dead_letter` (counted in `expired`, logged).
/// - Any other 4xx: a merged batch is split and each event sent alone, so one bad event cannot take its
///   neighbours down; an event refused on its own is poison: moved to `event_dead_letter`, reported.
/// - Forced rounds (exp_flush, exp_client_close) take only this client's events; events other programs or
///   earlier runs left in the state file are sent by the ordinary rounds, in the background.
final class EventDispatcher: @unchecked Sendable {
    struct Settings {
        var batchSize: Int
        var flushIntervalMs: Int
        var requestTimeoutMs: Int
        var endpoint: String
        var maxAttempts: Int = 1_000
        var maxAgeMs: Int64 = 7 * 86_400_000
        var maxInflight: Int = 4
        var backoffBaseMs: Int64 = 200
        var backoffCapMs: Int64 = 60_000
        /// The client option ca_file (nil: the process default).
        var caFile: String? = nil
    }

    private let queue: EventQueue
    private let journal: EventJournal?
    private let settings: Settings
    private let stats: EventStats
    private let logger: Logger
    private let throttled: ThrottledLog
    private let reserve: DiskReserve
    private let notifications: NotificationCenter
    private let pool: SenderPool
    /// Set once in init and never changed (stop() stops it; a flush may read it on any thread meanwhile).
    private var worker: BackgroundWorker?
    /// Completion callbacks waiting for events' outcomes (nil: none can).
    private let watch: DeliveryWatch?

    /// Flush generations: a flush asks for a pass that ignores backoff schedules and waits for it.
    private let flushRequested = Atomic<Int>(0)
    private let flushCompleted = Atomic<Int>(0)
    /// While closing: the monotonic deadline POSTs must finish by (0: not closing).
    private let closeDeadline = Atomic<Int64>(0)
    /// A POST of the current round failed transiently (the endpoint is likely down).
    private let roundFailed = Atomic<Bool>(false)
    /// When the last sweep for events past event_max_age_s ran (monotonic ms).
    private var lastSweepMs: Int64 = 0

    init(queue: EventQueue, journal: EventJournal?, settings: Settings, stats: EventStats, logger: Logger,
         throttled: ThrottledLog, reserve: DiskReserve, notifications: NotificationCenter, watch: DeliveryWatch? = nil) {
        self.watch = watch
        self.queue = queue
        self.journal = journal
        self.settings = settings
        self.stats = stats
        self.logger = logger
        self.throttled = throttled
        self.reserve = reserve
        self.notifications = notifications
        pool = SenderPool(slots: settings.maxInflight)
        // The thread holds the dispatcher until close() stops it (EventSink closes on deinit too).
        worker = BackgroundWorker(name: "exp-events") { worker in self.run(worker) }
    }

    /// Ends the next sleep early (enough events for a batch arrived).
    func wake() { worker?.wake() }

    /// Requests a pass over every event of this client, ignoring backoff; waits for it until the monotonic
    /// `deadline`. True when the pass completed in time.
    func flush(until deadline: Int64) -> Bool {
        let generation = flushRequested.add(1, ordering: .acquiringAndReleasing).newValue
        worker?.wake()
        while flushCompleted.load(ordering: .acquiring) < generation {
            // Stopped (the client closed during the flush): no pass will come.
            if monotonicMillis() >= deadline || isStopped { return false }
            usleep(1_000)
        }
        return true
    }

    /// From now on POSTs are cut at the monotonic `deadline`, and background rounds (other programs'
    /// events) stop.
    func beginClosing(deadline: Int64) {
        closeDeadline.store(max(1, deadline), ordering: .releasing)
        worker?.wake()
    }

    /// Stops the thread (after `beginClosing` and the last forced passes).
    func stop() {
        worker?.stop()
        pool.stop()
    }

    /// True once stop() was called.
    var isStopped: Bool { worker?.isStopping ?? true }

    // MARK: the thread

    /// Sleeps first: a batch starts with the first event, and goes out a flush interval later (or when
    /// full, or flushed).
    private func run(_ worker: BackgroundWorker) {
        var stopping = !worker.sleep(milliseconds: Int64(settings.flushIntervalMs))
        while true {
            let requested = flushRequested.load(ordering: .acquiring)
            let forced = requested > flushCompleted.load(ordering: .acquiring)
            if (!stopping && !closing) || forced { deliverRound(forced: forced, worker: worker) }
            if forced { flushCompleted.store(requested, ordering: .releasing) }
            if stopping || worker.isStopping { return }
            if flushRequested.load(ordering: .acquiring) > requested { continue }
            stopping = !worker.sleep(milliseconds: Int64(settings.flushIntervalMs))
        }
    }

    private var closing: Bool { closeDeadline.load(ordering: .acquiring) != 0 }

    private func pastCloseDeadline() -> Bool {
        let deadline = closeDeadline.load(ordering: .acquiring)
        return deadline != 0 && monotonicMillis() >= deadline
    }

    /// Whether a round should stop taking events: a forced one at the close deadline, an ordinary one as
    /// soon as the client closes (others' events must not delay a close) or an endpoint failure.
    private func shouldStop(forced: Bool, worker: BackgroundWorker) -> Bool {
        if forced { return pastCloseDeadline() || (worker.isStopping && !closing) }
        return closing || worker.isStopping || roundFailed.load(ordering: .acquiring)
    }

    /// Sends batches until nothing is due or the client closes. A transient failure ends an ordinary
    /// round (the endpoint is likely down; backoff spaces the retries); a forced round (flush, close) gives
    /// each of this client's events one attempt. A cursor keeps a round from taking an event twice.
    private func deliverRound(forced: Bool, worker: BackgroundWorker) {
        roundFailed.store(false, ordering: .releasing)
        if !forced { sweepExpired() }
        let endpointUp = deliverJournal(forced: forced, worker: worker)
        defer { pool.waitIdle() }
        if !endpointUp && !forced { return }
        var cursor: Int64 = 0
        while !shouldStop(forced: forced, worker: worker) {
            let now = EventIdentity.timestampMillis()
            let events: [QueuedEvent]
            do {
                events = try queue.claim(limit: settings.batchSize, afterId: cursor, now: now, ignoringSchedule: forced,
                                         ownOnly: forced, leaseUntil: now + Int64(settings.requestTimeoutMs) + 5_000)
            } catch {
                stats.recordError("event queue: \(error.message)")
                throttled.log(.error, kind: "queue read", "event queue: cannot read queued events: \(error.message)")
                return
            }
            if events.isEmpty { return }
            cursor = events[events.count - 1].id
            let groups = Self.groups(of: events)
            for (position, group) in groups.enumerated() {
                if shouldStop(forced: forced, worker: worker) {
                    // Due now rather than at the end of their lease.
                    release(groups[position...].flatMap { $0 }.map(\.id))
                    return
                }
                pool.submit { self.dispatch(group, journaled: false, forced: forced) }
            }
            if events.count < settings.batchSize { return }
        }
    }

    /// Sends one batch on a pool thread and notes a transient failure for the round.
    private func dispatch(_ group: [QueuedEvent], journaled: Bool, forced: Bool) {
        if send(group, journaled: journaled, forced: forced) == .transientFailure {
            roundFailed.store(true, ordering: .releasing)
        }
    }

    /// Moves events queued longer ago than event_max_age_s into the dead letters (about once a minute), and
    /// puts the disk reserve back when it was used.
    private func sweepExpired() {
        let now = monotonicMillis()
        guard now - lastSweepMs >= min(60_000, max(100, settings.maxAgeMs / 2)) else { return }
        lastSweepMs = now
        reserve.restore()
        let wallNow = EventIdentity.timestampMillis()
        do {
            let reason = "undelivered after event_max_age_s (\(settings.maxAgeMs / 1000) s)"
            let expired = try withReserve { () throws(SQLiteError) in
                try queue.expire(queuedBefore: wallNow - settings.maxAgeMs, reason: reason, now: wallNow)
            }
            if expired > 0 { noteExpired(expired, reason: reason) }
        } catch {
            throttled.log(.error, kind: "queue expiry", "event queue: cannot expire old events: \(error.message)")
        }
    }

    private func noteExpired(_ count: Int, reason: String) {
        stats.expired.add(count, ordering: .relaxed)
        stats.recordError("\(count) events moved to event_dead_letter: \(reason)")
        throttled.log(.error, kind: "expired", "\(count) events moved to event_dead_letter: \(reason)")
    }

    /// Sends the journaled events straight from the journal (the common path: SQLite is not touched when
    /// the endpoint answers 2xx); those that fail go to the SQLite queue to be retried. False when a POST
    /// failed transiently (the endpoint is likely down).
    private func deliverJournal(forced: Bool, worker: BackgroundWorker) -> Bool {
        guard let journal else { return true }
        var endpointUp = true
        do {
            // drain holds the journal's lock (producers do not wait for it: they write to SQLite instead)
            try logger.holdingMessages { () throws(SQLiteError) in
                try notifications.holdingNotifications { () throws(SQLiteError) in
                    try journal.drain { (records) throws(SQLiteError) in
                        endpointUp = try sendJournaled(records, forced: forced, worker: worker) && endpointUp
                    }
                }
            }
        } catch {
            stats.recordError("event queue: \(error.message)")
            throttled.log(.error, kind: "journal move",
                          "event queue: cannot move journaled events into the state file: \(error.message)")
        }
        return endpointUp
    }

    private func sendJournaled(_ records: [EventJournal.Record], forced: Bool,
                               worker: BackgroundWorker) throws(SQLiteError) -> Bool {
        let now = EventIdentity.timestampMillis()
        let events = records.compactMap { record -> QueuedEvent? in
            guard let parts = EventBatch.split(record.body) else { return nil }
            return QueuedEvent(id: 0, uuid: record.uuid, url: record.url, batchPrefix: parts.prefix,
                               visitor: parts.visitor, attempts: 0, createdMs: now, journalOffset: record.offset)
        }
        journalStoreError.withLock { $0 = nil }
        var start = 0
        while start < events.count {
            let stopping = pastCloseDeadline() || (worker.isStopping && !closing) || (closing && !forced)
            if stopping || roundFailed.load(ordering: .acquiring) {
                // Keep the rest in the SQLite queue, so the journal is free again: due now when stopping or
                // flushing (the flush tries them next, from the queue), after a backoff otherwise.
                pool.waitIdle()
                let due = EventIdentity.timestampMillis() + (stopping || forced ? 0 : backoff(afterAttempts: 1))
                let rest = Array(events[start...])
                try queue.insert(rest, attempts: 0, at: due)
                journal?.markSettled(rest.lazy.map(\.journalOffset))
                break
            }
            let end = min(start + settings.batchSize, events.count)
            for group in Self.groups(of: Array(events[start..<end])) {
                pool.submit { self.dispatch(group, journaled: true, forced: forced) }
            }
            start = end
        }
        pool.waitIdle()
        if let error = journalStoreError.withLock({ $0 }) { throw error }
        return !roundFailed.load(ordering: .acquiring)
    }

    /// A SQLite failure while settling journaled events: the journal keeps them.
    private let journalStoreError = Locked<SQLiteError?>(nil)

    /// Events sharing a batch header, in queue order. There are few groups (usually one: a new datafile
    /// revision starts another), so a linear search beats hashing long headers.
    private static func groups(of events: [QueuedEvent]) -> [[QueuedEvent]] {
        var groups: [[QueuedEvent]] = []
        for event in events {
            if let index = groups.firstIndex(where: { $0[0].batchPrefix == event.batchPrefix }) {
                groups[index].append(event)
            } else {
                groups.append([event])
            }
        }
        return groups
    }

    private enum Outcome { case delivered, transientFailure, poisoned }

    /// POSTs one merged batch to this client's endpoint and settles its events: `journaled` ones are not in
    /// the SQLite table yet (delivered: nothing to do; failed: inserted for a retry; refused: into the dead
    /// letters).
    private func send(_ group: [QueuedEvent], journaled: Bool, forced: Bool) -> Outcome {
        let first = group[0]
        let url = settings.endpoint
        var body = first.batchPrefix
        for (index, event) in group.enumerated() {
            if index > 0 { body += "," }
            body += event.visitor
        }
        body += "]}"
        var timeout = settings.requestTimeoutMs
        let deadline = closeDeadline.load(ordering: .acquiring)
        if deadline != 0 { timeout = max(1, min(timeout, Int(deadline - monotonicMillis()))) }
        var request = HTTPRequest(method: "POST", url: url, headers: ["Content-Type: application/json"],
                                  body: Array(body.utf8), timeoutMs: timeout)
        request.caFile = settings.caFile
        if !forced {
            // A background POST of other programs' events must not hold up this client's close; one with
            // this client's events may finish (cut at the close deadline), as cancelling a POST the server
            // already took means sending it twice.
            let adopted = group.allSatisfy(\.foreign)
            request.isCancelled = { [self] in adopted ? closing : pastCloseDeadline() }
        }
        let ids = group.map(\.id)
        switch HTTPClient.perform(request) {
        case .success(let response) where response.isSuccess:
            stats.ownSent.add(group.reduce(0) { $0 + ($1.foreign ? 0 : 1) }, ordering: .relaxed)
            // Completion callbacks run once the queue and the counters say what they report.
            defer { watch?.settle(group.lazy.map(\.uuid), delivered: true) }
            return settle(ids, journaled: journaled, events: group, shrinks: true) { () throws(SQLiteError) in
                if !journaled { try queue.remove(ids) }
                stats.sent.add(ids.count, ordering: .relaxed)
                stats.batches.add(1, ordering: .relaxed)
                reportBatch(url: url, status: response.status, count: ids.count, outcome: "sent")
                return .delivered
            }
        case .success(let response) where Self.isPermanent(response.status):
            if group.count > 1 {
                // Find the bad ones: each event alone.
                for event in group where send([event], journaled: journaled, forced: forced) == .transientFailure {
                    return .transientFailure
                }
                return .delivered
            }
            let reason = "HTTP \(response.status) from \(url): " + Self.snippet(response.body)
            defer { watch?.settle(CollectionOfOne(first.uuid), delivered: false) }
            return settle(ids, journaled: journaled, events: group, shrinks: !journaled) { () throws(SQLiteError) in
                if journaled {
                    try queue.poisonNew(first, status: response.status, reason: reason, now: EventIdentity.timestampMillis())
                } else {
                    try queue.poison(ids, status: response.status, reason: reason, now: EventIdentity.timestampMillis())
                }
                stats.poisoned.add(1, ordering: .relaxed)
                stats.failed.add(1, ordering: .relaxed)
                stats.recordError(reason)
                throttled.log(.error, kind: "poison", "event \(first.uuid) set aside as poison (kept in event_dead_letter): \(reason)")
                reportBatch(url: url, status: response.status, count: 1, outcome: "poisoned")
                return .poisoned
            }
        case .success(let response):
            retryLater(group, reason: "HTTP \(response.status) from \(url)", status: response.status,
                       journaled: journaled)
            return .transientFailure
        case .failure where !forced && closing && group.allSatisfy(\.foreign):
            // Cut short by the close: not an attempt.
            if journaled {
                _ = settle(ids, journaled: true, events: group) { () throws(SQLiteError) in
                    try queue.insert(group, attempts: 0, at: EventIdentity.timestampMillis())
                    return .transientFailure
                }
            } else {
                release(ids)
            }
            return .transientFailure
        case .failure(let error):
            retryLater(group, reason: error.message, status: 0, journaled: journaled)
            return .transientFailure
        }
    }

    /// 4xx other than 408 (timeout) and 429 (rate limited): the endpoint will refuse these events again.
    private static func isPermanent(_ status: Int) -> Bool {
        (400..<500).contains(status) && status != 408 && status != 429
    }

    /// Schedules another attempt, or, for events past event_max_attempts / event_max_age_s, moves them to
    /// the dead letters.
    private func retryLater(_ group: [QueuedEvent], reason: String, status: Int, journaled: Bool) {
        defer { watch?.settle(group.lazy.map(\.uuid), delivered: false) }
        let now = EventIdentity.timestampMillis()
        let expired = group.filter { $0.attempts + 1 >= settings.maxAttempts || now - $0.createdMs >= settings.maxAgeMs }
        let retried = expired.isEmpty ? group : group.filter {
            $0.attempts + 1 < settings.maxAttempts && now - $0.createdMs < settings.maxAgeMs
        }
        stats.failed.add(1, ordering: .relaxed)
        stats.recordError(reason)
        reportBatch(url: settings.endpoint, status: status, count: group.count, outcome: "retry")
        if !expired.isEmpty {
            let why = "undelivered after \(settings.maxAttempts) attempts (event_max_attempts) or "
                + "\(settings.maxAgeMs / 1000) s (event_max_age_s); last failure: \(reason)"
            let moved = settle(expired.map(\.id), journaled: journaled, events: expired, shrinks: !journaled) { () throws(SQLiteError) in
                if journaled {
                    for event in expired {
                        try queue.poisonNew(event, status: status, reason: why, now: now, attempts: event.attempts + 1)
                    }
                } else {
                    try queue.poison(expired.map(\.id), status: status, reason: why, now: now)
                }
                return .poisoned
            }
            if moved == .poisoned { noteExpired(expired.count, reason: why) }
        }
        guard !retried.isEmpty else { return }
        let attempts = retried.map(\.attempts).max() ?? 0
        let delay = backoff(afterAttempts: attempts + 1)
        let ids = retried.map(\.id)
        stats.retried.add(ids.count, ordering: .relaxed)
        throttled.log(.warning, kind: "retry", "event batch of \(ids.count) not delivered (\(reason)); retrying in \(delay) ms")
        _ = settle(ids, journaled: journaled, events: retried) { () throws(SQLiteError) in
            if journaled {
                try queue.insert(retried, attempts: 1, at: EventIdentity.timestampMillis() + delay)
            } else {
                try queue.retry(ids, at: EventIdentity.timestampMillis() + delay, countAttempt: true)
            }
            return .transientFailure
        }
    }

    private func release(_ ids: [Int64]) {
        guard !ids.isEmpty else { return }
        _ = settle(ids) { () throws(SQLiteError) in
            try queue.retry(ids, at: EventIdentity.timestampMillis(), countAttempt: false)
            return .transientFailure
        }
    }

    /// Exponential backoff with "equal jitter": half the delay fixed, half random, so clients that failed
    /// together do not retry together.
    private func backoff(afterAttempts attempts: Int) -> Int64 {
        let exponent = min(attempts - 1, 20)
        let delay = min(settings.backoffCapMs, settings.backoffBaseMs << Int64(exponent))
        return delay / 2 + Int64.random(in: 0...(delay / 2))
    }

    /// Runs a state-file operation that removes rows; on a full disk it releases the reserve file once and
    /// tries again, so delivered events can still be deleted and the backlog drains. (Only removals use the
    /// reserve: new rows would use up the space a drain needs.)
    private func withReserve<T>(_ operation: () throws(SQLiteError) -> T) throws(SQLiteError) -> T {
        do {
            return try operation()
        } catch where error.isDiskFull && reserve.release() {
            logger.log(.warning, "event queue: the disk is full; released the \(DiskReserve.bytes / 1024) KiB "
                       + "reserve in the state directory so delivered events can be removed")
            return try operation()
        }
    }

    /// Runs a queue update; a failing state file leaves the events where they are (they will be sent
    /// again: at-least-once) and is reported.
    /// Journaled `events` whose update committed (delivered, or now in SQLite) are marked settled in the
    /// journal: if another batch of the same drain fails to settle, the journal keeps its segment, and the
    /// settled ones must not be sent from it again.
    private func settle(_ ids: [Int64], journaled: Bool = false, events: [QueuedEvent] = [], shrinks: Bool = false,
                        _ update: () throws(SQLiteError) -> Outcome) -> Outcome {
        do {
            let outcome = shrinks ? try withReserve(update) : try update()
            if journaled { journal?.markSettled(events.lazy.map(\.journalOffset)) }
            return outcome
        } catch {
            if journaled { journalStoreError.withLock { $0 = error } }
            stats.recordError("event queue: \(error.message)")
            throttled.log(.error, kind: "queue update", "event queue: cannot update \(ids.count) events: \(error.message)")
            return .transientFailure
        }
    }

    private func reportBatch(url: String, status: Int, count: Int, outcome: String) {
        guard notifications.hasListeners(.logEvent) else { return }
        notifications.notify(.logEvent) {
            var writer = JSONWriter()
            writer.beginObject()
            writer.field("url", url)
            writer.field("http_verb", "POST")
            writer.key("status"); writer.int(Int64(status))
            writer.key("event_count"); writer.int(Int64(count))
            writer.field("outcome", outcome)
            writer.endObject()
            return writer.text
        }
    }

    private static func snippet(_ body: [UInt8]) -> String {
        let text = String(decoding: body.prefix(200), as: UTF8.self)
        return text.isEmpty ? "(empty body)" : text
    }
}

/// A file of `bytes` reserved in the state directory, deleted when the disk is full so the queue can still
/// remove delivered events (SQLite needs a little space even to delete: WAL frames), and put back later.
final class DiskReserve: @unchecked Sendable {
    static let bytes = 1 << 20
    let path: String
    private let lock = Lock()

    init(directory: String) {
        path = directory + "/event-reserve.bin"
        restore()
    }

    /// Creates the reserve when it is missing and the space is there.
    func restore() {
        lock.withLock {
            // O_EXCL: an existing reserve (or anything planted in its place, a symlink included) is left as is.
            let descriptor = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else { return }
            if posix_fallocate(descriptor, 0, off_t(Self.bytes)) != 0 { unlink(path) }
            Glibc.close(descriptor)
        }
    }

    /// Deletes the reserve; false when there was none.
    func release() -> Bool {
        lock.withLock { unlink(path) == 0 }
    }
}
