// The floor `luahier serve` is measured against (Benchmarks/serve/run.sh,
// Benchmarks/serve/instructions.sh): Hummingbird alone, the same version and the same
// event-loop and thread settings as the server (the application's defaults: NIO's singleton
// event loops), answering `POST /v1/dispatch` by reading the whole body and sending a fixed
// outcome of the size a `scripts/alerts.lua` answer has. No rules, no state's thread, no
// request id, log or metrics: what an HTTP request costs before the service does anything.
//
//   floor-server [serve RULES] --port PORT [any other flag of serve, ignored]
//
// Takes `luahier serve`'s command line (ignoring what it does not use), so the benchmark
// scripts start either the same way; says where it listens on stderr as `serve` does, and
// ends on SIGTERM or SIGINT.
#if Server
import Hummingbird
import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

let arguments = CommandLine.arguments
let port = arguments.firstIndex(of: "--port").flatMap { $0 + 1 < arguments.count ? Int(arguments[$0 + 1]) : nil } ?? 8080
let maxBodyBytes = 1 << 20
// A handled outcome of scripts/alerts.lua (request 2), with its newline, as `serve` answers it.
let outcome = ByteBuffer(string: #"""
    {"id":2,"status":"handled","kind":"event","value":{"queue":"platform","title":"P99 LATENCY 800 MS","type":"Ticket"},"by":"/org/platform","responder":"scripts/alerts.lua:59"}

    """#)

let router = Router()
router.post("/v1/dispatch") { request, _ -> Response in
    _ = try await request.body.collect(upTo: maxBodyBytes)
    return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: outcome))
}
let app = Application(
    router: router,
    configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: "floor-server"),
    onServerRunning: { channel in
        let line = "floor-server: listening on http://127.0.0.1:\(channel.localAddress?.port ?? 0)\n"
        _ = line.withCString { write(2, $0, strlen($0)) }
    }
)
// SIGTERM and SIGINT end the process at once (nothing to drain). A plain handler and a main
// thread that only waits: valgrind 3.19 fails under ServiceLifecycle's signal sources and an
// async main.
for stop in [SIGTERM, SIGINT] { signal(stop) { _ in _exit(0) } }
Task.detached {
    do {
        try await app.runService(gracefulShutdownSignals: [])
    } catch {
        let message = "floor-server: \(error)\n"
        _ = message.withCString { write(2, $0, strlen($0)) }
        _exit(1)
    }
    _exit(0)
}
while true { pause() }
#else
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
let message = "floor-server: build with --traits Server\n"
_ = message.withCString { write(2, $0, strlen($0)) }
exit(2)
#endif
