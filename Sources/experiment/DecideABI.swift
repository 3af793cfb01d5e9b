import CExperimentABI
import ExperimentCore
import ExperimentRuntime
#if canImport(Glibc)
import Glibc
#endif

private let emptyObject: StaticString = "{}"
private var emptyObjectPointer: UnsafePointer<CChar> {
    UnsafeRawPointer(emptyObject.utf8Start).assumingMemoryBound(to: CChar.self)
}

/// Reason strings handed out through exp_decision.reasons, freed when the decision is released. Each is
/// copied whole with its byte length kept (a reason quoting a user id may hold NUL bytes), for
/// exp_decision_text_n.
final class ReasonStrings {
    let pointers: UnsafeMutablePointer<UnsafePointer<CChar>?>
    let lengths: UnsafeMutablePointer<Int>
    let count: Int
    /// The flag key of an error or unknown-key decision (a copy of the caller's), freed with the reasons.
    let flagKey: UnsafeMutablePointer<CChar>?
    let flagKeyLength: Int

    init(_ reasons: [String], flagKey: String? = nil) {
        count = reasons.count
        pointers = .allocate(capacity: max(count, 1))
        lengths = .allocate(capacity: max(count, 1))
        for (index, reason) in reasons.enumerated() {
            let (copy, length) = Self.copy(reason)
            pointers[index] = UnsafePointer(copy)
            lengths[index] = length
        }
        if let flagKey {
            let (copy, length) = Self.copy(flagKey)
            self.flagKey = copy
            flagKeyLength = length
        } else {
            self.flagKey = nil
            flagKeyLength = 0
        }
    }

    /// A malloc'ed NUL-terminated copy of all of `text`'s bytes (strdup stops at the first NUL).
    private static func copy(_ text: String) -> (UnsafeMutablePointer<CChar>, Int) {
        var text = text
        return text.withUTF8 { bytes in
            let copy = malloc(bytes.count + 1)!.bindMemory(to: CChar.self, capacity: bytes.count + 1)
            if let base = bytes.baseAddress, bytes.count > 0 {
                UnsafeMutableRawPointer(copy).copyMemory(from: base, byteCount: bytes.count)
            }
            copy[bytes.count] = 0
            return (copy, bytes.count)
        }
    }

    deinit {
        for index in 0..<count { free(UnsafeMutableRawPointer(mutating: pointers[index])) }
        pointers.deallocate()
        lengths.deallocate()
        free(flagKey)
    }
}

/// Fills a caller's exp_decision. The decision retains the lease on the config its strings point into
/// (the calling thread's lease: retaining it writes to no memory other threads use).
private func fill(_ out: UnsafeMutablePointer<exp_decision>, _ result: DecideResult, lease: ConfigLease,
                  options: DecideOptions) {
    fill(out, result.decision, config: lease.config, lease: Unmanaged.passUnretained(lease), options: options,
         reasons: result.reasons)
}

@inline(__always)
private func fill(_ out: UnsafeMutablePointer<exp_decision>, _ decision: FlagDecision, config: ProjectConfig,
                  lease: Unmanaged<ConfigLease>, options: DecideOptions, reasons: [String]?) {
    if _slowPath(decision.cmabFailed) {
        return fillCMABError(out, decision, config: config, lease: lease, reasons: reasons)
    }
    var filled = exp_decision()
    if decision.holdout < 0 {
        fillFromHotTables(&filled, decision, config.hot)
    } else {
        filled.flag_key = config.flags[Int(decision.flag)].key.cString
        filled.variation_key = decision.variationKeyCString(in: config)
        filled.rule_key = decision.ruleKeyCString(in: config)
        filled.variables_json = decision.variablesJSON(in: config)
        filled.enabled = decision.enabled(in: config) ? 1 : 0
    }
    if options.contains(.excludeVariables) { filled.variables_json = emptyObjectPointer }
    filled.internal.0 = lease.retain().toOpaque()
    if options.contains(.includeReasons), let reasons {
        let strings = ReasonStrings(reasons)
        filled.reasons = UnsafePointer(strings.pointers)
        filled.reason_count = strings.count
        filled.internal.1 = Unmanaged.passRetained(strings).toOpaque()
    }
    out.pointee = filled
}

/// A CMAB error decision, as the reference's: the flag key, disabled, no variation or rule, "{}" variables and
/// its reasons whatever the options.
@inline(never)
private func fillCMABError(_ out: UnsafeMutablePointer<exp_decision>, _ decision: FlagDecision, config: ProjectConfig,
                           lease: Unmanaged<ConfigLease>, reasons: [String]?) {
    var filled = exp_decision()
    filled.flag_key = config.flags[Int(decision.flag)].key.cString
    filled.variables_json = emptyObjectPointer
    filled.internal.0 = lease.retain().toOpaque()
    let strings = ReasonStrings(reasons ?? [])
    filled.reasons = UnsafePointer(strings.pointers)
    filled.reason_count = strings.count
    filled.internal.1 = Unmanaged.passRetained(strings).toOpaque()
    out.pointee = filled
}

/// The strings and flag of a decision that no holdout made, read from the hot tables: the same values as
/// FlagDecision's variationKeyCString / ruleKeyCString / variablesJSON / enabled(in:) give for it.
@inline(__always)
private func fillFromHotTables(_ filled: inout exp_decision, _ decision: FlagDecision, _ hot: HotTables) {
    let flag = hot.flags[Int(decision.flag)]
    filled.flag_key = flag.key
    var chosen: HotTables.Choice? = nil
    if decision.experiment >= 0 {
        let experiment = hot.experiments[Int(decision.experiment)]
        filled.rule_key = experiment.key
        if decision.variation >= 0 { chosen = experiment.variations[Int(decision.variation)] }
    }
    if chosen == nil, decision.flagVariation >= 0 { chosen = flag.variations[Int(decision.flagVariation)] }
    let enabled = chosen?.featureEnabled ?? false
    filled.variation_key = chosen?.key
    filled.enabled = enabled ? 1 : 0
    // Enabled: the flag variation's values; off, or no flag variation: the defaults.
    filled.variables_json = enabled && decision.flagVariation >= 0
        ? flag.variations[Int(decision.flagVariation)].variablesJSON! : flag.defaultVariablesJSON
}

@_cdecl("exp_decision_release")
public func abiDecisionRelease(_ decision: UnsafeMutablePointer<exp_decision>?) {
    guard let decision else { return }
    if let lease = decision.pointee.internal.0 { Unmanaged<ConfigLease>.fromOpaque(lease).release() }
    if let reasons = decision.pointee.internal.1 { Unmanaged<ReasonStrings>.fromOpaque(reasons).release() }
    decision.pointee = exp_decision()
}

/// One string of a decision with its byte length (see exp_decision_text_n in experiment.h). Keys come
/// from the config's string storage (length stored before the text) or, for error and unknown-key
/// decisions, from the decision's ReasonStrings; variables JSON is JSON text, which holds no NUL byte.
@_cdecl("exp_decision_text_n")
public func abiDecisionTextN(_ decision: UnsafePointer<exp_decision>?, _ field: exp_decision_field, _ index: Int,
                             _ text: UnsafeMutablePointer<UnsafePointer<CChar>?>?,
                             _ length: UnsafeMutablePointer<Int>?) -> exp_status {
    api { () throws(ClientError) in
        let decision = try required(decision, "decision").pointee
        let text = try required(text, "text")
        let length = try required(length, "length")
        let owned = decision.internal.1.map { Unmanaged<ReasonStrings>.fromOpaque($0).takeUnretainedValue() }
        // size_t arrives as a signed Int: 2^63 and up (an `int i = -1`) are negative, so compare unsigned.
        let position = UInt(bitPattern: index)
        if field == EXP_DECISION_REASON {
            guard position < UInt(bitPattern: decision.reason_count), let owned, position < UInt(owned.count) else {
                throw ClientError(.invalidArgument,
                                  "index \(position) is past the decision's \(decision.reason_count) reasons")
            }
            text.pointee = owned.pointers[index]
            length.pointee = owned.lengths[index]
            return
        }
        guard position == 0 else {
            throw ClientError(.invalidArgument, "index \(position) must be 0 for a field other than a reason")
        }
        let value: UnsafePointer<CChar>?
        switch field {
        case EXP_DECISION_FLAG_KEY: value = decision.flag_key
        case EXP_DECISION_VARIATION_KEY: value = decision.variation_key
        case EXP_DECISION_RULE_KEY: value = decision.rule_key
        case EXP_DECISION_VARIABLES_JSON: value = decision.variables_json
        default: throw ClientError(.invalidArgument, "unknown exp_decision_field \(field.rawValue)")
        }
        text.pointee = value
        guard let value else { length.pointee = 0; return }
        if field == EXP_DECISION_VARIABLES_JSON {
            length.pointee = strlen(value)
        } else if let owned, let flagKey = owned.flagKey, value == UnsafePointer(flagKey) {
            length.pointee = owned.flagKeyLength
        } else if decision.internal.0 != nil {
            length.pointee = StringStorage.storedLength(of: value)
        } else {
            length.pointee = strlen(value)  // not filled by the library (a zeroed or hand-made struct)
        }
    }
}

@_cdecl("exp_decisions_release")
public func abiDecisionsRelease(_ decisions: UnsafeMutablePointer<exp_decision>?, _ count: Int) {
    guard let decisions else { return }
    // No status to answer with: a count past EXP_MAX_DECISIONS (an `int n = -1`, SIZE_MAX) releases nothing
    // and is reported through exp_last_error.
    guard UInt(bitPattern: count) <= UInt(maxDecisions) else {
        LastError.set(countTooLarge(count, limit: maxDecisions, "count").message)
        return
    }
    for index in 0..<count { abiDecisionRelease(decisions + index) }
}

/// The reference SDK's reason for an error decision, for the statuses that have one.
private func errorDecisionReason(_ code: exp_status, flagKey: String) -> String? {
    if code == status(.notReady) { return "Optimizely SDK not configured properly yet." }
    if code == status(.unknownFlag) { return "No flag was found for key \"\(flagKey)\"." }
    return nil
}

/// After a failed exp_decide / exp_decide_n: for not-ready and unknown-flag, fills `out` with the error
/// decision the reference SDK returns (the key, disabled, no variation, "{}" variables, its one reason
/// whatever the options). The thread's last error is kept.
@inline(never)
private func fillErrorDecision(_ out: UnsafeMutablePointer<exp_decision>?, status code: exp_status, flagKey: UTF8Text?) {
    guard let out, let flagKey else { return }
    let key = String(decoding: flagKey, as: UTF8.self)
    guard let reason = errorDecisionReason(code, flagKey: key) else { return }
    let strings = ReasonStrings([reason], flagKey: key)
    var filled = exp_decision()
    filled.flag_key = UnsafePointer(strings.flagKey)
    filled.variables_json = emptyObjectPointer
    filled.reasons = UnsafePointer(strings.pointers)
    filled.reason_count = strings.count
    filled.internal.1 = Unmanaged.passRetained(strings).toOpaque()
    out.pointee = filled
}

/// The flag key of a failed exp_decide as bytes, when it is a usable key (within the limit, valid UTF-8).
private func flagKeyText(_ flagKey: UnsafePointer<CChar>?) -> UTF8Text? {
    try? text(flagKey, "flag_key")
}

/// The index of `flagKey` in `config`, or UNKNOWN_FLAG (INVALID_UTF8 / TOO_LARGE when the key itself is bad).
private func flagIndex(_ flagKey: UnsafePointer<CChar>?, in config: ProjectConfig) throws(ClientError) -> Int {
    let key = try required(flagKey, "flag_key")
    if let index = config.flagIndex.find(cString: key) { return index }
    let name = try string(key, "flag_key")
    throw ClientError(.unknownFlag, "unknown flag \"\(name)\" (the datafile has \(config.flags.count) flags)")
}

@_cdecl("exp_decide")
public func abiDecide(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?, _ flagKey: UnsafePointer<CChar>?,
                      _ attributes: UnsafePointer<exp_attribute>?, _ attributeCount: Int, _ rawOptions: UInt32,
                      _ out: UnsafeMutablePointer<exp_decision>?) -> exp_status {
    let result = api { () throws(ClientError) in
        guard let handle else { throw ClientError(.invalidArgument, "client is NULL") }
        // The client and its config are borrowed, not retained: the caller's handle keeps the client alive
        // and the thread's lease keeps the config alive (see ConfigLease). The closures capture only
        // `Unmanaged` references: a captured class reference would be retained into the closure context,
        // and a retain of the shared Client or ProjectConfig is a write to a cache line every thread reads.
        let clientRef = Unmanaged<Client>.fromOpaque(UnsafeRawPointer(handle))
        let out = try required(out, "out")
        let user = try text(userId, "user_id")
        let options = try decideOptions(rawOptions).subtracting(.enabledFlagsOnly)
        // Not retained: the thread's lease table keeps it alive while this call runs no host code; the full
        // path below, which may call listeners and stores, retains it for its duration.
        let leaseRef = try borrowing(clientRef) { (client) throws(ClientError) in try client.unretainedLease() }
        let configRef = try borrowing(leaseRef) { (lease) throws(ClientError) in Unmanaged.passUnretained(lease.config) }
        let flag = try borrowing(configRef) { (config) throws(ClientError) in try flagIndex(flagKey, in: config) }
        try withAttributes(attributes, attributeCount) { (attributes) throws(ClientError) in
            try borrowing(clientRef) { (client) throws(ClientError) in
                try borrowing(configRef) { (config) throws(ClientError) in
                    let effective = options.union(client.options.defaultDecideOptions)
                    if let decision = client.decideWithoutState(config: config, flag: flag, userId: user,
                                                                attributes: attributes, options: options) {
                        fill(out, decision, config: config, lease: leaseRef, options: effective, reasons: nil)
                        return
                    }
                    let lease = leaseRef.takeUnretainedValue()
                    let result = client.decide(config: config, flag: flag, userId: user, attributes: attributes,
                                               options: options)
                    fill(out, result.decision, config: config, lease: leaseRef, options: effective,
                         reasons: result.reasons)
                    withExtendedLifetime(lease) {}
                }
            }
        }
    }
    if result != statusOK { fillErrorDecision(out, status: result, flagKey: flagKeyText(flagKey)) }
    return result
}

@_cdecl("exp_decide_n")
public func abiDecideN(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?, _ userIdLength: Int,
                       _ flagKey: UnsafePointer<CChar>?, _ flagKeyLength: Int,
                       _ attributes: UnsafePointer<exp_attribute_n>?, _ attributeCount: Int, _ rawOptions: UInt32,
                       _ out: UnsafeMutablePointer<exp_decision>?) -> exp_status {
    var key: UTF8Text? = nil
    let result = api { () throws(ClientError) in
        let client = try client(handle)
        let out = try required(out, "out")
        let user = try sizedText(userId, userIdLength, "user_id")
        let flagName = try sizedText(flagKey, flagKeyLength, "flag_key")
        key = flagName
        let options = try decideOptions(rawOptions).subtracting(.enabledFlagsOnly)
        let lease = try client.lease()
        let config = lease.config
        guard let flag = config.flagIndex.find(flagName) else {
            throw ClientError(.unknownFlag, "unknown flag \"\(String(decoding: flagName, as: UTF8.self))\" (the datafile has \(config.flags.count) flags)")
        }
        try withSizedAttributes(attributes, attributeCount) { (attributes) throws(ClientError) in
            let effective = options.union(client.options.defaultDecideOptions)
            let result = client.decide(config: config, flag: flag, userId: user, attributes: attributes, options: options)
            fill(out, result, lease: lease, options: effective)
        }
    }
    if result != statusOK { fillErrorDecision(out, status: result, flagKey: key) }
    return result
}

@_cdecl("exp_flag_count")
public func abiFlagCount(_ handle: OpaquePointer?, _ out: UnsafeMutablePointer<Int>?) -> exp_status {
    api { () throws(ClientError) in
        let out = try required(out, "out_count")
        out.pointee = try client(handle).config().flags.count
    }
}

@_cdecl("exp_decide_all")
public func abiDecideAll(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?,
                         _ attributes: UnsafePointer<exp_attribute>?, _ attributeCount: Int, _ rawOptions: UInt32,
                         _ out: UnsafeMutablePointer<exp_decision>?, _ capacity: Int,
                         _ outCount: UnsafeMutablePointer<Int>?) -> exp_status {
    decideAll(handle, { () throws(ClientError) in try text(userId, "user_id") },
              PlainAttributeInput(pointer: attributes, count: attributeCount), rawOptions, out, capacity, outCount)
}

@_cdecl("exp_decide_all_n")
public func abiDecideAllN(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?, _ userIdLength: Int,
                          _ attributes: UnsafePointer<exp_attribute_n>?, _ attributeCount: Int, _ rawOptions: UInt32,
                          _ out: UnsafeMutablePointer<exp_decision>?, _ capacity: Int,
                          _ outCount: UnsafeMutablePointer<Int>?) -> exp_status {
    decideAll(handle, { () throws(ClientError) in try sizedText(userId, userIdLength, "user_id") },
              SizedAttributeInput(pointer: attributes, count: attributeCount), rawOptions, out, capacity, outCount)
}

private func decideAll<Input: AttributeInput>(_ handle: OpaquePointer?, _ userId: () throws(ClientError) -> UTF8Text,
                                              _ attributes: Input, _ rawOptions: UInt32,
                                              _ out: UnsafeMutablePointer<exp_decision>?, _ capacity: Int,
                                              _ outCount: UnsafeMutablePointer<Int>?) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        let outCount = try required(outCount, "out_count")
        let user = try userId()
        let options = try decideOptions(rawOptions)
        let lease = try client.lease()
        let config = lease.config
        // Any capacity is acceptable (only the flags are written): compared unsigned, as size_t.
        guard UInt(bitPattern: capacity) >= UInt(config.flags.count) else {
            outCount.pointee = config.flags.count
            throw ClientError(.bufferTooSmall, "capacity \(UInt(bitPattern: capacity)) is less than the \(config.flags.count) flags of the datafile")
        }
        let out = try required(out, "out")
        try attributes.with { (attributes) throws(ClientError) in
            var filled = 0
            let effective = options.union(client.options.defaultDecideOptions)
            client.decideAll(config: config, userId: user, attributes: attributes, options: options) { result in
                fill(out + filled, result, lease: lease, options: effective)
                filled += 1
            }
            outCount.pointee = filled
        }
    }
}

@_cdecl("exp_decide_for_keys")
public func abiDecideForKeys(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?,
                             _ keys: UnsafePointer<UnsafePointer<CChar>?>?, _ keyCount: Int,
                             _ attributes: UnsafePointer<exp_attribute>?, _ attributeCount: Int, _ rawOptions: UInt32,
                             _ out: UnsafeMutablePointer<exp_decision>?, _ capacity: Int,
                             _ outCount: UnsafeMutablePointer<Int>?) -> exp_status {
    decideForKeys(handle, { () throws(ClientError) in try text(userId, "user_id") },
                  keys: keys, keyCount: keyCount,
                  key: { (position) throws(ClientError) in try text(keys![position], "keys[\(position)]") },
                  PlainAttributeInput(pointer: attributes, count: attributeCount), rawOptions, out, capacity, outCount)
}

@_cdecl("exp_decide_for_keys_n")
public func abiDecideForKeysN(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?, _ userIdLength: Int,
                              _ keys: UnsafePointer<UnsafePointer<CChar>?>?, _ keyLengths: UnsafePointer<Int>?,
                              _ keyCount: Int,
                              _ attributes: UnsafePointer<exp_attribute_n>?, _ attributeCount: Int, _ rawOptions: UInt32,
                              _ out: UnsafeMutablePointer<exp_decision>?, _ capacity: Int,
                              _ outCount: UnsafeMutablePointer<Int>?) -> exp_status {
    if keyCount > 0 && keys != nil && keyLengths == nil {
        return api { () throws(ClientError) in
            throw ClientError(.invalidArgument, "key_lengths is NULL but key_count is \(keyCount)")
        }
    }
    return decideForKeys(handle, { () throws(ClientError) in try sizedText(userId, userIdLength, "user_id") },
                         keys: keys, keyCount: keyCount,
                         key: { (position) throws(ClientError) in
                             try sizedText(keys![position], keyLengths![position], "keys[\(position)]")
                         },
                         SizedAttributeInput(pointer: attributes, count: attributeCount), rawOptions, out, capacity,
                         outCount)
}

/// exp_decide_for_keys and its _n form: `key(i)` validates and returns the i-th key.
private func decideForKeys<Input: AttributeInput>(_ handle: OpaquePointer?, _ userId: () throws(ClientError) -> UTF8Text,
                                                  keys: UnsafePointer<UnsafePointer<CChar>?>?, keyCount: Int,
                                                  key: (Int) throws(ClientError) -> UTF8Text,
                                                  _ attributes: Input, _ rawOptions: UInt32,
                                                  _ out: UnsafeMutablePointer<exp_decision>?, _ capacity: Int,
                                                  _ outCount: UnsafeMutablePointer<Int>?) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        let outCount = try required(outCount, "out_count")
        let user = try userId()
        let options = try decideOptions(rawOptions)
        let keyCount = try checkedCount(keyCount, limit: maxDecisions, "key_count")
        if keyCount > 0 && keys == nil { throw ClientError(.invalidArgument, "keys is NULL but key_count is \(keyCount)") }
        guard UInt(bitPattern: capacity) >= UInt(keyCount) else {
            outCount.pointee = keyCount
            throw ClientError(.bufferTooSmall, "capacity \(UInt(bitPattern: capacity)) is less than key_count \(keyCount)")
        }
        let lease = try client.lease()
        let config = lease.config
        var flags: [Int?] = []
        var names: [UTF8Text] = []
        flags.reserveCapacity(keyCount)
        names.reserveCapacity(keyCount)
        for position in 0..<keyCount {
            let name = try key(position)
            names.append(name)
            flags.append(config.flagIndex.find(name))
        }
        let out = try required(out, "out")
        let effective = options.union(client.options.defaultDecideOptions)
        try attributes.with { (attributes) throws(ClientError) in
            var filled = 0
            var repeated = RepeatedKeyReasons()
            for (position, flag) in flags.enumerated() {
                guard let flag else {
                    // As the reference: unknown keys are reported even with ENABLED_FLAGS_ONLY.
                    // The key is copied: an _n key need not be NUL-terminated.
                    let owned = ReasonStrings([], flagKey: String(decoding: names[position], as: UTF8.self))
                    var unknown = exp_decision()
                    unknown.flag_key = UnsafePointer(owned.flagKey)
                    unknown.variables_json = emptyObjectPointer
                    unknown.internal.1 = Unmanaged.passRetained(owned).toOpaque()
                    out[filled] = unknown
                    filled += 1
                    continue
                }
                let result = repeated.merged(client.decide(config: config, flag: flag, userId: user,
                                                           attributes: attributes,
                                                           options: options.subtracting(.enabledFlagsOnly)),
                                             flag: flag)
                if effective.contains(.enabledFlagsOnly) && !result.decision.keptByEnabledFlagsOnly(in: config) { continue }
                fill(out + filled, result, lease: lease, options: effective)
                filled += 1
            }
            outCount.pointee = filled
        }
    }
}

// MARK: JSON conveniences

private func decisionJSON(_ result: DecideResult?, flagKey: String, config: ProjectConfig, options: DecideOptions,
                          into writer: inout JSONWriter) {
    writer.beginObject()
    writer.field("flag_key", flagKey)
    guard let result else {
        writer.field("enabled", false)
        writer.key("variation_key"); writer.null()
        writer.key("rule_key"); writer.null()
        writer.key("variables"); writer.raw("{}")
        writer.key("reasons"); writer.beginArray(); writer.endArray()
        writer.endObject()
        return
    }
    let decision = result.decision
    writer.field("enabled", decision.enabled(in: config))
    writer.field("variation_key", decision.variationKeyCString(in: config).map { String(cString: $0) })
    writer.field("rule_key", decision.ruleKeyCString(in: config).map { String(cString: $0) })
    writer.key("variables")
    writer.raw(options.contains(.excludeVariables) || decision.cmabFailed ? "{}"
               : String(cString: decision.variablesJSON(in: config)))
    writer.key("reasons"); writer.beginArray()
    result.reasons.forEach { writer.string($0) }
    writer.endArray()
    writer.endObject()
}

@_cdecl("exp_decide_json")
public func abiDecideJSON(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?, _ flagKey: UnsafePointer<CChar>?,
                          _ attributesJSON: UnsafePointer<CChar>?, _ rawOptions: UInt32,
                          _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        let out = try required(out, "out_json")
        let user = try text(userId, "user_id")
        let options = try decideOptions(rawOptions).subtracting(.enabledFlagsOnly)
        let attributes = try jsonAttributes(attributesJSON)
        let config = try client.config()
        let flag = try flagIndex(flagKey, in: config)
        let result = client.decide(config: config, flag: flag, userId: user, attributes: attributes, options: options)
        var writer = JSONWriter()
        decisionJSON(result, flagKey: config.flags[flag].key.text, config: config,
                     options: options.union(client.options.defaultDecideOptions), into: &writer)
        out.pointee = duplicate(writer.text)
    }
}

@_cdecl("exp_decide_for_keys_json")
public func abiDecideForKeysJSON(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?,
                                 _ flagKeysJSON: UnsafePointer<CChar>?, _ attributesJSON: UnsafePointer<CChar>?,
                                 _ rawOptions: UInt32, _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        let out = try required(out, "out_json")
        let user = try text(userId, "user_id")
        let options = try decideOptions(rawOptions)
        let effective = options.union(client.options.defaultDecideOptions)
        let attributes = try jsonAttributes(attributesJSON)
        let config = try client.config()
        var writer = JSONWriter()
        writer.beginObject()
        if let flagKeysJSON {
            let document = try parseJSON(flagKeysJSON, what: "flag_keys")
            guard document.root.kind == .array else {
                throw ClientError(.invalidArgument, "flag_keys: expected a JSON array of flag keys, got \(document.root.kindName)")
            }
            var repeated = RepeatedKeyReasons()
            for (position, element) in document.root.elements.enumerated() {
                guard let key = element.string else {
                    throw ClientError(.invalidArgument, "flag_keys[\(position)]: expected a string, got \(element.kindName)")
                }
                guard let flag = config.flagIndex.find(key) else {
                    writer.key(key)
                    decisionJSON(nil, flagKey: key, config: config, options: effective, into: &writer)
                    continue
                }
                let result = repeated.merged(client.decide(config: config, flag: flag, userId: user,
                                                           attributes: attributes,
                                                           options: options.subtracting(.enabledFlagsOnly)),
                                             flag: flag)
                if effective.contains(.enabledFlagsOnly) && !result.decision.keptByEnabledFlagsOnly(in: config) { continue }
                writer.key(key)
                decisionJSON(result, flagKey: key, config: config, options: effective, into: &writer)
            }
        } else {
            client.decideAll(config: config, userId: user, attributes: attributes, options: options) { result in
                let key = config.flags[Int(result.decision.flag)].key.text
                writer.key(key)
                decisionJSON(result, flagKey: key, config: config, options: effective, into: &writer)
            }
        }
        writer.endObject()
        out.pointee = duplicate(writer.text)
    }
}

// MARK: user contexts (see UserContextABI.swift)

/// Fills a caller's exp_decision for a context's decision (the same filling as exp_decide's).
@inline(__always)
func fillDecision(_ out: UnsafeMutablePointer<exp_decision>, _ decision: FlagDecision, reasons: [String]?,
                  lease: ConfigLease, options: DecideOptions) {
    fill(out, decision, config: lease.config, lease: Unmanaged.passUnretained(lease), options: options,
         reasons: reasons)
}

/// "{}", static: the variables of a decision that has none.
var emptyJSONObject: UnsafePointer<CChar> { emptyObjectPointer }
