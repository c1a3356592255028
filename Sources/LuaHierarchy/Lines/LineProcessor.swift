/// What became of one input line.
public enum LineStatus: String, Sendable, CaseIterable {
    case handled, unhandled, detached
    /// The line was not a valid request; nothing was dispatched.
    case invalid
}

extension LineStatus {
    init(_ status: Outcome.Status) {
        switch status {
        case .handled: self = .handled
        case .unhandled: self = .unhandled
        case .detached: self = .detached
        }
    }

    /// Its place in `LineStatus.allCases`, for counts kept in an array.
    var index: Int {
        switch self {
        case .handled: 0
        case .unhandled: 1
        case .detached: 2
        case .invalid: 3
        }
    }
}

/// Turns one JSON request line into one JSON outcome line on one hierarchy (one Lua state).
///
/// Request: `{"id": any, "at": "/path", "event": E}` or `{..., "error": E}`. Outcome:
/// `{"line", "id", "status", "kind", "value", "by", "responder", "choice", "presented", "trace"}` (absent fields
/// omitted), or `{"line", "id", "status": "invalid", "error": {type, message, where}}`.
struct LineProcessor {
    let hierarchy: Hierarchy
    /// How `where` names the input: `alerts.jsonl` reads `alerts.jsonl:12`.
    let inputName: String
    /// The same, as C reads it.
    let inputNameC: ContiguousArray<CChar>
    let maxLineBytes: Int
    /// Paths seen before and their nodes (a class: the processor itself is passed by value).
    let nodeCache = NodeCache()
    /// The tracing every line gets: the host's (`--trace`), as the rules left it once loaded.
    /// A line whose rules change `hier.tracing` does not change it for the lines after.
    let traceLevel: TraceLevel

    /// Errors presented while the line was answered (see `PresentedLog`).
    let presented = PresentedLog()

    /// Takes the hierarchy's presenter over (the one it had still sees every error).
    init(hierarchy: Hierarchy, inputName: String, maxLineBytes: Int) {
        self.hierarchy = hierarchy
        self.inputName = inputName
        inputNameC = inputName.utf8CString
        self.maxLineBytes = maxLineBytes
        traceLevel = hierarchy.traceLevel
        hierarchy.nameEntries(inputName, line: 0)
        let log = presented
        log.budget = hierarchy.root.tree.meter?.memoryLimit.map { $0 / 2 } ?? Int.max
        let previous = hierarchy.presenter
        // A line's own dispatch ends in its outcome: with no presenter before this one to see
        // it, only nested dispatches' errors need presenting.
        if previous == nil { hierarchy.presentsFromDepth = 2 }
        hierarchy.presenter = { error in
            log.record(error)
            previous?(error)
        }
    }

    /// The errors that passed the root unhandled while one line was answered, other than
    /// the line's own outcome: those of dispatches nested in it and of publish subscribers,
    /// limit errors included. A stream has no one to present them to, so they go into the
    /// line's outcome as `presented`, nothing vanishing (contract §5). The first `kept` are kept
    /// whole, while together they take at most `budget` bytes (half the memory cap: each is
    /// a bounded description, but sixteen of them are held at once); the rest are counted.
    final class PresentedLog {
        static let kept = 16
        private(set) var entries: [PresentedError] = []
        private(set) var omitted = 0
        var budget = Int.max
        private var held = 0
        /// How many were recorded since the log was made (kept or omitted): C answering a run
        /// of lines watches it, and leaves a line during which it moved to this side.
        let count: UnsafeMutablePointer<Int> = {
            let count = UnsafeMutablePointer<Int>.allocate(capacity: 1)
            count.initialize(to: 0)
            return count
        }()

        deinit { count.deallocate() }

        func record(_ error: PresentedError) {
            // The line's own dispatch presents at depth 1 (0 for a limit, after it ended).
            guard error.nestingDepth > 1 else { return }
            count.pointee += 1
            let cost = budget == Int.max ? 0 : MemoryCost.value(error.error)
            guard entries.count < Self.kept, held + cost <= budget else {
                omitted += 1
                return
            }
            held += cost
            entries.append(error)
        }

        /// Lets go of the entries (after the line is written, so they are not held longer).
        func reset() {
            if !entries.isEmpty { entries.removeAll(keepingCapacity: true) }
            omitted = 0
            held = 0
        }
    }

    final class NodeCache {
        var nodes: [String: Node] = [:]
    }

    /// What a worker's output holds until it is written, charged against the hierarchy's
    /// memory cap (contract §7): it is held on the rules' behalf.
    func outputCharge() -> MemoryCharge {
        MemoryCharge(meter: hierarchy.root.tree.meter)
    }

    /// What `answerRun` did: lines answered by C (handed over as they were written), where it
    /// stopped, and the line after them that this side answered into `output`, if any.
    struct RunResult {
        /// By `LineStatus.index`.
        var counts = [0, 0, 0, 0]
        var next = 0
        /// The status of the line answered into `output` (it ends the run: `next` is past it).
        var answered: LineStatus?
        /// An interrupt cut line `next` short: it and the lines after it are unanswered.
        var interrupted = false
        /// `startBy` passed before line `next` began: it and the lines after it are unanswered.
        var expired = false
    }

    /// Answers `lines[from...]` of `chunk`: a run of them by C end to end (each outcome handed
    /// to `deliver` as it is written, for the deliverer to hold and charge), then the first line
    /// C leaves to this side, answered its own way into `output`, charged to `held` (contract §7).
    /// No line begins at or after `startBy` (on `LuaEngine.clock`; 0: no bound).
    func answerRun(
        _ chunk: UnsafeRawBufferPointer, lines: [LuaEngine.RunLine], from: Int, into output: inout JSONWriter,
        held: MemoryCharge, startBy: Double = 0, deliver: (UnsafeRawBufferPointer) -> Bool
    ) -> RunResult {
        // Each run starts with the processor's settings (a line's rules may change them).
        if hierarchy.traceLevel != traceLevel { hierarchy.traceLevel = traceLevel }
        presented.reset()
        let run = hierarchy.answerRun(
            chunk: chunk, lines: lines, from: from, input: inputNameC, presented: presented.count, startBy: startBy,
            deliver: deliver)
        if run.next < lines.count { hierarchy.nameEntries(nil, line: lines[run.next].number) }
        var result = RunResult(counts: run.counts + [0], next: run.next)
        guard run.next < lines.count else { return result }
        let line = lines[run.next]
        switch run.stop {
        case .done, .changed:
            return result
        case .interrupted:
            result.interrupted = true
            return result
        case .expired:
            result.expired = true
            return result
        case .dispatched(let dispatch, let id):
            // Charged as `process` charges: what the writing did not charge itself.
            let start = output.bytes.count
            let chargedBefore = held.bytes
            writeWithinBudget(dispatch, id: id, number: line.number, into: &output, held: held)
            _ = held.add(output.bytes.count - start - (held.bytes - chargedBefore))
            presented.reset()
            result.answered = LineStatus(dispatch.status)
        case .host:
            if startBy > 0 && LuaEngine.clock >= startBy {
                result.expired = true
                return result
            }
            if line.oversized {
                refuseOversized(length: line.count, number: line.number, into: &output)
                result.answered = .invalid
            } else {
                let text = UnsafeRawBufferPointer(rebasing: chunk[line.start..<line.start + line.count])
                guard let status = process(text, number: line.number, into: &output, held: held) else {
                    result.interrupted = true
                    return result
                }
                result.answered = status
            }
        }
        result.next += 1
        return result
    }

    /// Appends the outcome line (with its newline) for input line `number` to `output`, the
    /// host's own way (for lines C leaves to it), charging what it adds to `held`. Trace values
    /// the cap refuses are left out (the dispatch that recorded them has ended by then). Nil
    /// when an interrupt (SIGINT) cut the line's dispatch short: the line was not answered,
    /// and nothing is appended.
    func process(
        _ line: UnsafeRawBufferPointer, number: Int, into output: inout JSONWriter, held: MemoryCharge
    ) -> LineStatus? {
        let start = output.bytes.count
        let chargedBefore = held.bytes
        defer { _ = held.add(output.bytes.count - start - (held.bytes - chargedBefore)) }
        hierarchy.nameEntries(nil, line: number)
        if hierarchy.traceLevel != traceLevel { hierarchy.traceLevel = traceLevel }
        presented.reset()
        switch request(from: line, number: number) {
        case .failure(let invalid):
            write(invalid, number: number, into: &output)
            return .invalid
        case .success(let request):
            do {
                var message = request.message
                if message.domain == .error { message.setIfAbsent("where", to: "\(inputName):\(number)") }
                let result = try hierarchy.dispatchKeepingValue(message, at: request.node)
                if result.interrupted { return nil }
                writeWithinBudget(result, id: request.id, number: number, into: &output, held: held)
                presented.reset()
                return LineStatus(result.status)
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
        var message: Message
    }

    struct InvalidLine: Error {
        var id: Value?
        var type: String
        var message: String
        var column: Int?
    }

    /// Reads a request. The payload goes from JSON straight into the hierarchy's scripting
    /// side; `id` and `at` become plain values.
    private func request(from line: UnsafeRawBufferPointer, number: Int) -> Result<Request, InvalidLine> {
        let parser = JSONParser(line.bindMemory(to: UInt8.self), depthLimit: JSON.defaultDepthLimit, nulls: .asLuaNil)
        var id: Value?, at: Value?, unknown: String?
        var payload: (key: String, shape: Result<Message, ShapeFailure>)?
        var payloadKeys: [String] = []
        do {
            let isObject = try parser.parseMembers { (key: String, parser: JSONParser) throws(JSONError) in
                switch key {
                case "id": id = try parser.parseValue(keepingNulls: true)
                case "at": at = try parser.parseValue()
                case "event", "error":
                    // A null member is an absent one, as in a payload.
                    if try parser.skipNull() { return }
                    payloadKeys.append(key)
                    let domain: Domain = key == "event" ? .event : .error
                    payload = (key, try hierarchy.parseMessage(from: parser, as: domain))
                default:
                    if unknown == nil { unknown = key }
                    _ = try parser.parseValue()
                }
            }
            if !isObject { _ = try parser.parseValue() }
            try parser.expectEnd()
            if !isObject {
                return .failure(InvalidLine(id: nil, type: "InvalidRequest", message: "a request is a JSON object with \"at\" and \"event\" or \"error\"", column: nil))
            }
        } catch {
            return .failure(InvalidLine(id: nil, type: "InvalidJSON", message: error.message, column: error.column))
        }
        func invalid(_ message: String) -> Result<Request, InvalidLine> {
            .failure(InvalidLine(id: id, type: "InvalidRequest", message: message, column: nil))
        }
        if let unknown {
            return invalid("unknown field \(String(reflecting: unknown)) (a request has id, at, and event or error)")
        }
        guard let at else { return invalid("missing \"at\" (the path of the node, e.g. \"/app/feed\")") }
        guard case .string(let path) = at else { return invalid("\"at\" must be a path string, not \(at)") }
        let node: Node
        do {
            guard let found = try cachedNode(at: path) else {
                return .failure(InvalidLine(id: id, type: "NoSuchNode", message: "no node at \(path)", column: nil))
            }
            node = found
        } catch {
            return invalid("\"at\": \(error)")
        }
        guard let payload else { return invalid("missing \"event\" or \"error\"") }
        guard payloadKeys.count == 1 else {
            return invalid(Set(payloadKeys).count == 1
                ? "\"\(payload.key)\" is given \(payloadKeys.count) times (a request has one)"
                : "a request has one \"event\" or one \"error\", not both")
        }
        switch payload.shape {
        case .success(let message):
            // The payload is read as the host's (a refusal halfway through would leave half a
            // value); one the memory cap cannot hold is refused here, before any rule runs.
            guard hierarchy.memoryUsedFitsTheCap() else {
                return .failure(InvalidLine(
                    id: id, type: "MemoryLimitExceeded",
                    message: "the request does not fit in the memory the cap leaves (set with --max-memory or Limits.memory)",
                    column: nil))
            }
            return .success(Request(id: id, node: node, message: message))
        case .failure(let failure) where payload.key == "event":
            return invalid("\"event\" must be a type name or an object with a string \"type\", not \(failure.described)")
        case .failure(let failure):
            return invalid("\"error\" must be a message string or an object whose \"type\" is a string, not \(failure.described)")
        }
    }

    /// The node at `path`, remembered between lines: a remembered node still answers to the
    /// path if its (cached) path is unchanged, which a removal or a move would change.
    private func cachedNode(at path: String) throws(TreeError) -> Node? {
        if let node = nodeCache.nodes[path], node.path == path { return node }
        let node = try hierarchy.node(at: path)
        if nodeCache.nodes.count > 4096 { nodeCache.nodes.removeAll(keepingCapacity: true) }
        nodeCache.nodes[path] = node
        return node
    }


    // MARK: Outcome lines

    /// Writes an outcome line inside a budget of the dispatch limits of its own: writing is
    /// host work (a value that holds one table many times reads as exponentially many bytes),
    /// and a budget that runs out while a value is written leaves the limit's error in its
    /// place.
    private func writeWithinBudget(
        _ outcome: DispatchResult, id: Value?, number: Int, into output: inout JSONWriter, held: MemoryCharge
    ) {
        hierarchy.withDispatchBudget { () -> Void in
            write(outcome, id: id, number: number, into: &output, held: held)
        }
    }

    private func write(_ outcome: DispatchResult, id: Value?, number: Int, into output: inout JSONWriter, held: MemoryCharge) {
        output.writeKey("line", opening: true)
        output.append(String(number))
        if let id {
            output.writeKey("id")
            output.write(id)
        }
        output.append(constant: Self.statusAndKind(outcome.status, outcome.message.domain))
        let valueStart = output.bytes.count
        outcome.message.writeJSON(into: &output)
        // Held from now on: what the trace's values may take is what is left after it.
        _ = held.add(output.bytes.count - valueStart)
        if let by = outcome.by {
            output.writeKey("by")
            output.writeString(by)
        }
        if let responder = outcome.responder {
            output.writeKey("responder")
            output.writeString(responder.location)
        }
        if let choice = outcome.choice {
            output.writeKey("choice")
            output.writeString(choice)
        }
        if !presented.entries.isEmpty {
            output.writeKey("presented")
            output.bytes.append(UInt8(ascii: "["))
            for (position, entry) in presented.entries.enumerated() {
                if position > 0 { output.bytes.append(UInt8(ascii: ",")) }
                output.writeKey("at", opening: true)
                output.writeString(entry.reportedAt)
                if entry.detached {
                    output.writeKey("detached")
                    output.append("true")
                }
                output.writeKey("error")
                output.write(entry.error)
                output.bytes.append(UInt8(ascii: "}"))
            }
            output.bytes.append(UInt8(ascii: "]"))
            if presented.omitted > 0 {
                output.writeKey("presentedOmitted")
                output.append(String(presented.omitted))
            }
        }
        if let trace = outcome.trace {
            output.writeKey("trace")
            output.bytes.append(UInt8(ascii: "["))
            var written = 0
            for index in 0..<trace.count {
                let start = output.bytes.count
                if index > 0 { output.bytes.append(UInt8(ascii: ",")) }
                write(trace.step(index), index, of: trace, into: &output)
                // Each step is held on the rules' behalf; one the cap refuses ends the trace,
                // which says how many steps it left out.
                guard held.add(output.bytes.count - start) else {
                    output.bytes.removeSubrange(start...)
                    break
                }
                written += 1
            }
            output.bytes.append(UInt8(ascii: "]"))
            if written < trace.count {
                output.writeKey("traceOmitted")
                output.append(String(trace.count - written))
            }
        }
        output.append("}\n")
    }

    /// `,"status":…,"kind":…,"value":` as one constant.
    private static func statusAndKind(_ status: Outcome.Status, _ kind: Domain) -> StaticString {
        switch (status, kind) {
        case (.handled, .event): return #","status":"handled","kind":"event","value":"#
        case (.handled, .error): return #","status":"handled","kind":"error","value":"#
        case (.unhandled, .event): return #","status":"unhandled","kind":"event","value":"#
        case (.unhandled, .error): return #","status":"unhandled","kind":"error","value":"#
        case (.detached, .event): return #","status":"detached","kind":"event","value":"#
        case (.detached, .error): return #","status":"detached","kind":"error","value":"#
        }
    }

    /// A trace step's JSON; with full tracing, its values are written from the record, within
    /// what the cap leaves: one that does not fit is written `{"omitted":"MemoryLimitExceeded"}`,
    /// so a value left out is always said to be.
    private func write(_ step: TraceStep, _ index: Int, of trace: DispatchTrace, into output: inout JSONWriter) {
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
        for (after, key) in [(false, "before" as StaticString), (true, "after")] where trace.hasValue(ofStep: index, after: after) {
            output.writeKey(key)
            if trace.writeValue(ofStep: index, after: after, into: &output) != true {
                output.append(#"{"omitted":"MemoryLimitExceeded"}"#)
            }
        }
        output.bytes.append(UInt8(ascii: "}"))
    }

    private func write(_ invalid: InvalidLine, number: Int, into output: inout JSONWriter) {
        Self.write(invalid, number: number, where: "\(inputName):\(number)" + (invalid.column.map { ":\($0)" } ?? ""), into: &output)
    }

    /// An `invalid` outcome line for line `number`, its error's `where` being `place`.
    static func write(_ invalid: InvalidLine, number: Int, where place: String, into output: inout JSONWriter) {
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
        output.writeString(place)
        output.append("}}\n")
    }
}

/// A JSON payload that is not a message of the domain asked for, described for the message.
struct ShapeFailure: Error {
    var described: Value
}
