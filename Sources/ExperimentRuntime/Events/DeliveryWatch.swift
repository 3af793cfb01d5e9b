import Synchronization

/// Completion callbacks waiting for the first outcome of one queued event each (Kameleoon's
/// trackConversion / flush completion handlers): the event was delivered (2xx), or it was not (the
/// endpoint failed it, so it waits on disk for a retry, or refused it for good). The pipeline reports
/// outcomes by event uuid; the callbacks run on the client's callback threads (`AsyncCallbacks`), never on
/// the dispatcher's threads, which hold the journal's lock while they send.
public final class DeliveryWatch: @unchecked Sendable {
    /// The outcome (nil: delivered) and how many events were delivered.
    public typealias Completion = @Sendable (ErrorCode?, Int) -> Void

    private let lock = Lock()
    private var waiting: [String: Completion] = [:]
    /// How many wait, read without the lock: events nobody waits for (nearly all) cost one atomic load.
    private let count = Atomic<Int>(0)
    let callbacks: AsyncCallbacks

    init(callbacks: AsyncCallbacks) { self.callbacks = callbacks }

    /// Waits for the event `uuid` (before it is queued, so its outcome cannot come first).
    func watch(_ uuid: String, _ completion: @escaping Completion) {
        lock.withLock {
            waiting[uuid] = completion
            count.store(waiting.count, ordering: .releasing)
        }
    }

    /// Stops waiting for `uuid` (it was not queued after all: the caller reports that error instead).
    func cancel(_ uuid: String) {
        lock.withLock {
            waiting[uuid] = nil
            count.store(waiting.count, ordering: .releasing)
        }
    }

    /// The events `uuids` were delivered, or were not (`delivered` false: kept for a retry or refused).
    func settle<S: Sequence>(_ uuids: S, delivered: Bool) where S.Element == String {
        guard count.load(ordering: .acquiring) > 0 else { return }
        let done: [Completion] = lock.withLock {
            let found = uuids.compactMap { waiting.removeValue(forKey: $0) }
            if !found.isEmpty { count.store(waiting.count, ordering: .releasing) }
            return found
        }
        complete(done, delivered ? nil : .deliveryFailed, sent: delivered ? 1 : 0)
    }

    /// Every event still waited for ends with `code` (the client closed with them still on disk).
    func settleAll(_ code: ErrorCode) {
        guard count.load(ordering: .acquiring) > 0 else { return }
        let done: [Completion] = lock.withLock {
            defer { waiting.removeAll(); count.store(0, ordering: .releasing) }
            return Array(waiting.values)
        }
        complete(done, code, sent: 0)
    }

    private func complete(_ done: [Completion], _ code: ErrorCode?, sent: Int) {
        guard !done.isEmpty else { return }
        let body: @Sendable () -> Void = { for completion in done { completion(code, sent) } }
        // Without a thread (resources exhausted) the callbacks run here: late is worse than on this thread.
        if !callbacks.spawn(body) { body() }
    }
}
