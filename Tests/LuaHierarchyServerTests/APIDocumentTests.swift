#if Server
import Foundation
import Hummingbird
import HummingbirdTesting
import LuaHierarchy
@testable import LuaHierarchyServer
import Testing

/// docs/openapi.json against the server: the document is what `GET /openapi.json` answers,
/// byte for byte; every route and every status it can produce in process is driven, and each
/// real answer is checked against the document (`APIConformance`); every documented status is
/// seen, but those listed in `unreachableInProcess`.
@Suite("The API document (docs/openapi.json) against the server's answers")
struct APIDocumentTests {
    /// Documented statuses these tests cannot produce in process, and why.
    static let unreachableInProcess: [String: String] = [
        "POST /v1/dispatch 408": "a body cut short by --idle-timeout needs a socket (luahierTests' ServeBoundsTests)",
        "POST /v1/dispatch 401": "bearer tokens are not wired yet",
        "POST /v1/dispatch 403": "bearer tokens are not wired yet",
        "POST /v1/reload 401": "bearer tokens are not wired yet",
        "POST /v1/shadow 401": "tokens over a socket: luahierTests' ShadowServeTests",
        "DELETE /v1/shadow 401": "tokens over a socket: luahierTests' ShadowServeTests",
        "POST /v1/required-revision 401": "tokens over a socket: luahierTests' ServeBundleTests",
    ]

    /// Rules whose answers show every part of an outcome: a handled error, an unhandled event,
    /// a failing rule, errors presented (one from a detached subtree), a trace with values.
    static let rules = """
        hier.detached = "presenter"
        local app = hier.root:child("app")
        local tmp = app:child("tmp")
        app:receiveEvent("Ask", function(e) return {type = "Answer", version = 1} end)
        app:handleError("Fault", function(e) return "handled" end)
        app:transformEvent("Renamed", function(e) return {type = "Renamed2", was = e.type} end)
        app:receiveEvent("Nested", function(e)
          tmp:remove()
          tmp:reportError("cut off")
          app:reportError({type = "Inner", message = "nested"})
          return "handled"
        end)
        app:receiveEvent("Broken", function(e) return e.missing.field end)
        app:receiveEvent("Hold", function() hold() end)
        """

    static func server(
        trace: TraceLevel = .off, configure: (inout RulesPool.Options, inout RulesServer.Options) -> Void = { _, _ in }
    ) throws -> (server: RulesServer, rules: URL) {
        let folder = URL(fileURLWithPath: "/tmp/lhapi-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let rules = folder.appendingPathComponent("rules.lua")
        try Self.rules.write(to: rules, atomically: true, encoding: .utf8)
        var poolOptions = RulesPool.Options(rulesFile: rules.path, workers: 1)
        poolOptions.hierarchy.traceLevel = trace
        var serverOptions = RulesServer.Options()
        configure(&poolOptions, &serverOptions)
        return (RulesServer(pool: try RulesPool(options: poolOptions), options: serverOptions), rules)
    }

    @Test func theServedDocumentIsDocsOpenapiJSONByteForByte() async throws {
        #expect(APIConformance.documentBytes.count > 1000, "docs/openapi.json at \(APIConformance.documentURL.path)")
        let (server, _) = try Self.server()
        try await server.application().test(.router) { client in
            let get = try await client.execute(uri: "/openapi.json", method: .get)
            #expect(get.status == .ok)
            #expect(get.headers[.contentType] == "application/json")
            let served = Array(get.body.readableBytesView)
            let same = served == APIConformance.documentBytes
            #expect(same, "served \(served.count) bytes, the file has \(APIConformance.documentBytes.count): the binary embeds it at build time")
            let head = try await client.execute(uri: "/openapi.json", method: .head)
            #expect(head.status == .ok)
            #expect(head.body.readableBytes == 0)
        }
    }

    /// The document is OpenAPI 3.1, every route the server has is in it, every `$ref` leads
    /// somewhere, every schema uses only keywords the validator checks, and every answer it
    /// lists carries `X-Request-Id`.
    @Test func theDocumentIsWholeAndTheValidatorKnowsAllItUses() throws {
        let document = APIConformance.document
        let validator = SchemaValidator(document: document)
        #expect(document["openapi"]?.stringValue == "3.1.0")
        let paths = Set(document["paths"]?.mapValue?.keys.map { $0 } ?? [])
        #expect(paths == ["/v1/dispatch", "/livez", "/readyz", "/healthz", "/metrics", "/v1/reload", "/openapi.json", "/v1/shadow", "/v1/required-revision"])
        var problems: [String] = []
        for (name, schema) in document["components"]?["schemas"]?.mapValue ?? [:] {
            problems += validator.problems(in: schema, at: "#/components/schemas/\(name)")
        }
        for (path, item) in document["paths"]?.mapValue ?? [:] {
            if item["x-otherMethods"]?.mapValue?.isEmpty != false { problems.append("\(path): no x-otherMethods") }
            for method in APIConformance.methods + ["x-otherMethods"] {
                guard let operation = method == "x-otherMethods" ? item[method].map({ Value.map(["responses": $0]) }) : item[method] else { continue }
                let place = "\(method.uppercased()) \(path)"
                for parameter in operation["parameters"]?.arrayValue ?? [] {
                    guard let parameter = validator.followed(parameter), let schema = parameter["schema"] else {
                        problems.append("\(place): a parameter without a schema")
                        continue
                    }
                    problems += validator.problems(in: schema, at: "\(place) parameter")
                }
                for (status, response) in operation["responses"]?.mapValue ?? [:] {
                    guard let response = validator.followed(response) else {
                        problems.append("\(place) \(status): leads nowhere")
                        continue
                    }
                    if response["headers"]?["X-Request-Id"] == nil { problems.append("\(place) \(status): no X-Request-Id") }
                    for (name, header) in response["headers"]?.mapValue ?? [:] {
                        guard let schema = validator.followed(header)?["schema"] else {
                            problems.append("\(place) \(status) \(name): no schema")
                            continue
                        }
                        problems += validator.problems(in: schema, at: "\(place) \(status) \(name)")
                    }
                    for (type, media) in response["content"]?.mapValue ?? [:] {
                        for key in ["schema", "x-itemSchema"] {
                            if let schema = media[key] { problems += validator.problems(in: schema, at: "\(place) \(status) \(type) \(key)") }
                        }
                    }
                }
            }
        }
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
        for (skipped, _) in Self.unreachableInProcess {
            #expect(APIConformance.documented.contains(skipped), "\(skipped) is skipped but not documented")
        }
    }

    /// The validator fails what it should: otherwise the conformance test below could not fail.
    @Test func theValidatorRefusesWrongBodies() throws {
        let validator = SchemaValidator(document: APIConformance.document)
        func schema(_ name: String) -> Value { .map(["$ref": .string("#/components/schemas/\(name)")]) }
        func check(_ json: String, _ name: String) throws -> [String] {
            validator.failures(of: try JSON.parse(json), against: schema(name))
        }
        let revision = #""revision":{"number":1,"hash":"0123456789abcdef"}"#
        // Right: each passes.
        #expect(try check(#"{\#(revision),"id":7,"status":"handled","kind":"error","value":"handled","by":"/app","responder":"r.lua:5"}"#, "Outcome") == [])
        #expect(try check(#"{"line":3,\#(revision),"status":"invalid","error":{"type":"NoSuchNode","message":"no node","where":"request:3"}}"#, "BatchLine") == [])
        #expect(try check(#"{"error":{"type":"NotFound","message":"no such route"}}"#, "ErrorBody") == [])
        #expect(try check(#"{"id":null,"at":"/app","event":null,"error":{"type":"Fault"}}"#, "Request") == [])
        #expect(try check(#"{"result":"loaded","revision":2,"hash":"\#(String(repeating: "a", count: 64))"}"#, "Reloaded") == [])
        // Wrong: each fails, and says why.
        let wrong: [(String, String, String)] = [
            (#"{\#(revision),"status":"done","kind":"event","value":1}"#, "Outcome", "status"),
            (#"{"status":"handled","kind":"event","value":1}"#, "Outcome", "revision is required"),
            (#"{"revision":{"number":1,"hash":"abc"},"status":"handled","kind":"event","value":1}"#, "Outcome", "does not match"),
            (#"{"revision":{"number":0,"hash":"0123456789abcdef"},"status":"handled","kind":"event","value":1}"#, "Outcome", "below"),
            (#"{\#(revision),"status":"handled","kind":"event","value":1,"extra":true}"#, "Outcome", "extra is not a member"),
            (#"{\#(revision),"status":"handled","kind":"event","value":1,"trace":[{"node":"/a"}]}"#, "Outcome", "index is required"),
            (#"{\#(revision),"status":"handled","kind":"event","value":1,"line":"2"}"#, "Outcome", "not of type integer"),
            (#"{\#(revision),"status":"handled","kind":"event","value":1}"#, "BatchLine", "line is required"),
            (#"{\#(revision),"status":"invalid","error":{"type":"X","message":"m"}}"#, "InvalidOutcome", "where is required"),
            (#"{\#(revision),"status":"invalid","error":{"type":"X","message":"m","where":"stdin:1"}}"#, "InvalidOutcome", "does not match"),
            (#"{"error":{"type":"NotFound"}}"#, "ErrorBody", "message is required"),
            (#"{"error":"NotFound"}"#, "ErrorBody", "not of type object"),
            (#"{"status":"ready","workers":1,"revision":{"number":1,"hash":"x","files":[],"loadedAt":1}}"#, "Ready", "does not match"),
            (#"{"status":"ready","reason":"draining","workers":1,"revision":{"number":1,"hash":"\#(String(repeating: "a", count: 64))","files":[],"loadedAt":1}}"#, "Ready", "must not"),
            (#"{"at":"/app","event":"A","error":"B"}"#, "Request", "matches none"),
            (#"{"at":"/app","event":null,"error":null}"#, "Request", "matches none"),
            (#"{"at":"app/x","event":"A"}"#, "Request", "does not match"),
            (#"{"at":"/app"}"#, "Request", "matches none"),
            (#"{"at":"/app","event":{"kind":"A"}}"#, "Request", "matches none"),
        ]
        for (json, name, why) in wrong {
            let failures = try check(json, name)
            #expect(failures.contains { $0.contains(why) }, "\(name) \(json): \(failures)")
        }
        // A keyword it does not know fails, rather than passing unchecked.
        let unknown = validator.failures(of: .string("x"), against: .map(["type": "string", "format": "uuid"]))
        #expect(unknown.contains { $0.contains("does not know the keyword format") }, "\(unknown)")
        #expect(validator.problems(in: .map(["$ref": "#/components/schemas/Nothing"]), at: "test") == ["test/$ref: leads nowhere"])
    }

    /// Every route, every status it can produce in process, each answer checked against the
    /// document; then every documented status must have been seen, but the unreachable ones.
    @Test func everyAnswerIsAsDocumented() async throws {
        let conformance = APIConformance()
        try await driveDispatch(conformance)
        try await driveOperations(conformance)
        try await driveOverload(conformance)
        for answer in try await RouteTests.loadsAnsweredAsTheDrainBegins() {
            conformance.check(answer.response, answer.method, answer.path)
        }
        try await driveShadow(conformance)
        try await driveRequiredRevision(conformance)
        let unseen = APIConformance.documented.subtracting(conformance.seen).subtracting(Self.unreachableInProcess.keys)
        #expect(unseen.isEmpty, "documented, never answered: \(unseen.sorted())")
    }

    private func driveDispatch(_ conformance: APIConformance) async throws {
        let (server, _) = try Self.server(trace: .full) { _, server in server.maxBodyBytes = 4 << 10 }
        try await server.application().test(.router) { client in
            func post(_ body: String, headers: HTTPFields = [:]) async throws -> TestResponse {
                let reply = try await client.execute(uri: "/v1/dispatch", method: .post, headers: headers, body: ByteBuffer(string: body))
                conformance.check(reply, .post, "/v1/dispatch")
                return reply
            }
            // The requests sent are checked too: those answered 200 fit the document's Request;
            // those refused 400 do not, but the one whose node the rules lack.
            let request = Value.map(["$ref": "#/components/schemas/Request"])
            func fits(_ body: String) -> Bool {
                (try? JSON.parse(body)).map { conformance.validator.failures(of: $0, against: request).isEmpty } ?? false
            }
            var statuses: Set<String> = []
            for body in [
                #"{"id": 7, "at": "/app", "event": "Ask"}"#, #"{"id": null, "at": "/app", "event": null, "error": {"type": "Fault"}}"#,
                #"{"id": {"k": [1, 2.5]}, "at": "/app", "event": {"type": "Renamed", "n": 1}}"#, #"{"at": "/app", "event": "Nested"}"#,
                #"{"at": "/app", "event": "Broken"}"#, #"{"at": "/", "error": "oops"}"#,
            ] {
                let reply = try await post(body, headers: [.contentType: "application/json"])
                #expect(reply.status == .ok, "\(body)")
                #expect(fits(body), "\(body)")
                statuses.insert(Self.object(reply)["status"]?.stringValue ?? "")
            }
            #expect(statuses == ["handled", "unhandled"])
            for body in [
                #"{"at": "/app""#, "", "[1, 2]", #"{"at": "/app"}"#, #"{"id": 3, "at": "/nowhere", "event": "Ask"}"#,
                #"{"at": "/app", "event": 12}"#, #"{"at": "/app", "event": "Ask", "extra": 1}"#, "\u{FF}\u{FE}garbage",
            ] {
                #expect(try await post(body).status == .badRequest, "\(body)")
                #expect(fits(body) == body.contains("/nowhere"), "\(body)")
            }
            let large = String(repeating: "x", count: 8 << 10)
            #expect(try await post(large, headers: [.contentLength: String(8 << 10)]).status == .contentTooLarge)
            #expect(try await post(large).status == .contentTooLarge)
            #expect(try await post(large, headers: [.contentType: "application/x-ndjson"]).status == .contentTooLarge)
            #expect(try await post(#"{"at": "/app", "event": "Ask"}"#, headers: [.contentEncoding: "gzip"]).status == .unsupportedMediaType)
            var twoTypes = HTTPFields()
            twoTypes[values: .contentType] = ["application/json", "application/x-ndjson"]
            #expect(try await post(#"{"at": "/app", "event": "Ask"}"#, headers: twoTypes).status == .badRequest)
            let lines = "{\"id\":1,\"at\":\"/app\",\"event\":\"Nested\"}\n\n{\"at\":\"/nowhere\",\"event\":\"Ask\"}\n{\"at\":\"/app\",\"error\":{\"type\":\"Fault\"}}\nnot json\n"
            for type in ["application/x-ndjson", "application/jsonl", "application/x-jsonlines; charset=utf-8"] {
                let batch = try await post(lines, headers: [.contentType: type])
                #expect(batch.status == .ok)
                #expect(String(buffer: batch.body).split(separator: "\n").count == 4)
            }
            #expect(try await post("", headers: [.contentType: "application/x-ndjson"]).body.readableBytes == 0)
            for method in [HTTPRequest.Method.get, .head, .put, .delete, .patch, .options, .trace] {
                let reply = try await client.execute(uri: "/v1/dispatch", method: method)
                #expect(reply.status == .methodNotAllowed, "\(method)")
                conformance.check(reply, method, "/v1/dispatch")
            }
            // A method outside the standard nine: no route has it.
            let query = try #require(HTTPRequest.Method("QUERY"))
            let unknown = try await client.execute(uri: "/v1/dispatch", method: query)
            #expect(unknown.status == .notFound)
            conformance.check(unknown, query, "/v1/dispatch")
            // The request id: a usable one echoed, another replaced.
            let echoed = try await post(#"{"at": "/app", "event": "Ask"}"#, headers: [RequestIdentity.requestIDField: "client-42"])
            #expect(echoed.headers[RequestIdentity.requestIDField] == "client-42")
            let replaced = try await post(#"{"at": "/app", "event": "Ask"}"#, headers: [RequestIdentity.requestIDField: "has space"])
            #expect(replaced.headers[RequestIdentity.requestIDField]?.count == 32)
        }
    }

    private func driveOperations(_ conformance: APIConformance) async throws {
        let (server, rules) = try Self.server { _, server in server.reloadEndpoint = true }
        try await server.application().test(.router) { client in
            func call(_ method: HTTPRequest.Method, _ path: String) async throws -> TestResponse {
                let reply = try await client.execute(uri: path, method: method)
                conformance.check(reply, method, path)
                return reply
            }
            for path in ["/livez", "/readyz", "/healthz", "/openapi.json"] {
                #expect(try await call(.get, path).status == .ok, "\(path)")
                #expect(try await call(.head, path).status == .ok, "HEAD \(path)")
            }
            #expect(try await call(.get, "/metrics").status == .ok)
            #expect(try await call(.head, "/metrics").status == .ok)
            #expect(try await call(.post, "/v1/reload").status == .ok)   // unchanged
            try "local broken = (".write(to: rules, atomically: true, encoding: .utf8)
            #expect(try await call(.post, "/v1/reload").status == .unprocessableContent)
            // Ready, and saying the last reload failed.
            #expect(try await call(.get, "/readyz").status == .ok)
            try (Self.rules + "\n-- mended\n").write(to: rules, atomically: true, encoding: .utf8)
            #expect(try await call(.post, "/v1/reload").status == .ok)   // loaded
            // Paths the document does not list, and methods outside the nine: 404 in the one
            // error shape.
            let query = HTTPRequest.Method(rawValue: "QUERY")!
            var unlisted: [(HTTPRequest.Method, String)] = [(.get, "/no/such/route"), (.get, "/v1/dispatch/extra")]
            for path in ["/livez", "/readyz", "/healthz", "/metrics", "/v1/reload", "/openapi.json", "/v1/dispatch"] {
                unlisted.append((query, path))
            }
            for (method, path) in unlisted {
                #expect(try await call(method, path).status == .notFound, "\(method) \(path)")
            }
            // A standard method a listed path does not take: 405, with the methods it takes.
            for (method, path, allowed) in [(HTTPRequest.Method.post, "/livez", "GET, HEAD"), (.put, "/readyz", "GET, HEAD"),
                                            (.delete, "/healthz", "GET, HEAD"), (.put, "/metrics", "GET, HEAD"),
                                            (.get, "/v1/reload", "POST"), (.delete, "/openapi.json", "GET, HEAD")] {
                let refused = try await call(method, path)
                #expect(refused.status == .methodNotAllowed, "\(method) \(path)")
                #expect(refused.headers[.allow] == allowed, "\(method) \(path)")
            }
        }
        let (closed, _) = try Self.server()
        try await closed.application().test(.router) { client in
            let reply = try await client.execute(uri: "/v1/reload", method: .post)
            #expect(reply.status == .forbidden)
            conformance.check(reply, .post, "/v1/reload")
        }
    }

    /// `/v1/required-revision`, and `/readyz` waiting for it.
    private func driveRequiredRevision(_ conformance: APIConformance) async throws {
        let (server, _) = try Self.server { _, server in
            server.reloadEndpoint = true
            server.requiredRevision = String(repeating: "0", count: 16)
        }
        try await server.application().test(.router) { client in
            func call(_ method: HTTPRequest.Method, _ path: String, _ body: String? = nil) async throws -> TestResponse {
                let reply = try await client.execute(uri: path, method: method, body: body.map { ByteBuffer(string: $0) })
                conformance.check(reply, method, path)
                return reply
            }
            #expect(try await call(.get, "/readyz").status == .serviceUnavailable)
            let (wrong, running, none) = (#"{"hash": 1}"#, #"{"hash": "\#(server.pool.revision.hash)"}"#, #"{"hash": null}"#)
            let refused = try await call(.post, "/v1/required-revision", wrong)
            #expect(refused.status == .badRequest)
            let required = try await call(.post, "/v1/required-revision", running)
            #expect(required.status == .ok)
            #expect(try await call(.get, "/readyz").status == .ok)
            let cleared = try await call(.post, "/v1/required-revision", none)
            #expect(cleared.status == .ok)
            #expect(try await call(.get, "/v1/required-revision").status == .methodNotAllowed)
            #expect(try await call(HTTPRequest.Method(rawValue: "QUERY")!, "/v1/required-revision").status == .notFound)
        }
        let (closed, _) = try Self.server()
        try await closed.application().test(.router) { client in
            let reply = try await client.execute(uri: "/v1/required-revision", method: .post, body: ByteBuffer(string: #"{"hash": null}"#))
            #expect(reply.status == .forbidden)
            conformance.check(reply, .post, "/v1/required-revision")
        }
    }

    /// `/v1/shadow`: its report with and without a candidate, and every refusal.
    private func driveShadow(_ conformance: APIConformance) async throws {
        let (server, candidate, folder) = try ShadowTests.server()
        try await server.application().test(.router) { client in
            func call(_ method: HTTPRequest.Method, _ body: String? = nil) async throws -> TestResponse {
                let reply = try await client.execute(uri: "/v1/shadow", method: method, body: body.map { ByteBuffer(string: $0) })
                conformance.check(reply, method, "/v1/shadow")
                return reply
            }
            #expect(try await call(.get).status == .ok)
            #expect(try await call(.head).status == .ok)
            #expect(try await call(.post).status == .conflict)
            #expect(try await call(.post, "[]").status == .badRequest)
            let broken = folder.appendingPathComponent("broken.lua").path
            try "local x = (".write(toFile: broken, atomically: true, encoding: .utf8)
            #expect(try await call(.post, #"{"rules": "\#(broken)"}"#).status == .unprocessableContent)
            #expect(try await call(.post, #"{"rules": "\#(candidate)", "sample": 1}"#).status == .ok)
            _ = try await client.execute(uri: "/v1/dispatch", method: .post, body: ByteBuffer(string: #"{"at": "/app", "event": "Ask"}"#))
            #expect(try await RouteTests.eventually { ShadowTests.count(try await ShadowTests.report(client), "requests", "compared") == 1 })
            #expect(try await call(.get).status == .ok)
            #expect(try await call(.post, #"{"rules": "\#(broken)"}"#).status == .unprocessableContent)
            #expect(try await call(.delete).status == .ok)
            let refused = try await call(.put)
            #expect(refused.status == .methodNotAllowed)
            #expect(refused.headers[.allow] == "GET, HEAD, POST, DELETE")
            #expect(try await call(HTTPRequest.Method(rawValue: "QUERY")!).status == .notFound)
        }
        let (closed, _) = try Self.server()
        try await closed.application().test(.router) { client in
            for method in [HTTPRequest.Method.post, .delete] {
                let reply = try await client.execute(uri: "/v1/shadow", method: method)
                #expect(reply.status == .forbidden)
                conformance.check(reply, method, "/v1/shadow")
            }
        }
    }

    /// The only state held by a rule that waits for the test: `/readyz` answers 503, and a
    /// request (one, or a batch) is refused 503 once `maxWait` passes.
    private func driveOverload(_ conformance: APIConformance) async throws {
        let release = DispatchSemaphore(value: 0)
        let holds = RouteTests.Holds()
        let (server, _) = try Self.server { pool, _ in RouteTests.holdUntil(release, holds, &pool) }
        try await server.application().test(.router) { client in
            let held = try await RouteTests.holdTheState(client, holds)
            defer { release.signal() }
            #expect(try await RouteTests.eventually { try await client.execute(uri: "/readyz", method: .get).status == .serviceUnavailable })
            for path in ["/readyz", "/healthz"] {
                for method in [HTTPRequest.Method.get, .head] {
                    let reply = try await client.execute(uri: path, method: method)
                    #expect(reply.status == .serviceUnavailable, "\(method) \(path)")
                    conformance.check(reply, method, path)
                }
            }
            for headers: HTTPFields in [[:], [.contentType: "application/x-ndjson"]] {
                let refused = try await client.execute(
                    uri: "/v1/dispatch", method: .post, headers: headers, body: ByteBuffer(string: #"{"at": "/app", "event": "Ask"}"#))
                #expect(refused.status == .serviceUnavailable)
                conformance.check(refused, .post, "/v1/dispatch")
            }
            release.signal()
            let answer = try await held.value
            #expect(answer.status == .ok)
            conformance.check(answer, .post, "/v1/dispatch")
        }
    }

    static func object(_ response: TestResponse) -> Value {
        (try? JSON.parse(String(buffer: response.body))) ?? .null
    }
}
#endif
