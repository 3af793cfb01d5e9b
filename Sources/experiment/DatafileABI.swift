import CExperimentABI
import ExperimentCore
import ExperimentRuntime

/// The host's readiness callback and its user data, carried onto the manager's thread.
private struct HostReady: @unchecked Sendable {
    let function: exp_ready_fn?
    let userData: UnsafeMutableRawPointer?

    func call(_ failure: ErrorCode?) {
        function?(failure?.rawValue ?? 0, userData)
    }
}

@_cdecl("exp_client_start_async")
public func abiClientStartAsync(_ handle: OpaquePointer?, _ fallback: UnsafePointer<CChar>?, _ length: Int,
                                _ callback: exp_ready_fn?, _ userData: UnsafeMutableRawPointer?) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        let length = try checkedCount(length, limit: DatafileCompiler.maxBytes, "length")
        // The fallback is copied: the caller's buffer is only borrowed for the call.
        let bundled = fallback.map { Array(UnsafeRawBufferPointer(start: $0, count: length)) }
        let host = HostReady(function: callback, userData: userData)
        try client.startAsync(fallback: bundled) { failure in host.call(failure) }
    }
}

@_cdecl("exp_client_wait_ready")
public func abiClientWaitReady(_ handle: OpaquePointer?, _ timeoutMs: Int64) -> exp_status {
    api { () throws(ClientError) in try client(handle).waitReady(timeoutMs: timeoutMs) }
}

@_cdecl("exp_client_refresh")
public func abiClientRefresh(_ handle: OpaquePointer?) -> exp_status {
    api { () throws(ClientError) in try client(handle).refreshDatafile() }
}

@_cdecl("exp_client_find")
public func abiClientFind(_ tag: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> exp_status {
    api { () throws(ClientError) in
        let out = try required(out, "out_client")
        let name = try string(tag, "tag")
        guard let found = ClientRegistry.find(name) else {
            throw ClientError(.notFound, "no open client has the tag \"\(name)\"")
        }
        // Borrowed: the handle is the owner's own pointer, not a new reference.
        out.pointee = OpaquePointer(Unmanaged.passUnretained(found).toOpaque())
    }
}

@_cdecl("exp_client_datafile_status_json")
public func abiClientDatafileStatusJSON(_ handle: OpaquePointer?,
                                        _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        let out = try required(out, "out_json")
        try client.ensureOpen()
        out.pointee = duplicate(client.datafileStatusJSON())
    }
}
