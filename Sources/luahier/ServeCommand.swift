import ArgumentParser
import Dispatch
import Glibc
import LuaHierarchy
import LuaHierarchyServer

/// `luahier serve RULES.lua [--host 127.0.0.1] [--port N] [--workers N] [--watch]`
struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Answer dispatch requests over HTTP with a pool of Lua states.",
        discussion: """
            POST /v1/dispatch takes one request object ({"id", "at", "event" | "error"}, as a \
            dispatch line) and returns its outcome, with the revision that answered it: 200 \
            (handled, unhandled, detached), 400 (invalid), 413 (body over --max-body), 503 \
            (no state free within --max-wait, or shutting down). With Content-Type: \
            application/x-ndjson the body is JSON lines and the answer streams one outcome \
            line per request line, in order, all from one revision. GET /healthz: ready, \
            revision, last reload error. GET /metrics: Prometheus text. POST /v1/reload with \
            --reload-endpoint. The rules reload on SIGHUP and, with --watch, when their files \
            change; a revision that fails to load leaves the running one answering. SIGTERM \
            or SIGINT: stop accepting, answer the requests in flight, exit 0 (a second one \
            exits at once). Exit 1 when the rules fail to load or the address cannot be \
            bound, 2 on usage errors.
            """
    )

    @Option(help: "The address to listen on (loopback by default; 0.0.0.0 for every interface).")
    var host = "127.0.0.1"

    @Option(parsing: .unconditional, help: "The port (0: any free one, printed on stderr).")
    var port = 8080

    @Option(parsing: .unconditional, help: "Lua states, each answering one request at a time.")
    var workers = 1

    @Option(parsing: .unconditional, help: ArgumentHelp("Largest request body, e.g. 64K, 1M; larger ones get 413.", valueName: "size"))
    var maxBody = "1M"

    @Option(parsing: .unconditional, help: ArgumentHelp("Seconds a request may wait for a free state before it gets 503.", valueName: "seconds"))
    var maxWait: Double = 10

    @Option(help: ArgumentHelp("Trace added to each outcome: path or full.", valueName: "off|path|full"))
    var trace: TraceOption = .off

    @Flag(help: "Reload the rules when the file (or a module it loaded) changes.")
    var watch = false

    @Flag(help: "Allow POST /v1/reload (anyone who can reach the port can then reload the rules).")
    var reloadEndpoint = false

    @OptionGroup
    var rules: ScriptArguments

    @Argument(parsing: .postTerminator, help: "Arguments for the rules script, after --.")
    var arguments: [String] = []

    func validate() throws {
        if rules.file == "-" { throw ValidationError("serve reads its rules from a file, not stdin") }
        guard (1...256).contains(workers) else { throw ValidationError("--workers must be between 1 and 256") }
        guard (0...65535).contains(port) else { throw ValidationError("--port must be between 0 and 65535") }
        guard try maxBodyBytes() > 0 else { throw ValidationError("--max-body must be more than 0") }
        guard maxWait > 0, maxWait.isFinite else { throw ValidationError("--max-wait must be more than 0 seconds") }
    }

    func run() throws {
        // From here SIGTERM and SIGINT shut the server down gracefully; they stop no rule.
        ServiceSignals.handleStops()
        var options = RulesPool.Options(rulesFile: rules.file, workers: workers)
        options.arguments = arguments
        options.hierarchy = try rules.host.hierarchyOptions()
        options.hierarchy.traceLevel = trace.level
        options.maxLineBytes = try maxBodyBytes()
        options.maxWait = maxWait
        options.presentWhileLoading = { Console.present($0) }
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
        serverOptions.reloadEndpoint = reloadEndpoint
        let server = RulesServer(pool: pool, options: serverOptions) { Console.reloaded($0, because: "POST /v1/reload") }
        let watcher = RulesWatcher(pool: pool, files: watch, hangUp: true) { result, trigger in
            server.recordReload(result)
            Console.reloaded(result, trigger: trigger)
        }
        let revision = pool.revision
        let workers = self.workers
        let failure = Blocking.run {
            try await server.run { address in
                Console.error("luahier: serving \(revision.files[0]) (revision \(revision), \(workers) worker\(workers == 1 ? "" : "s")) on \(address)")
            }
        }
        watcher.stop()
        pool.shutDown()
        if let failure {
            Console.error("luahier: cannot serve on \(host):\(port): \(PrintableText.field("\(failure)"))")
            throw ExitCode(ExitStatus.scriptFailed)
        }
        let signal = ServiceSignals.stopSignal.map { $0 == SIGTERM ? "SIGTERM" : "SIGINT" } ?? "shutdown"
        Console.error("luahier: stopped (\(signal)); every request in flight was answered")
    }

    private func maxBodyBytes() throws -> Int {
        guard let bytes = Size.bytes(maxBody) else {
            throw ValidationError("--max-body takes a size such as 64K or 1M, not '\(maxBody)'")
        }
        return bytes
    }
}

/// Runs async work from the command's thread and waits for it.
enum Blocking {
    /// The error `body` threw, if any.
    static func run(_ body: @escaping @Sendable () async throws -> Void) -> (any Error)? {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var failure: (any Error)?
        Task {
            do { try await body() } catch { failure = error }
            done.signal()
        }
        done.wait()
        return failure
    }
}
