#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// What a notification listener hears about; the raw values are the C API's EXP_NOTIFY_* numbers.
public enum NotificationType: Int32, Sendable, CaseIterable {
    /// A decision was made (decide, activate, get_variation, trigger_experiment).
    case decision = 1
    /// A conversion was tracked.
    case track = 2
    /// A batch of events was delivered (or set aside) by the event dispatcher.
    case logEvent = 3
    /// The client's datafile changed (payload carries the new revision).
    case configUpdate = 4
    /// A datafile fetch ended (start, poll, cache-TTL refresh or exp_client_refresh): its outcome.
    case datafileFetch = 5
    /// An event (impression, conversion) was built and is handed on: its URL, verb and params.
    case event = 6

    public var name: String {
        switch self {
        case .decision: return "decision"
        case .track: return "track"
        case .logEvent: return "log_event"
        case .configUpdate: return "config_update"
        case .datafileFetch: return "datafile_fetch"
        case .event: return "event"
        }
    }
}

/// The client's notification listeners: host callbacks, each registered for one type, each receiving a
/// JSON payload. Listeners are called synchronously on the thread that caused the notification, outside
/// any lock, so a listener may call back into the client.
public final class NotificationCenter: @unchecked Sendable {
    public typealias Listener = @Sendable (NotificationType, String) -> Void

    private struct Entry {
        let id: Int64
        let type: NotificationType
        let listener: Listener
    }

    private let lock = Lock()
    private var entries: [Entry] = []
    private var nextId: Int64 = 1
    /// One bit per type with listeners, read without the lock on the decision path.
    private let typesInUse = Atomic<UInt32>(0)

    public init() {}

    /// Registers `listener` for `type`; the returned id removes it.
    public func add(_ type: NotificationType, _ listener: @escaping Listener) -> Int64 {
        lock.withLock {
            defer { nextId += 1 }
            entries.append(Entry(id: nextId, type: type, listener: listener))
            typesInUse.store(entries.reduce(0) { $0 | 1 << UInt32($1.type.rawValue) }, ordering: .releasing)
            return nextId
        }
    }

    /// Removes the listener with `id`; false when there is none.
    @discardableResult
    public func remove(id: Int64) -> Bool {
        lock.withLock {
            guard let index = entries.firstIndex(where: { $0.id == id }) else { return false }
            entries.remove(at: index)
            typesInUse.store(entries.reduce(0) { $0 | 1 << UInt32($1.type.rawValue) }, ordering: .releasing)
            return true
        }
    }

    public func removeAll() { lock.withLock { entries.removeAll(); typesInUse.store(0, ordering: .releasing) } }

    /// Whether anyone listens for `type`: callers skip building payloads nobody receives.
    public func hasListeners(_ type: NotificationType) -> Bool {
        typesInUse.load(ordering: .acquiring) & (1 << UInt32(type.rawValue)) != 0
    }

    /// Calls every listener of `type` with the payload `payload()` builds (built once, only when needed).
    public func notify(_ type: NotificationType, _ payload: () -> String) {
        let listeners = lock.withLock { entries.filter { $0.type == type }.map(\.listener) }
        guard !listeners.isEmpty else { return }
        let text = payload()
        let held: Bool = lock.withLock {
            guard let holder = holdingThread, pthread_equal(holder, pthread_self()) != 0 else { return false }
            heldNotifications.append((type, text))
            return true
        }
        if !held { for listener in listeners { listener(type, text) } }
    }

    /// The thread inside `holdingNotifications`, and what it notified meanwhile.
    private var holdingThread: pthread_t?
    private var heldNotifications: [(NotificationType, String)] = []

    /// Runs `body` with this thread's notifications kept back and delivered when it returns (see
    /// Logger.holdingMessages: no host callback under a lock a host thread may wait on).
    func holdingNotifications<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        lock.withLock { holdingThread = pthread_self() }
        defer {
            let held: [(NotificationType, String)] = lock.withLock {
                holdingThread = nil
                defer { heldNotifications = [] }
                return heldNotifications
            }
            for (type, text) in held {
                let listeners = lock.withLock { entries.filter { $0.type == type }.map(\.listener) }
                for listener in listeners { listener(type, text) }
            }
        }
        return try body()
    }
}
