#if Server
import Foundation
import Testing

/// `luahier serve` against clients and rules that would hold it without bounds: slow
/// readers, long batches, an unread stderr, idle and surplus connections, a shutdown whose
/// requests outlast the grace (contract §7: bounded time and memory; §9).
@Suite("luahier serve, bounded", .serialized, .ownThreads)
struct ServeBoundsTests {
    static let rules = """
        local app = hier.root:child("app")
        app:receiveEvent("Big", function(e) return string.rep("z", e.n) end)
        app:receiveEvent("Ask", function(e) return "ok" end)
        app:handleEvent("Slow", function(e) print("slow started")
          local start = os.clock()
          while os.clock() - start < e.seconds do end
          return "handled"
        end)
        app:handleEvent("Print", function(e)
          for i = 1, e.n do print(string.rep("p", 1000)) end
          return "handled"
        end)
        """

    static func server(_ flags: [String]) throws -> ServerProcess {
        try ServerProcess([try Luahier.script(rules, name: "rules.lua")] + flags)
    }

    static func post(_ body: String, contentType: String = "application/json") -> String {
        "POST /v1/dispatch HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: \(contentType)\r\nContent-Length: \(body.utf8.count)\r\n\r\n"
            + body
    }

    @Test func aSlowReaderHoldsItsBatchBackAndIsGivenUpOn() throws {
        // No clock on the lines: only the client's stall (--idle-timeout) may end the batch.
        let server = try Self.server(["--idle-timeout", "2", "--timeout", "0", "--dispatch-timeout", "0"])
        defer { server.stop() }
        // 400 answers of 200 KB: 80 MB, if the server buffered them for a reader that stalls.
        let body = String(repeating: #"{"at": "/app", "event": {"type": "Big", "n": 200000}}"# + "\n", count: 400)
        let client = try Connection(port: server.port, receiveBuffer: 4096)
        client.send(Self.post(body, contentType: "application/x-ndjson"))
        let head = client.receive(limit: 200, within: 600)
        #expect(String(decoding: head.bytes, as: UTF8.self).hasPrefix("HTTP/1.1 200"))
        let before = server.residentBytes
        // Past --idle-timeout with nothing read, the batch is given up on and its state freed.
        #expect(server.waitForMetric(#"luahier_batches_stopped_total{reason="client_stalled"}"#, 1))
        // The peak over the whole stall, not a sample of it.
        let growth = server.peakBytes - before
        #expect(growth < 24 << 20, "the server's memory grew \(growth >> 20) MB while its client read nothing")
        #expect(try server.post("/v1/dispatch", #"{"at": "/app", "event": "Ask"}"#).status == 200)
        // The connection is closed, not ended as if the batch were complete.
        let rest = client.receive(limit: 200 << 20, within: 600)
        #expect(rest.closed)
        #expect(!rest.bytes.suffix(5).elementsEqual(Array("0\r\n\r\n".utf8)))
        #expect(rest.bytes.count < 200 * 400_000)
    }

    /// Lines that loop for ever, with no limit of their own (--dispatch-timeout 0): a line then
    /// has the script's, --timeout's 1 s, counted from its own start, so line 1 ends no sooner
    /// than the batch's budget of 1 s, which began before it; no line after it may begin.
    /// However loaded the machine, the outcome is exact.
    @Test func aBatchStartsNoLineAfterItsTimeBudget() throws {
        let server = try Self.server(["--timeout", "1", "--dispatch-timeout", "0"])
        defer { server.stop() }
        let body = String(repeating: #"{"at": "/app", "event": {"type": "Slow", "seconds": 1e9}}"# + "\n", count: 8)
        let sent = ContinuousClock.now
        let reply = try server.post("/v1/dispatch", body, headers: ["Content-Type": "application/x-ndjson"])
        let elapsed = ContinuousClock.now - sent
        #expect(reply.status == 200)
        let lines = reply.lines
        #expect(lines.map { $0["line"] as? Int } == Array(1...8))
        // Line 1 runs into its limit, unless the server stalled past the budget before it began
        // (then it too is refused, and no sooner than the budget: a lower bound, never flaky).
        let ran = lines.first?["status"] as? String == "unhandled" ? 1 : 0
        if ran == 1 {
            let error = lines[0]["value"] as? [String: Any]
            #expect(error?["type"] as? String == "TimeLimitExceeded", "\(lines[0])")
        } else {
            #expect(elapsed >= .milliseconds(900), "every line refused after \(elapsed)")
        }
        for line in lines.dropFirst(ran) {
            let error = line["error"] as? [String: Any]
            #expect(line["status"] as? String == "invalid")
            #expect(error?["type"] as? String == "BatchTimeLimitExceeded")
            #expect((error?["message"] as? String)?.contains("time budget of 1 s (set with --timeout") == true)
            #expect(error?["where"] as? String == "request:\(line["line"] as? Int ?? 0)")
        }
        let metrics = try server.get("/metrics").text
        #expect(server.metric(#"luahier_limit_trips_total{limit="batch_time"}"#, in: metrics) == 1)
        #expect(server.metric(#"luahier_limit_trips_total{limit="time"}"#, in: metrics) == Double(ran))
        #expect(server.metric(#"luahier_outcomes_total{status="invalid"}"#, in: metrics) == Double(8 - ran))
    }

    @Test func printingToAnUnreadStderrNeverHoldsAState() throws {
        // No clock: a print that blocked would hold its request past any bound (the client's
        // 600 s is against hangs), and a limit tripped would answer it otherwise.
        let server = try Self.server(["--timeout", "0", "--dispatch-timeout", "0"])
        defer { server.stop() }
        server.stopReadingStderr()
        // 2 MB printed per request: far more than a pipe holds.
        for _ in 0..<3 {
            let reply = try server.post("/v1/dispatch", #"{"at": "/app", "event": {"type": "Print", "n": 2000}}"#)
            #expect(reply.status == 200)
            #expect(reply.json["status"] as? String == "handled")
        }
        let dropped = server.metric("luahier_print_dropped_total", in: try server.get("/metrics").text) ?? 0
        #expect(dropped > 0)
    }

    /// The work never ends (no limit, and a rule that loops for ever): an exit at all is the
    /// grace at work, and what was under way at the signal is cut off whenever it comes.
    @Test(arguments: [false, true])
    func sigtermExitsAfterTheGraceWithWhatWasCutOff(batch: Bool) throws {
        let server = try Self.server(["--shutdown-grace", "0.5", "--timeout", "0", "--dispatch-timeout", "0"])
        defer {
            if server.child.isRunning {
                server.signal(SIGKILL)
                server.waitForExit()
            }
        }
        let client = try Connection(port: server.port)
        let endless = #"{"at": "/app", "event": {"type": "Slow", "seconds": 1e9}}"#
        if batch {
            // Two lines answered, then one that never ends.
            let lines = String(repeating: #"{"at": "/app", "event": "Ask"}"# + "\n", count: 2) + endless + "\n"
            client.send(Self.post(lines, contentType: "application/x-ndjson"))
        } else {
            client.send(Self.post(endless))
        }
        #expect(server.waitForStderr { $0.contains("slow started") })
        let signalled = ContinuousClock.now
        server.signal(SIGTERM)
        let status = server.waitForExit()
        // Not before the grace ended (a lower bound, never flaky).
        #expect(ContinuousClock.now - signalled >= .milliseconds(500))
        #expect(status == 1)
        // A batch cut off is not a client that went away, though its connection closes.
        #expect(server.stderr.contains(
            "luahier: stopped (SIGTERM) after the 0.5 s grace; of the 1 request in flight, 0 answered, 1 cut off unanswered"),
            "\(server.stderr)")
    }

    @Test func aReloadStillLoadingDoesNotHoldTheExitPastTheGrace() throws {
        let folder = URL(fileURLWithPath: try Luahier.script(#"require("mod")"# + "\n" + Self.rules, name: "rules.lua"))
            .deletingLastPathComponent()
        let module = folder.appendingPathComponent("mod.lua")
        try "return 1\n".write(to: module, atomically: true, encoding: .utf8)
        let server = try ServerProcess(["rules.lua", "--shutdown-grace", "1", "--timeout", "0"], in: folder)
        // The next revision never finishes loading (--timeout 0: no limit on the load).
        try "print('loading the next revision') while true do end\n".write(to: module, atomically: true, encoding: .utf8)
        server.signal(SIGHUP)
        #expect(server.waitForStderr { $0.contains("loading the next revision") })
        // The load never ends: an exit at all is the grace at work.
        server.signal(SIGTERM)
        let status = server.waitForExit()
        #expect(status == 0)
        #expect(server.stderr.contains("luahier: stopped (SIGTERM); no request was in flight"), "\(server.stderr)")
    }

    @Test func bodiesTooLargeOrTooSlowAreRefusedAndTheirConnectionsClosed() throws {
        let server = try Self.server(["--idle-timeout", "1"])
        defer { server.stop() }
        // Announced too large: 413 at once, without waiting for (or asking for) the body.
        let large = try Connection(port: server.port)
        large.send("POST /v1/dispatch HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 99999999999\r\nExpect: 100-continue\r\n\r\n")
        // Read until the server closes the connection (the bound is against hangs).
        let refused = large.receive(within: 600)
        #expect(String(decoding: refused.bytes.prefix(12), as: UTF8.self) == "HTTP/1.1 413")
        #expect(large.receive(within: 600).closed || refused.closed)
        // Trickled a byte at a time: never idle, but not whole within --idle-timeout. At one
        // byte per 0.3 s or slower, the 100,000 bytes could not come whole within the 600 s the
        // loop waits (against hangs) for the server to end it.
        let trickle = try Connection(port: server.port)
        trickle.send("POST /v1/dispatch HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n")
        let started = ContinuousClock.now
        var answer: [UInt8] = []
        var closed = false
        while !closed && ContinuousClock.now - started < .seconds(600) {
            trickle.send("{")
            let got = trickle.receive(within: 0.3)
            answer += got.bytes
            closed = got.closed
        }
        #expect(String(decoding: answer.prefix(12), as: UTF8.self) == "HTTP/1.1 408")
        #expect(String(decoding: answer, as: UTF8.self).contains("BodyTimeout"))
        #expect(closed)
    }

    /// Bodies still coming hold no more than `--max-bodies-in-flight` between them (an
    /// attacker's find: 600 clients each sending all but the last byte of 1 MiB held 832 MB).
    /// The request whose next part would pass it is answered 503 at once and its connection
    /// closed; the others are answered in full, and what they held is given back.
    @Test func bodiesStillComingAreBoundedAcrossConnections() throws {
        let usage = try Luahier.run(["serve", try Luahier.script(Self.rules, name: "rules.lua"), "--max-bodies-in-flight", "512K"])
        #expect(usage.status == 2)
        #expect(usage.stderr.contains("--max-bodies-in-flight (512K) must be at least --max-body (1M)"), "\(usage.stderr)")

        // The waiting bodies' deadline (--idle-timeout) far beyond the test: it is not the subject.
        let server = try Self.server(["--max-body", "64K", "--max-bodies-in-flight", "128K", "--idle-timeout", "600"])
        defer { server.stop() }
        let ask = #"{"at": "/app", "event": "Ask"}"#
        let body = Array((ask + String(repeating: " ", count: 60_000 - ask.utf8.count)).utf8)
        // Closed after its answer, so that each answer is read to its end.
        let request = Array("POST /v1/dispatch HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body
        // Two requests but their last byte: bodies of 59,999 bytes, each in a buffer of 64 KiB,
        // which is what a body takes: the whole budget of 128 KiB.
        let waiting = try (0..<2).map { _ in
            let client = try Connection(port: server.port)
            client.send(Array(request.dropLast()))
            return client
        }
        #expect(server.waitForMetric("luahier_body_bytes_in_flight", 131_072))
        // A third body passes the budget: refused at once, its connection closed.
        let third = try Connection(port: server.port)
        third.send(Array(request.prefix(request.count - body.count + 20_000)))
        let refused = third.receive(within: 600)
        let text = String(decoding: refused.bytes, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 503"), "\(text)")
        #expect(text.contains("\"Overloaded\"") && text.contains("--max-bodies-in-flight"), "\(text)")
        #expect(text.lowercased().contains("retry-after: 1"))
        #expect(refused.closed || third.receive(within: 600).closed)
        // The two waiting ones end their bodies and are answered; what they held is given back.
        for client in waiting {
            client.send([body.last!])
            let answer = String(decoding: client.receive(within: 600).bytes, as: UTF8.self)
            #expect(answer.hasPrefix("HTTP/1.1 200"), "\(answer)")
        }
        #expect(server.waitForMetric("luahier_body_bytes_in_flight", 0))
        #expect(server.metric("luahier_bodies_refused_total", in: try server.get("/metrics").text) == 1)
        #expect(try server.post("/v1/dispatch", String(decoding: body, as: UTF8.self)).status == 200)
    }

    /// Answers their clients leave unread hold no more than `--max-answers-unsent` between
    /// them, past what the connections' own buffers take: once they reach it, a request is
    /// answered 503 before any rule runs, and as the clients read, it is given back.
    @Test func answersLeftUnreadAreBoundedAcrossConnections() throws {
        // No clock: the 16 MB answer is made with no limit, and the unread connection is kept
        // (--idle-timeout far beyond the test) until the test reads it.
        let server = try Self.server(["--max-answers-unsent", "8M", "--idle-timeout", "600", "--timeout", "0", "--dispatch-timeout", "0"])
        defer { server.stop() }
        let big = #"{"at": "/app", "event": {"type": "Big", "n": 16000000}}"#
        let request = "POST /v1/dispatch HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: \(big.utf8.count)\r\n\r\n" + big
        // A client that reads nothing of its 16 MB answer: the kernel's buffers take a few MB
        // of it, the server holds the rest, past the budget.
        let unread = try Connection(port: server.port, receiveBuffer: 4096)
        unread.send(request)
        func unsent() throws -> Double { server.metric("luahier_answer_bytes_unsent", in: try server.get("/metrics").text) ?? -1 }
        #expect(try Luahier.eventually(timeout: 600) { try unsent() >= 8 * 1_048_576 })
        let refused = try server.post("/v1/dispatch", #"{"at": "/app", "event": "Ask"}"#)
        #expect(refused.status == 503)
        #expect(refused.headers["retry-after"] == "1")
        let error = refused.json["error"] as? [String: Any]
        #expect(error?["type"] as? String == "Overloaded")
        #expect((error?["message"] as? String)?.contains("--max-answers-unsent") == true, "\(refused.text)")
        #expect(server.metric("luahier_answers_refused_total", in: try server.get("/metrics").text) == 1)
        // Read, the answer comes whole, and what it held is given back.
        let answer = unread.receive(limit: 17_000_000, within: 600)
        #expect(answer.bytes.starts(with: Array("HTTP/1.1 200".utf8)))
        #expect(answer.bytes.count > 16_000_000)
        #expect(try Luahier.eventually(timeout: 600) { try unsent() == 0 })
        #expect(try server.post("/v1/dispatch", #"{"at": "/app", "event": "Ask"}"#).status == 200)
    }

    /// A chunked body sent a byte a chunk arrives whole: the chunks of one read reach the
    /// route as one part (`ConnectionGuard`), the way an attacker's million one-byte chunks
    /// cost half the CPU they did. A batch so sent is answered line by line, in order.
    @Test func aBodySentAByteAChunkArrivesWhole() throws {
        let server = try Self.server([])
        defer { server.stop() }
        func chunked(_ body: String, contentType: String) -> [UInt8] {
            let framed = body.utf8.map { "1\r\n\(String(UnicodeScalar($0)))\r\n" }.joined()
            return Array(("POST /v1/dispatch HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: \(contentType)\r\n"
                + "Transfer-Encoding: chunked\r\n\r\n" + framed + "0\r\n\r\n").utf8)
        }
        let single = try Connection(port: server.port)
        single.send(chunked(#"{"id": 7, "at": "/app", "event": "Ask"}"#, contentType: "application/json"))
        let answer = String(decoding: single.receive(within: 600).bytes, as: UTF8.self)
        #expect(answer.hasPrefix("HTTP/1.1 200"), "\(answer)")
        #expect(answer.contains(#""id":7"#) && answer.contains(#""status":"unhandled""#), "\(answer)")
        let lines = (1...20).map { #"{"id": \#($0), "at": "/app", "event": "Ask"}"# }.joined(separator: "\n") + "\n"
        let batch = try Connection(port: server.port)
        batch.send(chunked(lines, contentType: "application/x-ndjson"))
        let answers = String(decoding: batch.receive(within: 600).bytes, as: UTF8.self)
        #expect(answers.hasPrefix("HTTP/1.1 200"), "\(answers)")
        let ids = answers.matches(of: /"id":(\d+)/).map { Int($0.1) ?? 0 }
        #expect(ids == Array(1...20), "\(answers)")
    }

    /// No clock: --idle-timeout (which would free the state anyway) is far beyond the test, and
    /// a request that waited --max-wait (600 s) for the state would be refused 503 before the
    /// client gives up (900 s); so a 200 is the batch giving its state up for the request.
    @Test func aStalledBatchGivesItsStateUpWhenOthersWaitForIt() throws {
        let server = try Self.server(["--idle-timeout", "3600", "--max-wait", "600", "--timeout", "0", "--dispatch-timeout", "0"])
        defer { server.stop() }
        let body = String(repeating: #"{"at": "/app", "event": {"type": "Big", "n": 100000}}"# + "\n", count: 100)
        let stalled = try Connection(port: server.port, receiveBuffer: 4096)
        stalled.send(Self.post(body, contentType: "application/x-ndjson"))
        #expect(String(decoding: stalled.receive(limit: 12, within: 600).bytes, as: UTF8.self) == "HTTP/1.1 200")
        // The one state waits (or soon will) for a client that reads nothing; another request
        // comes, and the batch gives its state up once the request waits for it.
        let reply = try server.post("/v1/dispatch", #"{"at": "/app", "event": "Ask"}"#, timeout: 900)
        #expect(reply.status == 200)
        // Counted once the batch has wound up, which may be just after the other answer.
        #expect(server.waitForMetric(#"luahier_batches_stopped_total{reason="client_stalled"}"#, 1))
    }

    @Test func idleAndHalfSentConnectionsAreClosed() throws {
        let server = try Self.server(["--idle-timeout", "1"])
        defer { server.stop() }
        let silent = try Connection(port: server.port)
        let halfSent = try Connection(port: server.port)
        halfSent.send("POST /v1/dispatch HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le")
        // Closed by the server (a connection left alone is otherwise kept), however long that takes.
        #expect(silent.receive(within: 600).closed)
        #expect(halfSent.receive(within: 600).closed)
        // A connection in use stays open between its requests for as long. Its request goes at
        // once; should this thread stall past the timeout before it, the server closes it idle,
        // which is no failure: asked again on a new connection.
        var answer = ""
        for _ in 0..<5 {
            let opened = ContinuousClock.now
            let kept = try Connection(port: server.port)
            kept.send(Self.post(#"{"at": "/app", "event": "Ask"}"#))
            let got = kept.receive(limit: 12, within: 600)
            answer = String(decoding: got.bytes, as: UTF8.self)
            if !(got.bytes.isEmpty && got.closed && ContinuousClock.now - opened >= .seconds(1)) { break }
        }
        #expect(answer == "HTTP/1.1 200")
    }

    @Test func connectionsPastTheCapWaitToBeAccepted() throws {
        // The two held connections stay open for as long as the test needs (--idle-timeout far
        // beyond it): only the first's close lets the third in.
        let server = try Self.server(["--max-connections", "2", "--idle-timeout", "600"])
        defer { server.stop() }
        // Two connections, each answered once: both are accepted and stay open (keep-alive).
        var first: Connection? = try Connection(port: server.port)
        let second = try Connection(port: server.port)
        for connection in [first!, second] {
            connection.send(Self.post(#"{"at": "/app", "event": "Ask"}"#))
            #expect(String(decoding: connection.receive(limit: 12, within: 600).bytes, as: UTF8.self) == "HTTP/1.1 200")
            _ = connection.receive(within: 0.2)   // the rest of the answer
        }
        let third = try Connection(port: server.port)   // the kernel's backlog takes it
        third.send(Self.post(#"{"at": "/app", "event": "Ask"}"#))
        #expect(third.receive(within: 1).bytes.isEmpty)
        first = nil   // closes it: the third is accepted and answered
        #expect(first == nil)
        #expect(String(decoding: third.receive(limit: 12, within: 600).bytes, as: UTF8.self) == "HTTP/1.1 200")
        _ = second
    }
}
#endif
