/// A problem of a datafile. `message` names the place, e.g.
/// `experiments[2].trafficAllocation[0].endOfRange: expected an integer, got a string`.
///
/// An `.error` refuses the datafile: the reference SDK refuses it too (not JSON, its JSON schema, an
/// unsupported version, a datafile its config construction raises on). A `.warning` is something the
/// reference accepts and decides anyway (a stale audience id, a range past 10000): the datafile is
/// accepted, decided as the reference decides it, and the warning is reported (log, datafile status,
/// `experiment-cli validate`).
public struct DatafileError: Error, Equatable, Sendable {
    public enum Kind: Sendable, Equatable {
        case invalidJSON, unsupportedVersion, invalidDatafile, tooLarge, tooDeep, invalidUTF8
    }

    public enum Severity: String, Sendable, Equatable {
        case error, warning
    }

    public let kind: Kind
    /// The whole message: "datafile: <place>: <problem>".
    public let message: String
    public let severity: Severity
    /// Where in the datafile ("experiments[2].trafficAllocation[0].endOfRange"), when one entity's field.
    public let place: String?

    public init(_ kind: Kind, _ message: String, severity: Severity = .error, place: String? = nil) {
        self.kind = kind
        self.message = message
        self.severity = severity
        self.place = place
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
///
/// A reader is just a view of a json-c value: its place ("experiments[12].variations[3].key") is worked
/// out only when a message needs it, by searching the document from its root for the value's container
/// (json-c objects have no parent links). Carrying the place along (a chain of steps per value read) would
/// cost allocations and reference counting on every field of a datafile that is nearly always valid.
struct DatafileReader {
    let value: JSONValue

    /// A reader of a datafile's root.
    init(_ value: JSONValue) {
        self.value = value
    }

    /// A reader of a document nested in a string of another (an audience's "conditions"): places
    /// inside it continue the place of that string.
    init(_ value: JSONValue, within field: JSONValue) {
        value.document.enclosingField = field
        self.value = value
    }

    var path: String { DatafileReader.path(of: value) }

    func fail(_ problem: String) -> DatafileError {
        let path = self.path
        return DatafileError(.invalidDatafile, path.isEmpty ? "datafile: \(problem)" : "datafile: \(path): \(problem)",
                             place: path)
    }

    /// Something the reference accepts and decides anyway, reported with this reader's place.
    func warning(_ problem: String) -> DatafileError {
        let path = self.path
        return DatafileError(.invalidDatafile, path.isEmpty ? "datafile: \(problem)" : "datafile: \(path): \(problem)",
                             severity: .warning, place: path)
    }

    func member(_ key: String) -> DatafileReader? {
        guard let found = value.member(key) else { return nil }
        return DatafileReader(found)
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

    func array() throws(DatafileError) -> DatafileElements {
        guard value.kind == .array else { throw fail("expected an array, got \(value.kindName)") }
        return DatafileElements(value)
    }

    func object() throws(DatafileError) -> [(key: String, value: DatafileReader)] {
        guard value.kind == .object else { throw fail("expected an object, got \(value.kindName)") }
        var members: [(key: String, value: DatafileReader)] = []
        members.reserveCapacity(value.count)
        value.forEachMember { name, member in members.append((String(cString: name), DatafileReader(member))) }
        return members
    }

    func requiredString(_ key: String) throws(DatafileError) -> String { try required(key).string() }

    /// An entity's "key": callers name entities by it, so it must fit the API's key limit.
    func requiredKey() throws(DatafileError) -> String {
        let field = try required("key")
        guard let bytes = field.value.stringBytes else { throw field.fail("expected a string, got \(field.value.kindName)") }
        guard bytes.count <= DatafileCompiler.maxKeyBytes else {
            throw field.fail("longer than \(DatafileCompiler.maxKeyBytes) bytes, the limit for keys callers pass")
        }
        // A key with a NUL ("\u0000") is kept, as the reference keeps it: the length-delimited calls
        // (exp_decide_n, ...) can name it.
        return String(decoding: bytes, as: UTF8.self)
    }
    func requiredArray(_ key: String) throws(DatafileError) -> DatafileElements { try required(key).array() }

    /// An optional member; JSON null counts as absent.
    func optional(_ key: String) -> DatafileReader? {
        guard let found = member(key), !found.value.isNull else { return nil }
        return found
    }

    func optionalString(_ key: String) throws(DatafileError) -> String? { try optional(key)?.string() }
    func optionalBool(_ key: String) throws(DatafileError) -> Bool? { try optional(key)?.bool() }
    func optionalArray(_ key: String) throws(DatafileError) -> DatafileElements { try optional(key)?.array() ?? .none }

    /// The place of `target` in its document: each step down from the root ("name" or "[index]",
    /// joined as "a.b[2].c"), after the place of the string it was read from for a nested document, or
    /// the element's place for one element of a datafile read element by element.
    static func path(of target: JSONValue) -> String {
        let document = target.document
        var text = document.enclosingField.map { path(of: $0) }
            ?? document.section.map { "\($0)[\(document.sectionIndex)]" } ?? ""
        for step in target.steps ?? [] {
            switch step {
            case .member(let name): text += (text.isEmpty ? "" : ".") + String(cString: name)
            case .element(let position): text += "[\(position)]"
            }
        }
        return text
    }
}

/// The elements of a JSON array as readers, made from json-c's array as they are read: a datafile has
/// thousands of small arrays, and a Swift array of readers for each cost an allocation and its reference
/// counting in every start.
struct DatafileElements: RandomAccessCollection {
    /// The array (nil for no elements).
    private let array: JSONValue?
    let startIndex = 0
    let endIndex: Int

    /// No elements.
    static var none: DatafileElements { DatafileElements(nil) }

    /// The elements of `array`, a JSON array (or none).
    init(_ array: JSONValue?) {
        self.array = array
        endIndex = array?.count ?? 0
    }

    subscript(position: Int) -> DatafileReader { DatafileReader(array![position]) }
}
