/// Appends JSON text to a String. Used to build event payloads and variable objects; never on the
/// per-decision path (variable JSON is precomputed per config).
public struct JSONWriter {
    /// The JSON built so far as UTF-8 bytes: appending bytes is far cheaper than appending to a String.
    public private(set) var bytes: [UInt8] = []
    private var needsComma: [Bool] = []
    private var pendingKey = false

    public init(reservingCapacity capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    public var text: String { String(decoding: bytes, as: UTF8.self) }

    public mutating func beginObject() { valuePrefix(); bytes.append(UInt8(ascii: "{")); needsComma.append(false) }
    public mutating func endObject() { needsComma.removeLast(); bytes.append(UInt8(ascii: "}")) }
    public mutating func beginArray() { valuePrefix(); bytes.append(UInt8(ascii: "[")); needsComma.append(false) }
    public mutating func endArray() { needsComma.removeLast(); bytes.append(UInt8(ascii: "]")) }

    public mutating func key(_ name: String) {
        if needsComma.last == true { bytes.append(UInt8(ascii: ",")) }
        JSONWriter.appendQuoted(name, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        if !needsComma.isEmpty { needsComma[needsComma.count - 1] = true }
        pendingKey = true
    }

    private mutating func valuePrefix() {
        if pendingKey { pendingKey = false; return }
        if needsComma.last == true { bytes.append(UInt8(ascii: ",")) }
        if !needsComma.isEmpty { needsComma[needsComma.count - 1] = true }
    }

    private mutating func append(_ literal: String) {
        var copy = literal
        copy.withUTF8 { bytes.append(contentsOf: $0) }
    }

    public mutating func string(_ value: String) { valuePrefix(); JSONWriter.appendQuoted(value, to: &bytes) }
    public mutating func string(_ value: String?) { if let value { string(value) } else { null() } }
    public mutating func bool(_ value: Bool) { valuePrefix(); append(value ? "true" : "false") }
    public mutating func int(_ value: Int64) { valuePrefix(); append(String(value)) }
    public mutating func double(_ value: Double) { valuePrefix(); append(JSONWriter.format(value)) }
    public mutating func null() { valuePrefix(); append("null") }
    /// Inserts already-valid JSON text as a value.
    public mutating func raw(_ json: String) { valuePrefix(); append(json) }

    public mutating func field(_ name: String, _ value: String) { key(name); string(value) }
    public mutating func field(_ name: String, _ value: String?) { key(name); string(value) }
    public mutating func field(_ name: String, _ value: Bool) { key(name); bool(value) }

    /// Shortest text that reads back as the same double; non-finite values have no JSON form: null.
    public static func format(_ value: Double) -> String {
        guard value.isFinite else { return "null" }
        if value == value.rounded(.towardZero) && abs(value) < 1e16 {
            return String(Int64(value)) + ".0"
        }
        return String(value)
    }

    public static func quoted(_ value: String) -> String {
        var out: [UInt8] = []
        appendQuoted(value, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// Appends `value` as a JSON string: quotes, backslashes and control characters escaped.
    public static func appendQuoted(_ value: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var copy = value
        copy.withUTF8 { text in
            // Most keys and values need no escaping: copy them in one go.
            if !text.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
                out.append(contentsOf: text)
                return
            }
            for byte in text {
                switch byte {
                case UInt8(ascii: "\""): out.append(UInt8(ascii: "\\")); out.append(byte)
                case UInt8(ascii: "\\"): out.append(byte); out.append(byte)
                case 0x0A: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "n"))
                case 0x0D: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "r"))
                case 0x09: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "t"))
                case 0x08: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "b"))
                case 0x0C: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "f"))
                case 0..<0x20:
                    out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                            hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0xF)]])
                default:
                    out.append(byte)
                }
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
