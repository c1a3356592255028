#if Server
internal import NIOHTTPTypes
internal import NIOCore
internal import NIOHTTP1

/// Per connection, between the HTTP decoder and the server: what must be watched where the
/// bytes arrive, not in a route.
///
/// - A request whose body has not arrived whole within `bodyTimeout` of its head is ended
///   here, as if its body had ended (`cut` is then `.timeout`, and what comes after is
///   dropped): its route sees a short body and answers 408 in the one error shape, then
///   closes the connection. Without this, the connection's idle timer would close it
///   without a word.
/// - A graceful shutdown (Hummingbird's quiesce event) ends a body still coming in the same
///   way (`cut` is `.shutdown`, answered 503 `ShuttingDown`): a client that sent half a body
///   would otherwise hold the drain for all of `--shutdown-grace`.
/// - A body's parts that arrive in one read are passed on as one part when the read ends: a
///   chunked body sent a byte a chunk would otherwise cost the route a trip through the body's
///   async stream per byte (an attacker's find: 10 s of a core for a body of 1 MB, on the
///   debug build, where 64 KiB chunks cost 0.01 s).
/// - Bytes the HTTP parser cannot read are counted (`onParserError`) when Hummingbird answers
///   them 400 before it closes: not when the parser failed because the input ended mid-request
///   (the client left, or the connection was closed after an answer such as a 413), where no
///   answer goes out.
final class ConnectionGuard: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    private let bodyTimeout: TimeAmount
    private let onParserError: @Sendable () -> Void
    private var reading = false
    private var deadline: Scheduled<Void>?
    enum Cut { case timeout, shutdown }

    /// Why a body was ended here: the rest of this connection's input is then dropped.
    private(set) var cut: Cut?
    private var parserFailed = false
    /// The body's bytes of the read under way, not yet passed on.
    private var pending: ByteBuffer?

    init(bodyTimeout: TimeAmount, onParserError: @escaping @Sendable () -> Void) {
        self.bodyTimeout = bodyTimeout
        self.onParserError = onParserError
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard cut == nil else { return }
        switch unwrapInboundIn(data) {
        case .head: reading = true
        case .end:
            passOnPending(context: context)
            endReading()
        case .body(let part):
            if pending == nil { pending = part } else { pending!.writeImmutableBuffer(part) }
            return
        }
        context.fireChannelRead(data)
    }

    /// Passes on the body's bytes of this read as one part.
    private func passOnPending(context: ChannelHandlerContext) {
        guard let part = pending else { return }
        pending = nil
        context.fireChannelRead(wrapInboundOut(.body(part)))
    }

    /// A request still coming in when a read ends gets its deadline (most arrive whole in one
    /// read, and never need one).
    func channelReadComplete(context: ChannelHandlerContext) {
        passOnPending(context: context)
        if reading && deadline == nil && cut == nil {
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            deadline = context.eventLoop.scheduleTask(in: bodyTimeout) {
                let (handler, context) = loopBound.value
                handler.expire(context: context)
            }
        }
        context.fireChannelReadComplete()
    }

    private func expire(context: ChannelHandlerContext) {
        deadline = nil
        endBody(.timeout, context: context)
    }

    private func endBody(_ why: Cut, context: ChannelHandlerContext) {
        guard reading else { return }
        passOnPending(context: context)
        reading = false
        cut = why
        context.fireChannelRead(wrapInboundOut(.end(nil)))
        context.fireChannelReadComplete()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent {
            deadline?.cancel()
            deadline = nil
            endBody(.shutdown, context: context)
        }
        context.fireUserInboundEventTriggered(event)
    }

    private func endReading() {
        reading = false
        deadline?.cancel()
        deadline = nil
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // The decoder may report one bad request more than once: counted once per connection.
        if let parserError = error as? HTTPParserError, !parserFailed {
            parserFailed = true
            if !Self.inputEnded(parserError) && context.channel.isActive { onParserError() }
        }
        context.fireErrorCaught(error)
    }

    /// Whether reading a request failed because the connection's input ended before the
    /// request did: the parser's complaint at EOF (a client that left mid-head or mid-body, or
    /// a connection closed while a request was still coming in).
    static func inputEnded(_ error: any Error) -> Bool {
        (error as? HTTPParserError) == .invalidEOFState
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        endReading()
    }

    /// Puts the handler `make` gives on `channel`'s pipeline just past its guard, from a route,
    /// for the answer that route is making (`ConnectAnswer`, `UpgradeAnswer`). A pipeline
    /// without the guard (the in-process test server's) is left as it is.
    static func addPastGuard(on channel: any Channel, _ make: @escaping @Sendable () -> any ChannelHandler) async {
        try? await channel.eventLoop.submit {
            let pipeline = channel.pipeline.syncOperations
            guard let guardHandler = try? pipeline.handler(type: ConnectionGuard.self) else { return }
            try pipeline.addHandler(make(), position: .after(guardHandler))
        }.get()
    }
}
#endif
