/// A compiled, immutable Optimizely v4 datafile: everything a decision needs, indexed for the hot path.
///
/// Built once per datafile by `DatafileCompiler`, then shared read-only by every thread (hence
/// `@unchecked Sendable`: all stored properties are `let`, and `StringStorage` is never mutated after
/// compilation). Entities refer to each other by array index, never by string lookup at decision time.
public final class ProjectConfig: @unchecked Sendable {
    public let version: String
    public let revision: String
    public let projectId: String
    public let accountId: String
    public let environmentKey: String?
    public let sdkKey: String?
    public let anonymizeIP: Bool
    /// The datafile's "anonymizeIP" as the reference sends it in events (`anonymize_ip`): its JSON value
    /// whatever the type (the reference does not check it), written as Python's json.dumps writes it;
    /// "false" when absent.
    public let anonymizeIPJSON: String
    public let sendFlagDecisions: Bool
    public let botFiltering: Bool?
    public let region: String
    /// The "odp" entry of "integrations" (the first one, as in the reference): nil when absent.
    public let odpIntegration: ODPIntegration?
    /// Every real-time segment the audiences' `qualified` conditions use (the segments to fetch), in
    /// audience order without repeats.
    public let segments: [String]

    public let experiments: [Experiment]
    public let groups: [Group]
    public let audiences: [Audience]
    /// Every audience condition tree, flattened.
    public let conditions: ConditionForest
    public let flags: [Flag]
    public let events: [Event]
    public let attributes: [Attribute]
    public let holdouts: [Holdout]
    /// Indices into `holdouts` of running global holdouts, in datafile order.
    public let globalHoldouts: [Int32]

    public let flagIndex: KeyIndex
    /// What decide_all decides when a flag key repeats in "featureFlags" (nil when none does: every flag
    /// once, in datafile order). The reference decides every entry's key, through its map by key (the last
    /// entry), and answers once per key at its first entry's place: see `RepeatedFlagKey`.
    public let repeatedFlagKeys: [RepeatedFlagKey]?
    /// With `repeatedFlagKeys`: for each "featureFlags" entry in datafile order, the index of its key in
    /// `repeatedFlagKeys`. The reference decides (and dispatches impressions) entry by entry in this order.
    public let repeatedFlagKeyOrder: [Int]
    public let experimentKeyIndex: KeyIndex
    public let experimentIdIndex: KeyIndex
    public let eventKeyIndex: KeyIndex
    public let attributeKeyIndex: KeyIndex

    /// Owns the C strings that decisions hand out, and the hot tables' memory.
    public let strings: StringStorage
    /// Trivial mirrors of what the decision path reads (see HotTables).
    public let hot: HotTables
    /// Whether a flag has a CMAB experiment rule (`HotTables.Flag.hasCMABRule`; decide_all then answers CMAB
    /// error decisions first).
    public let hasCMABRules: Bool
    /// What the compiler found odd but the reference accepts (severity `.warning`, with its place), in
    /// datafile order: a stale audience id, a range past 10000... The config decides as the reference does.
    public let warnings: [DatafileError]

    init(header: Header, experiments: [Experiment], groups: [Group], audiences: [Audience],
         conditions: ConditionForest, flags: [Flag],
         events: [Event], attributes: [Attribute], holdouts: [Holdout], globalHoldouts: [Int32],
         indexes: Indexes, strings: StringStorage, warnings: [DatafileError] = [])
    {
        self.warnings = warnings
        version = header.version
        revision = header.revision
        projectId = header.projectId
        accountId = header.accountId
        environmentKey = header.environmentKey
        sdkKey = header.sdkKey
        anonymizeIP = header.anonymizeIP
        anonymizeIPJSON = header.anonymizeIPJSON
        sendFlagDecisions = header.sendFlagDecisions
        botFiltering = header.botFiltering
        region = header.region
        odpIntegration = header.odpIntegration
        var seen: ExactKeyed<Bool> = [:]
        segments = audiences.flatMap(\.segments).filter { segment in
            defer { seen[segment] = true }
            return seen[segment] == nil
        }
        self.experiments = experiments
        self.groups = groups
        self.audiences = audiences
        self.conditions = conditions
        self.flags = flags
        self.events = events
        self.attributes = attributes
        self.holdouts = holdouts
        self.globalHoldouts = globalHoldouts
        flagIndex = indexes.flags
        (repeatedFlagKeys, repeatedFlagKeyOrder) = RepeatedFlagKey.plan(flags, index: indexes.flags)
        experimentKeyIndex = indexes.experimentKeys
        experimentIdIndex = indexes.experimentIds
        eventKeyIndex = indexes.events
        attributeKeyIndex = indexes.attributes
        self.strings = strings
        hot = HotTables(experiments: experiments, groups: groups, flags: flags, globalHoldouts: globalHoldouts,
                        conditions: conditions, storage: strings)
        hasCMABRules = hot.flags.contains { $0.hasCMABRule }
    }

    struct Header {
        var version = "4", revision = "", projectId = "", accountId = ""
        var environmentKey: String? = nil, sdkKey: String? = nil
        var anonymizeIP = false, sendFlagDecisions = false
        var anonymizeIPJSON = "false"
        var botFiltering: Bool? = nil
        var region = "US"
        var odpIntegration: ODPIntegration? = nil
    }

    struct Indexes {
        var flags = KeyIndex(capacity: 8), experimentKeys = KeyIndex(capacity: 8)
        var experimentIds = KeyIndex(capacity: 8), events = KeyIndex(capacity: 8)
        var attributes = KeyIndex(capacity: 8)
    }
}

/// One key of decide_all when a flag key repeats: the flag it names (its last entry) and how many
/// "featureFlags" entries have the key (the reference decides it that many times).
public struct RepeatedFlagKey: Sendable, Equatable {
    public let flag: Int
    public var entries: Int

    /// The keys (first-entry order) and, per "featureFlags" entry, its key's place among them.
    static func plan(_ flags: [Flag], index: KeyIndex) -> ([RepeatedFlagKey]?, [Int]) {
        // Every flag in the index under a key of its own: no key repeats (a keyless flag is not in it).
        if index.count == flags.count { return (nil, []) }
        var place: ExactKeyed<Int> = [:]
        var plan: [RepeatedFlagKey] = []
        var order: [Int] = []
        for flag in flags {
            if let at = place[flag.key.text] {
                plan[at].entries += 1
                order.append(at)
            } else {
                place[flag.key.text] = plan.count
                order.append(plan.count)
                plan.append(RepeatedFlagKey(flag: index.find(flag.key.text) ?? plan.count, entries: 1))
            }
        }
        return plan.count == flags.count ? (nil, []) : (plan, order)
    }
}

/// Where the real-time segments service (ODP) of the project lives: the datafile's integrations entry
/// with key "odp". Either field may be missing, which leaves ODP not integrated.
public struct ODPIntegration: Sendable, Equatable {
    public let host: String?
    public let publicKey: String?
}

public struct Variation: Sendable {
    public let id: ConfigString
    public let key: ConfigString
    public let featureEnabled: Bool
    /// Variable values by variable id, as written in the datafile.
    public let variableValues: [VariableValue]
}

/// One range of a traffic allocation: bucket values below `endOfRange` (and at or above the previous
/// range's end) go to `entity` — a variation index for experiments, an experiment index for groups —
/// or nowhere when `entity` is -1 (an unallocated "" range or an id the entity does not have).
public struct VariableValue: Sendable {
    public let id: String
    public let value: String
    /// The value when the datafile's is not a string (the reference keeps and typecasts it as it is).
    public var literal: VariableLiteral? = nil
}

public struct TrafficRange: Sendable, BitwiseCopyable {
    public let endOfRange: Int32
    /// The index of the variation (or of the group's experiment), or one of the negative values below.
    public let entity: Int32

    /// An empty "entityId": no entity (the reference's "Bucketed into an empty traffic range").
    public static let emptyEntity: Int32 = -1
    /// An "entityId" naming no entity here: no entity either, but the reference words it differently.
    public static let unknownEntity: Int32 = -2
    /// Every bucket of an experiment or holdout whose key the reference refuses to bucket for
    /// (`Bucketing.bucketsFor(key:)`).
    public static let notBucketed: Int32 = -3
}

public enum RuleKind: Sendable {
    /// Listed in "experiments" or a group: an A/B test (or a flag's experiment rule).
    case experiment
    /// A targeted-delivery rule of a rollout.
    case rolloutRule
}

/// A class, not a struct: decisions read it from the config without copying its fields.
public final class Experiment: @unchecked Sendable {
    public let id: ConfigString
    public let key: ConfigString
    public let layerId: String
    public let isRunning: Bool
    public let kind: RuleKind
    /// The datafile's "type" ("ab", "td", "fr", ...), empty when absent.
    public let type: String
    /// nil: no audience restriction (an empty list), everyone qualifies.
    public let audience: AudienceCondition?
    public let variations: [Variation]
    public let traffic: [TrafficRange]
    /// Whitelisted users ("forcedVariations"): user id -> variation index.
    public let whitelist: KeyIndex?
    /// Index of the random-policy group this experiment belongs to, or -1.
    public let group: Int32
    public let groupId: String
    /// The datafile's "cmab" object when it makes this a CMAB experiment (see `CMAB`), else nil.
    public let cmab: CMABSettings?
    /// The datafile's "id" as JSON when it is no string (a rollout rule's, outside the schema): impressions
    /// carry it as it is, as the reference's do. Nil for a string id. Set by the compiler only.
    public internal(set) var idJSON: String? = nil
    /// Python's truth of the datafile's "id" (text: not empty; a number: not zero; true; never false or
    /// null): the reference re-reads a decided variation only `if variation_id and experiment_id`.
    /// Set by the compiler for an id that is no string.
    public internal(set) var idIsTruthy: Bool
    /// A delivery rule decided with another entity's definition of its id (see `Compilation.placedRule`):
    /// that definition's key, which the reference's bucketer names in a group's reasons. Nil otherwise.
    public internal(set) var definitionKey: ConfigString? = nil

    /// A copy with other variations, traffic or whitelist (the compiler's late adjustments; configs
    /// themselves never change once built).
    func with(variations: [Variation]? = nil, traffic: [TrafficRange]? = nil, whitelist: KeyIndex? = nil) -> Experiment {
        let copy = Experiment(id: id, key: key, layerId: layerId, isRunning: isRunning, kind: kind, type: type,
                              audience: audience, variations: variations ?? self.variations,
                              traffic: traffic ?? self.traffic, whitelist: whitelist ?? self.whitelist, group: group,
                              groupId: groupId, cmab: cmab)
        copy.idJSON = idJSON
        copy.idIsTruthy = idIsTruthy
        copy.definitionKey = definitionKey
        return copy
    }

    /// By id the last definition wins too, as in the reference's id map (built from its key map).
    public func variationIndex(id: String) -> Int? { variations.lastIndex { $0.id.text.sameCodePoints(id) } }
    /// By key the last definition wins (an "fr" experiment's appended everyone-else variation shadows
    /// a variation with the same key), as in the reference's key map.
    public func variationIndex(key: String) -> Int? { variations.lastIndex { $0.key.text.sameCodePoints(key) } }

    public init(id: ConfigString, key: ConfigString, layerId: String, isRunning: Bool, kind: RuleKind,
                type: String, audience: AudienceCondition?, variations: [Variation], traffic: [TrafficRange],
                whitelist: KeyIndex?, group: Int32, groupId: String, cmab: CMABSettings? = nil) {
        self.cmab = cmab
        self.id = id
        self.key = key
        self.layerId = layerId
        self.isRunning = isRunning
        self.kind = kind
        self.type = type
        self.audience = audience
        self.variations = variations
        self.traffic = traffic
        self.whitelist = whitelist
        self.group = group
        self.groupId = groupId
        idIsTruthy = !id.text.isEmpty
    }
}

public struct Group: Sendable {
    public let id: ConfigString
    public let traffic: [TrafficRange]
}

/// A class, not a struct: decisions read it from the config without copying its fields.
public final class Holdout: @unchecked Sendable {
    public let id: ConfigString
    public let key: ConfigString
    public let isRunning: Bool
    public let audience: AudienceCondition?
    public let variations: [Variation]
    public let traffic: [TrafficRange]
    public let excludeTargetedDeliveries: Bool
    /// The datafile's "id" as JSON when it is no string (see `Experiment.idJSON`). Set by the compiler only.
    public internal(set) var idJSON: String? = nil
    /// Python's truth of the datafile's "id" (see `Experiment.idIsTruthy`). Set by the compiler only.
    public internal(set) var idIsTruthy: Bool
    public init(id: ConfigString, key: ConfigString, isRunning: Bool, audience: AudienceCondition?,
                variations: [Variation], traffic: [TrafficRange], excludeTargetedDeliveries: Bool) {
        self.id = id
        self.key = key
        self.isRunning = isRunning
        self.audience = audience
        self.variations = variations
        self.traffic = traffic
        self.excludeTargetedDeliveries = excludeTargetedDeliveries
        idIsTruthy = !id.text.isEmpty
    }

    /// A copy with other traffic (the compiler's late adjustment, as `Experiment.with`).
    func with(traffic: [TrafficRange]) -> Holdout {
        let copy = Holdout(id: id, key: key, isRunning: isRunning, audience: audience, variations: variations,
                           traffic: traffic, excludeTargetedDeliveries: excludeTargetedDeliveries)
        copy.idJSON = idJSON
        copy.idIsTruthy = idIsTruthy
        return copy
    }
}

public struct Event: Sendable {
    public let id: String
    public let key: String
}

public struct Attribute: Sendable {
    public let id: String
    public let key: String
}

public enum VariableType: String, Sendable {
    case boolean, integer, double, string, json
}

public struct Variable: Sendable {
    public let id: String
    public let key: String
    public let type: VariableType
    public let defaultValue: String
    /// The default when the datafile's is not a string (typecast as it is, as the reference does).
    public var defaultLiteral: VariableLiteral? = nil
}

/// A class, not a struct: decisions read it from the config without copying its fields.
public final class Flag: @unchecked Sendable {
    public let id: String
    public let key: ConfigString
    /// The flag's experiment rules first, then its rollout's delivery rules, in evaluation order.
    public let rules: [FlagRule]
    /// How many of `rules` are experiment rules (the rest are rollout rules).
    public let experimentRuleCount: Int
    /// The flag's "rolloutId" as the reference's reasons describe it.
    public let rollout: FlagRollout
    public let variables: [Variable]
    /// Every variation reachable from the flag's rules, unique by id, in rule order
    /// (the reference's flag variations: forced decisions and impression metadata use them).
    public let flagVariations: [FlagVariation]
    /// The variables JSON when the flag is off or variables come from defaults only.
    public nonisolated(unsafe) let defaultVariablesJSON: UnsafePointer<CChar>
    /// The variables JSON of an enabled holdout variation. The reference looks a holdout variation's
    /// values up among the experiments' variations, finds none and typecasts nothing: booleans come out
    /// false, every other type null.
    public nonisolated(unsafe) let holdoutVariablesJSON: UnsafePointer<CChar>
    /// The variables JSON of an enabled holdout variation whose id an experiment's or rule's variation also
    /// has (usually none): the reference's table of values by variation id then has the id, so the values
    /// are that variation's, defaults where it gives none.
    public nonisolated(unsafe) let holdoutVariablesJSONBySharedId: [(id: String, json: UnsafePointer<CChar>)]
    public init(id: String, key: ConfigString, rules: [FlagRule], experimentRuleCount: Int, rollout: FlagRollout,
                variables: [Variable], flagVariations: [FlagVariation],
                defaultVariablesJSON: UnsafePointer<CChar>, holdoutVariablesJSON: UnsafePointer<CChar>,
                holdoutVariablesJSONBySharedId: [(id: String, json: UnsafePointer<CChar>)] = []) {
        self.id = id
        self.rollout = rollout
        self.key = key
        self.rules = rules
        self.experimentRuleCount = experimentRuleCount
        self.variables = variables
        self.flagVariations = flagVariations
        self.defaultVariablesJSON = defaultVariablesJSON
        self.holdoutVariablesJSON = holdoutVariablesJSON
        self.holdoutVariablesJSONBySharedId = holdoutVariablesJSONBySharedId
    }

    /// The variables JSON of an enabled holdout variation with id `variationId`.
    public func holdoutVariablesJSON(variationId: String) -> UnsafePointer<CChar> {
        if holdoutVariablesJSONBySharedId.isEmpty { return holdoutVariablesJSON }
        return holdoutVariablesJSONBySharedId.first { $0.id.sameCodePoints(variationId) }?.json ?? holdoutVariablesJSON
    }
}

/// A flag's "rolloutId": empty, naming no rollout of the datafile, or naming one.
public enum FlagRollout: Sendable {
    case none
    case missing
    case found(id: String)
}

public struct FlagRule: Sendable {
    public let experiment: Int32
    /// Running local holdouts that target this rule ("localHoldouts" with this rule in includedRules).
    public let holdouts: [Int32]
    /// For each variation index of the rule's experiment, its index in the flag's `flagVariations`.
    public let flagVariationOf: [Int32]
}

/// A variation as the flag knows it, with its precomputed variables JSON.
public struct FlagVariation: Sendable {
    public let id: String
    public let key: ConfigString
    public let featureEnabled: Bool
    /// The flag's variables with this variation's values (used when the variation is enabled).
    public nonisolated(unsafe) let variablesJSON: UnsafePointer<CChar>
}

extension ProjectConfig {
    /// Whether a flag lists the experiment with this id among its "experimentIds" (the reference's
    /// is_feature_experiment). Scans the flags: for notifications only, never on a decision's path.
    public func isFeatureExperiment(id: String) -> Bool {
        flags.contains { flag in
            flag.rules.prefix(flag.experimentRuleCount).contains { experiments[Int($0.experiment)].id.text.sameCodePoints(id) }
        }
    }

    /// The entity_id an event gives the attribute `key`, or nil when the event leaves it out: the datafile's
    /// attribute (the last one with that key) unless its id is empty (false to the reference's
    /// `if attribute_id:`), else a key with the reserved "$opt_" prefix names itself.
    public func attributeId(forKey key: String) -> String? {
        if let index = attributeKeyIndex.find(key) {
            let id = attributes[index].id
            return id.isEmpty ? nil : id
        }
        return key.hasPrefix("$opt_") ? key : nil
    }
}
