#if Server
internal import HTTPTypes
internal import NIOHTTPTypes
internal import NIOCore
internal import NIOHTTP1

/// Per connection, beside `ConnectionGuard`: the answer to a `CONNECT` request, written whole,
/// then the connection closed.
///
/// No route takes `CONNECT`: its answer is a 405 or a 404 in the one error shape, never a
/// tunnel. But NIO's response encoder frames every answer to a `CONNECT` as a tunnel's (no
/// body, no length), and its parser takes what follows a `CONNECT` as the tunnel's bytes, never
/// as a request: the error object would be lost, and a request sent after it would wait for
/// the idle timer. So that answer is written here, past the encoder, with its body, its length
/// and `Connection: close`, and the connection is closed once it is out.
final class ConnectAnswer: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// Requests whose head came in, and answers whose end went out, on this connection: the
    /// answer to the `CONNECT` is the one that ends when `answered` is `connect`'s number.
    private var requests = 0
    private var answered = 0
    private var connect: Int?
    private var head: HTTPResponse?
    private var body: ByteBuffer?

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head(let request) = unwrapInboundIn(data) {
            if request.method == .connect && connect == nil { connect = requests }
            requests += 1
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard connect == answered else {
            if case .end = unwrapOutboundIn(data) { answered += 1 }
            return context.write(data, promise: promise)
        }
        switch unwrapOutboundIn(data) {
        case .head(let response) where (100..<200).contains(response.status.code):
            return context.write(data, promise: promise)
        case .head(let response):
            head = response
        case .body(var part):
            if body == nil { body = part } else { body!.writeBuffer(&part) }
        case .end:
            answered += 1
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
