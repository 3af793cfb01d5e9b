import ArgumentParser
import ExperimentCore
import ExperimentRuntime
#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#endif

/// batch: JSONL requests in, JSONL decisions out, streamed with one client.
struct BatchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "batch",
        abstract: "Decide flags for many users: JSONL requests in, JSONL decisions out.",
        discussion: """
            Each input line is a request {"user_id": "...", "attributes": {...}, "flags": [...]}; \
            "attributes" and "flags" are optional, a request's "flags" wins over --flag, and with \
            neither every flag is decided.

            Each request gives one output line {"user_id": ..., "decisions": {"<flag>": {...}}}, the \
            decisions as exp_decide_for_keys_json writes them. A line that is not a valid request gives \
            {"line": N, "error": "..."} instead; processing continues and the exit status is 1 at the \
            end. Blank lines are skipped.

            Input is streamed with one client, so files of any size run in constant memory. A progress \
            line (lines, lines/s) is drawn on standard error when it is a terminal.
            """)

    @OptionGroup var source: DatafileArgument

    @Option(name: .long, help: ArgumentHelp("JSONL requests; - is standard input.", valueName: "file"))
    var input: String = "-"

    @Option(name: .long, help: ArgumentHelp("Where decisions go; - is standard output.", valueName: "file"))
    var output: String = "-"

    @Option(name: .customLong("flag"),
            help: ArgumentHelp("A flag to decide for requests without \"flags\". Repeatable; default: every flag.",
                               valueName: "key"))
    var flags: [String] = []

    @OptionGroup var decideOptions: DecideOptionArguments

    func validate() throws {
        if source.datafile == "-" && input == "-" {
            throw ValidationError("--datafile - and --input - would both read standard input: give a file for one")
        }
    }

    func run() throws {
        let session = try Session(datafile: source.datafile)
        let options = try decideOptions.parsed()
        warnAboutUnknownFlags(flags, in: session.config)
        let inputFile = try InputFile.open(input)
        defer { if input != "-" { fclose(inputFile) } }
        let outputFile = try OutputFile.open(output)
        let outputName = output == "-" ? "<stdout>" : output

        let processor = BatchProcessor(session: session, options: options, defaultKeys: flags.isEmpty ? nil : FlagKeys(flags))
        // Drawn only on a terminal, and not over decisions going to that same terminal.
        let showProgress = Console.stderrIsTerminal && !(output == "-" && isatty(STDOUT_FILENO) != 0)
        let progress = Progress(enabled: showProgress, totalBytes: InputFile.regularFileSize(inputFile))
        var line: UnsafeMutablePointer<CChar>? = nil
        var capacity = 0
        defer { free(line) }
        var lineNumber = 0, bytesRead = 0, requests = 0, failures = 0
        var firstFailure: String? = nil

        while true {
            let length = getline(&line, &capacity, inputFile)
            if length < 0 { break }
            lineNumber += 1
            bytesRead += length
            var end = length
            while end > 0, let byte = Optional(UInt8(bitPattern: line![end - 1])),
                  byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r") || byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") {
                end -= 1
            }
            if end > 0 {
                requests += 1
                if let problem = processor.process(UnsafeRawBufferPointer(start: line, count: end), line: lineNumber) {
                    failures += 1
                    if firstFailure == nil { firstFailure = "line \(lineNumber): \(problem)" }
                }
                if processor.out.count >= 1 << 16 {
                    try OutputFile.write(processor.out.bytes, to: outputFile, name: outputName)
                    processor.out.removeAll()
                }
            }
            progress.update(lines: lineNumber, bytes: bytesRead)
        }
        if ferror(inputFile) != 0 { throw CLIError("\(InputFile.displayName(input)): \(systemError())") }
        try OutputFile.write(processor.out.bytes, to: outputFile, name: outputName)
        processor.out.removeAll()
        if fflush(outputFile) != 0 || ferror(outputFile) != 0 { throw CLIError("\(outputName): write failed: \(systemError())") }
        if output != "-" && fclose(outputFile) != 0 { throw CLIError("\(outputName): \(systemError())") }
        progress.finish(lines: lineNumber, bytes: bytesRead)
        if failures > 0 {
            Console.error("experiment-cli batch: \(grouped(failures)) of \(grouped(requests)) requests failed "
                          + "(first: \(firstFailure ?? "?"))")
            throw ExitCode(ExitStatus.failure)
        }
    }
}

/// The per-request work, with buffers reused from line to line.
final class BatchProcessor {
    let session: Session
    let options: DecideOptions
    let effective: DecideOptions
    let defaultKeys: FlagKeys?
    /// Output not yet written.
    let out = JSONBytes(reservingCapacity: 1 << 17)
    private var entries: [RequestAttributes.Entry] = []

    init(session: Session, options: DecideOptions, defaultKeys: FlagKeys?) {
        self.session = session
        self.options = options
        self.effective = session.effective(options)
        self.defaultKeys = defaultKeys
        entries.reserveCapacity(64)
    }

    /// Decides one request and appends its output line; on a bad request appends an error object
    /// instead and returns the problem.
    func process(_ text: UnsafeRawBufferPointer, line: Int) -> String? {
        let document: JSONDocument
        do {
            document = try JSONDocument.parse(text, what: "request", maxBytes: Limits.inputJSONBytes,
                                              maxDepth: Limits.jsonDepth)
        } catch {
            return fail(line, error.message)
        }
        let root = document.root
        guard root.kind == .object else { return fail(line, "request: expected a JSON object, got \(root.kindName)") }

        var known = 0
        guard let userValue = root.member("user_id") else { return fail(line, "request: missing \"user_id\"") }
        known += 1
        guard let user = userValue.stringBytes else {
            return fail(line, "user_id: expected a string, got \(userValue.kindName)")
        }
        guard user.count <= Limits.keyBytes else { return fail(line, "user_id: longer than \(Limits.keyBytes) bytes") }

        var attributesValue: JSONValue? = nil
        if let value = root.member("attributes") {
            known += 1
            if !value.isNull {
                guard value.kind == .object else {
                    return fail(line, "attributes: expected a JSON object, got \(value.kindName)")
                }
                attributesValue = value
            }
        }
        var flagsValue: JSONValue? = nil
        if let value = root.member("flags") {
            known += 1
            if !value.isNull {
                guard value.kind == .array else {
                    return fail(line, "flags: expected an array of flag keys, got \(value.kindName)")
                }
                flagsValue = value
            }
        }
        if root.count > known {
            let unknown = root.members.first { $0.key != "user_id" && $0.key != "attributes" && $0.key != "flags" }?.key ?? "?"
            return fail(line, "request: unknown key \"\(unknown)\" (known: user_id, attributes, flags)")
        }

        entries.removeAll(keepingCapacity: true)
        if let attributesValue {
            guard attributesValue.count <= Limits.attributes else {
                return fail(line, "attributes: more than \(Limits.attributes) keys")
            }
            for (key, value) in attributesValue.members {
                guard key.utf8.count <= Limits.keyBytes else {
                    return fail(line, "attributes: key longer than \(Limits.keyBytes) bytes")
                }
                let attribute: AttributeValue
                switch value.kind {
                case .null: attribute = .null
                case .bool: attribute = .bool(value.bool!)
                case .int: attribute = .int(value.int64!)
                case .double: attribute = .double(value.double!)
                case .string:
                    let bytes = value.stringBytes!
                    guard bytes.count <= Limits.stringBytes else {
                        return fail(line, "attributes.\(key): longer than \(Limits.stringBytes) bytes")
                    }
                    attribute = .string(bytes)
                case .array, .object:
                    return fail(line, "attributes.\(key): expected a string, number, boolean or null, got \(value.kindName)")
                }
                entries.append(RequestAttributes.Entry(key: key, value: attribute))
            }
        }
        if let flagsValue {
            for index in 0..<flagsValue.count {
                let element = flagsValue[index]
                guard let key = element.stringBytes else {
                    return fail(line, "flags[\(index)]: expected a string, got \(element.kindName)")
                }
                guard key.count <= Limits.keyBytes else {
                    return fail(line, "flags[\(index)]: longer than \(Limits.keyBytes) bytes")
                }
            }
        }

        out.raw("{")
        out.key("user_id")
        out.string(user)
        out.raw(",")
        out.key("decisions")
        out.raw("{")
        var first = true
        let attributes = RequestAttributes(entries: entries)
        let session = self.session
        let effective = self.effective
        let out = self.out
        let write = { (key: UTF8Text, result: DecideResult?) in
            if !first { out.raw(",") }
            first = false
            out.string(key)
            out.raw(":")
            session.writeDecision(result, key: key, effective: effective, into: out)
        }
        if let flagsValue {
            session.decide(user: user, attributes: attributes, options: options, keyCount: flagsValue.count,
                           key: { flagsValue[$0].stringBytes! }, write)
        } else {
            session.decide(user: user, attributes: attributes, options: options, keys: defaultKeys, write)
        }
        out.raw("}}\n")
        withExtendedLifetime(document) {}
        return nil
    }

    private func fail(_ line: Int, _ message: String) -> String {
        out.raw("{")
        out.key("line")
        out.int(line)
        out.raw(",")
        out.key("error")
        out.string(message)
        out.raw("}\n")
        return message
    }
}

/// A one-line progress display on standard error (only when it is a terminal).
final class Progress {
    let enabled: Bool
    let totalBytes: Int?
    let start = monotonicSeconds()
    private var lastDraw = 0.0

    init(enabled: Bool, totalBytes: Int?) {
        self.enabled = enabled
        self.totalBytes = totalBytes
    }

    @inline(__always)
    func update(lines: Int, bytes: Int) {
        guard enabled, lines & 255 == 0 else { return }
        let now = monotonicSeconds()
        guard now - lastDraw >= 0.2 else { return }
        lastDraw = now
        draw(lines: lines, bytes: bytes, now: now)
    }

    func finish(lines: Int, bytes: Int) {
        guard enabled else { return }
        draw(lines: lines, bytes: bytes, now: monotonicSeconds())
        fputs("\n", stderr)
    }

    private func draw(lines: Int, bytes: Int, now: Double) {
        let elapsed = max(now - start, 1e-6)
        var text = "\r\u{1B}[K"
        if let totalBytes, totalBytes > 0 {
            let fraction = min(1.0, Double(bytes) / Double(totalBytes))
            let width = 30
            let filled = Int(fraction * Double(width))
            text += "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled) + "] "
            text += "\(Int(fraction * 100))%  "
        }
        text += "\(grouped(lines)) lines  \(grouped(Int(Double(lines) / elapsed))) lines/s"
        fputs(text, stderr)
    }
}
