import ExperimentCore

/// Profiles in the client's state file (table `profiles`), one row per user holding the profile JSON.
/// Several processes on one host may share the file (WAL, busy timeout); one connection per store,
/// guarded by a lock because a SQLite connection is not thread-safe.
public final class SQLiteProfileStore: ProfileStore, @unchecked Sendable {
    public let name = "sqlite"
    private let database: SQLiteDatabase
    private let select: SQLiteStatement
    private let upsert: SQLiteStatement
    private let delete: SQLiteStatement
    private let lock = Lock()

    public init(directory: StateDirectory) throws(ClientError) {
        database = try directory.openDatabase()
        do {
            try database.execute("""
                CREATE TABLE IF NOT EXISTS profiles (
                    user_id TEXT PRIMARY KEY NOT NULL,
                    profile TEXT NOT NULL
                )
                """)
            select = try database.prepare("SELECT profile FROM profiles WHERE user_id = ?1")
            upsert = try database.prepare("""
                INSERT INTO profiles (user_id, profile) VALUES (?1, ?2)
                ON CONFLICT(user_id) DO UPDATE SET profile = excluded.profile
                """)
            delete = try database.prepare("DELETE FROM profiles WHERE user_id = ?1 RETURNING 1")
        } catch {
            throw ClientError(.storeFailed, "profile store: \(error.message)")
        }
    }

    public func lookup(userId: String) throws(ClientError) -> BucketMap? {
        let found: Result<String?, SQLiteError> = lock.withLock {
            defer { select.reset() }
            do throws(SQLiteError) {
                try select.bind(1, userId)
                return .success(try select.step() ? select.text(0) : nil)
            } catch {
                return .failure(error)
            }
        }
        guard case .success(let text) = found else {
            if case .failure(let error) = found { throw ClientError(.storeFailed, "profile store: \(error.message)") }
            return nil
        }
        guard let text else { return nil }
        return try ProfileJSON.decode(text)
    }

    public func save(userId: String, map: BucketMap) throws(ClientError) {
        let text = ProfileJSON.encode(userId: userId, map: map)
        let failure: SQLiteError? = lock.withLock {
            defer { upsert.reset() }
            do throws(SQLiteError) {
                try database.requireFileInPlace()
                try upsert.bind(1, userId)
                try upsert.bind(2, text)
                try upsert.step()
                return nil
            } catch {
                return error
            }
        }
        if let failure { throw ClientError(.storeFailed, "profile store: \(failure.message)") }
    }

    public func remove(userId: String) throws(ClientError) -> Bool {
        let outcome: Result<Bool, SQLiteError> = lock.withLock {
            defer { delete.reset() }
            do throws(SQLiteError) {
                try database.requireFileInPlace()
                try delete.bind(1, userId)
                let removed = try delete.step()
                while try delete.step() {}
                return .success(removed)
            } catch {
                return .failure(error)
            }
        }
        switch outcome {
        case .success(let removed): return removed
        case .failure(let error): throw ClientError(.storeFailed, "profile store: \(error.message)")
        }
    }
}
