#if Server
import Foundation
import Testing

/// `luahier serve` against a real server on loopback, through a plain HTTP client (contract §9).
@Suite("luahier serve (contract §9)", .serialized)
struct ServeTests {
    /// Rules whose answers say which version of the file answered them.
    static func rules(version: Int) -> String {
        """
        local VERSION = \(version)
        local app = hier.root:child("app")
        app:receiveEvent("Ask", function(e) return {type = "Answer", version = VERSION} end)
        app:handleEvent("Slow", function(e)
          local start = os.clock()
          while os.clock() - start < e.seconds do end
          return "handled"
        end)
        app:receiveEvent("Loop", function() while true do end end)
        app:receiveEvent("Bomb", function()
          local t = {}
          for i = 1, 1e9 do t[i] = string.rep("x", 100000) .. i end
        end)
        app:handleError("Fault", function(e) return "handled" end)
        """
    }

    /// A folder holding `rules.lua` at `version`: the server runs there, so messages name
    /// `rules.lua`.
    static func folder(version: Int = 1, rules: String? = nil) throws -> URL {
        URL(fileURLWithPath: try Luahier.script(rules ?? Self.rules(version: version), name: "rules.lua")).deletingLastPathComponent()
    }

    @Test func singleRequestsAndBatches() throws {
        let server = try ServerProcess(["rules.lua", "--workers", "2"], in: try Self.folder())
        defer { server.stop() }
        let one = try server.post("/v1/dispatch", #"{"id": 7, "at": "/app", "event": "Ask"}"#)
        #expect(one.status == 200)
        #expect(one.headers["content-type"] == "application/json")
        #expect(one.json["id"] as? Int == 7)
        #expect(one.json["status"] as? String == "unhandled")
        #expect((one.json["value"] as? [String: Any])?["version"] as? Int == 1)
        let revision = try #require(one.json["revision"] as? [String: Any])
        #expect(revision["number"] as? Int == 1)
        #expect((revision["hash"] as? String)?.count == 16)
        #expect(one.json["line"] == nil)

        let handled = try server.post("/v1/dispatch", #"{"at": "/app", "error": {"type": "Fault"}}"#)
        #expect(handled.status == 200)
        #expect(handled.json["status"] as? String == "handled")
        #expect(handled.json["responder"] as? String == "rules.lua:14")

        let body = "{\"at\":\"/app\",\"event\":\"Ask\"}\n\n{\"at\":\"/nowhere\",\"event\":\"Ask\"}\n{\"at\":\"/app\",\"error\":{\"type\":\"Fault\"}}\n"
        let batch = try server.post("/v1/dispatch", body, headers: ["Content-Type": "application/x-ndjson"])
        #expect(batch.status == 200)
        #expect(batch.headers["content-type"] == "application/x-ndjson")
        let lines = batch.lines
        #expect(lines.map { $0["line"] as? Int } == [1, 3, 4])
        #expect(lines.map { $0["status"] as? String } == ["unhandled", "invalid", "handled"])
        #expect((lines[1]["error"] as? [String: Any])?["where"] as? String == "request:3")
        #expect(Set(lines.map { ($0["revision"] as? [String: Any])?["number"] as? Int }) == [1])

        // An empty batch answers nothing, and says so with 200.
        let empty = try server.post("/v1/dispatch", "", headers: ["Content-Type": "application/x-ndjson"])
        #expect(empty.status == 200)
        #expect(empty.body.isEmpty)
    }

    @Test func badBodiesGetInvalidOutcomesAndTheServerGoesOn() throws {
        let server = try ServerProcess([try Luahier.script(Self.rules(version: 1), name: "rules.lua"), "--max-body", "4K"])
        defer { server.stop() }
        let cases: [(String, Int, String)] = [
            (#"{"at": "/app""#, 400, "InvalidJSON"),
            ("", 400, "InvalidJSON"),
            ("[1, 2]", 400, "InvalidRequest"),
            (#"{"at": "/app"}"#, 400, "InvalidRequest"),
            (#"{"at": "/nowhere", "event": "Ask"}"#, 400, "NoSuchNode"),
            (#"{"at": "/app", "event": 12}"#, 400, "InvalidRequest"),
            (#"{"at": "/app", "event": "Ask", "extra": 1}"#, 400, "InvalidRequest"),
            ("\u{FF}\u{FE}garbage", 400, "InvalidJSON"),
        ]
        for (body, status, type) in cases {
            let reply = try server.post("/v1/dispatch", body)
            #expect(reply.status == status, "\(body)")
            #expect(reply.json["status"] as? String == "invalid", "\(body)")
            #expect((reply.json["error"] as? [String: Any])?["type"] as? String == type, "\(body): \(reply.text)")
        }
        let large = try server.request("POST", "/v1/dispatch", body: [UInt8](repeating: UInt8(ascii: "x"), count: 64 << 10))
        #expect(large.status == 413)
        #expect((large.json["error"] as? [String: Any])?["type"] as? String == "BodyTooLarge")
        let wrongMethod = try server.get("/v1/dispatch")
        #expect(wrongMethod.status == 404 || wrongMethod.status == 405)
        let after = try server.post("/v1/dispatch", #"{"at": "/app", "event": "Ask"}"#)
        #expect(after.status == 200)
        let metrics = try server.get("/metrics").text
        #expect(metrics.contains(#"luahier_http_requests_total{code="413"} 1"#))
        #expect(metrics.contains(#"luahier_outcomes_total{status="invalid"} 9"#))
    }

    @Test func aRunawayRuleFailsOnlyItsOwnRequest() throws {
        let server = try ServerProcess(["rules.lua", "--dispatch-timeout", "0.5", "--max-memory", "64M"], in: try Self.folder())
        defer { server.stop() }
        let loop = try server.post("/v1/dispatch", #"{"at": "/app", "event": "Loop"}"#)
        #expect(loop.status == 200)
        #expect(loop.json["status"] as? String == "unhandled")
        let loopValue = try #require(loop.json["value"] as? [String: Any])
        #expect(loopValue["type"] as? String == "TimeLimitExceeded")
        #expect(loopValue["where"] as? String == "rules.lua:9")
        let bomb = try server.post("/v1/dispatch", #"{"at": "/app", "event": "Bomb"}"#)
        #expect((bomb.json["value"] as? [String: Any])?["type"] as? String == "MemoryLimitExceeded")
        // The same states answer the next requests.
        for _ in 0..<4 {
            let next = try server.post("/v1/dispatch", #"{"at": "/app", "event": "Ask"}"#)
            #expect((next.json["value"] as? [String: Any])?["version"] as? Int == 1)
        }
        let metrics = try server.get("/metrics").text
        #expect(metrics.contains(#"luahier_limit_trips_total{limit="time"} 1"#))
        #expect(metrics.contains(#"luahier_limit_trips_total{limit="memory"} 1"#))
    }

    @Test func reloadUnderLoadAnswersEveryRequestFromOneWholeRevision() throws {
        let folder = URL(fileURLWithPath: try Luahier.script("", name: "x.lua")).deletingLastPathComponent()
        let rules = folder.appendingPathComponent("rules.lua")
        try Self.rules(version: 1).write(to: rules, atomically: true, encoding: .utf8)
        let server = try ServerProcess(["rules.lua", "--workers", "2", "--watch"], in: folder)
        defer { server.stop() }

        // Clients send single requests and batches without a pause while the rules change.
        let stop = Locked(false)
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
        for version in 2...4 {
            Thread.sleep(forTimeInterval: 0.4)
            try Self.rules(version: version).write(to: rules, atomically: true, encoding: .utf8)
            if version == 3 { server.signal(SIGHUP) }
            #expect(server.waitForStderr { $0.contains("revision \(version) (sha256") })
        }
        Thread.sleep(forTimeInterval: 0.4)
        stop.mutate { $0 = true }
        clients.wait()

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

    @Test func aBadRulesFileOnReloadLeavesTheRunningRevision() throws {
        let folder = URL(fileURLWithPath: try Luahier.script("", name: "x.lua")).deletingLastPathComponent()
        let rules = folder.appendingPathComponent("rules.lua")
        try Self.rules(version: 1).write(to: rules, atomically: true, encoding: .utf8)
        let server = try ServerProcess(["rules.lua", "--reload-endpoint"], in: folder)
        defer { server.stop() }
        try "local broken = (".write(to: rules, atomically: true, encoding: .utf8)
        let reload = try server.post("/v1/reload", "")
        #expect(reload.status == 422)
        #expect(reload.json["result"] as? String == "failed")
        #expect((reload.json["error"] as? String)?.contains("rules.lua:1:") == true, "\(reload.text)")
        #expect(server.waitForStderr { $0.contains("failed, revision 1 (sha256") && $0.contains("rules.lua:1:") })
        let answer = try server.post("/v1/dispatch", #"{"at": "/app", "event": "Ask"}"#)
        #expect((answer.json["value"] as? [String: Any])?["version"] as? Int == 1)
        let health = try server.get("/healthz").json
        #expect(health["status"] as? String == "ready")
        #expect(((health["lastReloadError"] as? [String: Any])?["message"] as? String)?.contains("rules.lua:1:") == true)
        let metrics = try server.get("/metrics").text
        #expect(metrics.contains(#"luahier_reloads_total{result="failed"} 1"#))
        #expect(metrics.contains("luahier_reload_failing 1.0"))

        // Mended: the next reload loads revision 2 and clears the error; an unchanged one
        // keeps it.
        try Self.rules(version: 2).write(to: rules, atomically: true, encoding: .utf8)
        let mended = try server.post("/v1/reload", "")
        #expect(mended.status == 200)
        #expect(mended.json["result"] as? String == "loaded")
        #expect(mended.json["revision"] as? Int == 2)
        #expect(try server.post("/v1/reload", "").json["result"] as? String == "unchanged")
        #expect(try server.get("/healthz").json["lastReloadError"] == nil)
        let after = try server.post("/v1/dispatch", #"{"at": "/app", "event": "Ask"}"#)
        #expect((after.json["value"] as? [String: Any])?["version"] as? Int == 2)
        #expect((after.json["revision"] as? [String: Any])?["number"] as? Int == 2)
    }

    @Test func reloadOverHTTPIsOffUnlessAskedFor() throws {
        let server = try ServerProcess([try Luahier.script(Self.rules(version: 1), name: "rules.lua")])
        defer { server.stop() }
        let reply = try server.post("/v1/reload", "")
        #expect(reply.status == 403)
        #expect(reply.text.contains("--reload-endpoint"))
    }

    @Test func sigtermAnswersEveryRequestInFlightThenExits() throws {
        let server = try ServerProcess([try Luahier.script(Self.rules(version: 1), name: "rules.lua"), "--workers", "2"])
        let replies = Locked<[Int]>([])
        let failures = Locked<[String]>([])
        let clients = Clients(4) { _ in
                do {
                    // 1.2 s of the process's CPU time (os.clock), 0.6 s of wall time with both
                    // states busy: at the signal, two run and two wait.
                    let reply = try server.post("/v1/dispatch", #"{"at": "/app", "event": {"type": "Slow", "seconds": 1.2}}"#)
                    replies.mutate { $0.append(reply.json["status"] as? String == "handled" ? reply.status : -reply.status) }
                } catch {
                    failures.mutate { $0.append("\(error)") }
                    replies.mutate { $0.append(0) }
                }
        }
        Thread.sleep(forTimeInterval: 0.3)
        server.signal(SIGTERM)
        clients.wait()
        let status = server.waitForExit()
        #expect(replies.value == [200, 200, 200, 200], "\(failures.value) \(server.stderr)")
        #expect(status == 0)
        #expect(server.stderr.contains("luahier: stopped (SIGTERM); all 4 requests in flight were answered"), "\(server.stderr)")
        #expect(throws: (any Error).self) { try server.get("/healthz") }
    }

    @Test func aBusyPoolRefusesWith503AfterMaxWait() throws {
        let server = try ServerProcess([try Luahier.script(Self.rules(version: 1), name: "rules.lua"), "--max-wait", "0.3"])
        defer { server.stop() }
        let slow = Clients(1) { _ in
            _ = try? server.post("/v1/dispatch", #"{"at": "/app", "event": {"type": "Slow", "seconds": 2.0}}"#)
        }
        Thread.sleep(forTimeInterval: 0.2)
        let asked = Date()
        let refused = try server.post("/v1/dispatch", #"{"at": "/app", "event": "Ask"}"#)
        // Refused when its wait ran out, not when the busy state came free.
        #expect(Date().timeIntervalSince(asked) < 1.5)
        #expect(refused.status == 503)
        #expect(refused.headers["retry-after"] == "1")
        #expect((refused.json["error"] as? [String: Any])?["type"] as? String == "Overloaded")
        slow.wait()
        #expect(try server.post("/v1/dispatch", #"{"at": "/app", "event": "Ask"}"#).status == 200)
        let metrics = try server.get("/metrics").text
        #expect(metrics.contains("luahier_pool_overloaded_total 1"))
        #expect(metrics.contains("luahier_pool_waiting 0.0"))
        // The refused request waited; the last one may have too, if it came before the slow
        // one's state was back in the queue.
        let waits = metrics.split(separator: "\n").first { $0.hasPrefix("luahier_pool_waits_total ") }
        #expect(["luahier_pool_waits_total 1", "luahier_pool_waits_total 2"].contains(waits.map(String.init)))
    }

    @Test func dispatchWatchStampsEachLineWithTheRevisionThatAnsweredIt() throws {
        let folder = try Self.folder()
        let process = Process()
        process.executableURL = Luahier.binary
        process.arguments = ["dispatch", "--watch", "rules.lua"]
        process.currentDirectoryURL = folder
        let input = Pipe(), output = Pipe(), errors = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let request = Data("{\"at\":\"/app\",\"event\":\"Ask\"}\n".utf8)
        func send(_ count: Int) {
            for _ in 0..<count {
                input.fileHandleForWriting.write(request)
                Thread.sleep(forTimeInterval: 0.05)
            }
        }
        send(3)
        try Self.rules(version: 2).write(to: folder.appendingPathComponent("rules.lua"), atomically: true, encoding: .utf8)
        Thread.sleep(forTimeInterval: 1.0)
        send(3)
        try "local broken = (".write(to: folder.appendingPathComponent("rules.lua"), atomically: true, encoding: .utf8)
        Thread.sleep(forTimeInterval: 1.0)
        send(3)
        try input.fileHandleForWriting.close()
        process.waitUntilExit()
        let lines = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).split(separator: "\n").map {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] ?? [:]
        }
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationStatus == 0)
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
        let server = try ServerProcess(["rules.lua", "--max-body", "4M", "--dispatch-timeout", "0.5"], in: try Self.folder())
        defer { server.stop() }
        let invalid = try server.post(
            "/v1/dispatch", String(repeating: "x\n", count: 40_000), headers: ["Content-Type": "application/x-ndjson"], timeout: 60)
        let lines = invalid.lines
        #expect(lines.count == 40_000)
        #expect(lines.last?["line"] as? Int == 40_000)
        #expect(lines.allSatisfy { $0["status"] as? String == "invalid" })

        // 20 lines that each run into the 0.5 s limit: 10 s of work, abandoned after 1 s.
        let loops = String(repeating: "{\"at\":\"/app\",\"event\":\"Loop\"}\n", count: 20)
        try HTTPClient.abandon(
            port: server.port, path: "/v1/dispatch", body: Array(loops.utf8),
            headers: ["Content-Type": "application/x-ndjson"], after: 1)
        // The one state is free again within a line or two, not after the other 18.
        let next = try server.post("/v1/dispatch", #"{"at": "/app", "event": "Ask"}"#, timeout: 4)
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
        let taken = try Luahier.run(["serve", try Luahier.script("", name: "rules.lua"), "--port", String(server.port)], timeout: 20)
        #expect(taken.status == 1)
        #expect(taken.stderr.contains("luahier: cannot serve on 127.0.0.1:\(server.port)"), "\(taken.stderr)")
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

    func wait() { group.wait() }
}

/// A value shared between test threads.
final class Locked<Value>: @unchecked Sendable {
    private var stored: Value
    private let lock = NSLock()

    init(_ value: Value) { stored = value }

    var value: Value {
        lock.lock()
        defer { lock.unlock() }
        return stored
    }

    func mutate(_ body: (inout Value) -> Void) {
        lock.lock()
        defer { lock.unlock() }
        body(&stored)
    }
}
#endif
