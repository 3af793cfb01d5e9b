/// Appends JSON text to a String. Used to build event payloads and variable objects; never on the
/// per-decision path (variable JSON is precomputed per config).
public struct JSONWriter {
    public private(set) var text: String = ""
    private var needsComma: [Bool] = []

    public init(reservingCapacity capacity: Int = 256) { text.reserveCapacity(capacity) }

    public mutating func beginObject() { valuePrefix(); text.append("{"); needsComma.append(false) }
    public mutating func endObject() { needsComma.removeLast(); text.append("}") }
    public mutating func beginArray() { valuePrefix(); text.append("["); needsComma.append(false) }
    public mutating func endArray() { needsComma.removeLast(); text.append("]") }

    public mutating func key(_ name: String) {
        if needsComma.last == true { text.append(",") }
        JSONWriter.appendQuoted(name, to: &text)
        text.append(":")
        if !needsComma.isEmpty { needsComma[needsComma.count - 1] = true }
        pendingKey = true
    }

    private var pendingKey = false

    private mutating func valuePrefix() {
        if pendingKey { pendingKey = false; return }
        if needsComma.last == true { text.append(",") }
        if !needsComma.isEmpty { needsComma[needsComma.count - 1] = true }
    }

    public mutating func string(_ value: String) { valuePrefix(); JSONWriter.appendQuoted(value, to: &text) }
    public mutating func string(_ value: String?) { if let value { string(value) } else { null() } }
    public mutating func bool(_ value: Bool) { valuePrefix(); text.append(value ? "true" : "false") }
    public mutating func int(_ value: Int64) { valuePrefix(); text.append(String(value)) }
    public mutating func double(_ value: Double) { valuePrefix(); text.append(JSONWriter.format(value)) }
    public mutating func null() { valuePrefix(); text.append("null") }
    /// Inserts already-valid JSON text as a value.
    public mutating func raw(_ json: String) { valuePrefix(); text.append(json) }

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
        var out = ""
        appendQuoted(value, to: &out)
        return out
    }

    public static func appendQuoted(_ value: String, to out: inout String) {
        out.append("\"")
        var plainStart = value.utf8.startIndex
        var index = plainStart
        let utf8 = value.utf8
        while index != utf8.endIndex {
            let byte = utf8[index]
            if byte < 0x20 || byte == 0x22 || byte == 0x5C {
                out.append(contentsOf: value[plainStart..<index])
                switch byte {
                case 0x22: out.append("\\\"")
                case 0x5C: out.append("\\\\")
                case 0x0A: out.append("\\n")
                case 0x0D: out.append("\\r")
                case 0x09: out.append("\\t")
                case 0x08: out.append("\\b")
                case 0x0C: out.append("\\f")
                default:
                    let hex: [Character] = Array("0123456789abcdef")
                    out.append("\\u00")
                    out.append(hex[Int(byte >> 4)])
                    out.append(hex[Int(byte & 0xF)])
                }
                index = utf8.index(after: index)
                plainStart = index
            } else {
                index = utf8.index(after: index)
            }
        }
        out.append(contentsOf: value[plainStart..<utf8.endIndex])
        out.append("\"")
    }
}
