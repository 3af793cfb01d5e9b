import CExperimentABI
import ExperimentCore
import ExperimentRuntime
#if canImport(Glibc)
import Glibc
#endif

/// What an exp_profile_lookup_fn answered through exp_profile_reply_set (the C exp_profile_reply).
private final class ProfileReply {
    var json: String? = nil
    /// The user id the lookup is for, with its bytes (exp_profile_reply_user_id: it may hold NUL bytes,
    /// which the lookup's NUL-terminated `user_id` argument cannot carry).
    let userId: UnsafeMutableBufferPointer<CChar>

    init(userId: String) {
        let text = userId.utf8CString  // NUL-terminated: the pointer handed out is one too
        self.userId = .allocate(capacity: text.count)
        _ = self.userId.initialize(from: text)
    }

    deinit { userId.deallocate() }
}

/// The host's lookup/save pair and its user data.
private struct HostProfileCallbacks: @unchecked Sendable {
    let lookup: exp_profile_lookup_fn
    let save: exp_profile_save_fn
    let userData: UnsafeMutableRawPointer?

    func lookup(_ userId: String) throws(ClientError) -> String? {
        let reply = ProfileReply(userId: userId)
        let status = withExtendedLifetime(reply) {
            userId.withCString { lookup($0, OpaquePointer(Unmanaged.passUnretained(reply).toOpaque()), userData) }
        }
        guard status == 0 else { throw ClientError(.storeFailed, "the host's profile lookup returned \(status)") }
        return reply.json
    }

    func save(_ userId: String, _ json: String) throws(ClientError) {
        let status = userId.withCString { user in json.withCString { save(user, $0, userData) } }
        guard status == 0 else { throw ClientError(.storeFailed, "the host's profile save returned \(status)") }
    }
}

@_cdecl("exp_client_set_profile_store")
public func abiSetProfileStore(_ handle: OpaquePointer?, _ lookup: exp_profile_lookup_fn?, _ save: exp_profile_save_fn?,
                               _ userData: UnsafeMutableRawPointer?) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        try client.ensureOpen()
        switch (lookup, save) {
        case (nil, nil):
            client.installProfileStore(nil)
        case (let lookup?, let save?):
            let host = HostProfileCallbacks(lookup: lookup, save: save, userData: userData)
            client.installProfileStore(CallbackProfileStore(lookup: { (user) throws(ClientError) in try host.lookup(user) },
                                                            save: { (user, json) throws(ClientError) in try host.save(user, json) }))
        default:
            throw ClientError(.invalidArgument, "lookup and save must both be given, or both be NULL")
        }
    }
}

@_cdecl("exp_profile_reply_set")
public func abiProfileReplySet(_ reply: OpaquePointer?, _ json: UnsafePointer<CChar>?, _ length: Int) -> exp_status {
    api { () throws(ClientError) in
        let reply = try required(reply, "reply")
        let bytes = try required(json, "json")
        let length = try checkedCount(length, limit: ProfileJSON.maxBytes, "length")
        let text = String(decoding: UnsafeRawBufferPointer(start: bytes, count: length), as: UTF8.self)
        Unmanaged<ProfileReply>.fromOpaque(UnsafeRawPointer(reply)).takeUnretainedValue().json = text
    }
}

@_cdecl("exp_profile_reply_user_id")
public func abiProfileReplyUserId(_ reply: OpaquePointer?, _ outId: UnsafeMutablePointer<UnsafePointer<CChar>?>?,
                                  _ outLength: UnsafeMutablePointer<Int>?) -> exp_status {
    api { () throws(ClientError) in
        let reply = Unmanaged<ProfileReply>.fromOpaque(UnsafeRawPointer(try required(reply, "reply")))
            .takeUnretainedValue()
        let outId = try required(outId, "out_id")
        let outLength = try required(outLength, "out_length")
        // The reply lives as long as the lookup runs, and its bytes with it.
        outId.pointee = UnsafePointer(reply.userId.baseAddress!)
        outLength.pointee = reply.userId.count - 1
    }
}

@_cdecl("exp_client_profile_stats")
public func abiProfileStats(_ handle: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        let out = try required(out, "out_json")
        try client.ensureOpen()
        out.pointee = duplicate(client.profileStatsJSON())
    }
}

/// Checks an experiment id (and a variation position) against the current datafile, when there is one.
private func checkMembership(_ client: Client, experimentId: String, groupIndex: Int?) throws(ClientError) {
    guard client.isReady, let config = try? client.config() else { return }
    guard let index = config.experimentIdIndex.find(experimentId) else {
        throw ClientError(.unknownExperiment, "unknown experiment id \"\(experimentId)\"")
    }
    let experiment = config.experiments[index]
    if let groupIndex, groupIndex >= experiment.variations.count {
        throw ClientError(.unknownVariation, "experiment \"\(experiment.key.text)\" (id \(experimentId)) has "
                          + "\(experiment.variations.count) variations: no group index \(groupIndex)")
    }
}

/// Forces `user` into the experiment: at the variation position `groupIndex`, or (-1) bucketed as usual.
private func forceInclude(_ client: Client, user: String, experimentId: String, groupIndex: Int32) throws(ClientError) {
    guard groupIndex >= -1 else {
        throw ClientError(.invalidArgument, "group_index: \(groupIndex) (expected -1 or a variation position)")
    }
    let position = groupIndex >= 0 ? Int(groupIndex) : nil
    try checkMembership(client, experimentId: experimentId, groupIndex: position)
    client.overrides.setMembership(userId: user, experimentId: experimentId, .included(variationIndex: position))
}

@_cdecl("exp_force_include")
public func abiForceInclude(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?, _ experimentId: UnsafePointer<CChar>?,
                            _ groupIndex: Int32) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        try client.ensureOpen()
        try forceInclude(client, user: try string(userId, "user_id"),
                         experimentId: try string(experimentId, "experiment_id"), groupIndex: groupIndex)
    }
}

@_cdecl("exp_force_exclude")
public func abiForceExclude(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?,
                            _ experimentId: UnsafePointer<CChar>?) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        try client.ensureOpen()
        let user = try string(userId, "user_id")
        let experiment = try string(experimentId, "experiment_id")
        try checkMembership(client, experimentId: experiment, groupIndex: nil)
        client.overrides.setMembership(userId: user, experimentId: experiment, .excluded)
    }
}

@_cdecl("exp_force_exclude_all")
public func abiForceExcludeAll(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        try client.ensureOpen()
        client.overrides.setExcludedFromAll(userId: try string(userId, "user_id"), true)
    }
}

@_cdecl("exp_force_clear")
public func abiForceClear(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?,
                          _ experimentId: UnsafePointer<CChar>?) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        try client.ensureOpen()
        let user = try string(userId, "user_id")
        if let experiment = try optionalString(experimentId, "experiment_id") {
            client.overrides.setMembership(userId: user, experimentId: experiment, nil)
        } else {
            client.overrides.clearMemberships(userId: user)
        }
    }
}

@_cdecl("exp_force_include_key")
public func abiForceIncludeKey(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?,
                               _ experimentKey: UnsafePointer<CChar>?, _ groupIndex: Int32) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        guard groupIndex >= -1 else {
            throw ClientError(.invalidArgument, "group_index: \(groupIndex) (expected -1 or a variation position)")
        }
        try client.forceInclude(userId: try string(userId, "user_id"),
                                experimentKey: try string(experimentKey, "experiment_key"),
                                groupIndex: groupIndex >= 0 ? Int(groupIndex) : nil)
    }
}

@_cdecl("exp_force_exclude_key")
public func abiForceExcludeKey(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?,
                               _ experimentKey: UnsafePointer<CChar>?) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        try client.forceExclude(userId: try string(userId, "user_id"),
                                experimentKey: try string(experimentKey, "experiment_key"))
    }
}

@_cdecl("exp_force_clear_key")
public func abiForceClearKey(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?,
                             _ experimentKey: UnsafePointer<CChar>?) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        try client.forceClear(userId: try string(userId, "user_id"),
                              experimentKey: try string(experimentKey, "experiment_key"))
    }
}
