import ArgumentParser
import LuaHierarchy
import Foundation

/// `luahier`: run responder-chain scripts. Exit codes are few and documented in `--help`.
@main
struct Luahier: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "luahier",
        abstract: "A scriptable responder chain: a tree of nodes whose Lua responders handle events and errors.",
        discussion: """
            Exit codes:
              0  success
              1  the script failed (syntax or runtime error, printed as file:line: message);
                 dispatch: some input line was invalid; check: there were findings
              2  usage error (bad flags, missing file)
              3  with --fail-on-unhandled: an error reached the root unhandled
            """,
        subcommands: [Run.self, Dispatch.self, Check.self, Tree.self]
    )

    /// Parses and runs on a large-stack thread, mapping every failure to a documented exit
    /// code: argument errors are 2 (swift-argument-parser would say 64).
    static func main() {
        LargeStack.run(runCommand)
    }

    private static func runCommand() {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch let code as ExitCode {
            Foundation.exit(code.rawValue)
        } catch {
            let code = exitCode(for: error)
            if code == .success {
                print(fullMessage(for: error))
                Foundation.exit(0)
            }
            Console.error(fullMessage(for: error))
            Foundation.exit(ExitStatus.usage)
        }
    }
}

/// The exit statuses `luahier` uses.
enum ExitStatus {
    static let scriptFailed: Int32 = 1
    static let usage: Int32 = 2
    static let unhandledError: Int32 = 3
}
