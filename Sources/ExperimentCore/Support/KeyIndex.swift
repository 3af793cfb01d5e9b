#if canImport(Glibc)
import Glibc
#endif

/// A read-only hash index from byte-string keys to integer positions.
///
/// Lookups take a C string or a byte buffer directly, so the hot path never builds a Swift `String`
/// (which would allocate for keys longer than 15 bytes). Open addressing, FNV-1a hashing, power-of-two
/// table at most half full. The first insertion of a key wins, unless `replacing` is used.
public struct KeyIndex: Sendable {
    private var keys: [[UInt8]] = []
    private var values: [Int32] = []
    private var slots: [Int32]
    private var mask: Int

    public init(capacity: Int) {
        var size = 8
        while size < capacity * 2 { size <<= 1 }
        slots = Array(repeating: -1, count: size)
        mask = size - 1
    }

    public var count: Int { keys.count }

    /// Adds `key -> value`. An existing key keeps its value unless `replacing` is true.
    public mutating func insert(_ key: [UInt8], _ value: Int, replacing: Bool = false) {
        if (keys.count + 1) * 2 > slots.count { grow() }
        var slot = Int(truncatingIfNeeded: KeyIndex.hash(key)) & mask
        while true {
            let entry = Int(slots[slot])
            if entry < 0 {
                slots[slot] = Int32(keys.count)
                keys.append(key)
                values.append(Int32(value))
                return
            }
            if keys[entry] == key {
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
            if KeyIndex.equal(keys[entry], key) { return Int(values[entry]) }
            slot = (slot + 1) & mask
        }
    }

    private static func equal(_ stored: [UInt8], _ key: UnsafeBufferPointer<UInt8>) -> Bool {
        guard stored.count == key.count else { return false }
        return stored.withUnsafeBufferPointer { s in
            guard let a = s.baseAddress, let b = key.baseAddress else { return true }
            return memcmp(a, b, key.count) == 0
        }
    }

    static func hash(_ key: [UInt8]) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in key { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        return hash
    }

    private mutating func grow() {
        let size = slots.count * 2
        slots = Array(repeating: -1, count: size)
        mask = size - 1
        for (entry, key) in keys.enumerated() {
            var slot = Int(truncatingIfNeeded: KeyIndex.hash(key)) & mask
            while slots[slot] >= 0 { slot = (slot + 1) & mask }
            slots[slot] = Int32(entry)
        }
    }
}
