/// Compiles an Optimizely v4 datafile into a `ProjectConfig`, validating as it goes.
///
/// The entity order rules follow the reference SDK where datafiles are ambiguous (an experiment id
/// listed twice: rollout rules override top-level experiments and group experiments override both;
/// typedAudiences override audiences with the same id; the last attribute/event/flag with a key wins).
/// Problems the reference would only hit at decision time (a rule naming an unknown audience, a
/// variation naming a variable its flag does not have) are rejected here with their place.
public enum DatafileCompiler {
    public static let maxBytes = 64 << 20
    public static let maxDepth = 64
    /// EXP_MAX_KEY_BYTES: flag, experiment, variation, event and attribute keys longer than this are refused.
    public static let maxKeyBytes = 1024
    public static let supportedVersions: Set<String> = ["4"]

    public static func compile(_ bytes: UnsafeRawBufferPointer) throws(DatafileError) -> ProjectConfig {
        let document: JSONDocument
        do {
            document = try JSONDocument.parse(bytes, what: "datafile", maxBytes: maxBytes, maxDepth: maxDepth,
                                              borrowing: true)
        } catch {
            throw DatafileError(error)
        }
        // The readers borrow the document, which borrows `bytes`: both must outlive the compilation.
        return try withExtendedLifetime(document) { () throws(DatafileError) -> ProjectConfig in
            var compiler = Compilation(root: DatafileReader(document.root))
            return try compiler.run()
        }
    }

    /// Every problem of a datafile with its place, as far as one pass can tell (an entity that fails is
    /// left out, so what refers to it may be reported too). Empty when a client would accept it.
    public static func problems(_ bytes: UnsafeRawBufferPointer) -> [DatafileError] {
        let document: JSONDocument
        do {
            document = try JSONDocument.parse(bytes, what: "datafile", maxBytes: maxBytes, maxDepth: maxDepth,
                                              borrowing: true)
        } catch {
            return [DatafileError(error)]
        }
        return withExtendedLifetime(document) { () -> [DatafileError] in
            var validation = Compilation(root: DatafileReader(document.root), collectsProblems: true)
            do throws(DatafileError) {
                _ = try validation.run()
            } catch {
                // A problem outside any one entity (the header, a missing top-level array) ends the pass.
                return validation.problems.contains(error) ? validation.problems : validation.problems + [error]
            }
            return validation.problems
        }
    }

    public static func compile(_ text: String) throws(DatafileError) -> ProjectConfig {
        var copy = text
        let result: Result<ProjectConfig, DatafileError> = copy.withUTF8 { buffer in
            do throws(DatafileError) { return .success(try compile(UnsafeRawBufferPointer(buffer))) }
            catch { return .failure(error) }
        }
        return try result.get()
    }
}

/// The state of one compilation: entity tables filled in dependency order.
private struct Compilation {
    let root: DatafileReader
    let strings = StringStorage()
    var audiences: [Audience] = []
    /// Every condition tree of the config, flattened for evaluation.
    var conditions = ConditionForest()
    var audienceIndexById: [String: Int] = [:]
    /// The segments of the audience being compiled (see `Audience.segments`).
    var audienceSegments: [String] = []
    var experiments: [Experiment] = []
    var experimentIndexById: [String: Int] = [:]
    /// Experiment ids in first-seen order (the reference's id map iteration order).
    var experimentIdOrder: [String] = []
    /// Each experiment's raw "forcedVariations", parallel to `experiments`.
    var whitelists: [[(user: String, variationKey: String)]] = []
    /// Validating (rather than compiling) records each entity's problem and goes on with the next one.
    let collectsProblems: Bool
    var problems: [DatafileError] = []
    var groups: [Group] = []
    var rolloutRulesById: [String: [Int32]] = [:]
    var holdouts: [Holdout] = []
    var globalHoldouts: [Int32] = []
    var holdoutsByRuleId: [String: [Int32]] = [:]
    var indexes = ProjectConfig.Indexes()

    init(root: DatafileReader, collectsProblems: Bool = false) {
        self.root = root
        self.collectsProblems = collectsProblems
    }

    /// A problem with one entity: compiling stops at it, validating records it and carries on.
    mutating func record(_ problem: DatafileError) throws(DatafileError) {
        guard collectsProblems else { throw problem }
        problems.append(problem)
    }

    mutating func run() throws(DatafileError) -> ProjectConfig {
        guard root.value.kind == .object else {
            throw DatafileError(.invalidDatafile, "datafile: expected a JSON object, got \(root.value.kindName)")
        }
        let header = try readHeader()
        let attributes = try readAttributes()
        let events = try readEvents()
        try readAudiences()
        try readExperiments()
        try readHoldouts()
        let flags = try readFlags()
        resolveWhitelists()
        if let first = problems.first { throw first }
        return ProjectConfig(header: header, experiments: experiments, groups: groups, audiences: audiences,
                             conditions: conditions,
                             flags: flags, events: events, attributes: attributes, holdouts: holdouts,
                             globalHoldouts: globalHoldouts, indexes: indexes, strings: strings)
    }

    // MARK: header, attributes, events

    func readHeader() throws(DatafileError) -> ProjectConfig.Header {
        let versionField = try root.required("version")
        guard let version = versionField.value.string else {
            throw DatafileError(.unsupportedVersion,
                                "datafile: version: expected a string such as \"4\", got \(versionField.value.kindName)")
        }
        guard DatafileCompiler.supportedVersions.contains(version) else {
            throw DatafileError(.unsupportedVersion, "datafile: version \"\(version)\" is not supported (supported: \"4\")")
        }
        var header = ProjectConfig.Header()
        header.version = version
        header.projectId = try root.requiredString("projectId")
        header.accountId = try root.requiredString("accountId")
        header.revision = try root.requiredString("revision")
        header.environmentKey = try root.optionalString("environmentKey")
        header.sdkKey = try root.optionalString("sdkKey")
        header.anonymizeIP = try root.optionalBool("anonymizeIP") ?? false
        header.sendFlagDecisions = try root.optionalBool("sendFlagDecisions") ?? false
        header.botFiltering = try root.optionalBool("botFiltering")
        header.region = try root.optionalString("region") ?? "US"
        if header.region.isEmpty { header.region = "US" }
        header.odpIntegration = readODPIntegration()
        return header
    }

    /// The first "integrations" entry with key "odp" (later ones are ignored, as in the reference).
    func readODPIntegration() -> ODPIntegration? {
        guard let list = root.member("integrations"), list.value.kind == .array else { return nil }
        for entry in (try? list.array()) ?? [] {
            guard entry.member("key")?.value.string == "odp" else { continue }
            // Lenient like the reference: a field that is not a string counts as missing.
            return ODPIntegration(host: entry.member("host")?.value.string,
                                  publicKey: entry.member("publicKey")?.value.string)
        }
        return nil
    }

    mutating func readAttributes() throws(DatafileError) -> [Attribute] {
        var attributes: [Attribute] = []
        for entry in try root.requiredArray("attributes") {
            do throws(DatafileError) {
                let attribute = Attribute(id: try entry.requiredString("id"), key: try entry.requiredKey())
                indexes.attributes.insert(attribute.key, attributes.count, replacing: true)
                attributes.append(attribute)
            } catch {
                try record(error)
            }
        }
        return attributes
    }

    mutating func readEvents() throws(DatafileError) -> [Event] {
        var events: [Event] = []
        for entry in try root.requiredArray("events") {
            do throws(DatafileError) {
                let event = Event(id: try entry.requiredString("id"), key: try entry.requiredKey())
                for id in try entry.requiredArray("experimentIds") { _ = try id.string() }
                indexes.events.insert(event.key, events.count, replacing: true)
                events.append(event)
            } catch {
                try record(error)
            }
        }
        return events
    }

    // MARK: audiences

    mutating func readAudiences() throws(DatafileError) {
        for entry in try root.requiredArray("audiences") {
            do throws(DatafileError) {
                let conditionsField = try entry.required("conditions")
                guard let textBytes = conditionsField.value.stringBytes else {
                    throw conditionsField.fail("expected a string, got \(conditionsField.value.kindName)")
                }
                // The conditions text lives in the datafile's document, which outlives this nested one.
                let parsed: JSONDocument
                do {
                    parsed = try JSONDocument.parse(UnsafeRawBufferPointer(textBytes), what: "datafile",
                                                    maxBytes: DatafileCompiler.maxBytes,
                                                    maxDepth: DatafileCompiler.maxDepth, borrowing: true)
                } catch {
                    // The place is worked out for the message only.
                    let message = error.message.dropFirst("datafile".count)
                    throw DatafileError(.invalidDatafile, "datafile: \(conditionsField.path)" + message)
                }
                try withExtendedLifetime(parsed) { () throws(DatafileError) in
                    try addAudience(entry, conditions: DatafileReader(parsed.root, within: conditionsField.value),
                                    conditionsText: String(decoding: textBytes, as: UTF8.self))
                }
            } catch {
                try record(error)
            }
        }
        for entry in try root.optionalArray("typedAudiences") {
            do throws(DatafileError) {
                let conditions = try entry.required("conditions")
                try addAudience(entry, conditions: conditions, conditionsText: conditions.value.jsonText)
            } catch {
                try record(error)
            }
        }
    }

    /// Compiles an audience into the condition forest. An id seen before (typedAudiences after audiences)
    /// replaces the earlier definition in place, as in the reference.
    mutating func addAudience(_ entry: DatafileReader, conditions: DatafileReader, conditionsText: String)
        throws(DatafileError)
    {
        let id = try entry.requiredString("id")
        let name = try entry.requiredString("name")
        audienceSegments = []
        let tree = try conditionTree(conditions)
        if let existing = audienceIndexById[id] {
            self.conditions.replaceAudience(Int32(existing), with: tree)
            audiences[existing] = Audience(id: id, name: name, slot: Int32(existing), conditionsText: conditionsText,
                                           segments: audienceSegments)
        } else {
            let slot = self.conditions.addAudience(tree)
            audienceIndexById[id] = audiences.count
            audiences.append(Audience(id: id, name: name, slot: slot, conditionsText: conditionsText,
                                      segments: audienceSegments))
        }
    }

    /// An audience's own condition tree: lists are operators (or an implicit "or"), objects are leaves.
    mutating func conditionTree(_ node: DatafileReader) throws(DatafileError) -> ConditionNode {
        switch node.value.kind {
        case .object:
            let leaf = try leafCondition(node)
            if leaf.match == .qualified, case .string(let segment) = leaf.value {
                let name = String(decoding: segment, as: UTF8.self)
                if !audienceSegments.contains(name) { audienceSegments.append(name) }
            }
            return .leaf(conditions.addLeaf(leaf))
        case .array:
            let (op, operands) = try Compilation.operation(node)
            var children: [ConditionNode] = []
            for operand in operands { children.append(try conditionTree(operand)) }
            return Compilation.combine(op, children)
        default:
            throw node.fail("expected a condition object or list, got \(node.value.kindName)")
        }
    }

    func leafCondition(_ node: DatafileReader) throws(DatafileError) -> LeafCondition {
        let name = node.member("name")?.value.stringBytes.map(storedBytes)
        let type = node.member("type")?.value.string
        let matchField = node.member("match")?.value
        let match: MatchType
        switch matchField?.kind {
        case nil, .null?: match = .exact
        case .string?: match = MatchType(name: matchField?.string)
        default: match = .unknown
        }
        return LeafCondition(attribute: name,
                             hasKnownType: type == "custom_attribute" || type == "third_party_dimension",
                             match: match, value: conditionValue(node.member("value")?.value))
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
        case .string: return .string(storedBytes(value.stringBytes!))
        case .array, .object: return .unsupported
        }
    }

    /// The audience restriction of a rule: "audienceConditions" when present, else "audienceIds".
    mutating func audienceCondition(_ entry: DatafileReader) throws(DatafileError) -> AudienceCondition? {
        let field: DatafileReader
        if let conditions = entry.optional("audienceConditions") {
            field = conditions
        } else {
            field = try entry.required("audienceIds")
            guard field.value.kind == .array else { throw field.fail("expected an array, got \(field.value.kindName)") }
        }
        if field.value.kind == .array && field.value.count == 0 { return nil }
        return AudienceCondition(root: conditions.addRule(try audienceTree(field)), text: PythonJSONText.dumps(field.value))
    }

    func audienceTree(_ node: DatafileReader) throws(DatafileError) -> ConditionNode {
        switch node.value.kind {
        case .string:
            let id = try node.string()
            guard let index = audienceIndexById[id] else { throw node.fail("unknown audience \"\(id)\"") }
            return .leaf(Int32(index))
        case .array:
            let (op, operands) = try Compilation.operation(node)
            var children: [ConditionNode] = []
            for operand in operands { children.append(try audienceTree(operand)) }
            return Compilation.combine(op, children)
        default:
            throw node.fail("expected an audience id or a condition list, got \(node.value.kindName)")
        }
    }

    /// A condition list's operator and operands: `["and", a, b]` is ("and", [a, b]); a list that does not
    /// start with "and", "or" or "not" is an implicit "or" over all its elements, as in the reference.
    static func operation(_ list: DatafileReader) throws(DatafileError) -> (op: String, operands: [DatafileReader]) {
        let items = try list.array()
        guard let first = items.first else { throw list.fail("an empty condition list cannot be evaluated") }
        if let op = first.value.string, ["and", "or", "not"].contains(op) { return (op, Array(items.dropFirst())) }
        return ("or", items)
    }

    /// "not" negates its first operand only; the reference ignores the rest.
    static func combine(_ op: String, _ children: [ConditionNode]) -> ConditionNode {
        switch op {
        case "and": return .and(children)
        case "not": return .not(children.first)
        default: return .or(children)
        }
    }

    // MARK: experiments, groups, rollouts

    mutating func readExperiments() throws(DatafileError) {
        for entry in try root.requiredArray("experiments") {
            do throws(DatafileError) {
                try addExperiment(entry, kind: .experiment, group: -1, groupId: "")
            } catch {
                try record(error)
            }
        }
        for rollout in try root.optionalArray("rollouts") {
            let id = try rollout.requiredString("id")
            var rules: [Int32] = []
            for entry in try rollout.requiredArray("experiments") {
                do throws(DatafileError) {
                    rules.append(Int32(try addExperiment(entry, kind: .rolloutRule, group: -1, groupId: "")))
                } catch {
                    try record(error)
                }
            }
            rolloutRulesById[id] = rules
        }
        var groupEntries: [(reader: DatafileReader, id: String, experiments: [Int])] = []
        for entry in try root.requiredArray("groups") {
            let id = try entry.requiredString("id")
            let policy = try entry.requiredString("policy")
            var members: [Int] = []
            for member in try entry.requiredArray("experiments") {
                do throws(DatafileError) {
                    // Only the "random" policy makes a group mutually exclusive; others bucket independently.
                    let group = policy == "random" ? Int32(groupEntries.count) : -1
                    members.append(try addExperiment(member, kind: .experiment, group: group, groupId: id))
                } catch {
                    try record(error)
                }
            }
            groupEntries.append((entry, id, members))
        }
        for (entry, id, _) in groupEntries {
            let ranges = try trafficRanges(entry.requiredArray("trafficAllocation")) { entityId in
                experimentIndexById[entityId]
            }
            groups.append(Group(id: ConfigString(id, in: strings), traffic: ranges))
        }
        for id in experimentIdOrder {
            let index = experimentIndexById[id]!
            indexes.experimentIds.insert(id, index, replacing: true)
            indexes.experimentKeys.insert(experiments[index].key.text, index, replacing: true)
        }
    }

    @discardableResult
    mutating func addExperiment(_ entry: DatafileReader, kind: RuleKind, group: Int32, groupId: String)
        throws(DatafileError) -> Int
    {
        let id = try entry.requiredString("id")
        let key = try entry.requiredKey()
        let status = try entry.requiredString("status")
        let layerId = try entry.requiredString("layerId")
        let variations = try readVariations(entry.requiredArray("variations"))
        let traffic = try trafficRanges(entry.requiredArray("trafficAllocation")) { entityId in
            variations.firstIndex { $0.id.text == entityId }
        }
        let whitelist = try readWhitelist(entry.required("forcedVariations"))
        let experiment = Experiment(
            id: ConfigString(id, in: strings), key: ConfigString(key, in: strings), layerId: layerId,
            isRunning: status == "Running", kind: kind, type: try entry.optionalString("type") ?? "",
            audience: try audienceCondition(entry), variations: variations, traffic: traffic,
            whitelist: nil, group: group, groupId: groupId)
        let index = experiments.count
        experiments.append(experiment)
        whitelists.append(whitelist)
        if experimentIndexById[id] == nil { experimentIdOrder.append(id) }
        experimentIndexById[id] = index
        return index
    }

    func readVariations(_ entries: [DatafileReader]) throws(DatafileError) -> [Variation] {
        var variations: [Variation] = []
        for entry in entries {
            var values: [VariableValue] = []
            for usage in try entry.optionalArray("variables") {
                values.append(VariableValue(id: try usage.requiredString("id"), value: try usage.requiredString("value")))
            }
            let variation = Variation(id: ConfigString(try entry.requiredString("id"), in: strings),
                                      key: ConfigString(try entry.requiredKey(), in: strings),
                                      featureEnabled: try entry.optionalBool("featureEnabled") ?? false,
                                      variableValues: values)
            // The reference indexes variations by key: a repeated key keeps its first position and its
            // last definition, and the shadowed variation is unreachable (even by id).
            if let existing = variations.firstIndex(where: { $0.key.text == variation.key.text }) {
                variations[existing] = variation
            } else {
                variations.append(variation)
            }
        }
        return variations
    }

    func trafficRanges(_ entries: [DatafileReader], entity: (String) -> Int?) throws(DatafileError) -> [TrafficRange] {
        var ranges: [TrafficRange] = []
        for entry in entries {
            let entityId = try entry.requiredString("entityId")
            let endField = try entry.required("endOfRange")
            let end = try endField.int()
            guard end >= 0 && end <= 10_000 else { throw endField.fail("must be between 0 and 10000, got \(end)") }
            ranges.append(TrafficRange(endOfRange: Int32(end), entity: entityId.isEmpty ? TrafficRange.emptyEntity
                                       : entity(entityId).map(Int32.init) ?? TrafficRange.unknownEntity))
        }
        return ranges
    }

    /// "forcedVariations": user id -> variation key, resolved once every variation is known.
    func readWhitelist(_ field: DatafileReader) throws(DatafileError) -> [(user: String, variationKey: String)] {
        var entries: [(user: String, variationKey: String)] = []
        for (user, variationKey) in try field.object() { entries.append((user, try variationKey.string())) }
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

    // MARK: holdouts

    mutating func readHoldouts() throws(DatafileError) {
        for entry in try root.optionalArray("holdouts") {
            do throws(DatafileError) {
                let holdout = try readHoldout(entry)
                holdouts.append(holdout)
                if holdout.isRunning { globalHoldouts.append(Int32(holdouts.count - 1)) }
            } catch {
                try record(error)
            }
        }
        for entry in try root.optionalArray("localHoldouts") {
            do throws(DatafileError) {
                // The reference skips a local holdout without includedRules; so do we.
                guard let rules = entry.optional("includedRules") else { continue }
                let holdout = try readHoldout(entry)
                holdouts.append(holdout)
                guard holdout.isRunning else { continue }
                for rule in try rules.array() {
                    holdoutsByRuleId[try rule.string(), default: []].append(Int32(holdouts.count - 1))
                }
            } catch {
                try record(error)
            }
        }
    }

    mutating func readHoldout(_ entry: DatafileReader) throws(DatafileError) -> Holdout {
        let variations = try readVariations(entry.requiredArray("variations"))
        return Holdout(
            id: ConfigString(try entry.requiredString("id"), in: strings),
            key: ConfigString(try entry.requiredKey(), in: strings),
            isRunning: try entry.requiredString("status") == "Running",
            audience: try audienceCondition(entry), variations: variations,
            traffic: try trafficRanges(entry.requiredArray("trafficAllocation")) { entityId in
                variations.firstIndex { $0.id.text == entityId }
            },
            excludeTargetedDeliveries: try entry.optionalBool("excludeTargetedDeliveries") ?? false)
    }

    // MARK: feature flags

    mutating func readFlags() throws(DatafileError) -> [Flag] {
        struct FlagSource { let reader: DatafileReader; let id: String; let key: String; let variables: [Variable]
                            let experimentRules: [Int32]; let rolloutRules: [Int32]; let rollout: FlagRollout }
        var sources: [FlagSource] = []
        for entry in try root.optionalArray("featureFlags") {
            do throws(DatafileError) {
                let variables = try readVariables(entry.requiredArray("variables"))
                var experimentRules: [Int32] = []
                for idField in try entry.requiredArray("experimentIds") {
                    let id = try idField.string()
                    guard let index = experimentIndexById[id] else { throw idField.fail("unknown experiment \"\(id)\"") }
                    experimentRules.append(Int32(index))
                }
                let rolloutField = try entry.required("rolloutId")
                let rolloutId = try rolloutField.string()
                var rolloutRules: [Int32] = []
                if !rolloutId.isEmpty {
                    guard let rules = rolloutRulesById[rolloutId] else { throw rolloutField.fail("unknown rollout \"\(rolloutId)\" (no such id in \"rollouts\")") }
                    rolloutRules = rules
                }
                sources.append(FlagSource(reader: entry, id: try entry.requiredString("id"), key: try entry.requiredKey(),
                                          variables: variables, experimentRules: experimentRules, rolloutRules: rolloutRules,
                                          rollout: rolloutId.isEmpty ? .none
                                              : rolloutRulesById[rolloutId] == nil ? .missing : .found(id: rolloutId)))
                appendEveryoneElse(toFeatureRolloutsOf: experimentRules, rolloutRules: rolloutRules)
            } catch {
                try record(error)
            }
        }
        let usages = variableUsagesByVariationId()
        var flags: [Flag] = []
        for source in sources {
            let flag = try compileFlag(source.reader, id: source.id, key: source.key, variables: source.variables,
                                       experimentRules: source.experimentRules, rolloutRules: source.rolloutRules,
                                       rollout: source.rollout, usages: usages)
            indexes.flags.insert(source.key, flags.count, replacing: true)
            flags.append(flag)
        }
        return flags
    }

    func readVariables(_ entries: [DatafileReader]) throws(DatafileError) -> [Variable] {
        var variables: [Variable] = []
        for entry in entries {
            let typeField = try entry.required("type")
            let typeName = try typeField.string()
            let subType = try entry.optionalString("subType")
            let resolved = typeName == "string" && subType == "json" ? "json" : typeName
            guard let type = VariableType(rawValue: resolved) else {
                throw typeField.fail("unknown variable type \"\(typeName)\" (boolean, integer, double, string, json)")
            }
            let defaultField = try entry.required("defaultValue")
            variables.append(Variable(id: try entry.requiredString("id"), key: try entry.requiredString("key"),
                                      type: type, defaultValue: try defaultField.string()))
        }
        return variables
    }

    /// A flag's "fr" (feature rollout) experiments also serve the everyone-else variation to users
    /// outside their traffic: the reference appends it with a range ending at 10000.
    mutating func appendEveryoneElse(toFeatureRolloutsOf experimentRules: [Int32], rolloutRules: [Int32]) {
        guard let last = rolloutRules.last, let everyoneElse = experiments[Int(last)].variations.first else { return }
        for rule in experimentRules where experiments[Int(rule)].type == "fr" {
            let experiment = experiments[Int(rule)]
            experiments[Int(rule)] = experiment.with(
                variations: experiment.variations + [everyoneElse],
                traffic: experiment.traffic + [TrafficRange(endOfRange: 10_000, entity: Int32(experiment.variations.count))])
        }
    }

    /// The reference keeps one variable-usage table keyed by variation id; later definitions win.
    func variableUsagesByVariationId() -> [String: [VariableValue]] {
        var usages: [String: [VariableValue]] = [:]
        for id in experimentIdOrder {
            for variation in experiments[experimentIndexById[id]!].variations {
                usages[variation.id.text] = variation.variableValues
            }
        }
        return usages
    }

    func compileFlag(_ entry: DatafileReader, id: String, key: String, variables: [Variable], experimentRules: [Int32],
                     rolloutRules: [Int32], rollout: FlagRollout, usages: [String: [VariableValue]])
        throws(DatafileError) -> Flag
    {
        let variableIds = Set(variables.map(\.id))
        var flagVariations: [FlagVariation] = []
        var rules: [FlagRule] = []
        for ruleIndex in experimentRules + rolloutRules {
            let experiment = experiments[Int(ruleIndex)]
            var flagVariationOf: [Int32] = []
            for (position, variation) in experiment.variations.enumerated() {
                for usage in variation.variableValues where !variableIds.contains(usage.id) {
                    throw DatafileError(.invalidDatafile, "datafile: experiment \"\(experiment.key.text)\" variation "
                        + "\"\(variation.key.text)\" (variations[\(position)]): variable id \"\(usage.id)\" is not a "
                        + "variable of flag \"\(key)\"")
                }
                if let existing = flagVariations.firstIndex(where: { $0.id == variation.id.text }) {
                    flagVariationOf.append(Int32(existing))
                    continue
                }
                let json = variablesJSON(variables, overrides: usages[variation.id.text] ?? [])
                flagVariations.append(FlagVariation(id: variation.id.text, key: variation.key,
                                                    featureEnabled: variation.featureEnabled,
                                                    variablesJSON: strings.store(json)))
                flagVariationOf.append(Int32(flagVariations.count - 1))
            }
            rules.append(FlagRule(experiment: ruleIndex, holdouts: holdoutsByRuleId[experiment.id.text] ?? [],
                                  flagVariationOf: flagVariationOf))
        }
        return Flag(id: id, key: ConfigString(key, in: strings), rules: rules, experimentRuleCount: experimentRules.count,
                    rollout: rollout, variables: variables, flagVariations: flagVariations,
                    defaultVariablesJSON: strings.store(variablesJSON(variables, overrides: [])),
                    holdoutVariablesJSON: strings.store(holdoutVariablesJSON(variables)))
    }

    /// What the reference's typecasts make of a missing value: `None == "true"` for a boolean, an
    /// exception (so null) for numbers and JSON, null itself for strings.
    func holdoutVariablesJSON(_ variables: [Variable]) -> String {
        var writer = JSONWriter()
        writer.beginObject()
        for variable in variables {
            writer.key(variable.key)
            writer.raw(variable.type == .boolean ? "false" : "null")
        }
        writer.endObject()
        return writer.text
    }

    func variablesJSON(_ variables: [Variable], overrides: [VariableValue]) -> String {
        var writer = JSONWriter()
        writer.beginObject()
        for variable in variables {
            let text = overrides.last(where: { $0.id == variable.id })?.value ?? variable.defaultValue
            writer.key(variable.key)
            writer.raw(VariableValues.json(text, as: variable.type))
        }
        writer.endObject()
        return writer.text
    }
}
