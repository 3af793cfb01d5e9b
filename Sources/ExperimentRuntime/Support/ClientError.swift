/// The error codes of the C API (exp_status), shared by every layer above the core.
public enum ErrorCode: Int32, Sendable {
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
    case deliveryFailed = -28
    case internalError = -99
}

/// A failed call: a code for programs and a message for people.
public struct ClientError: Error, Sendable {
    public let code: ErrorCode
    public let message: String

    public init(_ code: ErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }
}

import ExperimentCore

extension ClientError {
    public init(_ error: DatafileError) {
        switch error.kind {
        case .invalidJSON: self.init(.invalidJSON, error.message)
        case .unsupportedVersion: self.init(.unsupportedVersion, error.message)
        case .invalidDatafile: self.init(.invalidDatafile, error.message)
        case .tooLarge: self.init(.tooLarge, error.message)
        case .tooDeep: self.init(.tooDeep, error.message)
        case .invalidUTF8: self.init(.invalidUTF8, error.message)
        }
    }

    public init(_ error: JSONError) {
        switch error {
        case .malformed(let m): self.init(.invalidJSON, m)
        case .tooLarge(let m): self.init(.tooLarge, m)
        case .tooDeep(let m): self.init(.tooDeep, m)
        case .invalidUTF8(let m): self.init(.invalidUTF8, m)
        }
    }
}
