#if Server
internal import Hummingbird
import LuaHierarchy
internal import NIOCore

/// `POST /v1/required-revision`: sets (`{"hash": "HEX"}`) or clears (`{"hash": null}`) the
/// revision `/readyz` waits for (`Options.requiredRevision`), behind the reload token. A
/// rollout sets it on every replica, then waits until each answers `/readyz` 200: the whole
/// fleet runs the new rules. Answers 200 `{"required", "running", "ready"}`; 400 for a hash
/// that is not 16 to 64 hex digits; 403 `ReloadDisabled` as `POST /v1/reload` does.
extension RulesServer {
    func addRequiredRevisionRoute(to router: Router<ServerContext>) {
        guarded(router, by: options.reloadTokens, route: "/v1/required-revision").post("/v1/required-revision") { request, _ in
            await self.requireRevision(request)
        }
    }

    private func requireRevision(_ request: Request) async -> Response {
        if let refused = reloadRoutesRefused(doing: "changing the required revision") { return refused }
        let usage = #"the body must be {"hash": "HEX"} (16 to 64 hex digits of a revision's hash) or {"hash": null}"#
        guard let body = try? await request.body.collect(upTo: 4096),
            case .map(let members)? = body.json, members.keys.sorted() == ["hash"], let hash = members["hash"]
        else { return ErrorBody.response(.badRequest, type: "InvalidBody", message: usage) }
        switch hash {
        case .null:
            requiredRevision.withLock { $0 = nil }
        case .string(let text) where Revision.isHashPrefix(text):
            requiredRevision.withLock { $0 = text.lowercased() }
        default:
            return ErrorBody.response(.badRequest, type: "InvalidBody", message: usage)
        }
        let required = requiredRevision.withLock { $0 }
        return Response.json(.ok, [
            "required": required.map { .string($0) } ?? .null, "running": .string(pool.revision.hash),
            "ready": .bool(notReady == nil),
        ])
    }
}
#endif
