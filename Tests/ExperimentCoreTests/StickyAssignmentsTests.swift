import Testing
@testable import ExperimentCore

// The core's side of sticky bucketing and Sigma forced memberships: where DecisionService.outcome consults
// them and what it records. The runtime's stores are tested through the real library (test_profiles.py).

private let datafile = """
{"version": "4", "accountId": "1", "projectId": "2", "revision": "1", "attributes": [], "events": [],
 "audiences": [{"id": "9", "name": "beta", "conditions": "[\\"and\\", {\\"name\\": \\"beta\\", \\"type\\": \\"custom_attribute\\", \\"match\\": \\"exact\\", \\"value\\": true}]"}],
 "groups": [], "featureFlags": [], "rollouts": [],
 "experiments": [
  {"id": "100", "key": "nobody", "status": "Running", "layerId": "1", "audienceIds": [],
   "variations": [{"id": "101", "key": "a"}, {"id": "102", "key": "b"}],
   "trafficAllocation": [], "forcedVariations": {"vip": "a"}},
  {"id": "200", "key": "beta_only", "status": "Running", "layerId": "2", "audienceIds": ["9"],
   "variations": [{"id": "201", "key": "x"}, {"id": "202", "key": "y"}],
   "trafficAllocation": [{"entityId": "201", "endOfRange": 5000}, {"entityId": "202", "endOfRange": 10000}],
   "forcedVariations": {}},
  {"id": "300", "key": "paused", "status": "Paused", "layerId": "3", "audienceIds": [],
   "variations": [{"id": "301", "key": "p"}], "trafficAllocation": [{"entityId": "301", "endOfRange": 10000}],
   "forcedVariations": {}},
  {"id": "400", "key": "open", "status": "Running", "layerId": "4", "audienceIds": [],
   "variations": [{"id": "401", "key": "l"}, {"id": "402", "key": "r"}],
   "trafficAllocation": [{"entityId": "401", "endOfRange": 5000}, {"entityId": "402", "endOfRange": 10000}],
   "forcedVariations": {}}
 ]}
"""

private struct NoAttributes: UserAttributes {
    func value(named name: UTF8Text) -> AttributeValue? { nil }
    func isQualified(for segment: UTF8Text) -> Bool { false }
    func forEach(_ body: (UTF8Text, AttributeValue) -> Void) {}
}

private final class RecordingSticky: StickyAssignments {
    var saved: [String: String]
    var lookups: [String] = []
    var recorded: [String: String] = [:]
    init(_ saved: [String: String] = [:]) { self.saved = saved }
    var isActive: Bool { true }
    func savedVariation(experimentId: String) -> String? {
        lookups.append(experimentId)
        return saved[experimentId]
    }
    func record(experimentId: String, variationId: String) { recorded[experimentId] = variationId }
}

private struct Memberships: DecisionOverrides {
    var byExperiment: [String: ForcedMembership]
    var isEmpty: Bool { byExperiment.isEmpty }
    func forcedDecision(flagKey: String, ruleKey: String?) -> String? { nil }
    func forcedVariation(experimentId: String) -> String? { nil }
    func forcedMembership(experimentId: String) -> ForcedMembership? { byExperiment[experimentId] }
}

private func outcome<O: DecisionOverrides>(_ key: String, user: String, sticky: RecordingSticky,
                                           overrides: O) throws -> ExperimentOutcome {
    let config = try DatafileCompiler.compile(datafile)
    let index = try #require(config.experimentKeyIndex.find(key))
    var userBytes = Array(user.utf8)
    let reasons = ReasonLog()
    // The service retains neither its config nor its reasons log: keep them alive for the call.
    return withExtendedLifetime((config, reasons)) {
        userBytes.withUnsafeMutableBufferPointer { buffer in
            DecisionService(config: config, userId: UnsafeBufferPointer(buffer), attributes: NoAttributes(),
                            overrides: overrides, sticky: sticky, reasons: reasons).outcome(experiment: index)
        }
    }
}

@Test func savedVariationWinsOverTrafficAndAudience() throws {
    let sticky = RecordingSticky(["100": "102", "200": "201"])
    #expect(try outcome("nobody", user: "u", sticky: sticky, overrides: NoOverrides()) == .variation(1))
    #expect(try outcome("beta_only", user: "u", sticky: sticky, overrides: NoOverrides()) == .variation(0))
    #expect(sticky.recorded.isEmpty)
}

@Test func missingOrDeletedVariationBucketsAndRecords() throws {
    let sticky = RecordingSticky(["200": "299"])
    #expect(try outcome("beta_only", user: "u", sticky: sticky, overrides: NoOverrides()) == .notTargeted)
    #expect(sticky.recorded.isEmpty)            // not bucketed: nothing to save
    #expect(try outcome("nobody", user: "u", sticky: sticky, overrides: NoOverrides()) == .notAllocated)
    #expect(sticky.recorded.isEmpty)
    let deleted = RecordingSticky(["400": "499"])
    guard case .variation(let chosen) = try outcome("open", user: "u", sticky: deleted, overrides: NoOverrides()) else {
        Issue.record("expected a variation")
        return
    }
    #expect(deleted.recorded == ["400": chosen == 0 ? "401" : "402"])
}

@Test func whitelistAndRunningStatusComeFirst() throws {
    let sticky = RecordingSticky(["100": "102", "300": "301"])
    #expect(try outcome("nobody", user: "vip", sticky: sticky, overrides: NoOverrides()) == .variation(0))
    #expect(try outcome("paused", user: "u", sticky: sticky, overrides: NoOverrides()) == .notRunning)
    #expect(sticky.lookups.isEmpty)
}

@Test func forcedMembershipsIgnoreAudiencesAndTraffic() throws {
    let none = RecordingSticky()
    #expect(try outcome("beta_only", user: "u", sticky: none,
                        overrides: Memberships(byExperiment: ["200": .included(variationIndex: 1)])) == .variation(1))
    #expect(try outcome("beta_only", user: "vip", sticky: none,
                        overrides: Memberships(byExperiment: ["200": .excluded])) == .notTargeted)
    // Included without a position: the bucketed variation, even outside the traffic... when there is some.
    let bucketed = try outcome("beta_only", user: "u", sticky: none,
                               overrides: Memberships(byExperiment: ["200": .included(variationIndex: nil)]))
    #expect(bucketed == .variation(0) || bucketed == .variation(1))
    // Forced memberships beat the whitelist ("vip" is whitelisted into "a").
    #expect(try outcome("nobody", user: "vip", sticky: none,
                        overrides: Memberships(byExperiment: ["100": .included(variationIndex: 1)])) == .variation(1))
    #expect(none.recorded.isEmpty)              // forced, not bucketed: never saved
}
