/// One state of a pool, on its own thread: answers runs of request lines, the one way every
/// caller gets them answered (`dispatch` batches, `serve` requests and batches, the async API).
final class PoolWorker {
    let processor: LineProcessor
    unowned let generation: Generation
    /// The answer the processor's own path writes (C hands its answers over as it writes them).
    private var output = JSONWriter()
    /// An answer with the revision spliced in.
    private var stamped: [UInt8] = []

    /// The id of the request being answered, for the rules' `print` (`printForRequest`).
    let request: RequestTag
    /// Makes a decision record of each answer, when the pool has a decision log.
    private var recorder: DecisionRecorder?

    init(processor: LineProcessor, generation: Generation, request: RequestTag, decisionLog: DecisionLog?) {
        self.processor = processor
        self.generation = generation
        self.request = request
        recorder = decisionLog.map { DecisionRecorder(log: $0, revision: generation.revision) }
    }

    struct Answered {
        /// By `LineStatus.index`.
        var counts = [0, 0, 0, 0]
        /// With `strict`: the invalid line after which nothing more was answered.
        var stopLine: Int?
        /// An interrupt (SIGINT, SIGTERM in `dispatch`) cut the run short.
        var interrupted = false
        /// The status of the last line answered.
        var last: LineStatus?
        /// The deliverer refused an answer (its reader went away): nothing more was answered.
        var cancelled = false
        /// The time budget ran out before this line (an index into the lines) began: it and
        /// the lines after it were answered `BatchTimeLimitExceeded` without running.
        var expiredFrom: Int?
    }

    /// Answers `lines` of `chunk`, in order. Each outcome line goes to `deliver` with the
    /// revision in it when the pool stamps outcomes, and without its `line` member unless
    /// `numbered`; `charged` says the processor charged it to `held` already (the deliverer
    /// charges the others while it holds them, contract §7), and `failures` how its rules
    /// failed. With a `timeBudget` (seconds), no line begins once it has run out: each line
    /// left is answered `invalid` (`BatchTimeLimitExceeded`) without running, so a batch ends
    /// within its budget and one line's own. `tape`: the lines' tapes read ahead (`LineTapes`), if any.
    func answer(
        _ chunk: UnsafeRawBufferPointer, lines: [LuaEngine.RunLine], held: MemoryCharge, strict: Bool = false,
        numbered: Bool = true, timeBudget: Double? = nil, tape: UnsafePointer<UInt64>? = nil,
        deliver: (UnsafeRawBufferPointer, _ charged: Bool, _ failures: RuleFailures) -> Bool
    ) -> Answered {
        var answered = Answered()
        let startBy = timeBudget.map { LuaEngine.clock + max($0, 0.001) } ?? 0
        let stamp = generation.stamp
        let plain = stamp.isEmpty && numbered
        var lineIndex = 0
        // Asked once a batch: `recorder != nil` copies the recorder out to compare it.
        let recording = recorder != nil
        if recording { recorder!.lastAnswer = ContinuousClock.now }
        /// With a decision log: records `outcome`, the answer to the line `answer` begins with
        /// (answers come in the lines' order).
        func record(_ answer: UnsafeRawBufferPointer, outcome: UnsafeRawBufferPointer) {
            let line = Self.line(answeredBy: answer, in: lines, from: &lineIndex)
            // The key is noted for the line being answered, and holds while it is handed over.
            recorder!.record(
                request: chunk, line: line, numbered: numbered, requestID: request.id, outcome: outcome,
                responderKey: processor.keys?.key, mask: processor.hierarchy.decisionMask)
        }
        func hand(_ answer: UnsafeRawBufferPointer, charged: Bool, failures: RuleFailures) -> Bool {
            // The answer goes out first: its record (and the rules' mask) does not hold it up.
            if plain {
                let taken = deliver(answer, charged, failures)
                if recording { record(answer, outcome: answer) }
                return taken
            }
            Self.splice(answer, stamp: stamp, numbered: numbered, into: &stamped)
            return stamped.withUnsafeBytes { stamped in
                let taken = deliver(stamped, charged, failures)
                if recording { record(answer, outcome: stamped) }
                return taken
            }
        }
        // Windows of at most `window` lines: each run C answers is handed the lines from its
        // window (it copies them per run, and a line left to this side ends a run), so a
        // long batch of lines C leaves to this side costs linear time, not quadratic.
        var start = 0
        while start < lines.count {
            let end = min(lines.count, start + Self.window)
            let part = start == 0 && end == lines.count ? lines : Array(lines[start..<end])
            answerWindow(chunk, lines: part, held: held, strict: strict, startBy: startBy, tape: tape, into: &answered, hand: hand)
            if let expired = answered.expiredFrom {
                answered.expiredFrom = start + expired
                refuseExpired(lines[(start + expired)...], budget: timeBudget ?? 0, into: &answered, hand: hand)
                break
            }
            start = end
            if answered.interrupted || answered.stopLine != nil || answered.cancelled { break }
        }
        return answered
    }

    /// Answers `lines`, which the batch's time budget left no time for, `invalid`: cheap, so
    /// a batch of any length ends soon after its budget.
    private func refuseExpired(
        _ lines: ArraySlice<LuaEngine.RunLine>, budget: Double, into answered: inout Answered,
        hand: (UnsafeRawBufferPointer, Bool, RuleFailures) -> Bool
    ) {
        let refusal = LineProcessor.InvalidLine(
            id: nil, type: "BatchTimeLimitExceeded",
            message: "the batch used up its time budget of \(budget.formatted) s (set with --timeout or RulesPool.Options.batchTime) "
                + "before this line began; it was not run", column: nil)
        let place = processor.inputName
        processor.keys?.clear()
        for line in lines {
            output.bytes.removeAll(keepingCapacity: true)
            LineProcessor.write(refusal, number: line.number, where: "\(place):\(line.number)", into: &output)
            answered.counts[LineStatus.invalid.index] += 1
            answered.last = .invalid
            let taken = output.bytes.withUnsafeBytes { hand($0, false, []) }
            if !taken {
                answered.cancelled = true
                break
            }
        }
        output.bytes.removeAll(keepingCapacity: true)
    }

    /// Most lines handed to one run (a `dispatch` batch has at most as many).
    static let window = 512

    private func answerWindow(
        _ chunk: UnsafeRawBufferPointer, lines: [LuaEngine.RunLine], held: MemoryCharge, strict: Bool, startBy: Double,
        tape: UnsafePointer<UInt64>?, into answered: inout Answered, hand: (UnsafeRawBufferPointer, Bool, RuleFailures) -> Bool
    ) {
        var next = 0
        while next < lines.count {
            if Interruption.signal != nil {
                answered.interrupted = true
                return
            }
            // A run of lines C answers end to end, each handed over as it is written; then the
            // line it left to the processor's own path, if any.
            let run = processor.answerRun(chunk, lines: lines, from: next, into: &output, held: held, startBy: startBy, tape: tape) { answer in
                // Refused: C leaves the line to this side, which stops there.
                hand(answer, false, self.processor.hierarchy.ruleFailures)
            }
            for (index, count) in run.counts.enumerated() where count > 0 {
                answered.counts[index] += count
                answered.last = LineStatus.allCases[index]
            }
            if run.interrupted {
                answered.interrupted = true
                return
            }
            if run.expired {
                answered.expiredFrom = run.next
                return
            }
            next = run.next
            guard let status = run.answered else { continue }
            answered.counts[status.index] += 1
            answered.last = status
            let taken = output.bytes.withUnsafeBytes { hand($0, true, run.failures) }
            output.bytes.removeAll(keepingCapacity: true)
            if !taken {
                answered.cancelled = true
                return
            }
            if status == .invalid && strict {
                answered.stopLine = lines[next - 1].number
                return
            }
        }
    }

    /// The line of `lines` that `answer` answers, searched from `index` on (answers come in
    /// the lines' order); nil when there are no lines. An answer without its number (not
    /// `numbered`) answers the line at `index`.
    static func line(answeredBy answer: UnsafeRawBufferPointer, in lines: [LuaEngine.RunLine], from index: inout Int) -> LuaEngine.RunLine? {
        let number = lineNumber(of: answer)
        while index < lines.count - 1 && lines[index].number < number { index += 1 }
        return lines.isEmpty ? nil : lines[index]
    }

    /// N of an answer as it is written (`{"line":N,...`).
    static func lineNumber(of answer: UnsafeRawBufferPointer) -> Int {
        var number = 0
        var index = 8
        while index < answer.count, answer[index] >= UInt8(ascii: "0"), answer[index] <= UInt8(ascii: "9") {
            number = number * 10 + Int(answer[index] - UInt8(ascii: "0"))
            index += 1
        }
        return number
    }

    /// `answer` (`{"line":N,...}\n`) into `stamped`, with `stamp` (`,"revision":{...}`, or
    /// nothing) after the line number, or in its place when not `numbered`.
    static func splice(_ answer: UnsafeRawBufferPointer, stamp: [UInt8], numbered: Bool, into stamped: inout [UInt8]) {
        stamped.removeAll(keepingCapacity: true)
        // `{"line":` and its digits.
        var end = 8
        while end < answer.count, answer[end] >= UInt8(ascii: "0"), answer[end] <= UInt8(ascii: "9") { end += 1 }
        if numbered {
            stamped.append(contentsOf: answer[..<end])
            stamped.append(contentsOf: stamp)
            stamped.append(contentsOf: answer[end...])
        } else {
            stamped.append(UInt8(ascii: "{"))
            if stamp.isEmpty {
                stamped.append(contentsOf: answer[(end + 1)...])   // the comma before the next member
            } else {
                stamped.append(contentsOf: stamp.dropFirst())
                stamped.append(contentsOf: answer[end...])
            }
        }
    }
}

private extension Double {
    /// `30`, `0.5`: seconds as a person writes them.
    var formatted: String { self == rounded() && abs(self) < 1e15 ? String(Int(self)) : String(self) }
}

/// The id of the request a state answers now: set and read on the state's own thread only
/// (by the work it runs, and by the `print` of the rules that work runs).
final class RequestTag: @unchecked Sendable {
    var id: String?
}
