#if Server
import Foundation
import Testing

/// What `luahier serve` says of each request, against a real server on loopback: its access
/// log (text and JSON), request ids and traces, the rules' print tied to its request, and the
/// refusals only a connection shows (a stalled body's 408, bytes that are not HTTP).
@Suite("luahier serve: logs, request ids, refusals on the wire", .serialized, .ownThreads)
struct ServeLogTests {
    static let rules = """
        local app = hier.root:child("app")
        app:receiveEvent("Ask", function(e) print("asked", e.n) return {type = "Answer"} end)
        app:receiveEvent("Fail", function() error("broken rule") end)
        """

    static func server(_ flags: [String] = []) throws -> ServerProcess {
        try ServerProcess([try Luahier.script(rules, name: "rules.lua")] + flags)
    }

    /// The access lines of `stderr` (text format) that carry `id`.
    static func accessLine(_ stderr: String, id: String) -> Substring? {
        stderr.split(separator: "\n").first { $0.contains(" info luahier: request ") && $0.contains("request_id=\(id) ") }
    }

    @Test func eachRequestIsLoggedWithItsIdRouteStatusAndOutcome() throws {
        let server = try Self.server()
        defer { server.stop() }
        let asked = try server.post(
            "/v1/dispatch", #"{"at": "/app", "event": {"type": "Ask", "n": 7}}"#,
            headers: ["X-Request-Id": "order-42", "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"])
        #expect(asked.status == 200)
        #expect(asked.headers["x-request-id"] == "order-42")
        #expect(server.waitForStderr { Self.accessLine($0, id: "order-42") != nil }, "\(server.stderr)")
        let line = String(Self.accessLine(server.stderr, id: "order-42") ?? "")
        // 2026-11-27T00:19:22.649Z info luahier: request duration_ms=1.025 kind=event ...
        #expect(line.firstMatch(of: #/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z info luahier: request /#) != nil, "\(line)")
        // The time is now's, to the day and hour (a second's lines share its text).
        let stamp = ISO8601DateFormatter()
        stamp.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let logged = stamp.date(from: String(line.prefix(24)))
        #expect(logged.map { abs($0.timeIntervalSinceNow) < 600 } == true, "\(line)")
        for field in ["method=POST", "route=/v1/dispatch", "status=200", "outcome=unhandled", "kind=event",
                      "trace_id=4bf92f3577b34da6a3ce929d0e0e4736", "parent_id=00f067aa0ba902b7", "duration_ms="] {
            #expect(line.contains(field), "\(field) in \(line)")
        }
        let revision = (asked.json["revision"] as? [String: Any])?["hash"] as? String ?? "?"
        #expect(line.contains("revision=\(revision)"), "\(line)")
        // The rules' print, tied to its request.
        #expect(server.stderr.contains(#"info luahier: print request_id=order-42 text="asked\t7""#), "\(server.stderr)")

        // No id, or one not fit to echo (a space in it): one is made, 32 hex digits.
        for headers in [[:], ["X-Request-Id": "two words"]] {
            let made = try server.post("/v1/dispatch", #"{"at": "/app", "event": {"type": "Ask", "n": 1}}"#, headers: headers)
            let id = made.headers["x-request-id"] ?? ""
            #expect(id.wholeMatch(of: #/[0-9a-f]{32}/#) != nil, "\(id)")
            #expect(server.waitForStderr { Self.accessLine($0, id: id) != nil })
        }
        // Refusals of the router are logged and carry an id too.
        let missing = try server.get("/no/such/route")
        #expect(missing.status == 404)
        let missingID = missing.headers["x-request-id"] ?? "?"
        #expect(server.waitForStderr { Self.accessLine($0, id: missingID)?.contains("route=unmatched status=404") == true }, "\(server.stderr)")
        // A batch: one line, with the counts by outcome.
        let batch = try server.post(
            "/v1/dispatch", "{\"at\": \"/app\", \"event\": {\"type\": \"Ask\", \"n\": 2}}\n{\"at\": \"/nowhere\", \"event\": \"Ask\"}\n",
            headers: ["Content-Type": "application/x-ndjson", "X-Request-Id": "batch-1"])
        #expect(batch.status == 200)
        #expect(server.waitForStderr { Self.accessLine($0, id: "batch-1") != nil })
        let batchLine = String(Self.accessLine(server.stderr, id: "batch-1") ?? "")
        #expect(batchLine.contains(#"outcomes={"invalid":1,"unhandled":1}"#), "\(batchLine)")
        #expect(server.stderr.contains(#"print request_id=batch-1 text="asked\t2""#))
    }

    @Test func jsonLogsAreOneObjectPerLine() throws {
        let server = try Self.server(["--log-format", "json"])
        defer { server.stop() }
        #expect(try server.post("/v1/dispatch", #"{"at": "/app", "event": "Fail"}"#, headers: ["X-Request-Id": "j-1"]).status == 200)
        #expect(server.waitForStderr { $0.contains(#""request_id":"j-1""#) && $0.contains(#""message":"request""#) })
        server.stop()
        let records = server.stderr.split(separator: "\n").map {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
        #expect(!records.isEmpty && records.allSatisfy { $0 != nil }, "\(server.stderr)")
        let objects = records.compactMap { $0 }
        #expect(objects.allSatisfy { $0["time"] is String && $0["level"] is String && $0["message"] is String })
        let access = objects.first { $0["message"] as? String == "request" && $0["request_id"] as? String == "j-1" }
        #expect(access?["status"] as? Int == 200)
        #expect(access?["outcome"] as? String == "unhandled")
        #expect(access?["duration_ms"] is Double)
        #expect(objects.contains { ($0["message"] as? String)?.hasPrefix("serving ") == true && $0["level"] as? String == "notice" })
        #expect(objects.contains { ($0["message"] as? String)?.hasPrefix("stopped (SIGTERM)") == true })
    }

    @Test func aLogLevelAboveInfoLeavesTheAccessLogAndPrintOut() throws {
        let server = try Self.server(["--log-level", "notice"])
        defer { server.stop() }
        #expect(try server.post("/v1/dispatch", #"{"at": "/app", "event": {"type": "Ask", "n": 1}}"#).status == 200)
        server.stop()
        #expect(server.stderr.contains("notice luahier: serving "))
        #expect(server.stderr.contains("notice luahier: stopped (SIGTERM)"))
        #expect(!server.stderr.contains(" info "), "\(server.stderr)")
    }

    @Test func aBodyThatStallsGets408AndTheConnectionCloses() throws {
        let server = try Self.server(["--idle-timeout", "1"])
        defer { server.stop() }
        for head in ["Content-Length: 100\r\n", "Transfer-Encoding: chunked\r\n"] {
            let connection = try Connection(port: server.port)
            let part = head.hasPrefix("Transfer") ? "5\r\n{\"at\"\r\n" : "{\"at\""
            connection.send("POST /v1/dispatch HTTP/1.1\r\nHost: x\r\n\(head)X-Request-Id: stall\r\n\r\n\(part)")
            // Bounded by the server's own timer (1 s), not by this wait.
            let (bytes, closed) = connection.receive(within: 60)
            let reply = try HTTPClient.parse(bytes)
            #expect(reply.status == 408, "\(head): \(String(decoding: bytes, as: UTF8.self))")
            #expect((reply.json["error"] as? [String: Any])?["type"] as? String == "BodyTimeout")
            #expect(closed)
        }
        #expect(server.waitForMetric(#"luahier_http_requests_total{code="408",method="POST",route="/v1/dispatch"}"#, 2))
        #expect(try server.post("/v1/dispatch", #"{"at": "/app", "event": {"type": "Ask", "n": 1}}"#).status == 200)
    }

    @Test func bytesThatAreNotHTTPAreCountedAndTheServerGoesOn() throws {
        let server = try Self.server()
        defer { server.stop() }
        let connection = try Connection(port: server.port)
        connection.send("NOT HTTP AT ALL\r\n\r\n")
        let (bytes, closed) = connection.receive(within: 60)
        #expect(String(decoding: bytes, as: UTF8.self).hasPrefix("HTTP/1.1 400"))
        #expect(closed)
        #expect(server.waitForMetric(#"luahier_http_requests_total{code="400",method="unknown",route="unparsed"}"#, 1))
        #expect(try server.post("/v1/dispatch", #"{"at": "/app", "event": {"type": "Ask", "n": 1}}"#).status == 200)
    }

    /// A client that closes its connection mid-request gets no answer, and none is counted or
    /// logged as sent: a body cut short logs `ended=client_gone` and no status; a head cut short
    /// counts nothing, while bytes that are no request count as ever.
    @Test func aClientThatLeavesMidRequestIsNotCountedAsAnswered() throws {
        let server = try Self.server()
        defer { server.stop() }
        do {
            let connection = try Connection(port: server.port)
            connection.send("POST /v1/dispatch HTTP/1.1\r\nHost: x\r\nX-Request-Id: gone\r\nContent-Length: 100\r\n\r\n{\"at\":")
        }
        #expect(server.waitForStderr { Self.accessLine($0, id: "gone")?.contains("ended=client_gone") == true }, "\(server.stderr)")
        #expect(Self.accessLine(server.stderr, id: "gone")?.contains("status=") == false, "\(server.stderr)")
        do {
            let connection = try Connection(port: server.port)
            connection.send("GET /livez HTT")
        }
        let garbage = try Connection(port: server.port)
        garbage.send("NOT HTTP AT ALL\r\n\r\n")
        #expect(garbage.receive(within: 60).closed)
        // Only the bytes that are no request: a count of 2 would never read 1.
        #expect(server.waitForMetric(#"luahier_http_requests_total{code="400",method="unknown",route="unparsed"}"#, 1))
        let text = try server.get("/metrics").text
        #expect(server.metric(#"luahier_http_requests_total{code="400",method="POST",route="/v1/dispatch"}"#, in: text) == 0, "\(text)")
        #expect(server.metric(#"luahier_outcomes_total{status="invalid"}"#, in: text) == 0, "\(text)")
    }

    @Test func aRuleErrorA404AndA405AreCountedApart() throws {
        let server = try Self.server()
        defer { server.stop() }
        #expect(try server.post("/v1/dispatch", #"{"at": "/app", "event": "Fail"}"#).status == 200)
        #expect(try server.post("/v1/dispatch", #"{"at": "/app", "event": {"type": "Ask", "n": 1}}"#).status == 200)
        #expect(try server.get("/v1/nothing").status == 404)
        #expect(try server.request("DELETE", "/v1/dispatch").status == 405)
        let metrics = try server.get("/metrics").text
        for line in [
            #"luahier_rule_errors_total{type="LuaError"} 1"#,
            #"luahier_outcomes_total{status="unhandled"} 2"#,
            #"luahier_http_requests_total{code="200",method="POST",route="/v1/dispatch"} 2"#,
            #"luahier_http_requests_total{code="404",method="GET",route="unmatched"} 1"#,
            #"luahier_http_requests_total{code="405",method="DELETE",route="/v1/dispatch"} 1"#,
        ] {
            #expect(metrics.contains(line), "\(line)\n\(metrics)")
        }
    }
}
#endif
