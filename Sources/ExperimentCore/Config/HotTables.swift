/// What the decision path reads, as trivial values in memory the config owns.
///
/// The entity classes (`Experiment`, `Flag`, ...) stay the source of truth and serve the rare paths
/// (whitelists, holdouts, forced decisions, reasons, events). A decision walks these tables instead:
/// loading from them touches no reference counts, which is most of what a decision would otherwise cost.
public struct HotTables: @unchecked Sendable {
    public struct Experiment: BitwiseCopyable {
        public let isRunning: Bool
        public let isTargetedDelivery: Bool
        public let hasWhitelist: Bool
        /// Index into `groups` of its random-policy group, or -1.
        public let group: Int32
        /// Root of its audience tree in the condition forest, or -1 when everyone qualifies.
        public let audienceRoot: Int32
        /// Followed by 8 zero bytes (see `zeroPadded`).
        public let id: UTF8Text
        public let traffic: UnsafeBufferPointer<TrafficRange>
        /// The experiment's key and its variations, for filling a decision.
        public let key: UnsafePointer<CChar>
        public let variations: UnsafeBufferPointer<Choice>
        /// A CMAB experiment (`Experiment.cmab`): a prediction service names its variation.
        public let isCMAB: Bool
    }

    /// A variation as a decision reports it (an experiment's variation, or a flag's with its variables).
    public struct Choice: BitwiseCopyable {
        public let key: UnsafePointer<CChar>
        public let featureEnabled: Bool
        /// A flag variation's variables JSON (as `FlagVariation.variablesJSON`); nil for an experiment's.
        public let variablesJSON: UnsafePointer<CChar>?
    }

    public struct Group: BitwiseCopyable {
        /// Followed by 8 zero bytes (see `zeroPadded`).
        public let id: UTF8Text
        public let traffic: UnsafeBufferPointer<TrafficRange>
    }

    public struct Flag: BitwiseCopyable {
        /// The flag's rules are `rules[firstRule ..< firstRule + ruleCount]`, experiment rules first.
        public let firstRule: Int32
        public let ruleCount: Int32
        public let experimentRuleCount: Int32
        /// As `Flag.key`, `Flag.defaultVariablesJSON` and `Flag.flagVariations`.
        public let key: UnsafePointer<CChar>
        public let defaultVariablesJSON: UnsafePointer<CChar>
        public let variations: UnsafeBufferPointer<Choice>
        /// One of its experiment rules is a CMAB experiment: deciding it may ask the prediction service.
        public let hasCMABRule: Bool
    }

    public struct Rule: BitwiseCopyable {
        public let experiment: Int32
        public let hasHoldouts: Bool
        /// For each variation index of the rule's experiment, its index among the flag's variations.
        public let flagVariationOf: UnsafeBufferPointer<Int32>
    }

    public let experiments: UnsafeBufferPointer<Experiment>
    public let groups: UnsafeBufferPointer<Group>
    public let flags: UnsafeBufferPointer<Flag>
    public let rules: UnsafeBufferPointer<Rule>
    public let conditions: ConditionForest.Tables
    /// The config's running global holdouts (indices into its holdouts), as `ProjectConfig.globalHoldouts`.
    public let globalHoldouts: UnsafeBufferPointer<Int32>

    init(experiments: [ExperimentCore.Experiment], groups: [ExperimentCore.Group], flags: [ExperimentCore.Flag],
         globalHoldouts: [Int32], conditions: ConditionForest, storage: StringStorage)
    {
        self.globalHoldouts = storage.store(globalHoldouts)
        self.experiments = storage.store(experiments.map { experiment in
            // The reference does not bucket for a blank key, not even into its group: no group, no ranges.
            let bucketed = Bucketing.bucketsFor(key: experiment.key.text)
            return Experiment(isRunning: experiment.isRunning, isTargetedDelivery: experiment.type == "td",
                       hasWhitelist: experiment.whitelist != nil, group: bucketed ? experiment.group : -1,
                       audienceRoot: experiment.audience?.root ?? -1,
                       id: Self.zeroPadded(experiment.id.bytes, in: storage),
                       traffic: storage.store(bucketed ? experiment.traffic : Bucketing.neverBucketed),
                       key: experiment.key.cString,
                       variations: storage.store(experiment.variations.map {
                           Choice(key: $0.key.cString, featureEnabled: $0.featureEnabled, variablesJSON: nil)
                       }), isCMAB: experiment.cmab != nil)
        })
        self.groups = storage.store(groups.map {
            Group(id: Self.zeroPadded($0.id.bytes, in: storage), traffic: storage.store($0.traffic))
        })
        var hotFlags: [Flag] = []
        var hotRules: [Rule] = []
        for flag in flags {
            hotFlags.append(Flag(firstRule: Int32(hotRules.count), ruleCount: Int32(flag.rules.count),
                                 experimentRuleCount: Int32(flag.experimentRuleCount), key: flag.key.cString,
                                 defaultVariablesJSON: flag.defaultVariablesJSON,
                                 variations: storage.store(flag.flagVariations.map {
                                     Choice(key: $0.key.cString, featureEnabled: $0.featureEnabled,
                                            variablesJSON: $0.variablesJSON)
                                 }), hasCMABRule: flag.rules.prefix(flag.experimentRuleCount).contains {
                                     experiments[Int($0.experiment)].cmab != nil
                                 }))
            for rule in flag.rules {
                hotRules.append(Rule(experiment: rule.experiment, hasHoldouts: !rule.holdouts.isEmpty,
                                     flagVariationOf: storage.store(rule.flagVariationOf)))
            }
        }
        self.flags = storage.store(hotFlags)
        self.rules = storage.store(hotRules)
        self.conditions = conditions.tables(in: storage)
    }

    /// A copy of `bytes` followed by 8 zero bytes, so bucketing can read the id's last bytes as a word
    /// (MurmurHash3.x86_32(concatenating:zeroPadded:seed:)).
    private static func zeroPadded(_ bytes: UTF8Text, in storage: StringStorage) -> UTF8Text {
        let padded = storage.store(Array(bytes) + [UInt8](repeating: 0, count: 8))
        return UTF8Text(start: padded.baseAddress, count: bytes.count)
    }
}
