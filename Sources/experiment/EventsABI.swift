import CExperimentABI
import ExperimentCore
import ExperimentRuntime
#if canImport(Glibc)
import Glibc
#endif

@_cdecl("exp_flush")
public func abiFlush(_ handle: OpaquePointer?) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        try client.ensureOpen()
        let left = client.events.flush(timeoutMs: client.options.closeTimeoutMs)
        if left > 0 {
            throw ClientError(.timeout, "\(left) events still queued after close_timeout_ms "
                              + "(\(client.options.closeTimeoutMs) ms); they stay on disk and are retried")
        }
    }
}

@_cdecl("exp_client_stats")
public func abiClientStats(_ handle: OpaquePointer?,
                           _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        let out = try required(out, "out_json")
        out.pointee = duplicate(client.events.statsJSON())
    }
}

@_cdecl("exp_track_conversion")
public func abiTrackConversion(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?, _ goalId: Int64,
                               _ revenue: Double) -> exp_status {
    api { () throws(ClientError) in try trackConversion(handle, userId, goalId, revenue, completion: nil) }
}

/// exp_track_conversion and exp_track_conversion_with_callback.
func trackConversion(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?, _ goalId: Int64, _ revenue: Double,
                     completion: DeliveryWatch.Completion?) throws(ClientError) {
    let client = try client(handle)
    let user = try string(userId, "user_id")
    guard goalId >= 0 else { throw ClientError(.invalidArgument, "goal_id: \(goalId) is negative") }
    guard revenue.isNaN || revenue.isFinite else {
        throw ClientError(.invalidArgument, "revenue: \(revenue) is not a finite number")
    }
    let config = try client.config()
    try client.trackConversion(config: config, userId: user, goalId: goalId, revenue: revenue.isNaN ? nil : revenue,
                               completion: completion)
}

@_cdecl("exp_add_user_data")
public func abiAddUserData(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?,
                           _ dataJSON: UnsafePointer<CChar>?) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        let user = try string(userId, "user_id")
        let document = try parseJSON(try required(dataJSON, "data_json"), what: "data_json")
        let root = document.root
        let items = root.kind == .array ? root.elements : [root]
        var entries: [UserDataEntry] = []
        for (position, item) in items.enumerated() {
            entries.append(try userDataEntry(item, what: root.kind == .array ? "data_json[\(position)]" : "data_json"))
        }
        try client.addUserData(userId: user, entries)
    }
}

@_cdecl("exp_flush_user")
public func abiFlushUser(_ handle: OpaquePointer?, _ userId: UnsafePointer<CChar>?) -> exp_status {
    api { () throws(ClientError) in
        let client = try client(handle)
        let user = try string(userId, "user_id")
        let config = try client.config()
        try client.flushUserData(config: config, userId: user)
    }
}

/// {"type": "custom", "index": 1, "value": "x" | ["x", ...]} | {"type": "interest", "index": 2} |
/// {"type": "conversion", "goal_id": 32, "revenue": 10.0, "negative": false}
private func userDataEntry(_ item: JSONValue, what: String) throws(ClientError) -> UserDataEntry {
    guard item.kind == .object, let type = item.member("type")?.string else {
        throw ClientError(.invalidArgument, "\(what): expected an object with \"type\": \"custom\", \"interest\" or \"conversion\"")
    }
    func index(_ name: String) throws(ClientError) -> Int64 {
        guard let value = item.member(name)?.int64, value >= 0 else {
            throw ClientError(.invalidArgument, "\(what).\(name): expected a non-negative integer")
        }
        return value
    }
    let allowed: [String]
    let entry: UserDataEntry
    switch type {
    case "custom":
        allowed = ["type", "index", "value"]
        let value = item.member("value")
        var values: [String] = []
        if let text = value?.string {
            values = [text]
        } else if let value, value.kind == .array, !value.elements.isEmpty {
            for element in value.elements {
                guard let text = element.string else {
                    throw ClientError(.invalidArgument, "\(what).value: expected a string or an array of strings")
                }
                values.append(text)
            }
        } else {
            throw ClientError(.invalidArgument, "\(what).value: expected a string or a non-empty array of strings")
        }
        entry = .custom(index: try index("index"), values: values)
    case "interest":
        allowed = ["type", "index"]
        entry = .interest(index: try index("index"))
    case "conversion":
        allowed = ["type", "goal_id", "revenue", "negative"]
        var revenue: Double? = nil
        if let value = item.member("revenue"), !value.isNull {
            guard let number = value.double, number.isFinite else {
                throw ClientError(.invalidArgument, "\(what).revenue: expected a finite number")
            }
            revenue = number
        }
        var negative = false
        if let value = item.member("negative") {
            guard let flag = value.bool else { throw ClientError(.invalidArgument, "\(what).negative: expected true or false") }
            negative = flag
        }
        entry = .conversion(.init(goalId: try index("goal_id"), revenue: revenue, negative: negative))
    default:
        throw ClientError(.invalidArgument, "\(what).type: \"\(type)\" is not \"custom\", \"interest\" or \"conversion\"")
    }
    for (key, _) in item.members where !allowed.contains(key) {
        throw ClientError(.invalidArgument, "\(what): unknown key \"\(key)\" for type \"\(type)\" (known: \(allowed.joined(separator: ", ")))")
    }
    return entry
}
