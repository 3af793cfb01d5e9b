import CExperimentABI
import ExperimentCore
import ExperimentRuntime
#if canImport(Glibc)
import Glibc
#endif

// User contexts (exp_user): Optimizely's OptimizelyUserContext in the C ABI. Every string argument comes
// with its length (it need not be NUL-terminated and may hold NUL bytes); user ids and keys are limited to
// EXP_MAX_KEY_BYTES and must be valid UTF-8.

/// `pointer[0..<length]` as validated UTF-8 text (NULL only with length 0 reads as "").
@inline(__always)
private func text(_ pointer: UnsafePointer<CChar>?, _ length: Int, _ name: @autoclosure () -> String,
                  limit: Int = maxKeyBytes) throws(ClientError) -> UTF8Text {
    guard UInt(bitPattern: length) <= UInt(limit) else {
        throw ClientError(.tooLarge, "\(name())_length \(UInt(bitPattern: length)) exceeds the limit of \(limit) bytes")
    }
    guard let pointer else {
        if length == 0 { return UTF8Text(start: nil, count: 0) }
        throw ClientError(.invalidArgument, "\(name()) is NULL")
    }
    let bytes = UTF8Text(start: UnsafeRawPointer(pointer).assumingMemoryBound(to: UInt8.self), count: length)
    if isASCII(bytes) || UTF8Validation.firstInvalidByte(bytes) == nil { return bytes }
    throw ClientError(.invalidUTF8, "\(name()) is not valid UTF-8")
}

private func string(_ pointer: UnsafePointer<CChar>?, _ length: Int, _ name: @autoclosure () -> String)
    throws(ClientError) -> String {
    String(decoding: try text(pointer, length, name()), as: UTF8.self)
}

/// A required string argument (NULL is an error even with length 0).
private func requiredString(_ pointer: UnsafePointer<CChar>?, _ length: Int, _ name: String) throws(ClientError) -> String {
    guard pointer != nil else { throw ClientError(.invalidArgument, "\(name) is NULL") }
    return try string(pointer, length, name)
}

@inline(__always)
private func context(_ handle: OpaquePointer?) throws(ClientError) -> Unmanaged<UserContext> {
    guard let handle else { throw ClientError(.invalidArgument, "user is NULL") }
    return Unmanaged<UserContext>.fromOpaque(UnsafeRawPointer(handle))
}

private func handle(of context: UserContext) -> OpaquePointer {
    OpaquePointer(Unmanaged.passRetained(context).toOpaque())
}

private func ownedAttributes(_ pointer: UnsafePointer<exp_attribute>?, _ count: Int) throws(ClientError) -> OwnedAttributes {
    try withAttributes(pointer, count) { (attributes) throws(ClientError) in
        var pairs: [(key: [UInt8], value: OwnedValue)] = []
        attributes.forEach { key, value in pairs.append((Array(key), owned(value))) }
        return OwnedAttributes(pairs)
    }
}

private func owned(_ value: AttributeValue) -> OwnedValue {
    switch value {
    case .null: return .null
    case .bool(let b): return .bool(b)
    case .int(let n): return .int(n)
    case .double(let d): return .double(d)
    case .string(let bytes): return .string(Array(bytes))
    case .bigInteger(let digits): return .bigInteger(Array(digits))
    case .unsupported: return .unsupported
    }
}

// MARK: lifecycle

@_cdecl("exp_user_create")
public func abiUserCreate(_ clientHandle: OpaquePointer?, _ userId: UnsafePointer<CChar>?, _ userIdLength: Int,
                          _ attributes: UnsafePointer<exp_attribute>?, _ attributeCount: Int,
                          _ out: UnsafeMutablePointer<OpaquePointer?>?) -> exp_status {
    createUser(clientHandle, userId, userIdLength, out) { () throws(ClientError) in
        try ownedAttributes(attributes, attributeCount)
    }
}

/// exp_user_create with exp_attribute_n attributes: keys and string values with their lengths (NUL allowed).
@_cdecl("exp_user_create_n")
public func abiUserCreateN(_ clientHandle: OpaquePointer?, _ userId: UnsafePointer<CChar>?, _ userIdLength: Int,
                           _ attributes: UnsafePointer<exp_attribute_n>?, _ attributeCount: Int,
                           _ out: UnsafeMutablePointer<OpaquePointer?>?) -> exp_status {
    createUser(clientHandle, userId, userIdLength, out) { () throws(ClientError) in
        try ownedSizedAttributes(attributes, attributeCount)
    }
}

/// A new context for the user; `attributes` reads the caller's attributes once the client and id are checked.
private func createUser(_ clientHandle: OpaquePointer?, _ userId: UnsafePointer<CChar>?, _ userIdLength: Int,
                        _ out: UnsafeMutablePointer<OpaquePointer?>?,
                        attributes: () throws(ClientError) -> OwnedAttributes) -> exp_status {
    api { () throws(ClientError) in
        let out = try required(out, "out_user")
        out.pointee = nil
        let client = try client(clientHandle)
        try client.ensureOpen()
        let user = try requiredString(userId, userIdLength, "user_id")
        out.pointee = handle(of: UserContext(client: client, userId: user, attributes: try attributes()))
    }
}

private func ownedSizedAttributes(_ pointer: UnsafePointer<exp_attribute_n>?, _ count: Int) throws(ClientError)
    -> OwnedAttributes {
    try withSizedAttributes(pointer, count) { (attributes) throws(ClientError) in
        var pairs: [(key: [UInt8], value: OwnedValue)] = []
        attributes.forEach { key, value in pairs.append((Array(key), owned(value))) }
        return OwnedAttributes(pairs)
    }
}

@_cdecl("exp_user_free")
public func abiUserFree(_ user: OpaquePointer?) {
    guard let user else { return }
    Unmanaged<UserContext>.fromOpaque(UnsafeRawPointer(user)).release()
}

@_cdecl("exp_user_clone")
public func abiUserClone(_ user: OpaquePointer?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> exp_status {
    api { () throws(ClientError) in
        let out = try required(out, "out_user")
        out.pointee = nil
        out.pointee = handle(of: try context(user).takeUnretainedValue().copy())
    }
}

@_cdecl("exp_user_id")
public func abiUserId(_ user: OpaquePointer?, _ outId: UnsafeMutablePointer<UnsafePointer<CChar>?>?,
                      _ outLength: UnsafeMutablePointer<Int>?) -> exp_status {
    api { () throws(ClientError) in
        let outId = try required(outId, "out_id")
        let text = try context(user).takeUnretainedValue().userIdText
        outId.pointee = UnsafeRawPointer(text.baseAddress!).assumingMemoryBound(to: CChar.self)
        outLength?.pointee = text.count
    }
}

// MARK: attributes

@_cdecl("exp_user_set_attribute")
public func abiUserSetAttribute(_ user: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ keyLength: Int,
                                _ value: UnsafePointer<exp_value>?) -> exp_status {
    api { () throws(ClientError) in
        let context = try context(user).takeUnretainedValue()
        guard key != nil else { throw ClientError(.invalidArgument, "key is NULL") }
        let name = Array(try text(key, keyLength, "key"))
        let owned = try ownedValue(value, what: "value")
        context.setAttribute(name, owned)
    }
}

/// exp_user_set_attribute with an exp_attribute_n: the key and a string value with their lengths (NUL allowed).
@_cdecl("exp_user_set_attribute_n")
public func abiUserSetAttributeN(_ user: OpaquePointer?, _ attribute: UnsafePointer<exp_attribute_n>?) -> exp_status {
    api { () throws(ClientError) in
        let context = try context(user).takeUnretainedValue()
        guard attribute != nil else { throw ClientError(.invalidArgument, "attribute is NULL") }
        let owned = try ownedSizedAttributes(attribute, 1)
        for entry in owned.entries { context.setAttribute(Array(entry.key), entry.owned) }
    }
}

@_cdecl("exp_user_remove_attribute")
public func abiUserRemoveAttribute(_ user: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ keyLength: Int) -> exp_status {
    api { () throws(ClientError) in
        let context = try context(user).takeUnretainedValue()
        guard key != nil else { throw ClientError(.invalidArgument, "key is NULL") }
        context.setAttribute(Array(try text(key, keyLength, "key")), nil)
    }
}

@_cdecl("exp_user_attributes_json")
public func abiUserAttributesJSON(_ user: OpaquePointer?,
                                  _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> exp_status {
    api { () throws(ClientError) in
        let out = try required(out, "out_json")
        out.pointee = duplicate(attributesJSON(try context(user).takeUnretainedValue().attributes))
    }
}

// MARK: decisions

@_cdecl("exp_user_decide")
public func abiUserDecide(_ user: OpaquePointer?, _ flagKey: UnsafePointer<CChar>?, _ flagKeyLength: Int,
                          _ rawOptions: UInt32, _ out: UnsafeMutablePointer<exp_decision>?) -> exp_status {
    api { () throws(ClientError) in
        let contextRef = try context(user)
        let out = try required(out, "out")
        let options = try decideOptions(rawOptions).subtracting(.enabledFlagsOnly)
        guard flagKey != nil else { throw ClientError(.invalidArgument, "flag_key is NULL") }
        let key = try text(flagKey, flagKeyLength, "flag_key")
        try borrowing(contextRef) { (context) throws(ClientError) in
            let client = context.client
            let lease = try client.lease()
            let config = lease.config
            guard let flag = config.flagIndex.find(key) else {
                throw ClientError(.unknownFlag, "unknown flag \"\(String(decoding: key, as: UTF8.self))\" (the datafile has \(config.flags.count) flags)")
            }
            let snapshot = context.snapshot
            let effective = options.union(client.options.defaultDecideOptions)
            if let decision = client.decideWithoutState(config: config, flag: flag, context: snapshot,
                                                        userId: context.userIdText, options: options) {
                fillDecision(out, decision, reasons: nil, lease: lease, options: effective)
                return
            }
            var decided: DecideResult? = nil
            client.decide(config: config, flags: flag..<(flag + 1), context: context, snapshot: snapshot,
                          options: options) { decided = $0 }
            fillDecision(out, decided!.decision, reasons: decided!.reasons, lease: lease, options: effective)
        }
    }
}

@_cdecl("exp_user_decide_all")
public func abiUserDecideAll(_ user: OpaquePointer?, _ rawOptions: UInt32, _ out: UnsafeMutablePointer<exp_decision>?,
                             _ capacity: Int, _ outCount: UnsafeMutablePointer<Int>?) -> exp_status {
    api { () throws(ClientError) in
        let context = try context(user).takeUnretainedValue()
        let outCount = try required(outCount, "out_count")
        let options = try decideOptions(rawOptions)
        let client = context.client
        let lease = try client.lease()
        let config = lease.config
        guard UInt(bitPattern: capacity) >= UInt(config.flags.count) else {
            outCount.pointee = config.flags.count
            throw ClientError(.bufferTooSmall, "capacity \(UInt(bitPattern: capacity)) is less than the \(config.flags.count) flags of the datafile")
        }
        let out = try required(out, "out")
        var filled = 0
        let effective = options.union(client.options.defaultDecideOptions)
        client.decideAll(config: config, context: context, options: options) { result in
            fillDecision(out + filled, result.decision, reasons: result.reasons, lease: lease, options: effective)
            filled += 1
        }
        outCount.pointee = filled
    }
}

@_cdecl("exp_user_decide_for_keys")
public func abiUserDecideForKeys(_ user: OpaquePointer?, _ keys: UnsafePointer<UnsafePointer<CChar>?>?,
                                 _ keyLengths: UnsafePointer<Int>?, _ keyCount: Int, _ rawOptions: UInt32,
                                 _ out: UnsafeMutablePointer<exp_decision>?, _ capacity: Int,
                                 _ outCount: UnsafeMutablePointer<Int>?) -> exp_status {
    api { () throws(ClientError) in
        let context = try context(user).takeUnretainedValue()
        let outCount = try required(outCount, "out_count")
        let options = try decideOptions(rawOptions)
        let keyCount = try checkedCount(keyCount, limit: maxDecisions, "key_count")
        if keyCount > 0 && (keys == nil || keyLengths == nil) {
            throw ClientError(.invalidArgument, "keys or key_lengths is NULL but key_count is \(keyCount)")
        }
        guard UInt(bitPattern: capacity) >= UInt(keyCount) else {
            outCount.pointee = keyCount
            throw ClientError(.bufferTooSmall, "capacity \(UInt(bitPattern: capacity)) is less than key_count \(keyCount)")
        }
        let client = context.client
        let lease = try client.lease()
        let config = lease.config
        var flags: [Int?] = []
        flags.reserveCapacity(keyCount)
        for position in 0..<keyCount {
            guard keys![position] != nil else { throw ClientError(.invalidArgument, "keys[\(position)] is NULL") }
            flags.append(config.flagIndex.find(try text(keys![position], keyLengths![position], "keys[\(position)]")))
        }
        let out = try required(out, "out")
        let effective = options.union(client.options.defaultDecideOptions)
        let snapshot = context.snapshot
        // The flags are decided together (one profile lookup and at most one save, as the reference's
        // decide_for_keys), then answered in the order of the keys.
        var decided: [DecideResult] = []
        decided.reserveCapacity(keyCount)
        client.decide(config: config, flags: flags.compactMap { $0 }, context: context, snapshot: snapshot,
                      options: options.subtracting(.enabledFlagsOnly)) { decided.append($0) }
        var next = 0
        var filled = 0
        var repeated = RepeatedKeyReasons()
        for (position, flag) in flags.enumerated() {
            guard let flag else {
                // The key is copied: the caller's need not outlive the decision, nor be NUL-terminated.
                let owned = ReasonStrings([], flagKey: String(decoding: UTF8Text(start: UnsafeRawPointer(keys![position]!).assumingMemoryBound(to: UInt8.self), count: keyLengths![position]), as: UTF8.self))
                var unknown = exp_decision()
                unknown.flag_key = UnsafePointer(owned.flagKey)
                unknown.variables_json = emptyJSONObject
                unknown.internal.1 = Unmanaged.passRetained(owned).toOpaque()
                out[filled] = unknown
                filled += 1
                continue
            }
            let result = repeated.merged(decided[next], flag: flag)
            next += 1
            if options.contains(.enabledFlagsOnly) && !result.decision.keptByEnabledFlagsOnly(in: config) { continue }
            fillDecision(out + filled, result.decision, reasons: result.reasons, lease: lease, options: effective)
            filled += 1
        }
        outCount.pointee = filled
    }
}

// MARK: conversions

@_cdecl("exp_user_track")
public func abiUserTrack(_ user: OpaquePointer?, _ eventKey: UnsafePointer<CChar>?, _ eventKeyLength: Int,
                         _ tagsJSON: UnsafePointer<CChar>?) -> exp_status {
    api { () throws(ClientError) in
        let context = try context(user).takeUnretainedValue()
        let key = try requiredString(eventKey, eventKeyLength, "event_key")
        var tags: EventTags? = nil
        if let tagsJSON {
            let document = try parseJSON(tagsJSON, what: "event tags")
            let text = UnsafeBufferPointer(start: UnsafeRawPointer(tagsJSON).assumingMemoryBound(to: UInt8.self),
                                           count: strlen(tagsJSON))
            switch EventTags.parse(document, text: text) {
            case .success(let parsed): tags = parsed
            case .failure(let problem): throw ClientError(.invalidEventTags, problem.message)
            }
        }
        let config = try context.client.config()
        guard let event = config.eventKeyIndex.find(key) else {
            throw ClientError(.unknownEvent, "unknown event \"\(key)\"")
        }
        try context.client.track(config: config, event: event, context: context, tags: tags)
    }
}

// MARK: forced decisions

@_cdecl("exp_user_set_forced_decision")
public func abiUserSetForcedDecision(_ user: OpaquePointer?, _ flagKey: UnsafePointer<CChar>?, _ flagKeyLength: Int,
                                     _ ruleKey: UnsafePointer<CChar>?, _ ruleKeyLength: Int,
                                     _ variationKey: UnsafePointer<CChar>?, _ variationKeyLength: Int) -> exp_status {
    api { () throws(ClientError) in
        let context = try context(user).takeUnretainedValue()
        try context.client.ensureOpen()
        let flag = try requiredString(flagKey, flagKeyLength, "flag_key")
        let rule = ruleKey == nil ? nil : try string(ruleKey, ruleKeyLength, "rule_key")
        let variation = try requiredString(variationKey, variationKeyLength, "variation_key")
        context.setForcedDecision(flagKey: flag, ruleKey: rule, variationKey: variation)
    }
}

@_cdecl("exp_user_get_forced_decision")
public func abiUserGetForcedDecision(_ user: OpaquePointer?, _ flagKey: UnsafePointer<CChar>?, _ flagKeyLength: Int,
                                     _ ruleKey: UnsafePointer<CChar>?, _ ruleKeyLength: Int,
                                     _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> exp_status {
    userForcedDecision(user, flagKey, flagKeyLength, ruleKey, ruleKeyLength, out, length: nil)
}

@_cdecl("exp_user_get_forced_decision_len")
public func abiUserGetForcedDecisionLen(_ user: OpaquePointer?, _ flagKey: UnsafePointer<CChar>?, _ flagKeyLength: Int,
                                        _ ruleKey: UnsafePointer<CChar>?, _ ruleKeyLength: Int,
                                        _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                                        _ outLength: UnsafeMutablePointer<Int>?) -> exp_status {
    userForcedDecision(user, flagKey, flagKeyLength, ruleKey, ruleKeyLength, out, length: outLength)
}

private func userForcedDecision(_ user: OpaquePointer?, _ flagKey: UnsafePointer<CChar>?, _ flagKeyLength: Int,
                                _ ruleKey: UnsafePointer<CChar>?, _ ruleKeyLength: Int,
                                _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                                length: UnsafeMutablePointer<Int>?) -> exp_status {
    api { () throws(ClientError) in
        let out = try required(out, "out_variation_key")
        out.pointee = nil
        length?.pointee = 0
        let context = try context(user).takeUnretainedValue()
        try context.client.ensureOpen()
        let flag = try requiredString(flagKey, flagKeyLength, "flag_key")
        let rule = ruleKey == nil ? nil : try string(ruleKey, ruleKeyLength, "rule_key")
        store(context.forcedDecision(flagKey: flag, ruleKey: rule), out, length: length)
    }
}

@_cdecl("exp_user_remove_forced_decision")
public func abiUserRemoveForcedDecision(_ user: OpaquePointer?, _ flagKey: UnsafePointer<CChar>?, _ flagKeyLength: Int,
                                        _ ruleKey: UnsafePointer<CChar>?, _ ruleKeyLength: Int,
                                        _ outRemoved: UnsafeMutablePointer<Int32>?) -> exp_status {
    api { () throws(ClientError) in
        let context = try context(user).takeUnretainedValue()
        try context.client.ensureOpen()
        let flag = try requiredString(flagKey, flagKeyLength, "flag_key")
        let rule = ruleKey == nil ? nil : try string(ruleKey, ruleKeyLength, "rule_key")
        let removed = context.removeForcedDecision(flagKey: flag, ruleKey: rule)
        outRemoved?.pointee = removed ? 1 : 0
    }
}

@_cdecl("exp_user_remove_all_forced_decisions")
public func abiUserRemoveAllForcedDecisions(_ user: OpaquePointer?) -> exp_status {
    api { () throws(ClientError) in
        let context = try context(user).takeUnretainedValue()
        try context.client.ensureOpen()
        context.removeAllForcedDecisions()
    }
}

// MARK: qualified segments

private func segmentsJSONText(_ segments: [String]?) -> String {
    guard let segments else { return "null" }
    var writer = JSONWriter()
    writer.beginArray()
    for segment in segments { writer.string(segment) }
    writer.endArray()
    return writer.text
}

@_cdecl("exp_user_fetch_qualified_segments")
public func abiUserFetchQualifiedSegments(_ user: OpaquePointer?, _ options: UInt32,
                                          _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> exp_status {
    api { () throws(ClientError) in
        out?.pointee = nil
        let context = try context(user).takeUnretainedValue()
        let fetchOptions = SegmentFetchOptions(rawValue: options)
        guard SegmentFetchOptions.all.isSuperset(of: fetchOptions) else {
            throw ClientError(.invalidArgument, "options: \(options) has bits that are not EXP_SEGMENT_* options")
        }
        let fetched = try context.client.fetchQualifiedSegments(for: context, options: fetchOptions)
        out?.pointee = duplicate(segmentsJSONText(fetched))
    }
}

@_cdecl("exp_user_is_qualified_for")
public func abiUserIsQualifiedFor(_ user: OpaquePointer?, _ segment: UnsafePointer<CChar>?, _ segmentLength: Int,
                                  _ out: UnsafeMutablePointer<Int32>?) -> exp_status {
    api { () throws(ClientError) in
        let out = try required(out, "out_qualified")
        let context = try context(user).takeUnretainedValue()
        let name = try requiredString(segment, segmentLength, "segment")
        out.pointee = context.isQualified(for: name) ? 1 : 0
    }
}

@_cdecl("exp_user_get_qualified_segments_json")
public func abiUserGetQualifiedSegmentsJSON(_ user: OpaquePointer?,
                                            _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> exp_status {
    api { () throws(ClientError) in
        let out = try required(out, "out_json")
        out.pointee = duplicate(segmentsJSONText(try context(user).takeUnretainedValue().qualifiedSegments))
    }
}

@_cdecl("exp_user_set_qualified_segments_json")
public func abiUserSetQualifiedSegmentsJSON(_ user: OpaquePointer?, _ segmentsJSON: UnsafePointer<CChar>?) -> exp_status {
    api { () throws(ClientError) in
        let context = try context(user).takeUnretainedValue()
        guard let segmentsJSON else { throw ClientError(.invalidArgument, "segments_json is NULL") }
        let document = try parseJSON(segmentsJSON, what: "segments_json")
        let list: [String]? = try withExtendedLifetime(document) { () throws(ClientError) -> [String]? in
            let root = document.root
            if root.kind == .null { return nil }
            guard root.kind == .array else {
                throw ClientError(.invalidArgument, "segments_json: expected an array of strings or null, got \(root.kindName)")
            }
            var names: [String] = []
            for (index, element) in root.elements.enumerated() {
                guard let name = element.string else {
                    throw ClientError(.invalidArgument, "segments_json[\(index)]: expected a string, got \(element.kindName)")
                }
                names.append(name)
            }
            return names
        }
        context.setQualifiedSegments(list)
    }
}

// MARK: stored profiles (sticky bucketing), by user id

@_cdecl("exp_profile_get")
public func abiProfileGet(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?, _ userIdLength: Int,
                          _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> exp_status {
    api { () throws(ClientError) in
        let out = try required(out, "out_json")
        out.pointee = nil
        let client = try client(handle)
        let user = try requiredString(userId, userIdLength, "user_id")
        out.pointee = try client.storedProfileJSON(userId: user).map(duplicate)
    }
}

@_cdecl("exp_profile_delete")
public func abiProfileDelete(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?, _ userIdLength: Int,
                             _ outDeleted: UnsafeMutablePointer<Int32>?) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        let user = try requiredString(userId, userIdLength, "user_id")
        let deleted = try client.deleteStoredProfile(userId: user)
        outDeleted?.pointee = deleted ? 1 : 0
    }
}
