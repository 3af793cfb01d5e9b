import ArgumentParser
import ExperimentCore

/// validate DATAFILE...: compiles each datafile as a client would and reports it.
struct ValidateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate",
        abstract: "Check datafiles: compile each as the library would and report every problem's place.",
        discussion: """
            Each problem has a severity. An error refuses the datafile (the reference SDK refuses it too: \
            not JSON, its JSON schema, an unsupported version, data it cannot build a config from); a \
            warning is something the reference accepts and decides anyway (a stale audience id, a range \
            past 10000): a client uses the datafile and decides as the reference does.

            Prints one line per problem, "error <file>: <kind>: <place>: <problem>" or \
            "warning <file>: <place>: <problem>" (an entity with an error is left out, so what refers to \
            it may be reported too), then "ok <file>: revision R, N flags, M experiments[, K warnings]" \
            for a usable datafile. With --json, one object: {"datafiles": [{"file", "valid", "revision", \
            "flags", "experiments", "problems": [{"severity", "kind", "place", "message"}]}], "errors", \
            "warnings"}.

            Exit status 1 when any datafile has an error, or with --strict a warning; else 0.
            """)

    @Argument(help: ArgumentHelp("Datafiles to check; - reads standard input.", valueName: "datafile"))
    var datafiles: [String]

    @ArgumentParser.Flag(name: .long, help: "Print one JSON object instead of lines.")
    var json = false

    @ArgumentParser.Flag(name: .long, help: "Fail (exit status 1) on warnings too.")
    var strict = false

    func validate() throws {
        if datafiles.isEmpty { throw ValidationError("give at least one datafile (- for standard input)") }
    }

    /// One problem as reported: `place` empty when the problem is not one entity's field.
    struct Finding {
        let severity: DatafileError.Severity
        let kind: String
        let place: String
        let message: String
    }

    /// What one datafile came to.
    struct Report {
        let file: String
        var findings: [Finding] = []
        var config: ProjectConfig? = nil
    }

    func run() throws {
        let reports = datafiles.map(check)
        if json { printJSON(reports) } else { printLines(reports) }
        let errors = reports.reduce(0) { $0 + $1.findings.count { $0.severity == .error } }
        let warnings = reports.reduce(0) { $0 + $1.findings.count { $0.severity == .warning } }
        if errors > 0 || (strict && warnings > 0) { throw ExitCode(ExitStatus.failure) }
    }

    private func check(_ path: String) -> Report {
        var report = Report(file: InputFile.displayName(path))
        let bytes: [UInt8]
        do {
            bytes = try InputFile.readAll(path, limit: DatafileCompiler.maxBytes)
        } catch {
            // The message names the file already ("<file>: No such file or directory").
            var message = error.message
            if message.hasPrefix(report.file + ": ") { message.removeFirst(report.file.count + 2) }
            report.findings.append(Finding(severity: .error, kind: "io", place: "", message: message))
            return report
        }
        let problems = bytes.withUnsafeBytes { DatafileCompiler.problems($0) }
        report.findings = problems.map { problem in
            Finding(severity: problem.severity, kind: kindName(problem.kind), place: problem.place ?? "",
                    message: DatafileProblem.describe(problem.message, in: bytes))
        }
        guard !problems.contains(where: { $0.severity == .error }) else { return report }
        let compiled: Result<ProjectConfig, DatafileError> = bytes.withUnsafeBytes { buffer in
            do throws(DatafileError) { return .success(try DatafileCompiler.compile(buffer)) }
            catch { return .failure(error) }
        }
        switch compiled {
        case .success(let config): report.config = config
        case .failure(let error):
            // Validation and compilation agree; should they not, the refusal is what a client sees.
            report.findings.append(Finding(severity: .error, kind: kindName(error.kind), place: error.place ?? "",
                                           message: DatafileProblem.describe(error.message, in: bytes)))
        }
        return report
    }

    private func printLines(_ reports: [Report]) {
        for report in reports {
            for finding in report.findings {
                switch (finding.severity, finding.kind) {
                case (.error, "io"): print("error \(report.file): \(finding.message)")
                case (.error, _): print("error \(report.file): \(finding.kind): \(finding.message)")
                case (.warning, _): print("warning \(report.file): \(finding.message)")
                }
            }
            guard let config = report.config else { continue }
            let experiments = config.experiments.count { $0.kind == .experiment }
            let warnings = config.warnings.count
            print("ok \(report.file): revision \(config.revision), \(config.flags.count) flags, \(experiments) experiments"
                  + (warnings > 0 ? ", \(warnings) warning\(warnings == 1 ? "" : "s")" : ""))
        }
    }

    private func printJSON(_ reports: [Report]) {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("datafiles")
        writer.beginArray()
        var errors = 0, warnings = 0
        for report in reports {
            writer.beginObject()
            writer.field("file", report.file)
            writer.field("valid", report.config != nil)
            writer.field("revision", report.config?.revision)
            writer.key("flags"); report.config.map { writer.int(Int64($0.flags.count)) } ?? writer.null()
            writer.key("experiments")
            report.config.map { writer.int(Int64($0.experiments.count { $0.kind == .experiment })) } ?? writer.null()
            writer.key("problems")
            writer.beginArray()
            for finding in report.findings {
                if finding.severity == .error { errors += 1 } else { warnings += 1 }
                writer.beginObject()
                writer.field("severity", finding.severity.rawValue)
                writer.field("kind", finding.kind)
                writer.field("place", finding.place)
                writer.field("message", finding.message)
                writer.endObject()
            }
            writer.endArray()
            writer.endObject()
        }
        writer.endArray()
        writer.key("errors"); writer.int(Int64(errors))
        writer.key("warnings"); writer.int(Int64(warnings))
        writer.endObject()
        print(writer.text)
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
