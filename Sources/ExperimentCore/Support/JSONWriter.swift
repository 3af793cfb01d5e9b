/// Appends JSON text to a String. Used to build event payloads and variable objects; never on the
/// per-decision path (variable JSON is precomputed per config).
public struct JSONWriter {
    /// The JSON built so far as UTF-8 bytes: appending bytes is far cheaper than appending to a String.
    public private(set) var bytes: [UInt8] = []
    /// Per open container, innermost last: whether it has a member already (the next one needs a comma).
    /// The first 64 levels live in a bit set, deeper ones in an array: payloads never nest that deep, and
    /// a second array per writer cost an allocation and an append per container.
    private var memberBits: UInt64 = 0
    private var depth = 0
    private var deepLevels: [Bool] = []
    private var pendingKey = false

    public init(reservingCapacity capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    public var text: String { String(decoding: bytes, as: UTF8.self) }

    /// Empties the writer for another value, keeping its buffer.
    public mutating func reset() {
        bytes.removeAll(keepingCapacity: true)
        memberBits = 0
        depth = 0
        deepLevels.removeAll()
        pendingKey = false
    }

    public mutating func beginObject() { valuePrefix(); bytes.append(UInt8(ascii: "{")); openLevel() }
    public mutating func endObject() { closeLevel(); bytes.append(UInt8(ascii: "}")) }
    public mutating func beginArray() { valuePrefix(); bytes.append(UInt8(ascii: "[")); openLevel() }
    public mutating func endArray() { closeLevel(); bytes.append(UInt8(ascii: "]")) }

    @inline(__always)
    private mutating func openLevel() {
        if depth < 64 { memberBits &= ~(UInt64(1) << UInt64(depth)) } else { deepLevels.append(false) }
        depth += 1
    }

    @inline(__always)
    private mutating func closeLevel() {
        precondition(depth > 0, "JSONWriter: end without a begin")
        depth -= 1
        if depth >= 64 { deepLevels.removeLast() }
    }

    /// Whether the innermost open container has a member already (false outside any container).
    @inline(__always)
    private var levelHasMember: Bool {
        if depth == 0 { return false }
        if depth <= 64 { return memberBits & (UInt64(1) << UInt64(depth - 1)) != 0 }
        return deepLevels[deepLevels.count - 1]
    }

    @inline(__always)
    private mutating func markMember() {
        if depth == 0 { return }
        if depth <= 64 { memberBits |= UInt64(1) << UInt64(depth - 1) } else { deepLevels[deepLevels.count - 1] = true }
    }

    public mutating func key(_ name: String) {
        if levelHasMember { bytes.append(UInt8(ascii: ",")) }
        JSONWriter.appendQuoted(name, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        markMember()
        pendingKey = true
    }

    /// A key known at compile time to need no escaping (event payload field names): written in one go.
    public mutating func key(literal name: StaticString) {
        if levelHasMember { bytes.append(UInt8(ascii: ",")) }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
        markMember()
        pendingKey = true
    }

    public mutating func field(literal name: StaticString, _ value: String) { key(literal: name); string(value) }
    public mutating func field(literal name: StaticString, _ value: String?) { key(literal: name); string(value) }
    public mutating func field(literal name: StaticString, _ value: Bool) { key(literal: name); bool(value) }

    private mutating func valuePrefix() {
        if pendingKey { pendingKey = false; return }
        if levelHasMember { bytes.append(UInt8(ascii: ",")) }
        markMember()
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
        // Negative zero keeps its sign, as Python writes it (float("-0") is -0.0; Int64(-0.0) is 0).
        if value == 0 { return value.sign == .minus ? "-0.0" : "0.0" }
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
        copy.withUTF8 { appendEscaped($0, to: &out) }
        out.append(UInt8(ascii: "\""))
    }

    @inline(__always)
    private static func needsEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
    }

    /// Copies the runs between bytes that need escaping in one go each (most texts are one run): a plain
    /// loop over the buffer, as a per-byte closure (`contains(where:)`) cost several times more.
    private static func appendEscaped(_ text: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        guard let base = text.baseAddress else { return }
        var runStart = 0
        var index = firstEscapeCandidate(base, count: text.count)
        if index == text.count { return out.append(contentsOf: text) }
        while index < text.count {
            let byte = base[index]
            if needsEscape(byte) {
                if runStart < index { out.append(contentsOf: UnsafeBufferPointer(start: base + runStart, count: index - runStart)) }
                appendEscape(of: byte, to: &out)
                runStart = index + 1
            }
            index += 1
        }
        if runStart < text.count {
            out.append(contentsOf: UnsafeBufferPointer(start: base + runStart, count: text.count - runStart))
        }
    }

    /// The index of the first 8-byte word that may hold a byte needing escape (the text's count when none
    /// does), testing a word at a time: a byte below 0x20 or equal to a quote or backslash sets its high bit
    /// in `(w - n) & ~w & 0x80..` (borrows can only add false positives, which the byte loop then skips).
    @inline(__always)
    private static func firstEscapeCandidate(_ base: UnsafePointer<UInt8>, count: Int) -> Int {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        var index = 0
        while index + 8 <= count {
            let word = UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self)
            let control = (word &- ones &* 0x20) & ~word
            let quoted = word ^ (ones &* UInt64(UInt8(ascii: "\""))), slashed = word ^ (ones &* UInt64(UInt8(ascii: "\\")))
            let quote = (quoted &- ones) & ~quoted, backslash = (slashed &- ones) & ~slashed
            if (control | quote | backslash) & highs != 0 { return index }
            index += 8
        }
        while index < count {
            if needsEscape(base[index]) { return index }
            index += 1
        }
        return count
    }

    private static func appendEscape(of byte: UInt8, to out: inout [UInt8]) {
        switch byte {
        case UInt8(ascii: "\""): out.append(UInt8(ascii: "\\")); out.append(byte)
        case UInt8(ascii: "\\"): out.append(byte); out.append(byte)
        case 0x0A: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "n"))
        case 0x0D: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "r"))
        case 0x09: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "t"))
        case 0x08: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "b"))
        case 0x0C: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "f"))
        default:
            out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                    hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0xF)]])
        }
    }
}
