/// The chain plans the dispatcher keeps, per origin node, so that a dispatch from a node it
/// has a current plan for builds no chain (ChainPlan.swift).
///
/// - Direct-mapped by the origin's address: a look-up is a few instructions and no hashing;
///   two origins that share a slot cost each other a plan now and then, nothing more.
/// - A plan is made at the second dispatch from a node since the tree last changed (the first
///   only notes the node), so dispatches from ever-new nodes, or a tree changed between every
///   two dispatches, make no plan that is never used.
/// - Plans hold their nodes and responders. When the tree changes, every slot is emptied at
///   the next dispatch, so a removed subtree is held at most until then, by at most
///   `slotCount` plans.
struct KeptPlans {
    static let slotCount = 256

    private enum Slot {
        case empty
        /// One dispatch from this node since the last change.
        case seen(ObjectIdentifier)
        /// Its chain is past the plan limits: built each time, never planned.
        case refused(ObjectIdentifier)
        case plan(ChainPlan)
    }

    private var slots = [Slot](repeating: .empty, count: slotCount)
    /// The slots not empty, to empty them without a pass over all.
    private var used: [Int] = []
    /// The tree's `chainChanges` when the slots were filled.
    private var epoch = 0

    /// The current plan for dispatching from `origin`, made if this is the node's second
    /// dispatch; nil when the dispatcher must build the chain itself.
    mutating func plan(from origin: Node, root: Node, traced: Bool) -> ChainPlan? {
        let changes = root.tree.chainChanges.pointee
        if changes != epoch {
            forget()
            epoch = changes
        }
        // A plan holds its origin, so no other node can have its address. A noted identity
        // holds nothing: a new node at a freed one's address may inherit its `seen` or
        // `refused`, which only changes when a plan is made, never what a dispatch does.
        let identity = ObjectIdentifier(origin)
        let address = UInt(bitPattern: identity)
        // Objects are 16-byte aligned; the higher bits mix in nodes made far apart.
        let slot = Int(truncatingIfNeeded: address >> 4 ^ address >> 12) & (Self.slotCount - 1)
        switch slots[slot] {
        case .plan(let plan) where plan.links[0].node === origin:
            return plan
        case .refused(identity):
            return nil
        case .seen(identity):
            if let plan = ChainPlan.make(from: origin, root: root, traced: traced) {
                slots[slot] = .plan(plan)
                return plan
            }
            slots[slot] = .refused(identity)
            return nil
        case .empty:
            used.append(slot)
            slots[slot] = .seen(identity)
            return nil
        default:
            slots[slot] = .seen(identity)
            return nil
        }
    }

    /// How many plans are kept now.
    var count: Int {
        used.count { if case .plan = slots[$0] { true } else { false } }
    }

    private mutating func forget() {
        for slot in used { slots[slot] = .empty }
        used.removeAll(keepingCapacity: true)
    }
}
