#if Server
internal import Hummingbird
internal import NIOCore

/// `GET /openapi.json` (and `HEAD`): the API document, docs/openapi.json, as it was when the
/// binary was built (embedded by the EmbedLua plugin as `ServerDocuments.openapi`, byte for
/// byte): what this binary's routes answer, not what a newer file in a checkout says.
extension RulesServer {
    func addDocumentRoutes(to router: Router<ServerContext>) {
        for method in [HTTPRequest.Method.get, .head] {
            router.on("/openapi.json", method: method) { request, _ in
                Self.apiDocument(head: request.method == .head)
            }
        }
    }

    /// The one buffer every answer shares: the document is made once, not per request.
    private static let apiDocumentBytes = ByteBuffer(string: ServerDocuments.openapi)

    private static func apiDocument(head: Bool) -> Response {
        Response.sending(status: .ok, headers: [.contentType: "application/json"], apiDocumentBytes, head: head)
    }
}
#endif
