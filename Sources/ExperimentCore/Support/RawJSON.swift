/// A JSON value that keeps each number and string exactly as written.
///
/// json-c clamps integers to 64 bits, while the reference SDK (Python) keeps any integer exactly; event
/// tags pass through to the results backend, so they are re-emitted from their original text.
/// Parse only text that `JSONDocument` accepted.
indirect enum RawJSON {
    case object([(key: String, value: RawJSON)])
    case array([RawJSON])
    /// The token as written, quotes and escapes included.
    case string(raw: String)
    /// The token as written.
    case number(raw: String)
    case bool(Bool)
    case null

    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> RawJSON? {
        var parser = Parser(bytes: bytes)
        return parser.value()
    }

    /// The compact JSON text of this value.
    var text: String {
        switch self {
        case .object(let members):
            return "{" + members.map { JSONWriter.quoted($0.key) + ":" + $0.value.text }.joined(separator: ",") + "}"
        case .array(let elements):
            return "[" + elements.map(\.text).joined(separator: ",") + "]"
        case .string(let raw), .number(let raw):
            return raw
        case .bool(let flag):
            return flag ? "true" : "false"
        case .null:
            return "null"
        }
    }

    func member(_ key: String) -> RawJSON? { if case .object(let members) = self { members.last { $0.key == key }?.value } else { nil } }

    struct Parser {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        mutating func skipSpace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }

        mutating func value() -> RawJSON? {
            skipSpace()
            guard index < bytes.count else { return nil }
            switch bytes[index] {
            case UInt8(ascii: "{"):
                index += 1
                var members: [(key: String, value: RawJSON)] = []
                skipSpace()
                if bytes[index] == UInt8(ascii: "}") { index += 1; return .object(members) }
                while true {
                    skipSpace()
                    guard let keyToken = token(string: true), let key = Parser.decode(keyToken) else { return nil }
                    skipSpace()
                    index += 1  // ':'
                    guard let member = value() else { return nil }
                    members.append((key, member))
                    skipSpace()
                    let separator = bytes[index]
                    index += 1
                    if separator == UInt8(ascii: "}") { return .object(members) }
                }
            case UInt8(ascii: "["):
                index += 1
                var elements: [RawJSON] = []
                skipSpace()
                if bytes[index] == UInt8(ascii: "]") { index += 1; return .array(elements) }
                while true {
                    guard let element = value() else { return nil }
                    elements.append(element)
                    skipSpace()
                    let separator = bytes[index]
                    index += 1
                    if separator == UInt8(ascii: "]") { return .array(elements) }
                }
            case UInt8(ascii: "\""):
                return token(string: true).map { .string(raw: $0) }
            case UInt8(ascii: "t"): index += 4; return .bool(true)
            case UInt8(ascii: "f"): index += 5; return .bool(false)
            case UInt8(ascii: "n"): index += 4; return .null
            default:
                return token(string: false).map { .number(raw: $0) }
            }
        }

        /// A string token (quotes included) or a number token, as written.
        mutating func token(string: Bool) -> String? {
            let start = index
            if string {
                index += 1
                while index < bytes.count && bytes[index] != UInt8(ascii: "\"") {
                    index += bytes[index] == UInt8(ascii: "\\") ? 2 : 1
                }
                index += 1
            } else {
                while index < bytes.count, "+-.0123456789eE".utf8.contains(bytes[index]) { index += 1 }
            }
            guard index <= bytes.count, index > start else { return nil }
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        }

        /// The content of a string token: its text without quotes, escapes resolved.
        static func decode(_ token: String) -> String? {
            let inner = token.dropFirst().dropLast()
            guard inner.contains("\\") else { return String(inner) }
            guard let document = try? JSONDocument.parse(token, what: "string", maxBytes: 1 << 20, maxDepth: 2) else {
                return nil
            }
            return document.root.string
        }
    }
}
