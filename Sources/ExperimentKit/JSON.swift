import ExperimentCore

/// A JSON value with its type: what a decision's variables, a notification's payload, a user attribute and an
/// event tag are made of. Literals build it: `["plan": "pro", "seats": 3, "beta": true]`.
public enum JSON: Sendable, Equatable, Hashable {
    case null
    case bool(Bool)
    /// An integer that fits 64 bits (larger ones read as `.double`).
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSON])
    case object([String: JSON])

    public var boolValue: Bool? { if case .bool(let value) = self { return value }; return nil }
    public var intValue: Int64? { if case .int(let value) = self { return value }; return nil }
    /// A number of either kind as a Double (an integer variable read as a fraction).
    public var doubleValue: Double? {
        switch self {
        case .double(let value): return value
        case .int(let value): return Double(value)
        default: return nil
        }
    }
    public var stringValue: String? { if case .string(let value) = self { return value }; return nil }
    public var arrayValue: [JSON]? { if case .array(let value) = self { return value }; return nil }
    public var objectValue: [String: JSON]? { if case .object(let value) = self { return value }; return nil }
    public var isNull: Bool { self == .null }

    /// The member `key` of an object (nil for a missing member or a value that is not an object).
    public subscript(key: String) -> JSON? { objectValue?[key] }

    /// The value as JSON text (object members sorted by key, so the text of equal values is equal).
    public var jsonText: String {
        var writer = JSONWriter()
        write(to: &writer)
        return writer.text
    }

    func write(to writer: inout JSONWriter) {
        switch self {
        case .null: writer.null()
        case .bool(let value): writer.bool(value)
        case .int(let value): writer.int(value)
        case .double(let value): writer.double(value)
        case .string(let value): writer.string(value)
        case .array(let values):
            writer.beginArray()
            values.forEach { $0.write(to: &writer) }
            writer.endArray()
        case .object(let members):
            writer.beginObject()
            for key in members.keys.sorted() {
                writer.key(key)
                members[key]!.write(to: &writer)
            }
            writer.endObject()
        }
    }
}

extension JSON: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: JSON...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSON)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

extension JSON: CustomStringConvertible {
    public var description: String { jsonText }
}

extension JSON {
    /// JSON text the library wrote (variables, notification payloads) read back into values.
    /// Text the library wrote is always valid: anything else reads as `.null` rather than failing a decision.
    package static func parse(_ text: String) -> JSON {
        guard let document = try? JSONDocument.parse(text, what: "JSON", maxBytes: Int(Int32.max) - 1, maxDepth: 1024)
        else { return .null }
        return withExtendedLifetime(document) { JSON(document.root) }
    }

    init(_ value: JSONValue) {
        switch value.kind {
        case .null: self = .null
        case .bool: self = .bool(value.bool ?? false)
        case .int:
            if let integer = value.int64 { self = .int(integer) } else { self = .double(value.double ?? 0) }
        case .double: self = .double(value.double ?? 0)
        case .string: self = .string(value.string ?? "")
        case .array: self = .array(value.elements.map { JSON($0) })
        case .object:
            var members: [String: JSON] = [:]
            for (key, member) in value.members { members[key] = JSON(member) }
            self = .object(members)
        }
    }
}
