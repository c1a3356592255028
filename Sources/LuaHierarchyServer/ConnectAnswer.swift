#if Server
internal import HTTPTypes
internal import NIOHTTPTypes
internal import NIOCore
internal import NIOHTTP1

/// The answer to a `CONNECT` request, written whole, then its connection closed: a handler put
/// on that one connection's pipeline (`install(on:)`) when a `CONNECT` reaches the routes.
///
/// No route takes `CONNECT`: its answer is a 405 or a 404 in the one error shape, never a
/// tunnel. But NIO's response encoder frames every answer to a `CONNECT` as a tunnel's (no
/// body, no length), and its parser takes what follows a `CONNECT` as the tunnel's bytes, never
/// as a request: the error object would be lost, and a request sent after it would wait for
/// the idle timer. So that answer is written here, past the encoder, with its body, its length
/// and `Connection: close`, and the connection is closed once it is out.
///
/// It is added when needed rather than to every connection: a handler on every pipeline is
/// one more step each way for every request part, which cost every request 1.6–2.1% of its
/// instructions for a method no client of a rules server sends.
final class ConnectAnswer: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private var head: HTTPResponse?
    private var body: ByteBuffer?

    /// Puts the handler on `channel`'s pipeline, past `ConnectionGuard`, before the `CONNECT`'s
    /// answer is written. A connection answers its requests one after the other, and every
    /// part of the answers before this one was handed to the event loop before this request
    /// reached the routes: the first answer the handler sees is the `CONNECT`'s. A pipeline
    /// without the guard (the in-process test server's) is left as it is.
    static func install(on channel: any Channel) async {
        await ConnectionGuard.addPastGuard(on: channel) { ConnectAnswer() }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let response) where (100..<200).contains(response.status.code):
            return context.write(data, promise: promise)
        case .head(let response):
            head = response
        case .body(var part):
            if body == nil { body = part } else { body!.writeBuffer(&part) }
        case .end:
            send(context: context)
        }
        promise?.succeed(())
    }

    /// The answer as bytes, handed to the handler past the response encoder, then the close.
    private func send(context: ChannelHandlerContext) {
        guard let head, let encoder = try? context.pipeline.syncOperations.context(handlerType: HTTPResponseEncoder.self) else {
            context.close(promise: nil)
            return
        }
        let framing: [HTTPField.Name] = [.contentLength, .transferEncoding, .connection]
        var bytes = context.channel.allocator.buffer(capacity: 512 + (body?.readableBytes ?? 0))
        bytes.writeString("HTTP/1.1 \(head.status.code) \(head.status.reasonPhrase)\r\n")
        for field in head.headerFields where !framing.contains(field.name) {
            bytes.writeString("\(field.name.rawName): \(field.value)\r\n")
        }
        bytes.writeString("Content-Length: \(body?.readableBytes ?? 0)\r\nConnection: close\r\n\r\n")
        if var body { bytes.writeBuffer(&body) }
        let written = context.eventLoop.makePromise(of: Void.self)
        encoder.writeAndFlush(NIOAny(bytes), promise: written)
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        written.futureResult.whenComplete { _ in loopBound.value.close(promise: nil) }
    }
}
#endif
