/// An alertable error (contract §3: it has a string `title`) that a `handleAlertErrors`
/// responder handled: what a host shows, AppKit's `presentError:` with recovery options.
public struct Alert: Sendable {
    /// The error's `title`: what makes it alertable.
    public var title: String
    /// The error's `message`, if it is a string.
    public var message: String?
    /// The error's `recovery` options (its string items, in order), e.g. ["Retry", "Cancel"].
    public var recovery: [String]
    /// The option the responder's function chose, if it chose one.
    public var scriptChoice: String?
    /// The whole error.
    public var error: Value
    /// The path of the node whose responder handled it.
    public var handledBy: String
    /// The path of the node the error was reported at.
    public var reportedAt: String

    /// Nil when `error` is not alertable.
    init?(_ error: Value, handledBy: String, reportedAt: String) {
        guard let title = error["title"]?.stringValue else { return nil }
        self.title = title
        self.message = error["message"]?.stringValue
        if case .array(let items)? = error["recovery"] {
            recovery = items.compactMap(\.stringValue)
        } else {
            recovery = []
        }
        self.error = error
        self.handledBy = handledBy
        self.reportedAt = reportedAt
    }
}

/// The body of `handleAlertErrors()` without a function: it leaves the choice to the host.
final class HostChoiceBody: ResponderBody {
    /// Its registration's charge against the memory cap, given back when it goes.
    var charge: MemoryCharge?

    func call(with input: inout Message, returning domain: Domain) -> ResponderReply { .handled }
    func callForChoice(with input: inout Message) -> ResponderReply { .choice(nil) }
}
