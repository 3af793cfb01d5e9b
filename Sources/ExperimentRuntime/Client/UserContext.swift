import ExperimentCore
#if canImport(Glibc)
import Glibc
#endif

/// A user context (Optimizely's OptimizelyUserContext): one user id with its own attributes, forced
/// decisions and qualified segments, decided through the client that made it.
///
/// Forced decisions and segments live in the context, not in the client: two contexts of the same user id
/// never see each other's (the id-keyed calls of the client keep their own store). What the client keeps
/// per user id still applies to a context, as in the reference: forced variations (set_forced_variation),
/// Sigma forced memberships, sticky-bucketing profiles and stored user properties (context attributes win).
///
/// Thread-safe: the context's state is one immutable snapshot replaced under a short lock; a decision reads
/// the snapshot it took.
public final class UserContext: @unchecked Sendable {
    public let client: Client
    public let userId: String
    /// The user id's bytes at a stable address for the decision path (no conversion per call).
    public let userIdText: UTF8Text
    private let state: Locked<Snapshot>

    /// What a decision reads: replaced as a whole on every change.
    public struct Snapshot {
        public var attributes: OwnedAttributes
        var forced: ContextForcedDecisions
        public var segments: SegmentSet?
    }

    public init(client: Client, userId: String, attributes: OwnedAttributes) {
        self.client = client
        self.userId = userId
        let bytes = Array(userId.utf8)
        let storage = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: max(bytes.count, 1))
        _ = storage.initialize(from: bytes)
        userIdText = UTF8Text(start: storage.baseAddress, count: bytes.count)
        state = Locked(Snapshot(attributes: attributes, forced: ContextForcedDecisions(), segments: nil))
    }

    deinit { UnsafeMutableRawPointer(mutating: userIdText.baseAddress!).deallocate() }

    /// An independent copy: same user id, attributes, forced decisions and segments; later changes to either
    /// do not reach the other (the reference copies a context for each decision the same way).
    public func copy() -> UserContext {
        let copied = UserContext(client: client, userId: userId, attributes: .empty)
        copied.state.withLock { $0 = snapshot }
        return copied
    }

    @inline(__always)
    public var snapshot: Snapshot { state.withLock { $0 } }

    // MARK: attributes

    public var attributes: OwnedAttributes { snapshot.attributes }

    /// Sets (a value) or removes (nil) one attribute.
    public func setAttribute(_ key: [UInt8], _ value: OwnedValue?) {
        state.withLock { $0.attributes = $0.attributes.applying([(key, value)]) }
    }

    // MARK: forced decisions

    /// Sets the forced variation key of `flagKey` (and `ruleKey`; nil: the flag as a whole).
    public func setForcedDecision(flagKey: String, ruleKey: String?, variationKey: String) {
        state.withLock { $0.forced.values[ForcedDecisionKey(flag: flagKey, rule: ruleKey)] = variationKey }
    }

    public func forcedDecision(flagKey: String, ruleKey: String?) -> String? {
        snapshot.forced.values[ForcedDecisionKey(flag: flagKey, rule: ruleKey)]
    }

    /// True when there was one to remove.
    public func removeForcedDecision(flagKey: String, ruleKey: String?) -> Bool {
        state.withLock { $0.forced.values.removeValue(forKey: ForcedDecisionKey(flag: flagKey, rule: ruleKey)) != nil }
    }

    public func removeAllForcedDecisions() { state.withLock { $0.forced.values.removeAll() } }

    // MARK: qualified segments

    /// The context's qualified segments (nil: never fetched or set).
    public var qualifiedSegments: [String]? { snapshot.segments?.names }

    public func setQualifiedSegments(_ segments: [String]?) {
        let set = segments.map(SegmentSet.init)
        state.withLock { $0.segments = set }
    }

    public func isQualified(for segment: String) -> Bool { snapshot.segments?.names.contains { $0.sameCodePoints(segment) } ?? false }
}

/// A context's forced decisions ((flag key, rule key) -> variation key).
struct ContextForcedDecisions {
    var values: [ForcedDecisionKey: String] = [:]
}

/// The overrides a context's decision honors: its own forced decisions, and the client's per-user-id forced
/// variations and memberships (not the client's id-keyed forced decisions: those belong to the id calls).
struct ContextOverrides: DecisionOverrides {
    let forced: ContextForcedDecisions
    let client: UserOverrides

    var isEmpty: Bool { forced.values.isEmpty && client.isEmpty }

    func forcedDecision(flagKey: String, ruleKey: String?) -> String? {
        forced.values.isEmpty ? nil : forced.values[ForcedDecisionKey(flag: flagKey, rule: ruleKey)]
    }

    func forcedVariation(experimentId: String) -> String? { client.forcedVariation(experimentId: experimentId) }

    func forcedMembership(experimentId: String) -> ForcedMembership? {
        client.forcedMembership(experimentId: experimentId)
    }
}

extension Client {
    /// The decision of one flag for a context when nothing but the config and the context's attributes can
    /// matter (see decideWithoutState); nil otherwise.
    @inline(__always)
    public func decideWithoutState(config: ProjectConfig, flag: Int, context: UserContext.Snapshot, userId: UTF8Text,
                                   options: DecideOptions) -> FlagDecision? {
        guard context.forced.values.isEmpty, context.segments == nil else { return nil }
        return decideWithoutState(config: config, flag: flag, userId: userId, attributes: context.attributes,
                                  options: options)
    }

    /// Decides `flags` for a context: its attributes (with its segments, over the user's stored properties),
    /// its forced decisions, and the client's per-user-id state.
    /// `flags` may be any list of flag indices (decide_for_keys): one profile lookup and at most one save
    /// for all of them, as the reference's decide_for_keys.
    public func decide<F: Collection<Int>>(config: ProjectConfig, flags: F, context: UserContext,
                                           snapshot: UserContext.Snapshot, options callOptions: DecideOptions,
                                           _ body: (DecideResult) -> Void) {
        let options = callOptions.union(self.options.defaultDecideOptions)
        if let segments = snapshot.segments {
            decide(config, flags, context, snapshot,
                   SegmentQualifiedAttributes(base: snapshot.attributes, segments: segments), options, body)
        } else {
            decide(config, flags, context, snapshot, snapshot.attributes, options, body)
        }
    }

    private func decide<A: UserAttributes, F: Collection<Int>>(_ config: ProjectConfig, _ flags: F, _ context: UserContext,
                                           _ snapshot: UserContext.Snapshot, _ attributes: A,
                                           _ options: DecideOptions, _ body: (DecideResult) -> Void) {
        let userId = context.userIdText
        let clientOverrides = overrides.storedOverrides(of: userId) ?? .none
        let contextOverrides = ContextOverrides(forced: snapshot.forced, client: clientOverrides)
        if let stored = properties.storedProperties(of: userId) {
            decide(config, flags, userId, MergedAttributes(call: attributes, stored: stored), contextOverrides,
                   options, body)
        } else {
            decide(config, flags, userId, attributes, contextOverrides, options, body)
        }
    }

    /// Every flag in datafile order for a context (ENABLED_FLAGS_ONLY filters). A datafile that repeats a
    /// flag key has each key decided as often as it is listed, answered once (see `decideEveryFlag`).
    public func decideAll(config: ProjectConfig, context: UserContext, options callOptions: DecideOptions,
                          _ body: (DecideResult) -> Void) {
        guard config.hasCMABRules else { return decideAllInOrder(config: config, context: context, options: callOptions, body) }
        cmabErrorsFirst(body) { each in decideAllInOrder(config: config, context: context, options: callOptions, each) }
    }

    private func decideAllInOrder(config: ProjectConfig, context: UserContext, options callOptions: DecideOptions,
                                  _ body: (DecideResult) -> Void) {
        let options = callOptions.union(self.options.defaultDecideOptions)
        guard config.repeatedFlagKeys != nil else {
            return decide(config: config, flags: config.flags.indices, context: context, snapshot: context.snapshot,
                          options: options) { result in
                if options.contains(.enabledFlagsOnly) && !result.decision.keptByEnabledFlagsOnly(in: config) { return }
                body(result)
            }
        }
        let snapshot = context.snapshot
        decideEveryFlag(config, enabledFlagsOnly: options.contains(.enabledFlagsOnly), { flags, each in
            decide(config: config, flags: flags, context: context, snapshot: snapshot, options: options, each)
        }, body)
    }

    /// A conversion for a context: its attributes (over the user's stored properties).
    public func track(config: ProjectConfig, event: Int, context: UserContext, tags: EventTags?) throws(ClientError) {
        try track(config: config, event: event, userId: context.userIdText, attributes: context.attributes, tags: tags)
    }

    /// Fetches the context user's qualified segments (cache first) into the context. A failed fetch leaves
    /// the context with none, as the reference does.
    public func fetchQualifiedSegments(for context: UserContext, options: SegmentFetchOptions)
        throws(ClientError) -> [String]
    {
        let config = try config()
        try odp.ensureEnabled()
        odp.identifyIfFirstSeen(userId: context.userId, config: config)
        let result = odp.fetchSegments(userId: context.userId, config: config, options: options)
        switch result {
        case .success(let fetched): context.setQualifiedSegments(fetched)
        case .failure(let error) where error.code == .fetchFailed || error.code == .invalidUserId:
            context.setQualifiedSegments(nil)
        case .failure: break
        }
        return try result.get()
    }
}
