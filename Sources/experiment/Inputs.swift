import CExperimentABI
import ExperimentCore
import ExperimentRuntime
#if canImport(Glibc)
import Glibc
#endif

let maxKeyBytes = 1024
let maxStringBytes = 65536
let maxAttributes = 1024
let maxInputJSONBytes = 1 << 20
/// EXP_MAX_DECISIONS: key_count of exp_decide_for_keys and count of exp_decisions_release.
let maxDecisions = 1 << 20

/// A C `size_t` argument checked against its documented limit. Swift imports size_t as Int, so 2^63 and
/// more (an `int n = -1` passed as a count, SIZE_MAX) arrive negative: one unsigned comparison refuses them
/// with the too-large ones instead of letting a negative count reach a buffer or an allocation.
@inline(__always)
func checkedCount(_ value: Int, limit: Int, _ name: StaticString) throws(ClientError) -> Int {
    if UInt(bitPattern: value) <= UInt(limit) { return value }
    throw countTooLarge(value, limit: limit, name)
}

@inline(never)
func countTooLarge(_ value: Int, limit: Int, _ name: StaticString) -> ClientError {
    ClientError(.tooLarge, "\(name) \(UInt(bitPattern: value)) exceeds the limit of \(limit)")
}

/// Measures and validates a C string argument: non-NULL, at most `limit` bytes, valid UTF-8.
/// `name` is built only when there is an error to report: the success path must not allocate.
/// Inlined: the common case (ASCII within the limit) is a strnlen and a few word loads; everything else
/// goes to `checkedText`.
@inline(__always)
func text(_ pointer: UnsafePointer<CChar>?, _ name: @autoclosure () -> String, limit: Int = maxKeyBytes)
    throws(ClientError) -> UTF8Text
{
    if let pointer {
        // glibc's strnlen reads a word (or a vector) at a time and stays inside the string for sanitizers;
        // it stops one byte past the limit, so an over-long string is refused without being read to its end.
        let length = strnlen(pointer, limit + 1)
        let bytes = UTF8Text(start: UnsafeRawPointer(pointer).assumingMemoryBound(to: UInt8.self), count: length)
        if length <= limit && isASCII(bytes) { return bytes }
    }
    return try checkedText(pointer, name, limit: limit)
}

/// `text` for NULL, over-long and non-ASCII strings: the full UTF-8 check and the error messages.
@inline(never)
func checkedText(_ pointer: UnsafePointer<CChar>?, _ name: () -> String, limit: Int) throws(ClientError) -> UTF8Text {
    guard let pointer else { throw ClientError(.invalidArgument, "\(name()) is NULL") }
    let length = strnlen(pointer, limit + 1)
    guard length <= limit else { throw ClientError(.tooLarge, "\(name()) is longer than \(limit) bytes") }
    let bytes = UTF8Text(start: UnsafeRawPointer(pointer).assumingMemoryBound(to: UInt8.self), count: length)
    guard UTF8Validation.firstInvalidByte(bytes) == nil else {
        throw ClientError(.invalidUTF8, "\(name()) is not valid UTF-8")
    }
    return bytes
}

/// Whether every byte of `bytes` is below 0x80, reading 8 bytes at a time (overlapping loads for the ends,
/// all within the buffer).
@inline(__always)
func isASCII(_ bytes: UTF8Text) -> Bool {
    let count = bytes.count
    guard let base = bytes.baseAddress else { return true }
    let raw = UnsafeRawPointer(base)
    if count >= 8 {
        var high: UInt64 = raw.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
        var offset = 0
        while offset + 8 <= count {
            high |= raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            offset += 8
        }
        return high & 0x8080_8080_8080_8080 == 0
    }
    if count >= 4 {
        let high = raw.loadUnaligned(as: UInt32.self) | raw.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)
        return high & 0x8080_8080 == 0
    }
    var high: UInt8 = 0
    for index in 0..<count { high |= base[index] }
    return high < 0x80
}

func string(_ pointer: UnsafePointer<CChar>?, _ name: @autoclosure () -> String, limit: Int = maxKeyBytes)
    throws(ClientError) -> String
{
    String(decoding: try text(pointer, name(), limit: limit), as: UTF8.self)
}

func optionalString(_ pointer: UnsafePointer<CChar>?, _ name: String) throws(ClientError) -> String? {
    guard pointer != nil else { return nil }
    return try string(pointer, name)
}

/// Per-call attributes given as a C array, validated once, read without copying. A key given twice
/// counts once, with its last value (as building a dictionary would).
struct CAttributes: UserAttributes {
    let items: UnsafeBufferPointer<exp_attribute>
    /// Byte lengths measured during validation: keys at [i], string values at [count + i].
    let lengths: UnsafeMutableBufferPointer<Int>
    /// The index of the last `$opt_bucketing_id` key, or -1: found while validating (one length compare per
    /// key), so the two bucketing-id reads of a decision do not search the array.
    let bucketingIdIndex: Int

    /// Validates `items`, measuring keys and string values into `lengths` (caller-provided scratch of twice
    /// the count), so lookups never measure a string again.
    init(_ items: UnsafeBufferPointer<exp_attribute>, lengths: UnsafeMutableBufferPointer<Int>) throws(ClientError) {
        self.items = items
        self.lengths = lengths
        let bucketingName: StaticString = "$opt_bucketing_id"
        var bucketingIdIndex = -1
        for index in items.indices {
            let item = items[index]
            let key = try text(item.key, "attributes[\(index)].key")
            lengths[index] = key.count
            if key.count == bucketingName.utf8CodeUnitCount
                && memcmp(key.baseAddress!, bucketingName.utf8Start, key.count) == 0 { bucketingIdIndex = index }
            switch UInt32(bitPattern: item.value.type) {
            case EXP_VALUE_NULL.rawValue, EXP_VALUE_BOOL.rawValue, EXP_VALUE_INT.rawValue, EXP_VALUE_DOUBLE.rawValue,
                 EXP_VALUE_OTHER.rawValue:
                break
            case EXP_VALUE_STRING.rawValue:
                lengths[items.count + index] = try text(
                    item.value.string_value,
                    "attributes[\(index)] (\"\(String(decoding: key, as: UTF8.self))\") string value",
                    limit: maxStringBytes).count
            case EXP_VALUE_BIG_INT.rawValue:
                lengths[items.count + index] = try decimalText(
                    text(item.value.string_value, "attributes[\(index)] big integer", limit: maxStringBytes),
                    "attributes[\(index)] big integer").count
            default:
                throw ClientError(.invalidArgument, "attributes[\(index)].value.type: \(item.value.type) is not an exp_value_type")
            }
        }
        self.bucketingIdIndex = bucketingIdIndex
    }

    @inline(__always)
    func bucketingIdValue() -> AttributeValue? { bucketingIdIndex >= 0 ? value(at: bucketingIdIndex) : nil }

    @inline(__always)
    func value(named name: UTF8Text) -> AttributeValue? {
        var index = items.count - 1
        while index >= 0 {
            if lengths[index] == name.count,
               name.count == 0 || ShortBytes.equal(items[index].key!, name.baseAddress!, count: name.count)
            {
                return value(at: index)
            }
            index -= 1
        }
        return nil
    }

    func isQualified(for segment: UTF8Text) -> Bool { false }

    func forEach(_ body: (UTF8Text, AttributeValue) -> Void) {
        for index in items.indices {
            let key = UTF8Text(start: UnsafeRawPointer(items[index].key!).assumingMemoryBound(to: UInt8.self),
                               count: lengths[index])
            // Only the last occurrence of a repeated key is reported.
            var repeated = false
            for later in (index + 1)..<items.count where lengths[later] == key.count
                && memcmp(items[later].key!, key.baseAddress!, key.count) == 0 { repeated = true; break }
            if !repeated { body(key, value(at: index)) }
        }
    }

    @inline(__always)
    func value(at index: Int) -> AttributeValue {
        let value = items[index].value
        switch UInt32(bitPattern: value.type) {
        case EXP_VALUE_BOOL.rawValue: return .bool(value.bool_value != 0)
        case EXP_VALUE_INT.rawValue: return .int(value.int_value)
        case EXP_VALUE_DOUBLE.rawValue: return .double(value.double_value)
        case EXP_VALUE_STRING.rawValue:
            return .string(UTF8Text(start: UnsafeRawPointer(value.string_value!).assumingMemoryBound(to: UInt8.self),
                                    count: lengths[items.count + index]))
        case EXP_VALUE_NULL.rawValue: return .null
        default: return unusualValue(at: index)
        }
    }

    /// The value of an EXP_VALUE_OTHER or EXP_VALUE_BIG_INT attribute (kept out of the inlined common cases).
    @inline(never)
    func unusualValue(at index: Int) -> AttributeValue {
        let value = items[index].value
        if UInt32(bitPattern: value.type) == EXP_VALUE_BIG_INT.rawValue {
            return integer(UTF8Text(start: UnsafeRawPointer(value.string_value!).assumingMemoryBound(to: UInt8.self),
                                    count: lengths[items.count + index]))
        }
        return .unsupported
    }
}

/// Checks that `digits` is "-?[0-9]+" (an EXP_VALUE_BIG_INT's text).
func decimalText(_ digits: UTF8Text, _ name: @autoclosure () -> String) throws(ClientError) -> UTF8Text {
    var index = digits.first == UInt8(ascii: "-") ? 1 : 0
    guard index < digits.count else { throw ClientError(.invalidArgument, "\(name()) is not a decimal integer") }
    while index < digits.count {
        guard digits[index] >= UInt8(ascii: "0") && digits[index] <= UInt8(ascii: "9") else {
            throw ClientError(.invalidArgument, "\(name()) is not a decimal integer")
        }
        index += 1
    }
    return digits
}

/// A checked decimal integer as an attribute value: `.int` when it fits in 64 bits, else `.bigInteger`.
func integer(_ digits: UTF8Text) -> AttributeValue {
    if let number = Int64(String(decoding: digits, as: UTF8.self)) { return .int(number) }
    return .bigInteger(digits)
}

/// A length-delimited string argument (the *_n entry points): at most `limit` bytes of valid UTF-8, which
/// may include NUL. NULL is accepted only with length 0.
func sizedText(_ pointer: UnsafePointer<CChar>?, _ length: Int, _ name: @autoclosure () -> String,
               limit: Int = maxKeyBytes) throws(ClientError) -> UTF8Text {
    guard UInt(bitPattern: length) <= UInt(limit) else {  // a size_t: SIZE_MAX arrives negative
        throw ClientError(.tooLarge, "\(name())_length \(UInt(bitPattern: length)) exceeds the limit of \(limit) bytes")
    }
    guard let pointer else {
        if length == 0 { return UTF8Text(start: nil, count: 0) }
        throw ClientError(.invalidArgument, "\(name()) is NULL but its length is \(length)")
    }
    let bytes = UTF8Text(start: UnsafeRawPointer(pointer).assumingMemoryBound(to: UInt8.self), count: length)
    if isASCII(bytes) { return bytes }
    guard UTF8Validation.firstInvalidByte(bytes) == nil else {
        throw ClientError(.invalidUTF8, "\(name()) is not valid UTF-8")
    }
    return bytes
}

/// Per-call attributes given as a C array of exp_attribute_n (the *_n entry points): lengths are the
/// caller's, so keys and strings may contain NUL. A key given twice counts once, with its last value.
struct SizedCAttributes: UserAttributes {
    let items: UnsafeBufferPointer<exp_attribute_n>

    init(_ items: UnsafeBufferPointer<exp_attribute_n>) throws(ClientError) {
        self.items = items
        for index in items.indices {
            let item = items[index]
            let key = try sizedText(item.key, item.key_length, "attributes[\(index)].key")
            switch UInt32(bitPattern: item.value.type) {
            case EXP_VALUE_NULL.rawValue, EXP_VALUE_BOOL.rawValue, EXP_VALUE_INT.rawValue, EXP_VALUE_DOUBLE.rawValue,
                 EXP_VALUE_OTHER.rawValue:
                break
            case EXP_VALUE_STRING.rawValue:
                _ = try sizedText(item.value.string_value, item.string_length,
                                  "attributes[\(index)] (\"\(String(decoding: key, as: UTF8.self))\") string value",
                                  limit: maxStringBytes)
            case EXP_VALUE_BIG_INT.rawValue:
                _ = try decimalText(sizedText(item.value.string_value, item.string_length,
                                              "attributes[\(index)] big integer", limit: maxStringBytes),
                                    "attributes[\(index)] big integer")
            default:
                throw ClientError(.invalidArgument, "attributes[\(index)].value.type: \(item.value.type) is not an exp_value_type")
            }
        }
    }

    private func key(at index: Int) -> UTF8Text {
        UTF8Text(start: UnsafeRawPointer(items[index].key).map { $0.assumingMemoryBound(to: UInt8.self) },
                 count: items[index].key_length)
    }

    func value(named name: UTF8Text) -> AttributeValue? {
        var index = items.count - 1
        while index >= 0 {
            if sameBytes(key(at: index), name) { return value(at: index) }
            index -= 1
        }
        return nil
    }

    func isQualified(for segment: UTF8Text) -> Bool { false }

    func forEach(_ body: (UTF8Text, AttributeValue) -> Void) {
        for index in items.indices {
            let name = key(at: index)
            var repeated = false
            for later in (index + 1)..<items.count where sameBytes(key(at: later), name) { repeated = true; break }
            if !repeated { body(name, value(at: index)) }
        }
    }

    func value(at index: Int) -> AttributeValue {
        let item = items[index]
        let value = item.value
        switch UInt32(bitPattern: value.type) {
        case EXP_VALUE_BOOL.rawValue: return .bool(value.bool_value != 0)
        case EXP_VALUE_INT.rawValue: return .int(value.int_value)
        case EXP_VALUE_DOUBLE.rawValue: return .double(value.double_value)
        case EXP_VALUE_STRING.rawValue, EXP_VALUE_BIG_INT.rawValue:
            let text = UTF8Text(start: UnsafeRawPointer(value.string_value).map { $0.assumingMemoryBound(to: UInt8.self) },
                                count: item.string_length)
            return UInt32(bitPattern: value.type) == EXP_VALUE_STRING.rawValue ? .string(text) : integer(text)
        case EXP_VALUE_OTHER.rawValue: return .unsupported
        default: return .null
        }
    }
}

private func sameBytes(_ a: UTF8Text, _ b: UTF8Text) -> Bool {
    a.count == b.count && (a.count == 0 || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0)
}

/// Validates a C exp_attribute_n array and runs `body` with it.
func withSizedAttributes<R>(_ pointer: UnsafePointer<exp_attribute_n>?, _ count: Int,
                            _ body: (SizedCAttributes) throws(ClientError) -> R) throws(ClientError) -> R {
    let count = try checkedCount(count, limit: maxAttributes, "attribute_count")
    if count > 0 && pointer == nil { throw ClientError(.invalidArgument, "attributes is NULL but attribute_count is \(count)") }
    return try body(try SizedCAttributes(UnsafeBufferPointer(start: pointer, count: count)))
}

/// Validates the C attribute array and runs `body` with it (measured lengths live on the stack).
@inline(__always)
func withAttributes<R>(_ pointer: UnsafePointer<exp_attribute>?, _ count: Int,
                       _ body: (CAttributes) throws(ClientError) -> R) throws(ClientError) -> R {
    let count = try checkedCount(count, limit: maxAttributes, "attribute_count")
    if count > 0 && pointer == nil { throw ClientError(.invalidArgument, "attributes is NULL but attribute_count is \(count)") }
    let items = UnsafeBufferPointer(start: pointer, count: count)
    let result: Result<R, ClientError> = withUnsafeTemporaryAllocation(of: Int.self, capacity: max(2 * count, 1)) { scratch in
        do throws(ClientError) {
            return .success(try body(try CAttributes(items, lengths: scratch)))
        } catch {
            return .failure(error)
        }
    }
    return try result.get()
}

/// Parses a JSON text into a document (bounded, strict).
func parseJSON(_ pointer: UnsafePointer<CChar>, what: String) throws(ClientError) -> JSONDocument {
    let length = strnlen(pointer, maxInputJSONBytes + 1)
    guard length <= maxInputJSONBytes else { throw ClientError(.tooLarge, "\(what): larger than \(maxInputJSONBytes) bytes") }
    do {
        return try JSONDocument.parse(UnsafeRawBufferPointer(start: pointer, count: length), what: what,
                                      maxBytes: maxInputJSONBytes, maxDepth: 64)
    } catch {
        throw ClientError(error)
    }
}

/// A scalar JSON value as an owned attribute value; arrays and objects are refused.
func ownedValue(_ value: JSONValue, what: String) throws(ClientError) -> OwnedValue {
    switch value.kind {
    case .null: return .null
    case .bool: return .bool(value.bool!)
    case .int: return .int(value.int64!)
    case .double: return .double(value.double!)
    case .string:
        let bytes = value.stringBytes!
        guard bytes.count <= maxStringBytes else { throw ClientError(.tooLarge, "\(what): longer than \(maxStringBytes) bytes") }
        return .string(Array(bytes))
    case .array, .object:
        throw ClientError(.invalidArgument, "\(what): expected a string, number, boolean or null, got \(value.kindName)")
    }
}

/// Attributes given as a JSON object (NULL: none).
func jsonAttributes(_ pointer: UnsafePointer<CChar>?) throws(ClientError) -> OwnedAttributes {
    guard let pointer else { return .empty }
    let document = try parseJSON(pointer, what: "attributes")
    guard document.root.kind == .object else {
        throw ClientError(.invalidArgument, "attributes: expected a JSON object, got \(document.root.kindName)")
    }
    let members = document.root.members
    guard members.count <= maxAttributes else { throw ClientError(.tooLarge, "attributes: more than \(maxAttributes) keys") }
    var pairs: [(key: [UInt8], value: OwnedValue)] = []
    for (key, value) in members {
        guard key.utf8.count <= maxKeyBytes else { throw ClientError(.tooLarge, "attributes: key longer than \(maxKeyBytes) bytes") }
        pairs.append((Array(key.utf8), try ownedValue(value, what: "attributes.\(key)")))
    }
    return OwnedAttributes(pairs)
}

/// Converts a typed exp_value into an owned value.
func ownedValue(_ pointer: UnsafePointer<exp_value>?, what: String) throws(ClientError) -> OwnedValue {
    guard let value = pointer?.pointee else { throw ClientError(.invalidArgument, "\(what) is NULL") }
    switch UInt32(bitPattern: value.type) {
    case EXP_VALUE_NULL.rawValue: return .null
    case EXP_VALUE_BOOL.rawValue: return .bool(value.bool_value != 0)
    case EXP_VALUE_INT.rawValue: return .int(value.int_value)
    case EXP_VALUE_DOUBLE.rawValue: return .double(value.double_value)
    case EXP_VALUE_STRING.rawValue:
        return .string(Array(try text(value.string_value, "\(what).string_value", limit: maxStringBytes)))
    case EXP_VALUE_OTHER.rawValue: return .unsupported
    case EXP_VALUE_BIG_INT.rawValue:
        let digits = try decimalText(text(value.string_value, "\(what).string_value", limit: maxStringBytes),
                                     "\(what).string_value")
        if case .int(let number) = integer(digits) { return .int(number) }
        return .bigInteger(Array(digits))
    default:
        throw ClientError(.invalidArgument, "\(what).type: \(value.type) is not an exp_value_type")
    }
}

/// Rejects option bits the header does not define (inlined: the check is one mask test).
@inline(__always)
func decideOptions(_ raw: UInt32) throws(ClientError) -> DecideOptions {
    if raw & ~DecideOptions.all.rawValue == 0 { return DecideOptions(rawValue: raw) }
    throw unknownDecideOptions(raw)
}

@inline(never)
func unknownDecideOptions(_ raw: UInt32) -> ClientError {
    ClientError(.invalidArgument, "options: unknown decide option bits 0x\(String(raw & ~DecideOptions.all.rawValue, radix: 16))")
}

/// Per-call attributes in one of the two C layouts, validated when a call uses them: lets one generic body
/// serve an entry point and its length-delimited (_n) form.
protocol AttributeInput {
    associatedtype Attributes: UserAttributes
    func with<R>(_ body: (Attributes) throws(ClientError) -> R) throws(ClientError) -> R
}

/// exp_attribute[count]
struct PlainAttributeInput: AttributeInput {
    let pointer: UnsafePointer<exp_attribute>?
    let count: Int
    func with<R>(_ body: (CAttributes) throws(ClientError) -> R) throws(ClientError) -> R {
        try withAttributes(pointer, count, body)
    }
}

/// exp_attribute_n[count]
struct SizedAttributeInput: AttributeInput {
    let pointer: UnsafePointer<exp_attribute_n>?
    let count: Int
    func with<R>(_ body: (SizedCAttributes) throws(ClientError) -> R) throws(ClientError) -> R {
        try withSizedAttributes(pointer, count, body)
    }
}
