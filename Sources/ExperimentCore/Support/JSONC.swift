import CJSONC
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

/// A JSON text parsed by json-c, the library's one JSON reader: every datafile, option string, JSON
/// attribute, profile document and server response goes through `parse`.
///
/// json-c reads straight from the caller's bytes (no copy first), with the library's depth limit and
/// `JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8`; nothing may follow the value. What json-c's strict
/// mode still takes and Python's `json` refuses (see `JSONStrictTokens`), and UTF-8 json-c lets through
/// (overlong forms, surrogates), is refused after json-c accepted the text. Values read from
/// the document (`JSONValue`) are views of json-c's objects, valid while the document lives; the tree is
/// freed with the document.
///
/// What json-c decides for the library (tests pin each): a repeated member name keeps its first position
/// and its last value; a member name ends at an escaped NUL; an integer above INT64_MAX is kept as
/// unsigned 64-bit and anything past 64 bits is clamped (read `JSONValue.rawNumberText` where the exact
/// text matters); an unpaired surrogate escape becomes U+FFFD; `NaN`, `Infinity` and `-Infinity` are
/// numbers (as in Python's `json`); a number with a fraction keeps its text (`jsonText` of `1.50` is `1.50`).
///
/// A document and its values are read by one thread at a time.
public final class JSONDocument {
    /// The parsed tree (a NULL pointer is a top-level JSON null).
    let tree: OpaquePointer?
    /// The string value this document was read from, when it is nested in another document's string
    /// (for the places of its values in messages, see `DatafileReader.path(of:)`).
    var enclosingField: JSONValue? = nil
    /// For one element of a datafile's top-level array parsed on its own (see `StreamedDatafile`): the
    /// array's name and the element's position, where the places of its values start ("experiments[3]").
    var section: String? = nil
    var sectionIndex = 0
    /// The exact decimal text of each integer json-c clamped (past 64 bits), by its json-c object: filled
    /// by `noteChangedValues` when the text had a number token long enough to be one (rare), else empty.
    var clampedIntegerTexts: [OpaquePointer: String] = [:]
    /// Each string json-c read with U+FFFD for an unpaired surrogate escape, as Python's `json` reads it,
    /// in WTF-8 (a surrogate as its 3-byte form, which no UTF-8 text holds and which keeps code point order),
    /// by its json-c object. Filled by `noteChangedValues` when the text had a surrogate escape.
    var surrogateStrings: [OpaquePointer: [UInt8]] = [:]

    public var root: JSONValue { JSONValue(document: self, object: tree) }

    /// Takes ownership of `tree` (json_object_put when the document goes).
    init(tree: OpaquePointer?) {
        self.tree = tree
    }

    deinit {
        json_object_put(tree)
    }

    /// Keeps what Python's `json` reads for every value json-c may have changed, read from `text`, the
    /// text this document's tree was parsed from (its root's token first): the exact text of an integer
    /// json-c clamped, the WTF-8 of a string with an unpaired surrogate escape. Only called for a text
    /// with a long number token or a surrogate escape; a tree without such values costs one walk.
    func noteChangedValues(in text: UnsafeBufferPointer<UInt8>) {
        func visit(_ value: JSONValue) {
            switch value.kind {
            case .int:
                if value.mayBeClamped, let object = value.object, let raw = value.rawToken(in: text) {
                    clampedIntegerTexts[object] = raw
                }
            case .string:
                if value.mayHaveReplacedSurrogate, let object = value.object, let raw = value.rawToken(in: text),
                   let decoded = JSONStringToken.wtf8(Array(raw.utf8)), let bytes = value.stringBytes,
                   !decoded.elementsEqual(bytes) {
                    surrogateStrings[object] = decoded
                }
            case .array:
                for element in value.elements { visit(element) }
            case .object:
                value.forEachMember { _, member in visit(member) }
            default:
                break
            }
        }
        visit(root)
    }

    /// Parses `bytes` in place: json-c copies what it keeps (strings, names) into its tree, so the
    /// caller's buffer may go away afterwards.
    /// `tokener`, when given, is used (reset) instead of a new one: a caller parsing many small texts in turn
    /// (the audiences' condition strings of a datafile) saves json-c's setup of each; its depth limit wins.
    public static func parse(_ bytes: UnsafeRawBufferPointer, what: String, maxBytes: Int, maxDepth: Int,
                             tokener: JSONTokener? = nil)
        throws(JSONError) -> JSONDocument
    {
        // json-c takes an Int32 length.
        let limit = min(maxBytes, Int(Int32.max) - 1)
        guard bytes.count <= limit else {
            throw .tooLarge("\(what): \(bytes.count) bytes exceeds the limit of \(limit) bytes")
        }
        guard let base = bytes.baseAddress, bytes.count > 0 else {
            throw .malformed("\(what): empty document")
        }
        let text = base.assumingMemoryBound(to: CChar.self)
        switch JSONDocument.tokenize(text, count: bytes.count, maxDepth: maxDepth, tokener: tokener) {
        case .success(let tree):
            // json-c's UTF-8 check takes overlong forms, UTF-16 surrogates and scalars above U+10FFFF;
            // the library keeps only text the reference could have received. One pass, for non-ASCII text.
            if let invalid = UTF8Validation.firstInvalidByte(bytes.assumingMemoryBound(to: UInt8.self)) {
                json_object_put(tree)
                throw .invalidUTF8("\(what): invalid UTF-8 at byte \(invalid)")
            }
            // json-c's strict mode still takes a few texts Python's `json` refuses; the reference would
            // refuse such a datafile or variable value, so the library does too.
            var changedTokens = false
            if let (offset, problem) = JSONStrictTokens.firstProblem(bytes, changedTokens: &changedTokens) {
                json_object_put(tree)
                throw .malformed("\(what): malformed JSON at byte \(offset): \(problem)")
            }
            let document = JSONDocument(tree: tree)
            if changedTokens { document.noteChangedValues(in: bytes.assumingMemoryBound(to: UInt8.self)) }
            return document
        case .failure(let failure):
            throw error(failure, in: bytes, what: what, maxDepth: maxDepth)
        }
    }

    public static func parse(_ text: String, what: String, maxBytes: Int, maxDepth: Int, tokener: JSONTokener? = nil)
        throws(JSONError) -> JSONDocument
    {
        var copy = text
        let result: Result<JSONDocument, JSONError> = copy.withUTF8 { buffer in
            do throws(JSONError) {
                return .success(try parse(UnsafeRawBufferPointer(buffer), what: what, maxBytes: maxBytes,
                                          maxDepth: maxDepth, tokener: tokener))
            } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// Why json-c stopped, and where.
    struct Failure: Error {
        let status: json_tokener_error
        let offset: Int
        /// json-c read a whole value and found more text after it.
        var trailing = false
    }

    /// One json-c parse of `count` bytes at `text`: the tree (owned by the caller) or why not.
    static func tokenize(_ text: UnsafePointer<CChar>, count: Int, maxDepth: Int, tokener reused: JSONTokener? = nil)
        -> Result<OpaquePointer?, Failure>
    {
        let tokener: UnsafeMutablePointer<json_tokener>
        if let reused {
            tokener = reused.tokener
            json_tokener_reset(tokener)
        } else {
            guard let made = json_tokener_new_ex(Int32(maxDepth)) else {
                return .failure(Failure(status: json_tokener_error_size, offset: 0))
            }
            json_tokener_set_flags(made, exp_json_flags())
            tokener = made
        }
        defer { if reused == nil { json_tokener_free(tokener) } }
        var tree = exp_json_parse(tokener, text, Int32(count))
        var status = json_tokener_get_error(tokener)
        let end = Int(json_tokener_get_parse_end(tokener))
        if status == json_tokener_continue && end == count {
            // A bare number (or the text ran out): json-c waits for more, so say that the text ended.
            tree = exp_json_parse(tokener, "", 1)
            status = json_tokener_get_error(tokener)
            if status == json_tokener_continue { status = json_tokener_error_parse_eof }
            if status == json_tokener_error_parse_eof { return .failure(Failure(status: status, offset: count)) }
        }
        guard status == json_tokener_success else { return .failure(Failure(status: status, offset: end)) }
        // json-c stops at a NUL byte as at the end of the text: whatever follows is refused here.
        if end < count {
            json_object_put(tree)
            return .failure(Failure(status: json_tokener_error_parse_unexpected, offset: end, trailing: true))
        }
        return .success(tree)
    }

    /// The error of a refused text, worded as the library's messages have been.
    private static func error(_ failure: Failure, in bytes: UnsafeRawBufferPointer, what: String, maxDepth: Int)
        -> JSONError
    {
        let offset = failure.offset
        // Invalid UTF-8 up to where json-c stopped is the problem to name, whatever json-c tripped on.
        if let invalid = UTF8Validation.firstInvalidByte(bytes.assumingMemoryBound(to: UInt8.self)), invalid <= offset {
            return .invalidUTF8("\(what): invalid UTF-8 at byte \(invalid)")
        }
        switch failure.status {
        case json_tokener_error_depth:
            return .tooDeep("\(what): nesting deeper than \(maxDepth) levels (at byte \(offset))")
        case json_tokener_error_parse_eof:
            return .malformed("\(what): unexpected end of document (truncated JSON) at byte \(offset)")
        case json_tokener_error_parse_utf8_string:
            return .invalidUTF8("\(what): invalid UTF-8 at byte \(offset)")
        case json_tokener_error_size:
            return .tooLarge("\(what): too large for the JSON parser")
        default:
            let problem: String
            if failure.trailing || isTrailing(bytes, at: offset, maxDepth: maxDepth) {
                problem = "unexpected text after the JSON value"
            } else if failure.status == json_tokener_error_parse_unexpected {
                problem = isObjectEnd(bytes, at: offset) ? "expected a member name in double quotes" : "expected a JSON value"
            } else {
                problem = describe(failure.status)
            }
            return .malformed("\(what): malformed JSON at byte \(offset): \(problem)")
        }
    }

    /// Whether the text up to `offset` is a whole JSON value (so what json-c refused at `offset` is text
    /// after it). Only worked out for a message.
    private static func isTrailing(_ bytes: UnsafeRawBufferPointer, at offset: Int, maxDepth: Int) -> Bool {
        guard offset > 0, offset < bytes.count else { return false }
        let prefix = bytes.baseAddress!.assumingMemoryBound(to: CChar.self)
        guard case .success(let tree) = tokenize(prefix, count: offset, maxDepth: maxDepth) else { return false }
        json_object_put(tree)
        return true
    }

    /// Whether json-c stopped at a '}' right after a ',' (in strict mode a member must follow).
    private static func isObjectEnd(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> Bool {
        guard offset < bytes.count, bytes[offset] == UInt8(ascii: "}") else { return false }
        var before = offset - 1
        while before >= 0, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[before]) { before -= 1 }
        return before >= 0 && bytes[before] == UInt8(ascii: ",")
    }

    private static func describe(_ status: json_tokener_error) -> String {
        switch status {
        case json_tokener_error_parse_null: return "expected null"
        case json_tokener_error_parse_boolean: return "expected true or false"
        case json_tokener_error_parse_number: return "malformed number"
        case json_tokener_error_parse_array: return "expected ',' or ']' in an array"
        case json_tokener_error_parse_object_key_name: return "expected a member name in double quotes"
        case json_tokener_error_parse_object_key_sep: return "expected ':' after a member name"
        case json_tokener_error_parse_object_value_sep: return "expected ',' or '}' in an object"
        case json_tokener_error_parse_string: return "invalid escape in a string"
        case json_tokener_error_parse_comment: return "comments are not JSON"
        default: return "unexpected character"
        }
    }
}

/// A borrowed view of one value of a `JSONDocument` (a json-c object), valid while the document lives.
/// Reading it costs no reference counting: the document must be kept alive by its owner.
///
/// Besides the value, a view remembers the container it was read from and its step there (member name or
/// element position): JSON null has no json-c object, so that is how a message finds the place of a null.
/// A json-c tokener with the library's flags, for a caller that parses many texts one after another.
public final class JSONTokener {
    let tokener: UnsafeMutablePointer<json_tokener>

    public init(maxDepth: Int) {
        // json-c returns NULL only when out of memory.
        tokener = json_tokener_new_ex(Int32(maxDepth))!
        json_tokener_set_flags(tokener, exp_json_flags())
    }

    deinit {
        json_tokener_free(tokener)
    }
}

public struct JSONValue {
    unowned(unsafe) let document: JSONDocument
    /// The json-c object; nil is JSON null.
    let object: OpaquePointer?
    /// The array or object this value was read from (nil for the root).
    let container: OpaquePointer?
    /// The member name as the container stores it (for a member), else nil.
    let name: UnsafePointer<CChar>?
    /// The position in the container (for an element).
    let position: Int

    init(document: JSONDocument, object: OpaquePointer?, container: OpaquePointer? = nil,
         name: UnsafePointer<CChar>? = nil, position: Int = 0)
    {
        self.document = document
        self.object = object
        self.container = container
        self.name = name
        self.position = position
    }

    public enum Kind: Equatable { case null, bool, int, double, string, array, object }

    public var kind: Kind {
        switch json_object_get_type(object) {
        case json_type_boolean: return .bool
        case json_type_int: return .int
        case json_type_double: return .double
        case json_type_string: return .string
        case json_type_array: return .array
        case json_type_object: return .object
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

    public var isNull: Bool { object == nil }

    public var bool: Bool? {
        guard json_object_get_type(object) == json_type_boolean else { return nil }
        return json_object_get_boolean(object) != 0
    }

    /// An integer's value; above INT64_MAX (json-c's unsigned range and beyond) it reads as INT64_MAX.
    public var int64: Int64? {
        guard json_object_get_type(object) == json_type_int else { return nil }
        return json_object_get_int64(object)
    }

    /// Whether json-c may have clamped this integer: its value is one json-c also gives a longer one.
    var mayBeClamped: Bool {
        guard json_object_get_type(object) == json_type_int else { return false }
        let value = json_object_get_int64(object)
        return value == Int64.min || (value == Int64.max && json_object_get_uint64(object) == UInt64.max)
    }

    /// An integer above INT64_MAX that json-c holds exactly (`int64` reads it as INT64_MAX), or nil.
    var unsignedAboveInt64: UInt64? {
        guard json_object_get_type(object) == json_type_int, json_object_get_int64(object) == Int64.max else { return nil }
        let value = json_object_get_uint64(object)
        return value > UInt64(Int64.max) ? value : nil
    }

    public var double: Double? {
        switch json_object_get_type(object) {
        case json_type_int: return Double(json_object_get_int64(object))
        case json_type_double: return json_object_get_double(object)
        default: return nil
        }
    }

    /// The string's bytes (escapes decoded), valid while the document lives. May hold NULs.
    public var stringBytes: UnsafeBufferPointer<UInt8>? {
        guard json_object_get_type(object) == json_type_string, let text = json_object_get_string(object) else {
            return nil
        }
        return UnsafeBufferPointer(start: UnsafeRawPointer(text).assumingMemoryBound(to: UInt8.self),
                                   count: Int(json_object_get_string_len(object)))
    }

    public var string: String? {
        guard let bytes = stringBytes else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Elements of an array; members of an object (a repeated name counts once).
    public var count: Int {
        switch json_object_get_type(object) {
        case json_type_array: return Int(json_object_array_length(object))
        case json_type_object: return Int(json_object_object_length(object))
        default: return 0
        }
    }

    /// The element at `index` of an array; null when out of range or not an array.
    public subscript(index: Int) -> JSONValue {
        guard json_object_get_type(object) == json_type_array, index >= 0,
              index < Int(json_object_array_length(object))
        else {
            return JSONValue(document: document, object: nil)
        }
        return JSONValue(document: document, object: json_object_array_get_idx(object, index), container: object,
                         position: index)
    }

    /// The member named `key`, or nil when absent (a present JSON null is a value of kind .null).
    /// A name given twice means its last value; names compare as C strings (up to a NUL), as json-c keeps them.
    public func member(_ key: String) -> JSONValue? {
        guard json_object_get_type(object) == json_type_object else { return nil }
        return key.withCString { name in
            var value: OpaquePointer? = nil
            guard let stored = exp_json_member(object, name, &value) else { return nil }
            return JSONValue(document: document, object: value, container: object, name: stored)
        }
    }

    /// Removes the member named `key` from an object, freeing its tree: readers of values inside it must
    /// not be used afterwards.
    func removeMember(_ key: String) {
        guard json_object_get_type(object) == json_type_object else { return }
        json_object_object_del(object, key)
    }

    /// Calls `body` with each member's stored name and value, in json-c's order (first position of a
    /// name, its last value).
    func forEachMember(_ body: (UnsafePointer<CChar>, JSONValue) throws -> Void) rethrows {
        guard json_object_get_type(object) == json_type_object else { return }
        var entry = exp_json_first_member(object)
        while let current = entry {
            let name = exp_json_member_name(current)!
            try body(name, JSONValue(document: document, object: exp_json_member_value(current), container: object,
                                     name: name))
            entry = exp_json_next_member(current)
        }
    }

    /// The members of an object in document order.
    public var members: [(key: String, value: JSONValue)] {
        var result: [(key: String, value: JSONValue)] = []
        result.reserveCapacity(count)
        forEachMember { name, value in result.append((String(cString: name), value)) }
        return result
    }

    /// The elements of an array in order (empty for anything else).
    public var elements: [JSONValue] {
        guard json_object_get_type(object) == json_type_array else { return [] }
        let count = Int(json_object_array_length(object))
        var result: [JSONValue] = []
        result.reserveCapacity(count)
        for index in 0..<count {
            result.append(JSONValue(document: document, object: json_object_array_get_idx(object, index),
                                    container: object, position: index))
        }
        return result
    }

    /// The value as compact JSON text, as json-c writes it (no spaces, '/' not escaped; a number with a
    /// fraction or exponent as written; an integer past 64 bits clamped, see `rawNumberText`).
    public var jsonText: String {
        String(cString: json_object_to_json_string_ext(object, exp_json_plain()))
    }
}

/// One step down from a container: a member (by its stored name) or an element.
enum JSONStep {
    case member(UnsafePointer<CChar>)
    case element(Int)
}

extension JSONValue {
    /// The steps from the document's root down to this value, or nil when the value's container is not
    /// in the tree (it always is). Searches the tree: only for messages and for re-reading a token.
    var steps: [JSONStep]? {
        guard let container else { return [] }
        var steps: [JSONStep] = []
        guard JSONValue.find(container, from: document.root, steps: &steps) else { return nil }
        steps.append(name.map { .member($0) } ?? .element(position))
        return steps
    }

    /// Depth-first search for the container `target` below `value`, appending the steps to it.
    private static func find(_ target: OpaquePointer, from value: JSONValue, steps: inout [JSONStep]) -> Bool {
        if value.object == target { return true }
        switch value.kind {
        case .array:
            for index in 0..<value.count {
                steps.append(.element(index))
                if find(target, from: value[index], steps: &steps) { return true }
                steps.removeLast()
            }
        case .object:
            var found = false
            value.forEachMember { name, member in
                guard !found else { return }
                steps.append(.member(name))
                if find(target, from: member, steps: &steps) { found = true } else { steps.removeLast() }
            }
            return found
        default:
            break
        }
        return false
    }

    /// The value's token exactly as written in `text`, the text its document was parsed from: for the
    /// few values json-c changes where the reference (Python's `json`) keeps them, an integer past 64 bits
    /// (`mayBeClamped`) and a string with an unpaired surrogate escape (json-c: U+FFFD).
    func rawToken(in text: UnsafeBufferPointer<UInt8>) -> String? {
        guard let steps else { return nil }
        var scanner = JSONTokenScanner(text: text)
        guard let range = scanner.locate(steps) else { return nil }
        return String(decoding: UnsafeBufferPointer(rebasing: text[range]), as: UTF8.self)
    }

    /// An integer's decimal text as written (Python's `str()` of what `json.loads` reads): json-c's
    /// text, or, for an integer json-c clamped past 64 bits, the token kept by `noteChangedValues`.
    public var integerText: String {
        if mayBeClamped, let object, let exact = document.clampedIntegerTexts[object] { return exact }
        return jsonText
    }

    /// A string as Python's `json` reads it, in WTF-8, when json-c read an unpaired surrogate escape in it
    /// as U+FFFD (see `JSONDocument.surrogateStrings`); nil for every other value.
    public var surrogateString: [UInt8]? {
        guard !document.surrogateStrings.isEmpty, let object, json_object_get_type(object) == json_type_string
        else { return nil }
        return document.surrogateStrings[object]
    }

    /// Whether a string holds U+FFFD, which may stand for an unpaired surrogate escape.
    var mayHaveReplacedSurrogate: Bool {
        guard let bytes = stringBytes, bytes.count >= 3 else { return false }
        for index in 0...(bytes.count - 3)
        where bytes[index] == 0xEF && bytes[index + 1] == 0xBF && bytes[index + 2] == 0xBD {
            return true
        }
        return false
    }
}

/// The tokens of a text json-c has accepted that Python's `json` (the reference's reader) refuses:
/// single-quoted member names, numbers such as `1.`, `1.e5` or `-01`, and control characters written
/// unescaped in strings. One pass over the bytes; the grammar around the tokens is json-c's.
enum JSONStrictTokens {
    static func firstProblem(_ bytes: UnsafeRawBufferPointer) -> (offset: Int, problem: String)? {
        var changedTokens = false
        return firstProblem(bytes, changedTokens: &changedTokens)
    }

    /// A number token of at least this many bytes may be an integer json-c clamps (past 64 bits).
    static let longNumberBytes = 19

    /// `firstProblem`, also telling whether the text has a token json-c may read otherwise than Python's
    /// `json` does: a number token of `longNumberBytes` or more (an integer json-c clamps) or a surrogate
    /// escape (an unpaired one json-c reads as U+FFFD).
    static func firstProblem(_ bytes: UnsafeRawBufferPointer, changedTokens: inout Bool)
        -> (offset: Int, problem: String)?
    {
        let text = bytes.assumingMemoryBound(to: UInt8.self)
        let count = text.count
        var index = 0
        while index < count {
            let byte = text[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                while true {
                    index = stringStop(text, from: index)
                    guard index < count else { break }
                    let inner = text[index]
                    if inner == UInt8(ascii: "\"") { break }
                    if inner == UInt8(ascii: "\\") {
                        if isSurrogateEscape(text, at: index) { changedTokens = true }
                        index += 2
                        continue
                    }
                    return (index, "unescaped control character in a string")
                }
                index += 1
            case UInt8(ascii: "'"):
                return (index, "expected a member name in double quotes")
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                if byte == UInt8(ascii: "-"), index + 1 < count, text[index + 1] == UInt8(ascii: "I") {
                    index += 1  // -Infinity
                    continue
                }
                let start = index
                while index < count, isNumberByte(text[index]) { index += 1 }
                if index - start >= longNumberBytes { changedTokens = true }
                if !isJSONNumber(UnsafeBufferPointer(rebasing: text[start..<index])) { return (start, "malformed number") }
                if exceedsPythonIntDigits(UnsafeBufferPointer(rebasing: text[start..<index])) {
                    return (start, "an integer of more than \(VariableValues.pythonIntMaxDigits) digits, which Python's "
                            + "json refuses to read (int_max_str_digits)")
                }
            default:
                index += 1
            }
        }
        return nil
    }

    /// The first index at or after `start` holding a quote, a backslash or a control character (`start`
    /// or the end when there is none). Strings are most of a datafile: eight bytes at a time.
    @inline(__always)
    private static func stringStop(_ text: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
        let ones: UInt64 = 0x0101_0101_0101_0101, highBits: UInt64 = 0x8080_8080_8080_8080
        var index = start
        while index + 8 <= text.count {
            let word = UInt64(littleEndian: UnsafeRawPointer(text.baseAddress! + index).loadUnaligned(as: UInt64.self))
            let quote = word ^ (ones &* 0x22), backslash = word ^ (ones &* 0x5C)
            // Each term marks its bytes exactly up to its lowest one, so the lowest mark is a real stop.
            let found = ((quote &- ones) & ~quote | (backslash &- ones) & ~backslash | (word &- ones &* 0x20) & ~word)
                & highBits
            if found != 0 { return index + found.trailingZeroBitCount / 8 }
            index += 8
        }
        while index < text.count, text[index] != 0x22, text[index] != 0x5C, text[index] >= 0x20 { index += 1 }
        return index
    }

    /// Whether the backslash at `index` starts `\uD800`...`\uDFFF` (either case).
    @inline(__always)
    static func isSurrogateEscape(_ text: UnsafeBufferPointer<UInt8>, at index: Int) -> Bool {
        guard index + 3 < text.count, text[index + 1] == UInt8(ascii: "u"), text[index + 2] | 0x20 == UInt8(ascii: "d")
        else { return false }
        let next = text[index + 3] | 0x20
        return (next >= UInt8(ascii: "8") && next <= UInt8(ascii: "9")) || (next >= UInt8(ascii: "a") && next <= UInt8(ascii: "f"))
    }

    static func isNumberByte(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "+")
            || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E")
    }

    /// RFC 8259's number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
    /// Whether a number token (one `isJSONNumber` accepts) is an integer of more digits than CPython's `int`
    /// reads from text by default: its `json` raises on it, so the reference refuses the datafile.
    @inline(__always)
    static func exceedsPythonIntDigits(_ token: UnsafeBufferPointer<UInt8>) -> Bool {
        guard token.count > VariableValues.pythonIntMaxDigits else { return false }
        let digits = token.first == UInt8(ascii: "-") ? token.count - 1 : token.count
        return digits > VariableValues.pythonIntMaxDigits
            && !token.contains { $0 == UInt8(ascii: ".") || $0 | 0x20 == UInt8(ascii: "e") }
    }

    static func isJSONNumber(_ token: UnsafeBufferPointer<UInt8>) -> Bool {
        var index = 0
        let count = token.count
        func digits() -> Int {
            let start = index
            while index < count, token[index] >= 0x30 && token[index] <= 0x39 { index += 1 }
            return index - start
        }
        if index < count, token[index] == UInt8(ascii: "-") { index += 1 }
        guard index < count else { return false }
        if token[index] == UInt8(ascii: "0") { index += 1 } else if digits() == 0 { return false }
        if index < count, token[index] == UInt8(ascii: ".") {
            index += 1
            if digits() == 0 { return false }
        }
        if index < count, token[index] | 0x20 == UInt8(ascii: "e") {
            index += 1
            if index < count, token[index] == UInt8(ascii: "+") || token[index] == UInt8(ascii: "-") { index += 1 }
            if digits() == 0 { return false }
        }
        return index == count
    }
}

/// Finds a value's token in a text json-c has accepted, by skipping values (strings, containers,
/// scalars) along the steps. It does not check the grammar: json-c did.
struct JSONTokenScanner {
    let text: UnsafeBufferPointer<UInt8>
    var index = 0

    init(text: UnsafeBufferPointer<UInt8>) {
        self.text = text
    }

    mutating func locate(_ steps: [JSONStep]) -> Range<Int>? {
        skipSpace()
        for step in steps {
            guard index < text.count else { return nil }
            switch step {
            case .element(let position):
                guard text[index] == UInt8(ascii: "[") else { return nil }
                index += 1
                for _ in 0..<position {
                    skipSpace()
                    skipValue()
                    skipSpace()
                    guard index < text.count, text[index] == UInt8(ascii: ",") else { return nil }
                    index += 1
                }
                skipSpace()
            case .member(let wanted):
                guard text[index] == UInt8(ascii: "{") else { return nil }
                index += 1
                // A repeated name means its last value.
                var found: Int? = nil
                while true {
                    skipSpace()
                    guard index < text.count, text[index] == UInt8(ascii: "\"") else { break }
                    let nameStart = index
                    skipValue()
                    let matches = JSONTokenScanner.name(text[nameStart..<index], equals: wanted)
                    skipSpace()
                    index += 1  // ':'
                    skipSpace()
                    if matches { found = index }
                    skipValue()
                    skipSpace()
                    guard index < text.count, text[index] == UInt8(ascii: ",") else { break }
                    index += 1
                }
                guard let start = found else { return nil }
                index = start
            }
        }
        let start = index
        skipValue()
        return start..<index
    }

    /// Whether a name token (quotes included) decodes to `wanted` (compared as C strings, as json-c does).
    private static func name(_ token: Slice<UnsafeBufferPointer<UInt8>>, equals wanted: UnsafePointer<CChar>) -> Bool {
        let raw = UnsafeBufferPointer(rebasing: token)
        if !raw.contains(UInt8(ascii: "\\")) {
            let inner = UnsafeBufferPointer(rebasing: raw[(raw.startIndex + 1)..<(raw.endIndex - 1)])
            return strlen(wanted) == inner.count && memcmp(wanted, inner.baseAddress!, inner.count) == 0
        }
        guard let document = try? JSONDocument.parse(UnsafeRawBufferPointer(raw), what: "name", maxBytes: raw.count,
                                                     maxDepth: 1),
              let decoded = json_object_get_string(document.tree) else { return false }
        return strcmp(decoded, wanted) == 0
    }

    private mutating func skipSpace() {
        while index < text.count, [0x20, 0x09, 0x0A, 0x0D].contains(text[index]) { index += 1 }
    }

    private mutating func skipString() {
        index += 1
        while index < text.count && text[index] != UInt8(ascii: "\"") {
            index += text[index] == UInt8(ascii: "\\") ? 2 : 1
        }
        index += 1
    }

    private mutating func skipValue() {
        guard index < text.count else { return }
        switch text[index] {
        case UInt8(ascii: "\""):
            skipString()
        case UInt8(ascii: "["), UInt8(ascii: "{"):
            var depth = 0
            while index < text.count {
                switch text[index] {
                case UInt8(ascii: "\""): skipString(); continue
                case UInt8(ascii: "["), UInt8(ascii: "{"): depth += 1
                case UInt8(ascii: "]"), UInt8(ascii: "}"): depth -= 1
                default: break
                }
                index += 1
                if depth == 0 { return }
            }
        default:
            while index < text.count, ![0x20, 0x09, 0x0A, 0x0D, UInt8(ascii: ","), UInt8(ascii: "]"), UInt8(ascii: "}")]
                .contains(text[index])
            {
                index += 1
            }
        }
    }
}

/// A JSON string token (quotes included) decoded as Python's `json` decodes it, written as WTF-8: an
/// escaped surrogate pair is its character, an unpaired surrogate escape its 3-byte form.
enum JSONStringToken {
    static func wtf8(_ token: [UInt8]) -> [UInt8]? {
        guard token.count >= 2, token.first == 0x22, token.last == 0x22 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(token.count)
        var index = 1
        let end = token.count - 1
        func hex(_ at: Int) -> UInt32? {
            guard at + 4 <= end else { return nil }
            var value: UInt32 = 0
            for byte in token[at..<(at + 4)] {
                let digit: UInt8
                switch byte {
                case 0x30...0x39: digit = byte - 0x30
                case 0x61...0x66: digit = byte - 0x61 + 10
                case 0x41...0x46: digit = byte - 0x41 + 10
                default: return nil
                }
                value = value << 4 | UInt32(digit)
            }
            return value
        }
        func append(_ scalar: UInt32) {
            switch scalar {
            case 0..<0x80:
                out.append(UInt8(scalar))
            case 0x80..<0x800:
                out.append(UInt8(0xC0 | scalar >> 6))
                out.append(UInt8(0x80 | scalar & 0x3F))
            case 0x800..<0x10000:
                out.append(UInt8(0xE0 | scalar >> 12))
                out.append(UInt8(0x80 | scalar >> 6 & 0x3F))
                out.append(UInt8(0x80 | scalar & 0x3F))
            default:
                out.append(UInt8(0xF0 | scalar >> 18))
                out.append(UInt8(0x80 | scalar >> 12 & 0x3F))
                out.append(UInt8(0x80 | scalar >> 6 & 0x3F))
                out.append(UInt8(0x80 | scalar & 0x3F))
            }
        }
        while index < end {
            let byte = token[index]
            guard byte == 0x5C else {
                out.append(byte)
                index += 1
                continue
            }
            guard index + 1 < end else { return nil }
            let escape = token[index + 1]
            index += 2
            switch escape {
            case 0x22: out.append(0x22)            // \"
            case 0x5C: out.append(0x5C)            // \\
            case 0x2F: out.append(0x2F)            // \/
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                guard let unit = hex(index) else { return nil }
                index += 4
                // A high surrogate followed by an escaped low one is one character (Python's json).
                if unit >= 0xD800 && unit < 0xDC00, index + 1 < end, token[index] == 0x5C,
                   token[index + 1] == UInt8(ascii: "u"), let low = hex(index + 2), low >= 0xDC00 && low < 0xE000 {
                    append(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))
                    index += 6
                } else {
                    append(unit)
                }
            default:
                return nil
            }
        }
        return out
    }
}
