import ExperimentCore
import ExperimentRuntime

/// One user of a client (Optimizely's OptimizelyUserContext): a user id with its attributes and forced
/// decisions, deciding flags and tracking conversions. Thread-safe. Decisions never throw: one that
/// cannot be made (client not ready or closed, unknown flag) comes back disabled with the reason.
public final class ExperimentUserContext: @unchecked Sendable {
    public let client: ExperimentClient
    let context: UserContext

    init(client: ExperimentClient, userId: String, attributes: [String: JSON]) {
        self.client = client
        context = UserContext(client: client.runtime, userId: userId, attributes: Self.owned(attributes))
    }

    private init(client: ExperimentClient, context: UserContext) {
        self.client = client
        self.context = context
    }

    public var userId: String { context.userId }

    /// The user's attributes as they are now.
    public var attributes: [String: JSON] {
        var result: [String: JSON] = [:]
        for entry in context.attributes.entries {
            let key = String(decoding: entry.key, as: UTF8.self)
            switch entry.owned {
            case .null, .unsupported: result[key] = .null
            case .bool(let value): result[key] = .bool(value)
            case .int(let value): result[key] = .int(value)
            case .double(let value): result[key] = .double(value)
            case .string(let bytes): result[key] = .string(String(decoding: bytes, as: UTF8.self))
            case .bigInteger(let digits): result[key] = .double(Double(String(decoding: digits, as: UTF8.self)) ?? 0)
            }
        }
        return result
    }

    /// Sets one attribute (`.null` keeps the key with a null value).
    public func setAttribute(key: String, value: JSON) {
        context.setAttribute(Array(key.utf8), Self.owned(value))
    }

    public func removeAttribute(key: String) { context.setAttribute(Array(key.utf8), nil) }

    /// An independent copy: later changes to either do not reach the other.
    public func copy() -> ExperimentUserContext { ExperimentUserContext(client: client, context: context.copy()) }

    private static func owned(_ attributes: [String: JSON]) -> OwnedAttributes {
        // Sorted: the same attributes give the same order (events and notifications list them in order).
        OwnedAttributes(attributes.keys.sorted().map { (key: Array($0.utf8), value: owned(attributes[$0]!)) })
    }

    /// Audience conditions match strings, numbers and booleans; arrays and objects match none.
    private static func owned(_ value: JSON) -> OwnedValue {
        switch value {
        case .null: return .null
        case .bool(let flag): return .bool(flag)
        case .int(let number): return .int(number)
        case .double(let number): return .double(number)
        case .string(let text): return .string(Array(text.utf8))
        case .array, .object: return .unsupported
        }
    }

    // MARK: decisions

    /// The decision of flag `key` for this user (an impression is sent unless `.disableDecisionEvent`).
    public func decide(key: String, options: [DecideOption] = []) -> ExperimentDecision {
        let runtime = client.runtime
        let lease: ConfigLease
        do throws(ClientError) { lease = try runtime.lease() } catch { return failed(key, error) }
        let config = lease.config
        guard let flag = config.flagIndex.find(key) else {
            return ExperimentDecision(failed: key, reasons: ["No flag was found for key \"\(key)\"."], context: self)
        }
        let callOptions = DecideOption.set(options).subtracting(.enabledFlagsOnly)
        var decided: DecideResult? = nil
        runtime.decide(config: config, flags: flag..<(flag + 1), context: context, snapshot: context.snapshot,
                       options: callOptions) { decided = $0 }
        return withExtendedLifetime(lease) {
            ExperimentDecision(decided!, config: config, options: effective(callOptions), context: self)
        }
    }

    /// Every flag of the datafile, by flag key (only the enabled ones with `.enabledFlagsOnly`); empty when
    /// the client is not ready.
    public func decideAll(options: [DecideOption] = []) -> [String: ExperimentDecision] {
        let runtime = client.runtime
        guard let lease = try? runtime.lease() else { return [:] }
        let config = lease.config
        let callOptions = DecideOption.set(options)
        var decisions: [String: ExperimentDecision] = [:]
        runtime.decideAll(config: config, context: context, options: callOptions) { result in
            let decision = ExperimentDecision(result, config: config, options: effective(callOptions), context: self)
            decisions[decision.flagKey] = decision
        }
        return withExtendedLifetime(lease) { decisions }
    }

    /// The flags `keys`, by flag key. A key the datafile does not have gets a disabled decision; with
    /// `.enabledFlagsOnly` the flags that are off are left out. Empty when the client is not ready.
    public func decide(keys: [String], options: [DecideOption] = []) -> [String: ExperimentDecision] {
        let runtime = client.runtime
        guard let lease = try? runtime.lease() else { return [:] }
        let config = lease.config
        let callOptions = DecideOption.set(options)
        let effectiveOptions = effective(callOptions)
        let snapshot = context.snapshot
        var decisions: [String: ExperimentDecision] = [:]
        var repeated = RepeatedKeyReasons()  // a key asked for again adds its new reasons to its earlier ones
        for key in keys {
            guard let flag = config.flagIndex.find(key) else {
                decisions[key] = ExperimentDecision(failed: key, reasons: [], context: self)
                continue
            }
            var decided: DecideResult? = nil
            runtime.decide(config: config, flags: flag..<(flag + 1), context: context, snapshot: snapshot,
                           options: callOptions.subtracting(.enabledFlagsOnly)) { decided = $0 }
            let result = repeated.merged(decided!, flag: flag)
            if effectiveOptions.contains(.enabledFlagsOnly) && !result.decision.keptByEnabledFlagsOnly(in: config) {
                decisions[key] = nil
                continue
            }
            decisions[key] = ExperimentDecision(result, config: config, options: effectiveOptions, context: self)
        }
        return withExtendedLifetime(lease) { decisions }
    }

    /// The name the task list and other SDKs use for `decide(keys:options:)`.
    public func decideForKeys(_ keys: [String], options: [DecideOption] = []) -> [String: ExperimentDecision] {
        decide(keys: keys, options: options)
    }

    private func effective(_ options: DecideOptions) -> DecideOptions {
        options.union(client.runtime.options.defaultDecideOptions)
    }

    /// The reference SDK's reason for a decision it cannot make.
    private func failed(_ key: String, _ error: ClientError) -> ExperimentDecision {
        let reason = error.code == .notReady ? "Optimizely SDK not configured properly yet." : error.message
        return ExperimentDecision(failed: key, reasons: [reason], context: self)
    }

    // MARK: conversions

    /// Tracks a conversion of `eventKey` for this user, with its tags ("revenue" an integer in cents,
    /// "value" a number, anything else as given). Throws `.unknownEvent` for a key the datafile does not
    /// have, `.notReady` / `.closed`, `.queueFull` when the event queue refuses it.
    public func trackEvent(eventKey: String, eventTags: [String: JSON]? = nil) throws(ExperimentError) {
        let runtime = client.runtime
        var tags: EventTags? = nil
        if let eventTags { tags = try Self.eventTags(eventTags) }
        try translated { () throws(ClientError) in
            let config = try runtime.config()
            guard let event = config.eventKeyIndex.find(eventKey) else {
                throw ClientError(.unknownEvent, "unknown event \"\(eventKey)\"")
            }
            try runtime.track(config: config, event: event, context: context, tags: tags)
        }
    }

    /// Tags as the reference types them, read from their JSON text (one set of rules with the C API).
    private static func eventTags(_ tags: [String: JSON]) throws(ExperimentError) -> EventTags {
        var text = JSON.object(tags).jsonText
        let parsed: Result<EventTags, ExperimentError> = text.withUTF8 { bytes in
            let document: JSONDocument
            do throws(JSONError) {
                document = try JSONDocument.parse(UnsafeRawBufferPointer(bytes), what: "event tags",
                                                  maxBytes: 1 << 20, maxDepth: 64)
            } catch {
                return .failure(ExperimentError(ClientError(error)))
            }
            return withExtendedLifetime(document) {
                EventTags.parse(document, text: bytes).mapError { ExperimentError(.invalidEventTags, $0.message) }
            }
        }
        return try parsed.get()
    }

    // MARK: forced decisions

    /// Forces `decision` for the flag (or rule) of `context`, for this user context only. False when the
    /// client is closed.
    @discardableResult
    public func setForcedDecision(context decisionContext: DecisionContext, decision: ForcedDecision) -> Bool {
        guard !client.runtime.closed else { return false }
        context.setForcedDecision(flagKey: decisionContext.flagKey, ruleKey: decisionContext.ruleKey,
                                  variationKey: decision.variationKey)
        return true
    }

    public func getForcedDecision(context decisionContext: DecisionContext) -> ForcedDecision? {
        context.forcedDecision(flagKey: decisionContext.flagKey, ruleKey: decisionContext.ruleKey)
            .map(ForcedDecision.init(variationKey:))
    }

    /// True when there was one to remove.
    @discardableResult
    public func removeForcedDecision(context decisionContext: DecisionContext) -> Bool {
        context.removeForcedDecision(flagKey: decisionContext.flagKey, ruleKey: decisionContext.ruleKey)
    }

    @discardableResult
    public func removeAllForcedDecisions() -> Bool {
        guard !client.runtime.closed else { return false }
        context.removeAllForcedDecisions()
        return true
    }
}
