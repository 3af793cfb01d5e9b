import CJSONC
#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import ExperimentCore

// json-c reads every JSON text of the library. These tests pin what that means against the reference
// (optimizely-sdk reads JSON with Python's `json`; the expected values below are what `json.loads` gives),
// and where json-c differs, what the library does about it.

private func parse(_ text: String, maxBytes: Int = 1 << 20, maxDepth: Int = 64) throws(JSONError) -> JSONDocument {
    try JSONDocument.parse(text, what: "doc", maxBytes: maxBytes, maxDepth: maxDepth)
}

private func parse(bytes: [UInt8], maxBytes: Int = 1 << 20, maxDepth: Int = 64) -> Result<JSONDocument, JSONError> {
    bytes.withUnsafeBytes { raw in
        Result { () throws(JSONError) in try JSONDocument.parse(raw, what: "doc", maxBytes: maxBytes, maxDepth: maxDepth) }
    }
}

private func error(_ text: String, maxBytes: Int = 1 << 20, maxDepth: Int = 64) -> JSONError? {
    error(bytes: Array(text.utf8), maxBytes: maxBytes, maxDepth: maxDepth)
}

private func error(bytes: [UInt8], maxBytes: Int = 1 << 20, maxDepth: Int = 64) -> JSONError? {
    if case .failure(let error) = parse(bytes: bytes, maxBytes: maxBytes, maxDepth: maxDepth) { return error }
    return nil
}

// MARK: numbers

@Test func integersAndFloatsKeepTheirKind() throws {
    // Python: json.loads("[1, 1.0, -0, 2.50, 1E+2]") == [1, 1.0, 0, 2.5, 100.0] (int, float, int, float, float)
    let document = try parse("[1, 1.0, -0, 2.50, 1E+2]")
    let values = document.root.elements
    #expect(values.map(\.kind) == [.int, .double, .int, .double, .double])
    #expect(values[0].int64 == 1 && values[1].double == 1.0 && values[2].int64 == 0)
    // A number with a fraction or an exponent keeps its text (variables and tags are written from it).
    #expect(values.map(\.jsonText) == ["1", "1.0", "0", "2.50", "1E+2"])
}

@Test func integersAboveTwoToThe53AreExact() throws {
    // Python: 9007199254740993 (2^53 + 1) stays an exact int; a double would read 9007199254740992.
    let document = try parse(#"{"a": 9007199254740993, "b": -9007199254740993, "c": 9223372036854775807}"#)
    #expect(document.root.member("a")?.int64 == 9_007_199_254_740_993)
    #expect(document.root.member("b")?.int64 == -9_007_199_254_740_993)
    #expect(document.root.member("c")?.int64 == Int64.max && document.root.member("c")?.mayBeClamped == false)
}

@Test func integersPast64BitsAreReadFromTheirText() throws {
    // Python keeps any integer. json-c keeps 2^63..2^64-1 as unsigned and clamps the rest, so the few
    // values it may have clamped are read again from the text where the exact value matters.
    let text = #"{"u": 9223372036854775808, "max": 18446744073709551615, "big": 99999999999999999999, "neg": -99999999999999999999, "min": -9223372036854775808, "a": [0, 123456789012345678901234567890]}"#
    let document = try parse(text)
    let root = document.root
    #expect(root.member("u")?.jsonText == "9223372036854775808" && root.member("u")?.mayBeClamped == false)
    #expect(root.member("big")?.jsonText == "18446744073709551615")  // json-c's clamp
    var bytes = Array(text.utf8)
    bytes.withUnsafeBufferPointer { buffer in
        #expect(root.member("big")?.rawToken(in: buffer) == "99999999999999999999")
        #expect(root.member("max")?.rawToken(in: buffer) == "18446744073709551615")
        #expect(root.member("neg")?.rawToken(in: buffer) == "-99999999999999999999")
        #expect(root.member("min")?.rawToken(in: buffer) == "-9223372036854775808")
        #expect(root.member("a")?[1].rawToken(in: buffer) == "123456789012345678901234567890")
    }
    for key in ["max", "big", "neg", "min"] { #expect(root.member(key)?.mayBeClamped == true) }
    bytes.removeAll()
}

@Test func nanAndInfinityAreNumbersAsInPython() throws {
    // Python: json.loads("[NaN, Infinity, -Infinity, 1e400]") == [nan, inf, -inf, inf]
    let document = try parse("[NaN, Infinity, -Infinity, 1e400, -1e400]")
    let values = document.root.elements.map { $0.double! }
    #expect(values[0].isNaN && values[1] == .infinity && values[2] == -.infinity)
    #expect(values[3] == .infinity && values[4] == -.infinity)
    #expect(document.root.elements.allSatisfy { $0.kind == .double })
    // Python refuses these spellings; so does json-c.
    for text in ["nan", "[-NaN]", "infinity", "[+1]", "[.5]", "[1e]", "[0x10]"] { #expect(error(text) != nil, "\(text)") }
}

// MARK: strings and names

@Test func duplicateNamesKeepTheLastValue() throws {
    // Python: json.loads('{"a":1,"b":2,"a":3}') == {"a": 3, "b": 2}, "a" first.
    let document = try parse(#"{"a":1,"b":2,"a":3}"#)
    #expect(document.root.member("a")?.int64 == 3 && document.root.count == 2)
    #expect(document.root.members.map(\.key) == ["a", "b"])
    #expect(document.root.jsonText == #"{"a":3,"b":2}"#)
}

@Test func loneSurrogatesAreKeptWhereTheyAreWritten() throws {
    // Python keeps "\ud800" as a lone surrogate; json-c decodes it to U+FFFD. Event tags (which go to the
    // results backend as written) re-read such a string; elsewhere U+FFFD is what a key or value holds.
    let text = #"{"s": "a\ud800b", "pair": "\ud83d\ude00", "plain": "\ufffd", "t": "x"}"#
    let document = try parse(text)
    let root = document.root
    #expect(root.member("s")?.string == "a\u{FFFD}b")
    #expect(root.member("pair")?.string == "\u{1F600}" && root.member("pair")?.mayHaveReplacedSurrogate == false)
    Array(text.utf8).withUnsafeBufferPointer { buffer in
        #expect(root.member("s")?.rawToken(in: buffer) == #""a\ud800b""#)
        #expect(root.member("plain")?.rawToken(in: buffer) == #""\ufffd""#)
    }
    let tags = Array(text.utf8).withUnsafeBufferPointer { buffer in EventTags.parse(document, text: buffer) }
    guard case .success(let parsed) = tags else { Issue.record("tags refused"); return }
    #expect(parsed.json == #"{"s":"a\ud800b","pair":"😀","plain":"\ufffd","t":"x"}"#)
}

@Test func eventTagsKeepNumbersAsWritten() throws {
    let text = #"{"revenue": 123456789012345678901234567890, "value": "2.5", "n": 1.50, "big": [-99999999999999999999, 9223372036854775808], "dup": 1, "dup": 2, "tags": null, "o": {"value": null, "k": 1}}"#
    let document = try parse(text)
    let tags = Array(text.utf8).withUnsafeBufferPointer { buffer in EventTags.parse(document, text: buffer) }
    guard case .success(let parsed) = tags else { Issue.record("tags refused"); return }
    // Python: the reference sends revenue as the int it read and drops null "tags"/"value" members.
    #expect(parsed.revenue == "123456789012345678901234567890")
    #expect(parsed.value == 2.5)
    #expect(parsed.json == #"{"revenue":123456789012345678901234567890,"value":"2.5","n":1.50,"big":[-99999999999999999999,9223372036854775808],"dup":2,"o":{"k":1}}"#)
}

@Test func eventTagsThatPythonReadsAsFalseAreSentAsTheyAre() throws {
    // The reference's validator refuses tags only when they are truthy and not a dict: [] / 0 / 0.0 / "" /
    // false pass and its payload carries them as they are (no revenue or value); other non-objects are refused.
    for (text, wire) in [("[]", "[]"), ("0", "0"), ("0.0", "0.0"), ("-0.0", "-0.0"), (#""""#, #""""#),
                         ("false", "false")] {
        let document = try parse(text)
        let tags = Array(text.utf8).withUnsafeBufferPointer { buffer in EventTags.parse(document, text: buffer) }
        guard case .success(let parsed) = tags else { Issue.record("\(text) refused"); continue }
        #expect(parsed.json == wire && parsed.revenue == nil && parsed.value == nil)
    }
    for text in ["[0]", "1", "0.5", "NaN", #""x""#, "true", "null"] {
        let document = try parse(text)
        let tags = Array(text.utf8).withUnsafeBufferPointer { buffer in EventTags.parse(document, text: buffer) }
        if case .success = tags { Issue.record("\(text) accepted") }
    }
}

@Test func namesEndAtAnEscapedNul() throws {
    // json-c keeps names as C strings (Python would keep "a\x00b"); no key a caller passes can hold a NUL.
    let document = try parse(#"{"a\u0000b": 1}"#)
    #expect(document.root.members.map(\.key) == ["a"] && document.root.member("a")?.int64 == 1)
    // String values keep their NULs.
    let value = try parse(#"["a\u0000b"]"#)
    #expect(value.root[0].stringBytes.map(Array.init) == [0x61, 0x00, 0x62])
}

// MARK: what is refused, and the messages

@Test func refusedTextsNameTheProblemAndTheByte() {
    let cases: [(String, JSONError)] = [
        ("", .malformed("doc: empty document")),
        ("  ", .malformed("doc: unexpected end of document (truncated JSON) at byte 2")),
        ("[1,]", .malformed("doc: malformed JSON at byte 3: expected a JSON value")),
        ("{\"a\":1,}", .malformed("doc: malformed JSON at byte 7: expected a member name in double quotes")),
        ("{\"a\" 1}", .malformed("doc: malformed JSON at byte 5: expected ':' after a member name")),
        ("{\"a\":1 2}", .malformed("doc: malformed JSON at byte 7: expected ',' or '}' in an object")),
        ("[1 2]", .malformed("doc: malformed JSON at byte 3: expected ',' or ']' in an array")),
        ("[1]x", .malformed("doc: malformed JSON at byte 3: unexpected text after the JSON value")),
        ("[1,2,3]garbage", .malformed("doc: malformed JSON at byte 7: unexpected text after the JSON value")),
        ("{} {}", .malformed("doc: malformed JSON at byte 3: unexpected text after the JSON value")),
        ("[trux]", .malformed("doc: malformed JSON at byte 4: expected true or false")),
        ("[nul]", .malformed("doc: malformed JSON at byte 4: expected null")),
        ("\"\\q\"", .malformed("doc: malformed JSON at byte 2: invalid escape in a string")),
        ("[-x]", .malformed("doc: malformed JSON at byte 2: malformed number")),
        ("[01]", .malformed("doc: malformed JSON at byte 3: malformed number")),
        ("['a']", .malformed("doc: malformed JSON at byte 1: expected a JSON value")),
        ("[x]", .malformed("doc: malformed JSON at byte 1: expected a JSON value")),
        ("[1] /* c */", .malformed("doc: malformed JSON at byte 4: unexpected text after the JSON value")),
        ("{\"a\":[1,2", .malformed("doc: unexpected end of document (truncated JSON) at byte 9")),
        ("\"abc", .malformed("doc: unexpected end of document (truncated JSON) at byte 4")),
        ("[[[", .malformed("doc: unexpected end of document (truncated JSON) at byte 3")),
        ("tru", .malformed("doc: unexpected end of document (truncated JSON) at byte 3")),
        ("x" + String(repeating: " ", count: 39), .tooLarge("doc: 40 bytes exceeds the limit of 32 bytes")),
    ]
    for (text, expected) in cases {
        #expect(error(text, maxBytes: 32) == expected, "\(text.debugDescription)")
    }
}

@Test func bytesAfterTheValueAreRefusedEvenAfterANul() {
    // json-c stops at a NUL as at the end of its input: json_tokener_get_parse_end tells the rest apart.
    #expect(error(bytes: Array("[1]".utf8) + [0, 0x78]) == .malformed("doc: malformed JSON at byte 3: unexpected text after the JSON value"))
    #expect(error(bytes: Array("{}".utf8) + [0]) == .malformed("doc: malformed JSON at byte 2: unexpected text after the JSON value"))
    #expect(error("[1]\n\t ") == nil)
}

@Test func bareTopLevelScalarsParse() throws {
    // json-c waits for more input after a top-level number: the end of the text is signalled to it.
    // (Each document is kept in a constant: values are views that live as long as their document.)
    let integer = try parse("123"), double = try parse(" -1.5e3 "), flag = try parse("true")
    let null = try parse("null"), string = try parse(#""s""#)
    #expect(integer.root.int64 == 123 && double.root.double == -1500 && flag.root.bool == true)
    #expect(null.root.isNull && string.root.string == "s")
}

@Test func invalidUTF8IsRefusedWhereItStarts() {
    let cases: [([UInt8], Int)] = [
        ([0x22, 0xFF, 0x22], 1), ([0x22, 0x61, 0xC3, 0x28, 0x22], 2), ([0x22, 0xC0, 0x80, 0x22], 1),
        ([0x22, 0xED, 0xA0, 0x80, 0x22], 1), ([0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], 1),
        ([0x5B, 0x31, 0x5D, 0x20, 0xFF], 4), ([0x7B, 0x22, 0xFF, 0x22, 0x3A, 0x31, 0x7D], 2),
    ]
    for (bytes, offset) in cases {
        #expect(error(bytes: bytes) == .invalidUTF8("doc: invalid UTF-8 at byte \(offset)"), "\(bytes)")
    }
    // Valid UTF-8 in strings is kept byte for byte.
    let text: [UInt8] = [0x22, 0xC3, 0xA9, 0xE4, 0xB8, 0xAD, 0xF0, 0x9F, 0x98, 0x80, 0x22]
    if case .success(let document) = parse(bytes: text) {
        #expect(document.root.stringBytes.map(Array.init) == Array(text[1..<10]))
    } else {
        Issue.record("valid UTF-8 refused")
    }
}

@Test func depthLimitIsTheLibrarys() {
    // json-c's default (32) is too shallow for audience trees: the library passes its own limit. json-c
    // counts a member's value as a level: 64 arrays nest, 63 objects with a value in the innermost.
    func objects(_ depth: Int) -> String {
        String(repeating: "{\"a\":", count: depth) + "1" + String(repeating: "}", count: depth)
    }
    for depth in [32, 33, 63, 64] {
        #expect(error(String(repeating: "[", count: depth) + String(repeating: "]", count: depth)) == nil)
    }
    for depth in [32, 33, 62, 63] { #expect(error(objects(depth)) == nil) }
    #expect(error(objects(64)) == .tooDeep("doc: nesting deeper than 64 levels (at byte 320)"))
    #expect(error(String(repeating: "[", count: 65) + String(repeating: "]", count: 65))
            == .tooDeep("doc: nesting deeper than 64 levels (at byte 64)"))
    #expect(error("[[[1]]]", maxDepth: 2) == .tooDeep("doc: nesting deeper than 2 levels (at byte 2)"))
    #expect(error(String(repeating: "[", count: 1000) + String(repeating: "]", count: 1000), maxDepth: 1000) == nil)
}

@Test func textsPythonRefusesAreRefusedThoughJSONCTakesThem() {
    // json-c's strict mode takes these; Python's json (the reference's reader) refuses them, so a datafile
    // or a json variable written so would be refused by the reference: the library refuses them too.
    let cases: [(String, JSONError)] = [
        ("{'a':1}", .malformed("doc: malformed JSON at byte 1: expected a member name in double quotes")),
        ("[1.]", .malformed("doc: malformed JSON at byte 1: malformed number")),
        ("[1.e5]", .malformed("doc: malformed JSON at byte 1: malformed number")),
        ("[-01]", .malformed("doc: malformed JSON at byte 1: malformed number")),
        ("[\"a\tb\"]", .malformed("doc: malformed JSON at byte 3: unescaped control character in a string")),
        ("{\"k\": \"\u{1}\"}", .malformed("doc: malformed JSON at byte 7: unescaped control character in a string")),
    ]
    for (text, expected) in cases { #expect(error(text) == expected, "\(text.debugDescription)") }
    // What both take is untouched: escapes, quotes inside strings, exponents, -Infinity, names with digits.
    for text in [#"["a\tb", "it's", "-1", "\"1.\""]"#, "[0, -0, 1.5e-3, 2E+2, -Infinity, 10]", #"{"a-1": [1.0]}"#] {
        #expect(error(text) == nil, "\(text)")
    }
}

// MARK: the view

@Test func valuesReadLikeJSONCValues() throws {
    let document = try parse(
        #"{"s": "a\"b", "n": null, "t": true, "i": -42, "u": 18446744073709551615, "d": 2.50, "a": [1, "x", [], {}], "o": {"k": "v"}, "s": "last", "slash": "a/b"}"#)
    let root = document.root
    #expect(root.kind == .object && root.count == 9)
    #expect(root.member("s")?.string == "last")
    #expect(root.member("n")?.isNull == true && root.member("missing") == nil)
    #expect(root.member("t")?.bool == true && root.member("t")?.int64 == nil)
    #expect(root.member("i")?.int64 == -42 && root.member("i")?.double == -42)
    #expect(root.member("u")?.int64 == Int64.max && root.member("u")?.jsonText == "18446744073709551615")
    #expect(root.member("d")?.double == 2.5 && root.member("d")?.jsonText == "2.50" && root.member("d")?.int64 == nil)
    #expect(root.member("a")?.elements.map(\.kind) == [.int, .string, .array, .object])
    #expect(root.member("a")?[1].string == "x" && root.member("a")?[9].isNull == true && root.member("a")?[-1].isNull == true)
    #expect(root.member("o")?.members.map(\.key) == ["k"])
    #expect(root.members.map(\.key) == ["s", "n", "t", "i", "u", "d", "a", "o", "slash"])
    #expect(root.jsonText == #"{"s":"last","n":null,"t":true,"i":-42,"u":18446744073709551615,"d":2.50,"a":[1,"x",[],{}],"o":{"k":"v"},"slash":"a/b"}"#)
    #expect(root.member("a")?.member("x") == nil && root.member("s")?.elements.isEmpty == true)
}

@Test func theCallersBytesAreNotKept() throws {
    // Zero-copy at the boundary: json-c reads the caller's buffer in place and keeps its own copies of
    // strings, so the buffer may change or go away once parse returns.
    var bytes = Array(#"{"key": "value", "list": ["x"]}"#.utf8)
    let document = bytes.withUnsafeBytes { raw in
        try? JSONDocument.parse(raw, what: "doc", maxBytes: 1 << 20, maxDepth: 64)
    }
    for index in bytes.indices { bytes[index] = 0x20 }
    #expect(document?.root.member("key")?.string == "value" && document?.root.member("list")?[0].string == "x")
}

@Test func placesOfValuesAreFoundFromTheRoot() throws {
    let document = try parse(#"{"experiments": [{"id": "1"}, {"id": "2", "variations": [{"key": null}, {"key": 5}]}]}"#)
    let experiment = document.root.member("experiments")![1]
    let variations = experiment.member("variations")!
    #expect(DatafileReader.path(of: variations[1].member("key")!) == "experiments[1].variations[1].key")
    // A null has no json-c object of its own: its place comes from its container and name.
    #expect(DatafileReader.path(of: variations[0].member("key")!) == "experiments[1].variations[0].key")
    #expect(DatafileReader.path(of: document.root) == "")
}
