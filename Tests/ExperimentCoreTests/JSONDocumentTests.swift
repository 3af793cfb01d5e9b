import CJSONC
#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import ExperimentCore

// JSONDocument parses on its own (one strict pass to a tape). Until then the library ran a strict UTF-8
// check, a strict RFC 8259 scan and json-c; this file keeps that pipeline as the reference and checks
// that the parser accepts exactly what it accepted, reads every value the same way and refuses the rest
// with the same error and message.

// MARK: the reference: UTF-8 check, strict scan, json-c

private enum Outcome: Equatable, CustomStringConvertible {
    case value(String)
    case error(JSONError)
    var description: String {
        switch self {
        case .value(let dump): return "value \(dump)"
        case .error(let error): return "error \(error)"
        }
    }
}

private func hex(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
    bytes.map { String($0, radix: 16) }.joined(separator: ".")
}

private func referenceOutcome(_ bytes: [UInt8], maxBytes: Int = 1 << 20, maxDepth: Int = 64) -> Outcome {
    let what = "doc"
    guard bytes.count <= maxBytes else {
        return .error(.tooLarge("\(what): \(bytes.count) bytes exceeds the limit of \(maxBytes) bytes"))
    }
    guard !bytes.isEmpty else { return .error(.malformed("\(what): empty document")) }
    return bytes.withUnsafeBufferPointer { text8 -> Outcome in
        if let offset = UTF8Validation.firstInvalidByte(text8) {
            return .error(.invalidUTF8("\(what): invalid UTF-8 at byte \(offset)"))
        }
        if let (offset, problem) = ReferenceStrictJSON.firstError(text8, maxDepth: maxDepth) {
            if problem.hasPrefix("nesting") { return .error(.tooDeep("\(what): \(problem) (at byte \(offset))")) }
            if problem.hasPrefix("unexpected end") || problem.hasPrefix("unterminated") {
                return .error(.malformed("\(what): unexpected end of document (truncated JSON) at byte \(offset)"))
            }
            return .error(.malformed("\(what): malformed JSON at byte \(offset): \(problem)"))
        }
        let tokener = json_tokener_new_ex(Int32(maxDepth + 1))!
        defer { json_tokener_free(tokener) }
        json_tokener_set_flags(tokener, Int32(JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8))
        let text = UnsafeRawPointer(text8.baseAddress!).assumingMemoryBound(to: CChar.self)
        var parsed = json_tokener_parse_ex(tokener, text, Int32(bytes.count))
        var status = json_tokener_get_error(tokener)
        if status == json_tokener_continue && Int(json_tokener_get_parse_end(tokener)) == bytes.count {
            parsed = json_tokener_parse_ex(tokener, "", 1)
            status = json_tokener_get_error(tokener)
        }
        guard status == json_tokener_success else { return .value("json-c refused: \(status)") }
        defer { json_object_put(parsed) }
        let text2 = String(cString: json_object_to_json_string_ext(parsed, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE))
        return .value(dumpJSONC(parsed) + " | " + text2)
    }
}

private func dumpJSONC(_ object: OpaquePointer?) -> String {
    switch json_object_get_type(object) {
    case json_type_boolean: return json_object_get_boolean(object) != 0 ? "T" : "F"
    case json_type_int:
        let value = json_object_get_int64(object)
        return "i\(value)/\(Double(value).bitPattern)"
    case json_type_double: return "d\(json_object_get_double(object).bitPattern)"
    case json_type_string:
        let pointer = UnsafeRawPointer(json_object_get_string(object)!).assumingMemoryBound(to: UInt8.self)
        return "s" + hex(UnsafeBufferPointer(start: pointer, count: Int(json_object_get_string_len(object))))
    case json_type_array:
        let count = Int(json_object_array_length(object))
        return "a\(count)[" + (0..<count).map { dumpJSONC(json_object_array_get_idx(object, $0)) }.joined(separator: ",") + "]"
    case json_type_object:
        var parts: [String] = []
        var iterator = json_object_iter_begin(object)
        var end = json_object_iter_end(object)
        while json_object_iter_equal(&iterator, &end) == 0 {
            let name = json_object_iter_peek_name(&iterator)!
            let nameBytes = UnsafeBufferPointer(start: UnsafeRawPointer(name).assumingMemoryBound(to: UInt8.self),
                                                count: strlen(name))
            parts.append(hex(nameBytes) + ":" + dumpJSONC(json_object_iter_peek_value(&iterator)))
            json_object_iter_next(&iterator)
        }
        return "o\(json_object_object_length(object)){" + parts.joined(separator: ",") + "}"
    default: return "N"
    }
}

// MARK: the parser under test

private func outcome(_ bytes: [UInt8], maxBytes: Int = 1 << 20, maxDepth: Int = 64) -> Outcome {
    do {
        let document = try bytes.withUnsafeBytes { (raw) throws(JSONError) -> JSONDocument in
            try JSONDocument.parse(raw, what: "doc", maxBytes: maxBytes, maxDepth: maxDepth)
        }
        // The document owns a copy: the caller's bytes are gone by now.
        return withExtendedLifetime(document) { .value(dump(document.root) + " | " + document.root.jsonText) }
    } catch let error as JSONError {
        return .error(error)
    } catch {
        return .value("unexpected \(error)")
    }
}

private func dump(_ value: JSONValue) -> String {
    switch value.kind {
    case .bool: return value.bool! ? "T" : "F"
    case .int: return "i\(value.int64!)/\(value.double!.bitPattern)"
    case .double: return "d\(value.double!.bitPattern)"
    case .string: return "s" + hex(value.stringBytes!)
    case .array:
        let elements = value.elements
        #expect(elements.count == value.count)
        for (position, element) in elements.enumerated() { #expect(value[position].index == element.index) }
        for (position, element) in elements.enumerated().reversed() { #expect(value[position].index == element.index) }
        #expect(value[elements.count].isNull && value[-1].isNull)
        return "a\(value.count)[" + elements.map(dump).joined(separator: ",") + "]"
    case .object:
        let members = value.members
        for member in members { #expect(value.member(member.key)?.index == member.value.index) }
        return "o\(value.count){" + members.map { member in
            Array(member.key.utf8).withUnsafeBufferPointer { hex($0) } + ":" + dump(member.value)
        }.joined(separator: ",") + "}"
    case .null: return "N"
    }
}

private func expectSame(_ text: String, maxDepth: Int = 64, sourceLocation: SourceLocation = #_sourceLocation) {
    expectSame(Array(text.utf8), maxDepth: maxDepth, sourceLocation: sourceLocation)
}

@discardableResult
private func expectSame(_ bytes: [UInt8], maxDepth: Int = 64, sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
    let expected = referenceOutcome(bytes, maxDepth: maxDepth)
    let actual = outcome(bytes, maxDepth: maxDepth)
    defer { #expect(actual == expected, "input \(String(decoding: bytes, as: UTF8.self).debugDescription) bytes \(bytes)",
            sourceLocation: sourceLocation) }
    if case .value = actual { return true }
    return false
}

// MARK: edge cases, each against the reference

@Test func grammarEdgeCasesMatchTheReference() {
    let cases = [
        "{}", "[]", " [ ] ", "\n\t{\r\n}\n", "null", "true", "false", "0", "-0", "\"\"", "[[[]]]",
        "{\"a\":1,\"b\":[1,2,{\"c\":null}],\"d\":{\"e\":false}}", "{\"a\" : [ 1 , 2 ] , \"b\" : { } }",
        // refused
        "", " ", "{", "[", "]", "}", "[1,]", "{\"a\":1,}", "{,}", "[,1]", "{\"a\"}", "{\"a\" 1}", "{\"a\":}",
        "{a:1}", "{'a':1}", "['a']", "[1 2]", "{\"a\":1 \"b\":2}", "[1]x", "[1] [2]", "1 2", "nul", "nulll",
        "True", "tru", "[tru]", "fals", "[nan]", "NaN", "Infinity", "-Infinity", "+1", ".5", "1.", "1.e5",
        "1e", "1e+", "-", "--1", "01", "-01", "00", "0x10", "1_000", "[1,,2]", "{\"a\":1,,\"b\":2}",
        "\"abc", "\"a\\", "\"\\x\"", "\"\\u12\"", "\"\\u12g4\"", "\"\\U0041\"", "\"tab\there\"", "\"nl\nx\"",
        "\"\u{7f}\"", "[\"a\"", "{\"a\":[1,2}", "[1}", "{\"a\":1]", "\u{FEFF}{}", "{} \u{0}", "[1]\u{0}",
        "/* c */ {}", "{} // c", "[1,2,3]garbage", "{\"a\":\"b\"}}",
    ]
    for text in cases { expectSame(text) }
}

@Test func numbersMatchJSONC() {
    let cases = [
        "0", "1", "-1", "123456789", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
        "-9223372036854775809", "18446744073709551615", "18446744073709551616", "99999999999999999999999999",
        "-99999999999999999999999", "1.5", "-0.0", "0.1", "1e5", "1E+2", "1e-2", "2.50", "1e400", "-1e400",
        "1e-400", "123456789012345678901234567890.5", "4.9e-324", "1.7976931348623157e308", "[1.0,2.50,1e5,-1.5e-3]",
        "{\"big\":18446744073709551616,\"neg\":-9223372036854775809,\"d\":3.14}",
    ]
    for text in cases { expectSame(text) }
}

@Test func escapesAndSurrogatesMatchJSONC() {
    let cases = [
        #""\"\\\/\b\f\n\r\t""#, #""\u0041\u00e9\u4e2d\uFFFF""#, #""\ud83d\ude00""#, #""\uD83D\uDE00""#,
        #""\ud800""#, #""\udc00""#, #""\ud800x""#, #""\ud800\u0041""#, #""\ud800\ud800""#, #""\ud800\n""#,
        #""\ud800\ud83d\ude00""#, #""\udbff\udfff""#, #""\ud800\""#, #""a\u0000b""#, #"{"a\u0000b":1}"#,
        #"{"a\u0000b":1,"a":2}"#, #"{"\u0000":1,"":2}"#, #""\u0001\u001f\u007f""#, #"["a\/b"]"#,
        #"{"a":1,"b":2,"a":3}"#, #"{"b":2,"a":1,"a":{"x":1}}"#, #"{"a":1,"a":2,"b":3,"a":4}"#,
        #"{"\u00e9":1,"é":2}"#, #"{"e\u0301":1,"é":2}"#, "\"caf\u{e9} \u{1F600}\"",
    ]
    for text in cases { expectSame(text) }
}

@Test func utf8MatchesTheStrictCheck() {
    let cases: [[UInt8]] = [
        [0x22, 0xC3, 0xA9, 0x22], [0x22, 0xC0, 0x80, 0x22], [0x22, 0xC1, 0xBF, 0x22], [0x22, 0xE0, 0x80, 0x80, 0x22],
        [0x22, 0xE0, 0x9F, 0xBF, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0x22, 0xED, 0xBF, 0xBF, 0x22],
        [0x22, 0xEF, 0xBF, 0xBF, 0x22], [0x22, 0xF0, 0x8F, 0xBF, 0xBF, 0x22], [0x22, 0xF0, 0x90, 0x80, 0x80, 0x22],
        [0x22, 0xF4, 0x8F, 0xBF, 0xBF, 0x22], [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], [0x22, 0xF5, 0x80, 0x80, 0x80, 0x22],
        [0x22, 0xFF, 0x22], [0x22, 0x80, 0x22], [0x22, 0xC3, 0x22], [0x22, 0xE2, 0x82, 0x22], [0x22, 0xC3],
        [0x5B, 0xC3, 0xA9, 0x5D], [0x5B, 0x31, 0x2C, 0x5D, 0xFF], [0x7B, 0x22, 0xFF, 0x22, 0x3A, 0x31, 0x7D],
        [0x5B, 0x31, 0x5D, 0x20, 0xC3, 0xA9], [0x22, 0x5C, 0xC3, 0xA9, 0x22], [0xEF, 0xBB, 0xBF, 0x7B, 0x7D],
    ]
    for bytes in cases { expectSame(bytes) }
}

@Test func depthLimitMatchesTheReference() {
    for depth in [1, 2, 63, 64, 65, 100] {
        expectSame(String(repeating: "[", count: depth) + String(repeating: "]", count: depth))
        expectSame(String(repeating: "{\"a\":", count: depth) + "1" + String(repeating: "}", count: depth))
        expectSame(String(repeating: "[", count: depth))
    }
    expectSame(String(repeating: "[", count: 1000) + String(repeating: "]", count: 1000), maxDepth: 1000)
    expectSame(String(repeating: "[", count: 1001) + String(repeating: "]", count: 1001), maxDepth: 1000)
    expectSame("[[1]]", maxDepth: 1)
}

// MARK: messages, written out

@Test func errorMessagesNameTheProblemAndTheByte() {
    let cases: [(String, JSONError)] = [
        ("", .malformed("doc: empty document")),
        ("[1,]", .malformed("doc: malformed JSON at byte 3: expected a JSON value")),
        ("{\"a\":1,}", .malformed("doc: malformed JSON at byte 7: expected a member name in double quotes")),
        ("{\"a\" 1}", .malformed("doc: malformed JSON at byte 5: expected ':' after a member name")),
        ("{\"a\":1 2}", .malformed("doc: malformed JSON at byte 7: expected ',' or '}' in an object")),
        ("[1 2]", .malformed("doc: malformed JSON at byte 3: expected ',' or ']' in an array")),
        ("[1]x", .malformed("doc: malformed JSON at byte 3: unexpected text after the JSON value")),
        ("[trux]", .malformed("doc: malformed JSON at byte 1: expected true")),
        ("\"\\q\"", .malformed("doc: malformed JSON at byte 2: invalid escape in a string")),
        ("\"\\u12x4\"", .malformed("doc: malformed JSON at byte 5: expected 4 hex digits after \\u")),
        ("\"a\tb\"", .malformed("doc: malformed JSON at byte 2: unescaped control character in a string")),
        ("-x", .malformed("doc: malformed JSON at byte 1: expected a digit")),
        ("1.x", .malformed("doc: malformed JSON at byte 2: expected a digit after '.'")),
        ("1e+", .malformed("doc: malformed JSON at byte 3: expected a digit in the exponent")),
        ("{\"a\":[1,2", .malformed("doc: unexpected end of document (truncated JSON) at byte 9")),
        ("\"abc", .malformed("doc: unexpected end of document (truncated JSON) at byte 4")),
        ("\"ab\\", .malformed("doc: unexpected end of document (truncated JSON) at byte 4")),
        ("[[[", .malformed("doc: unexpected end of document (truncated JSON) at byte 3")),
        ("[[[1]]]", .tooDeep("doc: nesting deeper than 2 levels (at byte 2)")),
        ("[1] \u{FF}", .invalidUTF8("doc: invalid UTF-8 at byte 4")),
        ("x" + String(repeating: " ", count: 39), .tooLarge("doc: 40 bytes exceeds the limit of 32 bytes")),
    ]
    for (text, expected) in cases {
        var bytes = Array(text.utf8)
        if text.hasPrefix("[1] ") { bytes = [0x5B, 0x31, 0x5D, 0x20, 0xFF] }
        let maxDepth = text == "[[[1]]]" ? 2 : 64
        let result = bytes.withUnsafeBytes { raw in
            Result { () throws(JSONError) in try JSONDocument.parse(raw, what: "doc", maxBytes: 32, maxDepth: maxDepth) }
        }
        guard case .failure(let error) = result else { Issue.record("accepted \(text.debugDescription)"); continue }
        #expect(error == expected)
    }
}

// MARK: values through the view

@Test func valuesReadLikeJSONCValues() throws {
    let document = try JSONDocument.parse(
        #"{"s": "a\"b", "n": null, "t": true, "i": -42, "u": 18446744073709551615, "d": 2.50, "a": [1, "x", [], {}], "o": {"k": "v"}, "s": "last"}"#,
        what: "doc", maxBytes: 1 << 20, maxDepth: 64)
    let root = document.root
    #expect(root.kind == .object && root.count == 8)
    #expect(root.member("s")?.string == "last")
    #expect(root.member("n")?.isNull == true && root.member("missing") == nil)
    #expect(root.member("t")?.bool == true && root.member("t")?.int64 == nil)
    #expect(root.member("i")?.int64 == -42 && root.member("i")?.double == -42)
    #expect(root.member("u")?.int64 == Int64.max && root.member("u")?.jsonText == "18446744073709551615")
    #expect(root.member("d")?.double == 2.5 && root.member("d")?.jsonText == "2.50" && root.member("d")?.int64 == nil)
    #expect(root.member("a")?.elements.map(\.kind) == [.int, .string, .array, .object])
    #expect(root.member("a")?[1].string == "x" && root.member("a")?[9].isNull == true)
    #expect(root.member("o")?.members.map(\.key) == ["k"])
    #expect(root.members.map(\.key) == ["s", "n", "t", "i", "u", "d", "a", "o"])
    #expect(root.jsonText == #"{"s":"last","n":null,"t":true,"i":-42,"u":18446744073709551615,"d":2.50,"a":[1,"x",[],{}],"o":{"k":"v"}}"#)
    #expect(root.member("a")?.member("x") == nil && root.member("s")?.elements.isEmpty == true)
}

// MARK: generated documents and mutations of them, against the reference

private struct SplitMix {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
    mutating func pick<T>(_ items: [T]) -> T { items[below(items.count)] }
}

private let stringPieces = ["a", "key", "", "\\\"", "\\\\", "\\/", "\\n", "\\t", "\\u0041", "\\u00e9", "\\u0000",
                            "\\ud83d\\ude00", "\\ud800", "\\udc00", "é", "中", "😀", " ", "id", "\\b\\f\\r"]
private let numberPieces = ["0", "-0", "1", "-1", "42", "3.14", "-2.5e-3", "1E+2", "9223372036854775807",
                            "9223372036854775808", "-9223372036854775809", "18446744073709551616", "1e400", "0.1",
                            "123456789012345678901234567890"]

private func generate(_ random: inout SplitMix, depth: Int) -> String {
    let space = random.pick(["", "", " ", "\n  ", "\t"])
    switch random.below(depth > 4 ? 5 : 8) {
    case 0: return space + random.pick(["null", "true", "false"])
    case 1, 2: return space + random.pick(numberPieces)
    case 3, 4: return space + "\"" + (0..<random.below(4)).map { _ in random.pick(stringPieces) }.joined() + "\""
    case 5:
        return space + "[" + (0..<random.below(5)).map { _ in generate(&random, depth: depth + 1) }.joined(separator: ",") + space + "]"
    default:
        let names = ["a", "b", "a", "id", "\\u0061", "é", "a\\u0000z", ""]
        return space + "{" + (0..<random.below(5)).map { _ in
            space + "\"" + random.pick(names) + "\"" + space + ":" + generate(&random, depth: depth + 1)
        }.joined(separator: ",") + "}"
    }
}

private let mutationBytes: [UInt8] = Array("{}[]\",:\\ u0-+.eE1tfn\n".utf8) + [0x00, 0x7F, 0x80, 0xC3, 0xED, 0xF4, 0xFF]

@Test func generatedDocumentsAndTheirMutationsMatchTheReference() {
    var random = SplitMix(state: 20_261_122)
    var accepted = 0, acceptedMutations = 0
    for _ in 0..<3000 {
        let document = Array(generate(&random, depth: 0).utf8)
        if expectSame(document) { accepted += 1 }
        for _ in 0..<3 {
            var mutated = document
            switch random.below(4) {
            case 0 where !mutated.isEmpty: mutated.remove(at: random.below(mutated.count))
            case 1: mutated.insert(random.pick(mutationBytes), at: random.below(mutated.count + 1))
            case 2 where !mutated.isEmpty: mutated[random.below(mutated.count)] = random.pick(mutationBytes)
            default: mutated = Array(mutated.prefix(random.below(mutated.count + 1)))
            }
            expectSame(mutated, maxDepth: 3)
            if expectSame(mutated) { acceptedMutations += 1 }
        }
    }
    // Both sides of the comparison are exercised: documents that parse and mutations that do not.
    #expect(accepted == 3000 && acceptedMutations > 500 && acceptedMutations < 8000)
}

/// The strict syntax check the library ran before json-c (until JSONDocument parsed on its own), kept
/// here as half of the reference the parser is compared with.
enum ReferenceStrictJSON {
    static func firstError(_ bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int) -> (offset: Int, problem: String)? {
        var scanner = Scanner(bytes: bytes, maxDepth: maxDepth)
        scanner.skipSpace()
        guard scanner.value(depth: 1) else { return scanner.error }
        scanner.skipSpace()
        guard scanner.index == bytes.count else { return (scanner.index, "unexpected text after the JSON value") }
        return nil
    }

    private struct Scanner {
        let bytes: UnsafeBufferPointer<UInt8>
        let maxDepth: Int
        var index = 0
        var error: (offset: Int, problem: String)? = nil

        init(bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
            self.bytes = bytes
            self.maxDepth = maxDepth
        }

        var current: UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func fail(_ problem: String) -> Bool {
            if error == nil { error = (index, problem) }
            return false
        }

        mutating func skipSpace() {
            while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
        }

        mutating func value(depth: Int) -> Bool {
            guard let byte = current else { return fail("unexpected end of document") }
            switch byte {
            case UInt8(ascii: "{"): return object(depth: depth)
            case UInt8(ascii: "["): return array(depth: depth)
            case UInt8(ascii: "\""): return string()
            case UInt8(ascii: "t"): return literal("true")
            case UInt8(ascii: "f"): return literal("false")
            case UInt8(ascii: "n"): return literal("null")
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return number()
            default: return fail("expected a JSON value")
            }
        }

        mutating func literal(_ word: StaticString) -> Bool {
            let count = word.utf8CodeUnitCount
            guard index + count <= bytes.count else { return fail("unexpected end of document") }
            for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] {
                return fail("expected \(word)")
            }
            index += count
            return true
        }

        mutating func object(depth: Int) -> Bool {
            guard depth <= maxDepth else { return fail("nesting deeper than \(maxDepth) levels") }
            index += 1
            skipSpace()
            if current == UInt8(ascii: "}") { index += 1; return true }
            while true {
                skipSpace()
                guard current != nil else { return fail("unexpected end of document") }
                guard current == UInt8(ascii: "\"") else { return fail("expected a member name in double quotes") }
                guard string() else { return false }
                skipSpace()
                guard current != nil else { return fail("unexpected end of document") }
                guard current == UInt8(ascii: ":") else { return fail("expected ':' after a member name") }
                index += 1
                skipSpace()
                guard value(depth: depth + 1) else { return false }
                skipSpace()
                if current == UInt8(ascii: ",") { index += 1; continue }
                if current == UInt8(ascii: "}") { index += 1; return true }
                return fail(current == nil ? "unexpected end of document" : "expected ',' or '}' in an object")
            }
        }

        mutating func array(depth: Int) -> Bool {
            guard depth <= maxDepth else { return fail("nesting deeper than \(maxDepth) levels") }
            index += 1
            skipSpace()
            if current == UInt8(ascii: "]") { index += 1; return true }
            while true {
                skipSpace()
                guard value(depth: depth + 1) else { return false }
                skipSpace()
                if current == UInt8(ascii: ",") { index += 1; continue }
                if current == UInt8(ascii: "]") { index += 1; return true }
                return fail(current == nil ? "unexpected end of document" : "expected ',' or ']' in an array")
            }
        }

        mutating func string() -> Bool {
            index += 1  // opening quote
            while let byte = current {
                switch byte {
                case UInt8(ascii: "\""):
                    index += 1
                    return true
                case UInt8(ascii: "\\"):
                    index += 1
                    guard let escaped = current else { return fail("unexpected end of document in a string") }
                    switch escaped {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
                         UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                        index += 1
                    case UInt8(ascii: "u"):
                        index += 1
                        for _ in 0..<4 {
                            guard let hex = current, isHexDigit(hex) else { return fail("expected 4 hex digits after \\u") }
                            index += 1
                        }
                    default:
                        return fail("invalid escape in a string")
                    }
                case 0..<0x20:
                    return fail("unescaped control character in a string")
                default:
                    index += 1
                }
            }
            return fail("unterminated string")
        }

        mutating func number() -> Bool {
            if current == UInt8(ascii: "-") { index += 1 }
            guard let first = current, isDigit(first) else { return fail("expected a digit") }
            index += 1
            if first != UInt8(ascii: "0") { while let d = current, isDigit(d) { index += 1 } }
            if current == UInt8(ascii: ".") {
                index += 1
                guard let d = current, isDigit(d) else { return fail("expected a digit after '.'") }
                while let d = current, isDigit(d) { index += 1 }
            }
            if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
                index += 1
                if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
                guard let d = current, isDigit(d) else { return fail("expected a digit in the exponent") }
                while let d = current, isDigit(d) { index += 1 }
            }
            return true
        }

        func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }
        func isHexDigit(_ byte: UInt8) -> Bool {
            isDigit(byte) || (byte | 0x20 >= UInt8(ascii: "a") && byte | 0x20 <= UInt8(ascii: "f"))
        }
    }
}
