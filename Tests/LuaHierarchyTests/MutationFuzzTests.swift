import Foundation
import Testing
@testable import LuaHierarchy

/// Fuzzing what responders and subscribers change *while* a dispatch or a publish runs
/// (contract §4 and §6): responders of every kind, in Lua and in Swift, remove and add
/// responders, remove and move nodes on and above the chain, and dispatch again from inside,
/// through every entry (Swift, Lua at top level, Lua and Swift nested, a `dispatch` input
/// line), with tracing and safety declarations on or off. Each case is checked against
/// `MutationModel`, which keeps the whole tree and says plainly what the contract says.
///
/// `MUTATION_CASES=N` runs N cases instead of the CI slice; `FUZZ_SEED=S` starts elsewhere
/// (tools/fuzz.sh runs both for longer).
@Suite("Fuzzing changes made during a dispatch or a publish")
struct MutationFuzzTests {
    static let caseCount = Int(ProcessInfo.processInfo.environment["MUTATION_CASES"] ?? "") ?? 400
    static let firstSeed = DispatchFuzzTests.firstSeed

    @Test func changesDuringADispatchMatchTheModel() throws {
        // Plans are kept and reused between dispatches: the fuzz must reach dispatches along a
        // kept plan, not only ones that made theirs.
        var dispatches = 0, plansMade = 0
        defer { #expect(plansMade < dispatches, "no dispatch went along a kept plan") }
        for seed in Self.firstSeed..<(Self.firstSeed + UInt64(Self.caseCount)) {
            var random = SplitMix64(state: seed)
            let world = MutationWorld.generate(&random)
            let engine = try MutationEngine(world)
            try engine.configure(&random)
            var model = MutationModel(world)
            var mismatch: String?
            for round in 0..<4 {
                let entry = MutationEngine.Entry.allCases.randomElement(using: &random)!
                let domain: Domain = Bool.random(using: &random) ? .event : .error
                let type = MutationWorld.types.randomElement(using: &random)!
                let origin = world.origin
                let pathBefore = model.path(of: origin)
                let expected = model.dispatch(from: origin, domain, type)
                let (used, actual) = try engine.dispatch(from: origin, domain, type, through: entry, modelPath: pathBefore)
                let compared = used == .inputLine ? expected.withoutIndex : expected
                let calls = engine.harness.calls
                if actual != compared || calls != model.calls || engine.presented != model.presented {
                    mismatch = """
                        seed \(seed) round \(round) through \(used), \(engine.configuration):
                          outcome  \(actual) expected \(compared)
                          calls    \(calls) expected \(model.calls)
                          presented \(engine.presented) expected \(model.presented)
                        \(world)
                        """
                    break
                }
            }
            dispatches += engine.fixture.hierarchy.engineCounts.dispatches
            plansMade += engine.fixture.hierarchy.engineCounts.plans
            #expect(mismatch == nil, "\(mismatch ?? "")")
            #expect(engine.fixture.hierarchy.luaStackTop == 0, "seed \(seed)")
            if mismatch != nil { break }
        }
    }

    @Test func changesDuringAPublishMatchTheModel() throws {
        for seed in Self.firstSeed..<(Self.firstSeed + UInt64(Self.caseCount)) {
            var random = SplitMix64(state: seed)
            let world = MutationWorld.generate(&random, subscribers: true)
            let engine = try MutationEngine(world)
            try engine.configure(&random)
            var model = MutationModel(world)
            var mismatch: String?
            for round in 0..<3 {
                let publisher = Int.random(in: 0..<world.nodes.count, using: &random)
                let scope = PublishScope.allCases.randomElement(using: &random)!
                let type = MutationWorld.types.randomElement(using: &random)!
                let fromLua = Bool.random(using: &random)
                let expected = model.publish(from: publisher, type, scope)
                let delivered = try engine.publish(from: publisher, type, scope, fromLua: fromLua)
                let calls = engine.harness.calls
                if delivered != expected || calls != model.calls || engine.presented != model.presented {
                    mismatch = """
                        seed \(seed) round \(round), \(engine.configuration): publish \(type) from \(world.nodes[publisher].name) to \(scope) \
                        (\(fromLua ? "Lua" : "Swift"))
                          delivered \(delivered) expected \(expected)
                          calls    \(calls) expected \(model.calls)
                          presented \(engine.presented) expected \(model.presented)
                        \(world)
                        """
                    break
                }
            }
            #expect(mismatch == nil, "\(mismatch ?? "")")
            if mismatch != nil { break }
        }
    }

    /// The hole the fuzz was built to find: a responder removed by a run of `receive*`
    /// responders before it, on the same node or below, must not be called.
    @Test func aResponderRemovedByAReceiveRunIsNotCalled() throws {
        let f = try Fixture()
        let output = try f.output("""
            local top = hier.root:child("t"); local hits = 0; local h2
            top:receiveEvent(function() h2:remove(); return "notHandled" end)
            h2 = top:handleEvent(function() hits = hits + 1 end)
            print(top:triggerEvent("E").status, hits)
            local c = top:child("c"); local h3
            c:receiveEvent(function() h3:remove(); return "notHandled" end)
            h3 = top:handleEvent(function() hits = hits + 1 end)
            print(c:triggerEvent("E").status, hits)
            """)
        #expect(output == ["unhandled\t0", "unhandled\t0"])
    }

    /// A subscriber whose node left the publisher's subtree during the publish is skipped.
    @Test func aSubscriberThatLeftTheSubtreeIsSkipped() throws {
        let f = try Fixture()
        let output = try f.output("""
            local a = hier.root:child("a"); local b = a:child("b"); local c = b:child("c")
            local got = {}
            b:subscribe("P", function() got[#got+1] = "b"; c:remove() end)
            c:subscribe("P", function() got[#got+1] = "c" end)
            print(a:publish("P", {to = "all"}), table.concat(got, ","))
            local x = a:child("x"); local y = x:child("y")
            x:subscribe("Q", function() got[#got+1] = "x"; y:moveTo(hier.root) end)
            y:subscribe("Q", function() got[#got+1] = "y" end)
            print(a:publish("Q", {to = "all"}), table.concat(got, ","))
            y:moveTo(x)
            print(a:publish("Q", {to = "all"}), table.concat(got, ","))
            """)
        #expect(output == ["1\tb", "1\tb,x", "1\tb,x,x"])
    }
}

// MARK: - The generated world

/// What a generated responder or subscriber does to the tree when it is called, once: the
/// first call does it, later calls do not (so the world stays small).
enum Mutation: CustomStringConvertible {
    case removeResponder(id: Int)
    case addResponder(MutationWorld.Spec)
    case removeNode(Int)
    case moveNode(Int, to: Int)
    case dispatch(at: Int, Domain, String)
    case removeSubscription(id: Int)
    case addSubscription(MutationWorld.Spec)

    var description: String {
        switch self {
        case .removeResponder(let id): "remove #\(id)"
        case .addResponder(let spec): "add \(spec)"
        case .removeNode(let node): "remove node \(node)"
        case .moveNode(let node, let parent): "move node \(node) under \(parent)"
        case .dispatch(let node, let domain, let type): "\(domain) \(type) at node \(node)"
        case .removeSubscription(let id): "unsubscribe #\(id)"
        case .addSubscription(let spec): "subscribe \(spec)"
        }
    }
}

/// A tree (a chain `n1/n2/...` with side nodes beside and above it), responders on its
/// nodes and, for publishing, subscriptions; each may carry mutations.
struct MutationWorld: CustomStringConvertible {
    static let types = ["A", "B", "C"]

    struct NodeSpec {
        var name: String
        var parent: Int?
    }

    struct Spec: CustomStringConvertible {
        var id: Int
        var node: Int
        /// Nil for a subscription.
        var kind: ResponderKind?
        var filter: [String]?
        var behaviour: Behaviour
        var produces: String
        var inSwift: Bool
        /// Each with a key, so the model and the engine do it once.
        var mutations: [(key: Int, mutation: Mutation)]

        var description: String {
            let what = kind?.rawValue ?? "subscribe"
            let filterText = filter.map { "[\($0.joined(separator: ","))]" } ?? ""
            let changes = mutations.isEmpty ? "" : " {" + mutations.map { "\($0.mutation)" }.joined(separator: "; ") + "}"
            return "#\(id)@\(node) \(what)\(filterText)/\(behaviour)->\(produces)\(inSwift ? "(swift)" : "")\(changes)"
        }
    }

    var nodes: [NodeSpec]
    /// The deepest chain node: where dispatches start.
    var origin: Int
    /// Responders and subscriptions in registration order.
    var specs: [Spec]

    var description: String {
        "  nodes: " + nodes.enumerated().map { "\($0.offset)=\($0.element.name)<\($0.element.parent.map(String.init) ?? "-")" }
            .joined(separator: " ") + "\n" + specs.map { "  \($0)" }.joined(separator: "\n")
    }

    static func generate(_ random: inout SplitMix64, subscribers: Bool = false) -> MutationWorld {
        var nodes = [NodeSpec(name: "/", parent: nil)]
        let depth = Int.random(in: 1...4, using: &random)
        for level in 1...depth { nodes.append(NodeSpec(name: "n\(level)", parent: level - 1)) }
        // Side nodes: beside the chain at the top and in the middle, and, for publishing,
        // below the chain and a second branch.
        nodes.append(NodeSpec(name: "s1", parent: 0))
        nodes.append(NodeSpec(name: "s2", parent: 1))
        if subscribers {
            nodes.append(NodeSpec(name: "s3", parent: depth))
            nodes.append(NodeSpec(name: "s4", parent: nodes.count - 2))
        }
        var world = MutationWorld(nodes: nodes, origin: depth, specs: [])
        var nextID = 1
        var nextKey = 1
        func newSpec(on node: Int, subscription: Bool, mutable: Bool, random: inout SplitMix64) -> Spec {
            defer { nextID += 1 }
            var spec = Spec(
                id: nextID, node: node,
                kind: subscription ? nil : ResponderKind.allCases.filter { $0 != .handleAlertErrors }.randomElement(using: &random)!,
                filter: Bool.random(using: &random) ? nil : Array(types.shuffled(using: &random).prefix(Int.random(in: 1...2, using: &random))),
                behaviour: Behaviour.allCases.randomElement(using: &random)!,
                produces: types.randomElement(using: &random)!,
                inSwift: Int.random(in: 0..<3, using: &random) == 0,
                mutations: [])
            if subscription {
                // What a subscriber returns is ignored; Lua's `subscribe` takes no "any".
                if spec.behaviour != .raise { spec.behaviour = .notHandled }
                if spec.filter == nil && !spec.inSwift { spec.filter = types }
            }
            return spec
        }
        for node in nodes.indices {
            let count = Int.random(in: 0...(subscribers ? 2 : 3), using: &random)
            for _ in 0..<count {
                world.specs.append(newSpec(on: node, subscription: subscribers, mutable: true, random: &random))
            }
        }
        // Mutations, on about half of them: their targets are drawn once every spec exists.
        for index in world.specs.indices where Bool.random(using: &random) {
            for _ in 0..<Int.random(in: 1...2, using: &random) {
                let mutation: Mutation
                let nonRoot = Int.random(in: 1..<nodes.count, using: &random)
                switch Int.random(in: 0..<6, using: &random) {
                case 0, 1:
                    let target = world.specs.randomElement(using: &random)!
                    mutation = subscribers ? .removeSubscription(id: target.id) : .removeResponder(id: target.id)
                case 2:
                    var added = newSpec(
                        on: Int.random(in: 0..<nodes.count, using: &random), subscription: subscribers, mutable: false,
                        random: &random)
                    added.inSwift = world.specs[index].inSwift
                    mutation = subscribers ? .addSubscription(added) : .addResponder(added)
                case 3:
                    mutation = .removeNode(nonRoot)
                case 4:
                    mutation = .moveNode(nonRoot, to: Int.random(in: 0..<nodes.count, using: &random))
                default:
                    mutation = .dispatch(
                        at: Int.random(in: 0..<nodes.count, using: &random),
                        Bool.random(using: &random) ? .event : .error, types.randomElement(using: &random)!)
                }
                world.specs[index].mutations.append((nextKey, mutation))
                nextKey += 1
            }
        }
        return world
    }
}

// MARK: - The model

/// The contract, kept plainly: the whole tree as indices, each dispatch snapshotting its
/// chain (nodes and their responders) at its start, removed responders skipped when their
/// turn comes, added ones waiting for the next dispatch; a publish choosing its recipients
/// first, then skipping those removed or no longer below the publisher.
struct MutationModel {
    /// The same outcome summary as the plain dispatch fuzz's model.
    typealias Result = ReferenceModel.Result

    var names: [String]
    var parent: [Int?]
    var children: [[Int]]
    /// Per node, ids in registration order (responders and subscriptions alike).
    var registered: [[Int]]
    var specs: [Int: MutationWorld.Spec] = [:]
    var removed: Set<Int> = []
    var done: Set<Int> = []
    /// Every responder or subscriber call, by id, in order.
    var calls: [Int] = []
    /// The type of every error presented (passed the root unhandled), in order.
    var presented: [String] = []

    init(_ world: MutationWorld) {
        names = world.nodes.map(\.name)
        parent = world.nodes.map(\.parent)
        children = Array(repeating: [], count: world.nodes.count)
        for (index, node) in world.nodes.enumerated() { if let up = node.parent { children[up].append(index) } }
        registered = Array(repeating: [], count: world.nodes.count)
        for spec in world.specs { add(spec) }
    }

    mutating func add(_ spec: MutationWorld.Spec) {
        specs[spec.id] = spec
        registered[spec.node].append(spec.id)
    }

    func path(of node: Int) -> String {
        var names: [String] = []
        var current = node
        while let up = parent[current] {
            names.append(self.names[current])
            current = up
        }
        if current == 0 { return "/" + names.reversed().joined(separator: "/") }
        return ([self.names[current]] + names.reversed()).joined(separator: "/")
    }

    func isBelow(_ node: Int, _ ancestor: Int) -> Bool {
        var current = parent[node]
        while let up = current {
            if up == ancestor { return true }
            current = parent[up]
        }
        return false
    }

    mutating func dispatch(from origin: Int, _ startDomain: Domain, _ startType: String) -> Result {
        var chain: [(node: Int, ids: [Int])] = []
        var top = origin
        while true {
            chain.append((top, registered[top]))
            guard let up = parent[top] else { break }
            top = up
        }
        let detached = top != 0
        // An outcome names the nodes as they were when its dispatch began.
        let paths = Dictionary(chain.map { ($0.node, path(of: $0.node)) }, uniquingKeysWith: { first, _ in first })
        var (domain, type) = (startDomain, startType)
        for (node, ids) in chain {
            for (offset, id) in ids.enumerated() {
                guard !removed.contains(id), let spec = specs[id], let kind = spec.kind else { continue }
                guard kind.domain == domain else { continue }
                if let filter = spec.filter, !filter.contains(type) { continue }
                calls.append(id)
                perform(spec)
                let handled = { (model: MutationModel) in
                    Result(status: "handled", kind: domain, type: type, by: paths[node], index: offset + 1)
                }
                switch (kind, spec.behaviour) {
                case (_, .raise): (domain, type) = (.error, spec.produces)
                case (.handleEvent, _), (.handleError, _): return handled(self)
                case (.receiveEvent, .handled), (.receiveError, .handled): return handled(self)
                case (.receiveEvent, .notHandled), (.receiveError, .notHandled): continue
                case (.receiveEvent, .replace), (.receiveError, .replace), (.transformEvent, .replace),
                    (.transformError, .replace):
                    type = spec.produces
                case (.catchError, .replace): (domain, type) = (.event, spec.produces)
                default: (domain, type) = (.error, "ResponderContractError")
                }
            }
        }
        if !detached && domain == .error { presented.append(type) }
        return Result(status: detached ? "detached" : "unhandled", kind: domain, type: type, by: nil, index: nil)
    }

    mutating func publish(from publisher: Int, _ type: String, _ scope: PublishScope) -> Int {
        // Preorder below the publisher; each node's subscribers that take this type.
        var order: [Int] = []
        func visit(_ node: Int) {
            for child in children[node] {
                order.append(child)
                visit(child)
            }
        }
        visit(publisher)
        let subscribes = { (model: MutationModel, node: Int) in
            model.registered[node].contains { id in
                !model.removed.contains(id) && (model.specs[id]!.filter.map { $0.contains(type) } ?? true)
            }
        }
        let chosen = order.filter { node in
            guard subscribes(self, node) else { return false }
            switch scope {
            case .all: return true
            case .first: return !order.contains { other in subscribes(self, other) && isBelow(node, other) }
            case .last: return !order.contains { other in subscribes(self, other) && isBelow(other, node) }
            }
        }
        let recipients = chosen.flatMap { node in
            registered[node].filter { id in
                !removed.contains(id) && (specs[id]!.filter.map { $0.contains(type) } ?? true)
            }.map { (node, $0) }
        }
        var delivered = 0
        for (node, id) in recipients where !removed.contains(id) && isBelow(node, publisher) {
            delivered += 1
            calls.append(id)
            let spec = specs[id]!
            perform(spec)
            // A raised error is reported at the subscriber's node.
            if spec.behaviour == .raise { _ = dispatch(from: node, .error, spec.produces) }
        }
        return delivered
    }

    private mutating func perform(_ spec: MutationWorld.Spec) {
        for (key, mutation) in spec.mutations where done.insert(key).inserted {
            switch mutation {
            case .removeResponder(let id), .removeSubscription(let id):
                // Swift holds only its own handles (MutationEngine.performInSwift).
                guard let target = specs[id], !spec.inSwift || target.inSwift, removed.insert(id).inserted else { break }
                registered[specs[id]!.node].removeAll { $0 == id }
            case .addResponder(let added), .addSubscription(let added):
                add(added)
            case .removeNode(let node):
                guard let up = parent[node] else { break }
                children[up].removeAll { $0 == node }
                parent[node] = nil
            case .moveNode(let node, let newParent):
                // Refused (nothing changes) when it would make a cycle; nothing to do under
                // the same parent.
                if newParent == node || isBelow(newParent, node) || parent[node] == newParent { break }
                if let up = parent[node] { children[up].removeAll { $0 == node } }
                parent[node] = newParent
                children[newParent].append(node)
            case .dispatch(let node, let domain, let type):
                _ = dispatch(from: node, domain, type)
            }
        }
    }
}

// MARK: - The engine

/// What the generated code shares: the calls in order (Lua's through `log`), which
/// mutations were done, the Swift handles, the nodes.
final class MutationHarness {
    var calls: [Int] = []
    var done: Set<Int> = []
    var responderHandles: [Int: ResponderHandle] = [:]
    var subscriptionHandles: [Int: SubscriptionHandle] = [:]
    var nodes: [Node] = []
    /// What the last nested or Lua entry reported back.
    var reported: MutationModel.Result?
}

/// The world registered on a real hierarchy, and dispatches through each entry.
final class MutationEngine {
    enum Entry: CaseIterable {
        /// `Hierarchy.trigger` / `report` from Swift.
        case swift
        /// `node:triggerEvent` / `reportError` in a top-level chunk (the fast path's entry).
        case lua
        /// The same from inside a Lua responder at another node (a nested dispatch).
        case luaNested
        /// `Hierarchy.trigger` from inside a Swift responder.
        case swiftNested
        /// A `dispatch` input line (LineProcessor).
        case inputLine
    }

    let fixture: Fixture
    let harness = MutationHarness()
    let world: MutationWorld
    var presented: [String] { fixture.presented.map { $0.error.typeName ?? "?" } }

    init(_ world: MutationWorld) throws {
        self.world = world
        fixture = try Fixture()
        let hierarchy = fixture.hierarchy
        hierarchy.onSafetyWarning = { _ in }
        let harness = self.harness
        for node in world.nodes {
            if let up = node.parent {
                harness.nodes.append(try harness.nodes[up].child(node.name))
            } else {
                harness.nodes.append(hierarchy.root)
            }
        }
        hierarchy.register(function: "log") { arguments in
            if case .int(let id) = arguments.first { harness.calls.append(Int(id)) }
            return .null
        }
        // Lua's way to what only Swift holds: a Swift responder's or subscription's handle.
        hierarchy.register(function: "unregisterSwift") { arguments in
            if case .int(let id) = arguments.first {
                harness.responderHandles[Int(id)]?.remove()
                harness.subscriptionHandles[Int(id)]?.remove()
            }
            return .null
        }
        hierarchy.register(function: "reportBack") { arguments in
            func text(_ index: Int) -> String? {
                if index < arguments.count, case .string(let value) = arguments[index] { return value }
                return nil
            }
            var index: Int?
            if arguments.count > 4, case .int(let value) = arguments[4] { index = Int(value) }
            harness.reported = MutationModel.Result(
                status: text(0) ?? "?", kind: text(1) == "event" ? .event : .error, type: text(2) ?? "?", by: text(3),
                index: index)
            return .null
        }
        // The nodes by index, and the handles and mutations done, as Lua globals.
        var setup = "N, H, DONE = {}, {}, {}\n"
        for (index, node) in world.nodes.enumerated() where index > 0 {
            setup += "N[\(index)] = N[\(node.parent!)] and N[\(node.parent!)]:child('\(node.name)') or hier.root:child('\(node.name)')\n"
        }
        setup += "N[0] = hier.root\n"
        try fixture.lua(setup)
        // A node outside the world for the nested entries.
        let driver = try hierarchy.root.child("driver")
        try fixture.lua("""
            hier.root:child('driver'):handleEvent('DriveLua', function(v)
              local o = v.domain == 'event' and N[v.origin]:triggerEvent({type = v.kind})
                or N[v.origin]:reportError({type = v.kind, message = 'start'})
              reportBack(o.status, o.kind, o.value.type, o.by, o.responder and o.responder.index)
            end)
            """)
        driver.handleEvent(.types(["DriveSwift"])) { [unowned hierarchy] value in
            guard case .int(let origin) = value["origin"], case .string(let type) = value["kind"] else { return }
            let start = harness.nodes[Int(origin)]
            let outcome =
                value["domain"] == "event"
                ? try hierarchy.trigger(.event(type), at: start)
                : try hierarchy.report(.error(type, message: "start"), at: start)
            harness.reported = MutationModel.Result(outcome)
        }
        for spec in world.specs { try register(spec) }
    }

    /// Tracing and safety declarations, which send a dispatch down other paths (the
    /// general walk, no runs, no kept plans) but must not change what it does: relaxed
    /// safety only warns.
    func configure(_ random: inout SplitMix64) throws {
        fixture.hierarchy.traceLevel = TraceLevel.allCases.randomElement(using: &random)!
        if Int.random(in: 0..<4, using: &random) == 0 {
            let node = Int.random(in: 0..<world.nodes.count, using: &random)
            try fixture.lua("N[\(node)]:triggers{'A', 'B'}; N[\(node)]:reports{'C'}")
        }
        configuration = "trace \(fixture.hierarchy.traceLevel), \(fixture.hierarchy.root.tree.declaringNodes) declaring"
    }

    private(set) var configuration = ""

    // MARK: Registering

    func register(_ spec: MutationWorld.Spec) throws {
        if spec.inSwift { registerInSwift(spec) } else { try fixture.lua(Self.luaRegistration(spec)) }
    }

    static func luaFilter(_ filter: [String]?) -> String {
        filter.map { "{" + $0.map { "'\($0)'" }.joined(separator: ", ") + "}" } ?? ""
    }

    static func luaRegistration(_ spec: MutationWorld.Spec) -> String {
        let body = "function(v) log(\(spec.id)) \(luaMutations(spec)) \(luaBehaviour(spec)) end"
        guard let kind = spec.kind else {
            return "H[\(spec.id)] = N[\(spec.node)]:subscribe(\(luaFilter(spec.filter ?? MutationWorld.types)), \(body))"
        }
        let filter = spec.filter == nil ? "" : luaFilter(spec.filter) + ", "
        return "H[\(spec.id)] = N[\(spec.node)]:\(kind.rawValue)(\(filter)\(body))"
    }

    static func luaBehaviour(_ spec: MutationWorld.Spec) -> String {
        switch spec.behaviour {
        case .handled: "return 'handled'"
        case .notHandled: "return 'notHandled'"
        case .replace: "return {type = '\(spec.produces)', by = 'lua'}"
        case .raise: "error({type = '\(spec.produces)', message = 'raised'})"
        case .bad: "return 42"
        }
    }

    static func luaMutations(_ spec: MutationWorld.Spec) -> String {
        spec.mutations.map { key, mutation in
            let action: String
            switch mutation {
            case .removeResponder(let id), .removeSubscription(let id):
                action = "if H[\(id)] then H[\(id)]:remove() end unregisterSwift(\(id))"
            case .addResponder(let added), .addSubscription(let added):
                action = luaRegistration(added)
            case .removeNode(let node):
                action = "N[\(node)]:remove()"
            case .moveNode(let node, let parent):
                action = "pcall(N[\(node)].moveTo, N[\(node)], N[\(parent)])"
            case .dispatch(let node, let domain, let type):
                action =
                    domain == .event
                    ? "N[\(node)]:triggerEvent({type = '\(type)'})"
                    : "N[\(node)]:reportError({type = '\(type)', message = 'nested'})"
            }
            return "if not DONE[\(key)] then DONE[\(key)] = true \(action) end"
        }.joined(separator: " ")
    }

    func registerInSwift(_ spec: MutationWorld.Spec) {
        let harness = self.harness
        let node = harness.nodes[spec.node]
        let filter: TypeFilter = spec.filter.map { .types(Set($0)) } ?? .any
        let mutate = { [unowned self] in try self.performInSwift(spec) }
        let body: (Value) throws -> ReceiveResult = { _ in
            harness.calls.append(spec.id)
            try mutate()
            switch spec.behaviour {
            case .handled: return .handled
            case .notHandled: return .notHandled
            case .replace: return .replace(.map(["type": .string(spec.produces), "by": "swift"]))
            case .raise: throw DispatchFuzzTests.Raised(errorType: spec.produces)
            case .bad: return .replace(42)
            }
        }
        guard let kind = spec.kind else {
            harness.subscriptionHandles[spec.id] = node.subscribe(filter) { _ = try body($0) }
            return
        }
        let transform: (Value) throws -> Value = { value in
            switch try body(value) {
            case .handled: return "handled"
            case .notHandled: return "notHandled"
            case .replace(let replacement): return replacement
            }
        }
        let handle: ResponderHandle
        switch kind {
        case .receiveEvent: handle = node.receiveEvent(filter, body)
        case .receiveError: handle = node.receiveError(filter, body)
        case .handleEvent: handle = node.handleEvent(filter) { _ = try body($0) }
        case .handleError: handle = node.handleError(filter) { _ = try body($0) }
        case .transformEvent: handle = node.transformEvent(filter, transform)
        case .transformError: handle = node.transformError(filter, transform)
        case .catchError: handle = node.catchError(filter, transform)
        case .handleAlertErrors: return
        }
        harness.responderHandles[spec.id] = handle
    }

    /// A Swift responder's mutations, through the Swift API. Responders registered in Lua
    /// are not reachable from here, so Swift removes only its own (the generator's targets
    /// may be either: a Lua target is left alone, and the model is told the same).
    func performInSwift(_ spec: MutationWorld.Spec) throws {
        let harness = self.harness
        for (key, mutation) in spec.mutations where harness.done.insert(key).inserted {
            switch mutation {
            case .removeResponder(let id), .removeSubscription(let id):
                harness.responderHandles[id]?.remove()
                harness.subscriptionHandles[id]?.remove()
            case .addResponder(let added), .addSubscription(let added):
                registerInSwift(added)
            case .removeNode(let node):
                harness.nodes[node].remove()
            case .moveNode(let node, let parent):
                try? harness.nodes[node].move(to: harness.nodes[parent])
            case .dispatch(let node, let domain, let type):
                _ =
                    domain == .event
                    ? try fixture.hierarchy.trigger(.event(type), at: harness.nodes[node])
                    : try fixture.hierarchy.report(.error(type, message: "nested"), at: harness.nodes[node])
            }
        }
    }

    // MARK: Dispatching

    /// The `dispatch` command's per-worker processor, made on first use (it takes the
    /// presenter over, and passes every error on to the fixture's).
    private var processor: LineProcessor?

    /// Dispatches through `entry` (an input line only while the origin is attached; Swift
    /// otherwise) and returns the entry used and the outcome.
    func dispatch(
        from origin: Int, _ domain: Domain, _ type: String, through entry: Entry, modelPath: String
    ) throws -> (Entry, MutationModel.Result) {
        let hierarchy = fixture.hierarchy
        let node = harness.nodes[origin]
        harness.reported = nil
        switch entry {
        case .inputLine where modelPath.hasPrefix("/"):
            if processor == nil {
                processor = LineProcessor(hierarchy: hierarchy, inputName: "fuzz.jsonl", maxLineBytes: 1 << 20)
            }
            let processor = processor!
            let line = "{\"at\": \"\(node.path)\", \"\(domain == .event ? "event" : "error")\": {\"type\": \"\(type)\"}}"
            // As `luahier dispatch` answers it: a run of lines C answers end to end, or the
            // processor's own path for what C leaves to it.
            var output = JSONWriter()
            var delivered: [UInt8] = []
            let bytes = Array(line.utf8)
            _ = bytes.withUnsafeBytes { chunk in
                processor.answerRun(
                    chunk, lines: [.init(number: 1, start: 0, count: bytes.count, oversized: false)], from: 0,
                    into: &output, held: processor.outputCharge()
                ) { answer in
                    delivered.append(contentsOf: answer)
                    return true
                }
            }
            let object = try JSONSerialization.jsonObject(with: Data(delivered + output.bytes)) as! [String: Any]
            let value = object["value"] as? [String: Any]
            return (
                .inputLine,
                MutationModel.Result(
                    status: object["status"] as? String ?? "?", kind: object["kind"] as? String == "event" ? .event : .error,
                    type: value?["type"] as? String ?? "?", by: object["by"] as? String, index: nil)
            )
        case .swift, .inputLine:
            let outcome =
                domain == .event
                ? try hierarchy.trigger(.event(type), at: node)
                : try hierarchy.report(.error(type, message: "start"), at: node)
            return (.swift, MutationModel.Result(outcome))
        case .lua:
            try fixture.lua("""
                local o = \(domain == .event ? "N[\(origin)]:triggerEvent({type = '\(type)'})" : "N[\(origin)]:reportError({type = '\(type)', message = 'start'})")
                reportBack(o.status, o.kind, o.value.type, o.by, o.responder and o.responder.index)
                """)
        case .luaNested, .swiftNested:
            let drive: Value = .event(
                entry == .luaNested ? "DriveLua" : "DriveSwift",
                ["origin": .int(Int64(origin)), "domain": .string(domain.rawValue), "kind": .string(type)])
            _ = try hierarchy.trigger(drive, at: "/driver")
        }
        return (entry, harness.reported ?? MutationModel.Result(status: "none", kind: .event, type: "?"))
    }

    func publish(from publisher: Int, _ type: String, _ scope: PublishScope, fromLua: Bool) throws -> Int {
        if fromLua {
            harness.reported = nil
            try fixture.lua("reportBack(tostring(N[\(publisher)]:publish({type = '\(type)'}, {to = '\(scope.rawValue)'})))")
            return Int(harness.reported?.status ?? "") ?? -1
        }
        return try fixture.hierarchy.publish(.event(type), at: harness.nodes[publisher], to: scope).delivered
    }
}

extension ReferenceModel.Result {
    /// An input line's outcome names the responder by `file:line`, not by index.
    var withoutIndex: Self { Self(status: status, kind: kind, type: type, by: by, index: nil) }

    init(status: String, kind: Domain, type: String) {
        self.init(status: status, kind: kind, type: type, by: nil, index: nil)
    }

    init(_ outcome: Outcome) {
        self.init(
            status: outcome.status.rawValue, kind: outcome.kind, type: outcome.value.typeName ?? "?", by: outcome.by,
            index: outcome.responder?.index)
    }
}
