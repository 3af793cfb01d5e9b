import ExperimentCore
import ExperimentKit
import ExperimentRuntime

/// Sigma's errors, typed.
public enum SigmaError: Error, Sendable, Equatable {
    /// `Sigma.initializeClient` with a tag an open client already has.
    case initializationOfExistingClient(tag: String)
    /// The client has no configuration (none could be fetched within the wait).
    case configNotAvailable
    /// No experiment, flag, variable, parameter or holdout of that name.
    case notFound(String)
    /// The value asked for has another type (e.g. an Int read of a string variable).
    case typeMismatch(String)
    case other(ExperimentError)

    init(_ error: ClientError) {
        switch error.code {
        case .notReady: self = .configNotAvailable
        case .notFound, .unknownFlag, .unknownExperiment, .unknownVariation: self = .notFound(error.message)
        case .typeMismatch: self = .typeMismatch(error.message)
        default: self = .other(ExperimentError(error))
        }
    }
}

public typealias SigmaSuccessCallback<T> = @Sendable (T) -> Void
public typealias SigmaErrorCallback = @Sendable (SigmaError) -> Void

/// The types a flag value or an experiment parameter is read as: Bool, Int, Double, String, [String: Any].
/// SendableMetatype: the callback forms read the type on a background thread.
public protocol SigmaPropertyType: SendableMetatype {
    /// Which of the runtime's typed accessors reads this type.
    static var sigmaValueType: SigmaValueType { get }
    /// The runtime's value as this type (nil: not this type).
    init?(sigmaValue: SigmaValue)
}

extension Bool: SigmaPropertyType {
    public static var sigmaValueType: SigmaValueType { .bool }
    public init?(sigmaValue: SigmaValue) {
        guard case .bool(let value) = sigmaValue else { return nil }
        self = value
    }
}

extension Int: SigmaPropertyType {
    public static var sigmaValueType: SigmaValueType { .int }
    public init?(sigmaValue: SigmaValue) {
        guard case .int(let value) = sigmaValue, let fitted = Int(exactly: value) else { return nil }
        self = fitted
    }
}

extension Double: SigmaPropertyType {
    public static var sigmaValueType: SigmaValueType { .double }
    public init?(sigmaValue: SigmaValue) {
        guard case .double(let value) = sigmaValue else { return nil }
        self = value
    }
}

extension String: SigmaPropertyType {
    public static var sigmaValueType: SigmaValueType { .string }
    public init?(sigmaValue: SigmaValue) {
        guard case .string(let value) = sigmaValue else { return nil }
        self = value
    }
}

/// A JSON variable as Sigma's [String: Any].
extension Dictionary: SigmaPropertyType where Key == String, Value == Any {
    public static var sigmaValueType: SigmaValueType { .json }
    public init?(sigmaValue: SigmaValue) {
        guard case .json(let text) = sigmaValue, let members = JSON.parse(text).objectValue else { return nil }
        self = members.mapValues(\.anyValue)
    }
}

/// A JSON variable as ExperimentKit's typed JSON value (Sendable, unlike [String: Any]).
extension JSON: SigmaPropertyType {
    public static var sigmaValueType: SigmaValueType { .json }
    public init?(sigmaValue: SigmaValue) {
        guard case .json(let text) = sigmaValue else { return nil }
        self = JSON.parse(text)
    }
}

extension JSON {
    /// The value as Sigma's untyped form: Bool, Int, Double, String, [Any], [String: Any] or NSNull-free nil.
    var anyValue: Any {
        switch self {
        case .null: return Optional<Any>.none as Any
        case .bool(let value): return value
        case .int(let value): return Int(exactly: value) ?? Double(value)
        case .double(let value): return value
        case .string(let value): return value
        case .array(let values): return values.map(\.anyValue)
        case .object(let members): return members.mapValues(\.anyValue)
        }
    }
}
