#if Server
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import LuaHierarchy
@testable import LuaHierarchyServer
import Synchronization
import Testing

/// `serve --bundle-url`: bundles pulled from a real HTTP server on loopback with ETags, each
/// checked and loaded as a reload; every refusal leaves the running revision; and
/// `--require-revision` with `POST /v1/required-revision`.
@Suite("Bundles pulled by serve, and the required revision")
struct BundlePollerTests {
    /// What the bundle server publishes, and what it saw.
    final class Published: Sendable {
        let state = Mutex<(bytes: [UInt8], etag: String, requests: Int, conditional: Int)>(([], "\"0\"", 0, 0))
        /// A body with nothing published stalls until the test ends the stall: on an event,
        /// not after a time that a loaded machine's poll timeout might outlast.
        let stall = AsyncStream<Void>.makeStream()

        func publish(_ bytes: [UInt8]) {
            state.withLock { state in
                state.bytes = bytes
                state.etag = "\"\(bytes.count)-\(bytes.reduce(0) { ($0 &* 31 &+ Int($1)) & 0xFFFFFF })\""
            }
        }
    }

    /// A bundle server: `GET /rules.bundle` answers the published bytes with their ETag, or
    /// 304 to a request whose `If-None-Match` names it.
    static func bundleServer(_ published: Published) -> some ApplicationProtocol {
        let router = Router()
        router.get("/rules.bundle") { request, _ -> Response in
            let (bytes, etag, conditional) = published.state.withLock { state in
                state.requests += 1
                let conditional = request.headers[.ifNoneMatch]
                if conditional != nil { state.conditional += 1 }
                return (state.bytes, state.etag, conditional)
            }
            if conditional == etag { return Response(status: .notModified, headers: [.eTag: etag]) }
            if bytes.isEmpty {
                // Nothing published: a body that starts and stalls (past the poller's timeout).
                return Response(status: .ok, body: .init { writer in
                    try await writer.write(ByteBuffer(string: "LHBUNDLE"))
                    for await _ in published.stall.stream {}
                    try await writer.finish(nil)
                })
            }
            return Response(status: .ok, headers: [.eTag: etag], body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
        }
        return Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
    }

    /// A poll's timeout where the test is not about it: a bound against hangs only (a loaded
    /// machine was seen to keep an exchange waiting past the default 10 s).
    static let pollBound = 300.0

    static func rules(_ version: Int) -> [UInt8] {
        Array(#"hier.root:child("app"):receiveEvent("Ask", function() return {type = "Answer", version = \#(version)} end)"#.utf8)
    }

    static func bundle(_ version: Int, signedWith key: String?, sequence: Int64? = nil) throws -> RuleBundle {
        let bundle = try RuleBundle(entry: "rules.lua", rules: rules(version), modules: [:], sequence: sequence)
        return try key.map { try bundle.signed(privateKey: $0) } ?? bundle
    }

    /// Whoever answers the poll (the bundle host, a stale cache, the network over http://)
    /// could serve an older signed bundle, and the replica loaded it as a new revision (an
    /// attacker's find). A bundle of other files must now come after the running one by its
    /// signed sequence; a rollback is a new release of the old rules.
    @Test func anOlderBundleServedAgainIsRefused() async throws {
        let keys = RuleBundle.makeKeyPair()
        let first = try Self.bundle(1, signedWith: keys.privateKey, sequence: 10)
        let pool = try RulesPool(options: .init(bundle: first))
        let published = Published()
        try await Self.bundleServer(published).test(.live) { client in
            var source = RulesServer.BundleSource(url: "http://127.0.0.1:\(try #require(client.port))/rules.bundle", publicKey: keys.publicKey)
            source.timeout = Self.pollBound
            let poller = BundlePoller(options: source, pool: pool, logger: Logger(label: "test")) { _, _ in }
            #expect(poller.sequence == 10, "the bundle the pool started with")
            let second = try Self.bundle(2, signedWith: keys.privateKey, sequence: 20)
            published.publish(second.bytes)
            #expect(await poller.poll().0 == .loaded)
            #expect(poller.sequence == 20)
            let older: [(String, RuleBundle, String)] = [
                ("the first, served again", first, "it has sequence 10, and the running bundle has sequence 20"),
                ("other files under the same number", try Self.bundle(3, signedWith: keys.privateKey, sequence: 20), "it has sequence 20"),
                ("no number", try Self.bundle(3, signedWith: keys.privateKey), "it has no sequence"),
            ]
            for (name, bundle, says) in older {
                published.publish(bundle.bytes)
                #expect(await poller.poll().0 == .refused, "\(name)")
                #expect(poller.refusal?.contains("not newer: \(says)") == true, "\(name): \(poller.refusal ?? "")")
                #expect(pool.revision.hash == second.revisionHash && pool.revision.number == 2, "\(name)")
            }
            // The running files under a lower number change nothing.
            published.publish(try Self.bundle(2, signedWith: keys.privateKey, sequence: 5).bytes)
            #expect(await poller.poll().0 == .unchanged)
            #expect(poller.sequence == 20)
            // Under a higher one, the number is taken: a bundle between the two is then older.
            published.publish(try Self.bundle(2, signedWith: keys.privateKey, sequence: 25).bytes)
            #expect(await poller.poll().0 == .unchanged)
            #expect(poller.sequence == 25)
            published.publish(try Self.bundle(3, signedWith: keys.privateKey, sequence: 22).bytes)
            #expect(await poller.poll().0 == .refused)
            #expect(pool.revision.hash == second.revisionHash)
            // Rolling back on purpose: the old rules, released again under a new number.
            let rolledBack = try Self.bundle(1, signedWith: keys.privateKey, sequence: 30)
            published.publish(rolledBack.bytes)
            #expect(await poller.poll().0 == .loaded)
            #expect(pool.revision.hash == first.revisionHash && poller.sequence == 30 && poller.refusal == nil)
        }
        await pool.shutDown()
    }

    @Test func bundlesArePolledWithETagsLoadedAndRefused() async throws {
        let keys = RuleBundle.makeKeyPair(), stranger = RuleBundle.makeKeyPair()
        let first = try Self.bundle(1, signedWith: keys.privateKey)
        let pool = try RulesPool(options: .init(bundle: first))
        let published = Published()
        published.publish(first.bytes)
        try await Self.bundleServer(published).test(.live) { client in
            var source = RulesServer.BundleSource(url: "http://127.0.0.1:\(try #require(client.port))/rules.bundle", publicKey: keys.publicKey)
            source.maxBytes = 4096
            source.timeout = Self.pollBound
            let poller = BundlePoller(options: source, pool: pool, logger: Logger(label: "test")) { _, _ in }

            #expect(await poller.poll().0 == .unchanged)
            #expect(await poller.poll().0 == .notModified)
            #expect(published.state.withLock { $0.conditional } == 1, "the second poll said If-None-Match")

            let second = try Self.bundle(2, signedWith: keys.privateKey)
            published.publish(second.bytes)
            #expect(await poller.poll().0 == .loaded)
            #expect(pool.revision.hash == second.revisionHash)
            #expect(pool.revision.number == 2)
            #expect(try await pool.dispatch(#"{"at": "/app", "event": "Ask"}"#).value["value"]?["version"] == .int(2))

            // Each refusal leaves revision 2 answering and is shown; the bundle is fetched again
            // at the next poll (a refusal may have been transient), and refused again.
            let refusals: [(String, [UInt8], String)] = [
                ("unsigned", try Self.bundle(3, signedWith: nil).bytes, "unsigned"),
                ("badly signed", try Self.bundle(3, signedWith: stranger.privateKey).bytes, "signature"),
                ("truncated", Array(try Self.bundle(3, signedWith: keys.privateKey).bytes.dropLast(7)), "truncated"),
                ("oversized", try RuleBundle(entry: "rules.lua", rules: Self.rules(3) + Array(repeating: 0x20, count: 5000), modules: [:])
                    .signed(privateKey: keys.privateKey).bytes, "over the limit of 4096 bytes"),
            ]
            for (name, bytes, says) in refusals {
                published.publish(bytes)
                #expect(await poller.poll().0 == .refused, "\(name)")
                #expect(pool.revision.hash == second.revisionHash, "\(name)")
                let refusal = poller.refusal ?? ""
                #expect(refusal.localizedCaseInsensitiveContains(says), "\(name): \(refusal)")
                #expect(await poller.poll().0 == .refused, "\(name): fetched again, refused again")
                #expect(pool.revision.hash == second.revisionHash, "\(name)")
            }
            // Rules that fail to load are refused the same way.
            published.publish(try RuleBundle(entry: "rules.lua", rules: Array("local x = (".utf8), modules: [:]).signed(privateKey: keys.privateKey).bytes)
            #expect(await poller.poll().0 == .refused)
            #expect(poller.refusal?.contains("did not load") == true)
            #expect(pool.revision.number == 2)

            let fourth = try Self.bundle(4, signedWith: keys.privateKey)
            published.publish(fourth.bytes)
            #expect(await poller.poll().0 == .loaded)
            #expect(pool.revision.hash == fourth.revisionHash)
            #expect(poller.refusal == nil)
        }
        await pool.shutDown()
    }

    @Test func aBodyThatStallsEndsThePollAtTheTimeout() async throws {
        let keys = RuleBundle.makeKeyPair()
        let pool = try RulesPool(options: .init(bundle: try Self.bundle(1, signedWith: keys.privateKey)))
        let published = Published()
        try await Self.bundleServer(published).test(.live) { client in
            defer { published.stall.continuation.finish() }
            var source = RulesServer.BundleSource(url: "http://127.0.0.1:\(try #require(client.port))/rules.bundle", publicKey: keys.publicKey)
            source.timeout = 0.3
            let poller = BundlePoller(options: source, pool: pool, logger: Logger(label: "test")) { _, _ in }
            #expect(await poller.poll().0 == .failed)
            #expect(pool.revision.number == 1)
        }
        await pool.shutDown()
    }

    @Test func aServerWithABundleSourcePollsItAndShowsTheRefusalWhenReady() async throws {
        let keys = RuleBundle.makeKeyPair()
        let first = try Self.bundle(1, signedWith: keys.privateKey)
        let published = Published()
        published.publish(try Self.bundle(2, signedWith: nil).bytes)
        try await Self.bundleServer(published).test(.live) { bundles in
            var options = RulesServer.Options()
            var source = RulesServer.BundleSource(url: "http://127.0.0.1:\(try #require(bundles.port))/rules.bundle", publicKey: keys.publicKey)
            source.interval = 0.05
            source.timeout = Self.pollBound
            options.bundleSource = source
            let server = RulesServer(pool: try RulesPool(options: .init(bundle: first)), options: options)
            let poller = try #require(server.bundles)
            #expect(await poller.poll().0 == .refused)
            try await server.application().test(.router) { client in
                let ready = APIDocumentTests.object(try await client.execute(uri: "/readyz", method: .get))
                #expect(ready["status"]?.stringValue == "ready", "a refused bundle does not take the replica out")
                #expect(ready["bundle"]?["lastRefusal"]?.stringValue?.contains("unsigned") == true, "\(ready)")
            }
        }
    }

    @Test func readinessWaitsForTheRequiredRevision() async throws {
        let (server, rules) = try APIDocumentTests.server { _, server in
            server.reloadEndpoint = true
            server.requiredRevision = String(repeating: "ab", count: 8)
        }
        try await server.application().test(.router) { client in
            let waiting = try await client.execute(uri: "/readyz", method: .get)
            #expect(waiting.status == .serviceUnavailable)
            #expect(APIDocumentTests.object(waiting)["reason"]?.stringValue == "revision")
            #expect(APIDocumentTests.object(waiting)["requiredRevision"]?.stringValue == String(repeating: "ab", count: 8))
            func require(_ body: String) async throws -> TestResponse {
                try await client.execute(uri: "/v1/required-revision", method: .post, body: ByteBuffer(string: body))
            }
            for bad in ["", "[]", #"{"hash": "abc"}"#, #"{"hash": 5}"#, #"{"hash": null, "x": 1}"#, #"{"hash": "\#(String(repeating: "g", count: 16))"}"#] {
                #expect(try await require(bad).status == .badRequest, "\(bad)")
            }
            let running = server.pool.revision.hash
            let set = try await require(#"{"hash": "\#(running.prefix(16).uppercased())"}"#)
            #expect(set.status == .ok)
            #expect(APIDocumentTests.object(set)["ready"] == .bool(true))
            #expect(try await client.execute(uri: "/readyz", method: .get).status == .ok)
            // A rollout: the rules change, the required hash is the new one's; ready once loaded.
            try (APIDocumentTests.rules + "\n-- v2\n").write(to: rules, atomically: true, encoding: .utf8)
            let next = try RulesPool(options: .init(rulesFile: rules.path)).revision.hash
            #expect(try await require(#"{"hash": "\#(next)"}"#).status == .ok)
            #expect(try await client.execute(uri: "/readyz", method: .get).status == .serviceUnavailable)
            #expect(try await client.execute(uri: "/v1/reload", method: .post).status == .ok)
            #expect(try await client.execute(uri: "/readyz", method: .get).status == .ok)
            #expect(try await require(#"{"hash": null}"#).status == .ok)
            #expect(APIDocumentTests.object(try await client.execute(uri: "/readyz", method: .get))["requiredRevision"] == nil)
        }
        let (closed, _) = try APIDocumentTests.server()
        try await closed.application().test(.router) { client in
            let refused = try await client.execute(uri: "/v1/required-revision", method: .post, body: ByteBuffer(string: #"{"hash": null}"#))
            #expect(refused.status == .forbidden)
        }
    }
}
#endif
