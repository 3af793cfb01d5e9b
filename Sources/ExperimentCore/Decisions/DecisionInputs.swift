/// The user's attributes as a decision reads them. Implemented by the runtime over per-call attributes
/// and stored user properties; lookups must not allocate.
public protocol UserAttributes {
    /// The value of attribute `name`, or nil when the user has no such attribute.
    func value(named name: UTF8Text) -> AttributeValue?
    /// Whether the user is qualified for real-time segment `segment` ("qualified" conditions).
    func isQualified(for segment: UTF8Text) -> Bool
    /// Every attribute once, in order (the one that wins when a key repeats), for event payloads.
    func forEach(_ body: (UTF8Text, AttributeValue) -> Void)
    /// The value of `$opt_bucketing_id` (as `value(named:)` gives it): asked twice per decision, so a type
    /// that can find it once when it is built answers without a search.
    func bucketingIdValue() -> AttributeValue?
}

extension UserAttributes {
    @inlinable
    public func bucketingIdValue() -> AttributeValue? { value(named: StaticName.bucketingId) }
}

/// Per-user overrides a decision honors before bucketing: forced decisions (flag or flag+rule level)
/// and forced variations (set_forced_variation). Implemented by the runtime.
public protocol DecisionOverrides {
    /// False when the user has no overrides at all: the common case skips every lookup.
    var isEmpty: Bool { get }
    /// The forced variation key for `flagKey` and `ruleKey` (nil rule: the flag as a whole).
    func forcedDecision(flagKey: String, ruleKey: String?) -> String?
    /// The forced variation id for the experiment with id `experimentId`.
    func forcedVariation(experimentId: String) -> String?
    /// A Sigma forced inclusion/exclusion for the experiment with id `experimentId` (exclude-all included).
    func forcedMembership(experimentId: String) -> ForcedMembership?
}

extension DecisionOverrides {
    public func forcedMembership(experimentId: String) -> ForcedMembership? { nil }
}

/// No overrides: for decisions of users without any.
public struct NoOverrides: DecisionOverrides {
    public init() {}
    public var isEmpty: Bool { true }
    public func forcedDecision(flagKey: String, ruleKey: String?) -> String? { nil }
    public func forcedVariation(experimentId: String) -> String? { nil }
}

/// The reference's decision sources, as impression events name them (rule_type).
public enum DecisionSource: String, Sendable {
    case featureTest = "feature-test"
    case rollout = "rollout"
    case experiment = "experiment"
    case holdout = "holdout"
}

/// Which variation a flag decision chose and why, as indices into the config that made it.
public struct FlagDecision: Sendable {
    public let flag: Int32
    public var source: DecisionSource = .rollout
    /// The deciding experiment or rollout rule (index into experiments), or -1.
    public var experiment: Int32 = -1
    /// The deciding holdout (index into holdouts), or -1.
    public var holdout: Int32 = -1
    /// Variation index within the deciding experiment or holdout, or -1.
    public var variation: Int32 = -1
    /// The decided variation among the flag's variations (forced decisions and variables), or -1.
    public var flagVariation: Int32 = -1
    /// A global holdout that excludes targeted deliveries and caught the user: its impression is sent
    /// besides the decision's own. Index into holdouts (and variation), or -1.
    public var exclusionHoldout: Int32 = -1
    public var exclusionHoldoutVariation: Int32 = -1

    public init(flag: Int32) { self.flag = flag }

    /// The `experiment` of a CMAB error decision (see `cmabFailed`). Kept in an existing field: a decision
    /// is copied several times per call, and a wider one costs every decision, CMAB or not.
    public static let cmabFailedExperiment: Int32 = -2

    /// A CMAB experiment's prediction failed: the reference's error decision (no variation, rule or
    /// impression; "{}" variables; its reasons whatever the options).
    @inlinable
    public var cmabFailed: Bool { experiment == FlagDecision.cmabFailedExperiment }
}

/// What an experiment gives a user (get_variation / activate / trigger_experiment).
public enum ExperimentOutcome: Equatable, Sendable {
    case variation(Int32)
    case notRunning
    case notTargeted
    case notAllocated
}
