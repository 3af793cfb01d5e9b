import ArgumentParser
import ExperimentCore

/// validate DATAFILE...: compiles each datafile as a client would and reports it.
struct ValidateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate",
        abstract: "Check datafiles: compile each as the library would and report every problem's place.",
        discussion: """
            Prints "ok <file>: revision R, N flags, M experiments" for a usable datafile, or one line \
            "error <file>: <kind>: <place>: <problem>" per problem (an entity with a problem is left out, so \
            what refers to it may be reported too). Exit status 1 when any datafile is invalid.
            """)

    @Argument(help: ArgumentHelp("Datafiles to check; - reads standard input.", valueName: "datafile"))
    var datafiles: [String]

    func validate() throws {
        if datafiles.isEmpty { throw ValidationError("give at least one datafile (- for standard input)") }
    }

    func run() throws {
        var invalid = 0
        for path in datafiles {
            let name = InputFile.displayName(path)
            let bytes: [UInt8]
            do {
                bytes = try InputFile.readAll(path, limit: DatafileCompiler.maxBytes)
            } catch {
                print("error \(error.message)")
                invalid += 1
                continue
            }
            let problems = bytes.withUnsafeBytes { DatafileCompiler.problems($0) }
            guard problems.isEmpty else {
                for problem in problems {
                    print("error \(name): \(kindName(problem.kind)): \(DatafileProblem.describe(problem.message, in: bytes))")
                }
                invalid += 1
                continue
            }
            let compiled: Result<ProjectConfig, DatafileError> = bytes.withUnsafeBytes { buffer in
                do throws(DatafileError) { return .success(try DatafileCompiler.compile(buffer)) }
                catch { return .failure(error) }
            }
            if case .success(let config) = compiled {
                let experiments = config.experiments.count { $0.kind == .experiment }
                print("ok \(name): revision \(config.revision), \(config.flags.count) flags, \(experiments) experiments")
            }
        }
        if invalid > 0 { throw ExitCode(ExitStatus.failure) }
    }

    private func kindName(_ kind: DatafileError.Kind) -> String {
        switch kind {
        case .invalidJSON: return "invalid JSON"
        case .unsupportedVersion: return "unsupported version"
        case .invalidDatafile: return "invalid datafile"
        case .tooLarge: return "too large"
        case .tooDeep: return "too deep"
        case .invalidUTF8: return "invalid UTF-8"
        }
    }
}
