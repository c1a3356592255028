import Foundation
import Testing
@testable import LuaHierarchy

struct QuotaExceeded: ReportableError {
    var errorType: String { "QuotaExceeded" }
    var errorMessage: String { "over quota" }
    var errorFields: [String: Value] { ["limit": 10] }
}

struct PlainSwiftError: Error, CustomStringConvertible {
    var description: String { "plain failure" }
}

@Suite("Swift embedding API (contract §4, §5)")
struct SwiftAPITests {
    @Test func swiftClosuresOfEveryKindFollowTheSameRules() throws {
        let f = try Fixture()
        let a = try f.hierarchy.makeNode(at: "/a")
        let b = try a.child("b")
        var log: [String] = []
        b.receiveEvent(.type("Tap")) { _ in log.append("receive"); return .replace(.event("Swipe")) }
        b.transformEvent { event in log.append("transform \(event.typeName!)"); return .event("Big" + event.typeName!) }
        b.receiveEvent { _ in log.append("notHandled"); return .notHandled }
        a.handleEvent(.types(["BigSwipe"])) { _ in log.append("handle") }
        let outcome = try f.hierarchy.trigger("Tap", at: "/a/b")
        #expect(log == ["receive", "transform Swipe", "notHandled", "handle"])
        #expect(outcome.status == .handled)
        #expect(outcome.by == "/a")
        #expect(outcome.responder?.kind == .handleEvent)
        #expect(outcome.responder?.location.hasPrefix("LuaHierarchyTests/SwiftAPITests.swift:") == true)
        #expect(outcome.value.typeName == "BigSwipe")
    }

    @Test func swiftErrorResponders() throws {
        let f = try Fixture()
        let n = try f.hierarchy.makeNode(at: "/n")
        n.transformError(.type("Low")) { error in .error("High", message: "wrapped \(error["message"]!.stringValue!)") }
        n.receiveError { error in error.typeName == "High" ? .notHandled : .handled }
        n.catchError(.type("High")) { _ in "Recovered" }
        n.handleError { _ in Issue.record("an event is not seen by error responders") }
        let outcome = try f.hierarchy.report(.error("Low", message: "m"), at: "/n")
        #expect(outcome.status == .unhandled)
        #expect(outcome.kind == .event)
        #expect(outcome.value == .event("Recovered"))
    }

    @Test func thrownSwiftErrorsAreReportedErrorsAtTheNextResponder() throws {
        let f = try Fixture()
        let n = try f.hierarchy.makeNode(at: "/n")
        n.receiveEvent(.type("Quota")) { _ in throw QuotaExceeded() }
        n.receiveEvent(.type("Plain")) { _ in throw PlainSwiftError() }
        var seen: [Value] = []
        n.receiveError { error in seen.append(error); return .handled }
        _ = try f.hierarchy.trigger("Quota", at: "/n")
        _ = try f.hierarchy.trigger("Plain", at: "/n")
        #expect(seen.count == 2)
        #expect(seen[0]["type"] == "QuotaExceeded")
        #expect(seen[0]["message"] == "over quota")
        #expect(seen[0]["limit"] == 10)
        #expect(seen[0]["where"]?.stringValue?.hasPrefix("LuaHierarchyTests/SwiftAPITests.swift:") == true)
        #expect(seen[1]["type"] == "PlainSwiftError")
        #expect(seen[1]["message"] == "plain failure")
    }

    @Test func swiftAndLuaRespondersShareOneChainAndThePositionRule() throws {
        let f = try Fixture()
        try f.lua("""
            local n = hier.root:child("n")
            n:receiveEvent(function(e) e.lua = true return "notHandled" end)
            """)
        let n = try #require(try f.hierarchy.node(at: "/n"))
        n.receiveEvent { event in
            #expect(event["lua"] == true)
            throw QuotaExceeded()
        }
        try f.lua("""
            hier.node("/n"):receiveError(function(e) print("lua got " .. e.type .. " from swift") return "handled" end)
            """)
        let outcome = try f.hierarchy.trigger("Tap", at: n)
        #expect(outcome.status == .handled)
        #expect(outcome.responder?.index == 3)
        #expect(f.printed == ["lua got QuotaExceeded from swift"])
    }

    @Test func swiftContractViolations() throws {
        let f = try Fixture()
        let n = try f.hierarchy.makeNode(at: "/n")
        n.transformEvent { _ in 42 }
        let outcome = try f.hierarchy.trigger("Tap", at: n)
        #expect(outcome.value["type"] == "ResponderContractError")
        // Described as a value from Lua would be: Swift and Lua responders are read alike.
        #expect(outcome.value["message"]?.stringValue?.contains("returned a number; expected an event") == true)
    }

    @Test func verdictWordsMeanTheSameFromSwiftAsFromLua() throws {
        let f = try Fixture()
        let n = try f.hierarchy.makeNode(at: "/n")
        n.transformEvent { _ in "handled" }
        let outcome = try f.hierarchy.trigger("Tap", at: n)
        #expect(outcome.value["type"] == "ResponderContractError")
        #expect(outcome.value["message"]?.stringValue?.contains("returned \"handled\"; expected an event") == true)
    }

    @Test func handleRemovalFromSwift() throws {
        let f = try Fixture()
        let n = try f.hierarchy.makeNode(at: "/n")
        let handle = n.handleEvent { _ in }
        #expect(try f.hierarchy.trigger("Tap", at: n).status == .handled)
        handle.remove()
        handle.remove()
        #expect(handle.isRemoved)
        #expect(try f.hierarchy.trigger("Tap", at: n).status == .unhandled)
    }

    @Test func triggerAndReportRefuseBadInput() throws {
        let f = try Fixture()
        #expect(throws: HierarchyError.noSuchNode("/nope")) { try f.hierarchy.trigger("Tap", at: "/nope") }
        #expect(throws: HierarchyError.self) { try f.hierarchy.trigger(42, at: "/") }
        #expect(throws: HierarchyError.self) { try f.hierarchy.trigger(["no": "type"], at: "/") }
        #expect(throws: HierarchyError.self) { try f.hierarchy.report(["type": 5], at: "/") }
        #expect(throws: HierarchyError.foreignNode) { try f.hierarchy.trigger("Tap", at: try Hierarchy().root) }
        #expect(throws: TreeError.invalidPath("x")) { try f.hierarchy.trigger("Tap", at: "x") }
    }

    /// A message's `type` is read by a key scan in small maps and by hashing in larger ones
    /// (Message.typeField): both sides of the cut give the same normalization (contract §3).
    @Test(arguments: [1, 8, 9, 40])
    func theTypeIsReadTheSameInSmallAndLargeMaps(fields: Int) throws {
        let f = try Fixture()
        var seen: [String] = []
        f.hierarchy.root.receiveEvent { event in
            seen.append(event["type"]?.stringValue ?? "?")
            return .handled
        }
        var extra: [String: Value] = [:]
        for i in 0..<(fields - 1) { extra["f\(i)"] = .int(Int64(i)) }
        var event = extra
        event["type"] = "Tap"
        let outcome = try f.hierarchy.trigger(.map(event), at: "/")
        #expect(outcome.status == .handled && seen == ["Tap"])
        #expect(outcome.value == .map(event))
        // Without a type: an event is refused, an error becomes "Error"; a non-string type is refused.
        #expect(throws: HierarchyError.self) { try f.hierarchy.trigger(.map(extra.merging(["x": 1]) { a, _ in a }), at: "/") }
        let untyped = try f.hierarchy.report(.map(extra.merging(["message": "m"]) { a, _ in a }), at: "/")
        #expect(untyped.value["type"] == "Error" && untyped.value["message"] == "m")
        var numbered = extra
        numbered["type"] = 7
        #expect(throws: HierarchyError.self) { try f.hierarchy.trigger(.map(numbered), at: "/") }
    }

    @Test func reportFromSwiftCarriesTheCallSiteAndReachesThePresenter() throws {
        let f = try Fixture()
        let outcome = try f.hierarchy.report("boom", at: "/")
        #expect(outcome.status == .unhandled)
        #expect(outcome.value["where"]?.stringValue?.hasPrefix("LuaHierarchyTests/SwiftAPITests.swift:") == true)
        #expect(f.presented.map(\.error) == [outcome.value])
    }

    @Test func nestedSwiftDispatchStopsAtTheDepthLimit() throws {
        let f = try Fixture()
        f.hierarchy.depthLimit = 10
        let n = try f.hierarchy.makeNode(at: "/n")
        let hierarchy = f.hierarchy
        var calls = 0
        n.receiveEvent { event in
            calls += 1
            _ = try hierarchy.trigger(event, at: n)
            return .handled
        }
        #expect(try hierarchy.trigger("Echo", at: n).status == .handled)
        #expect(calls == 10)
        #expect(f.presented.first?.error["type"] == "DispatchDepthExceeded")
        #expect(throws: DispatchDepthExceeded.self) {
            f.hierarchy.depthLimit = 1
            n.receiveEvent { _ in _ = try hierarchy.trigger("x", at: n); return .handled }
            throw DispatchDepthExceeded(limit: 1)
        }
    }

    @Test func hostFunctionsAreCallableFromLuaAndTheirErrorsAreLuaErrors() throws {
        let f = try Fixture()
        f.hierarchy.register(function: "lookup") { arguments in
            guard case .string(let user)? = arguments.first else { throw QuotaExceeded() }
            return ["user": .string(user), "score": .int(Int64(user.count)), "args": .int(Int64(arguments.count))]
        }
        let lines = try f.output("""
            local r = lookup("ada", 2, nil)
            print(r.user, r.score, math.type(r.score), r.args)
            local ok, err = pcall(lookup, 1)
            print(ok, err.type, err.message)
            local n = hier.root:child("n")
            n:receiveEvent(function() lookup({}) return "handled" end)
            local o = n:triggerEvent("Tap")
            print(o.value.type, o.value.where)
            print(pcall(lookup, print))
            """)
        #expect(lines[0] == "ada\t3\tinteger\t3")
        #expect(lines[1] == "false\tQuotaExceeded\tover quota")
        #expect(lines[2] == "QuotaExceeded\ttest.lua:6")
        #expect(lines[3].hasPrefix("false\t"))
    }

    @Test func onDispatchSeesNestedDispatchesWithTheirDepth() throws {
        let f = try Fixture()
        var seen: [(String, Int)] = []
        f.hierarchy.onDispatch = { outcome, depth in seen.append((outcome.value.typeName ?? "?", depth)) }
        try f.lua("""
            local n = hier.root:child("n")
            n:receiveEvent("Outer", function() n:triggerEvent("Inner") return "handled" end)
            n:triggerEvent("Outer")
            """)
        #expect(seen.map(\.0) == ["Inner", "Outer"])
        #expect(seen.map(\.1) == [2, 1])
    }

    @Test func nodesOutliveTheirHierarchySafely() throws {
        var node: Node?
        do {
            let hierarchy = try Hierarchy()
            try hierarchy.run(source: "hier.root:child('kept'):receiveEvent(function() return 'handled' end)")
            node = try hierarchy.node(at: "/kept")
        }
        #expect(node?.path == "kept")
    }
}

@Suite("Scripts: loading, errors, print, require (contract §7, §8)")
struct ScriptTests {
    @Test func syntaxErrorsNameFileAndLine() throws {
        let f = try Fixture()
        let error = try #require(f.failure("local x = 1\nlocal = 2"))
        #expect(error.type == "SyntaxError")
        #expect(error.location == "test.lua:2")
        #expect(error.message.contains("near '='"))
        #expect(error.description.hasPrefix("test.lua:2: "))
    }

    @Test func runtimeErrorsNameFileAndLineWithTraceback() throws {
        let f = try Fixture()
        let error = try #require(f.failure("local function f()\n  return nil .. 'x'\nend\nf()"))
        #expect(error.type == "LuaError")
        #expect(error.location == "test.lua:2")
        #expect(error.message == "attempt to concatenate a nil value")
        #expect(error.traceback?.contains("test.lua:4: in main chunk") == true)
    }

    @Test func tableErrorsAtTopLevelKeepTheirType() throws {
        let f = try Fixture()
        let error = try #require(f.failure("\nerror({type = 'Config', message = 'missing key', key = 'x'})"))
        #expect(error.type == "Config")
        #expect(error.location == "test.lua:2")
        #expect(error.value["key"] == "x")
        #expect(error.description == "test.lua:2: Config: missing key")
    }

    @Test func theStateStaysUsableAfterAFailure() throws {
        let f = try Fixture()
        _ = f.failure("hier.root:child('a'):receiveEvent(function() return 'handled' end); error('x')")
        #expect(try f.output("print(hier.node('/a'):triggerEvent('Tap').status)") == ["handled"])
    }

    @Test func printJoinsWithTabsAndUsesTostring() throws {
        let f = try Fixture()
        #expect(try f.output("""
            print(1, nil, true, 2.5, setmetatable({}, {__tostring = function() return "custom" end}))
            print()
            print(hier.root)
            """) == ["1\tnil\ttrue\t2.5\tcustom", "", "node /"])
    }

    @Test func requireHierAndModulesFromTheScriptFolder() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("luahier-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try "return { greet = function(n) return 'hello ' .. n end }".write(
            to: folder.appendingPathComponent("helper.lua"), atomically: true, encoding: .utf8)
        try """
            local h = require "hier"
            local helper = require "helper"
            print(h == hier, helper.greet(arg[1]), select("#", ...), arg[0]:match("main.lua$") ~= nil)
            """.write(to: folder.appendingPathComponent("main.lua"), atomically: true, encoding: .utf8)
        let f = try Fixture()
        try f.hierarchy.run(file: folder.appendingPathComponent("main.lua").path, arguments: ["world", "2"])
        #expect(f.printed == ["true\thello world\t2\ttrue"])
    }

    @Test func aMissingFileIsAClearError() throws {
        let f = try Fixture()
        do {
            try f.hierarchy.run(file: "/no/such/file.lua")
            Issue.record("expected a failure")
        } catch {
            #expect(error.message.contains("cannot open /no/such/file.lua"))
        }
    }

    @Test func binaryChunksAreRefused() throws {
        let f = try Fixture()
        let error = try #require(f.failure("\u{1B}Lua"))
        #expect(error.message.contains("binary"))
    }
}

/// The documented Swift lines, compiled and run as written there.
@Suite("Docs: Swift forms of publishing, safety, alerts, tools")
struct ReadmeSwiftTests {
    @Test func theSnippetRunsAsDocumented() throws {
        let f = try Fixture()
        let hierarchy = f.hierarchy
        let feed = try hierarchy.makeNode(at: "/app/feed")
        var repaints = 0
        feed.subscribe(.type("ThemeChanged")) { _ in repaints += 1 }
        let published = try hierarchy.publish(.event("ThemeChanged"), at: "/app", to: .last)
        #expect(published.delivered == 1 && repaints == 1)
        feed.declareTriggers(["Refresh"])
        hierarchy.safety = .strict
        hierarchy.alertPresenter = { alert in alert.recovery.first }
        hierarchy.detachedPolicy = .presenter
        feed.handleAlertErrors()
        let alert = try hierarchy.report(.map(["title": "T", "recovery": ["Retry", "Cancel"]]), at: "/app/feed")
        #expect(alert.choice == "Retry")
        #expect(hierarchy.check().map(\.code) == [.requireExplicitResponders])
        #expect(hierarchy.describeTree().text().contains("└── feed  triggers{Refresh}"))
    }

    /// Results are plain `Sendable` data: an outcome, a presented error and a script error
    /// cross to another task (this failed to compile: "non-Sendable type 'Outcome'").
    @Test func resultsCrossTasks() async throws {
        let fixture = try Fixture("""
            hier.root:child("a"):receiveEvent(function(e) return {type = "Seen", n = e.n} end)
            hier.root:child("a"):reportError("boom")
            """)
        let outcome = try fixture.hierarchy.trigger(["type": "Tap", "n": 3], at: "/a")
        let presented = try #require(fixture.presented.first)
        let failure = fixture.failure("error('bad')")
        let received = await Task.detached { () -> (Outcome, PresentedError, ScriptError?) in
            (outcome, presented, failure)
        }.value
        #expect(received.0 == outcome && received.0.value["n"] == 3)
        #expect(received.1 == presented && received.1.reportedAt == "/a")
        #expect(received.2?.message == "bad")
    }
}

/// Typed Swift responders, as the seeds register them (`handleError(MyError.self) { ... }`), and
/// the `ValueDecoder` they decode with.
@Suite struct TypedResponderTests {
    struct PaymentDeclined: Decodable, Equatable {
        let type: String
        let message: String
        let amount: Int
        let retry: Bool?
    }

    struct Tap: Decodable {
        let type: String
        let x: Double
        let tags: [String]
    }

    @Test func aTypedResponderGetsTheDecodedValueAndPassesWhatDoesNotDecode() throws {
        let fixture = try Fixture("""
            local checkout = hier.root:child("checkout")
            checkout:receiveError(function(e) e.amount = e.amount or nil return "notHandled" end)
            """)
        let checkout = try #require(try fixture.hierarchy.node(at: "/checkout"))
        var declined: [PaymentDeclined] = []
        checkout.handleError(PaymentDeclined.self) { error in declined.append(error) }
        // An amount sent as 500.0 decodes into an Int, as the rules read it.
        let handled = try fixture.hierarchy.report(
            ["type": "PaymentDeclined", "message": "card declined", "amount": 500.0], at: checkout)
        #expect(handled.status == .handled && handled.responder?.index == 2)
        #expect(declined == [PaymentDeclined(type: "PaymentDeclined", message: "card declined", amount: 500, retry: nil)])
        // No amount: it does not decode, so the typed responder is passed as a filter passes.
        let passed = try fixture.hierarchy.report(["type": "PaymentDeclined", "message": "no amount"], at: checkout)
        #expect(passed.status == .unhandled && declined.count == 1)
    }

    @Test func typedReceiveAndCatchChainOnTheSameNode() throws {
        let fixture = try Fixture()
        let node = try fixture.hierarchy.root.child("canvas")
        var seen: [Double] = []
        node.receiveEvent(Tap.self) { tap in
            seen.append(tap.x)
            return tap.tags.contains("stop") ? .handled : .notHandled
        }.catchError(PaymentDeclined.self) { declined in .event("ShowDeclined", ["amount": .int(Int64(declined.amount))]) }
        #expect(try fixture.hierarchy.trigger(["type": "Tap", "x": 2, "tags": ["stop"]], at: node).status == .handled)
        #expect(try fixture.hierarchy.trigger(["type": "Tap", "x": 3.5, "tags": []], at: node).status == .unhandled)
        #expect(try fixture.hierarchy.trigger(["type": "Tap", "x": "not a number", "tags": []], at: node).status == .unhandled)
        #expect(seen == [2, 3.5])
        let caught = try fixture.hierarchy.report(["type": "PaymentDeclined", "message": "m", "amount": 7], at: node)
        #expect(caught.kind == .event && caught.value.typeName == "ShowDeclined" && caught.value["amount"] == 7)
    }

    @Test func theDecoderReadsNumbersAsTheRulesDo() throws {
        struct Row: Decodable, Equatable {
            let id: Int64
            let ratio: Float
            let small: UInt8
            let nested: [[Int]]
            let note: String?
        }
        let row = try Value.map(["id": 42.0, "ratio": 1, "small": 255, "nested": [[1, 2], []], "note": nil]).decoded(as: Row.self)
        #expect(row == Row(id: 42, ratio: 1, small: 255, nested: [[1, 2], []], note: nil))
        #expect(throws: DecodingError.self) { try Value.map(["id": 42.5, "ratio": 1, "small": 1, "nested": []]).decoded(as: Row.self) }
        #expect(throws: DecodingError.self) { try Value.map(["id": 1, "ratio": 1, "small": 256, "nested": []]).decoded(as: Row.self) }
        #expect(try Value.array([1, "x"]).decoded(as: [Value].self) == [1, "x"])
    }

    @Test func decodingErrorsNameThePathToTheField() throws {
        struct Inner: Decodable { let n: Int }
        struct Outer: Decodable {
            let inner: Inner
            let list: [Int]
            let note: String?
        }
        func path(of value: Value) -> [String] {
            let context: DecodingError.Context
            switch Result(catching: { try value.decoded(as: Outer.self) }) {
            case .success: return ["decoded"]
            case .failure(DecodingError.typeMismatch(_, let found)), .failure(DecodingError.keyNotFound(_, let found)):
                context = found
            case .failure: return ["another error"]
            }
            return context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }
        }
        #expect(path(of: ["inner": ["n": "x"], "list": []]) == ["inner", "n"])
        #expect(path(of: ["inner": [:], "list": []]) == ["inner"])
        #expect(path(of: ["inner": ["n": 1], "list": [1, "x"]]) == ["list", "1"])
        // An optional field that is there must still be of its type; nil is as absent.
        #expect(path(of: ["inner": ["n": 1], "list": [], "note": 5]) == ["note"])
        #expect(path(of: ["inner": ["n": 1], "list": [], "note": nil]) == ["decoded"])
    }

    /// Counts its decodings (one test reads it, on one thread).
    struct CountedTap: Decodable {
        nonisolated(unsafe) static var decodings = 0
        let x: Int
        init(from decoder: any Decoder) throws {
            Self.decodings += 1
            x = try decoder.container(keyedBy: CodingKeys.self).decode(Int.self, forKey: .x)
        }
        enum CodingKeys: String, CodingKey { case x }
    }

    /// A class: each responder gets an instance of its own.
    final class TapObject: Decodable {
        nonisolated(unsafe) static var decodings = 0
        var x: Int
        init(from decoder: any Decoder) throws {
            Self.decodings += 1
            x = try decoder.container(keyedBy: CodingKeys.self).decode(Int.self, forKey: .x)
        }
        enum CodingKeys: String, CodingKey { case x }
    }

    @Test func typedRespondersOfOneDispatchDecodeItsValueOnce() throws {
        let fixture = try Fixture()
        var node = fixture.hierarchy.root
        var seen: [Int] = []
        for level in 1...3 {
            node = try node.child("n\(level)")
            node.receiveEvent(CountedTap.self) { tap in
                seen.append(tap.x)
                return .notHandled
            }
        }
        CountedTap.decodings = 0
        #expect(try fixture.hierarchy.trigger(["type": "Tap", "x": 1], at: node).status == .unhandled)
        #expect(seen == [1, 1, 1] && CountedTap.decodings == 1)
        // The next dispatch decodes its own value, even an equal one.
        #expect(try fixture.hierarchy.trigger(["type": "Tap", "x": 1], at: node).status == .unhandled)
        #expect(seen.count == 6 && CountedTap.decodings == 2)
        // A replacement is another value: the responders after it decode that one.
        try #require(try fixture.hierarchy.node(at: "/n1/n2")).receiveEvent(.any) { _ in .replace(["type": "Tap", "x": 2]) }
        _ = try fixture.hierarchy.trigger(["type": "Tap", "x": 1], at: node)
        #expect(Array(seen.suffix(3)) == [1, 1, 2] && CountedTap.decodings == 4)
    }

    @Test func typedRespondersOfAClassTypeEachGetTheirOwnInstance() throws {
        let fixture = try Fixture()
        let parent = try fixture.hierarchy.root.child("parent")
        let child = try parent.child("child")
        child.receiveEvent(TapObject.self) { tap in
            tap.x += 10
            return .notHandled
        }
        var seen: [Int] = []
        parent.receiveEvent(TapObject.self) { tap in
            seen.append(tap.x)
            return .notHandled
        }
        TapObject.decodings = 0
        _ = try fixture.hierarchy.trigger(["type": "Tap", "x": 1], at: child)
        #expect(seen == [1] && TapObject.decodings == 2)
    }
}
