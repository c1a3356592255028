/// A dispatch's chain snapshot (SPEC §4: the chain is snapshotted when a dispatch starts), in
/// the form the engine runs: each domain's responders in the order they are offered a value,
/// and, where the safety check is on, an arrival at each declaring node (SPEC §6).
///
/// A plan is kept per origin and reused while the tree's `chainChanges` counter stands still:
/// any change that could make a new snapshot differ (a responder added or removed, a subtree
/// moved or removed, declarations, dispatch settings) moves it, and the plans kept go. A plan
/// in use stays what it was when its dispatch started. Paths are read when the plan is made, so
/// an outcome names the nodes as they were when its dispatch started.
///
/// It knows nodes and responders, nothing of Lua: the engine lays it out for its walk
/// (LuaEngine.swift). It holds no node: what a dispatch needs of them is their paths.
final class ChainPlan {
    /// The origin's path.
    let origin: String
    /// Whether the chain ends below a detached top instead of at the root (SPEC §2).
    let detached: Bool
    /// How many nodes the chain has: the host's work per dispatch, which Lua hosts charge for.
    let hops: Int
    /// What dispatches along it record (the trace level when it was made).
    let trace: TraceLevel
    /// The entries a value of each domain is offered, in order. A value that changes domain at
    /// an entry goes on at the other domain's first entry past it (`PlanEntry.cross`).
    let events: [PlanEntry]
    let errors: [PlanEntry]

    private init(
        origin: String, detached: Bool, hops: Int, trace: TraceLevel, events: [PlanEntry],
        errors: [PlanEntry]
    ) {
        self.origin = origin
        self.detached = detached
        self.hops = hops
        self.trace = trace
        self.events = events
        self.errors = errors
    }

    /// The plan for dispatching from `origin` as the tree is now. With `checksSafety`, each
    /// declaring node gets an arrival in both domains, before its responders.
    static func make(from origin: Node, root: Node, trace: TraceLevel, checksSafety: Bool) -> ChainPlan {
        var hops = 0
        var events: [PlanEntry] = []
        var errors: [PlanEntry] = []
        var allowed = (events: Set<String>(), errors: Set<String>())
        var top = origin
        while true {
            let link = Int32(hops)
            let path = top.path
            if checksSafety, let declarations = top.declarations {
                // Nested declarations compose on the way up: what a value may be here is what
                // every declaring node from the origin to this one declared.
                allowed.events.formUnion(declarations.events.keys)
                allowed.errors.formUnion(declarations.errors.keys)
                let arrival = Arrival(node: path, declarations: declarations, allowed: allowed)
                events.append(PlanEntry(role: .arrival(arrival), link: link, offset: -1, node: path))
                errors.append(PlanEntry(role: .arrival(arrival), link: link, offset: -1, node: path))
            }
            for (offset, responder) in top.responders.enumerated() {
                let entry = PlanEntry(role: .responder(responder), link: link, offset: Int32(offset), node: path)
                if responder.kind.domain == .event { events.append(entry) } else { errors.append(entry) }
            }
            hops += 1
            guard let parent = top.parent else { break }
            top = parent
        }
        Self.linkAcross(&events, errors)
        Self.linkAcross(&errors, events)
        return ChainPlan(
            origin: origin.path, detached: top !== root, hops: hops,
            trace: trace, events: events, errors: errors)
    }

    /// Sets each entry's `cross`: the index in `other` of the first entry past it.
    private static func linkAcross(_ entries: inout [PlanEntry], _ other: [PlanEntry]) {
        var next = 0
        for index in entries.indices {
            while next < other.count && other[next].comes(before: entries[index], orWith: true) { next += 1 }
            entries[index].cross = next
        }
    }

    /// The entries of `domain`.
    func entries(_ domain: Domain) -> [PlanEntry] { domain == .event ? events : errors }
}

/// One entry of a plan: a responder, or the safety check's arrival at a declaring node.
struct PlanEntry {
    enum Role {
        case responder(Responder)
        case arrival(Arrival)
    }
    let role: Role
    /// Where it sits: the link (0 is the origin) and the responder's offset on its node
    /// (-1: an arrival, which comes before the node's responders).
    let link: Int32
    let offset: Int32
    /// The node's path.
    let node: String
    /// The index in the other domain's entries where a value that changes domain here goes on.
    var cross = 0

    /// Whether this entry comes before `other` in the chain (or, with `orWith`, is at its place).
    func comes(before other: PlanEntry, orWith: Bool) -> Bool {
        if link != other.link { return link < other.link }
        return orWith ? offset <= other.offset : offset < other.offset
    }

    var responder: Responder? {
        if case .responder(let responder) = role { return responder }
        return nil
    }
}

/// The safety check's arrival at a declaring node (SPEC §6): what the value may be there.
struct Arrival {
    let node: String
    let declarations: Declarations
    /// What the declaring nodes from the origin up to this one declared, together.
    let allowed: (events: Set<String>, errors: Set<String>)
}
