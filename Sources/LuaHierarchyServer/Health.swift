#if Server
internal import Hummingbird
import LuaHierarchy
internal import NIOCore

/// Liveness and readiness, for probes and load balancers:
///
/// - `/livez`: 200 `{"status":"live"}` whenever the process answers at all, busy or not.
/// - `/readyz`: 200 `{"status":"ready", ...}` when a new request would be answered; 503
///   `{"status":"not ready","reason": ...}` while `draining` (SIGTERM came) or `overloaded`
///   (`RulesPool.isOverloaded`: a request made now would be refused), or `revision` while the
///   running revision is not the one required (`requiredRevision`). Both bodies carry the
///   workers, the running revision and the last reload failure; a 503's also the one error
///   shape's `error` (`NotReady`). The pool exists only once
///   its first revision loaded, and the server listens only after: before that there is
///   no connection to answer.
/// - `/healthz`: the same as `/readyz` (kept for the setups that probe it).
///
/// Each answers `HEAD` with the same status and no body.
extension RulesServer {
    /// Why the server would not answer a new request now; nil when it would.
    enum NotReady: String {
        case draining, overloaded, revision

        var explanation: String {
            switch self {
            case .draining: "the server is shutting down: it serves the requests it has, and takes no more soon"
            case .overloaded: "every Lua state is busy, none came free within --max-wait: a request now would be refused"
            case .revision: "the running revision is not the one required (--require-revision)"
            }
        }
    }

    var notReady: NotReady? {
        if draining.withLock({ $0 }) { return .draining }
        if let required = requiredRevision.withLock({ $0 }), !pool.revision.hash.hasPrefix(required) { return .revision }
        if pool.isOverloaded { return .overloaded }
        return nil
    }

    func addHealthRoutes(to router: Router<ServerContext>) {
        for method in [HTTPRequest.Method.get, .head] {
            router.on("/livez", method: method) { request, _ in
                Response.json(.ok, ["status": "live"], headers: [.cacheControl: "no-store"], head: request.method == .head)
            }
            for path in ["/readyz", "/healthz"] {
                router.on(RouterPath(path), method: method) { request, _ in
                    self.readiness(head: request.method == .head)
                }
            }
        }
    }

    private func readiness(head: Bool) -> Response {
        let reason = notReady
        let revision = pool.revision
        var body: [String: Value] = [
            "status": reason == nil ? "ready" : "not ready",
            "workers": .int(Int64(pool.workers)),
            "revision": .map([
                "number": .int(Int64(revision.number)), "hash": .string(revision.hash),
                "files": .array(revision.files.map { .string($0) }), "loadedAt": .double(revision.loadedAt),
            ]),
        ]
        if let reason {
            body["reason"] = .string(reason.rawValue)
            body["error"] = ErrorBody.error(type: "NotReady", message: reason.explanation)
        }
        if reason == .overloaded {
            let load = pool.load
            body["waiting"] = .int(Int64(load.waiting))
            if let busy = load.allBusyFor { body["allBusyFor"] = .double(busy) }
        }
        if let required = requiredRevision.withLock({ $0 }) { body["requiredRevision"] = .string(required) }
        if let bundles {
            var source: [String: Value] = ["url": .string(bundles.options.url)]
            if let sequence = bundles.sequence { source["sequence"] = .int(sequence) }
            if let refusal = bundles.refusal { source["lastRefusal"] = .string(refusal) }
            body["bundle"] = .map(source)
        }
        if let failure = pool.lastReloadFailure {
            body["lastReloadError"] = .map(["message": .string(failure.description), "at": .double(failure.at)])
        }
        return Response.json(reason == nil ? .ok : .serviceUnavailable, body, headers: [.cacheControl: "no-store"], head: head)
    }
}

extension Response {
    /// `body` as one JSON object and a newline, `Content-Type: application/json`: every JSON
    /// answer the server makes itself (outcomes aside, which come written).
    static func json(_ status: HTTPResponse.Status, _ body: [String: Value], headers: HTTPFields = [:], head: Bool = false) -> Response {
        var fields = headers
        fields[.contentType] = "application/json"
        return sending(status: status, headers: fields, ByteBuffer(string: JSON.encode(.map(body)) + "\n"), head: head)
    }

    /// An answer of `bytes`; to HEAD without them, but with the `Content-Length` GET's has.
    static func sending(status: HTTPResponse.Status, headers: HTTPFields, _ bytes: ByteBuffer, head: Bool) -> Response {
        guard head else { return Response(status: status, headers: headers, body: .init(byteBuffer: bytes)) }
        var fields = headers
        fields[.contentLength] = String(bytes.readableBytes)
        return Response(status: status, headers: fields, body: .init())
    }
}
#endif
