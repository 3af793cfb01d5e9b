import ExperimentCore

/// The options a client is created with (one JSON object in C; keyword arguments in Python).
/// Unknown keys are refused, so a typo never silently falls back to a default.
public struct ClientOptions: Sendable {
    public var sdkKey: String? = nil
    public var defaultDecideOptions: DecideOptions = []
    public var userStoreCapacity: Int = 10_000
    public var logLevel: LogLevel = .warning

    public static let maxUserStoreCapacity = 10_000_000

    public init() {}

    public static func parse(json text: UnsafeRawBufferPointer?) throws(ClientError) -> ClientOptions {
        var options = ClientOptions()
        guard let text, text.count > 0 else { return options }
        let document: JSONDocument
        do {
            document = try JSONDocument.parse(text, what: "options", maxBytes: 1 << 20, maxDepth: 64)
        } catch {
            throw ClientError(error)
        }
        let root = document.root
        guard root.kind == .object else {
            throw ClientError(.invalidOption, "options: expected a JSON object, got \(root.kindName)")
        }
        for (key, value) in root.members {
            switch key {
            case "sdk_key":
                guard let string = value.string else { throw wrongType(key, "a string", value) }
                options.sdkKey = string
            case "default_decide_options":
                options.defaultDecideOptions = try decideOptions(value, what: "options.default_decide_options")
            case "user_store_capacity":
                guard let number = value.int64, number >= 1, number <= Int64(maxUserStoreCapacity) else {
                    throw ClientError(.invalidOption,
                                      "options.user_store_capacity: expected an integer from 1 to \(maxUserStoreCapacity)")
                }
                options.userStoreCapacity = Int(number)
            case "log_level":
                guard let name = value.string, let level = LogLevel(name: name) else {
                    throw ClientError(.invalidOption,
                                      "options.log_level: expected \"error\", \"warning\", \"info\" or \"debug\"")
                }
                options.logLevel = level
            default:
                throw ClientError(.invalidOption, "options: unknown option \"\(key)\" (known: sdk_key, "
                                  + "default_decide_options, user_store_capacity, log_level)")
            }
        }
        return options
    }

    /// Decide option names in a JSON array -> the bit set.
    public static func decideOptions(_ value: JSONValue, what: String) throws(ClientError) -> DecideOptions {
        guard value.kind == .array else { throw ClientError(.invalidOption, "\(what): expected an array of option names") }
        var options: DecideOptions = []
        for element in value.elements {
            guard let name = element.string, let option = DecideOptions(name: name) else {
                let known = DecideOptions.names.map(\.0).joined(separator: ", ")
                throw ClientError(.invalidOption, "\(what): unknown decide option \(element.jsonText) (known: \(known))")
            }
            options.insert(option)
        }
        return options
    }

    private static func wrongType(_ key: String, _ expected: String, _ value: JSONValue) -> ClientError {
        ClientError(.invalidOption, "options.\(key): expected \(expected), got \(value.kindName)")
    }
}
