/// The Sigma view of a user's decisions: which experiments and holdouts the user is in, and typed
/// values of flags and experiment parameters. Built on the same DecisionService as decide, so it can
/// never disagree with a decision; nothing here is on the per-decision hot path.

/// An experiment the user is in: indices into the config's experiments and that experiment's variations
/// (the variation's position is Sigma's "group index").
public struct ExperimentMembership: Equatable, Sendable {
    public let experiment: Int32
    public let variation: Int32
    public init(experiment: Int32, variation: Int32) {
        self.experiment = experiment
        self.variation = variation
    }
}

extension DecisionService {
    /// Whether the user is in holdout `index` (running, audience met, bucketed into its variation).
    /// Holdouts that are not running hold nobody.
    public func isInHoldout(_ index: Int) -> Bool { holdoutVariation(index) != nil }

    /// Every holdout the user is in, global holdouts first, then local ones, each in datafile order.
    public func holdoutMemberships() -> [Int32] {
        config.holdouts.indices.filter { isInHoldout($0) }.map { Int32($0) }
    }

    /// Every experiment the user is in, in datafile order. An experiment that is a flag's experiment
    /// rule counts when the flag's decision came from it (so a holdout, an earlier rule or a flag-level
    /// forced decision takes the user out of it, as decide would); any other experiment counts when
    /// get_variation gives the user a variation. Delivery rules of rollouts are not experiments.
    public func experimentMemberships() -> [ExperimentMembership] {
        var ruleOfFlag = [Bool](repeating: false, count: config.experiments.count)
        var decided = [Int32](repeating: -1, count: config.experiments.count)
        for flag in config.flags.indices where config.flags[flag].experimentRuleCount > 0 {
            let rules = config.flags[flag].rules.prefix(config.flags[flag].experimentRuleCount)
            rules.forEach { ruleOfFlag[Int($0.experiment)] = true }
            if let membership = membership(of: decide(flag: flag)), decided[Int(membership.experiment)] < 0 {
                decided[Int(membership.experiment)] = membership.variation
            }
        }
        var memberships: [ExperimentMembership] = []
        for index in config.experiments.indices where config.experiments[index].kind == .experiment {
            let variation: Int32?
            if ruleOfFlag[index] {
                variation = decided[index] >= 0 ? decided[index] : nil
            } else if case .variation(let chosen) = outcome(experiment: index) {
                variation = chosen
            } else {
                variation = nil
            }
            if let variation { memberships.append(ExperimentMembership(experiment: Int32(index), variation: variation)) }
        }
        return memberships
    }

    /// The user's variation of experiment `index` by the rules of `experimentMemberships`, or nil.
    public func experimentMembership(_ index: Int) -> ExperimentMembership? {
        let owners = config.flags.indices.filter { flag in
            config.flags[flag].rules.prefix(config.flags[flag].experimentRuleCount).contains { $0.experiment == Int32(index) }
        }
        guard !owners.isEmpty else {
            guard case .variation(let variation) = outcome(experiment: index) else { return nil }
            return ExperimentMembership(experiment: Int32(index), variation: variation)
        }
        for flag in owners {
            if let found = membership(of: decide(flag: flag)), found.experiment == Int32(index) { return found }
        }
        return nil
    }

    /// The experiment and variation a flag decision put the user in, if it came from an experiment rule.
    public func membership(of decision: FlagDecision) -> ExperimentMembership? {
        guard decision.source == .featureTest, decision.holdout < 0, decision.experiment >= 0 else { return nil }
        if decision.variation >= 0 {
            return ExperimentMembership(experiment: decision.experiment, variation: decision.variation)
        }
        // A rule-level forced decision names a flag variation: find it among the rule's own variations.
        guard decision.flagVariation >= 0 else { return nil }
        let id = config.flags[Int(decision.flag)].flagVariations[Int(decision.flagVariation)].id
        guard let variation = config.experiments[Int(decision.experiment)].variationIndex(id: id) else { return nil }
        return ExperimentMembership(experiment: decision.experiment, variation: Int32(variation))
    }
}

// MARK: - typed values

/// The five value types of Sigma's typed accessors.
public enum SigmaValueType: String, Sendable, CaseIterable {
    case bool, int, double, string, json

    /// The accessor type a flag variable of `type` answers to.
    public init(_ type: VariableType) {
        switch type {
        case .boolean: self = .bool
        case .integer: self = .int
        case .double: self = .double
        case .string: self = .string
        case .json: self = .json
        }
    }
}

public enum SigmaValue: Equatable, Sendable {
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    /// JSON text of the value.
    case json(String)
}

/// What a typed accessor finds: a value, no value for this user (not an error), or a value of another type.
public enum SigmaLookup: Equatable, Sendable {
    case value(SigmaValue)
    case absent
    case typeMismatch(String)
}

public enum SigmaValues {
    /// Why asking flag `flagKey` (or its `variable`) for a `wanted` value is a type mismatch, or nil when
    /// it is not. Without a variable key a flag's value is a bool: whether it is enabled.
    public static func mismatch(flagKey: String, variable: Variable?, wanted: SigmaValueType) -> String? {
        guard let variable else {
            return wanted == .bool ? nil
                : "flag \"\(flagKey)\" without a variable key is a bool (whether it is enabled), not \(wanted.rawValue)"
        }
        return mismatch(variable, owner: "flag \"\(flagKey)\"", wanted: wanted)
    }

    static func mismatch(_ variable: Variable, owner: String, wanted: SigmaValueType) -> String? {
        let declared = SigmaValueType(variable.type)
        return declared == wanted ? nil
            : "variable \"\(variable.key)\" of \(owner) has type \(variable.type.rawValue) (read it as "
              + "\(declared.rawValue)), not \(wanted.rawValue)"
    }

    /// Variable `variable` read out of a variables JSON object (as decide builds it) as `wanted`.
    /// A null value (one the reference cannot typecast) is absent.
    public static func lookup(_ variable: Variable, in variablesJSON: String, owner: String,
                              as wanted: SigmaValueType) -> SigmaLookup {
        let declared = SigmaValueType(variable.type)
        if let message = mismatch(variable, owner: owner, wanted: wanted) { return .typeMismatch(message) }
        guard let document = try? JSONDocument.parse(variablesJSON, what: "variables", maxBytes: Int.max, maxDepth: 1000)
        else { return .absent }
        // The member points into the document: keep it alive until the value is copied out.
        return withExtendedLifetime(document) {
            guard let member = document.root.member(variable.key), !member.isNull else { return .absent }
            return typed(member, declared: declared, name: "variable \"\(variable.key)\" of \(owner)")
        }
    }

    static func typed(_ value: JSONValue, declared: SigmaValueType, name: String) -> SigmaLookup {
        switch declared {
        case .bool:
            return value.bool.map { .value(.bool($0)) } ?? .absent
        case .int:
            guard value.kind == .int else { return .absent }
            guard let number = Int64(value.jsonText) else {
                return .typeMismatch("\(name) (\(value.jsonText)) does not fit in a 64-bit integer")
            }
            return .value(.int(number))
        case .double:
            return value.double.map { .value(.double($0)) } ?? .absent
        case .string:
            return value.string.map { .value(.string($0)) } ?? .absent
        case .json:
            return .value(.json(value.jsonText))
        }
    }
}

// MARK: - Sigma's string forms

public enum SigmaFormats {
    /// "expId.groupIndex|expId.groupIndex|..." ("" for none).
    public static func experiments(_ entries: [(id: String, groupIndex: Int)]) -> String {
        entries.map { "\($0.id).\($0.groupIndex)" }.joined(separator: "|")
    }

    /// "holdoutId.0|holdoutId.0|..." ("" for none): a holdout has one group, index 0.
    public static func holdouts(_ ids: [String]) -> String {
        ids.map { "\($0).0" }.joined(separator: "|")
    }
}

// MARK: - Sigma user properties

/// The keys Sigma's user builder sets, stored (and seen by audiences) under exactly these names.
public enum SigmaProperties {
    public static let standardKeys = ["profile_id", "device_id", "email", "app_version", "os_name", "os_version",
                                      "geo_code", "geo_country", "geo_state", "geo_city"]
    public static let customPrefix = "custom."
    public static let profileId = "profile_id"
    public static let bucketingId = "$opt_bucketing_id"

    public enum ValueKind: Sendable { case null, bool, number, string }

    /// Why `key` with a value of `kind` is not a Sigma property, or nil when it is one. A null value is
    /// accepted for every valid key (edit removes the key with it).
    public static func problem(key: String, kind: ValueKind) -> String? {
        if key == "user_id" {
            return "\"user_id\" is not a property: the user id is the user_id argument of every call"
        }
        if key.hasPrefix(customPrefix) {
            return key.utf8.count == customPrefix.utf8.count ? "\"custom.\" needs a property name after the dot" : nil
        }
        guard standardKeys.contains(key) else {
            return "unknown Sigma property \"\(key)\" (standard keys: \(standardKeys.joined(separator: ", ")); "
                + "custom properties are named \"custom.<name>\")"
        }
        guard kind == .string || kind == .null else { return "property \"\(key)\" must be a string" }
        return nil
    }
}
