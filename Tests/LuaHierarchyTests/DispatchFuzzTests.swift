import Foundation
import Testing
@testable import LuaHierarchy

/// A small deterministic generator (SplitMix64), so a failing case is reproducible from its
/// seed. `FUZZ_CASES=N` runs N cases instead of the CI slice; `FUZZ_SEED=S` starts elsewhere.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// What a generated responder does when called.
enum Behaviour: CaseIterable {
    case handled, notHandled, replace, raise, bad
}

struct GeneratedResponder {
    var kind: ResponderKind
    var filter: [String]?
    var behaviour: Behaviour
    /// The type a replacement or a raised error has.
    var produces: String
    var inSwift: Bool
}

/// The dispatch rules of contract §4, written again as plainly as possible: the reference the
/// engine's outcomes are checked against.
enum ReferenceModel {
    struct Result: Equatable, CustomStringConvertible {
        var status: String
        var kind: Domain
        var type: String
        var by: String?
        var index: Int?
        var description: String { "\(status) \(kind) \(type) by \(by ?? "-") #\(index.map(String.init) ?? "-")" }
    }

    static func run(_ chain: [(path: String, responders: [GeneratedResponder])], start: (Domain, String)) -> Result {
        var steps: [String] = []
        return run(chain, start: start, steps: &steps)
    }

    /// The same, with the trace's steps ("PATH#INDEX INPUT -> RESULT", as
    /// TraceStep.resultDescription words the result) appended to `steps`.
    static func run(_ chain: [(path: String, responders: [GeneratedResponder])], start: (Domain, String),
                    steps: inout [String]) -> Result {
        var (domain, type) = start
        for (path, responders) in chain {
            for (offset, responder) in responders.enumerated() {
                guard responder.kind.domain == domain else { continue }
                if let filter = responder.filter, !filter.contains(type) { continue }
                let handled = Result(status: "handled", kind: domain, type: type, by: path, index: offset + 1)
                let step = "\(path)#\(offset + 1) \(type) -> "
                switch (responder.kind, responder.behaviour) {
                case (_, .raise):
                    (domain, type) = (.error, responder.produces)
                    steps.append(step + "raised \(type)")
                case (.handleEvent, _), (.handleError, _):
                    steps.append(step + "handled")
                    return handled
                case (.receiveEvent, .handled), (.receiveError, .handled):
                    steps.append(step + "handled")
                    return handled
                case (.receiveEvent, .notHandled), (.receiveError, .notHandled):
                    steps.append(step + "notHandled")
                    continue
                case (.receiveEvent, .replace), (.receiveError, .replace), (.transformEvent, .replace),
                    (.transformError, .replace):
                    type = responder.produces
                    steps.append(step + "\(domain == .event ? "event" : "error") \(type)")
                case (.catchError, .replace):
                    (domain, type) = (.event, responder.produces)
                    steps.append(step + "event \(type)")
                default:
                    (domain, type) = (.error, "ResponderContractError")
                    steps.append(step + "raised \(type)")
                }
            }
        }
        return Result(status: "unhandled", kind: domain, type: type, by: nil, index: nil)
    }
}

@Suite("Fuzzing the dispatcher against a reference model")
struct DispatchFuzzTests {
    static let environment = ProcessInfo.processInfo.environment
    static let caseCount = Int(environment["FUZZ_CASES"] ?? "") ?? 300
    static let firstSeed = UInt64(environment["FUZZ_SEED"] ?? "") ?? 1

    static let types = ["A", "B", "C"]

    /// A random chain. `runs`: most responders plain receives that pass the value by, so the
    /// chain has runs of them (walk.lua), whose trace steps are kept apart from other steps.
    static func generateChain(_ random: inout SplitMix64, runs: Bool = false) -> [(path: String, responders: [GeneratedResponder])] {
        let depth = Int.random(in: 1...4, using: &random)
        var paths: [String] = []
        var path = ""
        for level in 1...depth {
            path += "/n\(level)"
            paths.append(path)
        }
        return paths.reversed().map { path in
            let responders = (0..<Int.random(in: 0...4, using: &random)).map { _ in
                if runs, Int.random(in: 0..<3, using: &random) > 0 {
                    return GeneratedResponder(
                        kind: Bool.random(using: &random) ? .receiveEvent : .receiveError, filter: nil,
                        behaviour: Int.random(in: 0..<4, using: &random) > 0 ? .notHandled : Behaviour.allCases.randomElement(using: &random)!,
                        produces: types.randomElement(using: &random)!, inSwift: Int.random(in: 0..<4, using: &random) == 0)
                }
                return GeneratedResponder(
                    kind: ResponderKind.allCases.filter { $0 != .handleAlertErrors }.randomElement(using: &random)!,
                    filter: Bool.random(using: &random) ? nil : Array(types.shuffled(using: &random).prefix(Int.random(in: 1...2, using: &random))),
                    behaviour: Behaviour.allCases.randomElement(using: &random)!,
                    produces: types.randomElement(using: &random)!,
                    inSwift: Int.random(in: 0..<4, using: &random) == 0)
            }
            return (path, responders)
        }
    }

    /// The Lua source of a responder's body.
    static func luaBody(_ responder: GeneratedResponder) -> String {
        switch responder.behaviour {
        case .handled: return "return 'handled'"
        case .notHandled: return "return 'notHandled'"
        case .replace: return "return {type = '\(responder.produces)', by = 'lua'}"
        case .raise: return "error({type = '\(responder.produces)', message = 'raised'})"
        case .bad: return "return 42"
        }
    }

    struct Raised: ReportableError {
        var errorType: String
        var errorMessage: String { "raised" }
    }

    static func register(_ responder: GeneratedResponder, on node: Node) {
        let filter: TypeFilter = responder.filter.map { .types(Set($0)) } ?? .any
        let body: (Value) throws -> ReceiveResult = { _ in
            switch responder.behaviour {
            case .handled: return .handled
            case .notHandled: return .notHandled
            case .replace: return .replace(.map(["type": .string(responder.produces), "by": "swift"]))
            case .raise: throw Raised(errorType: responder.produces)
            case .bad: return .replace(42)
            }
        }
        switch responder.kind {
        case .receiveEvent: node.receiveEvent(filter, body)
        case .receiveError: node.receiveError(filter, body)
        case .handleEvent: node.handleEvent(filter) { _ = try body($0) }
        case .handleError: node.handleError(filter) { _ = try body($0) }
        case .transformEvent, .transformError, .catchError:
            let transform: (Value) throws -> Value = { value in
                switch try body(value) {
                case .handled: return "handled"
                case .notHandled: return "notHandled"
                case .replace(let replacement): return replacement
                }
            }
            switch responder.kind {
            case .transformEvent: node.transformEvent(filter, transform)
            case .transformError: node.transformError(filter, transform)
            default: node.catchError(filter, transform)
            }
        case .handleAlertErrors:
            Issue.record("alert responders are tested in AlertTests, not generated")
        }
    }

    /// Registers the generated chain's responders, in Lua or Swift as generated, from the root
    /// down so registration order on each node is the generated one.
    static func register(_ chain: [(path: String, responders: [GeneratedResponder])], in f: Fixture) throws {
        for (path, responders) in chain.reversed() {
            let node = try f.hierarchy.makeNode(at: path)
            for responder in responders {
                if responder.inSwift {
                    register(responder, on: node)
                } else {
                    let filter = responder.filter.map { "{" + $0.map { "'\($0)'" }.joined(separator: ", ") + "}, " } ?? ""
                    try f.lua("hier.node('\(path)'):\(responder.kind.rawValue)(\(filter)function(v) \(luaBody(responder)) end)")
                }
            }
        }
    }

    /// Random chains, and chains made mostly of runs of plain receives (`runs`).
    @Test(arguments: [false, true])
    func randomChainsMatchTheReferenceModel(runs: Bool) throws {
        for seed in Self.firstSeed..<(Self.firstSeed + UInt64(Self.caseCount)) {
            var random = SplitMix64(state: seed)
            let chain = Self.generateChain(&random, runs: runs)
            let start: (Domain, String) = (Bool.random(using: &random) ? .event : .error, Self.types.randomElement(using: &random)!)
            let expected = ReferenceModel.run(chain, start: start)

            let f = try Fixture()
            var dispatches = 0
            f.hierarchy.onDispatch = { _, depth in if depth == 1 { dispatches += 1 } }
            try Self.register(chain, in: f)
            let leaf = chain[0].path
            let value: Value = start.0 == .event ? .event(start.1) : .error(start.1, message: "start")
            // Three times: the first makes the plan, the others go along it. All three must
            // match the model.
            var actual: [ReferenceModel.Result] = []
            for _ in 1...3 {
                let outcome = try start.0 == .event ? f.hierarchy.trigger(value, at: leaf) : f.hierarchy.report(value, at: leaf)
                actual.append(ReferenceModel.Result(
                    status: outcome.status.rawValue, kind: outcome.kind, type: outcome.value.typeName ?? "?",
                    by: outcome.by, index: outcome.responder?.index))
            }
            #expect(actual == [expected, expected, expected], "seed \(seed): \(chain.map { ($0.path, $0.responders.map { "\($0.kind.rawValue)\($0.filter ?? [])/\($0.behaviour)->\($0.produces)\($0.inSwift ? "(swift)" : "")" }) })")
            #expect(dispatches == 3, "seed \(seed): exactly one outcome per dispatch")
            #expect(f.hierarchy.engineCounts.plans == 1, "seed \(seed): the last two went along the kept plan")
            #expect(f.hierarchy.luaStackTop == 0, "seed \(seed)")
            // Traced by path and in full, twice each (the second may take a record its plan
            // kept): the steps the model takes, with the same outcome.
            var steps: [String] = []
            _ = ReferenceModel.run(chain, start: start, steps: &steps)
            var traces: [[String]] = []
            for level in [TraceLevel.path, .path, .full, .full] {
                f.hierarchy.traceLevel = level
                let outcome = try start.0 == .event ? f.hierarchy.trigger(value, at: leaf) : f.hierarchy.report(value, at: leaf)
                traces.append((outcome.trace ?? []).map { "\($0.node)#\($0.responder.index) \($0.input) -> \($0.resultDescription)" })
                #expect(outcome.status.rawValue == expected.status && outcome.value.typeName == expected.type, "seed \(seed), traced \(level)")
            }
            #expect(traces == Array(repeating: steps, count: 4), "seed \(seed): traces \(traces), the model's \(steps)")
            if actual != [expected, expected, expected] || traces != Array(repeating: steps, count: 4) { break }
        }
    }

    static func randomValue(_ random: inout SplitMix64, depth: Int = 0) -> Value {
        switch Int.random(in: 0..<(depth > 3 ? 6 : 8), using: &random) {
        case 0: return .bool(Bool.random(using: &random))
        case 1: return .int(Int64.random(in: Int64.min...Int64.max, using: &random))
        case 2: return .double(Double.random(in: -1e12...1e12, using: &random))
        case 3:
            let bytes = (0..<Int.random(in: 0...12, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            return String(validating: bytes, as: UTF8.self).map(Value.string) ?? .bytes(bytes)
        case 4: return .string("nul\u{0}inside \u{1F600}")
        case 5: return .int(Int64.random(in: -3...3, using: &random))
        case 6:
            return .array((0..<Int.random(in: 1...4, using: &random)).map { _ in randomValue(&random, depth: depth + 1) })
        default:
            var map: [String: Value] = [:]
            for index in 0..<Int.random(in: 0...4, using: &random) { map["k\(index)"] = randomValue(&random, depth: depth + 1) }
            return .map(map)
        }
    }

    @Test func randomPayloadsRoundTripThroughLua() throws {
        let f = try Fixture()
        try f.lua("hier.root:child('echo'):transformEvent(function(e) e.seen = true return e end)")
        var received: Value?
        try f.hierarchy.node(at: "/")!.receiveEvent { value in received = value; return .handled }
        for seed in Self.firstSeed..<(Self.firstSeed + UInt64(Self.caseCount)) {
            var random = SplitMix64(state: seed)
            let payload = Self.randomValue(&random)
            _ = try f.hierarchy.trigger(.event("Echo", ["payload": payload]), at: "/echo")
            #expect(received?["payload"] == payload, "seed \(seed)")
            #expect(received?["seen"] == true)
            #expect(f.hierarchy.luaStackTop == 0)
            if received?["payload"] != payload { break }
        }
    }
}
