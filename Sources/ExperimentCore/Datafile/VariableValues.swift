#if canImport(Glibc)
import Glibc
#endif

/// Turns a variable's datafile text into the JSON the reference SDK's typecast produces:
/// boolean is `text == "true"`, integer is Python's `int(text)`, double is `float(text)`, json is
/// `json.loads(text)`, string is the text. A value that does not cast becomes null, as in the reference.
enum VariableValues {
    /// `tokener`, when given, checks a JSON value up to its depth (a compilation checks many in turn: see
    /// `JSONTokener`); a value nested deeper is checked again up to `jsonValueDepth`.
    static func json(_ text: String, as type: VariableType, tokener: JSONTokener? = nil) -> String {
        switch type {
        case .boolean: return text == "true" ? "true" : "false"
        case .string: return JSONWriter.quoted(text)
        case .integer: return pythonInt(text) ?? "null"
        case .double:
            guard let value = pythonFloat(text) else { return "null" }
            return doubleJSON(value)
        case .json:
            return isJSONValue(text, tokener: tokener) ? text : "null"
        }
    }

    /// Whether `text` is one JSON value the reference's `json.loads` reads. Tried first within a datafile's
    /// depth (with `tokener` when given), and within `jsonValueDepth` only for a text nested deeper: json-c
    /// clears a tokener's whole stack, sized by its depth, when it makes one.
    static func isJSONValue(_ text: String, tokener: JSONTokener?) -> Bool {
        do {
            _ = try JSONDocument.parse(text, what: "variable", maxBytes: 16 << 20, maxDepth: DatafileCompiler.maxDepth,
                                       tokener: tokener)
            return true
        } catch {
            guard case .tooDeep = error else { return false }
        }
        return (try? JSONDocument.parse(text, what: "variable", maxBytes: 16 << 20, maxDepth: jsonValueDepth)) != nil
    }

    /// How deep a json variable's text may nest. The reference's `json.loads` stops at Python's recursion
    /// limit (about 990 levels less the caller's stack); below this depth both read the value.
    static let jsonValueDepth = 900

    /// Python's `int()` and `json` refuse to read an integer of more digits than this (CPython's default
    /// `sys.get_int_max_str_digits()`): `int(text)` raises, and `json.loads` of such a datafile raises.
    static let pythonIntMaxDigits = 4300

    /// A double as the variables JSON carries it: as `JSONWriter.format`, and NaN, inf and -inf as the tokens
    /// Python's `json` writes and reads for them (`NaN`, `Infinity`, `-Infinity`), since the reference hands
    /// out `float("nan")` and the infinities as variable values.
    static func doubleJSON(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value < 0 ? "-Infinity" : "Infinity" }
        return JSONWriter.format(value)
    }

    /// Python's `int(value)` of a finite double, exactly, as a JSON integer literal (`int(1e19)` is
    /// 10000000000000000000, every digit of `int(1e300)`); nil for NaN and the infinities (Python raises).
    static func truncatedInteger(_ value: Double) -> String? {
        guard value.isFinite else { return nil }
        if value.magnitude < 9.2e18 { return String(Int64(value)) }
        // Integral here (|value| >= 2^53): significand * 2^exponent, multiplied out in base 10^9 limbs.
        let exponent = Int(value.exponent) - Double.significandBitCount
        var limbs: [UInt64] = []  // little-endian, base 10^9
        var significand = value.significandBitPattern | (1 << UInt64(Double.significandBitCount))
        while significand > 0 {
            limbs.append(significand % 1_000_000_000)
            significand /= 1_000_000_000
        }
        var remaining = exponent
        while remaining > 0 {
            let shift = min(remaining, 29)
            var carry: UInt64 = 0
            for index in limbs.indices {
                let product = (limbs[index] << UInt64(shift)) + carry
                limbs[index] = product % 1_000_000_000
                carry = product / 1_000_000_000
            }
            while carry > 0 {
                limbs.append(carry % 1_000_000_000)
                carry /= 1_000_000_000
            }
            remaining -= shift
        }
        var text = value < 0 ? "-" : ""
        text += String(limbs.last!)
        for limb in limbs.dropLast().reversed() {
            let digits = String(limb)
            text += String(repeating: "0", count: 9 - digits.count) + digits
        }
        return text
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || (0x09...0x0D).contains(byte)
    }

    /// The whitespace Python's int() and float() strip (measured on CPython 3.11).
    private static let pythonSpaces: Set<UInt32> = [
        0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005,
        0x2006, 0x2007, 0x2008, 0x2009, 0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000,
    ]

    /// Python's first step in int() and float(): every Unicode decimal digit becomes its ASCII digit and
    /// every whitespace character a space; other characters stay as they are.
    private static func asciiDigitsAndSpaces(_ text: String) -> [UInt8] {
        var out: [UInt8] = []
        for scalar in text.unicodeScalars {
            let value = scalar.value
            if value < 0x80 && !pythonSpaces.contains(value) {
                out.append(UInt8(value))
            } else if pythonSpaces.contains(value) {
                out.append(0x20)
            } else if let digit = UnicodeDigits.asciiDigit(value) {
                out.append(digit)
            } else {
                out.append(contentsOf: Array(String(scalar).utf8))
            }
        }
        return out
    }

    private static func trimmed(_ text: String) -> ArraySlice<UInt8> {
        let bytes = asciiDigitsAndSpaces(text)
        var start = 0, end = bytes.count
        while start < end && isSpace(bytes[start]) { start += 1 }
        while end > start && isSpace(bytes[end - 1]) { end -= 1 }
        return bytes[start..<end]
    }

    /// Digits with single underscores between them (Python's numeric literal grouping). Returns the
    /// digits without underscores, or nil.
    private static func digitRun(_ bytes: ArraySlice<UInt8>) -> [UInt8]? {
        guard let first = bytes.first, let last = bytes.last, isDigit(first), isDigit(last) else { return nil }
        var digits: [UInt8] = []
        var previousUnderscore = false
        for byte in bytes {
            if byte == UInt8(ascii: "_") {
                if previousUnderscore { return nil }
                previousUnderscore = true
            } else if isDigit(byte) {
                digits.append(byte)
                previousUnderscore = false
            } else {
                return nil
            }
        }
        return digits
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    /// Python `int(text)` as a JSON integer literal (any size), or nil when Python raises.
    static func pythonInt(_ text: String) -> String? {
        if let plain = plainInteger(text) { return plain }
        var body = trimmed(text)
        var negative = false
        if let sign = body.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
            negative = sign == UInt8(ascii: "-")
            body = body.dropFirst()
        }
        guard var digits = digitRun(body)?[...], digits.count <= pythonIntMaxDigits else { return nil }
        while digits.count > 1 && digits.first == UInt8(ascii: "0") { digits = digits.dropFirst() }
        let magnitude = String(decoding: digits, as: UTF8.self)
        return negative && magnitude != "0" ? "-" + magnitude : magnitude
    }

    /// Python `float(text)`, or nil when Python raises.
    static func pythonFloat(_ text: String) -> Double? {
        if let plain = plainDecimal(text) { return plain }
        var body = trimmed(text)
        var sign: Double = 1
        if let first = body.first, first == UInt8(ascii: "+") || first == UInt8(ascii: "-") {
            if first == UInt8(ascii: "-") { sign = -1 }
            body = body.dropFirst()
        }
        let lower = String(decoding: body, as: UTF8.self).lowercased()
        if lower == "inf" || lower == "infinity" { return sign * Double.infinity }
        if lower == "nan" { return Double.nan }
        guard let literal = decimalLiteral(body) else { return nil }
        return literal.withCString { strtod($0, nil) } * sign
    }

    /// Validates `digits[.digits][(e|E)[sign]digits]` (either side of the point may be empty, not both)
    /// and returns it without underscores.
    private static func decimalLiteral(_ bytes: ArraySlice<UInt8>) -> String? {
        var mantissa = bytes, exponent: ArraySlice<UInt8>? = nil
        if let e = bytes.firstIndex(where: { $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }) {
            mantissa = bytes[bytes.startIndex..<e]
            exponent = bytes[(e + 1)...]
        }
        var integerPart = mantissa, fractionPart: ArraySlice<UInt8>? = nil
        if let point = mantissa.firstIndex(of: UInt8(ascii: ".")) {
            integerPart = mantissa[mantissa.startIndex..<point]
            fractionPart = mantissa[(point + 1)...]
        }
        let integerDigits = integerPart.isEmpty ? [] : digitRun(integerPart)
        let fractionDigits = (fractionPart?.isEmpty ?? true) ? [] : digitRun(fractionPart!)
        guard let integerDigits, let fractionDigits, !(integerDigits.isEmpty && fractionDigits.isEmpty) else {
            return nil
        }
        var literal = String(decoding: integerDigits, as: UTF8.self)
        if !fractionDigits.isEmpty { literal += "." + String(decoding: fractionDigits, as: UTF8.self) }
        if var exponent {
            var exponentSign = ""
            if let first = exponent.first, first == UInt8(ascii: "+") || first == UInt8(ascii: "-") {
                exponentSign = first == UInt8(ascii: "-") ? "-" : "+"
                exponent = exponent.dropFirst()
            }
            guard let exponentDigits = digitRun(exponent) else { return nil }
            literal += "e" + exponentSign + String(decoding: exponentDigits, as: UTF8.self)
        }
        return literal
    }

    // Datafiles write numbers plainly ("42", "-3.5", "1e3"): those read as C reads them, without the
    // Unicode digit and whitespace mapping (a scalar-by-scalar pass with set lookups) that Python's
    // general rules need. Anything else (spaces, underscores, other digits, "inf") takes the general path.

    /// `[+-]?[0-9]+` as Python's int() writes it back (no leading zeros, no "-0"), or nil.
    private static func plainInteger(_ text: String) -> String? {
        var text = text
        return text.withUTF8 { bytes -> String? in
            var start = 0
            var negative = false
            if let first = bytes.first, first == UInt8(ascii: "+") || first == UInt8(ascii: "-") {
                negative = first == UInt8(ascii: "-")
                start = 1
            }
            guard start < bytes.count, bytes[start...].allSatisfy(isDigit),
                  bytes.count - start <= pythonIntMaxDigits else { return nil }
            while start < bytes.count - 1 && bytes[start] == UInt8(ascii: "0") { start += 1 }
            let magnitude = String(decoding: UnsafeBufferPointer(rebasing: bytes[start...]), as: UTF8.self)
            return negative && magnitude != "0" ? "-" + magnitude : magnitude
        }
    }

    /// `[+-]?(digits)?(.digits?)?([eE][+-]?digits)?` with a digit before the exponent, read by strtod,
    /// or nil.
    private static func plainDecimal(_ text: String) -> Double? {
        var text = text
        return text.withUTF8 { bytes -> Double? in
            var index = 0
            let count = bytes.count
            guard count > 0, count < 256 else { return nil }
            if bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            var mantissaDigits = 0
            while index < count && isDigit(bytes[index]) { index += 1; mantissaDigits += 1 }
            if index < count && bytes[index] == UInt8(ascii: ".") {
                index += 1
                while index < count && isDigit(bytes[index]) { index += 1; mantissaDigits += 1 }
            }
            guard mantissaDigits > 0 else { return nil }
            if index < count && (bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E")) {
                index += 1
                if index < count && (bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-")) { index += 1 }
                var exponentDigits = 0
                while index < count && isDigit(bytes[index]) { index += 1; exponentDigits += 1 }
                guard exponentDigits > 0 else { return nil }
            }
            guard index == count else { return nil }
            return withUnsafeTemporaryAllocation(of: CChar.self, capacity: count + 1) { buffer in
                let base = buffer.baseAddress!
                UnsafeMutableRawPointer(base).copyMemory(from: bytes.baseAddress!, byteCount: count)
                base[count] = 0
                return strtod(base, nil)
            }
        }
    }
}

/// A variable usage's "value" that is not a string. The reference keeps the JSON value as Python reads it
/// and typecasts it per variable type: `value == "true"` for a boolean, `int()`, `float()`, `json.loads()`
/// (which raises on anything but a string: None), and the value itself for a string variable.
public enum VariableLiteral: Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    /// An integer beyond 64 bits, as written.
    case bigInteger(String)
    /// An array or object, as JSON text.
    case composite(String)

    init(_ value: JSONValue) {
        switch value.kind {
        case .null: self = .null
        case .bool: self = .bool(value.bool ?? false)
        case .int:
            // json-c clamps an integer past 64 bits (`integerText` has its digits as written) and holds one
            // between 2^63 and 2^64 as unsigned.
            if value.mayBeClamped {
                self = .bigInteger(value.integerText)
            } else if let unsigned = value.unsignedAboveInt64 {
                self = .bigInteger(String(unsigned))
            } else {
                self = .int(value.int64 ?? 0)
            }
        case .double: self = .double(value.double ?? 0)
        case .string, .array, .object: self = .composite(value.jsonText)
        }
    }

    /// The decision's JSON for this value as a variable of `type` ("null" where the reference's cast raises).
    func json(as type: VariableType) -> String {
        switch (type, self) {
        case (.boolean, _): return "false"
        case (.json, _), (_, .null): return "null"
        case (.string, .bool(let flag)): return flag ? "true" : "false"
        case (.string, .int(let number)): return String(number)
        case (.string, .double(let number)): return VariableValues.doubleJSON(number)
        case (.string, .bigInteger(let text)), (.string, .composite(let text)): return text
        case (.integer, .bool(let flag)): return flag ? "1" : "0"
        case (.integer, .int(let number)): return String(number)
        case (.integer, .bigInteger(let text)): return text
        case (.integer, .double(let number)):
            // int() truncates, exactly at any size; it raises on inf and nan.
            return VariableValues.truncatedInteger(number) ?? "null"
        case (.double, .bool(let flag)): return JSONWriter.format(flag ? 1 : 0)
        case (.double, .int(let number)): return JSONWriter.format(Double(number))
        case (.double, .double(let number)): return VariableValues.doubleJSON(number)
        case (.double, .bigInteger(let text)):
            // float() of an int past the double range raises OverflowError.
            guard let number = Double(text), number.isFinite else { return "null" }
            return JSONWriter.format(number)
        case (.integer, .composite), (.double, .composite): return "null"
        }
    }
}
