#if Server
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import LuaHierarchy
@testable import LuaHierarchyServer
import Synchronization
import Testing

/// The HTTP decision sink against a real receiver on a loopback port: batches, gzip, retries,
/// and a receiver that is gone (docs/decision-log.md).
@Suite("The HTTP decision sink")
struct HTTPDecisionSinkTests {
    /// What the receiver got: each body un-gzipped, and the statuses it answers, in turn
    /// (200 once they run out).
    final class Receiver: Sendable {
        let bodies = Mutex<[[UInt8]]>([])
        let encodings = Mutex<[String]>([])
        let statuses: Mutex<[HTTPResponse.Status]>

        init(statuses: [HTTPResponse.Status] = []) {
            self.statuses = Mutex(statuses)
        }

        var application: some ApplicationProtocol {
            let router = Router()
            router.post("/ingest") { request, _ -> HTTPResponse.Status in
                var collected = try await request.body.collect(upTo: 16 << 20)
                let body = collected.readBytes(length: collected.readableBytes) ?? []
                self.encodings.withLock { $0.append(request.headers[.contentEncoding] ?? "") }
                let status = self.statuses.withLock { $0.isEmpty ? .ok : $0.removeFirst() }
                if status == .ok { self.bodies.withLock { $0.append(Gzip.decompress(body) ?? []) } }
                return status
            }
            return Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        }

        /// Every record received, parsed.
        var records: [[String: Any]] {
            bodies.withLock { $0 }.flatMap { body in
                String(decoding: body, as: UTF8.self).split(separator: "\n").map {
                    (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] ?? [:]
                }
            }
        }
    }

    static let rules = """
        local app = hier.root:child("app")
        app:receiveEvent("Ask", function(e) return {type = "Answer", n = e.n} end)
        """

    static func pool(_ log: DecisionLog) throws -> RulesPool {
        var options = RulesPool.Options(rulesSource: rules)
        options.decisionLog = log
        return try RulesPool(options: options)
    }

    static let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

    /// The sink's timeout where the test is not about it: a bound against hangs only. At the
    /// default 10 s, an exchange that a loaded machine kept waiting that long was sent again,
    /// and the receiver counted its records twice (sending again is what the sink is for).
    static let exchangeBound = 600.0

    @Test func recordsArriveInGzippedBatches() async throws {
        let receiver = Receiver()
        try await receiver.application.test(.live) { client in
            var options = HTTPDecisionSink.Options(url: "http://127.0.0.1:\(client.port!)/ingest")
            options.timeout = Self.exchangeBound
            options.batching = DecisionBatching(records: 10, bytes: 1 << 20, interval: 0.05)
            let sink = try HTTPDecisionSink(options: options, logger: Self.logger)
            let log = DecisionLog(sink: sink, source: "serve")
            let pool = try Self.pool(log)
            for number in 1...25 {
                _ = try await pool.dispatch(Array(#"{"id":\#(number),"at":"/app","event":{"type":"Ask","n":\#(number)}}"#.utf8), requestID: "r-\(number)")
            }
            #expect(await log.drained())
            let records = receiver.records
            #expect(records.count == 25)
            #expect(records.map { $0["request_id"] as? String } == (1...25).map { "r-\($0)" })
            #expect(records.allSatisfy { $0["source"] as? String == "serve" })
            let sizes = receiver.bodies.withLock { $0 }.map { String(decoding: $0, as: UTF8.self).split(separator: "\n").count }
            #expect(sizes.allSatisfy { $0 <= 10 } && sizes.count >= 3, "\(sizes)")
            #expect(receiver.encodings.withLock { $0 }.allSatisfy { $0 == "gzip" })
            #expect(sink.batches["sent"] == sizes.count)
            #expect(log.statistics.logged == 25)
            await pool.shutDown()
            log.close()
        }
    }

    /// A redirect is not followed: the records go to the URL given or are not sent (the sink
    /// reads only an answer's status, and lets its body go as it comes).
    @Test func aRedirectIsNotFollowed() async throws {
        let redirected = Mutex(0)
        let router = Router()
        router.post("/ingest") { _, _ -> Response in
            Response(status: .temporaryRedirect, headers: [.location: "/elsewhere"])
        }
        router.post("/elsewhere") { _, _ -> HTTPResponse.Status in
            redirected.withLock { $0 += 1 }
            return .ok
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await app.test(.live) { client in
            var options = HTTPDecisionSink.Options(url: "http://127.0.0.1:\(client.port!)/ingest")
            options.timeout = Self.exchangeBound
            options.maxAttempts = 1
            let sink = try HTTPDecisionSink(options: options, logger: Self.logger)
            let log = DecisionLog(sink: sink)
            let pool = try Self.pool(log)
            _ = try await pool.dispatch(#"{"id":1,"at":"/app","event":"Ask"}"#)
            #expect(await log.drained())
            #expect(redirected.withLock { $0 } == 0)
            #expect(log.statistics.droppedSinkFailed == 1)
            await pool.shutDown()
            log.close()
        }
    }

    @Test func aBatchRefusedWith500IsSentAgainAfterABackoff() async throws {
        let receiver = Receiver(statuses: [.internalServerError, .serviceUnavailable])
        try await receiver.application.test(.live) { client in
            var options = HTTPDecisionSink.Options(url: "http://127.0.0.1:\(client.port!)/ingest")
            options.timeout = Self.exchangeBound
            options.initialBackoff = 0.05
            let sink = try HTTPDecisionSink(options: options, logger: Self.logger)
            let log = DecisionLog(sink: sink)
            let pool = try Self.pool(log)
            let started = Date()
            _ = try await pool.dispatch(#"{"id":1,"at":"/app","event":"Ask"}"#)
            #expect(await log.drained())
            // Two waits: at least half of 0.05 s, then half of 0.1 s (the jitter's least).
            #expect(Date().timeIntervalSince(started) >= 0.075)
            #expect(receiver.records.count == 1)
            #expect(sink.batches == ["sent": 1, "retried": 2, "failed": 0])
            #expect(log.statistics.logged == 1)
            await pool.shutDown()
            log.close()
        }
    }

    /// A sink whose first write waits for `release` (600 s at most: a bound against hangs
    /// only), then hands over to `inner`, as every write after it.
    final class HeldSink: DecisionSink, @unchecked Sendable {
        let inner: any DecisionSink
        let release = DispatchSemaphore(value: 0)
        private let first = Mutex(true)

        init(_ inner: any DecisionSink) { self.inner = inner }

        var batching: DecisionBatching { inner.batching }

        func write(_ records: [[UInt8]]) throws {
            if first.withLock({ let was = $0; $0 = false; return was }) {
                _ = release.wait(timeout: .now() + 600)
            }
            try inner.write(records)
        }

        func close() { inner.close() }
    }

    @Test func aReceiverThatIsGoneCostsRecordsNotAnswers() async throws {
        // A port nothing listens on: every send is refused at once.
        let socket = Foundation.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) } }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) } }
        close(socket)
        var options = HTTPDecisionSink.Options(url: "http://127.0.0.1:\(UInt16(bigEndian: address.sin_port))/ingest")
        options.batching = DecisionBatching(records: 5, bytes: 1 << 20, interval: 0)
        options.maxAttempts = 2
        options.timeout = 0.5
        options.initialBackoff = 0.05
        let sink = try HTTPDecisionSink(options: options, logger: Self.logger)
        // The sink's first hand-over is held until every request is answered: the buffer fills
        // behind it whatever the pace of the sink's failures.
        let held = HeldSink(sink)
        let log = DecisionLog(sink: held, bufferBytes: 2048)
        let pool = try Self.pool(log)
        for number in 1...300 {
            let answer = try await pool.dispatch(#"{"id":\#(number),"at":"/app","event":{"type":"Ask"}}"#)
            #expect(answer.status == .unhandled)   // answered: the rules replace the event, no one handles it
        }
        held.release.signal()
        #expect(await log.drained())
        let counts = log.statistics
        #expect(counts.logged == 0)
        #expect(counts.droppedBufferFull > 0)
        #expect(counts.droppedSinkFailed > 0)
        #expect(counts.droppedBufferFull + counts.droppedSinkFailed == 300)
        #expect(sink.batches["sent"] == 0)
        #expect(sink.batches["failed"]! * 5 >= counts.droppedSinkFailed)
        await pool.shutDown()
        log.close()
    }
}
private extension DecisionLog {
    /// Whether every record made so far was handed to the sink or dropped, within `timeout`
    /// seconds (`RouteTests.eventually` polls).
    func drained(timeout: Double = 600) async -> Bool {
        await RouteTests.eventually(within: timeout) { self.backlog == 0 }
    }
}
#endif
