import Testing
@testable import ExperimentCore

// The core's side of CMAB experiments: the datafile's "cmab" object, the traffic check, the request the
// provider gets (filtered attributes), what a prediction, an unknown variation id and a failure make of a
// flag decision, the impression's cmab_uuid, and the text helpers (Python's str()/repr(), the response).
// The runtime's cache and HTTP client are tested through the real library (test_cmab_differential.py).

private let datafile = """
{"version": "4", "accountId": "1", "projectId": "2", "revision": "1", "events": [], "audiences": [],
 "attributes": [{"id": "300", "key": "country"}, {"id": "301", "key": "age"}, {"id": "302", "key": "zeta"}],
 "groups": [], "rollouts": [],
 "featureFlags": [
  {"id": "10", "key": "flag_cmab", "experimentIds": ["100"], "rolloutId": "", "variables": []},
  {"id": "11", "key": "flag_closed", "experimentIds": ["200"], "rolloutId": "", "variables": []},
  {"id": "12", "key": "flag_plain", "experimentIds": ["400"], "rolloutId": "", "variables": []}],
 "experiments": [
  {"id": "100", "key": "exp_cmab", "status": "Running", "layerId": "1", "audienceIds": [],
   "variations": [{"id": "101", "key": "a", "featureEnabled": true}, {"id": "102", "key": "b", "featureEnabled": true}],
   "trafficAllocation": [], "forcedVariations": {},
   "cmab": {"attributeIds": ["302", "300", "999", "300"], "trafficAllocation": 10000}},
  {"id": "200", "key": "exp_closed", "status": "Running", "layerId": "2", "audienceIds": [],
   "variations": [{"id": "201", "key": "x", "featureEnabled": true}],
   "trafficAllocation": [{"entityId": "201", "endOfRange": 10000}], "forcedVariations": {},
   "cmab": {"attributeIds": ["300"], "trafficAllocation": 0}},
  {"id": "400", "key": "exp_plain", "status": "Running", "layerId": "4", "audienceIds": [],
   "variations": [{"id": "401", "key": "l", "featureEnabled": true}],
   "trafficAllocation": [{"entityId": "401", "endOfRange": 10000}], "forcedVariations": {}, "cmab": {}}
 ]}
"""

private struct Attributes: UserAttributes {
    var values: [String: AttributeValue]
    func value(named name: UTF8Text) -> AttributeValue? { values[String(decoding: name, as: UTF8.self)] }
    func isQualified(for segment: UTF8Text) -> Bool { false }
    func forEach(_ body: (UTF8Text, AttributeValue) -> Void) {}
}

private final class FakeProvider: CMABDecisionProvider {
    var answer: String?
    var requests: [CMABRequest] = []
    var options: [DecideOptions] = []
    init(answer: String?) { self.answer = answer }
    func cmabDecision(_ request: CMABRequest, options: DecideOptions, collectReasons: Bool) -> CMABResult {
        requests.append(request)
        self.options.append(options)
        let reasons = ["provider reason"]
        guard let answer else { return CMABResult(answer: nil, reasons: reasons) }
        return CMABResult(answer: CMABAnswer(variationId: answer, uuid: CMABUUID(high: 0x1234_5678_9abc_4def, low: 0x8000_0000_0000_0001)),
                          reasons: reasons)
    }
}

private final class RecordingSticky: StickyAssignments {
    var recorded: [String: String] = [:]
    var isActive: Bool { true }
    func savedVariation(experimentId: String) -> String? { nil }
    func record(experimentId: String, variationId: String) { recorded[experimentId] = variationId }
}

private func decide(_ flagKey: String, provider: FakeProvider?, attributes: [String: AttributeValue] = [:],
                    sticky: RecordingSticky = RecordingSticky(), options: DecideOptions = [])
    throws -> (FlagDecision, [String], ProjectConfig)
{
    let config = try DatafileCompiler.compile(datafile)
    let flag = try #require(config.flagIndex.find(flagKey))
    let reasons = ReasonLog()
    var user = Array("user-1".utf8)
    let decision = withExtendedLifetime((config, reasons, provider)) {
        user.withUnsafeMutableBufferPointer { buffer in
            DecisionService(config: config, userId: UnsafeBufferPointer(buffer), attributes: Attributes(values: attributes),
                            overrides: NoOverrides(), sticky: sticky, reasons: reasons, cmab: provider,
                            cmabOptions: options).decide(flag: flag)
        }
    }
    return (decision, reasons.messages, config)
}

@Test func datafileReadsTheCMABObject() throws {
    let config = try DatafileCompiler.compile(datafile)
    let cmab = try #require(config.experiments[0].cmab)
    #expect(cmab.trafficAllocation == 10000)
    #expect(cmab.attributeIds == ["302", "300", "999", "300"])
    #expect(config.experiments[2].cmab == nil)   // "cmab": {} is false to the reference
    #expect(config.hot.flags[0].hasCMABRule && !config.hot.flags[2].hasCMABRule)
    #expect(config.hasCMABRules)
}

@Test func aCMABObjectWithoutTrafficIsRefused() throws {
    let broken = replacing(datafile, "\"trafficAllocation\": 10000}", "\"x\": 1}")
    #expect(throws: DatafileError.self) { try DatafileCompiler.compile(broken) }
}

@Test func thePredictionNamesTheVariation() throws {
    let provider = FakeProvider(answer: "102")
    let sticky = RecordingSticky()
    let (decision, reasons, config) = try decide("flag_cmab", provider: provider, attributes: [
        "country": .string(UnsafeBufferPointer(start: nil, count: 0)), "age": .int(30), "zeta": .double(1.5)],
        sticky: sticky, options: [.ignoreCMABCache])
    #expect(decision.variation == 1 && !decision.cmabFailed)
    #expect(sticky.recorded.isEmpty)   // never saved for sticky bucketing
    let request = try #require(provider.requests.first)
    #expect(request.ruleId == "100" && request.userId == "user-1" && request.experimentKey == "exp_cmab")
    // In attributeIds order, each id once, only attributes the user has, unknown ids skipped.
    #expect(request.attributesJSON == "[{\"id\": \"302\", \"value\": 1.5, \"type\": \"custom_attribute\"}, "
            + "{\"id\": \"300\", \"value\": \"\", \"type\": \"custom_attribute\"}]")
    #expect(request.attributesKey == "{\"300\": \"\", \"302\": 1.5}")
    #expect(provider.options == [[.ignoreCMABCache]])
    #expect(reasons.suffix(2) == ["provider reason", "User \"user-1\" is in variation \"b\" of experiment exp_cmab."])
    // get_variation's outcome asks too; the impression carries the UUID (the runtime's provider hands it to
    // the subject) after "enabled".
    let index = try #require(config.experimentKeyIndex.find("exp_cmab"))
    var user = Array("user-1".utf8)
    let outcome = withExtendedLifetime(provider) {
        user.withUnsafeMutableBufferPointer { buffer in
            DecisionService(config: config, userId: UnsafeBufferPointer(buffer), attributes: Attributes(values: [:]),
                            overrides: NoOverrides(), reasons: nil, cmab: provider).experimentOutcome(index)
        }
    }
    #expect(outcome == .variation(1) && provider.requests.count == 2)
    var subject = EventPayloads.subject(of: decision, in: config)
    subject.cmabUUID = "12345678-9abc-4def-8000-000000000001"
    let batch = EventPayloads.impression(subject, config: config,
                                         userId: "user-1", attributes: Attributes(values: [:]), uuid: "u",
                                         timestamp: 1, client: EventClient(name: "t", version: "0"))
    #expect(batch.body.contains("\"enabled\":true,\"cmab_uuid\":\"12345678-9abc-4def-8000-000000000001\"}"))
}

@Test func trafficMissAsksNobody() throws {
    let provider = FakeProvider(answer: "201")
    let (decision, reasons, _) = try decide("flag_closed", provider: provider)
    #expect(provider.requests.isEmpty && decision.variation == -1 && !decision.cmabFailed)
    #expect(reasons.suffix(2) == ["User \"user-1\" not in CMAB experiment \"exp_closed\" due to traffic allocation.",
                                  "User \"user-1\" is in no variation."])
}

@Test func aFailedPredictionIsTheErrorDecision() throws {
    for provider in [FakeProvider(answer: nil), nil] {
        let (decision, reasons, config) = try decide("flag_cmab", provider: provider)
        #expect(decision.cmabFailed && decision.experiment == FlagDecision.cmabFailedExperiment && decision.variation == -1)
        #expect(decision.ruleKeyCString(in: config) == nil && decision.variationKeyCString(in: config) == nil)
        #expect(!decision.sendsImpression(in: config) && decision.keptByEnabledFlagsOnly(in: config))
        #expect(reasons.last == "Failed to fetch CMAB data for experiment exp_cmab.")
        #expect(!reasons.contains("provider reason"))   // the reference loses them when it raises
    }
}

@Test func anUnknownVariationIdIsNoVariation() throws {
    let (decision, reasons, _) = try decide("flag_cmab", provider: FakeProvider(answer: "999"))
    #expect(decision.variation == -1 && !decision.cmabFailed)
    #expect(reasons.suffix(2) == ["provider reason", "User \"user-1\" is in no variation."])
}

@Test func anOrdinaryExperimentNeverAsks() throws {
    let provider = FakeProvider(answer: "101")
    let (decision, _, _) = try decide("flag_plain", provider: provider)
    #expect(provider.requests.isEmpty && decision.variation == 0)
}

@Test func predictionResponsesAsTheReferenceReadsThem() {
    func parse(_ text: String) -> String? {
        var copy = text
        return copy.withUTF8 { CMAB.predictedVariationId(UnsafeRawBufferPointer($0)) }
    }
    #expect(parse("{\"predictions\": [{\"variation_id\": \"101\"}]}") == "101")
    #expect(parse("{\"predictions\": [{\"variation_id\": 101}]}") == "101")
    #expect(parse("{\"predictions\": [{\"variation_id\": 1.0}]}") == "1.0")
    #expect(parse("{\"predictions\": [{\"variation_id\": true}]}") == "True")
    #expect(parse("{\"predictions\": [{\"variation_id\": null}]}") == "None")
    for bad in ["", "{not json", "[]", "{}", "{\"predictions\": []}", "{\"predictions\": {}}",
                "{\"predictions\": [1]}", "{\"predictions\": [{\"x\": 1}]}"] {
        #expect(parse(bad) == nil, "\(bad)")
    }
}

@Test func pythonReprAndUUIDText() {
    #expect(CMAB.pythonRepr("101") == "'101'")
    #expect(CMAB.pythonRepr("it's") == "\"it's\"")
    #expect(CMAB.pythonRepr("a'b\"c") == "'a\\'b\"c'")
    #expect(CMAB.pythonRepr("tab\there\u{7f}é\u{200b}") == "'tab\\there\\x7fé\\u200b'")
    var generator = SystemRandomNumberGenerator()
    let uuid = CMABUUID.random(using: &generator)
    let text = uuid.text
    #expect(text.count == 36 && Array(text)[14] == "4" && "89ab".contains(Array(text)[19]))
    #expect(CMABUUID(text: text) == uuid)
    let request = CMABRequest(ruleId: "7", experimentKey: "k", userId: "ü", attributesJSON: "[]", attributesKey: "{}")
    #expect(CMABUUID(high: 1, low: 2).text == "00000000-0000-0001-0000-000000000002")
    #expect(request.body(uuid: CMABUUID(high: 1, low: 2)) == "{\"instances\": [{\"visitorId\": \"\\u00fc\", "
            + "\"experimentId\": \"7\", \"attributes\": [], \"cmabUUID\": \"00000000-0000-0001-0000-000000000002\"}]}")
}

/// `text` with the first occurrence of `old` replaced (no Foundation).
private func replacing(_ text: String, _ old: String, _ new: String) -> String {
    let bytes = Array(text.utf8), mark = Array(old.utf8)
    for start in 0...(bytes.count - mark.count) where bytes[start..<(start + mark.count)].elementsEqual(mark) {
        return String(decoding: bytes[..<start] + Array(new.utf8) + bytes[(start + mark.count)...], as: UTF8.self)
    }
    return text
}
