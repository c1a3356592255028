#if Server
import Foundation
import Hummingbird
import HummingbirdTesting
import LuaHierarchy
import Synchronization
@testable import LuaHierarchyServer
import Testing

/// The routes of `luahier serve` in process, through HummingbirdTesting's router client: what
/// each answers, with which status, and what it counts (contract §9). No socket, no signal, no
/// clock: what only shows over a connection or in the process's life is in luahierTests.
@Suite("The server's routes, in process (contract §9)")
struct RouteTests {
    static func rules(version: Int) -> String {
        """
        local VERSION = \(version)
        local app = hier.root:child("app")
        app:receiveEvent("Ask", function(e) return {type = "Answer", version = VERSION} end)
        app:receiveEvent("Loop", function() while true do end end)
        app:handleError("Fault", function(e) return "handled" end)
        app:receiveEvent("Hold", function() hold() end)
        """
    }

    /// A server over a pool of `rules.lua` in a folder of its own (so that a test can change
    /// the file and reload it), and that file.
    static func server(
        version: Int = 1, workers: Int = 1, configure: (inout RulesPool.Options, inout RulesServer.Options) -> Void = { _, _ in }
    ) throws -> (server: RulesServer, rules: URL) {
        let folder = URL(fileURLWithPath: "/tmp/lhroutes-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let rules = folder.appendingPathComponent("rules.lua")
        try Self.rules(version: version).write(to: rules, atomically: true, encoding: .utf8)
        var poolOptions = RulesPool.Options(rulesFile: rules.path, workers: workers)
        var serverOptions = RulesServer.Options()
        configure(&poolOptions, &serverOptions)
        let pool = try RulesPool(options: poolOptions)
        return (RulesServer(pool: pool, options: serverOptions), rules)
    }

    static let json: HTTPFields = [.contentType: "application/json"]
    static let ndjson: HTTPFields = [.contentType: "application/x-ndjson"]

    static func object(_ response: TestResponse) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(buffer: response.body))) as? [String: Any] ?? [:]
    }

    /// The one error shape's `error` member: `{"type", "message"}`.
    static func error(_ response: TestResponse) -> [String: Any]? {
        object(response)["error"] as? [String: Any]
    }

    static func lines(_ response: TestResponse) -> [[String: Any]] {
        String(buffer: response.body).split(separator: "\n").map {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] ?? [:]
        }
    }

    static func metrics(_ client: some TestClientProtocol) async throws -> String {
        try await client.execute(uri: "/metrics", method: .get) { String(buffer: $0.body) }
    }

    /// A pool whose rules' `hold()` holds its state until `release` is signalled, with a
    /// `maxWait` of 0.2 s and no dispatch time limit: the one state busy for as long as a
    /// test likes, for the overload answers. `holds` counts the holds begun.
    static func holdUntil(_ release: DispatchSemaphore, _ holds: Holds, _ pool: inout RulesPool.Options) {
        pool.maxWait = 0.2
        pool.hierarchy.limits.dispatchTime = nil
        pool.hierarchy.limits.time = nil   // (else a request's dispatch takes the chunk's)
        pool.setup = { hierarchy in
            hierarchy.register(function: "hold") { _ in
                holds.begun.withLock { $0 += 1 }
                _ = release.wait(timeout: .now() + 600)   // a bound against hangs only
                return .null
            }
        }
    }

    /// The holds `hold()` began, and the `Hold` requests answered.
    final class Holds: Sendable {
        let begun = Mutex(0)
        let answered = Mutex(0)
    }

    /// Holds the pool's one state with a `Hold` request, and returns the task of its answer
    /// (which comes once the hold is released). A request refused before it held (it waited
    /// past `maxWait` for a state that a loaded machine was slow to start) is sent again.
    static func holdTheState(_ client: some TestClientProtocol, _ holds: Holds) async throws -> Task<TestResponse, any Error> {
        for _ in 1...50 {
            let (begun, answered) = (holds.begun.withLock { $0 }, holds.answered.withLock { $0 })
            let held = Task {
                defer { holds.answered.withLock { $0 += 1 } }
                return try await client.execute(uri: "/v1/dispatch", method: .post, body: ByteBuffer(string: #"{"at": "/app", "event": "Hold"}"#))
            }
            let holding = await eventually {
                holds.begun.withLock { $0 } > begun || holds.answered.withLock { $0 } > answered
            }
            if holding && holds.begun.withLock({ $0 }) > begun { return held }
            if !holding { held.cancel() }
            _ = try? await held.value
        }
        throw NeverHeld()
    }

    /// No `Hold` request held the state in 50 tries.
    struct NeverHeld: Error {}

    /// Polls `condition` until it holds; false past `seconds` (a bound against hangs only).
    /// It is asked once more after the bound: on a loaded machine one sleep may outlast it.
    /// The bound is long: tests that block threads run beside these ones, and on a loaded
    /// 2-core machine they can keep a task of this test from running for over a minute (a
    /// 60 s bound was seen to run out under `tools/loaded-suite.sh`), though the event comes.
    static func eventually(within seconds: Double = 600, _ condition: () async throws -> Bool) async rethrows -> Bool {
        let giveUpAt = ContinuousClock.now + .seconds(seconds)
        while true {
            if try await condition() { return true }
            if ContinuousClock.now >= giveUpAt { return false }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    @Test func aSingleRequestIsAnsweredWithItsOutcome() async throws {
        let (server, _) = try Self.server()
        try await server.application().test(.router) { client in
            let one = try await client.execute(
                uri: "/v1/dispatch", method: .post, headers: Self.json, body: ByteBuffer(string: #"{"id": 7, "at": "/app", "event": "Ask"}"#))
            #expect(one.status == .ok)
            #expect(one.headers[.contentType] == "application/json")
            let answer = Self.object(one)
            #expect(answer["id"] as? Int == 7)
            #expect(answer["status"] as? String == "unhandled")
            #expect((answer["value"] as? [String: Any])?["version"] as? Int == 1)
            let revision = try #require(answer["revision"] as? [String: Any])
            #expect(revision["number"] as? Int == 1)
            #expect((revision["hash"] as? String)?.count == 16)
            #expect(answer["line"] == nil)

            let handled = Self.object(try await client.execute(
                uri: "/v1/dispatch", method: .post, body: ByteBuffer(string: #"{"at": "/app", "error": {"type": "Fault"}}"#)))
            #expect(handled["status"] as? String == "handled")
            #expect((handled["responder"] as? String)?.hasSuffix("rules.lua:5") == true, "\(handled)")
        }
    }

    /// JSON Lines by any of its names is a batch; JSON is one request.
    @Test(arguments: ["application/jsonl", "application/x-jsonlines; charset=utf-8", "Application/X-NDJSON"])
    func jsonLinesByAnyNameIsABatch(_ type: String) async throws {
        let (server, _) = try Self.server()
        try await server.application().test(.router) { client in
            let body = #"{"id": 1, "at": "/app", "event": "Ask"}"# + "\n" + #"{"id": 2, "at": "/app", "event": "Ask"}"#
            let reply = try await client.execute(
                uri: "/v1/dispatch", method: .post, headers: [.contentType: type], body: ByteBuffer(string: body))
            #expect(reply.status == .ok)
            #expect(Self.lines(reply).map { $0["id"] as? Int } == [1, 2])
        }
    }

    /// `Content-Type` holds one value: sent twice alike it is that value; sent twice with
    /// different values the request is refused, 400 `ConflictingContentType`, never read as
    /// a JSON request it may not be.
    @Test func aContentTypeSentTwiceIsOneValueOrRefused() async throws {
        let (server, _) = try Self.server()
        try await server.application().test(.router) { client in
            let body = #"{"id": 1, "at": "/app", "event": "Ask"}"# + "\n" + #"{"id": 2, "at": "/app", "event": "Ask"}"#
            func headers(_ types: [String]) -> HTTPFields {
                var fields = HTTPFields()
                fields[values: .contentType] = types
                return fields
            }
            let twice = try await client.execute(
                uri: "/v1/dispatch", method: .post, headers: headers(["application/x-ndjson", "application/x-ndjson"]),
                body: ByteBuffer(string: body))
            #expect(twice.status == .ok)
            #expect(Self.lines(twice).map { $0["id"] as? Int } == [1, 2])
            for types in [["application/x-ndjson", "application/json"], ["application/json", "application/x-ndjson"]] {
                let conflicting = try await client.execute(
                    uri: "/v1/dispatch", method: .post, headers: headers(types), body: ByteBuffer(string: body))
                #expect(conflicting.status == .badRequest)
                #expect(Self.object(conflicting)["status"] as? String == "invalid")
                let error = Self.error(conflicting)
                #expect(error?["type"] as? String == "ConflictingContentType", "\(String(buffer: conflicting.body))")
                #expect(error?["where"] as? String == "request")
                #expect((error?["message"] as? String)?.contains("'\(types[0])', '\(types[1])'") == true)
            }
            // One field line whose value holds a comma is one value.
            let quoted = try await client.execute(
                uri: "/v1/dispatch", method: .post, headers: headers([#"application/x-ndjson; profile="a,b""#]),
                body: ByteBuffer(string: body))
            #expect(quoted.status == .ok)
            #expect(Self.lines(quoted).count == 2)
        }
    }

    @Test func aBatchAnswersEachLineInOrderFromOneRevision() async throws {
        let (server, _) = try Self.server(workers: 2)
        try await server.application().test(.router) { client in
            let body = "{\"at\":\"/app\",\"event\":\"Ask\"}\n\n{\"at\":\"/nowhere\",\"event\":\"Ask\"}\n{\"at\":\"/app\",\"error\":{\"type\":\"Fault\"}}\n"
            let batch = try await client.execute(uri: "/v1/dispatch", method: .post, headers: Self.ndjson, body: ByteBuffer(string: body))
            #expect(batch.status == .ok)
            #expect(batch.headers[.contentType] == "application/x-ndjson")
            let lines = Self.lines(batch)
            #expect(lines.map { $0["line"] as? Int } == [1, 3, 4])
            #expect(lines.map { $0["status"] as? String } == ["unhandled", "invalid", "handled"])
            #expect((lines[1]["error"] as? [String: Any])?["where"] as? String == "request:3")
            #expect(Set(lines.map { ($0["revision"] as? [String: Any])?["number"] as? Int }) == [1])
            // An empty batch answers nothing, and says so with 200.
            let empty = try await client.execute(uri: "/v1/dispatch", method: .post, headers: Self.ndjson, body: ByteBuffer())
            #expect(empty.status == .ok)
            #expect(empty.body.readableBytes == 0)
            let metrics = try await Self.metrics(client)
            #expect(metrics.contains(#"luahier_outcomes_total{status="invalid"} 1"#), "\(metrics)")
            #expect(metrics.contains(#"luahier_outcomes_total{status="handled"} 1"#))
        }
    }

    @Test func badBodiesGetInvalidOutcomesAndCountedRefusals() async throws {
        let (server, _) = try Self.server { _, server in server.maxBodyBytes = 4 << 10 }
        try await server.application().test(.router) { client in
            let cases: [(String, String)] = [
                (#"{"at": "/app""#, "InvalidJSON"),
                ("", "InvalidJSON"),
                ("[1, 2]", "InvalidRequest"),
                (#"{"at": "/app"}"#, "InvalidRequest"),
                (#"{"at": "/nowhere", "event": "Ask"}"#, "NoSuchNode"),
                (#"{"at": "/app", "event": 12}"#, "InvalidRequest"),
                (#"{"at": "/app", "event": "Ask", "extra": 1}"#, "InvalidRequest"),
                ("\u{FF}\u{FE}garbage", "InvalidJSON"),
            ]
            for (body, type) in cases {
                let reply = try await client.execute(uri: "/v1/dispatch", method: .post, body: ByteBuffer(string: body))
                #expect(reply.status == .badRequest, "\(body)")
                #expect(Self.object(reply)["status"] as? String == "invalid", "\(body)")
                #expect((Self.object(reply)["error"] as? [String: Any])?["type"] as? String == type, "\(body): \(String(buffer: reply.body))")
            }
            // Over the limit: said up front (Content-Length) or found while reading.
            let large = ByteBuffer(repeating: UInt8(ascii: "x"), count: 64 << 10)
            let announced = try await client.execute(
                uri: "/v1/dispatch", method: .post, headers: [.contentLength: String(64 << 10)], body: large)
            #expect(announced.status == .contentTooLarge)
            #expect((Self.object(announced)["error"] as? [String: Any])?["type"] as? String == "BodyTooLarge")
            let found = try await client.execute(uri: "/v1/dispatch", method: .post, body: large)
            #expect(found.status == .contentTooLarge)
            let gzip = try await client.execute(
                uri: "/v1/dispatch", method: .post, headers: [.contentEncoding: "gzip"], body: ByteBuffer(string: #"{"at": "/app", "event": "Ask"}"#))
            #expect(gzip.status == .unsupportedMediaType)
            #expect((Self.object(gzip)["error"] as? [String: Any])?["type"] as? String == "UnsupportedContentEncoding")
            #expect(Self.object(gzip)["status"] as? String == "invalid")
            let after = try await client.execute(uri: "/v1/dispatch", method: .post, body: ByteBuffer(string: #"{"at": "/app", "event": "Ask"}"#))
            #expect(after.status == .ok)
            let metrics = try await Self.metrics(client)
            #expect(metrics.contains(#"luahier_http_requests_total{code="413",method="POST",route="/v1/dispatch"} 2"#), "\(metrics)")
            #expect(metrics.contains(#"luahier_http_requests_total{code="415",method="POST",route="/v1/dispatch"} 1"#))
            #expect(metrics.contains(#"luahier_http_requests_total{code="400",method="POST",route="/v1/dispatch"} 8"#))
            #expect(metrics.contains(#"luahier_outcomes_total{status="invalid"} 11"#))
        }
    }

    @Test func wrongMethodsAndUnknownPathsAreRefusedAndCounted() async throws {
        let (server, _) = try Self.server()
        try await server.application().test(.router) { client in
            for method in [HTTPRequest.Method.get, .put, .delete, .options] {
                let reply = try await client.execute(uri: "/v1/dispatch", method: method)
                #expect(reply.status == .methodNotAllowed, "\(method)")
                #expect(reply.headers[.allow] == "POST")
                #expect(Self.error(reply)?["type"] as? String == "MethodNotAllowed")
            }
            let missing = try await client.execute(uri: "/no/such/route", method: .get)
            #expect(missing.status == .notFound)
            #expect(Self.error(missing)?["type"] as? String == "NotFound")
            #expect((Self.error(missing)?["message"] as? String)?.contains("/v1/dispatch") == true)
            let metrics = try await Self.metrics(client)
            for method in ["GET", "PUT", "DELETE", "OPTIONS"] {
                #expect(metrics.contains(#"luahier_http_requests_total{code="405",method="\#(method)",route="/v1/dispatch"} 1"#), "\(metrics)")
            }
            #expect(metrics.contains(#"luahier_http_requests_total{code="404",method="GET",route="unmatched"} 1"#), "\(metrics)")
        }
    }

    @Test func healthAndMetricsSayTheRevisionAndTheWorkers() async throws {
        let (server, rules) = try Self.server(workers: 3)
        try await server.application().test(.router) { client in
            let health = try await client.execute(uri: "/healthz", method: .get)
            #expect(health.status == .ok)
            #expect(health.headers[.contentType] == "application/json")
            let body = Self.object(health)
            #expect(body["status"] as? String == "ready")
            #expect(body["workers"] as? Int == 3)
            let revision = try #require(body["revision"] as? [String: Any])
            #expect(revision["number"] as? Int == 1)
            #expect(revision["files"] as? [String] == [rules.path])
            #expect(body["lastReloadError"] == nil)
            let metrics = try await client.execute(uri: "/metrics", method: .get)
            #expect(metrics.headers[.contentType] == "text/plain; version=0.0.4; charset=utf-8")
            let text = String(buffer: metrics.body)
            for line in ["luahier_revision 1.0", "luahier_workers 3.0", "luahier_pool_waiting 0.0", "luahier_reload_failing 0.0"] {
                #expect(text.contains(line), "\(line) in \(text)")
            }
            #expect(text.contains(#"luahier_build_info{version="\#(PackageVersion.number)",lua="\#(Hierarchy.luaVersion)"} 1.0"#), "\(text)")
            // The process's own, read now: a process with memory, open files, CPU time and a start.
            func value(_ name: String) -> Double? {
                text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Double($0.split(separator: " ")[1]) }
            }
            #expect((value("process_resident_memory_bytes") ?? 0) > 1_048_576)
            #expect((value("process_virtual_memory_bytes") ?? 0) >= (value("process_resident_memory_bytes") ?? 0))
            #expect((value("process_open_fds") ?? 0) >= 3)
            #expect((value("process_cpu_seconds_total") ?? 0) > 0)
            let started = value("process_start_time_seconds") ?? 0
            #expect(started > 1.6e9 && started <= Date().timeIntervalSince1970 + 1)
        }
    }

    @Test func livenessAndReadinessAnswerGetAndHead() async throws {
        let (server, _) = try Self.server(workers: 2)
        try await server.application().test(.router) { client in
            let live = try await client.execute(uri: "/livez", method: .get)
            #expect(live.status == .ok)
            #expect(Self.object(live)["status"] as? String == "live")
            for path in ["/readyz", "/healthz"] {
                let ready = try await client.execute(uri: path, method: .get)
                #expect(ready.status == .ok)
                #expect(ready.headers[.contentType] == "application/json")
                let body = Self.object(ready)
                #expect(body["status"] as? String == "ready")
                #expect(body["reason"] == nil)
                #expect((body["revision"] as? [String: Any])?["number"] as? Int == 1)
            }
            for path in ["/livez", "/readyz", "/healthz"] {
                let head = try await client.execute(uri: path, method: .head)
                #expect(head.status == .ok, "HEAD \(path)")
                #expect(head.body.readableBytes == 0, "HEAD \(path)")
            }
            #expect(try await Self.metrics(client).contains("luahier_ready 1.0"))
        }
    }

    /// The only state held by a rule that waits for the test: once it has been busy for
    /// `maxWait`, a new request would be refused, and `/readyz` says so until it is free.
    @Test func readinessFailsWhileEveryStateIsBusyPastMaxWait() async throws {
        let release = DispatchSemaphore(value: 0)
        let holds = Holds()
        let (server, _) = try Self.server { pool, _ in RouteTests.holdUntil(release, holds, &pool) }
        try await server.application().test(.router) { client in
            let held = try await Self.holdTheState(client, holds)
            #expect(server.pool.load.idle == 0)
            #expect(try await Self.eventually { try await client.execute(uri: "/readyz", method: .get).status == .serviceUnavailable })
            let notReady = try await client.execute(uri: "/readyz", method: .get)
            let body = Self.object(notReady)
            #expect(body["status"] as? String == "not ready")
            #expect(body["reason"] as? String == "overloaded")
            #expect((body["allBusyFor"] as? Double ?? 0) >= 0.2, "\(body)")
            #expect(try await client.execute(uri: "/healthz", method: .get).status == .serviceUnavailable)
            let head = try await client.execute(uri: "/readyz", method: .head)
            #expect(head.status == .serviceUnavailable)
            #expect(head.body.readableBytes == 0)
            #expect(try await client.execute(uri: "/livez", method: .get).status == .ok)
            #expect(try await Self.metrics(client).contains("luahier_ready 0.0"))
            // What readiness foretold: a request now is refused once its wait runs out.
            let refused = try await client.execute(
                uri: "/v1/dispatch", method: .post, body: ByteBuffer(string: #"{"at": "/app", "event": "Ask"}"#))
            #expect(refused.status == .serviceUnavailable)
            release.signal()
            #expect(try await held.value.status == .ok)
            #expect(try await Self.eventually { try await client.execute(uri: "/readyz", method: .get).status == .ok })
            #expect(try await Self.metrics(client).contains("luahier_ready 1.0"))
        }
    }

    /// SIGTERM's drain does not wait on rules still loading: a reload or a candidate's load
    /// under way when the drain begins is answered 503 `ShuttingDown` at once, and the load
    /// goes on to the process's end (an attacker's find: the drain waited 18 s for one).
    @Test func aLoadUnderWayDoesNotHoldTheDrain() async throws {
        let answers = try await Self.loadsAnsweredAsTheDrainBegins()
        #expect(answers.map(\.response.status) == [.serviceUnavailable, .serviceUnavailable])
        for answer in answers {
            #expect(Self.object(answer.response)["error"].flatMap { ($0 as? [String: Any])?["type"] as? String } == "ShuttingDown")
        }
    }

    /// `POST /v1/reload`, then `POST /v1/shadow`, each to a server of its own and of rules that
    /// hold their load until the drain has begun (and the answer came, or the wait's bound
    /// passed): their answers, with each request's method and path.
    static func loadsAnsweredAsTheDrainBegins() async throws -> [(response: TestResponse, method: HTTPRequest.Method, path: String)] {
        var answers: [(response: TestResponse, method: HTTPRequest.Method, path: String)] = []
        for path in ["/v1/reload", "/v1/shadow"] {
            let release = DispatchSemaphore(value: 0)
            let holds = Holds()
            let (server, rules) = try Self.server { pool, server in
                RouteTests.holdUntil(release, holds, &pool)
                server.reloadEndpoint = true
            }
            // Only the rules the route loads hold: the live ones for a reload, else a candidate.
            let held = path == "/v1/reload" ? rules : rules.deletingLastPathComponent().appendingPathComponent("candidate.lua")
            try (Self.rules(version: 2) + "\nhold()\n").write(to: held, atomically: true, encoding: .utf8)
            let body = path == "/v1/reload" ? ByteBuffer() : ByteBuffer(string: #"{"rules": "\#(held.path)"}"#)
            answers.append(try await server.application().test(.router) { client in
                let load = Task {
                    defer { holds.answered.withLock { $0 += 1 } }
                    return try await client.execute(uri: path, method: .post, body: body)
                }
                #expect(await Self.eventually { holds.begun.withLock { $0 } >= 1 }, "\(path)")
                server.draining.withLock { $0 = true }
                // Answered while the load still holds its state (a bound against a hang only).
                #expect(await Self.eventually { holds.answered.withLock { $0 } == 1 }, "\(path)")
                // Asked for during the drain, no load starts: the hold is not begun again.
                let during = try await client.execute(uri: path, method: .post, body: body)
                #expect(during.status == .serviceUnavailable && holds.begun.withLock { $0 } == 1, "\(path)")
                for _ in 1...4 { release.signal() }
                return (try await load.value, .post, path)
            })
        }
        return answers
    }

    /// A runaway rule fails only its own request; each limit is set alone, so which trips is
    /// never a race between them.
    @Test(arguments: ["time", "memory"])
    func aRunawayRuleFailsOnlyItsOwnRequest(_ limit: String) async throws {
        let (server, _) = try Self.server { pool, _ in
            if limit == "time" {
                pool.hierarchy.limits.dispatchTime = 0.5
            } else {
                // (A request's dispatch with no time limit of its own would take the chunk's.)
                pool.hierarchy.limits.time = nil
                pool.hierarchy.limits.dispatchTime = nil
                pool.hierarchy.limits.memory = 64 << 20
            }
        }
        let bomb = limit == "time" ? "Loop" : "Bomb"
        if limit == "memory" {
            try (Self.rules(version: 1) + """

                app:receiveEvent("Bomb", function()
                  local t = {}
                  for i = 1, 1e9 do t[i] = string.rep("x", 100000) .. i end
                end)
                """).write(toFile: server.pool.revision.files[0], atomically: true, encoding: .utf8)
            _ = await server.pool.reload()
        }
        try await server.application().test(.router) { client in
            let reply = try await client.execute(
                uri: "/v1/dispatch", method: .post, body: ByteBuffer(string: #"{"at": "/app", "event": "\#(bomb)"}"#))
            #expect(reply.status == .ok)
            #expect(Self.object(reply)["status"] as? String == "unhandled")
            let expected = limit == "time" ? "TimeLimitExceeded" : "MemoryLimitExceeded"
            #expect((Self.object(reply)["value"] as? [String: Any])?["type"] as? String == expected, "\(String(buffer: reply.body))")
            // An Ask is under the same 0.5 s: one that ran out of it is asked again, and counted,
            // if the wall clock, read here around it, shows that much passed (a loaded machine,
            // not a trip the runaway left behind). Sooner, it is a failure.
            var slowTrips = 0
            for _ in 0..<3 {
                while true {
                    let asked = ContinuousClock.now
                    let next = try await client.execute(uri: "/v1/dispatch", method: .post, body: ByteBuffer(string: #"{"at": "/app", "event": "Ask"}"#))
                    let value = Self.object(next)["value"] as? [String: Any]
                    if limit == "time", value?["type"] as? String == expected, ContinuousClock.now - asked >= .seconds(0.45), slowTrips < 100 {
                        slowTrips += 1
                        continue
                    }
                    #expect(value?["version"] as? Int == 1, "\(String(buffer: next.body))")
                    break
                }
            }
            let metrics = try await Self.metrics(client)
            #expect(metrics.contains(#"luahier_limit_trips_total{limit="\#(limit)"} \#(1 + slowTrips)"#), "\(metrics)")
            #expect(metrics.contains(#"luahier_rule_errors_total{type="\#(expected)"} \#(1 + slowTrips)"#), "\(metrics)")
        }
    }

    /// The failure metrics count what the engine saw, not what an outcome says: a client's
    /// error value typed as a limit's, or a rule's own error of that type, counts nothing; a
    /// raise that a responder caught still counts. Single requests and batch lines alike.
    @Test func failureMetricsCannotBeSpoofedByAnOutcomesType() async throws {
        let (server, rules) = try Self.server()
        try (Self.rules(version: 1) + """

            app:receiveEvent("OwnTrip", function(e) error({type = "TimeLimitExceeded", message = "a rule's own"}) end)
            local caught = app:child("caught")
            caught:receiveEvent("Raise", function(e) local x = nil; return x.y end)
            caught:catchError("LuaError", function(err) return {type = "Recovered"} end)
            caught:receiveEvent("Recovered", function() return "handled" end)
            """).write(to: rules, atomically: true, encoding: .utf8)
        _ = await server.pool.reload()
        try await server.application().test(.router) { client in
            let requests = [
                #"{"at": "/app", "error": {"type": "TimeLimitExceeded", "message": "a client's"}}"#,
                #"{"at": "/app", "error": {"type": "MemoryLimitExceeded"}}"#,
                #"{"at": "/app", "error": {"type": "LuaError"}}"#,
                #"{"at": "/app", "event": "OwnTrip"}"#,
                #"{"at": "/app/caught", "event": "Raise"}"#,
            ]
            for request in requests {
                let reply = try await client.execute(uri: "/v1/dispatch", method: .post, body: ByteBuffer(string: request))
                #expect(reply.status == .ok)
            }
            _ = try await client.execute(
                uri: "/v1/dispatch", method: .post, headers: Self.ndjson, body: ByteBuffer(string: requests.joined(separator: "\n")))
            let metrics = try await Self.metrics(client)
            for limit in ["time", "instructions", "memory"] {
                #expect(metrics.contains(#"luahier_limit_trips_total{limit="\#(limit)"} 0"#), "\(metrics)")
            }
            #expect(metrics.contains(#"luahier_rule_errors_total{type="LuaError"} 2"#), "\(metrics)")
            // Shown from the start, at 0: a spoofed type counts nothing.
            #expect(metrics.contains(#"luahier_rule_errors_total{type="TimeLimitExceeded"} 0"#), "\(metrics)")
            #expect(metrics.contains(#"luahier_rule_errors_total{type="MemoryLimitExceeded"} 0"#), "\(metrics)")
        }
    }

    /// A rule that raises answers 200 and `unhandled`, as an event no rule claims and an error
    /// a rule reports of its own do: the metrics count it apart, by the error's type, so a bad
    /// deploy does not look like traffic. Single requests and batch lines alike.
    @Test func ruleErrorsAreCountedApartFromUnhandledOutcomes() async throws {
        let (server, rules) = try Self.server()
        try (Self.rules(version: 1) + """

            app:receiveEvent("Broken", function(e) return e.missing.field end)
            app:receiveEvent("Odd", function(e) return 42 end)
            app:receiveEvent("Own", function(e) return {type = "OutOfStock"} end)
            """).write(to: rules, atomically: true, encoding: .utf8)
        _ = await server.pool.reload()
        try await server.application().test(.router) { client in
            for event in ["Broken", "Odd", "Own", "Nobody"] {
                let reply = try await client.execute(
                    uri: "/v1/dispatch", method: .post, body: ByteBuffer(string: #"{"at": "/app", "event": "\#(event)"}"#))
                #expect(reply.status == .ok)
                #expect(Self.object(reply)["status"] as? String == "unhandled", "\(event)")
            }
            let batch = [#"{"at": "/app", "event": "Broken"}"#, #"{"at": "/app", "event": "Nobody"}"#].joined(separator: "\n")
            _ = try await client.execute(uri: "/v1/dispatch", method: .post, headers: Self.ndjson, body: ByteBuffer(string: batch))
            let metrics = try await Self.metrics(client)
            #expect(metrics.contains(#"luahier_rule_errors_total{type="LuaError"} 2"#), "\(metrics)")
            #expect(metrics.contains(#"luahier_rule_errors_total{type="ResponderContractError"} 1"#), "\(metrics)")
            #expect(metrics.contains(#"luahier_outcomes_total{status="unhandled"} 6"#), "\(metrics)")
            #expect(!metrics.contains("OutOfStock"))
            // The rules' own time, apart from HTTP: each request, and the batch as a whole.
            #expect(metrics.contains(#"luahier_evaluation_seconds_count{kind="request"} 4"#), "\(metrics)")
            #expect(metrics.contains(#"luahier_evaluation_seconds_count{kind="batch"} 1"#), "\(metrics)")
        }
    }

    @Test func reloadOverHTTPIsOffUnlessAskedFor() async throws {
        let (server, _) = try Self.server()
        try await server.application().test(.router) { client in
            let reply = try await client.execute(uri: "/v1/reload", method: .post)
            #expect(reply.status == .forbidden)
            #expect(String(buffer: reply.body).contains("--reload-endpoint"))
        }
    }

    @Test func aBadRulesFileOnReloadLeavesTheRunningRevision() async throws {
        let (server, rules) = try Self.server { _, server in server.reloadEndpoint = true }
        try await server.application().test(.router) { client in
            try "local broken = (".write(to: rules, atomically: true, encoding: .utf8)
            let reload = try await client.execute(uri: "/v1/reload", method: .post)
            #expect(reload.status == .unprocessableContent)
            #expect(Self.object(reload)["result"] as? String == "failed")
            #expect(Self.object(reload)["revision"] as? Int == 1)
            #expect((Self.error(reload)?["message"] as? String)?.contains("rules.lua:1:") == true, "\(String(buffer: reload.body))")
            #expect(Self.error(reload)?["type"] as? String == "ReloadFailed")
            let answer = try await client.execute(uri: "/v1/dispatch", method: .post, body: ByteBuffer(string: #"{"at": "/app", "event": "Ask"}"#))
            #expect((Self.object(answer)["value"] as? [String: Any])?["version"] as? Int == 1)
            let health = Self.object(try await client.execute(uri: "/healthz", method: .get))
            #expect(health["status"] as? String == "ready")
            #expect(((health["lastReloadError"] as? [String: Any])?["message"] as? String)?.contains("rules.lua:1:") == true)
            let metrics = try await Self.metrics(client)
            #expect(metrics.contains(#"luahier_reloads_total{result="failed"} 1"#))
            #expect(metrics.contains("luahier_reload_failing 1.0"))

            // Mended: the next reload loads revision 2 and clears the error; an unchanged one
            // keeps it.
            try Self.rules(version: 2).write(to: rules, atomically: true, encoding: .utf8)
            let mended = try await client.execute(uri: "/v1/reload", method: .post)
            #expect(mended.status == .ok)
            #expect(Self.object(mended)["result"] as? String == "loaded")
            #expect(Self.object(mended)["revision"] as? Int == 2)
            let again = try await client.execute(uri: "/v1/reload", method: .post)
            #expect(Self.object(again)["result"] as? String == "unchanged")
            #expect(Self.object(try await client.execute(uri: "/healthz", method: .get))["lastReloadError"] == nil)
            let after = Self.object(try await client.execute(
                uri: "/v1/dispatch", method: .post, body: ByteBuffer(string: #"{"at": "/app", "event": "Ask"}"#)))
            #expect((after["value"] as? [String: Any])?["version"] as? Int == 2)
            #expect((after["revision"] as? [String: Any])?["number"] as? Int == 2)
            let counted = try await Self.metrics(client)
            #expect(counted.contains(#"luahier_reloads_total{result="loaded"} 1"#))
            #expect(counted.contains(#"luahier_reloads_total{result="unchanged"} 1"#))
            #expect(counted.contains("luahier_reload_failing 0.0"))
        }
    }
}
#endif
