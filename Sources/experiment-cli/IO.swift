import ExperimentCore
#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#endif

/// Standard streams through C stdio (no Foundation).
enum Console {
    static func error(_ text: String) {
        fputs(text, stderr)
        fputs("\n", stderr)
    }

    static func warning(_ text: String) { error("experiment-cli: warning: \(text)") }

    static var stderrIsTerminal: Bool { isatty(STDERR_FILENO) != 0 }
}

/// Reading inputs named on the command line ("-" is standard input).
enum InputFile {
    static func displayName(_ path: String) -> String { path == "-" ? "<stdin>" : path }

    /// The whole file, refusing more than `limit` bytes (reads at most limit + 1).
    static func readAll(_ path: String, limit: Int) throws(CLIError) -> [UInt8] {
        let name = displayName(path)
        let isStdin = path == "-"
        guard let file: UnsafeMutablePointer<FILE> = isStdin ? stdin : fopen(path, "rb") else {
            throw CLIError("\(name): \(systemError())")
        }
        defer { if !isStdin { fclose(file) } }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
            if count > 0 {
                bytes.append(contentsOf: chunk[0..<count])
                if bytes.count > limit { throw CLIError("\(name): larger than the limit of \(limit) bytes") }
            }
            if count < chunk.count {
                if ferror(file) != 0 { throw CLIError("\(name): \(systemError())") }
                break
            }
        }
        return bytes
    }

    /// Opens a file for streaming ("-": standard input).
    static func open(_ path: String) throws(CLIError) -> UnsafeMutablePointer<FILE> {
        if path == "-" { return stdin }
        guard let file = fopen(path, "rb") else { throw CLIError("\(path): \(systemError())") }
        return file
    }

    /// The size of a regular file behind `file`, or nil (a pipe, a terminal).
    static func regularFileSize(_ file: UnsafeMutablePointer<FILE>) -> Int? {
        var info = stat()
        guard fstat(fileno(file), &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return Int(info.st_size)
    }
}

/// Writing outputs named on the command line ("-" is standard output).
enum OutputFile {
    static func open(_ path: String) throws(CLIError) -> UnsafeMutablePointer<FILE> {
        if path == "-" { return stdout }
        guard let file = fopen(path, "wb") else { throw CLIError("\(path): \(systemError())") }
        return file
    }

    /// Writes `bytes` entirely or throws (disk full, closed pipe...).
    static func write(_ bytes: UnsafeBufferPointer<UInt8>, to file: UnsafeMutablePointer<FILE>, name: String) throws(CLIError) {
        guard !bytes.isEmpty else { return }
        let written = fwrite(bytes.baseAddress, 1, bytes.count, file)
        if written != bytes.count { throw CLIError("\(name): write failed: \(systemError())") }
    }
}

func systemError() -> String { String(cString: strerror(errno)) }

/// Seconds on a monotonic clock.
func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

/// 1234567 -> "1,234,567".
func grouped(_ value: Int) -> String {
    let digits = String(value.magnitude)
    var out = value < 0 ? "-" : ""
    for (index, digit) in digits.enumerated() {
        if index > 0 && (digits.count - index) % 3 == 0 { out.append(",") }
        out.append(digit)
    }
    return out
}
