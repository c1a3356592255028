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
    /// Where the event responders sit, in dispatch order: a walker counts in these.
    let eventEntries: [RunPosition]
    /// Whether dispatches along it record a path trace (the trace level when it was made:
    /// changing the level makes the plan stale).
    let traced: Bool

    /// The longest chain, and the most event responders, a plan is made for: a plan costs
    /// memory in proportion, and chains past these are rare enough to walk each time.
    static let maxLinks = 128
    static let maxEntries = 64

    private init(links: [ChainLink], detached: Bool, stamp: Int, eventEntries: [RunPosition], traced: Bool) {
        self.links = links
        self.detached = detached
        self.stamp = stamp
        self.eventEntries = eventEntries
        self.traced = traced
    }

    /// The plan for dispatching from `origin` as the tree is now, or nil past the limits.
    static func make(from origin: Node, root: Node, traced: Bool) -> ChainPlan? {
        var links: [ChainLink] = []
        var entries: [RunPosition] = []
        var top = origin
        while true {
            guard links.count < maxLinks else { return nil }
            let responders = top.responders
            for (offset, responder) in responders.enumerated() where responder.kind.domain == .event {
                guard entries.count < maxEntries else { return nil }
                entries.append(RunPosition(node: Int32(links.count), offset: Int32(offset)))
            }
            links.append(ChainLink(node: top, responders: responders))
            guard let parent = top.parent else { break }
            top = parent
        }
        return ChainPlan(
            links: links, detached: top !== root, stamp: origin.tree.chainChanges.pointee, eventEntries: entries,
            traced: traced)
    }

    /// The responder at event entry `entry`.
    func responder(atEntry entry: Int) -> Responder {
        let position = eventEntries[entry]
        return links[Int(position.node)].responders[Int(position.offset)]
    }
}
