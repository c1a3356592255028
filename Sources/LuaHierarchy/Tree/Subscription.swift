/// One `subscribe` on one node: a filter and the code to call. What the code returns is
/// ignored; an error it raises is reported at its node.
final class Subscription: Registration {
    let filter: TypeFilter
    /// `filter`, as publishes check it.
    let matcher: TypeMatcher
    let body: any ResponderBody
    let location: String
    private(set) var isRemoved = false
    /// Unowned for the reason `Responder.node` is; the node clears it when it goes away.
    unowned(unsafe) var node: Node?

    init(filter: TypeFilter, body: any ResponderBody, location: String) {
        self.filter = filter
        matcher = TypeMatcher(filter)
        self.body = body
        self.location = location
    }

    func remove() {
        guard !isRemoved else { return }
        isRemoved = true
        if let node {
            // As for a responder: finding it in the node's list is charged host work.
            let work = node.detachSubscription(self)
            _ = node.tree.meter?.chargeWork(work)
        }
    }

    var summary: String { "subscription \(filter.summary) (\(location))" }

    var liveNode: Node? { isRemoved ? nil : node }
}

/// One subscription receiving a published event, as `Hierarchy.onDelivery` sees it.
public struct PublishDelivery: Sendable, Hashable {
    /// The subscriber node's path.
    public var node: String
    /// Where the subscription's code is, `file:line`.
    public var location: String
    /// The event's type as it was delivered.
    public var type: String
}
