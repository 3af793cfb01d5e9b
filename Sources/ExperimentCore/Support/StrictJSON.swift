/// An RFC 8259 syntax check, run before json-c parses a document: json-c accepts things JSON does not
/// (single-quoted strings, trailing garbage, literals in odd cases), and the reference SDK's `json.loads`
/// refuses them, so a value one side rejects must not be accepted by the other.
/// Returns nil for a valid document, else the byte offset and what was expected there.
enum StrictJSON {
    static func firstError(_ bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int) -> (offset: Int, problem: String)? {
        var scanner = Scanner(bytes: bytes, maxDepth: maxDepth)
        scanner.skipSpace()
        guard scanner.value(depth: 1) else { return scanner.error }
        scanner.skipSpace()
        guard scanner.index == bytes.count else { return (scanner.index, "unexpected text after the JSON value") }
        return nil
    }

    private struct Scanner {
        let bytes: UnsafeBufferPointer<UInt8>
        let maxDepth: Int
        var index = 0
        var error: (offset: Int, problem: String)? = nil

        init(bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
            self.bytes = bytes
            self.maxDepth = maxDepth
        }

        var current: UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func fail(_ problem: String) -> Bool {
            if error == nil { error = (index, problem) }
            return false
        }

        mutating func skipSpace() {
            while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
        }

        mutating func value(depth: Int) -> Bool {
            guard let byte = current else { return fail("unexpected end of document") }
            switch byte {
            case UInt8(ascii: "{"): return object(depth: depth)
            case UInt8(ascii: "["): return array(depth: depth)
            case UInt8(ascii: "\""): return string()
            case UInt8(ascii: "t"): return literal("true")
            case UInt8(ascii: "f"): return literal("false")
            case UInt8(ascii: "n"): return literal("null")
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return number()
            default: return fail("expected a JSON value")
            }
        }

        mutating func literal(_ word: StaticString) -> Bool {
            let count = word.utf8CodeUnitCount
            guard index + count <= bytes.count else { return fail("unexpected end of document") }
            for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] {
                return fail("expected \(word)")
            }
            index += count
            return true
        }

        mutating func object(depth: Int) -> Bool {
            guard depth <= maxDepth else { return fail("nesting deeper than \(maxDepth) levels") }
            index += 1
            skipSpace()
            if current == UInt8(ascii: "}") { index += 1; return true }
            while true {
                skipSpace()
                guard current != nil else { return fail("unexpected end of document") }
                guard current == UInt8(ascii: "\"") else { return fail("expected a member name in double quotes") }
                guard string() else { return false }
                skipSpace()
                guard current != nil else { return fail("unexpected end of document") }
                guard current == UInt8(ascii: ":") else { return fail("expected ':' after a member name") }
                index += 1
                skipSpace()
                guard value(depth: depth + 1) else { return false }
                skipSpace()
                if current == UInt8(ascii: ",") { index += 1; continue }
                if current == UInt8(ascii: "}") { index += 1; return true }
                return fail(current == nil ? "unexpected end of document" : "expected ',' or '}' in an object")
            }
        }

        mutating func array(depth: Int) -> Bool {
            guard depth <= maxDepth else { return fail("nesting deeper than \(maxDepth) levels") }
            index += 1
            skipSpace()
            if current == UInt8(ascii: "]") { index += 1; return true }
            while true {
                skipSpace()
                guard value(depth: depth + 1) else { return false }
                skipSpace()
                if current == UInt8(ascii: ",") { index += 1; continue }
                if current == UInt8(ascii: "]") { index += 1; return true }
                return fail(current == nil ? "unexpected end of document" : "expected ',' or ']' in an array")
            }
        }

        mutating func string() -> Bool {
            index += 1  // opening quote
            while let byte = current {
                switch byte {
                case UInt8(ascii: "\""):
                    index += 1
                    return true
                case UInt8(ascii: "\\"):
                    index += 1
                    guard let escaped = current else { return fail("unexpected end of document in a string") }
                    switch escaped {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
                         UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                        index += 1
                    case UInt8(ascii: "u"):
                        index += 1
                        for _ in 0..<4 {
                            guard let hex = current, isHexDigit(hex) else { return fail("expected 4 hex digits after \\u") }
                            index += 1
                        }
                    default:
                        return fail("invalid escape in a string")
                    }
                case 0..<0x20:
                    return fail("unescaped control character in a string")
                default:
                    index += 1
                }
            }
            return fail("unterminated string")
        }

        mutating func number() -> Bool {
            if current == UInt8(ascii: "-") { index += 1 }
            guard let first = current, isDigit(first) else { return fail("expected a digit") }
            index += 1
            if first != UInt8(ascii: "0") { while let d = current, isDigit(d) { index += 1 } }
            if current == UInt8(ascii: ".") {
                index += 1
                guard let d = current, isDigit(d) else { return fail("expected a digit after '.'") }
                while let d = current, isDigit(d) { index += 1 }
            }
            if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
                index += 1
                if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
                guard let d = current, isDigit(d) else { return fail("expected a digit in the exponent") }
                while let d = current, isDigit(d) { index += 1 }
            }
            return true
        }

        func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }
        func isHexDigit(_ byte: UInt8) -> Bool {
            isDigit(byte) || (byte | 0x20 >= UInt8(ascii: "a") && byte | 0x20 <= UInt8(ascii: "f"))
        }
    }
}
