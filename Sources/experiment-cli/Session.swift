import ArgumentParser
import ExperimentCore
import ExperimentRuntime
#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#endif

/// A started client over one datafile. The CLI never sends events: DISABLE_DECISION_EVENT is a default
/// option, no dispatcher is installed and the built-in event pipeline is off.
struct Session {
    let client: Client
    let config: ProjectConfig

    init(datafile path: String) throws(CLIError) {
        let bytes = try InputFile.readAll(path, limit: DatafileCompiler.maxBytes)
        var options = ClientOptions()
        options.defaultDecideOptions = [.disableDecisionEvent]
        // A command-line run decides deterministically: no sticky state carried between runs.
        options.profileStore = .none
        options.usesStateFile = false
        options.eventEndpoint = ClientOptions.disabledEventEndpoint  // nor opens the event queue
        let client = Client(options: options)
        // The failure is reported below with the file's name; the library's own log line would repeat it.
        client.logger.setSink { _, _ in }
        let started: Result<Void, ClientError> = bytes.withUnsafeBytes { buffer in
            do throws(ClientError) { return .success(try client.start(datafile: buffer)) } catch { return .failure(error) }
        }
        client.logger.setSink(nil)
        if case .failure(let error) = started {
            throw CLIError("\(InputFile.displayName(path)): \(DatafileProblem.describe(error.message, in: bytes))")
        }
        do {
            config = try client.config()
        } catch {
            throw CLIError("\(InputFile.displayName(path)): \(error.message)")
        }
        self.client = client
    }

    /// Options given with --option, plus the client's defaults.
    func effective(_ options: DecideOptions) -> DecideOptions { options.union(client.options.defaultDecideOptions) }

    /// Decides for one user, as exp_decide_for_keys_json does: every flag in datafile order when
    /// `keys` is nil, else the given keys in order (a repeated key once), where a key the datafile does
    /// not have gives a disabled decision (`result` nil) even with ENABLED_FLAGS_ONLY.
    func decide<A: UserAttributes>(user: UTF8Text, attributes: A, options: DecideOptions, keys: FlagKeys?,
                                   _ body: (_ key: UTF8Text, _ result: DecideResult?) -> Void) {
        if let keys {
            decide(user: user, attributes: attributes, options: options, keyCount: keys.keys.count,
                   key: { keys.keys[$0] }, body)
        } else {
            decide(user: user, attributes: attributes, options: options, keyCount: nil, key: { _ in UTF8Text(start: nil, count: 0) },
                   body)
        }
    }

    /// As above with the keys read through `key(0..<keyCount)` (keyCount nil: every flag).
    @inline(__always)
    func decide<A: UserAttributes>(user: UTF8Text, attributes: A, options: DecideOptions, keyCount: Int?,
                                   key: (Int) -> UTF8Text, _ body: (_ key: UTF8Text, _ result: DecideResult?) -> Void) {
        let config = self.config
        guard let keyCount else {
            client.decideAll(config: config, userId: user, attributes: attributes, options: options) { result in
                body(config.flags[Int(result.decision.flag)].key.bytes, result)
            }
            return
        }
        let effective = self.effective(options)
        let single = options.subtracting(.enabledFlagsOnly)
        FlagKeys.forEachUnique(count: keyCount, key: key) { key in
            guard let flag = config.flagIndex.find(key) else { return body(key, nil) }
            let result = client.decide(config: config, flag: flag, userId: user, attributes: attributes, options: single)
            if effective.contains(.enabledFlagsOnly) && !result.decision.keptByEnabledFlagsOnly(in: config) { return }
            body(key, result)
        }
    }

    /// One decision as the C API's JSON conveniences write it:
    /// {"flag_key":...,"enabled":...,"variation_key":...,"rule_key":...,"variables":{...},"reasons":[...]}
    func writeDecision(_ result: DecideResult?, key: UTF8Text, effective: DecideOptions, into out: JSONBytes) {
        out.raw("{")
        out.key("flag_key"); out.string(key)
        guard let result else {
            out.raw(",\"enabled\":false,\"variation_key\":null,\"rule_key\":null,\"variables\":{},\"reasons\":[]}")
            return
        }
        let decision = result.decision
        out.raw(","); out.key("enabled"); out.bool(decision.enabled(in: config))
        out.raw(","); out.key("variation_key")
        if let variation = decision.variationKeyCString(in: config) { out.string(cString: variation) } else { out.null() }
        out.raw(","); out.key("rule_key")
        if let rule = decision.ruleKeyCString(in: config) { out.string(cString: rule) } else { out.null() }
        out.raw(","); out.key("variables")
        if effective.contains(.excludeVariables) { out.raw("{}") } else { out.raw(cString: decision.variablesJSON(in: config)) }
        out.raw(","); out.key("reasons"); out.raw("[")
        for (index, reason) in result.reasons.enumerated() {
            if index > 0 { out.raw(",") }
            out.string(reason)
        }
        out.raw("]}")
    }

    /// A decision's fields as text, for people.
    func describe(_ result: DecideResult?, key: UTF8Text, effective: DecideOptions) -> DecisionRow {
        let flag = String(decoding: key, as: UTF8.self)
        guard let result else {
            return DecisionRow(flag: flag, enabled: false, variation: nil, rule: nil, variables: "{}", reasons: [],
                               known: false)
        }
        let decision = result.decision
        return DecisionRow(flag: flag, enabled: decision.enabled(in: config),
                           variation: decision.variationKeyCString(in: config).map { String(cString: $0) },
                           rule: decision.ruleKeyCString(in: config).map { String(cString: $0) },
                           variables: effective.contains(.excludeVariables) ? "{}" : String(cString: decision.variablesJSON(in: config)),
                           reasons: result.reasons, known: true)
    }
}

struct DecisionRow {
    let flag: String
    let enabled: Bool
    let variation: String?
    let rule: String?
    let variables: String
    let reasons: [String]
    /// False for a key the datafile does not have.
    let known: Bool
}

/// Flag keys given on the command line, stored once so decisions can borrow them as UTF-8 bytes.
final class FlagKeys {
    private let storage: UnsafeMutableRawPointer?
    let keys: [UTF8Text]

    init(_ strings: [String]) {
        let total = strings.reduce(0) { $0 + $1.utf8.count }
        storage = total > 0 ? UnsafeMutableRawPointer.allocate(byteCount: total, alignment: 1) : nil
        var cursor = storage
        var keys: [UTF8Text] = []
        for string in strings {
            let bytes = Array(string.utf8)
            guard let start = cursor, !bytes.isEmpty else {
                keys.append(UTF8Text(start: nil, count: 0))
                continue
            }
            bytes.withUnsafeBytes { start.copyMemory(from: $0.baseAddress!, byteCount: bytes.count) }
            keys.append(UTF8Text(start: start.assumingMemoryBound(to: UInt8.self), count: bytes.count))
            cursor = start + bytes.count
        }
        self.keys = keys
    }

    deinit { storage?.deallocate() }

    /// Calls `body` with each key once, in first-seen order (no allocation: the lists are short).
    @inline(__always)
    static func forEachUnique(count: Int, key: (Int) -> UTF8Text, _ body: (UTF8Text) -> Void) {
        outer: for index in 0..<count {
            let candidate = key(index)
            for earlier in 0..<index where bytesEqual(key(earlier), candidate) { continue outer }
            body(candidate)
        }
    }
}

@inline(__always)
func bytesEqual(_ a: UTF8Text, _ b: UTF8Text) -> Bool {
    guard a.count == b.count else { return false }
    guard a.count > 0, let pa = a.baseAddress, let pb = b.baseAddress else { return true }
    return memcmp(pa, pb, a.count) == 0
}

/// Options shared by the commands that decide.
struct DatafileArgument: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The datafile (Optimizely v4 JSON); - reads standard input.",
                                            valueName: "file"))
    var datafile: String
}

struct UserArguments: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The user id.", valueName: "id"))
    var user: String

    @Option(name: .long, help: ArgumentHelp("Attributes as a JSON object, e.g. '{\"country\": \"NL\", \"age\": 31}'.",
                                            valueName: "json"))
    var attributes: String?

    @Option(name: .customLong("attr"),
            help: ArgumentHelp("An attribute, typed by its text: true/false, an integer, a decimal number, null, or else a string. Repeatable; wins over --attributes.",
                               valueName: "key=value"))
    var attr: [String] = []

    @Option(name: .customLong("attr-string"),
            help: ArgumentHelp("An attribute whose value is always a string. Repeatable; wins over --attr.",
                               valueName: "key=value"))
    var attrString: [String] = []

    func validate() throws {
        try CommandLineUser.check(user)
        _ = try parsedAttributes()
    }

    func parsedAttributes() throws(ValidationError) -> OwnedAttributes {
        try CommandLineAttributes.parse(json: attributes, typed: attr, strings: attrString)
    }
}

enum CommandLineUser {
    static func check(_ user: String) throws(ValidationError) {
        guard user.utf8.count <= Limits.keyBytes else {
            throw ValidationError("--user: longer than \(Limits.keyBytes) bytes")
        }
    }
}

struct DecideOptionArguments: ParsableArguments {
    @Option(name: .customLong("option"),
            help: ArgumentHelp("A decide option: DISABLE_DECISION_EVENT, ENABLED_FLAGS_ONLY, IGNORE_USER_PROFILE_SERVICE, INCLUDE_REASONS or EXCLUDE_VARIABLES (any case, - or _). Repeatable.",
                               valueName: "name"))
    var options: [String] = []

    func validate() throws { _ = try parsed() }

    func parsed() throws(ValidationError) -> DecideOptions {
        var result: DecideOptions = []
        for name in options {
            let normalized = String(name.uppercased().map { $0 == "-" ? "_" : $0 })
            guard let option = DecideOptions(name: normalized) else {
                let known = DecideOptions.names.map(\.0).joined(separator: ", ")
                throw ValidationError("--option \(name): unknown decide option (known: \(known))")
            }
            result.insert(option)
        }
        return result
    }
}

/// Where a datafile problem is, for people: the library's message without its "datafile: " prefix,
/// and a line and column next to byte offsets of JSON errors.
enum DatafileProblem {
    static func describe(_ message: String, in bytes: [UInt8]) -> String {
        var text = message
        if text.hasPrefix("datafile: ") { text.removeFirst("datafile: ".count) }
        // Offsets of the document itself only: a nested text (an audience's "conditions" string) has its own.
        guard text.hasPrefix("malformed JSON at byte ") || text.hasPrefix("invalid UTF-8 at byte ")
            || text.hasPrefix("unexpected end of document"),
              let range = text.firstRange(of: "at byte ") else { return text }
        let digits = text[range.upperBound...].prefix { $0.isASCII && $0.isNumber }
        guard let offset = Int(digits), offset <= bytes.count else { return text }
        var line = 1, column = 1
        for byte in bytes[0..<offset] {
            if byte == UInt8(ascii: "\n") { line += 1; column = 1 }
            else if byte & 0xC0 != 0x80 { column += 1 }  // count characters, not UTF-8 continuation bytes
        }
        let end = text.index(range.upperBound, offsetBy: digits.count)
        text.insert(contentsOf: " (line \(line), column \(column))", at: end)
        return text
    }
}
