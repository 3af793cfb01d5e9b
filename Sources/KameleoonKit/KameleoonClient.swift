import ExperimentCore
import ExperimentKit
import ExperimentRuntime

// Kameleoon's Swift SDK shape (`import ssx` -> `import KameleoonKit`) over the runtime's Kameleoon calls:
// a thin mapping, no behaviour of its own. The site code is the SDK key that names the datafile.

/// A variation id as `triggerExperiment` returns it ("reference" is the app's own fallback).
public typealias VariationID = String

/// Kameleoon's errors, typed. `other` carries any other failure of the library (closed client, bad input).
public enum KameleoonError: Error, Sendable, Equatable {
    /// The client has no configuration yet (`ready` is false).
    case sdkNotReady
    /// The configuration has no experiment with this id.
    case experimentConfigurationNotFound
    /// The user does not meet the experiment's targeting (audiences).
    case notTargeted
    /// The experiment is not running, or the user falls outside its traffic allocation.
    case notActivated
    case other(ExperimentError)

    init(_ error: ClientError) {
        switch error.code {
        case .notReady: self = .sdkNotReady
        case .unknownExperiment: self = .experimentConfigurationNotFound
        case .notTargeted: self = .notTargeted
        case .notAllocated: self = .notActivated
        default: self = .other(ExperimentError(error))
        }
    }
}

/// `body` with the runtime's error as Kameleoon's.
@inline(__always)
func kameleoon<T>(_ body: () throws(ClientError) -> T) throws(KameleoonError) -> T {
    do throws(ClientError) { return try body() } catch { throw KameleoonError(error) }
}

/// Kameleoon's ClientFactory.
public enum ClientFactory {
    /// A client for `sitecode` that fetches its configuration in the background (`ready` turns true when it
    /// has one). `settings`: the library's (state directory, datafile URL template with `{sdk_key}` replaced
    /// by the site code, event endpoint). Never throws, as the seed's: settings or a site code the library
    /// refuses give a client that never becomes ready (every call then throws `.sdkNotReady`), and the
    /// reason is logged.
    public static func create(sitecode: String, settings: ClientSettings = ClientSettings()) -> KameleoonClient {
        do throws(ExperimentError) {
            let client = try ExperimentClient(sdkKey: sitecode, settings: settings)
            client.start { _ in }  // the outcome is what `ready` and `runWhenReady` report
            return KameleoonClient(client)
        } catch {
            return KameleoonClient(unusable: "site code \"\(sitecode)\": \(error)")
        }
    }

    /// A client started at once on a bundled `datafile` (no fetching): ready when this returns.
    public static func create(sitecode: String, datafile: String, settings: ClientSettings)
        throws(KameleoonError) -> KameleoonClient
    {
        do throws(ExperimentError) {
            let client = try ExperimentClient(sdkKey: sitecode, settings: settings)
            try client.start(datafile: datafile)
            return KameleoonClient(client)
        } catch {
            throw KameleoonError(ClientError(error.code, error.message))
        }
    }
}

/// Kameleoon's KameleoonClient. Thread-safe.
public final class KameleoonClient: Sendable {
    /// The ExperimentKit client underneath (event dispatcher, logger, notifications, close).
    public let experimentClient: ExperimentClient
    private var runtime: Client { experimentClient.runtime }

    init(_ client: ExperimentClient) { experimentClient = client }

    /// A client without an SDK key, never started: not ready for good.
    convenience init(unusable reason: String) {
        let client = ExperimentClient(unstartedInMemory: ())
        client.runtime.logger.log(.error, "Kameleoon client not created: \(reason)")
        self.init(client)
    }

    /// Whether the client has its configuration.
    public var ready: Bool { experimentClient.isReady }

    /// Calls `callback` once: true as soon as the client is ready (at once when it already is), false
    /// when `timeout` milliseconds pass first (or the start failed, or the client closed). It runs on the
    /// calling thread when the client is ready now, else on a background thread.
    public func runWhenReady(_ timeout: Int = 2000, _ callback: @escaping @Sendable (Bool) -> Void) {
        do throws(ClientError) {
            try runtime.runWhenReady(timeoutMs: Int64(timeout)) { error in callback(error == nil) }
        } catch {
            callback(false)
        }
    }

    /// The async form: true when the client became ready within `timeout` milliseconds.
    public func runWhenReady(timeout: Int = 2000) async -> Bool {
        await withCheckedContinuation { continuation in
            runWhenReady(timeout) { continuation.resume(returning: $0) }
        }
    }

    // MARK: experiments

    /// The variation id `experimentID` gives `userID`: sticky (a returning user gets the same one), with its
    /// impression, and the user's pending data sent.
    public func triggerExperiment(_ userID: String, _ experimentID: Int) throws(KameleoonError) -> VariationID {
        try triggerExperiment(userID: userID, experimentID: String(experimentID))
    }

    /// The same, by the names of Kameleoon's later SDKs.
    public func triggerExperiment(visitorCode: String, experimentID: Int) throws(KameleoonError) -> VariationID {
        try triggerExperiment(userID: visitorCode, experimentID: String(experimentID))
    }

    /// The same, with the experiment's id as the datafile spells it.
    public func triggerExperiment(userID: String, experimentID: String) throws(KameleoonError) -> VariationID {
        try kameleoon { () throws(ClientError) in
            let config = try runtime.config()
            return try withUTF8Text(userID) { (user) throws(ClientError) in
                try runtime.triggerExperiment(config: config, experimentId: experimentID, userId: user,
                                              attributes: OwnedAttributes.empty)
            }
        }
    }

    // MARK: data and conversions

    /// Adds `data` to the user's pending data, sent with the next trigger, conversion or flush.
    public func addData(userID: String, data: KameleoonData...) throws(KameleoonError) {
        try addData(userID: userID, entries: data)
    }

    /// The same without the `data:` label (the seed's Custom example).
    public func addData(userID: String, _ data: KameleoonData...) throws(KameleoonError) {
        try addData(userID: userID, entries: data)
    }

    public func addData(visitorCode: String, _ data: KameleoonData...) throws(KameleoonError) {
        try addData(userID: visitorCode, entries: data)
    }

    public func addData(visitorCode: String, data: KameleoonData...) throws(KameleoonError) {
        try addData(userID: visitorCode, entries: data)
    }

    private func addData(userID: String, entries: [KameleoonData]) throws(KameleoonError) {
        try kameleoon { () throws(ClientError) in try runtime.addUserData(userId: userID, entries.map(\.entry)) }
    }

    /// A conversion of goal `goalID` (with the user's pending data), sent in the background.
    public func trackConversion(userID: String, goalID: Int, revenue: Double = 0, negative: Bool = false)
        throws(KameleoonError)
    {
        try track(userID: userID, goalID: Int64(goalID), revenue: revenue, negative: negative, completion: nil)
    }

    /// The same with the goal id as text (the seed's `let goalID = "83023"`); `.other(.invalidArgument)` when
    /// it is no number.
    public func trackConversion(userID: String, goalID: String, revenue: Double = 0, negative: Bool = false)
        throws(KameleoonError)
    {
        try track(userID: userID, goalID: try goalNumber(goalID), revenue: revenue, negative: negative, completion: nil)
    }

    /// The same, with `completion` told once whether the conversion was delivered (false also when it could
    /// not be queued).
    public func trackConversion(userID: String, goalID: Int, revenue: Double = 0, negative: Bool = false,
                                completion: @escaping @Sendable (Bool) -> Void) {
        do throws(KameleoonError) {
            try track(userID: userID, goalID: Int64(goalID), revenue: revenue, negative: negative,
                      completion: { code, _ in completion(code == nil) })
        } catch {
            completion(false)
        }
    }

    public func trackConversion(visitorCode: String, goalID: Int, revenue: Double = 0) throws(KameleoonError) {
        try trackConversion(userID: visitorCode, goalID: goalID, revenue: revenue)
    }

    private func track(userID: String, goalID: Int64, revenue: Double, negative: Bool,
                       completion: DeliveryWatch.Completion?) throws(KameleoonError) {
        guard goalID >= 0 else { throw .other(ExperimentError(.invalidArgument, "goalID: \(goalID) is negative")) }
        try kameleoon { () throws(ClientError) in
            try runtime.trackConversion(config: try runtime.config(), userId: userID, goalId: goalID, revenue: revenue,
                                        negative: negative, completion: completion)
        }
    }

    /// Sends the user's pending data now (nothing when there is none); `completionHandler` is told once
    /// whether it was delivered.
    public func flush(userID: String, completionHandler: (@Sendable (Bool) -> Void)? = nil) throws(KameleoonError) {
        var completion: DeliveryWatch.Completion? = nil
        if let completionHandler { completion = { code, _ in completionHandler(code == nil) } }
        try kameleoon { () throws(ClientError) in
            try runtime.flushUserData(config: try runtime.config(), userId: userID, completion: completion)
        }
    }

    public func flush(visitorCode: String) throws(KameleoonError) { try flush(userID: visitorCode) }

    /// Delivers every queued event of this client now (waiting up to the close timeout).
    public func flush() throws(KameleoonError) {
        try kameleoon { () throws(ClientError) in
            try runtime.ensureOpen()
            let left = runtime.events.flush(timeoutMs: runtime.options.closeTimeoutMs)
            if left > 0 { throw ClientError(.timeout, "\(left) events still queued; they stay on disk and are retried") }
        }
    }
}

/// `body` with `text`'s UTF-8 bytes (String.withUTF8 rethrows untyped: this keeps the error's type).
func withUTF8Text<T>(_ text: String, _ body: (UTF8Text) throws(ClientError) -> T) throws(ClientError) -> T {
    var text = text
    let result: Result<T, ClientError> = text.withUTF8 { bytes in
        do throws(ClientError) { return .success(try body(bytes)) } catch { return .failure(error) }
    }
    return try result.get()
}

func goalNumber(_ text: String) throws(KameleoonError) -> Int64 {
    guard let number = Int64(text), number >= 0 else {
        throw .other(ExperimentError(.invalidArgument, "goalID: \"\(text)\" is not a non-negative integer"))
    }
    return number
}
