#if canImport(Glibc)
import Glibc
#endif

/// Milliseconds on the monotonic clock: for intervals and deadlines (wall-clock jumps cannot move them).
public func monotonicMillis() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
}

/// One background thread that sleeps between rounds of work, can be woken early, and stops promptly.
///
/// The runtime's timers (datafile polling, event flushing, segment expiry) run on these rather than on
/// Dispatch: a pthread we start and join ourselves stops within one wake-up when the client closes, and
/// leaves nothing running after `exp_client_free`.
public final class BackgroundWorker: @unchecked Sendable {
    public let name: String
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var thread: pthread_t? = nil
    private var stopping = false
    private var wakeRequested = false

    /// Starts a thread running `body(worker)`; `body` loops on `sleep(milliseconds:)` and returns when it
    /// answers false.
    public init(name: String, _ body: @escaping @Sendable (BackgroundWorker) -> Void) {
        self.name = name
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)

        let start = Unmanaged.passRetained(ThreadStart(worker: self, body: body)).toOpaque()
        var created = pthread_t()
        let status = pthread_create(&created, nil, { context in
            let start = Unmanaged<ThreadStart>.fromOpaque(context!).takeRetainedValue()
            start.body(start.worker)
            return nil
        }, start)
        if status == 0 {
            thread = created
        } else {
            Unmanaged<ThreadStart>.fromOpaque(start).release()
        }
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Sleeps up to `milliseconds` or until `wake()`; false once `stop()` was called (the body should return).
    public func sleep(milliseconds: Int64) -> Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        let deadline = monotonicMillis() + max(0, milliseconds)
        while !stopping && !wakeRequested {
            let remaining = deadline - monotonicMillis()
            if remaining <= 0 { break }
            var until = timespec()
            clock_gettime(CLOCK_MONOTONIC, &until)
            let nanos = Int64(until.tv_nsec) + (remaining % 1000) * 1_000_000
            until.tv_sec += Int(remaining / 1000) + Int(nanos / 1_000_000_000)
            until.tv_nsec = Int(nanos % 1_000_000_000)
            pthread_cond_timedwait(condition, mutex, &until)
        }
        wakeRequested = false
        return !stopping
    }

    /// True once `stop()` was called.
    public var isStopping: Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return stopping
    }

    /// Ends the current or next sleep early.
    public func wake() {
        pthread_mutex_lock(mutex)
        wakeRequested = true
        pthread_cond_broadcast(condition)
        pthread_mutex_unlock(mutex)
    }

    /// Asks the body to return and waits for the thread to end. Idempotent; must not be called from the
    /// worker's own thread.
    public func stop() {
        pthread_mutex_lock(mutex)
        stopping = true
        pthread_cond_broadcast(condition)
        let running = thread
        thread = nil
        pthread_mutex_unlock(mutex)
        if let running { pthread_join(running, nil) }
    }
}

private final class ThreadStart {
    let worker: BackgroundWorker
    let body: @Sendable (BackgroundWorker) -> Void
    init(worker: BackgroundWorker, body: @escaping @Sendable (BackgroundWorker) -> Void) {
        self.worker = worker
        self.body = body
    }
}
