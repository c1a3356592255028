/// The seven responder kinds of contract §4, and `handleAlertErrors` (§6), named as in Lua.
public enum ResponderKind: String, Sendable, CaseIterable {
    case receiveEvent, handleEvent, transformEvent
    case receiveError, handleError, transformError, catchError
    /// Handles alertable errors (those with a string `title`): the host presents the alert
    /// and a recovery option may be chosen. Other errors pass it untouched.
    case handleAlertErrors

    /// The domain of the values this kind is called with.
    public var domain: Domain {
        switch self {
        case .receiveEvent, .handleEvent, .transformEvent: return .event
        default: return .error
        }
    }

    /// The domain of a value this kind returns in place of its input.
    var replacementDomain: Domain { self == .catchError ? .event : domain }

    /// What a responder of this kind must return, for contract errors.
    var expectedReturn: String {
        switch self {
        case .receiveEvent: return "\"handled\", \"notHandled\" or an event"
        case .receiveError: return "\"handled\", \"notHandled\" or an error"
        case .handleEvent, .handleError: return "anything"
        case .transformEvent, .catchError: return "an event"
        case .transformError: return "an error"
        case .handleAlertErrors: return "nil or one of the error's recovery options"
        }
    }
}

/// What a responder body gave back, before the dispatcher reads it by the responder's kind.
/// Indirect: the common answers carry nothing, and a reply one word wide is returned in a
/// register instead of being copied through memory on every call.
indirect enum ResponderReply {
    case handled
    case notHandled
    /// A value, already normalized into the domain the dispatcher asked for.
    case value(Message)
    /// A return no kind accepts as a value (nil, a number, a table without `type`, ...).
    case unusable(description: String)
    /// An error raised inside the body, as an error message.
    case raised(Message)
    /// A host limit tripped (instructions, time, memory): the dispatch ends with this error.
    case aborted(Message)
    /// An alert responder's answer: a recovery option, or nil to leave it to the host.
    case choice(String?)
}

/// The code behind a responder: a Lua function or a Swift closure.
protocol ResponderBody: AnyObject {
    /// Calls the body with `input`. A returned value is read in `domain`. The body may
    /// replace `input.payload` with an equivalent it can pass more cheaply next time.
    func call(with input: inout Message, returning domain: Domain) -> ResponderReply
    /// Calls the body of an alert responder: `.choice` (nil or a string) unless it failed.
    func callForChoice(with input: inout Message) -> ResponderReply
    /// Calls the body of a subscriber, whose result is ignored (contract §6): never read, so a
    /// table it returns is not made a value of either domain. `.notHandled` unless it failed.
    func callForEffect(with input: inout Message) -> ResponderReply
}

extension ResponderBody {
    func callForEffect(with input: inout Message) -> ResponderReply {
        let reply = call(with: &input, returning: .event)
        switch reply {
        case .raised, .aborted: return reply
        default: return .notHandled
        }
    }
}

/// Something a handle can take back: a responder or a subscription.
protocol Registration: AnyObject {
    /// Takes the registration off its node. Idempotent.
    func remove()
    var isRemoved: Bool { get }
    /// For `tostring` of a handle: `responder receiveEvent (rules.lua:3)`.
    var summary: String { get }
    /// The node it is registered on, while it is (nil once removed, or once the node is gone:
    /// its `node` is not read then, since a removed registration's node may be freed).
    var liveNode: Node? { get }
}

extension Responder {
    var liveNode: Node? { isRemoved ? nil : node }
}

/// One registration on one node.
final class Responder: Registration {
    let kind: ResponderKind
    let filter: TypeFilter
    /// `filter`, as dispatches check it.
    let matcher: TypeMatcher
    let body: any ResponderBody
    /// Where the code was written, `file:line`: a Lua function's definition, a Swift call site.
    let location: String
    /// Set by `remove()`: a removed responder is skipped even by dispatches already running.
    @exclusivity(unchecked) var isRemoved = false
    /// Unowned (not weak: a weak reference gives the node a side table and slows every
    /// retain of it); the node clears it when it goes away.
    unowned(unsafe) var node: Node?

    init(kind: ResponderKind, filter: TypeFilter, body: any ResponderBody, location: String) {
        self.kind = kind
        self.filter = filter
        matcher = TypeMatcher(filter)
        self.body = body
        self.location = location
    }

    /// Takes the responder off its node. Idempotent. Dispatches under way that have it in
    /// their snapshot do not call it either (contract §4): the tree tells whoever runs them.
    func remove() {
        guard !isRemoved else { return }
        isRemoved = true
        if let node {
            node.tree.noteChainChange()
            // Finding it in the node's list is host work: many removals oldest first from a
            // node with many responders add up to the square of their number, so it is charged.
            let work = node.detachResponder(self)
            _ = node.tree.meter?.chargeWork(work)
            node.tree.responderRemoved?(self)
        }
    }

    var summary: String { "responder \(kind.rawValue) (\(location))" }
}

/// The handle a registration returns; `remove()` unregisters, and may be called any number
/// of times.
public struct ResponderHandle {
    let responder: Responder
    /// Where the responder was registered: the next one a handle registers goes there too.
    let node: Node
    /// Takes the responder off its node. Idempotent.
    public func remove() { responder.remove() }
    /// The responder's kind.
    public var kind: ResponderKind { responder.kind }
    /// Where its code was written, `file:line`.
    public var location: String { responder.location }
    /// Whether `remove()` has been called.
    public var isRemoved: Bool { responder.isRemoved }
}
