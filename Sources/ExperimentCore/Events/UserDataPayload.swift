/// Kameleoon-style user data (custom data by index, interests, goal conversions), as it travels in the
/// reference batch format: one visitor whose
/// - attributes carry custom data (`entity_id`/`key` "kameleoon_custom_<index>", value: the string, or the
///   array of strings for a list) and interests ("kameleoon_interest_<index>", value true), type "custom";
/// - single snapshot's events are the goal conversions: `entity_id` the goal id, `key` the datafile event
///   key with that id (else "goal_<id>"), `value` the revenue when given (a float, like Kameleoon's), and
///   `tags` {"goal_id", "revenue"?, "negative"}. Data without conversions is carried by one
///   "kameleoon_data" event (entity_id "kameleoon_data") so the visitor has a snapshot.
public struct UserData: Sendable {
    public struct Conversion: Sendable {
        public let goalId: Int64
        public let revenue: Double?
        public let negative: Bool
        public init(goalId: Int64, revenue: Double?, negative: Bool) {
            self.goalId = goalId
            self.revenue = revenue
            self.negative = negative
        }
    }

    /// Custom data by index, latest first-set order kept; a new value for an index replaces the old one.
    public var custom: [(index: Int64, values: [String])] = []
    public var interests: [Int64] = []
    public var conversions: [Conversion] = []

    public init() {}

    public var isEmpty: Bool { custom.isEmpty && interests.isEmpty && conversions.isEmpty }

    /// Entries held (bounded by the runtime per user).
    public var count: Int { custom.count + interests.count + conversions.count }

    public mutating func setCustom(index: Int64, values: [String]) {
        if let position = custom.firstIndex(where: { $0.index == index }) {
            custom[position].values = values
        } else {
            custom.append((index, values))
        }
    }

    public mutating func addInterest(_ index: Int64) {
        if !interests.contains(index) { interests.append(index) }
    }
}

extension EventPayloads {
    /// The batch carrying `data` for `userId`. `uuid()` gives each event its unique id.
    public static func userData(_ data: UserData, config: ProjectConfig, userId: String, uuid: () -> String,
                                timestamp: Int64, client: EventClient) -> EventBatch
    {
        var writer = batchPrologue(config: config, client: client)
        writer.beginObject()  // visitor
        writer.key("snapshots"); writer.beginArray(); writer.beginObject()
        writer.key("events"); writer.beginArray()
        if data.conversions.isEmpty {
            writer.beginObject()
            writer.field("entity_id", "kameleoon_data")
            writer.field("uuid", uuid())
            writer.field("key", "kameleoon_data")
            writer.key("timestamp"); writer.int(timestamp)
            writer.endObject()
        }
        for conversion in data.conversions {
            let goal = String(conversion.goalId)
            writer.beginObject()
            writer.field("entity_id", goal)
            writer.field("uuid", uuid())
            writer.field("key", config.events.first { $0.id == goal }?.key ?? "goal_" + goal)
            writer.key("timestamp"); writer.int(timestamp)
            if let revenue = conversion.revenue { writer.key("value"); writer.double(revenue) }
            writer.key("tags"); writer.beginObject()
            writer.key("goal_id"); writer.int(conversion.goalId)
            if let revenue = conversion.revenue { writer.key("revenue"); writer.double(revenue) }
            writer.field("negative", conversion.negative)
            writer.endObject()
            writer.endObject()
        }
        writer.endArray()
        writer.endObject(); writer.endArray()  // snapshot, snapshots
        writer.key("attributes"); writer.beginArray()
        for entry in data.custom {
            beginCustomAttribute("kameleoon_custom_\(entry.index)", in: &writer)
            writer.key("value")
            if entry.values.count == 1 {
                writer.string(entry.values[0])
            } else {
                writer.beginArray(); entry.values.forEach { writer.string($0) }; writer.endArray()
            }
            writer.endObject()
        }
        for interest in data.interests {
            beginCustomAttribute("kameleoon_interest_\(interest)", in: &writer)
            writer.field("value", true)
            writer.endObject()
        }
        return finishBatch(&writer, userId: userId, config: config)
    }

    /// Opens one of the visitor's custom attributes: {"entity_id": name, "key": name, "type": "custom", ...
    private static func beginCustomAttribute(_ name: String, in writer: inout JSONWriter) {
        writer.beginObject()
        writer.field("entity_id", name)
        writer.field("key", name)
        writer.field("type", "custom")
    }
}
