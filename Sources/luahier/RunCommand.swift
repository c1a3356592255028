import ArgumentParser
import LuaHierarchy

/// `luahier run [OPTIONS] FILE [ARGS...]`
struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run a Lua script with `hier` (the tree's root and API) ready.",
        discussion: """
            luahier's own options come before FILE; everything after FILE goes to the script, \
            in `arg` and `...`, as with lua5.4 (a -- right after FILE is dropped). FILE - reads \
            the script from stdin; FILE may be a rule bundle (luahier bundle), told by its \
            first bytes. print is flushed line by line. Unhandled errors that pass \
            the root are printed to stderr. SIGINT or SIGTERM stops the script at its current \
            instruction with file:line: interrupted and a traceback. Exit 0 on success, 1 if \
            the script fails (limits included) or a write to stdout fails, 2 on usage errors, \
            3 with --fail-on-unhandled when an error reached the root, 130/143 when \
            interrupted.
            """
    )

    @Flag(help: "Print every dispatch's trace (node, responder, input, result) to stderr.")
    var trace = ScriptRun.defaults.trace

    @Flag(help: "Exit with status 3 if an error reached the root unhandled.")
    var failOnUnhandled = ScriptRun.defaults.failOnUnhandled

    @Option(help: ArgumentHelp("The recovery option to choose for alerts a handleAlertErrors responder shows, when the script chooses none.", valueName: "option"))
    var recover: String?   // ScriptRun.defaults.recover is nil: no default choice

    @Option(help: ArgumentHelp("With a bundle for FILE: the public key file its signature must verify with (an unsigned bundle is then refused).", valueName: "public-key"))
    var bundleKey: String?

    @OptionGroup(title: "Sandbox and limits")
    var host: HostOptions

    /// FILE and the script's arguments: options end at FILE.
    @Argument(
        parsing: .captureForPassthrough,
        help: ArgumentHelp("The Lua script (- for stdin), then its arguments.", valueName: "file> <args"))
    var script: [String] = []

    /// What these flags ask for.
    var scriptRun: ScriptRun {
        ScriptRun(
            trace: trace, failOnUnhandled: failOnUnhandled, recover: recover, bundleKey: bundleKey, host: host.settings,
            words: ScriptWords(script))
    }

    func validate() throws {
        // Capturing from the first word it does not know, the parser leaves `--help` and
        // `--version` to us, as every other subcommand answers them (after a `--`, they are
        // file names).
        if let first = script.first, first == "--help" || first == "-h" { throw CleanExit.helpRequest(self) }
        if script.first == "--version" { throw CleanExit.message(PackageVersion.description) }
        try scriptRun.validate()
    }

    func run() throws {
        try scriptRun.execute()
    }
}

/// A script run as `luahier run` does it, however its command line was read.
struct ScriptRun {
    var trace = false
    var failOnUnhandled = false
    var recover: String?
    /// The public key file a bundle's signature must verify with.
    var bundleKey: String?
    var host = HostSettings.defaults
    var words = ScriptWords([])

    /// What `run` does with no option given (and the flags' defaults).
    static let defaults = ScriptRun()

    /// `luahier run [OPTIONS] FILE [ARGS...]` read without the argument parser
    /// (`PlainCommandLine`): run's options and the sandbox and limit options, each spelled in
    /// full, then FILE and the script's words, from the same defaults the flags start from.
    /// Nil for any other command line, and for settings that do not validate: the parser
    /// reads those, and names what is wrong.
    static func plain(_ words: [String]) -> ScriptRun? {
        guard let words = PlainCommandLine(words, options: plainOptions),
            !words.rest.isEmpty, let host = words.hostSettings()
        else { return nil }
        var run = ScriptRun.defaults
        run.trace = words.flag("trace")
        run.failOnUnhandled = words.flag("fail-on-unhandled")
        run.recover = words.values["recover"]
        run.bundleKey = words.values["bundle-key"]
        run.host = host
        run.words = ScriptWords(words.rest)
        guard (try? run.validate()) != nil else { return nil }
        return run
    }

    /// `Run`'s options, by long name (also what tells `OptionWords` where FILE is).
    static let plainOptions = PlainCommandLine.hostOptions.merging(
        ["trace": .flag, "fail-on-unhandled": .flag, "recover": .value, "bundle-key": .value]) { $1 }

    func validate() throws {
        guard let file = words.file else {
            throw ValidationError("missing the script: luahier run [options] FILE [ARGS...]")
        }
        if file.hasPrefix("-") && file != "-" && !words.afterTerminator { throw ValidationError("unknown option '\(file)'") }
        if file != "-" { try Validate.readableFile(file) }
        if let bundleKey { try Validate.readableFile(bundleKey) }
        try host.validate()
    }

    func execute() throws {
        // A bundle (told by its first bytes) runs from its own files only.
        let bundle = try BundleFiles.load(words.file!, key: bundleKey)
        let hierarchy = try Hierarchy(options: try host.hierarchyOptions())
        var unhandledErrors = 0
        hierarchy.byteOutput = { try Console.print($0) }
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
            if let bundle {
                try hierarchy.run(bundle: bundle, arguments: words.arguments)
            } else {
                try hierarchy.run(file: words.file!, arguments: words.arguments, commandLine: words.commandLine)
            }
        } catch {
            // A failed print says so itself (it stopped the script); another failure after
            // one is reported beside it.
            if error.type != Console.OutputFailure.errorType { _ = Console.reportOutputFailure() }
            Console.scriptFailed(error)
            throw ExitCode(ExitStatus.failed(error))
        }
        try ExitStatus.finishCommand()
        if failOnUnhandled && unhandledErrors > 0 {
            Console.error("luahier: \(unhandledErrors) error(s) reached the root unhandled")
            throw ExitCode(ExitStatus.unhandledError)
        }
    }
}

/// What `run` captured from FILE on: the script, its arguments (a `--` right after FILE
/// dropped, so the older `FILE -- ARGS` form keeps working) and the words before it.
struct ScriptWords {
    var file: String?
    var arguments: [String] = []
    var commandLine: [String]
    /// FILE came after a `--` (so `-x.lua` is a file, not an option).
    var afterTerminator = false

    init(_ captured: [String]) {
        var rest = captured[...]
        // `luahier run -- FILE`: the terminator before FILE belongs to luahier's options.
        if rest.first == "--" {
            rest = rest.dropFirst()
            afterTerminator = true
        }
        commandLine = CommandLineWords.beforeScript(tail: rest.count)
        file = rest.popFirst()
        if rest.first == "--" { rest = rest.dropFirst() }
        arguments = Array(rest)
    }
}
