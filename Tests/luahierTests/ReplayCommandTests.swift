import Foundation
import Testing

#if canImport(FoundationXML)
import FoundationXML
#endif

/// `luahier replay`: a decision log run again against rules, the changed outcomes reported
/// (docs/replay.md). The log is made here from `dispatch`'s own answers to scripts/alerts.jsonl,
/// as tools/make-decision-log.sh makes one; the changed rules are in Fixtures/replay.
@Suite("luahier replay", .ownThreads)
struct ReplayCommandTests {
    static let fixtures = "Tests/luahierTests/Fixtures/replay"
    /// The flags every replay of the log takes: dispatch read the requests from stdin, and
    /// the changed copies stand for scripts/alerts.lua.
    static let flags = ["--input-name", "stdin", "--rules-name", "scripts/alerts.lua"]

    /// A decision log of scripts/alerts.jsonl answered by scripts/alerts.lua: one record a line,
    /// with the request as it came (or `request_text` when it was not JSON), the outcome as
    /// dispatch wrote it, and the responder key read from the same run with --trace path.
    static func makeLog() throws -> String {
        let input = try String(contentsOf: Luahier.packageRoot.appendingPathComponent("scripts/alerts.jsonl"), encoding: .utf8)
        let plain = try Luahier.run(["dispatch", "scripts/alerts.lua", "-"], stdin: input)
        let traced = try Luahier.run(["dispatch", "scripts/alerts.lua", "-", "--trace", "path"], stdin: input)
        let requests = input.split(separator: "\n", omittingEmptySubsequences: false)
        var log = ""
        for (outcome, tracedLine) in zip(plain.stdout.split(separator: "\n"), traced.stdout.split(separator: "\n")) {
            let fields = try #require(JSONSerialization.jsonObject(with: Data(outcome.utf8)) as? [String: Any])
            let number = try #require(fields["line"] as? Int)
            let request = String(requests[number - 1])
            var record = #"{"v":1,"time":"2026-01-01T00:00:00.000Z","source":"dispatch","line":\#(number),"#
            if (try? JSONSerialization.jsonObject(with: Data(request.utf8))) != nil {
                record += #""request":\#(request),"#
            } else {
                record += #""request_text":\#(try quoted(request)),"#
            }
            record += #""outcome":\#(outcome)"#
            if let key = try key(of: try #require(JSONSerialization.jsonObject(with: Data(tracedLine.utf8)) as? [String: Any])) {
                record += #","responder_key":\#(try quoted(key))"#
            }
            log += record + #","evaluation_ms":0}"# + "\n"
        }
        return log
    }

    /// FILE#NODEPATH#N of the trace step that handled the line.
    static func key(of traced: [String: Any]) throws -> String? {
        guard let by = traced["by"] as? String, let responder = traced["responder"] as? String else { return nil }
        let steps = traced["trace"] as? [[String: Any]] ?? []
        let step = try #require(steps.first { $0["node"] as? String == by && $0["responder"] as? String == responder && $0["result"] as? String == "handled" })
        let file = responder.split(separator: ":").dropLast().joined(separator: ":")
        return "\(file)#\(by)#\(try #require(step["index"] as? Int))"
    }

    static func quoted(_ text: String) throws -> String {
        let array = String(decoding: try JSONSerialization.data(withJSONObject: [text]), as: UTF8.self)
        return String(array.dropFirst().dropLast())
    }

    static func logFile(_ text: String? = nil) throws -> String {
        try Luahier.script(text ?? makeLog(), name: "decisions.ndjson")
    }

    static func replay(_ rules: String, log: String, _ more: [String] = []) throws -> Luahier.Result {
        try Luahier.run(["replay", rules, log] + flags + more)
    }

    /// A log that never ends, read while a line longer than --max-record is skipped, stops on
    /// SIGTERM as any replay does: no read blocks, so no signal cut one short, and the skip
    /// went on until SIGKILL (an attacker's find, with /dev/zero).
    @Test func aSkipThatNeverEndsStopsOnSIGTERM() throws {
        let child = try LuahierProcess(["replay", "scripts/alerts.lua", "/dev/zero"] + Self.flags, stdin: false)
        #expect(child.waitForCPU(), "it is reading")
        let stopped = child.stop(by: SIGTERM)
        #expect(stopped.status == 143, "\(stopped)")
        #expect(stopped.stderr.contains("interrupted"), "\(stopped.stderr)")
    }

    @Test func unchangedRulesChangeNothing() throws {
        let result = try Self.replay("scripts/alerts.lua", log: try Self.logFile())
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.hasPrefix("replay of "))
        #expect(result.stdout.contains(": 12 requests: 12 same, 0 changed, 0 newly invalid; 0 unreadable records"), "\(result.stdout)")
        #expect(!result.stdout.contains("changed:"))
    }

    /// A shadow revision's record (a candidate's answer with the live one beside it) is no
    /// outcome a client got: replay passes over it, counted, whatever its outcome says.
    @Test func shadowRecordsArePassedOverAndCounted() throws {
        var log = try Self.makeLog()
        let first = try #require(log.split(separator: "\n").first)
        let shadow = first.replacingOccurrences(of: #""source":"dispatch""#, with: #""source":"shadow""#)
            .replacingOccurrences(of: #""status":"#, with: #""status":"x","was":"#)
        log += shadow + "\n"
        // Escaped, the scan does not find it; the full reading does.
        log += shadow.replacingOccurrences(of: #""source":"shadow""#, with: #""source":"\u0073hadow""#) + "\n"
        let result = try Self.replay("scripts/alerts.lua", log: try Self.logFile(log))
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains(": 12 requests: 12 same, 0 changed, 0 newly invalid; 0 unreadable records; 2 shadow records passed over"),
                "\(result.stdout)")
    }

    @Test func aChangedRuleListsExactlyTheRequestsItChangesWithTheirExplanation() throws {
        let log = try Self.logFile()
        let result = try Self.replay("\(Self.fixtures)/alerts-oncall.lua", log: log)
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stdout.contains("12 requests: 11 same, 1 changed (value 1), 0 newly invalid"), "\(result.stdout)")
        let changes = result.stdout.components(separatedBy: "\nchanged: ").dropFirst()
        #expect(changes.count == 1)
        let change = try #require(changes.first)
        #expect(change.hasPrefix("request (id 5, \(log):5): value"))
        #expect(change.contains(#""to":"lee""#) && change.contains(#""to":"kim""#))
        #expect(change.contains("  explain:\n    error Timeout at /org/payments/checkout\n"))
        #expect(change.contains("└─ handled by /org #2 handleEvent (scripts/alerts.lua:67): event Page"))
    }

    @Test func linesMovedAboveTheRespondersChangeNothing() throws {
        let result = try Self.replay("\(Self.fixtures)/alerts-moved.lua", log: try Self.logFile())
        #expect(result.status == 0, "\(result.stdout)")
        #expect(result.stdout.contains("12 requests: 12 same, 0 changed"))
        // The same log without keys: the moved lines show as changed responders.
        let keyless = try Self.makeLog().replacingOccurrences(of: #","responder_key":"[^"]*""#, with: "", options: .regularExpression)
        let without = try Self.replay("\(Self.fixtures)/alerts-moved.lua", log: try Self.logFile(keyless))
        #expect(without.status == 1)
        #expect(without.stdout.contains("changed (responder 6)"), "\(without.stdout)")
    }

    /// The log `dispatch --decision-log` writes (its records carry `responder_key`) replays
    /// clean against the same rules and against the rules with lines moved, and names the one
    /// request a changed rule changes.
    @Test func aLogThatDispatchWroteReplays() throws {
        let log = URL(fileURLWithPath: try Luahier.script("", name: "written.ndjson")).path
        let wrote = try Luahier.run(["dispatch", "--decision-log", log, "scripts/alerts.lua", "scripts/alerts.jsonl"])
        #expect(wrote.status == 1, "\(wrote.stderr)")   // alerts.jsonl has invalid lines on purpose
        let records = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n")
        #expect(records.count == 12)
        #expect(records.filter { $0.contains(#""responder_key":"scripts/alerts.lua#/"#) }.count >= 5, "\(records)")
        let same = try Luahier.run(["replay", "--input-name", "scripts/alerts.jsonl", "scripts/alerts.lua", log])
        #expect(same.status == 0, "\(same.stdout)\(same.stderr)")
        let moved = try Luahier.run(["replay", "--input-name", "scripts/alerts.jsonl", "--rules-name", "scripts/alerts.lua", "\(Self.fixtures)/alerts-moved.lua", log])
        #expect(moved.status == 0, "\(moved.stdout)\(moved.stderr)")
        let changed = try Luahier.run(["replay", "--input-name", "scripts/alerts.jsonl", "--rules-name", "scripts/alerts.lua", "\(Self.fixtures)/alerts-oncall.lua", log])
        #expect(changed.status == 1)
        #expect(changed.stdout.contains("1 changed (value 1)"), "\(changed.stdout)")
    }

    @Test func jsonIsOneObjectWithTheSummaryAndTheChanges() throws {
        let result = try Self.replay("\(Self.fixtures)/alerts-oncall.lua", log: try Self.logFile(), ["--format", "json"])
        #expect(result.status == 1)
        let report = try #require(JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let summary = try #require(report["summary"] as? [String: Any])
        #expect(summary["requests"] as? Int == 12)
        #expect(summary["changed"] as? Int == 1)
        #expect((summary["fields"] as? [String: Int])?["value"] == 1)
        let changes = try #require(report["changes"] as? [[String: Any]])
        #expect(changes.count == 1)
        #expect(changes.first?["id"] as? Int == 5)
        #expect(changes.first?["fields"] as? [String] == ["value"])
        #expect(changes.first?["new_responder_key"] as? String == "scripts/alerts.lua#/org#2")
        #expect((changes.first?["explanation"] as? [String])?.first == "error Timeout at /org/payments/checkout")
        #expect(result.stderr.contains("luahier: replayed 12 requests: 11 same, 1 changed"))
    }

    @Test func junitHasATestcasePerRequestAndAFailurePerChange() throws {
        let result = try Self.replay("\(Self.fixtures)/alerts-oncall.lua", log: try Self.logFile(), ["--format", "junit"])
        #expect(result.status == 1)
        let collector = ReplayXMLCollector()
        let parser = XMLParser(data: Data(result.stdout.utf8))
        parser.delegate = collector
        #expect(parser.parse(), "not well-formed XML: \(result.stdout)")
        #expect(collector.elements.first { $0.name == "testsuites" }?.attributes["tests"] == "12")
        #expect(collector.elements.filter { $0.name == "testcase" }.count == 12)
        let failures = collector.elements.filter { $0.name == "failure" }
        #expect(failures.count == 1)
        #expect(failures.first?.attributes["message"] == "changed: value")
    }

    @Test func aBadRecordIsNamedByItsLineAndTheRestIsReplayed() throws {
        var lines = try Self.makeLog().split(separator: "\n").map(String.init)
        lines[2] = #"{"v":1,"outcome":"#
        lines[5] = #"{"v":1,"request":{"at":"/org","event":"Alert"}}"#
        let log = try Self.logFile(lines.joined(separator: "\n") + "\n")
        let result = try Self.replay("scripts/alerts.lua", log: log)
        #expect(result.status == 1)
        #expect(result.stdout.contains("10 requests: 10 same, 0 changed, 0 newly invalid; 2 unreadable records"), "\(result.stdout)")
        #expect(result.stdout.contains("unreadable: \(log):3: not JSON: "))
        #expect(result.stdout.contains("unreadable: \(log):6: no \"outcome\" object"))
    }

    @Test func twoJobsGiveTheSameReport() throws {
        let log = try Self.logFile()
        let one = try Self.replay("\(Self.fixtures)/alerts-oncall.lua", log: log)
        let two = try Self.replay("\(Self.fixtures)/alerts-oncall.lua", log: log, ["--jobs", "2"])
        #expect(one.status == 1 && two.status == 1)
        #expect(one.stdout == two.stdout)
    }

    @Test func aLogFromStdinAndUsageErrors() throws {
        let piped = try Luahier.run(["replay", "scripts/alerts.lua", "-"] + Self.flags, stdin: try Self.makeLog())
        #expect(piped.status == 0, "\(piped.stderr)")
        #expect(piped.stdout.hasPrefix("replay of stdin against scripts/alerts.lua: 12 requests"))
        let missing = try Luahier.run(["replay", "scripts/alerts.lua", "/nonexistent/log.ndjson"])
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("no such file: /nonexistent/log.ndjson"))
        let jobs = try Luahier.run(["replay", "scripts/alerts.lua", "-", "--jobs", "0"], stdin: "")
        #expect(jobs.status == 2)
    }
}

/// Collects the elements of an XML document.
private final class ReplayXMLCollector: NSObject, XMLParserDelegate {
    var elements: [(name: String, attributes: [String: String])] = []

    func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                attributes: [String: String] = [:]) {
        elements.append((name, attributes))
    }
}
