/// What the reference SDK (Python) makes of a datafile value it keeps as it is where a string belongs:
/// fields its JSON schema does not check (rollout rules, holdouts, flags, typed audiences) may hold a
/// number, boolean or null, and the reference uses that value unchanged — as a dictionary key, in a
/// formatted string, compared with `==`. These helpers give the compiler the same answers.
extension JSONValue {
    /// Python's `str(value)`: what an f-string or `str.format` makes of it (bucketing keys, reasons).
    /// `1` -> "1", `1.0` -> "1.0", `true` -> "True", `null` -> "None"; a string is itself.
    var pythonText: String {
        switch kind {
        case .string: return string ?? ""
        case .null: return "None"
        case .bool: return bool! ? "True" : "False"
        case .int: return integerText
        case .double:
            let number = double!
            if number.isNaN { return "nan" }
            if number.isInfinite { return number < 0 ? "-inf" : "inf" }
            return PythonJSONText.floatRepr(number)
        case .array, .object: return PythonJSONText.dumps(self)
        }
    }

    /// Whether Python can use the value as a dictionary key (lists and dicts cannot: a config
    /// construction that indexes by one raises `TypeError: unhashable type`).
    var isHashable: Bool { kind != .array && kind != .object }

    /// A text that is equal for two values exactly when Python's `==` holds between them as dictionary
    /// keys: a string is itself; numbers and booleans compare by value (`1 == 1.0 == True`, `"1" != 1`),
    /// so they get one tagged text per value that no datafile string takes (it starts with U+0001).
    var identityKey: String {
        switch kind {
        case .string: return string ?? ""
        case .null: return "\u{1}None"
        case .bool: return bool! ? "\u{1}1" : "\u{1}0"
        case .int: return "\u{1}" + integerText
        case .double:
            let number = double!
            if number.rounded() == number, number.magnitude < 9.2e18 { return "\u{1}\(Int64(number))" }
            return "\u{1}" + pythonText
        case .array, .object: return "\u{2}" + PythonJSONText.dumps(self)
        }
    }

    /// Python's truth of the value (`bool(value)`): false for null, false, 0, 0.0, "", [] and {}.
    var pythonTruth: Bool {
        switch kind {
        case .null: return false
        case .bool: return bool!
        case .int: return int64 != 0
        case .double: return double != 0
        case .string: return stringBytes?.isEmpty == false
        case .array, .object: return count != 0
        }
    }
}

/// What an `identityKey` says of the value it was made from, where the value itself is gone.
public enum IdentityKey {
    /// Python's truth of the value: false for "", null, false, 0 and 0.0 (their keys: "", "\u{1}None",
    /// "\u{1}0"). The reference tests a variation id's truth before it looks the variation up.
    public static func isTruthy(_ key: String) -> Bool {
        !(key.isEmpty || key == "\u{1}None" || key == "\u{1}0")
    }

    /// The value as JSON where the key stands for no string (a number, boolean or null: for `True` and
    /// `False` the number they equal), as a notification passes the datafile's value on; nil for a string.
    public static func json(_ key: String) -> String? {
        guard key.utf8.first == 0x01 else { return nil }
        let text = String(key.dropFirst())
        switch text {
        case "None": return "null"
        case "nan": return "NaN"
        case "inf": return "Infinity"
        case "-inf": return "-Infinity"
        default: return text
        }
    }
}

extension DatafileReader {
    /// A field the reference keeps as it is and uses as a dictionary key or in formatted text: a string
    /// is returned as it is; a number, boolean or null as Python's `str()` of it, with a warning (what
    /// `consequence` says follows); a list or object is refused, since the reference's config
    /// construction indexes by the value and raises on an unhashable one.
    func lenientText(_ consequence: String, warn: (DatafileError) -> Void) throws(DatafileError) -> String {
        if let text = value.string { return text }
        guard value.isHashable else {
            throw fail("expected a string, got \(value.kindName): the reference indexes by it and cannot hash "
                       + "\(value.kind == .array ? "a list" : "a dict") (its config construction raises)")
        }
        warn(warning("expected a string, got \(value.kindName) (\(value.pythonText)): \(consequence), as in the reference"))
        return value.pythonText
    }

    /// A field the reference only compares with a string (a status with "Running", a variable type with
    /// "string"): anything else is just not equal. Nil, with a warning, when the value is not a string.
    func comparedText(_ consequence: String, warn: (DatafileError) -> Void) -> String? {
        if let text = value.string { return text }
        warn(warning("expected a string, got \(value.kindName): \(consequence), as in the reference"))
        return nil
    }

    /// A list the reference iterates without its schema checking it: an empty object or string iterates
    /// as nothing (accepted, with a warning); anything else that is not a list makes the iteration raise
    /// (`what` says where) and the datafile is refused.
    func lenientArray(_ what: String, warn: (DatafileError) -> Void) throws(DatafileError) -> DatafileElements {
        if value.kind == .array { return try array() }
        if (value.kind == .object || value.kind == .string) && !value.pythonTruth {
            warn(warning("expected an array, got an empty \(value.kind == .object ? "object" : "string"): "
                         + "no entries, as in the reference (it iterates it as nothing)"))
            return .none
        }
        throw fail("expected an array, got \(value.kindName): the reference iterates it and raises (\(what))")
    }
}

/// The reference's OptimizelyConfig (built whenever its client takes a datafile) writes each experiment's
/// "audienceConditions" — and those of the rules of each rollout a flag uses — out as text, swapping
/// audience ids for names (optimizely_config.py `stringify_conditions`). It concatenates strings, so a
/// number or boolean where it expects an id or name, or a dict it tries to look up, makes it raise and
/// the client construction fail. This walks a value as that code does and returns what it raises on.
struct OptimizelyConfigText {
    /// Audience id (`identityKey`) -> whether its name is text (a null name is written as "").
    let nameIsText: [String: Bool]

    func raises(writing conditions: JSONValue) -> JSONValue? {
        conditions.isNull ? nil : raises(in: conditions)  // None is written as ""
    }

    private static func isOperator(_ value: JSONValue) -> Bool {
        guard let text = value.string else { return false }
        return text == "and" || text == "or" || text == "not"
    }

    private func raises(in conditions: JSONValue) -> JSONValue? {
        let items: [JSONValue]
        switch conditions.kind {
        case .array: items = conditions.elements
        case .string: return nil  // its characters are looked up as ids, and stay text
        case .object: return conditions.count == 0 ? nil : conditions  // conditions[0]: KeyError
        default: return conditions  // len() of a number, boolean: TypeError
        }
        let isOperator = Self.isOperator
        if items.isEmpty { return nil }
        // One id alone, or an operator with one id: written as a quoted name, None included.
        if items.count == 1 && !isOperator(items[0]) { return raisesQuoting(items[0]) }
        if items.count == 2 && isOperator(items[0]) && items[1].kind != .array && !isOperator(items[1]) {
            return raisesQuoting(items[1])
        }
        for item in items where !isOperator(item) {
            if item.kind == .array {
                if let raising = raises(in: item) { return raising }
            } else if !item.isNull, let raising = raisesQuoting(item) {
                return raising  // (a None name or id is skipped here)
            }
        }
        return nil
    }

    /// `'"' + lookup_name_from_id(item) + '"'`: the lookup raises on an unhashable item; an unknown id
    /// is written as itself, so it must be text, as must a known audience's name.
    private func raisesQuoting(_ item: JSONValue) -> JSONValue? {
        guard item.isHashable else { return item }
        if let isText = nameIsText[item.identityKey] { return isText ? nil : item }
        return item.string == nil ? item : nil
    }
}

/// The fields every rule has (id, key, status, layerId), read as the reference reads them.
///
/// Experiments (top-level and in groups) are checked by the reference's JSON schema: strings. Rollout
/// rules and holdouts are not, and the reference keeps what is there: an id that is a number, boolean or
/// null keys its maps as that value (`identity`) and is formatted into the bucketing key with `str()`
/// (`id`); a status that is not a string is not "Running"; a key that is not a string cannot be named by
/// a caller, and the reference's bucketer never buckets for it (it stops at `not key`, or raises on
/// `key.strip()`: no user is bucketed); a layerId is only carried into events.
struct RuleFields {
    /// As formatted into the bucketing key and reasons (Python's `str()`).
    var id: String
    /// As the reference's maps key it (`JSONValue.identityKey`).
    var identity: String
    /// The id as JSON when it is no string: what impressions carry (see `Experiment.idJSON`).
    var idJSON: String? = nil
    /// Python's truth of the id (see `Experiment.idIsTruthy`).
    var idIsTruthy: Bool
    var key: String
    var keyIsText = true
    var isRunning: Bool
    var layerId: String

    init(schemaChecked entry: DatafileReader) throws(DatafileError) {
        id = try entry.requiredString("id")
        identity = id
        idIsTruthy = !id.isEmpty
        key = try entry.requiredKey()
        isRunning = try entry.requiredString("status") == "Running"
        layerId = try entry.requiredString("layerId")
    }

    init(lenient entry: DatafileReader, requiresLayerId: Bool = true, warn: (DatafileError) -> Void) throws(DatafileError) {
        let idField = try entry.required("id")
        id = try idField.lenientText("formatted into the bucketing key as Python's str() of it; only an equal "
                                     + "value (Python's ==) names the rule", warn: warn)
        identity = idField.value.identityKey
        if idField.value.string == nil { idJSON = PythonJSONText.dumps(idField.value) }
        idIsTruthy = idField.value.pythonTruth
        let keyField = try entry.required("key")
        if keyField.value.string != nil {
            key = try entry.requiredKey()
        } else {
            key = try keyField.lenientText("no caller can name it, and no user is bucketed into it (the reference's "
                                           + "bucketer stops at it or raises)", warn: warn)
            keyIsText = false
        }
        let statusField = try entry.required("status")
        isRunning = statusField.comparedText("not \"Running\"", warn: warn) == "Running"
        layerId = ""
        if requiresLayerId || entry.member("layerId") != nil {
            let layerField = try entry.required("layerId")
            if let text = layerField.value.string {
                layerId = text
            } else {
                // The reference's event takes a campaign id only when it is text, else the experiment id.
                warn(layerField.warning("expected a string, got \(layerField.value.kindName): events carry the rule's "
                                        + "id as the campaign id instead, as in the reference"))
            }
        }
    }

    /// A list a rule's decision iterates ("trafficAllocation") outside the schema: anything else than a
    /// list makes the reference's bucketer raise once a decision reaches it, except an empty object or
    /// string (no ranges); here it has no ranges either way (no user is bucketed), with a warning.
    func lenientList(_ entry: DatafileReader, _ name: String, warn: (DatafileError) -> Void) throws(DatafileError)
        -> DatafileElements
    {
        let field = try entry.required(name)
        if field.value.kind == .array { return try field.array() }
        warn(field.warning("expected an array, got \(field.value.kindName): no user is bucketed (the reference's "
                           + "bucketer finds no range in it, or raises once a decision reaches it)"))
        return .none
    }
}
