/// Builds event batches in the reference SDK's format (what its event dispatcher receives), one visitor
/// per batch: `{account_id, project_id, revision, client_name, client_version, anonymize_ip,
/// enrich_decisions, visitors: [{snapshots: [{events, decisions?}], attributes, visitor_id}]}`.
/// Unique ids and clocks come from the caller, so this stays pure.
public struct EventBatch: Sendable {
    public let url: String
    public let httpVerb: String
    public let body: String
}

/// Who sends the events (the batch's client_name / client_version).
public struct EventClient: Sendable {
    public let name: String
    public let version: String
    public init(name: String, version: String) {
        self.name = name
        self.version = version
    }
}

/// The campaign and variation an impression reports.
public struct ImpressionSubject {
    public var experimentId: String = ""
    /// The experiment's or holdout's id as JSON when the datafile's is no string (`Experiment.idJSON`).
    public var experimentIdJSON: String? = nil
    public var layerId: String = ""
    public var variationId: String? = nil
    public var variationKey: String = ""
    public var flagKey: String = ""
    public var ruleKey: String = ""
    public var ruleType: DecisionSource = .rollout
    public var enabled: Bool = false
    /// A CMAB decision's UUID (metadata.cmab_uuid), or nil.
    public var cmabUUID: String? = nil
    public init() {}
}

public enum EventPayloads {
    public static func endpoint(region: String) -> String {
        isEU(region) ? "https://eu.logx.optimizely.com/v1/events" : "https://logx.optimizely.com/v1/events"
    }

    /// `region.uppercased() == "EU"` without making the uppercased copy (an allocation per event): only the
    /// two ASCII letters in either case uppercase to exactly "EU".
    static func isEU(_ region: String) -> Bool {
        let utf8 = region.utf8
        guard utf8.count == 2, let first = utf8.first, let second = utf8.last else { return false }
        return first | 0x20 == UInt8(ascii: "e") && second | 0x20 == UInt8(ascii: "u")
    }

    /// The impression of a flag decision, as the reference sends it from decide.
    public static func subject(of decision: FlagDecision, in config: ProjectConfig) -> ImpressionSubject {
        var subject = ImpressionSubject()
        let flag = config.flags[Int(decision.flag)]
        subject.flagKey = flag.key.text
        subject.ruleType = decision.source
        if decision.holdout >= 0 {
            let holdout = config.holdouts[Int(decision.holdout)]
            subject.experimentId = holdout.id.text
            subject.experimentIdJSON = holdout.idJSON
            subject.ruleKey = holdout.key.text
            if decision.variation >= 0 {
                let variation = holdout.variations[Int(decision.variation)]
                subject.enabled = variation.featureEnabled
                // The reference re-reads a holdout's variation by holdout id and variation id, and finds
                // none when either is empty (false to its `elif variation_id and experiment_id`).
                if holdout.idIsTruthy && !variation.id.text.isEmpty {
                    subject.variationId = variation.id.text
                    subject.variationKey = variation.key.text
                }
            }
            return subject
        }
        if decision.experiment >= 0 {
            let experiment = config.experiments[Int(decision.experiment)]
            subject.experimentId = experiment.id.text
            subject.experimentIdJSON = experiment.idJSON
            subject.layerId = experiment.layerId
            subject.ruleKey = experiment.key.text
        }
        if decision.flagVariation >= 0 {
            // The reference re-reads the variation among the flag's variations by id.
            let decided = flag.flagVariations[Int(decision.flagVariation)]
            subject.enabled = decision.enabled(in: config)
            // An id Python reads as false ("", null, 0) finds nothing (its `if variation_id and ...`): no
            // variation, key "".
            if IdentityKey.isTruthy(decided.id) {
                let variation = flag.flagVariations.first { $0.id.sameCodePoints(decided.id) } ?? decided
                subject.variationId = variation.id
                subject.variationKey = variation.key.text
            }
        }
        return subject
    }

    /// The separate impression of a global holdout that excludes targeted deliveries.
    public static func exclusionHoldoutSubject(of decision: FlagDecision, in config: ProjectConfig) -> ImpressionSubject? {
        guard decision.exclusionHoldout >= 0 else { return nil }
        var holdoutDecision = FlagDecision(flag: decision.flag)
        holdoutDecision.source = .holdout
        holdoutDecision.holdout = decision.exclusionHoldout
        holdoutDecision.variation = decision.exclusionHoldoutVariation
        return subject(of: holdoutDecision, in: config)
    }

    /// The impression of activate / trigger_experiment: an A/B experiment's variation, no flag.
    public static func subject(experiment index: Int, variation: Int32, in config: ProjectConfig) -> ImpressionSubject {
        let experiment = config.experiments[index]
        // The reference re-reads the variation by key, where the last definition of a key wins.
        let decided = experiment.variations[Int(variation)]
        let byKey = experiment.variationIndex(key: decided.key.text).map { experiment.variations[$0] } ?? decided
        var subject = ImpressionSubject()
        subject.experimentId = experiment.id.text
        subject.experimentIdJSON = experiment.idJSON
        subject.layerId = experiment.layerId
        // Then by experiment id and variation id, where the last definition of an id wins (another key may
        // share it), and which finds nothing when either is empty: no variation.
        if experiment.idIsTruthy && !byKey.id.text.isEmpty {
            let byId = experiment.variationIndex(id: byKey.id.text).map { experiment.variations[$0] } ?? byKey
            subject.variationId = byId.id.text
            subject.variationKey = byId.key.text
        }
        subject.ruleKey = experiment.key.text
        subject.ruleType = .experiment
        subject.enabled = true
        return subject
    }

    public static func impression<A: UserAttributes>(
        _ subject: ImpressionSubject, config: ProjectConfig, userId: String, attributes: A, uuid: String,
        timestamp: Int64, client: EventClient
    ) -> EventBatch {
        withPayloadWriter { writer in
            // The reference's campaign id: the layer id when it is text, else the experiment id when that is.
            let campaignId = !subject.layerId.isEmpty ? subject.layerId
                : subject.experimentIdJSON == nil ? subject.experimentId : ""
            writePrologue(&writer, config: config, client: client)
            writer.literal("{\"snapshots\":[{\"events\":[{\"entity_id\":"); writer.string(campaignId)
            writer.literal(",\"uuid\":"); writer.string(uuid)
            writer.literal(",\"key\":\"campaign_activated\",\"timestamp\":"); writer.int(timestamp)
            writer.literal("}],\"decisions\":[{\"campaign_id\":"); writer.string(campaignId)
            writer.literal(",\"experiment_id\":")
            if let raw = subject.experimentIdJSON { writer.raw(raw) } else { writer.string(subject.experimentId) }
            writer.literal(",\"variation_id\":"); writer.string(subject.variationId.flatMap { isNumericId($0) ? $0 : nil })
            writer.literal(",\"metadata\":{\"flag_key\":"); writer.string(subject.flagKey)
            writer.literal(",\"rule_key\":"); writer.string(subject.ruleKey)
            writer.literal(",\"rule_type\":"); writer.string(subject.ruleType.rawValue)
            writer.literal(",\"variation_key\":"); writer.string(subject.variationKey)
            writer.literal(",\"enabled\":"); writer.bool(subject.enabled)
            if let uuid = subject.cmabUUID { writer.literal(",\"cmab_uuid\":"); writer.string(uuid) }
            writer.literal("}}]}]")  // metadata, decision, decisions, snapshot, snapshots
            return writeEpilogue(&writer, config: config, userId: userId, attributes: attributes)
        }
    }

    /// A conversion. `tags` is the caller's validated tag object as JSON text (nil: no tags), with the
    /// revenue and value the reference derives from it.
    public static func conversion<A: UserAttributes>(
        event: Event, tags: EventTags?, config: ProjectConfig, userId: String, attributes: A, uuid: String,
        timestamp: Int64, client: EventClient
    ) -> EventBatch {
        withPayloadWriter { writer in
            writePrologue(&writer, config: config, client: client)
            writer.literal("{\"snapshots\":[{\"events\":[{\"entity_id\":"); writer.string(event.id)
            writer.literal(",\"uuid\":"); writer.string(uuid)
            writer.literal(",\"key\":"); writer.string(event.key)
            writer.literal(",\"timestamp\":"); writer.int(timestamp)
            if let tags {
                if let revenue = tags.revenue { writer.literal(",\"revenue\":"); writer.raw(revenue) }
                if let value = tags.value { writer.literal(",\"value\":"); writer.double(value) }
                writer.literal(",\"tags\":"); writer.raw(tags.json)
            }
            writer.literal("}]}]")  // event, events, snapshot, snapshots
            return writeEpilogue(&writer, config: config, userId: userId, attributes: attributes)
        }
    }

    /// Runs `body` with a payload writer whose first 1 KB (most events are 500-900 bytes) is on the stack
    /// (the standard library keeps temporary allocations of up to 1 KB on the stack, larger ones go to the heap).
    private static func withPayloadWriter(_ body: (inout PayloadWriter) -> EventBatch) -> EventBatch {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 1024) { scratch in
            var writer = PayloadWriter(scratch: scratch)
            return body(&writer)
        }
    }

    /// The batch's header through `"visitors":[`, exactly as `batchPrologue` writes it.
    private static func writePrologue(_ writer: inout PayloadWriter, config: ProjectConfig, client: EventClient) {
        writer.literal("{\"account_id\":"); writer.string(config.accountId)
        writer.literal(",\"project_id\":"); writer.string(config.projectId)
        writer.literal(",\"revision\":"); writer.string(config.revision)
        writer.literal(",\"client_name\":"); writer.string(client.name)
        writer.literal(",\"client_version\":"); writer.string(client.version)
        writer.literal(",\"anonymize_ip\":"); writer.raw(config.anonymizeIPJSON)
        writer.literal(",\"enrich_decisions\":true,\"visitors\":[")
    }

    /// The visitor's attributes and id and the closing brackets, as `JSONWriter` wrote them for
    /// the reference's batch (the bot-filtering attribute last); the visitor's snapshots are written already.
    private static func writeEpilogue<A: UserAttributes>(_ writer: inout PayloadWriter, config: ProjectConfig,
                                                         userId: String, attributes: A) -> EventBatch
    {
        writer.literal(",\"attributes\":[")
        var first = true
        attributes.forEach { key, value in
            guard isReportable(value) else { return }
            if PayloadWriter.isPlainASCII(key) {
                // The same lookup as attributeId(forKey:), without making a String of the key.
                let id: String?
                if let index = config.attributeKeyIndex.find(key) {
                    id = config.attributes[index].id
                } else {
                    id = key.starts(with: "$opt_".utf8) ? String(decoding: key, as: UTF8.self) : nil
                }
                // An empty id is false to the reference's `if attribute_id:`: the attribute is left out.
                guard let id, !id.isEmpty else { return }
                writer.literal(first ? "{\"entity_id\":" : ",{\"entity_id\":"); writer.string(id)
                writer.literal(",\"key\":"); writer.string(utf8: key)
            } else {
                let name = String(decoding: key, as: UTF8.self)
                guard let id = config.attributeId(forKey: name) else { return }
                writer.literal(first ? "{\"entity_id\":" : ",{\"entity_id\":"); writer.string(id)
                writer.literal(",\"key\":"); writer.string(name)
            }
            first = false
            writer.literal(",\"type\":\"custom\",\"value\":"); writer.value(value)
            writer.literal("}")
        }
        if let botFiltering = config.botFiltering {
            writer.literal(first ? "{" : ",{")
            writer.literal("\"entity_id\":\"$opt_bot_filtering\",\"key\":\"$opt_bot_filtering\",\"type\":\"custom\",\"value\":")
            writer.bool(botFiltering)
            writer.literal("}")
        }
        writer.literal("],\"visitor_id\":"); writer.string(userId)
        writer.literal("}]}")  // visitor, visitors, batch
        return EventBatch(url: endpoint(region: config.region), httpVerb: "POST", body: writer.text)
    }

    static func batchPrologue(config: ProjectConfig, client: EventClient) -> JSONWriter {
        var writer = JSONWriter(reservingCapacity: 640)
        writer.beginObject()
        writer.field(literal: "account_id", config.accountId)
        writer.field(literal: "project_id", config.projectId)
        writer.field(literal: "revision", config.revision)
        writer.field(literal: "client_name", client.name)
        writer.field(literal: "client_version", client.version)
        writer.key(literal: "anonymize_ip"); writer.raw(config.anonymizeIPJSON)
        writer.field(literal: "enrich_decisions", true)
        writer.key(literal: "visitors"); writer.beginArray()
        return writer
    }

    /// Closes the visitor's attributes array, the visitor, the visitors array and the batch.
    static func finishBatch(_ writer: inout JSONWriter, userId: String, config: ProjectConfig) -> EventBatch {
        writer.endArray()   // attributes
        writer.field(literal: "visitor_id", userId)
        writer.endObject()  // visitor
        writer.endArray()   // visitors
        writer.endObject()
        return EventBatch(url: endpoint(region: config.region), httpVerb: "POST", body: writer.text)
    }

    /// Strings, booleans and finite numbers within 2^53 are sent; other values are left out.
    static func isReportable(_ value: AttributeValue) -> Bool {
        switch value {
        case .string, .bool: return true
        case .int(let n): return n.magnitude <= 1 << 53
        case .double(let d): return d.isFinite && d.magnitude <= 9_007_199_254_740_992
        case .null, .bigInteger, .unsupported: return false
        }
    }

    static func write(_ value: AttributeValue, to writer: inout JSONWriter) {
        switch value {
        case .string(let bytes): writer.string(String(decoding: bytes, as: UTF8.self))
        case .bool(let b): writer.bool(b)
        case .int(let n): writer.int(n)
        case .double(let d): writer.double(d)
        case .bigInteger(let digits): writer.raw(String(decoding: digits, as: UTF8.self))
        case .null, .unsupported: writer.null()
        }
    }

    /// The reference sends a variation id only when it is a non-empty string of ASCII digits.
    static func isNumericId(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
    }
}

/// Event tags of a conversion: the JSON object as the reference puts it on the wire, and the revenue and
/// value it derives from them.
public struct EventTags: Sendable {
    /// The tags as the conversion payload carries them: members "revenue", "value", "tags" and "decisions"
    /// whose value is null are left out, at every depth, as the reference's payload leaves them out.
    public let json: String
    /// The tags as the caller gave them, nulls kept: what TRACK listeners receive, as the reference hands
    /// its listeners the tags it was given.
    public let givenJSON: String
    /// An integer "revenue", exactly as written (any size, as Python keeps it).
    public let revenue: String?
    public let value: Double?

    /// Reads tags from JSON text, typing "revenue" and "value" as the reference does: revenue is sent when
    /// it is an integer (not a boolean), value when it is a finite number or a numeric string; otherwise
    /// they stay ordinary tags. A value that is no object is refused unless Python reads it as false
    /// (`[]`, `0`, `0.0`, `""`, `false`): the reference's validator lets those through, and its payload
    /// carries them as they are, with no revenue or value.
    /// `text` is the text `document` was parsed from: the few values json-c changes are re-read from it.
    public static func parse(_ document: JSONDocument, text: UnsafeBufferPointer<UInt8>) -> Result<EventTags, TagError> {
        let tags = document.root
        guard tags.kind == .object || isFalseInPython(tags) else {
            return .failure(TagError(message: "event tags: expected a JSON object, got \(tags.kindName)"))
        }
        var revenue: String? = nil
        if let field = tags.member("revenue"), field.kind == .int { revenue = numberText(field, text: text) }
        var value: Double? = nil
        if let field = tags.member("value") {
            switch field.kind {
            case .int, .double: value = VariableValues.pythonFloat(numberText(field, text: text))
            case .string: value = field.string.flatMap { VariableValues.pythonFloat($0) }
            default: value = nil
            }
        }
        if let number = value, !number.isFinite { value = nil }
        var wire: [UInt8] = []
        var droppedNulls = false
        wireJSON(tags, text: text, to: &wire, droppingNulls: true, dropped: &droppedNulls)
        let json = String(decoding: wire, as: UTF8.self)
        var givenJSON = json
        if droppedNulls {
            var given: [UInt8] = []
            wireJSON(tags, text: text, to: &given, droppingNulls: false, dropped: &droppedNulls)
            givenJSON = String(decoding: given, as: UTF8.self)
        }
        return .success(EventTags(json: json, givenJSON: givenJSON, revenue: revenue, value: value))
    }

    /// Whether Python's truth test reads the JSON value as false (null aside: that is no tags at all).
    static func isFalseInPython(_ value: JSONValue) -> Bool {
        switch value.kind {
        case .array: return value.count == 0
        case .int: return value.int64 == 0
        case .double: return value.double == 0  // 0.0 and -0.0; NaN is true
        case .string: return value.stringBytes?.isEmpty ?? false
        case .bool: return value.bool == false
        case .null, .object: return false
        }
    }

    /// A number as written: json-c keeps a fraction's text; an integer it may have clamped is re-read.
    static func numberText(_ value: JSONValue, text: UnsafeBufferPointer<UInt8>) -> String {
        if value.mayBeClamped, let raw = value.rawToken(in: text) { return raw }
        return value.jsonText
    }

    /// The tags as the reference puts them on the wire: its payload cleaner drops null "revenue",
    /// "value", "tags" and "decisions" members from every object, the tags included. Numbers and strings
    /// keep what Python's `json` would (integers of any size, unpaired surrogate escapes).
    /// Writes `value` as JSON; with `droppingNulls`, leaves out the null members the payload does not carry
    /// and sets `dropped` when it left one out.
    static func wireJSON(_ value: JSONValue, text: UnsafeBufferPointer<UInt8>, to out: inout [UInt8],
                         droppingNulls: Bool, dropped: inout Bool) {
        switch value.kind {
        case .object:
            out.append(UInt8(ascii: "{"))
            var first = true
            value.forEachMember { name, member in
                if droppingNulls, member.isNull,
                   ["revenue", "value", "tags", "decisions"].contains(String(cString: name)) {
                    dropped = true
                    return
                }
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                out.append(contentsOf: JSONWriter.quoted(String(cString: name)).utf8)
                out.append(UInt8(ascii: ":"))
                wireJSON(member, text: text, to: &out, droppingNulls: droppingNulls, dropped: &dropped)
            }
            out.append(UInt8(ascii: "}"))
        case .array:
            out.append(UInt8(ascii: "["))
            for index in 0..<value.count {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                wireJSON(value[index], text: text, to: &out, droppingNulls: droppingNulls, dropped: &dropped)
            }
            out.append(UInt8(ascii: "]"))
        case .int:
            out.append(contentsOf: numberText(value, text: text).utf8)
        case .string where value.mayHaveReplacedSurrogate:
            out.append(contentsOf: (value.rawToken(in: text) ?? value.jsonText).utf8)
        default:
            out.append(contentsOf: value.jsonText.utf8)
        }
    }

    public struct TagError: Error { public let message: String }
}

extension FlagDecision {
    /// featureEnabled of the decided variation (false with none).
    public func enabled(in config: ProjectConfig) -> Bool {
        if holdout >= 0 {
            return variation >= 0 && config.holdouts[Int(holdout)].variations[Int(variation)].featureEnabled
        }
        if experiment >= 0 && variation >= 0 {
            return config.experiments[Int(experiment)].variations[Int(variation)].featureEnabled
        }
        if flagVariation >= 0 { return config.flags[Int(flag)].flagVariations[Int(flagVariation)].featureEnabled }
        return false
    }

    /// The decided variation's key as a C string owned by `config` (no reference counting), or nil.
    public func variationKeyCString(in config: ProjectConfig) -> UnsafePointer<CChar>? {
        if holdout >= 0 {
            return variation >= 0 ? config.holdouts[Int(holdout)].variations[Int(variation)].key.cString : nil
        }
        if experiment >= 0 && variation >= 0 { return config.experiments[Int(experiment)].variations[Int(variation)].key.cString }
        if flagVariation >= 0 { return config.flags[Int(flag)].flagVariations[Int(flagVariation)].key.cString }
        return nil
    }

    /// The decided variation's key as text (whole: a key may hold NUL bytes, which its C string cannot), or nil.
    public func variationKeyText(in config: ProjectConfig) -> String? {
        if holdout >= 0 {
            return variation >= 0 ? config.holdouts[Int(holdout)].variations[Int(variation)].key.text : nil
        }
        if experiment >= 0 && variation >= 0 { return config.experiments[Int(experiment)].variations[Int(variation)].key.text }
        if flagVariation >= 0 { return config.flags[Int(flag)].flagVariations[Int(flagVariation)].key.text }
        return nil
    }

    /// The deciding rule's key as text (whole, NUL bytes included), or nil.
    public func ruleKeyText(in config: ProjectConfig) -> String? {
        if holdout >= 0 { return config.holdouts[Int(holdout)].key.text }
        if experiment >= 0 { return config.experiments[Int(experiment)].key.text }
        return nil
    }

    /// The id of the deciding rule or holdout (the reference's `flag_decision.experiment.id`), or nil.
    public func experimentId(in config: ProjectConfig) -> String? {
        if holdout >= 0 { return config.holdouts[Int(holdout)].id.text }
        if experiment >= 0 { return config.experiments[Int(experiment)].id.text }
        return nil
    }

    /// The decided rule's or holdout's datafile id as JSON when it is no string (`Experiment.idJSON`): the
    /// reference hands it out as it is.
    public func experimentIdJSON(in config: ProjectConfig) -> String? {
        if holdout >= 0 { return config.holdouts[Int(holdout)].idJSON }
        if experiment >= 0 { return config.experiments[Int(experiment)].idJSON }
        return nil
    }

    /// The id of the decided variation (the one `variationKeyCString` names), or nil.
    public func variationId(in config: ProjectConfig) -> String? {
        if holdout >= 0 {
            return variation >= 0 ? config.holdouts[Int(holdout)].variations[Int(variation)].id.text : nil
        }
        if experiment >= 0 && variation >= 0 { return config.experiments[Int(experiment)].variations[Int(variation)].id.text }
        if flagVariation >= 0 { return config.flags[Int(flag)].flagVariations[Int(flagVariation)].id }
        return nil
    }

    /// The deciding rule's key as a C string owned by `config`, or nil.
    public func ruleKeyCString(in config: ProjectConfig) -> UnsafePointer<CChar>? {
        if holdout >= 0 { return config.holdouts[Int(holdout)].key.cString }
        if experiment >= 0 { return config.experiments[Int(experiment)].key.cString }
        return nil
    }

    /// The flag's variables JSON for this decision: the variation's values when enabled, else defaults.
    public func variablesJSON(in config: ProjectConfig) -> UnsafePointer<CChar> {
        let flag = config.flags[Int(flag)]
        guard enabled(in: config) else { return flag.defaultVariablesJSON }
        if holdout >= 0 { return flag.holdoutVariablesJSON(variationId: config.holdouts[Int(holdout)].variations[Int(variation)].id.text) }
        guard flagVariation >= 0 else { return flag.defaultVariablesJSON }
        return flag.flagVariations[Int(flagVariation)].variablesJSON
    }

    /// Whether the reference sends an impression for this decision (unless DISABLE_DECISION_EVENT).
    public func sendsImpression(in config: ProjectConfig) -> Bool {
        !cmabFailed && (source == .featureTest || source == .holdout || config.sendFlagDecisions)
    }

    /// Whether ENABLED_FLAGS_ONLY keeps the decision: an enabled one, or the reference's CMAB error
    /// decision (which it answers whatever the options).
    public func keptByEnabledFlagsOnly(in config: ProjectConfig) -> Bool {
        cmabFailed || enabled(in: config)
    }
}
