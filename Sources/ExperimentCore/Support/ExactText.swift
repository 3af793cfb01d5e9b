#if canImport(Glibc)
import Glibc
#endif

/// Python compares and hashes `str` by code points: `"\u{E9}" != "e\u{301}"`. Swift's `String` `==` and
/// hashing follow canonical equivalence and take those two for one. Wherever the library matches text the
/// reference matches with Python's `==` or a dict (keys, ids, forced decisions), it compares code points.
extension String {
    /// Python's `==` on two `str`: the same code points (the same UTF-8 bytes).
    @inlinable
    public func sameCodePoints(_ other: String) -> Bool {
        // Text that is not even canonically equivalent has other code points: Swift's `==` settles most
        // comparisons (two small or ASCII strings: a compare of their representations) before the bytes.
        self == other && sameUTF8(other)
    }

    /// `sameCodePoints` without the `==` check first: for callers whose text mostly is the same (their
    /// hashes already matched).
    @inlinable
    public func sameUTF8(_ other: String) -> Bool {
        let count = utf8.count
        guard count == other.utf8.count else { return false }
        guard count > 0 else { return true }
        // Native strings hand out their bytes: one memcmp (the compiler compares ids this way by the
        // thousand; a generic walk of the two UTF8Views cost ~20 instructions a byte).
        let compared = utf8.withContiguousStorageIfAvailable { mine in
            other.utf8.withContiguousStorageIfAvailable { theirs in
                memcmp(mine.baseAddress!, theirs.baseAddress!, count) == 0
            }
        }
        if let compared, let same = compared { return same }
        return utf8.elementsEqual(other.utf8)
    }
}

extension Optional where Wrapped == String {
    /// `sameCodePoints` for optional text: two nils are the same.
    @inlinable
    public func sameCodePoints(_ other: String?) -> Bool {
        switch (self, other) {
        case (nil, nil): return true
        case (let a?, let b?): return a.sameCodePoints(b)
        default: return false
        }
    }
}

/// A `String` dictionary key compared and hashed by code points, as a Python dict keys `str`.
public struct ExactKey: Hashable, Sendable {
    public let text: String

    @inlinable
    public init(_ text: String) { self.text = text }

    @inlinable
    public static func == (a: ExactKey, b: ExactKey) -> Bool { a.text.sameUTF8(b.text) }

    @inlinable
    public func hash(into hasher: inout Hasher) {
        var text = text
        text.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
}

/// A dictionary by `String` that tells keys apart by code points, used as a `[String: Value]`: the
/// compiler's maps by datafile id, as the reference's dicts by id. Entries stay in insertion order.
///
/// Its own table rather than `[ExactKey: Value]`: a datafile start makes hundreds of lookups by id, and
/// Swift's `Dictionary` hashes every key with SipHash (~500 instructions a lookup of a short id, measured
/// with callgrind) where `ExactHash` takes a few per 8 bytes. Most of the compiler's maps are small (a
/// flag's variables, a rollout's rules): up to `linearLimit` entries a lookup scans the entries' hashes and
/// the map is one allocation; past it, an open-addressing index over the entries is added.
public struct ExactKeyed<Value>: ExpressibleByDictionaryLiteral, Sequence {
    fileprivate struct Entry {
        let key: String
        let hash: UInt64
        /// nil for a key whose value was set to nil (the entry keeps its place for a later value).
        var value: Value?
    }

    private static var linearLimit: Int { 8 }
    private var entries: [Entry] = []
    /// Entry index + 1 per slot, 0 for an empty slot; empty while the map is small, else a power of two.
    private var slots: [Int32] = []
    public private(set) var count = 0

    public init() {}

    public init(dictionaryLiteral elements: (String, Value)...) {
        for (key, value) in elements { self[key] = value }
    }

    public subscript(key: String) -> Value? {
        get {
            guard let entry = entryIndex(of: key, hash: ExactHash.of(key)) else { return nil }
            return entries[entry].value
        }
        set {
            let hash = ExactHash.of(key)
            if let entry = entryIndex(of: key, hash: hash) {
                count += (newValue != nil ? 1 : 0) - (entries[entry].value != nil ? 1 : 0)
                entries[entry].value = newValue
            } else if let newValue {
                append(Entry(key: key, hash: hash, value: newValue))
            }
        }
    }

    public subscript(key: String, default defaultValue: @autoclosure () -> Value) -> Value {
        get { self[key] ?? defaultValue() }
        set { self[key] = newValue }
    }

    public var isEmpty: Bool { count == 0 }

    public mutating func reserveCapacity(_ minimumCapacity: Int) {
        entries.reserveCapacity(minimumCapacity)
        if minimumCapacity > Self.linearLimit, Self.slotCount(for: minimumCapacity) > slots.count {
            rebuildSlots(Self.slotCount(for: minimumCapacity))
        }
    }

    /// The keys with a value, in insertion order.
    public var keys: [String] { map(\.key) }

    public func makeIterator() -> Iterator { Iterator(entries: entries) }

    public struct Iterator: IteratorProtocol {
        fileprivate let entries: [Entry]
        fileprivate var position = 0

        public mutating func next() -> (key: String, value: Value)? {
            while position < entries.count {
                position += 1
                if let value = entries[position - 1].value { return (key: entries[position - 1].key, value: value) }
            }
            return nil
        }
    }

    // MARK: the table

    /// At most three quarters of the slots in use, so a probe ends soon at an empty one.
    private static func slotCount(for entries: Int) -> Int {
        var slots = 16
        while slots * 3 < entries * 4 { slots *= 2 }
        return slots
    }

    private func entryIndex(of key: String, hash: UInt64) -> Int? {
        if slots.isEmpty {
            for index in entries.indices where entries[index].hash == hash && entries[index].key.sameUTF8(key) {
                return index
            }
            return nil
        }
        let mask = slots.count - 1
        var slot = Int(truncatingIfNeeded: hash) & mask
        while slots[slot] != 0 {
            let entry = Int(slots[slot]) - 1
            if entries[entry].hash == hash, entries[entry].key.sameUTF8(key) { return entry }
            slot = (slot + 1) & mask
        }
        return nil
    }

    private mutating func append(_ entry: Entry) {
        entries.append(entry)
        count += 1
        if slots.isEmpty {
            if entries.count > Self.linearLimit { rebuildSlots(Self.slotCount(for: entries.count)) }
        } else if entries.count * 4 > slots.count * 3 {
            rebuildSlots(Self.slotCount(for: entries.count))
        } else {
            place(entry: entries.count - 1)
        }
    }

    private mutating func rebuildSlots(_ slotCount: Int) {
        slots = Array(repeating: 0, count: slotCount)
        for entry in entries.indices { place(entry: entry) }
    }

    private mutating func place(entry: Int) {
        let mask = slots.count - 1
        var slot = Int(truncatingIfNeeded: entries[entry].hash) & mask
        while slots[slot] != 0 { slot = (slot + 1) & mask }
        slots[slot] = Int32(entry + 1)
    }
}

/// A hash of a string's UTF-8 bytes, eight at a time (multiply and fold, as FxHash and its kin do), from a
/// seed drawn once per process so that which ids collide cannot be planned in a datafile.
enum ExactHash {
    private static let seed = UInt64.random(in: .min ... .max)
    private static let multiplier: UInt64 = 0x9E37_79B9_7F4A_7C15

    static func of(_ text: String) -> UInt64 {
        if let hash = text.utf8.withContiguousStorageIfAvailable({ of(bytes: UnsafeRawBufferPointer($0)) }) {
            return hash
        }
        return Array(text.utf8).withUnsafeBytes { of(bytes: $0) }
    }

    static func of(bytes: UnsafeRawBufferPointer) -> UInt64 {
        var hash = seed ^ UInt64(bytes.count) &* multiplier
        var index = 0
        while index + 8 <= bytes.count {
            hash = mix(hash, bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self))
            index += 8
        }
        if index < bytes.count {
            var tail: UInt64 = 0
            withUnsafeMutableBytes(of: &tail) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[index...])) }
            hash = mix(hash, tail)
        }
        // The table indexes by the low bits: fold the high ones down.
        return hash ^ (hash >> 29)
    }

    @inline(__always)
    private static func mix(_ hash: UInt64, _ word: UInt64) -> UInt64 {
        let product = (hash ^ word) &* multiplier
        return product ^ (product >> 32)
    }
}
