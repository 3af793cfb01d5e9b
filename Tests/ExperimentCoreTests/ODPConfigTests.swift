import Testing
@testable import ExperimentCore

// The compiled config keeps what real-time segments need: the datafile's "odp" integration and the
// segments that audiences' "qualified" conditions use (the reference's all_segments).

private func datafile(integrations: String, audiences: String, typedAudiences: String = "[]") -> String {
    """
    {"version": "4", "projectId": "1", "accountId": "2", "revision": "3", "attributes": [], "events": [],
     "experiments": [], "groups": [], "featureFlags": [], "rollouts": [],
     "audiences": \(audiences), "typedAudiences": \(typedAudiences), "integrations": \(integrations)}
    """
}

private func qualified(_ segment: String) -> String {
    #"{"type": "third_party_dimension", "name": "odp.audiences", "match": "qualified", "value": "\#(segment)"}"#
}

private func audience(_ id: String, _ conditions: String) -> String {
    // "audiences" carry their conditions as a JSON string.
    let escaped = conditions.map { $0 == "\"" ? "\\\"" : String($0) }.joined()
    return #"{"id": "\#(id)", "name": "a\#(id)", "conditions": "\#(escaped)"}"#
}

@Test func odpIntegrationIsTheFirstOdpEntry() throws {
    let config = try DatafileCompiler.compile(datafile(
        integrations: #"[{"key": "other", "host": "x"}, {"key": "odp", "host": "https://odp.example", "publicKey": "k1"},"#
            + #" {"key": "odp", "host": "https://second", "publicKey": "k2"}]"#,
        audiences: "[]"))
    #expect(config.odpIntegration == ODPIntegration(host: "https://odp.example", publicKey: "k1"))
}

@Test func missingOrOddIntegrationsLeaveOdpUnconfigured() throws {
    #expect(try DatafileCompiler.compile(datafile(integrations: "[]", audiences: "[]")).odpIntegration == nil)
    let partial = try DatafileCompiler.compile(datafile(integrations: #"[{"key": "odp"}]"#, audiences: "[]"))
    #expect(partial.odpIntegration == ODPIntegration(host: nil, publicKey: nil))
    // The reference's JSON schema wants "host" and "publicKey" to be strings when present: refused.
    #expect(throws: DatafileError.self) {
        try DatafileCompiler.compile(datafile(integrations: #"[{"key": "odp", "host": 5}]"#, audiences: "[]"))
    }
}

@Test func segmentsComeFromQualifiedConditionsInAudienceOrderWithoutRepeats() throws {
    let audiences = "[" + [
        audience("1", "[\"or\", \(qualified("s1")), \(qualified("s2")), \(qualified("s1"))]"),
        audience("2", #"["and", {"type": "custom_attribute", "name": "country", "match": "exact", "value": "nl"}]"#),
        audience("3", "[\"not\", \(qualified("s3"))]"),
        audience("4", "[\"or\", \(qualified("replaced"))]"),
    ].joined(separator: ", ") + "]"
    // A typed audience replaces the audience with its id, segments included (as in the reference).
    let typed = #"[{"id": "4", "name": "typed", "conditions": ["and", \#(qualified("s2")), \#(qualified("s4"))]}]"#
    let config = try DatafileCompiler.compile(datafile(integrations: "[]", audiences: audiences, typedAudiences: typed))
    #expect(config.segments == ["s1", "s2", "s3", "s4"])
}

@Test func aPlainAudienceATypedOneReplacesIsNeverParsedAndKeepsItsPlace() throws {
    // The reference's audience map: the plain ids in their order (a typed audience in the place of the plain
    // one with its id), then the ids only typed audiences have. It parses the conditions of that map only.
    let audiences = "[" + [
        audience("1", "[\(qualified("s1"))]"),
        #"{"id": "2", "name": "replaced", "conditions": "[not json"}"#,
        audience("3", "[\(qualified("s3"))]"),
    ].joined(separator: ", ") + "]"
    let typed = "[" + [
        #"{"id": "5", "name": "t5", "conditions": [\#(qualified("s5"))]}"#,
        #"{"id": "2", "name": "t2", "conditions": [\#(qualified("s2"))]}"#,
    ].joined(separator: ", ") + "]"
    let config = try DatafileCompiler.compile(datafile(integrations: "[]", audiences: audiences, typedAudiences: typed))
    #expect(config.segments == ["s1", "s2", "s3", "s5"])
    #expect(config.audiences.map(\.id) == ["1", "2", "3", "5"])
}
