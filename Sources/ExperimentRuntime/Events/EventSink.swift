import ExperimentCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Where built events go: the host's dispatcher callback when one is installed (called synchronously,
/// exactly as before the built-in pipeline existed), otherwise the built-in durable pipeline
/// (`EventProcessor`) unless `event_endpoint` is "none", in which case events are only counted as dropped.
public final class EventSink: @unchecked Sendable {
    public typealias Dispatch = @Sendable (EventBatch) -> Bool

    // A concrete stored closure guarded by a plain lock: passing a closure through a generic container
    // (Locked<Dispatch?>) re-abstracts it on every access, wrapping it in one more thunk each time.
    private let lock = Lock(forkGuarded: true)
    private var dispatcher: DispatcherBox?
    /// The built-in pipeline, opened on the first event (or at creation when the state file exists, so
    /// events an earlier run left on disk are sent).
    private var processor: EventProcessor?
    private var processorClosed = false
    /// The fork generation `processor` was opened in: a forked child opens its own (see `ownProcessor`).
    private var processorGeneration = ForkGeneration.current
    /// Pipelines a forked child inherited: never closed nor released (their threads, locks and SQLite
    /// connection belong to the parent), only their journal mappings are let go.
    private static let inherited = Locked<[EventProcessor]>([])
    private let pipelineEnabled: Bool
    private let options: ClientOptions
    private let notifications: NotificationCenter
    public let stats = EventStats()
    /// Completion callbacks waiting for single events (exp_track_conversion_with_callback, ...).
    public let watch: DeliveryWatch

    private let logger: Logger

    public init(logger: Logger, options: ClientOptions = ClientOptions(), notifications: NotificationCenter = NotificationCenter(),
                callbacks: AsyncCallbacks = AsyncCallbacks()) {
        self.logger = logger
        self.options = options
        self.notifications = notifications
        self.watch = DeliveryWatch(callbacks: callbacks)
        pipelineEnabled = options.eventEndpoint != ClientOptions.disabledEventEndpoint
        if pipelineEnabled, let directory = try? StateDirectory(option: options.stateDir),
           access(directory.databasePath, F_OK) == 0
        {
            _ = try? pipeline()
        }
    }

    /// A client released without close: stop the dispatcher thread (events stay on disk).
    deinit {
        guard let processor else { return }
        if processorGeneration == ForkGeneration.current {
            _ = processor.close(timeoutMs: 0)
        } else {
            Self.setAside(processor)
        }
    }

    /// This process's pipeline; in a forked child, the inherited one is set aside (the parent delivers the
    /// events it holds) and nil is returned, so the next event opens the child's own. Call under `lock`.
    private func ownProcessor() -> EventProcessor? {
        guard let current = processor else { return nil }
        if processorGeneration == ForkGeneration.current { return current }
        Self.setAside(current)
        processor = nil
        return nil
    }

    private static func setAside(_ processor: EventProcessor) {
        processor.releaseAfterFork()
        inherited.withLock { $0.append(processor) }
    }

    /// The closure in a class: read under the lock as a plain reference (an optional closure returned
    /// through the generic withLock was re-wrapped in a heap-allocated thunk on every event).
    private final class DispatcherBox {
        let dispatch: Dispatch
        init(_ dispatch: @escaping Dispatch) { self.dispatch = dispatch }
    }

    public func setDispatcher(_ dispatch: Dispatch?) {
        let box = dispatch.map { DispatcherBox($0) }
        lock.withLock { dispatcher = box }
    }

    public var hasDispatcher: Bool { lock.withLock { dispatcher != nil } }

    /// Whether an event built now goes anywhere, or is listened for (else it is only counted, and not worth
    /// building).
    public var accepting: Bool {
        notifications.hasListeners(.event)
            || lock.withLock { dispatcher != nil || (pipelineEnabled && !processorClosed) }
    }

    /// Counts an event that had nowhere to go.
    public func countDropped() {
        stats.dropped.add(1, ordering: .relaxed)
        logger.log(.debug, "event dropped: no event dispatcher is installed and event_endpoint is \"none\"")
    }

    /// Hands the batch to the host's dispatcher (outside the lock: the callback may take its time or
    /// re-enter), or appends it to the durable queue. Throws when the queue refuses it (full, store failure).
    /// `completion` (when given and nothing is thrown) is called once with the event's first outcome: at once
    /// on this thread for a host dispatcher (its answer) or when the event goes nowhere (delivery failed, none
    /// sent); for the built-in pipeline on a callback thread once the event was POSTed (delivered, or failed
    /// and kept for a retry / refused for good), or when the client closes with it still on disk (timeout).
    public func send(_ batch: EventBatch, uuid: String, eventCount: Int = 1,
                     completion: DeliveryWatch.Completion? = nil) throws(ClientError) {
        announce(batch)
        let current: DispatcherBox? = lock.withLock { dispatcher }
        guard let current else {
            guard pipelineEnabled else {
                countDropped()
                completion?(.deliveryFailed, 0)
                return
            }
            guard let completion else { return try pipeline().enqueue(batch, uuid: uuid) }
            watch.watch(uuid, completion)
            do {
                try pipeline().enqueue(batch, uuid: uuid)
            } catch {
                watch.cancel(uuid)
                throw error
            }
            return
        }
        let accepted = current.dispatch(batch)
        defer { completion?(accepted ? nil : .deliveryFailed, accepted ? eventCount : 0) }
        if accepted {
            stats.sent.add(eventCount, ordering: .relaxed)
        } else {
            stats.failed.add(1, ordering: .relaxed)
            logger.log(.warning, "the event dispatcher reported a failure for an event batch to \(batch.url)")
        }
        if notifications.hasListeners(.logEvent) {
            notifications.notify(.logEvent) {
                var writer = JSONWriter()
                writer.beginObject()
                writer.field("url", batch.url)
                writer.field("http_verb", batch.httpVerb)
                writer.key("status"); writer.null()
                writer.key("event_count"); writer.int(Int64(eventCount))
                writer.field("outcome", accepted ? "sent" : "failed")
                writer.endObject()
                return writer.text
            }
        }
    }

    /// EXP_NOTIFY_EVENT: the event as built, before it is handed on (to the host's dispatcher, the built-in
    /// pipeline's queue, or nowhere with event_endpoint "none"). Hosts that let the pipeline deliver still see
    /// every event's params, as the reference SDK's LOG_EVENT listeners do with its default dispatcher.
    private func announce(_ batch: EventBatch) {
        guard notifications.hasListeners(.event) else { return }
        notifications.notify(.event) {
            var writer = JSONWriter()
            writer.beginObject()
            writer.field("url", batch.url)
            writer.field("http_verb", batch.httpVerb)
            writer.key("params"); writer.raw(batch.body)
            writer.endObject()
            return writer.text
        }
    }

    /// The built-in pipeline, opened on first use.
    private func pipeline() throws(ClientError) -> EventProcessor {
        let result: Result<EventProcessor, ClientError> = lock.withLock {
            if let processor = ownProcessor() { return .success(processor) }
            if processorClosed { return .failure(ClientError(.closed, "the client is closed")) }
            do throws(ClientError) {
                let opened = try EventProcessor(options: options, stats: stats, logger: logger,
                                                notifications: notifications, watch: watch)
                processor = opened
                processorGeneration = ForkGeneration.current
                return .success(opened)
            } catch {
                stats.dropped.add(1, ordering: .relaxed)
                stats.recordError(error.message)
                logger.log(.error, "event pipeline unavailable: \(error.message)")
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Sends this client's queued events, retrying failures, for up to `timeoutMs`; how many are left.
    public func flush(timeoutMs: Int) -> Int {
        let current = lock.withLock { ownProcessor() }
        return current?.flush(timeoutMs: timeoutMs) ?? 0
    }

    /// Drains the pipeline within `timeoutMs` and stops it; later events are refused. Returns how many of
    /// this client's events were not delivered (they stay on disk).
    @discardableResult
    public func close(timeoutMs: Int) -> Int {
        let current: EventProcessor? = lock.withLock {
            processorClosed = true
            defer { processor = nil }
            return ownProcessor()
        }
        let left = current?.close(timeoutMs: timeoutMs) ?? 0
        // Events still waited for stay on disk: the next client on the state directory sends them.
        watch.settleAll(.timeout)
        return left
    }

    /// The counters as JSON (exp_client_stats).
    public func statsJSON() -> String {
        let current = lock.withLock { ownProcessor() }
        return stats.json(counts: current?.counts)
    }
}

/// Unique event ids and timestamps.
public enum EventIdentity {
    /// A random (version 4) UUID in its canonical text form. The bits come from a per-process 128-bit
    /// seed drawn once from the system generator, mixed with a counter through splitmix64 (a bijection),
    /// so ids never repeat within a process and collide across processes only as random UUIDs do,
    /// without a system call per event.
    public static func uuid() -> String {
        let count = uuidCounter.add(1, ordering: .relaxed).newValue
        let seed = (uuidSeedHigh.load(ordering: .relaxed), uuidSeedLow.load(ordering: .relaxed))
        var bytes = (mix(seed.0 &+ count), mix(seed.1 ^ (count &* 0x9E37_79B9_7F4A_7C15)))
        return withUnsafeMutableBytes(of: &bytes) { raw -> String in
            raw[6] = (raw[6] & 0x0F) | 0x40
            raw[8] = (raw[8] & 0x3F) | 0x80
            return String(unsafeUninitializedCapacity: 36) { text in
                let hex: StaticString = "0123456789abcdef"
                var position = 0
                for index in 0..<16 {
                    if index == 4 || index == 6 || index == 8 || index == 10 {
                        text[position] = UInt8(ascii: "-"); position += 1
                    }
                    text[position] = hex.utf8Start[Int(raw[index] >> 4)]
                    text[position + 1] = hex.utf8Start[Int(raw[index] & 0x0F)]
                    position += 2
                }
                return position
            }
        }
    }

    private static let uuidSeedHigh = Atomic<UInt64>(UInt64.random(in: 0...UInt64.max))
    private static let uuidSeedLow = Atomic<UInt64>(UInt64.random(in: 0...UInt64.max))

    /// A forked child would otherwise repeat the parent's next ids (same seed, same counter): receivers
    /// deduplicate by uuid, so both events but one would be lost. Called by the atfork child handler.
    static func reseedAfterFork() {
        var generator = SystemRandomNumberGenerator()
        uuidSeedHigh.store(generator.next(), ordering: .relaxed)
        uuidSeedLow.store(generator.next(), ordering: .relaxed)
    }
    private static let uuidCounter = Atomic<UInt64>(0)

    private static func mix(_ value: UInt64) -> UInt64 {
        var z = value &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Milliseconds since the Unix epoch.
    public static func timestampMillis() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }
}
