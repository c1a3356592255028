import ArgumentParser
import LuaHierarchy

/// `luahier tree RULES.lua [--format text|dot|json] [host options] [-- ARGS...]`
struct Tree: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Load rules and print the tree with each node's responders and subscriptions.",
        discussion: """
            text draws the tree with box-drawing characters; dot is a Graphviz digraph \
            (luahier tree rules.lua --format dot | dot -Tsvg > tree.svg); json is a stable, \
            flat list of nodes in depth-first order for tools. The rules' print output goes to \
            stderr. Exit 0; 1 if the rules fail to load; 2 on usage errors.
            """
    )

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case text, dot, json
    }

    @Option(help: "text, dot or json.")
    var format: Format = .text

    @OptionGroup
    var rules: ScriptArguments

    @Argument(parsing: .postTerminator, help: "Arguments for the rules script, after --.")
    var arguments: [String] = []

    func run() throws {
        let tree = try rules.loadForInspection(arguments: arguments).describeTree()
        switch format {
        case .text: Console.out(tree.text(), terminator: "")
        case .dot: Console.out(tree.dot(), terminator: "")
        case .json:
            do {
                Console.out(try tree.json(), terminator: "")
            } catch {
                Console.error("luahier: \(error)")
                throw ExitCode(ExitStatus.scriptFailed)
            }
        }
        try ExitStatus.finishCommand()
    }
}
