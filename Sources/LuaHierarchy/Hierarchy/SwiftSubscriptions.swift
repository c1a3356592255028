/// The handle `subscribe` returns; `remove()` unsubscribes, and may be called any number of
/// times.
public struct SubscriptionHandle {
    let subscription: Subscription
    /// Takes the subscription off its node. Idempotent.
    public func remove() { subscription.remove() }
    /// Where its code was written, `file:line`.
    public var location: String { subscription.location }
    /// Whether `remove()` has been called.
    public var isRemoved: Bool { subscription.isRemoved }
}

extension Node {
    /// Subscribes `body` to events of the filter's types published from an ancestor
    /// (contract §6). A thrown error is reported at this node.
    @discardableResult
    public func subscribe(
        _ filter: TypeFilter, file: StaticString = #fileID, line: UInt = #line,
        _ body: @escaping (Value) throws -> Void
    ) -> SubscriptionHandle {
        let location = "\(file):\(line)"
        let subscription = Subscription(
            filter: filter,
            body: SwiftResponderBody(location: location) { try body($0); return .notHandled },
            location: location)
        appendSubscription(subscription)
        return SubscriptionHandle(subscription: subscription)
    }
}

extension Hierarchy {
    /// Publishes `event` to the subscribers below the node at `path` that `scope` selects.
    public func publish(_ event: Value, at path: String, to scope: PublishScope = .all) throws -> PublishResult {
        guard let node = try node(at: path) else { throw HierarchyError.noSuchNode(path) }
        return try publish(event, at: node, to: scope)
    }

    /// Publishes `event` to the subscribers below `node`, a node of this hierarchy, that
    /// `scope` selects.
    public func publish(_ event: Value, at node: Node, to scope: PublishScope = .all) throws -> PublishResult {
        guard node.tree === root.tree else { throw HierarchyError.foreignNode }
        guard let message = Message(event, as: .event) else { throw HierarchyError.invalidEvent("\(event)") }
        return try withDispatchBudget { () throws(DispatchDepthExceeded) in
            try dispatcher.publish(message, from: node, to: scope)
        }
    }
}
