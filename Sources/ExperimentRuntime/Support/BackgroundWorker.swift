#if canImport(Glibc)
import Glibc
#endif

/// Milliseconds on the monotonic clock: for intervals and deadlines (wall-clock jumps cannot move them).
public func monotonicMillis() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
}

/// The monotonic deadline `timeoutMs` from now, saturating at Int64.max ("never") so that a caller's
/// "wait forever" (INT64_MAX, or any huge value) cannot overflow; a negative timeout is a deadline of now.
public func deadlineMillis(after timeoutMs: Int64) -> Int64 {
    let now = monotonicMillis()
    let (sum, overflow) = now.addingReportingOverflow(max(0, timeoutMs))
    return overflow ? Int64.max : sum
}

/// One background thread that sleeps between rounds of work, can be woken early, and stops promptly.
///
/// The runtime's timers (datafile polling, event flushing, segment expiry) run on these rather than on
/// Dispatch: a pthread we start and join ourselves stops within one wake-up when the client closes, and
/// leaves nothing running after `exp_client_free`.
public final class BackgroundWorker: @unchecked Sendable {
    public let name: String
    private let gate = ConditionGate()
    // Guarded by the gate's mutex.
    private var thread: pthread_t? = nil
    private var stopping = false
    private var wakeRequested = false
    /// The thread lives only in the process that started it: after a fork the child has none to wake or join.
    private let generation = ForkGeneration.current
    private var startedInThisProcess: Bool { generation == ForkGeneration.current }

    /// Starts a thread running `body(worker)`; `body` loops on `sleep(milliseconds:)` and returns when it
    /// answers false.
    public init(name: String, _ body: @escaping @Sendable (BackgroundWorker) -> Void) {
        self.name = name
        let start = Unmanaged.passRetained(ThreadStart(worker: self, body: body)).toOpaque()
        var created = pthread_t()
        let status = pthread_create(&created, nil, { context in
            let start = Unmanaged<ThreadStart>.fromOpaque(context!).takeRetainedValue()
            start.body(start.worker)
            return nil
        }, start)
        if status == 0 {
            gate.update { thread = created }
        } else {
            Unmanaged<ThreadStart>.fromOpaque(start).release()
        }
    }

    /// Sleeps up to `milliseconds` or until `wake()`; false once `stop()` was called (the body should return).
    public func sleep(milliseconds: Int64) -> Bool {
        var stopped = false
        _ = gate.wait(timeoutMs: milliseconds) {
            stopped = stopping
            guard stopping || wakeRequested else { return false }
            wakeRequested = false  // consumed under the mutex: a wake is never lost between two sleeps
            return true
        }
        return !stopped
    }

    /// True once `stop()` was called.
    public var isStopping: Bool { startedInThisProcess ? gate.read { stopping } : true }

    /// Ends the current or next sleep early.
    public func wake() {
        guard startedInThisProcess else { return }
        gate.update { wakeRequested = true }
    }

    /// Asks the body to return and waits for the thread to end. Idempotent; must not be called from the
    /// worker's own thread.
    public func stop() {
        // A forked child's copy: the gate's mutex may be held by a thread that no longer exists.
        guard startedInThisProcess else { return }
        var running: pthread_t? = nil
        gate.update {
            stopping = true
            running = thread
            thread = nil
        }
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
