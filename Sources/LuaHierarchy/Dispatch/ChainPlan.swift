/// A dispatch's chain snapshot (contract §4: the chain is snapshotted when a dispatch starts), in
/// the form the engine runs: each domain's responders in the order they are offered a value,
/// and, where the safety check is on, an arrival at each declaring node (contract §6).
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
    /// Whether the chain ends below a detached top instead of at the root (contract §2).
    let detached: Bool
    /// How many nodes the chain has: the host's work per dispatch, which Lua hosts charge for.
    let hops: Int
    /// What dispatches along it record (the trace level when it was made).
    let trace: TraceLevel
    /// The entries a value of each domain is offered, in order. A value that changes domain at
    /// an entry goes on at the other domain's first entry past it (`PlanEntry.cross`).
    let events: [PlanEntry]
    let errors: [PlanEntry]

    /// False when the running budget tripped while it was made: it stops short, and is not
    /// kept (the dispatch along it ends with the limit's error).
    let complete: Bool

    private init(
        origin: String, detached: Bool, hops: Int, trace: TraceLevel, events: [PlanEntry],
        errors: [PlanEntry], complete: Bool
    ) {
        self.complete = complete
        self.origin = origin
        self.detached = detached
        self.hops = hops
        self.trace = trace
        self.events = events
        self.errors = errors
    }

    /// The plan for dispatching from `origin` as the tree is now. With `checksSafety`, each
    /// declaring node gets an arrival in both domains, before its responders.
    ///
    /// Cost: one step per node of the chain and per entry, whatever the depth (each node's
    /// path is a prefix of the origin's, so it is named by its length, not copied; safety
    /// arrivals share one table of where each type was first declared). The steps are charged
    /// to the running budget as host work; once it trips, the plan stops short and says so
    /// (`complete` false): the dispatch then ends with the limit's error, and the plan is not
    /// kept.
    static func make(
        from origin: Node, root: Node, trace: TraceLevel, checksSafety: Bool, meter: (any MemoryMeter)? = nil
    ) -> ChainPlan {
        let originPath = origin.path
        var hops = 0
        var events: [PlanEntry] = []
        var errors: [PlanEntry] = []
        let allowed = AllowedTypes()
        var top = origin
        // The length of the current node's path within the origin's (0 stands for "/").
        var length = originPath.utf8.count
        var complete = true
        var pending = 0
        while true {
            let link = Int32(hops)
            let node = PathPrefix(length: top === root ? 0 : length)
            if checksSafety, let declarations = top.declarations {
                // Nested declarations compose on the way up: what a value may be here is what
                // every declaring node from the origin to this one declared.
                let arrival = Arrival(node: node, declarations: declarations, allowed: allowed, rank: allowed.add(declarations))
                events.append(PlanEntry(role: .arrival(arrival), link: link, offset: -1, node: node))
                errors.append(PlanEntry(role: .arrival(arrival), link: link, offset: -1, node: node))
                pending += declarations.events.count + declarations.errors.count
            }
            for (offset, responder) in top.responders.enumerated() {
                let entry = PlanEntry(role: .responder(responder), link: link, offset: Int32(offset), node: node)
                if responder.kind.domain == .event { events.append(entry) } else { errors.append(entry) }
            }
            hops += 1
            pending += 1 + top.responders.count
            if pending >= Self.workPerCharge, let meter {
                guard meter.chargeWork(pending) else {
                    complete = false
                    break
                }
                pending = 0
            }
            guard let parent = top.parent else { break }
            length -= top.name.utf8.count + 1
            top = parent
        }
        if pending > 0, let meter, !meter.chargeWork(pending) { complete = false }
        Self.linkAcross(&events, errors)
        Self.linkAcross(&errors, events)
        return ChainPlan(
            origin: originPath, detached: top !== root, hops: hops, trace: trace, events: events, errors: errors,
            complete: complete)
    }

    /// How many steps of plan making are charged at once: the deadline is read every
    /// LUAHIER_HOOK_INTERVAL units, so a plan stops within about that much work of a trip.
    static let workPerCharge = 256

    /// The same plan without entries, not complete: what a dispatch runs when its plan could
    /// not be made within the limits (the walk raises the trip at its first instruction).
    var emptied: ChainPlan {
        ChainPlan(origin: origin, detached: detached, hops: hops, trace: trace, events: [], errors: [], complete: false)
    }

    /// The path of the node an entry is at as a message shows it (`PathText.shown`): a tool
    /// that names every entry's node (explain) stays linear in a deep chain.
    func shownPath(of node: PathPrefix) -> String {
        guard node.length > 0 else { return "/" }
        var origin = origin
        return origin.withUTF8 { PathText.shown(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer($0)[..<node.length])) }
    }

    /// The path of the node an entry (of this plan) is at.
    func path(of node: PathPrefix) -> String {
        node.length == 0 ? "/" : String(decoding: origin.utf8.prefix(node.length), as: UTF8.self)
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
    /// The node's path, as a prefix of the plan's origin (`ChainPlan.path(of:)`).
    let node: PathPrefix
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

/// A node of a chain, named by the length of its path within the origin's path (every node of
/// a chain is the origin or an ancestor of it): an entry costs no copy of its path, so a plan
/// is linear in the chain's length however deep the chain is. 0 stands for the root, "/".
struct PathPrefix: Hashable {
    let length: Int
}

/// The safety check's arrival at a declaring node (contract §6): what the value may be there.
struct Arrival {
    let node: PathPrefix
    let declarations: Declarations
    /// Where each type was first declared on the way up, shared by the plan's arrivals.
    let allowed: AllowedTypes
    /// This arrival's place among the declaring nodes from the origin up (0 is the first).
    let rank: Int

    /// Whether a value of `type` and `domain` may pass here: some declaring node from the
    /// origin up to this one declared it. One lookup.
    func allows(_ type: String, _ domain: Domain) -> Bool {
        guard let first = allowed.firstRank(of: type, domain) else { return false }
        return first <= rank
    }

    /// What may pass here, sorted, at most `limit` names (for messages).
    func allowedTypes(_ domain: Domain, limit: Int) -> (names: [String], more: Int) {
        allowed.types(domain, upTo: rank, limit: limit)
    }
}

/// For the arrivals of one plan: the rank of the first declaring node (counted from the
/// origin up) that declared each type. Built once per plan in time proportional to the
/// declarations, so a chain of many declaring nodes costs no set per arrival.
final class AllowedTypes {
    private var events: [String: Int] = [:]
    private var errors: [String: Int] = [:]
    /// Each domain's types in the order they were first declared (so by rank).
    private var eventOrder: [String] = []
    private var errorOrder: [String] = []
    /// How many types of each domain the ranks up to each one declared.
    private var counts: [(events: Int, errors: Int)] = []

    /// Adds a declaring node's types; returns its rank.
    func add(_ declarations: Declarations) -> Int {
        let rank = counts.count
        for type in declarations.events.keys where events[type] == nil {
            events[type] = rank
            eventOrder.append(type)
        }
        for type in declarations.errors.keys where errors[type] == nil {
            errors[type] = rank
            errorOrder.append(type)
        }
        counts.append((eventOrder.count, errorOrder.count))
        return rank
    }

    func firstRank(of type: String, _ domain: Domain) -> Int? {
        domain == .event ? events[type] : errors[type]
    }

    /// The first `limit` types declared at ranks up to `rank` (the nearest declaring nodes'
    /// first), sorted, and how many more there are: a message's list, in time of its own size.
    func types(_ domain: Domain, upTo rank: Int, limit: Int) -> (names: [String], more: Int) {
        let count = domain == .event ? counts[rank].events : counts[rank].errors
        let shown = (domain == .event ? eventOrder : errorOrder)[..<min(count, limit)]
        return (shown.sorted(), count - shown.count)
    }
}

/// Paths as messages show them.
enum PathText {
    /// How much of a path a message shows: its last bytes, after "…".
    static let shownBytes = 512

    /// `path` (UTF-8 bytes) as a message shows it: whole when short, else "…" and its last
    /// names within `shownBytes`. In time of what it shows.
    static func shown(_ path: UnsafeRawBufferPointer) -> String {
        guard path.count > shownBytes else { return String(decoding: path, as: UTF8.self) }
        var start = path.count - shownBytes
        while start < path.count && path[start] != UInt8(ascii: "/") { start += 1 }
        return "…" + String(decoding: UnsafeRawBufferPointer(rebasing: path[start...]), as: UTF8.self)
    }
}
