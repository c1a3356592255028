import ArgumentParser
import LuaHierarchy

/// `luahier explain RULES.lua --at PATH (--event E | --error E) [--run] [--format text|json]`
struct Explain: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "explain",
        abstract: "Show which responders would see a value sent at a node, in order, and why the others would not.",
        discussion: """
            E is a type name (Alert) or a JSON object ({"type": "Alert", "severity": "high"}). \
            Without --run nothing is dispatched: the rules script runs to build the tree, then \
            the chain from PATH to the root is read as a dispatch would take it, each \
            responder marked offered, maybe (it depends on what a responder before it \
            returns or raises) or not offered (filter, domain, unreachable after a handle, cut chain), \
            with the safety checks the value would meet at hier.safety. PATH may be a relative \
            path (tab-2/editor) for a node in a subtree the rules removed and still hold. \
            With --run the dispatch runs on this throwaway state and its full trace is drawn \
            as a tree, nested dispatches under the responder that started them. Exit 0; 1 \
            if the rules fail to load or there is no node at PATH; 2 on usage errors.
            """
    )

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case text, json
    }

    @Option(help: ArgumentHelp("The node the value is sent at.", valueName: "path"))
    var at: String

    @Option(help: ArgumentHelp("An event: a type name or a JSON object.", valueName: "E"))
    var event: String?

    @Option(name: .customLong("error"), help: ArgumentHelp("An error: a type name or a JSON object.", valueName: "E"))
    var errorText: String?

    @Flag(name: .customLong("run"), help: "Run the dispatch and draw its trace.")
    var runsDispatch = false

    @Option(help: "text or json.")
    var format: Format = .text

    @OptionGroup
    var rules: ScriptArguments

    @Argument(parsing: .postTerminator, help: "Arguments for the rules script, after --.")
    var arguments: [String] = []

    func validate() throws {
        guard (event == nil) != (errorText == nil) else { throw ValidationError("give one of --event or --error") }
        _ = try value()
    }

    /// The value E describes: a bare word is its type.
    func value() throws -> (Domain, Value) {
        let domain: Domain = event != nil ? .event : .error
        let text = event ?? errorText ?? ""
        guard text.first == "{" else {
            guard !text.isEmpty else { throw ValidationError("--\(domain.rawValue) needs a type name or a JSON object") }
            return (domain, domain == .event ? .event(text) : .error(text, message: text))
        }
        let parsed: Value
        do {
            parsed = try JSON.parse(text)
        } catch {
            throw ValidationError("--\(domain.rawValue): \(error)")
        }
        guard let message = Self.message(parsed, as: domain) else {
            if case .map = parsed { throw ValidationError("--\(domain.rawValue) needs a string \"type\"") }
            throw ValidationError("--\(domain.rawValue) takes an object")
        }
        return (domain, message)
    }

    /// The message a parsed E (an object) or a request's `event`/`error` (an object or a
    /// string) describes: an error without a type is an `Error`; nil for any other shape.
    static func message(_ parsed: Value, as domain: Domain) -> Value? {
        if case .string(let text) = parsed, !text.isEmpty {
            return domain == .event ? .event(text) : .error(text, message: text)
        }
        guard case .map(var fields) = parsed else { return nil }
        if domain == .error, fields["type"] == nil { fields["type"] = "Error" }
        guard fields["type"]?.stringValue != nil else { return nil }
        return .map(fields)
    }

    /// `--run`'s drawing: `value` dispatched at `node` on `hierarchy` (a throwaway state) with
    /// its full trace, as a tree, one string per line (`replay` draws its changes with it).
    static func drawnRun(of value: Value, as domain: Domain, at node: Node, on hierarchy: Hierarchy) throws -> TraceDrawing {
        try hierarchy.drawDispatch(value, as: domain, at: node).drawing
    }

    func run() throws {
        let (domain, value) = try value()
        let hierarchy = try rules.loadForInspection(arguments: arguments)
        let node: Node
        do {
            guard let found = try hierarchy.explainableNode(at: at) else {
                Console.error("luahier: no node at \(PrintableText.field(at))")
                throw ExitCode(ExitStatus.scriptFailed)
            }
            node = found
        } catch let error as TreeError {
            Console.error("luahier: \(PrintableText.field("\(error)"))")
            throw ExitCode(ExitStatus.scriptFailed)
        }
        if runsDispatch {
            let drawing = try Self.drawnRun(of: value, as: domain, at: node, on: hierarchy)
            switch format {
            case .text: for line in drawing.lines() { Console.out(line) }
            case .json: Console.out(JSON.encode(drawing.json))
            }
        } else {
            let explanation = hierarchy.explain(domain, type: value.typeName ?? "?", at: node)
            switch format {
            case .text: for line in explanation.lines() { Console.out(line) }
            case .json: Console.out(JSON.encode(explanation.json))
            }
        }
        try ExitStatus.finishCommand()
    }
}
