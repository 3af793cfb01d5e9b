import ExperimentCore
import Synchronization

/// One user's forced variations (experiment id -> variation id), forced decisions
/// ((flag key, rule key) -> variation key) and Sigma forced memberships, as a decision reads them.
public struct UserOverrides: DecisionOverrides, Sendable {
    var forcedVariations: [String: String] = [:]
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

    public func forcedVariation(experimentId: String) -> String? { forcedVariations[experimentId] }

    public func forcedMembership(experimentId: String) -> ForcedMembership? {
        if let membership = memberships[experimentId] { return membership }
        return excludedFromAll ? .excluded : nil
    }
}

struct ForcedDecisionKey: Hashable, Sendable {
    let flag: String
    let rule: String?
}

/// Forced variations, forced decisions and Sigma forced memberships per user. Forced variations and
/// memberships are written through to the state file (table `forced_overrides`) and loaded at start, so
/// they survive restarts; forced decisions belong to a user context and stay in memory, as in the
/// reference. Decisions of users without overrides never take the lock.
public final class OverrideStore: @unchecked Sendable {
    private let users = Locked<[String: UserOverrides]>([:])
    private let userCount = Atomic<Int>(0)
    private let persistence: OverridePersistence?
    private let logger: Logger?
    /// Overrides whose write to the state file failed (they hold in memory only): profile_stats.override_errors.
    public let writeErrors = Atomic<Int>(0)

    public init(state: StateDirectory? = nil, logger: Logger? = nil) {
        self.logger = logger
        guard let state else {
            persistence = nil
            return
        }
        do throws(ClientError) {
            let persistence = try OverridePersistence(directory: state)
            let loaded = try persistence.loadAll()
            users.withLock { $0 = loaded }
            userCount.store(loaded.count, ordering: .releasing)
            self.persistence = persistence
        } catch {
            logger?.log(.warning, "\(error.message): forced variations are kept in memory only")
            persistence = nil
        }
    }

    public func overrides(of userId: UTF8Text) -> UserOverrides { storedOverrides(of: userId) ?? .none }

    /// The user's overrides, or nil when the user has none (without taking the lock while nobody has any).
    /// False while no user has an entry (one atomic load): exp_decide's fast path then needs no lookup.
    public var isEmpty: Bool { userCount.load(ordering: .acquiring) == 0 }

    public func storedOverrides(of userId: UTF8Text) -> UserOverrides? {
        guard userCount.load(ordering: .acquiring) > 0 else { return nil }
        let key = String(decoding: userId, as: UTF8.self)
        return users.withLock { $0[key] }
    }

    public func overrides(of userId: String) -> UserOverrides {
        guard userCount.load(ordering: .acquiring) > 0 else { return .none }
        return users.withLock { $0[userId] } ?? .none
    }

    public func setForcedVariation(userId: String, experimentId: String, variationId: String?) {
        update(userId) { $0.forcedVariations[experimentId] = variationId }
        persist { try $0.setForcedVariation(userId: userId, experimentId: experimentId, variationId: variationId) }
    }

    public func setForcedDecision(userId: String, flagKey: String, ruleKey: String?, variationKey: String?) {
        update(userId) { $0.forcedDecisions[ForcedDecisionKey(flag: flagKey, rule: ruleKey)] = variationKey }
    }

    public func removeForcedDecisions(userId: String) {
        update(userId) { $0.forcedDecisions.removeAll() }
    }

    /// Sigma include_force / exclude_force for one experiment (nil clears it).
    public func setMembership(userId: String, experimentId: String, _ membership: ForcedMembership?) {
        update(userId) { $0.memberships[experimentId] = membership }
        persist { try $0.setMembership(userId: userId, experimentId: experimentId, membership) }
    }

    /// Sigma exclude_force_all.
    public func setExcludedFromAll(userId: String, _ excluded: Bool) {
        update(userId) { $0.excludedFromAll = excluded }
        persist { try $0.setExcludedFromAll(userId: userId, excluded) }
    }

    /// Clears every Sigma forced membership of the user (include, exclude, exclude-all).
    public func clearMemberships(userId: String) {
        update(userId) {
            $0.memberships.removeAll()
            $0.excludedFromAll = false
        }
        persist { try $0.clearMemberships(userId: userId) }
    }

    public var isPersistent: Bool { persistence != nil }

    private func update(_ userId: String, _ change: (inout UserOverrides) -> Void) {
        users.withLock { table in
            var overrides = table[userId] ?? UserOverrides()
            change(&overrides)
            table[userId] = overrides.isEmpty ? nil : overrides
            userCount.store(table.count, ordering: .releasing)
        }
    }

    /// Writes a change through; a failed write keeps the change in memory and is logged.
    private func persist(_ write: (OverridePersistence) throws -> Void) {
        guard let persistence else { return }
        do {
            try write(persistence)
        } catch {
            writeErrors.add(1, ordering: .relaxed)
            let message = (error as? ClientError)?.message ?? "\(error)"
            logger?.log(.warning, "\(message): the override holds in memory until the client goes")
        }
    }
}
