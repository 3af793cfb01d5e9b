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
    /// Where this value is, for error messages. Rendered only when a message needs it: building
    /// "experiments[12].variations[3].key" for every value read made compiling allocate several times
    /// per field.
    private let place: DatafilePlace

    init(_ value: JSONValue, path: String) {
        self.init(value, place: DatafilePlace(above: nil, step: .named(path)))
    }

    private init(_ value: JSONValue, place: DatafilePlace) {
        self.value = value
        self.place = place
    }

    var path: String { place.rendered }

    func fail(_ problem: String) -> DatafileError {
        let path = self.path
        return DatafileError(.invalidDatafile, path.isEmpty ? "datafile: \(problem)" : "datafile: \(path): \(problem)")
    }

    func member(_ key: String) -> DatafileReader? {
        guard let found = value.member(key) else { return nil }
        return DatafileReader(found, place: place.child(.member(key)))
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
        let parent = place.node()
        return value.elements.enumerated().map {
            DatafileReader($0.element, place: DatafilePlace(above: parent, step: .element($0.offset)))
        }
    }

    func object() throws(DatafileError) -> [(key: String, value: DatafileReader)] {
        guard value.kind == .object else { throw fail("expected an object, got \(value.kindName)") }
        let parent = place.node()
        return value.members.map { ($0.key, DatafileReader($0.value, place: DatafilePlace(above: parent, step: .member($0.key)))) }
    }

    func requiredString(_ key: String) throws(DatafileError) -> String { try required(key).string() }

    /// An entity's "key": callers name entities by it, so it must fit the API's key limit.
    func requiredKey() throws(DatafileError) -> String {
        let field = try required("key")
        let key = try field.string()
        guard key.utf8.count <= DatafileCompiler.maxKeyBytes else {
            throw field.fail("longer than \(DatafileCompiler.maxKeyBytes) bytes, the limit for keys callers pass")
        }
        // Callers pass keys as C strings: a key with a NUL ("\u0000") could never be named.
        guard !key.utf8.contains(0) else {
            throw field.fail("contains a NUL character (\\u0000), which a key callers pass cannot hold")
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

/// A value's place in the datafile: its step from its parent ("key" or [index]), its parent's step, and a
/// shared node for everything above. Reading a member of a value (the common case: "id", "key" of an
/// entity) makes no allocation; a node is made only when a member of a member is read, or for an array
/// or object whose children are listed.
struct DatafilePlace {
    enum Step {
        /// A whole path given as text (the root, or a document nested in a string field).
        case named(String)
        case member(String)
        case element(Int)
    }

    final class Node {
        let place: DatafilePlace
        init(_ place: DatafilePlace) { self.place = place }
    }

    let above: Node?
    let parentStep: Step?
    let step: Step

    init(above: Node?, parentStep: Step? = nil, step: Step) {
        self.above = above
        self.parentStep = parentStep
        self.step = step
    }

    func child(_ childStep: Step) -> DatafilePlace {
        guard let parentStep else { return DatafilePlace(above: above, parentStep: step, step: childStep) }
        return DatafilePlace(above: Node(DatafilePlace(above: above, step: parentStep)), parentStep: step, step: childStep)
    }

    /// This place as a parent of listed children.
    func node() -> Node { Node(self) }

    var rendered: String {
        var text = above?.place.rendered ?? ""
        if let parentStep { Self.append(parentStep, to: &text) }
        Self.append(step, to: &text)
        return text
    }

    private static func append(_ step: Step, to text: inout String) {
        switch step {
        case .named(let name), .member(let name): text += text.isEmpty ? name : "." + name
        case .element(let index): text += "[\(index)]"
        }
    }
}
