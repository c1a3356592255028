import ArgumentParser
import Foundation
import LuaHierarchy

/// `luahier run FILE [--trace] [--fail-on-unhandled] [host options] [-- ARGS...]`
struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a Lua script with `hier` (the tree's root and API) ready.",
        discussion: """
            The script's arguments (after --) are in `arg` and in `...`. Unhandled errors that \
            pass the root are printed to stderr. Exit 0 on success, 1 if the script fails \
            (limits included), 2 on usage errors, 3 with --fail-on-unhandled when an error \
            reached the root.
            """
    )

    @Flag(help: "Print every dispatch's trace (node, responder, input, result) to stderr.")
    var trace = false

    @Flag(help: "Exit with status 3 if an error reached the root unhandled.")
    var failOnUnhandled = false

    @Option(help: ArgumentHelp("The recovery option to choose for alerts a handleAlertErrors responder shows, when the script chooses none.", valueName: "option"))
    var recover: String?

    @OptionGroup
    var script: ScriptArguments

    func run() throws {
        let hierarchy = try script.makeHierarchy()
        var unhandledErrors = 0
        hierarchy.output = Console.out
        hierarchy.onSafetyWarning = Console.warn
        let alerts = AlertBox(recover: recover)
        hierarchy.alertPresenter = alerts.present
        hierarchy.presenter = { presented in
            unhandledErrors += 1
            Console.present(presented)
        }
        if trace {
            hierarchy.traceLevel = .path
            hierarchy.onDispatch = Console.printTrace
        }
        do {
            try hierarchy.run(file: script.file, arguments: script.arguments)
        } catch {
            Console.scriptFailed(error)
            throw ExitCode(ExitStatus.scriptFailed)
        }
        if failOnUnhandled && unhandledErrors > 0 {
            Console.error("luahier: \(unhandledErrors) error(s) reached the root unhandled")
            throw ExitCode(ExitStatus.unhandledError)
        }
    }
}
