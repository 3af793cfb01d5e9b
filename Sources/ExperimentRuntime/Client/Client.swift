import ExperimentCore
import Synchronization

public enum LibraryVersion {
    public static let major = 0, minor = 1, patch = 0
    public static let string = "\(major).\(minor).\(patch)"
}

/// One decided flag with what the caller needs to report it.
public struct DecideResult {
    public let decision: FlagDecision
    public let reasons: [String]
}

/// A client: the current compiled config, the user stores, and the event path.
///
/// Decisions read an immutable config snapshot taken under a short lock, so a datafile swap never
/// blocks or disturbs decisions in flight: they finish on the snapshot they took.
public final class Client: @unchecked Sendable {
    public let options: ClientOptions
    public let properties: UserPropertyStore
    public let overrides = OverrideStore()
    public let events: EventSink
    public let logger: Logger
    public let notifications: NotificationCenter
    /// Kameleoon user data waiting for the user's next trigger / conversion / flush (Client+Events.swift).
    public let userData = UserDataStore()
    public let eventClient = EventClient(name: "libexperiment", version: LibraryVersion.string)

    private let current = Locked<ProjectConfig?>(nil)
    private let isClosed = Atomic<Bool>(false)

    public init(options: ClientOptions) {
        self.options = options
        self.properties = UserPropertyStore(capacity: options.userStoreCapacity)
        self.logger = Logger(level: options.logLevel)
        let notifications = NotificationCenter()
        self.notifications = notifications
        self.events = EventSink(logger: logger, options: options, notifications: notifications)
    }

    // MARK: lifecycle

    /// Compiles `datafile` off to the side and swaps it in; a datafile that fails keeps the current one.
    public func start(datafile: UnsafeRawBufferPointer) throws(ClientError) {
        try ensureOpen()
        let compiled: ProjectConfig
        do {
            compiled = try DatafileCompiler.compile(datafile)
        } catch {
            let kept = current.withLock { $0?.revision }.map { "keeping revision \($0)" } ?? "the client stays not ready"
            logger.log(.error, "rejected datafile (\(error.message)); \(kept)")
            throw ClientError(error)
        }
        // The previous config is released after the lock: freeing a large one must not hold up decisions.
        let previous = current.withLock { config -> ProjectConfig? in
            defer { config = compiled }
            return config
        }
        withExtendedLifetime(previous) {}
        logger.log(.info, "datafile revision \(compiled.revision) in use"
                   + (options.sdkKey.map { " for SDK key \(Logger.redacted($0))" } ?? "")
                   + ": \(compiled.flags.count) flags, \(compiled.experiments.count) experiments and rules")
    }

    public var isReady: Bool { current.withLock { $0 != nil } }

    /// The config decisions should use now.
    @inline(__always)
    public func config() throws(ClientError) -> ProjectConfig {
        try ensureOpen()
        guard let config = current.withLock({ $0 }) else {
            throw ClientError(.notReady, "the client has no datafile yet: call exp_client_start first")
        }
        return config
    }

    /// Refuses further calls, then drains the event queue within close_timeout_ms (the rest stays on disk).
    public func close() {
        isClosed.store(true, ordering: .releasing)
        events.close(timeoutMs: options.closeTimeoutMs)
    }

    public var closed: Bool { isClosed.load(ordering: .acquiring) }

    @inline(__always)
    public func ensureOpen() throws(ClientError) {
        if isClosed.load(ordering: .acquiring) { throw ClientError(.closed, "the client is closed") }
    }

    // MARK: decisions

    public func decide<A: UserAttributes>(config: ProjectConfig, flag: Int, userId: UTF8Text, attributes: A,
                                          options callOptions: DecideOptions) -> DecideResult
    {
        var result: DecideResult? = nil
        decideAll(config: config, flags: flag..<(flag + 1), userId: userId, attributes: attributes,
                  options: callOptions) { result = $0 }
        return result!
    }

    /// Decides every flag in datafile order, handing each result to `body` (ENABLED_FLAGS_ONLY filters).
    public func decideAll<A: UserAttributes>(config: ProjectConfig, userId: UTF8Text, attributes: A,
                                             options callOptions: DecideOptions, _ body: (DecideResult) -> Void)
    {
        let options = callOptions.union(self.options.defaultDecideOptions)
        decideAll(config: config, flags: config.flags.indices, userId: userId, attributes: attributes,
                  options: options) { result in
            if options.contains(.enabledFlagsOnly) && !result.decision.enabled(in: config) { return }
            body(result)
        }
    }

    /// Looks the user's stored properties and overrides up once, then decides `flags`. Users with neither
    /// (the common case) decide through types that read no store at all.
    private func decideAll<A: UserAttributes>(config: ProjectConfig, flags: Range<Int>, userId: UTF8Text,
                                              attributes: A, options callOptions: DecideOptions,
                                              _ body: (DecideResult) -> Void)
    {
        let options = callOptions.union(self.options.defaultDecideOptions)
        let stored = properties.storedProperties(of: userId)
        let forced = overrides.storedOverrides(of: userId)
        switch (stored, forced) {
        case (nil, nil):
            decide(config, flags, userId, attributes, NoOverrides(), options, body)
        case (let stored?, nil):
            decide(config, flags, userId, MergedAttributes(call: attributes, stored: stored), NoOverrides(), options, body)
        case (nil, let forced?):
            decide(config, flags, userId, attributes, forced, options, body)
        case (let stored?, let forced?):
            decide(config, flags, userId, MergedAttributes(call: attributes, stored: stored), forced, options, body)
        }
    }

    private func decide<A: UserAttributes, O: DecisionOverrides>(
        _ config: ProjectConfig, _ flags: Range<Int>, _ userId: UTF8Text, _ attributes: A, _ overrides: O,
        _ options: DecideOptions, _ body: (DecideResult) -> Void
    ) {
        for flag in flags {
            let service = DecisionService(config: config, userId: userId, attributes: attributes, overrides: overrides,
                                          includeReasons: options.contains(.includeReasons))
            let decision = service.decide(flag: flag)
            var dispatched = false
            if !options.contains(.disableDecisionEvent) {
                dispatched = sendImpressions(of: decision, config: config, userId: userId, attributes: attributes)
            }
            let result = DecideResult(decision: decision, reasons: service.reasons?.messages ?? [])
            if notifications.hasListeners(.decision) {
                notifyFlagDecision(result, config: config, userId: userId, attributes: attributes, dispatched: dispatched)
            }
            body(result)
        }
    }

    /// get_variation / activate / trigger_experiment: the experiment's outcome for the user, with an
    /// impression when `sendImpression` and the user got a variation.
    public func experimentOutcome<A: UserAttributes>(config: ProjectConfig, experiment: Int, userId: UTF8Text,
                                                     attributes: A, sendImpression: Bool) -> ExperimentOutcome
    {
        let merged = MergedAttributes(call: attributes, stored: properties.properties(of: userId))
        let service = DecisionService(config: config, userId: userId, attributes: merged,
                                      overrides: overrides.overrides(of: userId), includeReasons: false)
        let outcome = service.outcome(experiment: experiment)
        if sendImpression, case .variation(let variation) = outcome {
            let subject = EventPayloads.subject(experiment: experiment, variation: variation, in: config)
            send(subject, config: config, userId: userId, attributes: merged)
        }
        if notifications.hasListeners(.decision) {
            notifyExperimentDecision(outcome, config: config, experiment: experiment, userId: userId, attributes: merged)
        }
        if sendImpression { sendPendingUserData(config: config, userId: userId) }
        return outcome
    }

    /// A conversion for `event` (an index into the config's events).
    /// Throws when the event queue refuses the event (full with policy "reject", state file failure).
    public func track<A: UserAttributes>(config: ProjectConfig, event: Int, userId: UTF8Text, attributes: A,
                                         tags: EventTags?) throws(ClientError)
    {
        let merged = MergedAttributes(call: attributes, stored: properties.properties(of: userId))
        if events.accepting {
            let uuid = EventIdentity.uuid()
            let batch = EventPayloads.conversion(event: config.events[event], tags: tags, config: config,
                                                 userId: String(decoding: userId, as: UTF8.self), attributes: merged,
                                                 uuid: uuid, timestamp: EventIdentity.timestampMillis(),
                                                 client: eventClient)
            try events.send(batch, uuid: uuid)
        } else {
            events.countDropped()
        }
        if notifications.hasListeners(.track) {
            notifyTrack(event: config.events[event].key, userId: userId, attributes: merged, tags: tags)
        }
        sendPendingUserData(config: config, userId: userId)
    }

    // MARK: events

    /// True when an impression was sent.
    @discardableResult
    private func sendImpressions<A: UserAttributes>(of decision: FlagDecision, config: ProjectConfig,
                                                    userId: UTF8Text, attributes: A) -> Bool
    {
        var sent = false
        if let holdout = EventPayloads.exclusionHoldoutSubject(of: decision, in: config) {
            sent = send(holdout, config: config, userId: userId, attributes: attributes) || sent
        }
        if decision.sendsImpression(in: config) {
            sent = send(EventPayloads.subject(of: decision, in: config), config: config, userId: userId,
                        attributes: attributes) || sent
        }
        return sent
    }

    /// An impression cannot fail its decision: one the queue refuses is counted as dropped and logged.
    @discardableResult
    private func send<A: UserAttributes>(_ subject: ImpressionSubject, config: ProjectConfig, userId: UTF8Text,
                                         attributes: A) -> Bool
    {
        // With nobody to receive it, an event is only counted as dropped: building it would be wasted.
        guard events.accepting else { events.countDropped(); return false }
        let uuid = EventIdentity.uuid()
        let batch = EventPayloads.impression(subject, config: config, userId: String(decoding: userId, as: UTF8.self),
                                             attributes: attributes, uuid: uuid,
                                             timestamp: EventIdentity.timestampMillis(), client: eventClient)
        do {
            try events.send(batch, uuid: uuid)
            return true
        } catch {
            logger.log(.warning, "impression not queued: \(error.message)")
            return false
        }
    }
}
