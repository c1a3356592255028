import ArgumentParser
import Glibc
import LuaHierarchy

/// `luahier dispatch RULES.lua|RULES.bundle [INPUT|-] [--jobs N] [--trace off|path|full] [--strict]`
struct Dispatch: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dispatch",
        abstract: "Answer JSON-line requests with the responder chain a rules script builds.",
        discussion: """
            Each input line is {"id": ..., "at": "/path", "event": {...}} or {..., "error": \
            {...}}; each gets one JSON outcome line on stdout, in input order: line, id, status \
            (handled, unhandled, detached or invalid), kind, value, by, responder and, with \
            --trace, trace. A bad line gets status "invalid" with an error naming what is wrong \
            and where, and the stream goes on. Blank lines are skipped. The rules' print goes to \
            stderr, and so does a summary at the end. Each answer is written as soon as it and \
            every line before it are answered. SIGINT or SIGTERM stops reading, writes every \
            answer finished and the summary, and exits 130/143. Exit 0 when every line was \
            dispatched, 1 when some line was invalid (with --strict: at the first one), the \
            rules failed to load or the output could not be written, 2 on usage errors.
            """
    )

    /// The older spelling of the INPUT argument.
    @Option(help: .hidden)
    var input: String?

    @Option(parsing: .unconditional, help: "Workers, each with its own Lua state and its own copy of the rules' globals.")
    var jobs = DispatchRun.defaults.jobs

    @Option(help: ArgumentHelp("Add each dispatch's trace: path (nodes, responders, verdicts) or full (also values before and after each replacement).", valueName: "off|path|full"))
    var trace: TraceOption = DispatchRun.defaults.trace

    @Flag(help: "Stop at the first invalid line (after answering it).")
    var strict = DispatchRun.defaults.strict

    @Flag(help: "Reload the rules when the file (or a module it loaded) changes, and on SIGHUP; every outcome then carries the revision that answered it.")
    var watch = DispatchRun.defaults.watch

    @Option(parsing: .unconditional, help: ArgumentHelp("Longest input line, e.g. 64K, 1M; longer ones are answered LineTooLong.", valueName: "size"))
    var maxLine = DispatchRun.defaults.maxLine

    /// The rules script (it builds the tree and its responders), sandbox flags, arguments.
    static let largestLineOffset = 1_000_000_000_000_000

    @Option(parsing: .unconditional, help: ArgumentHelp(
        "Number the lines from N+1: a part of a larger input (a Spark partition) numbers its lines as the whole does.", valueName: "n"))
    var lineOffset = DispatchRun.defaults.lineOffset

    @Option(help: ArgumentHelp("How `where` names the input (default: stdin, or INPUT's path).", valueName: "name"))
    var source: String?

    @Option(help: ArgumentHelp(
        "Run the rules under this name in `responder` and messages (e.g. their path relative to a folder every worker shares).", valueName: "name"))
    var rulesName: String?

    @Flag(help: "Exit 0 when lines were invalid: each got its invalid outcome (for runners that fail a nonzero exit, as Spark's pipe).")
    var invalidOk = DispatchRun.defaults.invalidOk

    @OptionGroup
    var rules: ScriptArguments

    @Option(help: ArgumentHelp("With a bundle for RULES: the public key file its signature must verify with (an unsigned bundle is then refused).", valueName: "public-key"))
    var bundleKey: String?

    @OptionGroup
    var decisions: DecisionLogOptions

    @Argument(help: ArgumentHelp("The JSON-lines input (default: stdin, also -).", valueName: "input"))
    var inputFile: String?

    @Argument(parsing: .postTerminator, help: "Arguments for the rules script, after --.")
    var arguments: [String] = []

    /// INPUT, `--input`, or stdin.
    var inputPath: String { inputFile ?? input ?? "-" }

    func validate() throws {
        if inputFile != nil && input != nil { throw ValidationError("give the input once: as INPUT or as --input") }
        if inputPath != "-" { try Validate.readableFile(inputPath) }
        // Every worker loads the rules itself: stdin could be read once.
        if rules.file == "-" { throw ValidationError("dispatch reads its rules from a file, not stdin") }
        guard (1...256).contains(jobs) else { throw ValidationError("--jobs must be between 1 and 256") }
        guard try maxLineBytes() > 0 else { throw ValidationError("--max-line must be more than 0") }
        // Far past any input's lines, and far from Int.max: line numbers count on from it.
        guard (0...Self.largestLineOffset).contains(lineOffset) else {
            throw ValidationError("--line-offset must be from 0 to \(Self.largestLineOffset)")
        }
        for (flag, name) in [("--source", source), ("--rules-name", rulesName)] {
            if let name, name.isEmpty || name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
                throw ValidationError("\(flag) must be a name on one line, without control characters")
            }
        }
        // --strict stops at the first invalid line: the lines after it would get no outcome.
        if strict && invalidOk { throw ValidationError("give one of --strict and --invalid-ok") }
        // The rules run from their text under another name: a reload would not read the file.
        if rulesName != nil && watch { throw ValidationError("give one of --rules-name and --watch") }
        if let bundleKey { try Validate.readableFile(bundleKey) }
    }

    func run() throws {
        try dispatchRun.execute()
    }

    /// What these flags ask for.
    var dispatchRun: DispatchRun {
        DispatchRun(
            rules: rules.script, arguments: arguments, inputPath: inputPath, jobs: jobs, trace: trace, strict: strict,
            watch: watch, maxLine: maxLine, lineOffset: lineOffset, source: source, rulesName: rulesName,
            invalidOk: invalidOk, bundleKey: bundleKey, decisions: decisions.settings)
    }

    private func maxLineBytes() throws -> Int {
        try dispatchRun.maxLineBytes()
    }
}

/// A dispatch as `luahier dispatch` does it, however its command line was read.
struct DispatchRun {
    var rules: RulesScript
    var arguments: [String] = []
    var inputPath = "-"
    var jobs = 1
    var trace = TraceOption.off
    var strict = false
    var watch = false
    var maxLine = "1M"
    var lineOffset = 0
    var source: String?
    var rulesName: String?
    var invalidOk = false
    var bundleKey: String?
    var decisions = DecisionLogSettings.defaults

    /// What `dispatch` does with no option given (and the flags' defaults).
    static let defaults = DispatchRun(rules: RulesScript(file: "-"))

    /// `luahier dispatch [host options] RULES [INPUT]` read without the argument parser
    /// (`PlainCommandLine`), every other setting its default; nil for any other command
    /// line, or settings that do not validate.
    static func plain(_ words: [String]) -> DispatchRun? {
        guard let words = PlainCommandLine(words, options: PlainCommandLine.hostOptions),
            (1...2).contains(words.rest.count), words.rest[0] != "-", !words.rest[1...].contains(where: { $0.hasPrefix("-") && $0 != "-" }),
            let host = words.hostSettings()
        else { return nil }
        let run = DispatchRun(rules: RulesScript(file: words.rest[0], host: host), inputPath: words.rest.count == 2 ? words.rest[1] : "-")
        guard (try? run.rules.validate()) != nil, run.inputPath == "-" || (try? Validate.readableFile(run.inputPath)) != nil else {
            return nil
        }
        return run
    }

    func execute() throws {
        var options = LineDispatcher.Options(rulesFile: rules.file)
        options.arguments = arguments
        options.hierarchy = try rules.host.hierarchyOptions()
        options.hierarchy.traceLevel = trace.level
        options.jobs = jobs
        options.strict = strict
        options.maxLineBytes = try maxLineBytes()
        options.inputName = source ?? (inputPath == "-" ? "stdin" : inputPath)
        options.lineOffset = lineOffset
        options.presentWhileLoading = { Console.present($0) }
        // A bundle (told by its first bytes): its outcomes carry its revision, the manifest's.
        options.bundle = try BundleFiles.load(rules.file, key: bundleKey)
        if options.bundle != nil && watch { throw ValidationError("--watch watches rules files: a bundle is not reloaded") }
        if options.bundle != nil && rulesName != nil {
            throw ValidationError("a bundle's rules run under the name its manifest gives them: give no --rules-name")
        }
        options.stampsRevision = watch || options.bundle != nil

        let descriptor = inputPath == "-" ? STDIN_FILENO : open(inputPath, O_RDONLY)
        guard descriptor >= 0 else {
            throw ValidationError("cannot open \(inputPath): \(String(cString: strerror(errno)))")
        }
        defer { if descriptor != STDIN_FILENO { close(descriptor) } }
        fflush(nil)
        let summary: LineDispatcher.Summary
        var poolOptions = options.pool
        if let rulesName {
            poolOptions.rulesSource = try rules.text()
            poolOptions.rulesFile = rulesName
        }
        poolOptions.decisionLog = try decisions.fileSink().map { decisions.log(to: $0, source: "dispatch", logger: ConsoleLogHandler.logger) }
        defer { poolOptions.decisionLog?.close() }
        do {
            let pool = try RulesPool(options: poolOptions)
            let watcher = watch ? RulesWatcher(pool: pool, files: true, hangUp: true, report: Console.reloaded) : nil
            summary = LineDispatcher.run(options, on: pool, input: descriptor, output: STDOUT_FILENO)
            watcher?.stop()
            pool.shutDownBlocking()
        } catch {
            Console.scriptFailed(error)
            if let signal = Interruption.signal {
                // Stopped while loading the rules: nothing was read, and the summary says so.
                var summary = LineDispatcher.Summary()
                summary.interruption = signal
                Console.error("luahier: \(summary)")
            }
            throw ExitCode(ExitStatus.failed(error))
        }
        if summary.outputClosed { throw ExitCode(ExitStatus.closedPipe) }
        var report = "luahier: \(summary)"
        if let line = summary.stoppedAtLine { report += "; stopped at line \(line) (--strict)" }
        if let ioError = summary.ioError { report += "; \(ioError)" }
        if let log = poolOptions.decisionLog {
            log.close()
            let dropped = log.statistics.droppedBufferFull + log.statistics.droppedSinkFailed
            if dropped > 0 { report += "; \(dropped) decision record\(dropped == 1 ? "" : "s") dropped" }
        }
        Console.error(report)
        if let signal = summary.interruption { throw ExitCode(ExitStatus.interrupted(by: signal)) }
        if summary.ioError != nil || (summary.counts[.invalid, default: 0] > 0 && !invalidOk) {
            throw ExitCode(ExitStatus.scriptFailed)
        }
    }

    func maxLineBytes() throws -> Int {
        try Size.bytes(maxLine, of: "max-line", example: "64K or 1M")
    }
}

/// `--trace off|path|full`.
enum TraceOption: String, ExpressibleByArgument, CaseIterable {
    case off, path, full

    var level: TraceLevel {
        switch self {
        case .off: return .off
        case .path: return .path
        case .full: return .full
        }
    }
}
