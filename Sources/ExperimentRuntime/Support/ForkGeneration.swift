import CSQLite
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// How many forks separate this process from the one that loaded the library.
///
/// A fork copies memory but only the forking thread: in a child, every background thread the runtime
/// started, every lock another thread held, every SQLite connection and journal mapping belong to the
/// parent. An atfork child handler bumps this counter, so an object that owns threads or files records the
/// generation it was made in and, seeing another one, stops using what it inherited and opens its own.
/// Reading it is one atomic load: no getpid() on any hot path.
public enum ForkGeneration {
    private static let counter = Atomic<Int>(0)

    private static let handlerRegistered: Bool = {
        _ = counter.load(ordering: .relaxed)  // initialised before any fork, never inside the handler
        _ = EventIdentity.uuid()
        _ = ForkGuardedLocks.shared
        SQLiteForkGuard.prepare()
        // The library's locks first: a thread holding one of them may be inside SQLite waiting for its
        // mutexes, while no thread inside SQLite waits for the library's locks.
        pthread_atfork({ ForkGuardedLocks.shared.lockAll(); SQLiteForkGuard.enter() },
                       { SQLiteForkGuard.leave(); ForkGuardedLocks.shared.unlockAll() },
                       { SQLiteForkGuard.leave(); ForkGuardedLocks.shared.unlockAll(); ForkGeneration.childStarted() })
        return true
    }()

    /// Registers the atfork handler (once per process; every client calls it when created).
    public static func register() { _ = handlerRegistered }

    private static func childStarted() {
        EventIdentity.reseedAfterFork()
        counter.add(1, ordering: .releasing)
    }

    @inline(__always)
    public static var current: Int { counter.load(ordering: .acquiring) }
}

/// Mutexes taken by the atfork prepare handler and released after the fork in parent and child, so the
/// child never inherits one locked by a thread it does not have. For the locks a forked child goes on
/// using (the event sink's, the logger's); taken in reverse order of creation, so a lock made later (a
/// client's event sink) is taken before one made earlier that it nests (the client's logger).
final class ForkGuardedLocks: @unchecked Sendable {
    static let shared = ForkGuardedLocks()
    private let registry: UnsafeMutablePointer<pthread_mutex_t>
    private var mutexes: [UnsafeMutablePointer<pthread_mutex_t>] = []

    private init() {
        registry = .allocate(capacity: 1)
        pthread_mutex_init(registry, nil)
    }

    func add(_ mutex: UnsafeMutablePointer<pthread_mutex_t>) {
        pthread_mutex_lock(registry)
        mutexes.append(mutex)
        pthread_mutex_unlock(registry)
    }

    func remove(_ mutex: UnsafeMutablePointer<pthread_mutex_t>) {
        pthread_mutex_lock(registry)
        if let index = mutexes.lastIndex(of: mutex) { mutexes.remove(at: index) }
        pthread_mutex_unlock(registry)
    }

    /// Prepare: the registry stays locked until `unlockAll`, so no lock comes or goes across the fork.
    func lockAll() {
        pthread_mutex_lock(registry)
        for mutex in mutexes.reversed() { pthread_mutex_lock(mutex) }
    }

    func unlockAll() {
        for mutex in mutexes { pthread_mutex_unlock(mutex) }
        pthread_mutex_unlock(registry)
    }
}

/// SQLite's process-wide mutexes that a forked child takes when it opens its own connection: the unix VFS's
/// inode list (every open) and the allocator's (every allocation while memory statistics are on). A parent
/// thread inside either at the moment of fork would leave it locked forever in the child, so the prepare
/// handler holds both across the fork, the allocator's last (SQLite takes it inside the other).
enum SQLiteForkGuard {
    nonisolated(unsafe) private static var mutexes: [OpaquePointer] = []

    /// Called once, before the handler is registered (sqlite3_mutex_alloc needs an initialised SQLite).
    static func prepare() {
        guard sqlite3_initialize() == SQLITE_OK else { return }
        mutexes = [SQLITE_MUTEX_STATIC_VFS1, SQLITE_MUTEX_STATIC_MEM].compactMap { sqlite3_mutex_alloc($0) }
    }

    static func enter() {
        for mutex in mutexes { sqlite3_mutex_enter(mutex) }
    }

    static func leave() {
        for mutex in mutexes.reversed() { sqlite3_mutex_leave(mutex) }
    }
}
