/// UTF-8 bytes borrowed for the duration of one evaluation (a user id, an attribute's string value).
/// Never stored: the memory belongs to the caller of the decision.
public typealias UTF8Text = UnsafeBufferPointer<UInt8>

/// A user attribute's value as audience conditions see it during one decision.
/// Numbers keep the integer/double distinction of their source; conditions treat them alike,
/// while `bool` never compares equal to a number (the reference SDK's typing).
public enum AttributeValue {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(UTF8Text)
    /// An integer beyond 64 bits, as its decimal text (an optional '-' and digits). Never a finite number in
    /// the reference's sense (|x| > 2^53): every match type but `exists` is unknown, and payloads leave it out.
    case bigInteger(UTF8Text)
    /// A value of a type conditions cannot use (a dict, a list, any other object of the caller's language):
    /// present for `exists`, unknown for every other match type, left out of event payloads.
    case unsupported
}

/// A value written in an audience condition of the datafile ("value" of a leaf condition).
/// Strings point into bytes the compiled config owns, so copying a condition costs no reference counting.
public enum ConditionValue: @unchecked Sendable, Equatable, BitwiseCopyable {
    /// The key was absent or JSON null.
    case missing
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(UTF8Text)
    /// An array: no match type accepts it. (An object is read as the reference reads it: the integer index its
    /// audience decoder gives it, see `DatafileCompiler.numberObjects`.)
    case unsupported

    public static func == (lhs: ConditionValue, rhs: ConditionValue) -> Bool {
        switch (lhs, rhs) {
        case (.missing, .missing), (.unsupported, .unsupported): return true
        case (.bool(let a), .bool(let b)): return a == b
        case (.int(let a), .int(let b)): return a == b
        case (.double(let a), .double(let b)): return a == b
        case (.string(let a), .string(let b)): return a.elementsEqual(b)
        default: return false
        }
    }
}

/// The match types of Optimizely audience leaf conditions.
public enum MatchType: Sendable, Equatable, BitwiseCopyable {
    case exact, exists, substring
    case greaterThan, greaterThanOrEqual, lessThan, lessThanOrEqual
    case semverEqual, semverGreaterThan, semverGreaterThanOrEqual, semverLessThan, semverLessThanOrEqual
    case qualified
    /// A match name this version does not know: the condition evaluates to unknown (nil).
    case unknown

    /// `nil` (an absent or null "match") means exact, as in the reference SDK.
    public init(name: String?) {
        switch name {
        case nil, "exact": self = .exact
        case "exists": self = .exists
        case "substring": self = .substring
        case "gt": self = .greaterThan
        case "ge": self = .greaterThanOrEqual
        case "lt": self = .lessThan
        case "le": self = .lessThanOrEqual
        case "semver_eq": self = .semverEqual
        case "semver_gt": self = .semverGreaterThan
        case "semver_ge": self = .semverGreaterThanOrEqual
        case "semver_lt": self = .semverLessThan
        case "semver_le": self = .semverLessThanOrEqual
        case "qualified": self = .qualified
        default: self = .unknown
        }
    }
}
