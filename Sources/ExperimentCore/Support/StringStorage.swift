/// NUL-terminated copies of the config's strings, owned by one compiled config.
///
/// The C ABI hands out `const char *` pointers into this storage (flag keys, variation keys, variables
/// JSON) without copying, so a decision costs no allocation. The storage lives exactly as long as the
/// config that owns it; decisions keep their config alive.
public final class StringStorage: @unchecked Sendable {
    // Written only while the config is being compiled (single-threaded), read-only afterwards.
    private var blocks: [UnsafeMutableRawPointer] = []
    private var cursor: UnsafeMutableRawPointer? = nil
    private var remaining = 0
    private var nextBlockBytes = StringStorage.firstBlockBytes

    // An arena: most stored values are a few bytes, and a heap block each doubled a config's memory with
    // allocator overhead. Blocks grow from 1 KB to 64 KB, so a small datafile wastes little.
    static let firstBlockBytes = 1 << 10
    static let largestBlockBytes = 64 << 10

    public init() {}

    /// Stores a copy of `elements` (trivial values only) and returns a view valid for this storage's
    /// lifetime: the decision path reads config tables through such views without reference counting.
    public func store<T: BitwiseCopyable>(_ elements: [T]) -> UnsafeBufferPointer<T> {
        let memory = allocate(byteCount: MemoryLayout<T>.stride * elements.count, alignment: MemoryLayout<T>.alignment)
        let start = memory.bindMemory(to: T.self, capacity: elements.count)
        start.initialize(from: elements, count: elements.count)
        return UnsafeBufferPointer(start: start, count: elements.count)
    }

    /// Stores a NUL-terminated copy of `text` and returns a pointer valid for this storage's lifetime.
    public func store(_ text: String) -> UnsafePointer<CChar> {
        var copy = text
        return copy.withUTF8 { store(bytes: $0) }
    }

    /// Stores `bytes` NUL-terminated, preceded by their byte count (see `storedLength(of:)`): a text may
    /// hold NUL bytes (a datafile key "a\u0000b"), and the C ABI hands out its length without scanning.
    public func store(bytes: UnsafeBufferPointer<UInt8>) -> UnsafePointer<CChar> {
        let prefix = MemoryLayout<UInt32>.size
        let memory = allocate(byteCount: prefix + bytes.count + 1, alignment: 1)
        memory.storeBytes(of: UInt32(truncatingIfNeeded: bytes.count), as: UInt32.self)
        let text = memory + prefix
        if let base = bytes.baseAddress, bytes.count > 0 {
            text.copyMemory(from: base, byteCount: bytes.count)
        }
        text.storeBytes(of: 0, toByteOffset: bytes.count, as: UInt8.self)
        return UnsafePointer(text.bindMemory(to: CChar.self, capacity: bytes.count + 1))
    }

    /// The byte count (without the terminating NUL) of a text returned by `store(bytes:)` / `store(_:)`
    /// of any StringStorage. Only for such pointers: anything else reads unrelated memory.
    public static func storedLength(of text: UnsafePointer<CChar>) -> Int {
        let prefix = UnsafeRawPointer(text) - MemoryLayout<UInt32>.size
        return Int(prefix.loadUnaligned(as: UInt32.self))
    }

    /// `byteCount` bytes at `alignment` from the current block, a new block, or (large values) a block of
    /// their own, which leaves the current block's free space for later small values.
    private func allocate(byteCount: Int, alignment: Int) -> UnsafeMutableRawPointer {
        if let cursor {
            // Alignments are powers of two: a mask, not a division.
            let padding = -Int(bitPattern: cursor) & (alignment - 1)
            if padding + byteCount <= remaining {
                self.cursor = cursor + padding + byteCount
                remaining -= padding + byteCount
                return cursor + padding
            }
        }
        if byteCount > nextBlockBytes / 4 {
            let block = UnsafeMutableRawPointer.allocate(byteCount: max(byteCount, 1), alignment: 16)
            blocks.append(block)
            return block
        }
        let block = UnsafeMutableRawPointer.allocate(byteCount: nextBlockBytes, alignment: 16)
        blocks.append(block)
        cursor = block + byteCount
        remaining = nextBlockBytes - byteCount
        nextBlockBytes = min(nextBlockBytes * 2, Self.largestBlockBytes)
        return block
    }

    deinit {
        for block in blocks { block.deallocate() }
    }
}

/// A string of the config: Swift text for building payloads, plus its stored C form for the ABI.
public struct ConfigString: Sendable {
    public let text: String
    public nonisolated(unsafe) let cString: UnsafePointer<CChar>
    /// The stored bytes (without the NUL), for hashing and comparing without reference counting.
    public nonisolated(unsafe) let bytes: UTF8Text

    init(_ text: String, in storage: StringStorage) {
        self.text = text
        self.cString = storage.store(text)
        self.bytes = UTF8Text(start: UnsafeRawPointer(cString).assumingMemoryBound(to: UInt8.self), count: text.utf8.count)
    }

    public var isEmpty: Bool { bytes.isEmpty }
}
