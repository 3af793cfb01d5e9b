#if canImport(Glibc)
import Glibc
#endif

/// Why a JSON text was refused. The message names the problem and where it is.
public enum JSONError: Error, Equatable {
    case malformed(String)
    case tooLarge(String)
    case tooDeep(String)
    case invalidUTF8(String)

    public var message: String {
        switch self {
        case .malformed(let m), .tooLarge(let m), .tooDeep(let m), .invalidUTF8(let m): return m
        }
    }
}

/// A parsed JSON document: one strict pass over the bytes (RFC 8259 grammar, strict UTF-8 with no
/// overlong forms or surrogates, bounded size and depth, nothing after the value) that records every
/// value as a 16-byte node of a flat tape. Values read from it are valid while the document lives.
///
/// Why a tape and not a tree of objects: a datafile is read once, front to back, by the compiler. A
/// node per value in one array costs no allocation per value and keeps strings where they are in the
/// text (only strings with escapes are decoded, into one side buffer), so parsing a datafile costs about
/// what scanning it does.
///
/// The values keep json-c's semantics, which this library used before and whose results the tests pin:
/// integers saturate to 64 bits (above INT64_MAX they are unsigned, read back as INT64_MAX), a duplicate
/// member name keeps its first position and its last value, a member name is cut at an escaped NUL,
/// an unpaired surrogate escape decodes to U+FFFD, and `jsonText` writes json-c's compact form
/// (numbers with a fraction or exponent exactly as written).
///
/// A document and its values are read by one thread at a time (reading an array by index moves a cursor
/// kept in the document); every use in the library parses, reads and drops a document within one call.
public final class JSONDocument {
    /// Node 0 is a null that out-of-range reads return; the document's value is node 1.
    let nodes: UnsafeMutablePointer<JSONNode>
    let nodeCount: Int
    /// The text the nodes point into: a copy the document owns, or (while compiling a datafile) the
    /// caller's buffer, which outlives the document.
    let text: UnsafePointer<UInt8>
    private let ownsText: Bool
    /// The decoded content of strings that have escapes.
    let decoded: UnsafeMutablePointer<UInt8>
    /// The string value this document was read from, when it is nested in another document's string
    /// (for the places of its values in messages, see `DatafileReader.path(of:)`).
    var enclosingField: JSONValue? = nil
    /// The element `JSONValue.subscript` found last: (array node, position, element node).
    var elementCursor = (array: 0, position: 0, node: 0)

    public var root: JSONValue { JSONValue(document: self, index: 1) }

    private init(parsed: JSONTapeParser, text: UnsafePointer<UInt8>, ownsText: Bool) {
        self.nodes = parsed.nodes
        self.nodeCount = parsed.nodeCount
        self.decoded = parsed.decoded
        self.text = text
        self.ownsText = ownsText
    }

    deinit {
        nodes.deallocate()
        decoded.deallocate()
        if ownsText { UnsafeMutablePointer(mutating: text).deallocate() }
    }

    /// Parses a copy of `bytes`: the caller's buffer may go away afterwards.
    public static func parse(_ bytes: UnsafeRawBufferPointer, what: String, maxBytes: Int, maxDepth: Int)
        throws(JSONError) -> JSONDocument
    {
        try parse(bytes, what: what, maxBytes: maxBytes, maxDepth: maxDepth, borrowing: false)
    }

    /// With `borrowing`, the document points into `bytes` instead of a copy: the caller keeps `bytes`
    /// alive and unchanged for as long as the document or any value read from it is used.
    static func parse(_ bytes: UnsafeRawBufferPointer, what: String, maxBytes: Int, maxDepth: Int, borrowing: Bool)
        throws(JSONError) -> JSONDocument
    {
        // Nodes hold 32-bit offsets.
        let limit = min(maxBytes, Int(UInt32.max) - 1)
        guard bytes.count <= limit else {
            throw .tooLarge("\(what): \(bytes.count) bytes exceeds the limit of \(limit) bytes")
        }
        guard let base = bytes.baseAddress, bytes.count > 0 else {
            throw .malformed("\(what): empty document")
        }
        var text = base.assumingMemoryBound(to: UInt8.self)
        if !borrowing {
            let copy = UnsafeMutablePointer<UInt8>.allocate(capacity: bytes.count)
            copy.initialize(from: text, count: bytes.count)
            text = UnsafePointer(copy)
        }
        var parser = JSONTapeParser(text: text, count: bytes.count, maxDepth: maxDepth)
        if let (offset, problem) = parser.run() {
            parser.discard()
            if !borrowing { UnsafeMutablePointer(mutating: text).deallocate() }
            throw error(problem, at: offset, in: UnsafeBufferPointer(start: base.assumingMemoryBound(to: UInt8.self),
                                                                      count: bytes.count), what: what, maxDepth: maxDepth)
        }
        return JSONDocument(parsed: parser, text: text, ownsText: !borrowing)
    }

    public static func parse(_ text: String, what: String, maxBytes: Int, maxDepth: Int)
        throws(JSONError) -> JSONDocument
    {
        var copy = text
        let result: Result<JSONDocument, JSONError> = copy.withUTF8 { buffer in
            do throws(JSONError) {
                return .success(try parse(UnsafeRawBufferPointer(buffer), what: what, maxBytes: maxBytes,
                                          maxDepth: maxDepth))
            } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// The error of a refused text. Invalid UTF-8 anywhere in it comes first, whatever else is wrong,
    /// so the report names the same problem however far the grammar got.
    private static func error(_ problem: JSONProblem, at offset: Int, in bytes: UnsafeBufferPointer<UInt8>,
                              what: String, maxDepth: Int) -> JSONError
    {
        if let invalid = UTF8Validation.firstInvalidByte(bytes) {
            return .invalidUTF8("\(what): invalid UTF-8 at byte \(invalid)")
        }
        switch problem {
        case .tooDeep:
            return .tooDeep("\(what): nesting deeper than \(maxDepth) levels (at byte \(offset))")
        case .unexpectedEnd, .unexpectedEndInString, .unterminatedString:
            return .malformed("\(what): unexpected end of document (truncated JSON) at byte \(offset)")
        default:
            return .malformed("\(what): malformed JSON at byte \(offset): \(problem.description)")
        }
    }
}

/// One value of the tape. Scalars are one node; an array is its node followed by its elements' nodes;
/// an object is its node followed by a name node and a value's nodes per member.
struct JSONNode {
    /// The kind (low 3 bits) and flags.
    var tag: UInt32
    /// String, double: offset of the content (in the text, or in `decoded` when escaped).
    /// Integer: the low 32 bits of its value.
    var first: UInt32
    /// String, double: byte length. Integer: the high 32 bits. Array, object: element / member count.
    var second: UInt32
    /// The index of the node after this value (and everything inside it).
    var next: UInt32

    static let null: UInt32 = 0, falseValue: UInt32 = 1, trueValue: UInt32 = 2, int: UInt32 = 3
    static let double: UInt32 = 4, string: UInt32 = 5, array: UInt32 = 6, object: UInt32 = 7
    static let kindMask: UInt32 = 7
    /// A string whose content is in `decoded` (it had escapes).
    static let escaped: UInt32 = 8
    /// An integer above INT64_MAX (json-c keeps it as unsigned 64-bit).
    static let unsigned: UInt32 = 16

    var kind: UInt32 { tag & JSONNode.kindMask }
    var integer: UInt64 { UInt64(first) | UInt64(second) << 32 }
}

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

/// A borrowed view of one value of a `JSONDocument`, valid while the document lives. Reading it costs
/// no reference counting: the document must be kept alive by its owner, as with any borrowed view.
public struct JSONValue {
    unowned(unsafe) let document: JSONDocument
    let index: Int

    init(document: JSONDocument, index: Int) {
        self.document = document
        self.index = index
    }

    public enum Kind: Equatable { case null, bool, int, double, string, array, object }

    var node: JSONNode { document.nodes[index] }

    public var kind: Kind {
        switch node.kind {
        case JSONNode.falseValue, JSONNode.trueValue: return .bool
        case JSONNode.int: return .int
        case JSONNode.double: return .double
        case JSONNode.string: return .string
        case JSONNode.array: return .array
        case JSONNode.object: return .object
        default: return .null
        }
    }

    public var kindName: String {
        switch kind {
        case .null: return "null"
        case .bool: return "a boolean"
        case .int: return "an integer"
        case .double: return "a number"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        }
    }

    public var isNull: Bool { node.kind == JSONNode.null }

    public var bool: Bool? {
        switch node.kind {
        case JSONNode.trueValue: return true
        case JSONNode.falseValue: return false
        default: return nil
        }
    }

    public var int64: Int64? {
        let node = self.node
        guard node.kind == JSONNode.int else { return nil }
        return node.tag & JSONNode.unsigned != 0 ? Int64.max : Int64(bitPattern: node.integer)
    }

    public var double: Double? {
        let node = self.node
        switch node.kind {
        case JSONNode.int: return Double(int64!)
        case JSONNode.double: return JSONValue.strtod(document.text + Int(node.first), count: Int(node.second))
        default: return nil
        }
    }

    /// The number's text is checked JSON grammar: C's strtod reads it as json-c did.
    private static func strtod(_ start: UnsafePointer<UInt8>, count: Int) -> Double {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: count + 1) { buffer in
            let base = buffer.baseAddress!
            UnsafeMutableRawPointer(base).copyMemory(from: start, byteCount: count)
            base[count] = 0
            return Glibc.strtod(base, nil)
        }
    }

    /// The string's bytes (escapes decoded), valid while the document lives. May hold NULs.
    public var stringBytes: UnsafeBufferPointer<UInt8>? {
        let node = self.node
        guard node.kind == JSONNode.string else { return nil }
        let base = node.tag & JSONNode.escaped != 0 ? UnsafePointer(document.decoded) : document.text
        return UnsafeBufferPointer(start: base + Int(node.first), count: Int(node.second))
    }

    public var string: String? {
        guard let bytes = stringBytes else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Elements of an array; members of an object (a repeated name counts once).
    public var count: Int {
        switch node.kind {
        case JSONNode.array: return Int(node.second)
        case JSONNode.object: return memberSlots().count
        default: return 0
        }
    }

    /// The element at `index` of an array; null when out of range or not an array.
    public subscript(index: Int) -> JSONValue {
        let node = self.node
        guard node.kind == JSONNode.array, index >= 0, index < Int(node.second) else {
            return JSONValue(document: document, index: 0)
        }
        // Elements are found by skipping their predecessors; the document remembers the last one found,
        // so reading an array by increasing index costs one step per element, as json-c's arrays did.
        var position = 0
        var child = self.index + 1
        let cursor = document.elementCursor
        if cursor.array == self.index && cursor.position <= index {
            position = cursor.position
            child = cursor.node
        }
        while position < index {
            child = Int(document.nodes[child].next)
            position += 1
        }
        document.elementCursor = (self.index, index, child)
        return JSONValue(document: document, index: child)
    }

    /// The member named `key`, or nil when absent (a present JSON null is a value of kind .null).
    /// A name given twice means its last value.
    public func member(_ key: String) -> JSONValue? {
        guard node.kind == JSONNode.object else { return nil }
        if let found = key.utf8.withContiguousStorageIfAvailable({ member(bytes: $0) }) { return found }
        return Array(key.utf8).withUnsafeBufferPointer { member(bytes: $0) }
    }

    func member(bytes key: UnsafeBufferPointer<UInt8>) -> JSONValue? {
        let node = self.node
        guard node.kind == JSONNode.object else { return nil }
        // json-c looks names up as C strings.
        var key = key
        if let nul = key.firstIndex(of: 0) { key = UnsafeBufferPointer(rebasing: key[..<nul]) }
        let nodes = document.nodes
        let keyCount = key.count
        guard keyCount > 0, let keyBase = key.baseAddress else { return lastMemberWithEmptyName() }
        let first = keyBase.pointee
        var found = -1
        var name = index + 1
        for _ in 0..<Int(node.second) {
            let nameNode = nodes[name]
            if Int(nameNode.second) == keyCount {
                let base = nameNode.tag & JSONNode.escaped != 0 ? UnsafePointer(document.decoded) : document.text
                let bytes = base + Int(nameNode.first)
                if bytes.pointee == first && memcmp(bytes, keyBase, keyCount) == 0 { found = name + 1 }
            }
            name = Int(nodes[name + 1].next)
        }
        return found < 0 ? nil : JSONValue(document: document, index: found)
    }

    /// The member named "" (its last value), or nil.
    private func lastMemberWithEmptyName() -> JSONValue? {
        let nodes = document.nodes
        var found = -1
        var name = index + 1
        for _ in 0..<Int(node.second) {
            if nodes[name].second == 0 { found = name + 1 }
            name = Int(nodes[name + 1].next)
        }
        return found < 0 ? nil : JSONValue(document: document, index: found)
    }

    /// (name node, value node) per distinct name in document order: a repeated name keeps its first
    /// position and takes its last value, as json-c's objects do.
    func memberSlots() -> [(name: Int, value: Int)] {
        let node = self.node
        guard node.kind == JSONNode.object else { return [] }
        let nodes = document.nodes
        var slots: [(name: Int, value: Int)] = []
        slots.reserveCapacity(Int(node.second))
        var name = index + 1
        for _ in 0..<Int(node.second) {
            slots.append((name, name + 1))
            name = Int(nodes[name + 1].next)
        }
        guard slots.count > 1 else { return slots }
        return JSONValue.mergingRepeatedNames(slots, document: document)
    }

    private static func mergingRepeatedNames(_ slots: [(name: Int, value: Int)], document: JSONDocument)
        -> [(name: Int, value: Int)]
    {
        // Names compare as bytes (json-c's strcmp), not as Unicode-equivalent Strings.
        func name(_ slot: (name: Int, value: Int)) -> UnsafeBufferPointer<UInt8> {
            JSONValue(document: document, index: slot.name).stringBytes!
        }
        var merged: [(name: Int, value: Int)] = []
        merged.reserveCapacity(slots.count)
        if slots.count <= 16 {
            for slot in slots {
                let bytes = name(slot)
                if let existing = merged.firstIndex(where: { name($0).elementsEqual(bytes) }) {
                    merged[existing].value = slot.value
                } else {
                    merged.append(slot)
                }
            }
            return merged
        }
        var firstSlotOfName: [[UInt8]: Int] = [:]
        firstSlotOfName.reserveCapacity(slots.count)
        for slot in slots {
            let bytes = Array(name(slot))
            if let existing = firstSlotOfName[bytes] {
                merged[existing].value = slot.value
            } else {
                firstSlotOfName[bytes] = merged.count
                merged.append(slot)
            }
        }
        return merged
    }

    /// The members of an object in document order.
    public var members: [(key: String, value: JSONValue)] {
        memberSlots().map { (JSONValue(document: document, index: $0.name).string!, JSONValue(document: document, index: $0.value)) }
    }

    /// The elements of an array in order (empty for anything else).
    public var elements: [JSONValue] {
        let node = self.node
        guard node.kind == JSONNode.array else { return [] }
        var result: [JSONValue] = []
        result.reserveCapacity(Int(node.second))
        var child = index + 1
        for _ in 0..<Int(node.second) {
            result.append(JSONValue(document: document, index: child))
            child = Int(document.nodes[child].next)
        }
        return result
    }

    /// The value as compact JSON text, as json-c writes it (plain, '/' not escaped).
    public var jsonText: String {
        var out: [UInt8] = []
        write(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    func write(to out: inout [UInt8]) {
        let node = self.node
        switch node.kind {
        case JSONNode.null: out.append(contentsOf: "null".utf8)
        case JSONNode.trueValue: out.append(contentsOf: "true".utf8)
        case JSONNode.falseValue: out.append(contentsOf: "false".utf8)
        case JSONNode.int:
            let text = node.tag & JSONNode.unsigned != 0 ? String(node.integer) : String(Int64(bitPattern: node.integer))
            out.append(contentsOf: text.utf8)
        case JSONNode.double:
            out.append(contentsOf: UnsafeBufferPointer(start: document.text + Int(node.first), count: Int(node.second)))
        case JSONNode.string:
            JSONValue.writeQuoted(stringBytes!, to: &out)
        case JSONNode.array:
            out.append(UInt8(ascii: "["))
            var child = index + 1
            for position in 0..<Int(node.second) {
                if position > 0 { out.append(UInt8(ascii: ",")) }
                JSONValue(document: document, index: child).write(to: &out)
                child = Int(document.nodes[child].next)
            }
            out.append(UInt8(ascii: "]"))
        default:
            out.append(UInt8(ascii: "{"))
            for (position, slot) in memberSlots().enumerated() {
                if position > 0 { out.append(UInt8(ascii: ",")) }
                JSONValue.writeQuoted(JSONValue(document: document, index: slot.name).stringBytes!, to: &out)
                out.append(UInt8(ascii: ":"))
                JSONValue(document: document, index: slot.value).write(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// json-c's string escaping: the short escapes, other control characters as \u00xx, the rest as is.
    static func writeQuoted(_ bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        let hexDigits: StaticString = "0123456789abcdef"
        out.append(UInt8(ascii: "\""))
        for byte in bytes {
            switch byte {
            case 0x08: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
            case 0x09: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0x0A: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0C: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
            case 0x0D: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case UInt8(ascii: "\""): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0..<0x20:
                out.append(contentsOf: "\\u00".utf8)
                out.append(hexDigits.utf8Start[Int(byte >> 4)])
                out.append(hexDigits.utf8Start[Int(byte & 0xF)])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
