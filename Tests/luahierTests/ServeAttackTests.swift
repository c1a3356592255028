#if Server
import Foundation
import Testing

/// What an attacker, given only the docs, found in `luahier serve`, each now held: against a
/// real server on loopback.
@Suite("luahier serve: what an attacker found", .serialized, .ownThreads)
struct ServeAttackTests {
    static let rules = """
        local app = hier.root:child("app")
        app:receiveEvent("Ask", function(e) return {type = "Answer"} end)
        app:receiveEvent("Say", function(e) print(e.text) return {type = "Said"} end)
        """

    static func server(_ flags: [String] = []) throws -> ServerProcess {
        try ServerProcess([try Luahier.script(rules, name: "rules.lua")] + flags)
    }

    /// A batch of 524,000 one-byte invalid lines (116 MB of answers) used to write each answer
    /// on its own: the event loop, busy with half a million writes, took no new connection,
    /// `/livez` included, until the batch ended. Answers now go out in runs of 16 KiB (or what
    /// came within 2 ms of the last write): 100,000 lines took 44,109 chunks before, 1,585 now
    /// on a quiet machine. A loaded one makes more (5,462 with both cores busy building): what
    /// came within 2 ms is less there, so the bound is a quarter of the lines, well under the
    /// one write per answer it guards against and well over what load makes.
    @Test func aBatchOfSmallAnswersIsWrittenInRunsAndLivenessAnswersMeanwhile() throws {
        let server = try Self.server()
        defer { server.stop() }
        let lines = 100_000
        let body = String(repeating: "1\n", count: lines)
        let connection = try Connection(port: server.port)
        connection.send(
            "POST /v1/dispatch HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-ndjson\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n")
        connection.send(body)
        var received = connection.receive(limit: 4096, within: 600).bytes
        #expect(String(decoding: received, as: UTF8.self).hasPrefix("HTTP/1.1 200"))
        // While it streams, /livez answers.
        #expect(try server.get("/livez").status == 200)
        while true {
            let more = connection.receive(within: 600)
            received += more.bytes
            if more.closed || more.bytes.isEmpty { break }
        }
        let reply = try HTTPClient.parse(received)
        #expect(reply.text.split(separator: "\n").count == lines)
        let chunks = try Self.chunkCount(received)
        #expect(chunks < lines / 4, "\(chunks) chunks for \(lines) answers")
    }

    /// The chunks of a chunked answer's body.
    static func chunkCount(_ bytes: [UInt8]) throws -> Int {
        let crlf: [UInt8] = [13, 10]
        guard var position = bytes.firstRange(of: crlf + crlf)?.upperBound else { throw ServerFailure(message: "no head") }
        var count = 0
        while let end = bytes[position...].firstRange(of: crlf) {
            guard let size = Int(String(decoding: bytes[position..<end.lowerBound], as: UTF8.self), radix: 16) else { break }
            count += 1
            if size == 0 { break }
            position = end.upperBound + size + 2
        }
        return count
    }

    /// A client that sent half a body held a graceful shutdown for all of `--shutdown-grace`,
    /// which then exited 1. Its body is now ended at the signal, and answered 503.
    @Test func aHalfSentBodyIsAnswered503AtShutdownAndTheDrainEndsAtOnce() throws {
        let server = try Self.server(["--shutdown-grace", "600", "--idle-timeout", "600"])
        defer { server.stop() }
        let connection = try Connection(port: server.port)
        connection.send("POST /v1/dispatch HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"at\"")
        // The request is under way before the signal: its head read, the start of its body
        // held while the rest is waited for.
        #expect(server.waitForMetric("luahier_body_bytes_in_flight", atLeast: 1))
        server.signal(SIGTERM)
        let (bytes, closed) = connection.receive(within: 600)
        let reply = try HTTPClient.parse(bytes)
        #expect(reply.status == 503, "\(String(decoding: bytes, as: UTF8.self))")
        #expect((reply.json["error"] as? [String: Any])?["type"] as? String == "ShuttingDown")
        #expect(closed)
        // The drain ends at once: had the body held it, the exit would wait the 600 s grace and
        // be 1 (the bound here is against hangs only).
        #expect(server.waitForExit(timeout: 1200) == 0, "\(server.stderr)")
    }

    /// A rule's print of C1 controls, line separators and bidirectional overrides reached the
    /// text log as they were: U+009B clears an xterm's screen.
    @Test func whatARulePrintsCannotDriveATerminal() throws {
        let server = try Self.server(["--log-format", "text"])
        defer { server.stop() }
        let text = "a\\u009b2Jb\\u2028c\\u202ed\\u007fe"
        #expect(try server.post("/v1/dispatch", #"{"at": "/app", "event": {"type": "Say", "text": "\#(text)"}}"#, headers: ["X-Request-Id": "say-1"]).status == 200)
        #expect(server.waitForStderr { $0.contains("request_id=say-1 text=") })
        let line = server.stderr.split(separator: "\n").first { $0.contains("request_id=say-1 text=") }.map(String.init) ?? ""
        #expect(line.contains(#"text="a\u009b2Jb\u2028c\u202ed\u007fe""#), "\(line)")
        for scalar in ["\u{9B}", "\u{2028}", "\u{202E}", "\u{7F}"] {
            #expect(!server.stderr.contains(scalar), "\(scalar.unicodeScalars.first!.value) in the log")
        }
    }

    /// HEAD answered `Content-Length: 0` where GET's is the body's length.
    @Test func headSaysTheLengthGetWouldSend() throws {
        let server = try Self.server()
        defer { server.stop() }
        for path in ["/livez", "/readyz", "/healthz", "/openapi.json"] {
            let get = try server.get(path)
            let head = try server.request("HEAD", path)
            #expect(head.status == 200 && head.body.isEmpty)
            #expect(head.headers["content-length"] == String(get.body.count), "\(path)")
        }
        let metrics = try server.request("HEAD", "/metrics")
        #expect(metrics.status == 200 && (Int(metrics.headers["content-length"] ?? "0") ?? 0) > 1000)
    }

    /// A FIFO named as a token or config file held the start for ever (SIGTERM could not stop
    /// it); a rules path from the environment that starts with `-` was read as an option.
    @Test func setupFilesMustBeRegularAndARulesPathIsNeverAnOption() throws {
        let rules = try Luahier.script(Self.rules, name: "rules.lua")
        let fifo = URL(fileURLWithPath: rules).deletingLastPathComponent().appendingPathComponent("fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let token = try ServeConfigurationTests.run(["serve", rules, "--port", "0", "--dispatch-token-file", fifo])
        #expect(token.status == 2, "\(token.stderr)")
        #expect(token.stderr.contains("not a regular file"), "\(token.stderr)")
        let config = try ServeConfigurationTests.run(["serve", rules, "--port", "0", "--config", fifo])
        #expect(config.status == 2, "\(config.stderr)")
        #expect(config.stderr.contains("not a regular file"), "\(config.stderr)")
        let dashed = try ServeConfigurationTests.run(["serve", "--port", "0"], environment: ["LUAHIER_RULES": "--help"])
        #expect(dashed.status == 2, "\(dashed.stdout) \(dashed.stderr)")
        #expect(!dashed.stdout.contains("USAGE"))
        #expect(dashed.stderr.contains("./--help"), "\(dashed.stderr)")
    }

    /// A refused token's request body went on being read (tens of MB past --max-body) and
    /// the answer did not say the connection would close.
    @Test func aRefusedTokenClosesTheConnectionItsBodyCameOn() throws {
        let folder = URL(fileURLWithPath: try Luahier.script(Self.rules, name: "rules.lua")).deletingLastPathComponent()
        let tokenFile = folder.appendingPathComponent("token").path
        try "s3cret-token\n".write(toFile: tokenFile, atomically: true, encoding: .utf8)
        let server = try ServerProcess(["rules.lua", "--dispatch-token-file", tokenFile], in: folder)
        defer { server.stop() }
        for headers in [[:], ["Authorization": "Bearer wrong-token"]] {
            let reply = try server.post("/v1/dispatch", #"{"at": "/app", "event": "Ask"}"#, headers: headers)
            #expect([401, 403].contains(reply.status))
            #expect(reply.headers["connection"]?.lowercased() == "close", "\(reply.headers)")
        }
    }
}
#endif
