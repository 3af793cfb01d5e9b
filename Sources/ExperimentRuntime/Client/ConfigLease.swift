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
    /// The text `config` was compiled from, when the client keeps it ("keep_datafile"); swapped with it.
    private var datafile: [UInt8]? = nil
    /// The generation of `config`; 0 while there is none.
    private let currentGeneration = Atomic<UInt64>(0)

    var current: ProjectConfig? { lock.withLock { config } }

    /// The current config with the text it was compiled from (nil text: the client does not keep it).
    var currentWithDatafile: (config: ProjectConfig?, datafile: [UInt8]?) { lock.withLock { (config, datafile) } }

    /// Installs `new` (compiled from `text`, kept when given) unless `admit` (called under the lock with the
    /// current config) refuses it. Returns whether it was installed and the config it replaced, or that
    /// stays (the caller releases a replaced one outside the lock).
    func install(_ new: ProjectConfig, text: [UInt8]? = nil, admit: (ProjectConfig?) -> Bool = { _ in true })
        -> (installed: Bool, previous: ProjectConfig?)
    {
        let generation = Self.generations.add(1, ordering: .relaxed).newValue
        var replacedText: [UInt8]? = nil
        defer { withExtendedLifetime(replacedText) {} }  // a large text is freed outside the lock
        return lock.withLock {
            guard admit(config) else { return (false, config) }
            defer {
                config = new
                replacedText = datafile
                datafile = text
                currentGeneration.store(generation, ordering: .releasing)
            }
            return (true, config)
        }
    }

    /// The calling thread's lease on the current config, or nil before the first install.
    @inline(__always)
    func lease() -> ConfigLease? { unretainedLease()?.takeUnretainedValue() }

    /// The same, not retained: the thread's lease table keeps it alive until this thread's next call of a
    /// client whose config changed, so the caller uses it only within the current call.
    @inline(__always)
    func unretainedLease() -> Unmanaged<ConfigLease>? {
        let generation = currentGeneration.load(ordering: .acquiring)
        guard generation != 0 else { return nil }
        let leases = ThreadLeases.current()
        if let held = leases.find(slot: self, generation: generation) { return held }
        return renew(leases)
    }

    private func renew(_ leases: ThreadLeases) -> Unmanaged<ConfigLease>? {
        let fresh: ConfigLease? = lock.withLock {
            config.map { ConfigLease(config: $0, generation: currentGeneration.load(ordering: .relaxed)) }
        }
        guard let fresh else { return nil }
        return leases.store(fresh, slot: self)
    }
}

/// The leases one thread holds, for the few clients it uses (a handful of entries, replaced round-robin).
/// A view of raw per-thread memory, freed with the thread: finding a lease checks no exclusivity and
/// touches no reference count.
struct ThreadLeases {
    private struct Entry {
        /// The client's config slot (its address), nil when unused.
        var slot: UnsafeRawPointer?
        /// Retained by the table.
        var lease: Unmanaged<ConfigLease>?
        var generation: UInt64
    }

    private static let capacity = 4
    /// `capacity` entries, then one whose `generation` is the index of the next entry to replace.
    private let entries: UnsafeMutablePointer<Entry>

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { pointer in
            guard let pointer else { return }
            let entries = pointer.assumingMemoryBound(to: Entry.self)
            for index in 0..<ThreadLeases.capacity { entries[index].lease?.release() }
            entries.deinitialize(count: ThreadLeases.capacity + 1)
            entries.deallocate()
        }
        return key
    }()

    @inline(__always)
    static func current() -> ThreadLeases {
        if let existing = pthread_getspecific(key) {
            return ThreadLeases(entries: existing.assumingMemoryBound(to: Entry.self))
        }
        let entries = UnsafeMutablePointer<Entry>.allocate(capacity: capacity + 1)
        entries.initialize(repeating: Entry(slot: nil, lease: nil, generation: 0), count: capacity + 1)
        pthread_setspecific(key, entries)
        return ThreadLeases(entries: entries)
    }

    @inline(__always)
    func find(slot: ConfigSlot, generation: UInt64) -> Unmanaged<ConfigLease>? {
        let id = UnsafeRawPointer(Unmanaged.passUnretained(slot).toOpaque())
        for index in 0..<Self.capacity where entries[index].slot == id {
            return entries[index].generation == generation ? entries[index].lease : nil
        }
        return nil
    }

    /// Keeps `lease` as the entry of `slot` (replacing that slot's old lease, or the next victim).
    func store(_ lease: ConfigLease, slot: ConfigSlot) -> Unmanaged<ConfigLease> {
        let id = UnsafeRawPointer(Unmanaged.passUnretained(slot).toOpaque())
        var index = (0..<Self.capacity).first { entries[$0].slot == id } ?? -1
        if index < 0 {
            index = Int(entries[Self.capacity].generation)
            entries[Self.capacity].generation = UInt64((index + 1) % Self.capacity)
        }
        let old = entries[index].lease
        let retained = Unmanaged.passRetained(lease)
        entries[index] = Entry(slot: id, lease: retained, generation: lease.generation)
        old?.release()
        return retained
    }
}
