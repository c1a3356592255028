#if Server
package import Hummingbird
internal import HummingbirdCore
internal import HummingbirdTLS
public import Logging
internal import NIOCore
import LuaHierarchy
internal import ServiceLifecycle
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The rules engine as an HTTP service over a `RulesPool` (`luahier serve`, contract §9).
///
/// - `POST /v1/dispatch`: one request object in, one outcome out; with `Content-Type:
///   application/x-ndjson`, JSON lines in and outcome lines out, streamed in order.
/// - `GET /livez`: 200 while the process answers at all; `GET /readyz` (and its alias
///   `/healthz`): 200 when a request would be answered, 503 while draining or overloaded
///   (`Health.swift`).
/// - `GET /metrics`: Prometheus text; `GET /openapi.json`: the API document.
/// - `POST /v1/reload` when `reloadEndpoint` is on, or `reloadTokens` are set.
///
/// With `tls` set it answers HTTPS only; with `dispatchTokens` and `reloadTokens`, those two
/// routes take a bearer token each (`BearerTokens`). Health and metrics stay open: probes and
/// scrapers carry no token.
///
/// Every answer that is not 2xx is `{"error": {"type", "message"}}` (with more members for
/// some routes, `ErrorBody`); every answer carries the request's `X-Request-Id`; `logger`
/// gets an access line per request.
///
/// The service keeps no state between requests (each is answered by whichever state is
/// free), so it scales out as replicas behind any HTTP load balancer.
public final class RulesServer: Sendable {
    public struct Options: Sendable {
        /// The address to listen on: loopback unless asked otherwise.
        public var host = "127.0.0.1"
        /// 0: any free port (`onListening` says which).
        public var port = 8080
        /// Larger bodies are refused with 413 before any rule runs.
        public var maxBodyBytes = 1 << 20
        /// The bytes of request bodies the server holds at once, summed across connections (as
        /// they arrive, until each request is answered); a body whose next part would pass it is
        /// answered 503 `Overloaded` at once and its connection closed. A body takes its buffer's
        /// capacity: the power of two at or above its bytes. Taken as at least the capacity a
        /// body of `maxBodyBytes` takes, or no body that size could come.
        public var maxBodiesInFlightBytes = 64 << 20
        /// The bytes of answers waiting for their clients to read them, summed across
        /// connections (an answer over `RulesServer.answerPart` bytes is held until handed to its
        /// connection, which takes more as its client reads). While they reach it, a request is
        /// answered 503 `Overloaded` before any rule runs.
        public var maxAnswersUnsentBytes = 64 << 20
        /// `POST /v1/reload` reloads the rules (off: 403), for anyone who reaches the port
        /// unless `reloadTokens` are set.
        public var reloadEndpoint = false
        /// HTTPS with this certificate and key; nil: plain HTTP.
        public var tls: TLS?
        /// The bearer tokens `POST /v1/dispatch` takes; nil: any client that reaches the port
        /// may dispatch.
        public var dispatchTokens: BearerTokens?
        /// The bearer tokens `POST /v1/reload` takes. Set, they turn the endpoint on (as
        /// `reloadEndpoint`) for their holders only; a dispatch token does not reload, nor a
        /// reload token dispatch.
        public var reloadTokens: BearerTokens?
        /// Seconds SIGTERM keeps serving, `/readyz` answering 503 `draining`, before the
        /// listener closes: time for a load balancer to stop sending requests (a second signal
        /// ends it early). 0: the listener closes at once.
        public var shutdownDelay = 0.0
        /// Longest a graceful shutdown waits for requests in flight before it closes them.
        public var shutdownGrace = 30.0
        /// Seconds a connection may stay idle (between requests, or while a request comes in)
        /// and a client may leave a batch's answers unread, before it is closed.
        public var idleTimeout = 30.0
        /// Open connections at most; past it, new ones wait in the listen backlog.
        public var maxConnections = 1024
        /// A batch's answers that may wait for a slow client; past it, the batch waits too.
        public var batchBufferBytes = 256 << 10
        /// The candidate revision `POST /v1/shadow` loads when its body names none, until one
        /// is loaded (`startShadow` loads one at start).
        public var shadow: ShadowOptions?
        /// The folder whose `.lua` files `POST /v1/shadow` may load by name (every symbolic
        /// link followed, the file must stay under it); nil: the live rules file's folder,
        /// when the pool's rules came from a file. Only this folder and `shadow`'s file: the
        /// route is a right to run rules, not to read the server's files.
        public var candidatesFolder: String?
        /// Where signed rule bundles are pulled from while the server runs; nil: the rules are
        /// the pool's own, reloaded as it was told.
        public var bundleSource: BundleSource?
        /// `/readyz` answers 503 (`revision`) until the running revision's hash starts with
        /// this (hex digits: all 64, or a prefix of 16 or more): a rollout waits for every
        /// replica to run it. `POST /v1/required-revision` changes it.
        public var requiredRevision: String?

        public init() {}
    }

    /// Where signed rule bundles are pulled from (docs/bundles.md, "Pulled by `serve`").
    public struct BundleSource: Sendable {
        /// The bundle's URL (`http://` or `https://`), polled with `If-None-Match`.
        public var url: String
        /// The public key a bundle's signature must verify with (a key file's text: base64 of
        /// the 32-byte Ed25519 key); nil: unsigned bundles are taken (not for production).
        public var publicKey: String?
        /// Seconds between polls.
        public var interval = 30.0
        /// Seconds a poll may take, connecting included.
        public var timeout = 10.0
        /// A larger bundle is refused, read no further than this.
        public var maxBytes = RuleBundle.defaultMaxBytes

        /// Bundles from `url`, signed with the key of `publicKey`.
        public init(url: String, publicKey: String?) {
            (self.url, self.publicKey) = (url, publicKey)
        }
    }

    /// A candidate revision to run beside the live one (docs/shadow.md).
    public struct ShadowOptions: Sendable {
        /// The candidate's rules file.
        public var rulesFile: String
        /// The fraction of live requests it answers too, from 0 to 1.
        public var sample: Double
        /// Its states, each with its own thread at the lowest CPU priority.
        public var workers: Int

        /// A candidate of `rulesFile` answering `sample` of the requests on `workers` states.
        public init(rulesFile: String, sample: Double = 0.1, workers: Int = 1) {
            (self.rulesFile, self.sample, self.workers) = (rulesFile, sample, workers)
        }
    }

    let pool: RulesPool
    let options: Options
    let metrics: ServerMetrics
    let inFlight = InFlight()
    /// The bytes of the bodies being read and answered, against `maxBodiesInFlightBytes`.
    let bodies: ByteBudget
    /// The bytes of the answers not yet handed to their connections, against
    /// `maxAnswersUnsentBytes` (`UnsentAnswer`).
    let answers: ByteBudget
    /// An answer over this many bytes is written a part of this size at a time, and held
    /// against `answers` until handed over; a smaller one goes to its connection whole, where
    /// `maxConnections` bounds what they hold.
    static let answerPart = 64 << 10
    /// Whether `answers` leave room for another (asked on the state before a request runs):
    /// made once, so that a request does not allocate a closure for it.
    let admitsAnswers: @Sendable () -> Bool
    /// Set when the service group `run` started has ended.
    private let ended = Mutex(false)
    /// Set once the socket listens: a failure before it is a `ListenFailure`.
    private let listening = Mutex(false)
    /// Set once SIGTERM or SIGINT came: `/readyz` answers 503 from then on.
    let draining = Mutex(false)
    /// Told of each reload `POST /v1/reload` runs.
    let onReload: @Sendable (ReloadResult) -> Void
    /// Where the access log goes: a line per request at `info`.
    let logger: Logger
    /// The candidate revision running beside the live one, if one is.
    private let shadowing = Mutex<Shadow?>(nil)
    /// Starts and stops of the shadow asked for so far: a load that finishes after a later one
    /// was asked for is not installed (taken before `shadowing`).
    private let shadowChanges = Mutex(0)
    /// Whether `POST /v1/shadow` is loading a candidate: one at a time, as reloads are.
    let shadowLoading = Mutex(false)
    /// The hash `/readyz` waits for (`Options.requiredRevision`, `POST /v1/required-revision`).
    let requiredRevision: Mutex<String?>
    /// Pulls bundles when `Options.bundleSource` is set.
    let bundles: BundlePoller?

    /// `printer`, when the rules print through one, has its dropped lines in the metrics.
    /// `logger` gets an access log line per request at `info` (request id, method, route,
    /// status, duration, revision, outcome), and the server's own warnings; by default none.
    public init(
        pool: RulesPool, options: Options, printer: DetachedPrinter? = nil,
        logger: Logger = Logger(label: "luahier", factory: { _ in SwiftLogNoOpLogHandler() }),
        onReload: @escaping @Sendable (ReloadResult) -> Void = { _ in }
    ) {
        self.pool = pool
        self.options = options
        self.onReload = onReload
        self.logger = logger
        bodies = ByteBudget(limit: max(options.maxBodiesInFlightBytes, ByteBudget.capacity(for: options.maxBodyBytes)))
        let answers = ByteBudget(limit: options.maxAnswersUnsentBytes)
        self.answers = answers
        admitsAnswers = { !answers.isSpent() }
        let metrics = ServerMetrics(pool: pool, printer: printer, bodies: bodies, answers: answers)
        self.metrics = metrics
        requiredRevision = Mutex(options.requiredRevision?.lowercased())
        bundles = options.bundleSource.map { source in
            BundlePoller(options: source, pool: pool, logger: logger) { result, reload in
                metrics.recordBundlePoll(result)
                if let reload, result != .unchanged { metrics.recordReload(reload) }
            }
        }
    }

    /// The candidate revision running, if one is.
    var shadow: Shadow? { shadowing.withLock { $0 } }

    /// Loads `rulesFile` as a candidate revision beside the live one, replacing the one
    /// running (its counts start again): from now on `sample` of the requests (chosen by
    /// request id) are answered by it too, after their live answer went out, on `workers`
    /// states of its own at the lowest CPU priority; the two outcomes are compared, and
    /// their differences counted in `/metrics` and `GET /v1/shadow` and written to the
    /// decision log. A file that does not load throws its error, and the candidate running
    /// (if any) goes on. Promoting a candidate is a reload of the live rules.
    /// Comparing responders by their stable key needs the live pool's
    /// `RulesPool.Options.responderKeys` (or a decision log); without it, by `file:line`.
    /// A start or stop made while this one loaded supersedes it: the candidate it loaded is
    /// then closed unused (the last change made wins, whichever loads first).
    public func startShadow(rulesFile: String, sample: Double, workers: Int = 1) async throws(ScriptError) {
        try await startShadow(rulesFile: rulesFile, sample: sample, workers: workers, within: nil)
    }

    /// `startShadow`, reading the file only as a `.lua` file under `folder` when given (what
    /// `POST /v1/shadow` loads by a client's name).
    func startShadow(rulesFile: String, sample: Double, workers: Int, within folder: String?) async throws(ScriptError) {
        let ticket = shadowChanges.withLock { changes in
            changes += 1
            return changes
        }
        let candidate = try await pool.candidate(file: rulesFile, workers: workers, within: folder)
        let started = Shadow(candidate: candidate, file: rulesFile, within: folder, sample: sample, counters: metrics.shadow)
        let (current, replaced): (Bool, Shadow?) = shadowChanges.withLock { changes in
            guard changes == ticket else { return (false, nil) }
            return (true, shadowing.withLock { running in
                defer { running = started }
                return running
            })
        }
        guard current else {
            Self.retire(started)
            return
        }
        logger.notice("shadowing \(rulesFile) (revision \(started.candidateRevision.shortHash)) on \(sample) of requests")
        if let replaced { Self.retire(replaced) }
    }

    /// A candidate no longer shadowing: it takes no more requests, and its states close once
    /// they have answered what was queued to them, in the background (that may take long for
    /// a candidate that fell behind: nothing waits for it).
    private static func retire(_ shadow: Shadow) {
        shadow.close()
        Task.detached { await shadow.candidate.shutDown() }
    }

    /// Stops the candidate revision running, if one is, at once; its states close in the
    /// background once they have answered what was queued to them.
    public func stopShadow() async {
        let stopped: Shadow? = shadowChanges.withLock { changes in
            changes += 1
            return shadowing.withLock { running in
                defer { running = nil }
                return running
            }
        }
        if let stopped {
            logger.notice("shadow stopped: \(stopped.file)")
            Self.retire(stopped)
        }
    }

    /// Records a reload the server did not run itself (`--watch`, SIGHUP) in its metrics.
    public func recordReload(_ result: ReloadResult) {
        metrics.recordReload(result)
    }

    /// How the server stopped: what stopped it, and what became of the requests in flight.
    public struct Stopped: Sendable {
        /// SIGTERM or SIGINT; nil when the server ended on its own.
        public var signal: Int32?
        /// Requests under way when the stop came, or begun on open connections after it.
        public var inFlight = 0
        /// Of those: answered in full, left by their client first, and still under way when
        /// the grace ran out.
        public var answered = 0, clientsGone = 0, cutOff = 0
        /// `shutdownGrace` passed with requests under way: the caller should exit now, without
        /// waiting for them (their states are still running them).
        public var graceRanOut = false
    }

    /// Serves until SIGTERM or SIGINT (`ServiceSignals`, installed here), then shuts down
    /// gracefully: it reports not ready and goes on serving for `shutdownDelay` (cut short by
    /// a second signal), then stops accepting connections, answers the requests in flight, and
    /// returns how that went. Past `shutdownGrace` it returns without waiting for those left
    /// (`graceRanOut`). `onListening` gets the address it listens on; `onDraining` the signal,
    /// as the delay begins. Throws a `ListenFailure` when it cannot listen (the port is taken,
    /// the address is not here).
    public func run(
        onListening: @escaping @Sendable (String) -> Void = { _ in }, onDraining: @escaping @Sendable (Int32) -> Void = { _ in }
    ) async throws -> Stopped {
        ServiceSignals.handleStops()
        // Set before any signal can come: the second one must end the delay, not the process.
        ServiceSignals.deferRepeatedStop(options.shutdownDelay > 0)
        let logger = FrameworkLogHandler.logger(label: "luahier", level: .warning)
        let app = try application(logger: logger) { address in
            self.listening.withLock { $0 = true }
            onListening(address)
        }
        // Named: unnamed, the group names the service by `"\(service)"`, a description made
        // by reflection (a conformance lookup per protocol it tries) at every start.
        let configuration = ServiceGroupConfiguration(services: [.init(service: app, serviceName: "luahier serve")], logger: logger)
        // No limit of the group's own: past `shutdownGrace` it would cancel the server, which
        // closes the connections of requests still under way, and they would look like clients
        // that went away. The grace is enforced below, where what was cut off is counted.
        let group = ServiceGroup(configuration: configuration)
        let serving = Task {
            defer { self.ended.withLock { $0 = true } }
            try await group.run()
        }
        let polling = bundles.map { poller in Task { await poller.run() } }
        defer { polling?.cancel() }
        // SIGTERM or SIGINT: a flag the handler set, polled (the handler can do no more).
        while ServiceSignals.stopSignal == nil && !hasEnded {
            try? await Task.sleep(for: .milliseconds(50))
        }
        if hasEnded {
            do {
                try await serving.value
            } catch {
                let listened = listening.withLock { $0 }
                if !listened, let failure = ListenFailure(error, host: options.host, port: options.port) { throw failure }
                throw error
            }
            return inFlight.report(signal: nil, graceRanOut: false)
        }
        draining.withLock { $0 = true }
        if options.shutdownDelay > 0 {
            onDraining(ServiceSignals.stopSignal ?? SIGTERM)
            let closeAt = ContinuousClock.now + .milliseconds(Int64(options.shutdownDelay * 1000))
            while !ServiceSignals.stopRepeated && !hasEnded && ContinuousClock.now < closeAt {
                try? await Task.sleep(for: .milliseconds(50))
            }
            // From here a further signal ends the process, as during any drain.
            ServiceSignals.deferRepeatedStop(false)
        }
        inFlight.stop()
        await group.triggerGracefulShutdown()
        let giveUpAt = ContinuousClock.now + .milliseconds(Int64(options.shutdownGrace * 1000))
        while !hasEnded && ContinuousClock.now < giveUpAt {
            try? await Task.sleep(for: .milliseconds(50))
        }
        if !hasEnded { return inFlight.report(signal: ServiceSignals.stopSignal, graceRanOut: true) }
        try? await serving.value
        return inFlight.report(signal: ServiceSignals.stopSignal, graceRanOut: false)
    }

    private var hasEnded: Bool { ended.withLock { $0 } }

    /// `load`'s result, or nil once SIGTERM's drain has begun: a reload or a candidate still
    /// loading is left to the process's end (as a SIGHUP reload is), and its request answered
    /// at once, so the drain does not wait on rules that may load for up to `--timeout`. A load
    /// asked for once the drain has begun is not started (each would make a pool of states).
    func unlessDraining<T: Sendable>(_ load: @escaping @Sendable () async -> T) async -> T? {
        if draining.withLock({ $0 }) { return nil }
        let first = FirstAnswer<T?>()
        Task { first.open(await load()) }
        Task {
            while !first.isOpen && !draining.withLock({ $0 }) { try? await Task.sleep(for: .milliseconds(50)) }
            first.open(nil)
        }
        return await first.wait()
    }

    /// The 503 `ShuttingDown` a reload or candidate route answers once the drain has begun.
    func shuttingDown(_ what: String) -> Response {
        ErrorBody.response(
            .serviceUnavailable, type: "ShuttingDown",
            message: "the server is shutting down: \(what) goes on until the process ends, unanswered",
            headers: [.retryAfter: "1"])
    }

    /// The application `run` serves, for the package's tests to drive in process
    /// (HummingbirdTesting), without a socket or signals.
    package func application() throws -> some ApplicationProtocol {
        try application(logger: FrameworkLogHandler.logger(label: "luahier", level: .warning), onListening: { _ in })
    }

    /// The HTTP application: the routes, the limits on connections, TLS, the address.
    func application(logger: Logger, onListening: @escaping @Sendable (String) -> Void) throws -> some ApplicationProtocol {
        let router = Router(context: ServerContext.self)
        addRoutes(to: router)
        // The connection's idle timer runs a second past --idle-timeout, so that a body still
        // coming in at --idle-timeout gets its 408 (`ConnectionGuard`) before the close.
        let bodyTimeout = TimeAmount.milliseconds(Int64(options.idleTimeout * 1000))
        let metrics = self.metrics
        let http1 = HTTP1Channel.Configuration(
            additionalChannelHandlers: [ConnectionGuard(bodyTimeout: bodyTimeout) { metrics.recordUnparsed() }],
            idleTimeout: .milliseconds(Int64(options.idleTimeout * 1000) + 1000))
        // TLS wraps the same HTTP/1 channel: ConnectionGuard's limits hold for HTTPS too.
        let plain = HTTPServerBuilder.http1(configuration: http1)
        let server = try options.tls.map { try HTTPServerBuilder.tls(plain, tlsConfiguration: $0.configuration) } ?? plain
        let scheme = options.tls == nil ? "http" : "https"
        return Application(
            router: router,
            server: server,
            configuration: .init(
                address: .hostname(options.host, port: options.port), serverName: "luahier",
                availableConnectionsDelegate: MaximumAvailableConnections(options.maxConnections, logger: logger)),
            onServerRunning: { channel in
                // The port accepts already; the registry's first look at its types (about
                // 5M instructions) is made now rather than by the first request.
                metrics.register()
                let address = channel.localAddress
                let host = address?.ipAddress ?? "?"
                let shown = host.contains(":") ? "[\(host)]" : host
                onListening("\(scheme)://\(shown):\(address?.port ?? 0)")
            },
            logger: logger
        )
    }
}
#endif
