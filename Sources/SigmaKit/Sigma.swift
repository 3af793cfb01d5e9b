import ExperimentCore
import ExperimentKit
import ExperimentRuntime

// Sigma's iOS SDK shape (`import SigmaSDK` -> `import SigmaKit`) over the runtime's Sigma calls: a thin
// mapping, no behaviour of its own. The project token is the SDK key that names the datafile.

/// Sigma's entry point: named clients, one per tag, in this process.
public enum Sigma {
    private static let clients = Locked<[String: SigmaClient]>([:])

    /// A client for `projectToken`, fetching its configuration in the background and then on use once it is
    /// older than `cacheTTL` seconds (10 at least), retrying a failed request `retryCount` times.
    /// `apiURL`: the datafile URL template (`{sdk_key}` is replaced by the token; http(s):// or file://),
    /// nil for the library's default; `settings` carries the rest (state directory, event endpoint).
    /// Throws `.initializationOfExistingClient` when an open client already has `tag`.
    @discardableResult
    public static func initializeClient(projectToken: String, initialUser: SigmaUser? = nil, apiURL: String? = nil,
                                        cacheTTL: UInt = 10, retryCount: UInt = 3, tag: String = "default",
                                        settings: ClientSettings = ClientSettings()) throws(SigmaError) -> SigmaClient
    {
        var settings = settings
        settings.tag = tag
        settings.cacheTTLSeconds = Int(clamping: cacheTTL)
        settings.retryCount = Int(clamping: retryCount)
        if let apiURL { settings.datafileURLTemplate = apiURL }
        let experimentClient: ExperimentClient
        do throws(ExperimentError) {
            experimentClient = try ExperimentClient(sdkKey: projectToken, settings: settings)
        } catch {
            throw error.code == .tagInUse ? .initializationOfExistingClient(tag: tag) : .other(error)
        }
        let client = SigmaClient(tag: tag, client: experimentClient, user: initialUser ?? SigmaUser.Builder().build())
        clients.withLock { $0[tag] = client }
        experimentClient.start { _ in }  // the outcome is what the calls' waits report
        return client
    }

    /// The client initialized with `tag`, or nil.
    public static func getClient(tag: String = "default") -> SigmaClient? { clients.withLock { $0[tag] } }

    /// Closes the client with `tag` (its queued events are delivered or kept on disk) and frees the tag.
    public static func removeClient(tag: String = "default") {
        let removed = clients.withLock { $0.removeValue(forKey: tag) }
        removed?.experimentClient.close()
    }
}

/// Sigma's SigmaClient: the current user, their flags, experiments and holdouts, forced memberships.
/// Every call waits for the configuration (at most the request timeout times the attempts) first.
public final class SigmaClient: Sendable {
    public let tag: String
    /// The ExperimentKit client underneath (event dispatcher, logger, notifications).
    public let experimentClient: ExperimentClient
    private let current: Locked<SigmaUser>

    var runtime: Client { experimentClient.runtime }

    init(tag: String, client: ExperimentClient, user: SigmaUser) {
        self.tag = tag
        experimentClient = client
        let resolved = user.userId == nil ? SigmaUser(userId: Self.randomUserId(), properties: user.properties) : user
        current = Locked(resolved)
        store(resolved, replacing: nil)
    }

    /// An anonymous user's id, as Sigma generates one (no Foundation: 128 random bits in hex).
    private static func randomUserId() -> String {
        var generator = SystemRandomNumberGenerator()
        let high = String(generator.next() as UInt64, radix: 16), low = String(generator.next() as UInt64, radix: 16)
        return "anonymous-" + high + low
    }

    /// The client's user now (with the id it was given or generated).
    public var user: SigmaUser { current.withLock { $0 } }
    var userId: String { user.userId ?? "" }

    // MARK: user properties

    /// Replaces every property (and the id, when the builder sets one) by what `builder` sets.
    public func setUserProperties(builder: (SigmaUser.Builder) -> SigmaUser.Builder) {
        update { _ in builder(SigmaUser.Builder()).build() }
    }

    /// Changes the properties `builder` sets; the others stay.
    public func editUserProperties(builder: (SigmaUser.Builder) -> SigmaUser.Builder) {
        update { user in builder(SigmaUser.Builder(user)).build() }
    }

    /// Removes every property (the user id stays, so the user keeps their variations).
    public func clearUserProperties() {
        update { user in SigmaUser(userId: user.userId, properties: [:]) }
    }

    private func update(_ change: (SigmaUser) -> SigmaUser) {
        let (old, new) = current.withLock { user -> (SigmaUser, SigmaUser) in
            let changed = change(user)
            let kept = SigmaUser(userId: changed.userId ?? user.userId, properties: changed.properties)
            let previous = user
            user = kept
            return (previous, kept)
        }
        store(new, replacing: old)
    }

    /// The user's properties into the runtime's property store (where audiences read them).
    private func store(_ user: SigmaUser, replacing old: SigmaUser?) {
        if let oldId = old?.userId, oldId != user.userId { runtime.properties.clear(userId: oldId) }
        let (accepted, refused) = user.runtimeProperties()
        for problem in refused { runtime.logger.log(.warning, "Sigma user property left out: \(problem)") }
        runtime.applySigmaProperties(userId: user.userId ?? "", accepted, replace: true)
    }

    // MARK: waiting for the configuration

    /// How long a call waits for a configuration: every attempt of the fetch.
    private var waitMs: Int64 {
        Int64(runtime.options.requestTimeoutMs) * Int64(runtime.options.retryCount + 1)
    }

    /// Runs `body` once the client has a configuration, or with `.configNotAvailable` when none came.
    func whenConfigured(_ body: @escaping @Sendable (SigmaError?) -> Void) {
        do throws(ClientError) {
            try runtime.runWhenReady(timeoutMs: waitMs) { error in body(error.map { _ in .configNotAvailable }) }
        } catch {
            body(SigmaError(error))
        }
    }

    func configured() async -> SigmaError? {
        await withCheckedContinuation { continuation in whenConfigured { continuation.resume(returning: $0) } }
    }

    /// The callback form of a call: `compute` once configured, its outcome to one of the callbacks.
    func callback<T>(_ onSuccess: SigmaSuccessCallback<T>?, _ onError: SigmaErrorCallback?,
                     _ compute: @escaping @Sendable () throws(SigmaError) -> T) {
        whenConfigured { error in
            if let error { onError?(error); return }
            do throws(SigmaError) { onSuccess?(try compute()) } catch { onError?(error) }
        }
    }

    /// The async form of a call.
    func awaiting<T>(_ compute: () throws(SigmaError) -> T) async throws(SigmaError) -> T {
        if let error = await configured() { throw error }
        return try compute()
    }

    /// `body` with the runtime's config and the user's id as UTF-8; the runtime's errors as Sigma's.
    func withUser<T>(_ body: (ProjectConfig, UTF8Text) throws(ClientError) -> T) throws(SigmaError) -> T {
        var id = userId
        let result: Result<T, ClientError> = id.withUTF8 { bytes in
            do throws(ClientError) {
                return .success(try body(try runtime.config(), bytes))
            } catch {
                return .failure(error)
            }
        }
        do throws(ClientError) { return try result.get() } catch { throw SigmaError(error) }
    }
}
