import CExperimentABI
import ExperimentCore
import ExperimentRuntime
#if canImport(Glibc)
import Glibc
#endif

private func setProperty(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?, _ key: UnsafePointer<CChar>?,
                         _ value: () throws(ClientError) -> OwnedValue?) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        try client.ensureOpen()
        let user = try string(userId, "user_id")
        let name = try text(key, "key")
        client.properties.update(userId: user, [(Array(name), try value())])
    }
}

@_cdecl("exp_set_user_property")
public func abiSetUserProperty(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?, _ key: UnsafePointer<CChar>?,
                               _ value: UnsafePointer<exp_value>?) -> exp_status {
    setProperty(handle, userId, key) { () throws(ClientError) in try ownedValue(value, what: "value") }
}

@_cdecl("exp_set_user_property_json")
public func abiSetUserPropertyJSON(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?, _ key: UnsafePointer<CChar>?,
                                   _ valueJSON: UnsafePointer<CChar>?) -> exp_status {
    setProperty(handle, userId, key) { () throws(ClientError) in
        let document = try parseJSON(try required(valueJSON, "value_json"), what: "value_json")
        return try ownedValue(document.root, what: "value_json")
    }
}

@_cdecl("exp_remove_user_property")
public func abiRemoveUserProperty(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?,
                                  _ key: UnsafePointer<CChar>?) -> exp_status {
    setProperty(handle, userId, key) { () throws(ClientError) in nil }
}

@_cdecl("exp_clear_user_properties")
public func abiClearUserProperties(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        try client.ensureOpen()
        client.properties.clear(userId: try string(userId, "user_id"))
    }
}

@_cdecl("exp_get_user_properties_json")
public func abiGetUserPropertiesJSON(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?,
                                     _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        try client.ensureOpen()
        let out = try required(out, "out_json")
        let properties = client.properties.properties(of: try string(userId, "user_id"))
        out.pointee = duplicate(attributesJSON(properties))
    }
}

@_cdecl("exp_track")
public func abiTrack(_ handle: OpaquePointer?, _ eventKey: UnsafePointer<CChar>?, _ userId: UnsafePointer<CChar>?,
                     _ attributes: UnsafePointer<exp_attribute>?, _ attributeCount: Int,
                     _ tagsJSON: UnsafePointer<CChar>?) -> exp_status {
    track(handle, { () throws(ClientError) in try text(eventKey, "event_key") },
          { () throws(ClientError) in try text(userId, "user_id") },
          PlainAttributeInput(pointer: attributes, count: attributeCount), tagsJSON)
}

@_cdecl("exp_track_n")
public func abiTrackN(_ handle: OpaquePointer?, _ eventKey: UnsafePointer<CChar>?, _ eventKeyLength: Int,
                      _ userId: UnsafePointer<CChar>?, _ userIdLength: Int,
                      _ attributes: UnsafePointer<exp_attribute_n>?, _ attributeCount: Int,
                      _ tagsJSON: UnsafePointer<CChar>?) -> exp_status {
    track(handle, { () throws(ClientError) in try sizedText(eventKey, eventKeyLength, "event_key") },
          { () throws(ClientError) in try sizedText(userId, userIdLength, "user_id") },
          SizedAttributeInput(pointer: attributes, count: attributeCount), tagsJSON)
}

/// exp_track and exp_track_n.
private func track<Input: AttributeInput>(_ handle: OpaquePointer?, _ eventKey: () throws(ClientError) -> UTF8Text,
                                          _ userId: () throws(ClientError) -> UTF8Text, _ attributes: Input,
                                          _ tagsJSON: UnsafePointer<CChar>?) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        let user = try userId()
        let keyText = try eventKey()
        let key = String(decoding: keyText, as: UTF8.self)
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
        let config = try client.config()
        guard let event = config.eventKeyIndex.find(keyText) else {
            throw ClientError(.unknownEvent, "unknown event \"\(key)\"")
        }
        try attributes.with { (attributes) throws(ClientError) in
            try client.track(config: config, event: event, userId: user, attributes: attributes, tags: tags)
        }
    }
}

/// A user's attributes as a JSON object (stored properties, a context's attributes): numbers beyond 64 bits as
/// their digits, values conditions cannot use as null.
func attributesJSON(_ attributes: OwnedAttributes) -> String {
    var writer = JSONWriter()
    writer.beginObject()
    for entry in attributes.entries {
        writer.key(String(decoding: entry.key, as: UTF8.self))
        switch entry.owned {
        case .null: writer.null()
        case .bool(let b): writer.bool(b)
        case .int(let n): writer.int(n)
        case .double(let d): writer.double(d)
        case .string(let bytes): writer.string(String(decoding: bytes, as: UTF8.self))
        case .bigInteger(let digits): writer.raw(String(decoding: digits, as: UTF8.self))
        case .unsupported: writer.null()
        }
    }
    writer.endObject()
    return writer.text
}
