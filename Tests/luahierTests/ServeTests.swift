#if Server
import Foundation
import Synchronization
import Testing

/// `luahier serve` against a real server on loopback, through a plain HTTP client (contract §9).
@Suite("luahier serve (contract §9)", .serialized, .ownThreads)
struct ServeTests {
    /// Rules whose answers say which version of the file answered them.
    static func rules(version: Int) -> String {
        """
        local VERSION = \(version)
        local app = hier.root:child("app")
        app:receiveEvent("Ask", function(e) return {type = "Answer", version = VERSION} end)
        app:handleEvent("Slow", function(e) print("slow started")
          local start = os.clock()
          while os.clock() - start < e.seconds do end
          return "handled"
        end)
        app:receiveEvent("Loop", function() while true do end end)
        app:handleError("Fault", function(e) return "handled" end)
        app:handleEvent("Gate", function(e) print("waiting for " .. e.gate)
          while not io.open(e.gate) do end
          return "handled"
        end)
        """
    }

    /// A `Gate` event: its rule (run with `--unsafe`, for `io`) holds its state until a file
    /// is at `path`, which the test makes when it is ready: busy for as long as the test needs,
    /// however slowly the machine runs.
    static func gate(_ path: String) -> String {
        #"{"at": "/app", "event": {"type": "Gate", "gate": "\#(path)"}}"#
    }

    /// A path for a gate file, in a folder of its own (nothing is there until the test makes it).
    static func gatePath() throws -> String {
        URL(fileURLWithPath: try Luahier.script("", name: "x.lua")).deletingLastPathComponent().appendingPathComponent("gate").path
    }

    /// Opens the gate at `path`.
    static func openGate(_ path: String) {
        _ = FileManager.default.createFile(atPath: path, contents: nil)
    }

    /// A folder holding `rules.lua` at `version`: the server runs there, so messages name
    /// `rules.lua`.
    static func folder(version: Int = 1, rules: String? = nil) throws -> URL {
        URL(fileURLWithPath: try Luahier.script(rules ?? Self.rules(version: version), name: "rules.lua")).deletingLastPathComponent()
    }

    @Test func reloadUnderLoadAnswersEveryRequestFromOneWholeRevision() throws {
        let folder = URL(fileURLWithPath: try Luahier.script("", name: "x.lua")).deletingLastPathComponent()
        let rules = folder.appendingPathComponent("rules.lua")
        try Self.rules(version: 1).write(to: rules, atomically: true, encoding: .utf8)
        // No clock: with 4 clients on 2 states a request may wait long for one on a loaded
        // machine, and a line or batch may run long; what is tested is the revisions.
        let server = try ServerProcess(
            ["rules.lua", "--workers", "2", "--watch", "--max-wait", "600", "--timeout", "0", "--dispatch-timeout", "0"], in: folder)
        defer { server.stop() }
        // The watcher has taken its first look at the files (see the --watch test of dispatch).
        server.signal(SIGHUP)
        #expect(server.waitForStderr { $0.contains("found the rules unchanged") })

        // Clients send single requests and batches without a pause while the rules change.
        let stop = Locked(false)
        // Set however the test ends: the clients' threads end with it.
        defer { stop.mutate { $0 = true } }
        let seen = Locked<[(revision: String, versions: Set<Int>, status: Int)]>([])
        let failures = Locked<[String]>([])
        let clients = Clients(4) { client in
                while !stop.value {
                    do {
                        let reply = client % 2 == 0
                            ? try server.post("/v1/dispatch", #"{"at": "/app", "event": "Ask"}"#)
                            : try server.post(
                                "/v1/dispatch", String(repeating: "{\"at\":\"/app\",\"event\":\"Ask\"}\n", count: 50),
                                headers: ["Content-Type": "application/x-ndjson"])
                        let answers = client % 2 == 0 ? [reply.json] : reply.lines
                        let revisions = Set(answers.map { "\(($0["revision"] as? [String: Any])?["number"] ?? "none")" })
                        let versions = Set(answers.compactMap { ($0["value"] as? [String: Any])?["version"] as? Int })
                        if revisions.count != 1 || answers.count != (client % 2 == 0 ? 1 : 50) {
                            failures.mutate { $0.append("mixed or missing answers: \(reply.text.prefix(300))") }
                        }
                        seen.mutate { $0.append((revisions.first ?? "none", versions, reply.status)) }
                    } catch {
                        failures.mutate { $0.append("\(error)") }
                    }
                }
        }
        // Three new versions: by --watch, by SIGHUP, by --watch again.
        // Each version is answered a few times before the next: counted, not timed.
        func answered(by revision: Int) -> Bool {
            Luahier.eventually(timeout: 600) { seen.value.filter { $0.revision == String(revision) }.count >= 8 || !failures.value.isEmpty }
        }
        for version in 2...4 {
            #expect(answered(by: version - 1))
            try Self.rules(version: version).write(to: rules, atomically: true, encoding: .utf8)
            if version == 3 { server.signal(SIGHUP) }
            #expect(server.waitForStderr { $0.contains("revision \(version) (sha256") })
        }
        #expect(answered(by: 4))
        stop.mutate { $0 = true }
        #expect(clients.allEnded())

        #expect(failures.value.isEmpty, "\(failures.value.prefix(3))")
        let answered = seen.value
        #expect(answered.count > 20)
        #expect(answered.allSatisfy { $0.status == 200 })
        // Each request saw one revision and that revision's version of the rules, never both.
        for answer in answered {
            #expect(answer.versions == [Int(answer.revision) ?? -1], "revision \(answer.revision) answered \(answer.versions)")
        }
        #expect(Set(answered.map(\.revision)).isSuperset(of: ["1", "4"]))
        let health = try server.get("/healthz").json
        #expect((health["revision"] as? [String: Any])?["number"] as? Int == 4)
        #expect(try server.get("/metrics").text.contains(#"luahier_reloads_total{result="loaded"} 3"#))
    }

    /// What the routes answer is tested in process (LuaHierarchyServerTests): here, what the
    /// binary says of a reload over HTTP on stderr.
    @Test func aReloadOverHTTPIsLoggedAndAFailedOneKeepsTheRevision() throws {
        let folder = URL(fileURLWithPath: try Luahier.script("", name: "x.lua")).deletingLastPathComponent()
        let rules = folder.appendingPathComponent("rules.lua")
        try Self.rules(version: 1).write(to: rules, atomically: true, encoding: .utf8)
        let server = try ServerProcess(["rules.lua", "--reload-endpoint"], in: folder)
        defer { server.stop() }
        try "local broken = (".write(to: rules, atomically: true, encoding: .utf8)
        #expect(try server.post("/v1/reload", "").status == 422)
        #expect(server.waitForStderr { $0.contains("failed, revision 1 (sha256") && $0.contains("rules.lua:1:") })
        try Self.rules(version: 2).write(to: rules, atomically: true, encoding: .utf8)
        #expect(try server.post("/v1/reload", "").status == 200)
        #expect(server.waitForStderr { $0.contains("revision 2 (sha256") })
        let after = try server.post("/v1/dispatch", #"{"at": "/app", "event": "Ask"}"#)
        #expect((after.json["value"] as? [String: Any])?["version"] as? Int == 2)
    }

    /// No clock decides what is in flight at the signal: two requests hold the two states at a
    /// gate the test opens only once the drain has begun, and two wait for a state meanwhile.
    @Test func sigtermAnswersEveryRequestInFlightThenExits() throws {
        let gate = try Self.gatePath()
        let server = try ServerProcess([
            try Luahier.script(Self.rules(version: 1), name: "rules.lua"), "--workers", "2", "--unsafe", "--max-wait", "600",
            "--dispatch-timeout", "0", "--timeout", "0", "--shutdown-grace", "600",
        ])
        defer {
            Self.openGate(gate)
            server.stop()
        }
        let replies = Locked<[Int]>([])
        let failures = Locked<[String]>([])
        let clients = Clients(4) { _ in
                do {
                    let reply = try server.post("/v1/dispatch", Self.gate(gate))
                    replies.mutate { $0.append(reply.json["status"] as? String == "handled" ? reply.status : -reply.status) }
                } catch {
                    failures.mutate { $0.append("\(error)") }
                    replies.mutate { $0.append(0) }
                }
        }
        // All four in: two held at the gate, two waiting for a state (until the gate opens).
        #expect(server.waitForMetric("luahier_pool_waiting", 2))
        let listener = try #require(server.listeningSocketInode)
        server.signal(SIGTERM)
        // The drain has begun once the listener is closed (what is in flight is noted first).
        #expect(Luahier.eventually(timeout: 600) { !server.holdsSocket(listener) })
        Self.openGate(gate)
        #expect(clients.allEnded())
        let status = server.waitForExit()
        #expect(replies.value == [200, 200, 200, 200], "\(failures.value) \(server.stderr)")
        #expect(status == 0)
        #expect(server.stderr.contains("luahier: stopped (SIGTERM); all 4 requests in flight were answered"), "\(server.stderr)")
        #expect(throws: (any Error).self) { try server.get("/healthz") }
    }

    /// The delay is long (600 s) and a second signal ends it, so no clock decides whether the
    /// requests below come within it.
    @Test func sigtermWithAShutdownDelayServesNotReadyThenExits() throws {
        let server = try ServerProcess([try Luahier.script(Self.rules(version: 1), name: "rules.lua"), "--shutdown-delay", "600"])
        defer { server.stop() }
        #expect(try server.get("/readyz").status == 200)
        server.signal(SIGTERM)
        #expect(server.waitForStderr { $0.contains("luahier: draining (SIGTERM)") }, "\(server.stderr)")
        let readiness = try server.get("/readyz")
        #expect(readiness.status == 503)
        #expect(readiness.json["status"] as? String == "not ready")
        #expect(readiness.json["reason"] as? String == "draining")
        #expect(try server.get("/livez").status == 200)
        #expect(try server.get("/metrics").text.contains("luahier_ready 0.0"))
        let answered = try server.post("/v1/dispatch", #"{"at": "/app", "event": "Ask"}"#)
        #expect(answered.status == 200)
        // A second signal ends the delay, well inside its 600 s; the drain exits 0.
        server.signal(SIGINT)
        #expect(server.waitForExit() == 0)
        #expect(server.stderr.contains("luahier: stopped (SIGTERM); no request was in flight"), "\(server.stderr)")
    }

    @Test func aShutdownDelayEndsByItself() throws {
        let server = try ServerProcess([try Luahier.script(Self.rules(version: 1), name: "rules.lua"), "--shutdown-delay", "1"])
        defer { server.stop() }
        let signalled = ContinuousClock.now
        server.signal(SIGTERM)
        #expect(server.waitForExit() == 0)
        // The listener closed only once the delay ended (a lower bound: never flaky).
        #expect(ContinuousClock.now - signalled >= .seconds(1))
        #expect(server.stderr.contains("luahier: stopped (SIGTERM); no request was in flight"), "\(server.stderr)")
    }

    /// No clock decides the order: the one state loops with no limit, so it is busy for as long
    /// as the test needs, however slowly this machine runs, and the server is killed at the end.
    /// That it is ready again once the state comes free is `RulesPoolTests`'.
    @Test func aBusyPoolRefusesWith503AfterMaxWait() throws {
        let server = try ServerProcess([
            try Luahier.script(Self.rules(version: 1), name: "rules.lua"), "--max-wait", "0.3", "--dispatch-timeout", "0",
            "--timeout", "0",
        ])
        let busy = Clients(1) { _ in
            _ = try? server.post("/v1/dispatch", #"{"at": "/app", "event": {"type": "Slow", "seconds": 1e9}}"#, timeout: 600)
        }
        defer {
            server.signal(SIGKILL)
            server.waitForExit()
            busy.allEnded()
        }
        #expect(server.waitForStderr { $0.contains("slow started") })
        let refused = try server.post("/v1/dispatch", #"{"at": "/app", "event": "Ask"}"#)
        #expect(refused.status == 503)
        #expect(refused.headers["retry-after"] == "1")
        #expect((refused.json["error"] as? [String: Any])?["type"] as? String == "Overloaded")
        // Not ready while the only state stays busy past --max-wait.
        let readiness = try server.get("/readyz")
        #expect(readiness.status == 503)
        #expect(readiness.json["reason"] as? String == "overloaded")
        #expect((readiness.json["error"] as? [String: Any])?["type"] as? String == "NotReady")
        let metrics = try server.get("/metrics").text
        #expect(metrics.contains("luahier_pool_overloaded_total 1"))
        #expect(metrics.contains("luahier_pool_waits_total 1"))
        #expect(metrics.contains("luahier_pool_waiting 0.0"))
        #expect(metrics.contains("luahier_ready 0.0"))
    }

    @Test func dispatchWatchStampsEachLineWithTheRevisionThatAnsweredIt() throws {
        let folder = try Self.folder()
        let child = try LuahierProcess(["dispatch", "--watch", "rules.lua"], folder: folder)
        // Three lines, each answered before the next is sent and before the file changes.
        var lines: [[String: Any]] = []
        func send3() {
            for _ in 0..<3 {
                child.write("{\"at\":\"/app\",\"event\":\"Ask\"}\n")
                let line = child.readLine() ?? ""
                lines.append((try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] ?? [:])
            }
        }
        send3()
        // The watcher takes its first look at the files on a thread of its own, which a loaded
        // machine may start late: a change before that look would be its baseline, never seen.
        // A hang-up is answered by that thread, after the look (and its handler is in place
        // before the first answer).
        child.send(SIGHUP)
        #expect(child.waitForStderr { $0.contains("found the rules unchanged") })
        try Self.rules(version: 2).write(to: folder.appendingPathComponent("rules.lua"), atomically: true, encoding: .utf8)
        #expect(child.waitForStderr { $0.contains("luahier: reloaded rules.lua (file changed): revision 2 (sha256 ") })
        send3()
        try "local broken = (".write(to: folder.appendingPathComponent("rules.lua"), atomically: true, encoding: .utf8)
        #expect(child.waitForStderr { $0.contains("luahier: reload (file changed) failed, revision 2 (sha256 ") })
        send3()
        child.closeInput()
        let ended = child.waitForExit()
        let stderr = ended.stderr
        #expect(ended.status == 0)
        #expect(lines.map { ($0["revision"] as? [String: Any])?["number"] as? Int } == [1, 1, 1, 2, 2, 2, 2, 2, 2])
        #expect(lines.map { ($0["value"] as? [String: Any])?["version"] as? Int } == [1, 1, 1, 2, 2, 2, 2, 2, 2])
        #expect(stderr.contains("luahier: reloaded rules.lua (file changed): revision 2 (sha256 "))
        #expect(stderr.contains("luahier: reload (file changed) failed, revision 2 (sha256 "))
        #expect(stderr.contains("rules.lua:1: unexpected symbol near <eof>"))
        // Without --watch, outcomes carry no revision (nothing can change it).
        try Self.rules(version: 1).write(to: folder.appendingPathComponent("rules.lua"), atomically: true, encoding: .utf8)
        let plain = try Luahier.run(["dispatch", "rules.lua"], stdin: "{\"at\":\"/app\",\"event\":\"Ask\"}\n", in: folder)
        #expect(plain.stdout.hasPrefix(#"{"line":1,"status":"unhandled""#))
        #expect(!plain.stdout.contains("revision"))
    }

    /// After the attack: a long batch of lines the host answers (invalid ones) takes linear
    /// time (it was quadratic: 16,000 took 11 s), and a batch whose client went away stops.
    @Test func longInvalidBatchesAreLinearAndAbandonedBatchesStop() throws {
        // No clock bounds the lines: the gates below hold them, and the long batch's size is
        // what tells linear from quadratic time.
        let server = try ServerProcess(
            ["rules.lua", "--max-body", "4M", "--unsafe", "--timeout", "0", "--dispatch-timeout", "0"], in: try Self.folder())
        defer { server.stop() }
        // 200,000 lines: a few seconds of work when linear, so the client's 600 s bound (against
        // hangs) is far above it; quadratic, as before, they took half an hour.
        let count = 200_000
        let invalid = try server.post("/v1/dispatch", String(repeating: "x\n", count: count), headers: ["Content-Type": "application/x-ndjson"])
        #expect(invalid.status == 200)
        let text = invalid.text
        let answers = text.split(separator: "\n")
        #expect(answers.count == count)
        #expect(answers.last?.hasPrefix("{\"line\":\(count),") == true, "\(answers.last ?? "")")
        #expect(answers.allSatisfy { $0.contains(#""status":"invalid""#) })

        // A batch whose client goes away while line 2 waits at its gate. Each line waits at a
        // gate of its own, opened one at a time once the server has closed the connection, so
        // no clock decides how many lines run after the client left: counted, not timed.
        let folder = URL(fileURLWithPath: try Self.gatePath()).deletingLastPathComponent()
        // Named N-gate: no gate's path is then part of another's, as "gate-2" is of "gate-20".
        let gates = (2...20).map { folder.appendingPathComponent("\($0)-gate").path }
        let lines = ([#"{"at": "/app", "event": "Ask"}"#] + gates.map(Self.gate)).joined(separator: "\n") + "\n"
        defer { gates.forEach(Self.openGate) }
        let client = try Connection(port: server.port)
        client.send(
            "POST /v1/dispatch HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-ndjson\r\nContent-Length: \(lines.utf8.count)\r\n\r\n"
                + lines)
        // Line 1 is answered (the answer's head has come), line 2 waits at its gate.
        #expect(String(decoding: client.receive(limit: 12, within: 600).bytes, as: UTF8.self) == "HTTP/1.1 200")
        #expect(server.waitForStderr { $0.contains("waiting for \(gates[0])") })
        let inode = try #require(client.serverSocketInode(port: server.port))
        client.reset()
        // The server has closed its end: from here every answer it writes there fails.
        #expect(Luahier.eventually(timeout: 600) { !server.holdsSocket(inode) })
        let stopped = #"luahier_batches_stopped_total{reason="client_gone"}"#
        let recorded = #"luahier_http_requests_total{code="200",method="POST",route="/v1/dispatch"}"#
        Self.openGate(gates[0])
        // Line 2's answer is refused at once (the server knew the client had gone), or it is
        // taken and the write that follows fails while line 3 waits at its gate; the batch is
        // logged once that write failed, after which the next answer is refused.
        #expect(try Luahier.eventually(timeout: 600) {
            let metrics = try server.get("/metrics").text
            return server.metric(stopped, in: metrics) == 1
                || (server.stderr.contains("waiting for \(gates[1])") && server.metric(recorded, in: metrics) == 2)
        })
        Self.openGate(gates[1])
        #expect(server.waitForMetric(stopped, 1))
        // At most lines 2 and 3 ran after the client went away, not the other 17.
        #expect(!server.stderr.contains("waiting for \(gates[2])"), "\(server.stderr)")
        let next = try server.post("/v1/dispatch", #"{"at": "/app", "event": "Ask"}"#)
        #expect(next.status == 200)
    }

    @Test func startupFailuresAndDefaults() throws {
        let broken = try Luahier.run(["serve", try Luahier.script("local x = (", name: "rules.lua"), "--port", "0"])
        #expect(broken.status == 1)
        #expect(broken.stderr.contains("rules.lua:1:"))
        let usage = try Luahier.run(["serve", try Luahier.script("", name: "rules.lua"), "--workers", "0"])
        #expect(usage.status == 2)
        #expect(usage.stderr.contains("--workers must be between 1 and 256"))
        // Loopback unless asked otherwise.
        let server = try ServerProcess([try Luahier.script(Self.rules(version: 1), name: "rules.lua")])
        defer { server.stop() }
        #expect(server.stderr.contains("on http://127.0.0.1:"))
        let taken = try Luahier.run(["serve", try Luahier.script("", name: "rules.lua"), "--port", String(server.port)], timeout: 600)
        #expect(taken.status == 2)
        #expect(taken.stderr.contains("luahier: cannot listen on 127.0.0.1:\(server.port): the address is in use"), "\(taken.stderr)")
    }
}

/// Threads of their own (a busy dispatch queue may start its work late): `body(i)` on each.
final class Clients: @unchecked Sendable {
    private let group = DispatchGroup()

    init(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
        for index in 0..<count {
            group.enter()
            let thread = Thread { [group] in
                body(index)
                group.leave()
            }
            thread.start()
        }
    }

    /// Whether every body ended within `seconds` (a bound against hangs only).
    @discardableResult
    func allEnded(within seconds: Double = 600) -> Bool { group.wait(timeout: .now() + seconds) == .success }
}

/// A value shared between test threads (closures that escape cannot hold a `Mutex` itself).
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: Value) { mutex = Mutex(value) }

    var value: Value { mutex.withLock { $0 } }

    func mutate(_ body: (inout Value) -> Void) {
        mutex.withLock { body(&$0) }
    }
}
#endif
