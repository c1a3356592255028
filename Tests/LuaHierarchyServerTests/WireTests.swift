#if Server
import Foundation
import Hummingbird
import HummingbirdTesting
@testable import LuaHierarchyServer
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// What only shows on a real connection, where NIO's HTTP parser and response encoder stand
/// between the client and the routes: a `CONNECT`'s answer and close, and the methods the
/// parser refuses before any route is asked.
@Suite("The server over a connection: the HTTP parser's and encoder's part")
struct WireTests {
    /// The server's idle timer, far past any bound below: a connection left open would show as
    /// a read that never ends, not as one the timer ended.
    static func server() throws -> RulesServer {
        try RouteTests.server { _, server in server.idleTimeout = 3600 }.server
    }

    /// `request` sent on a connection of its own to `localhost:port`, and what came back until
    /// the server closed it; `closed` false if `seconds` passed first (a bound against hangs
    /// only). Read on a thread of its own: the server's tasks keep the concurrency pool.
    /// `endInput`: the client ends its side once `request` is sent (a client that leaves, as
    /// the server sees it), and reads on.
    static func exchange(
        _ request: String, port: Int, endInput: Bool = false, within seconds: Double = 600
    ) async -> (text: String, closed: Bool) {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: blockingExchange(request, port: port, endInput: endInput, within: seconds)) }.start()
        }
    }

    private static func blockingExchange(_ request: String, port: Int, endInput: Bool, within seconds: Double) -> (text: String, closed: Bool) {
        let socket = connected(port: port)
        guard socket >= 0 else { return ("cannot connect", false) }
        defer { close(socket) }
        let bytes = Array(request.utf8)
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count <= 0 { break }
            sent += count
        }
        if endInput { shutdown(socket, Int32(SHUT_WR)) }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        let giveUpAt = Date().addingTimeInterval(seconds)
        while giveUpAt.timeIntervalSinceNow > 0 {
            var ready = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            if poll(&ready, 1, Int32(giveUpAt.timeIntervalSinceNow * 1000) + 1) <= 0 { continue }
            let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            if count <= 0 { return (String(decoding: received, as: UTF8.self), true) }
            received += buffer[..<count]
        }
        return (String(decoding: received, as: UTF8.self), false)
    }

    /// A socket connected to `localhost:port` (where the live test server listens), or -1.
    private static func connected(port: Int) -> Int32 {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo("localhost", String(port), &hints, &found) == 0 else { return -1 }
        defer { freeaddrinfo(found) }
        var next = found
        while let address = next {
            let socket = Glibc.socket(address.pointee.ai_family, address.pointee.ai_socktype, address.pointee.ai_protocol)
            if socket >= 0 && connect(socket, address.pointee.ai_addr, address.pointee.ai_addrlen) == 0 { return socket }
            if socket >= 0 { close(socket) }
            next = address.pointee.ai_next
        }
        return -1
    }

    /// The body of an answer: what follows its head.
    static func body(_ text: String) -> String {
        text.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n")
    }

    @Test func aConnectIsAnsweredInTheErrorShapeAndTheConnectionClosed() async throws {
        let server = try Self.server()
        try await server.application().test(.live) { client in
            let port = try #require(client.port)
            // What follows a CONNECT is a tunnel's to the parser, never a request: it goes unanswered.
            let (text, closed) = await Self.exchange(
                "CONNECT /livez HTTP/1.1\r\nHost: x\r\n\r\nGET /livez HTTP/1.1\r\nHost: x\r\n\r\n", port: port)
            #expect(closed, "\(text)")
            #expect(text.hasPrefix("HTTP/1.1 405 "), "\(text)")
            #expect(text.contains("\r\nAllow: GET, HEAD\r\n"), "\(text)")
            #expect(text.contains("\r\nConnection: close\r\n"), "\(text)")
            let body = Self.body(text)
            #expect(text.contains("\r\nContent-Length: \(body.utf8.count)\r\n"), "\(text)")
            let error = (try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])?["error"] as? [String: Any]
            #expect(error?["type"] as? String == "MethodNotAllowed", "\(text)")
            #expect(text.components(separatedBy: "HTTP/1.1 ").count == 2, "one answer: \(text)")

            let (elsewhere, elsewhereClosed) = await Self.exchange("CONNECT /nowhere HTTP/1.1\r\nHost: x\r\n\r\n", port: port)
            #expect(elsewhereClosed, "\(elsewhere)")
            #expect(elsewhere.hasPrefix("HTTP/1.1 404 "), "\(elsewhere)")
            let missing = (try? JSONSerialization.jsonObject(with: Data(Self.body(elsewhere).utf8)) as? [String: Any])?["error"] as? [String: Any]
            #expect(missing?["type"] as? String == "NotFound", "\(elsewhere)")

            // A request before the CONNECT, on the same connection, is answered as ever.
            let (both, bothClosed) = await Self.exchange(
                "GET /livez HTTP/1.1\r\nHost: x\r\n\r\nCONNECT /livez HTTP/1.1\r\nHost: x\r\n\r\n", port: port)
            #expect(bothClosed, "\(both)")
            #expect(both.hasPrefix("HTTP/1.1 200 "), "\(both)")
            #expect(both.contains("HTTP/1.1 405 "), "\(both)")
        }
        let text = server.metrics.text(ready: true)
        #expect(text.contains(#"luahier_http_requests_total{code="405",method="CONNECT",route="/livez"} 2"#), "\(text)")
    }

    /// A request asking to switch protocols (`Upgrade`, as `curl --http2` sends on plain HTTP)
    /// is answered as any other, with `Connection: close`, and the connection closed: the
    /// parser reads no request after it, so one sent next would wait for the idle timer.
    @Test func anUpgradeRequestIsAnsweredAndTheConnectionClosed() async throws {
        let server = try Self.server()
        try await server.application().test(.live) { client in
            let port = try #require(client.port)
            for upgrade in ["websocket", "h2c"] {
                let (text, closed) = await Self.exchange(
                    "GET /livez HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: \(upgrade)\r\n\r\n"
                        + "GET /livez HTTP/1.1\r\nHost: x\r\n\r\n", port: port)
                #expect(closed, "\(upgrade): \(text)")
                #expect(text.hasPrefix("HTTP/1.1 200 "), "\(upgrade): \(text)")
                #expect(text.contains("\r\nConnection: close\r\n"), "\(upgrade): \(text)")
                #expect(text.components(separatedBy: "HTTP/1.1 ").count == 2, "one answer: \(text)")
            }
            // A dispatch asking to upgrade gets its whole answer before the close.
            let line = #"{"id":"u1","at":"/app","event":"Ask"}"#
            let (answer, answerClosed) = await Self.exchange(
                "POST /v1/dispatch HTTP/1.1\r\nHost: x\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n"
                    + "Content-Type: application/json\r\nContent-Length: \(line.utf8.count)\r\n\r\n\(line)", port: port)
            #expect(answerClosed, "\(answer)")
            #expect(answer.hasPrefix("HTTP/1.1 200 "), "\(answer)")
            let body = Self.body(answer)
            #expect(answer.contains("\r\nContent-Length: \(body.utf8.count)\r\n"), "\(answer)")
            #expect(body.contains(#""id":"u1""#), "\(answer)")
        }
    }

    /// A method the parser knows but no route takes (`QUERY`, `PROPFIND`) finds no route: 404 in
    /// the error shape. One it does not know (`get`: methods are case-sensitive; `FOO`; RTSP's
    /// `DESCRIBE`) never reaches a route: the parser's body-less 400, and the close.
    @Test func theParserRefusesMethodsItDoesNotKnowBeforeAnyRoute() async throws {
        let server = try Self.server()
        try await server.application().test(.live) { client in
            let port = try #require(client.port)
            for method in ["QUERY", "PROPFIND"] {
                let (text, _) = await Self.exchange("\(method) /livez HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", port: port)
                #expect(text.hasPrefix("HTTP/1.1 404 "), "\(method): \(text)")
                let error = (try? JSONSerialization.jsonObject(with: Data(Self.body(text).utf8)) as? [String: Any])?["error"] as? [String: Any]
                #expect(error?["type"] as? String == "NotFound", "\(method): \(text)")
            }
            for method in ["get", "FOO", "DESCRIBE"] {
                let (text, closed) = await Self.exchange("\(method) /livez HTTP/1.1\r\nHost: x\r\n\r\n", port: port)
                #expect(closed, "\(method): \(text)")
                #expect(text.hasPrefix("HTTP/1.1 400 "), "\(method): \(text)")
                #expect(Self.body(text).isEmpty, "\(method): \(text)")
            }
        }
        let text = server.metrics.text(ready: true)
        #expect(text.contains(#"luahier_http_requests_total{code="404",method="other",route="unmatched"} 2"#), "\(text)")
        #expect(text.contains(#"luahier_http_requests_total{code="400",method="unknown",route="unparsed"} 3"#), "\(text)")
    }

    /// A request the connection's end cut short is no answered 400: neither a head cut short
    /// (`unparsed`) nor a body cut short (`POST /v1/dispatch`, an `invalid` outcome), nor what
    /// the parser makes of the close after a 413 given from `Content-Length` alone (the body,
    /// announced with `Expect: 100-continue`, never sent). Bytes that are no request still are.
    @Test func aRequestCutShortByTheClientLeavingIsNotCountedAsAnswered() async throws {
        let server = try Self.server()
        try await server.application().test(.live) { client in
            let port = try #require(client.port)
            let (head, headClosed) = await Self.exchange("GET /livez HTT", port: port, endInput: true, within: 60)
            #expect(headClosed, "\(head)")
            let (body, bodyClosed) = await Self.exchange(
                "POST /v1/dispatch HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"at\":", port: port, endInput: true, within: 60)
            #expect(bodyClosed, "\(body)")
            let tooLarge = server.options.maxBodyBytes + 1
            let (refused, refusedClosed) = await Self.exchange(
                "POST /v1/dispatch HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-ndjson\r\nExpect: 100-continue\r\n"
                    + "Content-Length: \(tooLarge)\r\n\r\n", port: port, within: 60)
            #expect(refusedClosed, "\(refused)")
            #expect(refused.hasPrefix("HTTP/1.1 413 "), "\(refused)")
            // The one 400 that is sent: after the others, which had their connections' ends first.
            let (garbage, _) = await Self.exchange("NOT HTTP AT ALL\r\n\r\n", port: port, within: 60)
            #expect(garbage.hasPrefix("HTTP/1.1 400 "), "\(garbage)")
        }
        let text = server.metrics.text(ready: true)
        #expect(text.contains(#"luahier_http_requests_total{code="400",method="unknown",route="unparsed"} 1"#), "\(text)")
        #expect(text.contains(#"luahier_http_requests_total{code="400",method="POST",route="/v1/dispatch"} 0"#), "\(text)")
        #expect(text.contains(#"luahier_http_requests_total{code="413",method="POST",route="/v1/dispatch"} 1"#), "\(text)")
        #expect(text.contains(#"luahier_outcomes_total{status="invalid"} 1"#), "\(text)")
    }
}
#endif
