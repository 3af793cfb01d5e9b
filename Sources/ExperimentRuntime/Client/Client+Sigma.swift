import ExperimentCore

/// A user's place in one experiment (Sigma's getExperiment): the variation and its parameters. Immutable;
/// it keeps the config it was computed on alive, so its C strings stay valid until it is freed.
public final class UserExperiment: @unchecked Sendable {
    public let config: ProjectConfig
    public let experiment: Int
    public let variation: Int
    /// The variation's parameters: the owning flag's variables with this variation's values (defaults
    /// for those it does not set), whether or not the variation enables the flag. Empty for an experiment
    /// no flag uses.
    public let parametersJSON: String
    public let parameters: [Variable]

    init(config: ProjectConfig, membership: ExperimentMembership) {
        self.config = config
        experiment = Int(membership.experiment)
        variation = Int(membership.variation)
        let owner = UserExperiment.owningRule(config: config, experiment: experiment)
        if let (flag, slot) = owner {
            let flagVariation = config.flags[flag].rules[slot].flagVariationOf[variation]
            parametersJSON = flagVariation >= 0
                ? String(cString: config.flags[flag].flagVariations[Int(flagVariation)].variablesJSON) : "{}"
            parameters = config.flags[flag].variables
        } else {
            parametersJSON = "{}"
            parameters = []
        }
    }

    private static func owningRule(config: ProjectConfig, experiment: Int) -> (Int, Int)? {
        for flag in config.flags.indices {
            if let slot = config.flags[flag].rules.firstIndex(where: { $0.experiment == Int32(experiment) }) {
                return (flag, slot)
            }
        }
        return nil
    }

    public var entity: Experiment { config.experiments[experiment] }
    public var chosen: Variation { entity.variations[variation] }

    /// Parameter `name` as `wanted`: nil when the variation has no value for it (not an error).
    public func parameter(_ name: String, as wanted: SigmaValueType) throws(ClientError) -> SigmaValue? {
        guard let declared = parameters.first(where: { $0.key == name }) else {
            let known = parameters.map(\.key).joined(separator: ", ")
            throw ClientError(.notFound, "experiment \"\(entity.key.text)\" has no parameter \"\(name)\""
                              + (known.isEmpty ? " (it has none)" : " (it has: \(known))"))
        }
        return try unwrap(SigmaValues.lookup(declared, in: parametersJSON, owner: "experiment \"\(entity.key.text)\"",
                                             as: wanted))
    }
}

extension UserExperiment {
    /// Sigma's SigmaExperiment.getFeatureFlagValue: the value flag `flagKey` gets from this variation when
    /// this experiment decides the flag, as decide gives it: with no variable key whether the variation
    /// enables the flag (a bool), else the variable's value (the variation's own when it enables the flag,
    /// the variable's default when it disables it). UNKNOWN_FLAG for a key the datafile lacks; NOT_FOUND when
    /// the flag does not use this experiment or has no variable `variableKey`; TYPE_MISMATCH as check_flag.
    public func flagValue(flagKey: String, variableKey: String?, as wanted: SigmaValueType) throws(ClientError)
        -> SigmaValue?
    {
        guard let flag = config.flagIndex.find(flagKey) else {
            throw ClientError(.unknownFlag, "unknown flag \"\(flagKey)\"")
        }
        let entity = config.flags[flag]
        guard let rule = entity.rules.first(where: { $0.experiment == Int32(experiment) }) else {
            throw ClientError(.notFound, "flag \"\(flagKey)\" does not use experiment \"\(self.entity.key.text)\"")
        }
        var variable: Variable? = nil
        if let variableKey {
            guard let found = entity.variables.first(where: { $0.key == variableKey }) else {
                let known = entity.variables.map(\.key).joined(separator: ", ")
                throw ClientError(.notFound, "flag \"\(flagKey)\" has no variable \"\(variableKey)\""
                                  + (known.isEmpty ? " (it has none)" : " (it has: \(known))"))
            }
            variable = found
        }
        if let message = SigmaValues.mismatch(flagKey: flagKey, variable: variable, wanted: wanted) {
            throw ClientError(.typeMismatch, message)
        }
        // Enabled as decide says it for an experiment rule: the experiment variation's featureEnabled.
        let enabled = chosen.featureEnabled
        guard let variable else { return .bool(enabled) }
        let flagVariation = Int(rule.flagVariationOf[variation])
        let json = enabled && flagVariation >= 0 ? entity.flagVariations[flagVariation].variablesJSON
            : entity.defaultVariablesJSON
        return try unwrap(SigmaValues.lookup(variable, in: String(cString: json), owner: "flag \"\(flagKey)\"",
                                             as: wanted))
    }
}

func unwrap(_ lookup: SigmaLookup) throws(ClientError) -> SigmaValue? {
    switch lookup {
    case .value(let value): return value
    case .absent: return nil
    case .typeMismatch(let message): throw ClientError(.typeMismatch, message)
    }
}

/// Sigma's calls on a client: typed flag values, the user's flags, experiments and holdouts.
extension Client {
    /// Runs `body` with the service Sigma's summaries decide with. Summaries are read-only: they show the
    /// user's saved sticky assignments (so they agree with what decide would return) but save nothing.
    private func withSigmaService<A: UserAttributes, R>(
        config: ProjectConfig, userId: UTF8Text, attributes: A,
        _ body: (DecisionService<MergedAttributes<A>, UserOverrides, SummaryAssignments>) -> R
    ) -> R {
        let merged = MergedAttributes(call: attributes, stored: properties.properties(of: userId))
        let userOverrides = overrides.overrides(of: userId)
        guard let profiles = unretainedProfileService(for: []) else {
            return body(DecisionService(config: config, userId: userId, attributes: merged, overrides: userOverrides,
                                        sticky: SummaryAssignments(tracker: nil), reasons: nil, cmab: cmab))
        }
        return ProfileTracker.withTracker(service: profiles, userId: userId, saves: false) { tracker in
            body(DecisionService(config: config, userId: userId, attributes: merged, overrides: userOverrides,
                                 sticky: SummaryAssignments(tracker: tracker), reasons: nil, cmab: cmab))
        }
    }

    /// check_flag: decides `flag` as decide does (with its impression) and reads the flag's value: with no
    /// variable key whether it is enabled (a bool), else the variable's value. nil: the user has no value
    /// (no variation, or a value the reference cannot typecast). The type is checked before deciding, so a
    /// mismatch sends nothing.
    public func flagValue<A: UserAttributes>(config: ProjectConfig, flag: Int, variableKey: String?, userId: UTF8Text,
                                             attributes: A, as wanted: SigmaValueType) throws(ClientError) -> SigmaValue?
    {
        let entity = config.flags[flag]
        var variable: Variable? = nil
        if let variableKey {
            guard let found = entity.variables.first(where: { $0.key == variableKey }) else {
                let known = entity.variables.map(\.key).joined(separator: ", ")
                throw ClientError(.notFound, "flag \"\(entity.key.text)\" has no variable \"\(variableKey)\""
                                  + (known.isEmpty ? " (it has none)" : " (it has: \(known))"))
            }
            variable = found
        }
        if let message = SigmaValues.mismatch(flagKey: entity.key.text, variable: variable, wanted: wanted) {
            throw ClientError(.typeMismatch, message)
        }
        let decision = decide(config: config, flag: flag, userId: userId, attributes: attributes, options: []).decision
        // No variation (no rule took the user): no value, which is not an error.
        guard decision.variationKeyCString(in: config) != nil else { return nil }
        guard let variable else { return .bool(decision.enabled(in: config)) }
        return try unwrap(SigmaValues.lookup(variable, in: String(cString: decision.variablesJSON(in: config)),
                                             owner: "flag \"\(entity.key.text)\"", as: wanted))
    }

    /// Every flag the user has a value for (a variation), without impressions:
    /// {"flag": {"enabled": bool, "variation_key": "...", "variables": {...}}, ...} in datafile order.
    public func userFlagsJSON<A: UserAttributes>(config: ProjectConfig, userId: UTF8Text, attributes: A) -> String {
        var writer = JSONWriter()
        writer.beginObject()
        // Flag by flag rather than decideAll: a default ENABLED_FLAGS_ONLY must not hide disabled values.
        for flag in config.flags.indices {
            let decision = decide(config: config, flag: flag, userId: userId, attributes: attributes,
                                  options: .disableDecisionEvent).decision
            guard let variationKey = decision.variationKeyCString(in: config) else { continue }
            writer.key(config.flags[Int(decision.flag)].key.text)
            writer.beginObject()
            writer.field("enabled", decision.enabled(in: config))
            writer.field("variation_key", String(cString: variationKey))
            writer.key("variables")
            writer.raw(String(cString: decision.variablesJSON(in: config)))
            writer.endObject()
        }
        writer.endObject()
        return writer.text
    }

    public func userExperiments<A: UserAttributes>(config: ProjectConfig, userId: UTF8Text, attributes: A)
        -> [ExperimentMembership]
    {
        withSigmaService(config: config, userId: userId, attributes: attributes) { $0.experimentMemberships() }
    }

    public func userHoldouts<A: UserAttributes>(config: ProjectConfig, userId: UTF8Text, attributes: A) -> [Int32] {
        withSigmaService(config: config, userId: userId, attributes: attributes) { $0.holdoutMemberships() }
    }

    /// The user's place in experiment `index`, or nil when the user is not in it.
    public func userExperiment<A: UserAttributes>(config: ProjectConfig, experiment index: Int, userId: UTF8Text,
                                                  attributes: A) -> UserExperiment?
    {
        withSigmaService(config: config, userId: userId, attributes: attributes) { $0.experimentMembership(index) }
            .map { UserExperiment(config: config, membership: $0) }
    }

    public func isInHoldout<A: UserAttributes>(config: ProjectConfig, holdout index: Int, userId: UTF8Text,
                                               attributes: A) -> Bool
    {
        withSigmaService(config: config, userId: userId, attributes: attributes) { $0.isInHoldout(index) }
    }
}

/// The sticky assignments a summary reads: the user's saved profile when the client has a store.
struct SummaryAssignments: StickyAssignments {
    let tracker: ProfileTracker?
    var isActive: Bool { tracker != nil }
    func savedVariation(experimentId: String) -> String? { tracker?.savedVariation(experimentId: experimentId) }
    func record(experimentId: String, variationId: String) { tracker?.record(experimentId: experimentId, variationId: variationId) }
}

/// Sigma's string and JSON forms of a user's experiments and holdouts.
public enum SigmaReport {
    public static func experimentsString(_ memberships: [ExperimentMembership], in config: ProjectConfig) -> String {
        SigmaFormats.experiments(memberships.map { (config.experiments[Int($0.experiment)].id.text, Int($0.variation)) })
    }

    /// [{"id": "...", "key": "...", "group_index": n, "variation_id": "...", "variation_key": "..."}, ...]
    public static func experimentsJSON(_ memberships: [ExperimentMembership], in config: ProjectConfig) -> String {
        var writer = JSONWriter()
        writer.beginArray()
        for membership in memberships {
            writeExperiment(config.experiments[Int(membership.experiment)], variation: Int(membership.variation),
                            parametersJSON: nil, into: &writer)
        }
        writer.endArray()
        return writer.text
    }

    public static func experimentJSON(_ experiment: UserExperiment?) -> String {
        guard let experiment else { return "null" }
        var writer = JSONWriter()
        writeExperiment(experiment.entity, variation: experiment.variation, parametersJSON: experiment.parametersJSON,
                        into: &writer)
        return writer.text
    }

    private static func writeExperiment(_ experiment: Experiment, variation: Int, parametersJSON: String?,
                                        into writer: inout JSONWriter) {
        writer.beginObject()
        writer.field("id", experiment.id.text)
        writer.field("key", experiment.key.text)
        writer.key("group_index"); writer.int(Int64(variation))
        writer.field("variation_id", experiment.variations[variation].id.text)
        writer.field("variation_key", experiment.variations[variation].key.text)
        if let parametersJSON { writer.key("parameters"); writer.raw(parametersJSON) }
        writer.endObject()
    }

    public static func holdoutsString(_ holdouts: [Int32], in config: ProjectConfig) -> String {
        SigmaFormats.holdouts(holdouts.map { config.holdouts[Int($0)].id.text })
    }

    /// [{"id": "...", "key": "...", "group_index": 0}, ...]
    public static func holdoutsJSON(_ holdouts: [Int32], in config: ProjectConfig) -> String {
        var writer = JSONWriter()
        writer.beginArray()
        for index in holdouts {
            writer.beginObject()
            writer.field("id", config.holdouts[Int(index)].id.text)
            writer.field("key", config.holdouts[Int(index)].key.text)
            writer.key("group_index"); writer.int(0)
            writer.endObject()
        }
        writer.endArray()
        return writer.text
    }
}

// MARK: - Sigma user properties

extension Client {
    /// Sigma setUserProperties (`replace`) or editUserProperties: `properties` are checked Sigma keys with
    /// their values (null: absent / remove). With bucket_by_profile_id, profile_id is mirrored into
    /// $opt_bucketing_id so bucketing uses it.
    public func applySigmaProperties(userId: String, _ properties: [(key: String, value: OwnedValue)], replace: Bool) {
        var changes: [(key: [UInt8], value: OwnedValue?)] = properties.map { property in
            (Array(property.key.utf8), property.value == .null ? nil : property.value)
        }
        if options.bucketByProfileId, let profile = changes.last(where: { $0.key.elementsEqual(SigmaProperties.profileId.utf8) }) {
            changes.append((Array(SigmaProperties.bucketingId.utf8), profile.value))
        }
        if replace {
            self.properties.replace(userId: userId, with: changes)
        } else {
            self.properties.update(userId: userId, changes)
        }
    }
}
