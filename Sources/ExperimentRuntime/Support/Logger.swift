import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Message severities, as the C API numbers them (EXP_LOG_*).
public enum LogLevel: Int32, Sendable, Comparable {
    case error = 1, warning = 2, info = 3, debug = 4

    public init?(name: String) {
        switch name {
        case "error": self = .error
        case "warning": self = .warning
        case "info": self = .info
        case "debug": self = .debug
        default: return nil
        }
    }

    public var name: String {
        switch self {
        case .error: return "error"
        case .warning: return "warning"
        case .info: return "info"
        case .debug: return "debug"
        }
    }

    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// Where a client's messages go: the host's sink when one is installed, else standard error.
/// A message is built only when its level is enabled (one atomic load otherwise).
public final class Logger: @unchecked Sendable {
    public typealias Sink = @Sendable (LogLevel, String) -> Void

    private let lock = Lock()
    private var sink: Sink?
    private let threshold: Atomic<Int32>

    public init(level: LogLevel) { threshold = Atomic(level.rawValue) }

    public var level: LogLevel {
        get { LogLevel(rawValue: threshold.load(ordering: .relaxed)) ?? .warning }
        set { threshold.store(newValue.rawValue, ordering: .relaxed) }
    }

    /// Installs the host's sink (nil: back to standard error).
    public func setSink(_ sink: Sink?) { lock.withLock { self.sink = sink } }

    @inline(__always)
    public func isEnabled(_ level: LogLevel) -> Bool { level.rawValue <= threshold.load(ordering: .relaxed) }

    public func log(_ level: LogLevel, _ message: @autoclosure () -> String) {
        guard isEnabled(level) else { return }
        let text = message()
        let current: Sink? = lock.withLock { sink }
        if let current {
            current(level, text)
        } else {
            var line = "libexperiment [\(level.name)] \(text)\n"
            line.withUTF8 { _ = write(STDERR_FILENO, $0.baseAddress, $0.count) }
        }
    }

    /// A secret (SDK key, token, API key) as logs may show it: its first four characters and its length.
    public static func redacted(_ secret: String) -> String {
        let visible = secret.count > 8 ? String(secret.prefix(4)) : ""
        return "\(visible)… (\(secret.count) characters)"
    }
}
