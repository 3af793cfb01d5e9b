import ExperimentCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Where built events go. For now the host's dispatcher callback, called synchronously; the durable
/// batching dispatcher takes this place in the event pipeline later.
public final class EventSink: @unchecked Sendable {
    public typealias Dispatch = @Sendable (EventBatch) -> Bool

    // A concrete stored closure guarded by a plain lock: passing a closure through a generic container
    // (Locked<Dispatch?>) re-abstracts it on every access, wrapping it in one more thunk each time.
    private let lock = Lock()
    private var dispatcher: Dispatch?
    private let sentCount = Atomic<Int>(0)
    private let failedCount = Atomic<Int>(0)
    private let droppedCount = Atomic<Int>(0)

    public init() {}

    public func setDispatcher(_ dispatch: Dispatch?) { lock.withLock { dispatcher = dispatch } }

    public var hasDispatcher: Bool { lock.withLock { dispatcher != nil } }

    /// Hands the batch to the dispatcher outside the lock (the callback may take its time or re-enter).
    public func send(_ batch: EventBatch) {
        let current: Dispatch? = lock.withLock { dispatcher }
        guard let current else {
            droppedCount.add(1, ordering: .relaxed)
            return
        }
        if current(batch) { sentCount.add(1, ordering: .relaxed) } else { failedCount.add(1, ordering: .relaxed) }
    }

    public var stats: (sent: Int, failed: Int, dropped: Int) {
        (sentCount.load(ordering: .relaxed), failedCount.load(ordering: .relaxed), droppedCount.load(ordering: .relaxed))
    }
}

/// Unique event ids and timestamps.
public enum EventIdentity {
    /// A random (version 4) UUID in its canonical text form.
    public static func uuid() -> String {
        var generator = SystemRandomNumberGenerator()
        var bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        let hex: [Character] = Array("0123456789abcdef")
        var text = ""
        text.reserveCapacity(36)
        for (index, byte) in bytes.enumerated() {
            if index == 4 || index == 6 || index == 8 || index == 10 { text.append("-") }
            text.append(hex[Int(byte >> 4)])
            text.append(hex[Int(byte & 0x0F)])
        }
        return text
    }

    /// Milliseconds since the Unix epoch.
    public static func timestampMillis() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }
}
