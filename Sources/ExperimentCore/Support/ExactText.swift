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
    public static func == (a: ExactKey, b: ExactKey) -> Bool { a.text.sameCodePoints(b.text) }

    @inlinable
    public func hash(into hasher: inout Hasher) {
        var text = text
        text.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
}

/// A dictionary by `String` that tells keys apart by code points (`ExactKey`), used as a `[String: Value]`:
/// the compiler's maps by datafile id, as the reference's dicts by id.
public struct ExactKeyed<Value>: ExpressibleByDictionaryLiteral, Sequence {
    var storage: [ExactKey: Value] = [:]

    public init(dictionaryLiteral elements: (String, Value)...) {
        for (key, value) in elements { storage[ExactKey(key)] = value }
    }

    public subscript(key: String) -> Value? {
        get { storage[ExactKey(key)] }
        set { storage[ExactKey(key)] = newValue }
    }

    public subscript(key: String, default defaultValue: @autoclosure () -> Value) -> Value {
        get { storage[ExactKey(key), default: defaultValue()] }
        set { storage[ExactKey(key)] = newValue }
    }

    public var count: Int { storage.count }
    public var isEmpty: Bool { storage.isEmpty }

    public mutating func reserveCapacity(_ minimumCapacity: Int) { storage.reserveCapacity(minimumCapacity) }
    public var keys: [String] { storage.keys.map(\.text) }

    public func makeIterator() -> AnyIterator<(key: String, value: Value)> {
        var inner = storage.makeIterator()
        return AnyIterator { inner.next().map { (key: $0.key.text, value: $0.value) } }
    }
}
