import ExperimentCore
import Synchronization

/// The client's current profile service (nil: no sticky bucketing). Read lock-free on every decision;
/// replaced rarely (a host installing its callbacks), and every service ever installed stays alive until
/// the client goes, so a decision still holding the previous one never sees it freed.
public final class ProfileSlot: @unchecked Sendable {
    private let current = Atomic<UnsafeRawPointer?>(nil)
    private let installed = Locked<[ProfileService]>([])
    /// The fork generation the current service's connection was opened in.
    private let openedIn = Atomic<Int>(ForkGeneration.current)

    /// True in a forked child until it opened its own store: the parent's SQLite connection or Redis socket
    /// must not be used from two processes.
    @inline(__always)
    var isInherited: Bool { openedIn.load(ordering: .relaxed) != ForkGeneration.current }

    /// Replaces an inherited service with `reopen()`'s (once per fork; the inherited one is kept, unused).
    func replaceInherited(_ reopen: () -> ProfileService?) {
        installed.withLock { services in
            let now = ForkGeneration.current
            guard openedIn.load(ordering: .relaxed) != now else { return }
            if let fresh = reopen() {
                services.append(fresh)
                current.store(UnsafeRawPointer(Unmanaged.passUnretained(fresh).toOpaque()), ordering: .releasing)
            }
            openedIn.store(now, ordering: .relaxed)
        }
    }

    init(_ service: ProfileService?) {
        if let service { install(service) }
    }

    @inline(__always)
    public var service: ProfileService? {
        guard let pointer = current.load(ordering: .acquiring) else { return nil }
        return Unmanaged<ProfileService>.fromOpaque(pointer).takeUnretainedValue()
    }

    @inline(__always)
    var unretainedService: Unmanaged<ProfileService>? {
        current.load(ordering: .acquiring).map { Unmanaged<ProfileService>.fromOpaque($0) }
    }

    func install(_ service: ProfileService?) {
        guard let service else { return current.store(nil, ordering: .releasing) }
        installed.withLock { $0.append(service) }
        openedIn.store(ForkGeneration.current, ordering: .relaxed)
        current.store(UnsafeRawPointer(Unmanaged.passUnretained(service).toOpaque()), ordering: .releasing)
    }
}

extension Client {
    /// Bound of the in-memory profile cache in front of a store.
    /// 0 (no cache) with the option "profile_cache": false.
    static func profileCacheCapacity(_ options: ClientOptions) -> Int {
        options.profileCache ? options.userStoreCapacity : 0
    }

    /// The state directory, or nil (with a warning) when it cannot be used: the client then keeps
    /// profiles nowhere and overrides in memory, and decides anyway.
    static func openStateDirectory(_ options: ClientOptions, logger: Logger) -> StateDirectory? {
        guard options.usesStateFile else { return nil }
        do throws(ClientError) {
            return try StateDirectory(option: options.stateDir, logger: logger)
        } catch {
            let level: LogLevel = error.message.contains("refused for safety") ? .error : .warning
            logger.log(level, "\(error.message): sticky bucketing and forced variations are kept in memory only")
            return nil
        }
    }

    /// The store the options choose (callbacks arrive later, through installProfileStore).
    static func makeProfileService(_ options: ClientOptions, state: StateDirectory?, logger: Logger) -> ProfileService? {
        let store: ProfileStore
        switch options.profileStore {
        case .none, .callbacks:
            return nil
        case .sqlite:
            guard let state else { return nil }
            do throws(ClientError) {
                store = try SQLiteProfileStore(directory: state)
            } catch {
                logger.log(.warning, "\(error.message): deciding without sticky bucketing")
                return nil
            }
        case .redis(let url, let prefix, let ttl, let timeoutMs):
            do throws(ClientError) {
                store = try RedisProfileStore(url: url, prefix: prefix, ttlSeconds: ttl, timeoutMs: timeoutMs,
                                              logger: logger)
            } catch {
                logger.log(.warning, "\(error.message): deciding without sticky bucketing")
                return nil
            }
        }
        return ProfileService(store: store, cacheCapacity: profileCacheCapacity(options), logger: logger)
    }

    /// Replaces the client's profile store (nil: no sticky bucketing from now on).
    public func installProfileStore(_ store: ProfileStore?) {
        profileSlot.install(store.map { ProfileService(store: $0, cacheCapacity: Self.profileCacheCapacity(options),
                                                       logger: logger) })
    }

    /// The profile service a call uses: none when the call ignores the user profile service.
    @inline(__always)
    func profileService(for options: DecideOptions) -> ProfileService? {
        if options.contains(.ignoreUserProfileService) { return nil }
        if profileSlot.isInherited { reopenProfileStoreAfterFork() }
        return profileSlot.service
    }

    /// As `profileService(for:)`, unretained (the slot keeps every installed service alive): a decision
    /// holding it writes nothing to the shared service object.
    @inline(__always)
    func unretainedProfileService(for options: DecideOptions) -> Unmanaged<ProfileService>? {
        if options.contains(.ignoreUserProfileService) { return nil }
        if profileSlot.isInherited { reopenProfileStoreAfterFork() }
        return profileSlot.unretainedService
    }

    /// In a forked child: opens the child's own SQLite connection or Redis socket. A host's callback store
    /// is kept (the host decides what its callbacks share).
    func reopenProfileStoreAfterFork() {
        profileSlot.replaceInherited {
            switch options.profileStore {
            case .sqlite, .redis:
                return Self.makeProfileService(options, state: Self.openStateDirectory(options, logger: logger),
                                               logger: logger)
            case .none, .callbacks:
                return nil
            }
        }
    }

    /// The profile counters as JSON: store, lookups, cache_hits, saves, errors, cached, override_errors.
    public func profileStatsJSON() -> String {
        var writer = JSONWriter()
        writer.beginObject()
        guard let stats = profileSlot.service?.stats else {
            writer.field("store", "none")
            for name in ["lookups", "cache_hits", "saves", "errors", "cached"] { writer.key(name); writer.int(0) }
            writer.key("override_errors"); writer.int(Int64(overrides.writeErrors.load(ordering: .relaxed)))
            writer.key("overrides_cached"); writer.int(Int64(overrides.cachedUsers))
            writer.endObject()
            return writer.text
        }
        writer.field("store", stats.store)
        writer.key("lookups"); writer.int(Int64(stats.lookups))
        writer.key("cache_hits"); writer.int(Int64(stats.cacheHits))
        writer.key("saves"); writer.int(Int64(stats.saves))
        writer.key("errors"); writer.int(Int64(stats.errors))
        writer.key("cached"); writer.int(Int64(stats.cached))
        writer.key("override_errors"); writer.int(Int64(overrides.writeErrors.load(ordering: .relaxed)))
        writer.key("overrides_cached"); writer.int(Int64(overrides.cachedUsers))
        writer.endObject()
        return writer.text
    }
}

// MARK: reading and deleting stored profiles (exp_profile_get / exp_profile_delete)

extension Client {
    private func requireProfileService() throws(ClientError) -> ProfileService {
        try ensureOpen()
        guard let service = profileSlot.service else {
            throw ClientError(.notFound, "the client has no profile store (profile_store \"none\", or callbacks not installed)")
        }
        return service
    }

    /// The user's stored profile as the documented JSON ({"user_id", "experiment_bucket_map"}), nil when
    /// the store has none. Read from the store itself, so another process's saves are seen.
    public func storedProfileJSON(userId: String) throws(ClientError) -> String? {
        let service = try requireProfileService()
        guard let map = try service.storedProfile(userId: userId) else { return nil }
        return ProfileJSON.encode(userId: userId, map: map)
    }

    /// Deletes the user's stored profile (and this client's cached copy); true when there was one.
    public func deleteStoredProfile(userId: String) throws(ClientError) -> Bool {
        try requireProfileService().deleteProfile(userId: userId)
    }
}
