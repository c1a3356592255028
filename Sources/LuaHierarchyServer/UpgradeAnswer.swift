#if Server
internal import HTTPTypes
internal import NIOHTTPTypes
internal import NIOCore

/// The answer to a request that asks to switch protocols (`Upgrade`), sent with
/// `Connection: close`, then its connection closed: a handler put on that one connection's
/// pipeline (`install(on:)`) when such a request reaches the routes.
///
/// The server speaks no other protocol, so the request is answered as any other. But NIO's
/// HTTP parser stops reading requests after one that asks to upgrade, waiting for the new
/// protocol's bytes: a request sent after it on the same connection would get no answer
/// until the idle timer closed the connection. Closing once the answer is out tells the
/// client at once; the answer itself is framed by the encoder as ever (its body streams).
final class UpgradeAnswer: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// Whether `request` asks to switch protocols.
    static func applies(to request: HTTPRequest) -> Bool {
        request.headerFields[.upgrade] != nil
    }

    /// Puts the handler on `channel`'s pipeline, past `ConnectionGuard`, before the request's
    /// answer is written (as `ConnectAnswer.install(on:)`, whose reasoning holds here: the
    /// first answer the handler sees is this request's).
    static func install(on channel: any Channel) async {
        await ConnectionGuard.addPastGuard(on: channel) { UpgradeAnswer() }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(var response) where !(100..<200).contains(response.status.code):
            response.headerFields[.connection] = "close"
            context.write(wrapOutboundOut(.head(response)), promise: promise)
        case .end:
            let written = context.eventLoop.makePromise(of: Void.self)
            if let promise { written.futureResult.cascade(to: promise) }
            context.writeAndFlush(data, promise: written)
            let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
            written.futureResult.whenComplete { _ in loopBound.value.close(promise: nil) }
        default:
            context.write(data, promise: promise)
        }
    }
}
#endif
