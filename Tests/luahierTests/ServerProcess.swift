#if Server
import Foundation

/// `luahier serve` running as a child process on a free loopback port, as a user runs it.
final class ServerProcess: @unchecked Sendable {
    let child: LuahierProcess
    /// `http://127.0.0.1:PORT`'s (or `https://`'s) port, read off the line serve prints when
    /// it listens.
    let port: UInt16
    /// `https` when it serves TLS (`--tls-cert`), else `http`.
    let scheme: String

    /// Starts `luahier serve ARGS --port 0 AFTER` in `folder` and waits until it listens. The
    /// variables of `environment` are set beside the test's own. Every wait here is bounded
    /// against hangs only (600 s by default), far above what a loaded machine takes.
    init(
        _ arguments: [String], in folder: URL = Luahier.packageRoot, environment: [String: String] = [:], timeout: Double = 600,
        after: [String] = []
    ) throws {
        let variables = environment.isEmpty ? nil : ProcessInfo.processInfo.environment.merging(environment) { $1 }
        child = try LuahierProcess(
            ["serve"] + arguments + ["--port", "0"] + after, environment: variables, folder: folder, stdout: .file("/dev/null"),
            stdin: false)
        let listening = #/on (https?)://127\.0\.0\.1:(\d+)/#
        guard child.waitForStderr(timeout: timeout, { $0.firstMatch(of: listening) != nil }),
            let match = child.stderr.firstMatch(of: listening), let port = UInt16(match.2)
        else {
            child.send(SIGKILL)
            throw ServerFailure(message: "serve did not start listening: \(child.stderr)")
        }
        self.port = port
        scheme = String(match.1)
    }

    /// Stops reading its stderr: the pipe fills, and its writes there would block.
    func stopReadingStderr() {
        child.stopReadingStderr()
    }

    /// Its resident memory, in bytes (/proc).
    var residentBytes: Int { child.residentBytes }

    /// Its peak resident memory so far, in bytes (/proc).
    var peakBytes: Int { child.peakKiB * 1024 }

    var stderr: String { child.stderr }

    func signal(_ number: Int32) {
        child.send(number)
    }

    /// Waits for the process to exit (killing it past `timeout`) and for its last words on
    /// stderr; its exit status (-1: ended by a signal).
    @discardableResult
    func waitForExit(timeout: Double = 600) -> Int32 {
        child.waitForExit(timeout: timeout).status ?? -1
    }

    /// Stops it (SIGTERM) if it still runs.
    func stop() {
        if child.isRunning {
            signal(SIGTERM)
            waitForExit()
        }
    }

    /// Waits until `condition` holds of stderr.
    func waitForStderr(timeout: Double = 600, _ condition: (String) -> Bool) -> Bool {
        child.waitForStderr(timeout: timeout, condition)
    }

    /// Waits until the metric `name` (its whole name, labels included) reads `value`: for a
    /// value that stays once reached (a gauge held steady, a counter nothing more can raise).
    func waitForMetric(_ name: String, _ value: Double, timeout: Double = 600) -> Bool {
        (try? Luahier.eventually(timeout: timeout) { metric(name, in: try get("/metrics").text) == value }) ?? false
    }

    /// Waits until the metric `name` reads `value` or more: for a counter that goes on rising,
    /// whose exact value at a look is a matter of time.
    func waitForMetric(_ name: String, atLeast value: Double, timeout: Double = 600) -> Bool {
        (try? Luahier.eventually(timeout: timeout) { (metric(name, in: try get("/metrics").text) ?? -.infinity) >= value }) ?? false
    }

    /// The kernel inode of the socket it listens on (/proc/net/tcp: in state 0A, LISTEN, on its
    /// port), if it is there.
    var listeningSocketInode: String? {
        TCPTable.inode { local, _, state in local == port && state == "0A" }
    }

    /// Whether it still holds open the socket of kernel inode `inode` (/proc/PID/fd).
    func holdsSocket(_ inode: String) -> Bool {
        let folder = "/proc/\(child.process.processIdentifier)/fd"
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return descriptors.contains { (try? FileManager.default.destinationOfSymbolicLink(atPath: "\(folder)/\($0)")) == "socket:[\(inode)]" }
    }

    /// The value of the metric `name` in Prometheus text.
    func metric(_ name: String, in text: String) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix(name + " ") {
            return Double(line.dropFirst(name.count + 1))
        }
        return nil
    }

    func request(_ method: String, _ path: String, body: [UInt8] = [], headers: [String: String] = [:], timeout: Int = 600) throws -> HTTPReply {
        try HTTPClient.request(port: port, method: method, path: path, body: body, headers: headers, timeout: timeout)
    }

    func post(_ path: String, _ body: String, headers: [String: String] = [:], timeout: Int = 600) throws -> HTTPReply {
        try request("POST", path, body: Array(body.utf8), headers: headers, timeout: timeout)
    }

    func get(_ path: String) throws -> HTTPReply {
        try request("GET", path)
    }
}

struct ServerFailure: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

struct HTTPReply {
    var status: Int
    /// Header names lowercased.
    var headers: [String: String]
    var body: [UInt8]

    var text: String { String(decoding: body, as: UTF8.self) }

    /// The body as one JSON object.
    var json: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:]
    }

    /// The body as JSON lines, each an object.
    var lines: [[String: Any]] {
        text.split(separator: "\n").map { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] ?? [:] }
    }
}

/// A small HTTP/1.1 client over a blocking socket: one request per connection
/// (`Connection: close`), chunked bodies decoded. Enough to talk to the server as any
/// client would, without a client library.
enum HTTPClient {
    static func request(
        port: UInt16, method: String, path: String, body: [UInt8], headers: [String: String], timeout: Int = 600
    ) throws -> HTTPReply {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw ServerFailure(message: "socket: \(errno)") }
        defer { close(socket) }
        var time = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(socket, SOL_SOCKET, SO_SNDTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        let connected = connectLoopback(socket, port: port)
        guard connected == 0 else { throw ServerFailure(message: "connect: \(String(cString: strerror(errno)))") }
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        var fields = headers
        if fields["Content-Length"] == nil && (method == "POST" || !body.isEmpty) { fields["Content-Length"] = String(body.count) }
        for (name, value) in fields { head += "\(name): \(value)\r\n" }
        head += "\r\n"
        try sendAll(socket, Array(head.utf8) + body)
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            if count < 0 { throw ServerFailure(message: "recv: \(String(cString: strerror(errno))) after \(received.count) bytes") }
            if count == 0 { break }
            received += buffer[..<count]
        }
        return try parse(received)
    }

    /// Connects `socket` to 127.0.0.1:`port`; `connect`'s result.
    static func connectLoopback(_ socket: Int32, port: UInt16) -> Int32 {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
    }

    private static func sendAll(_ socket: Int32, _ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            // The server may answer (413) and close before reading a large body whole.
            if count < 0 { return }
            sent += count
        }
    }

    static func parse(_ bytes: [UInt8]) throws -> HTTPReply {
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        guard let end = bytes.firstRange(of: separator) else {
            throw ServerFailure(message: "no HTTP head in \(bytes.count) bytes: \(String(decoding: bytes.prefix(200), as: UTF8.self))")
        }
        let head = String(decoding: bytes[..<end.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
        let status = Int(head[0].split(separator: " ")[1]) ?? 0
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        var body = Array(bytes[end.upperBound...])
        if headers["transfer-encoding"]?.lowercased() == "chunked" { body = try dechunk(body) }
        return HTTPReply(status: status, headers: headers, body: body)
    }

    private static func dechunk(_ bytes: [UInt8]) throws -> [UInt8] {
        var body: [UInt8] = []
        var position = 0
        let crlf: [UInt8] = [13, 10]
        while position < bytes.count {
            guard let lineEnd = bytes[position...].firstRange(of: crlf) else { throw ServerFailure(message: "bad chunk") }
            let sizeText = String(decoding: bytes[position..<lineEnd.lowerBound], as: UTF8.self).split(separator: ";")[0]
            guard let size = Int(sizeText, radix: 16) else { throw ServerFailure(message: "bad chunk size \(sizeText)") }
            position = lineEnd.upperBound
            if size == 0 { break }
            body += bytes[position..<position + size]
            position += size + 2
        }
        return body
    }
}

/// The kernel's table of IPv4 TCP sockets (/proc/net/tcp).
enum TCPTable {
    /// The inode of the first socket `matching` its local port, remote port and state (two hex
    /// digits: `0A` is LISTEN), if any.
    static func inode(_ matching: (_ local: UInt16, _ remote: UInt16, _ state: Substring) -> Bool) -> String? {
        // Read to its end: a /proc file's size reads as 0, and a read by that size stops short.
        guard let file = FileHandle(forReadingAtPath: "/proc/net/tcp"), let bytes = try? file.readToEnd() else { return nil }
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n").dropFirst() {
            // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
            let fields = line.split(separator: " ")
            guard fields.count > 9, let local = fields[1].split(separator: ":").last.flatMap({ UInt16($0, radix: 16) }),
                let remote = fields[2].split(separator: ":").last.flatMap({ UInt16($0, radix: 16) })
            else { continue }
            if matching(local, remote, fields[3]) { return String(fields[9]) }
        }
        return nil
    }
}

/// A raw TCP connection to the server, for clients that misbehave on purpose: slow readers,
/// idle or half-sent requests, too many connections.
final class Connection {
    private(set) var socket: Int32

    /// Connects to loopback `port`; `receiveBuffer` shrinks the socket's receive buffer (set
    /// before connecting, so the window the server sees is small too).
    init(port: UInt16, receiveBuffer: Int32? = nil) throws {
        socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if var size = receiveBuffer {
            setsockopt(socket, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        let connected = HTTPClient.connectLoopback(socket, port: port)
        if connected != 0 {
            close(socket)
            throw ServerFailure(message: "cannot connect to port \(port)")
        }
    }

    deinit { if socket >= 0 { close(socket) } }

    /// Closes the connection with a reset (SO_LINGER 0), as a client that went away at once:
    /// from then on the server's writes to it fail, whenever it makes them.
    func reset() {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(socket, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        close(socket)
        socket = -1
    }

    /// The kernel inode of the server's end of this connection (/proc/net/tcp: the socket whose
    /// local port is `port` and whose remote port is this one's), if it is there.
    func serverSocketInode(port: UInt16) -> String? {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
        }
        guard named == 0 else { return nil }
        let mine = UInt16(bigEndian: address.sin_port)
        return TCPTable.inode { local, remote, _ in local == port && remote == mine }
    }

    func send(_ text: String) {
        send(Array(text.utf8))
    }

    func send(_ bytes: [UInt8]) {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count <= 0 { return }
            sent += count
        }
    }

    /// What arrives within `seconds` (up to `limit` bytes), and whether the server closed the
    /// connection meanwhile.
    func receive(limit: Int = 1 << 20, within seconds: Double) -> (bytes: [UInt8], closed: Bool) {
        var received: [UInt8] = []
        let deadline = Date().addingTimeInterval(seconds)
        var buffer = [UInt8](repeating: 0, count: 65536)
        while received.count < limit {
            let left = deadline.timeIntervalSinceNow
            if left <= 0 { break }
            var request = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            if poll(&request, 1, Int32(left * 1000) + 1) <= 0 { continue }
            let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, min($0.count, limit - received.count), 0) }
            if count <= 0 { return (received, true) }
            received += buffer[..<count]
        }
        return (received, false)
    }
}
#endif
