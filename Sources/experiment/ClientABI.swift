import CExperimentABI
import ExperimentCore
import ExperimentRuntime
#if canImport(Glibc)
import Glibc
#endif

@_cdecl("exp_client_create")
public func abiClientCreate(_ optionsJSON: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> exp_status {
    api { () throws(ClientError) in
        let out = try required(out, "out_client")
        let options = try ClientOptions.parse(json: optionsJSON.map {
            UnsafeRawBufferPointer(start: $0, count: strnlen($0, maxInputJSONBytes + 1))
        })
        let created = Client(options: options)
        if let tag = options.tag { try ClientRegistry.claim(tag, for: created) }  // EXP_ERR_TAG_IN_USE
        out.pointee = OpaquePointer(Unmanaged.passRetained(created).toOpaque())
    }
}

@_cdecl("exp_client_start")
public func abiClientStart(_ handle: OpaquePointer?, _ datafile: UnsafePointer<CChar>?, _ length: Int) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        let bytes = try required(datafile, "datafile")
        let length = try checkedCount(length, limit: DatafileCompiler.maxBytes, "length")
        try client.start(datafile: UnsafeRawBufferPointer(start: bytes, count: length))
    }
}

@_cdecl("exp_client_is_ready")
public func abiClientIsReady(_ handle: OpaquePointer?, _ out: UnsafeMutablePointer<Int32>?) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        let out = try required(out, "out_ready")
        try client.ensureOpen()
        out.pointee = client.isReady ? 1 : 0
    }
}

@_cdecl("exp_client_config_json")
public func abiClientConfigJSON(_ handle: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> exp_status {
    api { () throws(ClientError) in
        let out = try required(out, "out_json")
        let config = try client(handle).config()
        var writer = JSONWriter()
        writer.beginObject()
        writer.field("revision", config.revision)
        writer.field("project_id", config.projectId)
        writer.field("account_id", config.accountId)
        writer.field("environment_key", config.environmentKey)
        writer.field("sdk_key", config.sdkKey)
        writer.key("flags"); writer.beginArray(); config.flags.forEach { writer.string($0.key.text) }; writer.endArray()
        writer.key("experiments"); writer.beginArray()
        // Experiments reachable by key (a repeated id or key leaves only the definition the reference keeps).
        for (index, experiment) in config.experiments.enumerated()
        where experiment.kind == .experiment && config.experimentKeyIndex.find(experiment.key.text) == index {
            writer.string(experiment.key.text)
        }
        writer.endArray()
        writer.key("events"); writer.beginArray(); config.events.forEach { writer.string($0.key) }; writer.endArray()
        writer.endObject()
        out.pointee = duplicate(writer.text)
    }
}

@_cdecl("exp_client_datafile_json")
public func abiClientDatafileJSON(_ handle: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                                  _ outLength: UnsafeMutablePointer<Int>?) -> exp_status {
    api { () throws(ClientError) in
        let out = try required(out, "out_json")
        let text = try client(handle).datafileText()
        // A copy for the caller (exp_free), NUL-terminated; a datafile holds no NUL byte (JSON escapes it).
        guard let copy = malloc(text.count + 1)?.assumingMemoryBound(to: CChar.self) else {
            throw ClientError(.internalError, "out of memory copying a datafile of \(text.count) bytes")
        }
        text.withUnsafeBytes { bytes in
            if let base = bytes.baseAddress { memcpy(copy, base, bytes.count) }
        }
        copy[text.count] = 0
        out.pointee = copy
        outLength?.pointee = text.count
    }
}

@_cdecl("exp_client_close")
public func abiClientClose(_ handle: OpaquePointer?) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        let left = client.close()
        if left > 0 {
            throw ClientError(.timeout, "closed; \(left) events not delivered within close_timeout_ms "
                              + "(\(client.options.closeTimeoutMs) ms) stay on disk and the next client sends them")
        }
    }
}

@_cdecl("exp_client_free")
public func abiClientFree(_ handle: OpaquePointer?) {
    guard let handle else { return }
    let unmanaged = Unmanaged<Client>.fromOpaque(UnsafeRawPointer(handle))
    unmanaged.takeUnretainedValue().close()
    unmanaged.release()
}

@_cdecl("exp_validate_datafile")
public func abiValidateDatafile(_ datafile: UnsafePointer<CChar>?, _ length: Int) -> exp_status {
    api { () throws(ClientError) in
        let bytes = try required(datafile, "datafile")
        let length = try checkedCount(length, limit: DatafileCompiler.maxBytes, "length")
        do throws(DatafileError) {
            _ = try DatafileCompiler.compile(UnsafeRawBufferPointer(start: bytes, count: length))
        } catch {
            throw ClientError(error)
        }
    }
}

/// The host's dispatcher and its user data, carried into the runtime's event sink.
private struct HostDispatcher: @unchecked Sendable {
    let function: exp_event_dispatch_fn
    let userData: UnsafeMutableRawPointer?

    func dispatch(_ batch: EventBatch) -> Bool {
        var body = batch.body
        return body.withUTF8 { bytes in
            batch.url.withCString { url in
                batch.httpVerb.withCString { verb in
                    // body bytes are followed by a NUL only in a C string copy: make one.
                    let copy = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count + 1)
                    defer { copy.deallocate() }
                    if bytes.count > 0 { UnsafeMutableRawPointer(copy).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count) }
                    copy[bytes.count] = 0
                    var event = exp_event(url: url, http_verb: verb, body: copy, body_length: bytes.count)
                    return function(&event, userData) == 0
                }
            }
        }
    }
}

@_cdecl("exp_client_set_event_dispatcher")
public func abiSetEventDispatcher(_ handle: OpaquePointer?, _ dispatch: exp_event_dispatch_fn?,
                                  _ userData: UnsafeMutableRawPointer?) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        try client.ensureOpen()
        guard let dispatch else {
            client.events.setDispatcher(nil)
            return
        }
        let host = HostDispatcher(function: dispatch, userData: userData)
        client.events.setDispatcher { batch in host.dispatch(batch) }
    }
}

/// The host's log callback and its user data, carried into the runtime's logger.
private struct HostLogger: @unchecked Sendable {
    let function: exp_log_fn
    let userData: UnsafeMutableRawPointer?

    func log(_ level: LogLevel, _ message: String) {
        message.withCString { function(level.rawValue, $0, userData) }
    }
}

@_cdecl("exp_client_set_logger")
public func abiSetLogger(_ handle: OpaquePointer?, _ log: exp_log_fn?, _ userData: UnsafeMutableRawPointer?) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        try client.ensureOpen()
        guard let log else {
            client.logger.setSink(nil)
            return
        }
        let host = HostLogger(function: log, userData: userData)
        client.logger.setSink { level, message in host.log(level, message) }
    }
}

@_cdecl("exp_client_set_log_level")
public func abiSetLogLevel(_ handle: OpaquePointer?, _ level: Int32) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        guard let level = LogLevel(rawValue: level) else {
            throw ClientError(.invalidArgument, "level: \(level) is not an exp_log_level (1 to 4)")
        }
        client.logger.level = level
    }
}

@_cdecl("exp_client_optimizely_config_json")
public func abiClientOptimizelyConfigJSON(_ handle: OpaquePointer?,
                                          _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> exp_status {
    api { () throws(ClientError) in
        let out = try required(out, "out_json")
        out.pointee = duplicate(try client(handle).optimizelyConfigJSON())
    }
}
