import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The fast, crash-safe front of the event queue.
///
/// A SQLite commit per event costs tens of microseconds (a WAL frame write and lock traffic per
/// transaction), far above what exp_track may cost its caller. So an accepted event is first copied into
/// a journal: a file in the state directory mapped into memory (MAP_SHARED). A store into that mapping is
/// in the kernel's page cache as soon as it is made, so it survives the process being killed, the same
/// guarantee SQLite's WAL gives with synchronous=NORMAL. The dispatcher thread moves journal records into
/// the SQLite queue in one transaction per round (group commit), so SQLite stays the one place events are
/// sent from.
///
/// Two segments per client (files `event-journal-<pid>-<id>-a|b.bin`): producers append to the active
/// one while the dispatcher ingests the other, then they swap. Each file is held with flock while the
/// client lives; a client that finds a journal file it can lock found one whose owner died, and ingests it.
///
/// Record: [UInt32 payload length][UInt32 magic] payload, padded to 8 bytes. The header is stored after the
/// payload, so a process killed mid-copy leaves a zero header, which ends the journal.
///
/// A drain settles records one batch at a time (delivered, or moved into SQLite for a retry); each settled
/// record's magic becomes `settledMagic`, so when another batch of the same drain cannot be settled (the
/// state file is locked) and the segment is kept, the next drain (or the client that recovers the file)
/// offers only the records still unsettled. Without it, events already delivered or already queued in
/// SQLite would be sent again from the journal: a duplicate that no lost answer explains.
final class EventJournal: @unchecked Sendable {
    static let magic: UInt32 = 0x4A45_5645  // "EVEJ"
    /// A record a drain already settled: skipped by `read`.
    static let settledMagic: UInt32 = 0x4A45_5644  // "DVEJ"
    static let filePrefix = "event-journal-"

    /// One journal file, mapped.
    private final class Segment {
        let path: String
        let descriptor: Int32
        let base: UnsafeMutableRawPointer
        let size: Int
        var used = 0
        var records = 0

        init(path: String, size: Int) throws(ClientError) {
            self.path = path
            let descriptor = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else { throw Self.failure("cannot create", path) }
            // Blocks reserved up front: a store into a mapped hole on a full disk would raise SIGBUS.
            guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
                let error = Self.failure("cannot lock", path)
                Glibc.close(descriptor)
                throw error
            }
            let reserved = posix_fallocate(descriptor, 0, off_t(size))  // returns the error number
            guard reserved == 0 else {
                errno = reserved
                let error = Self.failure("cannot reserve \(size) bytes for", path)
                unlink(path)
                Glibc.close(descriptor)
                throw error
            }
            guard let mapped = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, 0),
                  mapped != MAP_FAILED else {
                let error = Self.failure("cannot map", path)
                unlink(path)
                Glibc.close(descriptor)
                throw error
            }
            self.descriptor = descriptor
            self.base = mapped
            self.size = size
        }

        /// Unmaps and releases the lock; `remove` deletes the file (else the next client recovers it).
        func release(remove: Bool) {
            munmap(base, size)
            if remove { unlink(path) }
            Glibc.close(descriptor)
        }

        func reset() {
            if used > 0 { memset(base, 0, used) }
            used = 0
            records = 0
        }

        static func failure(_ what: String, _ path: String) -> ClientError {
            ClientError(.storeFailed, "event journal: \(what) \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// A journal record, read back.
    struct Record {
        let uuid: String
        let url: String
        /// The whole one-visitor batch (split into header and visitor when ingested, off the caller's path).
        let body: String
        /// Where the record starts in the segment being drained (for `markSettled`).
        var offset: Int = -1
    }

    private let appendLock = Lock()
    private let ingestLock = Lock()
    private var active: Segment
    private var standby: Segment
    /// Records in either segment, not yet in SQLite.
    private let recordCount = Atomic<Int>(0)

    /// Opens this client's two segments of `segmentBytes` each in `directory`.
    private let segmentBytes: Int

    init(directory: String, segmentBytes: Int) throws(ClientError) {
        self.segmentBytes = segmentBytes
        let stem = "\(directory)/\(Self.filePrefix)\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        active = try Segment(path: stem + "-a.bin", size: segmentBytes)
        do {
            standby = try Segment(path: stem + "-b.bin", size: segmentBytes)
        } catch {
            active.release(remove: true)
            throw error
        }
    }

    var count: Int { recordCount.load(ordering: .relaxed) }

    /// A forked child's copy: unmaps and closes both segments without taking a lock (a parent thread may
    /// have held one at the fork) and without removing the files, which stay the parent's.
    func releaseAfterFork() {
        active.release(remove: false)
        standby.release(remove: false)
    }

    /// Whether an event of these sizes fits an empty segment at all (else no ingest makes room for it).
    func fits(uuid: String, url: String, body: String) -> Bool {
        let length = uuid.utf8.count + url.utf8.count + body.utf8.count + 2
        return (8 + length + 7) & ~7 + 8 <= segmentBytes
    }

    enum AppendOutcome { case appended, appendedHalfFull, noRoom }

    /// Copies one event into the active segment. `.appendedHalfFull`: time to ingest; `.noRoom`: ingest,
    /// then retry.
    func append(uuid: String, url: String, body: String) -> AppendOutcome {
        var uuid = uuid, url = url, body = body
        let length = uuid.utf8.count + url.utf8.count + body.utf8.count + 2
        let recordBytes = (8 + length + 7) & ~7
        return appendLock.withLock {
            let segment = active
            guard segment.used + recordBytes + 8 <= segment.size else { return .noRoom }
            var cursor = segment.base + segment.used + 8
            cursor = Self.copy(&uuid, to: cursor)
            cursor.storeBytes(of: 0, as: UInt8.self)
            cursor = Self.copy(&url, to: cursor + 1)
            cursor.storeBytes(of: 0, as: UInt8.self)
            _ = Self.copy(&body, to: cursor + 1)
            // Header last: until it is stored, the record does not exist.
            let header = segment.base + segment.used
            (header + 4).storeBytes(of: Self.magic, as: UInt32.self)
            atomicStoreRelease(header, UInt32(length))
            segment.used += recordBytes
            segment.records += 1
            recordCount.add(1, ordering: .relaxed)
            return segment.used * 2 > segment.size ? .appendedHalfFull : .appended
        }
    }

    /// Copies the text's UTF-8 bytes to `destination`; returns the end.
    @inline(__always)
    private static func copy(_ text: inout String, to destination: UnsafeMutableRawPointer) -> UnsafeMutableRawPointer {
        text.withUTF8 { bytes in
            if bytes.count > 0 { destination.copyMemory(from: bytes.baseAddress!, byteCount: bytes.count) }
            return destination + bytes.count
        }
    }

    /// Moves every journaled record into `queue`: swaps the segments, ingests the retired one in one
    /// transaction, clears it. Serialized; producers keep appending meanwhile.
    func ingest(into queue: EventQueue) throws(SQLiteError) {
        try drain { (records) throws(SQLiteError) in try queue.appendJournaled(records) }
    }

    /// Set when a producer gave up waiting for a drain (its POSTs are slow): until that drain ends, producers
    /// do not wait for it again.
    private let drainIsSlow = Atomic<Bool>(false)

    /// Makes room in a full active segment: swaps in the standby when it is empty (its events were sent),
    /// else moves the journal into `queue`. Waits up to `waitMs` for a drain under way (the dispatcher's);
    /// false when it is still running then (the caller writes to SQLite instead: a producer never waits for
    /// a slow endpoint more than once per drain).
    func makeRoom(into queue: EventQueue, waitMs: Int64) throws(SQLiteError) -> Bool {
        let deadline = deadlineMillis(after: drainIsSlow.load(ordering: .relaxed) ? 0 : waitMs)
        while !ingestLock.tryLock() {
            if monotonicMillis() >= deadline {
                drainIsSlow.store(true, ordering: .relaxed)
                return false
            }
            usleep(100)
        }
        defer { ingestLock.unlock() }
        let swapped: Bool = appendLock.withLock {
            if active.used * 2 <= active.size { return true }  // another producer made room already
            guard standby.records == 0 else { return false }
            let full = active
            active = standby
            standby = full
            return true
        }
        if !swapped { try drainLocked { (records) throws(SQLiteError) in try queue.appendJournaled(records) } }
        return true
    }

    /// `ingest` unless a drain is under way (the dispatcher's, which may be waiting for POSTs): false then,
    /// without waiting.
    func ingestIfIdle(into queue: EventQueue) throws(SQLiteError) -> Bool {
        guard ingestLock.tryLock() else { return false }
        defer { ingestLock.unlock() }
        try drainLocked { (records) throws(SQLiteError) in try queue.appendJournaled(records) }
        return true
    }

    /// Swaps the segments and hands the retired one's records to `take`, which must deliver them or put
    /// them in the SQLite queue; the segment is cleared only when `take` returns (on a throw the records
    /// stay journaled and are offered again next time). Serialized; producers keep appending meanwhile.
    func drain(_ take: ([Record]) throws(SQLiteError) -> Void) throws(SQLiteError) {
        try ingestLock.withLockTyped { () throws(SQLiteError) in try drainLocked(take) }
        drainIsSlow.store(false, ordering: .relaxed)
    }

    private func drainLocked(_ take: ([Record]) throws(SQLiteError) -> Void) throws(SQLiteError) {
        // The standby may still hold records a failed drain left.
        if standby.records > 0 { try hand(standby, to: take) }
        let retired: Segment = appendLock.withLock {
            let full = active
            active = standby
            standby = full
            return full
        }
        if retired.records > 0 { try hand(retired, to: take) }
    }

    /// The segment a drain is handing out (guarded by ingestLock; `markSettled` writes into it).
    private var handing: Segment?

    private func hand(_ segment: Segment, to take: ([Record]) throws(SQLiteError) -> Void) throws(SQLiteError) {
        handing = segment
        defer { handing = nil }
        do {
            try take(Self.read(segment.base, size: segment.used))
        } catch {
            // Kept for the next drain: count only the records still to settle.
            let live = Self.read(segment.base, size: segment.used).count
            recordCount.add(live - segment.records, ordering: .relaxed)
            segment.records = live
            throw error
        }
        recordCount.add(-segment.records, ordering: .relaxed)
        segment.reset()
    }

    /// Marks records of the drain under way as settled (delivered, or in the SQLite queue): a later drain of
    /// the same segment skips them. Called by `take` (on any thread) before it returns.
    func markSettled<Offsets: Sequence<Int>>(_ offsets: Offsets) {
        guard let segment = handing else { return }
        for offset in offsets where offset >= 0 && offset + 8 <= segment.used {
            (segment.base + offset + 4).storeBytes(of: Self.settledMagic, as: UInt32.self)
        }
    }

    /// Ingests what is left and removes this client's journal files; when the state file refuses the
    /// records, the files stay (unlocked) and the next client recovers them.
    func close(into queue: EventQueue) {
        var ingested = true
        do {
            try ingest(into: queue)
            try ingest(into: queue)
        } catch {
            ingested = false
        }
        appendLock.withLock {
            active.release(remove: ingested)
            standby.release(remove: ingested)
        }
    }

    /// Records in a mapped journal, up to the first missing header.
    static func read(_ base: UnsafeRawPointer, size: Int) -> [Record] {
        var records: [Record] = []
        var offset = 0
        while offset + 8 <= size {
            let length = Int(base.load(fromByteOffset: offset, as: UInt32.self))
            let magic = base.load(fromByteOffset: offset + 4, as: UInt32.self)
            guard length > 0, magic == Self.magic || magic == Self.settledMagic, offset + 8 + length <= size else { break }
            if magic == Self.settledMagic {
                offset += (8 + length + 7) & ~7
                continue
            }
            let fields = UnsafeBufferPointer(start: (base + offset + 8).assumingMemoryBound(to: UInt8.self), count: length)
                .split(separator: 0, maxSplits: 2, omittingEmptySubsequences: false)
            if fields.count == 3 {
                let text = fields.map { String(decoding: $0, as: UTF8.self) }
                records.append(Record(uuid: text[0], url: text[1], body: text[2], offset: offset))
            }
            offset += (8 + length + 7) & ~7
        }
        return records
    }

    /// `read` for a segment left by a dead client, which may be damaged (a torn write, a bad disk block):
    /// past a record header that is not valid it looks for the next valid one at each 8-byte boundary, so
    /// every record that can still be read is kept. `damaged`: some bytes between records were skipped.
    static func salvage(_ base: UnsafeRawPointer, size: Int) -> (records: [Record], damaged: Bool) {
        var records: [Record] = []
        var damaged = false
        var offset = 0
        var skipping = false
        while offset + 8 <= size {
            let length = Int(base.load(fromByteOffset: offset, as: UInt32.self))
            let magic = base.load(fromByteOffset: offset + 4, as: UInt32.self)
            guard length > 0, magic == Self.magic || magic == Self.settledMagic, offset + 8 + length <= size else {
                if length != 0 || magic != 0 { damaged = true }
                skipping = true
                offset += 8
                continue
            }
            if skipping { damaged = true; skipping = false }  // a valid record after a gap: the gap was damage
            let end = (offset + 8 + length + 7) & ~7
            records += read(base + offset, size: min(size - offset, end - offset))
            offset = end
        }
        return (records, damaged)
    }

    /// Ingests and removes journal files of clients that died (files nobody holds a lock on).
    static func recoverAbandoned(in directory: String, into queue: EventQueue, logger: Logger) {
        guard let listing = opendir(directory) else { return }
        var names: [String] = []
        while let entry = readdir(listing) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.baseAddress!.assumingMemoryBound(to: CChar.self))
            }
            if name.hasPrefix(filePrefix) && name.hasSuffix(".bin") { names.append(name) }
        }
        closedir(listing)
        for name in names.sorted() {
            let path = directory + "/" + name
            let descriptor = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC)
            guard descriptor >= 0 else { continue }
            defer { Glibc.close(descriptor) }
            guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else { continue }  // its client is alive
            var status = stat()
            guard fstat(descriptor, &status) == 0 else { continue }
            let size = Int(status.st_size)
            var records: [Record] = []
            var damaged = false
            if size > 0, let mapped = mmap(nil, size, PROT_READ, MAP_SHARED, descriptor, 0), mapped != MAP_FAILED {
                (records, damaged) = salvage(mapped, size: size)
                munmap(mapped, size)
            }
            do {
                try queue.appendJournaled(records, recovered: true)
                if damaged {
                    let aside = "\(path).corrupt-\(getpid())"
                    if rename(path, aside) != 0 { unlink(path) }
                    logger.log(.warning, "event journal: \(path) is damaged; recovered the \(records.count) events "
                               + "still readable and set it aside as \(aside)")
                } else {
                    unlink(path)
                }
                if !records.isEmpty && !damaged {
                    logger.log(.info, "event journal: recovered \(records.count) events from \(name)")
                }
            } catch {
                logger.log(.error, "event journal: cannot recover \(name): \(error.message)")
            }
        }
    }
}

/// Stores `value` at `pointer` after every store before it (a fence keeps the compiler and the CPU from
/// moving the header ahead of the payload).
@inline(__always)
private func atomicStoreRelease(_ pointer: UnsafeMutableRawPointer, _ value: UInt32) {
    atomicMemoryFence(ordering: .releasing)
    pointer.storeBytes(of: value, as: UInt32.self)
}

extension Lock {
    /// withLock for bodies with a typed error.
    func withLockTyped<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        let result: Result<T, E> = withLock {
            do throws(E) { return .success(try body()) } catch { return .failure(error) }
        }
        return try result.get()
    }
}
