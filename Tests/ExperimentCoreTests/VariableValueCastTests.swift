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
