/// Unicode decimal digits (category Nd), which Python reads as digits: `"١٢".isdigit()` is true and
/// `int("١٢") == 12`. The reference SDK's semantic versions and variable casts therefore accept them.
enum UnicodeDigits {
    /// Code points whose digit value is 0 and that start a run of ten decimal digits, as CPython 3.11
    /// (Unicode 14) knows them.
    static let zeros: [UInt32] = [
        0x30, 0x660, 0x6F0, 0x7C0, 0x966, 0x9E6, 0xA66, 0xAE6, 0xB66, 0xBE6, 0xC66, 0xCE6, 0xD66, 0xDE6, 0xE50,
        0xED0, 0xF20, 0x1040, 0x1090, 0x17E0, 0x1810, 0x1946, 0x19D0, 0x1A80, 0x1A90, 0x1B50, 0x1BB0, 0x1C40,
        0x1C50, 0xA620, 0xA8D0, 0xA900, 0xA9D0, 0xA9F0, 0xAA50, 0xABF0, 0xFF10, 0x104A0, 0x10D30, 0x11066,
        0x110F0, 0x11136, 0x111D0, 0x112F0, 0x11450, 0x114D0, 0x11650, 0x116C0, 0x11730, 0x118E0, 0x11950,
        0x11C50, 0x11D50, 0x11DA0, 0x16A60, 0x16AC0, 0x16B50, 0x1D7CE, 0x1D7D8, 0x1D7E2, 0x1D7EC, 0x1D7F6,
        0x1E140, 0x1E2F0, 0x1E950, 0x1FBF0,
    ]

    /// The ASCII digit for a Unicode decimal digit, or nil.
    static func asciiDigit(_ scalar: UInt32) -> UInt8? {
        guard let zero = zeros.last(where: { $0 <= scalar }), scalar - zero < 10 else { return nil }
        return UInt8(0x30 + scalar - zero)
    }

    /// `text` with every non-ASCII decimal digit replaced by its ASCII digit, when the text has such digits
    /// and no other non-ASCII characters; nil otherwise (the text is then used as it is).
    static func asciiDigits(_ text: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        guard text.contains(where: { $0 >= 0x80 }) else { return nil }
        var out: [UInt8] = []
        for scalar in String(decoding: text, as: UTF8.self).unicodeScalars {
            if scalar.isASCII {
                out.append(UInt8(scalar.value))
            } else if let digit = asciiDigit(scalar.value) {
                out.append(digit)
            } else {
                return nil
            }
        }
        return out
    }

    /// The byte length of the Unicode decimal digit that starts at `index` (1 for ASCII 0-9), or 0 when the
    /// character there is no decimal digit.
    static func digitLength(_ text: UnsafeBufferPointer<UInt8>, at index: Int, end: Int) -> Int {
        let lead = text[index]
        if lead &- 0x30 < 10 { return 1 }
        guard let (scalar, length) = scalar(text, at: index, end: end) else { return 0 }
        return asciiDigit(scalar) != nil ? length : 0
    }

    /// The bytes from `start` to `end` with every Unicode decimal digit written as its ASCII digit and
    /// every other byte as it is.
    static func asciiOfDigits(_ text: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(end - start)
        var index = start
        while index < end {
            let lead = text[index]
            if lead >= 0x80, let (scalar, length) = scalar(text, at: index, end: end), let digit = asciiDigit(scalar) {
                out.append(digit)
                index += length
            } else {
                out.append(lead)
                index += 1
            }
        }
        return out
    }

    /// Characters Python's `isdigit()` accepts that are no decimal digits (superscripts, subscripts, circled
    /// digits, ...; Numeric_Type=Digit, CPython 3.11 / Unicode 14), as inclusive ranges. A version part made
    /// of them passes the reference's `split_version`, and its `int()` raises once the comparison reaches it.
    static let nonDecimalDigitRanges: [(UInt32, UInt32)] = [
        (0xB2, 0xB3), (0xB9, 0xB9), (0x1369, 0x1371), (0x19DA, 0x19DA), (0x2070, 0x2070), (0x2074, 0x2079),
        (0x2080, 0x2089), (0x2460, 0x2468), (0x2474, 0x247C), (0x2488, 0x2490), (0x24EA, 0x24EA),
        (0x24F5, 0x24FD), (0x24FF, 0x24FF), (0x2776, 0x277E), (0x2780, 0x2788), (0x278A, 0x2792),
        (0x10A40, 0x10A43), (0x10E60, 0x10E68), (0x11052, 0x1105A), (0x1F100, 0x1F10A),
    ]

    /// The byte length of the `isdigit()` character that is no decimal digit starting at `index`, or 0.
    static func nonDecimalDigitLength(_ text: UnsafeBufferPointer<UInt8>, at index: Int, end: Int) -> Int {
        guard text[index] >= 0x80, let (scalar, length) = scalar(text, at: index, end: end) else { return 0 }
        return nonDecimalDigitRanges.contains(where: { $0.0 <= scalar && scalar <= $0.1 }) ? length : 0
    }

    /// Whether the bytes from `start` to `end` hold an `isdigit()` character that is no decimal digit.
    static func hasNonDecimalDigit(_ text: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int) -> Bool {
        var index = start
        while index < end {
            if nonDecimalDigitLength(text, at: index, end: end) > 0 { return true }
            index += 1
        }
        return false
    }

    /// The scalar of the multi-byte UTF-8 sequence at `index` and its length, or nil.
    private static func scalar(_ text: UnsafeBufferPointer<UInt8>, at index: Int, end: Int) -> (UInt32, Int)? {
        let lead = text[index]
        let length: Int
        var value: UInt32
        switch lead {
        case 0xC2...0xDF: length = 2; value = UInt32(lead & 0x1F)
        case 0xE0...0xEF: length = 3; value = UInt32(lead & 0x0F)
        case 0xF0...0xF4: length = 4; value = UInt32(lead & 0x07)
        default: return nil
        }
        guard index + length <= end else { return nil }
        for offset in 1..<length {
            let next = text[index + offset]
            guard next & 0xC0 == 0x80 else { return nil }
            value = value << 6 | UInt32(next & 0x3F)
        }
        return (value, length)
    }
}
