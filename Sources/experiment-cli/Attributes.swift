import ArgumentParser
import ExperimentCore
import ExperimentRuntime
#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#endif

/// The library's input limits (EXP_MAX_* in include/experiment.h), applied the same way here so the
/// tool refuses exactly what the C API would.
enum Limits {
    static let keyBytes = 1024
    static let stringBytes = 65536
    static let attributes = 1024
    static let inputJSONBytes = 1 << 20
    static let jsonDepth = 64
}

/// User attributes given on the command line.
enum CommandLineAttributes {
    /// `--attributes JSON` first, then every `--attr key=value` (typed from its text), then every
    /// `--attr-string key=value`; when a key repeats, the later one wins.
    static func parse(json: String?, typed: [String], strings: [String]) throws(ValidationError) -> OwnedAttributes {
        var pairs: [(key: [UInt8], value: OwnedValue)] = []
        if let json {
            let document: JSONDocument
            do {
                document = try JSONDocument.parse(json, what: "--attributes", maxBytes: Limits.inputJSONBytes,
                                                  maxDepth: Limits.jsonDepth)
            } catch {
                throw ValidationError(error.message)
            }
            guard document.root.kind == .object else {
                throw ValidationError("--attributes: expected a JSON object, got \(document.root.kindName)")
            }
            for (key, value) in document.root.members {
                try checkKey(key, option: "--attributes")
                switch scalar(value) {
                case .success(let owned): pairs.append((Array(key.utf8), owned))
                case .failure(let kind):
                    throw ValidationError("--attributes: \"\(key)\": expected a string, number, boolean or null, got \(kind)")
                }
            }
        }
        for argument in typed {
            let (key, text) = try split(argument, option: "--attr")
            pairs.append((Array(key.utf8), inferredValue(text)))
        }
        for argument in strings {
            let (key, text) = try split(argument, option: "--attr-string")
            pairs.append((Array(key.utf8), .string(Array(text.utf8))))
        }
        for pair in pairs {
            if case .string(let bytes) = pair.value, bytes.count > Limits.stringBytes {
                throw ValidationError("attribute \"\(String(decoding: pair.key, as: UTF8.self))\": value longer than \(Limits.stringBytes) bytes")
            }
        }
        let attributes = OwnedAttributes(pairs)
        guard attributes.entries.count <= Limits.attributes else {
            throw ValidationError("more than \(Limits.attributes) attributes")
        }
        return attributes
    }

    /// "key=value" split at the first "=".
    static func split(_ argument: String, option: String) throws(ValidationError) -> (String, String) {
        guard let equals = argument.firstIndex(of: "=") else {
            throw ValidationError("\(option) \"\(argument)\": expected key=value")
        }
        let key = String(argument[..<equals])
        guard !key.isEmpty else { throw ValidationError("\(option) \"\(argument)\": the key is empty") }
        try checkKey(key, option: option)
        return (key, String(argument[argument.index(after: equals)...]))
    }

    static func checkKey(_ key: String, option: String) throws(ValidationError) {
        guard key.utf8.count <= Limits.keyBytes else {
            throw ValidationError("\(option): attribute key longer than \(Limits.keyBytes) bytes")
        }
    }

    /// `--attr` typing: true/false -> bool, an integer -> int, a decimal number -> double, null -> null,
    /// anything else -> string. Numbers follow JSON's grammar ("007", "+1", "1." and "inf" stay strings).
    static func inferredValue(_ text: String) -> OwnedValue {
        switch text {
        case "true": return .bool(true)
        case "false": return .bool(false)
        case "null": return .null
        default: break
        }
        switch numberKind(Array(text.utf8)) {
        case .integer:
            if let value = Int64(text) { return .int(value) }
            if let value = Double(text) { return .double(value) }  // beyond Int64: as JSON readers do
        case .decimal:
            if let value = Double(text) { return .double(value) }
        case .none:
            break
        }
        return .string(Array(text.utf8))
    }

    enum NumberKind { case none, integer, decimal }

    /// Classifies `text` by JSON's number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
    static func numberKind(_ text: [UInt8]) -> NumberKind {
        var index = 0
        func isDigit(_ at: Int) -> Bool { at < text.count && text[at] >= UInt8(ascii: "0") && text[at] <= UInt8(ascii: "9") }
        if index < text.count && text[index] == UInt8(ascii: "-") { index += 1 }
        guard isDigit(index) else { return .none }
        if text[index] == UInt8(ascii: "0") { index += 1 } else { while isDigit(index) { index += 1 } }
        var kind = NumberKind.integer
        if index < text.count && text[index] == UInt8(ascii: ".") {
            index += 1
            guard isDigit(index) else { return .none }
            while isDigit(index) { index += 1 }
            kind = .decimal
        }
        if index < text.count && (text[index] == UInt8(ascii: "e") || text[index] == UInt8(ascii: "E")) {
            index += 1
            if index < text.count && (text[index] == UInt8(ascii: "+") || text[index] == UInt8(ascii: "-")) { index += 1 }
            guard isDigit(index) else { return .none }
            while isDigit(index) { index += 1 }
            kind = .decimal
        }
        return index == text.count ? kind : .none
    }

    /// A JSON scalar as an owned attribute value; arrays and objects give their kind name.
    static func scalar(_ value: JSONValue) -> Result<OwnedValue, KindName> {
        switch value.kind {
        case .null: return .success(.null)
        case .bool: return .success(.bool(value.bool!))
        case .int: return .success(.int(value.int64!))
        case .double: return .success(.double(value.double!))
        case .string: return .success(.string(Array(value.stringBytes!)))
        case .array, .object: return .failure(KindName(value.kindName))
        }
    }

    struct KindName: Error, CustomStringConvertible {
        let description: String
        init(_ name: String) { description = name }
    }
}

/// The attributes of one batch request, borrowed from its parsed JSON document: string values point
/// into the document, and the entry array is reused from request to request.
struct RequestAttributes: UserAttributes {
    struct Entry {
        let key: String
        let value: AttributeValue
    }

    let entries: [Entry]

    func value(named name: UTF8Text) -> AttributeValue? {
        var index = entries.count - 1
        while index >= 0 {
            if RequestAttributes.equal(entries[index].key, name) { return entries[index].value }
            index -= 1
        }
        return nil
    }

    func isQualified(for segment: UTF8Text) -> Bool { false }

    func forEach(_ body: (UTF8Text, AttributeValue) -> Void) {
        for entry in entries {
            var key = entry.key
            key.withUTF8 { body($0, entry.value) }
        }
    }

    @inline(__always)
    static func equal(_ key: String, _ name: UTF8Text) -> Bool {
        let utf8 = key.utf8
        guard utf8.count == name.count else { return false }
        if name.count == 0 { return true }
        if let same = utf8.withContiguousStorageIfAvailable({ memcmp($0.baseAddress!, name.baseAddress!, name.count) == 0 }) {
            return same
        }
        return utf8.elementsEqual(name)
    }
}
