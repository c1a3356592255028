import Foundation
import Testing

#if canImport(FoundationXML)
import FoundationXML
#endif

/// `luahier test` and `luahier explain` (contract §9), run as a user runs them. The fixtures are in
/// Tests/luahierTests/Fixtures/ruletests: `routing.lua` (rules), `routing_test.lua` (passes),
/// `failing_test.lua` (fails on purpose, one test per kind of failure).
@Suite("Rule tests and explain (contract §9)", .ownThreads)
struct RuleToolsTests {
    static let fixtures = Luahier.packageRoot.appendingPathComponent("Tests/luahierTests/Fixtures/ruletests")
    static let golden = Luahier.packageRoot.appendingPathComponent("Tests/luahierTests/Golden")
    /// Limits that end the looping tests by count, not by the clock: a test that passed under
    /// `--timeout 1` took longer than that on a loaded machine and was counted an error, and
    /// clock limits far above the work made each run spin for 90 s in its two looping tests.
    /// Instruction budgets end both loops in milliseconds, whatever the load.
    static let loopLimits = [
        "--timeout", "0", "--dispatch-timeout", "0", "--max-instructions", "50000000", "--dispatch-max-instructions", "5000000",
    ]

    @Test func theShippedExampleTestsPass() throws {
        let result = try Luahier.run(["test", "scripts"])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let files = try FileManager.default.contentsOfDirectory(atPath: Luahier.packageRoot.appendingPathComponent("scripts").path)
            .filter { $0.hasSuffix("_test.lua") }
        #expect(files.sorted() == ["alerts_test.lua", "workspace_test.lua"])
        for file in files { #expect(result.stdout.contains("scripts/\(file)\n")) }
        #expect(result.stdout.contains(" passed, 0 failed, 0 errors, 0 skipped (2 files) in "))
        #expect(!result.stdout.contains("FAIL"))
    }

    @Test func aPassingFileExitsZero() throws {
        let result = try Luahier.run(["test", "routing_test.lua"], in: Self.fixtures)
        #expect(result.status == 0)
        #expect(result.stdout.hasPrefix("routing_test.lua\n  ok     a small order is handled by the cart ("))
        #expect(result.stdout.contains("2 passed, 0 failed, 0 errors, 0 skipped (1 file) in "))
        #expect(result.stderr.isEmpty)
    }

    @Test func aFailingFileSaysWhereWhatAndHowTheValueWent() throws {
        let result = try Luahier.run(["test", "failing_test.lua"] + Self.loopLimits, timeout: 600, in: Self.fixtures)
        #expect(result.status == 1)
        #expect(!result.signaled)
        let out = result.stdout
        let expected = [
            "  ok     passes (",
            "  FAIL   a wrong expectation about who handled it (failing_test.lua:8)",
            "         failing_test.lua:10: expected by \"/shop/cart\", got \"/shop\"",
            "         expected: \"/shop/cart\"",
            "         actual:   \"/shop\"",
            "         trace:",
            "           ├─ /shop/cart",
            "           │  └─ #1 receiveEvent (routing.lua:6): AddItem → event BulkOrder",
            "           │        before {count = 50, type = \"AddItem\"}",
            "           │        after  {count = 50, type = \"BulkOrder\"}",
            "           ├─ /shop",
            "           │  └─ #1 handleEvent (routing.lua:12): BulkOrder → handled",
            "  ERROR  a runtime error in the test (failing_test.lua:13)",
            "         failing_test.lua:15: attempt to index a nil value (local 'missing')",
            "  ok     a rule that loops forever is stopped by the dispatch limit (",
            "  ERROR  a test that loops forever (failing_test.lua:22)",
            "         failing_test.lua:23: InstructionLimitExceeded: instruction limit exceeded",
            "  ok     state does not leak between tests (",
            "  FAIL   a payment error that nobody presents (failing_test.lua:32)",
            "         failing_test.lua:34: expected an error of type \"PaymentDeclined\" to reach the presenter, 0 did",
            "3 passed, 2 failed, 2 errors, 0 skipped (1 file) in ",
        ]
        var rest = out[...]
        for line in expected {
            guard let found = rest.range(of: line) else {
                Issue.record("missing, in order: \(line)\n--- output:\n\(out)")
                return
            }
            rest = rest[found.upperBound...]
        }
        // No colour when stdout is not a terminal.
        #expect(!out.contains("\u{1B}["))
    }

    @Test func junitXMLParsesAndCountsEachKind() throws {
        let result = try Luahier.run(["test", "failing_test.lua", "--format", "junit"] + Self.loopLimits, timeout: 600, in: Self.fixtures)
        #expect(result.status == 1)
        let collector = XMLCollector()
        let parser = XMLParser(data: Data(result.stdout.utf8))
        parser.delegate = collector
        #expect(parser.parse(), "not well-formed XML: \(result.stdout)")
        let suites = collector.elements.filter { $0.name == "testsuites" }
        #expect(suites.count == 1)
        #expect(suites.first?.attributes["tests"] == "7")
        #expect(suites.first?.attributes["failures"] == "2")
        #expect(suites.first?.attributes["errors"] == "2")
        #expect(collector.elements.filter { $0.name == "testcase" }.count == 7)
        #expect(collector.elements.filter { $0.name == "failure" }.count == 2)
        #expect(collector.elements.filter { $0.name == "error" }.count == 2)
        let failure = try #require(collector.elements.first { $0.name == "failure" })
        #expect(failure.attributes["message"] == "failing_test.lua:10: expected by \"/shop/cart\", got \"/shop\"")
        #expect(collector.text.contains("#1 receiveEvent (routing.lua:6): AddItem → event BulkOrder"))
    }

    @Test func jsonHasEveryTestAndItsFailure() throws {
        let result = try Luahier.run(["test", "failing_test.lua", "--format", "json"] + Self.loopLimits, timeout: 600, in: Self.fixtures)
        #expect(result.status == 1)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect(object["passed"] as? Int == 3)
        #expect(object["failed"] as? Int == 2)
        #expect(object["errors"] as? Int == 2)
        let tests = try #require(object["tests"] as? [[String: Any]])
        #expect(tests.count == 7)
        let wrong = try #require(tests.first { $0["name"] as? String == "a wrong expectation about who handled it" })
        let failure = try #require(wrong["failure"] as? [String: Any])
        #expect(failure["where"] as? String == "failing_test.lua:10")
        #expect(failure["expected"] as? String == "\"/shop/cart\"")
        #expect(failure["actual"] as? String == "\"/shop\"")
        #expect((failure["trace"] as? [String])?.count == 2)
    }

    @Test func coverageCountsTestsPerResponderAndSubscription() throws {
        let result = try Luahier.run(["test", "routing_test.lua", "--coverage"], in: Self.fixtures)
        #expect(result.status == 0)
        let expected = """
            coverage:
              routing.lua  3 of 10 reached (30.0%)
                routing.lua:6   2 tests   /shop/cart #1 receiveEvent AddItem
                routing.lua:10  1 test    /shop/cart #2 handleEvent AddItem
              ! routing.lua:11  never     /shop/cart #3 receiveEvent Never
                routing.lua:12  1 test    /shop #1 handleEvent BulkOrder
              ! routing.lua:13  never     /shop #2 catchError PaymentDeclined
              ! routing.lua:16  never     /shop #3 receiveEvent Spin
              ! routing.lua:19  never     /shop/checkout subscribe PriceChanged
              ! routing.lua:20  never     / #1 receiveError any
              ! routing.lua:21  never     / #2 handleEvent RetryPayment
              ! routing.lua:30  never     /shop/checkout #1 receiveEvent Pay

            """
        #expect(result.stdout.contains(expected), "\(result.stdout)")
        let json = try Luahier.run(["test", "routing_test.lua", "--coverage", "--format", "json"], in: Self.fixtures)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let coverage = try #require(object["coverage"] as? [String: Any])
        let files = try #require(coverage["files"] as? [[String: Any]])
        #expect(files.first?["reached"] as? Int == 3)
        #expect(files.first?["total"] as? Int == 10)
        let entries = try #require(coverage["entries"] as? [[String: Any]])
        #expect(entries.filter { $0["tests"] as? Int == 0 }.compactMap { $0["where"] as? String }
            == ["routing.lua:11", "routing.lua:13", "routing.lua:16", "routing.lua:19", "routing.lua:20", "routing.lua:21", "routing.lua:30"])
    }

    @Test func aSubscriptionReachedByAPublishIsCovered() throws {
        let folder = try Luahier.script(
            """
            rules "routing.lua"
            test("prices", function()
              expect(publish("/shop", { type = "PriceChanged" })):delivered(1):deliveredTo{ "/shop/checkout" }
            end)
            """, name: "publish_test.lua")
        let directory = URL(fileURLWithPath: folder).deletingLastPathComponent()
        try FileManager.default.copyItem(at: Self.fixtures.appendingPathComponent("routing.lua"), to: directory.appendingPathComponent("routing.lua"))
        let result = try Luahier.run(["test", "publish_test.lua", "--coverage"], in: directory)
        #expect(result.status == 0, "\(result.stdout)")
        #expect(result.stdout.contains("    routing.lua:19  1 test    /shop/checkout subscribe PriceChanged"), "\(result.stdout)")
    }

    /// An assertion that fails where its error is swallowed (in a responder, a pcall, a
    /// coroutine) still fails the test; a non-string error is described, not "nil".
    @Test func swallowedAssertionsStillFailAndOddErrorsAreDescribed() throws {
        let path = try Luahier.script(
            """
            test("in a responder", function()
              hier.root:child("x"):handleEvent("Foo", function(e) expect(1):equals(2) end)
              trigger("/x", { type = "Foo" })
            end)
            test("in a pcall", function() pcall(function() expect(1):equals(2) end) end)
            test("a table error", function() error({ code = 1 }) end)
            """, name: "swallow_test.lua")
        let result = try Luahier.run(["test", path])
        #expect(result.status == 1)
        #expect(result.stdout.contains("0 passed, 2 failed, 1 errors"), "\(result.stdout)")
        #expect(result.stdout.contains("swallow_test.lua:2: values differ"), "\(result.stdout)")
        #expect(result.stdout.contains("{code = 1}"), "\(result.stdout)")
    }

    @Test func runSelectsTestsByName() throws {
        let result = try Luahier.run(["test", "routing_test.lua", "--run", "bulk"], in: Self.fixtures)
        #expect(result.status == 0)
        #expect(result.stdout.contains("  skip   a small order is handled by the cart\n"))
        #expect(result.stdout.contains("1 passed, 0 failed, 0 errors, 1 skipped (1 file)"))
    }

    @Test func noTestFilesAndUsageErrors() throws {
        let empty = URL(fileURLWithPath: try Luahier.script("-- nothing\n", name: "rules.lua")).deletingLastPathComponent()
        let none = try Luahier.run(["test"], in: empty)
        #expect(none.status == 1)
        #expect(none.stderr == "luahier: no *_test.lua files in .\n")
        let missing = try Luahier.run(["test", "nowhere"])
        #expect(missing.status == 2)
        #expect(missing.stderr.hasPrefix("luahier: nowhere: no such file or folder\n"))
        let format = try Luahier.run(["test", "--format", "yaml", "scripts"])
        #expect(format.status == 2)
    }

    @Test func aFileThatDoesNotLoadIsAnErrorAndTheOthersStillRun() throws {
        let broken = try Luahier.script("rules \"routing.lua\"\ntest(\"x\", function() end\n", name: "broken_test.lua")
        let directory = URL(fileURLWithPath: broken).deletingLastPathComponent()
        try FileManager.default.copyItem(at: Self.fixtures.appendingPathComponent("routing.lua"), to: directory.appendingPathComponent("routing.lua"))
        try FileManager.default.copyItem(at: Self.fixtures.appendingPathComponent("routing_test.lua"), to: directory.appendingPathComponent("routing_test.lua"))
        let result = try Luahier.run(["test", "."], in: directory)
        #expect(result.status == 1)
        #expect(result.stdout.contains("  ERROR  (loading broken_test.lua) (broken_test.lua)\n         broken_test.lua:3: SyntaxError:"), "\(result.stdout)")
        #expect(result.stdout.contains("2 passed, 0 failed, 1 errors, 0 skipped (2 files)"))
    }

    // MARK: explain

    static let explainGoldens: [String: [String]] = [
        "explain-typed-chain": ["explain", "Tests/luahierTests/Fixtures/ruletests/routing.lua", "--at", "/shop/cart", "--event", "AddItem"],
        "explain-cut-chain": ["explain", "Tests/luahierTests/Fixtures/ruletests/routing.lua", "--at", "closed", "--error", "Stale"],
        "explain-strict-refusal": ["explain", "scripts/workspace.lua", "--at", "/app/sidebar/outline", "--event", "Format"],
        "explain-run-nested": ["explain", "Tests/luahierTests/Fixtures/ruletests/routing.lua", "--at", "/shop/checkout", "--event", "Pay", "--run"],
    ]

    @Test(arguments: Self.explainGoldens.keys.sorted())
    func explainMatchesItsGolden(_ name: String) throws {
        let result = try Luahier.run(try #require(Self.explainGoldens[name]))
        #expect(result.status == 0, "\(result.stderr)")
        let file = Self.golden.appendingPathComponent("\(name).stdout")
        if ProcessInfo.processInfo.environment["UPDATE_GOLDEN"] == "1" {
            try result.stdout.write(to: file, atomically: true, encoding: .utf8)
        }
        #expect(result.stdout == (try String(contentsOf: file, encoding: .utf8)), "\(name) differs from its golden")
    }

    @Test func explainJSONForTools() throws {
        let result = try Luahier.run(
            ["explain", "Tests/luahierTests/Fixtures/ruletests/routing.lua", "--at", "/shop/cart", "--event", #"{"type":"BulkOrder","count":3}"#, "--format", "json"])
        #expect(result.status == 0)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect(object["type"] as? String == "BulkOrder")
        let chain = try #require(object["chain"] as? [[String: Any]])
        // After the handle, only what its code may raise (or a catch may make of that) goes on.
        #expect(chain.map { $0["verdict"] as? String ?? "" }
            == ["notOffered", "notOffered", "notOffered", "offered", "maybe", "maybe", "maybe", "maybe"])
        #expect(chain[1]["reason"] as? String == "filter")
        #expect(chain.dropFirst(4).map { $0["reason"] as? String ?? "" } == ["raised", "caught", "raised", "caught"])
        let run = try Luahier.run(
            ["explain", "Tests/luahierTests/Fixtures/ruletests/routing.lua", "--at", "/shop/checkout", "--event", "Pay", "--run", "--format", "json"])
        let drawing = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        let steps = try #require(drawing["steps"] as? [[String: Any]])
        let nested = try #require(steps.first?["nested"] as? [[String: Any]])
        #expect(nested.first?["title"] as? String == "error PaymentDeclined at /shop/checkout")
    }

    /// The static verdicts of `rules` for a value sent `at`, by `#index` on each node, its
    /// `ends:`, and who handled it in the run.
    static func staticAndRun(_ rules: String, at: String, _ value: [String]) throws -> (verdicts: [String: String], ends: String, handledBy: String) {
        let path = "Tests/luahierTests/Fixtures/explain/\(rules)"
        let explained = try Luahier.run(["explain", path, "--at", at] + value + ["--format", "json"])
        #expect(explained.status == 0, "\(explained.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(explained.stdout.utf8)) as? [String: Any])
        var verdicts: [String: String] = [:]
        for step in try #require(object["chain"] as? [[String: Any]]) {
            let name = "\(step["node"] as? String ?? "?") #\(step["index"] as? Int ?? 0)"
            verdicts[name] = "\(step["verdict"] as? String ?? "?") \(step["reason"] as? String ?? "?")"
        }
        let run = try Luahier.run(["explain", path, "--at", at] + value + ["--run"])
        #expect(run.status == 0, "\(run.stderr)")
        let last = run.stdout.split(separator: "\n").last.map(String.init) ?? ""
        return (verdicts, object["ends"] as? String ?? "", last)
    }

    @Test func anErrorRaisedByAnEventResponderMayReachTheErrorResponders() throws {
        let (verdicts, ends, handledBy) = try Self.staticAndRun("raise_after_event.lua", at: "/app/cell", ["--event", "Tap"])
        #expect(handledBy.hasPrefix("└─ handled by /app #3 handleError (Tests/luahierTests/Fixtures/explain/raise_after_event.lua:8): error LuaError"), "\(handledBy)")
        #expect(verdicts == [
            "/app/cell #1": "offered decides",
            "/app #1": "maybe raised",
            "/app #2": "maybe filter",
            "/app #3": "maybe raised",
        ])
        #expect(ends.hasPrefix("if no responder handles it: unhandled at /; if a responder from /app/cell #1 receiveEvent"))
        #expect(ends.hasSuffix("raises an error or breaks its contract, that error goes on from the next responder, and if no responder handles it: unhandled at /, and the error reaches the presenter"))
        let text = try Luahier.run(["explain", "Tests/luahierTests/Fixtures/explain/raise_after_event.lua", "--at", "/app/cell", "--event", "Tap"])
        #expect(text.stdout.contains(
            "  #3 handleError LuaError  Tests/luahierTests/Fixtures/explain/raise_after_event.lua:8\n      maybe: it takes errors; the value is an event here, but it is offered if a responder before raises an error of one of those types ("),
            "\(text.stdout)")
        #expect(!text.stdout.contains("not offered"))
    }

    @Test func anErrorRaisedByAHandleMayReachTheRespondersAfterIt() throws {
        let (verdicts, ends, handledBy) = try Self.staticAndRun("raise_in_handle.lua", at: "/a", ["--event", "X"])
        #expect(handledBy.hasPrefix("└─ handled by /a #2 handleError (Tests/luahierTests/Fixtures/explain/raise_in_handle.lua:5): error LuaError"), "\(handledBy)")
        #expect(verdicts == ["/a #1": "offered handles", "/a #2": "maybe raised"])
        #expect(ends == "handled by /a #1 handleEvent (Tests/luahierTests/Fixtures/explain/raise_in_handle.lua:4), unless a responder before it ends the dispatch; "
            + "if a responder from /a #1 handleEvent (Tests/luahierTests/Fixtures/explain/raise_in_handle.lua:4) on raises an error or breaks its contract, "
            + "that error goes on from the next responder, and if no responder handles it: unhandled at /, and the error reaches the presenter")
    }

    @Test func explainRefusesWhatItCannotExplain() throws {
        let rules = "Tests/luahierTests/Fixtures/ruletests/routing.lua"
        let nowhere = try Luahier.run(["explain", rules, "--at", "/nope", "--event", "X"])
        #expect(nowhere.status == 1)
        #expect(nowhere.stderr == "luahier: no node at /nope\n")
        let both = try Luahier.run(["explain", rules, "--at", "/", "--event", "X", "--error", "Y"])
        #expect(both.status == 2)
        #expect(both.stderr.hasPrefix("luahier: give one of --event or --error\n"))
        let badJSON = try Luahier.run(["explain", rules, "--at", "/", "--event", "{\"type\":"])
        #expect(badJSON.status == 2)
    }
}

/// Collects the elements and text of an XML document.
private final class XMLCollector: NSObject, XMLParserDelegate {
    var elements: [(name: String, attributes: [String: String])] = []
    var text = ""

    func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                attributes: [String: String] = [:]) {
        elements.append((name, attributes))
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) { text += string }
}
