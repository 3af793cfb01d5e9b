import ExperimentCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One user's qualified real-time segments: an immutable list whose names a decision compares without
/// allocating. Segment lists are short (the segments a project's audiences use), so a linear scan wins.
public final class SegmentSet: @unchecked Sendable {
    public let names: [String]
    private let bytes: [[UInt8]]

    public init(_ names: [String]) {
        // The list as given (the reference keeps repeats); the names compared once each, by code points
        // ("\u{E9}" and "e\u{301}" are two segments, as in the reference's list).
        self.names = names
        var seen = Set<ExactKey>()
        bytes = names.filter { seen.insert(ExactKey($0)).inserted }.map { Array($0.utf8) }
    }

    public func contains(_ segment: UTF8Text) -> Bool {
        for name in bytes where name.count == segment.count {
            if name.isEmpty { return true }
            let equal = name.withUnsafeBufferPointer { memcmp($0.baseAddress!, segment.baseAddress!, name.count) == 0 }
            if equal { return true }
        }
        return false
    }
}

/// Attributes of a user who has qualified segments: `qualified` conditions read the segments, every
/// other condition reads `base`.
public struct SegmentQualifiedAttributes<Base: UserAttributes>: UserAttributes {
    public let base: Base
    public let segments: SegmentSet

    public init(base: Base, segments: SegmentSet) {
        self.base = base
        self.segments = segments
    }

    @inline(__always)
    public func value(named name: UTF8Text) -> AttributeValue? { base.value(named: name) }

    public func isQualified(for segment: UTF8Text) -> Bool {
        segments.contains(segment) || base.isQualified(for: segment)
    }

    public func forEach(_ body: (UTF8Text, AttributeValue) -> Void) { base.forEach(body) }
}

/// The qualified segments of each user (fetched or set by the host), in a bounded LRU like the user
/// properties. Decisions of users without segments cost one atomic load while nobody has any, and one
/// short lock otherwise.
public final class QualifiedSegmentsStore: @unchecked Sendable {
    private let users: Locked<LRUCache<SegmentSet>>
    private let userCount = Atomic<Int>(0)

    public init(capacity: Int) { users = Locked(LRUCache(capacity: capacity)) }

    /// The user's segments, or nil when none were fetched or set.
    @inline(__always)
    /// False while no user has an entry (one atomic load): exp_decide's fast path then needs no lookup.
    public var isEmpty: Bool { userCount.load(ordering: .acquiring) == 0 }

    public func segments(of userId: UTF8Text) -> SegmentSet? {
        guard userCount.load(ordering: .acquiring) > 0 else { return nil }
        let key = String(decoding: userId, as: UTF8.self)
        return users.withLock { $0.value(for: key) }
    }

    public func segments(of userId: String) -> SegmentSet? {
        guard userCount.load(ordering: .acquiring) > 0 else { return nil }
        return users.withLock { $0.value(for: userId) }
    }

    /// Replaces the user's segments; nil forgets them (qualified conditions then see none).
    public func set(_ segments: [String]?, for userId: String) {
        users.withLock { cache in
            if let segments {
                cache.set(SegmentSet(segments), for: userId)
            } else {
                cache.removeValue(for: userId)
            }
            userCount.store(cache.count, ordering: .releasing)
        }
    }
}
