import ExperimentRuntime

/// What a notification listener hears about.
public enum NotificationType: Sendable, CaseIterable {
    /// A flag was decided.
    case decision
    /// A conversion was tracked.
    case track
    /// A batch of events was delivered (or set aside) by the event dispatcher.
    case logEvent
    /// The client's datafile changed.
    case datafileChange
    /// A datafile fetch ended (start, poll): its outcome.
    case datafileFetch

    var runtimeType: ExperimentRuntime.NotificationType {
        switch self {
        case .decision: return .decision
        case .track: return .track
        case .logEvent: return .logEvent
        case .datafileChange: return .configUpdate
        case .datafileFetch: return .datafileFetch
        }
    }
}

/// A decision as listeners hear it (the Swift SDK's decision listener arguments).
public struct DecisionNotification: Sendable {
    /// "flag" for decide calls.
    public let type: String
    public let userId: String
    public let attributes: [String: JSON]
    /// flag_key, enabled, variables, variation_key, rule_key, reasons, decision_event_dispatched.
    public let decisionInfo: [String: JSON]
}

/// A tracked conversion as listeners hear it.
public struct TrackNotification: Sendable {
    public let eventKey: String
    public let userId: String
    public let attributes: [String: JSON]
    public let eventTags: [String: JSON]?
}

/// A client's listeners. A listener runs on the thread that caused the notification, after the client's
/// locks are released, so it may call back into the client; keep it short.
public final class ExperimentNotificationCenter: @unchecked Sendable {
    private let center: ExperimentRuntime.NotificationCenter

    init(_ center: ExperimentRuntime.NotificationCenter) { self.center = center }

    /// Registers `listener` for `type` with the notification's JSON payload (the C API's payloads);
    /// returns the id that removes it.
    @discardableResult
    public func addNotificationListener(_ type: NotificationType,
                                        _ listener: @escaping @Sendable (JSON) -> Void) -> Int {
        Int(center.add(type.runtimeType) { _, payload in listener(JSON.parse(payload)) })
    }

    @discardableResult
    public func addDecisionNotificationListener(_ listener: @escaping @Sendable (DecisionNotification) -> Void) -> Int {
        addNotificationListener(.decision) { payload in
            listener(DecisionNotification(type: payload["type"]?.stringValue ?? "",
                                          userId: payload["user_id"]?.stringValue ?? "",
                                          attributes: payload["attributes"]?.objectValue ?? [:],
                                          decisionInfo: payload["decision_info"]?.objectValue ?? [:]))
        }
    }

    @discardableResult
    public func addTrackNotificationListener(_ listener: @escaping @Sendable (TrackNotification) -> Void) -> Int {
        addNotificationListener(.track) { payload in
            listener(TrackNotification(eventKey: payload["event_key"]?.stringValue ?? "",
                                       userId: payload["user_id"]?.stringValue ?? "",
                                       attributes: payload["attributes"]?.objectValue ?? [:],
                                       eventTags: payload["event_tags"]?.objectValue))
        }
    }

    /// Called with the new datafile's revision (and the payload) when the datafile in use changes.
    @discardableResult
    public func addDatafileChangeNotificationListener(_ listener: @escaping @Sendable (JSON) -> Void) -> Int {
        addNotificationListener(.datafileChange, listener)
    }

    /// True when a listener with `id` was removed.
    @discardableResult
    public func removeNotificationListener(id: Int) -> Bool { center.remove(id: Int64(id)) }

    public func clearAllNotificationListeners() { center.removeAll() }
}
