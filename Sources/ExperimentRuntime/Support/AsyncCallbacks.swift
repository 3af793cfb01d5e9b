#if canImport(Glibc)
import Glibc
#endif

/// Runs host callbacks of one client (run-when-ready, delivery completions, asynchronous flushes) on
/// short-lived detached threads of their own, outside every lock of the library, and lets the client's
/// close wait until each of them returned: once exp_client_close returns, no callback of the client runs
/// or is still to come, so the host may free what its user_data points at.
///
/// A callback may call into the client, including exp_client_close: the close then waits for every other
/// callback thread but not for the one it runs on.
public final class AsyncCallbacks: @unchecked Sendable {
    private let gate = ConditionGate()
    // Guarded by the gate's mutex: threads started and not yet finished, and the ids of those running.
    private var pending = 0
    private var running: [pthread_t] = []
    /// The fork generation `pending` and `running` count threads of: a forked child has none of them.
    private var generation = ForkGeneration.current

    public init() {}

    /// Starts `body` on a new detached thread. False when no thread could be started, or when `unless`
    /// (checked once the thread counts as pending, so a close that set the flag `unless` reads either waits
    /// for the thread or was seen here) is true: `body` then never runs.
    @discardableResult
    public func spawn(unless cancelled: () -> Bool = { false }, _ body: @escaping @Sendable () -> Void) -> Bool {
        gate.update { forgetThreadsOfParent(); pending += 1 }
        if cancelled() {
            gate.update { pending -= 1 }
            return false
        }
        let start = Unmanaged.passRetained(CallbackStart(owner: self, body: body)).toOpaque()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        defer { pthread_attr_destroy(&attributes) }
        var thread = pthread_t()
        let status = pthread_create(&thread, &attributes, { context in
            let start = Unmanaged<CallbackStart>.fromOpaque(context!).takeRetainedValue()
            start.owner.run(start.body)
            return nil
        }, start)
        guard status == 0 else {
            Unmanaged<CallbackStart>.fromOpaque(start).release()
            gate.update { pending -= 1 }
            return false
        }
        return true
    }

    /// Under the gate's mutex.
    private func forgetThreadsOfParent() {
        let now = ForkGeneration.current
        guard generation != now else { return }
        generation = now
        pending = 0
        running = []
    }

    private func run(_ body: @Sendable () -> Void) {
        let me = pthread_self()
        gate.update { running.append(me) }
        body()
        gate.update {
            if let index = running.firstIndex(where: { pthread_equal($0, me) != 0 }) { running.remove(at: index) }
            pending -= 1
        }
    }

    /// Waits until every callback thread ended, except the calling thread when it is one of them.
    public func waitIdle() {
        let me = pthread_self()
        gate.update { forgetThreadsOfParent() }
        _ = gate.wait(timeoutMs: Int64.max / 4) {
            pending - (running.contains(where: { pthread_equal($0, me) != 0 }) ? 1 : 0) <= 0
        }
    }
}

private final class CallbackStart {
    let owner: AsyncCallbacks
    let body: @Sendable () -> Void
    init(owner: AsyncCallbacks, body: @escaping @Sendable () -> Void) {
        self.owner = owner
        self.body = body
    }
}
