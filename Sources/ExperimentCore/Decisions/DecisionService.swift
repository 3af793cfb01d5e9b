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
    /// Who names the variation of a CMAB experiment (the runtime's cache and prediction client); nil: a
    /// CMAB experiment the user falls into gives the error decision. Not retained, as the config.
    public unowned(unsafe) let cmab: (any CMABDecisionProvider)?
    /// The call's decide options, for the CMAB provider (its cache options).
    public let cmabOptions: DecideOptions

    @inlinable @inline(__always)
    public init(config: ProjectConfig, userId: UTF8Text, attributes: Attributes, overrides: Overrides,
                sticky: Sticky, reasons: ReasonLog?, cmab: (any CMABDecisionProvider)? = nil,
                cmabOptions: DecideOptions = [])
    {
        self.config = config
        self.userId = userId
        self.attributes = attributes
        self.overrides = overrides
        self.sticky = sticky
        self.reasonLog = reasons.map { Unmanaged.passUnretained($0) }
        self.cmab = cmab
        self.cmabOptions = cmabOptions
    }

    var userText: String { String(decoding: userId, as: UTF8.self) }
}

extension DecisionService where Sticky == NoStickyAssignments {
    /// A stateless decision (no sticky bucketing).
    public init(config: ProjectConfig, userId: UTF8Text, attributes: Attributes, overrides: Overrides,
                reasons: ReasonLog?, cmab: (any CMABDecisionProvider)? = nil, cmabOptions: DecideOptions = [])
    {
        self.init(config: config, userId: userId, attributes: attributes, overrides: overrides,
                  sticky: NoStickyAssignments(), reasons: reasons, cmab: cmab, cmabOptions: cmabOptions)
    }
}

extension DecisionService {

    // MARK: flags

    public func decide(flag flagIndex: Int) -> FlagDecision {
        var decision = FlagDecision(flag: Int32(flagIndex))
        let forced = forcedFlagVariation(flag: flagIndex, rule: nil)
        // The reference keeps the flag-level forced decision's reasons apart from the flag's own ones.
        reasons?.endForcedDecisionReasons()
        if let forced {
            decision.source = .featureTest
            decision.flagVariation = forced
            return decision
        }
        for holdoutIndex in config.hot.globalHoldouts {
            guard let variation = holdoutVariation(Int(holdoutIndex)) else { continue }
            let holdout = config.holdouts[Int(holdoutIndex)]
            reasons?.add(ReasonMessages.globalHoldout(user: userText, holdout: holdout.key.text,
                                                      flag: config.flags[flagIndex].key.text))
            guard holdout.excludeTargetedDeliveries else {
                return holdoutDecision(decision, holdout: holdoutIndex, variation: variation)
            }
            reasons?.add(ReasonMessages.holdoutExcludesTargetedDeliveries(holdout: holdout.key.text))
            decision.exclusionHoldout = holdoutIndex
            decision.exclusionHoldoutVariation = variation
            break
        }
        if let decided = decideExperimentRules(flag: flagIndex, base: decision) {
            return decided
        }
        if decision.exclusionHoldout >= 0 {
            reasons?.add(ReasonMessages.holdoutContinuesToRollout(
                holdout: config.holdouts[Int(decision.exclusionHoldout)].key.text))
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
            // As the reference: each experiment rule's get_variation repeats the flag's reasons so far.
            reasons?.repeatFlagReasons()
            // A CMAB prediction's UUID reaches the impression through the runtime's provider, which handed
            // it out (see `CMABDecisionProvider`).
            guard let outcome = experimentOutcome(Int(rule.experiment)) else {
                // The reference's error decision: no variation, rule, impression or holdout.
                var failed = FlagDecision(flag: Int32(flagIndex))
                failed.source = .featureTest
                failed.experiment = FlagDecision.cmabFailedExperiment
                return failed
            }
            if case .variation(let variation) = outcome {
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
        guard first <= last else {
            explainMissingRolloutRules(flag: flagIndex)
            return decision
        }
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
            explainBucketingId()
            let everyoneElse = slot == last
            // The rule's name in reasons; not built unless reasons are collected.
            var label: String { everyoneElse ? "Everyone Else" : String(slot - first + 1) }
            guard meetsAudience(experiment.audienceRoot, scope: .rule(label),
                                conditions: audienceText(experiment: Int(rule.experiment))) else {
                reasons?.add(ReasonMessages.ruleAudienceNotMet(user: userText, label: label))
                slot += 1
                continue
            }
            reasons?.add(ReasonMessages.ruleAudienceMet(user: userText, label: label))
            // A rule that is a group experiment's id (see `Compilation.placedRule`) passes its group first.
            let inGroup = experiment.group < 0 || groupAdmits(experiment: Int(rule.experiment), bucketingId: bucketingId)
            let variation = inGroup ? bucket(bucketingId, zeroPaddedParent: experiment.id, ranges: experiment.traffic)
                                    : TrafficRange.emptyEntity
            if variation >= 0 {
                reasons?.add(ReasonMessages.ruleBucketed(user: userText, label: label))
                decision.experiment = rule.experiment
                decision.variation = variation
                decision.flagVariation = rule.flagVariationOf[Int(variation)]
                return decision
            }
            explainEmptyBucket(variation)
            if everyoneElse { break }
            reasons?.add(ReasonMessages.ruleNotBucketed(user: userText, label: label))
            slot = last
        }
        return decision
    }

    /// The reference's reason when a flag has no delivery rules to evaluate.
    private func explainMissingRolloutRules(flag flagIndex: Int) {
        guard let reasons else { return }
        switch config.flags[flagIndex].rollout {
        case .none: break
        case .missing: reasons.add(ReasonMessages.noRollout(flag: config.flags[flagIndex].key.text))
        case .found(let id): reasons.add(ReasonMessages.rolloutWithoutRules(rollout: id))
        }
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

    private func localHoldoutDecision(flag flagIndex: Int, slot: Int, ruleKind: String, base: FlagDecision)
        -> FlagDecision?
    {
        let rule = config.flags[flagIndex].rules[slot]
        for holdoutIndex in rule.holdouts {
            guard let variation = holdoutVariation(Int(holdoutIndex)) else { continue }
            reasons?.add(ReasonMessages.localHoldout(user: userText, holdout: config.holdouts[Int(holdoutIndex)].key.text,
                                                     ruleKind: ruleKind, rule: key(Int(rule.experiment))))
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
        // As the reference: an empty rule key reads as no rule in the messages, and a flag whose key is empty
        // has no variation a forced decision can name (its get_flag_variation answers None for it).
        let ruleText = ruleKey?.isEmpty == true ? nil : ruleKey
        if !flag.key.text.isEmpty, let index = flag.flagVariations.firstIndex(where: { $0.key.text.sameCodePoints(variationKey) }) {
            reasons?.add(ReasonMessages.forcedDecision(variation: variationKey, flag: flag.key.text, rule: ruleText,
                                                       user: userText))
            return Int32(index)
        }
        reasons?.add(ReasonMessages.invalidForcedDecision(flag: flag.key.text, rule: ruleText, user: userText))
        return nil
    }

    // MARK: experiments

    /// The reference's get_variation for one experiment (a CMAB experiment whose prediction failed: no
    /// variation, as the reference's get_variation answers then).
    public func outcome(experiment index: Int) -> ExperimentOutcome {
        experimentOutcome(index) ?? .notAllocated
    }

    /// The reference's get_variation for one experiment; nil when a CMAB experiment's prediction failed
    /// (its error result).
    public func experimentOutcome(_ index: Int) -> ExperimentOutcome? {
        let experiment = config.hot.experiments[index]
        guard experiment.isRunning else {
            reasons?.add(ReasonMessages.experimentNotRunning(experiment: key(index)))
            return .notRunning
        }
        if !overrides.isEmpty {
            if let membership = overrides.forcedMembership(experimentId: config.experiments[index].id.text) {
                return forcedMembershipOutcome(membership, experiment: index)
            }
            if let forced = forcedVariation(experiment: index) { return .variation(forced) }
        }
        if experiment.hasWhitelist, let whitelisted = config.experiments[index].whitelist?.find(userId) {
            reasons?.add(ReasonMessages.whitelisted(user: userText,
                                                    variation: config.experiments[index].variations[whitelisted].key.text))
            return .variation(Int32(whitelisted))
        }
        if sticky.isActive, let saved = savedVariation(experiment: index) { return .variation(saved) }
        guard meetsAudience(experiment.audienceRoot, scope: .experiment(key(index)),
                            conditions: audienceText(experiment: index)) else {
            reasons?.add(ReasonMessages.experimentAudienceNotMet(user: userText, experiment: key(index)))
            return .notTargeted
        }
        explainBucketingId()
        let bucketingId = self.bucketingId()
        if experiment.group >= 0, !groupAdmits(experiment: index, bucketingId: bucketingId) {
            reasons?.add(experiment.isCMAB ? ReasonMessages.cmabTrafficMiss(user: userText, experiment: key(index))
                                           : ReasonMessages.emptyTrafficRange)
            reasons?.add(ReasonMessages.noVariation(user: userText))
            return .notAllocated
        }
        if experiment.isCMAB, let settings = config.experiments[index].cmab {
            return cmabOutcome(index, settings: settings, bucketingId: bucketingId)
        }
        let variation = bucket(bucketingId, zeroPaddedParent: experiment.id, ranges: experiment.traffic)
        guard variation >= 0 else {
            explainEmptyBucket(variation)
            reasons?.add(ReasonMessages.noVariation(user: userText))
            return .notAllocated
        }
        reasons?.add(ReasonMessages.experimentVariation(
            user: userText, variation: config.experiments[index].variations[Int(variation)].key.text,
            experiment: key(index)))
        if sticky.isActive {
            sticky.record(experimentId: config.experiments[index].id.text,
                          variationId: config.experiments[index].variations[Int(variation)].id.text)
        }
        return .variation(variation)
    }

    /// The reference's bucketer for an experiment of a mutually exclusive group: whether the group's
    /// bucket is this experiment (by id), with the bucketer's reason either way. On a miss the caller adds
    /// what follows it: the bucketer treats the miss as an empty traffic range (a CMAB experiment's as its
    /// traffic miss). The reasons name the experiment the bucketer was given: for a delivery rule decided
    /// with a group experiment's definition, that experiment's key.
    private func groupAdmits(experiment index: Int, bucketingId: UTF8Text) -> Bool {
        let experiment = config.hot.experiments[index]
        let group = config.hot.groups[Int(experiment.group)]
        let chosen = bucket(bucketingId, zeroPaddedParent: group.id, ranges: group.traffic)
        let admitted = chosen == Int32(index)
            || (chosen >= 0 && config.hot.experiments[Int(chosen)].id.elementsEqual(experiment.id))
        if let reasons {
            let named = config.experiments[index].definitionKey?.text ?? key(index)
            let groupId = config.groups[Int(experiment.group)].id.text
            reasons.add(admitted ? ReasonMessages.inGroupExperiment(user: userText, experiment: named, group: groupId)
                        : chosen == TrafficRange.emptyEntity ? ReasonMessages.inNoGroupExperiment(user: userText)
                        : ReasonMessages.notInGroupExperiment(user: userText, experiment: named, group: groupId))
        }
        return admitted
    }

    /// The reference's CMAB branch of get_variation: the user's bucket against the experiment's CMAB
    /// traffic, then the provider's prediction. Nil when the provider fails (or cannot be asked): the
    /// reasons end with "Failed to fetch CMAB data for experiment <key>." and the flag gets the error
    /// decision. CMAB decisions are never saved for sticky bucketing.
    @inline(never)
    private func cmabOutcome(_ index: Int, settings: CMABSettings, bucketingId: UTF8Text) -> ExperimentOutcome? {
        let experiment = config.experiments[index]
        let hash = MurmurHash3.x86_32(concatenating: UnsafeRawBufferPointer(bucketingId),
                                      zeroPadded: UnsafeRawBufferPointer(config.hot.experiments[index].id), seed: 1)
        guard Bucketing.bucketValue(hash: hash) < settings.trafficAllocation else {
            reasons?.add(ReasonMessages.cmabTrafficMiss(user: userText, experiment: experiment.key.text))
            reasons?.add(ReasonMessages.noVariation(user: userText))
            return .notAllocated
        }
        let request = CMAB.request(experiment: experiment, settings: settings, config: config, userId: userText,
                                   attributes: attributes)
        guard request.unusable == nil, let provider = cmab else {
            reasons?.add(ReasonMessages.cmabFetchFailed(experiment: experiment.key.text))
            return nil
        }
        let result = provider.cmabDecision(request, options: cmabOptions, collectReasons: reasons != nil)
        guard let answer = result.answer else {
            reasons?.add(ReasonMessages.cmabFetchFailed(experiment: experiment.key.text))
            return nil
        }
        if let reasons { for reason in result.reasons { reasons.add(reason) } }
        guard let variation = experiment.variationIndex(id: answer.variationId) else {
            reasons?.add(ReasonMessages.noVariation(user: userText))
            return .notAllocated
        }
        reasons?.add(ReasonMessages.experimentVariation(user: userText, variation: experiment.variations[variation].key.text,
                                                        experiment: experiment.key.text))
        return .variation(Int32(variation))
    }

    /// The bucketer's reason for a bucket without an entity: only an empty "entityId" (or no range at all)
    /// is an "empty traffic range"; an id it cannot find it passes over in silence.
    private func explainEmptyBucket(_ entity: Int32) {
        if entity == TrafficRange.emptyEntity { reasons?.add(ReasonMessages.emptyTrafficRange) }
    }

    /// The user's saved (sticky) variation, when the experiment still has it.
    private func savedVariation(experiment index: Int) -> Int32? {
        let experiment = config.experiments[index]
        guard let variationId = sticky.savedVariation(experimentId: experiment.id.text),
              let saved = experiment.variationIndex(id: variationId) else { return nil }
        reasons?.add(ReasonMessages.storedVariation(variation: experiment.variations[saved].key.text,
                                                    experiment: experiment.key.text, user: userText))
        return Int32(saved)
    }

    /// A Sigma forced inclusion or exclusion: audiences, groups and traffic do not apply.
    private func forcedMembershipOutcome(_ membership: ForcedMembership, experiment index: Int) -> ExperimentOutcome {
        let experiment = config.experiments[index]
        switch membership {
        case .excluded:
            reasons?.add(ReasonMessages.forceExcluded(user: userText, experiment: experiment.key.text))
            return .notTargeted
        case .included(let position?) where position >= 0 && position < experiment.variations.count:
            reasons?.add(ReasonMessages.forceIncludedInVariation(
                user: userText, variation: experiment.variations[position].key.text, experiment: experiment.key.text))
            return .variation(Int32(position))
        case .included:
            guard !experiment.variations.isEmpty else { return .notAllocated }
            if sticky.isActive, let saved = savedVariation(experiment: index) { return .variation(saved) }
            let chosen = bucketIgnoringTraffic(experiment: index)
            reasons?.add(ReasonMessages.forceIncluded(user: userText, experiment: experiment.key.text,
                                                      variation: experiment.variations[Int(chosen)].key.text))
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

    /// The experiment's audienceConditions (or audienceIds) as the reference prints them in reasons.
    private func audienceText(experiment index: Int) -> String { config.experiments[index].audience?.text ?? "[]" }

    /// A variation forced with set_forced_variation, if the experiment still has it.
    private func forcedVariation(experiment index: Int) -> Int32? {
        let experiment = config.experiments[index]
        guard let variationId = overrides.forcedVariation(experimentId: experiment.id.text),
              let forced = experiment.variationIndex(id: variationId) else { return nil }
        reasons?.add(ReasonMessages.forcedVariation(variation: experiment.variations[forced].key.text,
                                                    experiment: experiment.key.text, user: userText))
        return Int32(forced)
    }

    /// The variation of a running holdout the user falls into, or nil.
    func holdoutVariation(_ index: Int) -> Int32? {
        let holdout = config.holdouts[index]
        guard holdout.isRunning else { return nil }
        explainBucketingId()
        guard meetsAudience(holdout.audience?.root ?? -1, scope: .experiment(holdout.key.text),
                            conditions: holdout.audience?.text ?? "[]") else {
            reasons?.add(ReasonMessages.holdoutAudienceNotMet(user: userText, holdout: holdout.key.text))
            return nil
        }
        let traffic = Bucketing.bucketsFor(key: holdout.key.text) ? holdout.traffic : Bucketing.neverBucketed
        let variation = traffic.withUnsafeBufferPointer { bucket(bucketingId(), parent: holdout.id.bytes, ranges: $0) }
        guard variation >= 0 else {
            explainEmptyBucket(variation)
            reasons?.add(ReasonMessages.holdoutNotBucketed(user: userText, holdout: holdout.key.text))
            return nil
        }
        reasons?.add(ReasonMessages.holdoutVariation(user: userText, variation: holdout.variations[Int(variation)].key.text,
                                                     holdout: holdout.key.text))
        return variation
    }

    // MARK: bucketing

    /// `$opt_bucketing_id` when it is a string, else the user id.
    public func bucketingId() -> UTF8Text {
        if case .string(let text)? = attributes.bucketingIdValue() { return text }
        return userId
    }

    /// The reference reads the bucketing id afresh at each holdout, experiment and delivery rule it buckets
    /// for, and explains each time that a value other than a string (or None) is not used.
    private func explainBucketingId() {
        guard let reasons else { return }
        switch attributes.bucketingIdValue() {
        case .string?, nil, .null?: return
        default: reasons.add(ReasonMessages.bucketingIdNotString)
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

    /// Whether the user meets a rule's audiences (`root` -1: it has none). `scope` and `conditions` are
    /// for reasons only and are not built unless reasons are collected.
    private func meetsAudience(_ root: Int32, scope: @autoclosure () -> ReasonMessages.AudienceScope,
                               conditions: @autoclosure () -> String) -> Bool {
        reasons?.add(ReasonMessages.evaluatingAudiences(scope(), conditions: conditions()))
        let result = root < 0 || config.hot.conditions.evaluate(root, AttributeLeaves(attributes: attributes)) ?? false
        reasons?.add(ReasonMessages.audiencesResult(scope(), result))
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
