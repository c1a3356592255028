/// A chain snapshot made to be kept: what a runner that walks chains by itself (the Lua fast
/// path, LuaFastPath.swift) needs to dispatch from one node again and again without asking
/// the dispatcher, and what the dispatcher needs to take over where such a walk stopped.
///
/// It is valid while the tree's `chainChanges` counter equals `stamp`: any change that could
/// make a new snapshot differ (a responder added or removed, a subtree moved or removed,
/// declarations, dispatch settings) moves the counter. A plan in use stays what it was when
/// the dispatch started, as a snapshot must (SPEC §4).
final class ChainPlan {
    /// The chain, origin first, with each node's responders as they were.
    let links: [ChainLink]
    /// Whether the chain ends below a detached top instead of at the root (SPEC §2).
    let detached: Bool
    /// The value of `chainChanges` the plan was made at.
    let stamp: Int
    /// The event responders, in dispatch order: a walker counts in these.
    let eventEntries: [PlanEntry]
    /// The error responders, in dispatch order.
    let errorEntries: [PlanEntry]
    /// Whether dispatches along it record a path trace (the trace level when it was made:
    /// changing the level makes the plan stale).
    let traced: Bool

    /// The longest chain, and the most responders of one domain, a plan is made for: a plan costs
    /// memory in proportion, and chains past these are rare enough to walk each time.
    static let maxLinks = 128
    static let maxEntries = 64

    private init(
        links: [ChainLink], detached: Bool, stamp: Int, eventEntries: [PlanEntry], errorEntries: [PlanEntry],
        traced: Bool
    ) {
        self.links = links
        self.detached = detached
        self.stamp = stamp
        self.eventEntries = eventEntries
        self.errorEntries = errorEntries
        self.traced = traced
    }

    /// The plan for dispatching from `origin` as the tree is now, or nil past the limits.
    static func make(from origin: Node, root: Node, traced: Bool) -> ChainPlan? {
        var links: [ChainLink] = []
        var events: [PlanEntry] = []
        var errors: [PlanEntry] = []
        var top = origin
        while true {
            guard links.count < maxLinks else { return nil }
            let responders = top.responders
            for (offset, responder) in responders.enumerated() {
                let position = RunPosition(node: Int32(links.count), offset: Int32(offset))
                let entry = PlanEntry(responder: responder, position: position)
                if responder.kind.domain == .event { events.append(entry) } else { errors.append(entry) }
            }
            guard events.count <= maxEntries && errors.count <= maxEntries else { return nil }
            links.append(ChainLink(node: top, responders: responders))
            guard let parent = top.parent else { break }
            top = parent
        }
        return ChainPlan(
            links: links, detached: top !== root, stamp: origin.tree.chainChanges.pointee, eventEntries: events,
            errorEntries: errors, traced: traced)
    }

    /// The responder at event entry `entry`.
    func responder(atEntry entry: Int) -> Responder { eventEntries[entry].responder }
}

/// One responder of a plan, and where it sits in the plan's links.
/// Valid while its plan lives: the plan's links hold the responder, so the entry does not,
/// and a walk reads it without retaining it per call.
struct PlanEntry {
    private let reference: Unmanaged<Responder>
    let position: RunPosition

    init(responder: Responder, position: RunPosition) {
        reference = .passUnretained(responder)
        self.position = position
    }

    var responder: Responder { reference.takeUnretainedValue() }

    /// Runs `body` with the responder, borrowed (no retain, no release).
    @inline(__always)
    func withResponder<Result>(_ body: (Responder) -> Result) -> Result {
        reference._withUnsafeGuaranteedRef(body)
    }
}
