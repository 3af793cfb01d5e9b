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

    private let lock = Lock(forkGuarded: true)
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

    /// The thread inside `holdingMessages`, and what it logged meanwhile.
    private var holdingThread: pthread_t?
    private var heldMessages: [(LogLevel, String)] = []

    /// Runs `body` with this thread's messages kept back and delivered when it returns. For code that holds
    /// a lock a host thread may wait on: the host's log callback must not run there (a Python callback needs
    /// the GIL, which a thread blocked in exp_decide on that lock holds).
    func holdingMessages<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        lock.withLock { holdingThread = pthread_self() }
        defer {
            let held: [(LogLevel, String)] = lock.withLock {
                holdingThread = nil
                defer { heldMessages = [] }
                return heldMessages
            }
            for (level, text) in held { deliver(level, text) }
        }
        return try body()
    }

    /// Log lines carry datafile keys, user ids and URLs: a CR or LF among them must not forge a line of
    /// its own in the host's log, so C0 controls and DEL are written as escapes (\n, \r, \t, \xNN).
    static func escapingControlCharacters(_ text: String) -> String {
        guard text.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) else { return text }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count + 8)
        let hex = Array("0123456789abcdef".utf8)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\n"): bytes += Array("\\n".utf8)
            case UInt8(ascii: "\r"): bytes += Array("\\r".utf8)
            case UInt8(ascii: "\t"): bytes += Array("\\t".utf8)
            case 0..<0x20, 0x7F: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "x"), hex[Int(byte >> 4)], hex[Int(byte & 15)]]
            default: bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    public func log(_ level: LogLevel, _ message: @autoclosure () -> String) {
        guard isEnabled(level) else { return }
        let text = Self.escapingControlCharacters(message())
        let held: Bool = lock.withLock {
            guard let holder = holdingThread, pthread_equal(holder, pthread_self()) != 0 else { return false }
            heldMessages.append((level, text))
            return true
        }
        if !held { deliver(level, text) }
    }

    private func deliver(_ level: LogLevel, _ text: String) {
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
