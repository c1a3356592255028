#if Server
import Foundation
import Hummingbird
import HummingbirdTesting
import LuaHierarchy
@testable import LuaHierarchyServer
import Testing

/// Bearer tokens on `/v1/dispatch` and `/v1/reload`, in process (the routes of
/// `RouteTests`): 401 without a usable token, 403 with another, the route with one of its own;
/// the rest stays open.
@Suite("Bearer tokens on the server's routes, in process")
struct BearerAuthTests {
    static let ask = ByteBuffer(string: #"{"at": "/app", "event": "Ask"}"#)

    static func bearer(_ token: String) -> HTTPFields { [.authorization: "Bearer \(token)"] }

    @Test func dispatchTakesOnlyItsTokens() async throws {
        let (server, _) = try RouteTests.server { _, server in
            server.dispatchTokens = try? BearerTokens(text: "first-token\nsecond-token\n", source: "test")
        }
        try await server.application().test(.router) { client in
            let missing = try await client.execute(uri: "/v1/dispatch", method: .post, body: Self.ask)
            #expect(missing.status == .unauthorized)
            #expect(missing.headers[.wwwAuthenticate] == #"Bearer realm="luahier""#)
            #expect(RouteTests.error(missing)?["type"] as? String == "Unauthorized")
            let otherScheme = try await client.execute(
                uri: "/v1/dispatch", method: .post, headers: [.authorization: "Basic Zmlyc3QtdG9rZW4="], body: Self.ask)
            #expect(otherScheme.status == .unauthorized)
            let wrong = try await client.execute(uri: "/v1/dispatch", method: .post, headers: Self.bearer("first-tokex"), body: Self.ask)
            #expect(wrong.status == .forbidden)
            #expect(RouteTests.error(wrong)?["type"] as? String == "Forbidden")
            for token in ["first-token", "second-token"] {
                // The scheme's case is the client's choice (RFC 9110).
                let taken = try await client.execute(
                    uri: "/v1/dispatch", method: .post, headers: [.authorization: "bearer \(token)"], body: Self.ask)
                #expect(taken.status == .ok, "\(String(buffer: taken.body))")
            }
            // The other methods' 405, health and metrics ask for no token.
            #expect(try await client.execute(uri: "/v1/dispatch", method: .get).status == .methodNotAllowed)
            #expect(try await client.execute(uri: "/livez", method: .get).status == .ok)
            let metrics = try await RouteTests.metrics(client)
            #expect(metrics.contains(#"luahier_http_requests_total{code="401",method="POST",route="/v1/dispatch"} 2"#), "\(metrics)")
            #expect(metrics.contains(#"luahier_http_requests_total{code="403",method="POST",route="/v1/dispatch"} 1"#))
            // The dispatch token does not reload.
            let reload = try await client.execute(uri: "/v1/reload", method: .post, headers: Self.bearer("first-token"))
            #expect(RouteTests.error(reload)?["type"] as? String == "ReloadDisabled")
        }
    }

    @Test func reloadTokensTurnTheEndpointOnForTheirHoldersOnly() async throws {
        let (server, _) = try RouteTests.server { _, server in
            server.reloadTokens = try? BearerTokens(text: "reload-token", source: "test")
        }
        try await server.application().test(.router) { client in
            #expect(try await client.execute(uri: "/v1/reload", method: .post).status == .unauthorized)
            #expect(try await client.execute(uri: "/v1/reload", method: .post, headers: Self.bearer("reload-tokem")).status == .forbidden)
            let reloaded = try await client.execute(uri: "/v1/reload", method: .post, headers: Self.bearer("reload-token"))
            #expect(reloaded.status == .ok)
            #expect(RouteTests.object(reloaded)["result"] as? String == "unchanged")
            // Dispatch has no tokens of its own: open, as before.
            #expect(try await client.execute(uri: "/v1/dispatch", method: .post, body: Self.ask).status == .ok)
        }
    }

    @Test func tokensAreComparedWholeAndNeverShown() throws {
        #expect(BearerTokens.matches(Array("abc".utf8), Array("abc".utf8)))
        #expect(!BearerTokens.matches(Array("abd".utf8), Array("abc".utf8)))
        #expect(!BearerTokens.matches(Array("ab".utf8), Array("abc".utf8)))
        #expect(!BearerTokens.matches(Array("abcabc".utf8), Array("abc".utf8)))
        #expect(!BearerTokens.matches([], Array("abc".utf8)))
        let tokens = try BearerTokens(text: "  one-token  \r\n\nanother/token+==\n", source: "test")
        #expect(tokens.count == 2)
        #expect(tokens.accepts(Array("another/token+==".utf8)))
        #expect("\(tokens)" == "2 bearer tokens")
        var dumped = ""
        dump(tokens, to: &dumped)
        #expect(!dumped.contains("one-token"), "\(dumped)")
        #expect(BearerAuth.bearerToken("Bearer  spaced") == Array("spaced".utf8))
        #expect(BearerAuth.bearerToken("Bearer a b") == nil)
        #expect(BearerAuth.bearerToken("Token abc") == nil)
        #expect(throws: SetupFileError.self) { try BearerTokens(text: "\n\n", source: "test") }
        #expect(throws: SetupFileError.self) { try BearerTokens(text: "has space", source: "test") }
        #expect(throws: SetupFileError.self) { try BearerTokens(text: "=abc", source: "test") }
    }
}
#endif
