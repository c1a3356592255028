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
/// (`application/x-ndjson`, `application/jsonl` or `application/x-jsonlines`) answers 200 and
/// streams one outcome line per request line, each with its own status, all from one
/// revision. The health routes, `/metrics` and `/openapi.json` take GET and HEAD; every route
/// answers the other standard methods 405 with `Allow` (docs/openapi.json).
extension RulesServer {
    func addRoutes(to router: Router<ServerContext>) {
        router.add(middleware: RequestLog(server: self))
        guarded(router, by: options.dispatchTokens, route: "POST /v1/dispatch").post("/v1/dispatch") { request, context in
            try await self.dispatch(request, context: context)
        }
        addHealthRoutes(to: router)
        addDocumentRoutes(to: router)
        for method in [HTTPRequest.Method.get, .head] {
            router.on("/metrics", method: method) { request, _ in
                let text = self.metrics.text(ready: self.notReady == nil, shadowing: self.shadow != nil)
                return Response.sending(
                    status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                    ByteBuffer(string: text), head: request.method == .head)
            }
        }
        guarded(router, by: options.reloadTokens, route: "POST /v1/reload").post("/v1/reload") { _, context in
            await self.reload(context: context)
        }
        addShadowRoutes(to: router)
        addRequiredRevisionRoute(to: router)
    }

    /// Every route and the methods it takes: any other of the nine standard methods gets 405.
    static let routeMethods: [(String, [HTTPRequest.Method])] = [
        ("/v1/dispatch", [.post]), ("/v1/reload", [.post]), ("/livez", [.get, .head]), ("/readyz", [.get, .head]),
        ("/healthz", [.get, .head]), ("/metrics", [.get, .head]), ("/openapi.json", [.get, .head]),
        ("/v1/shadow", [.get, .head, .post, .delete]), ("/v1/required-revision", [.post]),
    ]

    /// A route's path as the router matches it, and the 405 for the methods it does not take.
    struct MethodRefusal {
        let path: String
        /// The path's segments: the router splits a request's path at `/`, skipping empty
        /// segments, and compares each segment as a string.
        let segments: [Substring]
        let methods: [HTTPRequest.Method]
        /// `Allow`: the methods it takes, as listed.
        let allowed: String
        let message: String
    }

    static let methodRefusals: [MethodRefusal] = routeMethods.map { path, methods in
        let allowed = methods.map(\.rawValue).joined(separator: ", ")
        let message = path == "/v1/dispatch" ? "POST a request object or JSON lines to /v1/dispatch" : "\(path) takes \(allowed)"
        return MethodRefusal(path: path, segments: path.split(separator: "/"), methods: methods, allowed: allowed, message: message)
    }

    /// 405 `MethodNotAllowed` with `Allow` for a request the router found no route for, when
    /// its path is a route's and its method one of the standard nine that route does not take
    /// (a method outside the nine stays a 404), and the route's path for the metrics. Asked of
    /// what the router refused (`RequestLog`), instead of a route per method and path, which
    /// every start would register.
    static func methodRefusal(_ request: Request) -> (route: String, response: Response)? {
        switch request.method {
        case .get, .head, .post, .put, .delete, .patch, .options, .trace, .connect: break
        default: return nil
        }
        let segments = request.uri.path.split(separator: "/")
        guard let refusal = methodRefusals.first(where: { $0.segments == segments }),
            !refusal.methods.contains(request.method)
        else { return nil }
        let response = ErrorBody.response(
            .methodNotAllowed, type: "MethodNotAllowed", message: refusal.message, headers: [.allow: refusal.allowed])
        return (refusal.path, response)
    }

    /// Where a route that may take bearer tokens is added: behind `BearerAuth` when `tokens`
    /// are set. The other methods of the same path stay outside it: their 405 tells nothing.
    func guarded(_ router: Router<ServerContext>, by tokens: BearerTokens?, route: String) -> RouterGroup<ServerContext> {
        let group = router.group()
        if let tokens { group.add(middleware: BearerAuth(tokens: tokens, route: route)) }
        return group
    }

    private func dispatch(_ request: Request, context: ServerContext) async throws(ClientLeft) -> Response {
        inFlight.begin()
        let response: Response
        do {
            response = try await answer(request, context: context)
        } catch {
            inFlight.end(answered: false)
            throw error
        }
        if !context.notes.streamed {
            inFlight.end(answered: true)
        }
        // A streamed batch ends when its answers are read (AnswerPipe's onEnd).
        return response
    }

    /// What a dispatch reads of a request's fields, in one pass over them (a look-up by name
    /// is a pass and a joined string each).
    struct BodyFields {
        /// `Content-Encoding` and `Content-Length` as `HTTPFields` reads a field: the values of
        /// one sent more than once joined by `, `.
        private(set) var encoding: String?
        private(set) var length: String?
        /// `Content-Type`'s first value, and all of them when it was sent more than once.
        private(set) var type: String?
        private(set) var types: [String] = []

        init(_ fields: HTTPFields) {
            for field in fields {
                switch field.name {
                case .contentEncoding: encoding = encoding.map { $0 + ", " + field.value } ?? field.value
                case .contentLength: length = length.map { $0 + ", " + field.value } ?? field.value
                case .contentType:
                    if let first = type {
                        if types.isEmpty { types.append(first) }
                        types.append(field.value)
                    } else {
                        type = field.value
                    }
                default: break
                }
            }
        }

        /// NDJSON by any of its names: `application/x-ndjson`, `application/jsonl` (JSON
        /// Lines), `application/x-jsonlines`; parameters (`; charset=utf-8`) aside. Sent more
        /// than once, alike (`conflictingTypes` refuses the rest), its first value is the type.
        var isBatch: Bool { type.map(RulesServer.isBatchType) ?? false }

        /// The differing values of a `Content-Type` sent more than once, if it was. The field
        /// holds one value (RFC 9110, 8.3): the same value repeated is that value; two
        /// different ones leave the body's type unknown, and the request is refused (400).
        var conflictingTypes: [String]? {
            guard let first = types.first, types.contains(where: { $0 != first }) else { return nil }
            return types
        }
    }

    static let batchTypes: Set<String> = ["application/x-ndjson", "application/jsonl", "application/x-jsonlines"]

    /// Whether a `Content-Type` names a batch: its media type (what precedes `;`), trimmed of
    /// whitespace, in any case. ASCII, as every content type a client sends is, by bytes; any
    /// other text by Unicode's rules (`lowercased`, `whitespaces`), which cost more than the
    /// rest of a request's reading of it did.
    static func isBatchType(_ type: String) -> Bool {
        var utf8 = type
        // Native strings are contiguous UTF-8: the check runs over a buffer, not through
        // String's indices, which cost more than the check itself.
        return utf8.withUTF8 { bytes in
            guard bytes.allSatisfy({ $0 < 0x80 }) else {
                let name = type.lowercased().split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
                return batchTypes.contains(name)
            }
            var start = 0, end = bytes.firstIndex(of: UInt8(ascii: ";")) ?? bytes.count
            while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
            while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
            // `application/json`, the one most requests name, is no batch type's length.
            guard batchTypeLengths.contains(end - start) else { return false }
            let name = UnsafeBufferPointer(rebasing: bytes[start..<end])
            return batchTypes.contains(String(decoding: name.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }, as: UTF8.self))
        }
    }

    private static let batchTypeLengths = Set(batchTypes.map(\.utf8.count))

    private func answer(_ request: Request, context: ServerContext) async throws(ClientLeft) -> Response {
        let fields = BodyFields(request.headers)
        if let encoding = fields.encoding, encoding.lowercased() != "identity" {
            metrics.record(.invalid)
            return refusal(.unsupportedMediaType, type: "UnsupportedContentEncoding",
                           message: "the body must not be compressed (Content-Encoding: \(PrintableText.field(encoding)))")
        }
        if let types = fields.conflictingTypes {
            metrics.record(.invalid)
            let listed = types.map { "'\(PrintableText.field($0))'" }.joined(separator: ", ")
            return refusal(.badRequest, type: "ConflictingContentType",
                           message: "Content-Type is sent \(types.count) times with different values (\(listed)); send it once")
        }
        var tooLarge: String { "the body is over the limit of \(options.maxBodyBytes) bytes (--max-body)" }
        let length = fields.length.flatMap { Int($0) }
        if let length, length > options.maxBodyBytes {
            // Said up front: refused before a byte of it is read (or a `100 Continue` sent).
            metrics.record(.invalid)
            context.closeAfterAnswer()
            return refusal(.contentTooLarge, type: "BodyTooLarge", close: true, message: tooLarge)
        }
        var collected = ByteBuffer()
        // What the body's buffer took of the server's budget: its capacity, which grows by
        // powers of two ahead of its bytes. Given back once the request is answered (a batch's,
        // once its answers begin to stream).
        var taken = 0
        defer { bodies.give(taken) }
        do {
            for try await part in request.body {
                let needed = collected.readableBytes + part.readableBytes
                if needed > options.maxBodyBytes {
                    metrics.record(.invalid)
                    context.closeAfterAnswer()
                    return refusal(.contentTooLarge, type: "BodyTooLarge", close: true, message: tooLarge)
                }
                if needed > collected.capacity {
                    let capacity = ByteBudget.capacity(for: needed)
                    guard bodies.take(capacity - taken) else {
                        context.closeAfterAnswer()
                        return refusal(.serviceUnavailable, type: "Overloaded", close: true, message: """
                            the bodies of the requests in flight hold the server's limit of \(bodies.limit) bytes \
                            (--max-bodies-in-flight); try again
                            """, retry: true)
                    }
                    taken = capacity
                    collected.reserveCapacity(needed)
                }
                collected.writeImmutableBuffer(part)
            }
        } catch {
            let refused = refusal(.badRequest, type: "InvalidBody", message: "the body could not be read: \(error)")
            // The connection's input ended before the body did: the client left, and the answer
            // reaches no one, so it is no invalid outcome and no 400 (`RequestLog`).
            if ConnectionGuard.inputEnded(error) || !context.channel.isActive { throw ClientLeft(answer: refused) }
            metrics.record(.invalid)
            return refused
        }
        // The body ended short of its length, or (no length said) ConnectionGuard ended it.
        if length.map({ collected.readableBytes < $0 }) ?? true, let cut = await bodyCut(context) {
            metrics.record(.invalid)
            context.closeAfterAnswer()
            switch cut {
            case .timeout:
                return refusal(.requestTimeout, type: "BodyTimeout", close: true,
                               message: "the body did not arrive whole within \(options.idleTimeout) s (--idle-timeout)")
            case .shutdown:
                return refusal(.serviceUnavailable, type: "ShuttingDown", close: true,
                               message: "the server is shutting down; the body had not arrived whole", retry: true)
            }
        }
        // No new work while the answers left unread hold their budget: what they hold goes
        // only as their clients read (or --idle-timeout closes their connections). Asked again
        // on the state, before any rule runs: the request may have waited for it meanwhile.
        if answers.isSpent() { return answersSpent() }
        let body = collected.readBytes(length: collected.readableBytes) ?? []
        if fields.isBatch { return await batch(body, context: context) }
        do {
            guard let answer = try await pool.dispatch(body, requestID: context.identity.id, admit: admitsAnswers) else {
                return answersSpent()
            }
            metrics.record(answer.status)
            metrics.recordEvaluation(answer.evaluation, batch: false)
            metrics.recordRuleFailures(answer.ruleFailures)
            // Read for the access line alone, which is written at `info`.
            if logger.logLevel <= .info {
                let outcome = OutcomeFields.read(answer.json)
                context.notes.set {
                    $0.status = outcome.status
                    $0.kind = outcome.kind
                    $0.revision = answer.revision.hash
                }
            }
            var json = ByteBufferAllocator().buffer(capacity: answer.json.count + 1)
            json.writeBytes(answer.json)
            json.writeInteger(UInt8(ascii: "\n"))
            // The answer's fields made at once, in the order they are sent: Hummingbird adds
            // `Content-Length` when it is not there, and `RequestLog` the request id when it is
            // not the last, each by a search and a copy of the fields.
            let response = Response(
                status: answer.status == .invalid ? .badRequest : .ok,
                headers: [
                    .contentType: "application/json", .contentLength: String(json.readableBytes),
                    RequestIdentity.requestIDField: context.identity.id,
                ],
                body: json.readableBytes <= Self.answerPart ? .init(byteBuffer: json) : UnsentAnswer(json, budget: answers).body(on: context.channel))
            return shadowed(response, body: body, requestID: context.identity.id, answer: answer)
        } catch {
            return refusal(error)
        }
    }

    /// Why `ConnectionGuard` cut this connection's body short, if it did (asked only of
    /// bodies short of their length, or sent without one).
    private func bodyCut(_ context: ServerContext) async -> ConnectionGuard.Cut? {
        let guarded = try? await context.channel.pipeline.handler(type: ConnectionGuard.self).map { $0.cut }.get()
        return guarded ?? nil
    }

    /// A batch, streamed: the status is sent once the first outcome line (or the refusal)
    /// is known. The answers go through an `AnswerPipe`, so a client that reads slowly holds
    /// its state back instead of piling answers up in the server's memory.
    private func batch(_ body: [UInt8], context: ServerContext) async -> Response {
        let requestID = context.identity.id
        // Sampled for the shadow revision: its live answers are kept as they stream, and the
        // candidate gets the batch once the client has read them.
        let shadow = self.shadow.flatMap { $0.samples(requestID) ? $0 : nil }
        let capture = shadow.map { _ in ShadowCapture() }
        let log = pool.options.decisionLog
        let pipe = AnswerPipe(
            limit: options.batchBufferBytes, patience: options.idleTimeout, othersWaiting: { [pool] in pool.waiting > 0 }
        ) { [inFlight] readAll in
            inFlight.end(answered: readAll)
            if let shadow, let (answers, revision) = capture?.taken {
                shadow.submit(body, batch: true, requestID: requestID, live: answers, liveRevision: revision, log: log)
            }
        }
        let gate = FirstAnswer<RulesPool.Refusal?>()
        let metrics = self.metrics
        let notes = context.notes
        let bodyBytes = body.count
        Task { [pool] in
            do {
                let summary: RulesPool.BatchSummary = try await pool.dispatchBatch(body, requestID: requestID) { answer, key in
                    capture?.add(answer, key: key, bodyBytes: bodyBytes)
                    // Open before pushing: a push may wait for the reader, which starts once open.
                    gate.open(nil)
                    return pipe.push(answer)
                }
                capture?.answered(by: summary.revision)
                for (status, count) in summary.counts { metrics.record(status, count: count) }
                metrics.recordRuleFailures(byType: summary.ruleFailures)
                metrics.recordEvaluation(summary.evaluation, batch: true)
                if summary.stoppedEarly { metrics.recordBatchStopped(stalled: pipe.gaveUp) }
                if summary.outOfTime { metrics.recordBatchOutOfTime() }
                notes.set {
                    $0.revision = summary.revision.hash
                    $0.counts = Dictionary(uniqueKeysWithValues: summary.counts.map { ($0.key.rawValue, $0.value) })
                }
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
        notes.set { $0.streamed = true }
        return Response(status: .ok, headers: [.contentType: "application/x-ndjson"], body: .init(asyncSequence: pipe))
    }

    /// 503 `Overloaded`: the answers waiting for their clients hold `maxAnswersUnsentBytes`.
    private func answersSpent() -> Response {
        refusal(.serviceUnavailable, type: "Overloaded", message: """
            the answers waiting for their clients to read them hold the server's limit of \(answers.limit) bytes \
            (--max-answers-unsent); try again
            """, retry: true)
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

    /// A request of `/v1/dispatch` refused before any rule ran: an `invalid` outcome, which is
    /// also the one error shape (`ErrorBody`).
    /// `close`: the connection closes after it (`Connection: close` says so to the client).
    private func refusal(_ status: HTTPResponse.Status, type: String, close: Bool = false, message: String, retry: Bool = false) -> Response {
        var headers: HTTPFields = [.contentType: "application/json"]
        if retry { headers[.retryAfter] = "1" }
        if close { headers[.connection] = "close" }
        let outcome = pool.refusal(type: type, message: message, where: "request")
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: outcome + [UInt8(ascii: "\n")])))
    }

    /// 403 `ReloadDisabled` for a route behind the reload token (reloading, the shadow, the
    /// required revision) while neither `reloadEndpoint` nor reload tokens turned them on:
    /// reload tokens turn them on for their holders (BearerAuth let this one in).
    func reloadRoutesRefused(doing what: String) -> Response? {
        guard options.reloadEndpoint || options.reloadTokens != nil else {
            return ErrorBody.response(
                .forbidden, type: "ReloadDisabled",
                message: "\(what) over HTTP is off: start luahier serve with --reload-token-file (or --reload-endpoint)")
        }
        return nil
    }

    private func reload(context: ServerContext) async -> Response {
        if let refused = reloadRoutesRefused(doing: "reloading") { return refused }
        guard let result = await unlessDraining({ await self.pool.reload() }) else { return shuttingDown("the reload") }
        metrics.recordReload(result)
        onReload(result)
        func revision(_ revision: Revision) -> [String: Value] {
            context.notes.set { $0.revision = revision.hash }
            return ["revision": .int(Int64(revision.number)), "hash": .string(revision.hash)]
        }
        switch result {
        case .loaded(let loaded):
            return Response.json(.ok, revision(loaded).merging(["result": "loaded"]) { $1 })
        case .unchanged(let running):
            return Response.json(.ok, revision(running).merging(["result": "unchanged"]) { $1 })
        case .failed(let running, let message):
            return ErrorBody.response(
                .unprocessableContent, type: "ReloadFailed", message: message, extra: revision(running).merging(["result": "failed"]) { $1 })
        }
    }
}

/// Resumes one waiter once, with the first answer opened: for a batch, nil when its first
/// answer (or its end) is ready, or the refusal; for `RulesServer.unlessDraining`, a load's
/// result or nil at the drain. Later answers are dropped.
final class FirstAnswer<Answer: Sendable>: Sendable {
    private let state = Mutex<(opened: Bool, result: Answer?, waiter: CheckedContinuation<Answer, Never>?)>((false, nil, nil))

    func open(_ answer: Answer) {
        let waiter: CheckedContinuation<Answer, Never>? = state.withLock { state in
            guard !state.opened else { return nil }
            state.opened = true
            state.result = answer
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: answer)
    }

    /// Whether an answer was opened.
    var isOpen: Bool { state.withLock { $0.opened } }

    func wait() async -> Answer {
        await withCheckedContinuation { continuation in
            let ready: Answer? = state.withLock { state in
                if state.opened { return state.result }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}

extension ByteBuffer {
    /// The readable bytes as JSON, nil when they are not.
    var json: Value? {
        readableBytesView.withContiguousStorageIfAvailable { try? JSON.parse(UnsafeRawBufferPointer($0)) } ?? nil
    }
}
#endif
