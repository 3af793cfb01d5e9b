#if canImport(Glibc)
import Glibc
#endif

/// A pthread mutex in a stable heap location. Used instead of Synchronization.Mutex, whose PI futex
/// collapses under contention on Linux (see TOOLCHAIN.md). Keep critical sections short.
public final class Lock: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let forkGuarded: Bool

    /// `forkGuarded`: held across fork() by the atfork handlers (see `ForkGuardedLocks`), for a lock a
    /// forked child keeps using while other threads of the parent may hold it.
    public init(forkGuarded: Bool = false) {
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        self.forkGuarded = forkGuarded
        if forkGuarded { ForkGuardedLocks.shared.add(mutex) }
    }

    deinit {
        if forkGuarded { ForkGuardedLocks.shared.remove(mutex) }
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    @inline(__always)
    public func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Takes the lock if it is free; pair a true answer with `unlock()`.
    public func tryLock() -> Bool { pthread_mutex_trylock(mutex) == 0 }

    public func unlock() { pthread_mutex_unlock(mutex) }
}

/// A value guarded by a `Lock`.
public final class Locked<Value>: @unchecked Sendable {
    private let lock = Lock()
    private var value: Value

    public init(_ value: Value) { self.value = value }

    @inline(__always) @discardableResult
    public func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        try lock.withLock { try body(&value) }
    }
}
