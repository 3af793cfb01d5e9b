import CExperimentABI
import ExperimentCore
import ExperimentRuntime
#if canImport(Glibc)
import Glibc
#endif

/// The host's run-when-ready callback and its user data, carried onto a callback thread.
private struct HostWhenReady: @unchecked Sendable {
    let function: exp_ready_fn
    let userData: UnsafeMutableRawPointer?

    func call(_ error: ClientError?) {
        // exp_last_error() inside the callback names the reason (on the thread that runs it).
        if let error { LastError.set(error.message) } else { LastError.clear() }
        function(error?.code.rawValue ?? 0, userData)
    }
}

@_cdecl("exp_client_run_when_ready")
public func abiClientRunWhenReady(_ handle: OpaquePointer?, _ timeoutMs: Int64, _ callback: exp_ready_fn?,
                                  _ userData: UnsafeMutableRawPointer?) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        let host = HostWhenReady(function: try required(callback, "callback"), userData: userData)
        try client.runWhenReady(timeoutMs: timeoutMs) { error in host.call(error) }
    }
}

/// The host's delivery callback and its user data.
private struct HostDelivery: @unchecked Sendable {
    let function: exp_delivery_fn
    let userData: UnsafeMutableRawPointer?

    func call(_ code: ErrorCode?, _ sent: Int) {
        if let code { LastError.set(Self.message(code)) } else { LastError.clear() }
        function(code.map(status) ?? statusOK, sent, userData)
    }

    private static func message(_ code: ErrorCode) -> String {
        switch code {
        case .deliveryFailed: return "the event was not delivered: the endpoint failed it (it stays queued and is "
            + "retried) or refused it for good (event_dead_letter); exp_client_stats has the last error"
        case .timeout: return "events not delivered in time: they stay on disk and are retried"
        case .closed: return "the client was closed"
        default: return "delivery ended with code \(code.rawValue)"
        }
    }
}

private func delivery(_ callback: exp_delivery_fn?, _ userData: UnsafeMutableRawPointer?) throws(ClientError)
    -> DeliveryWatch.Completion
{
    let host = HostDelivery(function: try required(callback, "callback"), userData: userData)
    return { code, sent in host.call(code, sent) }
}

@_cdecl("exp_track_conversion_with_callback")
public func abiTrackConversionWithCallback(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?, _ goalId: Int64,
                                           _ revenue: Double, _ callback: exp_delivery_fn?,
                                           _ userData: UnsafeMutableRawPointer?) -> exp_status {
    api { () throws(ClientError) in
        let completion = try delivery(callback, userData)
        try trackConversion(handle, userId, goalId, revenue, completion: completion)
    }
}

@_cdecl("exp_flush_user_with_callback")
public func abiFlushUserWithCallback(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?,
                                     _ callback: exp_delivery_fn?, _ userData: UnsafeMutableRawPointer?) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        let user = try string(userId, "user_id")
        let completion = try delivery(callback, userData)
        let config = try client.config()
        try client.flushUserData(config: config, userId: user, completion: completion)
    }
}

@_cdecl("exp_client_flush_async")
public func abiClientFlushAsync(_ handle: OpaquePointer?, _ callback: exp_delivery_fn?,
                                _ userData: UnsafeMutableRawPointer?) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        try client.flushAsync(try delivery(callback, userData))
    }
}
