/// Which responder did something: its 1-based position on its node, where its code is, its kind.
public struct ResponderInfo: Hashable, Sendable {
    /// 1-based position on its node.
    public var index: Int
    /// Where its code is, `file:line`.
    public var location: String
    /// The responder's kind.
    public var kind: ResponderKind
}

/// One responder call, recorded when tracing is on.
public struct TraceStep: Hashable, Sendable, CustomStringConvertible {
    /// What the responder's call came to.
    public enum Result: Hashable, Sendable {
        case handled
        case notHandled
        /// The value was replaced (receive, transform) or caught into an event (catchError).
        case replaced(Domain, type: String)
        /// An error was raised inside the responder, or its return broke the contract.
        case raised(type: String)
    }

    /// The path of the node the responder is on.
    public var node: String
    /// Which responder was called.
    public var responder: ResponderInfo
    /// The type of the value the responder was called with.
    public var input: String
    /// What the call came to.
    public var result: Result
    /// With full tracing: the value before a replacement.
    public var before: Value?
    /// With full tracing: the value after a replacement.
    public var after: Value?
    /// True when the step recorded a value before or after its replacement that the trace
    /// could not keep under the memory cap (`before` and `after` are then nil): a value left
    /// out is always said to be.
    public var valuesOmitted = false

    /// The result as traces print it: `handled`, `notHandled`, `event Tap`, `raised LuaError`.
    public var resultDescription: String {
        switch result {
        case .handled: return "handled"
        case .notHandled: return "notHandled"
        case .replaced(let domain, let type): return "\(domain == .event ? "event" : "error") \(type)"
        case .raised(let type): return "raised \(type)"
        }
    }

    /// One line: `node #index kind (file:line): input -> result`.
    public var description: String {
        "\(node) #\(responder.index) \(responder.kind.rawValue) (\(responder.location)): \(input) -> \(resultDescription)"
    }
}

/// How a dispatch ended (contract §5): plain data, safe to hand to another task or actor.
public struct Outcome: Sendable, Hashable {
    /// Where the value ended up.
    public enum Status: String, Sendable, Hashable {
        /// A responder handled the value.
        case handled
        /// The value passed the root: an unhandled error went to the presenter.
        case unhandled
        /// The value reached the top of a detached subtree: nothing reached the root.
        case detached
    }

    /// Handled, unhandled (it passed the root), or detached (it reached a cut chain's top).
    public var status: Status
    /// The domain of the final value: an event can end as an error and an error as an event.
    public var kind: Domain
    /// The final value, as plain data (functions and cycles described, never lost silently).
    public var value: Value
    /// The path of the node whose responder handled it.
    public var by: String?
    /// Which responder handled it: its position on its node, `file:line` and kind.
    public var responder: ResponderInfo?
    /// Every responder call, when tracing is on.
    public var trace: [TraceStep]?
    /// The path of the node the value was triggered or reported at.
    public var at: String
    /// For an alert a `handleAlertErrors` handled: the recovery option chosen (by the
    /// responder's function, or else by the host's alert presenter), if any.
    public var choice: String?
    /// Seen by `Hierarchy.onDispatch` with tracing on, for a dispatch started inside a
    /// responder: the position (0-based) in the enclosing dispatch's trace of that responder's
    /// step. Nil for a top-level dispatch, or one a publish subscriber started.
    public var enclosingStep: Int? = nil
    /// The revision that answered it, for an outcome from a `RulesPool` (contract §9); nil for a
    /// hierarchy's own.
    public var revision: Revision? = nil
}

/// An error that reached a presenter: it passed the root unhandled. Plain data, `Sendable`.
public struct PresentedError: Sendable, Hashable {
    /// The error, as plain data (`type`, `message`, `where`, `cause`, ...).
    public var error: Value
    /// The path of the node it was reported (or raised) at.
    public var reportedAt: String
    /// It came from a detached subtree: it reached the presenter only because
    /// `DetachedPolicy.presenter` is set.
    public var detached = false
    /// How many dispatches and publishes were under way when it was presented: 1 for an
    /// entry's own dispatch (0 once it has ended, for a limit), more for one nested in it.
    var nestingDepth = 0

    /// A presented `error`, reported at the node at `reportedAt`; `detached` when it came
    /// from a detached subtree.
    public init(error: Value, reportedAt: String, detached: Bool = false) {
        self.error = error
        self.reportedAt = reportedAt
        self.detached = detached
    }
}

/// What becomes of an error that reaches the top of a detached subtree unhandled.
public enum DetachedPolicy: String, Sendable, CaseIterable {
    /// Nothing reaches the root or its presenter (contract §2). The default.
    case drop
    /// The root's presenter receives it, marked `detached`.
    case presenter
}
