import ExperimentCore
#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#endif

/// Compact JSON appended straight to a growable byte buffer (memcpy, no Array bookkeeping): the
/// batch loop writes every decision through one of these without building intermediate Strings.
/// Callers place commas and colons themselves.
final class JSONBytes {
    private(set) var base: UnsafeMutablePointer<UInt8>
    private(set) var count = 0
    private var capacity: Int

    init(reservingCapacity capacity: Int = 1024) {
        self.capacity = max(capacity, 64)
        base = .allocate(capacity: self.capacity)
    }

    deinit { base.deallocate() }

    var bytes: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: base, count: count) }
    var text: String { String(decoding: bytes, as: UTF8.self) }

    func removeAll() { count = 0 }

    @inline(__always)
    private func reserve(_ extra: Int) {
        guard count + extra > capacity else { return }
        var grown = capacity * 2
        while grown < count + extra { grown *= 2 }
        let fresh = UnsafeMutablePointer<UInt8>.allocate(capacity: grown)
        fresh.update(from: base, count: count)
        base.deallocate()
        base = fresh
        capacity = grown
    }

    @inline(__always)
    func append(_ source: UnsafeRawPointer, _ length: Int) {
        reserve(length)
        memcpy(base + count, source, length)
        count += length
    }

    @inline(__always)
    func raw(_ byte: UInt8) {
        reserve(1)
        base[count] = byte
        count += 1
    }

    @inline(__always)
    func raw(_ literal: StaticString) { append(literal.utf8Start, literal.utf8CodeUnitCount) }

    /// Text that is already JSON (a variables object precomputed by the config).
    func raw(cString: UnsafePointer<CChar>) { append(cString, strlen(cString)) }

    func bool(_ value: Bool) { value ? raw("true") : raw("false") }
    func null() { raw("null") }

    func int(_ value: Int) {
        if value < 0 { raw(UInt8(ascii: "-")) }
        var rest = value.magnitude
        var divisor: UInt = 1
        while rest / divisor >= 10 { divisor *= 10 }
        repeat {
            raw(UInt8(ascii: "0") + UInt8(rest / divisor))
            rest %= divisor
            divisor /= 10
        } while divisor > 0
    }

    /// A JSON string with quotes, backslashes and control characters escaped. `text` is valid UTF-8.
    func string(_ text: UTF8Text) {
        raw(UInt8(ascii: "\""))
        var start = 0
        for index in 0..<text.count {
            let byte = text[index]
            guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
            if index > start { append(text.baseAddress! + start, index - start) }
            start = index + 1
            raw(UInt8(ascii: "\\"))
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): raw(byte)
            case 0x0A: raw(UInt8(ascii: "n"))
            case 0x0D: raw(UInt8(ascii: "r"))
            case 0x09: raw(UInt8(ascii: "t"))
            case 0x08: raw(UInt8(ascii: "b"))
            case 0x0C: raw(UInt8(ascii: "f"))
            default:
                let hex: StaticString = "0123456789abcdef"
                raw("u00")
                raw(hex.utf8Start[Int(byte >> 4)])
                raw(hex.utf8Start[Int(byte & 0xF)])
            }
        }
        if text.count > start { append(text.baseAddress! + start, text.count - start) }
        raw(UInt8(ascii: "\""))
    }

    func string(_ text: String) {
        var copy = text
        copy.withUTF8 { string($0) }
    }

    func string(cString: UnsafePointer<CChar>) {
        string(UTF8Text(start: UnsafeRawPointer(cString).assumingMemoryBound(to: UInt8.self), count: strlen(cString)))
    }

    /// `"key":`
    func key(_ name: StaticString) {
        raw(UInt8(ascii: "\""))
        raw(name)
        raw("\":")
    }
}
