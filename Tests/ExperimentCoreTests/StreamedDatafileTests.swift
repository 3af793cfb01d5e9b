import Testing
@testable import ExperimentCore
#if canImport(Glibc)
import Glibc
#endif

// A datafile is read one element of its large top-level arrays at a time (StreamedDatafile), with the
// whole-text path (json-c's tree of the whole datafile) taking over for anything the streamed pass does
// not accept. These tests hold the two to the same results: the same config, the same warnings with
// their places, the same error messages, over the fuzz corpus, shapes the walk must get right, and
// mutations of valid datafiles.

/// What a compilation gives, as text: the error message, or every field of the config (strings by
/// content, not address) and its warnings.
private func outcome(_ text: String, streamed: Bool) -> String {
    var copy = text
    return copy.withUTF8 { buffer in
        let bytes = UnsafeRawBufferPointer(buffer)
        if streamed {
            do throws(DatafileError) {
                return fingerprint(try DatafileCompiler.compile(bytes))
            } catch {
                return "error: \(error.message)"
            }
        }
        do throws(DatafileError) {
            return fingerprint(try DatafileCompiler.compileWholeText(bytes, after: nil))
        } catch {
            return "error: \(error.message)"
        }
    }
}

/// Whether the streamed pass alone compiled the text (no whole-text path).
private func streamedAlone(_ text: String) -> Bool {
    var copy = text
    return copy.withUTF8 { DatafileCompiler.compileStreamed(UnsafeRawBufferPointer($0), after: nil) != nil }
}

private func fingerprint(_ config: ProjectConfig) -> String {
    var out = ""
    describe(config, into: &out, depth: 0)
    return out
}

private func elements<S: Sequence>(of sequence: S) -> [Any] { sequence.map { $0 as Any } }

private func describe(_ value: Any, into out: inout String, depth: Int) {
    guard depth < 40 else { return }
    switch value {
    case let text as String: out += "\"\(text)\""; return
    case let text as ConfigString: out += "\"\(text.text)\""; return
    case let text as UnsafePointer<CChar>: out += "\"\(String(cString: text))\""; return
    case let bytes as UTF8Text: out += "\"\(String(decoding: bytes, as: UTF8.self))\""; return
    case is StringStorage, is HotTables: return
    case let error as DatafileError: out += "\(error.severity) \(error.message)"; return
    default: break
    }
    let mirror = Mirror(reflecting: value)
    if let sequence = value as? any Sequence, mirror.displayStyle != .collection {
        out += "["
        for element in elements(of: sequence) {
            describe(element, into: &out, depth: depth + 1)
            out += ","
        }
        out += "]"
        return
    }
    if mirror.children.isEmpty {
        out += "\(value)"
        return
    }
    out += "{"
    for child in mirror.children {
        out += (child.label ?? "") + ":"
        describe(child.value, into: &out, depth: depth + 1)
        out += " "
    }
    out += "}"
}

private func expectSame(_ text: String, streamedAlone expected: Bool? = nil,
                        sourceLocation: SourceLocation = #_sourceLocation)
{
    let whole = outcome(text, streamed: false)
    let streamed = outcome(text, streamed: true)
    #expect(streamed == whole, "\(text.prefix(300))", sourceLocation: sourceLocation)
    if let expected {
        #expect(streamedAlone(text) == expected, "\(text.prefix(300))", sourceLocation: sourceLocation)
    }
}

private let corpus: [String] = {
    let directory = String(#filePath.dropLast("Tests/ExperimentCoreTests/StreamedDatafileTests.swift".count))
        + "fuzz/corpus/fuzz_datafile"
    var files: [String] = []
    guard let listing = opendir(directory) else { return [] }
    defer { closedir(listing) }
    while let entry = readdir(listing) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
        guard name.hasSuffix(".json") else { continue }
        guard let file = fopen(directory + "/" + name, "rb") else { continue }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let got = fread(&chunk, 1, chunk.count, file)
            if got == 0 { break }
            bytes += chunk[0..<got]
        }
        fclose(file)
        files.append(String(decoding: bytes, as: UTF8.self))
    }
    return files.sorted()
}()

private let rule = #"{"id": "10", "key": "e", "status": "Running", "layerId": "1", "forcedVariations": {"u": "v"}, "audienceIds": ["5"], "variations": [{"id": "20", "key": "v", "featureEnabled": true, "variables": [{"id": "30", "value": "7"}]}], "trafficAllocation": [{"entityId": "20", "endOfRange": 10000}]}"#
private let groupRule = #"{"id": "11", "key": "g", "status": "Running", "layerId": "2", "forcedVariations": {}, "audienceIds": [], "audienceConditions": ["or", "5"], "variations": [{"id": "21", "key": "w"}], "trafficAllocation": [{"entityId": "21", "endOfRange": 20000}]}"#
private let rolloutRule = #"{"id": "12", "key": "r", "status": "Running", "layerId": "3", "forcedVariations": {}, "audienceIds": [], "audienceConditions": ["and", "5", "404", null], "variations": [{"id": "22", "key": "x", "featureEnabled": 1}], "trafficAllocation": [{"entityId": "22", "endOfRange": 5000}]}"#

/// A datafile with one of everything, its members in `order` (names of the dictionary below).
private func datafile(_ members: [(String, String)]) -> String {
    "{" + members.map { "\"\($0.0)\": \($0.1)" }.joined(separator: ",\n ") + "}"
}

private let members: [(String, String)] = [
    ("version", #""4""#), ("projectId", #""1""#), ("accountId", #""2""#), ("revision", #""3""#),
    ("anonymizeIP", "true"), ("botFiltering", "1"), ("integrations", #"[{"key": "odp", "host": "h", "publicKey": "k"}]"#),
    ("attributes", #"[{"id": "40", "key": "country"}, {"id": "41", "key": "country"}]"#),
    ("events", #"[{"id": "50", "key": "buy", "experimentIds": ["10"]}]"#),
    ("audiences", #"[{"id": "5", "name": "a", "conditions": "[\"or\", {\"name\": \"country\", \"type\": \"custom_attribute\", \"value\": \"de\"}]"}]"#),
    ("typedAudiences", #"[{"id": "5", "name": "t", "conditions": ["and", {"name": "country", "type": "custom_attribute", "match": "exact", "value": 18446744073709551616}]}]"#),
    ("experiments", "[\(rule)]"),
    ("groups", #"[{"id": "60", "policy": "random", "experiments": ["# + groupRule + #"], "trafficAllocation": [{"entityId": "11", "endOfRange": 10000}]}]"#),
    ("rollouts", #"[{"id": "70", "experiments": ["# + rolloutRule + #"]}, {"id": "71", "experiments": []}]"#),
    ("featureFlags", #"[{"id": "80", "key": "f", "experimentIds": ["10"], "rolloutId": "71", "variables": [{"id": "30", "key": "n", "type": "integer", "defaultValue": "1"}]}, {"id": "81", "key": "h", "experimentIds": [], "rolloutId": "", "variables": []}]"#),
    ("holdouts", #"[{"id": "90", "key": "ho", "status": "Running", "audienceIds": [], "variations": [{"id": "91", "key": "off"}], "trafficAllocation": [{"entityId": "91", "endOfRange": 100}]}]"#),
]

@Test func everyCorpusDatafileCompilesTheSameStreamedAndWhole() {
    #expect(corpus.count > 20)
    for text in corpus { expectSame(text) }
    // The valid ones were read element by element.
    #expect(corpus.filter(streamedAlone).count >= 10)
}

@Test func sectionsInAnyOrderAndWarningsWithTheirPlaces() throws {
    let text = datafile(members)
    expectSame(text, streamedAlone: true)
    #expect(outcome(text, streamed: true).contains(#"key:"buy""#))
    // The warnings name elements of the streamed arrays ("rollouts[0].experiments[0]...").
    var copy = text
    let config = try copy.withUTF8 { buffer throws(DatafileError) in try DatafileCompiler.compile(UnsafeRawBufferPointer(buffer)) }
    #expect(config.warnings.contains { $0.place == "rollouts[0].experiments[0].audienceConditions[3]" })
    #expect(config.warnings.contains { $0.place == "groups[0].experiments[0].trafficAllocation[0].endOfRange" })
    #expect(config.warnings.contains { $0.place == "rollouts[0].experiments[0].variations[0].featureEnabled" })
    expectSame(datafile(members.reversed()), streamedAlone: true)
    expectSame(datafile(Array(members[4...]) + Array(members[..<4])), streamedAlone: true)
}

@Test func repeatedTopLevelNamesKeepTheirLastValue() {
    // A later "experiments" replaces an earlier one; the earlier one is still checked as JSON.
    expectSame(datafile(members + [("experiments", "[]")]))
    expectSame(datafile([("experiments", "[]")] + members), streamedAlone: true)
    expectSame(datafile(members + [("experiments", "null")]))
    expectSame(datafile([("experiments", "null")] + members), streamedAlone: true)
    expectSame(datafile([("experiments", "[1, {]")] + members))
    expectSame(datafile(members + [("attributes", #"{"id": "1"}"#)]))
    expectSame(datafile(members + [("version", #""3""#), ("version", #""4""#)]), streamedAlone: true)
    // Names written with escapes are the same names; json-c ends a name at an escaped NUL.
    expectSame(datafile(members.map { $0.0 == "experiments" ? ("exp\\u0065riments", $0.1) : $0 }), streamedAlone: true)
    expectSame(datafile(members + [("experiments\\u0000x", "[\(rule)]")]), streamedAlone: true)
}

@Test func whitespaceAndShapesTheWalkMeets() {
    let compact = "{" + members.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    expectSame(compact, streamedAlone: true)
    let spaced = " \r\n\t{ " + members.map { "\"\($0.0)\"\t:\r\n\($0.1)" }.joined(separator: "\t,\r\n ") + "\n}\n\t "
    expectSame(spaced, streamedAlone: true)
    expectSame(datafile(members + [("events", "[ ]"), ("attributes", "[\n]")]), streamedAlone: true)
    expectSame(datafile(members + [("unknownList", #"[1, "x", {"a": [true, null]}]"#), ("n", "-1.5e3")]),
               streamedAlone: true)
    // Elements that are no objects: the compiler's messages, from the whole-text path.
    expectSame(datafile(members + [("events", #"[1, "x", true, null, -0.5, []]"#)]))
    expectSame("{}")
    expectSame("[]")
    expectSame("")
    expectSame(" ")
    expectSame("{\"version\": \"4\"}")
}

@Test func malformedTextGetsTheWholeTextMessage() {
    let text = datafile(members)
    let cases = [
        text + "x", text + "}", text + "\0", text + " {}", String(text.dropLast()), text.replacingOccurrences("}, {", "} {"),
        text.replacingOccurrences("]}]", "],}]"), text.replacingOccurrences("\"rollouts\": [", "\"rollouts\": [,"),
        text.replacingOccurrences(": [", ": [\0"), text.replacingOccurrences("\"events\"", "events"),
        text.replacingOccurrences("\"key\": \"buy\"", "\"key\": 'buy'"), text.replacingOccurrences("10000", "010000"),
        text.replacingOccurrences("\"featureFlags\":", "\"featureFlags\""),
        text.replacingOccurrences("\"status\": \"Running\"", "\"status\": \"Run\u{1}ning\""),
        text.replacingOccurrences("\"buy\"", "\"b\\uy\""),
    ]
    for malformed in cases {
        #expect(malformed != text)
        expectSame(malformed, streamedAlone: false)
        #expect(outcome(malformed, streamed: true).hasPrefix("error: "), "\(malformed)")
    }
}

/// The tokens json-c's strict mode takes and Python's `json` refuses are caught by the walk as it skips
/// (there is no separate pass over the text): wherever one is, the datafile gets the whole-text message.
@Test func strictTokensAreCaughtWhereverTheWalkMeetsThem() {
    let text = datafile(members)
    let refused = [
        // In an element of a streamed array, at any depth, and as a scalar element.
        text.replacingOccurrences("\"endOfRange\": 5000", "\"endOfRange\": 5000."),
        text.replacingOccurrences("\"endOfRange\": 5000", "\"endOfRange\": -05000"),
        text.replacingOccurrences("\"endOfRange\": 5000", "\"endOfRange\": 5.e3"),
        text.replacingOccurrences("\"endOfRange\": 5000", "\"endOfRange\": -"),
        text.replacingOccurrences("\"experimentIds\": [\"10\"]}]", "\"experimentIds\": [[[1.]]]}]"),
        datafile(members + [("events", "[1.]")]), datafile(members + [("events", "[-01, 2]")]),
        datafile(members + [("events", "['x']")]),
        // In a member that is not streamed, and in a member name.
        datafile(members + [("botFiltering", "1.")]), datafile(members + [("anonymizeIP", "-0.")]),
        datafile(members + [("unknown", #"{"a": ['b']}"#)]), datafile(members + [("na\u{1}me", "1")]),
        datafile(members + [("unknownList", "[\"a\u{1F}b\"]")]),
    ]
    for malformed in refused {
        #expect(malformed != text)
        expectSame(malformed, streamedAlone: false)
        #expect(outcome(malformed, streamed: true).hasPrefix("error: "), "\(malformed)")
    }
    // Numbers Python's `json` reads (NaN and the infinities included) stay on the streamed path.
    let accepted = [
        datafile(members + [("events", "[]"), ("unknownList", "[0, -0, -0.5, 1e5, 1E+5, 2.5e-3, -Infinity, Infinity, NaN]")]),
        datafile(members + [("botFiltering", "-Infinity"), ("numbers", #"{"a": [-1, 10, 1.25]}"#)]),
    ]
    for text in accepted { expectSame(text, streamedAlone: true) }
}

@Test func theDepthLimitCountsTheLevelsAboveAnElement() {
    // 64 levels in all: the root object, "typedAudiences", the element, "conditions" and the lists in it.
    func nested(_ lists: Int) -> String {
        let conditions = String(repeating: "[\"or\", ", count: lists) + #"{"name": "a", "type": "custom_attribute", "value": 1}"#
            + String(repeating: "]", count: lists)
        return datafile(members.map { $0.0 == "typedAudiences" ? ($0.0, #"[{"id": "5", "name": "t", "conditions": "# + conditions + "}]") : $0 })
    }
    let outcomes = (54...62).map { outcome(nested($0), streamed: true) }
    for lists in 54...62 { expectSame(nested(lists)) }
    // The limit falls inside the range: accepted below it, refused for the depth above it.
    let firstRefused = outcomes.firstIndex { $0.hasPrefix("error: ") }
    #expect(firstRefused != nil && firstRefused! > 0)
    #expect(outcomes[firstRefused ?? 0].contains("nesting deeper than 64 levels"))
    #expect(outcomes[(firstRefused ?? 0)...].allSatisfy { $0.hasPrefix("error: ") })
}

@Test func mutatedDatafilesCompileTheSameStreamedAndWhole() {
    // Deterministic byte edits of valid datafiles: deletions, insertions of JSON's punctuation, swaps.
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    func next(_ bound: Int) -> Int {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return Int((state >> 33) % UInt64(bound))
    }
    let sources = [datafile(members), datafile(members.reversed())] + corpus.filter { $0.utf8.count < 20_000 }.prefix(4)
    let inserts: [[UInt8]] = [[0x2C], [0x5D], [0x7D], [0x5B], [0x7B], [0x22], [0x3A], [0x20], [0x00], [0x5C], [0x31]]
    for source in sources {
        let bytes = Array(source.utf8)
        guard bytes.count > 2 else { continue }
        for _ in 0..<60 {
            var mutated = bytes
            let at = next(mutated.count)
            switch next(3) {
            case 0: mutated.remove(at: at)
            case 1: mutated.insert(contentsOf: inserts[next(inserts.count)], at: at)
            default: mutated.swapAt(at, next(mutated.count))
            }
            expectSame(String(decoding: mutated, as: UTF8.self))
        }
    }
}

private extension String {
    func replacingOccurrences(_ target: String, _ replacement: String) -> String {
        var result = ""
        var rest = Substring(self)
        while let range = rest.firstRange(of: target) {
            result += rest[..<range.lowerBound] + replacement
            rest = rest[range.upperBound...]
        }
        return result + rest
    }
}
