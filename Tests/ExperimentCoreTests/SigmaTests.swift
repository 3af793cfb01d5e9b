import Testing
@testable import ExperimentCore

// Sigma's string formats, typed-value rules, property keys, and experiment / holdout membership on a
// compiled datafile where traffic is all-or-nothing, so every answer is certain.

private struct NoAttributes: UserAttributes {
    func value(named name: UTF8Text) -> AttributeValue? { nil }
    func isQualified(for segment: UTF8Text) -> Bool { false }
    func forEach(_ body: (UTF8Text, AttributeValue) -> Void) {}
}

private func variable(_ key: String, _ type: VariableType) -> Variable {
    Variable(id: "1", key: key, type: type, defaultValue: "")
}

@Test func experimentsStringForm() {
    #expect(SigmaFormats.experiments([]) == "")
    #expect(SigmaFormats.experiments([("3001", 1)]) == "3001.1")
    #expect(SigmaFormats.experiments([("3001", 1), ("3002", 0), ("77", 12)]) == "3001.1|3002.0|77.12")
}

@Test func holdoutsStringFormAlwaysGroupZero() {
    #expect(SigmaFormats.holdouts([]) == "")
    #expect(SigmaFormats.holdouts(["9001"]) == "9001.0")
    #expect(SigmaFormats.holdouts(["9001", "9003"]) == "9001.0|9003.0")
}

@Test func accessorTypeOfEachVariableType() {
    #expect(SigmaValueType(.boolean) == .bool)
    #expect(SigmaValueType(.integer) == .int)
    #expect(SigmaValueType(.double) == .double)
    #expect(SigmaValueType(.string) == .string)
    #expect(SigmaValueType(.json) == .json)
}

@Test func aFlagWithoutVariableKeyIsABool() {
    #expect(SigmaValues.mismatch(flagKey: "f", variable: nil, wanted: .bool) == nil)
    for wanted in [SigmaValueType.int, .double, .string, .json] {
        let message = SigmaValues.mismatch(flagKey: "f", variable: nil, wanted: wanted)
        #expect(message?.contains("without a variable key is a bool") == true)
    }
}

@Test func everyAccessorAcceptsOnlyItsOwnType() {
    let types: [VariableType] = [.boolean, .integer, .double, .string, .json]
    for type in types {
        for wanted in SigmaValueType.allCases {
            let message = SigmaValues.mismatch(flagKey: "f", variable: variable("v", type), wanted: wanted)
            #expect((message == nil) == (SigmaValueType(type) == wanted), "\(type) as \(wanted)")
        }
    }
}

@Test func lookupReadsTypedValues() {
    let json = #"{"b": true, "i": 42, "d": 2.5, "di": 3, "s": "hi", "j": {"k": [1, 2]}, "n": null, "big": 99999999999999999999}"#
    #expect(SigmaValues.lookup(variable("b", .boolean), in: json, owner: "flag", as: .bool) == .value(.bool(true)))
    #expect(SigmaValues.lookup(variable("i", .integer), in: json, owner: "flag", as: .int) == .value(.int(42)))
    #expect(SigmaValues.lookup(variable("d", .double), in: json, owner: "flag", as: .double) == .value(.double(2.5)))
    #expect(SigmaValues.lookup(variable("di", .double), in: json, owner: "flag", as: .double) == .value(.double(3)))
    #expect(SigmaValues.lookup(variable("s", .string), in: json, owner: "flag", as: .string) == .value(.string("hi")))
    #expect(SigmaValues.lookup(variable("j", .json), in: json, owner: "flag", as: .json) == .value(.json(#"{"k":[1,2]}"#)))
}

@Test func nullAndMissingAreAbsentNotErrors() {
    let json = #"{"n": null}"#
    #expect(SigmaValues.lookup(variable("n", .integer), in: json, owner: "flag", as: .int) == .absent)
    #expect(SigmaValues.lookup(variable("gone", .string), in: json, owner: "flag", as: .string) == .absent)
}

@Test func lookupChecksTheTypeFirstAndRange() {
    let json = #"{"s": "hi", "big": 99999999999999999999}"#
    guard case .typeMismatch(let message) = SigmaValues.lookup(variable("s", .string), in: json, owner: "flag \"f\"",
                                                              as: .int) else {
        Issue.record("expected a type mismatch")
        return
    }
    #expect(message.contains("\"s\"") && message.contains("string") && message.contains("not int"))
    if case .typeMismatch(let tooBig) = SigmaValues.lookup(variable("big", .integer), in: json, owner: "flag", as: .int) {
        #expect(tooBig.contains("64-bit"))
    } else {
        Issue.record("a 20-digit integer must not fit")
    }
}

@Test func sigmaPropertyKeys() {
    for key in SigmaProperties.standardKeys {
        #expect(SigmaProperties.problem(key: key, kind: .string) == nil)
        #expect(SigmaProperties.problem(key: key, kind: .null) == nil)
        #expect(SigmaProperties.problem(key: key, kind: .number) != nil)
    }
    #expect(SigmaProperties.problem(key: "custom.isAuthorized", kind: .bool) == nil)
    #expect(SigmaProperties.problem(key: "custom.level", kind: .number) == nil)
    #expect(SigmaProperties.problem(key: "custom.", kind: .string) != nil)
    #expect(SigmaProperties.problem(key: "user_id", kind: .string)?.contains("argument") == true)
    #expect(SigmaProperties.problem(key: "nickname", kind: .string)?.contains("custom.<name>") == true)
}

// MARK: membership

private func membershipDatafile(holdoutStatus: String) -> String { #"""
{"version": "4", "projectId": "1", "accountId": "2", "revision": "3", "attributes": [], "audiences": [],
 "events": [], "groups": [], "rollouts": [], "integrations": [],
 "experiments": [
  {"id": "3001", "key": "flag_rule", "layerId": "1", "status": "Running", "audienceIds": [], "forcedVariations": {},
   "variations": [{"id": "31", "key": "a", "featureEnabled": true}, {"id": "32", "key": "b", "featureEnabled": true}],
   "trafficAllocation": [{"entityId": "32", "endOfRange": 10000}]},
  {"id": "3002", "key": "plain_ab", "layerId": "2", "status": "Running", "audienceIds": [], "forcedVariations": {},
   "variations": [{"id": "41", "key": "x"}, {"id": "42", "key": "y"}, {"id": "43", "key": "z"}],
   "trafficAllocation": [{"entityId": "43", "endOfRange": 10000}]},
  {"id": "3003", "key": "paused", "layerId": "3", "status": "Paused", "audienceIds": [], "forcedVariations": {},
   "variations": [{"id": "51", "key": "p"}], "trafficAllocation": [{"entityId": "51", "endOfRange": 10000}]}],
 "featureFlags": [{"id": "8", "key": "flag", "experimentIds": ["3001"], "rolloutId": "", "variables": []}],
 "holdouts": [
  {"id": "9001", "key": "everyone", "status": "\#(holdoutStatus)", "audienceIds": [],
   "variations": [{"id": "91", "key": "off", "featureEnabled": false}],
   "trafficAllocation": [{"entityId": "91", "endOfRange": 10000}]},
  {"id": "9002", "key": "draft", "status": "Draft", "audienceIds": [],
   "variations": [{"id": "92", "key": "off", "featureEnabled": false}],
   "trafficAllocation": [{"entityId": "92", "endOfRange": 10000}]}]}
"""# }

private func withService<R>(_ datafile: String,
                            _ body: (DecisionService<NoAttributes, NoOverrides, NoStickyAssignments>) -> R) throws -> R {
    let config = try DatafileCompiler.compile(datafile)
    let user = Array("user-1".utf8)
    // The service does not retain its config: keep it alive for the body.
    return withExtendedLifetime(config) {
        user.withUnsafeBufferPointer { userId in
            body(DecisionService(config: config, userId: userId, attributes: NoAttributes(), overrides: NoOverrides(),
                                 reasons: nil))
        }
    }
}

@Test func membershipsWithAGlobalHoldout() throws {
    try withService(membershipDatafile(holdoutStatus: "Running")) { service in
        // the running global holdout takes everybody: the flag never reaches its experiment rule
        #expect(service.holdoutMemberships() == [0])
        #expect(service.isInHoldout(0) && !service.isInHoldout(1))
        #expect(service.experimentMemberships() == [ExperimentMembership(experiment: 1, variation: 2)])
        #expect(service.experimentMembership(0) == nil)
        #expect(service.experimentMembership(2) == nil)
    }
}

@Test func membershipsWithoutHoldouts() throws {
    try withService(membershipDatafile(holdoutStatus: "Concluded")) { service in
        #expect(service.holdoutMemberships() == [])
        let memberships = service.experimentMemberships()
        #expect(memberships == [ExperimentMembership(experiment: 0, variation: 1), ExperimentMembership(experiment: 1, variation: 2)])
        #expect(SigmaFormats.experiments(memberships.map { (service.config.experiments[Int($0.experiment)].id.text,
                                                             Int($0.variation)) }) == "3001.1|3002.2")
        #expect(service.experimentMembership(0) == ExperimentMembership(experiment: 0, variation: 1))
    }
}
