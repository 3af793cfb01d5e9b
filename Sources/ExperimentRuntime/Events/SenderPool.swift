import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Runs the dispatcher's POSTs on a few threads, so one stalled request does not hold up the others
/// (`event_max_inflight`). `submit` blocks while that many are in flight; `waitIdle` waits for all of them.
/// With one slot the task runs on the caller's thread (no extra thread).
final class SenderPool: @unchecked Sendable {
    private let gate = ConditionGate()
    private let slots: Int
    // Guarded by the gate's mutex.
    private var tasks: [() -> Void] = []
    private var running = 0
    private var stopping = false
    private var workers: [BackgroundWorker] = []

    init(slots: Int) {
        self.slots = max(1, slots)
        guard self.slots > 1 else { return }
        workers = (0..<self.slots).map { _ in BackgroundWorker(name: "exp-events-post") { _ in self.work() } }
    }

    /// Runs `task` on a free slot, waiting for one.
    func submit(_ task: @escaping () -> Void) {
        guard slots > 1 else { return task() }
        while !gate.wait(timeoutMs: 60_000, until: { tasks.count + running < slots || stopping }) {}
        gate.update { tasks.append(task) }
    }

    /// Waits until every submitted task finished.
    func waitIdle() {
        guard slots > 1 else { return }
        while !gate.wait(timeoutMs: 60_000, until: { tasks.isEmpty && running == 0 }) {}
    }

    /// Finishes the queued tasks, then ends the threads.
    func stop() {
        waitIdle()
        gate.update { stopping = true }
        workers.forEach { $0.stop() }
        workers = []
    }

    /// What a pool thread is doing, seen by its exit hook.
    private final class ThreadState {
        unowned let pool: SenderPool
        var inTask = false
        init(pool: SenderPool) { self.pool = pool }
    }

    /// Runs when a pool thread ends. A thread can end inside a task: a host log callback run on it may
    /// never return (Python ends threads that want the GIL while the interpreter shuts down). Its task then
    /// counts as finished, so `waitIdle` (and closing the client) does not wait for it forever.
    private static let exitHook: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { pointer in
            guard let pointer else { return }
            let state = Unmanaged<ThreadState>.fromOpaque(pointer).takeRetainedValue()
            if state.inTask { state.pool.gate.update { state.pool.running -= 1 } }
        }
        return key
    }()

    private func work() {
        let state = ThreadState(pool: self)
        pthread_setspecific(Self.exitHook, Unmanaged.passRetained(state).toOpaque())
        while true {
            var task: (() -> Void)? = nil
            var stop = false
            _ = gate.wait(timeoutMs: 60_000) {
                if !tasks.isEmpty {
                    task = tasks.removeFirst()
                    running += 1
                    return true
                }
                stop = stopping
                return stop
            }
            if stop { return }
            guard let task else { continue }
            state.inTask = true
            task()
            state.inTask = false
            gate.update { running -= 1 }
        }
    }
}

/// Logs a message that repeats (the same problem on every call or every round) once per interval, with how
/// many times it happened since the last line: a failing disk or endpoint writes a few lines, not one per
/// event.
final class ThrottledLog: @unchecked Sendable {
    private let logger: Logger
    private let intervalMs: Int64
    private struct Entry { var loggedAt: Int64; var suppressed: Int }
    private let entries = Locked<[String: Entry]>([:])

    init(logger: Logger, intervalMs: Int64 = 10_000) {
        self.logger = logger
        self.intervalMs = intervalMs
    }

    /// Logs `message` unless a message of this `kind` was logged less than an interval ago (then only counts it).
    func log(_ level: LogLevel, kind: String, _ message: @autoclosure () -> String) {
        let now = monotonicMillis()
        let repeats: Int? = entries.withLock { table in
            if let entry = table[kind], now - entry.loggedAt < intervalMs {
                table[kind]?.suppressed += 1
                return nil
            }
            let suppressed = table[kind]?.suppressed ?? 0
            table[kind] = Entry(loggedAt: now, suppressed: 0)
            return suppressed
        }
        guard let repeats else { return }
        let seconds = intervalMs / 1000
        logger.log(level, repeats > 0 ? message() + " (\(repeats) more like this in the last \(seconds) s)" : message())
    }

    /// Logs the counts of messages held back since their last line (at close).
    func flush(_ level: LogLevel) {
        let held: [(String, Int)] = entries.withLock { table in
            defer { table = [:] }
            return table.filter { $0.value.suppressed > 0 }.map { ($0.key, $0.value.suppressed) }
        }
        for (kind, count) in held.sorted(by: { $0.0 < $1.0 }) {
            logger.log(level, "event pipeline: \(count) more \"\(kind)\" messages were held back (logged once per \(intervalMs / 1000) s)")
        }
    }
}
