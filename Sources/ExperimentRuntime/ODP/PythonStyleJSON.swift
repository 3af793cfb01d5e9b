import ExperimentCore

/// JSON written the way the reference SDK's `json.dumps` writes it (", " and ": " separators, non-ASCII
/// escaped as \uXXXX), so ODP requests are byte for byte what the reference sends.
struct PythonStyleJSON {
    private(set) var text: [UInt8] = []

    mutating func raw(_ literal: String) { text.append(contentsOf: literal.utf8) }

    mutating func string(_ value: String) {
        let hex = Array("0123456789abcdef".utf8)
        func unicodeEscape(_ unit: UInt16, into out: inout [UInt8]) {
            out.append(contentsOf: "\\u".utf8)
            for shift in stride(from: 12, through: 0, by: -4) { out.append(hex[Int((unit >> UInt16(shift)) & 0xF)]) }
        }
        text.append(UInt8(ascii: "\""))
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": text.append(contentsOf: "\\\"".utf8)
            case "\\": text.append(contentsOf: "\\\\".utf8)
            case "\n": text.append(contentsOf: "\\n".utf8)
            case "\r": text.append(contentsOf: "\\r".utf8)
            case "\t": text.append(contentsOf: "\\t".utf8)
            case "\u{08}": text.append(contentsOf: "\\b".utf8)
            case "\u{0C}": text.append(contentsOf: "\\f".utf8)
            default:
                if scalar.value < 0x20 || scalar.value > 0x7E && scalar.value != 0x7F {
                    for unit in String(scalar).utf16 { unicodeEscape(unit, into: &text) }
                } else {
                    text.append(UInt8(scalar.value))
                }
            }
        }
        text.append(UInt8(ascii: "\""))
    }

    mutating func stringArray(_ values: [String]) {
        raw("[")
        for (index, value) in values.enumerated() {
            if index > 0 { raw(", ") }
            string(value)
        }
        raw("]")
    }

    /// A JSON number as Python prints it (integers plainly, floats by their shortest repr).
    mutating func number(_ value: JSONValue) {
        if let integer = value.int64 { raw(String(integer)); return }
        guard let double = value.double else { raw("null"); return }
        if double.isNaN { raw("NaN") } else if double.isInfinite { raw(double < 0 ? "-Infinity" : "Infinity") }
        else { raw(JSONWriter.format(double)) }
    }

    /// Copies a JSON scalar (string, number, bool, null).
    mutating func scalar(_ value: JSONValue) {
        switch value.kind {
        case .string: string(value.string ?? "")
        case .int, .double: number(value)
        case .bool: raw(value.bool! ? "true" : "false")
        default: raw("null")
        }
    }
}
