import ExperimentCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One thread's hold on one installed config of one client.
///
/// Decisions must not write to memory shared between threads: a lock, or even the reference count of the
/// shared config, bounces one cache line between cores on every call and keeps two threads from running
/// twice as fast as one. So each thread keeps a lease per client: it holds the config strongly, and a
/// decision retains only the lease (thread-local memory) for the strings its result points into.
/// A lease stays valid while its generation equals the client's current one; a swap installs a config
/// with a new, process-unique generation, and each thread renews its lease on its next call.
public final class ConfigLease: @unchecked Sendable {
    public let config: ProjectConfig
    let generation: UInt64

    init(config: ProjectConfig, generation: UInt64) {
        self.config = config
        self.generation = generation
    }
}

/// The current config of a client and its generation; swapped under a lock, read lock-free through
/// per-thread leases.
final class ConfigSlot: @unchecked Sendable {
    /// Process-unique, so a lease can never match a different client that reuses a freed client's address.
    private static let generations = Atomic<UInt64>(1)

    private let lock = Lock()
    private var config: ProjectConfig? = nil
    /// The generation of `config`; 0 while there is none.
    private let currentGeneration = Atomic<UInt64>(0)

    var current: ProjectConfig? { lock.withLock { config } }

    /// Installs `new` unless `admit` (called under the lock with the current config) refuses it. Returns
    /// whether it was installed and the config it replaced, or that stays (the caller releases a replaced
    /// one outside the lock).
    func install(_ new: ProjectConfig, admit: (ProjectConfig?) -> Bool = { _ in true })
        -> (installed: Bool, previous: ProjectConfig?)
    {
        let generation = Self.generations.add(1, ordering: .relaxed).newValue
        return lock.withLock {
            guard admit(config) else { return (false, config) }
            defer {
                config = new
                currentGeneration.store(generation, ordering: .releasing)
            }
            return (true, config)
        }
    }

    /// The calling thread's lease on the current config, or nil before the first install.
    @inline(__always)
    func lease() -> ConfigLease? {
        let generation = currentGeneration.load(ordering: .acquiring)
        guard generation != 0 else { return nil }
        let leases = ThreadLeases.current()
        if let held = leases.find(slot: self, generation: generation) { return held }
        return renew(leases)
    }

    private func renew(_ leases: ThreadLeases) -> ConfigLease? {
        let fresh: ConfigLease? = lock.withLock {
            config.map { ConfigLease(config: $0, generation: currentGeneration.load(ordering: .relaxed)) }
        }
        if let fresh { leases.store(fresh, slot: self) }
        return fresh
    }
}

/// The leases one thread holds, for the few clients it uses (a handful of entries, replaced round-robin).
/// Freed with the thread.
final class ThreadLeases {
    private static let capacity = 4
    private var slots: [ObjectIdentifier?] = Array(repeating: nil, count: capacity)
    private var leases: [ConfigLease?] = Array(repeating: nil, count: capacity)
    private var nextVictim = 0

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { pointer in
            if let pointer { Unmanaged<ThreadLeases>.fromOpaque(pointer).release() }
        }
        return key
    }()

    @inline(__always)
    static func current() -> ThreadLeases {
        if let existing = pthread_getspecific(key) {
            return Unmanaged<ThreadLeases>.fromOpaque(existing).takeUnretainedValue()
        }
        let created = ThreadLeases()
        pthread_setspecific(key, Unmanaged.passRetained(created).toOpaque())
        return created
    }

    @inline(__always)
    func find(slot: ConfigSlot, generation: UInt64) -> ConfigLease? {
        let id = ObjectIdentifier(slot)
        for index in 0..<Self.capacity where slots[index] == id {
            if let lease = leases[index], lease.generation == generation { return lease }
            return nil
        }
        return nil
    }

    func store(_ lease: ConfigLease, slot: ConfigSlot) {
        let id = ObjectIdentifier(slot)
        let index = slots.firstIndex(of: id) ?? {
            defer { nextVictim = (nextVictim + 1) % Self.capacity }
            return nextVictim
        }()
        slots[index] = id
        leases[index] = lease
    }
}
