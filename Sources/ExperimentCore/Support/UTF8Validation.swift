/// Strict UTF-8 validation (no overlong forms, no surrogates, nothing above U+10FFFF), so every string
/// the library keeps or compares is text the reference SDK could have received.
public enum UTF8Validation {
    /// Ids and keys are nearly always ASCII: one branch-free pass, inlined at the call site, settles that.
    @inlinable
    public static func isValid(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var highBits: UInt8 = 0
        for byte in bytes { highBits |= byte }
        return highBits < 0x80 || firstInvalidByte(bytes) == nil
    }

    /// The offset of the first byte that starts an invalid sequence, or nil when all of it is valid.
    public static func firstInvalidByte(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        // Ids and keys are nearly always ASCII: one branch-free pass settles that case.
        var highBits: UInt8 = 0
        for byte in bytes { highBits |= byte }
        if highBits < 0x80 { return nil }
        var index = 0
        let count = bytes.count
        while index < count {
            let lead = bytes[index]
            if lead < 0x80 { index += 1; continue }
            let length: Int
            var minimum: UInt32
            var scalar: UInt32
            switch lead {
            case 0xC2...0xDF: length = 2; minimum = 0x80; scalar = UInt32(lead & 0x1F)
            case 0xE0...0xEF: length = 3; minimum = 0x800; scalar = UInt32(lead & 0x0F)
            case 0xF0...0xF4: length = 4; minimum = 0x10000; scalar = UInt32(lead & 0x07)
            default: return index
            }
            guard index + length <= count else { return index }
            for offset in 1..<length {
                let continuation = bytes[index + offset]
                guard continuation & 0xC0 == 0x80 else { return index }
                scalar = (scalar << 6) | UInt32(continuation & 0x3F)
            }
            guard scalar >= minimum, scalar <= 0x10FFFF, !(0xD800...0xDFFF).contains(scalar) else { return index }
            index += length
        }
        return nil
    }
}
