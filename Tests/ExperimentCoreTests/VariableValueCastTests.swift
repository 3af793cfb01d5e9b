import Testing
@testable import ExperimentCore

// Variable values as the reference's typecasts make them (int(), float(), json.loads() of the datafile's
// value), where valuefuzz.py found them to differ. The expected texts are CPython 3.11's.

private func flagDatafile(type: String, defaultValue: String, value: String? = nil) -> String {
    let usages = value.map { #"[{"id": "v1", "value": \#($0)}]"# } ?? "[]"
    return """
    {"version": "4", "projectId": "1", "accountId": "2", "revision": "3", "attributes": [], "events": [],
     "audiences": [], "groups": [], "experiments": [],
     "featureFlags": [{"id": "f", "key": "flag", "rolloutId": "r", "experimentIds": [],
                       "variables": [{"id": "v1", "key": "x", "type": "\(type)", "defaultValue": \(defaultValue)}]}],
     "rollouts": [{"id": "r", "experiments": [{"id": "e", "key": "rule", "status": "Running", "layerId": "r",
        "audienceIds": [], "forcedVariations": {},
        "variations": [{"id": "on", "key": "on", "featureEnabled": true, "variables": \(usages)}],
        "trafficAllocation": [{"entityId": "on", "endOfRange": 10000}]}]}]}
    """
}

/// The flag's default variables JSON and the variation's, compiled by both of the compiler's paths.
private func variables(type: String, defaultValue: String, value: String? = nil) throws -> (String, String) {
    let config = try DatafileCompiler.compile(flagDatafile(type: type, defaultValue: defaultValue, value: value))
    let flag = config.flags[0]
    var text = flagDatafile(type: type, defaultValue: defaultValue, value: value)
    let whole = try text.withUTF8 { try DatafileCompiler.compileWholeText(UnsafeRawBufferPointer($0), after: nil) }
    #expect(String(cString: whole.flags[0].defaultVariablesJSON) == String(cString: flag.defaultVariablesJSON))
    #expect(String(cString: whole.flags[0].flagVariations[0].variablesJSON)
            == String(cString: flag.flagVariations[0].variablesJSON))
    return (String(cString: flag.defaultVariablesJSON), String(cString: flag.flagVariations[0].variablesJSON))
}

@Test func doublesPythonReadsAsNaNAndInfinityAreHandedOut() throws {
    #expect(try variables(type: "double", defaultValue: #""nan""#).0 == #"{"x":NaN}"#)
    #expect(try variables(type: "double", defaultValue: #""-inf""#).0 == #"{"x":-Infinity}"#)
    #expect(try variables(type: "double", defaultValue: #""1e400""#).0 == #"{"x":Infinity}"#)
    #expect(try variables(type: "double", defaultValue: #""1""#, value: #"" Infinity ""#).1 == #"{"x":Infinity}"#)
}

@Test func integerTextPastPythonsDigitLimitIsNull() throws {
    let limit = String(repeating: "7", count: 4300)
    #expect(try variables(type: "integer", defaultValue: "\"\(limit)\"").0 == #"{"x":\#(limit)}"#)
    #expect(try variables(type: "integer", defaultValue: "\"\(limit)7\"").0 == #"{"x":null}"#)
    #expect(try variables(type: "integer", defaultValue: "\"0\(limit)\"").0 == #"{"x":null}"#)  // zeros count
    #expect(try variables(type: "integer", defaultValue: "\" -\(limit)7 \"").0 == #"{"x":null}"#)
    #expect(try variables(type: "json", defaultValue: "\"[\(limit)7]\"").0 == #"{"x":null}"#)
    #expect(try variables(type: "json", defaultValue: "\"[\(limit)]\"").0 == #"{"x":[\#(limit)]}"#)
}

@Test func integerLiteralsPast64BitsKeepTheirDigits() throws {
    let big = "1000000000000000000000000000000"  // 10**30
    #expect(try variables(type: "integer", defaultValue: big).0 == #"{"x":\#(big)}"#)
    #expect(try variables(type: "string", defaultValue: "-\(big)").0 == #"{"x":-\#(big)}"#)
    #expect(try variables(type: "double", defaultValue: big).0 == #"{"x":1e+30}"#)
    #expect(try variables(type: "double", defaultValue: "1", value: "-\(big)").1 == #"{"x":-1e+30}"#)
    #expect(try variables(type: "integer", defaultValue: "18446744073709551615").0 == #"{"x":18446744073709551615}"#)
    #expect(try variables(type: "integer", defaultValue: "9223372036854775808").0 == #"{"x":9223372036854775808}"#)
    // float() of an int past the double range raises OverflowError
    #expect(try variables(type: "double", defaultValue: "1" + String(repeating: "0", count: 400)).0 == #"{"x":null}"#)
}

@Test func intOfADoubleLiteralIsExact() throws {
    #expect(try variables(type: "integer", defaultValue: "1e19").0 == #"{"x":10000000000000000000}"#)
    #expect(try variables(type: "integer", defaultValue: "-9.3e18").0 == #"{"x":-9300000000000000000}"#)
    #expect(try variables(type: "integer", defaultValue: "1", value: "2.5e300").1
            == #"{"x":\#(VariableValues.truncatedInteger(2.5e300)!)}"#)
    #expect(VariableValues.truncatedInteger(1e300) == "1000000000000000052504760255204420248704468581108159154915854115511802457988908195786371375080447864"
            + "0437044438328838781769425232353604305756447921847867069828483872009265758037378302337947880900593689"
            + "5323497079994508111903896764088007465274278014249457925878882005684283811566947219638686545940054016"
            + "0")
    #expect(VariableValues.truncatedInteger(-1.7976931348623157e308)?.count == 310)
    #expect(VariableValues.truncatedInteger(-2.75) == "-2")
    #expect(VariableValues.truncatedInteger(.nan) == nil)
    #expect(VariableValues.truncatedInteger(-.infinity) == nil)
}

@Test func jsonValuesNestDeeperThanTheDatafileLimit() throws {
    let deep = String(repeating: "[", count: 200) + String(repeating: "]", count: 200)
    #expect(try variables(type: "json", defaultValue: "\"\(deep)\"").0 == #"{"x":\#(deep)}"#)
}

@Test func aDatafileHoldingAnIntegerPastPythonsDigitLimitIsRefused() throws {
    let limit = String(repeating: "1", count: 4300)
    #expect(throws: Never.self) { try DatafileCompiler.compile(flagDatafile(type: "integer", defaultValue: limit)) }
    #expect(throws: Never.self) {
        try DatafileCompiler.compile(flagDatafile(type: "integer", defaultValue: "-\(limit)"))
    }
    #expect(throws: Never.self) {
        try DatafileCompiler.compile(flagDatafile(type: "double", defaultValue: "\(limit)1.5"))
    }
    for text in ["\(limit)1", "-\(limit)1"] {
        #expect(throws: DatafileError.self) {
            try DatafileCompiler.compile(flagDatafile(type: "integer", defaultValue: text))
        }
    }
}

// Ids repeated across entities (valuefuzz's cross-kind ids), at the compiled config.

private func rule(_ id: String, _ key: String, variation: String, end: Int = 10000, audience: String = "") -> String {
    #"{"id": "\#(id)", "key": "\#(key)", "status": "Running", "layerId": "layer_\#(key)", "audienceIds": [\#(audience)], "#
        + #""forcedVariations": {}, "variations": [{"id": "\#(variation)", "key": "\#(variation)", "featureEnabled": true}], "#
        + #""trafficAllocation": [{"entityId": "\#(variation)", "endOfRange": \#(end)}]}"#
}

private func twoRollouts(holdouts: String = "[]") -> String {
    """
    {"version": "4", "projectId": "1", "accountId": "2", "revision": "3", "attributes": [], "events": [],
     "audiences": [], "groups": [], "experiments": [], "holdouts": \(holdouts),
     "featureFlags": [{"id": "f1", "key": "a", "rolloutId": "r1", "experimentIds": [], "variables": []},
                      {"id": "f2", "key": "b", "rolloutId": "r2", "experimentIds": [], "variables": []}],
     "rollouts": [{"id": "r1", "experiments": [\(rule("x", "rule_a", variation: "va", end: 100)), \(rule("e1", "ee_a", variation: "vea"))]},
                  {"id": "r2", "experiments": [\(rule("x", "rule_b", variation: "vb", end: 9000)), \(rule("e2", "ee_b", variation: "veb"))]}]}
    """
}

@Test func aDeliveryRuleSharingItsIdWithAnotherRolloutsRuleKeepsItsNameAndTakesTheOthersTraffic() throws {
    let config = try DatafileCompiler.compile(twoRollouts())
    let first = config.experiments[Int(config.flags[0].rules[0].experiment)]
    #expect(first.key.text == "rule_a")
    #expect(first.layerId == "layer_rule_a")
    #expect(first.traffic.map(\.endOfRange) == [9000])
    #expect(first.variations.map(\.key.text) == ["vb"])
    let second = config.experiments[Int(config.flags[1].rules[0].experiment)]
    #expect(second.key.text == "rule_b")
}

@Test func aRuleSharingItsIdWithAHoldoutBucketsThroughTheHoldoutsVariations() throws {
    let holdout = #"[{"id": "x", "key": "h", "status": "Running", "audienceIds": [], "variations": [{"id": "hv", "key": "hv"}], "#
        + #""trafficAllocation": [{"entityId": "hv", "endOfRange": 0}]}]"#
    let config = try DatafileCompiler.compile(twoRollouts(holdouts: holdout))
    for flag in 0..<2 {
        let rule = config.experiments[Int(config.flags[flag].rules[0].experiment)]
        #expect(rule.traffic.map(\.entity) == [TrafficRange.unknownEntity])
    }
    #expect(config.experiments[Int(config.flags[0].rules[1].experiment)].traffic.map(\.entity) == [0])
}
