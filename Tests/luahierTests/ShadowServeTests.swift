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

    @Test func theCandidateAnswersTheSampleAndItsDifferencesAreCounted() throws {
        let folder = try Self.folder()
        let server = try ServerProcess(
            ["rules.lua", "--shadow", "candidate.lua", "--shadow-sample", "1", "--decision-log", "decisions.ndjson"], in: folder)
        defer { server.stop() }
        #expect(server.stderr.contains("shadowing candidate.lua"), "\(server.stderr)")
        for _ in 0..<5 {
            let live = try server.post("/v1/dispatch", Self.ask)
            #expect(live.status == 200)
            #expect((live.json["value"] as? [String: Any])?["version"] as? Int == 1, "the live rules answer: \(live.text)")
        }
        #expect(server.waitForMetric(#"luahier_shadow_lines_total{result="different"}"#, 5))
        #expect(server.waitForMetric(#"luahier_shadow_differences_total{field="value"}"#, 5))
        let report = try server.get("/v1/shadow").json
        #expect(report["file"] as? String == "candidate.lua")
        #expect((report["requests"] as? [String: Any])?["compared"] as? Int == 5)
        server.stop()
        let records = try String(contentsOf: folder.appendingPathComponent("decisions.ndjson"), encoding: .utf8).split(separator: "\n")
        #expect(records.filter { $0.contains(#""source":"shadow""#) }.count == 5)
        #expect(records.filter { $0.contains(#""source":"serve""#) }.count == 5)
    }

    @Test func changingTheShadowOverHTTPTakesTheReloadToken() throws {
        let folder = try Self.folder()
        let server = try ServerProcess(["rules.lua", "--reload-token-file", "reload.token"], in: folder)
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
        #expect(try server.post("/v1/dispatch", Self.ask).status == 200)
        #expect(server.waitForMetric(#"luahier_shadow_lines_total{result="different"}"#, 1))
        // Promoting: the live rules become the candidate's, by a reload; they then agree.
        try ServeTests.rules(version: 2).write(to: folder.appendingPathComponent("rules.lua"), atomically: true, encoding: .utf8)
        #expect(try server.post("/v1/reload", "", headers: token).json["result"] as? String == "loaded")
        #expect(try server.post("/v1/dispatch", Self.ask).status == 200)
        #expect(server.waitForMetric(#"luahier_shadow_lines_total{result="same"}"#, 1))
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
        let after = try #require(server.child.mappings)
        #expect(after - before < 20, "\(after - before) mappings more after 30 reloads and shadow loads")
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
