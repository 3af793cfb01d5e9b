import ExperimentRuntime

/// A call that failed: `code` for programs (the C API's `exp_status` numbers), `message` for people.
/// Thrown by starting a client and tracking, as the Optimizely Swift SDK throws; decisions never throw
/// (a decision that cannot be made comes back disabled, with the reason in `reasons`).
public struct ExperimentError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The runtime's codes themselves (one list: a code added there is one here, e.g. `deliveryFailed`).
    public typealias Code = ErrorCode

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    package init(_ error: ClientError) {
        self.init(error.code, error.message)
    }

    public var description: String { "\(code) (\(code.rawValue)): \(message)" }
}

/// `body`'s result, with the runtime's error as this module's.
@inline(__always)
package func translated<T>(_ body: () throws(ClientError) -> T) throws(ExperimentError) -> T {
    do throws(ClientError) { return try body() } catch { throw ExperimentError(error) }
}
