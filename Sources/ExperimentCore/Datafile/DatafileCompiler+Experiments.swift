/// The datafile compiler's reading of experiments, groups and rollouts (their rules), variations and traffic (see
/// `DatafileCompiler`).
extension Compilation {
    mutating func readExperiments() throws(DatafileError) {
        // Rollouts usually have a rule or two beside the everyone-else one.
        let ruleCount = elementCount("experiments") + 2 * elementCount("rollouts")
        experiments.reserveCapacity(ruleCount)
        experimentIdentities.reserveCapacity(ruleCount)
        whitelists.reserveCapacity(ruleCount)
        firstWrittenVariations.reserveCapacity(ruleCount)
        experimentIndexById.reserveCapacity(ruleCount)
        experimentIdOrder.reserveCapacity(ruleCount)
        writtenRolloutRules.reserveCapacity(elementCount("rollouts"))
        rolloutRulesById.reserveCapacity(elementCount("rollouts"))
        var rolloutOrder: [String] = []
        for entry in try requiredSection("experiments") {
            do throws(DatafileError) {
                try addExperiment(entry, kind: .experiment, group: -1, groupId: "", context: .experiment)
            } catch {
                try record(error)
            }
        }
        for (position, rollout) in try section("rollouts").enumerated() {
            rolloutConditionErrors.append([])
            let id = try rollout.requiredString("id")
            rolloutIds.append(id)
            var rules: [Int32] = []
            for entry in try rollout.requiredArray("experiments") {
                do throws(DatafileError) {
                    rules.append(Int32(try addExperiment(entry, kind: .rolloutRule, group: -1, groupId: "",
                                                         context: .rolloutRule(position: position),
                                                         registersId: false)))
                } catch {
                    try record(error)
                }
            }
            if writtenRolloutRules[id] == nil { rolloutOrder.append(id) }
            writtenRolloutRules[id] = rules
        }
        // The reference keeps one rollout per id (the last, at the first one's place) and only its rules
        // enter its experiments by id: a rollout repeating an id is shadowed entirely.
        for id in rolloutOrder {
            for rule in writtenRolloutRules[id]! { register(Int(rule)) }
        }
        var groupEntries: [(reader: DatafileReader, id: String, experiments: [Int])] = []
        // A streamed group's tree is freed when the loop moves on unless kept (until this function returns).
        var groupDocuments: [JSONDocument] = []
        for entry in try requiredSection("groups") {
            let id = try entry.requiredString("id")
            let policy = try entry.requiredString("policy")
            var members: [Int] = []
            for member in try entry.requiredArray("experiments") {
                do throws(DatafileError) {
                    // Only the "random" policy makes a group mutually exclusive; others bucket independently.
                    let group = policy == "random" ? Int32(groupEntries.count) : -1
                    members.append(try addExperiment(member, kind: .experiment, group: group, groupId: id,
                                                     context: .experiment))
                } catch {
                    try record(error)
                }
            }
            // Its "trafficAllocation" is read below; the rest of a streamed group's tree, its compiled
            // experiments, is freed now (all groups together are a large part of a datafile).
            if stream != nil { entry.value.removeMember("experiments") }
            groupDocuments.append(entry.value.document)
            groupEntries.append((entry, id, members))
        }
        let experimentIndexById = self.experimentIndexById
        for (entry, id, _) in groupEntries {
            let ranges = try trafficRanges(entry.requiredArray("trafficAllocation")) { entityId in
                experimentIndexById[entityId]
            }
            groups.append(Group(id: ConfigString(id, in: strings), traffic: ranges))
        }
        withExtendedLifetime(groupDocuments) {}
        // A flag's rollout rules are the reference's experiments by id: the last definition of each id
        // (a repeated rule, or a group experiment with the same id) serves every place that names it.
        // The reference walks a rollout's rules through a map by id too, so a repeated rule id is one rule,
        // at its first place: the rules after it move up (their number, and which is "Everyone Else").
        // The reference's walk takes each rule twice over: the rollout's own rule (the last one in the
        // rollout with that id) names the decision -- its key is the rule key (forced decisions, the decision,
        // the impression's metadata) and its layerId the impression's campaign -- while the definition its id
        // names among all experiments gives the audience, the bucketing and the variation. They differ only
        // when another rollout (or an experiment) defines the same id later: the rule is then a copy of that
        // definition under the rollout's own key and layer.
        for id in writtenRolloutRules.keys.sorted() {
            let rules = writtenRolloutRules[id]!
            var ownRule: ExactKeyed<Int> = [:]
            for rule in rules { ownRule[experimentIdentities[Int(rule)]] = Int(rule) }
            var seen = Set<ExactKey>()
            var walked: [Int32] = []
            for rule in rules {
                let identity = experimentIdentities[Int(rule)]
                guard seen.insert(ExactKey(identity)).inserted else { continue }
                let own = ownRule[identity]!
                let definition = experimentIndexById[identity] ?? own
                walked.append(Int32(definition == own ? own : placedRule(own: own, definition: definition)))
            }
            rolloutRulesById[id] = walked
        }
        indexes.experimentIds = KeyIndex(capacity: experimentIdOrder.count)
        indexes.experimentKeys = KeyIndex(capacity: experimentIdOrder.count)
        for id in experimentIdOrder {
            let index = experimentIndexById[id]!
            indexes.experimentIds.insert(id, index, replacing: true)
            if !keylessExperiments.contains(index) {
                indexes.experimentKeys.insert(experiments[index].key.text, index, replacing: true)
            }
        }
    }

    @discardableResult
    mutating func addExperiment(_ entry: DatafileReader, kind: RuleKind, group: Int32, groupId: String,
                                context: RuleContext, registersId: Bool = true)
        throws(DatafileError) -> Int
    {
        // The reference's JSON schema checks experiments (and group experiments), not rollout rules.
        var schemaChecked = true
        if case .rolloutRule = context { schemaChecked = false }
        let rule = schemaChecked ? try RuleFields(schemaChecked: entry) : try RuleFields(lenient: entry, warn: { warn($0) })
        let id = rule.identity
        let written = try readWrittenVariations(entry.requiredArray("variations"), lenient: !schemaChecked)
        let variations = Compilation.byKey(written)
        var traffic = try trafficRanges(schemaChecked ? entry.requiredArray("trafficAllocation")
                                                      : rule.lenientList(entry, "trafficAllocation", warn: { warn($0) }),
                                        schemaChecked: schemaChecked) {
            entityId in variations.lastIndex { $0.id.text.sameCodePoints(entityId) }
        }
        if !rule.keyIsText { traffic = Bucketing.neverBucketed }
        let whitelist = try readWhitelist(entry.required("forcedVariations"), schemaChecked: schemaChecked)
        let cmab = try cmabSettings(entry)
        // A CMAB rollout rule's bucketing finds the range "$", which names no variation (see `CMAB`).
        if let cmab, !schemaChecked { traffic = [TrafficRange(endOfRange: cmab.trafficAllocation, entity: TrafficRange.unknownEntity)] }
        let experiment = Experiment(
            id: ConfigString(rule.id, in: strings), key: ConfigString(rule.key, in: strings), layerId: rule.layerId,
            isRunning: rule.isRunning, kind: kind, type: ruleType(entry),
            audience: try audienceCondition(entry, in: context), variations: variations, traffic: traffic,
            whitelist: nil, group: group, groupId: groupId, cmab: schemaChecked ? cmab : nil)
        experiment.idJSON = rule.idJSON
        experiment.idIsTruthy = rule.idIsTruthy
        let index = experiments.count
        experiments.append(experiment)
        experimentIdentities.append(id)
        if !rule.keyIsText { keylessExperiments.insert(index) }
        whitelists.append(whitelist)
        firstWrittenVariations.append(written.first)
        if registersId { register(index) }
        return index
    }

    /// A rollout's rule whose id another definition took over (see `readExperiments`): that definition's
    /// audience, traffic, variations and group (a group experiment's exclusion applies, as the reference's
    /// bucketer checks the group of the experiment it is given) under the rollout's own rule key and layer.
    /// Not registered by id or key (callers name the definition).
    mutating func placedRule(own: Int, definition: Int) -> Int {
        let rule = experiments[own], source = experiments[definition]
        let placed = Experiment(id: source.id, key: rule.key, layerId: rule.layerId, isRunning: source.isRunning,
                                kind: rule.kind, type: rule.type, audience: source.audience,
                                variations: source.variations, traffic: source.traffic, whitelist: nil,
                                group: source.group, groupId: source.groupId, cmab: source.cmab)
        placed.idJSON = rule.idJSON
        placed.definitionKey = source.key
        let index = experiments.count
        experiments.append(placed)
        experimentIdentities.append(experimentIdentities[own])
        if keylessExperiments.contains(own) { keylessExperiments.insert(index) }
        whitelists.append(whitelists[definition])
        firstWrittenVariations.append(firstWrittenVariations[definition])
        return index
    }

    /// The experiment becomes the one its id names (the last registered wins, at the id's first place).
    mutating func register(_ index: Int) {
        let id = experimentIdentities[index]
        if experimentIndexById[id] == nil { experimentIdOrder.append(id) }
        experimentIndexById[id] = index
    }

    /// A rule's "type" ("fr" marks a feature rollout); the reference only compares it with "fr", so
    /// anything that is not a string is just another type.
    mutating func ruleType(_ entry: DatafileReader) -> String {
        guard let field = entry.optional("type") else { return "" }
        guard let type = field.value.string else {
            warn(field.warning("expected a string, got \(field.value.kindName): not a feature rollout (\"fr\"), as in the reference"))
            return ""
        }
        return type
    }

    /// A variation's "featureEnabled". The reference's decisions test it for truth as Python does, so a
    /// value that is no boolean ("yes", 1, "") counts as that truth.
    mutating func featureEnabled(_ entry: DatafileReader) -> Bool { truth(entry, "featureEnabled") ?? false }

    /// An optional boolean the reference tests for truth as Python does: a value that is no boolean
    /// ("yes", 1, "", []) counts as that truth, with a warning. Nil when absent or null.
    /// A field the reference uses only when it is a JSON boolean (`isinstance(value, bool)`): anything
    /// else counts as absent, with a warning.
    mutating func boolean(_ entry: DatafileReader, _ name: String) -> Bool? {
        guard let field = entry.optional(name) else { return nil }
        if let flag = field.value.bool { return flag }
        warn(field.warning("expected a boolean, got \(field.value.kindName): taken as absent, as in the reference"))
        return nil
    }

    mutating func truth(_ entry: DatafileReader, _ name: String) -> Bool? {
        guard let field = entry.optional(name) else { return nil }
        if let flag = field.value.bool { return flag }
        let truth: Bool
        switch field.value.kind {
        case .int: truth = field.value.int64 != 0
        case .double: truth = (field.value.double ?? 0) != 0
        case .string: truth = field.value.stringBytes?.isEmpty == false
        case .array: truth = field.value.count != 0
        case .object: truth = !field.value.members.isEmpty
        case .bool, .null: truth = false
        }
        warn(field.warning("expected a boolean, got \(field.value.kindName): counts as \(truth), as in the reference"))
        return truth
    }

    /// The variations as written, every entry kept (a holdout's: the reference indexes those by id only).
    /// `lenient`: outside the schema (rollout rules, holdouts), where a variation's id and key may be any
    /// value the reference can key its maps by (see `variationIdAndKey`).
    mutating func readWrittenVariations(_ entries: DatafileElements, lenient: Bool = false)
        throws(DatafileError) -> [Variation]
    {
        var variations: [Variation] = []
        for entry in entries {
            var values: [VariableValue] = []
            for usage in try variableUsages(entry) {
                let idField = try usage.required("id")
                // The reference finds values by the flag's variable ids (Python's ==): a usage id that is no
                // string names only a variable whose id equals it.
                guard let id = idField.value.string else {
                    if idField.value.kind == .array || idField.value.kind == .object {
                        // The reference keys a dictionary by it: unhashable, its config construction raises.
                        throw idField.fail("expected a string, got \(idField.value.kindName): the reference keys its "
                                           + "variable values by it and cannot hash it (its config construction raises)")
                    }
                    warn(idField.warning("expected a string, got \(idField.value.kindName): it names only a variable "
                                         + "whose id equals it (Python's ==), as in the reference"))
                    let valueField = try usage.required("value")
                    values.append(VariableValue(id: idField.value.identityKey, value: valueField.value.string ?? "",
                                                literal: valueField.value.string == nil ? VariableLiteral(valueField.value) : nil))
                    continue
                }
                let valueField = try usage.required("value")
                if let text = valueField.value.string {
                    values.append(VariableValue(id: id, value: text))
                } else {
                    warn(valueField.warning("expected a string, got \(valueField.value.kindName): typecast as it is, "
                                            + "as in the reference"))
                    values.append(VariableValue(id: id, value: "", literal: VariableLiteral(valueField.value)))
                }
            }
            let (id, key) = lenient ? try variationIdAndKey(entry) : (try entry.requiredString("id"), try entry.requiredKey())
            variations.append(Variation(id: ConfigString(id, in: strings), key: ConfigString(key, in: strings),
                                        featureEnabled: featureEnabled(entry),
                                        variableValues: values))
        }
        return variations
    }

    /// An experiment's variations as the reference indexes them, by key: a repeated key keeps its first
    /// position and its last definition, and the shadowed variation is unreachable (even by id).
    static func byKey(_ written: [Variation]) -> [Variation] {
        var variations: [Variation] = []
        for variation in written {
            if let existing = variations.firstIndex(where: { $0.key.text.sameCodePoints(variation.key.text) }) {
                variations[existing] = variation
            } else {
                variations.append(variation)
            }
        }
        return variations
    }

    /// A variation's "variables" (its variable values). Outside the schema the reference keeps
    /// `variables or []`: a false value is none; a true one that is no list makes its config
    /// construction raise when it indexes the values.
    mutating func variableUsages(_ entry: DatafileReader) throws(DatafileError) -> DatafileElements {
        guard let field = entry.optional("variables") else { return .none }
        if field.value.kind == .array { return try field.array() }
        guard field.value.pythonTruth else {
            warn(field.warning("expected an array, got \(field.value.kindName): no variable values, as in the reference"))
            return .none
        }
        throw field.fail("expected an array, got \(field.value.kindName): the reference iterates it to index the "
                         + "variable values and raises (its config construction)")
    }

    /// A rollout rule's or holdout's variation id and key, outside the schema. The reference keys its
    /// variation maps by them as they are: a number, boolean or null id names the variation only for an
    /// equal value (so no traffic range's string entityId reaches it; kept as its `identityKey`); a key
    /// that is no string is kept as Python's `str()` of it. A list or object cannot key a map: refused.
    mutating func variationIdAndKey(_ entry: DatafileReader) throws(DatafileError) -> (id: String, key: String) {
        let idField = try entry.required("id")
        _ = try idField.lenientText("only an equal entityId (Python's ==) leads to the variation", warn: { warn($0) })
        let keyField = try entry.required("key")
        let key = keyField.value.string != nil ? try entry.requiredKey()
            : try keyField.lenientText("decisions name the variation by Python's str() of it here (the reference: "
                                       + "the value as it is)", warn: { warn($0) })
        return (idField.value.identityKey, key)
    }

    /// A range is taken by bucket values below its end (0...9999): an end past 10000 covers them all like
    /// 10000 does, a negative end none like 0 does, which is how the reference decides them.
    /// Where the reference's schema does not check ranges (`schemaChecked` false: rollout rules, holdouts),
    /// it reads them leniently: a range without an end is skipped, one without a string entity id leads
    /// nowhere.
    mutating func trafficRanges(_ entries: DatafileElements, schemaChecked: Bool = true,
                                entity: (String) -> Int?) throws(DatafileError) -> [TrafficRange]
    {
        var ranges: [TrafficRange] = []
        ranges.reserveCapacity(entries.count)
        for entry in entries {
            if !schemaChecked, let why = Compilation.rangeTheReferenceRaisesOn(entry) {
                // The reference's bucketer reads the ranges in order and raises on this one when it gets here
                // (no answer to match): it takes every bucket left, with no variation, and later ones none.
                warn(entry.warning(why + ": the reference raises when bucketing reaches this range; here it takes "
                                   + "every bucket left and leads to no variation"))
                ranges.append(TrafficRange(endOfRange: 10_000, entity: TrafficRange.emptyEntity))
                continue
            }
            var entityId = ""
            // What the reference makes of an entity id that is no string: none (empty) or one it cannot find.
            var emptyEntity = TrafficRange.emptyEntity
            if schemaChecked {
                entityId = try entry.requiredString("entityId")
            } else if let text = entry.optional("entityId")?.value.string {
                entityId = text
            } else {
                _ = try entry.object()  // an entry that is no object at all is still refused
                // The reference tests the entity id with Python's truth: a missing one, null, false, 0, 0.0,
                // [] and {} are all an empty range; any other value names a variation no id equals.
                let field = entry.optional("entityId")
                let falsy = field.map { !$0.value.pythonTruth } ?? true
                if !falsy {
                    emptyEntity = TrafficRange.unknownEntity
                    // It still names a variation whose id is an equal value (Python's ==: `7 == 7.0 == 7`,
                    // `True == 1`), as the reference's map by variation id finds it: both kept as identityKey.
                    if let field, field.value.isHashable, let index = entity(field.value.identityKey) {
                        emptyEntity = Int32(index)
                    }
                }
                warn(entry.warning(emptyEntity >= 0
                    ? "no string \"entityId\": the range leads to the variation whose id is an equal value, as in the reference"
                    : "no string \"entityId\": the range leads to no variation, as in the reference"))
            }
            if !schemaChecked && entry.optional("endOfRange") == nil {
                _ = try entry.object()
                warn(entry.warning("no \"endOfRange\": the range is skipped, as in the reference"))
                continue
            }
            let endField = try entry.required("endOfRange")
            let end: Int64
            if !schemaChecked, endField.value.kind == .bool || endField.value.kind == .double {
                // Python compares the bucket with it as it is: False is 0, True 1, and `bucket < 2.5` holds
                // for the buckets below 3 (NaN for none).
                let number = endField.value.bool.map { $0 ? 1.0 : 0.0 } ?? endField.value.double ?? .nan
                end = number.isNaN ? 0 : Int64(max(-1, min(20_000, number.rounded(.up))))
                warn(endField.warning("expected an integer, got \(endField.value.kindName): compared as it is, "
                                      + "like \(min(max(end, 0), 10_000)), as in the reference"))
            } else {
                end = try endField.int()
            }
            if end < 0 || end > 10_000 {
                warn(endField.warning("outside 0...10000, got \(end): "
                                      + (end > 10_000 ? "the range covers every bucket left, as 10000 would"
                                                      : "the range covers no bucket, as 0 would")))
            }
            ranges.append(TrafficRange(endOfRange: Int32(min(max(end, 0), 10_000)),
                                       entity: entityId.isEmpty ? emptyEntity
                                       : entity(entityId).map(Int32.init) ?? TrafficRange.unknownEntity))
        }
        return ranges
    }

    /// Why the reference's bucketer raises on a range outside the schema (`entry.get('endOfRange')` on
    /// something that is no object; `bucket < endOfRange` with text, a list or an object), or nil (a null
    /// "endOfRange" is skipped, as a missing one).
    static func rangeTheReferenceRaisesOn(_ entry: DatafileReader) -> String? {
        guard entry.value.kind == .object else { return "expected an object, got \(entry.value.kindName)" }
        guard let end = entry.optional("endOfRange") else { return nil }  // skipped, see trafficRanges
        switch end.value.kind {
        case .string, .array, .object: return "an \"endOfRange\" that is \(end.value.kindName)"
        case .int, .double, .bool, .null: return nil
        }
    }

    /// "forcedVariations": user id -> variation key, resolved once every variation is known.
    /// A value that is no string names no variation key: the reference buckets the user normally (a list or
    /// object, which its lookup cannot hash, makes it raise for that user: refused).
    /// Outside the schema (rollout rules) a "forcedVariations" that is no object is no whitelist: the
    /// reference skips a false one and raises testing a user's membership in a true one.
    mutating func readWhitelist(_ field: DatafileReader, schemaChecked: Bool = true) throws(DatafileError)
        -> [(user: String, variationKey: String)]
    {
        if !schemaChecked && field.value.kind != .object {
            warn(field.warning("expected an object, got \(field.value.kindName): no user is whitelisted (the reference "
                               + "skips it, or raises once a decision tests a user's membership)"))
            return []
        }
        var entries: [(user: String, variationKey: String)] = []
        for (user, variationKey) in try field.object() {
            if let key = variationKey.value.string {
                entries.append((user, key))
            } else if variationKey.value.kind == .array || variationKey.value.kind == .object {
                // The reference looks the variation up by it and cannot hash it: it raises for that user only.
                warn(variationKey.warning("expected a variation key (a string), got \(variationKey.value.kindName): "
                                          + "the reference raises deciding this user; here the user is bucketed normally"))
            } else {
                warn(variationKey.warning("expected a variation key (a string), got \(variationKey.value.kindName): "
                                          + "the user is bucketed normally, as in the reference"))
            }
        }
        return entries
    }

    /// Whitelists resolve variation keys as the reference does, by key with the last definition winning,
    /// after "fr" experiments received their everyone-else variation. A key naming no variation of the
    /// experiment is ignored (the user is bucketed normally).
    mutating func resolveWhitelists() {
        for (index, entries) in whitelists.enumerated() where !entries.isEmpty {
            var whitelist = KeyIndex(capacity: entries.count)
            for (user, variationKey) in entries {
                if let variation = experiments[index].variationIndex(key: variationKey) {
                    whitelist.insert(user, variation, replacing: true)
                }
            }
            experiments[index] = experiments[index].with(whitelist: whitelist)
        }
    }
}
