/// A snapshot of a tree for tools (`luahier tree`, `luahier check`): every node in preorder
/// (depth-first, children in order), flat, so a million-deep chain needs no recursion.
public struct TreeDescription: Sendable {
    /// One responder on a node.
    public struct Responder: Sendable, Hashable {
        /// 1-based position on its node.
        public var index: Int
        /// The responder's kind.
        public var kind: ResponderKind
        /// The filter's type names, sorted; empty when it takes any type.
        public var filter: [String]
        /// Where its code is, `file:line`.
        public var location: String
    }

    /// One subscription on a node.
    public struct Subscription: Sendable, Hashable {
        /// The filter's type names, sorted; empty when it takes any type.
        public var types: [String]
        /// Where its code is, `file:line`.
        public var location: String
    }

    /// One node of the tree.
    public struct Entry: Sendable {
        /// The node's name.
        public var name: String
        /// 0 for the root (or the described top).
        public var depth: Int
        /// The parent's position in `entries`; nil for the root.
        public var parent: Int?
        /// Whether the node is the last of its parent's children (for drawing).
        public var isLastChild: Bool
        /// Whether the node has children.
        public var hasChildren: Bool
        /// Its responders, in registration order.
        public var responders: [Responder]
        /// Its subscriptions, in subscription order.
        public var subscriptions: [Subscription]
        /// Declared event types (`triggers{...}`), sorted, with where each was declared.
        public var triggers: [(type: String, location: String)]
        /// Declared error types (`reports{...}`), sorted, with where each was declared.
        public var reports: [(type: String, location: String)]
    }

    /// Every node, in preorder: the top first.
    public var entries: [Entry] = []
    /// The described top's path: `/` for the root.
    public var topPath: String

    /// The tree below and including `top`, as it stands now.
    public init(of top: Node) {
        topPath = top.path
        var pending: [(node: Node, depth: Int, parent: Int?, isLast: Bool)] = [(top, 0, nil, true)]
        while let (node, depth, parent, isLast) = pending.popLast() {
            let children = node.children
            let declarations = node.declarations
            entries.append(
                Entry(
                    name: node.name, depth: depth, parent: parent, isLastChild: isLast,
                    hasChildren: !children.isEmpty,
                    responders: node.responders.enumerated().map { offset, responder in
                        Responder(
                            index: offset + 1, kind: responder.kind, filter: responder.filter.typeNames,
                            location: responder.location)
                    },
                    subscriptions: node.subscriptions.map { Subscription(types: $0.filter.typeNames, location: $0.location) },
                    triggers: (declarations?.events ?? [:]).sorted { $0.key < $1.key }.map { ($0.key, $0.value) },
                    reports: (declarations?.errors ?? [:]).sorted { $0.key < $1.key }.map { ($0.key, $0.value) }))
            let position = entries.count - 1
            for (offset, child) in children.enumerated().reversed() {
                pending.append((child, depth + 1, position, offset == children.count - 1))
            }
        }
    }
}

extension TreeDescription {
    /// The path of the entry at `position`, built on demand: storing every path would cost
    /// the square of the depth in a deep chain.
    public func path(of position: Int) -> String {
        var names: [String] = []
        var current = position
        while let parent = entries[current].parent {
            names.append(entries[current].name)
            current = parent
        }
        let base = topPath == "/" ? "" : topPath
        return names.isEmpty ? topPath : base + "/" + names.reversed().joined(separator: "/")
    }

    /// Calls `body` with each entry's position and path, in order, building each path from
    /// its parent's in one reused buffer: time in proportion to the paths' total size,
    /// memory in proportion to the depth.
    public func forEachPath(_ body: (Int, String) -> Void) {
        var buffer = topPath == "/" ? "" : topPath
        var lengthAtDepth: [Int] = [buffer.utf8.count]
        for (position, entry) in entries.enumerated() {
            if entry.parent == nil {
                body(position, topPath)
                continue
            }
            let keep = lengthAtDepth[entry.depth - 1]
            lengthAtDepth.removeSubrange(entry.depth...)
            buffer = String(decoding: buffer.utf8.prefix(keep), as: UTF8.self)
            buffer += "/" + entry.name
            lengthAtDepth.append(buffer.utf8.count)
            body(position, buffer)
        }
    }
}

extension Hierarchy {
    /// The whole tree, for tools.
    public func describeTree() -> TreeDescription {
        TreeDescription(of: root)
    }
}
