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
    private let cache: Locked<LRUCache<BucketMap>>
    private let lookups = Atomic<Int>(0)
    private let cacheHits = Atomic<Int>(0)
    private let saves = Atomic<Int>(0)
    private let errors = Atomic<Int>(0)

    public init(store: ProfileStore, cacheCapacity: Int, logger: Logger) {
        self.store = store
        self.logger = logger
        self.cache = Locked(LRUCache(capacity: cacheCapacity))
    }

    /// The user's bucket map (empty when the user has none), or nil when the store failed.
    func load(userId: String) -> BucketMap? {
        lookups.add(1, ordering: .relaxed)
        if let cached = cache.withLock({ $0.value(for: userId) }) {
            cacheHits.add(1, ordering: .relaxed)
            return cached
        }
        do throws(ClientError) {
            let map = try store.lookup(userId: userId) ?? [:]
            cache.withLock { $0.set(map, for: userId) }
            return map
        } catch {
            failed("lookup", userId: userId, error)
            return nil
        }
    }

    func save(userId: String, map: BucketMap) {
        saves.add(1, ordering: .relaxed)
        // The cache first: this process stays sticky even when the store write fails.
        cache.withLock { $0.set(map, for: userId) }
        do throws(ClientError) {
            try store.save(userId: userId, map: map)
        } catch {
            failed("save", userId: userId, error)
        }
    }

    /// Forgets cached profiles (a store shared with other processes is read again).
    public func clearCache() { cache.withLock { $0 = LRUCache(capacity: $0.capacity) } }

    public var stats: ProfileStats {
        var stats = ProfileStats(store: store.name)
        stats.lookups = lookups.load(ordering: .relaxed)
        stats.cacheHits = cacheHits.load(ordering: .relaxed)
        stats.saves = saves.load(ordering: .relaxed)
        stats.errors = errors.load(ordering: .relaxed)
        stats.cached = cache.withLock { $0.count }
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
final class ProfileTracker: StickyAssignments {
    private let service: ProfileService
    private let userId: UTF8Text
    private var userKey = ""
    private var map = BucketMap()
    private var loaded = false
    private var lookupFailed = false
    private var changed = false

    init(service: ProfileService, userId: UTF8Text) {
        self.service = service
        self.userId = userId
    }

    var isActive: Bool { true }

    func savedVariation(experimentId: String) -> String? {
        loadOnce()
        return map[experimentId]
    }

    func record(experimentId: String, variationId: String) {
        loadOnce()
        guard map[experimentId] != variationId else { return }
        map[experimentId] = variationId
        changed = true
    }

    /// Saves the profile when the call bucketed the user somewhere new. After a failed lookup nothing is
    /// saved: writing a partial profile would erase the stored assignments.
    func finish() {
        guard changed, !lookupFailed else { return }
        service.save(userId: userKey, map: map)
    }

    private func loadOnce() {
        guard !loaded else { return }
        loaded = true
        userKey = String(decoding: userId, as: UTF8.self)
        if let stored = service.load(userId: userKey) { map = stored } else { lookupFailed = true }
    }
}
