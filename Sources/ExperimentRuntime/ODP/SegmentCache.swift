/// Fetched segments by user, LRU with an age limit, as the reference's segments cache behaves:
/// size 0 disables it, timeout 0 never expires, a stale entry found by a lookup is dropped.
final class SegmentCache: @unchecked Sendable {
    private struct Entry {
        let segments: [String]
        let savedAtMs: Int64
    }

    let capacity: Int
    let timeoutMs: Int64
    private let entries: Locked<LRUCache<Entry>>

    init(capacity: Int, timeoutSeconds: Int) {
        self.capacity = capacity
        timeoutMs = Int64(timeoutSeconds) * 1000
        entries = Locked(LRUCache(capacity: capacity))
    }

    /// The reference's cache key: the identifier's kind and value.
    static func key(userKey: String, userValue: String) -> String { "\(userKey)-$-\(userValue)" }

    func lookup(_ key: String) -> [String]? {
        guard capacity > 0 else { return nil }
        return entries.withLock { cache in
            guard let entry = cache.value(for: key) else { return nil }
            if timeoutMs > 0 && monotonicMillis() - entry.savedAtMs >= timeoutMs {
                cache.removeValue(for: key)
                return nil
            }
            return entry.segments
        }
    }

    func save(_ segments: [String], for key: String) {
        guard capacity > 0 else { return }
        _ = entries.withLock { $0.set(Entry(segments: segments, savedAtMs: monotonicMillis()), for: key) }
    }

    func reset() {
        guard capacity > 0 else { return }
        entries.withLock { $0 = LRUCache(capacity: capacity) }
    }
}
