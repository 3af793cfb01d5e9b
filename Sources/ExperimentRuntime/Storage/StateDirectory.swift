#if canImport(Glibc)
import Glibc
#endif

/// The directory holding a client's local state: one SQLite file (`state.sqlite`) with sticky bucketing
/// profiles, persisted overrides, the event queue and cached datafiles.
///
/// When the `state_dir` option is unset, the per-user default is `$XDG_STATE_HOME/libexperiment`, else
/// `$HOME/.local/state/libexperiment`, else `/tmp/libexperiment-<uid>`.
public struct StateDirectory: Sendable {
    public let path: String

    public static let databaseFileName = "state.sqlite"

    public var databasePath: String { path + "/" + Self.databaseFileName }

    /// Resolves the directory and creates it (and its parents) when missing.
    public init(option: String?) throws(ClientError) {
        path = option ?? Self.defaultPath()
        try Self.createDirectories(path)
    }

    /// Opens a new connection to the state file (each subsystem keeps its own).
    public func openDatabase() throws(ClientError) -> SQLiteDatabase {
        do {
            return try SQLiteDatabase(path: databasePath)
        } catch {
            throw ClientError(.storeFailed, "state store: \(error.message)")
        }
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
        var status = stat()
        guard stat(path, &status) == 0, (status.st_mode & S_IFMT) == S_IFDIR else {
            throw ClientError(.storeFailed, "state_dir \(path) is not a directory")
        }
    }
}
