import CExperimentABI
import ExperimentCore
import ExperimentRuntime
#if canImport(Glibc)
import Glibc
#endif

// The Sigma surface of the C ABI (include/experiment.h, section "Sigma"): user properties, typed flag
// values, the user's flags / experiments / holdouts and experiment handles.

// MARK: user properties

private func sigmaProperties(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?,
                             _ json: UnsafePointer<CChar>?, replace: Bool) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        try client.ensureOpen()
        let user = try string(userId, "user_id")
        let document = try parseJSON(try required(json, "properties_json"), what: "properties_json")
        guard document.root.kind == .object else {
            throw ClientError(.invalidArgument, "properties_json: expected a JSON object, got \(document.root.kindName)")
        }
        var properties: [(key: String, value: OwnedValue)] = []
        // Checked whole before anything is stored: a bad key leaves the user's properties as they were.
        for (key, value) in document.root.members {
            guard key.utf8.count <= maxKeyBytes else {
                throw ClientError(.tooLarge, "properties_json: key longer than \(maxKeyBytes) bytes")
            }
            let owned = try ownedValue(value, what: "properties_json.\(key)")
            if let problem = SigmaProperties.problem(key: key, kind: kind(of: owned)) {
                throw ClientError(.invalidArgument, "properties_json: \(problem)")
            }
            properties.append((key, owned))
        }
        client.applySigmaProperties(userId: user, properties, replace: replace)
    }
}

private func kind(of value: OwnedValue) -> SigmaProperties.ValueKind {
    switch value {
    case .null: return .null
    case .bool: return .bool
    case .int, .double, .bigInteger: return .number
    case .string: return .string
    case .unsupported: return .null
    }
}

@_cdecl("exp_set_user_properties")
public func abiSetUserProperties(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?,
                                 _ json: UnsafePointer<CChar>?) -> exp_status {
    sigmaProperties(handle, userId, json, replace: true)
}

@_cdecl("exp_edit_user_properties")
public func abiEditUserProperties(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?,
                                  _ json: UnsafePointer<CChar>?) -> exp_status {
    sigmaProperties(handle, userId, json, replace: false)
}

// MARK: typed flag values

/// Shared body of the exp_flag_* accessors: resolves the arguments, then hands a found value to `store`.
private func flagValue(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?, _ flagKey: UnsafePointer<CChar>?,
                       _ variableKey: UnsafePointer<CChar>?, _ attributes: UnsafePointer<exp_attribute>?,
                       _ attributeCount: Int, _ found: UnsafeMutablePointer<Int32>?, as wanted: SigmaValueType,
                       _ store: (SigmaValue) -> Void) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        let found = try required(found, "out_found")
        let user = try text(userId, "user_id")
        let config = try client.config()
        let key = try string(flagKey, "flag_key")
        guard let flag = config.flagIndex.find(key) else {
            throw ClientError(.unknownFlag, "unknown flag \"\(key)\" (the datafile has \(config.flags.count) flags)")
        }
        let variable = try optionalString(variableKey, "variable_key")
        let value = try withAttributes(attributes, attributeCount) { (attributes) throws(ClientError) in
            try client.flagValue(config: config, flag: flag, variableKey: variable, userId: user, attributes: attributes,
                                 as: wanted)
        }
        found.pointee = value == nil ? 0 : 1
        if let value { store(value) }
    }
}

private func storeBool(_ out: UnsafeMutablePointer<Int32>) -> (SigmaValue) -> Void {
    { if case .bool(let flag) = $0 { out.pointee = flag ? 1 : 0 } }
}

private func storeInt(_ out: UnsafeMutablePointer<Int64>) -> (SigmaValue) -> Void {
    { if case .int(let number) = $0 { out.pointee = number } }
}

private func storeDouble(_ out: UnsafeMutablePointer<Double>) -> (SigmaValue) -> Void {
    { if case .double(let number) = $0 { out.pointee = number } }
}

private func storeText(_ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> (SigmaValue) -> Void {
    { value in
        switch value {
        case .string(let text), .json(let text): out.pointee = duplicate(text)
        default: break
        }
    }
}

@_cdecl("exp_flag_bool")
public func abiFlagBool(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?, _ flagKey: UnsafePointer<CChar>?,
                        _ variableKey: UnsafePointer<CChar>?, _ attributes: UnsafePointer<exp_attribute>?,
                        _ attributeCount: Int, _ out: UnsafeMutablePointer<Int32>?,
                        _ found: UnsafeMutablePointer<Int32>?) -> exp_status {
    guard let out else { return api { () throws(ClientError) in throw ClientError(.invalidArgument, "out_value is NULL") } }
    return flagValue(handle, userId, flagKey, variableKey, attributes, attributeCount, found, as: .bool, storeBool(out))
}

@_cdecl("exp_flag_int")
public func abiFlagInt(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?, _ flagKey: UnsafePointer<CChar>?,
                       _ variableKey: UnsafePointer<CChar>?, _ attributes: UnsafePointer<exp_attribute>?,
                       _ attributeCount: Int, _ out: UnsafeMutablePointer<Int64>?,
                       _ found: UnsafeMutablePointer<Int32>?) -> exp_status {
    guard let out else { return api { () throws(ClientError) in throw ClientError(.invalidArgument, "out_value is NULL") } }
    return flagValue(handle, userId, flagKey, variableKey, attributes, attributeCount, found, as: .int, storeInt(out))
}

@_cdecl("exp_flag_double")
public func abiFlagDouble(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?, _ flagKey: UnsafePointer<CChar>?,
                          _ variableKey: UnsafePointer<CChar>?, _ attributes: UnsafePointer<exp_attribute>?,
                          _ attributeCount: Int, _ out: UnsafeMutablePointer<Double>?,
                          _ found: UnsafeMutablePointer<Int32>?) -> exp_status {
    guard let out else { return api { () throws(ClientError) in throw ClientError(.invalidArgument, "out_value is NULL") } }
    return flagValue(handle, userId, flagKey, variableKey, attributes, attributeCount, found, as: .double,
                     storeDouble(out))
}

@_cdecl("exp_flag_string")
public func abiFlagString(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?, _ flagKey: UnsafePointer<CChar>?,
                          _ variableKey: UnsafePointer<CChar>?, _ attributes: UnsafePointer<exp_attribute>?,
                          _ attributeCount: Int, _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                          _ found: UnsafeMutablePointer<Int32>?) -> exp_status {
    guard let out else { return api { () throws(ClientError) in throw ClientError(.invalidArgument, "out_value is NULL") } }
    out.pointee = nil
    return flagValue(handle, userId, flagKey, variableKey, attributes, attributeCount, found, as: .string,
                     storeText(out))
}

@_cdecl("exp_flag_json")
public func abiFlagJSON(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?, _ flagKey: UnsafePointer<CChar>?,
                        _ variableKey: UnsafePointer<CChar>?, _ attributes: UnsafePointer<exp_attribute>?,
                        _ attributeCount: Int, _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                        _ found: UnsafeMutablePointer<Int32>?) -> exp_status {
    guard let out else { return api { () throws(ClientError) in throw ClientError(.invalidArgument, "out_json is NULL") } }
    out.pointee = nil
    return flagValue(handle, userId, flagKey, variableKey, attributes, attributeCount, found, as: .json,
                     storeText(out))
}

// MARK: the user's flags, experiments and holdouts

/// Shared body of the calls that report on a user: resolves client, user, config and attributes.
private func userReport(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?,
                        _ attributes: UnsafePointer<exp_attribute>?, _ attributeCount: Int,
                        _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, outName: StaticString,
                        _ report: (Client, ProjectConfig, UTF8Text, CAttributes) throws(ClientError) -> String) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        let out = try required(out, outName)
        let user = try text(userId, "user_id")
        let config = try client.config()
        let text = try withAttributes(attributes, attributeCount) { (attributes) throws(ClientError) in
            try report(client, config, user, attributes)
        }
        out.pointee = duplicate(text)
    }
}

@_cdecl("exp_user_flags_json")
public func abiUserFlagsJSON(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?,
                             _ attributes: UnsafePointer<exp_attribute>?, _ attributeCount: Int,
                             _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> exp_status {
    userReport(handle, userId, attributes, attributeCount, out, outName: "out_json") { client, config, user, attributes in
        client.userFlagsJSON(config: config, userId: user, attributes: attributes)
    }
}

@_cdecl("exp_user_experiments")
public func abiUserExperiments(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?,
                               _ attributes: UnsafePointer<exp_attribute>?, _ attributeCount: Int,
                               _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> exp_status {
    userReport(handle, userId, attributes, attributeCount, out, outName: "out") { client, config, user, attributes in
        SigmaReport.experimentsString(client.userExperiments(config: config, userId: user, attributes: attributes),
                                      in: config)
    }
}

@_cdecl("exp_user_experiments_json")
public func abiUserExperimentsJSON(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?,
                                   _ attributes: UnsafePointer<exp_attribute>?, _ attributeCount: Int,
                                   _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> exp_status {
    userReport(handle, userId, attributes, attributeCount, out, outName: "out_json") { client, config, user, attributes in
        SigmaReport.experimentsJSON(client.userExperiments(config: config, userId: user, attributes: attributes),
                                    in: config)
    }
}

@_cdecl("exp_user_holdouts")
public func abiUserHoldouts(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?,
                            _ attributes: UnsafePointer<exp_attribute>?, _ attributeCount: Int,
                            _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> exp_status {
    userReport(handle, userId, attributes, attributeCount, out, outName: "out") { client, config, user, attributes in
        SigmaReport.holdoutsString(client.userHoldouts(config: config, userId: user, attributes: attributes), in: config)
    }
}

@_cdecl("exp_user_holdouts_json")
public func abiUserHoldoutsJSON(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?,
                                _ attributes: UnsafePointer<exp_attribute>?, _ attributeCount: Int,
                                _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> exp_status {
    userReport(handle, userId, attributes, attributeCount, out, outName: "out_json") { client, config, user, attributes in
        SigmaReport.holdoutsJSON(client.userHoldouts(config: config, userId: user, attributes: attributes), in: config)
    }
}

@_cdecl("exp_get_holdout")
public func abiGetHoldout(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?, _ holdoutKey: UnsafePointer<CChar>?,
                          _ attributes: UnsafePointer<exp_attribute>?, _ attributeCount: Int,
                          _ out: UnsafeMutablePointer<Int32>?) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        let out = try required(out, "out_in_holdout")
        let user = try text(userId, "user_id")
        let key = try string(holdoutKey, "holdout_key")
        let config = try client.config()
        guard let holdout = config.holdouts.firstIndex(where: { $0.key.text.sameCodePoints(key) }) else {
            throw ClientError(.notFound, "unknown holdout \"\(key)\" (the datafile has \(config.holdouts.count) holdouts)")
        }
        let held = try withAttributes(attributes, attributeCount) { (attributes) throws(ClientError) in
            client.isInHoldout(config: config, holdout: holdout, userId: user, attributes: attributes)
        }
        out.pointee = held ? 1 : 0
    }
}

// MARK: experiment handles

/// The experiment with key `key` (not a delivery rule), or UNKNOWN_EXPERIMENT.
private func experimentIndex(_ key: String, in config: ProjectConfig) throws(ClientError) -> Int {
    guard let index = config.experimentKeyIndex.find(key), config.experiments[index].kind == .experiment else {
        throw ClientError(.unknownExperiment, "unknown experiment \"\(key)\" (delivery rules of rollouts are not experiments)")
    }
    return index
}

private func userExperiment(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?,
                            _ experimentKey: UnsafePointer<CChar>?, _ attributes: UnsafePointer<exp_attribute>?,
                            _ attributeCount: Int) throws(ClientError) -> UserExperiment? {
    let client = try client(handle)
    let user = try text(userId, "user_id")
    let key = try string(experimentKey, "experiment_key")
    let config = try client.config()
    let index = try experimentIndex(key, in: config)
    return try withAttributes(attributes, attributeCount) { (attributes) throws(ClientError) in
        client.userExperiment(config: config, experiment: index, userId: user, attributes: attributes)
    }
}

/// What an exp_experiment handle points at: the experiment and C copies of its strings.
final class ExperimentHandle {
    let experiment: UserExperiment
    let id, key, variationId, variationKey, parameters: UnsafeMutablePointer<CChar>

    init(_ experiment: UserExperiment) {
        self.experiment = experiment
        id = duplicate(experiment.entity.id.text)
        key = duplicate(experiment.entity.key.text)
        variationId = duplicate(experiment.chosen.id.text)
        variationKey = duplicate(experiment.chosen.key.text)
        parameters = duplicate(experiment.parametersJSON)
    }

    deinit { for text in [id, key, variationId, variationKey, parameters] { free(text) } }
}

private func handleObject(_ pointer: OpaquePointer?) -> ExperimentHandle? {
    pointer.map { Unmanaged<ExperimentHandle>.fromOpaque(UnsafeRawPointer($0)).takeUnretainedValue() }
}

@_cdecl("exp_get_experiment")
public func abiGetExperiment(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?,
                             _ experimentKey: UnsafePointer<CChar>?, _ attributes: UnsafePointer<exp_attribute>?,
                             _ attributeCount: Int, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> exp_status {
    api { () throws(ClientError) in
        let out = try required(out, "out_experiment")
        out.pointee = nil
        guard let found = try userExperiment(handle, userId, experimentKey, attributes, attributeCount) else { return }
        out.pointee = OpaquePointer(Unmanaged.passRetained(ExperimentHandle(found)).toOpaque())
    }
}

@_cdecl("exp_get_experiment_json")
public func abiGetExperimentJSON(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?,
                                 _ experimentKey: UnsafePointer<CChar>?, _ attributes: UnsafePointer<exp_attribute>?,
                                 _ attributeCount: Int,
                                 _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> exp_status {
    api { () throws(ClientError) in
        let out = try required(out, "out_json")
        let found = try userExperiment(handle, userId, experimentKey, attributes, attributeCount)
        out.pointee = duplicate(SigmaReport.experimentJSON(found))
    }
}

@_cdecl("exp_experiment_free")
public func abiExperimentFree(_ pointer: OpaquePointer?) {
    guard let pointer else { return }
    Unmanaged<ExperimentHandle>.fromOpaque(UnsafeRawPointer(pointer)).release()
}

@_cdecl("exp_experiment_id")
public func abiExperimentId(_ pointer: OpaquePointer?) -> UnsafePointer<CChar>? {
    handleObject(pointer).map { UnsafePointer($0.id) }
}

@_cdecl("exp_experiment_key")
public func abiExperimentKey(_ pointer: OpaquePointer?) -> UnsafePointer<CChar>? {
    handleObject(pointer).map { UnsafePointer($0.key) }
}

@_cdecl("exp_experiment_variation_id")
public func abiExperimentVariationId(_ pointer: OpaquePointer?) -> UnsafePointer<CChar>? {
    handleObject(pointer).map { UnsafePointer($0.variationId) }
}

@_cdecl("exp_experiment_variation_key")
public func abiExperimentVariationKey(_ pointer: OpaquePointer?) -> UnsafePointer<CChar>? {
    handleObject(pointer).map { UnsafePointer($0.variationKey) }
}

@_cdecl("exp_experiment_parameters_json")
public func abiExperimentParametersJSON(_ pointer: OpaquePointer?) -> UnsafePointer<CChar>? {
    handleObject(pointer).map { UnsafePointer($0.parameters) }
}

@_cdecl("exp_experiment_group_index")
public func abiExperimentGroupIndex(_ pointer: OpaquePointer?) -> Int32 {
    handleObject(pointer).map { Int32($0.experiment.variation) } ?? -1
}

/// Shared body of the exp_experiment_param_* getters.
private func parameter(_ pointer: OpaquePointer?, _ name: UnsafePointer<CChar>?, _ found: UnsafeMutablePointer<Int32>?,
                       as wanted: SigmaValueType, _ store: (SigmaValue) -> Void) -> exp_status {
    api { () throws(ClientError) in
        guard let object = handleObject(pointer) else { throw ClientError(.invalidArgument, "experiment is NULL") }
        let found = try required(found, "out_found")
        let value = try object.experiment.parameter(try string(name, "name"), as: wanted)
        found.pointee = value == nil ? 0 : 1
        if let value { store(value) }
    }
}

@_cdecl("exp_experiment_param_bool")
public func abiExperimentParamBool(_ pointer: OpaquePointer?, _ name: UnsafePointer<CChar>?,
                                   _ out: UnsafeMutablePointer<Int32>?, _ found: UnsafeMutablePointer<Int32>?) -> exp_status {
    guard let out else { return api { () throws(ClientError) in throw ClientError(.invalidArgument, "out_value is NULL") } }
    return parameter(pointer, name, found, as: .bool, storeBool(out))
}

@_cdecl("exp_experiment_param_int")
public func abiExperimentParamInt(_ pointer: OpaquePointer?, _ name: UnsafePointer<CChar>?,
                                  _ out: UnsafeMutablePointer<Int64>?, _ found: UnsafeMutablePointer<Int32>?) -> exp_status {
    guard let out else { return api { () throws(ClientError) in throw ClientError(.invalidArgument, "out_value is NULL") } }
    return parameter(pointer, name, found, as: .int, storeInt(out))
}

@_cdecl("exp_experiment_param_double")
public func abiExperimentParamDouble(_ pointer: OpaquePointer?, _ name: UnsafePointer<CChar>?,
                                     _ out: UnsafeMutablePointer<Double>?, _ found: UnsafeMutablePointer<Int32>?) -> exp_status {
    guard let out else { return api { () throws(ClientError) in throw ClientError(.invalidArgument, "out_value is NULL") } }
    return parameter(pointer, name, found, as: .double, storeDouble(out))
}

@_cdecl("exp_experiment_param_string")
public func abiExperimentParamString(_ pointer: OpaquePointer?, _ name: UnsafePointer<CChar>?,
                                     _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                                     _ found: UnsafeMutablePointer<Int32>?) -> exp_status {
    guard let out else { return api { () throws(ClientError) in throw ClientError(.invalidArgument, "out_value is NULL") } }
    out.pointee = nil
    return parameter(pointer, name, found, as: .string, storeText(out))
}

@_cdecl("exp_experiment_param_json")
public func abiExperimentParamJSON(_ pointer: OpaquePointer?, _ name: UnsafePointer<CChar>?,
                                   _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                                   _ found: UnsafeMutablePointer<Int32>?) -> exp_status {
    guard let out else { return api { () throws(ClientError) in throw ClientError(.invalidArgument, "out_json is NULL") } }
    out.pointee = nil
    return parameter(pointer, name, found, as: .json, storeText(out))
}

/// Shared body of the exp_experiment_flag_* getters (Sigma SigmaExperiment.getFeatureFlagValue).
private func experimentFlag(_ pointer: OpaquePointer?, _ flagKey: UnsafePointer<CChar>?,
                            _ variableKey: UnsafePointer<CChar>?, _ found: UnsafeMutablePointer<Int32>?,
                            as wanted: SigmaValueType, _ store: (SigmaValue) -> Void) -> exp_status {
    api { () throws(ClientError) in
        guard let object = handleObject(pointer) else { throw ClientError(.invalidArgument, "experiment is NULL") }
        let found = try required(found, "out_found")
        let value = try object.experiment.flagValue(flagKey: try string(flagKey, "flag_key"),
                                                    variableKey: try optionalString(variableKey, "variable_key"),
                                                    as: wanted)
        found.pointee = value == nil ? 0 : 1
        if let value { store(value) }
    }
}

@_cdecl("exp_experiment_flag_bool")
public func abiExperimentFlagBool(_ pointer: OpaquePointer?, _ flagKey: UnsafePointer<CChar>?,
                                  _ variableKey: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<Int32>?,
                                  _ found: UnsafeMutablePointer<Int32>?) -> exp_status {
    guard let out else { return api { () throws(ClientError) in throw ClientError(.invalidArgument, "out_value is NULL") } }
    return experimentFlag(pointer, flagKey, variableKey, found, as: .bool, storeBool(out))
}

@_cdecl("exp_experiment_flag_int")
public func abiExperimentFlagInt(_ pointer: OpaquePointer?, _ flagKey: UnsafePointer<CChar>?,
                                 _ variableKey: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<Int64>?,
                                 _ found: UnsafeMutablePointer<Int32>?) -> exp_status {
    guard let out else { return api { () throws(ClientError) in throw ClientError(.invalidArgument, "out_value is NULL") } }
    return experimentFlag(pointer, flagKey, variableKey, found, as: .int, storeInt(out))
}

@_cdecl("exp_experiment_flag_double")
public func abiExperimentFlagDouble(_ pointer: OpaquePointer?, _ flagKey: UnsafePointer<CChar>?,
                                    _ variableKey: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<Double>?,
                                    _ found: UnsafeMutablePointer<Int32>?) -> exp_status {
    guard let out else { return api { () throws(ClientError) in throw ClientError(.invalidArgument, "out_value is NULL") } }
    return experimentFlag(pointer, flagKey, variableKey, found, as: .double, storeDouble(out))
}

@_cdecl("exp_experiment_flag_string")
public func abiExperimentFlagString(_ pointer: OpaquePointer?, _ flagKey: UnsafePointer<CChar>?,
                                    _ variableKey: UnsafePointer<CChar>?,
                                    _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                                    _ found: UnsafeMutablePointer<Int32>?) -> exp_status {
    guard let out else { return api { () throws(ClientError) in throw ClientError(.invalidArgument, "out_value is NULL") } }
    out.pointee = nil
    return experimentFlag(pointer, flagKey, variableKey, found, as: .string, storeText(out))
}

@_cdecl("exp_experiment_flag_json")
public func abiExperimentFlagJSON(_ pointer: OpaquePointer?, _ flagKey: UnsafePointer<CChar>?,
                                  _ variableKey: UnsafePointer<CChar>?,
                                  _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                                  _ found: UnsafeMutablePointer<Int32>?) -> exp_status {
    guard let out else { return api { () throws(ClientError) in throw ClientError(.invalidArgument, "out_json is NULL") } }
    out.pointee = nil
    return experimentFlag(pointer, flagKey, variableKey, found, as: .json, storeText(out))
}
