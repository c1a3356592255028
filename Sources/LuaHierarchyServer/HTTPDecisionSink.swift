#if Server
internal import AsyncHTTPClient
public import LuaHierarchy
public import Logging
internal import NIOCore
internal import NIOHTTP1
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Decision records POSTed to a URL in batches, as gzipped NDJSON (`Content-Type:
/// application/x-ndjson`, `Content-Encoding: gzip`). A batch that fails (no connection, a
/// timeout, a 5xx, 408 or 429) is sent again after a backoff that doubles each time, with
/// jitter, up to `maxAttempts`; then it is dropped. Meanwhile records wait in the log's
/// buffer, and past its size they are dropped and counted: answering never waits for the
/// receiver.
public final class HTTPDecisionSink: DecisionSink, Sendable {
    /// Where and how batches are sent.
    public struct Options: Sendable {
        /// The receiver's URL (`http://` or `https://`).
        public var url: String
        /// A batch is sent once it holds this many records or bytes, or once its first record
        /// waited `interval` seconds.
        public var batching = DecisionBatching(records: 1000, bytes: 1 << 20, interval: 1)
        /// Sends of one batch at most (the first included) before it is dropped.
        public var maxAttempts = 5
        /// The wait before the second send, in seconds; it doubles after each failure, up to
        /// `maxBackoff`, each wait a random share of it (from half to whole).
        public var initialBackoff = 0.2
        /// The longest wait between two sends of a batch, in seconds.
        public var maxBackoff = 10.0
        /// Seconds a send may take, connecting included (a receiver that refuses connections
        /// is tried again within it).
        public var timeout = 10.0

        /// Options for `url`, with the defaults.
        public init(url: String) {
            self.url = url
        }
    }

    /// Batches by what became of them: `sent`, `retried` (a send that failed and was made
    /// again) and `failed` (dropped after its last attempt).
    public var batches: [String: Int] { counts.withLock { $0 } }

    /// The options it was made with.
    public let options: Options
    private let client: HTTPClient
    private let logger: Logger
    private let counts = Mutex<[String: Int]>(["sent": 0, "retried": 0, "failed": 0])

    /// A sink sending to `url` with the default options.
    public convenience init(url: String, logger: Logger) throws {
        try self.init(options: Options(url: url), logger: logger)
    }

    /// A sink with these options; its failed sends are logged to `logger` at `warning`.
    /// Throws when the URL cannot be sent to.
    public init(options: Options, logger: Logger) throws {
        _ = try HTTPClient.Request(url: options.url, method: .POST)
        self.options = options
        self.logger = logger
        let timeout = TimeAmount.milliseconds(Int64(options.timeout * 1000))
        // A redirect is not followed: the records go to the URL given, or are not sent.
        var configuration = HTTPClient.Configuration(timeout: .init(connect: timeout, read: timeout))
        configuration.redirectConfiguration = .disallow
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    /// As `options.batching` says.
    public var batching: DecisionBatching { options.batching }

    /// Sends `records` as one gzipped body, again on failure; throws when every attempt failed.
    public func write(_ records: [[UInt8]]) throws {
        let body = try Gzip.compress(Array(records.joined()))
        var backoff = options.initialBackoff
        var attempt = 1
        while true {
            var failure = ""
            let status: Int
            do {
                status = try send(body)
            } catch {
                status = 0
                failure = "\(error)"
            }
            if status != 0 {
                if (200..<300).contains(status) {
                    counts.withLock { $0["sent", default: 0] += 1 }
                    return
                }
                failure = "the receiver answered \(status)"
                // A refusal that sending again would not change: the batch is dropped now.
                if !(status >= 500 || status == 408 || status == 429) { try give(up: failure, records: records.count) }
            }
            if attempt >= options.maxAttempts { try give(up: failure, records: records.count) }
            counts.withLock { $0["retried", default: 0] += 1 }
            logger.warning("decision log: a batch of \(records.count) records was not taken (\(failure)); sending again (attempt \(attempt + 1) of \(options.maxAttempts))")
            Self.pause(seconds: backoff * Double.random(in: 0.5...1))
            backoff = min(backoff * 2, options.maxBackoff)
            attempt += 1
        }
    }

    private func give(up failure: String, records: Int) throws -> Never {
        counts.withLock { $0["failed", default: 0] += 1 }
        throw SendFailure(description: "\(options.url): \(failure)")
    }

    /// Why a batch was dropped.
    struct SendFailure: Error, CustomStringConvertible {
        let description: String
    }

    /// One POST of `body`; the status the receiver answered.
    private func send(_ body: [UInt8]) throws -> Int {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/x-ndjson")
        headers.add(name: "Content-Encoding", value: "gzip")
        let request = try HTTPClient.Request(url: options.url, method: .POST, headers: headers, body: .bytes(body))
        let deadline = NIODeadline.now() + .milliseconds(Int64(options.timeout * 1000))
        return try client.execute(request: request, delegate: StatusOnly(), deadline: deadline).wait()
    }

    /// Reads the status of an answer and lets its body go as it comes. The sink needs no more,
    /// and a body kept whole could be as large as the receiver liked: the client's own
    /// accumulator keeps up to 4 GiB (an attacker's collector answering 1.5 GiB raised the
    /// server's memory by as much).
    private final class StatusOnly: HTTPClientResponseDelegate, @unchecked Sendable {
        // Written and read on the request's event loop only.
        private var status = 0

        func didReceiveHead(task: HTTPClient.Task<Int>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
            status = Int(head.status.code)
            return task.eventLoop.makeSucceededVoidFuture()
        }

        func didReceiveBodyPart(task: HTTPClient.Task<Int>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
            task.eventLoop.makeSucceededVoidFuture()
        }

        func didFinishRequest(task: HTTPClient.Task<Int>) throws -> Int { status }
    }

    /// Lets the client go.
    public func close() {
        try? client.syncShutdown()
    }

    /// The log's own thread waits between two sends (it is no task's, and no event loop's).
    private static func pause(seconds: Double) {
        var time = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - seconds.rounded(.down)) * 1e9))
        var left = timespec()
        while nanosleep(&time, &left) != 0 && errno == EINTR { time = left }
    }
}
#endif
