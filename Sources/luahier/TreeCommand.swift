import ArgumentParser
import LuaHierarchy

/// `luahier tree RULES.lua [--format text|dot|json] [host options] [-- ARGS...]`
struct Tree: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tree",
        abstract: "Load rules and print the tree with each node's responders and subscriptions.",
        discussion: """
            text draws the tree with box-drawing characters; dot is a Graphviz digraph \
            (luahier tree rules.lua --format dot | dot -Tsvg > tree.svg) whose labels cut \
            long lines and show at most 20 responders and subscriptions per node; json is a \
            stable, flat list of nodes in depth-first order for tools (format version 2: \
            each node names its parent by its index; only the first node, the top, has its \
            path). Output is written as it is made, so a million-deep tree takes memory in \
            proportion to the tree. The rules' print output goes to stderr. Exit 0; 1 if the \
            rules fail to load; 2 on usage errors.
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
        // Written as it is rendered: a million-node tree is never held whole as text.
        do {
            switch format {
            case .text: try tree.writeText(to: Self.write)
            case .dot: try tree.writeDOT(to: Self.write)
            case .json: try tree.writeJSON(to: Self.write)
            }
        } catch {
            // Output stopped; finishCommand says why.
        }
        try ExitStatus.finishCommand()
    }

    /// Nothing more can go out: a write failed or a signal came.
    private struct OutputStopped: Error {}

    /// Writes a chunk to stdout, or stops the rendering once a write failed or a signal came,
    /// so a huge tree is not rendered for nothing.
    private static func write(_ chunk: String) throws(OutputStopped) {
        guard case .writing = Console.output, Interruption.signal == nil else { throw OutputStopped() }
        Console.out(chunk, terminator: "")
    }
}
