import Glibc

/// The datafile compiler's reading of audiences, typed audiences and the audience conditions of rules (see
/// `DatafileCompiler`).
extension Compilation {
    /// The reference keys audiences by id, a typed audience replacing a plain one of the same id, and parses
    /// the conditions of that merged map only: a plain audience a typed one replaces is never parsed (its
    /// conditions may be any text, malformed JSON included). So typed audiences are compiled first, a plain
    /// audience they replace only has its schema checked, and the audiences are then put in the order of the
    /// reference's map: an id where a plain audience first has it, then the ids only typed audiences have.
    mutating func readAudiences() throws(DatafileError) {
        let plainCount = elementCount("audiences"), typedCount = elementCount("typedAudiences")
        audiences.reserveCapacity(plainCount + typedCount)
        audienceIndexById.reserveCapacity(plainCount + typedCount)
        plainAudienceNames.reserveCapacity(plainCount)
        typedAudienceNames.reserveCapacity(typedCount)
        for entry in try section("typedAudiences") {
            do throws(DatafileError) {
                let conditions = try entry.required("conditions")
                try addAudience(entry, conditions: conditions, typed: true)
            } catch {
                try record(error)
            }
        }
        let typedAudienceCount = audiences.count
        var placedTyped = [Bool](repeating: false, count: typedAudienceCount)
        var order: [Int] = []
        order.reserveCapacity(plainCount + typedAudienceCount)
        for entry in try requiredSection("audiences") {
            do throws(DatafileError) {
                let conditionsField = try entry.required("conditions")
                guard let textBytes = conditionsField.value.stringBytes else {
                    throw conditionsField.fail("expected a string, got \(conditionsField.value.kindName)")
                }
                if let typedIndex = try typedAudienceReplacing(entry, typedCount: typedAudienceCount) {
                    if !placedTyped[typedIndex] { order.append(typedIndex) }
                    placedTyped[typedIndex] = true
                    continue
                }
                let countBefore = audiences.count
                try addPlainAudience(entry, conditionsField: conditionsField, text: textBytes)
                if audiences.count > countBefore { order.append(countBefore) }
            } catch {
                try record(error)
            }
        }
        for index in 0..<typedAudienceCount where !placedTyped[index] { order.append(index) }
        putAudiences(in: order)
    }

    /// The index of the typed audience that replaces the plain audience `entry` (typed audiences are the
    /// first `typedCount`), after checking what the reference's schema checks of it (a string id and name);
    /// nil when no typed audience has its id.
    private mutating func typedAudienceReplacing(_ entry: DatafileReader, typedCount: Int) throws(DatafileError)
        -> Int?
    {
        let idField = try entry.required("id")
        let id = try idField.string()
        guard let index = audienceIndexById[idField.value.identityKey], index < typedCount else { return nil }
        _ = try entry.requiredString("name")
        if id != "$opt_dummy_audience" { plainAudienceNames[idField.value.identityKey] = true }
        return index
    }

    /// Compiles a plain audience, whose conditions are JSON in a string.
    private mutating func addPlainAudience(_ entry: DatafileReader, conditionsField: DatafileReader,
                                           text: UnsafeBufferPointer<UInt8>) throws(DatafileError)
    {
        // The conditions text lives in the datafile's tree, which outlives this nested one.
        let parsed: JSONDocument
        do {
            parsed = try JSONDocument.parse(UnsafeRawBufferPointer(text), what: "datafile",
                                            maxBytes: DatafileCompiler.maxBytes,
                                            maxDepth: DatafileCompiler.maxDepth, tokener: nestedJSONTokener)
        } catch {
            // The place is worked out for the message only.
            let message = error.message.dropFirst("datafile".count)
            throw DatafileError(.invalidDatafile, "datafile: \(conditionsField.path)" + message)
        }
        try withExtendedLifetime(parsed) { () throws(DatafileError) in
            try addAudience(entry, conditions: DatafileReader(parsed.root, within: conditionsField.value), typed: false)
        }
    }

    /// Puts the audiences in `order` (old indices, each once) and renumbers the index by id to match.
    private mutating func putAudiences(in order: [Int]) {
        guard order.indices.contains(where: { order[$0] != $0 }) else { return }
        var idOfIndex = [String](repeating: "", count: audiences.count)
        for (id, index) in audienceIndexById { idOfIndex[index] = id }
        var reordered: [Audience] = []
        reordered.reserveCapacity(order.count)
        var indexById = ExactKeyed<Int>()
        indexById.reserveCapacity(order.count)
        for old in order {
            indexById[idOfIndex[old]] = reordered.count
            reordered.append(audiences[old])
        }
        audiences = reordered
        audienceIndexById = indexById
    }

    /// Compiles an audience into the condition forest. An id seen before in the same list replaces the earlier
    /// definition in place, as in the reference's map (see `readAudiences` for typed over plain).
    mutating func addAudience(_ entry: DatafileReader, conditions: DatafileReader, typed: Bool)
        throws(DatafileError)
    {
        let idField = try entry.required("id")
        // A typed audience's id is outside the schema: the reference keys its audience map by it as it is,
        // so only a rule naming an equal value (Python's ==, see `identityKey`) finds it.
        let idText = typed ? try idField.lenientText("only an equal audience id in a rule names it",
                                                     warn: { warn($0) })
                           : try idField.string()
        let id = idField.value.identityKey
        let name = typed ? try typedAudienceName(entry.required("name")) : try entry.requiredString("name")
        audienceSegments = []
        audienceObjectCount = 0
        audienceConditionsRoot = conditions.value
        audienceObjectLeaves = nil
        defer { audienceConditionsRoot = nil; audienceObjectLeaves = nil }
        let tree = try conditionTree(conditions)
        // OptimizelyConfig writes a null name as "" and leaves out the plain "$opt_dummy_audience".
        let nameIsText = entry.member("name").map { $0.value.isNull || $0.value.string != nil } ?? true
        if typed { typedAudienceNames[id] = nameIsText }
        else if id != "$opt_dummy_audience" { plainAudienceNames[id] = nameIsText }
        mergedAudienceNames = nil
        if let existing = audienceIndexById[id] {
            self.conditions.replaceAudience(audiences[existing].slot, with: tree)
            audiences[existing] = Audience(id: idText, name: name, slot: audiences[existing].slot, segments: audienceSegments)
        } else {
            let slot = self.conditions.addAudience(tree)
            audienceIndexById[id] = audiences.count
            audiences.append(Audience(id: idText, name: name, slot: slot, segments: audienceSegments))
        }
    }

    /// A typed audience's "name", outside the reference's schema: any value is kept (the reference reads it only
    /// when its OptimizelyConfig writes a rule's conditions with audience names, where a name that is no text
    /// makes it raise: see `optimizelyConfigText`).
    mutating func typedAudienceName(_ field: DatafileReader) -> String {
        if let text = field.value.string { return text }
        warn(field.warning("expected a string, got \(field.value.kindName): kept as it is, as in the reference (whose "
                           + "OptimizelyConfig cannot write it into a rule's audiences)"))
        return field.value.isHashable ? field.value.pythonText : field.value.jsonText
    }

    /// An audience's own condition tree: lists are operators (or an implicit "or"), objects are leaves.
    mutating func conditionTree(_ node: DatafileReader) throws(DatafileError) -> ConditionNode {
        switch node.value.kind {
        case .object:
            return leafNode(leafCondition(node))
        case .array:
            guard let parsed = try operation(node) else { return .not(nil) }  // unknown
            var children: [ConditionNode] = []
            for operand in parsed.operands { children.append(try conditionTree(operand)) }
            return Compilation.combine(parsed.op, children)
        case .int, .bool:
            return conditionIndexLeaf(node)
        default:
            // It indexes its condition list with a string, float or None: it raises when a decision gets here.
            warn(node.warning("expected a condition object or list, got \(node.value.kindName): the reference raises "
                              + "when a decision evaluates it; here it evaluates to unknown"))
            return .not(nil)
        }
    }

    /// An integer (or boolean) where a condition belongs. The reference's decoder turns each condition object
    /// into its index in the audience's condition list, so an integer written there is such an index too
    /// (True is 1, False 0, a negative one counts from the end, as Python indexes lists): the leaf is that
    /// object's condition. An index past the list makes the reference raise when a decision gets here.
    mutating func conditionIndexLeaf(_ node: DatafileReader) -> ConditionNode {
        let leaves = audienceConditionObjects()
        let written = node.value.bool.map { $0 ? 1 : 0 } ?? node.value.int64 ?? Int64.max
        let count = Int64(leaves.count)
        guard !node.value.mayBeClamped, written >= -count, written < count else {
            warn(node.warning("expected a condition object or list, got \(node.value.kindName) \(written): the "
                              + "reference takes it for the index of a condition object and raises, as the audience has "
                              + "\(count); here it evaluates to unknown"))
            return .not(nil)
        }
        let index = Int(written < 0 ? written + count : written)
        warn(node.warning("expected a condition object or list, got \(node.value.kindName): it stands for the "
                          + "audience's condition object \(index), as in the reference"))
        return leafNode(leaves[index])
    }

    /// A leaf of the audience's tree; the segment a "qualified" leaf names joins the audience's segments.
    mutating func leafNode(_ leaf: LeafCondition) -> ConditionNode {
        if leaf.match == .qualified, case .string(let segment) = leaf.value {
            let name = String(decoding: segment, as: UTF8.self)
            if !audienceSegments.contains(name) { audienceSegments.append(name) }
        }
        return .leaf(conditions.addLeaf(leaf))
    }

    /// The audience's condition list as the reference's decoder makes it: every JSON object of its conditions,
    /// innermost first in document order, read as a leaf condition. Made when an index needs it.
    mutating func audienceConditionObjects() -> [LeafCondition] {
        if let audienceObjectLeaves { return audienceObjectLeaves }
        let numbered = audienceObjectCount
        var leaves: [LeafCondition] = []
        if let root = audienceConditionsRoot { collectConditionObjects(root, into: &leaves) }
        audienceObjectCount = numbered
        audienceObjectLeaves = leaves
        return leaves
    }

    private mutating func collectConditionObjects(_ value: JSONValue, into leaves: inout [LeafCondition]) {
        switch value.kind {
        case .object:
            let first = leaves.count
            value.forEachMember { _, member in collectConditionObjects(member, into: &leaves) }
            // leafCondition numbers the objects inside this one again, from the same start: its value's number.
            audienceObjectCount = first
            leaves.append(leafCondition(DatafileReader(value)))
        case .array:
            for index in 0..<value.count { collectConditionObjects(value[index], into: &leaves) }
        default:
            break
        }
    }

    /// A leaf condition. Numbers the objects inside it and then the leaf itself, in the reference's order.
    mutating func leafCondition(_ node: DatafileReader) -> LeafCondition {
        var valueNumber: Int? = nil
        node.value.forEachMember { key, member in
            let number = numberObjects(in: member)
            if strcmp(key, "value") == 0 { valueNumber = number }
        }
        audienceObjectCount += 1
        let name = node.member("name")?.value.stringBytes.map(storedBytes)
        let type = node.member("type")?.value.string
        let matchField = node.member("match")?.value
        let match: MatchType
        switch matchField?.kind {
        case nil, .null?: match = .exact
        case .string?: match = MatchType(name: matchField?.string)
        default: match = .unknown
        }
        let value = valueNumber.map { ConditionValue.int(Int64($0)) } ?? conditionValue(node.member("value")?.value)
        return LeafCondition(attribute: name,
                             hasKnownType: type == "custom_attribute" || type == "third_party_dimension",
                             match: match, value: value)
    }

    /// Numbers every JSON object in `value` as the reference's audience decoder does, and returns the number
    /// `value` itself got when it is an object. The reference decodes audience conditions with a JSON object
    /// hook that turns each object, innermost first in document order, into the next index of the audience's
    /// condition list, so a condition "value" written as an object reaches the match as that integer index
    /// (`{"match": "lt", "value": {"a": 1}}` compares against a number), and objects nested in list values,
    /// names or match types take numbers too.
    mutating func numberObjects(in value: JSONValue) -> Int? {
        switch value.kind {
        case .object:
            value.forEachMember { _, member in _ = numberObjects(in: member) }
            audienceObjectCount += 1
            return audienceObjectCount - 1
        case .array:
            for index in 0..<value.count { _ = numberObjects(in: value[index]) }
            return nil
        default:
            return nil
        }
    }

    /// A copy of `bytes` owned by the config.
    func storedBytes(_ bytes: UTF8Text) -> UTF8Text {
        let stored = strings.store(bytes: bytes)
        return UTF8Text(start: UnsafeRawPointer(stored).assumingMemoryBound(to: UInt8.self), count: bytes.count)
    }

    func conditionValue(_ value: JSONValue?) -> ConditionValue {
        guard let value else { return .missing }
        switch value.kind {
        case .null: return .missing
        case .bool: return .bool(value.bool!)
        case .int: return .int(value.int64!)
        case .double: return .double(value.double!)
        case .string:
            // A value with an unpaired surrogate escape as the reference reads it (WTF-8): no user's text
            // equals or contains it, and versions compare it in code point order.
            if let exact = value.surrogateString { return .string(exact.withUnsafeBufferPointer { storedBytes($0) }) }
            return .string(storedBytes(value.stringBytes!))
        case .array, .object: return .unsupported
        }
    }

    /// Where a rule is, for what an odd "audienceConditions" does to the reference: for experiments and
    /// the rules of a rollout a flag uses, its OptimizelyConfig (built with the client) writes the
    /// conditions out with audience names and may raise (`OptimizelyConfigText`), so the datafile is
    /// refused; elsewhere (holdouts, unused rollouts, "audienceIds") an odd entry merely names no audience.
    enum RuleContext {
        case experiment, holdout
        case rolloutRule(position: Int)
    }

    /// The audience restriction of a rule: "audienceConditions" when present, else "audienceIds".
    mutating func audienceCondition(_ entry: DatafileReader, in context: RuleContext) throws(DatafileError)
        -> AudienceCondition?
    {
        scalarAudienceLeaves = []
        if case .experiment = context {
            // The reference's JSON schema checks audienceIds even when audienceConditions is used.
            for id in try entry.requiredArray("audienceIds") { _ = try id.string() }
        }
        let condition = try audienceConditionTree(entry)
        for leaf in scalarAudienceLeaves { warn(Compilation.scalarAudienceWarning(leaf)) }
        scalarAudienceLeaves = []
        guard let field = entry.member("audienceConditions") else { return condition }
        switch context {
        case .experiment:
            if let raising = optimizelyConfigText.raises(writing: field.value) {
                throw Compilation.optimizelyConfigError(DatafileReader(raising))
            }
        case .holdout:
            break
        case .rolloutRule(let position):
            // Judged now (audiences are read already) and kept as the error only: a streamed rollout's tree
            // is freed when its loop moves on.
            if let raising = optimizelyConfigText.raises(writing: field.value) {
                rolloutConditionErrors[position].append(Compilation.optimizelyConfigError(DatafileReader(raising)))
            }
        }
        return condition
    }

    /// The audience names the reference's OptimizelyConfig writes conditions with: merged once, when the first
    /// rule needs them (every audience is read by then), not once per rule.
    var optimizelyConfigText: OptimizelyConfigText {
        mutating get {
            if let mergedAudienceNames { return mergedAudienceNames }
            let merged = OptimizelyConfigText(nameIsText: plainAudienceNames.merging(typedAudienceNames) { $1 })
            mergedAudienceNames = merged
            return merged
        }
    }

    static func scalarAudienceWarning(_ leaf: DatafileReader) -> DatafileError {
        leaf.warning("expected an audience id (a string), got \(leaf.value.kindName): it names only an audience whose id "
                     + "equals it (Python's ==), else none and evaluates to unknown, as in the reference")
    }

    static func optimizelyConfigError(_ leaf: DatafileReader) -> DatafileError {
        leaf.fail("cannot be written out as an audience name (got \(leaf.value.kindName)): the reference's "
                  + "OptimizelyConfig raises on it (its client construction fails)")
    }

    /// A rollout's rules are written out by the reference's OptimizelyConfig when a flag uses the rollout
    /// (the first rollout with that id): only then can their audienceConditions refuse the datafile.
    mutating func resolveRolloutConditions(usedRolloutIds: ExactKeyed<Bool>) throws(DatafileError) {
        var firstPosition: ExactKeyed<Int> = [:]
        for (position, id) in rolloutIds.enumerated() where firstPosition[id] == nil { firstPosition[id] = position }
        for (id, _) in usedRolloutIds {
            guard let position = firstPosition[id] else { continue }
            for error in rolloutConditionErrors[position] { try record(error) }
        }
    }

    mutating func audienceConditionTree(_ entry: DatafileReader) throws(DatafileError) -> AudienceCondition? {
        // The reference's Experiment and Holdout need the field even when audienceConditions is used.
        _ = try entry.required("audienceIds")
        let field: DatafileReader
        if let conditions = entry.optional("audienceConditions") {
            field = conditions
        } else {
            field = try entry.required("audienceIds")
            // (Experiments' are checked by the schema.) The reference evaluates a bare value as one audience id.
            if field.value.kind != .array {
                warn(field.warning("expected an array, got \(field.value.kindName): evaluated as one audience id, as in "
                                   + "the reference"))
            }
        }
        if field.value.kind == .array && field.value.count == 0 { return nil }
        return AudienceCondition(root: conditions.addRule(try audienceTree(field)), text: PythonJSONText.dumps(field.value))
    }

    /// A rule's tree over audience slots. An id the datafile does not define, or a scalar that is no id
    /// at all, is an audience the reference cannot find: it evaluates to unknown.
    mutating func audienceTree(_ node: DatafileReader) throws(DatafileError) -> ConditionNode {
        switch node.value.kind {
        case .string:
            let id = try node.string()
            guard let index = audienceIndexById[id] else {
                warn(node.warning("unknown audience \"\(id)\" (in neither \"audiences\" nor \"typedAudiences\"): "
                                  + "it evaluates to unknown, as in the reference"))
                return .leaf(unknownAudience())
            }
            return .leaf(audiences[index].slot)
        case .int, .double, .bool, .null:
            // The reference looks the value up as it is: a typed audience with an equal id answers.
            scalarAudienceLeaves.append(node)
            guard let index = audienceIndexById[node.value.identityKey] else { return .leaf(unknownAudience()) }
            return .leaf(audiences[index].slot)
        case .array:
            guard let parsed = try operation(node) else { return .leaf(unknownAudience()) }
            var children: [ConditionNode] = []
            for operand in parsed.operands { children.append(try audienceTree(operand)) }
            return Compilation.combine(parsed.op, children)
        case .object:
            // The reference's lookup cannot hash a dict: it raises once a decision evaluates it.
            warn(node.warning("expected an audience id or a condition list, got an object: the reference raises "
                              + "when a decision evaluates it; here it evaluates to unknown"))
            return .leaf(unknownAudience())
        }
    }

    /// The slot of an audience that evaluates to unknown (a "not" without operand).
    mutating func unknownAudience() -> Int32 {
        if let slot = unknownAudienceSlot { return slot }
        let slot = conditions.addAudience(.not(nil))
        unknownAudienceSlot = slot
        return slot
    }

    /// A condition list's operator and operands: `["and", a, b]` is ("and", [a, b]); a list that does not
    /// start with "and", "or" or "not" is an implicit "or" over all its elements, as in the reference.
    /// An empty list has no operation (nil): the reference indexes its first element and raises once a
    /// decision evaluates it; it evaluates to unknown here, with a warning.
    mutating func operation(_ list: DatafileReader) throws(DatafileError)
        -> (op: String, operands: Slice<DatafileElements>)?
    {
        let items = try list.array()
        guard let first = items.first else {
            warn(list.warning("an empty condition list: the reference raises (IndexError) when a decision evaluates "
                              + "it; here it evaluates to unknown"))
            return nil
        }
        if let op = first.value.string, ["and", "or", "not"].contains(op) { return (op, items.dropFirst()) }
        return ("or", items[...])
    }

    /// "not" negates its first operand only; the reference ignores the rest.
    static func combine(_ op: String, _ children: [ConditionNode]) -> ConditionNode {
        switch op {
        case "and": return .and(children)
        case "not": return .not(children.first)
        default: return .or(children)
        }
    }
}
