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
