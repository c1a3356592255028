import Foundation
import Testing
@testable import LuaHierarchy

/// Static `explain` against the dispatch it describes (contract §9): `not offered` is a
/// definite verdict, so no run may offer the value to a responder static explain calls so.
/// Random chains from the dispatcher's fuzzer (Lua and Swift responders that handle, pass,
/// replace, raise or break their contract); `FUZZ_CASES=N` and `FUZZ_SEED=S` as there.
@Suite("Static explain never calls an offered responder not offered")
struct ExplainDifferentialTests {
    static let caseCount = Int(DispatchFuzzTests.environment["FUZZ_CASES"] ?? "") ?? 200

    @Test func noResponderARunOffersTheValueIsNotOffered() throws {
        for seed in DispatchFuzzTests.firstSeed..<(DispatchFuzzTests.firstSeed + UInt64(Self.caseCount)) {
            var random = SplitMix64(state: seed)
            let chain = DispatchFuzzTests.generateChain(&random)
            let domain: Domain = Bool.random(using: &random) ? .event : .error
            let type = DispatchFuzzTests.types.randomElement(using: &random)!
            let f = try Fixture()
            try DispatchFuzzTests.register(chain, in: f)
            let leaf = try #require(try f.hierarchy.node(at: chain[0].path))
            let explanation = f.hierarchy.explain(domain, type: type, at: leaf)
            let value: Value = domain == .event ? .event(type) : .error(type, message: "start")
            let run = try f.hierarchy.drawDispatch(value, as: domain, at: leaf)
            let described = "seed \(seed): \(domain) \(type) along \(chain.map { ($0.path, $0.responders.map { "\($0.kind.rawValue)\($0.filter ?? [])/\($0.behaviour)->\($0.produces)\($0.inSwift ? "(swift)" : "")" }) })"
            var contradictions = 0
            for offered in run.drawing.steps {
                let step = explanation.steps.first { $0.node == offered.node && $0.index == offered.responder.index }
                #expect(step != nil, "\(described): \(offered.node) #\(offered.responder.index) is not in the explanation")
                if let step, step.verdict == .notOffered {
                    contradictions += 1
                    Issue.record("\(described): \(step.node) #\(step.index ?? 0) \(step.kind) is \"not offered (\(step.reason))\" but the run offers it the value\n\(explanation.lines().joined(separator: "\n"))")
                }
            }
            if contradictions > 0 { break }
        }
    }

    /// The differential would pass on an explain that says `maybe` everywhere: the verdicts
    /// that can be known are still given.
    @Test func definiteVerdictsStayWhereNoCodeRunsBefore() throws {
        let f = try Fixture(
            """
            local a = hier.root:child("a")
            a:handleError(function(err) end)
            a:receiveEvent("Other", function(e) return "handled" end)
            a:handleEvent("Tap", function(e) end)
            a:handleError(function(err) end)
            """)
        let node = try #require(try f.hierarchy.node(at: "/a"))
        let steps = f.hierarchy.explain(.event, type: "Tap", at: node).steps
        #expect(steps.map(\.verdict) == [.notOffered, .notOffered, .offered, .maybe])
        #expect(steps.map(\.reason) == ["domain", "filter", "handles", "raised"])
    }

    private struct Payment: Decodable { var amount: Int }

    /// A typed Swift handle passes a value that does not decode as its type untouched, so it
    /// does not make the responders after it unreachable.
    @Test func aTypedSwiftHandleMayLetTheValuePass() throws {
        let f = try Fixture()
        let node = try f.hierarchy.makeNode(at: "/a")
        node.handleEvent(Payment.self) { _ in }
        try f.lua("hier.node('/a'):handleEvent(function(e) end)")
        let steps = f.hierarchy.explain(.event, type: "Tap", at: node).steps
        #expect(steps.map(\.verdict) == [.maybe, .offered])
        #expect(steps.first?.detail == "it handles the event Tap: the dispatch ends here, if the value decodes as its Swift type")
        let run = try f.hierarchy.drawDispatch(.event("Tap"), as: .event, at: node)
        #expect(run.outcome.responder?.index == 2)
    }
}
