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

    private let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    public func setDispatcher(_ dispatch: Dispatch?) { lock.withLock { dispatcher = dispatch } }

    public var hasDispatcher: Bool { lock.withLock { dispatcher != nil } }

    /// Counts an event that had nowhere to go.
    public func countDropped() {
        droppedCount.add(1, ordering: .relaxed)
        logger.log(.debug, "event dropped: no event dispatcher is installed")
    }

    /// Hands the batch to the dispatcher outside the lock (the callback may take its time or re-enter).
    public func send(_ batch: EventBatch) {
        let current: Dispatch? = lock.withLock { dispatcher }
        guard let current else { return countDropped() }
        if current(batch) {
            sentCount.add(1, ordering: .relaxed)
        } else {
            failedCount.add(1, ordering: .relaxed)
            logger.log(.warning, "the event dispatcher reported a failure for an event batch to \(batch.url)")
        }
    }

    public var stats: (sent: Int, failed: Int, dropped: Int) {
        (sentCount.load(ordering: .relaxed), failedCount.load(ordering: .relaxed), droppedCount.load(ordering: .relaxed))
    }
}

/// Unique event ids and timestamps.
public enum EventIdentity {
    /// A random (version 4) UUID in its canonical text form (two draws from the system generator).
    public static func uuid() -> String {
        var generator = SystemRandomNumberGenerator()
        var bytes = (generator.next() as UInt64, generator.next() as UInt64)
        return withUnsafeMutableBytes(of: &bytes) { raw -> String in
            raw[6] = (raw[6] & 0x0F) | 0x40
            raw[8] = (raw[8] & 0x3F) | 0x80
            let hex = Array("0123456789abcdef".utf8)
            var text = [UInt8]()
            text.reserveCapacity(36)
            for index in 0..<16 {
                if index == 4 || index == 6 || index == 8 || index == 10 { text.append(UInt8(ascii: "-")) }
                text.append(hex[Int(raw[index] >> 4)])
                text.append(hex[Int(raw[index] & 0x0F)])
            }
            return String(decoding: text, as: UTF8.self)
        }
    }

    /// Milliseconds since the Unix epoch.
    public static func timestampMillis() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }
}
