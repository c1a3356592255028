import Foundation
import Testing

/// Every script in `scripts/` runs here, and its stdout, stderr and exit status are checked
/// against golden files in `Tests/luahierTests/Golden/`. Set `UPDATE_GOLDEN=1` to rewrite
/// them after a deliberate change (and read the diff).
@Suite("Example scripts", .ownThreads)
struct ExampleScriptTests {
    /// How each example runs: the golden files' name, the command line, the exit status.
    static let examples: [String: (arguments: [String], status: Int32)] = [
        "signin.lua": (["run", "scripts/signin.lua"], 0),
        "escalation.lua": (["run", "scripts/escalation.lua"], 0),
        "trace.lua": (["run", "--trace", "scripts/trace.lua"], 0),
        // Two of its input lines are bad on purpose: exit 1, every line answered.
        "alerts.lua": (["dispatch", "scripts/alerts.lua", "scripts/alerts.jsonl"], 1),
        "alerts.lua.check": (["check", "scripts/alerts.lua"], 0),
        "workspace.lua": (["run", "--recover", "Retry", "scripts/workspace.lua"], 0),
        "workspace.lua.check": (["check", "scripts/workspace.lua"], 0),
        "workspace.lua.tree": (["tree", "scripts/workspace.lua"], 0),
        "workspace.lua.tree-dot": (["tree", "scripts/workspace.lua", "--format", "dot"], 0),
        "workspace.lua.tree-json": (["tree", "scripts/workspace.lua", "--format", "json"], 0),
        // The generated traffic of scripts/review-a-change.sh: the same lines for a seed.
        "traffic.lua": (["run", "scripts/traffic.lua", "12", "3"], 0),
    ]

    static let golden = Luahier.packageRoot.appendingPathComponent("Tests/luahierTests/Golden")

    @Test func everyScriptHasAnExpectation() throws {
        let scripts = try FileManager.default.contentsOfDirectory(
            atPath: Luahier.packageRoot.appendingPathComponent("scripts").path
        ).filter { $0.hasSuffix(".lua") && !$0.hasSuffix("_test.lua") }  // tests: RuleToolsTests
        let run = Set(Self.examples.values.flatMap { $0.arguments.filter { $0.hasPrefix("scripts/") && $0.hasSuffix(".lua") } })
        #expect(run == Set(scripts.map { "scripts/" + $0 }))
    }

    /// The DOT golden is proven valid by Graphviz itself (`.ci/run` installs it).
    @Test(.enabled(if: Graphviz.dot != nil, "Graphviz (dot) is not installed"))
    func theTreeInDOTRendersWithGraphviz() throws {
        let tree = try Luahier.run(try #require(Self.examples["workspace.lua.tree-dot"]).arguments)
        #expect(tree.status == 0)
        let (status, svg, complaints) = try Graphviz.render(tree.stdout, format: "svg")
        #expect(status == 0)
        #expect(complaints.isEmpty, "dot said: \(complaints)")
        #expect(svg.contains("<svg"))
        // Graphviz writes "-" in SVG text as "&#45;".
        for name in ["tab&#45;1", "outline", "#1 receiveEvent Format"] { #expect(svg.contains(name)) }
    }

    @Test(arguments: Self.examples.keys.sorted())
    func exampleMatchesItsGoldenOutput(_ name: String) throws {
        let example = try #require(Self.examples[name])
        let result = try Luahier.run(example.arguments)
        #expect(result.status == example.status)
        #expect(!result.signaled)
        for (stream, actual) in [("stdout", result.stdout), ("stderr", result.stderr)] {
            let file = Self.golden.appendingPathComponent("\(name).\(stream)")
            if ProcessInfo.processInfo.environment["UPDATE_GOLDEN"] == "1" {
                try FileManager.default.createDirectory(at: Self.golden, withIntermediateDirectories: true)
                try actual.write(to: file, atomically: true, encoding: .utf8)
            }
            let expected = try String(contentsOf: file, encoding: .utf8)
            #expect(actual == expected, "\(name) \(stream) differs from \(file.lastPathComponent)")
        }
    }

    #if Server
    /// The worked example of docs/shadow.md: a rules change, yesterday's log replayed (three
    /// requests change), and the change as a shadow revision under generated traffic. It runs
    /// the built binary through bash, as a user runs it; its whole stdout is golden.
    @Test func reviewingAChangeShowsItsThreeRequestsAndTheShadowCounts() throws {
        // serve without clock limits (it reads them from the environment): the candidate runs
        // at the lowest CPU priority, and on a busy machine its lines tripped their 5 s and 30 s
        // limits, changing the counts. The script waits for it up to 10 minutes.
        let environment = ["LUAHIER": Luahier.binary.path, "LUAHIER_TIMEOUT": "0", "LUAHIER_DISPATCH_TIMEOUT": "0"]
        let child = try LuahierProcess(
            ["scripts/review-a-change.sh"], environment: ProcessInfo.processInfo.environment.merging(environment) { $1 },
            executable: URL(fileURLWithPath: "/bin/bash"), stdin: false)
        let ended = child.waitForExit(timeout: 1800)
        #expect(ended.status == 0, "\(ended.stderr)")
        #expect(child.stdout.contains(": 1000 requests: 997 same, 3 changed (type 3, by 3, responder 3, value 3)"), "\(child.stdout)")
        #expect(child.stdout.components(separatedBy: "\nchanged: ").count == 4)
        #expect(child.stdout.contains("10 batches compared (0 skipped); 2000 request lines: 1992 same, 8 different"), "\(child.stdout)")
        let file = Self.golden.appendingPathComponent("review-a-change.sh.stdout")
        if ProcessInfo.processInfo.environment["UPDATE_GOLDEN"] == "1" {
            try child.stdout.write(to: file, atomically: true, encoding: .utf8)
        }
        #expect(child.stdout == (try String(contentsOf: file, encoding: .utf8)), "differs from \(file.lastPathComponent)")
    }
    #endif

    /// The alerts rules keep no state between events, so two workers answer the same.
    @Test func alertsAnswerTheSameWithTwoJobs() throws {
        let arguments = try #require(Self.examples["alerts.lua"]).arguments
        let one = try Luahier.run(arguments)
        let two = try Luahier.run(arguments + ["--jobs", "2"])
        #expect(two.status == one.status)
        #expect(two.stdout == one.stdout)
        #expect(two.stderr == one.stderr)
    }
}
