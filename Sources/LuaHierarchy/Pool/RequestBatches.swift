/// Where one request is in a batch's bytes, and the line number its outcome (and an error's
/// `where`, `request:7`) carries.
package struct RequestSpan: Sendable {
    package var number: Int
    package var start: Int
    package var count: Int

    package init(number: Int, start: Int, count: Int) {
        (self.number, self.start, self.count) = (number, start, count)
    }
}

/// One request's answer: its outcome line (no newline) and, when the pool names responders
/// (`Options.responderKeys`), its handling responder's key.
package struct AnsweredRequest: Sendable {
    package var outcome: [UInt8]
    package var responderKey: String?
}

/// Requests answered on one state, in order, for a caller that streams many of them through
/// a pool (`luahier replay`). The batch sees its answers on the state's thread, where it may
/// do its own work with them (in parallel with the other states), before the caller gets it
/// back, in order.
package protocol RequestBatch: AnyObject, Sendable {
    /// The requests' bytes.
    var requestBytes: [UInt8] { get }
    /// Where each request is in them.
    var requestSpans: [RequestSpan] { get }
    /// On the state's thread: the answers, one per span, in order (fewer when an interrupt
    /// cut the batch short).
    func answered(_ answers: [AnsweredRequest])
}

extension RulesPool {
    /// Answers the batches `next` makes (called on the caller's thread until it returns nil)
    /// on the pool's states, at most `inFlight` at a time, and hands each to `finish` on the
    /// caller's thread, in the order `next` made them. No wait bound: a batch waits for a
    /// state as long as it takes. Returns false when the pool was shut down meanwhile.
    package func answerInOrder<Batch: RequestBatch>(inFlight: Int, next: () -> Batch?, finish: (Batch) -> Void) -> Bool {
        let monitor = Monitor()
        var done = Set<Int>()   // guarded by `monitor`
        var pending: [(number: Int, batch: Batch)] = []   // at most `inFlight`
        var made = 0
        var accepting = true
        func finishFirst() {
            let first = pending.removeFirst()
            monitor.locked {
                while !done.contains(first.number) { monitor.wait() }
                done.remove(first.number)
            }
            finish(first.batch)
        }
        while accepting, let batch = next() {
            let number = made
            made += 1
            let limit = options.maxLineBytes
            let submitted = run { worker in
                let held = worker.processor.outputCharge()
                var answers: [AnsweredRequest] = []
                answers.reserveCapacity(batch.requestSpans.count)
                let lines = batch.requestSpans.map {
                    LuaEngine.RunLine(number: $0.number, start: $0.start, count: $0.count, oversized: $0.count > limit)
                }
                _ = batch.requestBytes.withUnsafeBytes { bytes in
                    worker.answer(bytes, lines: lines, held: held, numbered: false) { answer, _, _ in
                        answers.append(AnsweredRequest(outcome: Array(answer.dropLast()), responderKey: worker.processor.keys?.key))
                        return true
                    }
                }
                batch.answered(answers)
                monitor.locked {
                    done.insert(number)
                    monitor.broadcast()
                }
            }
            guard submitted else {
                accepting = false
                break
            }
            pending.append((number, batch))
            while pending.count >= max(1, inFlight) { finishFirst() }
        }
        while !pending.isEmpty { finishFirst() }
        return accepting
    }
}
