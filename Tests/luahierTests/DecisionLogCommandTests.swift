import Foundation
import Testing

/// `--decision-log` on the real binary: `dispatch` and `serve` record each answered request
/// (docs/decision-log.md).
@Suite("Decision log flags", .ownThreads)
struct DecisionLogCommandTests {
    static let rules = """
        local app = hier.root:child("app")
        app:receiveEvent("Ask", function(e) return {type = "Answer", n = e.n} end)
        """

    static func folder() throws -> URL {
        let folder = URL(fileURLWithPath: "/tmp/lhdlog-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try rules.write(to: folder.appendingPathComponent("rules.lua"), atomically: true, encoding: .utf8)
        return folder
    }

    static func records(_ path: String) -> [[String: Any]] {
        ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n").map {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] ?? [:]
        }
    }

    @Test func dispatchRecordsEachLineWithItsOutcomeAsWritten() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let log = folder.appendingPathComponent("d.ndjson").path
        let input = (1...50).map { #"{"id": \#($0), "at": "/app", "event": {"type": "Ask", "n": \#($0), "secret": "s\#($0)"}}"# }
            .joined(separator: "\n") + "\n"
        let result = try Luahier.run(
            ["dispatch", "rules.lua", "--jobs", "2", "--decision-log", log, "--decision-log-mask", "/request/event/secret"],
            stdin: input, in: folder)
        #expect(result.status == 0, "\(result.stderr)")
        let outcomes = result.stdout.split(separator: "\n").map(String.init)
        let text = try String(contentsOfFile: log, encoding: .utf8)
        // In the order the lines were answered: with two jobs, not always the input's.
        let lines = text.split(separator: "\n").map(String.init).sorted {
            (Self.number(in: $0) ?? 0) < (Self.number(in: $1) ?? 0)
        }
        #expect(lines.count == 50)
        for (number, line) in lines.enumerated() {
            #expect(line.contains(#","line":\#(number + 1),"#), "\(line)")
            #expect(line.contains(#""source":"dispatch""#))
            #expect(!line.contains("request_id"))
            #expect(line.contains(#""secret": "<masked>""#), "\(line)")
            #expect(line.contains(#","outcome":\#(outcomes[number]),"evaluation_ms":"#), "\(line)")
        }
    }

    /// The `line` of a record's text.
    static func number(in record: String) -> Int? {
        record.firstMatch(of: #/,"line":(\d+),/#).flatMap { Int($0.1) }
    }

    @Test func dispatchRotatesTheLogBySize() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let log = folder.appendingPathComponent("d.ndjson").path
        let input = (1...200).map { #"{"id": \#($0), "at": "/app", "event": {"type": "Ask", "n": \#($0)}}"# }.joined(separator: "\n") + "\n"
        let result = try Luahier.run(
            ["dispatch", "rules.lua", "--decision-log", log, "--decision-log-max-bytes", "8K", "--decision-log-keep", "3"],
            stdin: input, in: folder)
        #expect(result.status == 0, "\(result.stderr)")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasPrefix("d.ndjson") }.sorted()
        #expect(names == ["d.ndjson", "d.ndjson.1", "d.ndjson.2"])
        // The newest lines are in d.ndjson, the ones before them in .1, then .2.
        let ids = ["d.ndjson.2", "d.ndjson.1", "d.ndjson"].flatMap { Self.records(folder.appendingPathComponent($0).path).map { $0["line"] as? Int ?? 0 } }
        #expect(ids == Array((200 - ids.count + 1)...200))
        for name in names {
            let size = try FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent(name).path)[.size] as! Int
            #expect(size <= 8192)
        }
    }

    @Test func badFlagsAreUsageErrors() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        for flags in [["--decision-log-mask", "request/x"], ["--decision-log-keep", "0"], ["--decision-log-max-bytes", "lots"]] {
            let result = try Luahier.run(["dispatch", "rules.lua", "--decision-log", "d.ndjson"] + flags, stdin: "", in: folder)
            #expect(result.status == 2, "\(flags): \(result.stderr)")
        }
    }

    /// Each rotation renames every file kept, so their number is bounded: a billion (a typo in
    /// a config file) is refused at once, on the command line and in `--config`, where it
    /// made one rotation a billion renames (the run never ended).
    @Test func keepingMoreThanAThousandFilesIsRefused() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let flags = ["--decision-log", "d.ndjson", "--decision-log-max-bytes", "1K"]
        let refused = try Luahier.run(["dispatch", "rules.lua"] + flags + ["--decision-log-keep", "1000000000"], stdin: "", in: folder)
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("--decision-log-keep takes 1 to 1000 files, not 1000000000"), "\(refused.stderr)")
        let lines = String(repeating: #"{"at": "/app", "event": "Ask"}"# + "\n", count: 200)
        let kept = try Luahier.run(["dispatch", "rules.lua"] + flags + ["--decision-log-keep", "1000"], stdin: lines, in: folder)
        #expect(kept.status == 0, "\(kept.stderr)")
        #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("d.ndjson.1").path))
        #if Server
        try Data(#"{"decision-log": "d.ndjson", "decision-log-keep": 1000000000}"#.utf8).write(to: folder.appendingPathComponent("serve.json"))
        let config = try Luahier.run(["serve", "rules.lua", "--config", "serve.json", "--print-config"], stdin: "", in: folder)
        #expect(config.status == 2, "\(config.stdout)")
        #expect(config.stderr.contains("--decision-log-keep takes 1 to 1000 files"), "\(config.stderr)")
        #endif
    }

    #if Server
    @Test func serveRecordsCarryTheRequestsId() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let log = folder.appendingPathComponent("d.ndjson").path
        let server = try ServerProcess(["rules.lua", "--decision-log", log], in: folder)
        defer { server.stop() }
        let asked = try server.post("/v1/dispatch", #"{"at": "/app", "event": {"type": "Ask", "n": 7}}"#, headers: ["X-Request-Id": "order-42"])
        #expect(asked.status == 200)
        let batch = try server.post("/v1/dispatch", "{\"at\": \"/app\", \"event\": \"Ask\"}\n{\"at\": \"/app\", \"event\": \"Ask\"}\n",
                                    headers: ["X-Request-Id": "batch-7", "Content-Type": "application/x-ndjson"])
        #expect(batch.status == 200)
        #expect(Luahier.eventually { Self.records(log).count == 3 })
        let records = Self.records(log)
        #expect(records.map { $0["request_id"] as? String } == ["order-42", "batch-7", "batch-7"])
        #expect(records.map { $0["line"] as? Int } == [nil, 1, 2])
        #expect(records.allSatisfy { $0["source"] as? String == "serve" })
        let metrics = String(decoding: try server.get("/metrics").body, as: UTF8.self)
        #expect(server.metric("luahier_decisions_logged_total", in: metrics) == 3, "\(metrics)")
        #expect(metrics.contains(#"luahier_decisions_dropped_total{reason="buffer_full"} 0"#), "\(metrics)")
    }

    /// A mask into the request cannot find its field in a body that is not JSON: a trailing
    /// comma kept a masked e-mail in clear in `request_text` (an attacker's find). Such text
    /// is masked whole when a pointer reaches into the request.
    @Test func aMaskIntoTheRequestMasksTheTextOfOneThatIsNotJSON() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let log = folder.appendingPathComponent("d.ndjson").path
        let server = try ServerProcess(["rules.lua", "--decision-log", log, "--decision-log-mask", "/request/event/user"], in: folder)
        defer { server.stop() }
        let refused = try server.post("/v1/dispatch", #"{"at": "/app", "event": {"type": "Ask", "user": "alice@private.example"},}"#)
        #expect(refused.status == 400)
        #expect(Luahier.eventually { (try? String(contentsOfFile: log, encoding: .utf8))?.hasSuffix("\n") == true })
        let text = try String(contentsOfFile: log, encoding: .utf8)
        #expect(!text.contains("alice"), "\(text)")
        #expect(Self.records(log).first?["request_text"] as? String == "<masked>", "\(text)")
    }

    /// A single request's body may break its JSON over lines. Its bytes went into the record
    /// as they came, so one record became three lines, the middle one a record of the
    /// client's own making, which `replay` read as a decision (an attacker's find). A line
    /// break between tokens is written as a space: one record, one line.
    @Test func aBodyBrokenOverLinesIsOneRecordOfOneLine() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let log = folder.appendingPathComponent("d.ndjson").path
        let server = try ServerProcess(["rules.lua", "--decision-log", log], in: folder)
        defer { server.stop() }
        let forged = #"{"request_id":"FORGED","source":"serve","request":{"at":"/app","event":"Refund"},"outcome":{"status":"handled"}}"#
        let body = "{\"at\": \"/app\", \"event\": {\"type\": \"Ask\", \"n\": 1},\r\n \"id\": [\n\(forged)\n]}"
        let asked = try server.post("/v1/dispatch", body, headers: ["X-Request-Id": "real-1"])
        #expect(asked.status == 200, "\(asked.text)")
        #expect(Luahier.eventually { (try? String(contentsOfFile: log, encoding: .utf8))?.hasSuffix("\n") == true })
        let text = try String(contentsOfFile: log, encoding: .utf8)
        #expect(text.split(separator: "\n").count == 1, "\(text)")
        let records = Self.records(log)
        #expect(records.map { $0["request_id"] as? String } == ["real-1"])
        let request = try #require(records.first?["request"] as? [String: Any])
        #expect((request["id"] as? [[String: Any]])?.first?["request_id"] as? String == "FORGED")
    }
    #endif
}
