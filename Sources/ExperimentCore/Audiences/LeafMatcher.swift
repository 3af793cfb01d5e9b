/// Evaluation of one audience leaf condition against one user attribute value, with exactly the
/// reference SDK's semantics (`CustomAttributeConditionEvaluator.evaluate` after its condition
/// "type" check). `true`/`false` are a match or not, `nil` is unknown (the reference's None).
public enum LeafMatcher {
    /// 2^53: numbers of larger magnitude are not "finite" for the reference (`validator.is_finite_number`).
    static let maxMagnitude: Double = 9_007_199_254_740_992.0

    /// - Parameters:
    ///   - match: the condition's match type.
    ///   - condition: the condition's "value".
    ///   - user: the user's attribute value; `nil` if the attribute is absent.
    /// - Returns: nil for `.qualified` and `.unknown` (segments are the caller's business), and
    ///   wherever the reference returns None.
    public static func evaluate(_ match: MatchType, condition: ConditionValue, user: AttributeValue?) -> Bool? {
        switch match {
        case .qualified, .unknown:
            return nil
        case .exists:
            guard let user else { return false }
            if case .null = user { return false }
            return true
        default:
            break
        }
        // Every other match type: an absent or null attribute is unknown.
        guard let user else { return nil }
        if case .null = user { return nil }

        switch match {
        case .exact:
            return exact(condition, user)
        case .greaterThan, .greaterThanOrEqual, .lessThan, .lessThanOrEqual:
            guard let c = finiteNumber(condition) else { return nil }
            guard let u = finiteNumber(user) else { return nil }
            switch match {
            case .greaterThan: return u > c
            case .greaterThanOrEqual: return u >= c
            case .lessThan: return u < c
            default: return u <= c
            }
        case .substring:
            guard case .string(let c) = condition, case .string(let u) = user else { return nil }
            return contains(u, c)
        case .semverEqual, .semverGreaterThan, .semverGreaterThanOrEqual, .semverLessThan, .semverLessThanOrEqual:
            guard case .string(let c) = condition, case .string(let u) = user else { return nil }
            guard let r = SemanticVersion.compare(target: c, user: u) else {
                return nil
            }
            switch match {
            case .semverEqual: return r == 0
            case .semverGreaterThan: return r > 0
            case .semverGreaterThanOrEqual: return r >= 0
            case .semverLessThan: return r < 0
            default: return r <= 0
            }
        case .exists, .qualified, .unknown:
            return nil
        }
    }

    // MARK: - Numbers

    /// A finite number in the reference's sense (not bool, not NaN/inf, |x| <= 2^53), as a Double.
    /// Every such number, int or double, is exactly representable, so Double comparison is exact
    /// (as Python's mixed int/float comparison).
    @inline(__always)
    static func finite(_ d: Double) -> Double? {
        (d.isFinite && d.magnitude <= maxMagnitude) ? d : nil
    }

    @inline(__always)
    static func finite(_ i: Int64) -> Double? {
        (i >= -9_007_199_254_740_992 && i <= 9_007_199_254_740_992) ? Double(i) : nil
    }

    static func finiteNumber(_ v: ConditionValue) -> Double? {
        switch v {
        case .int(let i): return finite(i)
        case .double(let d): return finite(d)
        default: return nil
        }
    }

    static func finiteNumber(_ v: AttributeValue) -> Double? {
        switch v {
        case .int(let i): return finite(i)
        case .double(let d): return finite(d)
        default: return nil
        }
    }

    // MARK: - exact

    static func exact(_ condition: ConditionValue, _ user: AttributeValue) -> Bool? {
        switch condition {
        case .missing, .unsupported:
            return nil
        case .bool(let c):
            guard case .bool(let u) = user else { return nil }
            return c == u
        case .string(let c):
            guard case .string(let u) = user else { return nil }
            return equal(c, u)
        case .int, .double:
            guard let c = finiteNumber(condition) else { return nil }
            guard let u = finiteNumber(user) else { return nil }  // non-number or non-finite
            return c == u
        }
    }

    // MARK: - Bytes

    static func equal(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        let n = a.count
        if n != b.count { return false }
        var i = 0
        while i < n {
            if a[i] != b[i] { return false }
            i += 1
        }
        return true
    }

    /// Whether `needle` occurs in `haystack` (Python's `needle in haystack`; byte search is
    /// equivalent to code-point search for valid UTF-8).
    static func contains(_ haystack: UnsafeBufferPointer<UInt8>, _ needle: UnsafeBufferPointer<UInt8>) -> Bool {
        let m = needle.count
        let n = haystack.count
        if m == 0 { return true }
        if m > n { return false }
        let first = needle[0]
        var i = 0
        let last = n - m
        while i <= last {
            if haystack[i] == first {
                var k = 1
                while k < m && haystack[i + k] == needle[k] { k += 1 }
                if k == m { return true }
            }
            i += 1
        }
        return false
    }
}
