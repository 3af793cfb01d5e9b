#if canImport(Glibc)
import Glibc
#endif

/// A read-only hash index from byte-string keys to integer positions.
///
/// Lookups take a C string or a byte buffer directly, so the hot path never builds a Swift `String`
/// (which would allocate for keys longer than 15 bytes). Open addressing, a word-at-a-time multiplicative
/// hash, power-of-two
/// table at most half full. The first insertion of a key wins, unless `replacing` is used.
/// Keys live back to back in one byte array: comparing one touches no per-key object, so lookups from
/// many threads do no reference counting on shared memory.
public struct KeyIndex: Sendable {
    private var keyBytes: [UInt8] = []
    /// Entry i's key is keyBytes[keyStarts[i] ..< keyStarts[i + 1]].
    private var keyStarts: [Int32] = [0]
    private var values: [Int32] = []
    private var slots: [Int32]
    private var mask: Int

    public init(capacity: Int) {
        var size = 8
        while size < capacity * 2 { size <<= 1 }
        slots = Array(repeating: -1, count: size)
        mask = size - 1
        keyStarts.reserveCapacity(capacity + 1)
        values.reserveCapacity(capacity)
    }

    public var count: Int { values.count }

    /// Adds `key -> value`. An existing key keeps its value unless `replacing` is true.
    public mutating func insert(_ key: [UInt8], _ value: Int, replacing: Bool = false) {
        key.withUnsafeBufferPointer { insert(bytes: $0, value, replacing: replacing) }
    }

    public mutating func insert(_ key: String, _ value: Int, replacing: Bool = false) {
        var copy = key
        copy.withUTF8 { insert(bytes: $0, value, replacing: replacing) }
    }

    private mutating func insert(bytes key: UnsafeBufferPointer<UInt8>, _ value: Int, replacing: Bool) {
        if (values.count + 1) * 2 > slots.count { grow() }
        var slot = Int(truncatingIfNeeded: KeyIndex.hash(UnsafeRawBufferPointer(key))) & mask
        while true {
            let entry = Int(slots[slot])
            if entry < 0 {
                slots[slot] = Int32(values.count)
                keyBytes.append(contentsOf: key)
                keyStarts.append(Int32(keyBytes.count))
                values.append(Int32(value))
                return
            }
            if keyMatches(entry, key) {
                if replacing { values[entry] = Int32(value) }
                return
            }
            slot = (slot + 1) & mask
        }
    }

    public func find(_ key: UnsafeBufferPointer<UInt8>) -> Int? {
        probe(hash: KeyIndex.hash(UnsafeRawBufferPointer(key)), matching: key)
    }

    public func find(_ key: String) -> Int? {
        var copy = key
        return copy.withUTF8 { find($0) }
    }

    /// Looks a NUL-terminated key up (measured by the C library's word-at-a-time strlen, then hashed).
    public func find(cString: UnsafePointer<CChar>) -> Int? {
        let key = UnsafeBufferPointer(start: UnsafeRawPointer(cString).assumingMemoryBound(to: UInt8.self),
                                      count: strlen(cString))
        return find(key)
    }

    /// Reads the tables through buffer pointers: one load of each array's storage, no bounds checks.
    @inline(__always)
    private func probe(hash: UInt64, matching key: UnsafeBufferPointer<UInt8>) -> Int? {
        slots.withUnsafeBufferPointer { slots in
            keyStarts.withUnsafeBufferPointer { starts in
                keyBytes.withUnsafeBufferPointer { bytes in
                    var slot = Int(truncatingIfNeeded: hash) & mask
                    while true {
                        let entry = Int(slots[slot])
                        if entry < 0 { return nil }
                        let start = Int(starts[entry]), end = Int(starts[entry + 1])
                        if end - start == key.count
                            && (key.count == 0
                                || ShortBytes.equal(bytes.baseAddress! + start, key.baseAddress!, count: key.count)) {
                            return Int(values[entry])
                        }
                        slot = (slot + 1) & mask
                    }
                }
            }
        }
    }

    private func keyMatches(_ entry: Int, _ key: UnsafeBufferPointer<UInt8>) -> Bool {
        let start = Int(keyStarts[entry]), end = Int(keyStarts[entry + 1])
        guard end - start == key.count else { return false }
        guard key.count > 0, let other = key.baseAddress else { return true }
        return keyBytes.withUnsafeBufferPointer { ShortBytes.equal($0.baseAddress! + start, other, count: key.count) }
    }

    /// Mixes the key 8 bytes at a time (the last word overlaps the one before it; keys under 8 bytes are
    /// read as two overlapping halves or byte by byte), every load within the key.
    @inline(__always)
    static func hash(_ key: UnsafeRawBufferPointer) -> UInt64 {
        let count = key.count
        var hash = 0x9E37_79B9_7F4A_7C15 ^ UInt64(truncatingIfNeeded: count)
        @inline(__always) func mix(_ word: UInt64) {
            hash = (hash ^ word) &* 0xFF51_AFD7_ED55_8CCD
            hash ^= hash &>> 29
        }
        guard let base = key.baseAddress else { return hash }
        if count >= 8 {
            var offset = 0
            while offset + 8 <= count {
                mix(base.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
                offset += 8
            }
            if offset < count { mix(base.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)) }
        } else if count >= 4 {
            let low = UInt64(base.loadUnaligned(as: UInt32.self))
            let high = UInt64(base.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self))
            mix(low | high &<< 32)
        } else {
            var word: UInt64 = 0
            for index in 0..<count { word = word &<< 8 | UInt64(base.load(fromByteOffset: index, as: UInt8.self)) }
            mix(word)
        }
        return hash
    }

    private mutating func grow() {
        let size = slots.count * 2
        slots = Array(repeating: -1, count: size)
        mask = size - 1
        for entry in values.indices {
            let key = keyBytes[Int(keyStarts[entry])..<Int(keyStarts[entry + 1])]
            var slot = Int(truncatingIfNeeded: key.withUnsafeBytes { KeyIndex.hash($0) }) & mask
            while slots[slot] >= 0 { slot = (slot + 1) & mask }
            slots[slot] = Int32(entry)
        }
    }
}

/// Byte comparison for the short keys decisions compare (attribute names, flag keys): word loads inline,
/// cheaper than a call to memcmp for a dozen bytes. Every load stays within the `count` bytes.
public enum ShortBytes {
    @inlinable @inline(__always)
    public static func equal(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, count: Int) -> Bool {
        if count >= 8 {
            var offset = 0
            while offset + 8 <= count {
                if a.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                    != b.loadUnaligned(fromByteOffset: offset, as: UInt64.self) { return false }
                offset += 8
            }
            return offset == count
                || a.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
                    == b.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
        }
        if count >= 4 {
            return a.loadUnaligned(as: UInt32.self) == b.loadUnaligned(as: UInt32.self)
                && a.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)
                    == b.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)
        }
        var index = 0
        while index < count {
            if a.load(fromByteOffset: index, as: UInt8.self) != b.load(fromByteOffset: index, as: UInt8.self) {
                return false
            }
            index += 1
        }
        return true
    }
}
