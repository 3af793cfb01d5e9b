#if canImport(Glibc)
import Glibc
#endif

/// A borrowed view of one value of a `JSONDocument`, valid while the document lives. Reading it costs
/// no reference counting: the document must be kept alive by its owner, as with any borrowed view.
public struct JSONValue {
    unowned(unsafe) let document: JSONDocument
    let index: Int

    init(document: JSONDocument, index: Int) {
        self.document = document
        self.index = index
    }

    public enum Kind: Equatable { case null, bool, int, double, string, array, object }

    var node: JSONNode { document.nodes[index] }

    public var kind: Kind {
        switch node.kind {
        case JSONNode.falseValue, JSONNode.trueValue: return .bool
        case JSONNode.int: return .int
        case JSONNode.double: return .double
        case JSONNode.string: return .string
        case JSONNode.array: return .array
        case JSONNode.object: return .object
        default: return .null
        }
    }

    public var kindName: String {
        switch kind {
        case .null: return "null"
        case .bool: return "a boolean"
        case .int: return "an integer"
        case .double: return "a number"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        }
    }

    public var isNull: Bool { node.kind == JSONNode.null }

    public var bool: Bool? {
        switch node.kind {
        case JSONNode.trueValue: return true
        case JSONNode.falseValue: return false
        default: return nil
        }
    }

    public var int64: Int64? {
        let node = self.node
        guard node.kind == JSONNode.int else { return nil }
        return node.tag & JSONNode.unsigned != 0 ? Int64.max : Int64(bitPattern: node.integer)
    }

    public var double: Double? {
        let node = self.node
        switch node.kind {
        case JSONNode.int: return Double(int64!)
        case JSONNode.double: return JSONValue.strtod(document.text + Int(node.first), count: Int(node.second))
        default: return nil
        }
    }

    /// The number's text is checked JSON grammar: C's strtod reads it as json-c did.
    private static func strtod(_ start: UnsafePointer<UInt8>, count: Int) -> Double {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: count + 1) { buffer in
            let base = buffer.baseAddress!
            UnsafeMutableRawPointer(base).copyMemory(from: start, byteCount: count)
            base[count] = 0
            return Glibc.strtod(base, nil)
        }
    }

    /// The string's bytes (escapes decoded), valid while the document lives. May hold NULs.
    public var stringBytes: UnsafeBufferPointer<UInt8>? {
        let node = self.node
        guard node.kind == JSONNode.string else { return nil }
        let base = node.tag & JSONNode.escaped != 0 ? UnsafePointer(document.decoded) : document.text
        return UnsafeBufferPointer(start: base + Int(node.first), count: Int(node.second))
    }

    public var string: String? {
        guard let bytes = stringBytes else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Elements of an array; members of an object (a repeated name counts once).
    public var count: Int {
        switch node.kind {
        case JSONNode.array: return Int(node.second)
        case JSONNode.object: return memberSlots().count
        default: return 0
        }
    }

    /// The element at `index` of an array; null when out of range or not an array.
    public subscript(index: Int) -> JSONValue {
        let node = self.node
        guard node.kind == JSONNode.array, index >= 0, index < Int(node.second) else {
            return JSONValue(document: document, index: 0)
        }
        // Elements are found by skipping their predecessors; the document remembers the last one found,
        // so reading an array by increasing index costs one step per element, as json-c's arrays did.
        var position = 0
        var child = self.index + 1
        let cursor = document.elementCursor
        if cursor.array == self.index && cursor.position <= index {
            position = cursor.position
            child = cursor.node
        }
        while position < index {
            child = Int(document.nodes[child].next)
            position += 1
        }
        document.elementCursor = (self.index, index, child)
        return JSONValue(document: document, index: child)
    }

    /// The member named `key`, or nil when absent (a present JSON null is a value of kind .null).
    /// A name given twice means its last value.
    public func member(_ key: String) -> JSONValue? {
        guard node.kind == JSONNode.object else { return nil }
        if let found = key.utf8.withContiguousStorageIfAvailable({ member(bytes: $0) }) { return found }
        return Array(key.utf8).withUnsafeBufferPointer { member(bytes: $0) }
    }

    func member(bytes key: UnsafeBufferPointer<UInt8>) -> JSONValue? {
        let node = self.node
        guard node.kind == JSONNode.object else { return nil }
        // json-c looks names up as C strings.
        var key = key
        if let nul = key.firstIndex(of: 0) { key = UnsafeBufferPointer(rebasing: key[..<nul]) }
        let nodes = document.nodes
        let keyCount = key.count
        guard keyCount > 0, let keyBase = key.baseAddress else { return lastMemberWithEmptyName() }
        let first = keyBase.pointee
        var found = -1
        var name = index + 1
        for _ in 0..<Int(node.second) {
            let nameNode = nodes[name]
            if Int(nameNode.second) == keyCount {
                let base = nameNode.tag & JSONNode.escaped != 0 ? UnsafePointer(document.decoded) : document.text
                let bytes = base + Int(nameNode.first)
                if bytes.pointee == first && memcmp(bytes, keyBase, keyCount) == 0 { found = name + 1 }
            }
            name = Int(nodes[name + 1].next)
        }
        return found < 0 ? nil : JSONValue(document: document, index: found)
    }

    /// The member named "" (its last value), or nil.
    private func lastMemberWithEmptyName() -> JSONValue? {
        let nodes = document.nodes
        var found = -1
        var name = index + 1
        for _ in 0..<Int(node.second) {
            if nodes[name].second == 0 { found = name + 1 }
            name = Int(nodes[name + 1].next)
        }
        return found < 0 ? nil : JSONValue(document: document, index: found)
    }

    /// (name node, value node) per distinct name in document order: a repeated name keeps its first
    /// position and takes its last value, as json-c's objects do.
    func memberSlots() -> [(name: Int, value: Int)] {
        let node = self.node
        guard node.kind == JSONNode.object else { return [] }
        let nodes = document.nodes
        var slots: [(name: Int, value: Int)] = []
        slots.reserveCapacity(Int(node.second))
        var name = index + 1
        for _ in 0..<Int(node.second) {
            slots.append((name, name + 1))
            name = Int(nodes[name + 1].next)
        }
        guard slots.count > 1 else { return slots }
        return JSONValue.mergingRepeatedNames(slots, document: document)
    }

    private static func mergingRepeatedNames(_ slots: [(name: Int, value: Int)], document: JSONDocument)
        -> [(name: Int, value: Int)]
    {
        // Names compare as bytes (json-c's strcmp), not as Unicode-equivalent Strings.
        func name(_ slot: (name: Int, value: Int)) -> UnsafeBufferPointer<UInt8> {
            JSONValue(document: document, index: slot.name).stringBytes!
        }
        var merged: [(name: Int, value: Int)] = []
        merged.reserveCapacity(slots.count)
        if slots.count <= 16 {
            for slot in slots {
                let bytes = name(slot)
                if let existing = merged.firstIndex(where: { name($0).elementsEqual(bytes) }) {
                    merged[existing].value = slot.value
                } else {
                    merged.append(slot)
                }
            }
            return merged
        }
        var firstSlotOfName: [[UInt8]: Int] = [:]
        firstSlotOfName.reserveCapacity(slots.count)
        for slot in slots {
            let bytes = Array(name(slot))
            if let existing = firstSlotOfName[bytes] {
                merged[existing].value = slot.value
            } else {
                firstSlotOfName[bytes] = merged.count
                merged.append(slot)
            }
        }
        return merged
    }

    /// The members of an object in document order.
    public var members: [(key: String, value: JSONValue)] {
        memberSlots().map { (JSONValue(document: document, index: $0.name).string!, JSONValue(document: document, index: $0.value)) }
    }

    /// The elements of an array in order (empty for anything else).
    public var elements: [JSONValue] {
        let node = self.node
        guard node.kind == JSONNode.array else { return [] }
        var result: [JSONValue] = []
        result.reserveCapacity(Int(node.second))
        var child = index + 1
        for _ in 0..<Int(node.second) {
            result.append(JSONValue(document: document, index: child))
            child = Int(document.nodes[child].next)
        }
        return result
    }

    /// The value as compact JSON text, as json-c writes it (plain, '/' not escaped).
    public var jsonText: String {
        var out: [UInt8] = []
        write(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    func write(to out: inout [UInt8]) {
        let node = self.node
        switch node.kind {
        case JSONNode.null: out.append(contentsOf: "null".utf8)
        case JSONNode.trueValue: out.append(contentsOf: "true".utf8)
        case JSONNode.falseValue: out.append(contentsOf: "false".utf8)
        case JSONNode.int:
            let text = node.tag & JSONNode.unsigned != 0 ? String(node.integer) : String(Int64(bitPattern: node.integer))
            out.append(contentsOf: text.utf8)
        case JSONNode.double:
            out.append(contentsOf: UnsafeBufferPointer(start: document.text + Int(node.first), count: Int(node.second)))
        case JSONNode.string:
            JSONValue.writeQuoted(stringBytes!, to: &out)
        case JSONNode.array:
            out.append(UInt8(ascii: "["))
            var child = index + 1
            for position in 0..<Int(node.second) {
                if position > 0 { out.append(UInt8(ascii: ",")) }
                JSONValue(document: document, index: child).write(to: &out)
                child = Int(document.nodes[child].next)
            }
            out.append(UInt8(ascii: "]"))
        default:
            out.append(UInt8(ascii: "{"))
            for (position, slot) in memberSlots().enumerated() {
                if position > 0 { out.append(UInt8(ascii: ",")) }
                JSONValue.writeQuoted(JSONValue(document: document, index: slot.name).stringBytes!, to: &out)
                out.append(UInt8(ascii: ":"))
                JSONValue(document: document, index: slot.value).write(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// json-c's string escaping: the short escapes, other control characters as \u00xx, the rest as is.
    static func writeQuoted(_ bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        let hexDigits: StaticString = "0123456789abcdef"
        out.append(UInt8(ascii: "\""))
        for byte in bytes {
            switch byte {
            case 0x08: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
            case 0x09: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0x0A: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0C: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
            case 0x0D: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case UInt8(ascii: "\""): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0..<0x20:
                out.append(contentsOf: "\\u00".utf8)
                out.append(hexDigits.utf8Start[Int(byte >> 4)])
                out.append(hexDigits.utf8Start[Int(byte & 0xF)])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
