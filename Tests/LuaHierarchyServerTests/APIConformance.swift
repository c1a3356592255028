#if Server
import Foundation
import Hummingbird
import HummingbirdTesting
import LuaHierarchy
import Synchronization
import Testing

/// Checks the server's real answers against docs/openapi.json: the status is documented for the
/// route and method, every header the document requires is there and fits its schema, and the
/// body fits the schema of its content type (each line of a JSON Lines answer the item schema).
/// It remembers what it saw, so a test can ask whether every documented status was seen.
final class APIConformance: Sendable {
    static let documentURL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("docs/openapi.json")
    static let documentBytes: [UInt8] = Array((try? Data(contentsOf: documentURL)) ?? Data())
    static let document: Value = (try? JSON.parse(String(decoding: documentBytes, as: UTF8.self))) ?? .null

    /// The methods an OpenAPI path item can name, as the document spells them.
    static let methods = ["get", "head", "post", "put", "delete", "patch", "options", "trace"]

    let validator = SchemaValidator(document: APIConformance.document)
    /// `POST /v1/dispatch 200`: each answer checked.
    var seen: Set<String> { answered.withLock { $0 } }
    private let answered = Mutex<Set<String>>([])

    /// Every method, path and status the document lists, as `seen` names them: `OTHER` for
    /// the methods a path does not list (its `x-otherMethods`).
    static var documented: Set<String> {
        var all: Set<String> = []
        for (path, item) in document["paths"]?.mapValue ?? [:] {
            for method in methods {
                for status in (item[method]?["responses"]?.mapValue ?? [:]).keys {
                    all.insert("\(method.uppercased()) \(path) \(status)")
                }
            }
            for status in (item["x-otherMethods"]?.mapValue ?? [:]).keys { all.insert("OTHER \(path) \(status)") }
        }
        return all
    }

    /// Records a failure of the running test for each way `response`, to `method` `path`,
    /// departs from the document.
    func check(_ response: TestResponse, _ method: HTTPRequest.Method, _ path: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let item = Self.document["paths"]?[path]
        let listed = item?[method.rawValue.lowercased()] != nil
        let key = "\(listed || item == nil ? method.rawValue : "OTHER") \(path) \(response.status.code)"
        answered.withLock { _ = $0.insert(key) }
        for failure in failures(of: response, method, path) {
            Issue.record("\(method.rawValue) \(key): \(failure)\n\(String(buffer: response.body).prefix(600))", sourceLocation: sourceLocation)
        }
    }

    func failures(of response: TestResponse, _ method: HTTPRequest.Method, _ path: String) -> [String] {
        let code = String(response.status.code)
        guard let item = Self.document["paths"]?[path] else {
            // A path the document does not list: the router's 404, in the one error shape.
            guard code == "404" else { return ["the document lists no \(path), yet it answered \(code), not 404"] }
            return failures(of: response, against: validator.resolve("#/components/responses/NotFound"), head: method == .head)
        }
        // A method the path does not list answers as its `x-otherMethods` say.
        let responses = item[method.rawValue.lowercased()]?["responses"] ?? item["x-otherMethods"]
        guard let documented = responses?[code] else {
            return ["status \(code) is not documented for \(method.rawValue) \(path)"]
        }
        return failures(of: response, against: validator.followed(documented), head: method == .head)
    }

    /// The headers, then the body (of an answer to anything but HEAD, whose body the transport
    /// drops).
    func failures(of response: TestResponse, against documented: Value?, head: Bool) -> [String] {
        guard let documented else { return ["the documented response's $ref leads nowhere"] }
        var found: [String] = []
        for (name, header) in (documented["headers"]?.mapValue ?? [:]).sorted(by: { $0.key < $1.key }) {
            guard let header = validator.followed(header) else {
                found.append("the header \(name)'s $ref leads nowhere")
                continue
            }
            guard let text = response.headers.first(where: { $0.name.canonicalName == name.lowercased() })?.value else {
                if header["required"]?.boolValue == true { found.append("the header \(name) is missing") }
                continue
            }
            found += header["schema"].map { validator.failures(of: .string(text), against: $0, at: name) } ?? []
        }
        if head { return found }
        let body = Array(response.body.readableBytesView)
        guard let content = documented["content"]?.mapValue else {
            return body.isEmpty ? found : found + ["a body where the document says none"]
        }
        let contentType = response.headers[.contentType] ?? ""
        let type = contentType.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        guard let media = content[type] else {
            return found + ["Content-Type \(contentType) is not one documented (\(content.keys.sorted().joined(separator: ", ")))"]
        }
        if let item = media["x-itemSchema"] {
            guard body.isEmpty || body.last == UInt8(ascii: "\n") else { return found + ["the last line does not end in a newline"] }
            for (index, line) in body.split(separator: UInt8(ascii: "\n")).enumerated() {
                found += parsed(Array(line)).map { validator.failures(of: $0, against: item, at: "line \(index + 1)") } ?? [
                    "line \(index + 1) is not JSON",
                ]
            }
        } else if let schema = media["schema"] {
            if type.hasSuffix("json") {
                found += parsed(body).map { validator.failures(of: $0, against: schema) } ?? ["the body is not JSON"]
            } else {
                found += validator.failures(of: .string(String(decoding: body, as: UTF8.self)), against: schema)
            }
        }
        return found
    }

    private func parsed(_ bytes: [UInt8]) -> Value? {
        bytes.withUnsafeBytes { try? JSON.parse($0) }
    }
}
#endif
