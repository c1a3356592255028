/// A candidate revision answering live requests beside the live one (`luahier serve
/// --shadow`, docs/shadow.md): this pool is the candidate's, and each of its answers is
/// compared with the live answer to the same request line by `OutcomeDifferences`, the one
/// comparison `luahier replay` makes too.
extension RulesPool {
    /// The live revision's answer to one request line, as its client got it.
    package struct LiveAnswer: Sendable {
        /// The outcome line (its newline or not).
        package var json: [UInt8]
        /// The handling responder's stable key (`ResponderKey`), when the live pool keys them.
        package var responderKey: String?

        package init(json: [UInt8], responderKey: String?) {
            (self.json, self.responderKey) = (json, responderKey)
        }
    }

    /// What the candidate made of a request.
    package struct ShadowResult: Sendable {
        /// For each line answered, in order: its number (as `line` counts, from 1, blank lines
        /// included; 1 for a single request) and the compared fields in which the candidate's
        /// answer differs from the live one (empty: they agree).
        package var lines: [(number: Int, differences: [String])] = []
        /// The candidate revision that answered.
        package var revision: Revision
    }

    /// Queues `body` to a state of this (the candidate's) pool, one request or, with `batch`,
    /// its JSON lines as `dispatchBatch` does, to be answered and compared with `live`: each
    /// answer with the live one at the same place; no more lines are answered than `live`
    /// holds. A line whose answers differ is recorded in `log`, when given, as a shadow
    /// record: the candidate's answer with the live one beside it and the fields that differ,
    /// masked by the candidate's `hier.maskDecision` and by the log's pointers (those into the
    /// outcome reach the live side's too).
    ///
    /// Returns at once. `finish` gets the result on the state's thread, or nil, at once on
    /// the caller's, when the queue is full (`Options.maxWaiting`) or the pool shut down. The
    /// request waits for a state with no time bound: no timer per request, no task, nothing
    /// that runs at the live requests' priority (the caller bounds what it queues).
    package func shadow(
        _ body: [UInt8], batch: Bool, requestID: String?, live: [LiveAnswer], liveRevision: Revision, log: DecisionLog?,
        finish: @escaping @Sendable (ShadowResult?) -> Void
    ) {
        let options = self.options
        let job = PoolJob(work: { worker in
            finish(Self.compare(body, batch: batch, on: worker, options: options, requestID: requestID, live: live, liveRevision: liveRevision, log: log))
        }, refused: { finish(nil) })
        if submit(job) != nil { finish(nil) }
    }

    private static func compare(
        _ body: [UInt8], batch: Bool, on worker: PoolWorker, options: Options, requestID: String?, live: [LiveAnswer],
        liveRevision: Revision, log: DecisionLog?
    ) -> ShadowResult {
        var cutter = LineCutter(maxLineBytes: options.maxLineBytes)
        let lines = batch ? cutter.cut(body) : [line(count: body.count, limit: options.maxLineBytes)]
        worker.request.id = requestID
        defer { worker.request.id = nil }
        var result = ShadowResult(revision: worker.generation.revision)
        var recorder = log.map { DecisionRecorder(log: $0, revision: worker.generation.revision, shadow: true, relay: options.relay) }
        let held = worker.processor.outputCharge()
        var lineIndex = 0
        var lineStarted = ContinuousClock.now
        body.withUnsafeBytes { bytes in
            _ = worker.answer(bytes, lines: lines, held: held, numbered: batch, timeBudget: batch ? options.batchTime : nil) { answer, _, _ in
                guard result.lines.count < live.count else { return false }
                let old = live[result.lines.count]
                let key = worker.processor.keys?.key
                let fields = differences(old, answer, key: key)
                let number = batch ? PoolWorker.lineNumber(of: answer) : 1
                result.lines.append((number, fields))
                if !fields.isEmpty, recorder != nil {
                    recorder!.lastAnswer = lineStarted
                    var outcome = old.json
                    if outcome.last == UInt8(ascii: "\n") { outcome.removeLast() }
                    recorder!.record(
                        request: bytes, line: PoolWorker.line(answeredBy: answer, in: lines, from: &lineIndex), numbered: batch, requestID: requestID,
                        outcome: answer, responderKey: key, mask: worker.processor.hierarchy.decisionMask,
                        live: .init(revision: liveRevision, outcome: outcome, responderKey: old.responderKey, differences: fields))
                }
                lineStarted = ContinuousClock.now
                return true
            }
        }
        return result
    }

    /// The fields in which `answer` (the candidate's outcome line) differs from `live`'s.
    private static func differences(_ live: LiveAnswer, _ answer: UnsafeRawBufferPointer, key: String?) -> [String] {
        live.json.withUnsafeBytes { OutcomeDifferences.fields(lines: $0, answer, oldKey: live.responderKey, newKey: key) }
    }
}

extension RulesPool {
    /// Loads a candidate revision beside this (the live) pool: the rules of `file` (a rules
    /// file, not a bundle) on `workers` states of their own (at most as many as the live
    /// pool's), at the lowest CPU priority, with this pool's options otherwise. The candidate runs under the live rules' name, so that its responders are
    /// named (`responder`, `FILE#NODEPATH#N`) as the live ones they are compared with; the
    /// modules it requires are found as the live rules' are. Its `print` is discarded, and it
    /// keeps no decision log of its own (`shadow` records its differences). The loading runs
    /// on a thread of its own; a file that does not load throws its error. With `within`, the
    /// file is read only as a `.lua` file under that folder (`readRulesFile(within:)`).
    package func candidate(file: String, workers: Int, within folder: String? = nil) async throws(ScriptError) -> RulesPool {
        let live = options
        let limit = options.hierarchy.limits.memory
        // Started here, on a live thread, so that it runs at the live threads' priority.
        guard let relay = BackgroundRelay() else {
            throw ScriptError(type: "HostError", message: "could not start a thread to load \(file)")
        }
        let loaded: Result<RulesPool, ScriptError> = await withCheckedContinuation { continuation in
            let started = LargeStack.detached(size: 256 << 10) {
                continuation.resume(returning: readRulesFile(file, limit: limit, within: folder).flatMap { text in
                    // A bundle is checked against a key the pool does not hold: not taken here.
                    if RuleBundle.looksLikeBundle(text) {
                        return .failure(ScriptError(type: "CannotRead", message: "\(file) is a bundle: a shadow candidate is a rules file"))
                    }
                    // The live rules may be a bundle's: the candidate is this text, whatever they are.
                    var candidate = live.replacing(source: String(decoding: text, as: UTF8.self))
                    // Never more states than the live rules have: each holds up to the memory cap.
                    candidate.workers = min(max(workers, 1), live.workers)
                    candidate.background = true
                    candidate.relay = relay
                    candidate.hierarchy.logger = relay.logger(relaying: live.hierarchy.logger)
                    candidate.responderKeys = true
                    candidate.decisionLog = nil
                    candidate.printForRequest = nil
                    candidate.print = { _ in }
                    candidate.presentWhileLoading = nil
                    return Result { () throws(ScriptError) in try RulesPool(options: candidate) }
                })
            }
            if !started {
                continuation.resume(returning: .failure(ScriptError(type: "HostError", message: "could not start a thread to load \(file)")))
            }
        }
        if case .failure = loaded { relay.close() }
        return try loaded.get()
    }
}
