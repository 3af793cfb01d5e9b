import ExperimentCore
import Synchronization

/// Where the datafile in use came from (the config-update payload's "source").
public enum DatafileSource: String, Sendable {
    /// exp_client_start: a datafile the host passed in.
    case start
    /// Downloaded from the datafile URL.
    case fetch
    /// The last good datafile for the SDK key, from the state file.
    case cache
    /// The fallback the host passed to exp_client_start_async.
    case bundled
}

/// Counters and the last problem of a client's datafile lifecycle (exp_client_datafile_status_json).
public struct DatafileStats: Sendable {
    public var source: DatafileSource? = nil
    public var revision: String? = nil
    public var fetches = 0
    public var fetchFailures = 0
    public var notModified = 0
    public var rejected = 0
    public var updates = 0
    public var cacheWrites = 0
    public var lastErrorCode: ErrorCode? = nil
    public var lastError: String? = nil
    /// Monotonic milliseconds of the last fetch attempt that got an answer (200 or 304).
    public var lastSuccessAt: Int64? = nil
}

/// The per-client datafile lifecycle state that exists whether or not a manager runs: readiness waiting,
/// stats, and the manager started by exp_client_start_async.
final class DatafileState: @unchecked Sendable {
    let gate = ConditionGate()
    let stats = Locked(DatafileStats())
    /// Cache-TTL mode: set by the manager when the datafile is older than the TTL; the next use kicks a refresh.
    let stale = Atomic<Bool>(false)
    private let managerBox = Locked<ConfigManager?>(nil)
    /// Written under `gate`: the async start finished without a datafile (its status), or the client closed.
    var startFailure: ErrorCode? = nil
    var closing = false
    /// Written under `gate`: the config-update listeners of the first datafile have run. Readiness waits for
    /// it, as the reference sets its ready event only after notifying them: a caller whose wait for the
    /// client returns has seen its listeners called.
    var firstDatafileAnnounced = false

    /// Whether a waiter for readiness may go on: a datafile is in use and its listeners have run.
    func isAnnouncedReady(_ client: Client) -> Bool {
        gate.read { firstDatafileAnnounced } && client.isReady
    }
    /// `closing`, readable without the gate (polled by curl during a fetch).
    private let closingFlag = Atomic<Bool>(false)
    var isClosing: Bool { closingFlag.load(ordering: .relaxed) }

    var manager: ConfigManager? { managerBox.withLock { $0 } }

    /// Installs `manager` unless one runs already; false when one does.
    func adopt(_ manager: ConfigManager) -> Bool {
        managerBox.withLock { current in
            if current != nil { return false }
            current = manager
            return true
        }
    }

    @inline(__always)
    func noteUse() {
        if stale.load(ordering: .relaxed) { kickStaleRefresh() }
    }

    @inline(never)
    private func kickStaleRefresh() {
        guard stale.compareExchange(expected: true, desired: false, ordering: .relaxed).exchanged else { return }
        manager?.requestRefresh()
    }

    func close() {
        closingFlag.store(true, ordering: .relaxed)
        gate.update { closing = true }
        let running = managerBox.withLock { manager -> ConfigManager? in
            defer { manager = nil }
            return manager
        }
        running?.stop()
    }
}

/// Clients by tag (Sigma's named clients): one open client per tag in the process.
public enum ClientRegistry {
    private static let clients = Locked<[String: Client]>([:])

    /// Claims `tag` for `client`; EXP_ERR_TAG_IN_USE when another open client holds it.
    public static func claim(_ tag: String, for client: Client) throws(ClientError) {
        let taken = clients.withLock { table -> Bool in
            if table[tag] != nil { return true }
            table[tag] = client
            return false
        }
        if taken { throw ClientError(.tagInUse, "tag \"\(tag)\" is already used by an open client (close it first)") }
    }

    public static func find(_ tag: String) -> Client? { clients.withLock { $0[tag] } }

    /// Frees `tag` if `client` holds it (a client that failed to claim its tag frees nothing).
    static func release(_ tag: String, for client: Client) {
        let removed = clients.withLock { table -> Client? in
            guard table[tag] === client else { return nil }
            return table.removeValue(forKey: tag)
        }
        withExtendedLifetime(removed) {}
    }
}
