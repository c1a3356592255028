#if Server
internal import Hummingbird
import LuaHierarchy
internal import NIOCore
import Synchronization

/// The service's routes: what each answers, and with which HTTP status.
///
/// `POST /v1/dispatch` answers 200 with the outcome (handled, unhandled or detached: the
/// dispatch ran, and a limit that ended it is an `unhandled` outcome, as for `dispatch`
/// lines), 400 with an `invalid` outcome, 413 for a body over the limit, 503 (with
/// `Retry-After`) when no state was free in time or the server is shutting down. A batch
/// (`application/x-ndjson`, or `application/jsonl`) answers 200 and streams one outcome line per request line, each
/// with its own status, all from one revision.
extension RulesServer {
    func addRoutes(to router: Router<ServerContext>) {
        router.add(middleware: RefusalCounter(metrics: metrics))
        router.post("/v1/dispatch") { request, context in
            await self.dispatch(request, context: context)
        }
        for method in [HTTPRequest.Method.get, .head, .put, .delete, .patch, .options, .trace, .connect] {
            router.on("/v1/dispatch", method: method) { _, _ in
                Response(
                    status: .methodNotAllowed, headers: [.allow: "POST", .contentType: "application/json"],
                    body: .init(byteBuffer: ByteBuffer(string: #"{"error":"POST a request object or JSON lines to /v1/dispatch"}"# + "\n")))
            }
        }
        addHealthRoutes(to: router)
        router.get("/metrics") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(string: self.metrics.text(ready: self.notReady == nil))))
        }
        router.post("/v1/reload") { _, _ in
            await self.reload()
        }
    }

    private func dispatch(_ request: Request, context: ServerContext) async -> Response {
        let started = ContinuousClock.now
        inFlight.begin()
        let response = await answer(request, context: context)
        if response.status.code != 200 || !isBatch(request) {
            metrics.record(code: response.status.code, seconds: ContinuousClock.now - started)
            inFlight.end(answered: true)
        }
        // A streamed batch ends when its answers are read (AnswerPipe's onEnd).
        return response
    }

    /// NDJSON by any of its names: `application/x-ndjson`, `application/jsonl` (JSON Lines),
    /// `application/x-jsonlines`; parameters (`; charset=utf-8`) aside.
    private func isBatch(_ request: Request) -> Bool {
        guard let type = request.headers[.contentType]?.lowercased() else { return false }
        let name = type.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        return Self.batchTypes.contains(name)
    }

    static let batchTypes: Set<String> = ["application/x-ndjson", "application/jsonl", "application/x-jsonlines"]

    private func answer(_ request: Request, context: ServerContext) async -> Response {
        if let encoding = request.headers[.contentEncoding], encoding.lowercased() != "identity" {
            metrics.record(.invalid)
            return refusal(.unsupportedMediaType, type: "UnsupportedContentEncoding",
                           message: "the body must not be compressed (Content-Encoding: \(PrintableText.field(encoding)))")
        }
        let tooLarge = "the body is over the limit of \(options.maxBodyBytes) bytes (--max-body)"
        if let length = request.headers[.contentLength].flatMap({ Int($0) }), length > options.maxBodyBytes {
            // Said up front: refused before a byte of it is read (or a `100 Continue` sent).
            metrics.record(.invalid)
            context.closeAfterAnswer()
            return refusal(.contentTooLarge, type: "BodyTooLarge", message: tooLarge)
        }
        var collected = ByteBuffer()
        do {
            // The whole body within --idle-timeout: a client that trickles it a byte at a time
            // never looks idle, so the time is counted here.
            let giveUpAt = ContinuousClock.now + .milliseconds(Int64(options.idleTimeout * 1000))
            for try await part in request.body {
                if collected.readableBytes + part.readableBytes > options.maxBodyBytes {
                    metrics.record(.invalid)
                    context.closeAfterAnswer()
                    return refusal(.contentTooLarge, type: "BodyTooLarge", message: tooLarge)
                }
                collected.writeImmutableBuffer(part)
                if ContinuousClock.now > giveUpAt {
                    metrics.record(.invalid)
                    context.closeAfterAnswer()
                    return refusal(.requestTimeout, type: "BodyTimeout",
                                   message: "the body did not arrive whole within \(options.idleTimeout) s (--idle-timeout)")
                }
            }
        } catch {
            metrics.record(.invalid)
            return refusal(.badRequest, type: "InvalidBody", message: "the body could not be read: \(error)")
        }
        let body = collected.readBytes(length: collected.readableBytes) ?? []
        if isBatch(request) { return await batch(body) }
        do {
            let answer = try await pool.dispatch(body)
            metrics.record(answer.status)
            metrics.recordEvaluation(answer.evaluation, batch: false)
            answer.json.withUnsafeBytes { metrics.recordRuleFailure(in: $0) }
            return Response(
                status: answer.status == .invalid ? .badRequest : .ok,
                headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(bytes: answer.json + [UInt8(ascii: "\n")])))
        } catch {
            return refusal(error)
        }
    }

    /// A batch, streamed: the status is sent once the first outcome line (or the refusal)
    /// is known. The answers go through an `AnswerPipe`, so a client that reads slowly holds
    /// its state back instead of piling answers up in the server's memory.
    private func batch(_ body: [UInt8]) async -> Response {
        let pipe = AnswerPipe(
            limit: options.batchBufferBytes, patience: options.idleTimeout, othersWaiting: { [pool] in pool.waiting > 0 }
        ) { [inFlight] readAll in
            inFlight.end(answered: readAll)
        }
        let gate = FirstAnswer()
        let metrics = self.metrics
        let started = ContinuousClock.now
        Task { [pool] in
            do {
                let summary: RulesPool.BatchSummary = try await pool.dispatchBatch(body) { answer in
                    metrics.recordRuleFailure(in: answer)
                    // Open before pushing: a push may wait for the reader, which starts once open.
                    gate.open(nil)
                    return pipe.push(answer)
                }
                for (status, count) in summary.counts { metrics.record(status, count: count) }
                metrics.recordEvaluation(summary.evaluation, batch: true)
                if summary.stoppedEarly { metrics.recordBatchStopped(stalled: pipe.gaveUp) }
                if summary.outOfTime { metrics.recordBatchOutOfTime() }
                metrics.record(code: 200, seconds: ContinuousClock.now - started)
                gate.open(nil)
            } catch {
                gate.open(error as? RulesPool.Refusal ?? .shutDown)
            }
            pipe.finish()
        }
        if let refused = await gate.wait() {
            pipe.discard()
            return refusal(refused)
        }
        return Response(status: .ok, headers: [.contentType: "application/x-ndjson"], body: .init(asyncSequence: pipe))
    }

    private func refusal(_ refused: RulesPool.Refusal) -> Response {
        switch refused {
        case .overloaded:
            return refusal(.serviceUnavailable, type: "Overloaded",
                           message: "every Lua state stayed busy; try again", retry: true)
        case .shutDown:
            return refusal(.serviceUnavailable, type: "ShuttingDown", message: "the server is shutting down", retry: true)
        }
    }

    private func refusal(_ status: HTTPResponse.Status, type: String, message: String, retry: Bool = false) -> Response {
        var headers: HTTPFields = [.contentType: "application/json"]
        if retry { headers[.retryAfter] = "1" }
        let outcome = pool.refusal(type: type, message: message, where: "request")
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: outcome + [UInt8(ascii: "\n")])))
    }

    private func reload() async -> Response {
        guard options.reloadEndpoint else {
            return Response(
                status: .forbidden, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: JSON.encode(.map([
                    "error": "reloading over HTTP is off: start luahier serve with --reload-endpoint",
                ])) + "\n")))
        }
        let result = await pool.reload()
        metrics.recordReload(result)
        onReload(result)
        let reply: [String: Value]
        let status: HTTPResponse.Status
        switch result {
        case .loaded(let revision):
            (status, reply) = (.ok, ["result": "loaded", "revision": .int(Int64(revision.number)), "hash": .string(revision.hash)])
        case .unchanged(let revision):
            (status, reply) = (.ok, ["result": "unchanged", "revision": .int(Int64(revision.number)), "hash": .string(revision.hash)])
        case .failed(let running, let message):
            (status, reply) = (.unprocessableContent, [
                "result": "failed", "revision": .int(Int64(running.number)), "hash": .string(running.hash), "error": .string(message),
            ])
        }
        return Response(
            status: status, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(string: JSON.encode(.map(reply)) + "\n")))
    }
}

/// Resumes one waiter once: with nil when a batch's first answer (or its end) is ready, or
/// with the refusal.
final class FirstAnswer: Sendable {
    private let state = Mutex<(opened: Bool, result: RulesPool.Refusal?, waiter: CheckedContinuation<RulesPool.Refusal?, Never>?)>((false, nil, nil))

    func open(_ error: RulesPool.Refusal?) {
        let waiter: CheckedContinuation<RulesPool.Refusal?, Never>? = state.withLock { state in
            guard !state.opened else { return nil }
            state.opened = true
            state.result = error
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: error)
    }

    func wait() async -> RulesPool.Refusal? {
        await withCheckedContinuation { continuation in
            let ready: (Bool, RulesPool.Refusal?) = state.withLock { state in
                if state.opened { return (true, state.result) }
                state.waiter = continuation
                return (false, nil)
            }
            if ready.0 { continuation.resume(returning: ready.1) }
        }
    }
}

/// Counts in `luahier_http_requests_total` what the routes refuse before any dispatch: an
/// unknown path (404), a method a route does not take (405). A dispatch counts its own answer
/// (with its time) where it is made.
struct RefusalCounter: RouterMiddleware {
    typealias Context = ServerContext
    let metrics: ServerMetrics

    func handle(
        _ request: Request, context: ServerContext, next: (Request, ServerContext) async throws -> Response
    ) async throws -> Response {
        do {
            let response = try await next(request, context)
            if response.status == .methodNotAllowed { metrics.requests(code: 405).increment() }
            return response
        } catch let error as any HTTPResponseError {
            metrics.requests(code: error.status.code).increment()
            throw error
        }
    }
}
#endif
