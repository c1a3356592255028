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

    /// With keys asked for: the key of each line's handling responder, noted before its
    /// outcome is delivered (`ResponderKey`). Nil, the default, costs nothing per line.
    let keys: ResponderKeyNote?

    /// Takes the hierarchy's presenter over (the one it had still sees every error).
    init(hierarchy: Hierarchy, inputName: String, maxLineBytes: Int, responderKeys: Bool = false) {
        self.hierarchy = hierarchy
        keys = responderKeys ? ResponderKeyNote() : nil
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
        /// How its rules failed.
        var failures: RuleFailures = []
        /// An interrupt cut line `next` short: it and the lines after it are unanswered.
        var interrupted = false
        /// `startBy` passed before line `next` began: it and the lines after it are unanswered.
        var expired = false
    }

    /// Answers `lines[from...]` of `chunk`: a run of them by C end to end (each outcome handed
    /// to `deliver` as it is written, for the deliverer to hold and charge), then the first line
    /// C leaves to this side, answered its own way into `output`, charged to `held` (contract §7).
    /// No line begins at or after `startBy` (on `LuaEngine.clock`; 0: no bound). `tape`: the
    /// lines' tapes read ahead, if any.
    func answerRun(
        _ chunk: UnsafeRawBufferPointer, lines: [LuaEngine.RunLine], from: Int, into output: inout JSONWriter,
        held: MemoryCharge, startBy: Double = 0, tape: UnsafePointer<UInt64>? = nil, deliver: (UnsafeRawBufferPointer) -> Bool
    ) -> RunResult {
        // Each run starts with the processor's settings (a line's rules may change them).
        if hierarchy.traceLevel != traceLevel { hierarchy.traceLevel = traceLevel }
        presented.reset()
        let run = hierarchy.answerRun(
            chunk: chunk, lines: lines, from: from, input: inputNameC, presented: presented.count, startBy: startBy,
            keys: keys, tape: tape, deliver: deliver)
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
            keys?.note(by: dispatch.status == .handled ? dispatch.by : nil, responder: dispatch.responder)
            // Charged as the writing did not charge itself.
            let start = output.bytes.count
            let chargedBefore = held.bytes
            // The writing is an entry of its own: its limit, if one trips, adds to the dispatch's.
            let failures = hierarchy.ruleFailures
            writeWithinBudget(dispatch, id: id, number: line.number, into: &output, held: held)
            result.failures = failures.union(hierarchy.ruleFailures)
            _ = held.add(output.bytes.count - start - (held.bytes - chargedBefore))
            presented.reset()
            result.answered = LineStatus(dispatch.status)
        case .refused(let refused):
            keys?.clear()
            write(Self.words(for: refused), number: line.number, into: &output)
            _ = held.add(output.bytes.count)
            result.answered = .invalid
        case .tooLong:
            keys?.clear()
            refuseOversized(length: line.count, number: line.number, into: &output)
            _ = held.add(output.bytes.count)
            result.answered = .invalid
        }
        result.next += 1
        return result
    }

    /// An oversized line, refused without being read into memory.
    func refuseOversized(length: Int, number: Int, into output: inout JSONWriter) {
        let invalid = InvalidLine(
            id: nil, type: "LineTooLong",
            message: "line is \(length) bytes, over the limit of \(maxLineBytes) (--max-line)", column: nil)
        write(invalid, number: number, into: &output)
    }

    // MARK: Refusals

    /// A refused request, in words: what `luahier_readrequest` (lines.c, the one place a
    /// request's validity is decided) said, worded for the `invalid` outcome line.
    struct InvalidLine: Error {
        var id: Value?
        var type: String
        var message: String
        var column: Int?
    }

    /// The words for a refusal C decided.
    static func words(for refused: RefusedRequest) -> InvalidLine {
        func invalid(_ message: String) -> InvalidLine {
            InvalidLine(id: refused.id, type: "InvalidRequest", message: message)
        }
        switch refused.reason {
        case .notJSON(let message, let column):
            return InvalidLine(id: nil, type: "InvalidJSON", message: message, column: column)
        case .notObject:
            return InvalidLine(id: nil, type: "InvalidRequest", message: "a request is a JSON object with \"at\" and \"event\" or \"error\"")
        case .unknownField(let key):
            return invalid("unknown field \(String(reflecting: key)) (a request has id, at, and event or error)")
        case .noAt:
            return invalid("missing \"at\" (the path of the node, e.g. \"/app/feed\")")
        case .atNotPath(let at):
            return invalid("\"at\" must be a path string, not \(at)")
        case .notAPath(let path):
            return invalid("\"at\": \(TreeError.invalidPath(path))")
        case .noNode(let path):
            return InvalidLine(id: refused.id, type: "NoSuchNode", message: "no node at \(path)")
        case .noPayload:
            return invalid("missing \"event\" or \"error\"")
        case .payloadRepeated(let isError, let count):
            return invalid("\"\(isError ? "error" : "event")\" is given \(count) times (a request has one)")
        case .bothPayloads:
            return invalid("a request has one \"event\" or one \"error\", not both")
        case .notAMessage(false, let described):
            return invalid("\"event\" must be a type name or an object with a string \"type\", not \(described)")
        case .notAMessage(true, let described):
            return invalid("\"error\" must be a message string or an object whose \"type\" is a string, not \(described)")
        case .memory:
            return InvalidLine(
                id: refused.id, type: "MemoryLimitExceeded",
                message: "the request does not fit in the memory the cap leaves (set with --max-memory or Limits.memory)")
        }
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
        var parts = OutcomeParts(number: number, status: outcome.status, domain: outcome.message.domain)
        parts.id(id)
        parts.value { output in
            let start = output.bytes.count
            outcome.message.writeJSON(into: &output)
            // Held from now on: what the trace's values may take is what is left after it.
            _ = held.add(output.bytes.count - start)
        }
        parts.dispatchTexts(by: outcome.by, responder: outcome.responder?.location, choice: outcome.choice)
        let presented = self.presented
        if !presented.entries.isEmpty {
            parts.presented { output in
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
                return presented.omitted
            }
        }
        if let trace = outcome.trace {
            parts.trace { output in
                output.bytes.append(UInt8(ascii: "["))
                var written = 0
                for index in 0..<trace.count {
                    let start = output.bytes.count
                    if index > 0 { output.bytes.append(UInt8(ascii: ",")) }
                    Self.write(trace.step(index), index, of: trace, into: &output)
                    // Each step is held on the rules' behalf; one the cap refuses ends the trace,
                    // which says how many steps it left out.
                    guard held.add(output.bytes.count - start) else {
                        output.bytes.removeSubrange(start...)
                        break
                    }
                    written += 1
                }
                output.bytes.append(UInt8(ascii: "]"))
                return trace.count - written
            }
        }
        parts.write(into: &output)
    }

    /// A trace step's JSON; with full tracing, its values are written from the record, within
    /// what the cap leaves: one that does not fit is written `{"omitted":"MemoryLimitExceeded"}`,
    /// so a value left out is always said to be.
    private static func write(_ step: TraceStep, _ index: Int, of trace: DispatchTrace, into output: inout JSONWriter) {
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
        var parts = OutcomeParts(number: number, invalid: invalid.type, message: invalid.message, where: place)
        parts.id(invalid.id)
        parts.write(into: &output)
    }
}
