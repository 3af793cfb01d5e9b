/// The datafile compiler's reading of feature flags, their variables and the variation values each rule serves (see
/// `DatafileCompiler`).
extension Compilation {
    mutating func readFlags() throws(DatafileError) -> [Flag] {
        // No reader is kept: a streamed flag's tree is freed when the loop moves on.
        struct FlagSource { let id: String; let key: String; let variables: [Variable]
                            let experimentRules: [Int32]; let rolloutRules: [Int32]; let rollout: FlagRollout }
        var sources: [FlagSource] = []
        var usedRolloutIds: ExactKeyed<Bool> = [:]
        var keylessFlags = Set<Int>()
        // The reference appends everyone-else variations for the flags of its map by key only (the last flag
        // of a repeated key, at the first one's place): see `appendEveryoneElse`.
        var everyoneElseOrder: [String] = []
        var everyoneElseSources: ExactKeyed<(experimentRules: [Int32], writtenRolloutRules: [Int32])> = [:]
        for entry in try section("featureFlags") {
            do throws(DatafileError) {
                let variables = try readVariables(flagVariableEntries(entry.required("variables")))
                var experimentRules: [Int32] = []
                for (id, idField) in try flagExperimentIds(entry.required("experimentIds")) {
                    guard let index = experimentIndexById[id] else { throw idField.fail("unknown experiment \"\(id)\"") }
                    experimentRules.append(Int32(index))
                }
                let rolloutField = try entry.required("rolloutId")
                let rolloutId = try flagRolloutId(rolloutField)
                usedRolloutIds[rolloutId] = true
                var rolloutRules: [Int32] = []
                if !rolloutId.isEmpty {
                    guard let rules = rolloutRulesById[rolloutId] else { throw rolloutField.fail("unknown rollout \"\(rolloutId)\" (no such id in \"rollouts\")") }
                    rolloutRules = rules
                }
                let id = try entry.required("id").lenientText("only reported (OptimizelyConfig)", warn: { warn($0) })
                let keyField = try entry.required("key")
                let key = keyField.value.string != nil ? try entry.requiredKey()
                    : try keyField.lenientText("no caller can name the flag; decide_all decides it under Python's str() "
                                               + "of it here (the reference: under the value)", warn: { warn($0) })
                if keyField.value.string == nil { keylessFlags.insert(sources.count) }
                sources.append(FlagSource(id: id, key: key,
                                          variables: variables, experimentRules: experimentRules, rolloutRules: rolloutRules,
                                          rollout: rolloutId.isEmpty ? .none
                                              : rolloutRulesById[rolloutId] == nil ? .missing : .found(id: rolloutId)))
                let identity = keyField.value.identityKey
                if everyoneElseSources[identity] == nil { everyoneElseOrder.append(identity) }
                everyoneElseSources[identity] = (experimentRules,
                                                 rolloutId.isEmpty ? [] : writtenRolloutRules[rolloutId] ?? [])
            } catch {
                try record(error)
            }
        }
        for identity in everyoneElseOrder {
            let source = everyoneElseSources[identity]!
            appendEveryoneElse(toFeatureRolloutsOf: source.experimentRules, writtenRolloutRules: source.writtenRolloutRules)
        }
        try resolveRolloutConditions(usedRolloutIds: usedRolloutIds)
        let usages = variableUsagesByVariationId()
        var flags: [Flag] = []
        flags.reserveCapacity(sources.count)
        indexes.flags = KeyIndex(capacity: sources.count)
        for (position, source) in sources.enumerated() {
            let flag = try compileFlag(id: source.id, key: source.key, variables: source.variables,
                                       experimentRules: source.experimentRules, rolloutRules: source.rolloutRules,
                                       rollout: source.rollout, usages: usages)
            if !keylessFlags.contains(position) { indexes.flags.insert(source.key, flags.count, replacing: true) }
            flags.append(flag)
        }
        return flags
    }

    /// A flag's "variables" (outside the reference's schema): the reference iterates whatever is there, so an
    /// empty object or string holds no variable, as an empty list does (a non-empty one gives it names or
    /// characters where it wants objects, and its config construction raises: refused, as is any other type).
    mutating func flagVariableEntries(_ field: DatafileReader) throws(DatafileError) -> DatafileElements {
        let empty = (field.value.kind == .object && field.value.count == 0)
            || (field.value.kind == .string && field.value.stringBytes?.isEmpty == true)
        guard empty else { return try field.array() }
        warn(field.warning("expected an array, got an empty \(field.value.kind == .object ? "object" : "string"): no "
                           + "variables, as the reference iterates it"))
        return .none
    }

    /// A flag's "experimentIds" (outside the reference's schema) with the reader each id's messages name.
    /// The reference iterates whatever is there: a string character by character, an object by its names, so
    /// those are lists of ids too ("" and {} none); an id that names no experiment makes its config
    /// construction raise, as an unknown id in a list does.
    mutating func flagExperimentIds(_ field: DatafileReader) throws(DatafileError) -> [(String, DatafileReader)] {
        var ids: [(String, DatafileReader)] = []
        switch field.value.kind {
        case .string:
            warn(field.warning("expected a list of experiment ids, got a string: each of its characters is an "
                               + "experiment id, as the reference iterates it"))
            ids = field.value.string!.unicodeScalars.map { (String($0), field) }
        case .object:
            warn(field.warning("expected a list of experiment ids, got an object: each of its names is an experiment "
                               + "id, as the reference iterates it"))
            field.value.forEachMember { name, _ in ids.append((String(cString: name), field)) }
        default:
            for idField in try field.array() { ids.append((try idField.string(), idField)) }
        }
        return ids
    }

    /// A flag's "rolloutId", outside the schema: the reference takes `len()` of it, so an empty list or
    /// object is no rollout; a number, boolean or null (no len()) or a non-empty list or object (which it
    /// cannot hash) makes its config construction raise.
    mutating func flagRolloutId(_ field: DatafileReader) throws(DatafileError) -> String {
        if let id = field.value.string { return id }
        if (field.value.kind == .array || field.value.kind == .object) && field.value.count == 0 {
            warn(field.warning("expected a string, got an empty \(field.value.kind == .array ? "array" : "object"): "
                               + "no rollout, as in the reference"))
            return ""
        }
        throw field.fail("expected a rollout id (a string), got \(field.value.kindName): the reference "
                         + (field.value.isHashable ? "takes its len()" : "cannot hash it") + " (its config construction raises)")
    }

    /// A flag's variables, outside the schema: a "type" or "subType" that is no string is just not one the
    /// reference compares it with (the values stay strings); an id or key that is no string keys its maps
    /// as it is (a list or object cannot: refused).
    mutating func readVariables(_ entries: DatafileElements) throws(DatafileError) -> [Variable] {
        var variables: [Variable] = []
        for entry in entries {
            let typeField = try entry.required("type")
            let typeName = typeField.comparedText("no known type: its values are strings", warn: { warn($0) })
                ?? typeField.value.pythonText
            let subType = entry.optional("subType")?.comparedText("not \"json\"", warn: { warn($0) })
            let resolved = typeName == "string" && subType == "json" ? "json" : typeName
            // The reference's typecast hands a value of any other type back as the string it is.
            var type = VariableType.string
            if let known = VariableType(rawValue: resolved) {
                type = known
            } else {
                warn(typeField.warning("unknown variable type \"\(typeName)\" (boolean, integer, double, string, "
                                       + "json): its values are strings, as in the reference"))
            }
            let defaultField = try entry.required("defaultValue")
            var literal: VariableLiteral? = nil
            if defaultField.value.string == nil {
                warn(defaultField.warning("expected a string, got \(defaultField.value.kindName): typecast as it is, "
                                          + "as in the reference"))
                literal = VariableLiteral(defaultField.value)
            }
            let idField = try entry.required("id")
            _ = try idField.lenientText("it matches only an equal variable id in a variation (Python's ==)",
                                        warn: { warn($0) })
            let key = try entry.required("key").lenientText("the decision's variables name it by Python's str() of it "
                                                            + "here (the reference: by the value)", warn: { warn($0) })
            variables.append(Variable(id: idField.value.identityKey, key: key,
                                      type: type, defaultValue: defaultField.value.string ?? "", defaultLiteral: literal))
        }
        return variables
    }

    /// A flag's "fr" (feature rollout) experiments also serve the everyone-else variation to users
    /// outside their traffic: the reference appends it with a range ending at 10000. It is the first
    /// variation as written of the rollout's last rule as written (no map by id or key in between).
    mutating func appendEveryoneElse(toFeatureRolloutsOf experimentRules: [Int32], writtenRolloutRules: [Int32]) {
        guard let last = writtenRolloutRules.last, let everyoneElse = firstWrittenVariations[Int(last)] else { return }
        for rule in experimentRules where experiments[Int(rule)].type == "fr" {
            let experiment = experiments[Int(rule)]
            experiments[Int(rule)] = experiment.with(
                variations: experiment.variations + [everyoneElse],
                traffic: experiment.traffic + [TrafficRange(endOfRange: 10_000, entity: Int32(experiment.variations.count))])
        }
    }

    /// The reference keeps one variable-usage table keyed by variation id; later definitions win.
    func variableUsagesByVariationId() -> ExactKeyed<[VariableValue]> {
        var usages: ExactKeyed<[VariableValue]> = [:]
        usages.reserveCapacity(experimentIdOrder.reduce(0) { $0 + experiments[experimentIndexById[$1]!].variations.count })
        for id in experimentIdOrder {
            for variation in experiments[experimentIndexById[id]!].variations {
                usages[variation.id.text] = variation.variableValues
            }
        }
        return usages
    }

    mutating func compileFlag(id: String, key: String, variables: [Variable], experimentRules: [Int32],
                              rolloutRules: [Int32], rollout: FlagRollout, usages: ExactKeyed<[VariableValue]>)
        throws(DatafileError) -> Flag
    {
        var variableIds: ExactKeyed<Bool> = [:]
        for variable in variables { variableIds[variable.id] = true }
        // Each variable's default as JSON, once per flag: most variations override few variables, if any.
        let defaults = variables.map {
            $0.defaultLiteral?.json(as: $0.type) ?? VariableValues.json($0.defaultValue, as: $0.type, tokener: nestedJSONTokener)
        }
        var writer = JSONWriter()
        var flagVariations: [FlagVariation] = []
        var rules: [FlagRule] = []
        rules.reserveCapacity(experimentRules.count + rolloutRules.count)
        for ruleIndex in [experimentRules, rolloutRules].joined() {
            let experiment = experiments[Int(ruleIndex)]
            var flagVariationOf: [Int32] = []
            flagVariationOf.reserveCapacity(experiment.variations.count)
            for (position, variation) in experiment.variations.enumerated() {
                // The reference looks values up by the flag's variable ids: any other usage is never read.
                for usage in variation.variableValues where variableIds[usage.id] == nil {
                    let place = "experiment \"\(experiment.key.text)\" variation \"\(variation.key.text)\" (variations[\(position)])"
                    warn(DatafileError(.invalidDatafile, "datafile: \(place): variable id \"\(usage.id)\" is not a "
                        + "variable of flag \"\(key)\": its value is ignored, as in the reference", severity: .warning,
                        place: place))
                }
                if let existing = flagVariations.firstIndex(where: { $0.id.sameCodePoints(variation.id.text) }) {
                    flagVariationOf.append(Int32(existing))
                    continue
                }
                // The reference collects a rule's variations from its map by id: a repeated id stands at
                // its first place with its last definition.
                let definition = experiment.variations[experiment.variationIndex(id: variation.id.text) ?? position]
                let json = storeVariablesJSON(variables, defaults: defaults, overrides: usages[definition.id.text] ?? [],
                                              writer: &writer)
                flagVariations.append(FlagVariation(id: definition.id.text, key: definition.key,
                                                    featureEnabled: definition.featureEnabled, variablesJSON: json))
                flagVariationOf.append(Int32(flagVariations.count - 1))
            }
            rules.append(FlagRule(experiment: ruleIndex, holdouts: holdoutsByRuleId[experimentIdentities[Int(ruleIndex)]] ?? [],
                                  flagVariationOf: flagVariationOf))
        }
        return Flag(id: id, key: ConfigString(key, in: strings), rules: rules, experimentRuleCount: experimentRules.count,
                    rollout: rollout, variables: variables, flagVariations: flagVariations,
                    defaultVariablesJSON: storeVariablesJSON(variables, defaults: defaults, overrides: [], writer: &writer),
                    holdoutVariablesJSON: strings.store(holdoutVariablesJSON(variables)),
                    holdoutVariablesJSONBySharedId: holdoutVariablesJSONBySharedId(variables, defaults: defaults,
                                                                                  usages: usages, writer: &writer))
    }

    /// The variables JSON of each holdout variation whose id is also an experiment's or rule's variation id:
    /// the reference reads a holdout variation's values from its table by variation id like any other's,
    /// so such a holdout variation gets that variation's values (a holdout variation's own are never read).
    /// An id Python reads as false finds nothing there (the reference tests the id's truth first).
    func holdoutVariablesJSONBySharedId(_ variables: [Variable], defaults: [String], usages: ExactKeyed<[VariableValue]>,
                                        writer: inout JSONWriter) -> [(id: String, json: UnsafePointer<CChar>)] {
        var shared: [(id: String, json: UnsafePointer<CChar>)] = []
        for holdout in holdouts {
            for variation in holdout.variations {
                let id = variation.id.text
                guard IdentityKey.isTruthy(id), let overrides = usages[id], !shared.contains(where: { $0.id.sameCodePoints(id) })
                else { continue }
                shared.append((id, storeVariablesJSON(variables, defaults: defaults, overrides: overrides, writer: &writer)))
            }
        }
        return shared
    }

    /// What the reference's typecasts make of a missing value: `None == "true"` for a boolean, an
    /// exception (so null) for numbers and JSON, null itself for strings.
    func holdoutVariablesJSON(_ variables: [Variable]) -> String {
        var writer = JSONWriter()
        writer.beginObject()
        for variable in variables {
            writer.key(variable.key)
            writer.raw(variable.type == .boolean ? "false" : "null")
        }
        writer.endObject()
        return writer.text
    }

    /// The variables object of one variation, stored in the config: `defaults` (each variable's default as
    /// JSON) where the variation does not override the variable. `writer` is reused across variations.
    func storeVariablesJSON(_ variables: [Variable], defaults: [String], overrides: [VariableValue],
                            writer: inout JSONWriter) -> UnsafePointer<CChar>
    {
        writer.reset()
        writer.beginObject()
        for (index, variable) in variables.enumerated() {
            writer.key(variable.key)
            if let usage = overrides.last(where: { $0.id.sameCodePoints(variable.id) }) {
                writer.raw(usage.literal?.json(as: variable.type)
                           ?? VariableValues.json(usage.value, as: variable.type, tokener: nestedJSONTokener))
            } else {
                writer.raw(defaults[index])
            }
        }
        writer.endObject()
        return writer.bytes.withUnsafeBufferPointer { strings.store(bytes: $0) }
    }
}
