#if Server
internal import Hummingbird

/// The door of a route that takes bearer tokens (`--dispatch-token-file`,
/// `--reload-token-file`): no usable `Authorization: Bearer TOKEN` is a 401 `Unauthorized`
/// (with `WWW-Authenticate: Bearer realm="luahier"`), a token that is not one of `tokens` a
/// 403 `Forbidden`, both in the one error shape and before the body is read. It runs inside
/// `RequestLog`, which counts and logs the refusals as any answer; the token itself is read
/// here only, and appears in no answer, log line or metric.
struct BearerAuth: RouterMiddleware {
    typealias Context = ServerContext
    let tokens: BearerTokens
    /// `POST /v1/dispatch`: the route, for the messages.
    let route: String

    static let challenge = #"Bearer realm="luahier""#

    func handle(
        _ request: Request, context: ServerContext, next: (Request, ServerContext) async throws -> Response
    ) async throws -> Response {
        guard let presented = Self.bearerToken(request.headers[.authorization]) else {
            var headers: HTTPFields = [.wwwAuthenticate: Self.challenge]
            if refuseBody(of: request, context: context) { headers[.connection] = "close" }
            return ErrorBody.response(
                .unauthorized, type: "Unauthorized",
                message: "\(route) takes a bearer token: send Authorization: Bearer TOKEN", headers: headers)
        }
        guard tokens.accepts(presented) else {
            let headers: HTTPFields = refuseBody(of: request, context: context) ? [.connection: "close"] : [:]
            return ErrorBody.response(.forbidden, type: "Forbidden", message: "the bearer token is not one \(route) takes", headers: headers)
        }
        return try await next(request, context)
    }

    /// The token of `Bearer TOKEN` (the scheme in any case, a space or more before the token);
    /// nil for no field, another scheme, no token, or more than one word after the scheme.
    static func bearerToken(_ field: String?) -> [UInt8]? {
        guard let field else { return nil }
        let words = field.split(separator: " ", omittingEmptySubsequences: true)
        guard words.count == 2, words[0].lowercased() == "bearer" else { return nil }
        return Array(words[1].utf8)
    }

    /// A refused request's body is never read: the connection closes after the answer, rather
    /// than take in, for as long as a client cares to send it, a body no one will read.
    /// True when the request declared a body (its answer then says `Connection: close`).
    private func refuseBody(of request: Request, context: ServerContext) -> Bool {
        let declared = request.headers[.contentLength].map { $0 != "0" } ?? (request.headers[.transferEncoding] != nil)
        if declared { context.closeAfterAnswer() }
        return declared
    }
}
#endif
