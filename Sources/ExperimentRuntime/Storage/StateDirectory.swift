import CSQLite
#if canImport(Glibc)
import Glibc
#endif

/// The directory holding a client's local state: one SQLite file (`state.sqlite`) with sticky bucketing
/// profiles, persisted overrides, the event queue and cached datafiles.
///
/// When the `state_dir` option is unset, the per-user default is `$XDG_STATE_HOME/libexperiment`, else
/// `$HOME/.local/state/libexperiment`, else `/tmp/libexperiment-<uid>`. Whichever it is, it must be a real
/// directory owned by this process's effective uid and not writable by group or others.
public struct StateDirectory: Sendable {
    public let path: String
    /// Where a state file set aside as corrupt is reported (nil: stderr).
    let logger: Logger?

    public static let databaseFileName = "state.sqlite"

    public var databasePath: String { path + "/" + Self.databaseFileName }

    /// Resolves the directory and creates it (and its parents) when missing.
    public init(option: String?, logger: Logger? = nil) throws(ClientError) {
        path = option ?? Self.defaultPath()
        self.logger = logger
        try Self.createDirectories(path)
    }

    /// Opens a new connection to the state file (each subsystem keeps its own). A file that is not a
    /// database (or is corrupt) is set aside under a new name and a fresh one started: keeping it would turn
    /// sticky bucketing, overrides and the event queue off for every later client.
    public func openDatabase() throws(ClientError) -> SQLiteDatabase {
        do {
            return try SQLiteDatabase(path: databasePath)
        } catch let error where Self.isCorrupt(error) {
            try setAsideCorruptDatabase(error)
            do {
                return try SQLiteDatabase(path: databasePath)
            } catch {
                throw ClientError(.storeFailed, "state store: \(error.message)")
            }
        } catch {
            throw ClientError(.storeFailed, "state store: \(error.message)")
        }
    }

    static func isCorrupt(_ error: SQLiteError) -> Bool {
        let primary = error.code & 0xff
        return primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT
    }

    /// Renames the state file (and its -wal) to `state.sqlite.corrupt-<pid>-<ms>`; the -shm index is rebuilt.
    private func setAsideCorruptDatabase(_ error: SQLiteError) throws(ClientError) {
        let original = databasePath
        let aside = "\(original).corrupt-\(getpid())-\(EventIdentity.timestampMillis())"
        guard rename(original, aside) == 0 else {
            throw ClientError(.storeFailed, "state store: \(error.message); cannot set it aside as \(aside): "
                              + String(cString: strerror(errno)))
        }
        _ = rename(original + "-wal", aside + "-wal")
        _ = unlink(original + "-shm")
        (logger ?? Logger(level: .warning)).log(.warning, "state store: \(original) is unusable (\(error.message)); "
            + "set aside as \(aside), starting a fresh state file")
    }

    static func defaultPath() -> String {
        if let state = environment("XDG_STATE_HOME"), state.hasPrefix("/") { return state + "/libexperiment" }
        if let home = environment("HOME"), home.hasPrefix("/") { return home + "/.local/state/libexperiment" }
        return "/tmp/libexperiment-\(getuid())"
    }

    private static func environment(_ name: String) -> String? {
        guard let value = getenv(name), value.pointee != 0 else { return nil }
        return String(cString: value)
    }

    private static func createDirectories(_ path: String) throws(ClientError) {
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, 0o700) != 0 && errno != EEXIST {
                throw ClientError(.storeFailed, "state_dir \(path): cannot create \(prefix): \(String(cString: strerror(errno)))")
            }
        }
        try requireOwnedPrivately(path)
    }

    /// A directory another local user controls would let them feed this process a datafile and overrides
    /// and read its queued events: use it only when it is a real directory (not a symlink) owned by the
    /// effective user and not writable by group or others.
    static func requireOwnedPrivately(_ path: String) throws(ClientError) {
        var status = stat()
        guard lstat(path, &status) == 0 else {
            throw ClientError(.storeFailed, "state_dir \(path): \(String(cString: strerror(errno)))")
        }
        let refused = "state_dir \(path) refused for safety:"
        switch status.st_mode & S_IFMT {
        case S_IFDIR: break
        case S_IFLNK: throw ClientError(.storeFailed, "\(refused) it is a symbolic link, not a directory")
        default: throw ClientError(.storeFailed, "state_dir \(path) is not a directory")
        }
        guard status.st_uid == geteuid() else {
            throw ClientError(.storeFailed, "\(refused) it is owned by uid \(status.st_uid), not by this process's uid \(geteuid())")
        }
        guard status.st_mode & 0o022 == 0 else {
            let mode = String(status.st_mode & 0o777, radix: 8)
            throw ClientError(.storeFailed, "\(refused) it is writable by group or others (mode \(mode))")
        }
    }
}
