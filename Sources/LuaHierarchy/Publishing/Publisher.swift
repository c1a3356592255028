/// Which subscribers among the publishing node's descendants receive a published event
/// (contract §6). A *branch* is a path down from the publisher; a subscriber is a node with a
/// subscription whose filter matches the event.
public enum PublishScope: String, Sendable, CaseIterable {
    /// On each branch, the shallowest subscriber: those with no subscriber above them
    /// (below the publisher). Delivery does not go further down that branch.
    case first
    /// On each branch, the deepest subscriber: those with no subscriber below them. Unlike
    /// upstream HierarchyResponder (one global deepest level, which starves shallower
    /// branches), each branch is judged on its own.
    case last
    /// Every subscriber.
    case all
}

/// How a publish went: how many subscriptions received the event.
public struct PublishResult: Sendable, Hashable {
    /// Subscriptions called (one that raised an error still received the event).
    public var delivered: Int
    /// Of those, how many raised an error (each was reported at its subscriber's node).
    public var failed: Int
    /// Nodes looked at to choose the recipients: the host's work, which Lua hosts charge for.
    var visited = 0

    /// Equal by what it says of the publish, not by the work it took.
    public static func == (a: PublishResult, b: PublishResult) -> Bool {
        a.delivered == b.delivered && a.failed == b.failed
    }

    /// Hashes what `==` compares: `delivered` and `failed`.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(delivered)
        hasher.combine(failed)
    }
}

extension Dispatcher {
    /// Delivers `event` to the subscriptions below `origin` that `scope` selects, depth-first,
    /// children in order, a node's subscriptions in subscription order. The recipients are
    /// chosen before the first is called (the DOM's rule, as for responders): one removed
    /// meanwhile is skipped, one added meanwhile waits for the next publish. Publishing is a
    /// nesting level, like a dispatch, so a subscriber that publishes again is bounded.
    func publish(_ event: Message, from origin: Node, to scope: PublishScope) throws(DispatchDepthExceeded) -> PublishResult {
        try enterNesting()
        defer { leaveNesting() }

        var visited = 0
        let recipients = Self.recipients(of: event.type, below: origin, scope: scope, visited: &visited)
        var result = PublishResult(delivered: 0, failed: 0, visited: visited)
        // Host work, charged as it goes: choosing the recipients walked the subtree, and each
        // check after the tree changed walks up toward the origin (a subscriber that changes
        // the tree every time makes that the depth per delivery). A budget that trips stops
        // the publish; its limit error is raised at the next instruction.
        let meter = root.tree.meter
        guard meter?.chargeWork(visited) ?? true else { return result }
        var current = event
        var stillBelow = Membership(origin: origin)
        for (node, subscription) in recipients where !subscription.isRemoved {
            // A subscriber whose node left the subtree meanwhile (an ancestor removed or
            // moved) is skipped, as a removed subscription is.
            let walkedBefore = result.visited
            let below = stillBelow.contains(node, visited: &result.visited)
            if let meter, !meter.chargeWork(result.visited - walkedBefore) { return result }
            guard below else { continue }
            result.delivered += 1
            if let observe = deliveryObserver {
                observe(PublishDelivery(node: node.path, location: subscription.location, type: current.type))
            }
            switch subscription.body.callForEffect(with: &current) {
            case .raised(var error):
                result.failed += 1
                subscriberRaised?(error)
                error.setIfAbsent("where", to: subscription.location)
                _ = try dispatch(error, at: node)
            case .aborted(var error):
                // A host limit tripped: nothing more may run in this entry.
                result.failed += 1
                error.setIfAbsent("where", to: subscription.location)
                present(error, reportedAt: node.path, chainCut: !node.isAttached(to: root))
                return result
            case .handled, .notHandled, .value, .unusable, .choice:
                break
            }
        }
        return result
    }

    /// Whether nodes are still below a publish's origin. Free while the tree's structure has
    /// not changed since the publish began; after a change each node is looked up once per
    /// change, walking up only as far as the first node already known.
    struct Membership {
        let origin: Node
        private let tree: TreeToken
        private var generation: Int
        private var known: [ObjectIdentifier: Bool] = [:]
        /// Whether the structure changed since the publish began.
        private var changed = false

        init(origin: Node) {
            self.origin = origin
            tree = origin.tree
            generation = origin.tree.generation
        }

        /// Whether `node` is below `origin` now; the nodes walked are added to `visited`.
        mutating func contains(_ node: Node, visited: inout Int) -> Bool {
            if tree.generation != generation {
                generation = tree.generation
                known.removeAll(keepingCapacity: true)
                changed = true
            }
            guard changed else { return true }
            var walked: [ObjectIdentifier] = []
            var answer = false
            var current = node.parent
            walk: while let ancestor = current {
                if ancestor === origin {
                    answer = true
                    break walk
                }
                if let cached = known[ObjectIdentifier(ancestor)] {
                    answer = cached
                    break walk
                }
                walked.append(ObjectIdentifier(ancestor))
                current = ancestor.parent
            }
            visited += walked.count + 1
            for id in walked { known[id] = answer }
            return answer
        }
    }

    /// The subscriptions `scope` selects, in delivery order.
    static func recipients(of type: String, below origin: Node, scope: PublishScope) -> [(Node, Subscription)] {
        var visited = 0
        return recipients(of: type, below: origin, scope: scope, visited: &visited)
    }

    /// As above; `visited` counts the nodes looked at.
    static func recipients(
        of type: String, below origin: Node, scope: PublishScope, visited: inout Int
    ) -> [(Node, Subscription)] {
        // Preorder (depth-first, children in order) with each entry's parent position, so
        // `last` can learn what lies below a node without recursion: a million-deep chain
        // must not overflow the stack.
        var order: [(node: Node, parent: Int)] = []
        var pending: [(node: Node, parent: Int)] = origin.children.reversed().map { ($0, -1) }
        defer { visited = order.count }
        while let (node, parent) = pending.popLast() {
            order.append((node, parent))
            let position = order.count - 1
            for child in node.children.reversed() { pending.append((child, position)) }
        }
        let subscribes = order.map { entry in
            entry.node.subscriptions.contains { !$0.isRemoved && $0.matcher.matches(type) }
        }
        var selected = subscribes
        switch scope {
        case .all:
            break
        case .first:
            // A parent comes before its children in preorder, so `above` is ready in time.
            var above = [Bool](repeating: false, count: order.count)
            for (position, entry) in order.enumerated() where entry.parent >= 0 {
                above[position] = above[entry.parent] || subscribes[entry.parent]
            }
            for position in order.indices where above[position] { selected[position] = false }
        case .last:
            // Children come after their parent: walking backwards, `below` is complete.
            var below = [Bool](repeating: false, count: order.count)
            for position in order.indices.reversed() where order[position].parent >= 0 {
                let parent = order[position].parent
                below[parent] = below[parent] || below[position] || subscribes[position]
            }
            for position in order.indices where below[position] { selected[position] = false }
        }
        var recipients: [(Node, Subscription)] = []
        for (position, entry) in order.enumerated() where selected[position] {
            for subscription in entry.node.subscriptions where !subscription.isRemoved && subscription.matcher.matches(type) {
                recipients.append((entry.node, subscription))
            }
        }
        return recipients
    }
}
