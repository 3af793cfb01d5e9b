import ExperimentCore
import Synchronization

/// Kameleoon user data per user, held in memory until the user's next trigger_experiment, conversion or
/// exp_flush_user. Bounded: at most `maxUsers` users and `maxEntriesPerUser` entries each.
public final class UserDataStore: @unchecked Sendable {
    public static let maxUsers = 100_000
    public static let maxEntriesPerUser = 1_000
    /// By user id's code points ("\u{E9}" and "e\u{301}" are two users).
    private let pending = Locked<[ExactKey: UserData]>([:])
    /// Users with pending data, read without the lock: tracks of users without data (nearly all) skip it.
    private let users = Atomic<Int>(0)

    public init() {}

    /// Applies `change` to `userId`'s pending data; false (nothing changed) past the bounds.
    func update(_ userId: String, _ change: (inout UserData) -> Void) -> Bool {
        pending.withLock { table in
            let key = ExactKey(userId)
            if table[key] == nil && table.count >= Self.maxUsers { return false }
            var data = table[key] ?? UserData()
            change(&data)
            guard data.count <= Self.maxEntriesPerUser else { return false }
            table[key] = data
            users.store(table.count, ordering: .releasing)
            return true
        }
    }

    /// Removes and returns `userId`'s pending data.
    func take(_ userId: String) -> UserData? {
        pending.withLock { table in
            defer { users.store(table.count, ordering: .releasing) }
            return table.removeValue(forKey: ExactKey(userId))
        }
    }

    var isEmpty: Bool { users.load(ordering: .acquiring) == 0 }

    /// Puts data back (its send failed) in front of anything added since.
    func restore(_ userId: String, _ data: UserData) {
        _ = update(userId) { current in
            var merged = data
            for entry in current.custom { merged.setCustom(index: entry.index, values: entry.values) }
            current.interests.forEach { merged.addInterest($0) }
            merged.conversions += current.conversions
            current = merged
        }
    }

    public var userCount: Int { pending.withLock { $0.count } }
}

/// One piece of Kameleoon user data (exp_add_user_data).
public enum UserDataEntry: Sendable {
    case custom(index: Int64, values: [String])
    case interest(index: Int64)
    case conversion(UserData.Conversion)
}

extension Client {
    // MARK: Kameleoon user data and conversions

    /// Adds data to `userId`'s pending user data (sent with the next trigger / conversion / flush).
    public func addUserData(userId: String, _ entries: [UserDataEntry]) throws(ClientError) {
        try ensureOpen()
        let stored = userData.update(userId) { data in
            for entry in entries {
                switch entry {
                case .custom(let index, let values): data.setCustom(index: index, values: values)
                case .interest(let index): data.addInterest(index)
                case .conversion(let conversion): data.conversions.append(conversion)
                }
            }
        }
        guard stored else {
            throw ClientError(.tooLarge, "user data: at most \(UserDataStore.maxEntriesPerUser) pending entries per user "
                              + "and \(UserDataStore.maxUsers) users with pending data; flush first")
        }
    }

    /// Kameleoon trackConversion: a goal conversion, sent now with the user's pending data.
    /// `completion`: see `flushUserData`.
    public func trackConversion(config: ProjectConfig, userId: String, goalId: Int64, revenue: Double?,
                                negative: Bool = false, completion: DeliveryWatch.Completion? = nil) throws(ClientError)
    {
        try addUserData(userId: userId, [.conversion(.init(goalId: goalId, revenue: revenue, negative: negative))])
        try flushUserData(config: config, userId: userId, completion: completion)
    }

    /// Kameleoon flush(user): sends the user's pending data now (nothing when there is none). `completion`
    /// (when nothing is thrown) gets the outcome of that one event once (EventSink.send); with no data to
    /// send, at once: delivered, none sent.
    public func flushUserData(config: ProjectConfig, userId: String,
                              completion: DeliveryWatch.Completion? = nil) throws(ClientError) {
        guard let data = userData.take(userId), !data.isEmpty else {
            completion?(nil, 0)
            return
        }
        guard events.accepting else {
            events.countDropped()
            completion?(.deliveryFailed, 0)
            return
        }
        var firstUUID: String? = nil
        let batch = EventPayloads.userData(data, config: config, userId: userId, uuid: {
            let uuid = EventIdentity.uuid()
            if firstUUID == nil { firstUUID = uuid }
            return uuid
        }, timestamp: EventIdentity.timestampMillis(), client: eventClient)
        do {
            try events.send(batch, uuid: firstUUID ?? EventIdentity.uuid(), completion: completion)
        } catch {
            userData.restore(userId, data)
            throw error
        }
    }

    /// exp_client_flush_async: exp_flush on a callback thread; `completion` gets nil when none of this
    /// client's events is left, .timeout when some are (kept on disk, retried), .closed when the client
    /// closed meanwhile, and how many of this client's events were delivered while it ran. Throws (and never
    /// calls back) when the client is closed or no thread can start.
    public func flushAsync(_ completion: @escaping DeliveryWatch.Completion) throws(ClientError) {
        try ensureOpen()
        let before = events.stats.ownSent.load(ordering: .acquiring)
        let started = callbacks.spawn(unless: { closed }) { [self] in
            let left = events.flush(timeoutMs: options.closeTimeoutMs)
            let sent = events.stats.ownSent.load(ordering: .acquiring) - before
            completion(closed ? .closed : left > 0 ? .timeout : nil, sent)
        }
        if !started {
            try ensureOpen()
            throw ClientError(.internalError, "cannot start a thread for the flush")
        }
    }

    /// After a trigger or a conversion: the user's pending data goes along (failures are logged; the data
    /// stays pending for the next try).
    func sendPendingUserData(config: ProjectConfig, userId: UTF8Text) {
        if userData.isEmpty { return }
        let user = String(decoding: userId, as: UTF8.self)
        do {
            try flushUserData(config: config, userId: user)
        } catch {
            logger.log(.warning, "user data of a user not queued (kept for the next flush): \(error.message)")
        }
    }

    // MARK: notifications (built only when someone listens)

    /// The reference's DECISION notification of type "flag" (sent from its decide), field for field.
    func notifyFlagDecision<A: UserAttributes>(_ result: DecideResult, config: ProjectConfig, userId: UTF8Text,
                                               attributes: A, options: DecideOptions, dispatched: Bool)
    {
        let decision = result.decision
        notifications.notify(.decision) {
            var writer = Self.decisionNotification(type: "flag", userId: userId, attributes: attributes)
            writer.field("flag_key", config.flags[Int(decision.flag)].key.text)
            writer.field("enabled", decision.enabled(in: config))
            // EXCLUDE_VARIABLES: the reference builds no variables, and its listeners get the empty map too.
            writer.key("variables")
            writer.raw(options.contains(.excludeVariables) ? "{}" : String(cString: decision.variablesJSON(in: config)))
            // The keys whole (a datafile key may hold "\u0000", which a C string would cut short).
            writer.field("variation_key", decision.variationKeyText(in: config))
            writer.field("rule_key", decision.ruleKeyText(in: config))
            writer.key("reasons"); writer.beginArray(); result.reasons.forEach { writer.string($0) }; writer.endArray()
            writer.field("decision_event_dispatched", dispatched)
            if let raw = decision.experimentIdJSON(in: config) {
                writer.key("experiment_id"); writer.raw(raw)  // a datafile id that is no string, as it is
            } else {
                writer.field("experiment_id", decision.experimentId(in: config))
            }
            let variationId = decision.variationId(in: config)
            if let raw = variationId.flatMap(IdentityKey.json) {
                writer.key("variation_id"); writer.raw(raw)  // a datafile id that is no string, as it is
            } else {
                writer.field("variation_id", variationId)
            }
            writer.endObject()
            writer.endObject()
            return writer.text
        }
    }

    /// The reference's DECISION notification of get_variation / activate: type "feature-test" when a
    /// flag lists the experiment among its experimentIds, else "ab-test"; decision_info holds the
    /// experiment key and the variation key (null without a variation), nothing else.
    func notifyExperimentDecision<A: UserAttributes>(_ outcome: ExperimentOutcome, config: ProjectConfig,
                                                     experiment: Int, userId: UTF8Text, attributes: A)
    {
        notifications.notify(.decision) {
            let definition = config.experiments[experiment]
            var variationKey: String? = nil
            if case .variation(let index) = outcome { variationKey = definition.variations[Int(index)].key.text }
            let type = config.isFeatureExperiment(id: definition.id.text) ? "feature-test" : "ab-test"
            var writer = Self.decisionNotification(type: type, userId: userId, attributes: attributes)
            writer.field("experiment_key", definition.key.text)
            writer.field("variation_key", variationKey)
            writer.endObject()
            writer.endObject()
            return writer.text
        }
    }

    func notifyTrack<A: UserAttributes>(event: String, userId: UTF8Text, attributes: A, tags: EventTags?) {
        notifications.notify(.track) {
            var writer = JSONWriter()
            writer.beginObject()
            writer.field("event_key", event)
            writer.field("user_id", String(decoding: userId, as: UTF8.self))
            writer.key("attributes"); Self.write(attributes, to: &writer)
            writer.key("event_tags")
            if let tags { writer.raw(tags.givenJSON) } else { writer.null() }
            writer.endObject()
            return writer.text
        }
    }

    /// A decision notification up to its open "decision_info" object (which the caller fills and closes,
    /// then the outer object).
    private static func decisionNotification<A: UserAttributes>(type: String, userId: UTF8Text, attributes: A)
        -> JSONWriter
    {
        var writer = JSONWriter()
        writer.beginObject()
        writer.field("type", type)
        writer.field("user_id", String(decoding: userId, as: UTF8.self))
        writer.key("attributes"); write(attributes, to: &writer)
        writer.key("decision_info"); writer.beginObject()
        return writer
    }

    private static func write<A: UserAttributes>(_ attributes: A, to writer: inout JSONWriter) {
        writer.beginObject()
        attributes.forEach { key, value in
            writer.key(String(decoding: key, as: UTF8.self))
            switch value {
            case .null: writer.null()
            case .bool(let flag): writer.bool(flag)
            case .int(let number): writer.int(number)
            case .double(let number): writer.double(number)
            case .string(let bytes): writer.string(String(decoding: bytes, as: UTF8.self))
            // Listeners see a big integer as the JSON number it is; a value JSON cannot hold as null.
            case .bigInteger(let digits): writer.raw(String(decoding: digits, as: UTF8.self))
            case .unsupported: writer.null()
            }
        }
        writer.endObject()
    }
}
