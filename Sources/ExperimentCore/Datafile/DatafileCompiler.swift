/// Compiles an Optimizely v4 datafile into a `ProjectConfig`, validating as it goes.
///
/// Acceptance is the reference SDK's: a datafile is refused (a `.error`) only where optimizely-sdk
/// refuses it — not JSON, its JSON schema, an unsupported version, or data its config construction
/// raises on (a flag naming an unknown experiment or rollout, a rollout rule missing a field, a list
/// or object where it keys a map, audience conditions its OptimizelyConfig cannot write out) — plus
/// this library's key limits (README "Deliberate differences"). Everything else the reference
/// accepts is compiled with the reference's semantics and reported as a `.warning`
/// (`ProjectConfig.warnings`): a rule naming an unknown audience (that audience evaluates to unknown),
/// a traffic range ending outside 0...10000, a variation naming a variable its flag does not have
/// (ignored), a variable of an unknown type (a string), and the values outside the reference's schema
/// it keeps as they are (`PythonScalars.swift`: a number, boolean or null id or key of a rollout rule,
/// holdout, flag or variable, a status that is no string, an empty condition list...).
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

/// The state of one compilation: entity tables filled in dependency order. Its reading of each part of the
/// datafile is in `DatafileCompiler+<Part>.swift` (Header, Audiences, Experiments, Holdouts, Flags).
struct Compilation {
    let root: DatafileReader
    let strings = StringStorage()
    /// Parses the JSON texts held in datafile strings (audience conditions, json variable values), one after
    /// another.
    let nestedJSONTokener = JSONTokener(maxDepth: DatafileCompiler.maxDepth)
    var audiences: [Audience] = []
    /// Every condition tree of the config, flattened for evaluation.
    var conditions = ConditionForest()
    var audienceIndexById: ExactKeyed<Int> = [:]
    /// The segments of the audience being compiled (see `Audience.segments`).
    var audienceSegments: [String] = []
    /// How many JSON objects of the audience being compiled have been numbered (see `numberObjects`).
    var audienceObjectCount = 0
    /// The conditions of the audience being compiled, and their condition list as the reference decodes it
    /// (made when an integer in the conditions needs it, see `conditionIndexLeaf`).
    var audienceConditionsRoot: JSONValue? = nil
    var audienceObjectLeaves: [LeafCondition]? = nil
    var experiments: [Experiment] = []
    var experimentIndexById: ExactKeyed<Int> = [:]
    /// Experiment ids in first-seen order (the reference's id map iteration order).
    var experimentIdOrder: [String] = []
    /// Each experiment's id as the reference's maps key it (`identityKey`), parallel to `experiments`.
    var experimentIdentities: [String] = []
    /// Experiments whose key is not a string: callers cannot name them (see `RuleFields`).
    var keylessExperiments: Set<Int> = []
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
    /// Per position in "rollouts": its id, and what its rules' "audienceConditions" make the reference's
    /// OptimizelyConfig raise on when a flag uses the rollout (it writes them out with audience names).
    var rolloutIds: [String] = []
    var rolloutConditionErrors: [[DatafileError]] = []
    /// Per audience id (`identityKey`), whether the name the reference's OptimizelyConfig writes for it is
    /// text (see `OptimizelyConfigText`): plain audiences, then typed ones over them.
    var plainAudienceNames: [String: Bool] = [:]
    var typedAudienceNames: [String: Bool] = [:]
    /// Both of them merged, typed over plain (see `optimizelyConfigText`).
    var mergedAudienceNames: OptimizelyConfigText? = nil
    var groups: [Group] = []
    /// Per rollout id, its rules as the reference's decisions walk them (see `readExperiments`).
    var rolloutRulesById: ExactKeyed<[Int32]> = [:]
    /// Per rollout id, its rules as written (the last rollout with that id), one experiment per entry.
    var writtenRolloutRules: ExactKeyed<[Int32]> = [:]
    /// Each experiment's first variation as written (before a repeated key folds it), parallel to
    /// `experiments`: the reference serves a rollout's everyone-else variation from it.
    var firstWrittenVariations: [Variation?] = []
    var holdouts: [Holdout] = []
    var globalHoldouts: [Int32] = []
    var holdoutsByRuleId: ExactKeyed<[Int32]> = [:]
    var indexes = ProjectConfig.Indexes()
    /// The datafile read element by element, when it is (else `root` is json-c's tree of the whole text).
    let stream: StreamedDatafile?

    init(root: DatafileReader, collectsProblems: Bool = false, stream: StreamedDatafile? = nil) {
        self.root = root
        self.collectsProblems = collectsProblems
        self.stream = stream
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
}
