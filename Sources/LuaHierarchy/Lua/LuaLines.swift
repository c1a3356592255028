import CLua
import CLuaHost

/// `luahier dispatch`'s lines answered by C end to end (Sources/CLuaHost/lines.c), a run of
/// them at a time: each request read from JSON into Lua by the one JSON reader and judged
/// valid or not (the one place that decides it), its node's plan kept by path, the engine's
/// dispatch inside the line's own budget, the outcome line written by the one outcome writer
/// and handed over. Nothing is built in Swift on the way. A run ends at the first line the host
/// must finish: one too long to keep, one refused (the host words why), or one whose outcome
/// has parts only the host makes (a trace, errors presented, a value for the careful writer).
extension LuaEngine {
    /// How a run ended.
    enum RunStop {
        /// Every line was answered.
        case done
        /// The line before `next` changed the tree's chains (the rules did): the host looks at
        /// its settings before the next run.
        case changed
        /// Line `next` was too long to keep; nothing was done with it.
        case tooLong
        /// Line `next` is not a valid request (C decided, the host words it).
        case refused(RefusedRequest)
        /// Line `next` was dispatched, and its outcome is the host's to finish: it has errors
        /// presented meanwhile, a trace, an id read from its text, or a value the C writer
        /// leaves to the careful one. The id as it came (nil: none).
        case dispatched(DispatchResult, id: Value?)
        /// An interrupt (SIGINT) cut line `next` short: it is not answered.
        case interrupted
        /// The run's `startBy` passed before line `next` began: it is not answered.
        case expired
    }

    /// The clock `startBy` reads (seconds, monotonic, a few ms of resolution).
    static var clock: Double { luahier_now() }

    /// What a run did.
    struct Run {
        /// Lines answered and handed over, by status (LUAHIER_STATUS_*: handled, unhandled,
        /// detached).
        var counts = [0, 0, 0]
        /// Where it stopped (an index into the lines given).
        var next = 0
        var stop = RunStop.done
    }

    /// A line of a run (of a batch: LineReader.swift): where its bytes are in the chunk, or
    /// only its length when it was too long to keep; where its tape starts in the run's tape,
    /// when it was read ahead (-1: not).
    struct RunLine {
        var number: Int
        var start: Int
        var count: Int
        var oversized: Bool
        var tape = -1
    }

    /// Answers `lines[from...]` of `chunk` (named `input`, a C string, in messages) until one
    /// needs the host, handing each outcome line to `deliver` as it is written. `presented`
    /// counts the errors the host was handed to present. No line begins at or after `startBy`
    /// (on `clock`; 0: no bound). Top level only (no entry under way). With `keys`, each line's
    /// responder key (`ResponderKey`) is noted there before its outcome is delivered. `tape`:
    /// the lines' tapes read ahead (`LineTapes`), if any.
    func answerRun(
        chunk: UnsafeRawBufferPointer, lines: [RunLine], from: Int, input: ContiguousArray<CChar>,
        presented: UnsafePointer<Int>, startBy: Double, keys: ResponderKeyNote? = nil, tape: UnsafePointer<UInt64>? = nil,
        deliver: (UnsafeRawBufferPointer) -> Bool
    ) -> Run {
        let L = host.thread
        let top = lua_gettop(L)
        lineBuffer.removeAll(keepingCapacity: true)
        for line in lines {
            lineBuffer.append(
                luahier_Line(number: line.number, start: line.start, count: line.count, oversized: line.oversized ? 1 : 0, tape: line.tape))
        }
        let budget = host.topLevelBudget(.dispatch)
        var run = luahier_LineRun()
        var ended = luahier_Result()
        run.chunk = chunk.baseAddress?.assumingMemoryBound(to: CChar.self)
        run.count = lines.count
        run.next = from
        run.depth_limit = Int32(JSON.defaultDepthLimit)
        run.tape = tape
        run.instructions = budget.instructions
        run.seconds = budget.seconds
        run.scope = budget.scope
        run.start_by = startBy
        run.presented = presented
        run.names_responders = keys == nil ? 0 : 1
        let stop = withoutActuallyEscaping(deliver) { deliver in
            withUnsafeMutablePointer(to: &run) { run in
                var handler = RunDelivery(deliver: deliver, keys: keys, run: run)
                return withUnsafeMutablePointer(to: &handler) { handler in
                    run.pointee.context = UnsafeMutableRawPointer(handler)
                    run.pointee.deliver = { context, bytes, size in
                        let delivery = context!.assumingMemoryBound(to: RunDelivery.self)
                        if let keys = delivery.pointee.keys { keys.note(delivery.pointee.run.pointee) }
                        return delivery.pointee.deliver(UnsafeRawBufferPointer(start: bytes, count: size)) ? 1 : 0
                    }
                    return withUnsafeMutablePointer(to: &ended) { ended in
                        run.pointee.result = ended
                        return lineBuffer.withUnsafeBufferPointer { lines in
                            run.pointee.lines = lines.baseAddress
                            return input.withUnsafeBufferPointer { name in
                                run.pointee.input = name.baseAddress
                                return luahier_answerrun(L, state, run)
                            }
                        }
                    }
                }
            }
        }
        defer { lua_settop(L, top) }
        if host.guardState.pointee.released_count > 0 { host.drainReleases() }
        var result = Run(counts: [run.counts.0, run.counts.1, run.counts.2], next: run.next)
        switch stop {
        case Int32(LUAHIER_RUN_DONE): result.stop = .done
        case Int32(LUAHIER_RUN_CHANGED): result.stop = .changed
        case Int32(LUAHIER_RUN_INTERRUPTED): result.stop = .interrupted
        case Int32(LUAHIER_RUN_EXPIRED): result.stop = .expired
        case Int32(LUAHIER_RUN_DISPATCHED):
            result.stop = .dispatched(dispatchResult(ended, planAt: top + 2), id: id(of: run.request, in: chunk, lines[run.next]))
        case Int32(LUAHIER_RUN_REFUSED):
            result.stop = .refused(refusal(run.request, at: top, in: chunk, lines[run.next]))
        default: result.stop = .tooLong
        }
        return result
    }

    /// What C's delivery callback is handed: the deliverer, and where to note responder keys.
    private struct RunDelivery {
        let deliver: (UnsafeRawBufferPointer) -> Bool
        let keys: ResponderKeyNote?
        let run: UnsafeMutablePointer<luahier_LineRun>
    }

    /// The id of `request`, read from its text as it came (nulls kept); nil when it has none.
    private func id(of request: luahier_Request, in chunk: UnsafeRawBufferPointer, _ line: RunLine) -> Value? {
        guard request.has_id != 0 else { return nil }
        return Self.value(inText: chunk, line, from: request.id_start, count: request.id_length, nulls: .keep)
    }

    /// The JSON value at `from` (`count` bytes) of `line`: C read it already, so it is valid.
    private static func value(
        inText chunk: UnsafeRawBufferPointer, _ line: RunLine, from: Int, count: Int, nulls: JSONParser.Nulls
    ) -> Value {
        let start = line.start + from
        let text = UnsafeRawBufferPointer(rebasing: chunk[start..<start + count])
        let parser = JSONParser(text.bindMemory(to: UInt8.self), depthLimit: JSON.defaultDepthLimit, nulls: nulls)
        return (try? parser.parseDocument()) ?? .null
    }

    /// [-0, +0, -] What C left of a refused request (luahier_readrequest): the id's slot,
    /// "at", the payload, and the first unknown key or the reader's message, above `top`.
    private func refusal(_ request: luahier_Request, at top: Int32, in chunk: UnsafeRawBufferPointer, _ line: RunLine) -> RefusedRequest {
        let id = self.id(of: request, in: chunk, line)
        let at = { Self.value(inText: chunk, line, from: request.at_start, count: request.at_length, nulls: .asLuaNil) }
        let path = { if case .string(let path) = at() { path } else { "" } }
        let reason: RefusedRequest.Reason
        switch Int(request.refusal) {
        case Int(LUAHIER_REFUSE_JSON):
            reason = .notJSON(message: host.string(at: top + 4) ?? "invalid JSON", column: request.column)
        case Int(LUAHIER_REFUSE_NOT_OBJECT): return RefusedRequest(id: nil, reason: .notObject)
        case Int(LUAHIER_REFUSE_UNKNOWN_FIELD): reason = .unknownField(host.string(at: top + 4) ?? "")
        case Int(LUAHIER_REFUSE_NO_AT): reason = .noAt
        case Int(LUAHIER_REFUSE_AT_NOT_PATH): reason = .atNotPath(at())
        case Int(LUAHIER_REFUSE_NOT_A_PATH): reason = .notAPath(path())
        case Int(LUAHIER_REFUSE_NO_NODE): reason = .noNode(path())
        case Int(LUAHIER_REFUSE_NO_PAYLOAD): reason = .noPayload
        case Int(LUAHIER_REFUSE_PAYLOADS):
            reason = request.payload_kinds == 3
                ? .bothPayloads : .payloadRepeated(isError: request.is_error != 0, count: Int(request.payloads))
        case Int(LUAHIER_REFUSE_NOT_A_MESSAGE):
            reason = .notAMessage(isError: request.is_error != 0, described: (try? host.value(at: top + 3, strict: false)) ?? .null)
        default: reason = .memory
        }
        // A text that is not JSON has no id to echo.
        if case .notJSON = reason { return RefusedRequest(id: nil, reason: reason) }
        return RefusedRequest(id: id, reason: reason)
    }

    static func status(_ status: Int32) -> Outcome.Status {
        status == LUAHIER_STATUS_HANDLED ? .handled : status == LUAHIER_STATUS_DETACHED ? .detached : .unhandled
    }
}

/// A request line C refused (luahier_readrequest, the one place that decides), with what the
/// host needs to word it (LineProcessor).
struct RefusedRequest {
    enum Reason {
        case notJSON(message: String, column: Int)
        case notObject
        case unknownField(String)
        case noAt
        case atNotPath(Value)
        case notAPath(String)
        case noNode(String)
        case noPayload
        case payloadRepeated(isError: Bool, count: Int)
        case bothPayloads
        case notAMessage(isError: Bool, described: Value)
        case memory
    }

    /// The id as it came (nil: none, or the line was not JSON).
    var id: Value?
    var reason: Reason
}

/// An outcome line the host finishes: its parts made here, laid out by the one outcome writer
/// (luahier_writeoutcome, lines.c), which lays out the lines C answers too. Small parts are
/// handed over as texts; the large ones (the value, errors presented, the trace) are written by
/// the host straight into the output where the writer stops for them, never copied.
struct OutcomeParts {
    /// The small parts' texts, one after another; `texts` says where each is.
    private var scratch: [UInt8] = []
    private var texts: [(WritableKeyPath<luahier_Outcome, luahier_Field>, Range<Int>)] = []
    /// The large parts, by the stage the writer goes on at after each: each returns how many
    /// of its items it left out (errors presented, trace steps).
    private var deferred: [Int32: (inout JSONWriter) -> Int] = [:]
    private var outcome = luahier_Outcome()

    /// An outcome of a dispatch that ended `status`, its value of `domain`.
    init(number: Int, status: Outcome.Status, domain: Domain) {
        outcome.number = number
        outcome.status = switch status {
        case .handled: Int32(LUAHIER_STATUS_HANDLED)
        case .unhandled: Int32(LUAHIER_STATUS_UNHANDLED)
        case .detached: Int32(LUAHIER_STATUS_DETACHED)
        }
        outcome.is_error = domain == .error ? 1 : 0
        outcome.value_room = .max
    }

    /// An `invalid` line: its request refused with an error of `type`, `message`, `place`.
    init(number: Int, invalid type: String, message: String, where place: String) {
        outcome.number = number
        outcome.status = LUAHIER_OUTCOME_INVALID
        text(\.error_type, type)
        text(\.error_message, message)
        text(\.error_where, place)
    }

    /// The id, as it came.
    mutating func id(_ id: Value?) {
        guard let id else { return }
        outcome.has_id = 1
        var writer = JSONWriter()
        writer.write(id)
        add(\.id, writer.bytes)
    }

    /// A string part.
    mutating func text(_ field: WritableKeyPath<luahier_Outcome, luahier_Field>, _ text: String?) {
        guard let text else { return }
        add(field, Array(text.utf8))
    }

    /// The dispatch's `by`, `responder` and `choice` parts, each if it has one (named here,
    /// where the C outcome's fields are seen).
    mutating func dispatchTexts(by: String?, responder: String?, choice: String?) {
        text(\.by, by)
        text(\.responder, responder)
        text(\.choice, choice)
    }

    private mutating func add(_ field: WritableKeyPath<luahier_Outcome, luahier_Field>, _ bytes: [UInt8]) {
        let start = scratch.count
        scratch.append(contentsOf: bytes)
        texts.append((field, start..<scratch.count))
    }

    /// The value, written by `write` into the output where it goes.
    mutating func value(_ write: @escaping (inout JSONWriter) -> Void) {
        outcome.value.deferred = 1
        deferred[Int32(LUAHIER_OUTCOME_AFTER_VALUE)] = { write(&$0); return 0 }
    }

    /// The errors presented (a JSON array), written by `write` into the output, which returns
    /// how many it left out.
    mutating func presented(_ write: @escaping (inout JSONWriter) -> Int) {
        outcome.presented.deferred = 1
        deferred[Int32(LUAHIER_OUTCOME_AFTER_PRESENTED)] = write
    }

    /// The trace (a JSON array), written by `write` into the output, which returns how many
    /// steps it left out.
    mutating func trace(_ write: @escaping (inout JSONWriter) -> Int) {
        outcome.trace.deferred = 1
        deferred[Int32(LUAHIER_OUTCOME_AFTER_TRACE)] = write
    }

    /// Appends the line (with its newline) to `output`.
    consuming func write(into output: inout JSONWriter) {
        var out = luahier_JSONOut()
        out.limit = .max
        // Every text is given a non-null address, even an empty one.
        scratch.append(0)
        var outcome = self.outcome
        var stage = Int32(LUAHIER_OUTCOME_START)
        scratch.withUnsafeBufferPointer { base in
            let start = UnsafeRawPointer(base.baseAddress!).assumingMemoryBound(to: CChar.self)
            for (field, range) in texts {
                outcome[keyPath: field].text = start + range.lowerBound
                outcome[keyPath: field].length = range.count
            }
            while true {
                let result = luahier_writeoutcome(nil, &outcome, &out, &stage)
                output.bytes.append(contentsOf: UnsafeRawBufferPointer(start: out.bytes, count: out.size))
                guard result == LUAHIER_OUTCOME_DEFERRED, let write = deferred[stage] else { break }
                let omitted = write(&output)
                if stage == LUAHIER_OUTCOME_AFTER_PRESENTED { outcome.presented_omitted = omitted }
                if stage == LUAHIER_OUTCOME_AFTER_TRACE { outcome.trace_omitted = omitted }
            }
        }
        luahier_jsonshrink(&out, 0)
    }
}
