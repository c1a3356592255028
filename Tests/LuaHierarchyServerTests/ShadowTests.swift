#if Server
import Foundation
import Hummingbird
import HummingbirdTesting
@testable import LuaHierarchy
@testable import LuaHierarchyServer
import Testing

/// Shadow revisions (docs/shadow.md): a candidate answers a sample of live requests after
/// them, on its own states, and the differences are counted and logged; the live answers
/// never wait for it.
@Suite("Shadow revisions")
struct ShadowTests {
    /// Live rules: `Ask` is answered at /app, `Page` at the root.
    static let live = """
        local app = hier.root:child("app")
        app:receiveEvent("Ask", function(e) return {type = "Answer", to = e.who} end)
        hier.root:receiveEvent("Page", function(e) return "handled" end)
        """
    /// The candidate: `Ask` answered differently (value), `Page` the same, `Hold` waits for the
    /// test (the live rules leave it unhandled).
    static let candidate = """
        local app = hier.root:child("app")
        app:receiveEvent("Ask", function(e) return {type = "Answer", to = "everyone"} end)
        hier.root:receiveEvent("Page", function(e) return "handled" end)
        app:receiveEvent("Hold", function(e) hold() return "handled" end)
        """

    static func folder() throws -> URL {
        let folder = URL(fileURLWithPath: "/tmp/lhshadow-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    /// A server on the live rules with reloading on, the candidate written beside them, and
    /// `hold()` for the candidate's rules to wait on `release`.
    static func server(
        release: DispatchSemaphore = DispatchSemaphore(value: 0), entered: DispatchSemaphore? = nil, log: DecisionLog? = nil
    ) throws -> (server: RulesServer, candidate: String, folder: URL) {
        let folder = try folder()
        let rules = folder.appendingPathComponent("rules.lua")
        try live.write(to: rules, atomically: true, encoding: .utf8)
        let candidate = folder.appendingPathComponent("candidate.lua")
        try Self.candidate.write(to: candidate, atomically: true, encoding: .utf8)
        var pool = RulesPool.Options(rulesFile: rules.path, workers: 1)
        pool.responderKeys = true
        pool.decisionLog = log
        pool.hierarchy.limits.dispatchTime = nil
        pool.setup = { hierarchy in
            hierarchy.register(function: "hold") { _ in
                entered?.signal()
                _ = release.wait(timeout: .now() + 600)   // a bound against hangs only
                return .null
            }
        }
        var options = RulesServer.Options()
        options.reloadEndpoint = true
        return (RulesServer(pool: try RulesPool(options: pool), options: options), candidate.path, folder)
    }

    static func report(_ client: some TestClientProtocol) async throws -> Value {
        APIDocumentTests.object(try await client.execute(uri: "/v1/shadow", method: .get))
    }

    static func count(_ report: Value, _ group: String, _ name: String) -> Int {
        Int(report[group]?[name]?.intValue ?? -1)
    }

    @Test func aCandidateIsComparedOnEveryRequestAtSampleOne() async throws {
        let (server, candidate, _) = try Self.server()
        try await server.startShadow(rulesFile: candidate, sample: 1)
        try await server.application().test(.router) { client in
            for (index, event) in ["Ask", "Page", "Ask", "Nothing"].enumerated() {
                let reply = try await client.execute(
                    uri: "/v1/dispatch", method: .post, headers: [.init("X-Request-Id")!: "r\(index)"],
                    body: ByteBuffer(string: #"{"at": "/app", "event": {"type": "\#(event)", "who": "ann"}}"#))
                #expect(reply.status == .ok)
                // The live answer is the live rules' own.
                if event == "Ask" { #expect(APIDocumentTests.object(reply)["value"]?["to"]?.stringValue == "ann") }
            }
            #expect(try await RouteTests.eventually { Self.count(try await Self.report(client), "requests", "compared") == 4 })
            let report = try await Self.report(client)
            #expect(report["active"] == .bool(true))
            #expect(Self.count(report, "lines", "same") == 2)
            #expect(Self.count(report, "lines", "different") == 2)
            #expect(Self.count(report, "differences", "value") == 2)
            #expect(Self.count(report, "differences", "status") == 0)
            #expect(Self.count(report, "differences", "responder") == 0, "the same responder, on a line of its own file")
            let recent = report["recent"]?.arrayValue?.compactMap { $0["request_id"]?.stringValue }
            #expect(recent == ["r0", "r2"])
            let metrics = String(buffer: try await client.execute(uri: "/metrics", method: .get).body)
            #expect(metrics.contains(#"luahier_shadow_lines_total{result="different"} 2"#))
            #expect(metrics.contains(#"luahier_shadow_differences_total{field="value"} 2"#))
            #expect(metrics.contains("luahier_shadow_active 1.0"))
        }
    }

    @Test func aBatchIsComparedLineByLine() async throws {
        let (server, candidate, _) = try Self.server()
        try await server.startShadow(rulesFile: candidate, sample: 1)
        try await server.application().test(.router) { client in
            let lines = [#"{"at": "/app", "event": "Page"}"#, "", #"{"at": "/app", "event": {"type": "Ask", "who": "bo"}}"#, "not json"]
            let reply = try await client.execute(
                uri: "/v1/dispatch", method: .post, headers: [.contentType: "application/x-ndjson", .init("X-Request-Id")!: "batch"],
                body: ByteBuffer(string: lines.joined(separator: "\n")))
            #expect(String(buffer: reply.body).split(separator: "\n").count == 3)
            #expect(try await RouteTests.eventually { Self.count(try await Self.report(client), "lines", "compared") == 3 })
            let report = try await Self.report(client)
            #expect(Self.count(report, "requests", "compared") == 1)
            #expect(Self.count(report, "lines", "different") == 1)
            // The line of the batch, as `line` counts it (the blank line counted).
            #expect(report["recent"]?.arrayValue?.first?["line"]?.intValue == 3)
        }
    }

    @Test func sampleChoosesByRequestIdInTheGivenProportion() throws {
        let pool = try RulesPool(options: .init(rulesSource: Self.live))
        let registry = try ShadowTestRegistry()
        for (sample, low, high) in [(0.0, 0, 0), (1.0, 1000, 1000), (0.25, 180, 320), (0.5, 420, 580)] {
            let shadow = Shadow(candidate: pool, file: "c.lua", sample: sample, counters: registry.counters)
            let chosen = (0..<1000).filter { _ in shadow.samples(UUID().uuidString) }.count
            #expect((low...high).contains(chosen), "sample \(sample): \(chosen) of 1000")
            // The same id, the same choice: a retried request is sampled alike.
            for id in ["a", "retry-7", "4f1c"] { #expect(shadow.samples(id) == shadow.samples(id)) }
        }
    }

    /// Load on the live route while the candidate cannot answer at all (its rule waits on the
    /// test): every live answer comes, each the same as without a shadow, so none of them
    /// waited for the candidate; once it is let go, it compares them all.
    @Test func liveAnswersNeverWaitForTheCandidate() async throws {
        let release = DispatchSemaphore(value: 0), entered = DispatchSemaphore(value: 0)
        let (plain, _, _) = try Self.server()
        let (server, candidate, _) = try Self.server(release: release, entered: entered)
        try await server.startShadow(rulesFile: candidate, sample: 1)
        let requests = 200
        let bodies = (0..<requests).map { index in
            index % 2 == 0 ? #"{"id": \#(index), "at": "/app", "event": "Hold"}"# : #"{"id": \#(index), "at": "/app", "event": {"type": "Ask", "who": "x"}}"#
        }
        let expected = try await plain.application().test(.router) { client in
            var expected: [String] = []
            for body in bodies {
                expected.append(String(buffer: try await client.execute(uri: "/v1/dispatch", method: .post, body: ByteBuffer(string: body)).body))
            }
            return expected
        }
        try await server.application().test(.router) { client in
            // The first request (a Hold) alone, until the candidate is stuck in it.
            let first = try await client.execute(uri: "/v1/dispatch", method: .post, body: ByteBuffer(string: bodies[0]))
            await withCheckedContinuation { continuation in
                DispatchQueue.global().async {
                    _ = entered.wait(timeout: .now() + 600)   // a bound against hangs only
                    continuation.resume()
                }
            }
            let answers = try await withThrowingTaskGroup(of: (Int, String).self) { group in
                for (index, body) in bodies.enumerated().dropFirst() {
                    group.addTask {
                        let reply = try await client.execute(uri: "/v1/dispatch", method: .post, body: ByteBuffer(string: body))
                        return (index, String(buffer: reply.body))
                    }
                }
                var answers = [String](repeating: "", count: requests)
                answers[0] = String(buffer: first.body)
                for try await (index, body) in group { answers[index] = body }
                return answers
            }
            // Every live answer came while the candidate was held at its first request, each as
            // the same rules answer it with no shadow (the revision aside: another folder).
            let differing = zip(answers, expected).filter { Self.withoutRevision($0) != Self.withoutRevision($1) }
            #expect(answers.count == requests)
            #expect(differing.isEmpty, "\(differing.count) answers differ, the first: \(differing.first.map { "\($0)" } ?? "")")
            // Each is handed to the candidate once its answer is written.
            #expect(try await RouteTests.eventually { Self.count(try await Self.report(client), "requests", "sampled") == requests })
            #expect(Self.count(try await Self.report(client), "requests", "compared") == 0)
            for _ in 0..<requests { release.signal() }
            #expect(try await RouteTests.eventually {
                let report = try await Self.report(client)
                return Self.count(report, "requests", "compared") + Self.count(report, "requests", "skipped") == requests
            })
            let report = try await Self.report(client)
            // A request waits for the candidate with no time bound: every one handed over is
            // compared (one may be skipped, never waited for, when the intake's lock is held),
            // and every one differs: Hold is handled by the candidate only, Ask's value differs.
            let compared = Self.count(report, "requests", "compared")
            #expect(compared + Self.count(report, "requests", "skipped") == requests)
            #expect(compared >= requests * 9 / 10)
            #expect(Self.count(report, "lines", "different") == compared)
            #expect(Self.count(report, "requests", "pending") == 0)
        }
    }

    @Test func differencesAreLoggedWithBothOutcomesAndMasked() async throws {
        let folder = try Self.folder()
        let path = folder.appendingPathComponent("decisions.ndjson").path
        let log = DecisionLog(sink: try DecisionFileSink(path: path), mask: ["/outcome/value/to"], source: "serve")
        let (server, candidate, _) = try Self.server(log: log)
        try await server.startShadow(rulesFile: candidate, sample: 1)
        try await server.application().test(.router) { client in
            _ = try await client.execute(
                uri: "/v1/dispatch", method: .post, headers: [.init("X-Request-Id")!: "masked"],
                body: ByteBuffer(string: #"{"at": "/app", "event": {"type": "Ask", "who": "ann"}}"#))
            _ = try await client.execute(uri: "/v1/dispatch", method: .post, body: ByteBuffer(string: #"{"at": "/app", "event": "Page"}"#))
            #expect(try await RouteTests.eventually { Self.count(try await Self.report(client), "requests", "compared") == 2 })
        }
        #expect(log.flush())
        let records = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map { try JSON.parse(String($0)) }
        let shadow = records.filter { $0["source"]?.stringValue == "shadow" }
        // Two live records, and one shadow record: the request whose outcomes differ.
        #expect(records.count == 3)
        #expect(shadow.count == 1)
        let record = try #require(shadow.first)
        #expect(record["request_id"]?.stringValue == "masked")
        #expect(record["differences"] == .array(["value"]))
        #expect(record["outcome"]?["value"]?["to"]?.stringValue == "<masked>")
        #expect(record["live"]?["outcome"]?["value"]?["to"]?.stringValue == "<masked>", "the live side is masked as well")
        #expect(record["live"]?["responder_key"]?.stringValue == record["responder_key"]?.stringValue)
        #expect(record["live"]?["revision"]?["hash"]?.stringValue != record["revision"]?["hash"]?.stringValue)
        log.close()
    }

    @Test func theRoutesLoadReplaceAndStopACandidate() async throws {
        let (server, candidate, folder) = try Self.server()
        try await server.application().test(.router) { client in
            func call(_ method: HTTPRequest.Method, _ body: String? = nil) async throws -> TestResponse {
                try await client.execute(uri: "/v1/shadow", method: method, body: body.map { ByteBuffer(string: $0) })
            }
            #expect(Self.object(try await call(.get)) == .map(["active": false]))
            #expect(try await call(.post).status == .conflict)   // no file known yet
            #expect(try await call(.post, "[1]").status == .badRequest)
            #expect(try await call(.post, #"{"rules": "c.lua", "extra": 1}"#).status == .badRequest)
            #expect(try await call(.post, #"{"rules": "\#(candidate)", "sample": 2}"#).status == .badRequest)
            let loaded = try await call(.post, #"{"rules": "\#(candidate)", "sample": 0.5}"#)
            #expect(loaded.status == .ok)
            #expect(Self.object(loaded)["sample"] == .double(0.5))
            let broken = folder.appendingPathComponent("broken.lua").path
            try "local x = (".write(toFile: broken, atomically: true, encoding: .utf8)
            let failed = try await call(.post, #"{"rules": "\#(broken)"}"#)
            #expect(failed.status == .unprocessableContent)
            #expect(Self.object(failed)["error"]?["message"]?.stringValue?.contains("rules.lua:1") == true,
                    "the candidate's error, under the live rules' name: \(String(buffer: failed.body))")
            // The candidate running goes on.
            #expect(Self.object(failed)["shadow"]?["file"]?.stringValue == candidate)
            // Without `rules`: the candidate running, loaded again.
            #expect(Self.object(try await call(.post, "{}"))["file"]?.stringValue == candidate)
            let stopped = try await call(.delete)
            #expect(stopped.status == .ok)
            #expect(Self.object(stopped)["active"] == .bool(true))
            #expect(Self.object(try await call(.get)) == .map(["active": false]))
        }
    }

    /// `rules` names only a `.lua` file in the live rules' folder, every link followed: any
    /// readable file was taken, and the 422's Lua error quoted a secret's first token (an
    /// attacker's find). A refused name answers the same whether the file exists or not.
    @Test func aCandidateOutsideTheRulesFolderIsRefused() async throws {
        let (server, _, folder) = try Self.server()
        let outside = try Self.folder()
        let secret = outside.appendingPathComponent("secret.lua")
        try "token abcdef0123456789secret".write(to: secret, atomically: true, encoding: .utf8)
        let inside = folder.appendingPathComponent("token.txt")
        try "token abcdef0123456789secret".write(to: inside, atomically: true, encoding: .utf8)
        try FileManager.default.createSymbolicLink(
            atPath: folder.appendingPathComponent("link.lua").path, withDestinationPath: secret.path)
        try FileManager.default.createSymbolicLink(
            atPath: folder.appendingPathComponent("token.lua").path, withDestinationPath: inside.path)
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("next"), withIntermediateDirectories: true)
        try Self.candidate.write(to: folder.appendingPathComponent("next/candidate.lua"), atomically: true, encoding: .utf8)
        try await server.application().test(.router) { client in
            func post(_ rules: String) async throws -> TestResponse {
                try await client.execute(uri: "/v1/shadow", method: .post, body: ByteBuffer(string: #"{"rules": "\#(rules)"}"#))
            }
            let refused = [
                secret.path, outside.appendingPathComponent("absent.lua").path, inside.path, "token.txt", "link.lua", "token.lua",
                "../\(outside.lastPathComponent)/secret.lua", "/etc/passwd", "next/../../\(outside.lastPathComponent)/secret.lua",
                // Judged on the text: whether /tmp or /nowhere exists is not told (an attack's find).
                "/tmp/..\(folder.path)/candidate.lua", "/nowhere/..\(folder.path)/candidate.lua", "./candidate.lua", "next//candidate.lua",
            ]
            for name in refused {
                let answer = try await post(name)
                #expect(answer.status == .forbidden, "\(name)")
                #expect(Self.object(answer)["error"]?["type"]?.stringValue == "ShadowFileRefused", "\(name)")
                #expect(!String(buffer: answer.body).contains("abcdef"), "\(name): \(String(buffer: answer.body))")
            }
            #expect(try await Self.report(client) == .map(["active": false]), "no candidate was made")
            // Named from the folder, or by a full path under it.
            let loaded = try await post("next/candidate.lua")
            #expect(loaded.status == .ok, "\(String(buffer: loaded.body))")
            #expect(Self.object(loaded)["file"]?.stringValue?.hasSuffix("/next/candidate.lua") == true)
            #expect(try await post(folder.appendingPathComponent("candidate.lua").path).status == .ok)
        }
    }

    /// A name checked is read only as a `.lua` file in the folder as opened: the running
    /// candidate's file made a link out is refused when loaded again (it was a client's name),
    /// and a link swapped in between the check and the read is caught at the read (an
    /// attacker's finds: the first leaked a secret's first token every time, the second in 23
    /// of 600 tries).
    @Test func aLinkMadeAfterTheCheckIsCaughtAtTheRead() async throws {
        let (server, _, folder) = try Self.server()
        let outside = try Self.folder()
        let secret = outside.appendingPathComponent("secret.lua")
        try "db_password abcdef0123456789".write(to: secret, atomically: true, encoding: .utf8)
        let named = folder.appendingPathComponent("named.lua")
        try Self.candidate.write(to: named, atomically: true, encoding: .utf8)
        try await server.application().test(.router) { client in
            func post(_ body: String) async throws -> TestResponse {
                try await client.execute(uri: "/v1/shadow", method: .post, body: ByteBuffer(string: body))
            }
            #expect(try await post(#"{"rules": "named.lua"}"#).status == .ok)
            try FileManager.default.removeItem(at: named)
            try FileManager.default.createSymbolicLink(atPath: named.path, withDestinationPath: secret.path)
            for body in ["{}", #"{"rules": "\#(named.path)"}"#] {
                let again = try await post(body)
                #expect(again.status == .forbidden, "\(body): \(String(buffer: again.body))")
                #expect(!String(buffer: again.body).contains("db_password"))
            }
        }
        // The read itself, as the route makes it: a link as the last component, and a folder
        // inside made a link out, are refused before a byte is read.
        let linkedFolder = folder.appendingPathComponent("sub")
        try FileManager.default.createSymbolicLink(atPath: linkedFolder.path, withDestinationPath: outside.path)
        for path in [named.path, linkedFolder.appendingPathComponent("secret.lua").path] {
            guard case .failure(let error) = readRulesFile(path, limit: nil, within: folder.path) else {
                Issue.record("\(path) was read")
                continue
            }
            #expect(error.message == "cannot read \(path): not a .lua file in \(folder.path)")
        }
        #expect((try? readRulesFile(folder.appendingPathComponent("candidate.lua").path, limit: nil, within: folder.path).get()) != nil)
    }

    /// Loads run one at a time: a `POST` while another loads a candidate answers 409
    /// `ShadowLoadUnderWay` before it makes any state (twenty at once held twenty pools of
    /// states, 2.2 GB: an attacker's find).
    @Test func aLoadWhileAnotherLoadsIsRefused() async throws {
        let (server, candidate, _) = try Self.server()
        try await server.application().test(.router) { client in
            let body = ByteBuffer(string: #"{"rules": "\#(candidate)"}"#)
            // Another load under way (as the route marks it while it loads).
            server.shadowLoading.withLock { $0 = true }
            let refused = try await client.execute(uri: "/v1/shadow", method: .post, body: body)
            #expect(refused.status == .conflict)
            #expect(Self.object(refused)["error"]?["type"]?.stringValue == "ShadowLoadUnderWay")
            #expect(try await Self.report(client) == .map(["active": false]), "no candidate was made")
            server.shadowLoading.withLock { $0 = false }
            let loaded = try await client.execute(uri: "/v1/shadow", method: .post, body: body)
            #expect(loaded.status == .ok)
            #expect(server.shadowLoading.withLock { $0 } == false, "a load done lets the next one run")
        }
    }

    /// A mask written for the rules' own records masks the live side of a shadow record too:
    /// it is run on the live outcome as the live revision's record of the request.
    @Test func theRulesMaskMasksTheLiveSideOfAShadowRecord() async throws {
        let folder = try Self.folder()
        let mask = """
            hier.maskDecision(function(record)
              if type(record.outcome) == "table" and type(record.outcome.value) == "table" then record.outcome.value.to = "<hidden>" end
              if type(record.request) == "table" and type(record.request.event) == "table" then record.request.event.who = "<hidden>" end
              return record
            end)
            """
        try (Self.live + "\n" + mask).write(to: folder.appendingPathComponent("rules.lua"), atomically: true, encoding: .utf8)
        try (Self.candidate + "\n" + mask).write(to: folder.appendingPathComponent("candidate.lua"), atomically: true, encoding: .utf8)
        let path = folder.appendingPathComponent("decisions.ndjson").path
        let log = DecisionLog(sink: try DecisionFileSink(path: path), source: "serve")
        var options = RulesPool.Options(rulesFile: folder.appendingPathComponent("rules.lua").path)
        options.decisionLog = log
        let server = RulesServer(pool: try RulesPool(options: options), options: .init())
        try await server.startShadow(rulesFile: folder.appendingPathComponent("candidate.lua").path, sample: 1)
        try await server.application().test(.router) { client in
            _ = try await client.execute(
                uri: "/v1/dispatch", method: .post, body: ByteBuffer(string: #"{"at": "/app", "event": {"type": "Ask", "who": "ann@example.org"}}"#))
            #expect(try await RouteTests.eventually { Self.count(try await Self.report(client), "requests", "compared") == 1 })
        }
        #expect(log.flush())
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(!text.contains("ann@example.org"), "\(text)")
        let shadow = try #require(text.split(separator: "\n").map { try JSON.parse(String($0)) }.first { $0["source"]?.stringValue == "shadow" })
        #expect(shadow["live"]?["outcome"]?["value"]?["to"]?.stringValue == "<hidden>")
        #expect(shadow["outcome"]?["value"]?["to"]?.stringValue == "<hidden>")
        log.close()
    }

    /// Live rules from a bundle: the candidate is the file given, not the live bundle again
    /// (which would report every line the same); a bundle as the candidate is refused.
    @Test func aCandidateBesideABundleIsTheFileGiven() async throws {
        let folder = try Self.folder()
        let bundle = try RuleBundle(entry: "rules.lua", rules: Array(Self.live.utf8), modules: [:])
        let candidate = folder.appendingPathComponent("candidate.lua")
        try Self.candidate.write(to: candidate, atomically: true, encoding: .utf8)
        let bundled = folder.appendingPathComponent("candidate.bundle")
        try Data(bundle.bytes).write(to: bundled)
        let server = RulesServer(pool: try RulesPool(options: .init(bundle: bundle)), options: .init())
        try await server.startShadow(rulesFile: candidate.path, sample: 1)
        try await server.application().test(.router) { client in
            let report = try await Self.report(client)
            #expect(report["revision"]?["hash"] != report["live_revision"]?["hash"])
            _ = try await client.execute(uri: "/v1/dispatch", method: .post, body: ByteBuffer(string: #"{"at": "/app", "event": "Ask"}"#))
            #expect(try await RouteTests.eventually { Self.count(try await Self.report(client), "lines", "different") == 1 })
        }
        await #expect(throws: ScriptError.self) { try await server.startShadow(rulesFile: bundled.path, sample: 1) }
    }

    @Test func membersOfTheWrongTypeAreRefused() async throws {
        let (server, candidate, _) = try Self.server()
        try await server.startShadow(rulesFile: candidate, sample: 0.5)
        try await server.application().test(.router) { client in
            for body in [#"{"sample": "0.5"}"#, #"{"rules": 123}"#, #"{"workers": "1"}"#, #"{"workers": 1.5}"#, #"{"workers": 2}"#, #"{"rules": ""}"#] {
                let reply = try await client.execute(uri: "/v1/shadow", method: .post, body: ByteBuffer(string: body))
                #expect(reply.status == .badRequest, "\(body)")
            }
            #expect(Self.object(try await client.execute(uri: "/v1/shadow", method: .get))["sample"] == .double(0.5))
        }
    }

    static func object(_ response: TestResponse) -> Value { APIDocumentTests.object(response) }

    static func withoutRevision(_ answer: String) -> Value {
        guard case .map(var members)? = try? JSON.parse(answer) else { return .null }
        members["revision"] = nil
        return .map(members)
    }
}

/// Counters for a `Shadow` made outside a server.
struct ShadowTestRegistry {
    let counters: ShadowCounters

    init() throws {
        let pool = try RulesPool(options: .init(rulesSource: ""))
        counters = ServerMetrics(pool: pool, printer: nil, bodies: ByteBudget(limit: 1 << 20), answers: ByteBudget(limit: 1 << 20)).shadow
    }
}
#endif
