#if canImport(Glibc)
import Glibc
#endif

/// What a strict parse found wrong, worded as the messages have always been.
enum JSONProblem: Error {
    case unexpectedEnd, unexpectedEndInString, unterminatedString, expectedValue, expectedLiteral(StaticString)
    case expectedMemberName, expectedColon, expectedCommaInObject, expectedCommaInArray, trailingText
    case expectedHexDigits, invalidEscape, controlCharacter, expectedDigit, expectedDigitAfterPoint
    case expectedExponentDigit, tooDeep, invalidUTF8

    var description: String {
        switch self {
        case .unexpectedEnd: return "unexpected end of document"
        case .unexpectedEndInString: return "unexpected end of document in a string"
        case .unterminatedString: return "unterminated string"
        case .expectedValue: return "expected a JSON value"
        case .expectedLiteral(let word): return "expected \(word)"
        case .expectedMemberName: return "expected a member name in double quotes"
        case .expectedColon: return "expected ':' after a member name"
        case .expectedCommaInObject: return "expected ',' or '}' in an object"
        case .expectedCommaInArray: return "expected ',' or ']' in an array"
        case .trailingText: return "unexpected text after the JSON value"
        case .expectedHexDigits: return "expected 4 hex digits after \\u"
        case .invalidEscape: return "invalid escape in a string"
        case .controlCharacter: return "unescaped control character in a string"
        case .expectedDigit: return "expected a digit"
        case .expectedDigitAfterPoint: return "expected a digit after '.'"
        case .expectedExponentDigit: return "expected a digit in the exponent"
        case .tooDeep: return "nesting too deep"
        case .invalidUTF8: return "invalid UTF-8"
        }
    }
}

/// The one-pass parser: an explicit stack of open containers (no recursion, so a deep limit cannot
/// overflow the thread's stack), nodes appended in document order (a container's node first, its size and
/// end filled in when it closes).
struct JSONTapeParser {
    let text: UnsafePointer<UInt8>
    let count: Int
    let maxDepth: Int
    var index = 0
    private(set) var nodes: UnsafeMutablePointer<JSONNode>
    private var nodeCapacity: Int
    private(set) var nodeCount = 0
    private(set) var decoded: UnsafeMutablePointer<UInt8>
    private var decodedCapacity: Int
    private var decodedCount = 0

    init(text: UnsafePointer<UInt8>, count: Int, maxDepth: Int) {
        self.text = text
        self.count = count
        self.maxDepth = maxDepth
        // About one value per 12 bytes in datafiles; the tape grows when a text is denser.
        nodeCapacity = count / 12 + 16
        nodes = .allocate(capacity: nodeCapacity)
        decodedCapacity = 16
        decoded = .allocate(capacity: decodedCapacity)
        nodes[0] = JSONNode(tag: JSONNode.null, first: 0, second: 0, next: 1)
        nodeCount = 1
    }

    func discard() {
        nodes.deallocate()
        decoded.deallocate()
    }

    /// Parses the whole text; nil when it is one valid JSON value, else where and what went wrong.
    mutating func run() -> (Int, JSONProblem)? {
        do throws(JSONProblem) {
            try parseDocument()
            return nil
        } catch {
            return (index, error)
        }
    }

    private mutating func parseDocument() throws(JSONProblem) {
        // Open containers: node index and children so far.
        let stackCapacity = min(maxDepth, count) + 1
        let stack = UnsafeMutablePointer<(node: Int, children: UInt32)>.allocate(capacity: stackCapacity)
        defer { stack.deallocate() }
        var depth = 0
        skipSpace()
        value: while true {
            // A value starts at `index`.
            guard index < count else { throw .unexpectedEnd }
            let byte = text[index]
            switch byte {
            case UInt8(ascii: "\""):
                try parseString(isName: false)
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                guard depth < maxDepth else { throw .tooDeep }
                let isObject = byte == UInt8(ascii: "{")
                stack[depth] = (append(isObject ? JSONNode.object : JSONNode.array, 0, 0), 0)
                depth += 1
                index += 1
                skipSpace()
                let closing = isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")
                if index < count && text[index] == closing {
                    index += 1
                    depth -= 1
                    close(stack[depth])
                } else {
                    if isObject { try parseMemberName() }
                    continue value
                }
            case UInt8(ascii: "t"): try parseLiteral("true", JSONNode.trueValue)
            case UInt8(ascii: "f"): try parseLiteral("false", JSONNode.falseValue)
            case UInt8(ascii: "n"): try parseLiteral("null", JSONNode.null)
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try parseNumber()
            default: throw .expectedValue
            }
            // A value ended: what follows depends on the container it is in.
            while true {
                guard depth > 0 else {
                    skipSpace()
                    guard index == count else { throw .trailingText }
                    return
                }
                stack[depth - 1].children += 1
                skipSpace()
                let isObject = nodes[stack[depth - 1].node].kind == JSONNode.object
                guard index < count else { throw .unexpectedEnd }
                let separator = text[index]
                if separator == UInt8(ascii: ",") {
                    index += 1
                    skipSpace()
                    if isObject { try parseMemberName() }
                    continue value
                }
                guard separator == (isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) else {
                    throw isObject ? .expectedCommaInObject : .expectedCommaInArray
                }
                index += 1
                depth -= 1
                close(stack[depth])
            }
        }
    }

    /// A member's name and its ':', leaving `index` at the start of its value.
    private mutating func parseMemberName() throws(JSONProblem) {
        guard index < count else { throw .unexpectedEnd }
        guard text[index] == UInt8(ascii: "\"") else { throw .expectedMemberName }
        try parseString(isName: true)
        skipSpace()
        guard index < count else { throw .unexpectedEnd }
        guard text[index] == UInt8(ascii: ":") else { throw .expectedColon }
        index += 1
        skipSpace()
    }

    @inline(__always)
    private mutating func skipSpace() {
        // Indented text: runs of spaces, eight at a time.
        while index + 8 <= count && UnsafeRawPointer(text + index).loadUnaligned(as: UInt64.self) == 0x2020_2020_2020_2020 {
            index += 8
        }
        while index < count {
            let byte = text[index]
            guard byte <= 0x20, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 else { return }
            index += 1
        }
    }

    @inline(__always)
    private mutating func append(_ tag: UInt32, _ first: UInt32, _ second: UInt32) -> Int {
        if nodeCount == nodeCapacity { grow() }
        let position = nodeCount
        nodes[position] = JSONNode(tag: tag, first: first, second: second, next: UInt32(position + 1))
        nodeCount = position + 1
        return position
    }

    private mutating func grow() {
        let larger = UnsafeMutablePointer<JSONNode>.allocate(capacity: nodeCapacity * 2)
        larger.moveInitialize(from: nodes, count: nodeCount)
        nodes.deallocate()
        nodes = larger
        nodeCapacity *= 2
    }

    private func close(_ container: (node: Int, children: UInt32)) {
        nodes[container.node].second = container.children
        nodes[container.node].next = UInt32(nodeCount)
    }

    private mutating func parseLiteral(_ word: StaticString, _ tag: UInt32) throws(JSONProblem) {
        let length = word.utf8CodeUnitCount
        guard index + length <= count else { throw .unexpectedEnd }
        guard memcmp(text + index, word.utf8Start, length) == 0 else { throw .expectedLiteral(word) }
        index += length
        _ = append(tag, 0, 0)
    }

    @inline(__always)
    private static func isDigit(_ byte: UInt8) -> Bool { byte &- 0x30 < 10 }

    private mutating func parseNumber() throws(JSONProblem) {
        let start = index
        var position = index
        let negative = text[position] == UInt8(ascii: "-")
        if negative { position += 1 }
        guard position < count, Self.isDigit(text[position]) else { index = position; throw .expectedDigit }
        var magnitude: UInt64 = 0
        var saturated = false
        if text[position] == UInt8(ascii: "0") {
            position += 1
        } else {
            while position < count, Self.isDigit(text[position]) {
                let (times10, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
                let (sum, overflow2) = times10.addingReportingOverflow(UInt64(text[position] &- 0x30))
                if overflow1 || overflow2 { saturated = true }
                magnitude = sum
                position += 1
            }
        }
        var isDouble = false
        if position < count && text[position] == UInt8(ascii: ".") {
            isDouble = true
            position += 1
            guard position < count, Self.isDigit(text[position]) else { index = position; throw .expectedDigitAfterPoint }
            while position < count, Self.isDigit(text[position]) { position += 1 }
        }
        if position < count && text[position] | 0x20 == UInt8(ascii: "e") {
            isDouble = true
            position += 1
            if position < count && (text[position] == UInt8(ascii: "+") || text[position] == UInt8(ascii: "-")) {
                position += 1
            }
            guard position < count, Self.isDigit(text[position]) else { index = position; throw .expectedExponentDigit }
            while position < count, Self.isDigit(text[position]) { position += 1 }
        }
        index = position
        if isDouble {
            _ = append(JSONNode.double, UInt32(start), UInt32(position - start))
            return
        }
        // json-c's saturation: strtoll below INT64_MIN, strtoull above UINT64_MAX.
        var tag = JSONNode.int
        let bits: UInt64
        if negative {
            bits = saturated || magnitude > UInt64(1) << 63 ? UInt64(bitPattern: Int64.min) : 0 &- magnitude
        } else {
            bits = saturated ? UInt64.max : magnitude
            if bits > UInt64(Int64.max) { tag |= JSONNode.unsigned }
        }
        _ = append(tag, UInt32(truncatingIfNeeded: bits), UInt32(truncatingIfNeeded: bits >> 32))
    }

    /// A string from its opening quote. Plain strings stay in the text; one with escapes is decoded.
    private mutating func parseString(isName: Bool) throws(JSONProblem) {
        let start = index + 1
        var position = start
        var hasEscapes = false
        while true {
            // The common bytes: printable ASCII other than '"' and '\', eight at a time, then one by one
            // up to the first other byte.
            while position + 8 <= count {
                let special = Self.specialBytes(UnsafeRawPointer(text + position).loadUnaligned(as: UInt64.self))
                if special != 0 {
                    position += special.trailingZeroBitCount >> 3
                    break
                }
                position += 8
            }
            while position < count {
                let byte = text[position]
                guard byte &- 0x20 < 0x60, byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\") else { break }
                position += 1
            }
            guard position < count else { index = count; throw .unterminatedString }
            let byte = text[position]
            if byte == UInt8(ascii: "\"") { break }
            if byte == UInt8(ascii: "\\") {
                hasEscapes = true
                position += 1
                guard position < count else { index = position; throw .unexpectedEndInString }
                switch text[position] {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
                     UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    position += 1
                case UInt8(ascii: "u"):
                    position += 1
                    for _ in 0..<4 {
                        guard position < count, Self.hexValue(text[position]) != nil else {
                            index = position
                            throw .expectedHexDigits
                        }
                        position += 1
                    }
                default:
                    index = position
                    throw .invalidEscape
                }
            } else if byte < 0x20 {
                index = position
                throw .controlCharacter
            } else {
                guard let length = utf8SequenceLength(at: position) else { index = position; throw .invalidUTF8 }
                position += length
            }
        }
        index = position + 1
        if hasEscapes {
            let decodedStart = decodedCount
            decode(from: start, to: position, isName: isName)
            _ = append(JSONNode.string | JSONNode.escaped, UInt32(decodedStart), UInt32(decodedCount - decodedStart))
        } else {
            _ = append(JSONNode.string, UInt32(start), UInt32(position - start))
        }
    }

    /// A high bit in each byte of `word` (little-endian) that is a quote, a backslash, a control
    /// character or not ASCII. Bits above the lowest set one may be wrong (borrows), the lowest is exact.
    @inline(__always)
    private static func specialBytes(_ word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        let quotes = word ^ (ones &* 0x22), backslashes = word ^ (ones &* 0x5C)
        let zeroQuote = (quotes &- ones) & ~quotes
        let zeroBackslash = (backslashes &- ones) & ~backslashes
        let control = (word &- ones &* 0x20) & ~word
        return (zeroQuote | zeroBackslash | control | word) & highs
    }

    /// The length of the valid UTF-8 sequence of 2-4 bytes at `position`, or nil (overlong forms,
    /// surrogates and scalars above U+10FFFF are invalid).
    @inline(__always)
    private func utf8SequenceLength(at position: Int) -> Int? {
        let lead = text[position]
        let length: Int
        var low: UInt8 = 0x80, high: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; low = 0xA0
        case 0xE1...0xEC, 0xEE, 0xEF: length = 3
        case 0xED: length = 3; high = 0x9F
        case 0xF0: length = 4; low = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; high = 0x8F
        default: return nil
        }
        guard position + length <= count else { return nil }
        let second = text[position + 1]
        guard second >= low && second <= high else { return nil }
        for offset in 2..<length where text[position + offset] & 0xC0 != 0x80 { return nil }
        return length
    }

    @inline(__always)
    private static func hexValue(_ byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return UInt32(byte - UInt8(ascii: "A") + 10)
        default: return nil
        }
    }

    private mutating func appendDecoded(_ byte: UInt8) {
        if decodedCount == decodedCapacity {
            let larger = UnsafeMutablePointer<UInt8>.allocate(capacity: decodedCapacity * 2)
            larger.initialize(from: decoded, count: decodedCount)
            decoded.deallocate()
            decoded = larger
            decodedCapacity *= 2
        }
        decoded[decodedCount] = byte
        decodedCount += 1
    }

    private mutating func appendScalar(_ scalar: UInt32) {
        switch scalar {
        case 0..<0x80:
            appendDecoded(UInt8(scalar))
        case 0x80..<0x800:
            appendDecoded(UInt8(0xC0 | scalar >> 6))
            appendDecoded(UInt8(0x80 | scalar & 0x3F))
        case 0x800..<0x10000:
            appendDecoded(UInt8(0xE0 | scalar >> 12))
            appendDecoded(UInt8(0x80 | scalar >> 6 & 0x3F))
            appendDecoded(UInt8(0x80 | scalar & 0x3F))
        default:
            appendDecoded(UInt8(0xF0 | scalar >> 18))
            appendDecoded(UInt8(0x80 | scalar >> 12 & 0x3F))
            appendDecoded(UInt8(0x80 | scalar >> 6 & 0x3F))
            appendDecoded(UInt8(0x80 | scalar & 0x3F))
        }
    }

    /// The four hex digits at `position` (already checked).
    private func hex4(at position: Int) -> UInt32 {
        var value: UInt32 = 0
        for offset in 0..<4 { value = value << 4 | Self.hexValue(text[position + offset])! }
        return value
    }

    /// Decodes the checked content text[start..<end] into `decoded`. A surrogate escape pairs with a
    /// low surrogate escape right after it, else it becomes U+FFFD (json-c's choice). A member name
    /// ends at its first NUL, as json-c keeps names as C strings.
    private mutating func decode(from start: Int, to end: Int, isName: Bool) {
        let decodedStart = decodedCount
        var position = start
        while position < end {
            let byte = text[position]
            guard byte == UInt8(ascii: "\\") else {
                appendDecoded(byte)
                position += 1
                continue
            }
            let escaped = text[position + 1]
            position += 2
            switch escaped {
            case UInt8(ascii: "b"): appendDecoded(0x08)
            case UInt8(ascii: "f"): appendDecoded(0x0C)
            case UInt8(ascii: "n"): appendDecoded(0x0A)
            case UInt8(ascii: "r"): appendDecoded(0x0D)
            case UInt8(ascii: "t"): appendDecoded(0x09)
            case UInt8(ascii: "u"):
                var scalar = hex4(at: position)
                position += 4
                if scalar >= 0xD800 && scalar < 0xDC00 {
                    if position + 6 <= end && text[position] == UInt8(ascii: "\\") && text[position + 1] == UInt8(ascii: "u"),
                       case let low = hex4(at: position + 2), low >= 0xDC00 && low < 0xE000
                    {
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        position += 6
                    } else {
                        scalar = 0xFFFD
                    }
                } else if scalar >= 0xDC00 && scalar < 0xE000 {
                    scalar = 0xFFFD
                }
                appendScalar(scalar)
            default: appendDecoded(escaped)  // '"', '\\', '/'
            }
        }
        if isName, let nul = (decodedStart..<decodedCount).first(where: { decoded[$0] == 0 }) {
            decodedCount = nul
        }
    }
}
