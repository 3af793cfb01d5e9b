/// The last good datafile per SDK key, kept in the state file (`datafile_cache` table) so the next start
/// can use it when the network cannot be reached. Not thread-safe: the config manager serializes its use.
final class DatafileCache {
    struct Entry {
        let body: [UInt8]
        let etag: String?
        let lastModified: String?
        let revision: String
        /// Wall-clock seconds since the epoch when this body was fetched or last confirmed (304).
        let savedAt: Int64
    }

    private let database: SQLiteDatabase
    private let select: SQLiteStatement
    private let upsert: SQLiteStatement
    private let touch: SQLiteStatement

    init(directory: StateDirectory) throws(ClientError) {
        database = try directory.openDatabase()
        do throws(SQLiteError) {
            try database.execute("""
                CREATE TABLE IF NOT EXISTS datafile_cache (
                    sdk_key TEXT PRIMARY KEY, body BLOB NOT NULL, etag TEXT, last_modified TEXT,
                    revision TEXT NOT NULL, saved_at INTEGER NOT NULL)
                """)
            select = try database.prepare(
                "SELECT body, etag, last_modified, revision, saved_at FROM datafile_cache WHERE sdk_key = ?1")
            upsert = try database.prepare("""
                INSERT INTO datafile_cache (sdk_key, body, etag, last_modified, revision, saved_at)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                ON CONFLICT(sdk_key) DO UPDATE SET body = excluded.body, etag = excluded.etag,
                    last_modified = excluded.last_modified, revision = excluded.revision, saved_at = excluded.saved_at
                """)
            touch = try database.prepare("UPDATE datafile_cache SET saved_at = ?2 WHERE sdk_key = ?1")
        } catch {
            throw ClientError(.storeFailed, "datafile cache: \(error.message)")
        }
    }

    func load(sdkKey: String) throws(ClientError) -> Entry? {
        do throws(SQLiteError) {
            select.reset()
            defer { select.reset() }
            try select.bind(1, sdkKey)
            guard try select.step() else { return nil }
            return Entry(body: select.bytes(0), etag: select.isNull(1) ? nil : select.text(1),
                         lastModified: select.isNull(2) ? nil : select.text(2), revision: select.text(3),
                         savedAt: select.int64(4))
        } catch {
            throw ClientError(.storeFailed, "datafile cache: \(error.message)")
        }
    }

    func save(sdkKey: String, body: [UInt8], etag: String?, lastModified: String?, revision: String) throws(ClientError) {
        do throws(SQLiteError) {
            upsert.reset()
            defer { upsert.reset() }
            try upsert.bind(1, sdkKey)
            let bound: SQLiteError? = body.withUnsafeBytes { bytes in
                do throws(SQLiteError) { try upsert.bind(2, bytes: bytes); return nil } catch { return error }
            }
            if let bound { throw bound }
            if let etag { try upsert.bind(3, etag) } else { try upsert.bindNull(3) }
            if let lastModified { try upsert.bind(4, lastModified) } else { try upsert.bindNull(4) }
            try upsert.bind(5, revision)
            try upsert.bind(6, Self.wallSeconds())
            try upsert.step()
        } catch {
            throw ClientError(.storeFailed, "datafile cache: \(error.message)")
        }
    }

    /// Records that the server confirmed the cached body is still current (a 304).
    func confirm(sdkKey: String) throws(ClientError) {
        do throws(SQLiteError) {
            touch.reset()
            defer { touch.reset() }
            try touch.bind(1, sdkKey)
            try touch.bind(2, Self.wallSeconds())
            try touch.step()
        } catch {
            throw ClientError(.storeFailed, "datafile cache: \(error.message)")
        }
    }

    static func wallSeconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec)
    }
}

#if canImport(Glibc)
import Glibc
#endif
