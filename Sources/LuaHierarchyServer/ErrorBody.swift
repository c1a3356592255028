#if Server
internal import Hummingbird
import LuaHierarchy
internal import NIOCore

/// The one shape of every answer that is not 2xx: a JSON object whose `error` is
/// `{"type", "message"}`. Answers of `/v1/dispatch` are also outcomes (`status` `invalid`,
/// `revision`, `error.where`), reload failures also carry the running revision, and a 503 of
/// `/readyz` its readiness fields; the `error` member is in all of them, so a client reads
/// one schema (docs/openapi.json, `ErrorBody`).
enum ErrorBody {
    /// `{"error": {"type", "message"}}` with the members of `extra` beside it.
    static func response(
        _ status: HTTPResponse.Status, type: String, message: String, extra: [String: Value] = [:],
        headers: HTTPFields = [:]
    ) -> Response {
        var body = extra
        body["error"] = error(type: type, message: message)
        return Response.json(status, body, headers: headers)
    }

    static func error(type: String, message: String) -> Value {
        .map(["type": .string(type), "message": .string(message)])
    }

    /// The error type named for a status the router answers on its own (no route, no method).
    static func type(for status: HTTPResponse.Status) -> String {
        switch status.code {
        case 404: "NotFound"
        case 405: "MethodNotAllowed"
        case 400: "BadRequest"
        case 408: "BodyTimeout"
        case 413: "BodyTooLarge"
        default: "HTTP\(status.code)"
        }
    }
}
#endif
