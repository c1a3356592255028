import Testing
@testable import LuaHierarchy

/// Dispatches started from Swift, along the plans the engine keeps per origin (ChainPlan.swift,
/// LuaEngine.swift): the first dispatch from a node makes its plan, and later ones go along it
/// until the tree's chains change. Every rule must hold either way; each test checks how many
/// plans were made (`engineCounts.plans`).
@Suite("Kept chain plans, from Swift")
struct PlanTests {
    /// `count` dispatches of `event` at `node`, with what each returned.
    private func trigger(_ f: Fixture, _ event: Value, at node: Node, times count: Int) throws -> [Outcome] {
        try (0..<count).map { _ in try f.hierarchy.trigger(event, at: node) }
    }

    private func summary(_ outcome: Outcome) -> String {
        let index = outcome.responder?.index ?? 0
        return "\(outcome.status) \(outcome.kind) \(outcome.value.typeName ?? "?") by \(outcome.by ?? "-") #\(index) at \(outcome.at)"
    }

    @Test func thePlanIsMadeAtTheFirstDispatchAndUsedFromThen() throws {
        let f = try Fixture()
        let leaf = try f.hierarchy.makeNode(at: "/a/b")
        var calls: [String] = []
        leaf.receiveEvent { _ in calls.append("b"); return .notHandled }
        try f.hierarchy.makeNode(at: "/a").receiveEvent(.type("Tap")) { _ in calls.append("a"); return .handled }
        let outcomes = try trigger(f, .event("Tap"), at: leaf, times: 4)
        #expect(outcomes.map(summary) == Array(repeating: "handled event Tap by /a #1 at /a/b", count: 4))
        #expect(calls == Array(repeating: ["b", "a"], count: 4).flatMap { $0 })
        #expect(f.hierarchy.engineCounts == (4, 1))
        #expect(f.hierarchy.bridgeEngine.keptPlans == 1)
    }

    @Test func everyChangeToTheChainIsSeenByTheNextDispatch() throws {
        let f = try Fixture()
        let a = try f.hierarchy.makeNode(at: "/a")
        let leaf = try a.child("leaf")
        let other = try f.hierarchy.makeNode(at: "/other")
        other.receiveEvent { _ in .handled }
        _ = try trigger(f, .event("Tap"), at: leaf, times: 2)
        #expect(f.hierarchy.engineCounts.plans == 1)

        // Added: the next dispatch sees it.
        let handle = a.receiveEvent { _ in .handled }
        #expect(summary(try f.hierarchy.trigger(.event("Tap"), at: leaf)) == "handled event Tap by /a #1 at /a/leaf")
        // Removed: the next dispatch does not call it.
        handle.remove()
        #expect(summary(try f.hierarchy.trigger(.event("Tap"), at: leaf)) == "unhandled event Tap by - #0 at /a/leaf")
        // Moved under another parent: the next dispatch goes up the new chain.
        try a.move(to: other)
        let moved = try trigger(f, .event("Tap"), at: leaf, times: 3)
        #expect(moved.map(summary) == Array(repeating: "handled event Tap by /other #1 at /other/a/leaf", count: 3))
        // Removed from the tree: the chain ends at the detached top.
        a.remove()
        let detached = try trigger(f, .event("Tap"), at: leaf, times: 3)
        #expect(detached.map(\.status) == [.detached, .detached, .detached])
        // Each change made the plan stale: the next dispatch made a new one.
        #expect(f.hierarchy.engineCounts.plans == 1 + 4)
    }

    @Test func aWalkKeepsItsSnapshotWhateverItsRespondersChange() throws {
        let f = try Fixture()
        let top = try f.hierarchy.makeNode(at: "/top")
        let middle = try top.child("middle")
        let leaf = try middle.child("leaf")
        var calls: [String] = []
        var added: ResponderHandle?
        var laterHandle: ResponderHandle?
        leaf.receiveEvent { event in
            calls.append("leaf")
            if event["round"] == 3 {
                // Mid-walk: add a responder below, remove one above, cut the chain above.
                added = middle.receiveEvent { _ in calls.append("added"); return .handled }
                laterHandle?.remove()
                middle.remove()
            }
            return .notHandled
        }
        laterHandle = middle.receiveEvent { _ in calls.append("removed later"); return .notHandled }
        top.receiveEvent { _ in calls.append("top"); return .notHandled }
        for round in 1...3 {
            let outcome = try f.hierarchy.trigger(.event("Tap", ["round": .int(Int64(round))]), at: leaf)
            #expect(outcome.status == .unhandled)
        }
        // Round 3 went along the plan: the added responder waits for the next dispatch, the
        // removed one is skipped, and the cut chain is still walked to its snapshot's end.
        #expect(f.hierarchy.engineCounts == (3, 1))
        #expect(calls.suffix(2) == ["leaf", "top"])
        #expect(calls.count == 3 + 3 + 2)
        let after = try f.hierarchy.trigger(.event("Tap"), at: leaf)
        #expect(summary(after) == "handled event Tap by middle #1 at middle/leaf")
        #expect(added != nil)
    }

    @Test func everyKindOfAnswerContinuesAsOnTheBuiltChain() throws {
        struct Broken: ReportableError {
            var errorType: String { "Broken" }
            var errorMessage: String { "thrown" }
        }
        let f = try Fixture()
        let leaf = try f.hierarchy.makeNode(at: "/a/b/c")
        let b = try #require(leaf.parent)
        try f.lua("""
            hier.node("/a/b/c"):receiveEvent("Lua", function(e) return {type = "FromLua"} end)
            hier.node("/a"):receiveEvent("FromLua", function(e) return "handled" end)
            """)
        b.receiveEvent(.type("Replace")) { _ in .replace(.event("Replaced")) }
        b.receiveEvent(.type("Throw")) { _ in throw Broken() }
        b.receiveEvent(.type("Bad")) { _ in .replace(42) }
        b.catchError(.type("Broken")) { _ in .event("Caught") }
        b.handleEvent(.type("Caught")) { _ in }
        b.receiveError { _ in .notHandled }
        let cases: [(Value, String)] = [
            (.event("Replace"), "unhandled event Replaced by - #0 at /a/b/c"),
            (.event("Throw"), "handled event Caught by /a/b #5 at /a/b/c"),
            (.event("Bad"), "unhandled error ResponderContractError by - #0 at /a/b/c"),
            (.event("Lua"), "handled event FromLua by /a #1 at /a/b/c"),
        ]
        for (event, expected) in cases {
            let outcomes = try trigger(f, event, at: leaf, times: 3)
            #expect(outcomes.map(summary) == [expected, expected, expected], "\(event)")
        }
        // The error reached the presenter each time, with where it was made.
        #expect(f.presented.count == 3)
        let places = f.presented.map { $0.error["where"]?.stringValue ?? "" }
        #expect(places.allSatisfy { $0.hasPrefix("LuaHierarchyTests/PlanTests.swift:") }, "\(places)")
        // One plan serves every event from the leaf.
        #expect(f.hierarchy.engineCounts.plans == 1)
    }

    @Test func errorsGoAlongThePlanToo() throws {
        let f = try Fixture()
        let leaf = try f.hierarchy.makeNode(at: "/x/y")
        var seen: [String] = []
        leaf.receiveError { error in seen.append(error.typeName ?? "?"); return .notHandled }
        leaf.receiveEvent { _ in Issue.record("an event responder saw an error"); return .handled }
        let outcomes = try (1...3).map { _ in try f.hierarchy.report(.error("Disk", message: "full"), at: leaf) }
        #expect(outcomes.map(summary) == Array(repeating: "unhandled error Disk by - #0 at /x/y", count: 3))
        #expect(seen == ["Disk", "Disk", "Disk"])
        #expect(f.presented.map(\.reportedAt) == ["/x/y", "/x/y", "/x/y"])
        #expect(f.hierarchy.engineCounts == (3, 1))
    }

    @Test func pathTracesAreTheSameAlongThePlan() throws {
        let f = try Fixture()
        f.hierarchy.traceLevel = .path
        let leaf = try f.hierarchy.makeNode(at: "/a/b")
        leaf.receiveEvent { _ in .notHandled }
        try f.hierarchy.makeNode(at: "/a").receiveEvent { _ in .handled }
        let outcomes = try trigger(f, .event("Tap"), at: leaf, times: 3)
        let traces = outcomes.map { $0.trace?.map { "\($0.node) #\($0.responder.index) \($0.result)" } }
        #expect(traces[0]?.count == 2)
        #expect(traces[1] == traces[0] && traces[2] == traces[0])
        #expect(f.hierarchy.engineCounts.plans == 1)
        // Full tracing records the values around replacements, along its own plan.
        f.hierarchy.traceLevel = .full
        let full = try trigger(f, .event("Tap"), at: leaf, times: 3)
        #expect(full.map { $0.trace?.count } == [2, 2, 2])
        #expect(f.hierarchy.engineCounts.plans == 2)
    }

    @Test func nestedDispatchesAndTheDepthLimitHoldAlongPlans() throws {
        let f = try Fixture()
        f.hierarchy.depthLimit = 5
        let leaf = try f.hierarchy.makeNode(at: "/a")
        var depths: [Int] = []
        var level = 0
        leaf.receiveEvent { [unowned hierarchy = f.hierarchy] _ in
            level += 1
            defer { level -= 1 }
            depths.append(level)
            if level < 8 { _ = try hierarchy.trigger(.event("Again"), at: leaf) }
            return .handled
        }
        for _ in 1...3 {
            depths.removeAll()
            #expect(throws: Never.self) { _ = try f.hierarchy.trigger(.event("Tap"), at: leaf) }
            // Five levels ran; the sixth trigger threw DispatchDepthExceeded in the fifth,
            // which its responder reported as an error.
            #expect(depths == [1, 2, 3, 4, 5])
        }
        #expect(f.hierarchy.engineCounts.plans == 1)
    }

    @Test func longChainsGetPlansToo() throws {
        let f = try Fixture()
        var node = f.hierarchy.root
        for level in 1...1_000 { node = try node.child("n\(level)") }
        var calls = 0
        f.hierarchy.root.receiveEvent { _ in calls += 1; return .handled }
        let outcomes = try trigger(f, .event("Tap"), at: node, times: 3)
        #expect(outcomes.allSatisfy { $0.status == .handled && $0.by == "/" })
        #expect(calls == 3)
        #expect(f.hierarchy.engineCounts == (3, 1))
    }

    @Test func manyOriginsEachGetTheirOwnChain() throws {
        let f = try Fixture()
        let parent = try f.hierarchy.makeNode(at: "/many")
        let nodes = try (0..<(LuaEngine.maxPlans + 300)).map { index in
            let node = try parent.child("n\(index)")
            node.receiveEvent { _ in .handled }
            return node
        }
        for _ in 1...3 {
            for node in nodes {
                let outcome = try f.hierarchy.trigger(.event("Tap"), at: node)
                #expect(outcome.by == node.path, "a plan of another node was used")
            }
        }
        #expect(f.hierarchy.bridgeEngine.keptPlans == LuaEngine.maxPlans)
    }

    @Test func aRemovedSubtreeIsNotKeptAliveByItsPlan() throws {
        let f = try Fixture()
        weak var removed: Node?
        do {
            let node = try f.hierarchy.makeNode(at: "/gone/leaf")
            node.receiveEvent { _ in .notHandled }
            _ = try trigger(f, .event("Tap"), at: node, times: 2)
            #expect(f.hierarchy.bridgeEngine.keptPlans == 1)
            removed = node
            try f.hierarchy.node(at: "/gone")?.remove()
        }
        // A plan holds no node (paths are strings): nothing holds the removed subtree.
        #expect(removed == nil)
        // The next dispatch, from anywhere, lets go of the plans the change made stale.
        _ = try f.hierarchy.trigger(.event("Tap"), at: f.hierarchy.root)
        #expect(f.hierarchy.bridgeEngine.keptPlans == 1)
    }

    @Test func declaredTypesAreCheckedAlongPlans() throws {
        var warnings: [SafetyWarning] = []
        let f = try Fixture()
        _ = try f.hierarchy.makeNode(at: "/app")
        try f.lua(#"hier.node("/app"):triggers{"Known"}"#)
        f.hierarchy.safety = .relaxed
        f.hierarchy.onSafetyWarning = { warnings.append($0) }
        let leaf = try f.hierarchy.makeNode(at: "/app/leaf")
        leaf.receiveEvent { _ in .notHandled }
        _ = try trigger(f, .event("Unknown"), at: leaf, times: 3)
        #expect(warnings.count == 1)
        #expect(f.hierarchy.engineCounts == (3, 1))
    }
}
