import ArgumentParser
import LuaHierarchy

/// `luahier check RULES.lua [host options] [-- ARGS...]`
struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Load rules and report what can never work, as file:line: (CODE) message.",
        discussion: """
            Codes: requireExplicitResponders (a type declared with triggers{} or reports{} \
            that no responder at or above the declaring node names in its filter), \
            unreachableResponder (a responder after an untyped handleEvent/handleError on the \
            same node), unknownType (a filter naming a type the tree's declarations do not \
            know, once the tree declares its types). Findings go to stdout, a summary to \
            stderr. Exit 0 when clean; 1 with findings or when the rules fail to load; 2 on \
            usage errors.
            """
    )

    @OptionGroup
    var rules: ScriptArguments

    @Argument(parsing: .postTerminator, help: "Arguments for the rules script, after --.")
    var arguments: [String] = []

    func run() throws {
        try Self.check(rules.script, arguments: arguments)
    }

    /// `luahier check [host options] RULES` read without the argument parser
    /// (`PlainCommandLine`); nil for any other command line, or settings that do not validate.
    static func plain(_ words: [String]) -> RulesScript? {
        guard let words = PlainCommandLine(words, options: PlainCommandLine.hostOptions),
            words.rest.count == 1, let host = words.hostSettings()
        else { return nil }
        let script = RulesScript(file: words.rest[0], host: host)
        guard (try? script.validate()) != nil else { return nil }
        return script
    }

    /// Loads `rules` and prints its findings.
    static func check(_ rules: RulesScript, arguments: [String]) throws {
        let hierarchy = try rules.loadForInspection(arguments: arguments)
        let tree = hierarchy.describeTree()
        let findings = tree.check()
        // Names, types and file names are the rules' text: escaped, as everywhere the host prints.
        for finding in findings { Console.out(PrintableText.field("\(finding)", limit: 4000)) }
        try ExitStatus.finishCommand()
        let responders = tree.entries.reduce(0) { $0 + $1.responders.count }
        if findings.isEmpty {
            Console.error("check: \(PrintableText.field(rules.name)): no findings (\(tree.entries.count) nodes, \(responders) responders)")
        } else {
            Console.error("check: \(PrintableText.field(rules.name)): \(findings.count) finding\(findings.count == 1 ? "" : "s")")
            throw ExitCode(ExitStatus.scriptFailed)
        }
    }
}
