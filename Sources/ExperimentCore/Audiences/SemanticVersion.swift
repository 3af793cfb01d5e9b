/// Semantic-version comparison with exactly the reference SDK's semantics
/// (`CustomAttributeConditionEvaluator.compare_user_version_with_target_version`, `split_version`,
/// `is_pre_release_version`, `is_build_version`), working on borrowed UTF-8 bytes without allocating.
///
/// Reference behaviour reproduced on purpose (it is not SemVer 2.0):
/// - A version containing an ASCII space is invalid (nil). Other whitespace is not checked.
/// - The first of '-' / '+' decides: '-' first (or no '+') is a pre-release, '+' first (or no '-') a build.
///   The version splits once at that character into a prefix and ONE suffix part (which may hold
///   dots, '-', '+', or be empty).
/// - The prefix has at most 2 dots and every dot-separated prefix part is a non-empty run of digits.
/// - Parts are compared in order for as many parts as the target has. A user part made only of digits
///   is compared numerically with the target part, parsed as Python's `int()` would (sign, surrounding
///   whitespace, single underscores between digits, at most 4300 digits); where `int()` would raise,
///   the result is nil. Any other user part is compared with the target part byte-lexicographically
///   (= Python's code-point order for UTF-8).
/// Unicode decimal digits are digits as for Python's `isdigit`/`int`. The other `isdigit()` characters
/// (superscripts, circled digits) pass `split_version` as digits too, and the comparison stops at the first
/// part holding one where the reference's `int()` raises (nil, unknown here): parts before it still decide.
public enum SemanticVersion {
    static let dash: UInt8 = 0x2D
    static let plus: UInt8 = 0x2B
    static let dot: UInt8 = 0x2E
    static let space: UInt8 = 0x20
    static let underscore: UInt8 = 0x5F
    /// CPython's default `sys.get_int_max_str_digits()`: `int()` of a longer digit string raises.
    static let maxIntDigits = 4300

    /// Compares `user` with `target`: 1 if the user version is greater, 0 if equal, -1 if less,
    /// nil if either version is invalid or the reference would raise.
    public static func compare(target: UnsafeBufferPointer<UInt8>, user: UnsafeBufferPointer<UInt8>) -> Int? {
        // Nearly every version in practice is "1", "1.2" or "1.2.3": those compare as integers in one pass.
        if let t = Plain(target), let u = Plain(user) { return t.compare(toUser: u) }
        // Python's isdigit()/int() read Unicode decimal digits ("١.٢.٣" is 1.2.3): a part made of them is a
        // number, compared by value; any other part is compared by its code points as written.
        return compareASCII(target: target, user: user)
    }

    static func compareASCII(target: UnsafeBufferPointer<UInt8>, user: UnsafeBufferPointer<UInt8>) -> Int? {
        let tScan = Scan(target)
        let uScan = Scan(user)
        let preT = tScan.isPreRelease
        let preU = uScan.isPreRelease
        let buildT = tScan.isBuild
        guard let tParts = split(target, tScan) else { return nil }
        guard let uParts = split(user, uScan) else { return nil }

        var idx = 0
        while idx < tParts.count {
            if uParts.count <= idx {
                return (preT || buildT) ? 1 : -1
            }
            let u = uParts[idx]
            let t = tParts[idx]
            if !isDigits(user, u) {
                // (Unicode digits among other characters are text here, compared as written.)
                let c = lexicographicCompare(user, u, target, t)
                if c < 0 {
                    return (preT && !preU) ? 1 : -1
                } else if c > 0 {
                    return (!preT && preU) ? -1 : 1
                }
            } else if isASCII(user, u) && isASCII(target, t) {
                // int(user_part) then int(target_part); either may raise.
                if u.end - u.start > maxIntDigits { return nil }
                guard let tInt = parsePythonInt(target, t) else { return nil }
                let c = compareNumbers(user, u, target, tInt)
                if c != 0 { return c }
            } else {
                // int() raises on an isdigit() character that is no decimal digit (the user part first).
                if UnicodeDigits.hasNonDecimalDigit(user, from: u.start, to: u.end) { return nil }
                // The same with other Unicode decimal digits, read as their ASCII digits (int() does).
                let uDigits = UnicodeDigits.asciiOfDigits(user, from: u.start, to: u.end)
                let tDigits = UnicodeDigits.asciiOfDigits(target, from: t.start, to: t.end)
                if uDigits.count > maxIntDigits { return nil }
                let c: Int? = uDigits.withUnsafeBufferPointer { ub in
                    tDigits.withUnsafeBufferPointer { tb in
                        guard let tInt = parsePythonInt(tb, Part(start: 0, end: tb.count)) else { return nil }
                        return compareNumbers(ub, Part(start: 0, end: ub.count), tb, tInt)
                    }
                }
                guard let c else { return nil }
                if c != 0 { return c }
            }
            idx += 1
        }
        if preU && !preT { return -1 }
        return 0
    }

    // MARK: - Plain versions

    /// A version of 1 to 3 dot-separated parts of 1 to 18 ASCII digits and nothing else. For two such
    /// versions the reference's rules reduce to comparing the parts as integers, the target's parts in
    /// order (a user version with fewer parts is less; extra user parts are ignored): no space, '-' or '+'
    /// (so neither is a pre-release or a build), every part digits (so `int()` of each succeeds).
    struct Plain {
        var parts: (UInt64, UInt64, UInt64) = (0, 0, 0)
        var count = 0

        @inline(__always)
        init?(_ v: UnsafeBufferPointer<UInt8>) {
            var value: UInt64 = 0
            var digits = 0
            for c in v {
                if isDigit(c) {
                    guard digits < 18 else { return nil }
                    value = value &* 10 &+ UInt64(c &- 0x30)
                    digits &+= 1
                } else if c == dot, digits > 0, count < 2 {
                    append(value)
                    value = 0
                    digits = 0
                } else {
                    return nil
                }
            }
            guard digits > 0 else { return nil }
            append(value)
        }

        @inline(__always)
        private mutating func append(_ value: UInt64) {
            switch count {
            case 0: parts.0 = value
            case 1: parts.1 = value
            default: parts.2 = value
            }
            count &+= 1
        }

        @inline(__always)
        func part(_ index: Int) -> UInt64 {
            switch index {
            case 0: return parts.0
            case 1: return parts.1
            default: return parts.2
            }
        }

        /// 1 if `user` is greater than this target, 0 if equal, -1 if less.
        @inline(__always)
        func compare(toUser user: Plain) -> Int {
            for index in 0..<count {
                if user.count <= index { return -1 }
                let u = user.part(index), t = part(index)
                if u != t { return u < t ? -1 : 1 }
            }
            return 0
        }
    }

    // MARK: - Classification

    /// One pass over a version: where its first '-' and '+' are, and whether it has a space.
    struct Scan {
        var firstDash = -1
        var firstPlus = -1
        var hasSpace = false

        init(_ v: UnsafeBufferPointer<UInt8>) {
            var i = 0
            let n = v.count
            while i < n {
                let c = v[i]
                if c == dash {
                    if firstDash < 0 { firstDash = i }
                } else if c == plus {
                    if firstPlus < 0 { firstPlus = i }
                } else if c == space {
                    hasSpace = true
                }
                i += 1
            }
        }

        /// `is_pre_release_version`: contains '-' and the first '-' comes before the first '+' (or no '+').
        var isPreRelease: Bool { firstDash >= 0 && (firstPlus < 0 || firstDash < firstPlus) }

        /// `is_build_version`: contains '+' and the first '+' comes before the first '-' (or no '-').
        var isBuild: Bool { firstPlus >= 0 && (firstDash < 0 || firstPlus < firstDash) }
    }

    @inline(__always)
    static func isDigit(_ c: UInt8) -> Bool { c &- 0x30 < 10 }

    /// `str.isdigit()`: non-empty and only Unicode decimal digits (ASCII 0-9 and the other scripts' digits
    /// `int()` reads) or the other characters `isdigit()` accepts (on which `int()` raises).
    static func isDigits(_ v: UnsafeBufferPointer<UInt8>, _ r: Part) -> Bool {
        if r.start >= r.end { return false }
        var i = r.start
        while i < r.end {
            let n = digitLength(v, at: i, end: r.end)
            if n == 0 { return false }
            i += n
        }
        return true
    }

    /// The byte length of the `isdigit()` character at `i`, or 0.
    @inline(__always)
    static func digitLength(_ v: UnsafeBufferPointer<UInt8>, at i: Int, end: Int) -> Int {
        let n = UnicodeDigits.digitLength(v, at: i, end: end)
        return n > 0 ? n : UnicodeDigits.nonDecimalDigitLength(v, at: i, end: end)
    }

    static func isASCII(_ v: UnsafeBufferPointer<UInt8>, _ r: Part) -> Bool {
        var i = r.start
        while i < r.end {
            if v[i] >= 0x80 { return false }
            i += 1
        }
        return true
    }

    // MARK: - Splitting

    /// A half-open byte range of one version part.
    struct Part {
        var start: Int
        var end: Int
    }

    /// At most 4 parts: up to 3 from the prefix (at most 2 dots) and the one suffix.
    struct Parts {
        var p0 = Part(start: 0, end: 0)
        var p1 = Part(start: 0, end: 0)
        var p2 = Part(start: 0, end: 0)
        var p3 = Part(start: 0, end: 0)
        var count = 0

        subscript(i: Int) -> Part {
            switch i {
            case 0: return p0
            case 1: return p1
            case 2: return p2
            default: return p3
            }
        }

        mutating func append(_ p: Part) {
            switch count {
            case 0: p0 = p
            case 1: p1 = p
            case 2: p2 = p
            default: p3 = p
            }
            count += 1
        }
    }

    /// `split_version`: nil where the reference returns None.
    static func split(_ v: UnsafeBufferPointer<UInt8>, _ scan: Scan) -> Parts? {
        if scan.hasSpace { return nil }
        let n = v.count
        // Split once at the first '-' of a pre-release, else at the first '+' of a build.
        let sep = scan.isPreRelease ? scan.firstDash : (scan.isBuild ? scan.firstPlus : -1)
        let prefixEnd = sep >= 0 ? sep : n
        // Prefix: at most 2 dots, every dot-separated part a non-empty run of digits.
        var parts = Parts()
        var start = 0
        var i = 0
        while i < prefixEnd {
            let c = v[i]
            if c == dot {
                if i == start || parts.count == 2 { return nil }
                parts.append(Part(start: start, end: i))
                start = i + 1
            } else if !isDigit(c) {
                // A prefix part is isdigit(): other scripts' decimal digits and superscripts count too.
                let n = digitLength(v, at: i, end: prefixEnd)
                if n == 0 { return nil }
                i += n
                continue
            }
            i += 1
        }
        if prefixEnd == start { return nil }
        parts.append(Part(start: start, end: prefixEnd))
        if sep >= 0 { parts.append(Part(start: sep + 1, end: n)) }
        return parts
    }

    // MARK: - Comparison

    /// Byte-lexicographic comparison of two parts (Python's `str` ordering, for UTF-8).
    static func lexicographicCompare(
        _ a: UnsafeBufferPointer<UInt8>, _ ra: Part, _ b: UnsafeBufferPointer<UInt8>, _ rb: Part
    ) -> Int {
        let la = ra.end - ra.start
        let lb = rb.end - rb.start
        let m = la < lb ? la : lb
        var i = 0
        while i < m {
            let x = a[ra.start + i]
            let y = b[rb.start + i]
            if x != y { return x < y ? -1 : 1 }
            i += 1
        }
        if la == lb { return 0 }
        return la < lb ? -1 : 1
    }

    /// A target part as Python's `int()` parsed it: sign and the range of digits (may hold '_').
    struct PythonInt {
        var negative: Bool
        var digits: Part
    }

    /// Length of the whitespace character `int()` strips that starts at `i`, or 0.
    /// ASCII \t \n \v \f \r and space, and the non-ASCII `str.isspace()` characters
    /// (U+0085, U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000).
    /// U+001C-U+001F are `isspace()` but `int()` rejects them.
    static func whitespaceLength(_ v: UnsafeBufferPointer<UInt8>, at i: Int, end: Int) -> Int {
        let c = v[i]
        if c == 0x20 || (c >= 0x09 && c <= 0x0D) { return 1 }
        if c == 0xC2, i + 1 < end {
            let d = v[i + 1]
            return (d == 0x85 || d == 0xA0) ? 2 : 0
        }
        if c >= 0xE1 && c <= 0xE3, i + 2 < end {
            let d = v[i + 1], e = v[i + 2]
            switch c {
            case 0xE1: return (d == 0x9A && e == 0x80) ? 3 : 0
            case 0xE2:
                if d == 0x80 && ((e >= 0x80 && e <= 0x8A) || e == 0xA8 || e == 0xA9 || e == 0xAF) { return 3 }
                if d == 0x81 && e == 0x9F { return 3 }
                return 0
            default: return (d == 0x80 && e == 0x80) ? 3 : 0
            }
        }
        return 0
    }

    /// Length of the whitespace character `int()` strips that ends just before `end`, or 0.
    static func trailingWhitespaceLength(_ v: UnsafeBufferPointer<UInt8>, start: Int, end: Int) -> Int {
        let n = end - start
        if n >= 1 {
            let c = v[end - 1]
            if c == 0x20 || (c >= 0x09 && c <= 0x0D) { return 1 }
        }
        if n >= 2, v[end - 2] == 0xC2, whitespaceLength(v, at: end - 2, end: end) == 2 { return 2 }
        if n >= 3, whitespaceLength(v, at: end - 3, end: end) == 3 { return 3 }
        return 0
    }

    /// Python's `int(part)` (base 10, ASCII digits only): nil where it raises ValueError.
    static func parsePythonInt(_ v: UnsafeBufferPointer<UInt8>, _ r: Part) -> PythonInt? {
        var i = r.start
        var end = r.end
        while i < end {
            let w = whitespaceLength(v, at: i, end: end)
            if w == 0 { break }
            i += w
        }
        while end > i {
            let w = trailingWhitespaceLength(v, start: i, end: end)
            if w == 0 { break }
            end -= w
        }
        var negative = false
        if i < end && (v[i] == plus || v[i] == dash) {
            negative = v[i] == dash
            i += 1
        }
        // Digits, single underscores only between digits.
        guard i < end, isDigit(v[i]) else { return nil }
        let digitsStart = i
        var count = 0
        var previousUnderscore = false
        while i < end {
            let c = v[i]
            if isDigit(c) {
                count += 1
                previousUnderscore = false
            } else if c == underscore {
                if previousUnderscore { return nil }
                previousUnderscore = true
            } else {
                return nil
            }
            i += 1
        }
        if previousUnderscore { return nil }
        if count > maxIntDigits { return nil }
        return PythonInt(negative: negative, digits: Part(start: digitsStart, end: end))
    }

    /// Compares the non-negative ASCII digit string `u` with a parsed target integer
    /// (arbitrary length, no overflow): -1, 0 or 1 as user <, ==, > target.
    static func compareNumbers(
        _ user: UnsafeBufferPointer<UInt8>, _ u: Part, _ target: UnsafeBufferPointer<UInt8>, _ t: PythonInt
    ) -> Int {
        // Significant digits of the user part.
        var us = u.start
        while us < u.end && user[us] == 0x30 { us += 1 }
        let uLen = u.end - us
        // Significant digits of the target part (skipping leading zeros and underscores).
        var ts = t.digits.start
        while ts < t.digits.end && (target[ts] == 0x30 || target[ts] == underscore) { ts += 1 }
        var tLen = 0
        var k = ts
        while k < t.digits.end {
            if target[k] != underscore { tLen += 1 }
            k += 1
        }
        if t.negative && tLen > 0 { return 1 }  // user >= 0 > target
        if uLen != tLen { return uLen < tLen ? -1 : 1 }
        var i = us
        var j = ts
        while i < u.end {
            while target[j] == underscore { j += 1 }
            let a = user[i], b = target[j]
            if a != b { return a < b ? -1 : 1 }
            i += 1
            j += 1
        }
        return 0
    }
}
