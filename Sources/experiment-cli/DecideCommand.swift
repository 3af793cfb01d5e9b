import ArgumentParser
import ExperimentCore
import ExperimentRuntime

/// decide: one user, one, several or all flags.
struct DecideCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decide",
        abstract: "Decide flags for one user (every flag unless --flag is given).",
        discussion: """
            Prints a table (flag, enabled, variation, rule, variables), or with --json the object \
            exp_decide_for_keys_json returns: {"<flag>": {"flag_key", "enabled", "variation_key", \
            "rule_key", "variables", "reasons"}}.

            A --flag the datafile does not have decides as disabled (as the reference SDK does), with a \
            warning on standard error, and the exit status is 1 once every flag is printed. No events are sent.
            """)

    @OptionGroup var source: DatafileArgument
    @OptionGroup var user: UserArguments

    @Option(name: .customLong("flag"), help: ArgumentHelp("A flag to decide. Repeatable; default: every flag.",
                                                          valueName: "key"))
    var flags: [String] = []

    @OptionGroup var decideOptions: DecideOptionArguments

    @ArgumentParser.Flag(name: .long, help: "Print JSON (the C API's exp_decide_for_keys_json shape) instead of a table.")
    var json = false

    func run() throws {
        let session = try Session(datafile: source.datafile)
        let attributes = try user.parsedAttributes()
        let options = try decideOptions.parsed()
        let effective = session.effective(options)
        let keys = flags.isEmpty ? nil : FlagKeys(flags)
        let unknownFlags = warnAboutUnknownFlags(flags, in: session.config)
        try decideAndPrint(session, attributes: attributes, options: options, effective: effective, keys: keys)
        // Every flag is decided and printed first; then a --flag that does not exist fails the command.
        if unknownFlags > 0 { throw ExitCode(ExitStatus.failure) }
    }

    private func decideAndPrint(_ session: Session, attributes: OwnedAttributes, options: DecideOptions,
                                effective: DecideOptions, keys: FlagKeys?) throws {
        var userId = user.user
        if json {
            let out = JSONBytes()
            out.raw("{")
            var first = true
            userId.withUTF8 { id in
                session.decide(user: id, attributes: attributes, options: options, keys: keys) { key, result in
                    if !first { out.raw(",") }
                    first = false
                    out.string(key)
                    out.raw(":")
                    session.writeDecision(result, key: key, effective: effective, into: out)
                }
            }
            out.raw("}")
            print(out.text)
            return
        }
        var rows: [DecisionRow] = []
        userId.withUTF8 { id in
            session.decide(user: id, attributes: attributes, options: options, keys: keys) { key, result in
                rows.append(session.describe(result, key: key, effective: effective))
            }
        }
        if rows.isEmpty {
            print(session.config.flags.isEmpty ? "(the datafile has no flags)" : "(no flags decided)")
            return
        }
        printTable(rows)
        if effective.contains(.includeReasons) {
            for row in rows {
                print("")
                print("reasons for \(row.flag):")
                if row.known { printReasons(row.reasons) } else { print("  (the datafile has no such flag)") }
            }
        }
    }
}

/// Warns about each --flag the datafile does not have; returns how many there are.
@discardableResult
func warnAboutUnknownFlags(_ flags: [String], in config: ProjectConfig) -> Int {
    var warned: Set<String> = []
    for flag in flags where config.flagIndex.find(flag) == nil && warned.insert(flag).inserted {
        Console.warning("the datafile has no flag \"\(flag)\" (decided as disabled)")
    }
    return warned.count
}

/// Columns aligned by character count.
func printTable(_ rows: [DecisionRow]) {
    let header = ["flag", "enabled", "variation", "rule", "variables"]
    let cells = rows.map { row in
        [row.flag, row.enabled ? "true" : "false", row.variation ?? "-", row.rule ?? "-", row.variables]
    }
    var widths = header.map(\.count)
    for line in cells {
        for (column, cell) in line.enumerated() { widths[column] = max(widths[column], cell.count) }
    }
    func render(_ line: [String]) -> String {
        var text = ""
        for (column, cell) in line.enumerated() {
            if column == line.count - 1 { text += cell; break }
            text += cell + String(repeating: " ", count: widths[column] - cell.count + 2)
        }
        return text
    }
    print(render(header))
    for line in cells { print(render(line)) }
}

func printReasons(_ reasons: [String], indent: String = "  ") {
    if reasons.isEmpty {
        print(indent + "(no reasons reported)")
        return
    }
    let width = String(reasons.count).count
    for (index, reason) in reasons.enumerated() {
        let number = String(index + 1)
        print(indent + String(repeating: " ", count: width - number.count) + number + ". " + reason)
    }
}
