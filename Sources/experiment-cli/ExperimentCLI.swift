import ArgumentParser
import ExperimentRuntime
#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#endif

/// experiment-cli: the library's decisions from the command line.
///
/// Exit status: 0 success; 1 a datafile, request or decision failed (after reporting every problem);
/// 2 the command line itself is wrong (unknown option, missing argument, malformed --attr ...).
@main
struct ExperimentCLI: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "experiment-cli",
        abstract: "Validate datafiles and decide feature flags with libexperiment.",
        discussion: """
            Decisions are made by the same library code as libexperiment.so; no events are sent.

            Exit status: 0 success; 1 an invalid datafile or request, or a failed decision; 2 a usage error.
            """,
        version: LibraryVersion.string,
        subcommands: [ValidateCommand.self, DecideCommand.self, ExplainCommand.self, BatchCommand.self])

    /// ArgumentParser exits with EX_USAGE (64) on usage errors; this tool promises 2.
    static func main() {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch let error as CLIError {
            Console.error("experiment-cli: \(error.message)")
            terminate(error.status)
        } catch {
            let code = exitCode(for: error)
            let message = fullMessage(for: error)
            if code == .success {
                if !message.isEmpty { print(message) }
                terminate(0)
            }
            if !message.isEmpty { Console.error(message) }
            terminate(code == .validationFailure ? ExitStatus.usage : code.rawValue)
        }
    }
}

/// Flushes stdio and ends the process.
func terminate(_ status: Int32) -> Never {
    #if canImport(Glibc)
    Glibc.exit(status)
    #elseif canImport(Musl)
    Musl.exit(status)
    #endif
}

enum ExitStatus {
    static let failure: Int32 = 1
    static let usage: Int32 = 2
}

/// A failure the tool reports itself: "experiment-cli: <message>" on standard error, then `status`.
struct CLIError: Error {
    let message: String
    let status: Int32

    init(_ message: String, status: Int32 = ExitStatus.failure) {
        self.message = message
        self.status = status
    }
}
