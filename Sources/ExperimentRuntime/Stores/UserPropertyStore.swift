import ExperimentCore
import Synchronization

/// User properties set by the host (exp_set_user_property), kept per user id in a bounded LRU so a
/// flood of unique ids cannot grow memory without limit. Each user's properties are an immutable
/// `OwnedAttributes` snapshot: a decision takes it under the lock and reads it without one.
public final class UserPropertyStore: @unchecked Sendable {
    private let users: Locked<LRUCache<OwnedAttributes>>
    /// Lets decisions skip the lock entirely while nobody has set a property.
    private let userCount = Atomic<Int>(0)
    private let evictions = Atomic<Int>(0)

    public init(capacity: Int) { users = Locked(LRUCache(capacity: capacity)) }

    public var evictedUsers: Int { evictions.load(ordering: .relaxed) }

    public func properties(of userId: UTF8Text) -> OwnedAttributes { storedProperties(of: userId) ?? .empty }

    /// The user's properties, or nil when the user has none (without taking the lock while nobody has any).
    /// False while no user has an entry (one atomic load): exp_decide's fast path then needs no lookup.
    public var isEmpty: Bool { userCount.load(ordering: .acquiring) == 0 }

    public func storedProperties(of userId: UTF8Text) -> OwnedAttributes? {
        guard userCount.load(ordering: .acquiring) > 0 else { return nil }
        let key = String(decoding: userId, as: UTF8.self)
        return users.withLock { $0.value(for: key) }
    }

    public func properties(of userId: String) -> OwnedAttributes {
        guard userCount.load(ordering: .acquiring) > 0 else { return .empty }
        return users.withLock { $0.value(for: userId) } ?? .empty
    }

    /// Applies `changes` (nil value: remove the key) to the user's properties.
    public func update(userId: String, _ changes: [(key: [UInt8], value: OwnedValue?)]) {
        users.withLock { cache in
            let current = cache.value(for: userId) ?? .empty
            let updated = current.applying(changes)
            if updated.isEmpty {
                cache.removeValue(for: userId)
            } else {
                evictions.add(cache.set(updated, for: userId), ordering: .relaxed)
            }
            userCount.store(cache.count, ordering: .releasing)
        }
    }

    /// Replaces all the user's properties with `changes` (nil values are skipped), in one step.
    public func replace(userId: String, with changes: [(key: [UInt8], value: OwnedValue?)]) {
        users.withLock { cache in
            let updated = OwnedAttributes.empty.applying(changes)
            if updated.isEmpty {
                cache.removeValue(for: userId)
            } else {
                evictions.add(cache.set(updated, for: userId), ordering: .relaxed)
            }
            userCount.store(cache.count, ordering: .releasing)
        }
    }

    public func clear(userId: String) {
        users.withLock { cache in
            cache.removeValue(for: userId)
            userCount.store(cache.count, ordering: .releasing)
        }
    }
}
