import Testing
@testable import ExperimentCore

// A datafile problem names its place. Readers carry no place of their own: it is worked out from
// json-c's tree when a message needs it, including inside an audience's "conditions" string (a nested document).

private func datafile(audiences: String = "[]", typedAudiences: String = "[]", experiments: String = "[]") -> String {
    """
    {"version": "4", "projectId": "1", "accountId": "2", "revision": "3", "attributes": [], "events": [],
     "experiments": \(experiments), "groups": [], "featureFlags": [], "rollouts": [],
     "audiences": \(audiences), "typedAudiences": \(typedAudiences)}
    """
}

private func message(_ text: String) -> String? {
    do {
        _ = try DatafileCompiler.compile(text)
        return nil
    } catch {
        return error.message
    }
}

/// The warnings of a datafile the compiler accepts (nil when it refuses it).
private func warnings(_ text: String) -> [String]? {
    (try? DatafileCompiler.compile(text))?.warnings.map(\.message)
}

private let goodAudience = #"{"id": "1", "name": "one", "conditions": "[\"or\", {\"name\": \"a\", \"type\": \"custom_attribute\", \"value\": 1}]"}"#

@Test func placesInsideAudienceConditionStrings() {
    // An integer there is the index of one of the audience's condition objects (accepted, with a warning).
    #expect(warnings(datafile(audiences: "[\(goodAudience), " + #"{"id": "2", "name": "two", "conditions": "[\"and\", 5]"}]"#))
            == ["datafile: audiences[1].conditions[1]: expected a condition object or list, got an integer 5: the reference "
                + "takes it for the index of a condition object and raises, as the audience has 0; here it evaluates to unknown"])
    #expect(message(datafile(audiences: #"[{"id": "2", "name": "two", "conditions": "[\"and\", {\"a\": "}]"#))
            == "datafile: audiences[0].conditions: unexpected end of document (truncated JSON) at byte 14")
    #expect(message(datafile(audiences: #"[{"id": "2", "name": "two", "conditions": "[1,]"}]"#))
            == "datafile: audiences[0].conditions: malformed JSON at byte 3: expected a JSON value")
    #expect(message(datafile(audiences: #"[{"id": "2", "name": "two", "conditions": ""}]"#))
            == "datafile: audiences[0].conditions: empty document")
    #expect(message(datafile(audiences: #"[{"id": "2", "name": "two", "conditions": 7}]"#))
            == "datafile: audiences[0].conditions: expected a string, got an integer")
}

@Test func placesInTheDatafileItself() {
    #expect(warnings(datafile(typedAudiences: #"[{"id": "3", "name": "t", "conditions": ["and", ["or", true], {"name": "a"}, {}]}]"#))
            == ["datafile: typedAudiences[0].conditions[1][1]: expected a condition object or list, got a boolean: it stands "
                + "for the audience's condition object 1, as in the reference"])
    #expect(message(datafile(audiences: "[\(goodAudience)]", typedAudiences: #"[{"id": "3", "conditions": []}]"#))
            == "datafile: typedAudiences[0]: missing required field \"name\"")
    let experiment = #"{"id": "10", "key": "e","#
    let rest = #" "status": "Running", "layerId": "1", "forcedVariations": {},"#
        + #" "audienceIds": [], "variations": [{"id": "20", "key": "v"}], "trafficAllocation": [{"entityId": "20", "endOfRange": "9"}]}"#
    #expect(message(datafile(experiments: "[\(experiment)\(rest)]"))
            == "datafile: experiments[0].trafficAllocation[0].endOfRange: expected an integer, got a string")
    // A repeated member: its last value is read, and named by the same name.
    #expect(message(datafile(experiments: #"[{"id": "10", "id": 5, "key": "e","# + "\(rest)]"))
            == "datafile: experiments[0].id: expected a string, got an integer")
    #expect(message("[]") == "datafile: expected a JSON object, got an array")
}
