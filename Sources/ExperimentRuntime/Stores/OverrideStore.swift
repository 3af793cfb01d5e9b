import ExperimentCore
import Synchronization

/// One user's forced variations (experiment id -> variation id), forced decisions
/// ((flag key, rule key) -> variation key) and Sigma forced memberships, as a decision reads them.
public struct UserOverrides: DecisionOverrides, Sendable {
    var forcedVariations: [ExactKey: String] = [:]
    var forcedDecisions: [ForcedDecisionKey: String] = [:]
    /// Sigma include_force / exclude_force per experiment id.
    var memberships: [String: ForcedMembership] = [:]
    /// Sigma exclude_force_all: out of every experiment (a per-experiment include still wins).
    var excludedFromAll = false

    public static let none = UserOverrides()

    public var isEmpty: Bool {
        forcedVariations.isEmpty && forcedDecisions.isEmpty && memberships.isEmpty && !excludedFromAll
    }

    public func forcedDecision(flagKey: String, ruleKey: String?) -> String? {
        forcedDecisions.isEmpty ? nil : forcedDecisions[ForcedDecisionKey(flag: flagKey, rule: ruleKey)]
    }

    public func forcedVariation(experimentId: String) -> String? { forcedVariations[ExactKey(experimentId)] }

    public func forcedMembership(experimentId: String) -> ForcedMembership? {
        if let membership = memberships[experimentId] { return membership }
        return excludedFromAll ? .excluded : nil
    }
}

/// Compared and hashed by code points, as the reference's dict of forced decisions keys them.
struct ForcedDecisionKey: Hashable, Sendable {
    let flag: String
    let rule: String?

    static func == (a: ForcedDecisionKey, b: ForcedDecisionKey) -> Bool {
        a.flag.sameCodePoints(b.flag) && a.rule.sameCodePoints(b.rule)
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(ExactKey(flag))
        hasher.combine(rule.map(ExactKey.init))
    }
}

/// Forced variations, forced decisions and Sigma forced memberships per user.
///
/// With a state file, every override is written through to it (tables `forced_overrides` and
/// `forced_decisions`) and read back lazily, one user at a time, when that user is first decided; memory
/// holds at most `capacity` users (least recently used first out, users without overrides included, so a
/// flood of users never reaches the file twice while cached). Overrides survive restarts. Without a state
/// file (or when it cannot be opened) they live in memory only, for the client's lifetime.
/// Decisions never take the lock while no user has an override (one atomic load).
public final class OverrideStore: @unchecked Sendable {
    private struct Table {
        /// With a state file: a bounded cache of what the file holds (empty entries too).
        var cache: LRUCache<UserOverrides>
        /// Without one: every user with an override; with one, users whose last write failed (they hold
        /// here, not evictable, until a later write for them succeeds).
        var pinned: [ExactKey: UserOverrides] = [:]
    }

    private let table: Locked<Table>
    /// Users with at least one override (in the file, or in memory without one).
    private let userCount = Atomic<Int>(0)
    private let persistence: OverridePersistence?
    private let logger: Logger?
    /// Overrides whose write to the state file failed (they hold in memory only): profile_stats.override_errors.
    public let writeErrors = Atomic<Int>(0)
    /// Reads of a user's overrides from the state file that failed (the user is decided without them).
    public let readErrors = Atomic<Int>(0)

    public init(state: StateDirectory? = nil, logger: Logger? = nil, capacity: Int = 10_000) {
        self.logger = logger
        table = Locked(Table(cache: LRUCache(capacity: capacity)))
        guard let state else {
            persistence = nil
            return
        }
        do throws(ClientError) {
            let persistence = try OverridePersistence(directory: state)
            userCount.store(try persistence.userCount(), ordering: .releasing)
            self.persistence = persistence
        } catch {
            logger?.log(.warning, "\(error.message): forced variations are kept in memory only")
            persistence = nil
        }
    }

    /// Users whose overrides are held in memory now (cached and pinned): profile_stats.overrides_cached.
    public var cachedUsers: Int { table.withLock { $0.cache.count + $0.pinned.count } }

    public func overrides(of userId: UTF8Text) -> UserOverrides { storedOverrides(of: userId) ?? .none }

    /// False while no user has an entry (one atomic load): exp_decide's fast path then needs no lookup.
    public var isEmpty: Bool { userCount.load(ordering: .acquiring) == 0 }

    /// The user's overrides, or nil when the user has none (without taking the lock while nobody has any).
    public func storedOverrides(of userId: UTF8Text) -> UserOverrides? {
        guard userCount.load(ordering: .acquiring) > 0 else { return nil }
        let found = lookup(String(decoding: userId, as: UTF8.self))
        return found.isEmpty ? nil : found
    }

    public func overrides(of userId: String) -> UserOverrides {
        guard userCount.load(ordering: .acquiring) > 0 else { return .none }
        return lookup(userId)
    }

    public func setForcedVariation(userId: String, experimentId: String, variationId: String?) {
        update(userId, { $0.forcedVariations[ExactKey(experimentId)] = variationId }) {
            try $0.setForcedVariation(userId: userId, experimentId: experimentId, variationId: variationId)
        }
    }

    public func setForcedDecision(userId: String, flagKey: String, ruleKey: String?, variationKey: String?) {
        update(userId, { $0.forcedDecisions[ForcedDecisionKey(flag: flagKey, rule: ruleKey)] = variationKey }) {
            try $0.setForcedDecision(userId: userId, flagKey: flagKey, ruleKey: ruleKey, variationKey: variationKey)
        }
    }

    public func removeForcedDecisions(userId: String) {
        update(userId, { $0.forcedDecisions.removeAll() }) { try $0.removeForcedDecisions(userId: userId) }
    }

    /// Sigma include_force / exclude_force for one experiment (nil clears it).
    public func setMembership(userId: String, experimentId: String, _ membership: ForcedMembership?) {
        update(userId, { $0.memberships[experimentId] = membership }) {
            try $0.setMembership(userId: userId, experimentId: experimentId, membership)
        }
    }

    /// Sigma exclude_force_all.
    public func setExcludedFromAll(userId: String, _ excluded: Bool) {
        update(userId, { $0.excludedFromAll = excluded }) { try $0.setExcludedFromAll(userId: userId, excluded) }
    }

    /// Clears every Sigma forced membership of the user (include, exclude, exclude-all).
    public func clearMemberships(userId: String) {
        update(userId, {
            $0.memberships.removeAll()
            $0.excludedFromAll = false
        }) { try $0.clearMemberships(userId: userId) }
    }

    public var isPersistent: Bool { persistence != nil }

    /// The user's overrides from memory, else from the state file (then cached).
    private func lookup(_ userId: String) -> UserOverrides {
        table.withLock { table in current(userId, in: &table) }
    }

    private func current(_ userId: String, in table: inout Table) -> UserOverrides {
        if let pinned = table.pinned[ExactKey(userId)] { return pinned }
        guard let persistence else { return .none }
        if let cached = table.cache.value(for: userId) { return cached }
        do throws(ClientError) {
            let loaded = try persistence.load(userId: userId)
            table.cache.set(loaded, for: userId)
            return loaded
        } catch {
            readErrors.add(1, ordering: .relaxed)
            logger?.log(.warning, "\(error.message): the user is decided without forced variations or decisions")
            return .none
        }
    }

    /// Applies `change` to the user's overrides and writes it through (under the lock, so the file and the
    /// cache agree); a failed write keeps the change in memory (pinned) and is logged.
    private func update(_ userId: String, _ change: (inout UserOverrides) -> Void,
                        persist write: (OverridePersistence) throws -> Void) {
        table.withLock { table in
            var overrides = current(userId, in: &table)
            let had = !overrides.isEmpty
            change(&overrides)
            let has = !overrides.isEmpty
            if let persistence {
                do {
                    try write(persistence)
                    table.pinned[ExactKey(userId)] = nil
                    table.cache.set(overrides, for: userId)
                } catch {
                    writeErrors.add(1, ordering: .relaxed)
                    let message = (error as? ClientError)?.message ?? "\(error)"
                    logger?.log(.warning, "\(message): the override holds in memory until the client goes")
                    table.pinned[ExactKey(userId)] = overrides
                    table.cache.removeValue(for: userId)
                }
            } else {
                table.pinned[ExactKey(userId)] = has ? overrides : nil
            }
            if had != has { userCount.add(has ? 1 : -1, ordering: .releasing) }
        }
    }
}
