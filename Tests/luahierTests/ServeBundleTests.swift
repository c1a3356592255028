#if Server
import Foundation
import Testing

/// `luahier serve` with signed bundles: a bundle as RULES, bundles pulled from a real HTTP
/// server on loopback (`--bundle-url`), and `--require-revision` (docs/bundles.md).
@Suite("luahier serve, bundles", .serialized, .ownThreads)
struct ServeBundleTests {
    static func rules(_ version: Int) -> String {
        #"hier.root:child("app"):receiveEvent("Ask", function() return {type = "Answer", version = \#(version)} end)"# + "\n"
    }

    /// Builds and signs (or not) a bundle of `rules(version)` at `path`; its revision hash.
    static func bundle(_ version: Int, at path: String, in folder: URL, signed: Bool = true) throws -> String {
        let source = folder.appendingPathComponent("v\(version)/rules.lua")
        try FileManager.default.createDirectory(at: source.deletingLastPathComponent(), withIntermediateDirectories: true)
        try rules(version).write(to: source, atomically: true, encoding: .utf8)
        let built = try Luahier.run(["bundle", "build", source.path, "-o", path], in: folder)
        #expect(built.status == 0, "\(built.stderr)")
        if signed { #expect(try Luahier.run(["bundle", "sign", path, "--key", "rules.key"], in: folder).status == 0) }
        return String(try #require(built.stdout.split(separator: " ").last).trimmingCharacters(in: .whitespacesAndNewlines))
    }

    @Test func bundlesArePulledAndARolloutWaitsForTheRequiredRevision() throws {
        let folder = URL(fileURLWithPath: try Luahier.script("", name: "x.lua")).deletingLastPathComponent()
        #expect(try Luahier.run(["bundle", "keygen", "rules"], in: folder).status == 0)
        try "bundle-reload-token\n".write(to: folder.appendingPathComponent("reload.token"), atomically: true, encoding: .utf8)
        let www = folder.appendingPathComponent("www")
        try FileManager.default.createDirectory(at: www, withIntermediateDirectories: true)
        let published = www.appendingPathComponent("rules.bundle").path
        _ = try Self.bundle(1, at: "v1.bundle", in: folder)
        let second = try Self.bundle(2, at: "v2.bundle", in: folder)
        try FileManager.default.copyItem(atPath: folder.appendingPathComponent("v1.bundle").path, toPath: published)

        // A static HTTP server for the bundle (as an nginx location would be).
        // Its banner is waited for with a deadline, as any child's output in these tests: a
        // blocking read of the pipe had no bound had the banner never come.
        let files = try LuahierProcess(
            ["python3", "-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", www.path],
            executable: URL(fileURLWithPath: "/usr/bin/env"), stdin: false)
        defer { _ = files.stop(by: SIGKILL) }
        let portPattern = #/port (\d+)/#
        #expect(files.waitForStdout(timeout: 600) { $0.firstMatch(of: portPattern) != nil }, "\(files.stderr)")
        let port = try #require(files.stdout.firstMatch(of: portPattern).map { String($0.1) }, "\(files.stdout)")

        let server = try ServerProcess(
            ["v1.bundle", "--bundle-url", "http://127.0.0.1:\(port)/rules.bundle", "--bundle-key", "rules.pub", "--bundle-poll", "0.1",
             "--require-revision", second, "--reload-token-file", "reload.token"], in: folder)
        defer { server.stop() }
        let ready = { (try? server.get("/readyz").status) == 200 }
        #expect(!ready(), "not ready before it runs the required revision")
        #expect(try server.get("/readyz").json["reason"] as? String == "revision")

        // The rollout: the new bundle is published; the replica takes it and becomes ready.
        try FileManager.default.removeItem(atPath: published)
        try FileManager.default.copyItem(atPath: folder.appendingPathComponent("v2.bundle").path, toPath: published)
        #expect(Luahier.eventually(timeout: 600) { ready() })
        let answer = try server.post("/v1/dispatch", #"{"at": "/app", "event": "Ask"}"#).json
        #expect((answer["value"] as? [String: Any])?["version"] as? Int == 2)
        #expect((answer["revision"] as? [String: Any])?["hash"] as? String == String(second.prefix(16)))
        #expect(try server.get("/metrics").text.contains(#"luahier_revision_info{hash="\#(second)"} 1"#))

        // An unsigned bundle is refused: revision 2 goes on, the refusal shown. Refused again at
        // every poll (0.1 s), so the count goes on rising: at least 1, not exactly.
        _ = try Self.bundle(3, at: published, in: folder, signed: false)
        #expect(server.waitForMetric(#"luahier_bundle_polls_total{result="refused"}"#, atLeast: 1))
        #expect(ready())
        let readiness = try server.get("/readyz").json
        #expect(((readiness["bundle"] as? [String: Any])?["lastRefusal"] as? String)?.contains("unsigned") == true, "\(readiness)")
        #expect((readiness["revision"] as? [String: Any])?["hash"] as? String == second)
        #expect(server.stderr.contains("was refused"))

        // The first bundle, signed and valid but older, served again: refused, not a rollback
        // dressed as an update (an attacker's find). The replica shows the number it runs.
        try FileManager.default.removeItem(atPath: published)
        try FileManager.default.copyItem(atPath: folder.appendingPathComponent("v1.bundle").path, toPath: published)
        #expect(server.waitForStderr { $0.contains("not newer: it has sequence") })
        let after = try server.get("/readyz").json
        #expect((after["revision"] as? [String: Any])?["hash"] as? String == second)
        #expect(((after["bundle"] as? [String: Any])?["sequence"] as? Int).map { $0 > 0 } == true, "\(after)")
        #expect(server.stderr.contains("--bundle-url over plain http://"), "the start warns of http://")

        #expect(try server.post("/v1/required-revision", #"{"hash": null}"#).status == 401)
        let cleared = try server.post("/v1/required-revision", #"{"hash": null}"#, headers: ["Authorization": "Bearer bundle-reload-token"])
        #expect(cleared.status == 200)
    }

    @Test func badBundleFlagsAreUsageErrors() throws {
        let folder = try ServeTests.folder()
        for (arguments, message) in [
            (["--bundle-url", "http://127.0.0.1:1/x"], "--bundle-key"),
            (["--bundle-url", "ftp://x/y", "--bundle-key", "rules.lua"], "http:// or https://"),
            (["--require-revision", "xyz"], "--require-revision takes 16 to 64 hex digits"),
            (["--bundle-poll", "0"], "--bundle-poll must be from 0.01 to 86400 seconds"),
            (["--bundle-poll", "1e17"], "--bundle-poll must be from 0.01 to 86400 seconds"),
            (["--idle-timeout", "1e300"], "--idle-timeout must be more than 0 seconds, and at most 86400"),
            (["--shutdown-delay", "1e300"], "--shutdown-delay must be 0 or more seconds, and at most 86400"),
        ] {
            let refused = try ServeSecurityTests.refused(["rules.lua"] + arguments, in: folder)
            #expect(refused.status == 2, "\(arguments): \(refused.stderr)")
            #expect(refused.stderr.contains(message), "\(arguments): \(refused.stderr)")
        }
    }
}
#endif
