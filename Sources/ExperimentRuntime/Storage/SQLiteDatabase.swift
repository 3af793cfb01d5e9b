import CSQLite
#if canImport(Glibc)
import Glibc
#endif

/// A failed SQLite call, with SQLite's own message and the statement's purpose.
public struct SQLiteError: Error, Sendable, CustomStringConvertible {
    public let code: Int32
    public let message: String
    public var description: String { message }
}

/// One connection to the client's state file (SQLite, WAL mode).
///
/// Several processes on one host may open the same file: WAL lets readers run beside one writer, and a
/// busy timeout makes a writer wait for another process's write instead of failing at once. A connection
/// is not thread-safe: each owner (profile store, event queue, datafile cache) opens its own, or guards it
/// with a lock.
public final class SQLiteDatabase: @unchecked Sendable {
    public let path: String
    private var handle: OpaquePointer?
    /// The file opened (device, inode), to notice it being deleted or replaced under us.
    private var openedFile: (dev_t, ino_t)?

    /// Opens (creating when missing) the database at `path`; `busyTimeoutMs` bounds how long a write waits
    /// for another connection's lock.
    public init(path: String, busyTimeoutMs: Int32 = 5_000) throws(SQLiteError) {
        self.path = path
        try Self.preparePrivateFile(path)
        var opened: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW
        let status = sqlite3_open_v2(path, &opened, flags, nil)
        guard status == SQLITE_OK, let opened else {
            let message = opened.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close(opened)
            throw SQLiteError(code: status, message: "cannot open \(path): \(message)")
        }
        handle = opened
        sqlite3_busy_timeout(opened, busyTimeoutMs)
        try execute("PRAGMA journal_mode=WAL")
        try execute("PRAGMA synchronous=NORMAL")
        var file = stat()
        if stat(path, &file) == 0 { openedFile = (file.st_dev, file.st_ino) }
    }

    /// Creates the database file 0600 whatever the umask (SQLite gives its -wal and -shm files the same
    /// mode), tightens one left readable by others, and refuses symlinks planted as the file or its -wal
    /// and -shm companions: nothing is ever created or written outside the state directory.
    static func preparePrivateFile(_ path: String) throws(SQLiteError) {
        for companion in [path + "-wal", path + "-shm"] {
            var status = stat()
            if lstat(companion, &status) == 0 && (status.st_mode & S_IFMT) == S_IFLNK {
                throw SQLiteError(code: SQLITE_CANTOPEN, message: "cannot open \(path): \(companion) is a symbolic link")
            }
        }
        let descriptor = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            let reason = errno == ELOOP ? "it is a symbolic link" : String(cString: strerror(errno))
            throw SQLiteError(code: SQLITE_CANTOPEN, message: "cannot open \(path): \(reason)")
        }
        defer { close(descriptor) }
        var status = stat()
        if fstat(descriptor, &status) == 0 && status.st_mode & 0o077 != 0 { fchmod(descriptor, 0o600) }
    }

    /// Fails when the state file was deleted or replaced while open (a write would "succeed" into a file
    /// that vanishes at close): callers report it instead.
    public func requireFileInPlace() throws(SQLiteError) {
        if fileIsGone {
            throw SQLiteError(code: SQLITE_IOERR, message: "\(path) was deleted or replaced while the client ran")
        }
    }

    /// Whether the path no longer names the file this connection writes (deleted or replaced while open):
    /// what is written here then vanishes when the connection closes.
    public var fileIsGone: Bool {
        guard let openedFile else { return false }
        var status = stat()
        return stat(path, &status) != 0 || status.st_dev != openedFile.0 || status.st_ino != openedFile.1
    }

    deinit { sqlite3_close_v2(handle) }

    /// Runs one or more statements that return no rows.
    public func execute(_ sql: String) throws(SQLiteError) {
        var errorText: UnsafeMutablePointer<CChar>?
        let status = sqlite3_exec(handle, sql, nil, nil, &errorText)
        guard status == SQLITE_OK else {
            let message = errorText.map { String(cString: $0) } ?? lastMessage
            sqlite3_free(errorText)
            throw SQLiteError(code: status, message: "\(path): \(message)")
        }
    }

    /// Compiles `sql` once; the statement is reused with `reset` between uses.
    public func prepare(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        var statement: OpaquePointer?
        let status = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
        guard status == SQLITE_OK, let statement else {
            throw SQLiteError(code: status, message: "\(path): \(lastMessage) in \(sql)")
        }
        return SQLiteStatement(statement, database: self)
    }

    /// Runs `body` in one IMMEDIATE transaction (the write lock is taken up front, so two processes never
    /// deadlock upgrading read locks); rolled back when `body` throws.
    public func transaction<T>(_ body: () throws(SQLiteError) -> T) throws(SQLiteError) -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// Rows changed by the last INSERT, UPDATE or DELETE.
    public var changes: Int { Int(sqlite3_changes(handle)) }

    public var lastInsertRowId: Int64 { sqlite3_last_insert_rowid(handle) }

    var lastMessage: String { String(cString: sqlite3_errmsg(handle)) }
}

/// A prepared statement: bind parameters (1-based), step through rows, read columns (0-based).
public final class SQLiteStatement {
    private let statement: OpaquePointer
    private let database: SQLiteDatabase

    init(_ statement: OpaquePointer, database: SQLiteDatabase) {
        self.statement = statement
        self.database = database
    }

    deinit { sqlite3_finalize(statement) }

    /// Clears earlier bindings and results; call before each use.
    public func reset() {
        sqlite3_reset(statement)
        sqlite3_clear_bindings(statement)
    }

    public func bind(_ index: Int32, _ text: String) throws(SQLiteError) {
        let status = text.withCString { exp_sqlite3_bind_text_copy(statement, index, $0, Int32(text.utf8.count)) }
        try check(status)
    }

    public func bind(_ index: Int32, bytes: UnsafeRawBufferPointer) throws(SQLiteError) {
        try check(exp_sqlite3_bind_blob_copy(statement, index, bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1),
                                              Int32(bytes.count)))
    }

    public func bind(_ index: Int32, _ value: Int64) throws(SQLiteError) {
        try check(sqlite3_bind_int64(statement, index, value))
    }

    public func bindNull(_ index: Int32) throws(SQLiteError) {
        try check(sqlite3_bind_null(statement, index))
    }

    /// Advances to the next row: true when there is one, false when the statement is done.
    @discardableResult
    public func step() throws(SQLiteError) -> Bool {
        let status = sqlite3_step(statement)
        if status == SQLITE_ROW { return true }
        if status == SQLITE_DONE { return false }
        throw SQLiteError(code: status, message: "\(database.path): \(database.lastMessage)")
    }

    public func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(statement, column) }

    public func isNull(_ column: Int32) -> Bool { sqlite3_column_type(statement, column) == SQLITE_NULL }

    public func text(_ column: Int32) -> String {
        guard let bytes = sqlite3_column_text(statement, column) else { return "" }
        let count = Int(sqlite3_column_bytes(statement, column))
        return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    }

    public func bytes(_ column: Int32) -> [UInt8] {
        guard let start = sqlite3_column_blob(statement, column) else { return [] }
        let count = Int(sqlite3_column_bytes(statement, column))
        return Array(UnsafeRawBufferPointer(start: start, count: count))
    }

    private func check(_ status: Int32) throws(SQLiteError) {
        guard status == SQLITE_OK else {
            throw SQLiteError(code: status, message: "\(database.path): \(database.lastMessage)")
        }
    }
}
