/// Bucket arithmetic of the reference bucketer (10,000 buckets).
public enum Bucketing {
    /// `floor(Double(hash) / 2^32 * 10000)`, with the reference's order of floating-point
    /// operations (`ratio = float(hash) / MAX_HASH_VALUE; floor(ratio * MAX_TRAFFIC_VALUE)`).
    /// Always in `0..<10000`.
    ///
    /// The product is in `[0, 10000)` (the largest ratio, `1 - 2^-32`, is exact and its product
    /// stays below 10000), so the truncating conversion is `floor`. It is used instead of
    /// `rounded(.down)`, which can lower to a call to libm's `floor` that nothing links here.
    @inlinable
    public static func bucketValue(hash: UInt32) -> Int32 {
        let ratio = Double(hash) / 4_294_967_296.0
        return Int32(ratio * 10_000.0)
    }

    /// Whether the reference's bucketer buckets for an entity with this key: it returns no variation (and
    /// no reason) for a key that is empty or only whitespace (`not key.strip()`).
    public static func bucketsFor(key: String) -> Bool {
        !key.unicodeScalars.allSatisfy(isPythonWhitespace)
    }

    /// Python's `str.isspace()` for one character.
    static func isPythonWhitespace(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x09...0x0D, 0x1C...0x20, 0x85, 0xA0, 0x1680, 0x2000...0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000:
            return true
        default:
            return false
        }
    }

    /// The traffic of an entity the reference never buckets for: every bucket finds no entity.
    static let neverBucketed = [TrafficRange(endOfRange: 10_000, entity: TrafficRange.notBucketed)]
}
