#if Server
import Foundation
import Testing

/// `luahier serve RULES OPTIONS` is read without the argument parser (`ServeRun.plain`).
/// Each case starts serve twice, once so and once with a `--` at the end, which only the
/// parser reads, and asks both the same: the answers must be alike, and differ from those of
/// a server started without the options.
@Suite("luahier serve: command lines read without the parser", .serialized, .ownThreads)
struct ServePlainCommandLineTests {
    static let rules = """
        local app = hier.root:child("app")
        app:receiveEvent("Ask", function(e) return {type = "Answer", io = io ~= nil} end)
        """

    struct Case: Sendable, CustomStringConvertible {
        var options: [String]
        var method = "POST"
        var path = "/v1/dispatch"
        var body = #"{"at": "/app", "event": "Ask"}"#
        var description: String { options.joined(separator: " ") }
    }

    @Test(arguments: [
        Case(options: ["--unsafe"]),
        Case(options: ["--trace", "path"]),
        Case(options: ["--max-body=16"]),
        Case(options: ["--reload-endpoint"], path: "/v1/reload", body: ""),
        Case(options: ["--require-revision", String(repeating: "0", count: 16)], method: "GET", path: "/readyz", body: ""),
        Case(options: ["--workers", "2", "--shadow-workers", "2", "--trace=full", "--max-wait", "5", "--unsafe"]),
    ])
    func optionsMeanWhatTheParserReads(_ option: Case) throws {
        let folder = URL(fileURLWithPath: try Luahier.script(Self.rules, name: "rules.lua")).deletingLastPathComponent()
        func answer(_ arguments: [String], after: [String] = []) throws -> (status: Int, body: String) {
            let server = try ServerProcess(arguments, in: folder, after: after)
            defer { server.stop() }
            let reply = try server.request(option.method, option.path, body: Array(option.body.utf8))
            // A revision's load time (and any other time) differs from server to server.
            return (reply.status, reply.text.replacing(/\d+\.\d+(e[+-]?\d+)?/, with: "(number)"))
        }
        let plain = try answer(["rules.lua"] + option.options)
        let parsed = try answer(["rules.lua"] + option.options, after: ["--"])
        let without = try answer(["rules.lua"])
        #expect(plain.status == parsed.status, "\(option): \(plain.body) | \(parsed.body)")
        #expect(plain.body == parsed.body, "\(option)")
        #expect(plain.status != without.status || plain.body != without.body, "\(option) changed nothing: \(plain.body)")
    }

    /// The start's log line says what the options asked for, in the form they asked.
    @Test func theLogOptionsReachTheLog() throws {
        let folder = URL(fileURLWithPath: try Luahier.script(Self.rules, name: "rules.lua")).deletingLastPathComponent()
        let server = try ServerProcess(["--log-format", "json", "rules.lua", "--workers=3"], in: folder)
        defer { server.stop() }
        let start = server.stderr.split(separator: "\n").first { $0.contains("serving") }.map(String.init) ?? ""
        #expect(start.hasPrefix("{") && start.contains("3 workers"), "\(server.stderr)")
    }
}
#endif
