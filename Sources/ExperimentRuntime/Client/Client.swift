#if canImport(Glibc)
import Glibc
#endif
import ExperimentCore
import Synchronization

public enum LibraryVersion {
    public static let major = 0, minor = 1, patch = 0
    public static let string = "\(major).\(minor).\(patch)"
}

/// One decided flag with what the caller needs to report it.
/// Which call asks for an experiment's outcome: what it sends and returns differ.
public enum ExperimentCall: Sendable {
    /// No impression.
    case getVariation
    /// The reference's activate: an impression when the user gets a variation whose key is not empty
    /// (it tests the key for truth: `if not variation_key`, and activates nobody for ""); the same test
    /// makes its result None.
    case activate
    /// Kameleoon's trigger_experiment: an impression for every variation.
    case trigger

    public func sendsImpression(variationKey: String) -> Bool {
        switch self {
        case .getVariation: return false
        case .activate: return !variationKey.isEmpty
        case .trigger: return true
        }
    }
}

/// The reference's decide_for_keys keeps one reasons list per key: a key asked for again appends its new
/// evaluation's reasons (without the flag-level forced decision's, which start the list once) to the
/// earlier ones. Each later decision of a repeated key carries the reasons so far, so the last one (the
/// one a map keyed by flag keeps) has the reference's.
public struct RepeatedKeyReasons {
    public init() {}

    private var reasonsByFlag: [Int: [String]] = [:]

    public mutating func merged(_ result: DecideResult, flag: Int) -> DecideResult {
        guard let earlier = reasonsByFlag[flag] else {
            reasonsByFlag[flag] = result.reasons
            return result
        }
        let reasons = earlier + result.reasons.dropFirst(result.forcedDecisionReasonCount)
        reasonsByFlag[flag] = reasons
        return DecideResult(decision: result.decision, reasons: reasons,
                            forcedDecisionReasonCount: result.forcedDecisionReasonCount)
    }
}

public struct DecideResult {
    public let decision: FlagDecision
    public let reasons: [String]
    /// How many of `reasons` (the first ones) explain the flag-level forced decision.
    public let forcedDecisionReasonCount: Int

    public init(decision: FlagDecision, reasons: [String], forcedDecisionReasonCount: Int = 0) {
        self.decision = decision
        self.reasons = reasons
        self.forcedDecisionReasonCount = forcedDecisionReasonCount
    }

    /// The reference's one answer for a flag key that decide_all decided several times (a key repeated
    /// in "featureFlags"): the last decision, with the last flag-level forced decision's reasons followed by
    /// every decision's own reasons.
    init(merging results: [DecideResult]) {
        let last = results[results.count - 1]
        var reasons = Array(last.reasons.prefix(last.forcedDecisionReasonCount))
        for result in results { reasons += result.reasons.dropFirst(result.forcedDecisionReasonCount) }
        self.init(decision: last.decision, reasons: reasons, forcedDecisionReasonCount: last.forcedDecisionReasonCount)
    }
}

/// decide_all for a datafile that repeats a flag key (`ProjectConfig.repeatedFlagKeys`): each entry of
/// "featureFlags" decided in datafile order (so impressions and notifications go out in the reference's
/// order), each key answered once, at its first entry's place. `decide` decides a range of flags, sending
/// each decision's impression; ENABLED_FLAGS_ONLY filters the answers.
func decideEveryFlag(_ config: ProjectConfig, enabledFlagsOnly: Bool,
                     _ decide: (Range<Int>, (DecideResult) -> Void) -> Void, _ body: (DecideResult) -> Void) {
    // Not escaping in fact: `decide` calls it before returning (the compiler cannot see that `decide` does
    // not call `body` re-entrantly, so it wants an escapable closure to hand it).
    withoutActuallyEscaping(body) { body in
        let answer = { (result: DecideResult) in
            if !enabledFlagsOnly || result.decision.keptByEnabledFlagsOnly(in: config) { body(result) }
        }
        guard let keys = config.repeatedFlagKeys else { return }
        var results = [[DecideResult]](repeating: [], count: keys.count)
        for at in config.repeatedFlagKeyOrder {
            decide(keys[at].flag..<(keys[at].flag + 1)) { results[at].append($0) }
        }
        for each in results where !each.isEmpty {
            answer(each.count == 1 ? each[0] : DecideResult(merging: each))
        }
    }
}

/// A client: the current compiled config, the user stores, and the event path.
///
/// Decisions read an immutable config snapshot taken under a short lock, so a datafile swap never
/// blocks or disturbs decisions in flight: they finish on the snapshot they took.
public final class Client: @unchecked Sendable {
    public let options: ClientOptions
    public let properties: UserPropertyStore
    public let overrides: OverrideStore
    /// Sticky bucketing (user profiles); see Client+Profiles.swift.
    public let profileSlot: ProfileSlot
    public let events: EventSink
    public let logger: Logger
    public let notifications: NotificationCenter
    /// Kameleoon user data waiting for the user's next trigger / conversion / flush (Client+Events.swift).
    public let userData = UserDataStore()
    public let eventClient = EventClient(name: "libexperiment", version: LibraryVersion.string)
    /// Real-time segments (ODP): per-user qualified segments, fetching, ODP events (see Client+ODP.swift).
    public let segments: QualifiedSegmentsStore
    public let odp: ODPManager
    /// Threads running the host's asynchronous callbacks (run-when-ready, delivery completions, flushes):
    /// close waits for them, so none runs after exp_client_close returned.
    public let callbacks = AsyncCallbacks()

    private let current = ConfigSlot()
    /// The OptimizelyConfig document of the config in use, computed on first request (never on the decide
    /// path) and kept with that config, so each datafile revision is turned into it once.
    let optimizelyConfigCache = Locked<(config: ProjectConfig, document: String)?>(nil)
    /// Datafile lifecycle: readiness, the fetch/poll manager, the cache-TTL flag (Client+Datafile.swift).
    let datafileState = DatafileState()
    private let isClosed = Atomic<Bool>(false)
    /// CMAB experiments' predictions: the cache and the prediction client (see `CMABService`).
    public let cmab: CMABService

    public init(options: ClientOptions) {
        ForkGeneration.register()
        self.options = options
        self.properties = UserPropertyStore(capacity: options.userStoreCapacity)
        self.logger = Logger(level: options.logLevel)
        let notifications = NotificationCenter()
        self.notifications = notifications
        self.events = EventSink(logger: logger, options: options, notifications: notifications, callbacks: callbacks)
        self.segments = QualifiedSegmentsStore(capacity: options.userStoreCapacity)
        var odpOptions = options.odp
        odpOptions.caFile = options.caFile
        self.odp = ODPManager(options: odpOptions, stateDir: options.stateDir, closeTimeoutMs: options.closeTimeoutMs,
                              logger: logger)
        let state = Self.openStateDirectory(options, logger: logger)
        self.overrides = OverrideStore(state: state, logger: logger, capacity: options.userStoreCapacity)
        self.profileSlot = ProfileSlot(Self.makeProfileService(options, state: state, logger: logger))
        var cmabOptions = options.cmab
        cmabOptions.caFile = options.caFile
        let closed = ClosedFlag()
        self.cmab = CMABService(options: cmabOptions, logger: logger, isClosed: { closed.value.load(ordering: .acquiring) })
        self.cmabClosed = closed
    }

    /// Set when the client closes: a prediction request in flight is cut short.
    private let cmabClosed: ClosedFlag

    // MARK: lifecycle

    /// Compiles `datafile` off to the side and swaps it in; a datafile that fails keeps the current one.
    public func start(datafile: UnsafeRawBufferPointer) throws(ClientError) {
        try install(datafile: datafile, source: .start)
    }

    /// The swap itself (see Client+Datafile.swift for the entry points): compiles `datafile` off the decision
    /// path, then replaces the current config under the lock. With `requireSameProject`, a datafile of another
    /// project than the current one is rejected. Returns the previous revision (nil when not ready before).
    func swapConfig(_ datafile: UnsafeRawBufferPointer, requireSameProject: Bool)
        throws(ClientError) -> (previousRevision: String?, config: ProjectConfig)
    {
        try ensureOpen()
        let compiled: ProjectConfig
        do {
            compiled = try compileTimed(datafile)
        } catch {
            let kept = current.current.map { "keeping revision \($0.revision)" } ?? "the client stays not ready"
            logger.log(.error, "rejected datafile (\(error.message)); \(kept)")
            throw ClientError(error)
        }
        // The previous config is released after the lock: freeing a large one must not hold up decisions.
        // (Threads still holding a lease on it release their share when they next decide.)
        // The text is copied only for a client that keeps it, after it compiled (a refused one costs nothing).
        let text = options.keepDatafile ? Array(datafile) : nil
        let (installed, previous) = current.install(compiled, text: text) { old in
            !(requireSameProject && old != nil && old!.projectId != compiled.projectId)
        }
        if !installed, let foreignProject = previous?.projectId {
            let message = "datafile of project \(compiled.projectId) rejected: this client serves project \(foreignProject)"
            logger.log(.error, "rejected datafile (\(message)); keeping the current one")
            throw ClientError(.invalidDatafile, message)
        }
        let previousRevision = previous?.revision
        withExtendedLifetime(previous) {}
        if previousRevision != compiled.revision { logWarnings(of: compiled) }
        odp.configDidChange(compiled)
        logger.log(.info, "datafile revision \(compiled.revision) in use"
                   + (options.sdkKey.map { " for SDK key \(Logger.redacted($0))" } ?? "")
                   + ": \(compiled.flags.count) flags, \(compiled.experiments.count) experiments and rules")
        return (previousRevision, compiled)
    }

    /// Compiles `datafile`; with debug logging on, logs how long json-c's parsing, the compilation and the
    /// freeing of json-c's trees took in all (the datafile is read element by element, so the three
    /// alternate; bench_load reads this line).
    private func compileTimed(_ datafile: UnsafeRawBufferPointer) throws(DatafileError) -> ProjectConfig {
        guard logger.isEnabled(.debug) else { return try DatafileCompiler.compile(datafile) }
        var totals: [Double] = [0, 0, 0]  // parse, compile, free
        var current: Int? = nil
        var mark = Client.monotonicMilliseconds()
        let config = try DatafileCompiler.compile(datafile) { step in
            let now = Client.monotonicMilliseconds()
            if let current { totals[current] += now - mark }
            mark = now
            switch step {
            case .parse: current = 0
            case .compile: current = 1
            case .free: current = 2
            case .done: current = nil
            }
        }
        func span(_ index: Int) -> String {
            let microseconds = totals[index] * 1000
            return String(Double(Int(microseconds.rounded())) / 1000)
        }
        logger.log(.debug, "datafile of \(datafile.count) bytes: parse \(span(0)) ms (json-c), compile \(span(1)) ms, "
                   + "free \(span(2)) ms")
        return config
    }

    private static func monotonicMilliseconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) * 1000 + Double(now.tv_nsec) / 1_000_000
    }

    /// The most warnings of one datafile revision the log gets line by line (the datafile status lists all).
    static let loggedWarningsLimit = 100

    /// What the datafile has that the reference SDK accepts but is likely a mistake (a stale audience id...),
    /// logged once per revision: the datafile is in use and decides as the reference decides it.
    private func logWarnings(of config: ProjectConfig) {
        guard !config.warnings.isEmpty else { return }
        for warning in config.warnings.prefix(Self.loggedWarningsLimit) {
            logger.log(.warning, "datafile revision \(config.revision) accepted with a warning: \(warning.message)")
        }
        let more = config.warnings.count - Self.loggedWarningsLimit
        if more > 0 {
            logger.log(.warning, "datafile revision \(config.revision): \(more) more warnings "
                       + "(exp_client_datafile_status_json lists them all)")
        }
    }

    public var isReady: Bool { current.current != nil }

    /// The text of the datafile in use, byte for byte as given or fetched (exp_client_datafile_json).
    public func datafileText() throws(ClientError) -> [UInt8] {
        try ensureOpen()
        let (config, text) = current.currentWithDatafile
        guard config != nil else {
            throw ClientError(.notReady, "the client has no datafile yet (not started, or its first datafile is still being fetched)")
        }
        guard let text else {
            throw ClientError(.notFound, "the client does not keep its datafile's text: create it with the option \"keep_datafile\": true")
        }
        return text
    }

    /// The config in use and the text it was compiled from (nil when not kept), read together.
    var configWithDatafile: (config: ProjectConfig?, datafile: [UInt8]?) { current.currentWithDatafile }

    /// The warnings of the datafile in use (empty when not ready): what it has that the reference accepts.
    public var datafileWarnings: [DatafileError] { current.current?.warnings ?? [] }

    /// The calling thread's lease on the config decisions should use now: the hot path's way in (no lock,
    /// no write to shared memory while the config is unchanged).
    @inline(__always)
    public func lease() throws(ClientError) -> ConfigLease {
        try ensureOpen()
        datafileState.noteUse()  // cache-TTL mode: one relaxed atomic load unless the datafile is stale
        guard let lease = current.lease() else {
            throw ClientError(.notReady, "the client has no datafile yet (not started, or its first datafile is still being fetched)")
        }
        return lease
    }

    /// The same, not retained, for a call that runs no host code (no listener, callback or store) while it
    /// uses it: only this thread's next lease of this client could release it.
    @inline(__always)
    public func unretainedLease() throws(ClientError) -> Unmanaged<ConfigLease> {
        try ensureOpen()
        datafileState.noteUse()
        guard let lease = current.unretainedLease() else {
            throw ClientError(.notReady, "the client has no datafile yet (not started, or its first datafile is still being fetched)")
        }
        return lease
    }

    /// The config decisions should use now.
    public func config() throws(ClientError) -> ProjectConfig { try lease().config }

    /// Closes the client: refuses further calls, stops the datafile poller and releases its tag, stops the ODP
    /// threads, and drains the event queue within close_timeout_ms (the rest stays on disk). Idempotent.
    /// Then waits for the host's asynchronous callbacks, which the close has all ended (waiters for readiness
    /// wake with EXP_ERR_CLOSED, completions of events still on disk get EXP_ERR_TIMEOUT), except one
    /// running on the calling thread.
    /// Returns how many of this client's events were not delivered by then (0 when closed before).
    @discardableResult
    public func close() -> Int {
        isClosed.store(true, ordering: .releasing)
        cmabClosed.value.store(true, ordering: .releasing)
        closeDatafileLifecycle()
        odp.close()
        let left = events.close(timeoutMs: options.closeTimeoutMs)
        callbacks.waitIdle()
        return left
    }

    public var closed: Bool { isClosed.load(ordering: .acquiring) }

    @inline(__always)
    public func ensureOpen() throws(ClientError) {
        if isClosed.load(ordering: .acquiring) { throw ClientError(.closed, "the client is closed") }
    }

    // MARK: decisions

    /// The decision of one flag when nothing but the config and the call's attributes can matter: no stored
    /// segments, properties, overrides or profiles, no impression, listener or reasons (the common case of a
    /// server deciding with DISABLE_DECISION_EVENT). It runs no host code. Nil when any of those applies:
    /// `decide` then takes the full path, which gives the same decision in that case.
    @inline(__always)
    public func decideWithoutState<A: UserAttributes>(config: ProjectConfig, flag: Int, userId: UTF8Text,
                                                      attributes: A, options callOptions: DecideOptions)
        -> FlagDecision?
    {
        let options = callOptions.union(self.options.defaultDecideOptions)
        guard options.contains(.disableDecisionEvent), !options.contains(.includeReasons),
              options.contains(.ignoreUserProfileService) || profileSlot.unretainedService == nil,
              !notifications.hasListeners(.decision),
              // While any user has stored segments, properties or overrides, the full path looks them up
              // (once; this path would only repeat the lookups).
              segments.isEmpty, properties.isEmpty, overrides.isEmpty,
              // A CMAB rule may need the error decision's reasons and the prediction service.
              !config.hot.flags[flag].hasCMABRule
        else { return nil }
        return DecisionService(config: config, userId: userId, attributes: attributes, overrides: NoOverrides(),
                               sticky: NoStickyAssignments(), reasons: nil).decide(flag: flag)
    }

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
        if config.hasCMABRules {
            return cmabErrorsFirst(body) { each in
                decideAllInOrder(config: config, userId: userId, attributes: attributes, options: callOptions, each)
            }
        }
        decideAllInOrder(config: config, userId: userId, attributes: attributes, options: callOptions, body)
    }

    private func decideAllInOrder<A: UserAttributes>(config: ProjectConfig, userId: UTF8Text, attributes: A,
                                                     options callOptions: DecideOptions,
                                                     _ body: (DecideResult) -> Void)
    {
        if config.repeatedFlagKeys != nil {
            return decideAllRepeatingKeys(config: config, userId: userId, attributes: attributes,
                                          options: callOptions, body)
        }
        let options = callOptions.union(self.options.defaultDecideOptions)
        decideAll(config: config, flags: config.flags.indices, userId: userId, attributes: attributes,
                  options: options) { result in
            if options.contains(.enabledFlagsOnly) && !result.decision.keptByEnabledFlagsOnly(in: config) { return }
            body(result)
        }
    }

    /// decideAll for a datafile that repeats a flag key (see `decideEveryFlag`). Kept out of line, so the
    /// common path above stays as it was.
    @inline(never)
    private func decideAllRepeatingKeys<A: UserAttributes>(config: ProjectConfig, userId: UTF8Text, attributes: A,
                                                           options callOptions: DecideOptions,
                                                           _ body: (DecideResult) -> Void)
    {
        let options = callOptions.union(self.options.defaultDecideOptions)
        decideEveryFlag(config, enabledFlagsOnly: options.contains(.enabledFlagsOnly), { flags, each in
            decideAll(config: config, flags: flags, userId: userId, attributes: attributes, options: options, each)
        }, body)
    }

    /// Looks the user's qualified segments, stored properties and overrides up once, then decides `flags`.
    /// Users with none of them (the common case) decide through types that read no store at all.
    private func decideAll<A: UserAttributes>(config: ProjectConfig, flags: Range<Int>, userId: UTF8Text,
                                              attributes: A, options callOptions: DecideOptions,
                                              _ body: (DecideResult) -> Void)
    {
        let options = callOptions.union(self.options.defaultDecideOptions)
        if let qualified = segments.segments(of: userId) {
            decideStored(config: config, flags: flags, userId: userId,
                         attributes: SegmentQualifiedAttributes(base: attributes, segments: qualified),
                         options: options, body)
        } else {
            decideStored(config: config, flags: flags, userId: userId, attributes: attributes, options: options, body)
        }
    }

    private func decideStored<A: UserAttributes>(config: ProjectConfig, flags: Range<Int>, userId: UTF8Text,
                                                 attributes: A, options: DecideOptions,
                                                 _ body: (DecideResult) -> Void)
    {
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

    func decide<A: UserAttributes, O: DecisionOverrides, F: Collection<Int>>(
        _ config: ProjectConfig, _ flags: F, _ userId: UTF8Text, _ attributes: A, _ overrides: O,
        _ options: DecideOptions, _ body: (DecideResult) -> Void
    ) {
        // One profile lookup and at most one save per call, as the reference's UserProfileTracker.
        if let profiles = unretainedProfileService(for: options) {
            ProfileTracker.withTracker(service: profiles, userId: userId) { tracker in
                decide(config, flags, userId, attributes, overrides, tracker, options, body)
            }
        } else {
            decide(config, flags, userId, attributes, overrides, NoStickyAssignments(), options, body)
        }
    }

    private func decide<A: UserAttributes, O: DecisionOverrides, S: StickyAssignments, F: Collection<Int>>(
        _ config: ProjectConfig, _ flags: F, _ userId: UTF8Text, _ attributes: A, _ overrides: O,
        _ sticky: S, _ options: DecideOptions, _ body: (DecideResult) -> Void
    ) {
        for flag in flags {
            if config.hot.flags[flag].hasCMABRule {
                body(decideCMABFlag(config, flag, userId, attributes, overrides, sticky, options))
                continue
            }
            // Owned here, read below after the service's last use: alive for all of it.
            let reasons = options.contains(.includeReasons) ? ReasonLog() : nil
            let service = DecisionService(config: config, userId: userId, attributes: attributes, overrides: overrides,
                                          sticky: sticky, reasons: reasons)
            let decision = service.decide(flag: flag)
            var dispatched = false
            if !options.contains(.disableDecisionEvent) {
                dispatched = sendImpressions(of: decision, config: config, userId: userId, attributes: attributes)
            }
            let result = DecideResult(decision: decision, reasons: reasons?.messages ?? [],
                                      forcedDecisionReasonCount: reasons?.forcedDecisionCount ?? 0)
            if notifications.hasListeners(.decision) {
                notifyFlagDecision(result, config: config, userId: userId, attributes: attributes, options: options,
                                   dispatched: dispatched)
            }
            body(result)
        }
    }

    /// `decide` for a flag with a CMAB experiment rule (kept apart, so other flags' path is as it was): the
    /// prediction service may be asked, reasons are always collected (the error decision carries them
    /// whatever the options), and an impression carries the prediction's UUID.
    @inline(never)
    private func decideCMABFlag<A: UserAttributes, O: DecisionOverrides, S: StickyAssignments>(
        _ config: ProjectConfig, _ flag: Int, _ userId: UTF8Text, _ attributes: A, _ overrides: O,
        _ sticky: S, _ options: DecideOptions
    ) -> DecideResult {
        let reasons = ReasonLog()
        let call = CMABCall(service: cmab)
        let decision = withExtendedLifetime((reasons, call)) {
            DecisionService(config: config, userId: userId, attributes: attributes, overrides: overrides,
                            sticky: sticky, reasons: reasons, cmab: call, cmabOptions: options).decide(flag: flag)
        }
        if decision.cmabFailed {
            // The reference's error decision: no impression and no decision notification; the flag's own
            // reasons (not the flag-level forced decision's) whatever the options.
            return DecideResult(decision: decision, reasons: Array(reasons.messages.dropFirst(reasons.forcedDecisionCount)),
                                forcedDecisionReasonCount: 0)
        }
        var dispatched = false
        if !options.contains(.disableDecisionEvent) {
            dispatched = sendImpressions(of: decision, config: config, userId: userId, attributes: attributes,
                                         cmabUUID: call.uuid(of: decision, in: config))
        }
        let result = options.contains(.includeReasons)
            ? DecideResult(decision: decision, reasons: reasons.messages, forcedDecisionReasonCount: reasons.forcedDecisionCount)
            : DecideResult(decision: decision, reasons: [], forcedDecisionReasonCount: 0)
        if notifications.hasListeners(.decision) {
            notifyFlagDecision(result, config: config, userId: userId, attributes: attributes, options: options,
                               dispatched: dispatched)
        }
        return result
    }

    /// get_variation / activate / trigger_experiment: the experiment's outcome for the user, with an
    /// impression as `call` sends one (`ExperimentCall.sendsImpression`).
    public func experimentOutcome<A: UserAttributes>(config: ProjectConfig, experiment: Int, userId: UTF8Text,
                                                     attributes: A, call: ExperimentCall) -> ExperimentOutcome
    {
        if let qualified = segments.segments(of: userId) {
            return outcome(config: config, experiment: experiment, userId: userId,
                           attributes: SegmentQualifiedAttributes(base: attributes, segments: qualified),
                           call: call)
        }
        return outcome(config: config, experiment: experiment, userId: userId, attributes: attributes,
                       call: call)
    }

    private func outcome<A: UserAttributes>(config: ProjectConfig, experiment: Int, userId: UTF8Text,
                                            attributes: A, call: ExperimentCall) -> ExperimentOutcome
    {
        let merged = MergedAttributes(call: attributes, stored: properties.properties(of: userId))
        let outcome: ExperimentOutcome
        if let profiles = profileSlot.unretainedService {
            outcome = ProfileTracker.withTracker(service: profiles, userId: userId) { tracker in
                DecisionService(config: config, userId: userId, attributes: merged,
                                overrides: overrides.overrides(of: userId), sticky: tracker,
                                reasons: nil, cmab: cmab).outcome(experiment: experiment)
            }
        } else {
            outcome = DecisionService(config: config, userId: userId, attributes: merged,
                                      overrides: overrides.overrides(of: userId), reasons: nil, cmab: cmab)
                .outcome(experiment: experiment)
        }
        if case .variation(let variation) = outcome,
           call.sendsImpression(variationKey: config.experiments[experiment].variations[Int(variation)].key.text) {
            let subject = EventPayloads.subject(experiment: experiment, variation: variation, in: config)
            send(subject, config: config, userId: userId, attributes: merged)
        }
        if notifications.hasListeners(.decision) {
            notifyExperimentDecision(outcome, config: config, experiment: experiment, userId: userId, attributes: merged)
        }
        if call != .getVariation { sendPendingUserData(config: config, userId: userId) }
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
                                                    userId: UTF8Text, attributes: A, cmabUUID: CMABUUID? = nil) -> Bool
    {
        var sent = false
        if let holdout = EventPayloads.exclusionHoldoutSubject(of: decision, in: config) {
            sent = send(holdout, config: config, userId: userId, attributes: attributes) || sent
        }
        if decision.sendsImpression(in: config) {
            if let cmabUUID {
                var subject = EventPayloads.subject(of: decision, in: config)
                subject.cmabUUID = cmabUUID.text
                sent = send(subject, config: config, userId: userId, attributes: attributes) || sent
            } else {
                sent = send(EventPayloads.subject(of: decision, in: config), config: config, userId: userId,
                            attributes: attributes) || sent
            }
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

/// decide_all's order when CMAB error decisions are among its answers: the reference answers them first (in
/// datafile order), then the other flags.
func cmabErrorsFirst(_ body: (DecideResult) -> Void, _ run: ((DecideResult) -> Void) -> Void) {
    // Not escaping in fact (as in `decideEveryFlag`): `run` calls it before returning.
    withoutActuallyEscaping(body) { body in
        var later: [DecideResult] = []
        run { result in
            if result.decision.cmabFailed { body(result) } else { later.append(result) }
        }
        later.forEach(body)
    }
}

/// A flag shared with the CMAB service's requests (set when the client closes).
final class ClosedFlag: Sendable {
    let value = Atomic<Bool>(false)
}
