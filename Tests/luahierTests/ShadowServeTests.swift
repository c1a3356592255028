#if Server
import Foundation
import Testing

/// `luahier serve --shadow`, as a user runs it: the built binary on loopback, the candidate
/// beside the live rules (docs/shadow.md).
@Suite("luahier serve --shadow", .serialized, .ownThreads)
struct ShadowServeTests {
    static let ask = #"{"at": "/app", "event": "Ask"}"#

    /// A folder with the live rules (version 1), the candidate (version 2: `Ask` answers
    /// differently) and a reload token.
    static func folder() throws -> URL {
        let folder = try ServeTests.folder(version: 1)
        try ServeTests.rules(version: 2).write(to: folder.appendingPathComponent("candidate.lua"), atomically: true, encoding: .utf8)
        try "shadow-reload-token\n".write(to: folder.appendingPathComponent("reload.token"), atomically: true, encoding: .utf8)
        return folder
    }

    /// No clock on either side: the candidate's states run under SCHED_IDLE, so on a loaded
    /// machine a line of theirs may take long, and a limit tripped would make it differ.
    static let noClock = ["--timeout", "0", "--dispatch-timeout", "0"]

    /// `GET /v1/shadow`'s `requests` and `lines`.
    static func counts(_ server: ServerProcess) throws -> (requests: [String: Int], lines: [String: Int]) {
        let report = try server.get("/v1/shadow").json
        return (report["requests"] as? [String: Int] ?? [:], report["lines"] as? [String: Int] ?? [:])
    }

    /// Sends `Ask` until the candidate has compared `compared` requests in all, waiting after
    /// each until the candidate is done with it. A sampled request may be skipped (docs/shadow.md:
    /// a live thread that finds the intake's lock held 64 times in a row does not wait for it,
    /// which a loaded machine makes happen), and that is counted; so it is sent again, up to 20
    /// times. Every request is sampled (`--shadow-sample 1`). The live answers.
    static func ask(_ server: ServerProcess, untilCompared compared: Int) throws -> [HTTPReply] {
        let base = try counts(server).requests["sampled"] ?? 0
        var replies: [HTTPReply] = []
        while try counts(server).requests["compared"] ?? 0 < compared && replies.count < 20 {
            let reply = try server.post("/v1/dispatch", Self.ask)
            #expect(reply.status == 200)
            replies.append(reply)
            let sent = replies.count
            // Handed to the candidate after its answer went out: sampled, then compared or
            // skipped, and no longer pending (read after the other two, so 0 once they count it).
            let settled = try Luahier.eventually(timeout: 600) {
                let requests = try counts(server).requests
                let done = (requests["compared"] ?? 0) + (requests["skipped"] ?? 0)
                return requests["sampled"] == base + sent && done == base + sent && requests["pending"] == 0
            }
            if !settled {
                Issue.record("request \(sent) not settled: \(try counts(server))")
                break
            }
        }
        return replies
    }

    @Test func theCandidateAnswersTheSampleAndItsDifferencesAreCounted() throws {
        let folder = try Self.folder()
        let server = try ServerProcess(
            ["rules.lua", "--shadow", "candidate.lua", "--shadow-sample", "1", "--decision-log", "decisions.ndjson"] + Self.noClock, in: folder)
        defer { server.stop() }
        #expect(server.stderr.contains("shadowing candidate.lua"), "\(server.stderr)")
        let replies = try Self.ask(server, untilCompared: 5)
        for live in replies {
            #expect((live.json["value"] as? [String: Any])?["version"] as? Int == 1, "the live rules answer: \(live.text)")
        }
        // Every request the candidate answered differs, in its value among other fields; the
        // others were skipped, and counted so.
        let (requests, lines) = try Self.counts(server)
        #expect(requests["compared"] == 5 && requests["sampled"] == replies.count, "\(requests)")
        #expect(lines == ["compared": 5, "same": 0, "different": 5])
        let metrics = try server.get("/metrics").text
        #expect(server.metric(#"luahier_shadow_lines_total{result="different"}"#, in: metrics) == 5)
        #expect(server.metric(#"luahier_shadow_differences_total{field="value"}"#, in: metrics) == 5)
        #expect(server.metric(#"luahier_shadow_skipped_total{reason="busy"}"#, in: metrics) == Double(replies.count - 5))
        #expect(try server.get("/v1/shadow").json["file"] as? String == "candidate.lua")
        server.stop()
        let records = try String(contentsOf: folder.appendingPathComponent("decisions.ndjson"), encoding: .utf8).split(separator: "\n")
        #expect(records.filter { $0.contains(#""source":"shadow""#) }.count == 5)
        #expect(records.filter { $0.contains(#""source":"serve""#) }.count == replies.count)
    }

    @Test func changingTheShadowOverHTTPTakesTheReloadToken() throws {
        let folder = try Self.folder()
        let server = try ServerProcess(["rules.lua", "--reload-token-file", "reload.token"] + Self.noClock, in: folder)
        defer { server.stop() }
        let token = ["Authorization": "Bearer shadow-reload-token"]
        #expect(try server.get("/v1/shadow").json["active"] as? Bool == false)
        #expect(try server.post("/v1/shadow", #"{"rules": "candidate.lua"}"#).status == 401)
        #expect(try server.request("DELETE", "/v1/shadow").status == 401)
        #expect(try server.post("/v1/shadow", #"{"rules": "candidate.lua"}"#, headers: ["Authorization": "Bearer wrong"]).status == 403)
        // The token names only `.lua` files beside the rules: not the token file beside them,
        // nor a file elsewhere, whose text Lua's error would quote (an attacker's find).
        for file in ["reload.token", "/etc/passwd", "\(folder.path)/../x.lua"] {
            let refused = try server.post("/v1/shadow", "{\"rules\": \"\(file)\"}", headers: token)
            #expect(refused.status == 403 && refused.text.contains("ShadowFileRefused"), "\(file): \(refused.text)")
            #expect(!refused.text.contains("shadow-reload-token") && !refused.text.contains("root:"), "\(refused.text)")
        }
        let loaded = try server.post("/v1/shadow", #"{"rules": "candidate.lua", "sample": 1}"#, headers: token)
        #expect(loaded.status == 200, "\(loaded.text)")
        _ = try Self.ask(server, untilCompared: 1)
        #expect(try Self.counts(server).lines == ["compared": 1, "same": 0, "different": 1])
        #expect(server.metric(#"luahier_shadow_lines_total{result="different"}"#, in: try server.get("/metrics").text) == 1)
        // Promoting: the live rules become the candidate's, by a reload; they then agree.
        try ServeTests.rules(version: 2).write(to: folder.appendingPathComponent("rules.lua"), atomically: true, encoding: .utf8)
        #expect(try server.post("/v1/reload", "", headers: token).json["result"] as? String == "loaded")
        _ = try Self.ask(server, untilCompared: 2)
        #expect(try Self.counts(server).lines == ["compared": 2, "same": 1, "different": 1])
        #expect(server.metric(#"luahier_shadow_lines_total{result="same"}"#, in: try server.get("/metrics").text) == 1)
        let stopped = try server.request("DELETE", "/v1/shadow", headers: token)
        #expect(stopped.status == 200)
        #expect(try server.get("/v1/shadow").json["active"] as? Bool == false)
        #expect(server.waitForMetric("luahier_shadow_active", 0))
    }

    /// Reloads and shadow loads over HTTP leave no thread stacks behind: each started a thread
    /// that was never joined, whose stack stayed mapped (260 KiB a reload, 2.5 MiB a shadow
    /// load; about 32,000 reloads would have used up the process's mappings: an attacker's
    /// find).
    @Test func reloadsAndShadowLoadsLeaveNoThreadStacksBehind() throws {
        let folder = try Self.folder()
        let server = try ServerProcess(["rules.lua", "--reload-token-file", "reload.token"], in: folder)
        defer { server.stop() }
        let token = ["Authorization": "Bearer shadow-reload-token"]
        func cycle() throws {
            #expect(try server.post("/v1/reload", "", headers: token).status == 200)
            #expect(try server.post("/v1/shadow", #"{"rules": "candidate.lua"}"#, headers: token).status == 200)
        }
        // A few first: the allocator's arenas and glibc's cache of stacks settle.
        for _ in 1...5 { try cycle() }
        let before = try #require(server.child.mappings)
        for _ in 1...30 { try cycle() }
        // A replaced candidate closes in the background, on threads under SCHED_IDLE that a
        // loaded machine may leave waiting for long: their stacks go once they end, whenever
        // that is; a stack left behind stays for ever.
        var after = 0
        let settled = Luahier.eventually(timeout: 600) {
            after = server.child.mappings ?? Int.max
            return after - before < 20
        }
        #expect(settled, "\(after - before) mappings more after 30 reloads and shadow loads")
    }

    @Test func aCandidateThatDoesNotLoadStopsTheStartAndBadFlagsAreUsageErrors() throws {
        let folder = try Self.folder()
        try "local x = (".write(to: folder.appendingPathComponent("broken.lua"), atomically: true, encoding: .utf8)
        let broken = try ServeSecurityTests.refused(["rules.lua", "--shadow", "broken.lua"], in: folder)
        #expect(broken.status == 1)
        #expect(broken.stderr.contains("--shadow broken.lua: the candidate did not load"), "\(broken.stderr)")
        let missing = try ServeSecurityTests.refused(["rules.lua", "--shadow", "nowhere.lua"], in: folder)
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("nowhere.lua"), "\(missing.stderr)")
        for (flag, value) in [("--shadow-sample", "1.5"), ("--shadow-sample", "-0.1"), ("--shadow-workers", "0"), ("--shadow-workers", "2")] {
            let refused = try ServeSecurityTests.refused(["rules.lua", "--shadow", "candidate.lua", flag, value], in: folder)
            #expect(refused.status == 2, "\(flag) \(value): \(refused.stderr)")
            #expect(refused.stderr.contains(flag), "\(refused.stderr)")
        }
    }
}
#endif
