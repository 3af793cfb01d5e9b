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
        public let id: UTF8Text
        public let traffic: UnsafeBufferPointer<TrafficRange>
    }

    public struct Group: BitwiseCopyable {
        public let id: UTF8Text
        public let traffic: UnsafeBufferPointer<TrafficRange>
    }

    public struct Flag: BitwiseCopyable {
        /// The flag's rules are `rules[firstRule ..< firstRule + ruleCount]`, experiment rules first.
        public let firstRule: Int32
        public let ruleCount: Int32
        public let experimentRuleCount: Int32
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

    init(experiments: [ExperimentCore.Experiment], groups: [ExperimentCore.Group], flags: [ExperimentCore.Flag],
         conditions: ConditionForest, storage: StringStorage)
    {
        self.experiments = storage.store(experiments.map { experiment in
            Experiment(isRunning: experiment.isRunning, isTargetedDelivery: experiment.type == "td",
                       hasWhitelist: experiment.whitelist != nil, group: experiment.group,
                       audienceRoot: experiment.audience?.root ?? -1, id: experiment.id.bytes,
                       traffic: storage.store(experiment.traffic))
        })
        self.groups = storage.store(groups.map { Group(id: $0.id.bytes, traffic: storage.store($0.traffic)) })
        var hotFlags: [Flag] = []
        var hotRules: [Rule] = []
        for flag in flags {
            hotFlags.append(Flag(firstRule: Int32(hotRules.count), ruleCount: Int32(flag.rules.count),
                                 experimentRuleCount: Int32(flag.experimentRuleCount)))
            for rule in flag.rules {
                hotRules.append(Rule(experiment: rule.experiment, hasHoldouts: !rule.holdouts.isEmpty,
                                     flagVariationOf: storage.store(rule.flagVariationOf)))
            }
        }
        self.flags = storage.store(hotFlags)
        self.rules = storage.store(hotRules)
        self.conditions = conditions.tables(in: storage)
    }
}
