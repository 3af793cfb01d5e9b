import ExperimentCore
import ExperimentRuntime

/// Options of one decision call (Optimizely's OptimizelyDecideOption); a client's `defaultDecideOptions`
/// add to every call's.
public enum DecideOption: Sendable, Hashable, CaseIterable {
    /// No impression event for this decision.
    case disableDecisionEvent
    /// `decideAll` and `decide(keys:)` leave out the flags that are off for the user.
    case enabledFlagsOnly
    /// Sticky bucketing is neither read nor written for this decision.
    case ignoreUserProfileService
    /// The decision's `reasons` say how it was made.
    case includeReasons
    /// The decision's `variables` stay empty.
    case excludeVariables

    var runtimeOption: DecideOptions {
        switch self {
        case .disableDecisionEvent: return .disableDecisionEvent
        case .enabledFlagsOnly: return .enabledFlagsOnly
        case .ignoreUserProfileService: return .ignoreUserProfileService
        case .includeReasons: return .includeReasons
        case .excludeVariables: return .excludeVariables
        }
    }

    static func set(_ options: [DecideOption]) -> DecideOptions {
        options.reduce(into: DecideOptions()) { $0.formUnion($1.runtimeOption) }
    }
}

/// One flag decided for one user (Optimizely's OptimizelyDecision).
public struct ExperimentDecision: Sendable {
    /// The decided variation's key; nil when the user got none (or the decision could not be made).
    public let variationKey: String?
    /// Whether the flag is on for the user.
    public let enabled: Bool
    /// The flag's variables for the user, by key (empty with `.excludeVariables`).
    public let variables: [String: JSON]
    /// The rule (experiment, delivery or holdout) that decided; nil when none did.
    public let ruleKey: String?
    public let flagKey: String
    /// The context the decision was made for.
    public let userContext: ExperimentUserContext
    /// How the decision was made (with `.includeReasons`), or why it could not be made (always).
    public let reasons: [String]

    /// The variable `key` (nil when the flag has no such variable).
    public func variable(_ key: String) -> JSON? { variables[key] }
}

/// Which decision a forced decision replaces: a flag's (ruleKey nil) or one of its rules'.
public struct DecisionContext: Sendable, Hashable {
    public let flagKey: String
    public let ruleKey: String?

    public init(flagKey: String, ruleKey: String? = nil) {
        self.flagKey = flagKey
        self.ruleKey = ruleKey
    }
}

/// The variation a forced decision gives.
public struct ForcedDecision: Sendable, Hashable {
    public let variationKey: String

    public init(variationKey: String) { self.variationKey = variationKey }
}

extension ExperimentDecision {
    /// A decided flag, its strings copied out of the config that decided it.
    init(_ result: DecideResult, config: ProjectConfig, options: DecideOptions, context: ExperimentUserContext) {
        let decision = result.decision
        flagKey = config.flags[Int(decision.flag)].key.text
        enabled = decision.enabled(in: config)
        variationKey = decision.variationKeyCString(in: config).map { String(cString: $0) }
        ruleKey = decision.ruleKeyCString(in: config).map { String(cString: $0) }
        if options.contains(.excludeVariables) || decision.cmabFailed {
            variables = [:]
        } else {
            variables = JSON.parse(String(cString: decision.variablesJSON(in: config))).objectValue ?? [:]
        }
        reasons = options.contains(.includeReasons) || decision.cmabFailed ? result.reasons : []
        userContext = context
    }

    /// A decision that could not be made (or a key the datafile does not have): off, no variation.
    init(failed flagKey: String, reasons: [String], context: ExperimentUserContext) {
        self.flagKey = flagKey
        enabled = false
        variationKey = nil
        ruleKey = nil
        variables = [:]
        self.reasons = reasons
        userContext = context
    }
}
