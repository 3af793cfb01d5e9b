import ArgumentParser
import ExperimentCore
import ExperimentRuntime

/// explain: a decision with every reason the decision service gives (INCLUDE_REASONS), numbered.
struct ExplainCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "explain",
        abstract: "Show why a user gets what they get for a flag: the decision with its reasons, numbered.")

    @OptionGroup var source: DatafileArgument
    @OptionGroup var user: UserArguments

    @Option(name: .customLong("flag"), help: ArgumentHelp("The flag to explain. Repeatable.", valueName: "key"))
    var flags: [String] = []

    @OptionGroup var decideOptions: DecideOptionArguments

    func validate() throws {
        if flags.isEmpty { throw ValidationError("give the flag to explain with --flag") }
    }

    func run() throws {
        let session = try Session(datafile: source.datafile)
        let attributes = try user.parsedAttributes()
        let options = try decideOptions.parsed().union(.includeReasons).subtracting(.enabledFlagsOnly)
        let effective = session.effective(options)
        var userId = user.user
        var unknown: [String] = []
        var rows: [DecisionRow] = []
        userId.withUTF8 { id in
            session.decide(user: id, attributes: attributes, options: options, keys: FlagKeys(flags)) { key, result in
                rows.append(session.describe(result, key: key, effective: effective))
            }
        }
        for (index, row) in rows.enumerated() {
            if index > 0 { print("") }
            guard row.known else {
                unknown.append(row.flag)
                print("flag \"\(row.flag)\": the datafile has no such flag")
                continue
            }
            print("flag \"\(row.flag)\" for user \"\(user.user)\"")
            print("  enabled:    \(row.enabled)")
            print("  variation:  \(row.variation ?? "- (none)")")
            print("  rule:       \(row.rule ?? "- (none)")")
            print("  variables:  \(row.variables)")
            print("  reasons:")
            printReasons(row.reasons, indent: "    ")
        }
        if !unknown.isEmpty {
            let known = session.config.flags.map(\.key.text).joined(separator: ", ")
            throw CLIError("unknown flag\(unknown.count > 1 ? "s" : "") \(unknown.map { "\"\($0)\"" }.joined(separator: ", ")) "
                           + "(the datafile's flags: \(known.isEmpty ? "none" : known))")
        }
    }
}
