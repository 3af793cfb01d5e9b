import ExperimentCore
import Synchronization

/// One user's forced variations (experiment id -> variation id) and forced decisions
/// ((flag key, rule key) -> variation key), as a decision reads them.
public struct UserOverrides: DecisionOverrides, Sendable {
    var forcedVariations: [String: String] = [:]
    var forcedDecisions: [ForcedDecisionKey: String] = [:]

    public static let none = UserOverrides()

    public var isEmpty: Bool { forcedVariations.isEmpty && forcedDecisions.isEmpty }

    public func forcedDecision(flagKey: String, ruleKey: String?) -> String? {
        forcedDecisions.isEmpty ? nil : forcedDecisions[ForcedDecisionKey(flag: flagKey, rule: ruleKey)]
    }

    public func forcedVariation(experimentId: String) -> String? { forcedVariations[experimentId] }
}

struct ForcedDecisionKey: Hashable, Sendable {
    let flag: String
    let rule: String?
}

/// Forced variations and forced decisions per user, kept in memory (Optimizely keeps them per SDK
/// instance too). Decisions of users without overrides never take the lock.
public final class OverrideStore: @unchecked Sendable {
    private let users = Locked<[String: UserOverrides]>([:])
    private let userCount = Atomic<Int>(0)

    public init() {}

    public func overrides(of userId: UTF8Text) -> UserOverrides { storedOverrides(of: userId) ?? .none }

    /// The user's overrides, or nil when the user has none (without taking the lock while nobody has any).
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
    }

    public func setForcedDecision(userId: String, flagKey: String, ruleKey: String?, variationKey: String?) {
        update(userId) { $0.forcedDecisions[ForcedDecisionKey(flag: flagKey, rule: ruleKey)] = variationKey }
    }

    public func removeForcedDecisions(userId: String) {
        update(userId) { $0.forcedDecisions.removeAll() }
    }

    private func update(_ userId: String, _ change: (inout UserOverrides) -> Void) {
        users.withLock { table in
            var overrides = table[userId] ?? UserOverrides()
            change(&overrides)
            table[userId] = overrides.isEmpty ? nil : overrides
            userCount.store(table.count, ordering: .releasing)
        }
    }
}
