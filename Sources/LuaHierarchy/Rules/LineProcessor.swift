/// What became of one input line.
public enum LineStatus: String, Sendable, CaseIterable {
    case handled, unhandled, detached
    /// The line was not a valid request; nothing was dispatched.
    case invalid
}

/// Turns one JSON request line into one JSON outcome line on one hierarchy (one Lua state).
///
/// Request: `{"id": any, "at": "/path", "event": E}` or `{..., "error": E}`. Outcome:
/// `{"line", "id", "status", "kind", "value", "by", "responder", "trace"}` (absent fields
/// omitted), or `{"line", "id", "status": "invalid", "error": {type, message, where}}`.
struct LineProcessor {
    let hierarchy: Hierarchy
    /// How `where` names the input: `alerts.jsonl` reads `alerts.jsonl:12`.
    let inputName: String
    let maxLineBytes: Int

    /// Appends the outcome line (with its newline) for input line `number` to `output`.
    func process(_ line: UnsafeRawBufferPointer, number: Int, into output: inout JSONWriter) -> LineStatus {
        switch request(from: line, number: number) {
        case .failure(let invalid):
            write(invalid, number: number, into: &output)
            return .invalid
        case .success(let request):
            do {
                let outcome: Outcome
                switch request.domain {
                case .event: outcome = try hierarchy.trigger(request.value, at: request.node)
                case .error: outcome = try hierarchy.report(request.value, at: request.node, where: "\(inputName):\(number)")
                }
                write(outcome, id: request.id, number: number, into: &output)
                return LineStatus(rawValue: outcome.status.rawValue)!
            } catch {
                let invalid = InvalidLine(id: request.id, type: "InvalidRequest", message: "\(error)", column: nil)
                write(invalid, number: number, into: &output)
                return .invalid
            }
        }
    }

    /// An oversized line, refused without being read into memory.
    func refuseOversized(length: Int, number: Int, into output: inout JSONWriter) {
        let invalid = InvalidLine(
            id: nil, type: "LineTooLong",
            message: "line is \(length) bytes, over the limit of \(maxLineBytes) (--max-line)", column: nil)
        write(invalid, number: number, into: &output)
    }

    // MARK: Requests

    struct Request {
        var id: Value?
        var node: Node
        var domain: Domain
        var value: Value
    }

    struct InvalidLine: Error {
        var id: Value?
        var type: String
        var message: String
        var column: Int?
    }

    private func request(from line: UnsafeRawBufferPointer, number: Int) -> Result<Request, InvalidLine> {
        let parsed: Value
        do {
            parsed = try JSON.parseForLua(line)
        } catch {
            return .failure(InvalidLine(id: nil, type: "InvalidJSON", message: error.message, column: error.column))
        }
        guard case .map(let fields) = parsed else {
            return .failure(InvalidLine(id: nil, type: "InvalidRequest", message: "a request is a JSON object with \"at\" and \"event\" or \"error\"", column: nil))
        }
        let id = fields["id"]
        func invalid(_ message: String) -> Result<Request, InvalidLine> {
            .failure(InvalidLine(id: id, type: "InvalidRequest", message: message, column: nil))
        }
        if let unknown = fields.keys.sorted().first(where: { !Self.requestFields.contains($0) }) {
            return invalid("unknown field \(String(reflecting: unknown)) (a request has id, at, and event or error)")
        }
        guard let atValue = fields["at"] else { return invalid("missing \"at\" (the path of the node, e.g. \"/app/feed\")") }
        guard case .string(let path) = atValue else { return invalid("\"at\" must be a path string, not \(atValue)") }
        let node: Node
        do {
            guard let found = try hierarchy.node(at: path) else {
                return .failure(InvalidLine(id: id, type: "NoSuchNode", message: "no node at \(path)", column: nil))
            }
            node = found
        } catch {
            return invalid("\"at\": \(error)")
        }
        switch (fields["event"], fields["error"]) {
        case (let event?, nil):
            guard Self.isEvent(event) else {
                return invalid("\"event\" must be a type name or an object with a string \"type\", not \(event)")
            }
            return .success(Request(id: id, node: node, domain: .event, value: event))
        case (nil, let error?):
            guard Self.isError(error) else {
                return invalid("\"error\" must be a message string or an object whose \"type\" is a string, not \(error)")
            }
            return .success(Request(id: id, node: node, domain: .error, value: error))
        case (nil, nil):
            return invalid("missing \"event\" or \"error\"")
        case (.some, .some):
            return invalid("a request has \"event\" or \"error\", not both")
        }
    }

    private static let requestFields: Set<String> = ["id", "at", "event", "error"]

    private static func isEvent(_ value: Value) -> Bool {
        switch value {
        case .string(let type): return !type.isEmpty
        case .map(let map): return map["type"]?.stringValue != nil
        default: return false
        }
    }

    private static func isError(_ value: Value) -> Bool {
        switch value {
        case .string: return true
        case .map(let map): return map["type"] == nil || map["type"]?.stringValue != nil
        default: return false
        }
    }

    // MARK: Outcome lines

    private func write(_ outcome: Outcome, id: Value?, number: Int, into output: inout JSONWriter) {
        output.writeKey("line", opening: true)
        output.append(String(number))
        if let id {
            output.writeKey("id")
            output.write(id)
        }
        output.writeKey("status")
        output.writeString(outcome.status.rawValue)
        output.writeKey("kind")
        output.writeString(outcome.kind.rawValue)
        output.writeKey("value")
        output.write(outcome.value)
        if let by = outcome.by {
            output.writeKey("by")
            output.writeString(by)
        }
        if let responder = outcome.responder {
            output.writeKey("responder")
            output.writeString(responder.location)
        }
        if let trace = outcome.trace {
            output.writeKey("trace")
            output.bytes.append(UInt8(ascii: "["))
            for (position, step) in trace.enumerated() {
                if position > 0 { output.bytes.append(UInt8(ascii: ",")) }
                write(step, into: &output)
            }
            output.bytes.append(UInt8(ascii: "]"))
        }
        output.append("}\n")
    }

    private func write(_ step: TraceStep, into output: inout JSONWriter) {
        output.writeKey("node", opening: true)
        output.writeString(step.node)
        output.writeKey("index")
        output.append(String(step.responder.index))
        output.writeKey("kind")
        output.writeString(step.responder.kind.rawValue)
        output.writeKey("responder")
        output.writeString(step.responder.location)
        output.writeKey("input")
        output.writeString(step.input)
        output.writeKey("result")
        output.writeString(step.resultDescription)
        if let before = step.before {
            output.writeKey("before")
            output.write(before)
        }
        if let after = step.after {
            output.writeKey("after")
            output.write(after)
        }
        output.bytes.append(UInt8(ascii: "}"))
    }

    private func write(_ invalid: InvalidLine, number: Int, into output: inout JSONWriter) {
        output.writeKey("line", opening: true)
        output.append(String(number))
        if let id = invalid.id {
            output.writeKey("id")
            output.write(id)
        }
        output.writeKey("status")
        output.writeString(LineStatus.invalid.rawValue)
        output.writeKey("error")
        output.writeKey("type", opening: true)
        output.writeString(invalid.type)
        output.writeKey("message")
        output.writeString(invalid.message)
        output.writeKey("where")
        output.writeString("\(inputName):\(number)" + (invalid.column.map { ":\($0)" } ?? ""))
        output.append("}}\n")
    }
}
