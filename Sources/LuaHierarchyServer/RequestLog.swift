#if Server
internal import Hummingbird
import LuaHierarchy
internal import HTTPTypes
internal import Logging
internal import NIOCore

/// Every request, whatever its route: gives it its identity (`X-Request-Id`, `traceparent`),
/// answers what the router refuses (no route, no method) in the one error shape
/// (`ErrorBody`), echoes the request id, counts it in `luahier_http_requests_total{code,
/// method, route}` and its time, and writes its access log line at `info`. A streamed batch is
/// counted and logged when its last answer was written. A request whose client left before it
/// arrived whole (`ClientLeft`) is not counted: its access line says `ended=client_gone`, and
/// no `status`.
struct RequestLog: RouterMiddleware {
    typealias Context = ServerContext
    let server: RulesServer

    func handle(
        _ request: Request, context: ServerContext, next: (Request, ServerContext) async throws -> Response
    ) async throws -> Response {
        let started = ContinuousClock.now
        if request.method == .connect {
            await ConnectAnswer.install(on: context.channel)
        } else if UpgradeAnswer.applies(to: request.head) {
            await UpgradeAnswer.install(on: context.channel)
        }
        var context = context
        context.identity = RequestIdentity(request.headers)
        var response: Response
        // A 405's route: the router found none, but the path is a route's.
        var refusedRoute: String?
        var clientLeft = false
        do {
            response = try await next(request, context)
        } catch let error as any HTTPResponseError {
            if error.status == .notFound, let refused = RulesServer.methodRefusal(request) {
                (refusedRoute, response) = (refused.route, refused.response)
            } else {
                response = ErrorBody.response(
                    error.status, type: ErrorBody.type(for: error.status), message: Self.message(for: error.status, request))
            }
        } catch let left as ClientLeft {
            (clientLeft, response) = (true, left.answer)
        } catch {
            response = ErrorBody.response(.internalServerError, type: "InternalError", message: "the server failed to answer: \(error)")
        }
        // Appended (a set would first look for it among the fields), unless the route's
        // answer carries it last already (`/v1/dispatch`'s).
        if response.headers.last?.name != RequestIdentity.requestIDField {
            response.headers.append(HTTPField(name: RequestIdentity.requestIDField, value: context.identity.id))
        }
        let route = refusedRoute ?? context.endpointPath.flatMap { $0.hasPrefix("/") ? $0 : nil } ?? "unmatched"
        let access = Access(
            method: Self.method(request.method), route: route, identity: context.identity, notes: context.notes, started: started)
        guard !clientLeft else {
            server.recordClientLeft(access)
            return response
        }
        guard context.notes.streamed else {
            server.record(access, code: response.status.code)
            return response
        }
        let body = response.body
        let code = response.status.code
        response.body = ResponseBody(contentLength: body.contentLength) { [server] writer in
            do {
                try await body.write(writer)
            } catch {
                server.record(access, code: code)
                throw error
            }
            server.record(access, code: code)
        }
        return response
    }

    /// A method as a label: the nine HTTP names, any other `other` (a label's values stay few).
    static func method(_ method: HTTPRequest.Method) -> String {
        switch method {
        case .get, .head, .post, .put, .delete, .patch, .options, .trace, .connect: method.rawValue
        default: "other"
        }
    }

    /// `no such route; the routes are POST /v1/dispatch, ..., GET|HEAD /openapi.json`: from the
    /// routes' own table.
    private static let routeList = "no such route; the routes are "
        + RulesServer.routeMethods.map { path, methods in methods.map(\.rawValue).joined(separator: "|") + " " + path }
            .joined(separator: ", ")

    private static func message(for status: HTTPResponse.Status, _ request: Request) -> String {
        switch status {
        case .notFound: routeList
        case .methodNotAllowed: "this route does not take \(method(request.method))"
        default: status.reasonPhrase
        }
    }
}

/// Thrown by a route whose request's client left before the request arrived whole (its input
/// ended mid-body): `answer` is what would have been sent, had anyone been left to read it.
struct ClientLeft: Error {
    let answer: Response
}

/// One request as the access log and the HTTP metrics see it.
struct Access: Sendable {
    var method: String
    var route: String
    var identity: RequestIdentity
    var notes: RequestNotes
    var started: ContinuousClock.Instant
}

extension RulesServer {
    /// Counts `access`, answered `code`, and logs its line.
    func record(_ access: Access, code: Int) {
        let elapsed = ContinuousClock.now - access.started
        metrics.record(code: code, method: access.method, route: access.route, duration: elapsed)
        logger.info("request", metadata: Self.accessFields(access, code: code, elapsed: elapsed))
    }

    /// Logs `access`, whose client left before its request arrived whole: no answer was sent,
    /// and none is counted.
    func recordClientLeft(_ access: Access) {
        var fields = Self.accessFields(access, code: nil, elapsed: ContinuousClock.now - access.started)
        fields["ended"] = "client_gone"
        logger.info("request", metadata: fields)
    }

    private static func accessFields(_ access: Access, code: Int?, elapsed: Duration) -> Logger.Metadata {
        let notes = access.notes.current
        var fields = Logger.Metadata(minimumCapacity: 12)
        fields["request_id"] = .string(access.identity.id)
        fields["method"] = .string(access.method)
        fields["route"] = .string(access.route)
        if let code { fields["status"] = .stringConvertible(code) }
        fields["duration_ms"] = .stringConvertible(Self.milliseconds(elapsed))
        if let trace = access.identity.traceID { fields["trace_id"] = .string(trace) }
        if let parent = access.identity.parentSpanID { fields["parent_id"] = .string(parent) }
        if let revision = notes.revision { fields["revision"] = .string(String(decoding: revision.utf8.prefix(16), as: UTF8.self)) }
        if let status = notes.status { fields["outcome"] = .string(status) }
        if let kind = notes.kind { fields["kind"] = .string(kind) }
        if !notes.counts.isEmpty { fields["outcomes"] = .dictionary(notes.counts.mapValues { .stringConvertible($0) }) }
        return fields
    }

    /// Milliseconds, to the microsecond.
    static func milliseconds(_ duration: Duration) -> Double {
        let micros = duration.components.seconds * 1_000_000 + duration.components.attoseconds / 1_000_000_000_000
        return Double(micros) / 1000
    }
}
#endif
