#if canImport(Glibc)
import Glibc
#endif

/// A read-only hash index from byte-string keys to integer positions.
///
/// Lookups take a C string or a byte buffer directly, so the hot path never builds a Swift `String`
/// (which would allocate for keys longer than 15 bytes). Open addressing, FNV-1a hashing, power-of-two
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
    }

    public var count: Int { values.count }

    /// Adds `key -> value`. An existing key keeps its value unless `replacing` is true.
    public mutating func insert(_ key: [UInt8], _ value: Int, replacing: Bool = false) {
        if (values.count + 1) * 2 > slots.count { grow() }
        var slot = Int(truncatingIfNeeded: KeyIndex.hash(key)) & mask
        while true {
            let entry = Int(slots[slot])
            if entry < 0 {
                slots[slot] = Int32(values.count)
                keyBytes.append(contentsOf: key)
                keyStarts.append(Int32(keyBytes.count))
                values.append(Int32(value))
                return
            }
            if key.withUnsafeBufferPointer({ keyMatches(entry, $0) }) {
                if replacing { values[entry] = Int32(value) }
                return
            }
            slot = (slot + 1) & mask
        }
    }

    public mutating func insert(_ key: String, _ value: Int, replacing: Bool = false) {
        insert(Array(key.utf8), value, replacing: replacing)
    }

    public func find(_ key: UnsafeBufferPointer<UInt8>) -> Int? {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in key { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        return probe(hash: hash, matching: key)
    }

    public func find(_ key: String) -> Int? {
        var copy = key
        return copy.withUTF8 { find($0) }
    }

    /// Looks a NUL-terminated key up, hashing while measuring it.
    public func find(cString: UnsafePointer<CChar>) -> Int? {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        var length = 0
        let bytes = UnsafeRawPointer(cString).assumingMemoryBound(to: UInt8.self)
        while bytes[length] != 0 {
            hash = (hash ^ UInt64(bytes[length])) &* 0x0000_0100_0000_01b3
            length += 1
        }
        return probe(hash: hash, matching: UnsafeBufferPointer(start: bytes, count: length))
    }

    private func probe(hash: UInt64, matching key: UnsafeBufferPointer<UInt8>) -> Int? {
        var slot = Int(truncatingIfNeeded: hash) & mask
        while true {
            let entry = Int(slots[slot])
            if entry < 0 { return nil }
            if keyMatches(entry, key) { return Int(values[entry]) }
            slot = (slot + 1) & mask
        }
    }

    private func keyMatches(_ entry: Int, _ key: UnsafeBufferPointer<UInt8>) -> Bool {
        let start = Int(keyStarts[entry]), end = Int(keyStarts[entry + 1])
        guard end - start == key.count else { return false }
        guard key.count > 0, let other = key.baseAddress else { return true }
        return keyBytes.withUnsafeBufferPointer { memcmp($0.baseAddress! + start, other, key.count) == 0 }
    }

    static func hash<Bytes: Sequence<UInt8>>(_ key: Bytes) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in key { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        return hash
    }

    private mutating func grow() {
        let size = slots.count * 2
        slots = Array(repeating: -1, count: size)
        mask = size - 1
        for entry in values.indices {
            let key = keyBytes[Int(keyStarts[entry])..<Int(keyStarts[entry + 1])]
            var slot = Int(truncatingIfNeeded: KeyIndex.hash(key)) & mask
            while slots[slot] >= 0 { slot = (slot + 1) & mask }
            slots[slot] = Int32(entry)
        }
    }
}
