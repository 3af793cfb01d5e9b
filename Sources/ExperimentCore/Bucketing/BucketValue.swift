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
}
