/// Why a datafile was refused. `message` names the place, e.g.
/// `experiments[2].trafficAllocation[0].endOfRange: expected an integer, got a string`.
public struct DatafileError: Error, Equatable {
    public enum Kind: Sendable, Equatable {
        case invalidJSON, unsupportedVersion, invalidDatafile, tooLarge, tooDeep, invalidUTF8
    }

    public let kind: Kind
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    init(_ json: JSONError) {
        switch json {
        case .malformed(let m): self.init(.invalidJSON, m)
        case .tooLarge(let m): self.init(.tooLarge, m)
        case .tooDeep(let m): self.init(.tooDeep, m)
        case .invalidUTF8(let m): self.init(.invalidUTF8, m)
        }
    }
}

/// Typed access to a datafile's JSON that reports the exact place of every problem.
struct DatafileReader {
    let value: JSONValue
    let path: String

    init(_ value: JSONValue, path: String) {
        self.value = value
        self.path = path
    }

    func fail(_ problem: String) -> DatafileError {
        DatafileError(.invalidDatafile, path.isEmpty ? "datafile: \(problem)" : "datafile: \(path): \(problem)")
    }

    private func child(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    func member(_ key: String) -> DatafileReader? {
        guard let found = value.member(key) else { return nil }
        return DatafileReader(found, path: child(key))
    }

    func required(_ key: String) throws(DatafileError) -> DatafileReader {
        guard let found = member(key) else { throw fail("missing required field \"\(key)\"") }
        return found
    }

    func string() throws(DatafileError) -> String {
        guard let text = value.string else { throw fail("expected a string, got \(value.kindName)") }
        return text
    }

    func bool() throws(DatafileError) -> Bool {
        guard let flag = value.bool else { throw fail("expected a boolean, got \(value.kindName)") }
        return flag
    }

    func int() throws(DatafileError) -> Int64 {
        guard let number = value.int64 else { throw fail("expected an integer, got \(value.kindName)") }
        return number
    }

    func array() throws(DatafileError) -> [DatafileReader] {
        guard value.kind == .array else { throw fail("expected an array, got \(value.kindName)") }
        return (0..<value.count).map { DatafileReader(value[$0], path: "\(path)[\($0)]") }
    }

    func object() throws(DatafileError) -> [(key: String, value: DatafileReader)] {
        guard value.kind == .object else { throw fail("expected an object, got \(value.kindName)") }
        return value.members.map { ($0.key, DatafileReader($0.value, path: child($0.key))) }
    }

    func requiredString(_ key: String) throws(DatafileError) -> String { try required(key).string() }

    /// An entity's "key": callers name entities by it, so it must fit the API's key limit.
    func requiredKey() throws(DatafileError) -> String {
        let field = try required("key")
        let key = try field.string()
        guard key.utf8.count <= DatafileCompiler.maxKeyBytes else {
            throw field.fail("longer than \(DatafileCompiler.maxKeyBytes) bytes, the limit for keys callers pass")
        }
        return key
    }
    func requiredArray(_ key: String) throws(DatafileError) -> [DatafileReader] { try required(key).array() }

    /// An optional member; JSON null counts as absent.
    func optional(_ key: String) -> DatafileReader? {
        guard let found = member(key), !found.value.isNull else { return nil }
        return found
    }

    func optionalString(_ key: String) throws(DatafileError) -> String? { try optional(key)?.string() }
    func optionalBool(_ key: String) throws(DatafileError) -> Bool? { try optional(key)?.bool() }
    func optionalArray(_ key: String) throws(DatafileError) -> [DatafileReader] { try optional(key)?.array() ?? [] }
}
