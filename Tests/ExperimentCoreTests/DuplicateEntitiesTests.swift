import Testing
@testable import ExperimentCore

// A datafile that repeats an id or a key is read as the reference SDK reads it: some lists it indexes
// through maps (the last entry of an id or key wins, at the first one's place), others it walks as written.

private func datafile(experiments: String = "[]", rollouts: String = "[]", flags: String = "[]",
                      holdouts: String = "[]") -> String {
    """
    {"version": "4", "projectId": "1", "accountId": "2", "revision": "3", "attributes": [], "events": [],
     "experiments": \(experiments), "groups": [], "featureFlags": \(flags), "rollouts": \(rollouts),
     "audiences": [], "holdouts": \(holdouts)}
    """
}

private func rule(id: String, key: String, variations: String = #"[{"id": "20", "key": "v", "featureEnabled": true}]"#,
                  traffic: String = #"[{"entityId": "20", "endOfRange": 10000}]"#, type: String = "") -> String {
    let typeField = type.isEmpty ? "" : "\"type\": \"\(type)\", "
    return #"{"id": "\#(id)", "key": "\#(key)", "status": "Running", "layerId": "1", "forcedVariations": {}, "#
        + #"\#(typeField)"audienceIds": [], "variations": \#(variations), "trafficAllocation": \#(traffic)}"#
}

private func flag(experimentIds: String = "[]", rolloutId: String) -> String {
    #"[{"id": "40", "key": "f", "experimentIds": \#(experimentIds), "rolloutId": "\#(rolloutId)", "variables": []}]"#
}

private func ruleKeys(_ config: ProjectConfig, flag: Int = 0) -> [String] {
    config.flags[flag].rules.map { config.experiments[Int($0.experiment)].key.text }
}

@Test func aRolloutRepeatingARuleIdHasOneRuleAtTheFirstPlaceWithTheLastDefinition() throws {
    let rollout = #"[{"id": "9", "experiments": [\#(rule(id: "1", key: "a")), \#(rule(id: "2", key: "b")), "#
        + #"\#(rule(id: "1", key: "a_dup")), \#(rule(id: "3", key: "everyone"))]}]"#
    let config = try DatafileCompiler.compile(datafile(rollouts: rollout, flags: flag(rolloutId: "9")))
    // Rule 3 is the reference's rule 3 ("Everyone Else" stays the last), not its fourth.
    #expect(ruleKeys(config) == ["a_dup", "b", "everyone"])
}

@Test func aRepeatedRuleIdAsTheLastEntryMakesTheRuleBeforeItTheEveryoneElseRule() throws {
    let rollout = #"[{"id": "9", "experiments": [\#(rule(id: "1", key: "a")), \#(rule(id: "2", key: "b")), "#
        + #"\#(rule(id: "1", key: "a_dup"))]}]"#
    let config = try DatafileCompiler.compile(datafile(rollouts: rollout, flags: flag(rolloutId: "9")))
    #expect(ruleKeys(config) == ["a_dup", "b"])
}

@Test func aRolloutRepeatingAnIdIsShadowedEntirelyByTheLastOne() throws {
    let rollouts = #"[{"id": "9", "experiments": [\#(rule(id: "1", key: "first"))]}, "#
        + #"{"id": "9", "experiments": [\#(rule(id: "2", key: "second"))]}]"#
    let config = try DatafileCompiler.compile(datafile(rollouts: rollouts, flags: flag(rolloutId: "9")))
    #expect(ruleKeys(config) == ["second"])
    // The shadowed rollout's rules are no experiments of the reference's (its map by id skips them).
    #expect(config.experimentIdIndex.find("1") == nil)
    #expect(config.experimentKeyIndex.find("first") == nil)
    #expect(config.experimentIdIndex.find("2") != nil)
}

@Test func aVariationIdRepeatedInARuleIsItsLastDefinitionAmongTheFlagsVariations() throws {
    let variations = #"[{"id": "20", "key": "v_dup", "featureEnabled": false}, {"id": "21", "key": "w", "featureEnabled": true}, "#
        + #"{"id": "20", "key": "v", "featureEnabled": true}]"#
    let rollout = #"[{"id": "9", "experiments": [\#(rule(id: "1", key: "a", variations: variations))]}]"#
    let config = try DatafileCompiler.compile(datafile(rollouts: rollout, flags: flag(rolloutId: "9")))
    // At the first place of the id, with the last definition (the one bucketing finds).
    #expect(config.flags[0].flagVariations.map(\.key.text) == ["v", "w"])
    #expect(config.flags[0].flagVariations.map(\.featureEnabled) == [true, true])
}

@Test func aHoldoutVariationWithARepeatedKeyShadowsNothing() throws {
    let holdout = #"[{"id": "50", "key": "h", "status": "Running", "audienceIds": [], "#
        + #""variations": [{"id": "51", "key": "off", "featureEnabled": false}, {"id": "52", "key": "off", "featureEnabled": true}], "#
        + #""trafficAllocation": [{"entityId": "51", "endOfRange": 10000}]}]"#
    let config = try DatafileCompiler.compile(datafile(holdouts: holdout))
    // The reference buckets a holdout through its variations by id: "51" is still there.
    #expect(config.holdouts[0].variations.map(\.id.text) == ["51", "52"])
    #expect(config.holdouts[0].traffic.map(\.entity) == [0])
}

@Test func theEveryoneElseVariationOfAFeatureRolloutIsTheFirstAsWritten() throws {
    let everyoneVariations = #"[{"id": "60", "key": "on", "featureEnabled": true}, {"id": "61", "key": "on", "featureEnabled": false}]"#
    let everyoneTraffic = #"[{"entityId": "60", "endOfRange": 10000}]"#
    let everyone = rule(id: "2", key: "everyone", variations: everyoneVariations, traffic: everyoneTraffic)
    let rollout = "[{\"id\": \"9\", \"experiments\": [\(everyone)]}]"
    let config = try DatafileCompiler.compile(datafile(experiments: "[\(rule(id: "1", key: "fr", type: "fr"))]",
                                                       rollouts: rollout, flags: flag(experimentIds: #"["1"]"#, rolloutId: "9")))
    let featureRollout = config.experiments[config.experimentKeyIndex.find("fr")!]
    // Not the rule's "on" as its map by key holds it (the second entry, disabled): the first entry.
    #expect(featureRollout.variations.last?.id.text == "60")
    #expect(featureRollout.variations.last?.featureEnabled == true)
}

@Test func decideAllDecidesARepeatedFlagKeyOncePerEntryThroughItsLastFlag() throws {
    let flags = #"[{"id": "40", "key": "f", "experimentIds": [], "rolloutId": "", "variables": []}, "#
        + #"{"id": "41", "key": "g", "experimentIds": [], "rolloutId": "", "variables": []}, "#
        + #"{"id": "42", "key": "f", "experimentIds": [], "rolloutId": "", "variables": []}]"#
    let config = try DatafileCompiler.compile(datafile(flags: flags))
    // "f" at its first place, decided twice as the last entry; then "g" once.
    #expect(config.repeatedFlagKeys == [RepeatedFlagKey(flag: 2, entries: 2), RepeatedFlagKey(flag: 1, entries: 1)])
    let distinct = try DatafileCompiler.compile(datafile(flags: flag(rolloutId: "")))
    #expect(distinct.repeatedFlagKeys == nil)
}
