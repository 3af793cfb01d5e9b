/// optimizely-sdk's OptimizelyConfig (5.7.0, `optimizely/optimizely_config.py`) as one JSON document, computed
/// from the datafile text the reference would build it from:
///
///     {"revision", "sdk_key", "environment_key", "datafile",
///      "attributes": [{"id", "key"}], "events": [{"id", "key", "experiment_ids"}],
///      "audiences": [{"id", "name", "conditions"}],
///      "experiments_map": {key: Experiment}, "features_map": {key: Feature}}
///     Experiment: {"id", "key", "audiences", "variations_map": {key: Variation}}
///     Variation:  {"id", "key", "feature_enabled", "variables_map": {key: Variable}}
///     Variable:   {"id", "key", "type", "value"}
///     Feature:    {"id", "key", "experiments_map", "variables_map", "experiment_rules", "delivery_rules"}
///
/// Datafile values (ids, keys, variable values...) are carried as the datafile has them, whatever their JSON
/// type, because the reference copies them without checking. Maps follow Python's dict semantics: a
/// repeated key keeps its first place and its last value. Built on request (never while deciding).
public enum OptimizelyConfigDocument {
    /// The document for `datafile` (a text the compiler accepted). Its sdk_key and environment_key are the
    /// datafile's ("" when it names none), never the client's, as the reference's.
    public static func build(datafile: [UInt8]) throws(JSONError) -> String {
        let parsed: Result<JSONDocument, JSONError> = datafile.withUnsafeBytes { bytes in
            do throws(JSONError) {
                return .success(try JSONDocument.parse(bytes, what: "datafile", maxBytes: DatafileCompiler.maxBytes,
                                                       maxDepth: DatafileCompiler.maxDepth))
            } catch {
                return .failure(error)
            }
        }
        let document = try parsed.get()
        return withExtendedLifetime(document) {
            var builder = Builder(root: document.root)
            return builder.write(datafileText: String(decoding: datafile, as: UTF8.self))
        }
    }
}

/// A datafile value as Python's dict keys compare it (1, 1.0 and true are one key); nil for a list or
/// object, which Python cannot use as a key.
private func pythonKey(_ value: JSONValue?) -> String? {
    guard let value else { return "null" }
    switch value.kind {
    case .null: return "null"
    case .bool: return value.bool! ? "n:1" : "n:0"
    case .int: return "n:" + value.integerText
    case .double:
        let number = value.double!
        if number.isFinite, number == number.rounded(), abs(number) < 1e18 { return "n:" + String(Int64(number)) }
        return "f:" + PythonJSONText.floatRepr(number)
    case .string: return "s:" + (value.string ?? "")
    case .array, .object: return nil
    }
}

/// Python's truth value of a datafile value (absent counts as None).
private func truthy(_ value: JSONValue?) -> Bool {
    guard let value else { return false }
    switch value.kind {
    case .null: return false
    case .bool: return value.bool!
    case .int: return value.integerText != "0"
    case .double: return value.double! != 0
    case .string: return (value.stringBytes?.count ?? 0) > 0
    case .array, .object: return value.count > 0
    }
}

/// Python's `str()` of a datafile scalar (an audience name or id in a condition text).
private func pythonStr(_ value: JSONValue?) -> String {
    guard let value else { return "None" }
    switch value.kind {
    case .null: return "None"
    case .bool: return value.bool! ? "True" : "False"
    case .string: return value.string ?? ""
    default: return PythonJSONText.dumps(value)
    }
}

/// The datafile value as JSON text in the document (null when absent).
private func raw(_ value: JSONValue?) -> String {
    guard let value else { return "null" }
    return PythonJSONText.dumps(value)
}

private func isObject(_ value: JSONValue) -> Bool { value.kind == .object }

/// `value or []` for a list field: its elements (nothing for a value that is no list).
private func list(_ value: JSONValue?) -> [JSONValue] { value?.elements ?? [] }

/// A Python dict: values by key, in the order of each key's first insertion.
private struct OrderedMap<Value> {
    private(set) var keys: [String] = []
    private(set) var texts: [String] = []
    private var places: [String: Int] = [:]
    private(set) var values: [Value] = []

    subscript(key: String) -> Value? {
        get { places[key].map { values[$0] } }
    }

    private var usedTexts = Set<String>()

    /// Sets `key` (written as `text` in the document) to `value`. Two keys Python tells apart may have one
    /// text (the string "-1" and the integer -1): the later one's name then carries its kind, e.g. "-1 (n:-1)",
    /// so the JSON object keeps both (each entry's "key" field has the datafile's value).
    mutating func set(_ key: String, text: String, _ value: Value) {
        if let place = places[key] {
            values[place] = value
        } else {
            let unique = usedTexts.contains(text) ? "\(text) (\(key))" : text
            usedTexts.insert(unique)
            places[key] = values.count
            keys.append(key); texts.append(unique); values.append(value)
        }
    }

    mutating func update(_ key: String, _ change: (inout Value) -> Void) {
        guard let place = places[key] else { return }
        change(&values[place])
    }
}

/// The text a dict key takes as a JSON object name: a string as it is, anything else as its JSON text.
private func nameText(_ value: JSONValue?) -> String {
    if let value, value.kind == .string { return value.string ?? "" }
    return raw(value)
}

private struct ConfigVariable {
    var id: String, key: String, type: String, value: String
}

private struct ConfigVariation {
    var id: String, key: String, featureEnabled: String
    var variables: OrderedMap<ConfigVariable>
}

private struct ConfigExperiment {
    var id: String, key: String, audiences: String
    var variations: OrderedMap<ConfigVariation>
    /// The key as Python's dicts compare it (nil for a list or object), and as an object name.
    var mapKey: String? = nil, name = ""
}

/// One flag's variables as the reference's OptimizelyConfigService maps them: by key and by id.
private struct FlagVariables {
    var byKey = OrderedMap<ConfigVariable>()
    var keyOfId: [String: (key: String, text: String)] = [:]
}

private struct Builder {
    let root: JSONValue
    var audienceNames: [String: String] = [:]
    var flagVariablesByKey: [String: FlagVariables] = [:]
    var flagVariablesById: [String: FlagVariables] = [:]
    var featureOfExperiment: [String: JSONValue] = [:]
    var appended: [OpaquePointer: [JSONValue]] = [:]
    var writer = JSONWriter(reservingCapacity: 4096)

    init(root: JSONValue) { self.root = root }

    mutating func write(datafileText: String) -> String {
        writer.beginObject()
        writer.key("revision"); writer.raw(raw(root.member("revision")))
        writer.key("sdk_key")
        if truthy(root.member("sdkKey")) { writer.raw(raw(root.member("sdkKey"))) } else { writer.string("") }
        writer.key("environment_key")
        if truthy(root.member("environmentKey")) { writer.raw(raw(root.member("environmentKey"))) } else { writer.string("") }
        writeAttributes()
        writeEvents()
        writeAudiences()
        let features = list(root.member("featureFlags")).filter(isObject)
        prepareFlags(features)
        appended = everyoneElseVariations(features)
        let (byKey, byId) = experiments()
        writer.key("experiments_map"); writeMap(byKey) { $0.writeExperiment($1) }
        writeFeatures(features, experimentsById: byId)
        writer.field("datafile", datafileText)
        writer.endObject()
        return writer.text
    }

    // MARK: attributes, events, audiences

    mutating func writeAttributes() {
        writer.key("attributes"); writer.beginArray()
        for attribute in list(root.member("attributes")) {
            writer.beginObject()
            writer.key("id"); writer.raw(raw(attribute.member("id")))
            writer.key("key"); writer.raw(raw(attribute.member("key")))
            writer.endObject()
        }
        writer.endArray()
    }

    mutating func writeEvents() {
        writer.key("events"); writer.beginArray()
        for event in list(root.member("events")) {
            writer.beginObject()
            writer.key("id"); writer.raw(raw(event.member("id")))
            writer.key("key"); writer.raw(raw(event.member("key")))
            writer.key("experiment_ids"); writer.raw(raw(event.member("experimentIds")))
            writer.endObject()
        }
        writer.endArray()
    }

    /// Typed audiences (conditions as json.dumps text), then the others whose id is new, without the
    /// reference's "$opt_dummy_audience"; also keeps each audience's name by id for the condition texts.
    mutating func writeAudiences() {
        var entries: [(id: JSONValue?, name: JSONValue?, conditions: String)] = []
        var seen = Set<String>()
        for audience in list(root.member("typedAudiences")) {
            let conditions = audience.member("conditions").map(PythonJSONText.dumps) ?? "null"
            entries.append((audience.member("id"), audience.member("name"), JSONWriter.quoted(conditions)))
            if let key = pythonKey(audience.member("id")) { seen.insert(key) }
        }
        for audience in list(root.member("audiences")) {
            let id = audience.member("id")
            if let key = pythonKey(id), seen.contains(key) { continue }
            if id?.kind == .string, id?.string == "$opt_dummy_audience" { continue }
            entries.append((id, audience.member("name"), raw(audience.member("conditions"))))
        }
        writer.key("audiences"); writer.beginArray()
        for entry in entries {
            writer.beginObject()
            writer.key("id"); writer.raw(raw(entry.id))
            writer.key("name"); writer.raw(raw(entry.name))
            writer.key("conditions"); writer.raw(entry.conditions)
            writer.endObject()
            guard let id = entry.id, id.kind != .null, let key = pythonKey(id) else { continue }
            audienceNames[key] = entry.name.map { $0.kind == .null ? "" : pythonStr($0) } ?? ""
        }
        writer.endArray()
    }

    // MARK: audience condition texts

    /// One element of a condition list as the reference's text reads it: a string (also each character of
    /// a bare string, which Python iterates), a nested list, or another value.
    enum ConditionItem {
        case text(String), list(JSONValue), other(JSONValue)

        init(_ value: JSONValue) {
            switch value.kind {
            case .string: self = .text(value.string ?? "")
            case .array: self = .list(value)
            default: self = .other(value)
            }
        }

        var operatorName: String? {
            if case .text(let text) = self, ["and", "or", "not"].contains(text) { return text }
            return nil
        }

        var isList: Bool { if case .list = self { return true }; return false }
    }

    func name(_ item: ConditionItem) -> String {
        switch item {
        case .text(let text): return audienceNames["s:" + text] ?? text
        case .list(let value), .other(let value):
            if let key = pythonKey(value), let name = audienceNames[key] { return name }
            return pythonStr(value)
        }
    }

    /// The items of a condition list; a bare string is its characters (as Python indexes it).
    func conditionItems(_ conditions: JSONValue) -> [ConditionItem]? {
        switch conditions.kind {
        case .array: return conditions.elements.map(ConditionItem.init)
        case .string: return (conditions.string ?? "").map { ConditionItem.text(String($0)) }
        default: return nil
        }
    }

    /// An audience condition tree as the reference writes it: names quoted, operators upper-case, sub-trees
    /// in parentheses, with its own spacing.
    func readable(_ conditions: JSONValue?) -> String {
        guard let conditions, truthy(conditions), let items = conditionItems(conditions) else { return "" }
        let count = items.count
        if count == 1 && items[0].operatorName == nil { return "\"\(name(items[0]))\"" }
        if count == 2, let operatorName = items[0].operatorName, !items[1].isList, items[1].operatorName == nil {
            return "\(operatorName == "not" ? "NOT " : "")\"\(name(items[1]))\""
        }
        var operatorText = "OR"
        var text = ""
        for (index, item) in items.enumerated() {
            let last = index == count - 1
            if let operatorName = item.operatorName {
                operatorText = operatorName.uppercased()
            } else if case .list(let nested) = item {
                let inner = readable(nested)
                text += last ? "\(operatorText) (\(inner))" : "(\(inner)) "
            } else {
                // A null id names no audience: the reference leaves it out (keeping the positions).
                if case .other(let value) = item, value.kind == .null { continue }
                let quoted = "\"\(name(item))\""
                if index < count - 2 {
                    text += "\(quoted) \(operatorText) "
                } else if last {
                    text += "\(operatorText) \(quoted)"
                } else {
                    text += quoted + " "
                }
            }
        }
        return text
    }

    // MARK: flags' variables

    /// The reference's lookup maps: each flag's variables by the flag's key and by its id (the last flag of
    /// a repeated key or id), and the flag of each experiment id (the last flag listing it).
    mutating func prepareFlags(_ features: [JSONValue]) {
        var winnerOfKey: [String: OpaquePointer?] = [:]
        for feature in features { if let key = pythonKey(feature.member("key")) { winnerOfKey[key] = feature.object } }
        for feature in features {
            for experimentId in list(feature.member("experimentIds")) {
                if let key = pythonKey(experimentId) { featureOfExperiment[key] = feature }
            }
            let flagKey = pythonKey(feature.member("key"))
            let convertsJSON = flagKey.map { winnerOfKey[$0] == feature.object } ?? false
            let variables = flagVariables(feature, convertsJSON: convertsJSON)
            if let flagKey { flagVariablesByKey[flagKey] = variables }
            if let flagId = pythonKey(feature.member("id")) { flagVariablesById[flagId] = variables }
        }
    }

    /// Its ProjectConfig turns a string of subType "json" into type "json" in the datafile's own dict, for
    /// the flag its map by key keeps (the last of a repeated key) only.
    func flagVariables(_ feature: JSONValue, convertsJSON: Bool) -> FlagVariables {
        var made = FlagVariables()
        for variable in list(feature.member("variables")) {
            let type = variable.member("type")
            let isJSON = type?.kind == .string && type?.string == "string"
                && variable.member("subType")?.kind == .string && variable.member("subType")?.string == "json"
            let made1 = ConfigVariable(id: raw(variable.member("id")), key: raw(variable.member("key")),
                                 type: convertsJSON && isJSON ? "\"json\"" : raw(type),
                                 value: raw(variable.member("defaultValue")))
            guard let key = pythonKey(variable.member("key")) else { continue }
            made.byKey.set(key, text: nameText(variable.member("key")), made1)
            if let id = pythonKey(variable.member("id")) {
                made.keyOfId[id] = (key, nameText(variable.member("key")))
            }
        }
        return made
    }

    // MARK: everyone-else variations of "fr" experiments

    /// Entries by a field, the last of each value winning (in the place of its first).
    func lastBy(_ entries: [JSONValue], _ field: String) -> OrderedMap<JSONValue> {
        var map = OrderedMap<JSONValue>()
        for entry in entries where isObject(entry) {
            if let key = pythonKey(entry.member(field)) { map.set(key, text: "", entry) }
        }
        return map
    }

    /// The variations the reference's ProjectConfig appends to experiments of type "fr": for each flag (the
    /// last of a repeated key), once per entry of its "experimentIds", the first variation of its rollout's
    /// last rule, appended to the experiment its map by id holds for the entry (experiments, then rollout
    /// rules, then group experiments, the last definition of an id winning). By json-c object.
    func everyoneElseVariations(_ features: [JSONValue]) -> [OpaquePointer: [JSONValue]] {
        var winner: [String: JSONValue] = [:]
        for experiment in list(root.member("experiments")) where isObject(experiment) {
            if let key = pythonKey(experiment.member("id")) { winner[key] = experiment }
        }
        let rolloutById = lastBy(list(root.member("rollouts")), "id")
        for rollout in rolloutById.values {
            for rule in list(rollout.member("experiments")) where isObject(rule) {
                if let key = pythonKey(rule.member("id")) { winner[key] = rule }
            }
        }
        for group in lastBy(list(root.member("groups")), "id").values {
            let experiments = lastBy(list(group.member("experiments")), "id")
            for (key, experiment) in zip(experiments.keys, experiments.values) { winner[key] = experiment }
        }
        var appended: [OpaquePointer: [JSONValue]] = [:]
        for feature in lastBy(features, "key").values {
            guard truthy(feature.member("rolloutId")), let rolloutKey = pythonKey(feature.member("rolloutId")),
                  let rules = rolloutById[rolloutKey].map({ list($0.member("experiments")) }), let lastRule = rules.last,
                  let everyoneElse = list(lastRule.member("variations")).first, everyoneElse.kind != .null
            else { continue }
            for experimentId in list(feature.member("experimentIds")) {
                guard let key = pythonKey(experimentId), let experiment = winner[key], let object = experiment.object,
                      experiment.member("type")?.kind == .string, experiment.member("type")?.string == "fr"
                else { continue }
                appended[object, default: []].append(everyoneElse)
            }
        }
        return appended
    }

    // MARK: experiments

    /// Experiments (then group experiments) by key and by id, the last of a repeated one winning.
    func experiments() -> (OrderedMap<ConfigExperiment>, [String: ConfigExperiment]) {
        let all = list(root.member("experiments"))
            + list(root.member("groups")).flatMap { list($0.member("experiments")) }
        var byKey = OrderedMap<ConfigExperiment>()
        var byId: [String: ConfigExperiment] = [:]
        for experiment in all {
            let made = ConfigExperiment(id: raw(experiment.member("id")), key: raw(experiment.member("key")),
                                        audiences: JSONWriter.quoted(readable(audienceConditions(experiment))),
                                        variations: variations(of: experiment, featureId: nil),
                                        mapKey: pythonKey(experiment.member("key")),
                                        name: nameText(experiment.member("key")))
            if let key = pythonKey(experiment.member("key")) {
                byKey.set(key, text: nameText(experiment.member("key")), made)
            }
            if let id = pythonKey(experiment.member("id")) { byId[id] = made }
        }
        return (byKey, byId)
    }

    /// The reference's text reads "audienceConditions" only (no fallback to "audienceIds"; absent is none).
    func audienceConditions(_ experiment: JSONValue) -> JSONValue? {
        experiment.member("audienceConditions")
    }

    /// Variations by key (an "fr" experiment's with its flag's everyone-else variation appended).
    func variations(of experiment: JSONValue, featureId: JSONValue?) -> OrderedMap<ConfigVariation> {
        var made = OrderedMap<ConfigVariation>()
        let own = list(experiment.member("variations"))
        let extra = experiment.object.flatMap { appended[$0] } ?? []
        for variation in own {
            add(variation, of: experiment, featureId: featureId, everyoneElse: false, to: &made)
        }
        for variation in extra {
            add(variation, of: experiment, featureId: featureId, everyoneElse: true, to: &made)
        }
        return made
    }

    func add(_ variation: JSONValue, of experiment: JSONValue, featureId: JSONValue?, everyoneElse: Bool,
             to made: inout OrderedMap<ConfigVariation>)
    {
        let enabled = everyoneElse ? (truthy(variation.member("featureEnabled")) ? "true" : "false")
            : raw(variation.member("featureEnabled"))
        let made1 = ConfigVariation(id: raw(variation.member("id")), key: raw(variation.member("key")),
                              featureEnabled: enabled,
                              variables: variables(of: experiment, variation: variation, featureId: featureId))
        guard let key = pythonKey(variation.member("key")) else { return }
        made.set(key, text: nameText(variation.member("key")), made1)
    }

    /// A variation's variables as the reference's `_get_variables_map`: for a delivery rule (a flag id given)
    /// the defaults of the last flag of that id; for an experiment, those of the last flag listing it (by
    /// that flag's key), with the variation's values when it enables the feature.
    func variables(of experiment: JSONValue, variation: JSONValue, featureId: JSONValue?) -> OrderedMap<ConfigVariable> {
        let feature = pythonKey(experiment.member("id")).flatMap { featureOfExperiment[$0] }
        if feature == nil && featureId == nil { return OrderedMap() }
        if let featureId, truthy(featureId) {
            return pythonKey(featureId).flatMap { flagVariablesById[$0]?.byKey } ?? OrderedMap()
        }
        guard let feature, truthy(feature),
              let flagVariables = pythonKey(feature.member("key")).flatMap({ flagVariablesByKey[$0] })
        else { return OrderedMap() }
        var variables = flagVariables.byKey
        guard truthy(variation.member("featureEnabled")) else { return variables }
        for value in list(variation.member("variables")) {
            guard let id = pythonKey(value.member("id")), let target = flagVariables.keyOfId[id] else { continue }
            let text = raw(value.member("value"))
            variables.update(target.key) { $0.value = text }
        }
        return variables
    }

    // MARK: features

    mutating func writeFeatures(_ features: [JSONValue], experimentsById: [String: ConfigExperiment]) {
        let rollouts = list(root.member("rollouts")).filter(isObject)
        var made = OrderedMap<(rules: [ConfigExperiment], variables: OrderedMap<ConfigVariable>, delivery: [ConfigExperiment],
                               id: String, key: String)>()
        for feature in features {
            let rules = list(feature.member("experimentIds")).compactMap { pythonKey($0).flatMap { experimentsById[$0] } }
            let variables = pythonKey(feature.member("key")).flatMap { flagVariablesByKey[$0]?.byKey } ?? OrderedMap()
            var delivery: [ConfigExperiment] = []
            if let rollout = firstRollout(of: feature, in: rollouts) {
                for rule in list(rollout.member("experiments")) {
                    delivery.append(ConfigExperiment(id: raw(rule.member("id")), key: raw(rule.member("key")),
                                               audiences: JSONWriter.quoted(readable(audienceConditions(rule))),
                                               variations: variations(of: rule, featureId: feature.member("id"))))
                }
            }
            guard let key = pythonKey(feature.member("key")) else { continue }
            made.set(key, text: nameText(feature.member("key")),
                     (rules, variables, delivery, raw(feature.member("id")), raw(feature.member("key"))))
        }
        writer.key("features_map"); writer.beginObject()
        for (name, feature) in zip(made.texts, made.values) {
            writer.key(name); writer.beginObject()
            writer.key("id"); writer.raw(feature.id)
            writer.key("key"); writer.raw(feature.key)
            var rulesByKey = OrderedMap<ConfigExperiment>()
            for rule in feature.rules { if let key = rule.mapKey { rulesByKey.set(key, text: rule.name, rule) } }
            writer.key("experiments_map"); writeMap(rulesByKey) { $0.writeExperiment($1) }
            writer.key("variables_map"); writeMap(feature.variables) { $0.writeVariable($1) }
            writer.key("experiment_rules"); writer.beginArray(); feature.rules.forEach { writeExperiment($0) }; writer.endArray()
            writer.key("delivery_rules"); writer.beginArray(); feature.delivery.forEach { writeExperiment($0) }; writer.endArray()
            writer.endObject()
        }
        writer.endObject()
    }

    /// The rollout of a flag's delivery rules as the reference's OptimizelyConfig finds it: the first one
    /// whose id equals the flag's "rolloutId".
    func firstRollout(of feature: JSONValue, in rollouts: [JSONValue]) -> JSONValue? {
        let wanted = pythonKey(feature.member("rolloutId"))
        return rollouts.first { wanted != nil && pythonKey($0.member("id")) == wanted }
    }

    // MARK: writing

    mutating func writeMap<Value>(_ map: OrderedMap<Value>, _ body: (inout Builder, Value) -> Void) {
        writer.beginObject()
        for (name, value) in zip(map.texts, map.values) {
            writer.key(name)
            body(&self, value)
        }
        writer.endObject()
    }

    mutating func writeExperiment(_ experiment: ConfigExperiment) {
        writer.beginObject()
        writer.key("id"); writer.raw(experiment.id)
        writer.key("key"); writer.raw(experiment.key)
        writer.key("audiences"); writer.raw(experiment.audiences)
        writer.key("variations_map"); writeMap(experiment.variations) { (builder: inout Builder, variation: ConfigVariation) in
            builder.writeVariation(variation)
        }
        writer.endObject()
    }

    mutating func writeVariation(_ variation: ConfigVariation) {
        writer.beginObject()
        writer.key("id"); writer.raw(variation.id)
        writer.key("key"); writer.raw(variation.key)
        writer.key("feature_enabled"); writer.raw(variation.featureEnabled)
        writer.key("variables_map"); writeMap(variation.variables) { (builder: inout Builder, variable: ConfigVariable) in
            builder.writeVariable(variable)
        }
        writer.endObject()
    }

    mutating func writeVariable(_ variable: ConfigVariable) {
        writer.beginObject()
        writer.key("id"); writer.raw(variable.id)
        writer.key("key"); writer.raw(variable.key)
        writer.key("type"); writer.raw(variable.type)
        writer.key("value"); writer.raw(variable.value)
        writer.endObject()
    }
}
