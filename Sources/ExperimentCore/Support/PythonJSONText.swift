/// A JSON value written as Python's `json.dumps(json.loads(text))` writes it with default settings, for
/// the reference SDK's messages that embed a datafile value (a rule's audience conditions in reasons):
/// `", "` and `": "` separators, non-ASCII and control characters as lowercase `\uXXXX` escapes
/// (astral characters as surrogate pairs), floats as Python's `repr` (`1.0`, `1e-05`, `1e+16`, `Infinity`),
/// repeated object names once, at their first place, with their last value.
///
/// Computed when a datafile is compiled, never while deciding.
enum PythonJSONText {
    static func dumps(_ value: JSONValue) -> String {
        var out = ""
        write(value, to: &out)
        return out
    }

    private static func write(_ value: JSONValue, to out: inout String) {
        switch value.kind {
        case .null: out += "null"
        case .bool: out += value.bool! ? "true" : "false"
        // An integer's JSON text is its Python int repr (json.loads keeps integers exact).
        case .int: out += value.integerText
        case .double: out += floatRepr(value.double!)
        case .string: writeString(value.stringBytes!, to: &out)
        case .array:
            out += "["
            for (position, element) in value.elements.enumerated() {
                if position > 0 { out += ", " }
                write(element, to: &out)
            }
            out += "]"
        case .object:
            out += "{"
            for (position, member) in value.members.enumerated() {
                if position > 0 { out += ", " }
                writeString(Array(member.key.utf8), to: &out)
                out += ": "
                write(member.value, to: &out)
            }
            out += "}"
        }
    }

    /// json.dumps's ensure_ascii string: printable ASCII as is except `"` and `\`.
    static func writeString<Bytes: Sequence<UInt8>>(_ bytes: Bytes, to out: inout String) {
        let utf8 = Array(bytes)
        out += "\""
        defer { out += "\"" }
        // Most strings (ids, names, attribute values) need no escape: they go in whole.
        if utf8.allSatisfy({ $0 >= 0x20 && $0 <= 0x7E && $0 != 0x22 && $0 != 0x5C }) {
            out += String(decoding: utf8, as: UTF8.self)
            return
        }
        for scalar in String(decoding: utf8, as: UTF8.self).unicodeScalars {
            switch scalar.value {
            case 0x22: out += "\\\""
            case 0x5C: out += "\\\\"
            case 0x08: out += "\\b"
            case 0x0C: out += "\\f"
            case 0x0A: out += "\\n"
            case 0x0D: out += "\\r"
            case 0x09: out += "\\t"
            case 0x20...0x7E: out.unicodeScalars.append(scalar)
            case 0x10000...:
                let offset = scalar.value - 0x10000
                out += hexEscape(0xD800 + (offset >> 10))
                out += hexEscape(0xDC00 + (offset & 0x3FF))
            default: out += hexEscape(scalar.value)
            }
        }
    }

    private static func hexEscape(_ unit: UInt32) -> String {
        let hex = String(unit, radix: 16)
        return "\\u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
    }

    /// Python's `float.__repr__` (as json.dumps uses it): the shortest digits that round-trip, in positional
    /// form with at least one fractional digit when the decimal exponent is in -4..<16, else
    /// `d[.ddd]e±XX`; non-finite values as json.dumps spells them.
    static func floatRepr(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value < 0 ? "-Infinity" : "Infinity" }
        let sign = value.sign == .minus ? "-" : ""
        if value == 0 { return sign + "0.0" }
        // Swift's description also gives the shortest round-trip digits; only the layout differs.
        let (digits, pointPosition) = shortestDigits(of: value.magnitude)
        let exponent = pointPosition - 1
        if exponent < -4 || exponent >= 16 {
            var mantissa = String(digits.first!)
            if digits.count > 1 { mantissa += "." + digits.dropFirst() }
            let exponentDigits = String(abs(exponent))
            return sign + mantissa + "e" + (exponent < 0 ? "-" : "+")
                + (exponentDigits.count < 2 ? "0" : "") + exponentDigits
        }
        if pointPosition <= 0 {
            return sign + "0." + String(repeating: "0", count: -pointPosition) + digits
        }
        if pointPosition >= digits.count {
            return sign + digits + String(repeating: "0", count: pointPosition - digits.count) + ".0"
        }
        let split = digits.index(digits.startIndex, offsetBy: pointPosition)
        return sign + digits[..<split] + "." + digits[split...]
    }

    /// The significant digits of a positive finite value (no leading or trailing zeros) and where the
    /// decimal point goes: value = 0.d1d2d3... × 10^pointPosition.
    private static func shortestDigits(of value: Double) -> (digits: String, pointPosition: Int) {
        let text = value.description
        var mantissa = Substring(text)
        var exponent = 0
        if let e = text.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            mantissa = text[..<e]
            exponent = Int(text[text.index(after: e)...])!
        }
        let integerPart = mantissa.prefix { $0 != "." }
        let fractionPart = mantissa.dropFirst(integerPart.count + (integerPart.count < mantissa.count ? 1 : 0))
        var digits = String(integerPart) + fractionPart
        var pointPosition = integerPart.count + exponent
        while digits.first == "0" {
            digits.removeFirst()
            pointPosition -= 1
        }
        while digits.last == "0" { digits.removeLast() }
        return (digits, pointPosition)
    }
}
