#if canImport(Glibc)
import Glibc
#endif

/// A mutex and condition variable pair (monotonic clock) for threads that wait for a state change:
/// readiness (exp_client_wait_ready), interruptible back-off sleeps that must end when the client closes, and
/// the sleeps of every BackgroundWorker.
final class ConditionGate: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    init() {
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Reads state under the mutex (no waiter is woken).
    func read<T>(_ body: () -> T) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return body()
    }

    /// Runs `change` under the mutex and wakes every waiter so it re-checks its predicate.
    func update(_ change: () -> Void = {}) {
        pthread_mutex_lock(mutex)
        change()
        pthread_cond_broadcast(condition)
        pthread_mutex_unlock(mutex)
    }

    /// Waits until `done()` (checked under the mutex) is true or `timeoutMs` passes; returns `done()`.
    func wait(timeoutMs: Int64, until done: () -> Bool) -> Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        let deadline = deadlineMillis(after: timeoutMs)
        while !done() {
            // One slice of at most an hour: the loop re-checks, and the timespec below cannot overflow.
            let remaining = min(deadline - monotonicMillis(), 3_600_000)
            if remaining <= 0 { return false }
            var until = timespec()
            clock_gettime(CLOCK_MONOTONIC, &until)
            let nanos = Int64(until.tv_nsec) + (remaining % 1000) * 1_000_000
            until.tv_sec += Int(remaining / 1000) + Int(nanos / 1_000_000_000)
            until.tv_nsec = Int(nanos % 1_000_000_000)
            pthread_cond_timedwait(condition, mutex, &until)
        }
        return true
    }
}
