#if Server
internal import Hummingbird
internal import NIOCore
import Synchronization

/// A request's context: Hummingbird's, plus the connection, so that a request refused
/// before its body was read (too large, too slow) can close it (otherwise the server would
/// read the rest of the body first, for as long as the client cares to send it); plus who the
/// request is (`RequestIdentity`, set by `RequestLog`) and what its route answered, for the
/// access log line (`RequestNotes`).
struct ServerContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let channel: any Channel
    var identity = RequestIdentity(id: "", traceID: nil, parentSpanID: nil)
    let notes = RequestNotes()

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }

    /// Closes the connection shortly after the answer is written.
    func closeAfterAnswer() {
        let channel = self.channel
        channel.eventLoop.scheduleTask(in: .milliseconds(200)) { channel.close(promise: nil) }
    }
}

/// What a route tells the access log of its answer: the outcome's status and kind (one
/// request), the counts by status (a batch), the revision that answered. A streamed batch
/// also says when its last answer was read.
final class RequestNotes: Sendable {
    struct Notes {
        var status: String?
        var kind: String?
        var revision: String?
        var counts: [String: Int] = [:]
        var streamed = false
    }

    private let notes = Mutex(Notes())

    func set(_ change: (inout Notes) -> Void) {
        notes.withLock { change(&$0) }
    }

    var current: Notes { notes.withLock { $0 } }

    /// Whether the answer is a streamed batch: asked of every request, and read without
    /// copying the rest.
    var streamed: Bool { notes.withLock { $0.streamed } }
}
#endif
