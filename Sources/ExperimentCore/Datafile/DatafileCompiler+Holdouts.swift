/// The datafile compiler's reading of global and local holdouts (see `DatafileCompiler`).
extension Compilation {
    mutating func readHoldouts() throws(DatafileError) {
        for entry in try section("holdouts") {
            do throws(DatafileError) {
                let holdout = try readHoldout(entry)
                holdouts.append(holdout)
                if holdout.isRunning { globalHoldouts.append(Int32(holdouts.count - 1)) }
            } catch {
                try record(error)
            }
        }
        for entry in try section("localHoldouts") {
            do throws(DatafileError) {
                // The reference tests each entry for "includedRules" as a dict: anything else raises.
                _ = try entry.object()
                // The reference skips a local holdout without includedRules; so do we.
                guard let rules = entry.optional("includedRules") else { continue }
                let holdout = try readHoldout(entry)
                holdouts.append(holdout)
                guard holdout.isRunning else { continue }
                for rule in try includedRuleIds(rules) {
                    holdoutsByRuleId[rule, default: []].append(Int32(holdouts.count - 1))
                }
            } catch {
                try record(error)
            }
        }
        maskVariationsShadowedByHoldouts()
    }

    /// The reference finds a bucketed variation through its variations by experiment id, and a holdout's
    /// variations take that id's place there (the last holdout of an id wins): an experiment, rule or
    /// earlier holdout sharing its id with a holdout buckets into nothing where the entity id it finds is
    /// no variation id of that last holdout (no variation, and no "empty traffic range" reason). Only string
    /// ids; a variation id the holdout has too keeps the entity's own variation here.
    mutating func maskVariationsShadowedByHoldouts() {
        var lastHoldout: ExactKeyed<Int> = [:]
        for (index, holdout) in holdouts.enumerated() where holdout.idJSON == nil {
            lastHoldout[holdout.id.text] = index
        }
        guard !lastHoldout.isEmpty else { return }
        func masked(_ traffic: [TrafficRange], of variations: [Variation], by holdout: Holdout) -> [TrafficRange]? {
            var changed = false
            let result = traffic.map { range -> TrafficRange in
                guard range.entity >= 0, !holdout.variations.contains(where: {
                    $0.id.text.sameCodePoints(variations[Int(range.entity)].id.text) }) else { return range }
                changed = true
                return TrafficRange(endOfRange: range.endOfRange, entity: TrafficRange.unknownEntity)
            }
            return changed ? result : nil
        }
        for (index, holdout) in holdouts.enumerated() where holdout.idJSON == nil {
            guard let last = lastHoldout[holdout.id.text], last != index,
                  let traffic = masked(holdout.traffic, of: holdout.variations, by: holdouts[last]) else { continue }
            holdouts[index] = holdout.with(traffic: traffic)
        }
        for index in experiments.indices {
            guard experiments[index].idJSON == nil, let last = lastHoldout[experimentIdentities[index]],
                  let traffic = masked(experiments[index].traffic, of: experiments[index].variations, by: holdouts[last])
            else { continue }
            experiments[index] = experiments[index].with(traffic: traffic)
        }
    }

    /// A running local holdout's "includedRules" as the reference iterates them (`included_rules or []`),
    /// each rule id as its map keys it (`identityKey`): a false value is none, a string its characters,
    /// an object its names; a number or true, or a list or object among the ids, makes it raise.
    mutating func includedRuleIds(_ field: DatafileReader) throws(DatafileError) -> [String] {
        switch field.value.kind {
        case .array:
            var ids: [String] = []
            for rule in try field.array() {
                if rule.value.string == nil {
                    guard rule.value.isHashable else {
                        throw rule.fail("expected a rule id (a string), got \(rule.value.kindName): the reference keys "
                                        + "its holdout map by it and cannot hash it (its config construction raises)")
                    }
                    warn(rule.warning("expected a rule id (a string), got \(rule.value.kindName): it names only a rule "
                                      + "whose id equals it (Python's ==), as in the reference"))
                }
                ids.append(rule.value.identityKey)
            }
            return ids
        case _ where !field.value.pythonTruth:
            warn(field.warning("expected an array, got \(field.value.kindName): no rules, as in the reference"))
            return []
        case .string:
            warn(field.warning("expected an array, got a string: the reference iterates its characters as rule ids"))
            return field.value.pythonText.unicodeScalars.map { String($0) }
        case .object:
            warn(field.warning("expected an array, got an object: the reference iterates its names as rule ids"))
            return field.value.members.map(\.key)
        default:
            throw field.fail("expected an array, got \(field.value.kindName): the reference iterates it and raises "
                             + "(its config construction)")
        }
    }

    mutating func readHoldout(_ entry: DatafileReader) throws(DatafileError) -> Holdout {
        // Outside the reference's schema: "variations" that are null or false are a holdout without any.
        let variationsField = try entry.required("variations")
        var variationEntries = DatafileElements.none
        if variationsField.value.isNull || variationsField.value.bool == false {
            warn(variationsField.warning("expected an array, got \(variationsField.value.kindName): no variations, "
                                         + "as in the reference"))
        } else {
            variationEntries = try variationsField.array()
        }
        // The reference buckets a holdout through a map by variation id built from every entry as written:
        // a repeated key shadows nothing there (the last entry with an id wins, as the traffic lookup does).
        let variations = try readWrittenVariations(variationEntries, lenient: true)
        let fields = try RuleFields(lenient: entry, requiresLayerId: false, warn: { warn($0) })
        var traffic = try trafficRanges(fields.lenientList(entry, "trafficAllocation", warn: { warn($0) }),
                                        schemaChecked: false) { entityId in
            variations.lastIndex { $0.id.text.sameCodePoints(entityId) }
        }
        if !fields.keyIsText { traffic = Bucketing.neverBucketed }
        let holdout = Holdout(
            id: ConfigString(fields.id, in: strings), key: ConfigString(fields.key, in: strings),
            isRunning: fields.isRunning,
            audience: try audienceCondition(entry, in: .holdout), variations: variations, traffic: traffic,
            excludeTargetedDeliveries: truth(entry, "excludeTargetedDeliveries") ?? false)
        holdout.idJSON = fields.idJSON
        holdout.idIsTruthy = fields.idIsTruthy
        return holdout
    }
}
