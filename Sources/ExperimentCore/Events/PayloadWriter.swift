/// Writes the JSON text of an impression or conversion batch into one byte buffer, for exp_track and
/// decide: the generic `JSONWriter` appends to an array byte by byte (a uniqueness check and a capacity
/// check per byte, comma bookkeeping per member), which was most of an event's cost to its caller. The
/// payload's shape is fixed, so its punctuation is written as literal fragments ("\",\"key\":") and only
/// the values vary. Values that need escaping or UTF-8 repair go through `JSONWriter`'s own routines, so
/// the text is byte for byte what `JSONWriter` writes.
///
/// The buffer starts in `scratch` (the caller's stack) and moves to the heap only when a payload
/// outgrows it; `finish` copies the text into the batch's String (the one allocation of the common case).
struct PayloadWriter: ~Copyable {
    private var start: UnsafeMutablePointer<UInt8>
    private var count = 0
    private var capacity: Int
    private var onHeap = false

    init(scratch: UnsafeMutableBufferPointer<UInt8>) {
        start = scratch.baseAddress!
        capacity = scratch.count
    }

    deinit { if onHeap { start.deallocate() } }

    /// The text written, as a String.
    var text: String {
        String(unsafeUninitializedCapacity: count) { target in
            target.baseAddress!.update(from: start, count: count)
            return count
        }
    }

    @inline(__always)
    private mutating func reserve(_ extra: Int) {
        if count + extra > capacity { grow(to: count + extra) }
    }

    private mutating func grow(to needed: Int) {
        var newCapacity = capacity * 2
        while newCapacity < needed { newCapacity *= 2 }
        let moved = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        moved.update(from: start, count: count)
        if onHeap { start.deallocate() }
        start = moved
        capacity = newCapacity
        onHeap = true
    }

    @inline(__always)
    mutating func bytes(_ source: UnsafeRawBufferPointer) {
        guard let base = source.baseAddress, source.count > 0 else { return }
        reserve(source.count)
        (start + count).update(from: base.assumingMemoryBound(to: UInt8.self), count: source.count)
        count += source.count
    }

    /// Literal JSON text (punctuation and keys known at compile time).
    @inline(__always)
    mutating func literal(_ text: StaticString) {
        bytes(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Already-valid JSON text.
    mutating func raw(_ json: String) {
        var copy = json
        copy.withUTF8 { bytes(UnsafeRawBufferPointer($0)) }
    }

    /// `value` as a JSON string, as `JSONWriter.string` writes it.
    mutating func string(_ value: String) {
        var copy = value
        let plain = copy.withUTF8 { utf8 -> Bool in
            guard !Self.needsEscaping(utf8) else { return false }
            reserve(utf8.count + 2)
            quoted(utf8)
            return true
        }
        if !plain { raw(JSONWriter.quoted(value)) }
    }

    /// UTF-8 bytes as a JSON string, as `JSONWriter.string(String(decoding: bytes, as: UTF8.self))` writes
    /// them: plain ASCII directly, anything else through the String (which repairs invalid UTF-8).
    mutating func string(utf8 text: UnsafeBufferPointer<UInt8>) {
        if Self.isPlainASCII(text) {
            reserve(text.count + 2)
            quoted(text)
        } else {
            string(String(decoding: text, as: UTF8.self))
        }
    }

    @inline(__always)
    private mutating func quoted(_ text: UnsafeBufferPointer<UInt8>) {
        start[count] = UInt8(ascii: "\"")
        if let base = text.baseAddress { (start + count + 1).update(from: base, count: text.count) }
        start[count + 1 + text.count] = UInt8(ascii: "\"")
        count += text.count + 2
    }

    mutating func string(_ value: String?) {
        if let value { string(value) } else { literal("null") }
    }

    mutating func bool(_ value: Bool) { if value { literal("true") } else { literal("false") } }

    /// Decimal digits, as `String(value)` writes them.
    mutating func int(_ value: Int64) {
        reserve(20)
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes of scratch, filled from the end
        var magnitude = value.magnitude
        let written = withUnsafeMutableBytes(of: &digits) { scratch -> Int in
            var position = scratch.count
            repeat {
                position -= 1
                scratch[position] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            if value < 0 { position -= 1; scratch[position] = UInt8(ascii: "-") }
            let length = scratch.count - position
            (start + count).update(from: scratch.baseAddress!.assumingMemoryBound(to: UInt8.self) + position, count: length)
            return length
        }
        count += written
    }

    mutating func double(_ value: Double) { raw(JSONWriter.format(value)) }

    /// An attribute value, as `EventPayloads.write(_:to:)` writes it.
    mutating func value(_ value: AttributeValue) {
        switch value {
        case .string(let bytes): string(utf8: bytes)
        case .bool(let flag): bool(flag)
        case .int(let number): int(number)
        case .double(let number): double(number)
        case .bigInteger(let digits): raw(String(decoding: digits, as: UTF8.self))
        case .null, .unsupported: literal("null")
        }
    }

    private static func needsEscaping(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
        for byte in text where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { return true }
        return false
    }

    /// ASCII without anything to escape: the same bytes as a String and as JSON string content.
    static func isPlainASCII(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
        for byte in text where byte < 0x20 || byte >= 0x80 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
            return false
        }
        return true
    }
}
