/// Compiles an Optimizely v4 datafile into a `ProjectConfig`, validating as it goes.
///
/// Acceptance is the reference SDK's: a datafile is refused (a `.error`) only where optimizely-sdk
/// refuses it — not JSON, its JSON schema, an unsupported version, or data its config construction
/// raises on (a flag naming an unknown experiment or rollout, a rollout rule missing a field) — plus
/// the few shapes on which the reference's decisions raise (an empty condition list, an object where
/// an audience id belongs) and this library's key limits. Everything else the reference accepts is
/// compiled with the reference's semantics and reported as a `.warning` (`ProjectConfig.warnings`):
/// a rule naming an unknown audience (that audience evaluates to unknown), a traffic range ending
/// outside 0...10000 (a range past 10000 covers the rest, a negative one nothing), a variation naming
/// a variable its flag does not have (ignored), a variable of an unknown type (a string).
///
/// The entity order rules follow the reference SDK where datafiles are ambiguous (an experiment id
/// listed twice: rollout rules override top-level experiments and group experiments override both;
/// typedAudiences override audiences with the same id; the last attribute/event/flag with a key wins).
public enum DatafileCompiler {
    public static let maxBytes = 64 << 20
    public static let maxDepth = 64
    /// EXP_MAX_KEY_BYTES: flag, experiment, variation, event and attribute keys longer than this are refused.
    public static let maxKeyBytes = 1024
    /// The reference's supported versions: it reads "2" and "3" datafiles with the same code as "4".
    public static let supportedVersions: Set<String> = ["2", "3", "4"]

    /// The steps of a compilation, for callers that time them (see `compile(_:after:)`): the callback
    /// hears each step as it begins (a streamed compilation alternates between them element by element)
    /// and `.done` at the end.
    public enum Step: Sendable { case parse, compile, free, done }

    public static func compile(_ bytes: UnsafeRawBufferPointer) throws(DatafileError) -> ProjectConfig {
        try compile(bytes, after: nil)
    }

    /// json-c parses `bytes` in place, one element of the large top-level arrays at a time
    /// (`StreamedDatafile`): the compiler reads each element into the config and its tree is freed before
    /// the next one is parsed, so json-c's tree of the whole datafile never exists. A datafile the
    /// streamed pass does not accept as it is (any error: malformed JSON, a problem of the datafile) is
    /// compiled again from json-c's tree of the whole text, which gives the result and the message every
    /// caller and test knows. Every tree is freed before the config is returned (so before a caller
    /// publishes it). `after` hears each step as it begins: the runtime times them for its debug log.
    public static func compile(_ bytes: UnsafeRawBufferPointer, after: ((Step) -> Void)?) throws(DatafileError)
        -> ProjectConfig
    {
        after?(.parse)
        if let config = compileStreamed(bytes, after: after) {
            after?(.done)
            return config
        }
        return try compileWholeText(bytes, after: after)
    }

    /// json-c's tree of the whole text, compiled: the path every datafile took before the streamed one,
    /// and the one that words every error.
    static func compileWholeText(_ bytes: UnsafeRawBufferPointer, after: ((Step) -> Void)?) throws(DatafileError)
        -> ProjectConfig
    {
        after?(.parse)
        var document: JSONDocument?
        do {
            document = try JSONDocument.parse(bytes, what: "datafile", maxBytes: maxBytes, maxDepth: maxDepth)
        } catch {
            after?(.done)
            throw DatafileError(error)
        }
        after?(.compile)
        // The readers borrow json-c's tree: the document must outlive the compilation.
        let config = try withExtendedLifetime(document!) { () throws(DatafileError) -> ProjectConfig in
            var compiler = Compilation(root: DatafileReader(document!.root))
            return try compiler.run()
        }
        after?(.free)
        document = nil
        after?(.done)
        return config
    }

    /// The config of a datafile read element by element, or nil when the whole-text path must decide
    /// (see `compile(_:after:)`).
    static func compileStreamed(_ bytes: UnsafeRawBufferPointer, after: ((Step) -> Void)?) -> ProjectConfig? {
        let stream = StreamedDatafile(bytes, step: after)
        defer {
            after?(.free)
            stream.release()
        }
        guard !stream.failed else { return nil }
        after?(.compile)
        var compiler = Compilation(root: DatafileReader(stream.skeleton.root), stream: stream)
        let config: ProjectConfig
        do {
            config = try compiler.run()
        } catch {
            return nil
        }
        after?(.parse)
        guard stream.finish() else { return nil }
        return config
    }

    /// Every problem of a datafile with its place and severity, as far as one pass can tell (an entity
    /// with an error is left out, so what refers to it may be reported too). A client accepts the
    /// datafile when none of them is an `.error`; the `.warning`s are its `ProjectConfig.warnings`.
    public static func problems(_ bytes: UnsafeRawBufferPointer) -> [DatafileError] {
        let document: JSONDocument
        do {
            document = try JSONDocument.parse(bytes, what: "datafile", maxBytes: maxBytes, maxDepth: maxDepth)
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
    /// Errors (when validating) and warnings, in the order they were found.
    var problems: [DatafileError] = []
    /// The audience slot standing for an audience id that is in neither "audiences" nor "typedAudiences":
    /// the reference evaluates such an audience to unknown (made on first use).
    var unknownAudienceSlot: Int32? = nil
    /// Non-string audience ids met in the rule tree being compiled (see `RuleContext`).
    var scalarAudienceLeaves: [DatafileReader] = []
    /// Per position in "rollouts": its id, and the non-string audience ids in its rules' audienceConditions
    /// (an error if a flag uses the rollout, see `RuleContext`).
    var rolloutIds: [String] = []
    var rolloutScalarLeaves: [[DatafileReader]] = []
    var groups: [Group] = []
    var rolloutRulesById: [String: [Int32]] = [:]
    var holdouts: [Holdout] = []
    var globalHoldouts: [Int32] = []
    var holdoutsByRuleId: [String: [Int32]] = [:]
    var indexes = ProjectConfig.Indexes()
    /// The datafile read element by element, when it is (else `root` is json-c's tree of the whole text).
    let stream: StreamedDatafile?
    /// Element documents whose readers are kept past their element (see `pin`).
    var pinned: [JSONDocument] = []

    init(root: DatafileReader, collectsProblems: Bool = false, stream: StreamedDatafile? = nil) {
        self.root = root
        self.collectsProblems = collectsProblems
        self.stream = stream
    }

    /// Keeps the document `reader` reads alive until the compilation ends: a streamed element's tree is
    /// otherwise freed when its section's loop moves on.
    mutating func pin(_ reader: DatafileReader) {
        pinned.append(reader.value.document)
    }

    /// A problem with one entity: compiling stops at it, validating records it and carries on.
    mutating func record(_ problem: DatafileError) throws(DatafileError) {
        guard collectsProblems else { throw problem }
        problems.append(problem)
    }

    /// Something the reference accepts: compiling goes on with the reference's semantics and reports it.
    mutating func warn(_ warning: DatafileError) {
        problems.append(warning)
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
        if let first = problems.first(where: { $0.severity == .error }) { throw first }
        return ProjectConfig(header: header, experiments: experiments, groups: groups, audiences: audiences,
                             conditions: conditions,
                             flags: flags, events: events, attributes: attributes, holdouts: holdouts,
                             globalHoldouts: globalHoldouts, indexes: indexes, strings: strings, warnings: problems)
    }

    // MARK: header, attributes, events

    mutating func readHeader() throws(DatafileError) -> ProjectConfig.Header {
        let versionField = try root.required("version")
        guard let version = versionField.value.string else {
            throw DatafileError(.unsupportedVersion,
                                "datafile: version: expected a string such as \"4\", got \(versionField.value.kindName)")
        }
        guard DatafileCompiler.supportedVersions.contains(version) else {
            throw DatafileError(.unsupportedVersion, "datafile: version \"\(version)\" is not supported (supported: \"2\", \"3\", \"4\")")
        }
        var header = ProjectConfig.Header()
        header.version = version
        header.projectId = try root.requiredString("projectId")
        header.accountId = try root.requiredString("accountId")
        header.revision = try root.requiredString("revision")
        header.environmentKey = optionalText(root, "environmentKey")
        header.sdkKey = optionalText(root, "sdkKey")
        // Outside the reference's schema. It tests "sendFlagDecisions" for truth; it sends "anonymizeIP" in
        // events as the datafile has it, whatever its type; it sends "botFiltering" only when it is a boolean.
        header.anonymizeIP = truth(root, "anonymizeIP") ?? false
        // (null included: `config.get('anonymizeIP', False)` is None then, sent as null.)
        if let field = root.member("anonymizeIP") { header.anonymizeIPJSON = PythonJSONText.dumps(field.value) }
        header.sendFlagDecisions = truth(root, "sendFlagDecisions") ?? false
        header.botFiltering = boolean(root, "botFiltering")
        header.region = try root.optionalString("region") ?? "US"
        if header.region.isEmpty { header.region = "US" }
        header.odpIntegration = readODPIntegration()
        return header
    }

    /// An optional string outside the reference's schema: another JSON type is kept there as it is; here
    /// it counts as absent, with a warning.
    mutating func optionalText(_ entry: DatafileReader, _ name: String) -> String? {
        guard let field = entry.optional(name) else { return nil }
        guard let text = field.value.string else {
            warn(field.warning("expected a string, got \(field.value.kindName): taken as absent"))
            return nil
        }
        return text
    }

    /// An optional top-level list. Absent is empty; present as null the reference iterates None and its
    /// config construction raises, so it is refused.
    func section(_ name: String) throws(DatafileError) -> DatafileSection {
        if let stream, let spans = stream.spans(of: name) { return DatafileSection(stream, name, spans) }
        guard let field = root.member(name) else { return DatafileSection([]) }
        return DatafileSection(try field.array())
    }

    /// A required top-level list. A streamed datafile's elements are parsed one at a time as the loop
    /// reaches them: a reader kept past its element needs `pin`.
    func requiredSection(_ name: String) throws(DatafileError) -> DatafileSection {
        if let stream, let spans = stream.spans(of: name) { return DatafileSection(stream, name, spans) }
        return DatafileSection(try root.requiredArray(name))
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
        for entry in try requiredSection("attributes") {
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
        for entry in try requiredSection("events") {
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
        for entry in try requiredSection("audiences") {
            do throws(DatafileError) {
                let conditionsField = try entry.required("conditions")
                guard let textBytes = conditionsField.value.stringBytes else {
                    throw conditionsField.fail("expected a string, got \(conditionsField.value.kindName)")
                }
                // The conditions text lives in the datafile's tree, which outlives this nested one.
                let parsed: JSONDocument
                do {
                    parsed = try JSONDocument.parse(UnsafeRawBufferPointer(textBytes), what: "datafile",
                                                    maxBytes: DatafileCompiler.maxBytes,
                                                    maxDepth: DatafileCompiler.maxDepth)
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
        for entry in try section("typedAudiences") {
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
            self.conditions.replaceAudience(audiences[existing].slot, with: tree)
            audiences[existing] = Audience(id: id, name: name, slot: audiences[existing].slot, conditionsText: conditionsText,
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

    /// Where a rule is, for what a non-string audience id in its "audienceConditions" does to the reference:
    /// for experiments and the rules of a rollout a flag uses, its OptimizelyConfig (built with the client)
    /// writes the conditions out as text and raises on a number, boolean or null, so the datafile is
    /// refused; elsewhere (holdouts, unused rollouts, "audienceIds") the id merely names no audience.
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
        let leaves = scalarAudienceLeaves
        scalarAudienceLeaves = []
        guard !leaves.isEmpty else { return condition }
        if entry.optional("audienceConditions") == nil {
            for leaf in leaves { warn(Compilation.scalarAudienceWarning(leaf)) }
            return condition
        }
        switch context {
        case .experiment:
            throw Compilation.scalarAudienceError(leaves[0])
        case .holdout:
            for leaf in leaves { warn(Compilation.scalarAudienceWarning(leaf)) }
        case .rolloutRule(let position):
            rolloutScalarLeaves[position] += leaves
        }
        return condition
    }

    static func scalarAudienceWarning(_ leaf: DatafileReader) -> DatafileError {
        leaf.warning("expected an audience id (a string), got \(leaf.value.kindName): it names no audience and "
                     + "evaluates to unknown, as in the reference")
    }

    static func scalarAudienceError(_ leaf: DatafileReader) -> DatafileError {
        leaf.fail("expected an audience id (a string), got \(leaf.value.kindName): the reference cannot write it "
                  + "out as an audience name (its client construction raises)")
    }

    /// A rollout's rules are written out by the reference's OptimizelyConfig when a flag uses the rollout
    /// (the first rollout with that id): only then does a non-string audience id refuse the datafile.
    mutating func resolveRolloutScalarLeaves(usedRolloutIds: Set<String>) throws(DatafileError) {
        var firstPosition: [String: Int] = [:]
        for (position, id) in rolloutIds.enumerated() where firstPosition[id] == nil { firstPosition[id] = position }
        for (position, leaves) in rolloutScalarLeaves.enumerated() where !leaves.isEmpty {
            let id = rolloutIds[position]
            if usedRolloutIds.contains(id) && firstPosition[id] == position {
                try record(Compilation.scalarAudienceError(leaves[0]))
            } else {
                for leaf in leaves { warn(Compilation.scalarAudienceWarning(leaf)) }
            }
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
            guard field.value.kind == .array else { throw field.fail("expected an array, got \(field.value.kindName)") }
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
            scalarAudienceLeaves.append(node)
            pin(node)  // read again for a message once the rule's context is known
            return .leaf(unknownAudience())
        case .array:
            let (op, operands) = try Compilation.operation(node)
            var children: [ConditionNode] = []
            for operand in operands { children.append(try audienceTree(operand)) }
            return Compilation.combine(op, children)
        default:
            throw node.fail("expected an audience id or a condition list, got \(node.value.kindName)")
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
        for entry in try requiredSection("experiments") {
            do throws(DatafileError) {
                try addExperiment(entry, kind: .experiment, group: -1, groupId: "", context: .experiment)
            } catch {
                try record(error)
            }
        }
        for (position, rollout) in try section("rollouts").enumerated() {
            rolloutScalarLeaves.append([])
            let id = try rollout.requiredString("id")
            rolloutIds.append(id)
            var rules: [Int32] = []
            for entry in try rollout.requiredArray("experiments") {
                do throws(DatafileError) {
                    rules.append(Int32(try addExperiment(entry, kind: .rolloutRule, group: -1, groupId: "",
                                                         context: .rolloutRule(position: position))))
                } catch {
                    try record(error)
                }
            }
            rolloutRulesById[id] = rules
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
            groupDocuments.append(entry.value.document)  // its "trafficAllocation" is read below
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
        for (id, rules) in rolloutRulesById {
            rolloutRulesById[id] = rules.map { Int32(experimentIndexById[experiments[Int($0)].id.text] ?? Int($0)) }
        }
        for id in experimentIdOrder {
            let index = experimentIndexById[id]!
            indexes.experimentIds.insert(id, index, replacing: true)
            indexes.experimentKeys.insert(experiments[index].key.text, index, replacing: true)
        }
    }

    @discardableResult
    mutating func addExperiment(_ entry: DatafileReader, kind: RuleKind, group: Int32, groupId: String,
                                context: RuleContext)
        throws(DatafileError) -> Int
    {
        let id = try entry.requiredString("id")
        let key = try entry.requiredKey()
        let status = try entry.requiredString("status")
        let layerId = try entry.requiredString("layerId")
        let variations = try readVariations(entry.requiredArray("variations"))
        // The reference's JSON schema checks the ranges of experiments, not those of rollout rules.
        var schemaChecked = true
        if case .rolloutRule = context { schemaChecked = false }
        let traffic = try trafficRanges(entry.requiredArray("trafficAllocation"), schemaChecked: schemaChecked) {
            entityId in variations.lastIndex { $0.id.text == entityId }
        }
        let whitelist = try readWhitelist(entry.required("forcedVariations"))
        let experiment = Experiment(
            id: ConfigString(id, in: strings), key: ConfigString(key, in: strings), layerId: layerId,
            isRunning: status == "Running", kind: kind, type: ruleType(entry),
            audience: try audienceCondition(entry, in: context), variations: variations, traffic: traffic,
            whitelist: nil, group: group, groupId: groupId)
        let index = experiments.count
        experiments.append(experiment)
        whitelists.append(whitelist)
        if experimentIndexById[id] == nil { experimentIdOrder.append(id) }
        experimentIndexById[id] = index
        return index
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

    mutating func readVariations(_ entries: [DatafileReader]) throws(DatafileError) -> [Variation] {
        var variations: [Variation] = []
        for entry in entries {
            var values: [VariableValue] = []
            for usage in try entry.optionalArray("variables") {
                let idField = try usage.required("id")
                // The reference finds values by the flag's variable ids, which are strings: a usage
                // whose id is not one is never read.
                guard let id = idField.value.string else {
                    if idField.value.kind == .array || idField.value.kind == .object {
                        // The reference keys a dictionary by it: unhashable, its config construction raises.
                        throw idField.fail("expected a string, got \(idField.value.kindName)")
                    }
                    warn(idField.warning("expected a string, got \(idField.value.kindName): it names no variable and "
                                         + "is ignored, as in the reference"))
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
            let variation = Variation(id: ConfigString(try entry.requiredString("id"), in: strings),
                                      key: ConfigString(try entry.requiredKey(), in: strings),
                                      featureEnabled: featureEnabled(entry),
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

    /// A range is taken by bucket values below its end (0...9999): an end past 10000 covers them all like
    /// 10000 does, a negative end none like 0 does, which is how the reference decides them.
    /// Where the reference's schema does not check ranges (`schemaChecked` false: rollout rules, holdouts),
    /// it reads them leniently: a range without an end is skipped, one without a string entity id leads
    /// nowhere.
    mutating func trafficRanges(_ entries: [DatafileReader], schemaChecked: Bool = true,
                                entity: (String) -> Int?) throws(DatafileError) -> [TrafficRange]
    {
        var ranges: [TrafficRange] = []
        for entry in entries {
            var entityId = ""
            // What the reference makes of an entity id that is no string: none (empty) or one it cannot find.
            var emptyEntity = TrafficRange.emptyEntity
            if schemaChecked {
                entityId = try entry.requiredString("entityId")
            } else if let text = entry.optional("entityId")?.value.string {
                entityId = text
            } else {
                _ = try entry.object()  // an entry that is no object at all is still refused
                let value = entry.optional("entityId")?.value
                let falsy = value == nil || value?.bool == false || value?.int64 == 0 || value?.double == 0
                if !falsy { emptyEntity = TrafficRange.unknownEntity }
                warn(entry.warning("no string \"entityId\": the range leads to no variation, as in the reference"))
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

    /// "forcedVariations": user id -> variation key, resolved once every variation is known.
    /// A value that is no string names no variation key: the reference buckets the user normally (a list or
    /// object, which its lookup cannot hash, makes it raise for that user: refused).
    mutating func readWhitelist(_ field: DatafileReader) throws(DatafileError) -> [(user: String, variationKey: String)] {
        var entries: [(user: String, variationKey: String)] = []
        for (user, variationKey) in try field.object() {
            if let key = variationKey.value.string {
                entries.append((user, key))
            } else if variationKey.value.kind == .array || variationKey.value.kind == .object {
                throw variationKey.fail("expected a string, got \(variationKey.value.kindName)")
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

    // MARK: holdouts

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
        // Outside the reference's schema: "variations" that are null or false are a holdout without any.
        let variationsField = try entry.required("variations")
        var variationEntries: [DatafileReader] = []
        if variationsField.value.isNull || variationsField.value.bool == false {
            warn(variationsField.warning("expected an array, got \(variationsField.value.kindName): no variations, "
                                         + "as in the reference"))
        } else {
            variationEntries = try variationsField.array()
        }
        let variations = try readVariations(variationEntries)
        return Holdout(
            id: ConfigString(try entry.requiredString("id"), in: strings),
            key: ConfigString(try entry.requiredKey(), in: strings),
            isRunning: try entry.requiredString("status") == "Running",
            audience: try audienceCondition(entry, in: .holdout), variations: variations,
            traffic: try trafficRanges(entry.requiredArray("trafficAllocation"), schemaChecked: false) { entityId in
                variations.lastIndex { $0.id.text == entityId }
            },
            excludeTargetedDeliveries: truth(entry, "excludeTargetedDeliveries") ?? false)
    }

    // MARK: feature flags

    mutating func readFlags() throws(DatafileError) -> [Flag] {
        // No reader is kept: a streamed flag's tree is freed when the loop moves on.
        struct FlagSource { let id: String; let key: String; let variables: [Variable]
                            let experimentRules: [Int32]; let rolloutRules: [Int32]; let rollout: FlagRollout }
        var sources: [FlagSource] = []
        var usedRolloutIds = Set<String>()
        for entry in try section("featureFlags") {
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
                usedRolloutIds.insert(rolloutId)
                var rolloutRules: [Int32] = []
                if !rolloutId.isEmpty {
                    guard let rules = rolloutRulesById[rolloutId] else { throw rolloutField.fail("unknown rollout \"\(rolloutId)\" (no such id in \"rollouts\")") }
                    rolloutRules = rules
                }
                sources.append(FlagSource(id: try entry.requiredString("id"), key: try entry.requiredKey(),
                                          variables: variables, experimentRules: experimentRules, rolloutRules: rolloutRules,
                                          rollout: rolloutId.isEmpty ? .none
                                              : rolloutRulesById[rolloutId] == nil ? .missing : .found(id: rolloutId)))
                appendEveryoneElse(toFeatureRolloutsOf: experimentRules, rolloutRules: rolloutRules)
            } catch {
                try record(error)
            }
        }
        try resolveRolloutScalarLeaves(usedRolloutIds: usedRolloutIds)
        let usages = variableUsagesByVariationId()
        var flags: [Flag] = []
        for source in sources {
            let flag = try compileFlag(id: source.id, key: source.key, variables: source.variables,
                                       experimentRules: source.experimentRules, rolloutRules: source.rolloutRules,
                                       rollout: source.rollout, usages: usages)
            indexes.flags.insert(source.key, flags.count, replacing: true)
            flags.append(flag)
        }
        return flags
    }

    mutating func readVariables(_ entries: [DatafileReader]) throws(DatafileError) -> [Variable] {
        var variables: [Variable] = []
        for entry in entries {
            let typeField = try entry.required("type")
            let typeName = try typeField.string()
            let subType = try entry.optionalString("subType")
            let resolved = typeName == "string" && subType == "json" ? "json" : typeName
            // The reference's typecast hands a value of any other type back as the string it is.
            var type = VariableType.string
            if let known = VariableType(rawValue: resolved) {
                type = known
            } else {
                warn(typeField.warning("unknown variable type \"\(typeName)\" (boolean, integer, double, string, "
                                       + "json): its values are strings, as in the reference"))
            }
            let defaultField = try entry.required("defaultValue")
            var literal: VariableLiteral? = nil
            if defaultField.value.string == nil {
                warn(defaultField.warning("expected a string, got \(defaultField.value.kindName): typecast as it is, "
                                          + "as in the reference"))
                literal = VariableLiteral(defaultField.value)
            }
            variables.append(Variable(id: try entry.requiredString("id"), key: try entry.requiredString("key"),
                                      type: type, defaultValue: defaultField.value.string ?? "", defaultLiteral: literal))
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

    mutating func compileFlag(id: String, key: String, variables: [Variable], experimentRules: [Int32],
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
                // The reference looks values up by the flag's variable ids: any other usage is never read.
                for usage in variation.variableValues where !variableIds.contains(usage.id) {
                    let place = "experiment \"\(experiment.key.text)\" variation \"\(variation.key.text)\" (variations[\(position)])"
                    warn(DatafileError(.invalidDatafile, "datafile: \(place): variable id \"\(usage.id)\" is not a "
                        + "variable of flag \"\(key)\": its value is ignored, as in the reference", severity: .warning,
                        place: place))
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
            writer.key(variable.key)
            if let usage = overrides.last(where: { $0.id == variable.id }) {
                writer.raw(usage.literal?.json(as: variable.type) ?? VariableValues.json(usage.value, as: variable.type))
            } else {
                writer.raw(variable.defaultLiteral?.json(as: variable.type)
                           ?? VariableValues.json(variable.defaultValue, as: variable.type))
            }
        }
        writer.endObject()
        return writer.text
    }
}
