import ExperimentCore
import Synchronization

/// Counters of a client's profile store, for exp_client_profile_stats.
public struct ProfileStats: Sendable {
    public var store: String
    public var lookups = 0
    public var cacheHits = 0
    public var saves = 0
    public var errors = 0
    public var cached = 0
}

/// Sticky bucketing over one store with a bounded in-memory cache in front (profiles looked up or
/// saved recently are served without touching the store). A store that fails is logged and counted;
/// the decision then buckets as if the user had no profile.
public final class ProfileService: @unchecked Sendable {
    public let store: ProfileStore
    private let logger: Logger
    private let cache: ProfileCache
    /// False (cache capacity 0): no cache; every call reads the store, and a save does not read it again.
    private let caches: Bool
    private let saves = Atomic<Int>(0)
    private let errors = Atomic<Int>(0)

    public init(store: ProfileStore, cacheCapacity: Int, logger: Logger) {
        self.store = store
        self.logger = logger
        self.caches = cacheCapacity > 0
        self.cache = ProfileCache(capacity: cacheCapacity)
    }

    /// The user's bucket map (empty when the user has none), or nil when the store failed.
    func load(userId: String) -> BucketMap? {
        if caches, let cached = cache.lookup(userId) { return cached }
        do throws(ClientError) {
            let map = try store.lookup(userId: userId) ?? [:]
            if caches { cache.set(map, for: userId) }
            return map
        } catch {
            failed("lookup", userId: userId, error)
            return nil
        }
    }

    /// Saves what a call changed. `loaded` is the profile the call started from, `changes` the experiments
    /// it bucketed anew. The store is read again first, because another process or server may have saved
    /// this user since our copy was cached: its entries are kept, and for an experiment both bucketed, the
    /// one saved first wins (our change only replaces what we had loaded, e.g. a deleted variation).
    func save(userId: String, loaded: BucketMap, changes: BucketMap) {
        saves.add(1, ordering: .relaxed)
        var merged = loaded
        var current: BucketMap? = nil
        if caches {
            do throws(ClientError) {
                current = try store.lookup(userId: userId)
            } catch {
                failed("lookup before save", userId: userId, error)
            }
        }
        if let current { merged = current }
        for (experimentId, variationId) in changes {
            if let current, let theirs = current[experimentId], theirs != loaded[experimentId] { continue }
            merged[experimentId] = variationId
        }
        // The cache first: this process stays sticky even when the store write fails.
        if caches { cache.set(merged, for: userId) }
        do throws(ClientError) {
            try store.save(userId: userId, map: merged)
        } catch {
            failed("save", userId: userId, error)
        }
    }

    /// The user's stored profile, read from the store itself (not the cache); nil when it has none.
    public func storedProfile(userId: String) throws(ClientError) -> BucketMap? {
        try store.lookup(userId: userId)
    }

    /// Deletes the user's profile from the store and the cache; true when the store had one. The user is
    /// bucketed afresh at the next decision.
    public func deleteProfile(userId: String) throws(ClientError) -> Bool {
        cache.remove(userId)
        return try store.remove(userId: userId)
    }

    /// Forgets cached profiles (a store shared with other processes is read again).
    public func clearCache() { cache.removeAll() }

    public var stats: ProfileStats {
        var stats = ProfileStats(store: store.name)
        stats.lookups = cache.lookups
        stats.cacheHits = cache.cacheHits
        stats.saves = saves.load(ordering: .relaxed)
        stats.errors = errors.load(ordering: .relaxed)
        stats.cached = cache.count
        return stats
    }

    private func failed(_ operation: String, userId: String, _ error: ClientError) {
        errors.add(1, ordering: .relaxed)
        logger.log(.warning, "profile store (\(store.name)): \(operation) for user \"\(userId)\" failed, "
                   + "deciding without sticky bucketing: \(error.message)")
    }
}

/// One call's view of a user's profile (the reference's UserProfileTracker): looked up at most once, on
/// the first experiment that asks, and saved at most once, when the call is over and something changed.
/// Its state lives in stack memory the caller provides (`withTracker`), so a decision allocates nothing
/// for it.
struct ProfileTracker: StickyAssignments {
    struct State {
        // Not retained: a retain would write to the service every deciding thread reads. The client keeps
        // every service it ever installed alive until it goes (ProfileSlot).
        let service: Unmanaged<ProfileService>
        let userId: UTF8Text
        /// False for read-only summaries: they show saved assignments but record nothing.
        let saves: Bool
        var userKey = ""
        var map = BucketMap()
        var loadedMap = BucketMap()
        var changes = BucketMap()
        var loaded = false
        var lookupFailed = false
        var changed = false
    }

    private let state: UnsafeMutablePointer<State>

    /// Runs `body` with a tracker for `userId`, then saves what it recorded (unless `saves` is false).
    @inline(__always)
    static func withTracker<R>(service: Unmanaged<ProfileService>, userId: UTF8Text, saves: Bool = true,
                               _ body: (ProfileTracker) -> R) -> R {
        withUnsafeTemporaryAllocation(of: State.self, capacity: 1) { buffer in
            let state = buffer.baseAddress!
            state.initialize(to: State(service: service, userId: userId, saves: saves))
            defer { state.deinitialize(count: 1) }
            let tracker = ProfileTracker(state: state)
            let result = body(tracker)
            tracker.finish()
            return result
        }
    }

    private init(state: UnsafeMutablePointer<State>) { self.state = state }

    var isActive: Bool { true }

    func savedVariation(experimentId: String) -> String? {
        loadOnce()
        // Only the entry of this very id (by code points, as the reference's dict): a Swift dictionary also
        // answers for a canonically equivalent key ("\u{E9}" for "e\u{301}").
        guard let index = state.pointee.map.index(forKey: experimentId),
              state.pointee.map[index].key.sameCodePoints(experimentId) else { return nil }
        return state.pointee.map[index].value
    }

    func record(experimentId: String, variationId: String) {
        loadOnce()
        guard state.pointee.map[experimentId] != variationId else { return }
        state.pointee.map[experimentId] = variationId
        state.pointee.changes[experimentId] = variationId
        state.pointee.changed = true
    }

    /// Saves the profile when the call bucketed the user somewhere new. After a failed lookup nothing is
    /// saved: writing a partial profile would erase the stored assignments.
    private func finish() {
        guard state.pointee.saves, state.pointee.changed, !state.pointee.lookupFailed else { return }
        state.pointee.service._withUnsafeGuaranteedRef {
            $0.save(userId: state.pointee.userKey, loaded: state.pointee.loadedMap, changes: state.pointee.changes)
        }
    }

    private func loadOnce() {
        guard !state.pointee.loaded else { return }
        state.pointee.loaded = true
        let key = String(decoding: state.pointee.userId, as: UTF8.self)
        state.pointee.userKey = key
        if let stored = state.pointee.service._withUnsafeGuaranteedRef({ $0.load(userId: key) }) {
            state.pointee.map = stored
            state.pointee.loadedMap = stored
        } else {
            state.pointee.lookupFailed = true
        }
    }
}
