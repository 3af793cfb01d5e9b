import ExperimentCore
import ExperimentRuntime

/// Message severities of the client's log.
public enum LogLevel: Sendable, Comparable {
    case error, warning, info, debug

    var runtimeLevel: ExperimentRuntime.LogLevel {
        switch self {
        case .error: return .error
        case .warning: return .warning
        case .info: return .info
        case .debug: return .debug
        }
    }

    init(_ level: ExperimentRuntime.LogLevel) {
        switch level {
        case .error: self = .error
        case .warning: self = .warning
        case .info: self = .info
        case .debug: self = .debug
        }
    }
}

/// What a client does besides deciding: where it keeps its state, where events and datafiles come from.
/// The defaults are the library's (see the C API's `exp_client_create` options of the same names).
public struct ClientSettings: Sendable {
    /// Directory of the client's state file (sticky bucketing, cached datafiles, queued events); nil: the
    /// per-user default ($XDG_STATE_HOME/libexperiment). Tests should pass their own.
    public var stateDirectory: String? = nil
    /// Where events are POSTed; "none" sends nothing (events then go only to an event dispatcher you set).
    public var eventEndpoint: String? = nil
    /// Datafile URL, `{sdk_key}` replaced: an http(s):// or file:// URL; "none" fetches nothing.
    public var datafileURLTemplate: String? = nil
    public var datafileAccessToken: String? = nil
    /// Longest wait for one datafile request, in milliseconds.
    public var requestTimeoutMs: Int? = nil
    /// How long `close()` waits for queued events to be delivered, in milliseconds (the rest stay on disk).
    public var closeTimeoutMs: Int? = nil
    public var eventBatchSize: Int? = nil
    public var eventFlushIntervalMs: Int? = nil
    /// Keep sticky-bucketing profiles: true (the default, in the state file) or false (none).
    public var userProfiles = true
    /// Real-time segments (ODP) off.
    public var disableODP = false
    /// Names the client in this process (Sigma's tag): a second open client with the same tag is refused
    /// with `.tagInUse`; closing the client frees the tag.
    public var tag: String? = nil
    /// Attempts after a failed datafile request (Sigma's retryCount).
    public var retryCount: Int? = nil
    /// Refresh the datafile on use once it is older than this many seconds, instead of polling (Sigma's
    /// cacheTTL; the runtime keeps it at 10 s or more).
    public var cacheTTLSeconds: Int? = nil

    public init(stateDirectory: String? = nil, eventEndpoint: String? = nil, datafileURLTemplate: String? = nil) {
        self.stateDirectory = stateDirectory
        self.eventEndpoint = eventEndpoint
        self.datafileURLTemplate = datafileURLTemplate
    }
}

/// An event batch the client would POST, handed to your dispatcher instead.
public struct EventRequest: Sendable {
    public let url: String
    public let httpVerb: String
    /// The JSON body.
    public let body: String
}

/// A client (Optimizely's OptimizelyClient): one datafile at a time, decisions through user contexts,
/// events sent in the background. Thread-safe. Close it when done (or let it go: it closes itself).
///
///     let client = try ExperimentClient(datafile: datafileText,
///                                       settings: ClientSettings(stateDirectory: "/tmp/my-app-state"))
///     let user = client.createUserContext(userId: "user-1", attributes: ["country": "US"])
///     let decision = user.decide(key: "checkout_flow")
public final class ExperimentClient: @unchecked Sendable {
    /// The runtime client: `package` so the seed facades (KameleoonKit, SigmaKit) map onto it directly.
    package let runtime: Client
    public let sdkKey: String?
    /// Register closures for decisions, conversions, event batches and datafile changes here.
    public let notificationCenter: ExperimentNotificationCenter

    /// A client for `sdkKey`'s datafile; `start` gives it one. `periodicDownloadInterval` (seconds) polls
    /// for a newer datafile once started; nil or 0 does not poll. Throws `.invalidOption` for a setting out
    /// of range.
    public init(sdkKey: String?, periodicDownloadInterval: Int? = nil, defaultLogLevel: LogLevel = .warning,
                defaultDecideOptions: [DecideOption] = [], settings: ClientSettings = ClientSettings())
        throws(ExperimentError)
    {
        let options = try Self.options(sdkKey: sdkKey, periodicDownloadInterval: periodicDownloadInterval,
                                       logLevel: defaultLogLevel, defaultDecideOptions: defaultDecideOptions,
                                       settings: settings)
        self.sdkKey = sdkKey
        runtime = Client(options: options)
        notificationCenter = ExperimentNotificationCenter(runtime.notifications)
        if let tag = options.tag {
            try translated { () throws(ClientError) in try ClientRegistry.claim(tag, for: runtime) }
        }
    }

    /// A client started at once on `datafile` (JSON text of an Optimizely v4 datafile), without an SDK key:
    /// no fetching, no polling. Throws when the datafile is refused.
    public convenience init(datafile: String, defaultLogLevel: LogLevel = .warning,
                            defaultDecideOptions: [DecideOption] = [], settings: ClientSettings = ClientSettings())
        throws(ExperimentError)
    {
        try self.init(sdkKey: nil, defaultLogLevel: defaultLogLevel, defaultDecideOptions: defaultDecideOptions,
                      settings: settings)
        try start(datafile: datafile)
    }

    /// A client that is never started and keeps nothing anywhere: no state file, no profiles, no events.
    /// The seed facades' stand-in for a client whose settings were refused (their factories do not throw).
    package init(unstartedInMemory: Void) {
        var options = ClientOptions()
        options.usesStateFile = false
        options.profileStore = .none
        options.eventEndpoint = "none"
        sdkKey = nil
        runtime = Client(options: options)
        notificationCenter = ExperimentNotificationCenter(runtime.notifications)
    }

    deinit { runtime.close() }

    /// The runtime's options, validated as the C API validates its JSON options (one set of rules).
    private static func options(sdkKey: String?, periodicDownloadInterval: Int?, logLevel: LogLevel,
                                defaultDecideOptions: [DecideOption], settings: ClientSettings)
        throws(ExperimentError) -> ClientOptions
    {
        var writer = JSONWriter()
        writer.beginObject()
        if let sdkKey { writer.field("sdk_key", sdkKey) }
        writer.key("polling_interval_s"); writer.int(Int64(periodicDownloadInterval ?? 0))
        writer.field("log_level", logLevel.runtimeLevel.name)
        writer.field("keep_datafile", true)  // optimizelyConfig is computed from the datafile's text
        writer.key("default_decide_options"); writer.beginArray()
        for (name, option) in DecideOptions.names where DecideOption.set(defaultDecideOptions).contains(option) {
            writer.string(name)
        }
        writer.endArray()
        func text(_ key: String, _ value: String?) { if let value { writer.field(key, value) } }
        func number(_ key: String, _ value: Int?) { if let value { writer.key(key); writer.int(Int64(value)) } }
        text("state_dir", settings.stateDirectory)
        text("event_endpoint", settings.eventEndpoint)
        text("datafile_url_template", settings.datafileURLTemplate)
        text("datafile_access_token", settings.datafileAccessToken)
        number("request_timeout_ms", settings.requestTimeoutMs)
        number("close_timeout_ms", settings.closeTimeoutMs)
        number("event_batch_size", settings.eventBatchSize)
        number("event_flush_interval_ms", settings.eventFlushIntervalMs)
        text("tag", settings.tag)
        number("retry_count", settings.retryCount)
        number("cache_ttl_s", settings.cacheTTLSeconds)
        if !settings.userProfiles { writer.field("profile_store", "none") }
        if settings.disableODP {
            writer.key("odp"); writer.beginObject(); writer.field("disabled", true); writer.endObject()
        }
        writer.endObject()
        var json = writer.text
        let parsed: Result<ClientOptions, ClientError> = json.withUTF8 { bytes in
            do throws(ClientError) {
                return .success(try ClientOptions.parse(json: UnsafeRawBufferPointer(bytes)))
            } catch {
                return .failure(error)
            }
        }
        do throws(ClientError) { return try parsed.get() } catch { throw ExperimentError(error) }
    }

    // MARK: starting

    /// Synchronous start (the Swift SDK's S1-S3): with an SDK key, the datafile cached by an earlier fetch
    /// when there is one, else `datafile`; then a newer datafile is fetched in the background, used at once
    /// with `doUpdateConfigOnNewDatafile` or a `periodicDownloadInterval` (which also polls), else kept
    /// for the next start. Without an SDK key, `datafile` is used as it is. Throws when no usable datafile.
    public func start(datafile: String, doUpdateConfigOnNewDatafile: Bool = false) throws(ExperimentError) {
        try start(datafile: Array(datafile.utf8), doUpdateConfigOnNewDatafile: doUpdateConfigOnNewDatafile)
    }

    /// The same, from the datafile's bytes.
    public func start(datafile: [UInt8], doUpdateConfigOnNewDatafile: Bool = false) throws(ExperimentError) {
        let updateNow = doUpdateConfigOnNewDatafile || runtime.options.pollingIntervalSeconds > 0
        try translated { () throws(ClientError) in
            _ = try runtime.startSynchronously(bundled: datafile, update: updateNow ? .now : .nextStart)
        }
    }

    /// Asynchronous start (the Swift SDK's A1/A2): fetches the SDK key's newest datafile in the background
    /// (falling back to the cached one), then calls `completion` once, on a background thread, with
    /// success or the reason no datafile could be used.
    public func start(completion: @escaping @Sendable (Result<Void, ExperimentError>) -> Void) {
        do throws(ClientError) {
            try runtime.startAsync(fallback: nil) { [runtime] failure in
                guard let failure else { return completion(.success(())) }
                let detail = runtime.datafileStatusLastError ?? "no usable datafile"
                completion(.failure(ExperimentError(failure, "the asynchronous start failed: \(detail)")))
            }
        } catch {
            completion(.failure(ExperimentError(error)))
        }
    }

    /// Asynchronous start with async/await (A3).
    public func start() async throws(ExperimentError) {
        let result = await withCheckedContinuation { continuation in
            start { continuation.resume(returning: $0) }
        }
        try result.get()
    }

    /// Whether the client has a datafile to decide with.
    public var isReady: Bool { runtime.isReady && !runtime.closed }

    /// The revision of the datafile in use (nil when not ready).
    public var datafileRevision: String? { try? runtime.config().revision }

    /// optimizely-sdk's OptimizelyConfig of the datafile in use (computed by the library once per revision).
    /// Throws `.notReady` before the client has a datafile.
    public var optimizelyConfig: OptimizelyConfig {
        get throws(ExperimentError) {
            let document = try translated { () throws(ClientError) in try runtime.optimizelyConfigJSON() }
            return OptimizelyConfig(JSON.parse(document))
        }
    }

    // MARK: users

    /// A user to decide for: `attributes` are matched against audiences (strings, numbers, booleans;
    /// other values are kept but match no condition).
    public func createUserContext(userId: String, attributes: [String: JSON] = [:]) -> ExperimentUserContext {
        ExperimentUserContext(client: self, userId: userId, attributes: attributes)
    }

    // MARK: hooks

    /// Sends events through `dispatch` instead of the built-in HTTP sender (nil restores it). Return true
    /// when the batch was delivered; false keeps it queued for another attempt.
    public func setEventDispatcher(_ dispatch: (@Sendable (EventRequest) -> Bool)?) {
        guard let dispatch else { return runtime.events.setDispatcher(nil) }
        runtime.events.setDispatcher { batch in
            dispatch(EventRequest(url: batch.url, httpVerb: batch.httpVerb, body: batch.body))
        }
    }

    /// Receives the client's log messages instead of standard error (nil restores it).
    public func setLogger(_ log: (@Sendable (LogLevel, String) -> Void)?) {
        guard let log else { return runtime.logger.setSink(nil) }
        runtime.logger.setSink { level, message in log(LogLevel(level), message) }
    }

    public var logLevel: LogLevel {
        get { LogLevel(runtime.logger.level) }
        set { runtime.logger.level = newValue.runtimeLevel }
    }

    // MARK: closing

    /// Stops polling and background work and delivers queued events (waiting up to the close timeout; what
    /// is left stays on disk for the next client). Later calls fail with `.closed`; decisions come back
    /// disabled. Idempotent. Returns how many events were not delivered in time.
    @discardableResult
    public func close() -> Int { runtime.close() }
}

extension Client {
    /// The last datafile error of the lifecycle's status (for an asynchronous start's failure message).
    var datafileStatusLastError: String? {
        JSON.parse(datafileStatusJSON())["last_error"]?.stringValue
    }
}
