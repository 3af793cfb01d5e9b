import Testing
@testable import ExperimentCore

// Event payload fields that come straight from the datafile, as optimizely-sdk 5.7.0 sends them:
// attribute ids (an empty id is false to its `if attribute_id:`), "anonymizeIP" as the datafile has it,
// "botFiltering" only when it is a boolean; and double variables keep a negative zero.

/// String attributes in a fixed order, with stable storage for the key and value bytes.
private final class StringAttributes: UserAttributes {
    private let entries: [(key: UnsafeMutableBufferPointer<UInt8>, value: UnsafeMutableBufferPointer<UInt8>)]

    init(_ pairs: [(String, String)]) {
        entries = pairs.map { (Self.copy($0.0), Self.copy($0.1)) }
    }

    deinit { entries.forEach { $0.key.deallocate(); $0.value.deallocate() } }

    private static func copy(_ text: String) -> UnsafeMutableBufferPointer<UInt8> {
        let bytes = Array(text.utf8)
        let buffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: max(bytes.count, 1))
        _ = buffer.initialize(from: bytes)
        return UnsafeMutableBufferPointer(rebasing: buffer[0..<bytes.count])
    }

    func value(named name: UTF8Text) -> AttributeValue? {
        entries.first { $0.key.elementsEqual(name) }.map { .string(UnsafeBufferPointer($0.value)) }
    }
    func isQualified(for segment: UTF8Text) -> Bool { false }
    func forEach(_ body: (UTF8Text, AttributeValue) -> Void) {
        entries.forEach { body(UnsafeBufferPointer($0.key), .string(UnsafeBufferPointer($0.value))) }
    }
}

private func datafile(header: String = "", attributes: String = "[]", variables: String = "[]") -> String {
    """
    {"version": "4", "projectId": "1", "accountId": "2", "revision": "3", \(header)
     "attributes": \(attributes), "events": [{"id": "50", "key": "buy", "experimentIds": []}],
     "experiments": [], "groups": [], "rollouts": [], "audiences": [],
     "featureFlags": [{"id": "60", "key": "f", "experimentIds": [], "rolloutId": "", "variables": \(variables)}]}
    """
}

/// The conversion payload of event "buy" for user "u" with `attributes`.
private func conversion(_ config: ProjectConfig, _ attributes: [(String, String)] = []) -> String {
    let event = config.events[0]
    return EventPayloads.conversion(event: event, tags: nil, config: config, userId: "u",
                                    attributes: StringAttributes(attributes), uuid: "id", timestamp: 1,
                                    client: EventClient(name: "test", version: "0")).body
}

/// The visitor's "attributes" array of a payload, as text.
private func visitorAttributes(_ body: String) -> Substring {
    let start = body.firstRange(of: "\"attributes\":[")!.upperBound
    let end = body.firstRange(of: "],\"visitor_id\"")!.lowerBound
    return body[start..<end]
}

@Test func anAttributeWithAnEmptyIdIsLeftOut() throws {
    let config = try DatafileCompiler.compile(datafile(attributes: """
        [{"id": "", "key": "age"}, {"id": "7", "key": "plan"}, {"id": "", "key": "$opt_x"}]
        """))
    let body = conversion(config, [("age", "1"), ("plan", "pro"), ("$opt_x", "a"), ("$opt_y", "b")])
    // "$opt_x" is in the datafile with an empty id (left out); "$opt_y" is not, and names itself.
    #expect(visitorAttributes(body) == #"{"entity_id":"7","key":"plan","type":"custom","value":"pro"},"#
            + #"{"entity_id":"$opt_y","key":"$opt_y","type":"custom","value":"b"}"#)
    #expect(config.attributeId(forKey: "age") == nil)
}

@Test func theLastAttributeWithAKeyGivesItsId() throws {
    let empty = try DatafileCompiler.compile(datafile(attributes: #"[{"id": "7", "key": "age"}, {"id": "", "key": "age"}]"#))
    #expect(visitorAttributes(conversion(empty, [("age", "1")])) == "")
    let named = try DatafileCompiler.compile(datafile(attributes: #"[{"id": "", "key": "age"}, {"id": "8", "key": "age"}]"#))
    #expect(visitorAttributes(conversion(named, [("age", "1")])) == #"{"entity_id":"8","key":"age","type":"custom","value":"1"}"#)
}

@Test func anonymizeIPIsSentAsTheDatafileHasIt() throws {
    let cases: [(String, String)] = [
        ("", "false"), (#""anonymizeIP": true,"#, "true"), (#""anonymizeIP": -1,"#, "-1"),
        (#""anonymizeIP": null,"#, "null"), (#""anonymizeIP": "x","#, #""x""#), (#""anonymizeIP": 2.5,"#, "2.5"),
        (#""anonymizeIP": 1e2,"#, "100.0"), (#""anonymizeIP": [],"#, "[]"),
        (#""anonymizeIP": {"a": 1, "b": ["é"]},"#, #"{"a": 1, "b": ["\u00e9"]}"#),
    ]
    for (header, sent) in cases {
        let body = conversion(try DatafileCompiler.compile(datafile(header: header)))
        #expect(body.contains(",\"anonymize_ip\":\(sent),\"enrich_decisions\":true,"), "\(header) -> \(body)")
    }
}

@Test func botFilteringIsSentOnlyWhenABoolean() throws {
    let sent = try DatafileCompiler.compile(datafile(header: #""botFiltering": false,"#))
    #expect(visitorAttributes(conversion(sent))
            == #"{"entity_id":"$opt_bot_filtering","key":"$opt_bot_filtering","type":"custom","value":false}"#)
    for odd in ["1", "0", "\"true\"", "[true]", "null"] {
        let config = try DatafileCompiler.compile(datafile(header: "\"botFiltering\": \(odd),"))
        #expect(config.botFiltering == nil)
        #expect(visitorAttributes(conversion(config)) == "", "botFiltering \(odd)")
    }
}

@Test func aDoubleVariableOfNegativeZeroIsNegativeZero() throws {
    #expect(JSONWriter.format(-0.0) == "-0.0")
    #expect(JSONWriter.format(0.0) == "0.0")
    #expect(VariableValues.json("-0", as: .double) == "-0.0")
    #expect(VariableValues.json("-0.0", as: .double) == "-0.0")
    #expect(VariableValues.json(" -0e5 ", as: .double) == "-0.0")
    #expect(VariableValues.json("-0", as: .integer) == "0")
    let config = try DatafileCompiler.compile(datafile(variables: #"[{"id": "1", "key": "d", "type": "double", "defaultValue": "-0"}]"#))
    #expect(String(cString: config.flags[0].defaultVariablesJSON) == #"{"d":-0.0}"#)
}
