import ArgumentParser
import Dispatch
import Glibc
import Logging
import LuaHierarchy
#if Server
import LuaHierarchyServer
#endif

/// `luahier serve RULES.lua [--host 127.0.0.1] [--port N] [--workers N] [--watch]`
struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Answer dispatch requests over HTTP with a pool of Lua states.",
        discussion: """
            POST /v1/dispatch takes one request object ({"id", "at", "event" | "error"}, as a \
            dispatch line) and returns its outcome, with the revision that answered it: 200 \
            (handled, unhandled, detached), 400 (invalid), 408 (body not whole within \
            --idle-timeout), 413 (body over --max-body), 415 (compressed body), 503 (no state \
            free within --max-wait, or shutting down). With Content-Type: \
            application/x-ndjson the body is JSON lines and the answer streams one outcome \
            line per request line, in order, all from one revision. GET /livez: 200 while the \
            process answers. GET /readyz (alias /healthz): 200 ready, or 503 while draining or \
            overloaded, with the revision and last reload error. GET /metrics: Prometheus \
            text. POST /v1/reload with --reload-endpoint. With --tls-cert and --tls-key (PEM) it \
            serves HTTPS only. --dispatch-token-file (or LUAHIER_DISPATCH_TOKEN) and \
            --reload-token-file (or LUAHIER_RELOAD_TOKEN, which also turns POST /v1/reload \
            on) make those routes take Authorization: Bearer TOKEN, any token of the file (one \
            a line): 401 without one, 403 for another; the health routes and /metrics stay \
            open. A token is never taken from the command line. Every other answer that is not 2xx is \
            {"error": {"type", "message"}}, and every answer carries X-Request-Id (the \
            client's, or one made). The log goes to stderr, one record a line \
            (--log-format text|json): an access line per request and the rules' print at \
            info, start, reload and stop at notice. Limits apply per request line; --timeout also bounds a whole \
            batch: no line begins after it, and those left are answered invalid \
            (BatchTimeLimitExceeded). The rules reload on SIGHUP and, with --watch, when their \
            files change; a revision that fails to load leaves the running one answering. \
            SIGTERM or SIGINT: /readyz answers 503 while requests are still served for \
            --shutdown-delay (a second signal ends it), then stop accepting, answer the \
            requests in flight, exit 0; exit 1 if --shutdown-grace ran out first (a second \
            signal exits at once). Exit 1 when the \
            rules fail to load, 2 on usage errors, a TLS or token file that cannot be used, and when --host:--port cannot be listened \
            on (the port taken or privileged, the address not on this machine).
            """ + ServeConfiguration.discussion
    )

    @Option(help: "The address to listen on (loopback by default; 0.0.0.0 for every interface).")
    var host = ServeRun.defaults.host

    @Option(parsing: .unconditional, help: "The port (0: any free one, printed on stderr).")
    var port = ServeRun.defaults.port

    @Option(parsing: .unconditional, help: "Lua states, each answering one request at a time.")
    var workers = ServeRun.defaults.workers

    @Option(parsing: .unconditional, help: ArgumentHelp("Largest request body, e.g. 64K, 1M; larger ones get 413.", valueName: "size"))
    var maxBody = ServeRun.defaults.maxBody

    @Option(parsing: .unconditional, help: ArgumentHelp(
        "Bytes of request bodies held at once, across connections, e.g. 64M; past it a request gets 503.", valueName: "size"))
    var maxBodiesInFlight = ServeRun.defaults.maxBodiesInFlight

    @Option(parsing: .unconditional, help: ArgumentHelp(
        "Bytes of answers left unread by their clients, across connections, e.g. 64M; past it a request gets 503.", valueName: "size"))
    var maxAnswersUnsent = ServeRun.defaults.maxAnswersUnsent

    @Option(parsing: .unconditional, help: ArgumentHelp("Seconds a request may wait for a free state before it gets 503.", valueName: "seconds"))
    var maxWait = ServeRun.defaults.maxWait

    @Option(parsing: .unconditional, help: ArgumentHelp(
        "Seconds a connection may sit idle, or a client leave a batch's answers unread, before it is closed.", valueName: "seconds"))
    var idleTimeout = ServeRun.defaults.idleTimeout

    @Option(parsing: .unconditional, help: "Open connections at most; more wait to be accepted.")
    var maxConnections = ServeRun.defaults.maxConnections

    @Option(parsing: .unconditional, help: ArgumentHelp(
        "Seconds SIGTERM waits for the requests in flight before it exits anyway.", valueName: "seconds"))
    var shutdownGrace = ServeRun.defaults.shutdownGrace

    @Option(parsing: .unconditional, help: ArgumentHelp(
        "Seconds SIGTERM keeps serving, /readyz answering 503, before it stops accepting connections.", valueName: "seconds"))
    var shutdownDelay = ServeRun.defaults.shutdownDelay

    @Option(help: ArgumentHelp("Trace added to each outcome: path or full.", valueName: "off|path|full"))
    var trace = ServeRun.defaults.trace

    @Option(help: ArgumentHelp("The log's form: text lines, or JSON objects.", valueName: "text|json"))
    var logFormat = ServeRun.defaults.logFormat

    @Option(help: ArgumentHelp(
        "The least level logged: trace, debug, info (an access line per request, and the rules' print), notice (start, reload, stop), warning, error.",
        valueName: "level"))
    var logLevel = ServeRun.defaults.logLevel

    @Flag(help: "Reload the rules when the file (or a module it loaded) changes.")
    var watch = ServeRun.defaults.watch

    @Flag(help: "Allow POST /v1/reload (anyone who can reach the port can then reload the rules, unless --reload-token-file).")
    var reloadEndpoint = ServeRun.defaults.reloadEndpoint

    @Option(help: ArgumentHelp("Serve HTTPS with this certificate chain (PEM; with --tls-key).", valueName: "file"))
    var tlsCert: String?

    @Option(help: ArgumentHelp("The private key of --tls-cert (PEM, unencrypted).", valueName: "file"))
    var tlsKey: String?

    @Option(help: ArgumentHelp(
        "POST /v1/dispatch takes a bearer token of this file (one a line); or set LUAHIER_DISPATCH_TOKEN.", valueName: "file"))
    var dispatchTokenFile: String?

    @Option(help: ArgumentHelp(
        "POST /v1/reload is on, for a bearer token of this file (one a line); or set LUAHIER_RELOAD_TOKEN.", valueName: "file"))
    var reloadTokenFile: String?

    @Option(help: ArgumentHelp(
        "Run these rules beside the live ones, as a candidate revision, on a sample of requests, and count where they differ.", valueName: "file"))
    var shadow: String?

    @Option(parsing: .unconditional, help: ArgumentHelp("The fraction of requests the --shadow candidate answers too, from 0 to 1.", valueName: "fraction"))
    var shadowSample = ServeRun.defaults.shadowSample

    @Option(parsing: .unconditional, help: "Lua states of the --shadow candidate, at the lowest CPU priority.")
    var shadowWorkers = ServeRun.defaults.shadowWorkers

    @Option(help: ArgumentHelp("Pull signed rule bundles from this URL (polled with If-None-Match), each loaded as a reload.", valueName: "url"))
    var bundleUrl: String?

    @Option(help: ArgumentHelp("The public key (a file of luahier bundle keygen) bundles must be signed with: RULES, if a bundle, and those of --bundle-url.", valueName: "file"))
    var bundleKey: String?

    @Option(parsing: .unconditional, help: ArgumentHelp("Seconds between polls of --bundle-url.", valueName: "seconds"))
    var bundlePoll = ServeRun.defaults.bundlePoll

    @Option(help: ArgumentHelp("/readyz answers 503 until the running revision's hash starts with this (16 to 64 hex digits).", valueName: "hash"))
    var requireRevision: String?

    @Option(help: ArgumentHelp("A JSON file of settings, keyed by long option name (also LUAHIER_CONFIG).", valueName: "file"))
    var config: String?

    @Flag(help: "Print each setting's effective value and where it came from, and exit.")
    var printConfig = false

    @OptionGroup
    var rules: ScriptArguments

    @OptionGroup
    var decisions: DecisionLogOptions

    @Option(help: ArgumentHelp("POST the decision records (gzipped NDJSON, in batches) to this URL.", valueName: "url"))
    var decisionLogURL: String?

    @Argument(parsing: .postTerminator, help: "Arguments for the rules script, after --.")
    var arguments: [String] = []

    /// What these flags ask for.
    var serveRun: ServeRun {
        var run = ServeRun(rules: rules.script, arguments: arguments)
        (run.host, run.port, run.workers, run.maxBody, run.maxWait) = (host, port, workers, maxBody, maxWait)
        (run.idleTimeout, run.maxConnections, run.shutdownGrace, run.shutdownDelay) = (idleTimeout, maxConnections, shutdownGrace, shutdownDelay)
        (run.maxBodiesInFlight, run.maxAnswersUnsent) = (maxBodiesInFlight, maxAnswersUnsent)
        (run.trace, run.logFormat, run.logLevel, run.watch, run.reloadEndpoint) = (trace, logFormat, logLevel, watch, reloadEndpoint)
        (run.tlsCert, run.tlsKey, run.dispatchTokenFile, run.reloadTokenFile) = (tlsCert, tlsKey, dispatchTokenFile, reloadTokenFile)
        (run.shadow, run.shadowSample, run.shadowWorkers) = (shadow, shadowSample, shadowWorkers)
        (run.bundleUrl, run.bundleKey, run.bundlePoll, run.requireRevision) = (bundleUrl, bundleKey, bundlePoll, requireRevision)
        (run.decisions, run.decisionLogURL) = (decisions.settings, decisionLogURL)
        return run
    }

    func validate() throws {
        try serveRun.validate()
    }

    func run() throws {
        if printConfig {
            for line in try ServeConfiguration(CommandLineWords.subcommandArguments()).effectiveSettings() { Console.out(line) }
            return try ExitStatus.finishCommand()
        }
        try serveRun.execute()
    }
}

extension ServeRun {
    func execute() throws {
        #if Server
        try serve()
        #else
        Console.error("luahier: serve: this luahier was built without the Server trait; build it with `swift build --traits Server`")
        throw ExitCode(ExitStatus.usage)
        #endif
    }

    #if Server
    private func serve() throws {
        // From here SIGTERM and SIGINT shut the server down gracefully; they stop no rule.
        ServiceSignals.handleStops()
        let security: Security
        do {
            security = try readSecurity()
        } catch {
            Console.error("luahier: \(PrintableText.field(error.description))")
            throw ExitCode(ExitStatus.usage)
        }
        let bundle = try BundleFiles.load(rules.file, key: bundleKey)
        if bundle != nil && watch { throw ValidationError("--watch watches rules files: a bundle is not reloaded from disk (see --bundle-url)") }
        var options = RulesPool.Options(rulesFile: rules.file, workers: self.workers)
        if let bundle { options = RulesPool.Options(bundle: bundle, workers: self.workers) }
        options.arguments = arguments
        options.hierarchy = try rules.host.hierarchyOptions()
        options.hierarchy.traceLevel = trace.level
        options.maxLineBytes = try maxBodyBytes()
        options.maxWait = maxWait
        options.batchTime = options.hierarchy.limits.time
        // A state never waits for stderr's reader: a blocked write is out of every limit's
        // reach. The log, the rules' print among it, goes through a printer of its own thread.
        let printer = DetachedPrinter()
        let (format, level) = (logFormat, logLevel)
        let log = Logger(label: "luahier") { _ in ServeLogHandler(format: format, level: level, printer: printer) }
        options.hierarchy.logger = log
        options.printForRequest = { line, requestID in
            var fields: Logger.Metadata = ["text": .string(line)]
            if let requestID { fields["request_id"] = .string(requestID) }
            log.info("print", metadata: fields)
        }
        options.presentWhileLoading = { Console.present($0) }
        options.decisionLog = try decisionLog(logger: log)
        // A shadow revision, at start or later over HTTP, compares responders by their key.
        options.responderKeys = shadow != nil || reloadEndpoint || security.reloadTokens != nil
        let pool: RulesPool
        do {
            pool = try RulesPool(options: options)
        } catch {
            Console.scriptFailed(error)
            throw ExitCode(ExitStatus.scriptFailed)
        }
        var serverOptions = RulesServer.Options()
        serverOptions.host = host
        serverOptions.port = port
        serverOptions.maxBodyBytes = try maxBodyBytes()
        serverOptions.maxBodiesInFlightBytes = try maxBodiesInFlightBytes()
        serverOptions.maxAnswersUnsentBytes = try maxAnswersUnsentBytes()
        serverOptions.reloadEndpoint = reloadEndpoint
        serverOptions.idleTimeout = idleTimeout
        serverOptions.maxConnections = maxConnections
        serverOptions.shutdownGrace = shutdownGrace
        serverOptions.shutdownDelay = shutdownDelay
        serverOptions.tls = security.tls
        serverOptions.dispatchTokens = security.dispatchTokens
        serverOptions.reloadTokens = security.reloadTokens
        if let bundleUrl, let bundleKey {
            var source = RulesServer.BundleSource(url: bundleUrl, publicKey: try BundleFiles.readKey(bundleKey))
            source.interval = bundlePoll
            serverOptions.bundleSource = source
        }
        serverOptions.requiredRevision = requireRevision
        serverOptions.shadow = shadow.map { RulesServer.ShadowOptions(rulesFile: $0, sample: shadowSample, workers: shadowWorkers) }
        // What `POST /v1/shadow` may load by name: `.lua` files beside the rules (or bundle).
        serverOptions.candidatesFolder = Revision.folder(of: rules.file)
        for warning in securityWarnings(security) { log.warning("\(warning)") }
        let server = RulesServer(pool: pool, options: serverOptions, printer: printer, logger: log) {
            Self.logReload($0, because: "POST /v1/reload", to: log)
        }
        let watcher = RulesWatcher(pool: pool, files: watch, hangUp: true) { result, trigger in
            server.recordReload(result)
            Self.logReload(result, because: trigger.rawValue, to: log)
        }
        let revision = pool.revision
        let workers = self.workers
        let delay = Self.seconds(shutdownDelay)
        let shadowing = serverOptions.shadow
        let outcome = Blocking.run {
            if let shadowing {
                do throws(ScriptError) {
                    try await server.startShadow(rulesFile: shadowing.rulesFile, sample: shadowing.sample, workers: shadowing.workers)
                } catch {
                    throw ShadowLoadFailure(error: error)
                }
            }
            return try await server.run { address in
                log.notice("serving \(revision.files[0]) (revision \(revision), \(workers) worker\(workers == 1 ? "" : "s")) on \(address)")
            } onDraining: { signal in
                let name = Interruption.name(of: signal)
                log.notice("draining (\(name)): /readyz answers 503; still serving for \(delay) s (--shutdown-delay), or until a second signal")
            }
        }
        // A reload under way (a slow rules file) must not hold the exit past the grace.
        watcher.stop(waiting: false)
        let stopped: RulesServer.Stopped
        switch outcome {
        case .failure(let failure as ShadowLoadFailure):
            pool.shutDownBlocking()
            Console.error("luahier: --shadow \(PrintableText.field(shadow ?? "")): the candidate did not load")
            Console.scriptFailed(failure.error)
            throw ExitCode(ExitStatus.scriptFailed)
        case .failure(let failure as ListenFailure):
            pool.shutDownBlocking()
            Console.error("luahier: \(PrintableText.field(Self.explain(failure)))")
            // The command line names an address this machine cannot listen on: as a missing
            // file, the fix is a different argument.
            throw ExitCode(failure.reason.isOther ? ExitStatus.scriptFailed : ExitStatus.usage)
        case .failure(let failure):
            pool.shutDownBlocking()
            Console.error("luahier: cannot serve on \(host):\(port): \(PrintableText.field("\(failure)"))")
            throw ExitCode(ExitStatus.scriptFailed)
        case .success(let result):
            stopped = result
        }
        log.notice("\(Self.describe(stopped, grace: shutdownGrace))")
        // What is buffered is written, within 5 s: a collector that is down cannot hold the exit.
        options.decisionLog?.close(timeout: 5)
        printer.flush(seconds: 1)
        if stopped.graceRanOut {
            // The states still run what was cut off: leave them to the process's end.
            _exit(ExitStatus.scriptFailed)
        }
        // Every request was answered: the states are idle. A reload still loading is left to
        // the process's end.
        _exit(0)
    }

    /// The decision log `--decision-log` or `--decision-log-url` asks for, if one does.
    private func decisionLog(logger: Logger) throws -> DecisionLog? {
        if let decisionLogURL {
            do {
                return decisions.log(to: try HTTPDecisionSink(url: decisionLogURL, logger: logger), source: "serve", logger: logger)
            } catch {
                throw ValidationError("--decision-log-url: \(error)")
            }
        }
        return try decisions.fileSink().map { decisions.log(to: $0, source: "serve", logger: logger) }
    }

    /// `cannot listen on 127.0.0.1:8080: the address is in use (another process listens
    /// there; pick another --port)`: what failed, and what to change.
    static func explain(_ failure: ListenFailure) -> String {
        let advice: String? = switch failure.reason {
        case .addressInUse: "another process listens there; pick another --port"
        case .permissionDenied where failure.port < 1024: "a port below 1024 needs privileges; pick a --port of 1024 or more"
        case .permissionDenied: nil
        case .addressNotOnThisMachine: "give --host an address of this machine: 127.0.0.1, or 0.0.0.0 for every interface"
        case .unknownHost: "give --host an address, or a name that resolves"
        case .other: nil
        }
        return failure.description + (advice.map { " (\($0))" } ?? "")
    }

    /// A reload, logged: `notice` when it loaded or found the rules unchanged, `error` when it
    /// failed.
    static func logReload(_ result: ReloadResult, because trigger: String, to log: Logger) {
        let message = Console.reloadMessage(result, because: trigger)
        if case .failed = result { log.error("\(message)") } else { log.notice("\(message)") }
    }

    /// `stopped (SIGTERM); the 4 requests in flight were answered`, and the like.
    static func describe(_ stopped: RulesServer.Stopped, grace: Double) -> String {
        let signal = stopped.signal.map(Interruption.name(of:)) ?? "shutdown"
        let after = stopped.graceRanOut ? " after the \(seconds(grace)) s grace" : ""
        func requests(_ count: Int) -> String { count == 1 ? "1 request" : "\(count) requests" }
        if stopped.inFlight == 0 { return "stopped (\(signal)); no request was in flight" }
        if stopped.answered == stopped.inFlight {
            return stopped.inFlight == 1
                ? "stopped (\(signal)); the request in flight was answered"
                : "stopped (\(signal)); all \(stopped.inFlight) requests in flight were answered"
        }
        var parts = ["\(stopped.answered) answered"]
        if stopped.clientsGone > 0 { parts.append("\(stopped.clientsGone) left by the client before the answer was sent") }
        if stopped.cutOff > 0 { parts.append("\(stopped.cutOff) cut off unanswered") }
        return "stopped (\(signal))\(after); of the \(requests(stopped.inFlight)) in flight, " + parts.joined(separator: ", ")
    }

    /// `5` or `2.5`: seconds as the flags took them.
    static func seconds(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }

    #endif
}

/// Runs async work from the command's thread and waits for it.
enum Blocking {
    /// What `body` returned, or the error it threw.
    static func run<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) -> Result<T, any Error> {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var outcome: Result<T, any Error>?
        Task {
            do { outcome = .success(try await body()) } catch { outcome = .failure(error) }
            done.signal()
        }
        done.wait()
        return outcome!
    }
}

/// The `--shadow` candidate did not load: serve does not start.
struct ShadowLoadFailure: Error {
    let error: ScriptError
}
