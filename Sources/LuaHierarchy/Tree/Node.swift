/// Marks which tree a node belongs to, so nodes of two hierarchies are never mixed, and
/// counts structural changes (removals, moves) so nodes can cache their paths.
final class TreeToken {
    var generation = 0
    /// What the tree's own copies are charged to (names, paths, declarations, traces): the
    /// host's memory cap (contract §7). Held through its reference: nodes may outlive the host.
    /// Nil: nothing is counted.
    var meter: (any MemoryMeter)? {
        get { meterReference?.meter }
        set { meterReference = newValue?.reference }
    }
    private var meterReference: MeterReference?
    /// Nodes that ever declared types: while 0, dispatch skips the safety check.
    var declaringNodes = 0
    /// Counts every change that can make a chain snapshot differ from the tree: responders
    /// added or removed, subtrees removed or moved, types declared, dispatch settings changed.
    /// At a fixed address, so code in C can read it: a kept chain plan is valid only while it
    /// stands still (ChainPlan.swift).
    let chainChanges: UnsafeMutablePointer<Int> = {
        let counter = UnsafeMutablePointer<Int>.allocate(capacity: 1)
        counter.initialize(to: 0)
        return counter
    }()

    /// Told when a responder is removed, so dispatches under way skip it (the engine).
    var responderRemoved: ((Responder) -> Void)?

    deinit { chainChanges.deallocate() }

    /// The tops of removed subtrees, weakly, newest last: tools find a node that is still
    /// alive in one by its relative path (`Hierarchy.detachedNode(at:)`). Dead entries go
    /// once the list has doubled since it was last swept, so it stays within twice the
    /// removed subtrees alive.
    private(set) var removedTops: [Weak] = []
    private var sweptCount = 0

    struct Weak {
        weak var node: Node?
    }

    func noteRemoved(_ top: Node) {
        removedTops.append(Weak(node: top))
        if removedTops.count > max(64, 2 * sweptCount) {
            removedTops.removeAll { $0.node == nil || $0.node?.parent != nil }
            sweptCount = removedTops.count
        }
    }

    /// Notes a change that cached chains must see.
    @inline(__always)
    func noteChainChange() { chainChanges.pointee &+= 1 }
}

/// One node of the responder tree. The tree owns its nodes downward (a parent holds its
/// children); a removed subtree lives on for as long as something (a Lua variable, a Swift
/// reference) still holds it, and can be re-attached with `move(to:)`.
///
/// Children form a doubly linked list (a parent holds the first, each child the next), so
/// adding and removing are O(1) at any width, and a leaf costs no array.
public final class Node {
    /// Non-empty, without "/". Unique among its siblings.
    public let name: String
    /// Nil for the root and for the top of a detached subtree. Unowned because a parent
    /// always outlives its attached children; teardown clears it in the children it leaves.
    @exclusivity(unchecked) public private(set) unowned(unsafe) var parent: Node?
    private var firstChild: Node?
    private unowned(unsafe) var lastChild: Node?
    private var nextSibling: Node?
    private unowned(unsafe) var previousSibling: Node?
    /// How many children the node has.
    public private(set) var childCount = 0
    /// In registration order. Dispatch snapshots this array (copy-on-write makes it O(1)).
    @exclusivity(unchecked) var responders: [Responder] = []
    /// What few nodes have, out of line, so a plain node stays small in a million-node tree.
    private(set) var extras: Extras?

    final class Extras {
        /// Built once a node has many children, so `child(_:)` stays O(1) in wide trees.
        var childIndex: [String: Node]?
        /// In subscription order (contract §6).
        var subscriptions: [Subscription] = []
        /// `triggers{...}` / `reports{...}` (contract §6), nil until the first declaration.
        var declarations: Declarations?
    }

    /// The extras, made on first use.
    func makeExtras() -> Extras {
        if let extras { return extras }
        let made = Extras()
        extras = made
        return made
    }

    var subscriptions: [Subscription] { extras?.subscriptions ?? [] }
    var declarations: Declarations? { extras?.declarations }
    let tree: TreeToken
    /// Whether this node is its tree's root.
    public let isRoot: Bool

    init(name: String, tree: TreeToken, isRoot: Bool = false) {
        self.name = name
        self.tree = tree
        self.isRoot = isRoot
    }

    /// Tears the subtree down iteratively: releasing a million-deep chain one `deinit` inside
    /// the next would overflow the stack. Each node is emptied of its children before it is
    /// released, so no `deinit` ever recurses.
    deinit {
        // What `child(_:)` and `path` charged (the root was made before the tree had a meter).
        let held = (isRoot ? 0 : MemoryCost.node(named: name)) + MemoryCost.string(cachedPath)
        if held > 0 { tree.meter?.release(held) }
        for responder in responders { responder.node = nil }
        for subscription in subscriptions { subscription.node = nil }
        guard firstChild != nil else { return }
        var pending: [Node] = []
        takeChildren(into: &pending)
        while let node = pending.popLast() {
            node.takeChildren(into: &pending)
        }
    }

    /// Moves this node's children into `nodes` (as strong references), unlinked.
    private func takeChildren(into nodes: inout [Node]) {
        var child = firstChild
        firstChild = nil
        lastChild = nil
        extras?.childIndex = nil
        childCount = 0
        while let current = child {
            child = current.nextSibling
            current.nextSibling = nil
            current.previousSibling = nil
            current.parent = nil
            nodes.append(current)
        }
    }

    /// The children, in order of creation (or of arrival, for moved nodes).
    public var children: [Node] {
        var result: [Node] = []
        result.reserveCapacity(childCount)
        var child = firstChild
        while let current = child {
            result.append(current)
            child = current.nextSibling
        }
        return result
    }

    /// `/` for the root, `/a/b` below it. A node in a detached subtree has a relative path
    /// that starts with its detached top's name (`feed/cell-1`), so it never passes for a
    /// rooted one.
    public var path: String {
        if let cachedPath, cachedPathGeneration == tree.generation { return cachedPath }
        let path = computePath()
        // A cached path is a copy held for the script: charged while it is kept. One the meter
        // refuses is not kept (the refusal trips the running budget).
        let cost = MemoryCost.string(path)
        let old = MemoryCost.string(cachedPath)
        if cost > 0 || old > 0, let meter = tree.meter {
            if old > 0 { meter.release(old) }
            if cost > 0 && !meter.charge(cost) {
                cachedPath = nil
                return path
            }
        }
        cachedPath = path
        cachedPathGeneration = tree.generation
        return path
    }

    /// Charged to the tree's meter (by its cost) while it is set.
    private var cachedPath: String?
    private var cachedPathGeneration = 0

    private func computePath() -> String {
        var names: [String] = []
        var node = self
        while let parent = node.parent {
            names.append(node.name)
            node = parent
        }
        if node.isRoot { return "/" + names.reversed().joined(separator: "/") }
        names.append(node.name)
        return names.reversed().joined(separator: "/")
    }

    /// Whether the chain from this node reaches `root` (false inside a detached subtree).
    func isAttached(to root: Node) -> Bool { top === root }

    /// The top of this node's chain: the root, or the top of the detached subtree it is in.
    var top: Node {
        var node = self
        while let parent = node.parent { node = parent }
        return node
    }

    /// The number of nodes from the root (or the detached top) down to this one.
    public var depth: Int {
        var count = 0
        var node = self
        while let parent = node.parent {
            count += 1
            node = parent
        }
        return count
    }

    /// The child called `name`, created at the end of `children` if absent.
    public func child(_ name: String) throws(TreeError) -> Node {
        if let existing = existingChild(name) { return existing }
        try Node.validate(name: name)
        if let meter = tree.meter, !meter.charge(MemoryCost.node(named: name)) {
            throw .memoryLimitExceeded(limit: meter.memoryLimit ?? 0)
        }
        // Charged to the meter until the node is freed (its deinit gives it back).
        let node = Node(name: name, tree: tree)
        attach(node)
        return node
    }

    /// The child called `name`, or nil.
    public func existingChild(_ name: String) -> Node? {
        if let childIndex = extras?.childIndex { return childIndex[name] }
        var child = firstChild
        while let current = child {
            if current.name == name { return current }
            child = current.nextSibling
        }
        return nil
    }

    /// Detaches this subtree from its parent. Dispatch inside it stops at its top with
    /// status `detached`. Removing a detached top or the root does nothing.
    public func remove() {
        guard let parent else { return }
        if let previousSibling { previousSibling.nextSibling = nextSibling } else { parent.firstChild = nextSibling }
        if let nextSibling { nextSibling.previousSibling = previousSibling } else { parent.lastChild = previousSibling }
        parent.extras?.childIndex?[name] = nil
        parent.childCount -= 1
        tree.generation &+= 1
        tree.noteChainChange()
        previousSibling = nil
        nextSibling = nil
        self.parent = nil
        tree.noteRemoved(self)
    }

    /// Moves this subtree under `newParent`, at the end of its children. Refused when it
    /// would make a cycle, when `newParent` already has a child of this name, or across trees.
    public func move(to newParent: Node) throws(TreeError) {
        guard newParent.tree === tree else { throw .differentTree }
        if isRoot { throw .rootCannotMove }
        var ancestor: Node? = newParent
        while let node = ancestor {
            if node === self { throw .cycle(moving: path, under: newParent.path) }
            ancestor = node.parent
        }
        if newParent === parent { return }
        if newParent.existingChild(name) != nil { throw .nameTaken(name: name, parent: newParent.path) }
        remove()
        newParent.attach(self)
        tree.generation &+= 1
        tree.noteChainChange()
    }

    private func attach(_ node: Node) {
        node.parent = self
        node.previousSibling = lastChild
        if let lastChild { lastChild.nextSibling = node } else { firstChild = node }
        lastChild = node
        childCount += 1
        // Mutated in place through the class reference: a copy per insert would be O(n²).
        if extras?.childIndex != nil {
            extras!.childIndex![node.name] = node
        } else if childCount > 16 {
            makeExtras().childIndex = Dictionary(uniqueKeysWithValues: children.map { ($0.name, $0) })
        }
    }

    func appendResponder(_ responder: Responder) {
        responder.node = self
        responders.append(responder)
        tree.noteChainChange()
    }

    /// Takes `responder` off the list; returns the work it took (entries looked at and moved).
    /// Searched from the end: the newest go first in a cleanup, so removing a node's
    /// responders newest first is linear; oldest first is charged as it goes.
    func detachResponder(_ responder: Responder) -> Int {
        guard let index = responders.lastIndex(where: { $0 === responder }) else { return responders.count }
        responders.remove(at: index)
        return 2 * (responders.count - index) + 1
    }

    func appendSubscription(_ subscription: Subscription) {
        subscription.node = self
        makeExtras().subscriptions.append(subscription)
    }

    /// As `detachResponder`, for a subscription.
    func detachSubscription(_ subscription: Subscription) -> Int {
        guard let index = extras?.subscriptions.lastIndex(where: { $0 === subscription }) else { return subscriptions.count }
        extras!.subscriptions.remove(at: index)
        return 2 * (subscriptions.count - index) + 1
    }

    static func validate(name: String) throws(TreeError) {
        if name.isEmpty || name.contains("/") { throw .invalidName(name) }
    }
}

/// Why a tree operation was refused.
public enum TreeError: Error, Hashable, Sendable, CustomStringConvertible {
    case invalidName(String)
    case invalidPath(String)
    case cycle(moving: String, under: String)
    case nameTaken(name: String, parent: String)
    case differentTree
    case rootCannotMove
    /// Creating the node would pass the memory cap (contract §7): the host counts every node's
    /// name and object against `Limits.memory`, as it counts the Lua heap.
    case memoryLimitExceeded(limit: Int)

    /// What was refused and why, in one line for a person.
    public var description: String {
        switch self {
        case .invalidName(let name):
            return "invalid node name \(String(reflecting: name)): a name is non-empty and has no '/'"
        case .invalidPath(let path):
            return "invalid path \(String(reflecting: path)): a path is '/' or '/name/name...'"
        case .cycle(let moving, let under):
            return "cannot move \(moving) under \(under): it would make a cycle"
        case .nameTaken(let name, let parent):
            return "cannot move: \(parent) already has a child named \(String(reflecting: name))"
        case .differentTree:
            return "cannot move a node into another hierarchy"
        case .rootCannotMove:
            return "the root cannot be moved"
        case .memoryLimitExceeded(let limit):
            return "MemoryLimitExceeded: memory limit exceeded: the script may hold at most \(limit) bytes "
                + "(set with --max-memory or Limits.memory)"
        }
    }
}
