import Foundation
import Testing

/// `luahier dispatch` as a stage of a distributed engine (docs/spark.md): each partition of an
/// input, run apart with `--line-offset`, `--source` and `--rules-name`, answers exactly as one
/// run over the whole input does, and `--invalid-ok` keeps invalid lines from failing the stage.
@Suite("luahier dispatch, partitioned", .ownThreads)
struct DispatchPartitionTests {
    static let input = Luahier.packageRoot.appendingPathComponent("scripts/alerts.jsonl")
    static let flags = ["--source", "alerts", "--rules-name", "alerts.lua"]

    @Test func partitionsAnswerAsTheWholeInputDoes() throws {
        let whole = try String(contentsOf: Self.input, encoding: .utf8)
        let single = try Luahier.run(["dispatch", "scripts/alerts.lua", "-"] + Self.flags, stdin: whole)
        #expect(single.stdout.split(separator: "\n").count == 12)
        // Three partitions, cut anywhere (the blank line and the bad lines fall in the middle
        // one), each run from another folder with the rules by their absolute path.
        let lines = whole.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let elsewhere = URL(fileURLWithPath: try Luahier.script("", name: "x.lua")).deletingLastPathComponent()
        let rules = Luahier.packageRoot.appendingPathComponent("scripts/alerts.lua").path
        var joined = ""
        for (start, end) in [(0, 5), (5, 11), (11, lines.count)] {
            let part = lines[start..<end].joined(separator: "\n") + "\n"
            let result = try Luahier.run(
                ["dispatch", rules, "-", "--line-offset", String(start), "--invalid-ok"] + Self.flags, stdin: part, in: elsewhere)
            #expect(result.status == 0, "\(result.stderr)")
            joined += result.stdout
        }
        #expect(joined == single.stdout)
        #expect(joined.contains(#""where":"alerts:11""#), "the bad line named by its place in the whole input")
        #expect(joined.contains(#""responder":"alerts.lua:"#))
        #expect(!joined.contains(rules))
    }

    @Test func invalidLinesFailTheRunUnlessInvalidOk() throws {
        let bad = "not json\n"
        #expect(try Luahier.run(["dispatch", "scripts/alerts.lua", "-"], stdin: bad).status == 1)
        let ok = try Luahier.run(["dispatch", "scripts/alerts.lua", "-", "--invalid-ok"], stdin: bad)
        #expect(ok.status == 0)
        #expect(ok.stdout.contains(#""status":"invalid""#))
        #expect(ok.stderr.contains("1 invalid"))
    }

    @Test func badPartitionFlagsAreUsageErrors() throws {
        for (arguments, message) in [
            (["--line-offset", "-1"], "--line-offset must be from 0 to 1000000000000000"),
            (["--line-offset", "9223372036854775807"], "--line-offset must be from 0"),
            (["--source", ""], "--source must be a name on one line"),
            (["--source", "a\u{1B}[2Jb"], "--source must be a name on one line, without control characters"),
            (["--rules-name", ""], "--rules-name must be a name on one line"),
            (["--rules-name", "a\nb"], "--rules-name must be a name on one line"),
            (["--strict", "--invalid-ok"], "give one of --strict and --invalid-ok"),
            (["--rules-name", "a.lua", "--watch"], "give one of --rules-name and --watch"),
        ] {
            let result = try Luahier.run(["dispatch", "scripts/alerts.lua", "-"] + arguments, stdin: "")
            #expect(result.status == 2, "\(arguments)")
            #expect(result.stderr.contains(message), "\(arguments): \(result.stderr)")
        }
    }
}
