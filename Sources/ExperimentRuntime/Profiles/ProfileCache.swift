import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The in-memory profile cache in front of a store, split into shards by a hash of the user id. Each
/// shard has its own mutex, LRU and counters, laid out on cache lines of its own: threads deciding for
/// different users lock and count on different lines, where one shared mutex and one pair of atomic
/// counters made every sticky decision write lines that every deciding thread shares.
///
/// Small caches (under `shardingThreshold` entries) keep one shard, so their eviction order is exactly
/// least-recently-used over all users. Sharded caches count their entries in one atomic, touched only
/// when a user is added or evicted (a store lookup or save happens then anyway, never on a cache hit):
/// when the total passes the capacity, the least recently used user of the adding shard is evicted. Any
/// `capacity` users therefore fit, as before; only the choice of whom to evict is per shard.
final class ProfileCache: @unchecked Sendable {
    private struct Shard {
        var entries: LRUCache<BucketMap>
        var lookups = 0
        var cacheHits = 0
    }

    static let shardingThreshold = 1024
    private static let shardCountWhenLarge = 16
    /// Two lines per shard boundary: the adjacent-line prefetcher fetches lines in pairs.
    private static let alignment = 128
    private static let mutexSpace = 64

    private let total = Atomic<Int>(0)
    private let base: UnsafeMutableRawPointer
    private let stride: Int
    private let shardCount: Int
    let capacity: Int

    init(capacity: Int) {
        self.capacity = max(1, capacity)
        shardCount = self.capacity >= Self.shardingThreshold ? Self.shardCountWhenLarge : 1
        precondition(MemoryLayout<pthread_mutex_t>.size <= Self.mutexSpace)
        let bytes = Self.mutexSpace + MemoryLayout<Shard>.stride
        stride = (bytes + Self.alignment - 1) / Self.alignment * Self.alignment
        base = .allocate(byteCount: stride * shardCount, alignment: Self.alignment)
        for index in 0..<shardCount {
            pthread_mutex_init(mutex(index), nil)
            shard(index).initialize(to: Shard(entries: LRUCache(capacity: self.capacity)))
        }
    }

    deinit {
        for index in 0..<shardCount {
            shard(index).deinitialize(count: 1)
            pthread_mutex_destroy(mutex(index))
        }
        base.deallocate()
    }

    /// The cached map of `userId` (counted as a lookup, and as a hit when found).
    func lookup(_ userId: String) -> BucketMap? {
        withShard(of: userId) { shard in
            shard.lookups += 1
            guard let map = shard.entries.value(for: userId) else { return nil }
            shard.cacheHits += 1
            return map
        }
    }

    func set(_ map: BucketMap, for userId: String) {
        withShard(of: userId) { shard in
            let before = shard.entries.count
            shard.entries.set(map, for: userId)
            guard shardCount > 1, shard.entries.count > before else { return }
            // Over the capacity: make room in this shard (never by evicting the user just added).
            if total.add(1, ordering: .relaxed).newValue > capacity, shard.entries.count > 1,
               shard.entries.removeLeastRecent() {
                total.subtract(1, ordering: .relaxed)
            }
        }
    }

    func remove(_ userId: String) {
        withShard(of: userId) { shard in
            let before = shard.entries.count
            shard.entries.removeValue(for: userId)
            if shard.entries.count < before { total.subtract(1, ordering: .relaxed) }
        }
    }

    func removeAll() {
        for index in 0..<shardCount {
            withShard(index) { shard in
                total.subtract(shard.entries.count, ordering: .relaxed)
                shard.entries = LRUCache(capacity: shard.entries.capacity)
            }
        }
    }

    var lookups: Int { sum { $0.lookups } }
    var cacheHits: Int { sum { $0.cacheHits } }
    var count: Int { sum { $0.entries.count } }

    private func sum(_ value: (inout Shard) -> Int) -> Int {
        (0..<shardCount).reduce(0) { total, index in total + withShard(index, value) }
    }

    @inline(__always)
    private func mutex(_ index: Int) -> UnsafeMutablePointer<pthread_mutex_t> {
        (base + index * stride).assumingMemoryBound(to: pthread_mutex_t.self)
    }

    @inline(__always)
    private func shard(_ index: Int) -> UnsafeMutablePointer<Shard> {
        (base + index * stride + Self.mutexSpace).assumingMemoryBound(to: Shard.self)
    }

    @inline(__always)
    private func withShard<T>(of userId: String, _ body: (inout Shard) -> T) -> T {
        withShard(shardCount == 1 ? 0 : Self.shardIndex(userId, count: shardCount), body)
    }

    @inline(__always)
    private func withShard<T>(_ index: Int, _ body: (inout Shard) -> T) -> T {
        pthread_mutex_lock(mutex(index))
        defer { pthread_mutex_unlock(mutex(index)) }
        return body(&shard(index).pointee)
    }

    /// FNV-1a of the id's UTF-8 bytes (stable, and cheap next to the lookup it routes).
    private static func shardIndex(_ userId: String, count: Int) -> Int {
        var hash: UInt32 = 2_166_136_261
        for byte in userId.utf8 { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
        return Int(hash % UInt32(count))
    }
}
