import Foundation
import Testing

/// The line protocol has one judge of requests (`luahier_readrequest`) and one layout of
/// outcome lines (`luahier_writeoutcome`, lines.c). A line C answers end to end and the same
/// line the host finishes (its id an array, which the host reads from its text) must then be
/// the same line but for the id. What is left on two paths is the JSON of a value: plain data
/// by C, anything else by the host's careful writer (JSONWriterTests holds the two to the same
/// text for the same value).
@Suite("The line protocol: one judge, one writer", .ownThreads)
struct LineProtocolPathsTests {
    /// Rules whose answers take every field (tools/compare-dispatch.sh answers with them too).
    private var rules: String {
        get throws { try String(contentsOf: Luahier.packageRoot.appendingPathComponent("tools/request-lines-rules.lua"), encoding: .utf8) }
    }

    /// Requests whose answers take every field: handled (`by`, `responder`), replaced,
    /// unhandled errors (`where`), a choice, a value only the careful writer writes, errors
    /// presented, and refusals of every kind.
    private let requests = [
        #""at": "/app/tap", "event": "Tap""#,
        #""at": "/app/tap", "event": {"type": "Other", "deep": {"a": [1, {"b": null}]}}"#,
        #""at": "/app/swap", "event": {"type": "X", "n": 3}"#,
        #""at": "/app/boom", "event": {"type": "X", "n": 4}"#,
        #""at": "/app/tap", "error": {"type": "UploadFailed", "title": "T", "recovery": ["Retry", "Cancel"]}"#,
        #""at": "/app/fn", "event": "X""#,
        #""at": "/app/nested", "event": "X""#,
        #""at": "/app/tap", "error": "plain message""#,
        #""at": "/nowhere", "event": "Tap""#,
        #""at": "app", "event": "Tap""#,
        #""at": 5, "event": "Tap""#,
        #""at": "/app/tap""#,
        #""at": "/app/tap", "event": 5"#,
        #""at": "/app/tap", "error": true"#,
        #""at": "/app/tap", "event": "A", "event": "B""#,
        #""at": "/app/tap", "event": "A", "error": "B""#,
        #""at": "/app/tap", "event": "A", "extra": 1"#,
        #""event": "A""#,
    ]

    @Test func aLineTheHostFinishesIsTheLineCWouldWrite() throws {
        let script = try Luahier.script(try rules, name: "rules.lua")
        let lines = requests.flatMap { [#"{"id": 7, "# + $0 + "}", #"{"id": [7], "# + $0 + "}"] }
        let input = script.replacingOccurrences(of: "rules.lua", with: "in.jsonl")
        try (lines.joined(separator: "\n") + "\n").write(toFile: input, atomically: true, encoding: .utf8)
        let result = try Luahier.run(["dispatch", script, input])
        let outcomes = result.stdout.split(separator: "\n").map {
            try! JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
        }
        try #require(outcomes.count == lines.count, "\(result.stderr)")
        for pair in stride(from: 0, to: outcomes.count, by: 2) {
            var fast = outcomes[pair], host = outcomes[pair + 1]
            #expect(fast["id"] as? Int == 7)
            #expect(host["id"] as? [Int] == [7])
            for key in ["id", "line"] {
                fast[key] = nil
                host[key] = nil
            }
            // `where` names the input line, which differs by one.
            let canonical = { (object: [String: Any]) in
                String(decoding: try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
                    .replacingOccurrences(of: "in.jsonl:\(pair + 1)", with: "in.jsonl:N")
                    .replacingOccurrences(of: "in.jsonl:\(pair + 2)", with: "in.jsonl:N")
            }
            #expect(canonical(fast) == canonical(host), "request \(requests[pair / 2])")
        }
        // Every kind of answer was met: the comparison above covered them all.
        let statuses = Set(outcomes.compactMap { $0["status"] as? String })
        #expect(statuses == ["handled", "unhandled", "invalid"])
        #expect(outcomes.contains { $0["choice"] as? String == "Retry" })
        #expect(outcomes.contains { $0["presented"] != nil })
        #expect(Set(outcomes.compactMap { ($0["error"] as? [String: Any])?["type"] as? String })
            == ["InvalidRequest", "NoSuchNode"])
    }

    /// With tracing, every line is one the host finishes: the layout is still the one writer's,
    /// field for field in its order.
    @Test func fieldsComeInTheWritersOrder() throws {
        let script = try Luahier.script(try rules, name: "rules.lua")
        let result = try Luahier.run(
            ["dispatch", "--trace", "path", script, "-"],
            stdin: #"{"id": 1, "at": "/app/nested", "event": "X"}"# + "\n" + #"{"id": 2, "at": "/app/tap", "error": {"type": "E", "title": "T", "recovery": ["Retry"]}}"# + "\n")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        try #require(lines.count == 2, "\(result.stderr)")
        let order = ["\"line\"", "\"id\"", "\"status\"", "\"kind\"", "\"value\"", "\"by\"", "\"responder\"", "\"choice\"", "\"presented\"", "\"trace\""]
        for line in lines {
            let positions = order.compactMap { key in line.range(of: key + ":").map { line.distance(from: line.startIndex, to: $0.lowerBound) } }
            #expect(positions == positions.sorted(), "\(line)")
        }
        #expect(lines[0].contains(#""presented":["#))
        #expect(lines[1].contains(#""choice":"Retry""#))
    }
}
