#if Server
import Foundation
import Testing

/// `luahier serve` with TLS (`--tls-cert`, `--tls-key`) and bearer tokens
/// (`--dispatch-token-file`, `--reload-token-file`, `LUAHIER_DISPATCH_TOKEN`,
/// `LUAHIER_RELOAD_TOKEN`), against a real server on loopback; HTTPS through curl, trusting
/// the test certificate of Fixtures/tls.
@Suite("luahier serve, TLS and bearer tokens", .serialized, .ownThreads)
struct ServeSecurityTests {
    static let tls = Luahier.packageRoot.appendingPathComponent("Tests/luahierTests/Fixtures/tls")
    static let certificate = tls.appendingPathComponent("cert.pem").path
    static let key = tls.appendingPathComponent("key.pem").path
    static let ask = #"{"at": "/app", "event": "Ask"}"#

    /// A folder with `rules.lua` and, for each of `tokens`, a token file of that name.
    static func folder(tokens: [String: String] = [:]) throws -> URL {
        let folder = try ServeTests.folder()
        for (name, text) in tokens {
            try text.write(to: folder.appendingPathComponent(name), atomically: true, encoding: .utf8)
        }
        return folder
    }

    static func bearer(_ token: String) -> [String: String] { ["Authorization": "Bearer \(token)"] }

    @Test func tlsServesHTTPSAndAPlainRequestGetsNoAnswer() throws {
        let folder = try Self.folder(tokens: ["dispatch.token": "tls-dispatch-token-1\n"])
        let server = try ServerProcess(
            ["rules.lua", "--tls-cert", Self.certificate, "--tls-key", Self.key, "--dispatch-token-file", "dispatch.token", "--reload-endpoint"],
            in: folder)
        defer { server.stop() }
        #expect(server.scheme == "https", "\(server.stderr)")
        // A dispatch token beside a reload endpoint open to all is worth a word.
        #expect(server.stderr.contains("POST /v1/reload takes no token"), "\(server.stderr)")
        let url = "https://127.0.0.1:\(server.port)"

        let live = try Curl.request("\(url)/livez", caCertificate: Self.certificate)
        #expect(live.status == 200, "\(live.text)")
        let answered = try Curl.request(
            "\(url)/v1/dispatch", method: "POST", body: Self.ask, headers: Self.bearer("tls-dispatch-token-1"), caCertificate: Self.certificate)
        #expect(answered.status == 200, "\(answered.text)")
        #expect((answered.json["value"] as? [String: Any])?["version"] as? Int == 1)
        let refused = try Curl.request("\(url)/v1/dispatch", method: "POST", body: Self.ask, caCertificate: Self.certificate)
        #expect(refused.status == 401)

        // Plain HTTP to the TLS port: the handshake fails, and no HTTP answer comes back.
        let plain = try? HTTPClient.request(port: server.port, method: "GET", path: "/livez", body: [], headers: [:], timeout: 10)
        #expect(plain == nil || plain?.status != 200, "plain HTTP was answered: \(plain?.text ?? "")")
        // The server goes on serving HTTPS after it.
        #expect(try Curl.request("\(url)/readyz", caCertificate: Self.certificate).status == 200)
    }

    @Test func aDispatchTokenFromAFileIsRequiredAndEveryTokenOfTheFileIsTaken() throws {
        // Two tokens, as while one is rotated out; blank lines and a CRLF are forgiven.
        let folder = try Self.folder(tokens: ["dispatch.token": "\nold-token-AAAA\r\nnew-token-BBBB\n\n"])
        let server = try ServerProcess(["rules.lua", "--dispatch-token-file", "dispatch.token"], in: folder)
        defer { server.stop() }

        for token in ["old-token-AAAA", "new-token-BBBB"] {
            let reply = try server.post("/v1/dispatch", Self.ask, headers: Self.bearer(token))
            #expect(reply.status == 200, "\(token): \(reply.text)")
        }
        for headers in [[:], ["Authorization": "Basic b2xkOnRva2Vu"], ["Authorization": "Bearer"], ["Authorization": "Bearer a b"]] {
            let missing = try server.post("/v1/dispatch", Self.ask, headers: headers)
            #expect(missing.status == 401, "\(headers): \(missing.text)")
            #expect(missing.headers["www-authenticate"] == #"Bearer realm="luahier""#)
            #expect((missing.json["error"] as? [String: Any])?["type"] as? String == "Unauthorized")
        }
        // Wrong: a prefix of a token, one longer, another altogether.
        for guess in ["old-token-AAA", "old-token-AAAAA", "wrong-guess-ZZZZ"] {
            let wrong = try server.post("/v1/dispatch", Self.ask, headers: Self.bearer(guess))
            #expect(wrong.status == 403, "\(guess): \(wrong.text)")
            #expect((wrong.json["error"] as? [String: Any])?["type"] as? String == "Forbidden")
            #expect(!wrong.text.contains(guess))
        }
        // Probes and scrapers carry no token.
        #expect(try server.get("/livez").status == 200)
        #expect(try server.get("/readyz").status == 200)
        let metrics = try server.get("/metrics")
        #expect(metrics.status == 200)
        #expect(metrics.text.contains(#"luahier_http_requests_total{code="401",method="POST",route="/v1/dispatch"} 4"#), "\(metrics.text)")
        #expect(metrics.text.contains(#"luahier_http_requests_total{code="403",method="POST",route="/v1/dispatch"} 3"#))
        // A dispatch token does not turn reloading on.
        #expect(try server.post("/v1/reload", "", headers: Self.bearer("old-token-AAAA")).status == 403)

        server.stop()
        // The access log has a line per request, and no token, right or wrong.
        #expect(server.stderr.contains("status=401") && server.stderr.contains("status=403"), "\(server.stderr)")
        for secret in ["old-token-AAAA", "new-token-BBBB", "old-token-AAA", "wrong-guess-ZZZZ", "b2xkOnRva2Vu"] {
            #expect(!server.stderr.contains(secret), "\(secret) is in the log")
        }
    }

    @Test func reloadAndDispatchTokensFromTheEnvironmentAreSeparate() throws {
        let folder = try Self.folder()
        let (dispatch, reload) = ("env-dispatch-CCCC", "env-reload-DDDD")
        let server = try ServerProcess(
            ["rules.lua", "--log-level", "trace"], in: folder,
            environment: ["LUAHIER_DISPATCH_TOKEN": dispatch, "LUAHIER_RELOAD_TOKEN": reload])
        defer { server.stop() }

        #expect(try server.post("/v1/dispatch", Self.ask, headers: Self.bearer(dispatch)).status == 200)
        #expect(try server.post("/v1/dispatch", Self.ask, headers: Self.bearer(reload)).status == 403)
        // The reload token turned the endpoint on, without --reload-endpoint, for itself only.
        let reloaded = try server.post("/v1/reload", "", headers: Self.bearer(reload))
        #expect(reloaded.status == 200, "\(reloaded.text)")
        #expect(reloaded.json["result"] as? String == "unchanged")
        #expect(try server.post("/v1/reload", "", headers: Self.bearer(dispatch)).status == 403)
        #expect(try server.post("/v1/reload", "").status == 401)

        server.stop()
        #expect(!server.stderr.contains(dispatch) && !server.stderr.contains(reload), "a token is in the log: \(server.stderr)")
    }

    /// `luahier serve ARGS` in `folder` with `environment`, which must not start: its exit
    /// status and stderr.
    static func refused(_ arguments: [String], in folder: URL, environment: [String: String] = [:]) throws -> (status: Int32?, stderr: String) {
        let variables = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let child = try LuahierProcess(["serve"] + arguments + ["--port", "0"], environment: variables, folder: folder, stdin: false)
        let ended = child.finish(timeout: 60)
        return ended
    }

    @Test func aTLSFileThatCannotBeUsedIsNamedInOneLine() throws {
        let folder = try Self.folder(tokens: ["not-pem.txt": "hello\n"])
        let other = Self.tls.appendingPathComponent("other-key.pem").path
        let cases: [(arguments: [String], says: String)] = [
            (["--tls-cert", "missing.pem", "--tls-key", Self.key], "cannot use missing.pem as the TLS certificate chain: no such file"),
            (["--tls-cert", "not-pem.txt", "--tls-key", Self.key], "cannot use not-pem.txt as the TLS certificate chain: it holds no PEM certificate"),
            (["--tls-cert", Self.certificate, "--tls-key", Self.certificate], "cannot use \(Self.certificate) as the TLS private key: it holds no"),
            (["--tls-cert", Self.certificate, "--tls-key", other], "cannot use \(other) as the TLS private key: it is not the key of the certificate"),
        ]
        for (arguments, says) in cases {
            let ended = try Self.refused(["rules.lua"] + arguments, in: folder)
            #expect(ended.status == 2, "\(arguments): \(ended.stderr)")
            #expect(ended.stderr.contains(says), "\(arguments): \(ended.stderr)")
            #expect(ended.stderr.split(separator: "\n").count == 1, "\(ended.stderr)")
        }
        let half = try Self.refused(["rules.lua", "--tls-cert", Self.certificate], in: folder)
        #expect(half.status == 2)
        #expect(half.stderr.contains("--tls-cert and --tls-key go together"), "\(half.stderr)")
    }

    @Test func anEmptyTokenAndATokenGivenTwiceAreUsageErrors() throws {
        let folder = try Self.folder(tokens: ["empty.token": "\n \n", "bad.token": "good-one\nnot a token\n", "good.token": "abc\n"])
        let empty = try Self.refused(["rules.lua", "--dispatch-token-file", "empty.token"], in: folder)
        #expect(empty.status == 2)
        #expect(empty.stderr.contains("cannot use empty.token as the dispatch token file: it holds no token"), "\(empty.stderr)")
        let bad = try Self.refused(["rules.lua", "--reload-token-file", "bad.token"], in: folder)
        #expect(bad.status == 2)
        #expect(bad.stderr.contains("line 2 is not a bearer token"), "\(bad.stderr)")
        #expect(!bad.stderr.contains("not a token\n") && !bad.stderr.contains("good-one"), "a token is in the message: \(bad.stderr)")
        let emptyVariable = try Self.refused(["rules.lua"], in: folder, environment: ["LUAHIER_RELOAD_TOKEN": ""])
        #expect(emptyVariable.status == 2)
        #expect(emptyVariable.stderr.contains("cannot use LUAHIER_RELOAD_TOKEN"), "\(emptyVariable.stderr)")
        let twice = try Self.refused(["rules.lua", "--dispatch-token-file", "good.token"], in: folder, environment: ["LUAHIER_DISPATCH_TOKEN": "abc"])
        #expect(twice.status == 2)
        #expect(twice.stderr.contains("--dispatch-token-file and LUAHIER_DISPATCH_TOKEN both give the token"), "\(twice.stderr)")
        // A token is never an argument: there is no flag that takes one.
        let argument = try Self.refused(["rules.lua", "--dispatch-token", "abc"], in: folder)
        #expect(argument.status == 2)
    }
}

/// HTTPS requests through curl: the tests' own `HTTPClient` speaks plain HTTP only.
enum Curl {
    static func request(
        _ url: String, method: String = "GET", body: String? = nil, headers: [String: String] = [:], caCertificate: String
    ) throws -> HTTPReply {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("lhcurl-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let (head, answer) = (scratch.appendingPathComponent("head").path, scratch.appendingPathComponent("body").path)
        var arguments = ["curl", "-sS", "--max-time", "60", "--cacert", caCertificate, "-X", method, "-D", head, "-o", answer, "-w", "%{http_code}"]
        for (name, value) in headers { arguments += ["-H", "\(name): \(value)"] }
        if let body { arguments += ["-H", "Content-Type: application/json", "--data-binary", body] }
        let curl = try Luahier.run(arguments + [url], input: nil, timeout: 90, executable: URL(fileURLWithPath: "/usr/bin/env"))
        guard curl.status == 0, !curl.signaled, let status = Int(curl.stdout) else {
            throw ServerFailure(message: "curl \(url) exited \(curl.status): \(curl.stderr)")
        }
        var fields: [String: String] = [:]
        for line in (try? String(contentsOfFile: head, encoding: .utf8))?.components(separatedBy: "\r\n") ?? [] {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let bytes = (try? Data(contentsOf: URL(fileURLWithPath: answer))).map { [UInt8]($0) } ?? []
        return HTTPReply(status: status, headers: fields, body: bytes)
    }
}
#endif
