import ExperimentCore

/// An attribute value that owns its string bytes.
public enum OwnedValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string([UInt8])
    /// An integer beyond 64 bits as its decimal text (see AttributeValue.bigInteger).
    case bigInteger([UInt8])
    /// A value conditions cannot use (see AttributeValue.unsupported).
    case unsupported
}

/// An immutable, ordered list of attributes whose key and string bytes live in one block with stable
/// addresses, so lookups can hand out borrowed `UTF8Text` without copying. Used for stored user
/// properties and for attributes given as JSON. Later entries with the same key replace earlier ones.
public final class OwnedAttributes: @unchecked Sendable, UserAttributes {
    public struct Entry {
        public let key: UTF8Text
        public let value: AttributeValue
        public let owned: OwnedValue
    }

    public let entries: [Entry]
    private let storage: UnsafeMutableRawPointer?

    public static let empty = OwnedAttributes([])

    /// `pairs` in order; a repeated key keeps its first position and its last value.
    public init(_ pairs: [(key: [UInt8], value: OwnedValue)]) {
        var order: [[UInt8]] = []
        var latest: [[UInt8]: OwnedValue] = [:]
        for (key, value) in pairs {
            if latest.updateValue(value, forKey: key) == nil { order.append(key) }
        }
        var size = 0
        for key in order {
            size += key.count
            switch latest[key]! {
            case .string(let bytes), .bigInteger(let bytes): size += bytes.count
            default: break
            }
        }
        storage = size > 0 ? UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 1) : nil
        var cursor = storage
        func place(_ bytes: [UInt8]) -> UTF8Text {
            guard let start = cursor, !bytes.isEmpty else { return UTF8Text(start: nil, count: 0) }
            bytes.withUnsafeBytes { start.copyMemory(from: $0.baseAddress!, byteCount: bytes.count) }
            cursor = start + bytes.count
            return UTF8Text(start: start.assumingMemoryBound(to: UInt8.self), count: bytes.count)
        }
        var built: [Entry] = []
        built.reserveCapacity(order.count)
        for key in order {
            let owned = latest[key]!
            let keyText = place(key)
            let value: AttributeValue
            switch owned {
            case .null: value = .null
            case .bool(let b): value = .bool(b)
            case .int(let n): value = .int(n)
            case .double(let d): value = .double(d)
            case .string(let bytes): value = .string(place(bytes))
            case .bigInteger(let digits): value = .bigInteger(place(digits))
            case .unsupported: value = .unsupported
            }
            built.append(Entry(key: keyText, value: value, owned: owned))
        }
        entries = built
    }

    deinit { storage?.deallocate() }

    public var isEmpty: Bool { entries.isEmpty }

    public func value(named name: UTF8Text) -> AttributeValue? {
        for entry in entries where bytesEqual(entry.key, name) { return entry.value }
        return nil
    }

    public func isQualified(for segment: UTF8Text) -> Bool { false }

    public func forEach(_ body: (UTF8Text, AttributeValue) -> Void) {
        for entry in entries { body(entry.key, entry.value) }
    }

    /// A copy with `changes` applied: a value sets the key, nil removes it.
    public func applying(_ changes: [(key: [UInt8], value: OwnedValue?)]) -> OwnedAttributes {
        var pairs = entries.map { (key: Array($0.key), value: $0.owned) }
        for (key, value) in changes {
            if let value {
                if let index = pairs.firstIndex(where: { $0.key == key }) { pairs[index].value = value }
                else { pairs.append((key, value)) }
            } else {
                pairs.removeAll { $0.key == key }
            }
        }
        return OwnedAttributes(pairs)
    }
}

@inline(__always)
func bytesEqual(_ a: UTF8Text, _ b: UTF8Text) -> Bool {
    guard a.count == b.count else { return false }
    guard a.count > 0, let pa = a.baseAddress, let pb = b.baseAddress else { return true }
    return memcmp(pa, pb, a.count) == 0
}

#if canImport(Glibc)
import Glibc
#endif
