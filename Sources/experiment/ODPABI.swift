import CExperimentABI
import ExperimentCore
import ExperimentRuntime
#if canImport(Glibc)
import Glibc
#endif

// Real-time segments (ODP): the C functions of the "Real-time segments" section of experiment.h.

private func segmentOptions(_ raw: UInt32) throws(ClientError) -> SegmentFetchOptions {
    let options = SegmentFetchOptions(rawValue: raw)
    guard SegmentFetchOptions.all.isSuperset(of: options) else {
        throw ClientError(.invalidArgument, "options: \(raw) has bits that are not EXP_SEGMENT_* options")
    }
    return options
}

private func segmentsJSON(_ segments: [String]?) -> String {
    guard let segments else { return "null" }
    var writer = JSONWriter()
    writer.beginArray()
    for segment in segments { writer.string(segment) }
    writer.endArray()
    return writer.text
}

@_cdecl("exp_fetch_qualified_segments")
public func abiFetchQualifiedSegments(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?, _ options: UInt32,
                                      _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        let user = try string(userId, "user_id")
        let fetched = try client.fetchQualifiedSegments(userId: user, options: try segmentOptions(options))
        out?.pointee = duplicate(segmentsJSON(fetched))
    }
}

/// The host's completion callback and its user data.
private struct HostSegmentsCallback: @unchecked Sendable {
    let function: exp_segments_fn
    let userData: UnsafeMutableRawPointer?

    func complete(_ result: Result<[String], ClientError>) {
        switch result {
        case .success(let segments):
            segmentsJSON(segments).withCString { function(statusOK, $0, "", userData) }
        case .failure(let error):
            error.message.withCString { function(status(error.code), nil, $0, userData) }
        }
    }
}

@_cdecl("exp_fetch_qualified_segments_async")
public func abiFetchQualifiedSegmentsAsync(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?, _ options: UInt32,
                                           _ callback: exp_segments_fn?, _ userData: UnsafeMutableRawPointer?) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        let user = try string(userId, "user_id")
        let host = HostSegmentsCallback(function: try required(callback, "callback"), userData: userData)
        try client.fetchQualifiedSegmentsAsync(userId: user, options: try segmentOptions(options)) { result in
            host.complete(result)
        }
    }
}

@_cdecl("exp_is_qualified_for")
public func abiIsQualifiedFor(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?, _ segment: UnsafePointer<CChar>?,
                              _ out: UnsafeMutablePointer<Int32>?) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        let user = try string(userId, "user_id")
        let name = try string(segment, "segment")
        let out = try required(out, "out_qualified")
        out.pointee = try client.isQualified(userId: user, for: name) ? 1 : 0
    }
}

@_cdecl("exp_get_qualified_segments_json")
public func abiGetQualifiedSegmentsJSON(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?,
                                        _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        let user = try string(userId, "user_id")
        let out = try required(out, "out_json")
        out.pointee = duplicate(segmentsJSON(try client.qualifiedSegments(of: user)))
    }
}

@_cdecl("exp_set_qualified_segments_json")
public func abiSetQualifiedSegmentsJSON(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?,
                                        _ segmentsJSON: UnsafePointer<CChar>?) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        let user = try string(userId, "user_id")
        var list: [String]? = nil
        if let segmentsJSON {
            let document = try parseJSON(segmentsJSON, what: "segments_json")
            try withExtendedLifetime(document) { () throws(ClientError) in
                let root = document.root
                if root.kind == .null { return }
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
                list = names
            }
        }
        try client.setQualifiedSegments(list, for: user)
    }
}

@_cdecl("exp_identify_user")
public func abiIdentifyUser(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        try client.identifyUser(try string(userId, "user_id"))
    }
}

@_cdecl("exp_send_odp_event")
public func abiSendODPEvent(_ handle: OpaquePointer?, _ type: UnsafePointer<CChar>?, _ action: UnsafePointer<CChar>?,
                            _ identifiersJSON: UnsafePointer<CChar>?, _ dataJSON: UnsafePointer<CChar>?) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        let eventType = try optionalString(type, "type")
        let eventAction = try string(action, "action")
        let identifiersDocument = try parseJSON(try required(identifiersJSON, "identifiers_json"), what: "identifiers_json")
        let identifiers = try withExtendedLifetime(identifiersDocument) { () throws(ClientError) -> [(String, String)] in
            try odpIdentifiers(identifiersDocument.root)
        }
        let dataDocument = try dataJSON.map { (text) throws(ClientError) in try parseJSON(text, what: "data_json") }
        try withExtendedLifetime(dataDocument) { () throws(ClientError) in
            let data = dataDocument?.root
            if let data, data.kind != .null {
                guard data.kind == .object else {
                    throw ClientError(.invalidArgument, "data_json: expected an object, got \(data.kindName)")
                }
                for (key, value) in data.members where value.kind == .array || value.kind == .object {
                    throw ClientError(.invalidArgument,
                                      "data_json.\(key): ODP data is not valid (values are strings, numbers, booleans or null)")
                }
            }
            try client.sendODPEvent(type: eventType, action: eventAction, identifiers: identifiers,
                                    data: data?.kind == .object ? data : nil)
        }
    }
}

/// Identifiers as the reference takes them: a non-empty object of strings, with a misspelt user-id key
/// ("fs-user-id", "FS_USER_ID") renamed to "fs_user_id".
private func odpIdentifiers(_ root: JSONValue) throws(ClientError) -> [(String, String)] {
    guard root.kind == .object else {
        throw ClientError(.invalidArgument, "identifiers_json: expected an object of strings, got \(root.kindName)")
    }
    var identifiers: [(String, String)] = []
    for (key, value) in root.members {
        guard let text = value.string else {
            throw ClientError(.invalidArgument, "identifiers_json.\(key): expected a string, got \(value.kindName)")
        }
        identifiers.append((key, text))
    }
    if !identifiers.contains(where: { $0.0 == "fs_user_id" }),
       let index = identifiers.firstIndex(where: { ["fs-user-id", "fs_user_id"].contains($0.0.lowercased()) })
    {
        identifiers[index].0 = "fs_user_id"
    }
    return identifiers
}

@_cdecl("exp_flush_odp_events")
public func abiFlushODPEvents(_ handle: OpaquePointer?, _ timeoutMs: Int64) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        try client.ensureOpen()
        guard timeoutMs >= 0 else { throw ClientError(.invalidArgument, "timeout_ms: expected 0 or more") }
        guard client.odp.flushEvents(timeoutMs: Int(timeoutMs)) else {
            throw ClientError(.timeout, "ODP events still queued after \(timeoutMs) ms: \(client.odp.pendingEvents) wait in the state file")
        }
    }
}

@_cdecl("exp_get_vuid")
public func abiGetVUID(_ handle: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        let out = try required(out, "out_vuid")
        out.pointee = duplicate(try client.vuid())
    }
}
