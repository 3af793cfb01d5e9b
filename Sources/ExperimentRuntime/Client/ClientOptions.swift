import ExperimentCore
#if canImport(Glibc)
import Glibc
#endif

/// Where sticky bucketing (user profiles) is kept.
public enum ProfileStoreChoice: Sendable, Equatable {
    /// A SQLite file in the state directory (the default).
    case sqlite
    /// No sticky bucketing: purely deterministic decisions.
    case none
    /// A Redis server shared by a fleet; `timeoutMs` bounds connecting and each command.
    case redis(url: String, prefix: String, ttlSeconds: Int, timeoutMs: Int)
    /// The host's lookup/save callbacks, installed with exp_client_set_profile_store after create.
    case callbacks
}

/// What a full event queue does with one more event.
public enum QueueFullPolicy: String, Sendable {
    /// The new event is refused with EXP_ERR_QUEUE_FULL (the caller knows it was not accepted).
    case reject
    /// The oldest queued event is dropped (and counted) to make room.
    case dropOldest = "drop_oldest"
}

/// Real-time segments (ODP) settings: the `odp` option object.
public struct ODPOptions: Sendable {
    public var disabled = false
    /// Overrides the datafile's integrations entry when set.
    public var host: String? = nil
    public var apiKey: String? = nil
    public var segmentsCacheSize = 100
    public var segmentsCacheTimeoutSeconds = 600
    public var fetchTimeoutMs = 10_000
    public var eventTimeoutMs = 10_000
    /// ODP events sent per request (the reference's default 10).
    public var eventBatchSize = 10
    /// The longest a queued ODP event waits for a batch to fill (the reference's default 1 s).
    public var eventFlushIntervalMs = 1_000
    /// ODP events that may wait for delivery before new ones are refused (EXP_ERR_QUEUE_FULL).
    public var eventQueueCapacity = 10_000
    /// The client's `ca_file` option (not a key of the `odp` object): ODP requests trust what the client's do.
    public var caFile: String? = nil
}

/// The options a client is created with (one JSON object in C; keyword arguments in Python).
/// Unknown keys are refused, so a typo never silently falls back to a default.
public struct ClientOptions: Sendable {
    public var sdkKey: String? = nil
    public var defaultDecideOptions: DecideOptions = []
    public var userStoreCapacity: Int = 10_000
    public var logLevel: LogLevel = .warning
    /// Names the client in the process (Sigma tags); nil for an untagged client.
    public var tag: String? = nil

    // Datafile lifecycle
    public var datafileURLTemplate = ClientOptions.defaultDatafileURLTemplate()
    public var datafileAccessToken: String? = nil
    public var pollingIntervalSeconds = 300
    public var requestTimeoutMs = 10_000
    public var retryCount = 3
    /// Sigma's lazy mode: refresh on use when the datafile is older than this, instead of a timer.
    public var cacheTTLSeconds: Int? = nil

    // Local state
    /// Directory of the SQLite state file; nil means the per-user default (see `StateDirectory`).
    public var stateDir: String? = nil
    public var profileStore: ProfileStoreChoice = .sqlite
    /// False keeps everything in memory and never touches a state directory (not a JSON option: for tools,
    /// such as the CLI, that must leave no files behind).
    public var usesStateFile = true

    // Events
    /// Where the built-in dispatcher POSTs batches; "none" turns the built-in pipeline off (events with no
    /// host dispatcher are then only counted as dropped). Default: the reference's logx endpoint, or the
    /// EXPERIMENT_EVENT_ENDPOINT environment variable when set (test suites set it to "none").
    public var eventEndpoint = ClientOptions.defaultEventEndpoint()
    public var eventBatchSize = 10
    public var eventFlushIntervalMs = 1_000
    public var eventQueueCapacity = 100_000
    public var eventQueueFullPolicy: QueueFullPolicy = .reject
    /// How long exp_client_close waits for queued events to be delivered; the rest stay on disk.
    public var closeTimeoutMs = 2_000
    // Event delivery bounds (issue 18): an event's life and the POSTs in flight.
    /// Failed attempts after which an event moves to event_dead_letter.
    public var eventMaxAttempts = 1_000
    /// Age (since queued) after which an undelivered event moves to event_dead_letter.
    public var eventMaxAgeSeconds = 7 * 86_400
    /// POSTs the dispatcher keeps in flight at once.
    public var eventMaxInflight = 4

    public var odp = ODPOptions()
    /// CMAB experiments: the prediction endpoint, the cache's size and timeout, the request timeout.
    public var cmab = CMABOptions()

    /// The CA bundle (PEM) HTTPS requests of this client trust, instead of the process default (see
    /// `CACertificates`: SSL_CERT_FILE, libcurl's compiled-in bundle, the usual places).
    public var caFile: String? = nil

    /// Sigma: exp_set/edit_user_properties also store profile_id as $opt_bucketing_id.
    public var bucketByProfileId = false

    /// Keep the text of the datafile in use beside its compiled config (exp_client_datafile_json). Off by
    /// default: it costs memory equal to the datafile's size.
    public var keepDatafile = false

    /// Keep recently used profiles of the profile store in memory (default). Off: every call looks the
    /// user's profile up in the store, and saves it without reading it again first, as optimizely-sdk's
    /// UserProfileTracker does (the drop-in `experiment.optimizely` turns it off for its user profile service).
    public var profileCache = true

    public static let maxUserStoreCapacity = 10_000_000
    /// Polling faster than this is raised to it (with a warning), as the reference SDKs do.
    public static let minPollingIntervalSeconds = 10
    public static let knownKeys = [
        "sdk_key", "default_decide_options", "user_store_capacity", "log_level", "tag",
        "datafile_url_template", "datafile_access_token", "polling_interval_s", "request_timeout_ms", "retry_count",
        "cache_ttl_s", "state_dir", "profile_store", "event_endpoint", "event_batch_size", "event_flush_interval_ms",
        "event_queue_capacity", "event_queue_full_policy", "close_timeout_ms",
        "event_max_attempts", "event_max_age_s", "event_max_inflight", "odp",
        "bucket_by_profile_id", "ca_file", "keep_datafile", "profile_cache",
        "cmab_prediction_endpoint", "cmab_cache_size", "cmab_cache_timeout_s", "cmab_request_timeout_ms",
    ]

    public init() {}

    public static let disabledEventEndpoint = "none"

    static func defaultEventEndpoint() -> String {
        if let value = getenv("EXPERIMENT_EVENT_ENDPOINT"), value.pointee != 0 { return String(cString: value) }
        return "https://logx.optimizely.com/v1/events"
    }

    /// The EXPERIMENT_DATAFILE_URL_TEMPLATE environment variable when set ("none": no fetching, as test
    /// suites set it), else Optimizely's CDN.
    static func defaultDatafileURLTemplate() -> String {
        if let value = getenv("EXPERIMENT_DATAFILE_URL_TEMPLATE"), value.pointee != 0 { return String(cString: value) }
        return "https://cdn.optimizely.com/datafiles/{sdk_key}.json"
    }

    public static func parse(json text: UnsafeRawBufferPointer?) throws(ClientError) -> ClientOptions {
        var options = ClientOptions()
        guard let text, text.count > 0 else { return options }
        let document: JSONDocument
        do {
            document = try JSONDocument.parse(text, what: "options", maxBytes: 1 << 20, maxDepth: 64)
        } catch {
            throw Self.syntaxError(ClientError(error))
        }
        let root = document.root
        guard root.kind == .object else {
            throw ClientError(.invalidOption, "options: expected a JSON object, got \(root.kindName)")
        }
        for (key, value) in root.members {
            try options.apply(key, value)
        }
        return options
    }

    private mutating func apply(_ key: String, _ value: JSONValue) throws(ClientError) {
        let field = OptionField(name: "options.\(key)", value: value)
        switch key {
        case "sdk_key": sdkKey = try field.plainToken()
        case "default_decide_options":
            defaultDecideOptions = try Self.decideOptions(value, what: "options.default_decide_options")
        case "user_store_capacity": userStoreCapacity = try field.integer(in: 1...Self.maxUserStoreCapacity)
        case "log_level":
            guard let name = value.string, let level = LogLevel(name: name) else {
                throw ClientError(.invalidOption,
                                  "options.log_level: expected \"error\", \"warning\", \"info\" or \"debug\"")
            }
            logLevel = level
        case "tag": tag = try field.string(nonEmpty: true)
        case "datafile_url_template":
            let template = try field.string(nonEmpty: true, controlFree: true)
            guard template.hasPrefix("http://") || template.hasPrefix("https://") || template.hasPrefix("file://") else {
                throw ClientError(.invalidOption, "options.datafile_url_template: expected an http(s):// or file:// URL")
            }
            datafileURLTemplate = template
        case "datafile_access_token": datafileAccessToken = try field.string(nonEmpty: true, controlFree: true)
        case "polling_interval_s": pollingIntervalSeconds = try field.integer(in: 0...(365 * 86_400))
        case "request_timeout_ms": requestTimeoutMs = try field.integer(in: 1...600_000)
        case "retry_count": retryCount = try field.integer(in: 0...100)
        case "cache_ttl_s": cacheTTLSeconds = try field.integer(in: 0...(365 * 86_400))
        case "state_dir": stateDir = try field.string(nonEmpty: true, controlFree: true)
        case "profile_store": profileStore = try Self.profileStore(value)
        case "event_endpoint":
            let endpoint = try field.string(nonEmpty: true, controlFree: true)
            guard endpoint == Self.disabledEventEndpoint || endpoint.hasPrefix("http://") || endpoint.hasPrefix("https://")
            else {
                throw ClientError(.invalidOption, "options.event_endpoint: expected an http(s):// URL or \"none\"")
            }
            eventEndpoint = endpoint
        case "event_batch_size": eventBatchSize = try field.integer(in: 1...10_000)
        case "event_flush_interval_ms": eventFlushIntervalMs = try field.integer(in: 1...3_600_000)
        case "event_queue_capacity": eventQueueCapacity = try field.integer(in: 1...100_000_000)
        case "event_queue_full_policy":
            guard let name = value.string, let policy = QueueFullPolicy(rawValue: name) else {
                throw ClientError(.invalidOption, "options.event_queue_full_policy: expected \"reject\" or \"drop_oldest\"")
            }
            eventQueueFullPolicy = policy
        case "close_timeout_ms": closeTimeoutMs = try field.integer(in: 0...600_000)
        case "event_max_attempts": eventMaxAttempts = try field.integer(in: 1...1_000_000)
        case "event_max_age_s": eventMaxAgeSeconds = try field.integer(in: 1...(10 * 365 * 86_400))
        case "event_max_inflight": eventMaxInflight = try field.integer(in: 1...64)
        case "odp": odp = try Self.odpOptions(value)
        case "bucket_by_profile_id": bucketByProfileId = try field.bool()
        case "ca_file": caFile = try field.string(nonEmpty: true, controlFree: true)
        case "keep_datafile": keepDatafile = try field.bool()
        case "profile_cache": profileCache = try field.bool()
        case "cmab_prediction_endpoint":
            let endpoint = try field.string(nonEmpty: true, controlFree: true)
            guard endpoint.hasPrefix("http://") || endpoint.hasPrefix("https://") else {
                throw ClientError(.invalidOption, "options.cmab_prediction_endpoint: expected an http(s):// URL "
                                  + "(\"{rule_id}\" stands for the experiment's id)")
            }
            cmab.predictionEndpoint = endpoint
        case "cmab_cache_size": cmab.cacheSize = try field.integer(in: 0...10_000_000)
        case "cmab_cache_timeout_s": cmab.cacheTimeoutSeconds = try field.integer(in: 0...(365 * 86_400))
        case "cmab_request_timeout_ms": cmab.requestTimeoutMs = try field.integer(in: 1...600_000)
        default:
            throw ClientError(.invalidOption,
                              "options: unknown option \"\(key)\" (known: \(Self.knownKeys.joined(separator: ", ")))")
        }
    }

    private static func profileStore(_ value: JSONValue) throws(ClientError) -> ProfileStoreChoice {
        if let name = value.string {
            switch name {
            case "sqlite": return .sqlite
            case "none": return .none
            case "callbacks": return .callbacks
            default: break
            }
        } else if value.kind == .object, value.count == 1, let redis = value.member("redis"), redis.kind == .object {
            var url: String? = nil, prefix = "exp:profile:", ttl = 0, timeoutMs = 200
            for (key, member) in redis.members {
                let field = OptionField(name: "options.profile_store.redis.\(key)", value: member)
                switch key {
                case "url":
                    let text = try field.string(nonEmpty: true, controlFree: true)
                    _ = try RedisAddress(url: text)  // refused here, not at the first decision
                    url = text
                case "prefix": prefix = try field.string()
                case "ttl_s": ttl = try field.integer(in: 0...(10 * 365 * 86_400))
                case "timeout_ms": timeoutMs = try field.integer(in: 1...60_000)
                default:
                    throw ClientError(.invalidOption,
                                      "options.profile_store.redis: unknown key \"\(key)\" (known: url, prefix, ttl_s, timeout_ms)")
                }
            }
            guard let url else { throw ClientError(.invalidOption, "options.profile_store.redis.url is required") }
            return .redis(url: url, prefix: prefix, ttlSeconds: ttl, timeoutMs: timeoutMs)
        }
        throw ClientError(.invalidOption,
                          "options.profile_store: expected \"sqlite\", \"none\", \"callbacks\" or {\"redis\": {\"url\": ...}}")
    }

    private static func odpOptions(_ value: JSONValue) throws(ClientError) -> ODPOptions {
        guard value.kind == .object else { throw ClientError(.invalidOption, "options.odp: expected an object") }
        var odp = ODPOptions()
        for (key, member) in value.members {
            let field = OptionField(name: "options.odp.\(key)", value: member)
            switch key {
            case "disabled": odp.disabled = try field.bool()
            case "host": odp.host = try field.string(nonEmpty: true, controlFree: true)
            case "api_key": odp.apiKey = try field.string(nonEmpty: true, controlFree: true)
            case "segments_cache_size": odp.segmentsCacheSize = try field.integer(in: 0...10_000_000)
            case "segments_cache_timeout_s": odp.segmentsCacheTimeoutSeconds = try field.integer(in: 0...(365 * 86_400))
            case "fetch_timeout_ms": odp.fetchTimeoutMs = try field.integer(in: 1...600_000)
            case "event_timeout_ms": odp.eventTimeoutMs = try field.integer(in: 1...600_000)
            case "event_batch_size": odp.eventBatchSize = try field.integer(in: 1...1_000)
            case "event_flush_interval_ms": odp.eventFlushIntervalMs = try field.integer(in: 10...3_600_000)
            case "event_queue_capacity": odp.eventQueueCapacity = try field.integer(in: 1...10_000_000)
            default:
                throw ClientError(.invalidOption, "options.odp: unknown key \"\(key)\" (known: disabled, host, api_key, "
                                  + "segments_cache_size, segments_cache_timeout_s, fetch_timeout_ms, event_timeout_ms, "
                                  + "event_batch_size, event_flush_interval_ms, event_queue_capacity)")
            }
        }
        return odp
    }

    /// Decide option names in a JSON array -> the bit set.
    public static func decideOptions(_ value: JSONValue, what: String) throws(ClientError) -> DecideOptions {
        guard value.kind == .array else { throw ClientError(.invalidOption, "\(what): expected an array of option names") }
        var options: DecideOptions = []
        for element in value.elements {
            guard let name = element.string, let option = DecideOptions(name: name) else {
                let known = DecideOptions.names.map(\.0).joined(separator: ", ")
                throw ClientError(.invalidOption, "\(what): unknown decide option \(element.jsonText) (known: \(known))")
            }
            options.insert(option)
        }
        return options
    }

    /// A JSON reader's complaint about the options text, said as such (whatever words the reader uses).
    static func syntaxError(_ error: ClientError) -> ClientError {
        guard error.code == .invalidJSON else { return error }
        let detail = error.message.hasPrefix("options: ") ? String(error.message.dropFirst(9)) : error.message
        return ClientError(.invalidJSON, "options: not valid JSON (\(detail))")
    }
}

/// One option's value with typed readers whose errors name the option.
private struct OptionField {
    let name: String
    let value: JSONValue

    /// `controlFree`: for values that reach a URL, an HTTP header, a file path or a log line, where a NUL
    /// would cut the value short and CR/LF would start a new header or log line.
    func string(nonEmpty: Bool = false, controlFree: Bool = false) throws(ClientError) -> String {
        guard let bytes = value.stringBytes, let text = value.string else { throw wrongType("a string") }
        if nonEmpty && text.isEmpty { throw ClientError(.invalidOption, "\(name): expected a non-empty string") }
        if controlFree, let bad = bytes.firstIndex(where: { $0 < 0x20 || $0 == 0x7F }) {
            throw ClientError(.invalidOption, "\(name): control character \(Self.byteName(bytes[bad])) at byte \(bad) "
                              + "(NUL, CR, LF and the like are refused)")
        }
        return text
    }

    /// A value that becomes part of a URL or file path as is (the SDK key): letters, digits, '-', '_', '.',
    /// not starting with '.', at most 256 bytes; so it can never name a parent directory or carry a '/'.
    func plainToken() throws(ClientError) -> String {
        guard let bytes = value.stringBytes, let text = value.string else { throw wrongType("a string") }
        let plain = !bytes.isEmpty && bytes.count <= 256 && bytes[0] != UInt8(ascii: ".") && bytes.allSatisfy {
            switch $0 {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."): true
            default: false
            }
        }
        guard plain else {
            throw ClientError(.invalidOption, "\(name): expected a plain token (1 to 256 letters, digits, '-', '_' "
                              + "or '.', not starting with '.')")
        }
        return text
    }

    private static func byteName(_ byte: UInt8) -> String {
        switch byte {
        case 0: return "NUL"
        case 0x0A: return "LF"
        case 0x0D: return "CR"
        default: return "0x" + String(byte, radix: 16)
        }
    }

    func integer(in range: ClosedRange<Int>) throws(ClientError) -> Int {
        guard let number = value.int64, number >= Int64(range.lowerBound), number <= Int64(range.upperBound) else {
            // The JSON reader saturates integers past 64 bits: name the range rather than the clamped value.
            let saturated = value.int64 == Int64.max || value.int64 == Int64.min
            let got = saturated ? "an integer of 2^63 or more in magnitude" : value.jsonText
            throw ClientError(.invalidOption,
                              "\(name): expected an integer from \(range.lowerBound) to \(range.upperBound), got \(got)")
        }
        return Int(number)
    }

    func bool() throws(ClientError) -> Bool {
        guard let flag = value.bool else { throw wrongType("true or false") }
        return flag
    }

    private func wrongType(_ expected: String) -> ClientError {
        ClientError(.invalidOption, "\(name): expected \(expected), got \(value.kindName)")
    }
}
