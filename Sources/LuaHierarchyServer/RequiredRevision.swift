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
        let guarded = router.group()
        if let tokens = options.reloadTokens { guarded.add(middleware: BearerAuth(tokens: tokens, route: "/v1/required-revision")) }
        guarded.post("/v1/required-revision") { request, _ in
            await self.requireRevision(request)
        }
    }

    private func requireRevision(_ request: Request) async -> Response {
        guard options.reloadEndpoint || options.reloadTokens != nil else {
            return ErrorBody.response(
                .forbidden, type: "ReloadDisabled",
                message: "changing the required revision over HTTP is off: start luahier serve with --reload-token-file (or --reload-endpoint)")
        }
        let usage = #"the body must be {"hash": "HEX"} (16 to 64 hex digits of a revision's hash) or {"hash": null}"#
        guard let body = try? await request.body.collect(upTo: 4096),
            let parsed = body.readableBytesView.withContiguousStorageIfAvailable({ try? JSON.parse(UnsafeRawBufferPointer($0)) }) ?? nil,
            case .map(let members) = parsed, members.keys.sorted() == ["hash"], let hash = members["hash"]
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
