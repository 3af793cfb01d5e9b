import CExperimentABI
import ExperimentRuntime

/// The host's listener and its user data, carried into the runtime's notification center.
private struct HostListener: @unchecked Sendable {
    let function: exp_notification_fn
    let userData: UnsafeMutableRawPointer?

    func notify(_ type: NotificationType, _ payload: String) {
        payload.withCString { function(type.rawValue, $0, userData) }
    }
}

@_cdecl("exp_add_notification_listener")
public func abiAddNotificationListener(_ handle: OpaquePointer?, _ type: Int32, _ listener: exp_notification_fn?,
                                       _ userData: UnsafeMutableRawPointer?,
                                       _ outId: UnsafeMutablePointer<Int64>?) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        let listener = try required(listener, "listener")
        guard let kind = NotificationType(rawValue: type) else {
            throw ClientError(.invalidArgument, "type: \(type) is not an exp_notification_type (1 to 6)")
        }
        try client.ensureOpen()
        let host = HostListener(function: listener, userData: userData)
        let id = client.notifications.add(kind) { type, payload in host.notify(type, payload) }
        outId?.pointee = id
    }
}

@_cdecl("exp_remove_notification_listener")
public func abiRemoveNotificationListener(_ handle: OpaquePointer?, _ id: Int64) -> exp_status {
    api { () throws(ClientError) in
        guard try client(handle).notifications.remove(id: id) else {
            throw ClientError(.notFound, "no notification listener with id \(id)")
        }
    }
}
