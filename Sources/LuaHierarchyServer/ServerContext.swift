#if Server
internal import Hummingbird
internal import NIOCore

/// A request's context: Hummingbird's, plus the connection, so that a request refused
/// before its body was read (too large, too slow) can close it. Otherwise the server would
/// read the rest of the body first, for as long as the client cares to send it.
struct ServerContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let channel: any Channel

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
#endif
