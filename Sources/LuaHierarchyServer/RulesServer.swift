internal import Hummingbird
internal import Logging
import LuaHierarchy
internal import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The rules engine as an HTTP service over a `RulesPool` (`luahier serve`, SPEC §9).
///
/// - `POST /v1/dispatch`: one request object in, one outcome out; with `Content-Type:
///   application/x-ndjson`, JSON lines in and outcome lines out, streamed in order.
/// - `GET /healthz`: ready, the running revision, the last reload failure.
/// - `GET /metrics`: Prometheus text.
/// - `POST /v1/reload` when `reloadEndpoint` is on.
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
        /// `POST /v1/reload` reloads the rules (off: 403).
        public var reloadEndpoint = false
        /// Longest a graceful shutdown waits for requests in flight before it closes them.
        public var shutdownGrace = 30.0

        public init() {}
    }

    let pool: RulesPool
    let options: Options
    let metrics: ServerMetrics
    /// Told of each reload `POST /v1/reload` runs.
    let onReload: @Sendable (ReloadResult) -> Void

    public init(pool: RulesPool, options: Options, onReload: @escaping @Sendable (ReloadResult) -> Void = { _ in }) {
        self.pool = pool
        self.options = options
        self.onReload = onReload
        metrics = ServerMetrics(pool: pool)
    }

    /// Records a reload the server did not run itself (`--watch`, SIGHUP) in its metrics.
    public func recordReload(_ result: ReloadResult) {
        metrics.recordReload(result)
    }

    /// Serves until SIGTERM or SIGINT (`ServiceSignals`, installed here), then shuts down
    /// gracefully: it stops accepting connections, answers the requests in flight, and
    /// returns. `onListening` gets the address it listens on.
    public func run(onListening: @escaping @Sendable (String) -> Void = { _ in }) async throws {
        ServiceSignals.handleStops()
        var logger = Logger(label: "luahier")
        logger.logLevel = .warning
        let router = Router()
        addRoutes(to: router)
        let app = Application(
            router: router,
            configuration: .init(address: .hostname(options.host, port: options.port), serverName: "luahier"),
            onServerRunning: { channel in
                let address = channel.localAddress
                let host = address?.ipAddress ?? "?"
                let shown = host.contains(":") ? "[\(host)]" : host
                onListening("http://\(shown):\(address?.port ?? 0)")
            },
            logger: logger
        )
        var configuration = ServiceGroupConfiguration(services: [.init(service: app)], logger: logger)
        configuration.maximumGracefulShutdownDuration = .milliseconds(Int64(options.shutdownGrace * 1000))
        let group = ServiceGroup(configuration: configuration)
        try await withThrowingTaskGroup(of: Bool.self) { tasks in
            tasks.addTask {
                try await group.run()
                return true
            }
            tasks.addTask {
                // SIGTERM or SIGINT: a flag the handler set, polled (the handler can do no more).
                while ServiceSignals.stopSignal == nil && !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(50))
                }
                if !Task.isCancelled { await group.triggerGracefulShutdown() }
                return false
            }
            while let serverEnded = try await tasks.next() {
                if serverEnded {
                    tasks.cancelAll()
                    break
                }
            }
        }
    }
}
