import Testing
@testable import ExperimentCore

// Acceptance is the reference SDK's: what it accepts compiles, with the reference's semantics, and is
// reported as a warning with its place; what it refuses stays an error with today's message.

private func datafile(experiments: String = "[]", rollouts: String = "[]", flags: String = "[]",
                      audiences: String = "[]") -> String {
    """
    {"version": "4", "projectId": "1", "accountId": "2", "revision": "3", "attributes": [], "events": [],
     "experiments": \(experiments), "groups": [], "featureFlags": \(flags), "rollouts": \(rollouts),
     "audiences": \(audiences)}
    """
}

private func experiment(id: String = "10", key: String = "e", audiences: String = #""audienceIds": []"#,
                        ends: [String] = ["10000"], variables: String = "[]") -> String {
    let ranges = ends.map { #"{"entityId": "20", "endOfRange": \#($0)}"# }.joined(separator: ", ")
    return #"{"id": "\#(id)", "key": "\#(key)", "status": "Running", "layerId": "1", "forcedVariations": {}, "#
        + #"\#(audiences), "variations": [{"id": "20", "key": "v", "variables": \#(variables)}], "#
        + #""trafficAllocation": [\#(ranges)]}"#
}

private let audience = #"{"id": "1", "name": "one", "conditions": "[\"or\", {\"name\": \"a\", \"type\": \"custom_attribute\", \"value\": 1}]"}"#

private func problems(_ text: String) -> [DatafileError] {
    var copy = text
    return copy.withUTF8 { DatafileCompiler.problems(UnsafeRawBufferPointer($0)) }
}

private func compiled(_ text: String) throws -> ProjectConfig { try DatafileCompiler.compile(text) }

@Test func staleAudienceIdIsAWarningWithItsPlace() throws {
    let text = datafile(experiments: "[\(experiment(audiences: #""audienceIds": ["1"], "audienceConditions": ["or", "1", "404"]"#))]",
                        audiences: "[\(audience)]")
    let config = try compiled(text)
    #expect(config.warnings.count == 1)
    let warning = try #require(config.warnings.first)
    #expect(warning.severity == .warning)
    #expect(warning.place == "experiments[0].audienceConditions[2]")
    #expect(warning.message.hasPrefix(#"datafile: experiments[0].audienceConditions[2]: unknown audience "404""#))
    #expect(problems(text) == config.warnings)
}

@Test func staleAudienceIdInAudienceIdsToo() throws {
    let config = try compiled(datafile(experiments: "[\(experiment(audiences: #""audienceIds": ["404"]"#))]"))
    #expect(config.warnings.map(\.place) == ["experiments[0].audienceIds[0]"])
}

@Test func rangesOutside0To10000AreClampedWithAWarning() throws {
    let config = try compiled(datafile(experiments: "[\(experiment(ends: ["-5", "12000"]))]"))
    #expect(config.experiments[0].traffic.map(\.endOfRange) == [0, 10_000])
    #expect(config.warnings.map(\.place) == ["experiments[0].trafficAllocation[0].endOfRange",
                                             "experiments[0].trafficAllocation[1].endOfRange"])
    #expect(config.warnings.allSatisfy { $0.severity == .warning })
}

@Test func aNonIntegerRangeIsStillRefused() {
    #expect(problems(datafile(experiments: "[\(experiment(ends: ["\"9\""]))]")).map(\.message)
            == ["datafile: experiments[0].trafficAllocation[0].endOfRange: expected an integer, got a string"])
}

private let flagVariables = #"[{"id": "30", "key": "x", "type": "integer", "defaultValue": "1"}]"#

@Test func variableUsageOfAnotherVariableIsIgnoredWithAWarning() throws {
    let text = datafile(experiments: "[\(experiment(variables: #"[{"id": "31", "value": "7"}]"#))]",
                        flags: #"[{"id": "40", "key": "f", "experimentIds": ["10"], "rolloutId": "", "variables": \#(flagVariables)}]"#)
    let config = try compiled(text)
    #expect(config.warnings.count == 1)
    #expect(config.warnings[0].message.contains(#"variable id "31" is not a variable of flag "f""#))
}

@Test func unknownVariableTypeIsAString() throws {
    let variables = #"[{"id": "30", "key": "x", "type": "float", "defaultValue": "1.5"}]"#
    let config = try compiled(datafile(flags: #"[{"id": "40", "key": "f", "experimentIds": [], "rolloutId": "", "variables": \#(variables)}]"#))
    #expect(config.flags[0].variables[0].type == .string)
    #expect(config.warnings.map(\.place) == ["featureFlags[0].variables[0].type"])
}

@Test func nonStringAudienceIdRefusedWhereTheReferenceWritesConditionsOut() {
    // An experiment's audienceConditions are written out by the reference's OptimizelyConfig: it raises.
    let refused = problems(datafile(experiments: "[\(experiment(audiences: #""audienceIds": [], "audienceConditions": ["or", 5]"#))]"))
    let errors = refused.filter { $0.severity == .error }
    #expect(errors.map(\.place) == ["experiments[0].audienceConditions[1]"])
    #expect(errors.first?.message.contains("OptimizelyConfig raises") == true)
}

@Test func nonStringAudienceIdOfAnUnusedRolloutIsAWarning() throws {
    let rule = experiment(id: "11", key: "r", audiences: #""audienceIds": [], "audienceConditions": ["or", true]"#)
    let unused = try compiled(datafile(rollouts: #"[{"id": "50", "experiments": [\#(rule)]}]"#))
    #expect(unused.warnings.map(\.place) == ["rollouts[0].experiments[0].audienceConditions[1]"])
    // The same rollout used by a flag: refused.
    let used = problems(datafile(rollouts: #"[{"id": "50", "experiments": [\#(rule)]}]"#,
                                 flags: #"[{"id": "40", "key": "f", "experimentIds": [], "rolloutId": "50", "variables": []}]"#))
    #expect(used.filter { $0.severity == .error }.map(\.place) == ["rollouts[0].experiments[0].audienceConditions[1]"])
}

@Test func whatTheReferenceRefusesKeepsTodaysMessage() {
    let text = datafile(flags: #"[{"id": "40", "key": "f", "experimentIds": [], "rolloutId": "99", "variables": []}]"#)
    #expect(problems(text).map(\.message) == [#"datafile: featureFlags[0].rolloutId: unknown rollout "99" (no such id in "rollouts")"#])
    #expect(problems(text).map(\.severity) == [.error])
}

@Test func versionsTwoAndThreeAreAcceptedAsTheReferenceDoes() throws {
    for version in ["2", "3"] {
        let text = datafile().replacing(#""version": "4""#, with: #""version": "\#(version)""#)
        #expect(try compiled(text).version == version)
    }
}

@Test func aNullOptionalSectionIsRefused() {
    let text = datafile().replacing(#""rollouts": []"#, with: #""rollouts": null"#)
    #expect(problems(text).map(\.message)
            == ["datafile: rollouts: expected an array, got null: the reference iterates it and raises (its config construction)"])
}

// ----- Outside the reference's schema (rollout rules, holdouts, flags, typed audiences) -------------------

private func rolloutRule(_ fields: String = "") -> String {
    #"{"id": "11", "key": "r", "status": "Running", "layerId": "1", "forcedVariations": {}, "audienceIds": [], "#
        + #""variations": [{"id": "21", "key": "on", "featureEnabled": true}], "#
        + #""trafficAllocation": [{"entityId": "21", "endOfRange": 10000}]\#(fields)}"#
}

private func withRollout(_ rule: String, flagFields: String = "") -> String {
    datafile(rollouts: #"[{"id": "50", "experiments": [\#(rule)]}]"#,
             flags: #"[{"id": "40", "key": "f", "experimentIds": [], "rolloutId": "50", "variables": []\#(flagFields)}]"#)
}

/// `rule` with `field` set to `value` (JSON): the generated rule's field is replaced.
private func rule(_ field: String, _ value: String) -> String {
    var text = rolloutRule()
    let pattern = try! Regex(#""\#(field)": ("[^"]*"|\{\}|\[[^\]]*\])"#)
    text.replace(pattern, with: #""\#(field)": \#(value)"#, maxReplacements: 1)
    return text
}

@Test func aRolloutRuleStatusThatIsNoStringIsNotRunning() throws {
    let config = try compiled(withRollout(rule("status", "1")))
    #expect(!config.experiments[0].isRunning)
    #expect(config.warnings.map(\.place) == ["rollouts[0].experiments[0].status"])
    #expect(config.warnings.allSatisfy { $0.severity == .warning })
}

@Test func aRolloutRuleIdThatIsANumberIsFormattedAsPythonDoesForBucketing() throws {
    for (value, text) in [("43638051", "43638051"), ("461900259.0", "461900259.0"), ("true", "True"), ("null", "None")] {
        let config = try compiled(withRollout(rule("id", value)))
        #expect(config.experiments[0].id.text == text)
        #expect(config.warnings.map(\.place) == ["rollouts[0].experiments[0].id"])
        // A caller's string never names it.
        #expect(config.experimentIdIndex.find(text) == nil)
    }
}

@Test func aRolloutRuleKeyThatIsNoStringIsNeverBucketedNorNamed() throws {
    let config = try compiled(withRollout(rule("key", "-1")))
    #expect(config.experiments[0].traffic.map(\.entity) == [TrafficRange.notBucketed])
    #expect(config.experimentKeyIndex.find("-1") == nil)
    #expect(config.warnings.map(\.place) == ["rollouts[0].experiments[0].key"])
}

@Test func aListOrObjectWhereTheReferenceKeysAMapIsRefused() {
    for field in ["id", "key"] {
        let refused = problems(withRollout(rule(field, "[1]")))
        #expect(refused.filter { $0.severity == .error }.map(\.place) == ["rollouts[0].experiments[0].\(field)"])
        #expect(refused.first { $0.severity == .error }?.message.contains("cannot hash a list") == true)
    }
}

@Test func aRolloutRuleTrafficAllocationOrWhitelistThatIsNoListOrObjectBucketsNobody() throws {
    let config = try compiled(withRollout(rule("trafficAllocation", "{}")))
    #expect(config.experiments[0].traffic.isEmpty)
    let whitelist = try compiled(withRollout(rule("forcedVariations", "0")))
    #expect(whitelist.warnings.map(\.place) == ["rollouts[0].experiments[0].forcedVariations"])
}

@Test func variablesThatAreFalseAreNoneAndTrueNonListsAreRefused() throws {
    let none = try compiled(withRollout(rolloutRule().replacing(#""featureEnabled": true"#,
                                                                 with: #""featureEnabled": true, "variables": 0"#)))
    #expect(none.warnings.map(\.place) == ["rollouts[0].experiments[0].variations[0].variables"])
    let refused = problems(withRollout(rolloutRule().replacing(#""featureEnabled": true"#,
                                                                with: #""featureEnabled": true, "variables": 1.5"#)))
    #expect(refused.map(\.severity).contains(.error))
}

@Test func aFlagRolloutIdThatIsAnEmptyObjectIsNoRolloutAndANumberIsRefused() throws {
    let text = withRollout(rolloutRule()).replacing(#""rolloutId": "50""#, with: #""rolloutId": {}"#)
    let config = try compiled(text)
    #expect(config.flags[0].rules.isEmpty)
    let refused = problems(withRollout(rolloutRule()).replacing(#""rolloutId": "50""#, with: #""rolloutId": 50"#))
    #expect(refused.map(\.place) == ["featureFlags[0].rolloutId"])
    #expect(refused.map(\.severity) == [.error])
}

@Test func anEmptyConditionListEvaluatesToUnknownWithAWarning() throws {
    let empty = #"{"id": "1", "name": "one", "conditions": "[\"and\", {\"name\": \"a\", \"type\": \"custom_attribute\", \"value\": 1}, []]"}"#
    let config = try compiled(datafile(audiences: "[\(empty)]"))
    #expect(config.warnings.map(\.place) == ["audiences[0].conditions[2]"])
    #expect(config.warnings[0].message.contains("empty condition list"))
}

@Test func anEmptySectionObjectIsNoEntriesAndANonEmptyOneIsRefused() throws {
    let text = datafile().replacing(#""featureFlags": []"#, with: #""featureFlags": {}"#)
    #expect(try compiled(text).flags.isEmpty)
    let refused = problems(datafile().replacing(#""featureFlags": []"#, with: #""featureFlags": {"a": 1}"#))
    #expect(refused.map(\.place) == ["featureFlags"])
}

@Test func aTypedAudienceWithANumberIdIsNamedOnlyByAnEqualValue() throws {
    // A rule naming the audience by the number 7 (or 7.0, true is 1) finds it; "7" does not.
    let typed = #""typedAudiences": [{"id": 7, "name": "seven", "conditions": ["or", {"name": "a", "type": "custom_attribute", "value": 1}]}]"#
    let text = datafile(rollouts: #"[{"id": "50", "experiments": [\#(rule("audienceIds", "[7.0, \"7\"]"))]}]"#)
        .replacing(#""audiences": []"#, with: #""audiences": [], \#(typed)"#)
    let config = try compiled(text)
    #expect(config.audiences.map(\.id) == ["7"])
    // 7.0 names the audience (a warning for the number), "7" names none (unknown audience).
    #expect(config.warnings.map(\.place) == ["typedAudiences[0].id", "rollouts[0].experiments[0].audienceIds[1]",
                                             "rollouts[0].experiments[0].audienceIds[0]"])
}

@Test func integrationsAreCheckedAsTheSchemaDoes() {
    for value in ["null", "{}", #"[{"key": "odp", "host": null}]"#, #"[{"host": "h"}]"#, "[5]"] {
        let text = datafile().replacing(#""audiences": []"#, with: #""audiences": [], "integrations": \#(value)"#)
        #expect(problems(text).map(\.severity) == [.error], "integrations \(value)")
    }
}

@Test func anAudienceIdNullInALongListIsWrittenOutButANumberIsNot() {
    // OptimizelyConfig skips a None name in a list of three or more; a number cannot be concatenated.
    let skipped = problems(datafile(experiments: "[\(experiment(audiences: #""audienceIds": [], "audienceConditions": ["or", "1", null]"#))]"))
    #expect(skipped.allSatisfy { $0.severity == .warning })
    let raised = problems(datafile(experiments: "[\(experiment(audiences: #""audienceIds": [], "audienceConditions": ["or", null]"#))]"))
    #expect(raised.map(\.severity).contains(.error))
}

@Test func aFlagsExperimentIdsGivenAsTextAreItsCharacters() throws {
    // Python iterates the string: "12" names the experiments "1" and "2", "" none.
    let experiments = "[\(experiment(id: "1", key: "one")), \(experiment(id: "2", key: "two"))]"
    let text = datafile(experiments: experiments,
                        flags: #"[{"id": "40", "key": "f", "experimentIds": "21", "rolloutId": "", "variables": []}]"#)
    let config = try compiled(text)
    #expect(config.flags[0].rules.map { config.experiments[Int($0.experiment)].key.text } == ["two", "one"])
    #expect(config.warnings.map(\.place) == ["featureFlags[0].experimentIds"])
    let none = try compiled(datafile(flags: #"[{"id": "40", "key": "f", "experimentIds": "", "rolloutId": "", "variables": []}]"#))
    #expect(none.flags[0].rules.isEmpty)
    // An object is iterated by its names.
    let named = try compiled(datafile(experiments: experiments,
                                      flags: #"[{"id": "40", "key": "f", "experimentIds": {"2": 0, "1": [], "2": 1}, "rolloutId": "", "variables": []}]"#))
    #expect(named.flags[0].rules.map { named.experiments[Int($0.experiment)].key.text } == ["two", "one"])
    // A character that is no experiment id: the reference's config construction raises (KeyError).
    #expect(problems(datafile(experiments: experiments,
                              flags: #"[{"id": "40", "key": "f", "experimentIds": "13", "rolloutId": "", "variables": []}]"#))
            .filter { $0.severity == .error }.map(\.message) == [#"datafile: featureFlags[0].experimentIds: unknown experiment "3""#])
}

@Test func anIntegerAmongAnAudiencesConditionsIsTheIndexOfOneOfItsConditionObjects() throws {
    // The reference's decoder lists the condition objects innermost first: {"x": 1} is object 0, the "gt"
    // leaf (whose value is that index) 1, the "exists" leaf 2. So 2 and -1 both stand for the "exists" leaf.
    let conditions = #"[\"and\", 2, -1, {\"match\": \"gt\", \"name\": \"n\", \"type\": \"custom_attribute\", \"value\": {\"x\": 1}}, "#
        + #"{\"match\": \"exists\", \"name\": \"b\", \"type\": \"custom_attribute\"}]"#
    let config = try compiled(datafile(audiences: #"[{"id": "1", "name": "one", "conditions": "\#(conditions)"}]"#))
    #expect(config.warnings.map(\.place) == ["audiences[0].conditions[1]", "audiences[0].conditions[2]"])
    #expect(config.warnings.allSatisfy { $0.message.hasSuffix("it stands for the audience's condition object 2, as in the reference") })
    let past = try compiled(datafile(audiences: #"[{"id": "1", "name": "one", "conditions": "[\"or\", 3, {\"name\": \"a\"}]"}]"#))
    #expect(past.warnings.map(\.place) == ["audiences[0].conditions[1]"])
    #expect(past.warnings[0].message.contains("raises, as the audience has 1; here it evaluates to unknown"))
}
