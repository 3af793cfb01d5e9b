/// An and/or/not tree as Optimizely writes audience conditions: `["and", a, ["or", b, c]]`, where a list
/// whose first element is not an operator means "or" of all its elements. Leaves are indices: audience
/// indices in an experiment's audienceConditions, leaf-condition indices inside an audience.
public indirect enum LogicTree: Sendable {
    case and([LogicTree])
    case or([LogicTree])
    /// Negates its first operand; with no operand the result is unknown.
    case not(LogicTree?)
    case leaf(Int32)

    /// Three-valued evaluation exactly as the reference: `nil` is unknown. "and" is false if any operand
    /// is false, else unknown if any is unknown; "or" is true if any is true, else unknown if any is
    /// unknown; "not" flips a known result.
    @inlinable
    public func evaluate(_ leaf: (Int32) -> Bool?) -> Bool? {
        switch self {
        case .leaf(let index):
            return leaf(index)
        case .and(let operands):
            var sawUnknown = false
            for operand in operands {
                switch operand.evaluate(leaf) {
                case false?: return false
                case nil: sawUnknown = true
                case true?: break
                }
            }
            return sawUnknown ? nil : true
        case .or(let operands):
            var sawUnknown = false
            for operand in operands {
                switch operand.evaluate(leaf) {
                case true?: return true
                case nil: sawUnknown = true
                case false?: break
                }
            }
            return sawUnknown ? nil : false
        case .not(let operand):
            guard let result = operand?.evaluate(leaf) else { return nil }
            return !result
        }
    }
}

/// One leaf condition of an audience: `{"name": ..., "type": ..., "match": ..., "value": ...}`.
public struct LeafCondition: Sendable {
    /// The attribute name; nil when absent or not a string (such a condition never finds a value).
    public let attribute: [UInt8]?
    /// False when "type" is not "custom_attribute" / "third_party_dimension": evaluates to unknown.
    public let hasKnownType: Bool
    public let match: MatchType
    public let value: ConditionValue
    /// The condition as JSON, for reasons and logs.
    public let description: String
}

/// A class, not a struct: decisions read it from the config without copying its fields.
public final class Audience: @unchecked Sendable {
    public let id: String
    public let name: String
    public let conditions: LogicTree
    public let leaves: [LeafCondition]
    /// The conditions as written in the datafile, for reasons.
    public let conditionsText: String
    public init(id: String, name: String, conditions: LogicTree, leaves: [LeafCondition], conditionsText: String) {
        self.id = id
        self.name = name
        self.conditions = conditions
        self.leaves = leaves
        self.conditionsText = conditionsText
    }
}

/// The audience restriction of an experiment, rollout rule or holdout: a tree over audience indices.
public struct AudienceCondition: Sendable {
    public let tree: LogicTree
    /// As written in the datafile (audienceConditions or audienceIds), for reasons.
    public let text: String
}
