import ExperimentRuntime

/// A call that failed: `code` for programs (the C API's `exp_status` numbers), `message` for people.
/// Thrown by starting a client and tracking, as the Optimizely Swift SDK throws; decisions never throw
/// (a decision that cannot be made comes back disabled, with the reason in `reasons`).
public struct ExperimentError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: Int32, Sendable {
        case invalidArgument = -1
        case invalidJSON = -2
        case invalidOption = -3
        case invalidDatafile = -4
        case unsupportedVersion = -5
        case notReady = -6
        case unknownFlag = -7
        case unknownExperiment = -8
        case unknownEvent = -9
        case unknownVariation = -10
        case notTargeted = -11
        case notAllocated = -12
        case invalidUTF8 = -13
        case tooLarge = -14
        case tooDeep = -15
        case invalidEventTags = -16
        case closed = -17
        case bufferTooSmall = -18
        case timeout = -19
        case tagInUse = -20
        case typeMismatch = -21
        case queueFull = -22
        case storeFailed = -23
        case odpNotEnabled = -24
        case invalidUserId = -25
        case fetchFailed = -26
        case notFound = -27
        case internalError = -99
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    init(_ error: ClientError) {
        self.init(Code(rawValue: error.code.rawValue) ?? .internalError, error.message)
    }

    init(runtime code: ErrorCode, _ message: String) {
        self.init(Code(rawValue: code.rawValue) ?? .internalError, message)
    }

    public var description: String { "\(code) (\(code.rawValue)): \(message)" }
}

/// `body`'s result, with the runtime's error as this module's.
@inline(__always)
func translated<T>(_ body: () throws(ClientError) -> T) throws(ExperimentError) -> T {
    do throws(ClientError) { return try body() } catch { throw ExperimentError(error) }
}
