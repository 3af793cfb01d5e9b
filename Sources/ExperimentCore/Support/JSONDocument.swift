import CJSONC

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

/// A parsed JSON document owned by json-c. Values read from it are valid while the document lives.
///
/// Parsing runs straight over the caller's buffer (no Swift String copy), in strict mode with UTF-8
/// validation, bounded in size and depth, and refuses trailing garbage, which json-c accepts by default.
public final class JSONDocument {
    public let root: JSONValue
    private let object: OpaquePointer?

    private init(object: OpaquePointer?) {
        self.object = object
        self.root = JSONValue(object)
    }

    deinit { json_object_put(object) }

    public static func parse(_ bytes: UnsafeRawBufferPointer, what: String, maxBytes: Int, maxDepth: Int)
        throws(JSONError) -> JSONDocument
    {
        guard bytes.count <= maxBytes else {
            throw .tooLarge("\(what): \(bytes.count) bytes exceeds the limit of \(maxBytes) bytes")
        }
        guard let base = bytes.baseAddress, bytes.count > 0 else {
            throw .malformed("\(what): empty document")
        }
        // json-c's own UTF-8 check lets overlong forms and surrogates through; check strictly first.
        if let offset = UTF8Validation.firstInvalidByte(UnsafeBufferPointer(start: base.assumingMemoryBound(to: UInt8.self),
                                                                            count: bytes.count)) {
            throw .invalidUTF8("\(what): invalid UTF-8 at byte \(offset)")
        }
        let text8 = UnsafeBufferPointer(start: base.assumingMemoryBound(to: UInt8.self), count: bytes.count)
        if let (offset, problem) = StrictJSON.firstError(text8, maxDepth: maxDepth) {
            if problem.hasPrefix("nesting") { throw .tooDeep("\(what): \(problem) (at byte \(offset))") }
            if problem.hasPrefix("unexpected end") || problem.hasPrefix("unterminated") {
                throw .malformed("\(what): unexpected end of document (truncated JSON) at byte \(offset)")
            }
            throw .malformed("\(what): malformed JSON at byte \(offset): \(problem)")
        }
        guard let tokener = json_tokener_new_ex(Int32(maxDepth + 1)) else {
            throw .malformed("\(what): out of memory")
        }
        defer { json_tokener_free(tokener) }
        json_tokener_set_flags(tokener, Int32(JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8))
        let text = base.assumingMemoryBound(to: CChar.self)
        var parsed = json_tokener_parse_ex(tokener, text, Int32(bytes.count))
        var status = json_tokener_get_error(tokener)
        var end = Int(json_tokener_get_parse_end(tokener))
        if status == json_tokener_continue && end == bytes.count {
            // A number or literal ending exactly at the buffer's end: a NUL tells json-c the input is over.
            parsed = json_tokener_parse_ex(tokener, "", 1)
            status = json_tokener_get_error(tokener)
            end = bytes.count
            if status != json_tokener_success && status != json_tokener_error_depth { status = json_tokener_continue }
        }
        guard status == json_tokener_success else {
            json_object_put(parsed)
            throw failure(status, offset: end, what: what, maxDepth: maxDepth)
        }
        let document = JSONDocument(object: parsed)
        if let garbage = firstNonSpace(bytes, from: end) {
            throw .malformed("\(what): unexpected text after the JSON value at byte \(garbage)")
        }
        return document
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

    private static func failure(_ status: json_tokener_error, offset: Int, what: String, maxDepth: Int)
        -> JSONError
    {
        switch status {
        case json_tokener_error_depth:
            return .tooDeep("\(what): nesting deeper than \(maxDepth) levels")
        case json_tokener_continue:
            return .malformed("\(what): unexpected end of document (truncated JSON)")
        case json_tokener_error_parse_utf8_string:
            return .invalidUTF8("\(what): invalid UTF-8 at byte \(offset)")
        default:
            let reason = String(cString: json_tokener_error_desc(status))
            return .malformed("\(what): malformed JSON at byte \(offset): \(reason)")
        }
    }

    private static func firstNonSpace(_ bytes: UnsafeRawBufferPointer, from start: Int) -> Int? {
        var index = start
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return index
            }
        }
        return nil
    }
}

/// A borrowed view of one json-c value. `nil` object means JSON null (json-c's representation).
public struct JSONValue {
    public let object: OpaquePointer?

    init(_ object: OpaquePointer?) { self.object = object }

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

    public var isNull: Bool { kind == .null }
    public var bool: Bool? { kind == .bool ? json_object_get_boolean(object) != 0 : nil }
    public var int64: Int64? { kind == .int ? json_object_get_int64(object) : nil }
    public var double: Double? {
        switch kind {
        case .double: return json_object_get_double(object)
        case .int: return Double(json_object_get_int64(object))
        default: return nil
        }
    }

    /// The string's bytes, valid while the document lives. Handles embedded NULs.
    public var stringBytes: UnsafeBufferPointer<UInt8>? {
        guard kind == .string, let pointer = json_object_get_string(object) else { return nil }
        let length = Int(json_object_get_string_len(object))
        return UnsafeBufferPointer(start: UnsafeRawPointer(pointer).assumingMemoryBound(to: UInt8.self),
                                  count: length)
    }

    public var string: String? {
        guard let bytes = stringBytes else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    public var count: Int {
        switch kind {
        case .array: return Int(json_object_array_length(object))
        case .object: return Int(json_object_object_length(object))
        default: return 0
        }
    }

    public subscript(index: Int) -> JSONValue { JSONValue(json_object_array_get_idx(object, index)) }

    /// The member named `key`, or nil when absent (a present JSON null is a value of kind .null).
    public func member(_ key: String) -> JSONValue? {
        guard kind == .object else { return nil }
        var found: OpaquePointer? = nil
        // withCString: short keys are small strings with no memory of their own, and the implicit String-to-
        // pointer conversion built a heap copy (utf8CString) of each of them, on every member read.
        guard key.withCString({ json_object_object_get_ex(object, $0, &found) }) != 0 else { return nil }
        return JSONValue(found)
    }

    /// The members of an object in document order.
    public var members: [(key: String, value: JSONValue)] {
        guard kind == .object else { return [] }
        var result: [(String, JSONValue)] = []
        result.reserveCapacity(count)
        var iterator = json_object_iter_begin(object)
        var end = json_object_iter_end(object)
        while json_object_iter_equal(&iterator, &end) == 0 {
            let name = String(cString: json_object_iter_peek_name(&iterator))
            result.append((name, JSONValue(json_object_iter_peek_value(&iterator))))
            json_object_iter_next(&iterator)
        }
        return result
    }

    public var elements: [JSONValue] { (0..<(kind == .array ? count : 0)).map { self[$0] } }

    /// The value serialized back to compact JSON text.
    public var jsonText: String {
        String(cString: json_object_to_json_string_ext(object, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE))
    }
}
