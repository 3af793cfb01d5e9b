import CExperimentABI
import ExperimentCore
import ExperimentRuntime
#if canImport(Glibc)
import Glibc
#endif

/// The index of the experiment named `key` (already validated) in `config`, or UNKNOWN_EXPERIMENT.
private func experimentIndex(key: UTF8Text, in config: ProjectConfig) throws(ClientError) -> Int {
    guard let index = config.experimentKeyIndex.find(key) else {
        throw ClientError(.unknownExperiment, "unknown experiment \"\(String(decoding: key, as: UTF8.self))\"")
    }
    return index
}

private func experimentIndex(key: UnsafePointer<CChar>?, in config: ProjectConfig) throws(ClientError) -> Int {
    try experimentIndex(key: text(key, "experiment_key"), in: config)
}

/// get_variation and activate (and their _n forms) share everything but the impression.
private func variationKey<Input: AttributeInput>(_ handle: OpaquePointer?, _ experimentKey: () throws(ClientError) -> UTF8Text,
                                                 _ userId: () throws(ClientError) -> UTF8Text, _ attributes: Input,
                                                 _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                                                 length: UnsafeMutablePointer<Int>? = nil,
                                                 activate: Bool) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        let out = try required(out, "out_variation_key")
        length?.pointee = 0
        let user = try userId()
        let key = try experimentKey()
        let config = try client.config()
        let experiment = try experimentIndex(key: key, in: config)
        let outcome = try attributes.with { (attributes) throws(ClientError) in
            client.experimentOutcome(config: config, experiment: experiment, userId: user, attributes: attributes,
                                     call: activate ? .activate : .getVariation)
        }
        // activate gives no variation where it activates nobody (a variation whose key is "").
        if case .variation(let variation) = outcome,
           !activate || ExperimentCall.activate.sendsImpression(variationKey: config.experiments[experiment].variations[Int(variation)].key.text) {
            store(config.experiments[experiment].variations[Int(variation)].key.text, out, length: length)
        } else {
            store(nil, out, length: length)
        }
    }
}

private func variationKey(_ handle: OpaquePointer?, _ experimentKey: UnsafePointer<CChar>?, _ userId: UnsafePointer<CChar>?,
                          _ attributes: UnsafePointer<exp_attribute>?, _ attributeCount: Int,
                          _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, activate: Bool) -> exp_status {
    variationKey(handle, { () throws(ClientError) in try text(experimentKey, "experiment_key") },
                 { () throws(ClientError) in try text(userId, "user_id") },
                 PlainAttributeInput(pointer: attributes, count: attributeCount), out, activate: activate)
}

private func variationKeyN(_ handle: OpaquePointer?, _ experimentKey: UnsafePointer<CChar>?, _ experimentKeyLength: Int,
                           _ userId: UnsafePointer<CChar>?, _ userIdLength: Int,
                           _ attributes: UnsafePointer<exp_attribute_n>?, _ attributeCount: Int,
                           _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                           length: UnsafeMutablePointer<Int>? = nil, activate: Bool) -> exp_status {
    variationKey(handle, { () throws(ClientError) in try sizedText(experimentKey, experimentKeyLength, "experiment_key") },
                 { () throws(ClientError) in try sizedText(userId, userIdLength, "user_id") },
                 SizedAttributeInput(pointer: attributes, count: attributeCount), out, length: length,
                 activate: activate)
}

@_cdecl("exp_get_variation")
public func abiGetVariation(_ handle: OpaquePointer?, _ experimentKey: UnsafePointer<CChar>?, _ userId: UnsafePointer<CChar>?,
                            _ attributes: UnsafePointer<exp_attribute>?, _ attributeCount: Int,
                            _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> exp_status {
    variationKey(handle, experimentKey, userId, attributes, attributeCount, out, activate: false)
}

@_cdecl("exp_activate")
public func abiActivate(_ handle: OpaquePointer?, _ experimentKey: UnsafePointer<CChar>?, _ userId: UnsafePointer<CChar>?,
                        _ attributes: UnsafePointer<exp_attribute>?, _ attributeCount: Int,
                        _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> exp_status {
    variationKey(handle, experimentKey, userId, attributes, attributeCount, out, activate: true)
}

@_cdecl("exp_get_variation_n")
public func abiGetVariationN(_ handle: OpaquePointer?, _ experimentKey: UnsafePointer<CChar>?, _ experimentKeyLength: Int,
                             _ userId: UnsafePointer<CChar>?, _ userIdLength: Int,
                             _ attributes: UnsafePointer<exp_attribute_n>?, _ attributeCount: Int,
                             _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> exp_status {
    variationKeyN(handle, experimentKey, experimentKeyLength, userId, userIdLength, attributes, attributeCount, out,
                  activate: false)
}

@_cdecl("exp_activate_n")
public func abiActivateN(_ handle: OpaquePointer?, _ experimentKey: UnsafePointer<CChar>?, _ experimentKeyLength: Int,
                         _ userId: UnsafePointer<CChar>?, _ userIdLength: Int,
                         _ attributes: UnsafePointer<exp_attribute_n>?, _ attributeCount: Int,
                         _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> exp_status {
    variationKeyN(handle, experimentKey, experimentKeyLength, userId, userIdLength, attributes, attributeCount, out,
                  activate: true)
}

@_cdecl("exp_get_variation_len")
public func abiGetVariationLen(_ handle: OpaquePointer?, _ experimentKey: UnsafePointer<CChar>?,
                               _ experimentKeyLength: Int, _ userId: UnsafePointer<CChar>?, _ userIdLength: Int,
                               _ attributes: UnsafePointer<exp_attribute_n>?, _ attributeCount: Int,
                               _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                               _ outLength: UnsafeMutablePointer<Int>?) -> exp_status {
    variationKeyN(handle, experimentKey, experimentKeyLength, userId, userIdLength, attributes, attributeCount, out,
                  length: outLength, activate: false)
}

@_cdecl("exp_activate_len")
public func abiActivateLen(_ handle: OpaquePointer?, _ experimentKey: UnsafePointer<CChar>?, _ experimentKeyLength: Int,
                           _ userId: UnsafePointer<CChar>?, _ userIdLength: Int,
                           _ attributes: UnsafePointer<exp_attribute_n>?, _ attributeCount: Int,
                           _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                           _ outLength: UnsafeMutablePointer<Int>?) -> exp_status {
    variationKeyN(handle, experimentKey, experimentKeyLength, userId, userIdLength, attributes, attributeCount, out,
                  length: outLength, activate: true)
}

@_cdecl("exp_trigger_experiment")
public func abiTriggerExperiment(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?,
                                 _ experimentId: UnsafePointer<CChar>?, _ attributes: UnsafePointer<exp_attribute>?,
                                 _ attributeCount: Int,
                                 _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        let out = try required(out, "out_variation_id")
        let user = try text(userId, "user_id")
        let id = try string(experimentId, "experiment_id")
        let config = try client.config()
        let variationId = try withAttributes(attributes, attributeCount) { (attributes) throws(ClientError) in
            try client.triggerExperiment(config: config, experimentId: id, userId: user, attributes: attributes)
        }
        out.pointee = duplicate(variationId)
    }
}

/// Forces `user` into the variation of `experiment` named `variationName` (nil removes the forcing).
private func forceVariation(_ client: Client, experiment: Experiment, user: String, variationName: String?)
    throws(ClientError)
{
    var variationId: String? = nil
    if let variationName {
        guard let index = experiment.variationIndex(key: variationName) else {
            throw ClientError(.unknownVariation, "experiment \"\(experiment.key.text)\" has no variation \"\(variationName)\"")
        }
        variationId = experiment.variations[index].id.text
    }
    client.overrides.setForcedVariation(userId: user, experimentId: experiment.id.text, variationId: variationId)
}

@_cdecl("exp_set_forced_variation")
public func abiSetForcedVariation(_ handle: OpaquePointer?, _ experimentKey: UnsafePointer<CChar>?,
                                  _ userId: UnsafePointer<CChar>?, _ variationKey: UnsafePointer<CChar>?) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        let user = try string(userId, "user_id")
        let variationName = try optionalString(variationKey, "variation_key")
        let config = try client.config()
        let experiment = config.experiments[try experimentIndex(key: experimentKey, in: config)]
        try forceVariation(client, experiment: experiment, user: user, variationName: variationName)
    }
}

/// exp_set_forced_variation with each string given with its byte length (NUL allowed; `variation_key` NULL
/// removes the forced variation).
@_cdecl("exp_set_forced_variation_n")
public func abiSetForcedVariationN(_ handle: OpaquePointer?, _ experimentKey: UnsafePointer<CChar>?,
                                   _ experimentKeyLength: Int, _ userId: UnsafePointer<CChar>?, _ userIdLength: Int,
                                   _ variationKey: UnsafePointer<CChar>?, _ variationKeyLength: Int) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        guard userId != nil || userIdLength == 0 else { throw ClientError(.invalidArgument, "user_id is NULL") }
        let user = String(decoding: try sizedText(userId, userIdLength, "user_id"), as: UTF8.self)
        let variationName = variationKey == nil ? nil
            : String(decoding: try sizedText(variationKey, variationKeyLength, "variation_key"), as: UTF8.self)
        let config = try client.config()
        let experiment = config.experiments[try experimentIndex(
            key: sizedText(experimentKey, experimentKeyLength, "experiment_key"), in: config)]
        try forceVariation(client, experiment: experiment, user: user, variationName: variationName)
    }
}

/// exp_get_forced_variation_len with the experiment key and user id given with their byte lengths.
@_cdecl("exp_get_forced_variation_n")
public func abiGetForcedVariationN(_ handle: OpaquePointer?, _ experimentKey: UnsafePointer<CChar>?,
                                   _ experimentKeyLength: Int, _ userId: UnsafePointer<CChar>?, _ userIdLength: Int,
                                   _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                                   _ outLength: UnsafeMutablePointer<Int>?) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        let out = try required(out, "out_variation_key")
        outLength?.pointee = 0
        guard userId != nil || userIdLength == 0 else { throw ClientError(.invalidArgument, "user_id is NULL") }
        let user = String(decoding: try sizedText(userId, userIdLength, "user_id"), as: UTF8.self)
        let config = try client.config()
        let experiment = config.experiments[try experimentIndex(
            key: sizedText(experimentKey, experimentKeyLength, "experiment_key"), in: config)]
        let variationId = client.overrides.overrides(of: user).forcedVariation(experimentId: experiment.id.text)
        let index = variationId.flatMap { experiment.variationIndex(id: $0) }
        store(index.map { experiment.variations[$0].key.text }, out, length: outLength)
    }
}

@_cdecl("exp_get_forced_variation")
public func abiGetForcedVariation(_ handle: OpaquePointer?, _ experimentKey: UnsafePointer<CChar>?,
                                  _ userId: UnsafePointer<CChar>?,
                                  _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> exp_status {
    forcedVariation(handle, experimentKey, userId, out, length: nil)
}

@_cdecl("exp_get_forced_variation_len")
public func abiGetForcedVariationLen(_ handle: OpaquePointer?, _ experimentKey: UnsafePointer<CChar>?,
                                     _ userId: UnsafePointer<CChar>?,
                                     _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                                     _ outLength: UnsafeMutablePointer<Int>?) -> exp_status {
    forcedVariation(handle, experimentKey, userId, out, length: outLength)
}

private func forcedVariation(_ handle: OpaquePointer?, _ experimentKey: UnsafePointer<CChar>?,
                             _ userId: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                             length: UnsafeMutablePointer<Int>?) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        let out = try required(out, "out_variation_key")
        length?.pointee = 0
        let user = try string(userId, "user_id")
        let config = try client.config()
        let experiment = config.experiments[try experimentIndex(key: experimentKey, in: config)]
        let variationId = client.overrides.overrides(of: user).forcedVariation(experimentId: experiment.id.text)
        let index = variationId.flatMap { experiment.variationIndex(id: $0) }
        store(index.map { experiment.variations[$0].key.text }, out, length: length)
    }
}

@_cdecl("exp_set_forced_decision")
public func abiSetForcedDecision(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?, _ flagKey: UnsafePointer<CChar>?,
                                 _ ruleKey: UnsafePointer<CChar>?, _ variationKey: UnsafePointer<CChar>?) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        try client.ensureOpen()
        client.overrides.setForcedDecision(userId: try string(userId, "user_id"), flagKey: try string(flagKey, "flag_key"),
                                           ruleKey: try optionalString(ruleKey, "rule_key"),
                                           variationKey: try optionalString(variationKey, "variation_key"))
    }
}

@_cdecl("exp_remove_forced_decisions")
public func abiRemoveForcedDecisions(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        try client.ensureOpen()
        client.overrides.removeForcedDecisions(userId: try string(userId, "user_id"))
    }
}
