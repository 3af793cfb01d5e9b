/// Decides flags and experiments for one user against one compiled config, in the reference SDK's
/// order: flag-level forced decision, global holdouts, the flag's experiment rules (forced decision,
/// local holdouts, running status, forced variation, whitelist, audiences, group, traffic), then the
/// rollout's delivery rules with the everyone-else rule last.
///
/// A value type built per call on the stack; generic over the runtime's attribute and override sources
/// so the hot path is specialized and allocation-free (unless reasons are collected).
public struct DecisionService<Attributes: UserAttributes, Overrides: DecisionOverrides, Sticky: StickyAssignments> {
    /// Not retained: a service lives within one call whose caller holds the config, and retaining it
    /// would write to the config's reference count, memory every deciding thread shares.
    public unowned(unsafe) let config: ProjectConfig
    public let userId: UTF8Text
    public let attributes: Attributes
    public let overrides: Overrides
    public let sticky: Sticky
    /// Not retained: the caller owns the log (nil unless reasons are collected) and keeps it alive while the
    /// service runs. With only trivial fields (for trivial attribute, override and sticky types) destroying a
    /// service costs nothing; an owned optional log made every decision pay for a generic destroy through
    /// the type's metadata.
    @usableFromInline let reasonLog: Unmanaged<ReasonLog>?
    /// Tested for nil before any reference is formed: a decision without reasons makes no retain call.
    public var reasons: ReasonLog? {
        @inline(__always) get { reasonLog?.takeUnretainedValue() }
    }

    @inlinable @inline(__always)
    public init(config: ProjectConfig, userId: UTF8Text, attributes: Attributes, overrides: Overrides,
                sticky: Sticky, reasons: ReasonLog?)
    {
        self.config = config
        self.userId = userId
        self.attributes = attributes
        self.overrides = overrides
        self.sticky = sticky
        self.reasonLog = reasons.map { Unmanaged.passUnretained($0) }
    }

    var userText: String { String(decoding: userId, as: UTF8.self) }
}

extension DecisionService where Sticky == NoStickyAssignments {
    /// A stateless decision (no sticky bucketing).
    public init(config: ProjectConfig, userId: UTF8Text, attributes: Attributes, overrides: Overrides,
                reasons: ReasonLog?)
    {
        self.init(config: config, userId: userId, attributes: attributes, overrides: overrides,
                  sticky: NoStickyAssignments(), reasons: reasons)
    }
}

extension DecisionService {

    // MARK: flags

    public func decide(flag flagIndex: Int) -> FlagDecision {
        var decision = FlagDecision(flag: Int32(flagIndex))
        if let forced = forcedFlagVariation(flag: flagIndex, rule: nil) {
            decision.source = .featureTest
            decision.flagVariation = forced
            return decision
        }
        for holdoutIndex in config.hot.globalHoldouts {
            guard let variation = holdoutVariation(Int(holdoutIndex)) else { continue }
            let holdout = config.holdouts[Int(holdoutIndex)]
            reasons?.add("The user '\(userText)' is bucketed into holdout '\(holdout.key.text)' for feature flag '\(config.flags[flagIndex].key.text)'.")
            guard holdout.excludeTargetedDeliveries else {
                return holdoutDecision(decision, holdout: holdoutIndex, variation: variation)
            }
            reasons?.add("Holdout '\(holdout.key.text)' excludes targeted deliveries. Targeted delivery rules will be evaluated.")
            decision.exclusionHoldout = holdoutIndex
            decision.exclusionHoldoutVariation = variation
            break
        }
        if let decided = decideExperimentRules(flag: flagIndex, base: decision) { return decided }
        if decision.exclusionHoldout >= 0 {
            reasons?.add("Holdout \"\(config.holdouts[Int(decision.exclusionHoldout)].key.text)\" has excludeTargetedDeliveries enabled, continuing to rollout evaluation.")
        }
        return decideRolloutRules(flag: flagIndex, base: decision)
    }

    private func decideExperimentRules(flag flagIndex: Int, base: FlagDecision) -> FlagDecision? {
        let flag = config.hot.flags[flagIndex]
        for slot in 0..<Int(flag.experimentRuleCount) {
            let rule = config.hot.rules[Int(flag.firstRule) + slot]
            if base.exclusionHoldout >= 0 && !config.hot.experiments[Int(rule.experiment)].isTargetedDelivery { continue }
            var decision = base
            decision.source = .featureTest
            decision.experiment = rule.experiment
            if let forced = forcedFlagVariation(flag: flagIndex, rule: slot) {
                decision.flagVariation = forced
                return decision
            }
            if rule.hasHoldouts, let caught = localHoldoutDecision(flag: flagIndex, slot: slot, ruleKind: "experiment rule", base: base) {
                return caught
            }
            if case .variation(let variation) = outcome(experiment: Int(rule.experiment)) {
                decision.variation = variation
                decision.flagVariation = rule.flagVariationOf[Int(variation)]
                return decision
            }
        }
        return nil
    }

    private func decideRolloutRules(flag flagIndex: Int, base: FlagDecision) -> FlagDecision {
        let flag = config.hot.flags[flagIndex]
        var decision = base
        decision.source = .rollout
        let first = Int(flag.experimentRuleCount), last = Int(flag.ruleCount) - 1
        guard first <= last else { return decision }
        let bucketingId = self.bucketingId()
        var slot = first
        while slot <= last {
            let rule = config.hot.rules[Int(flag.firstRule) + slot]
            let experiment = config.hot.experiments[Int(rule.experiment)]
            if let forced = forcedFlagVariation(flag: flagIndex, rule: slot) {
                decision.experiment = rule.experiment
                decision.flagVariation = forced
                return decision
            }
            if rule.hasHoldouts, let caught = localHoldoutDecision(flag: flagIndex, slot: slot, ruleKind: "delivery rule", base: base) {
                return caught
            }
            let everyoneElse = slot == last
            // The rule's name in reasons; not built unless reasons are collected.
            var label: String { everyoneElse ? "Everyone Else" : String(slot - first + 1) }
            guard meetsAudience(experiment.audienceRoot, label: label, ruleLog: "rule") else {
                reasons?.add("User \"\(userText)\" does not meet audience conditions for targeting rule \(label).")
                slot += 1
                continue
            }
            reasons?.add("User \"\(userText)\" meets audience conditions for targeting rule \(label).")
            let variation = bucket(bucketingId, zeroPaddedParent: experiment.id, ranges: experiment.traffic)
            if variation >= 0 {
                reasons?.add("User \"\(userText)\" bucketed into a targeting rule \(label).")
                decision.experiment = rule.experiment
                decision.variation = variation
                decision.flagVariation = rule.flagVariationOf[Int(variation)]
                return decision
            }
            reasons?.add("Bucketed into an empty traffic range. Returning nil.")
            if everyoneElse { break }
            reasons?.add("User \"\(userText)\" not bucketed into a targeting rule \(label). Checking \"Everyone Else\" rule now.")
            slot = last
        }
        return decision
    }

    private func holdoutDecision(_ base: FlagDecision, holdout: Int32, variation: Int32) -> FlagDecision {
        var decision = base
        decision.source = .holdout
        decision.holdout = holdout
        decision.variation = variation
        decision.exclusionHoldout = -1
        decision.exclusionHoldoutVariation = -1
        return decision
    }

    private func localHoldoutDecision(flag flagIndex: Int, slot: Int, ruleKind: StaticString, base: FlagDecision)
        -> FlagDecision?
    {
        let rule = config.flags[flagIndex].rules[slot]
        for holdoutIndex in rule.holdouts {
            guard let variation = holdoutVariation(Int(holdoutIndex)) else { continue }
            reasons?.add("The user '\(userText)' is bucketed into local holdout '\(config.holdouts[Int(holdoutIndex)].key.text)' for \(ruleKind) '\(config.experiments[Int(rule.experiment)].key.text)'.")
            // A local holdout decision stands alone: the reference attaches no global holdout to it.
            return holdoutDecision(base, holdout: holdoutIndex, variation: variation)
        }
        return nil
    }

    /// A forced decision for the flag (rule nil) or one of its rules, resolved among the flag's variations.
    private func forcedFlagVariation(flag flagIndex: Int, rule slot: Int?) -> Int32? {
        guard !overrides.isEmpty else { return nil }
        let flag = config.flags[flagIndex]
        let ruleKey = slot.map { config.experiments[Int(flag.rules[$0].experiment)].key.text }
        guard let variationKey = overrides.forcedDecision(flagKey: flag.key.text, ruleKey: ruleKey) else { return nil }
        if let index = flag.flagVariations.firstIndex(where: { $0.key.text == variationKey }) {
            if let ruleKey {
                reasons?.add("Variation (\(variationKey)) is mapped to flag (\(flag.key.text)), rule (\(ruleKey)) and user (\(userText)) in the forced decision map.")
            } else {
                reasons?.add("Variation (\(variationKey)) is mapped to flag (\(flag.key.text)) and user (\(userText)) in the forced decision map.")
            }
            return Int32(index)
        }
        if let ruleKey {
            reasons?.add("Invalid variation is mapped to flag (\(flag.key.text)), rule (\(ruleKey)) and user (\(userText)) in the forced decision map.")
        } else {
            reasons?.add("Invalid variation is mapped to flag (\(flag.key.text)) and user (\(userText)) in the forced decision map.")
        }
        return nil
    }

    // MARK: experiments

    /// The reference's get_variation for one experiment.
    public func outcome(experiment index: Int) -> ExperimentOutcome {
        let experiment = config.hot.experiments[index]
        guard experiment.isRunning else {
            reasons?.add("Experiment \"\(key(index))\" is not running.")
            return .notRunning
        }
        if !overrides.isEmpty {
            if let membership = overrides.forcedMembership(experimentId: config.experiments[index].id.text) {
                return forcedMembershipOutcome(membership, experiment: index)
            }
            if let forced = forcedVariation(experiment: index) { return .variation(forced) }
        }
        if experiment.hasWhitelist, let whitelisted = config.experiments[index].whitelist?.find(userId) {
            reasons?.add("User \"\(userText)\" is forced in variation \"\(config.experiments[index].variations[whitelisted].key.text)\".")
            return .variation(Int32(whitelisted))
        }
        if sticky.isActive, let saved = savedVariation(experiment: index) { return .variation(saved) }
        guard meetsAudience(experiment.audienceRoot, label: key(index), ruleLog: "experiment") else {
            reasons?.add("User \"\(userText)\" does not meet conditions to be in experiment \"\(key(index))\".")
            return .notTargeted
        }
        let bucketingId = self.bucketingId()
        if experiment.group >= 0 {
            let group = config.hot.groups[Int(experiment.group)]
            let chosen = bucket(bucketingId, zeroPaddedParent: group.id, ranges: group.traffic)
            guard chosen == Int32(index) || (chosen >= 0 && config.hot.experiments[Int(chosen)].id.elementsEqual(experiment.id)) else {
                reasons?.add(chosen < 0 ? "User \"\(userText)\" is in no experiment."
                            : "User \"\(userText)\" is not in experiment \"\(key(index))\" of group \(config.groups[Int(experiment.group)].id.text).")
                return .notAllocated
            }
            reasons?.add("User \"\(userText)\" is in experiment \(key(index)) of group \(config.groups[Int(experiment.group)].id.text).")
        }
        let variation = bucket(bucketingId, zeroPaddedParent: experiment.id, ranges: experiment.traffic)
        guard variation >= 0 else {
            reasons?.add("Bucketed into an empty traffic range. Returning nil.")
            reasons?.add("User \"\(userText)\" is in no variation.")
            return .notAllocated
        }
        reasons?.add("User \"\(userText)\" is in variation \"\(config.experiments[index].variations[Int(variation)].key.text)\" of experiment \(key(index)).")
        if sticky.isActive {
            sticky.record(experimentId: config.experiments[index].id.text,
                          variationId: config.experiments[index].variations[Int(variation)].id.text)
        }
        return .variation(variation)
    }

    /// The user's saved (sticky) variation, when the experiment still has it.
    private func savedVariation(experiment index: Int) -> Int32? {
        let experiment = config.experiments[index]
        guard let variationId = sticky.savedVariation(experimentId: experiment.id.text),
              let saved = experiment.variationIndex(id: variationId) else { return nil }
        // The reference's words ("variation ID", though it prints the key).
        reasons?.add("Returning previously activated variation ID \"\(experiment.variations[saved].key.text)\" of experiment \"\(experiment.key.text)\" for user \"\(userText)\" from user profile.")
        return Int32(saved)
    }

    /// A Sigma forced inclusion or exclusion: audiences, groups and traffic do not apply.
    private func forcedMembershipOutcome(_ membership: ForcedMembership, experiment index: Int) -> ExperimentOutcome {
        let experiment = config.experiments[index]
        switch membership {
        case .excluded:
            reasons?.add("User \"\(userText)\" is force-excluded from experiment \"\(experiment.key.text)\".")
            return .notTargeted
        case .included(let position?) where position >= 0 && position < experiment.variations.count:
            reasons?.add("User \"\(userText)\" is force-included in variation \"\(experiment.variations[position].key.text)\" of experiment \"\(experiment.key.text)\".")
            return .variation(Int32(position))
        case .included:
            guard !experiment.variations.isEmpty else { return .notAllocated }
            if sticky.isActive, let saved = savedVariation(experiment: index) { return .variation(saved) }
            let chosen = bucketIgnoringTraffic(experiment: index)
            reasons?.add("User \"\(userText)\" is force-included in experiment \"\(experiment.key.text)\", variation \"\(experiment.variations[Int(chosen)].key.text)\".")
            return .variation(chosen)
        }
    }

    /// The user's bucket scaled onto the experiment's allocated ranges, so a forced inclusion lands in a
    /// variation in the experiment's proportions even when the user falls outside its traffic.
    private func bucketIgnoringTraffic(experiment index: Int) -> Int32 {
        let hot = config.hot.experiments[index]
        let ranges = hot.traffic
        let allocated = ranges.reduce(0) { $1.entity >= 0 ? max($0, Int($1.endOfRange)) : $0 }
        guard allocated > 0 else { return 0 }
        let hash = MurmurHash3.x86_32(concatenating: UnsafeRawBufferPointer(bucketingId()),
                                      UnsafeRawBufferPointer(hot.id), seed: 1)
        let scaled = Int(Bucketing.bucketValue(hash: hash)) * allocated / 10_000
        for range in ranges where scaled < Int(range.endOfRange) && range.entity >= 0 { return range.entity }
        return 0
    }

    private func key(_ experiment: Int) -> String { config.experiments[experiment].key.text }

    /// A variation forced with set_forced_variation, if the experiment still has it.
    private func forcedVariation(experiment index: Int) -> Int32? {
        let experiment = config.experiments[index]
        guard let variationId = overrides.forcedVariation(experimentId: experiment.id.text),
              let forced = experiment.variationIndex(id: variationId) else { return nil }
        reasons?.add("Variation \"\(experiment.variations[forced].key.text)\" is mapped to experiment \"\(experiment.key.text)\" and user \"\(userText)\" in the forced variation map")
        return Int32(forced)
    }

    /// The variation of a running holdout the user falls into, or nil.
    func holdoutVariation(_ index: Int) -> Int32? {
        let holdout = config.holdouts[index]
        guard holdout.isRunning else { return nil }
        guard meetsAudience(holdout.audience?.root ?? -1, label: holdout.key.text, ruleLog: "experiment") else {
            reasons?.add("User '\(userText)' does not meet the conditions for holdout '\(holdout.key.text)'.")
            return nil
        }
        let variation = holdout.traffic.withUnsafeBufferPointer { bucket(bucketingId(), parent: holdout.id.bytes, ranges: $0) }
        guard variation >= 0 else {
            reasons?.add("User '\(userText)' is not bucketed into any variation for holdout '\(holdout.key.text)'.")
            return nil
        }
        reasons?.add("The user '\(userText)' is bucketed into variation '\(holdout.variations[Int(variation)].key.text)' of holdout '\(holdout.key.text)'.")
        return variation
    }

    // MARK: bucketing

    /// `$opt_bucketing_id` when it is a string, else the user id.
    public func bucketingId() -> UTF8Text {
        let found = attributes.bucketingIdValue()
        switch found {
        case .string(let text)?: return text
        case nil, .null?: return userId
        default:
            reasons?.add("Bucketing ID attribute is not a string. Defaulted to user_id.")
            return userId
        }
    }

    /// MurmurHash3 of bucketing id + parent id, scaled to 10,000 buckets, looked up in the ranges.
    @inlinable
    public func bucket(_ bucketingId: UTF8Text, parent: UTF8Text, ranges: UnsafeBufferPointer<TrafficRange>) -> Int32 {
        let hash = MurmurHash3.x86_32(concatenating: UnsafeRawBufferPointer(bucketingId), UnsafeRawBufferPointer(parent),
                                      seed: 1)
        let value = Bucketing.bucketValue(hash: hash)
        for range in ranges where value < range.endOfRange { return range.entity }
        return -1
    }

    /// `bucket` for a parent id from the hot tables (followed by zero bytes): the same result, hashed faster.
    @inlinable
    public func bucket(_ bucketingId: UTF8Text, zeroPaddedParent parent: UTF8Text,
                       ranges: UnsafeBufferPointer<TrafficRange>) -> Int32 {
        let hash = MurmurHash3.x86_32(concatenating: UnsafeRawBufferPointer(bucketingId),
                                      zeroPadded: UnsafeRawBufferPointer(parent), seed: 1)
        let value = Bucketing.bucketValue(hash: hash)
        for range in ranges where value < range.endOfRange { return range.entity }
        return -1
    }

    // MARK: audiences

    /// `label` names the rule in reasons only; it is not built unless reasons are collected.
    private func meetsAudience(_ root: Int32, label: @autoclosure () -> String, ruleLog: StaticString) -> Bool {
        guard root >= 0 else {
            reasons?.add("Audiences for \(ruleLog) \(label()) collectively evaluated to TRUE.")
            return true
        }
        let result = config.hot.conditions.evaluate(root, AttributeLeaves(attributes: attributes)) ?? false
        reasons?.add("Audiences for \(ruleLog) \(label()) collectively evaluated to \(result ? "TRUE" : "FALSE").")
        return result
    }
}

/// Leaf conditions evaluated against the user's attributes.
/// Public and inlinable so that it is specialized for the runtime's attribute types (no witness calls).
public struct AttributeLeaves<Attributes: UserAttributes>: LeafEvaluator {
    public let attributes: Attributes

    @inlinable
    public init(attributes: Attributes) { self.attributes = attributes }

    @inlinable @inline(__always)
    public func value(named name: UTF8Text) -> AttributeValue? { attributes.value(named: name) }

    @inlinable @inline(__always)
    public func evaluate(_ leaf: LeafCondition) -> Bool? {
        guard leaf.hasKnownType else { return nil }
        switch leaf.match {
        case .unknown:
            return nil
        case .qualified:
            guard case .string(let segment) = leaf.value else { return nil }
            return attributes.isQualified(for: segment)
        default:
            let user = leaf.attribute.flatMap { attributes.value(named: $0) }
            return LeafMatcher.evaluate(leaf.match, condition: leaf.value, user: user)
        }
    }
}

@usableFromInline
enum StaticName {
    /// Static bytes (no lazily initialized global to check on every read).
    @inlinable
    static var bucketingId: UTF8Text {
        let name: StaticString = "$opt_bucketing_id"
        return UTF8Text(start: name.utf8Start, count: name.utf8CodeUnitCount)
    }
}
