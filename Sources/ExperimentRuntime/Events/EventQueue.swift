import ExperimentCore
import Synchronization

/// One queued event: a single visitor of a reference-format batch, stored apart from the batch's
/// header so that events sharing a header (same endpoint, account, project, revision...) merge into
/// one POST.
public struct QueuedEvent: Sendable {
    public let id: Int64
    public let uuid: String
    public let url: String
    /// The batch text up to and including `"visitors":[` (the group key together with `url`).
    public let batchPrefix: String
    /// The visitor object.
    public let visitor: String
    public let attempts: Int
    /// When the event entered the queue (ms since the epoch; bounds its life: event_max_age_s).
    public var createdMs: Int64 = 0
    /// Queued by another client (another program, an earlier run): adopted, not waited for at close.
    public var foreign = false
    /// A journaled event not yet in SQLite: where its record is in the journal segment being drained.
    var journalOffset: Int = -1
}

/// The durable event queue: table `event_queue` in the client's state file, one row per event, and
/// `event_dead_letter` for poison events and for events past `event_max_attempts` / `event_max_age_s`. A
/// row leaves the queue only once a 2xx acknowledged it (or it was poisoned, expired, or evicted by the
/// drop_oldest policy).
///
/// Each row names its `owner`: the client (one per process and client) that queued it. exp_flush and
/// exp_client_close wait only for their own client's rows; rows of other programs and of earlier runs are
/// sent by whichever client's background rounds find them due (leases keep two from sending one row).
///
/// One connection, guarded by a lock: the tracking threads' INSERTs and the dispatcher's claims and
/// deletes queue on the mutex instead of on SQLite's file lock, whose busy handler sleeps milliseconds.
/// `synchronous=NORMAL` in WAL mode: a committed INSERT is in the WAL (the OS page cache) when it
/// returns, which survives the process being killed; an OS crash may lose the last commits.
final class EventQueue: @unchecked Sendable {
    private let lock = Lock()
    private let database: SQLiteDatabase
    private let insert: SQLiteStatement
    private let deleteOldest: SQLiteStatement
    private let selectReady: SQLiteStatement
    private let lease: SQLiteStatement
    private let deleteOne: SQLiteStatement
    private let deleteRange: SQLiteStatement
    private let insertFailed: SQLiteStatement
    private let insertDeadLetter: SQLiteStatement
    private let reschedule: SQLiteStatement
    private let copyToDeadLetter: SQLiteStatement
    private let insertJournaled: SQLiteStatement
    private let selectOwnCount: SQLiteStatement
    private let selectTotalCount: SQLiteStatement
    private let selectDeadLetterCount: SQLiteStatement
    private let copyExpired: SQLiteStatement
    private let deleteExpired: SQLiteStatement
    /// This client's id in the `owner` column.
    let owner: String
    /// Rows in event_queue as this process counts them (read without the lock by producers).
    private let rowCount = Atomic<Int>(0)

    init(database: SQLiteDatabase, owner: String) throws(SQLiteError) {
        self.database = database
        self.owner = owner
        try database.execute("""
            CREATE TABLE IF NOT EXISTS event_queue(
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                uuid TEXT NOT NULL,
                url TEXT NOT NULL,
                batch_prefix TEXT NOT NULL,
                visitor TEXT NOT NULL,
                attempts INTEGER NOT NULL DEFAULT 0,
                next_attempt_ms INTEGER NOT NULL,
                created_ms INTEGER NOT NULL,
                owner TEXT NOT NULL DEFAULT '');
            CREATE TABLE IF NOT EXISTS event_dead_letter(
                id INTEGER PRIMARY KEY,
                uuid TEXT NOT NULL,
                url TEXT NOT NULL,
                batch_prefix TEXT NOT NULL,
                visitor TEXT NOT NULL,
                attempts INTEGER NOT NULL,
                status INTEGER NOT NULL,
                reason TEXT NOT NULL,
                failed_ms INTEGER NOT NULL);
            """)
        // A state file from before owners: its rows belong to nobody (any client adopts them).
        if (try? database.prepare("SELECT owner FROM event_queue LIMIT 0")) == nil {
            try database.execute("ALTER TABLE event_queue ADD COLUMN owner TEXT NOT NULL DEFAULT ''")
        }
        insert = try database.prepare("""
            INSERT INTO event_queue(uuid, url, batch_prefix, visitor, next_attempt_ms, created_ms, owner)
            VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?6)
            """)
        // A journal whose owner died between this commit and clearing the journal is ingested again at
        // the next start: those events are sent twice, with the same uuids (at-least-once).
        insertJournaled = try database.prepare("""
            INSERT INTO event_queue(uuid, url, batch_prefix, visitor, next_attempt_ms, created_ms, owner)
            VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?6)
            """)
        deleteOldest = try database.prepare(
            "DELETE FROM event_queue WHERE id = (SELECT id FROM event_queue ORDER BY id LIMIT 1)")
        selectReady = try database.prepare("""
            SELECT id, uuid, url, batch_prefix, visitor, attempts, created_ms, owner FROM event_queue
            WHERE next_attempt_ms <= ?1 AND id > ?3 AND (?4 = '' OR owner = ?4) ORDER BY id LIMIT ?2
            """)
        // The claimed rows are exactly those between the first and last claimed id that were due.
        lease = try database.prepare("""
            UPDATE event_queue SET next_attempt_ms = ?3
            WHERE id BETWEEN ?1 AND ?2 AND next_attempt_ms <= ?4 AND (?5 = '' OR owner = ?5)
            """)
        deleteOne = try database.prepare("DELETE FROM event_queue WHERE id = ?1")
        deleteRange = try database.prepare("DELETE FROM event_queue WHERE id BETWEEN ?1 AND ?2")
        insertFailed = try database.prepare("""
            INSERT INTO event_queue(uuid, url, batch_prefix, visitor, next_attempt_ms, created_ms, attempts, owner)
            VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?6, ?7)
            """)
        insertDeadLetter = try database.prepare("""
            INSERT INTO event_dead_letter(uuid, url, batch_prefix, visitor, attempts, status, reason, failed_ms)
            VALUES (?1, ?2, ?3, ?4, ?8, ?5, ?6, ?7)
            """)
        reschedule = try database.prepare(
            "UPDATE event_queue SET next_attempt_ms = ?2, attempts = attempts + ?3 WHERE id = ?1")
        copyToDeadLetter = try database.prepare("""
            INSERT OR REPLACE INTO event_dead_letter(id, uuid, url, batch_prefix, visitor, attempts, status, reason, failed_ms)
            SELECT id, uuid, url, batch_prefix, visitor, attempts + 1, ?2, ?3, ?4 FROM event_queue WHERE id = ?1
            """)
        selectOwnCount = try database.prepare("SELECT COUNT(*) FROM event_queue WHERE owner = ?1")
        selectTotalCount = try database.prepare("SELECT COUNT(*) FROM event_queue")
        selectDeadLetterCount = try database.prepare("SELECT COUNT(*) FROM event_dead_letter")
        copyExpired = try database.prepare("""
            INSERT OR REPLACE INTO event_dead_letter(id, uuid, url, batch_prefix, visitor, attempts, status, reason, failed_ms)
            SELECT id, uuid, url, batch_prefix, visitor, attempts, 0, ?2, ?3 FROM event_queue WHERE created_ms < ?1
            """)
        deleteExpired = try database.prepare("DELETE FROM event_queue WHERE created_ms < ?1")
        rowCount.store(try Self.count(selectTotalCount, owner: nil), ordering: .relaxed)
    }

    private static func count(_ statement: SQLiteStatement, owner: String?) throws(SQLiteError) -> Int {
        statement.reset()
        if let owner { try statement.bind(1, owner) }
        try statement.step()
        defer { statement.reset() }
        return Int(statement.int64(0))
    }

    /// What the state file holds now, counted by SQLite (other processes' rows included).
    struct Counts {
        /// Rows this client queued and that are not delivered yet.
        var own = 0
        /// Every row of event_queue (this client's, other programs', earlier runs').
        var total = 0
        var deadLetters = 0
    }

    func counts() throws(SQLiteError) -> Counts {
        try locked { () throws(SQLiteError) -> Counts in
            Counts(own: try Self.count(selectOwnCount, owner: owner),
                   total: try Self.count(selectTotalCount, owner: nil),
                   deadLetters: try Self.count(selectDeadLetterCount, owner: nil))
        }
    }

    /// This client's rows still queued.
    func ownCount() throws(SQLiteError) -> Int {
        try locked { () throws(SQLiteError) -> Int in try Self.count(selectOwnCount, owner: owner) }
    }

    /// Hands this client's rows over at close: due now and nobody's, so the next client (this program's next
    /// run, or any other) sends them at once, in the background.
    func disown(now: Int64) throws(SQLiteError) {
        try locked { () throws(SQLiteError) in
            let update = try database.prepare("UPDATE event_queue SET next_attempt_ms = ?1, owner = '' WHERE owner = ?2")
            try update.bind(1, now)
            try update.bind(2, owner)
            try update.step()
        }
    }

    /// Moves every row queued before `cutoff` (ms since the epoch) into the dead letters; how many.
    func expire(queuedBefore cutoff: Int64, reason: String, now: Int64) throws(SQLiteError) -> Int {
        try locked { () throws(SQLiteError) -> Int in
            let removed = try database.transaction { () throws(SQLiteError) -> Int in
                copyExpired.reset()
                try copyExpired.bind(1, cutoff)
                try copyExpired.bind(2, reason)
                try copyExpired.bind(3, now)
                try copyExpired.step()
                deleteExpired.reset()
                try deleteExpired.bind(1, cutoff)
                try deleteExpired.step()
                return database.changes
            }
            rowCount.add(-removed, ordering: .relaxed)
            return removed
        }
    }

    /// Runs `body` under the queue's lock, keeping its typed error.
    private func locked<T>(_ body: () throws(SQLiteError) -> T) throws(SQLiteError) -> T {
        let result: Result<T, SQLiteError> = lock.withLock {
            do throws(SQLiteError) { return .success(try body()) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// Events waiting on disk (as this process counts them).
    var count: Int { rowCount.load(ordering: .relaxed) }

    enum AppendOutcome { case appended, appendedAfterDroppingOldest, full }

    /// Appends one event, committed before returning. At `capacity`, `dropOldest` evicts the oldest row
    /// first; otherwise the event is refused.
    func append(uuid: String, url: String, batchPrefix: String, visitor: String, capacity: Int,
                dropOldest: Bool, now: Int64) throws(SQLiteError) -> AppendOutcome
    {
        try locked { () throws(SQLiteError) -> AppendOutcome in
            var outcome = AppendOutcome.appended
            if rowCount.load(ordering: .relaxed) >= capacity {
                guard dropOldest else { return .full }
                try removeOldestLocked()
                outcome = .appendedAfterDroppingOldest
            }
            insert.reset()
            try insert.bind(1, uuid)
            try insert.bind(2, url)
            try insert.bind(3, batchPrefix)
            try insert.bind(4, visitor)
            try insert.bind(5, now)
            try insert.bind(6, owner)
            try insert.step()
            rowCount.add(1, ordering: .relaxed)
            return outcome
        }
    }

    /// Appends journaled events in one transaction: this client's (`recovered` false) or those of a journal
    /// whose client died (`recovered`: nobody's, adopted in the background).
    func appendJournaled(_ records: [EventJournal.Record], recovered: Bool = false) throws(SQLiteError) {
        let ownerOfRecovered = recovered ? "" : owner
        guard !records.isEmpty else { return }
        try locked { () throws(SQLiteError) in
            // Counted once committed: a COMMIT refused (disk full) rolls the rows back.
            let added = try database.transaction { () throws(SQLiteError) -> Int in
                let now = EventIdentity.timestampMillis()
                var added = 0
                for record in records {
                    guard let parts = EventBatch.split(record.body) else { continue }  // not written by us
                    insertJournaled.reset()
                    try insertJournaled.bind(1, record.uuid)
                    try insertJournaled.bind(2, record.url)
                    try insertJournaled.bind(3, parts.prefix)
                    try insertJournaled.bind(4, parts.visitor)
                    try insertJournaled.bind(5, now)
                    try insertJournaled.bind(6, ownerOfRecovered)
                    try insertJournaled.step()
                    added += database.changes
                }
                return added
            }
            rowCount.add(added, ordering: .relaxed)
        }
    }

    /// Inserts events that never were in the table (journaled events whose first POST failed), due at `at`.
    func insert(_ events: [QueuedEvent], attempts: Int, at: Int64) throws(SQLiteError) {
        guard !events.isEmpty else { return }
        try locked { () throws(SQLiteError) in
            try database.transaction { () throws(SQLiteError) in
                for event in events {
                    insertFailed.reset()
                    try insertFailed.bind(1, event.uuid)
                    try insertFailed.bind(2, event.url)
                    try insertFailed.bind(3, event.batchPrefix)
                    try insertFailed.bind(4, event.visitor)
                    try insertFailed.bind(5, at)
                    try insertFailed.bind(6, Int64(attempts))
                    try insertFailed.bind(7, owner)
                    try insertFailed.step()
                }
            }
            rowCount.add(events.count, ordering: .relaxed)  // committed
        }
    }

    /// Whether the state file this queue writes was deleted or replaced while open.
    var fileIsGone: Bool { database.fileIsGone }

    /// Every queued event, oldest first (to move them into a new state file).
    func all() throws(SQLiteError) -> [QueuedEvent] {
        try locked { () throws(SQLiteError) -> [QueuedEvent] in
            let select = try database.prepare(
                "SELECT id, uuid, url, batch_prefix, visitor, attempts, created_ms FROM event_queue ORDER BY id")
            var events: [QueuedEvent] = []
            while try select.step() {
                events.append(QueuedEvent(id: select.int64(0), uuid: select.text(1), url: select.text(2),
                                          batchPrefix: select.text(3), visitor: select.text(4),
                                          attempts: Int(select.int64(5)), createdMs: select.int64(6)))
            }
            return events
        }
    }

    /// Sets aside a journaled event the endpoint refused for good (or that used up its attempts).
    func poisonNew(_ event: QueuedEvent, status: Int, reason: String, now: Int64, attempts: Int = 1) throws(SQLiteError) {
        try locked { () throws(SQLiteError) in
            insertDeadLetter.reset()
            try insertDeadLetter.bind(1, event.uuid)
            try insertDeadLetter.bind(2, event.url)
            try insertDeadLetter.bind(3, event.batchPrefix)
            try insertDeadLetter.bind(4, event.visitor)
            try insertDeadLetter.bind(5, Int64(status))
            try insertDeadLetter.bind(6, reason)
            try insertDeadLetter.bind(7, now)
            try insertDeadLetter.bind(8, Int64(attempts))
            try insertDeadLetter.step()
        }
    }

    /// Evicts the oldest queued event (drop_oldest policy); false when the table is empty.
    func removeOldest() throws(SQLiteError) -> Bool {
        try locked { () throws(SQLiteError) -> Bool in
            let before = rowCount.load(ordering: .relaxed)
            try removeOldestLocked()
            return rowCount.load(ordering: .relaxed) < before
        }
    }

    private func removeOldestLocked() throws(SQLiteError) {
        deleteOldest.reset()
        try deleteOldest.step()
        rowCount.add(-database.changes, ordering: .relaxed)
    }

    /// Takes up to `limit` events after id `afterId` due at `now` (all of them when `ignoringSchedule`),
    /// oldest first, only this client's when `ownOnly`, and leases them until `leaseUntil` so another
    /// process on the same file does not send them too. On a full disk the lease cannot be written: the
    /// events are taken without one (another process may send them too: at-least-once), so a backlog still
    /// drains.
    func claim(limit: Int, afterId: Int64, now: Int64, ignoringSchedule: Bool, ownOnly: Bool = false,
               leaseUntil: Int64) throws(SQLiteError) -> [QueuedEvent] {
        try locked { () throws(SQLiteError) -> [QueuedEvent] in
            do throws(SQLiteError) {
                return try database.transaction { () throws(SQLiteError) -> [QueuedEvent] in
                    let events = try selectLocked(limit: limit, afterId: afterId, now: now,
                                                  ignoringSchedule: ignoringSchedule, ownOnly: ownOnly)
                    if let first = events.first, let last = events.last {
                        lease.reset()
                        try lease.bind(1, first.id)
                        try lease.bind(2, last.id)
                        try lease.bind(3, leaseUntil)
                        try lease.bind(4, ignoringSchedule ? Int64.max : now)
                        try lease.bind(5, ownOnly ? owner : "")
                        try lease.step()
                        lease.reset()
                    }
                    return events
                }
            } catch where error.isDiskFull {
                return try selectLocked(limit: limit, afterId: afterId, now: now,
                                        ignoringSchedule: ignoringSchedule, ownOnly: ownOnly)
            }
        }
    }

    private func selectLocked(limit: Int, afterId: Int64, now: Int64, ignoringSchedule: Bool,
                              ownOnly: Bool) throws(SQLiteError) -> [QueuedEvent] {
        selectReady.reset()
        defer { selectReady.reset() }
        try selectReady.bind(1, ignoringSchedule ? Int64.max : now)
        try selectReady.bind(2, Int64(limit))
        try selectReady.bind(3, afterId)
        try selectReady.bind(4, ownOnly ? owner : "")
        var events: [QueuedEvent] = []
        while try selectReady.step() {
            events.append(QueuedEvent(id: selectReady.int64(0), uuid: selectReady.text(1),
                                      url: selectReady.text(2), batchPrefix: selectReady.text(3),
                                      visitor: selectReady.text(4), attempts: Int(selectReady.int64(5)),
                                      createdMs: selectReady.int64(6), foreign: selectReady.text(7) != owner))
        }
        return events
    }

    /// Removes delivered events (`ids` ascending).
    func remove(_ ids: [Int64]) throws(SQLiteError) {
        try locked { () throws(SQLiteError) in
            if let first = ids.first, let last = ids.last, last - first + 1 == Int64(ids.count) {
                // Contiguous ids (the usual batch): one range delete.
                deleteRange.reset()
                try deleteRange.bind(1, first)
                try deleteRange.bind(2, last)
                try deleteRange.step()
                rowCount.add(-database.changes, ordering: .relaxed)
                return
            }
            let removed = try database.transaction { () throws(SQLiteError) -> Int in
                var removed = 0
                for id in ids { removed += try delete(id) }
                return removed
            }
            rowCount.add(-removed, ordering: .relaxed)  // committed
        }
    }

    /// Deletes one event (called under the lock, inside a transaction); the number of rows removed.
    private func delete(_ id: Int64) throws(SQLiteError) -> Int {
        deleteOne.reset()
        try deleteOne.bind(1, id)
        try deleteOne.step()
        return database.changes
    }

    /// Schedules events for another attempt at `at`; `countAttempt` adds one to their attempt count
    /// (false when only a lease is released).
    func retry(_ ids: [Int64], at: Int64, countAttempt: Bool) throws(SQLiteError) {
        try locked { () throws(SQLiteError) in
            try database.transaction { () throws(SQLiteError) in
                for id in ids {
                    reschedule.reset()
                    try reschedule.bind(1, id)
                    try reschedule.bind(2, at)
                    try reschedule.bind(3, countAttempt ? 1 : 0)
                    try reschedule.step()
                }
            }
        }
    }

    /// Moves events the endpoint refused for good (or that used up their attempts) into the dead-letter table.
    func poison(_ ids: [Int64], status: Int, reason: String, now: Int64) throws(SQLiteError) {
        try locked { () throws(SQLiteError) in
            let removed = try database.transaction { () throws(SQLiteError) -> Int in
                var removed = 0
                for id in ids {
                    copyToDeadLetter.reset()
                    try copyToDeadLetter.bind(1, id)
                    try copyToDeadLetter.bind(2, Int64(status))
                    try copyToDeadLetter.bind(3, reason)
                    try copyToDeadLetter.bind(4, now)
                    try copyToDeadLetter.step()
                    removed += try delete(id)
                }
                return removed
            }
            rowCount.add(-removed, ordering: .relaxed)  // committed
        }
    }
}

extension SQLiteError {
    /// SQLITE_FULL (the disk, or max_page_count): writes fail, reads still work.
    var isDiskFull: Bool { code & 0xFF == 13 }
}

extension EventBatch {
    /// Splits a one-visitor batch into its header (through `"visitors":[`) and its visitor object. The
    /// header's keys are fixed and its values are escaped strings, so the first `"visitors":[` is the key.
    func splitVisitor() -> (prefix: String, visitor: String)? { Self.split(body) }

    static func split(_ body: String) -> (prefix: String, visitor: String)? {
        let utf8 = Array(body.utf8)
        let marker = Array("\"visitors\":[".utf8)
        guard utf8.count > marker.count + 2, utf8.suffix(2).elementsEqual("]}".utf8) else { return nil }
        var index = 0
        let last = utf8.count - marker.count
        while index <= last {
            if utf8[index] == marker[0] && utf8[index..<(index + marker.count)].elementsEqual(marker) {
                let end = index + marker.count
                return (String(decoding: utf8[..<end], as: UTF8.self),
                        String(decoding: utf8[end..<(utf8.count - 2)], as: UTF8.self))
            }
            index += 1
        }
        return nil
    }
}
