import ArgumentParser
import Glibc
import LuaHierarchy

/// `luahier`: run responder-chain scripts. Exit codes are few and documented in `--help`.
@main
struct Luahier: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "luahier",
        abstract: "A scriptable responder chain: a tree of nodes whose Lua responders handle events and errors.",
        discussion: """
            A script starting with #!/usr/bin/env luahier (or #!/usr/bin/env -S luahier run) \
            runs as an executable, with its arguments. Shell completions: luahier \
            --generate-completion-script bash|zsh|fish.

            Exit codes:
              0    success
              1    the script failed (syntax or runtime error, limits, printed as
                   file:line: message); dispatch: some input line was invalid; check: there
                   were findings; replay: some outcome changed; a bundle was refused; a
                   write to stdout failed
              2    usage error (bad flags, missing file, misspelled subcommand); serve:
                   an address it cannot listen on
              3    with --fail-on-unhandled: an error reached the root unhandled
              130  interrupted by SIGINT (143: SIGTERM)
              141  stdout was a pipe its reader closed
            """,
        version: PackageVersion.description,
        subcommands: [Run.self, Dispatch.self, Serve.self, Check.self, Tree.self, Test.self, Explain.self, Replay.self, Bundle.self]
    )

    /// Parses and runs on a large-stack thread, mapping every failure to a documented exit
    /// code: argument errors are 2 (swift-argument-parser would say 64).
    static func main() {
        // Before any thread: freed memory stays for the next lines (ProcessMemory).
        ProcessMemory.keepFreedMemory()
        // The main thread only waits: SIGINT and SIGTERM go to the thread that runs the
        // command, where they cut a read of stdin short.
        Interruption.blockSignalsOnThisThread()
        LargeStack.run {
            Interruption.installSignalHandlers()
            // SIGHUP too, unless the command reloads on it (`serve`, `dispatch --watch` put
            // their own handler in its place).
            Interruption.installHangUpHandler()
            runCommand()
        }
    }

    private static func runCommand() {
        var arguments = CommandLineWords.subcommandArguments()
        // serve's settings from the environment and a config file, as words before its own.
        var configuration: ServeConfiguration?
        do {
            try OptionWords.check(arguments)
            if ServeConfiguration.applies(to: arguments) && ServeConfiguration.hasOtherSources(arguments) {
                configuration = try ServeConfiguration(arguments)
                arguments = configuration?.arguments ?? arguments
                try OptionWords.check(arguments)
            }
            if let command = plainCommand(arguments) {
                try command()
            } else {
                var command = try parseAsRoot(arguments)
                try command.run()
            }
        } catch let code as ExitCode {
            Glibc.exit(code.rawValue)
        } catch {
            if exitCode(for: error) == .success {
                // --help, --version, --generate-completion-script: the answer is the result.
                Console.out(fullMessage(for: error))
                Glibc.exit(Console.reportOutputFailure() ? ExitStatus.scriptFailed : 0)
            }
            // One style for every error (contract §8): `luahier: message`, then where to look.
            var message = message(for: error).split(separator: "\n").first.map(String.init) ?? "usage error"
            // The parser's own messages start with a capital ("Unknown option"); ours do not.
            let parserWords = ["Unknown", "Missing", "Unexpected", "The", "Invalid", "Error", "Please"]
            if let word = message.split(separator: " ").first, parserWords.contains(String(word)) {
                message = message.prefix(1).lowercased() + message.dropFirst()
            }
            message = configuration?.explain(message) ?? message
            if let slip = SubcommandSlip.suggestion() {
                Console.error("luahier: \(PrintableText.field(slip))\nluahier: see 'luahier --help'")
                Glibc.exit(ExitStatus.usage)
            }
            let subcommand = arguments.first.flatMap { CommandLineWords.subcommands.contains($0) ? $0 : nil }
            Console.error("luahier: \(message)\nluahier: see 'luahier \(subcommand.map { "\($0) " } ?? "")--help'")
            Glibc.exit(ExitStatus.usage)
        }
    }
}

extension Luahier {
    /// The command plain words run (`PlainCommandLine`): `run`, `check`, `test`, `dispatch`
    /// and `serve` with the options those read, the parser's first parse skipped (each
    /// subcommand's `plain` reads the words after its name). Nil for the parser to read the
    /// words.
    static func plainCommand(_ arguments: [String]) -> (() throws -> Void)? {
        let words = Array(arguments.dropFirst())
        switch arguments.first {
        case "run":
            return ScriptRun.plain(words).map { run in { try run.execute() } }
        case "check":
            return Check.plain(words).map { rules in { try Check.check(rules, arguments: []) } }
        case "test":
            return Test.plain(words).map { plain in
                { try Test.runTests(in: plain.paths, filter: nil, coverage: Test.defaults.coverage, format: Test.defaults.format, host: plain.host) }
            }
        case "dispatch":
            return DispatchRun.plain(words).map { dispatch in { try dispatch.execute() } }
        // serve's words only while no `LUAHIER_` variable or config file could add settings.
        case "serve" where !ServeConfiguration.hasOtherSources(arguments):
            return ServeRun.plain(words).map { serve in { try serve.execute() } }
        default:
            return nil
        }
    }
}

/// The exit statuses `luahier` uses.
enum ExitStatus {
    static let scriptFailed: Int32 = 1
    static let usage: Int32 = 2
    static let unhandledError: Int32 = 3
    /// 128 + SIGPIPE: what a shell reports for a writer whose reader went away.
    static let closedPipe: Int32 = 141

    /// 128 + the signal: 130 for SIGINT, 143 for SIGTERM.
    static func interrupted(by signal: Int32) -> Int32 { 128 + signal }

    /// The end of a command that wrote results. A signal that came when no script ran (after
    /// it ended, while a result was written) still ends it as interrupted (`luahier:
    /// interrupted`, 130/143), before a write failure it may have caused; then a failed
    /// write to stdout is exit 1.
    static func finishCommand() throws {
        if let signal = Interruption.signal {
            Console.error("luahier: interrupted")
            throw ExitCode(interrupted(by: signal))
        }
        try Console.finishOutput()
    }

    /// For a script that failed: 130/143 when a signal came (it stopped the script, or cut
    /// the read of a script from stdin short), else 1.
    static func failed(_ error: ScriptError) -> Int32 {
        guard let signal = Interruption.signal else { return scriptFailed }
        return interrupted(by: signal)
    }
}

/// The process's command line, as the subcommands read it.
enum CommandLineWords {
    /// An array, not a set: a `Set<String>` built at start costs a conformance lookup
    /// (`String: Hashable`), a scan of every conformance record in the binary.
    static let subcommands = ["run", "dispatch", "serve", "check", "tree", "test", "explain", "replay", "bundle", "help"]

    /// The arguments after the program's name, with `run` put in front when the first one
    /// is a script rather than a subcommand or an option: a shebang line
    /// `#!/usr/bin/env luahier` runs `luahier /path/script ARGS...`.
    static func subcommandArguments() -> [String] {
        let arguments = Array(CommandLine.arguments.dropFirst())
        guard let first = arguments.first, !subcommands.contains(first), first == "-" || !first.hasPrefix("-") else {
            return arguments
        }
        return ["run"] + arguments
    }

    /// The words of the command line before the script, for `arg[-n] ... arg[-1]` (as
    /// `lua.c` gives them): everything but the last `tail` words.
    static func beforeScript(tail: Int) -> [String] {
        Array(CommandLine.arguments.prefix(max(0, CommandLine.arguments.count - tail)))
    }
}
