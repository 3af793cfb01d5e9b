import ExperimentCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The built-in dispatcher: a background thread that takes ready events from the durable queue, merges
/// those sharing a batch header into one reference-format POST (several visitors in one payload, as the
/// reference's batch processor does), and removes them only after a 2xx.
///
/// - 5xx, 408, 429 and transport errors (refused, reset, timeout, DNS): the events stay queued and are
///   retried with exponential backoff and jitter; the round stops (the endpoint is likely down).
/// - Any other 4xx: a merged batch is split and each event sent alone, so one bad event cannot take its
///   neighbours down; an event refused on its own is poison: moved to `event_dead_letter`, reported.
final class EventDispatcher: @unchecked Sendable {
    struct Settings {
        var batchSize: Int
        var flushIntervalMs: Int
        var requestTimeoutMs: Int
        var backoffBaseMs: Int64 = 200
        var backoffCapMs: Int64 = 60_000
    }

    private let queue: EventQueue
    private let journal: EventJournal?
    private let settings: Settings
    private let stats: EventStats
    private let logger: Logger
    private let notifications: NotificationCenter
    private var worker: BackgroundWorker?

    /// Flush generations: a flush asks for a pass that ignores backoff schedules and waits for it.
    private let flushRequested = Atomic<Int>(0)
    private let flushCompleted = Atomic<Int>(0)
    /// While closing: the monotonic deadline POSTs must finish by (0: not closing).
    private let closeDeadline = Atomic<Int64>(0)

    init(queue: EventQueue, journal: EventJournal?, settings: Settings, stats: EventStats, logger: Logger, notifications: NotificationCenter) {
        self.queue = queue
        self.journal = journal
        self.settings = settings
        self.stats = stats
        self.logger = logger
        self.notifications = notifications
        // The thread holds the dispatcher until close() stops it (EventSink closes on deinit too).
        worker = BackgroundWorker(name: "exp-events") { worker in self.run(worker) }
    }

    /// Ends the next sleep early (enough events for a batch arrived).
    func wake() { worker?.wake() }

    /// Requests a pass over every queued event, ignoring backoff; waits for it up to `timeoutMs`.
    /// True when the pass completed in time.
    func flush(timeoutMs: Int) -> Bool {
        let generation = flushRequested.add(1, ordering: .acquiringAndReleasing).newValue
        worker?.wake()
        let deadline = monotonicMillis() + Int64(timeoutMs)
        while flushCompleted.load(ordering: .acquiring) < generation {
            if monotonicMillis() >= deadline { return false }
            usleep(1_000)
        }
        return true
    }

    /// Drains within `timeoutMs` (POSTs are cut short at the deadline), then stops the thread. Events not
    /// delivered stay on disk, their leases released so the next client sends them at once.
    func close(timeoutMs: Int) {
        closeDeadline.store(monotonicMillis() + Int64(timeoutMs), ordering: .releasing)
        _ = flush(timeoutMs: timeoutMs)
        worker?.stop()
        worker = nil
    }

    // MARK: the thread

    /// Sleeps first: a batch starts with the first event, and goes out a flush interval later (or when
    /// full, or flushed).
    private func run(_ worker: BackgroundWorker) {
        var stopping = !worker.sleep(milliseconds: Int64(settings.flushIntervalMs))
        while true {
            let requested = flushRequested.load(ordering: .acquiring)
            let forced = requested > flushCompleted.load(ordering: .acquiring)
            if !stopping || forced { deliverRound(forced: forced, worker: worker) }
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

    /// Sends batches until nothing is due or the client closes. A transient failure ends an ordinary
    /// round (the endpoint is likely down; backoff spaces the retries); a forced round (flush, close) gives
    /// every queued event one attempt. A cursor keeps a round from taking an event twice.
    private func deliverRound(forced: Bool, worker: BackgroundWorker) {
        var cursor: Int64 = 0
        let endpointUp = deliverJournal(forced: forced, worker: worker)
        if !endpointUp && !forced { return }
        while !pastCloseDeadline() && (!worker.isStopping || closing) {
            let now = EventIdentity.timestampMillis()
            let events: [QueuedEvent]
            do {
                events = try queue.claim(limit: settings.batchSize, afterId: cursor, now: now, ignoringSchedule: forced,
                                         leaseUntil: now + Int64(settings.requestTimeoutMs) + 5_000)
            } catch {
                stats.recordError("event queue: \(error.message)")
                logger.log(.error, "event queue: cannot read queued events: \(error.message)")
                return
            }
            if events.isEmpty { return }
            cursor = events[events.count - 1].id
            let groups = Self.groups(of: events)
            for (position, group) in groups.enumerated() {
                if pastCloseDeadline() {
                    release(groups[position...].flatMap { $0 }.map(\.id))
                    return
                }
                if send(group) == .transientFailure && !forced {
                    // Leave the rest for the next round, due now rather than at the end of their lease.
                    release(groups[(position + 1)...].flatMap { $0 }.map(\.id))
                    return
                }
            }
            if events.count < settings.batchSize { return }
        }
    }

    /// Sends the journaled events straight from the journal (the common path: SQLite is not touched when
    /// the endpoint answers 2xx); those that fail go to the SQLite queue to be retried. False when a POST
    /// failed transiently (the endpoint is likely down).
    private func deliverJournal(forced: Bool, worker: BackgroundWorker) -> Bool {
        guard let journal else { return true }
        var endpointUp = true
        do {
            // drain holds the journal's lock, which a producer (exp_decide, exp_track) may wait for
            try logger.holdingMessages { () throws(SQLiteError) in
                try notifications.holdingNotifications { () throws(SQLiteError) in
                    try journal.drain { (records) throws(SQLiteError) in
                        endpointUp = try sendJournaled(records, forced: forced, worker: worker) && endpointUp
                    }
                }
            }
        } catch {
            stats.recordError("event queue: \(error.message)")
            logger.log(.error, "event queue: cannot move journaled events into the state file: \(error.message)")
        }
        return endpointUp
    }

    private func sendJournaled(_ records: [EventJournal.Record], forced: Bool,
                               worker: BackgroundWorker) throws(SQLiteError) -> Bool {
        let events = records.compactMap { record -> QueuedEvent? in
            guard let parts = EventBatch.split(record.body) else { return nil }
            return QueuedEvent(id: 0, uuid: record.uuid, url: record.url, batchPrefix: parts.prefix,
                               visitor: parts.visitor, attempts: 0)
        }
        journalStoreError = nil
        var endpointUp = true
        var start = 0
        while start < events.count {
            let stopping = pastCloseDeadline() || (worker.isStopping && !closing)
            if stopping || !endpointUp {
                // Keep the rest in the SQLite queue, so producers are not held up behind failing POSTs (they
                // wait for this drain when the journal is full): due now when stopping or flushing (the
                // flush tries them next, from the queue), after a backoff otherwise.
                let due = EventIdentity.timestampMillis() + (stopping || forced ? 0 : backoff(afterAttempts: 1))
                try queue.insert(Array(events[start...]), attempts: 0, at: due)
                break
            }
            let end = min(start + settings.batchSize, events.count)
            for group in Self.groups(of: Array(events[start..<end]))
            where send(group, journaled: true) == .transientFailure {
                endpointUp = false
            }
            if let error = journalStoreError { throw error }
            start = end
        }
        return endpointUp
    }

    /// A SQLite failure while settling journaled events: the journal keeps them.
    private var journalStoreError: SQLiteError?

    /// Events sharing endpoint and batch header, in queue order. There are few groups (usually one: a
    /// new datafile revision starts another), so a linear search beats hashing long headers.
    private static func groups(of events: [QueuedEvent]) -> [[QueuedEvent]] {
        var groups: [[QueuedEvent]] = []
        for event in events {
            if let index = groups.firstIndex(where: { $0[0].batchPrefix == event.batchPrefix && $0[0].url == event.url }) {
                groups[index].append(event)
            } else {
                groups.append([event])
            }
        }
        return groups
    }

    private enum Outcome { case delivered, transientFailure, poisoned }

    /// POSTs one merged batch and settles its events: `journaled` ones are not in the SQLite table yet
    /// (delivered: nothing to do; failed: inserted for a retry; refused: into the dead letters).
    private func send(_ group: [QueuedEvent], journaled: Bool = false) -> Outcome {
        let first = group[0]
        var body = first.batchPrefix
        for (index, event) in group.enumerated() {
            if index > 0 { body += "," }
            body += event.visitor
        }
        body += "]}"
        var timeout = settings.requestTimeoutMs
        let deadline = closeDeadline.load(ordering: .acquiring)
        if deadline != 0 { timeout = max(1, min(timeout, Int(deadline - monotonicMillis()))) }
        let request = HTTPRequest(method: "POST", url: first.url, headers: ["Content-Type: application/json"],
                                  body: Array(body.utf8), timeoutMs: timeout)
        let ids = group.map(\.id)
        switch HTTPClient.perform(request) {
        case .success(let response) where response.isSuccess:
            return settle(ids, journaled: journaled) { () throws(SQLiteError) in
                if !journaled { try queue.remove(ids) }
                stats.sent.add(ids.count, ordering: .relaxed)
                stats.batches.add(1, ordering: .relaxed)
                reportBatch(url: first.url, status: response.status, count: ids.count, outcome: "sent")
                return .delivered
            }
        case .success(let response) where Self.isPermanent(response.status):
            if group.count > 1 {
                // Find the bad ones: each event alone.
                for event in group where send([event], journaled: journaled) == .transientFailure {
                    return .transientFailure
                }
                return .delivered
            }
            let reason = "HTTP \(response.status) from \(first.url): " + Self.snippet(response.body)
            return settle(ids, journaled: journaled) { () throws(SQLiteError) in
                if journaled {
                    try queue.poisonNew(first, status: response.status, reason: reason, now: EventIdentity.timestampMillis())
                } else {
                    try queue.poison(ids, status: response.status, reason: reason, now: EventIdentity.timestampMillis())
                }
                stats.poisoned.add(1, ordering: .relaxed)
                stats.failed.add(1, ordering: .relaxed)
                stats.recordError(reason)
                logger.log(.error, "event \(first.uuid) set aside as poison (kept in event_dead_letter): \(reason)")
                reportBatch(url: first.url, status: response.status, count: 1, outcome: "poisoned")
                return .poisoned
            }
        case .success(let response):
            retryLater(group, reason: "HTTP \(response.status) from \(first.url)", status: response.status,
                       journaled: journaled)
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

    private func retryLater(_ group: [QueuedEvent], reason: String, status: Int, journaled: Bool) {
        let attempts = group.map(\.attempts).max() ?? 0
        let delay = backoff(afterAttempts: attempts + 1)
        let ids = group.map(\.id)
        stats.failed.add(1, ordering: .relaxed)
        stats.retried.add(ids.count, ordering: .relaxed)
        stats.recordError(reason)
        logger.log(.warning, "event batch of \(ids.count) not delivered (\(reason)); retrying in \(delay) ms")
        reportBatch(url: group[0].url, status: status, count: ids.count, outcome: "retry")
        _ = settle(ids, journaled: journaled) { () throws(SQLiteError) in
            if journaled {
                try queue.insert(group, attempts: 1, at: EventIdentity.timestampMillis() + delay)
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

    /// Runs a queue update; a failing state file leaves the events where they are (they will be sent
    /// again: at-least-once) and is reported.
    private func settle(_ ids: [Int64], journaled: Bool = false,
                        _ update: () throws(SQLiteError) -> Outcome) -> Outcome {
        do {
            return try update()
        } catch {
            if journaled { journalStoreError = error }
            stats.recordError("event queue: \(error.message)")
            logger.log(.error, "event queue: cannot update \(ids.count) events: \(error.message)")
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
