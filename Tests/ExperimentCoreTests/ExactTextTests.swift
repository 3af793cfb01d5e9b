import Testing
@testable import ExperimentCore

// What Python's `json` and `str` give (the reference's reading), where json-c and Swift's String differ:
// integers past 64 bits, unpaired surrogate escapes, canonically equivalent text. Found by edgefuzz.py.

private func parse(_ text: String) throws(JSONError) -> JSONDocument {
    try JSONDocument.parse(text, what: "doc", maxBytes: 1 << 20, maxDepth: 64)
}

@Test func integersPastSixtyFourBitsKeepTheirExactText() throws {
    // Python: str(json.loads("100000000000000000000000")) == "100000000000000000000000"
    let document = try parse("[100000000000000000000000, -9223372036854775809, 18446744073709551616, 7, 9223372036854775807]")
    let values = document.root.elements
    #expect(values.map(\.integerText) == ["100000000000000000000000", "-9223372036854775809", "18446744073709551616",
                                          "7", "9223372036854775807"])
    #expect(values.map(\.pythonText) == values.map(\.integerText))
    // Two different big integers are two ids (json-c clamps both to one value).
    #expect(values[0].identityKey != values[2].identityKey)
}

@Test func unpairedSurrogateEscapesReadAsWTF8() throws {
    // Python: json.loads('"x\\ud800y"') == "x\ud800y"; json-c reads U+FFFD.
    let document = try parse(#"["x\ud800y", "\ud83d\ude00", "\ufffd", "\udfff\ud800", "plain"]"#)
    let values = document.root.elements
    #expect(values[0].surrogateString == [0x78, 0xED, 0xA0, 0x80, 0x79])
    #expect(values[1].surrogateString == nil)       // a pair is its character: json-c reads it right
    #expect(values[2].surrogateString == nil)       // a real U+FFFD stays
    #expect(values[3].surrogateString == [0xED, 0xBF, 0xBF, 0xED, 0xA0, 0x80])
    #expect(values[4].surrogateString == nil)
    #expect(JSONStringToken.wtf8(Array(#""a\"\\\/\n\u00e9\ud83d\ude00""#.utf8))
            == Array("a\"\\/\n\u{E9}\u{1F600}".utf8))
}

@Test func canonicallyEquivalentTextIsTwoKeys() {
    let composed = "\u{E9}", decomposed = "e\u{301}"
    #expect(composed == decomposed)                 // Swift's String: canonical equivalence
    #expect(!composed.sameCodePoints(decomposed))   // Python's str: code points
    #expect(composed.sameCodePoints("\u{E9}"))
    var map: ExactKeyed<Int> = [:]
    map[composed] = 1
    map[decomposed] = 2
    #expect(map.count == 2 && map[composed] == 1 && map[decomposed] == 2)
    #expect(Set([ExactKey(composed), ExactKey(decomposed)]).count == 2)
}

@Test func exactKeyedKeepsInsertionOrderThroughGrowthAndRemoval() {
    var map: ExactKeyed<Int> = ["first": 0]
    // Past several doublings of the slot table, with keys of every length around the 8-byte words hashed.
    let keys = (0..<500).map { String(repeating: "k", count: $0 % 19) + "\($0)" }
    for (index, key) in keys.enumerated() { map[key] = index + 1 }
    #expect(map.count == 501)
    #expect(keys.allSatisfy { map[$0] == keys.firstIndex(of: $0)! + 1 })
    #expect(map["absent"] == nil && map[""] == nil)
    map["k1"] = nil
    map["absent"] = nil
    #expect(map.count == 500 && map["k1"] == nil)
    map["first", default: 0] += 10
    map["new", default: 7] += 1
    #expect(map["first"] == 10 && map["new"] == 8)
    #expect(Array(map.keys.prefix(3)) == ["first", "0", "kk2"])
    #expect(map.keys.last == "new" && map.keys.count == 501 && map.map(\.value).count == 501)
    // A removed key set again keeps its first place, as a Python dict entry would not: no caller removes.
    map["k1"] = 99
    #expect(map.keys[2] == "k1" && map.count == 502)
}
