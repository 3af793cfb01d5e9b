/// Contextual multi-armed bandit (CMAB) experiments, as the reference SDK (optimizely-sdk 5.7.0) decides
/// them: an experiment whose datafile entry has a "cmab" object is not bucketed into a variation. The user
/// passes its audiences and group as usual, then falls into the experiment's CMAB traffic (one range
/// "$" ending at `cmab.trafficAllocation`), and a prediction service names the variation for the user's
/// attributes listed in `cmab.attributeIds`.
///
/// The core stays pure: it checks the traffic, builds the request (the filtered attributes, as the
/// reference's JSON), and asks an injected `CMABDecisionProvider` (the runtime's cache and HTTP client)
/// for the variation id. A provider that fails makes the flag's decision the reference's error decision.

/// An experiment's "cmab" object.
public struct CMABSettings: Sendable {
    /// The attribute ids whose values the prediction service gets; nil when the datafile's
    /// "attributeIds" is missing or no list (the reference raises filtering them: an error decision).
    public let attributeIds: [String]?
    /// The end of the one traffic range ("$") a user must fall into, clamped to 0...10000.
    public let trafficAllocation: Int32

    public init(attributeIds: [String]?, trafficAllocation: Int32) {
        self.attributeIds = attributeIds
        self.trafficAllocation = trafficAllocation
    }
}

/// A CMAB decision's random (version 4) UUID, kept as 128 bits so decisions stay trivially copyable.
public struct CMABUUID: Sendable, Equatable, BitwiseCopyable {
    public var high: UInt64
    public var low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// No UUID (a decision that no prediction made).
    public static let none = CMABUUID(high: 0, low: 0)
    public var isNone: Bool { high == 0 && low == 0 }

    /// A fresh random UUID with the version 4 and variant bits set.
    public static func random<G: RandomNumberGenerator>(using generator: inout G) -> CMABUUID {
        var high = generator.next() as UInt64, low = generator.next() as UInt64
        high = (high & ~0xF000) | 0x4000                                    // version 4
        low = (low & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000      // variant 10
        if high == 0 && low == 0 { low = 1 }
        return CMABUUID(high: high, low: low)
    }

    /// The canonical text: 8-4-4-4-12 lowercase hex digits.
    public var text: String {
        let hex: [UInt8] = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(36)
        for index in 0..<32 {
            if index == 8 || index == 12 || index == 16 || index == 20 { out.append(UInt8(ascii: "-")) }
            let word = index < 16 ? high : low
            let shift = UInt64(60 - 4 * (index % 16))
            out.append(hex[Int((word >> shift) & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Parses the canonical text (any case); nil for anything else.
    public init?(text: String) {
        var digits: [UInt64] = []
        for (position, byte) in text.utf8.enumerated() {
            if position == 8 || position == 13 || position == 18 || position == 23 {
                guard byte == UInt8(ascii: "-") else { return nil }
                continue
            }
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digits.append(UInt64(byte - UInt8(ascii: "0")))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digits.append(UInt64(byte - UInt8(ascii: "a") + 10))
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digits.append(UInt64(byte - UInt8(ascii: "A") + 10))
            default: return nil
            }
        }
        guard digits.count == 32, text.utf8.count == 36 else { return nil }
        high = digits[0..<16].reduce(0) { $0 << 4 | $1 }
        low = digits[16..<32].reduce(0) { $0 << 4 | $1 }
    }
}

/// What the core hands the provider for one CMAB experiment and user.
public struct CMABRequest: Sendable {
    /// The experiment's id (the reference's rule id: the URL's `{rule_id}` and "experimentId").
    public let ruleId: String
    public let experimentKey: String
    public let userId: String
    /// The filtered attributes as the request's "attributes" list, written as Python's json.dumps writes
    /// it: `[{"id": "<attribute id>", "value": <value>, "type": "custom_attribute"}, ...]`.
    public let attributesJSON: String
    /// The filtered attributes as json.dumps(sort_keys=True) writes them: what the reference hashes to
    /// tell whether a cached decision still fits the user's attributes.
    public let attributesKey: String
    /// Why the reference could not make a request (it raises and gives the error decision), or nil.
    public let unusable: String?

    public init(ruleId: String, experimentKey: String, userId: String, attributesJSON: String,
                attributesKey: String, unusable: String? = nil) {
        self.ruleId = ruleId
        self.experimentKey = experimentKey
        self.userId = userId
        self.attributesJSON = attributesJSON
        self.attributesKey = attributesKey
        self.unusable = unusable
    }

    /// The prediction request's JSON body, as the reference's json.dumps writes it.
    public func body(uuid: CMABUUID) -> String {
        var out = "{\"instances\": [{\"visitorId\": "
        PythonJSONText.writeString(Array(userId.utf8), to: &out)
        out += ", \"experimentId\": "
        PythonJSONText.writeString(Array(ruleId.utf8), to: &out)
        out += ", \"attributes\": " + attributesJSON + ", \"cmabUUID\": \"" + uuid.text + "\"}]}"
        return out
    }
}

/// A prediction: the variation id the service named (Python's `str()` of its JSON value) and the request's
/// UUID.
public struct CMABAnswer: Sendable {
    public let variationId: String
    public let uuid: CMABUUID

    public init(variationId: String, uuid: CMABUUID) {
        self.variationId = variationId
        self.uuid = uuid
    }
}

/// The provider's answer with the reasons its cache gave (kept only when it answered: the reference loses
/// them when it raises).
public struct CMABResult: Sendable {
    public let answer: CMABAnswer?
    public let reasons: [String]

    public init(answer: CMABAnswer?, reasons: [String]) {
        self.answer = answer
        self.reasons = reasons
    }
}

/// The CMAB decisions a decision service asks for (implemented by the runtime: cache and HTTP client).
/// `collectReasons`: whether the caller keeps the reasons. A flag decision whose variation came from a
/// prediction does not carry its UUID (decisions stay narrow): the provider, which handed the UUID out, gives
/// it to the decision's impression (the runtime's provider is one per flag decision).
public protocol CMABDecisionProvider: AnyObject {
    func cmabDecision(_ request: CMABRequest, options: DecideOptions, collectReasons: Bool) -> CMABResult
}

public enum CMAB {
    /// The reference's request for an experiment and user: the attributes the experiment lists by id that
    /// the user has (by the attribute's key), keyed by id, in the order of "attributeIds".
    public static func request<A: UserAttributes>(experiment: Experiment, settings: CMABSettings,
                                                  config: ProjectConfig, userId: String,
                                                  attributes: A) -> CMABRequest
    {
        guard let ids = settings.attributeIds else {
            return CMABRequest(ruleId: experiment.id.text, experimentKey: experiment.key.text, userId: userId,
                               attributesJSON: "[]", attributesKey: "{}",
                               unusable: "the experiment's cmab.attributeIds is no list")
        }
        var filtered: [(id: String, value: String)] = []
        var unusable: String? = nil
        for id in ids where !filtered.contains(where: { $0.id.sameCodePoints(id) }) {
            // The reference's attribute map by id: the last definition of an id wins.
            guard let attribute = config.attributes.last(where: { $0.id.sameCodePoints(id) }) else { continue }
            var key = attribute.key
            let value: AttributeValue? = key.withUTF8 { attributes.value(named: $0) }
            guard let value else { continue }
            guard let text = pythonJSON(value) else {
                unusable = "attribute \"\(attribute.key)\" has a value that cannot be sent as JSON"
                continue
            }
            filtered.append((attribute.id, text))
        }
        var list = "["
        for (position, entry) in filtered.enumerated() {
            if position > 0 { list += ", " }
            list += "{\"id\": "
            PythonJSONText.writeString(Array(entry.id.utf8), to: &list)
            list += ", \"value\": " + entry.value + ", \"type\": \"custom_attribute\"}"
        }
        list += "]"
        var sorted = "{"
        for (position, entry) in filtered.sorted(by: { Array($0.id.unicodeScalars.map(\.value))
                                                        .lexicographicallyPrecedes($1.id.unicodeScalars.map(\.value)) })
                                          .enumerated() {
            if position > 0 { sorted += ", " }
            PythonJSONText.writeString(Array(entry.id.utf8), to: &sorted)
            sorted += ": " + entry.value
        }
        sorted += "}"
        return CMABRequest(ruleId: experiment.id.text, experimentKey: experiment.key.text, userId: userId,
                           attributesJSON: list, attributesKey: sorted, unusable: unusable)
    }

    /// An attribute value as Python's json.dumps writes it; nil for one the library cannot hold.
    static func pythonJSON(_ value: AttributeValue) -> String? {
        switch value {
        case .null: return "null"
        case .bool(let flag): return flag ? "true" : "false"
        case .int(let number): return String(number)
        case .double(let number): return PythonJSONText.floatRepr(number)
        case .string(let text):
            var out = ""
            PythonJSONText.writeString(text, to: &out)
            return out
        case .bigInteger(let digits): return String(decoding: digits, as: UTF8.self)
        case .unsupported: return nil
        }
    }

    /// The variation id of a prediction service's answer, as the reference reads it: a JSON object whose
    /// "predictions" is a non-empty list whose first element is an object with "variation_id"; the id is
    /// Python's `str()` of that value. Nil for anything else ("Invalid CMAB fetch response.").
    public static func predictedVariationId(_ body: UnsafeRawBufferPointer) -> String? {
        guard let document = try? JSONDocument.parse(body, what: "CMAB response", maxBytes: 16 << 20, maxDepth: 512)
        else { return nil }
        let root = document.root
        guard root.kind == .object, let predictions = root.member("predictions"), predictions.kind == .array,
              predictions.count > 0 else { return nil }
        let first = predictions[0]
        guard first.kind == .object, let variation = first.member("variation_id") else { return nil }
        return withExtendedLifetime(document) { variation.pythonText }
    }

    /// Python's repr() of a str: single quotes unless the text has a single quote and no double quote;
    /// backslash, the quote, \t \n \r and characters that are not printable escaped.
    public static func pythonRepr(_ text: String) -> String {
        let quote: Character = text.contains("'") && !text.contains("\"") ? "\"" : "'"
        var out = String(quote)
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x5C: out += "\\\\"
            case 0x09: out += "\\t"
            case 0x0A: out += "\\n"
            case 0x0D: out += "\\r"
            default:
                if Character(scalar) == quote { out += "\\" + String(quote); continue }
                if isPrintable(scalar) { out.unicodeScalars.append(scalar); continue }
                let hex = String(scalar.value, radix: 16)
                if scalar.value < 0x100 { out += "\\x" + String(repeating: "0", count: 2 - hex.count) + hex }
                else if scalar.value < 0x10000 { out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex }
                else { out += "\\U" + String(repeating: "0", count: 8 - hex.count) + hex }
            }
        }
        out.append(quote)
        return out
    }

    /// Python's str.isprintable() for one character: not "Other" or "Separator" except the space.
    private static func isPrintable(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.value == 0x20 { return true }
        if scalar.value < 0x7F { return scalar.value > 0x20 }
        switch scalar.properties.generalCategory {
        case .control, .format, .surrogate, .privateUse, .unassigned, .lineSeparator, .paragraphSeparator,
             .spaceSeparator:
            return false
        default:
            return true
        }
    }
}

extension ReasonMessages {
    static func cmabTrafficMiss(user: String, experiment: String) -> String {
        "User \"\(user)\" not in CMAB experiment \"\(experiment)\" due to traffic allocation."
    }

    static func cmabFetchFailed(experiment: String) -> String {
        "Failed to fetch CMAB data for experiment \(experiment)."
    }

    public static func cmabIgnoringCache(user: String, rule: String) -> String {
        "Ignoring CMAB cache for user '\(user)' and rule '\(rule)'"
    }

    public static func cmabResettingCache(user: String, rule: String) -> String {
        "Resetting CMAB cache for user '\(user)' and rule '\(rule)'"
    }

    public static func cmabInvalidatingCache(user: String, rule: String) -> String {
        "Invalidating CMAB cache for user '\(user)' and rule '\(rule)'"
    }

    public static func cmabCacheHit(user: String, rule: String) -> String {
        "CMAB cache hit for user '\(user)' and rule '\(rule)'"
    }

    public static func cmabCacheMismatch(user: String, rule: String) -> String {
        "CMAB cache attributes mismatch for user '\(user)' and rule '\(rule)', fetching new decision."
    }

    public static func cmabCacheMiss(user: String, rule: String) -> String {
        "CMAB cache miss for user '\(user)' and rule '\(rule)'"
    }

    /// The reference's f"CMAB decision is {cmab_decision}": the repr of its dict.
    public static func cmabDecision(_ answer: CMABAnswer) -> String {
        "CMAB decision is {'variation_id': \(CMAB.pythonRepr(answer.variationId)), 'cmab_uuid': '\(answer.uuid.text)'}"
    }
}
