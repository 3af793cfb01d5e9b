/// NUL-terminated copies of the config's strings, owned by one compiled config.
///
/// The C ABI hands out `const char *` pointers into this storage (flag keys, variation keys, variables
/// JSON) without copying, so a decision costs no allocation. The storage lives exactly as long as the
/// config that owns it; decisions keep their config alive.
public final class StringStorage: @unchecked Sendable {
    // Written only while the config is being compiled (single-threaded), read-only afterwards.
    private var blocks: [UnsafeMutableRawPointer] = []

    public init() {}

    /// Stores a copy of `elements` (trivial values only) and returns a view valid for this storage's
    /// lifetime: the decision path reads config tables through such views without reference counting.
    public func store<T: BitwiseCopyable>(_ elements: [T]) -> UnsafeBufferPointer<T> {
        let block = UnsafeMutablePointer<T>.allocate(capacity: max(elements.count, 1))
        block.initialize(from: elements, count: elements.count)
        blocks.append(UnsafeMutableRawPointer(block))
        return UnsafeBufferPointer(start: block, count: elements.count)
    }

    /// Stores a NUL-terminated copy of `text` and returns a pointer valid for this storage's lifetime.
    public func store(_ text: String) -> UnsafePointer<CChar> {
        var copy = text
        return copy.withUTF8 { store(bytes: $0) }
    }

    public func store(bytes: UnsafeBufferPointer<UInt8>) -> UnsafePointer<CChar> {
        let block = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count + 1)
        if let base = bytes.baseAddress, bytes.count > 0 {
            UnsafeMutableRawPointer(block).copyMemory(from: base, byteCount: bytes.count)
        }
        block[bytes.count] = 0
        blocks.append(UnsafeMutableRawPointer(block))
        return UnsafePointer(block)
    }

    deinit {
        for block in blocks { block.deallocate() }
    }
}

/// A string of the config: Swift text for building payloads, plus its stored C form for the ABI.
public struct ConfigString: Sendable {
    public let text: String
    public let utf8: [UInt8]
    public nonisolated(unsafe) let cString: UnsafePointer<CChar>
    /// The stored bytes (without the NUL), for hashing and comparing without reference counting.
    public nonisolated(unsafe) let bytes: UTF8Text

    init(_ text: String, in storage: StringStorage) {
        self.text = text
        self.utf8 = Array(text.utf8)
        self.cString = storage.store(text)
        self.bytes = UTF8Text(start: UnsafeRawPointer(cString).assumingMemoryBound(to: UInt8.self), count: utf8.count)
    }

    public var isEmpty: Bool { utf8.isEmpty }
}
