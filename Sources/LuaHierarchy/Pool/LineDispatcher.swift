#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The rules engine over JSON lines (`luahier dispatch`): N workers, each with its own
/// hierarchy and the rules loaded once, answer one outcome line per request line, written in
/// input order.
///
/// The calling thread reads and cuts the input into batches of whole lines (what one read
/// returned, split so every worker gets some); workers take batches as they free up. The
/// writer thread (the flusher) writes each completed batch in input order, while its worker
/// goes on to the next. Nothing waits for input that has not arrived, so an interactive
/// producer gets each answer as soon as it is computed. No answer waits behind a slow line
/// of its own batch either: when the worker of the batch next in order has answered nothing
/// more for 2 ms (it is on a slow line), the flusher writes what it has answered so far (a
/// fast batch is still written in one piece once complete, not a write per line).
/// Lines in flight are bounded, so memory is too. Writes never block for good once a
/// signal came (`OutputWriter`).
///
/// On SIGINT or SIGTERM (`Interruption`) reading stops, the lines being answered are cut
/// short, and every line already answered is written, in input order, before `run` returns
/// a summary that says so.
package enum LineDispatcher {
    /// What a run loads, on how many workers, and how it reads and names its input.
    public struct Options {
        /// The rules script each worker runs once before reading input.
        public var rulesFile: String
        /// `arg` and `...` for the rules script.
        public var arguments: [String] = []
        /// Sandbox, limits and trace level for every worker's hierarchy.
        public var hierarchy = Hierarchy.Options()
        /// Workers, each with its own Lua state.
        public var jobs = 1
        /// Stop at the first invalid line (after writing its outcome).
        public var strict = false
        /// Longer lines are answered `LineTooLong` without being held in memory.
        public var maxLineBytes = 1 << 20
        /// How `where` names the input (`alerts.jsonl:12`).
        public var inputName = "stdin"
        /// The first line is numbered `lineOffset + 1` (`line`, `where`): a part of a larger
        /// input numbers its lines as the whole does.
        public var lineOffset = 0
        /// Where the rules' `print` goes: never the outcome stream. Called from worker threads.
        /// By default stderr, escaped and bounded as all text the host prints for a script.
        public var print: @Sendable (String) -> Void = { line in
            let text = PrintableText.block(line) + "\n"
            _ = text.utf8CString.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count - 1) }
        }

        /// Receives the errors that pass the root unhandled while the rules load (a rule that
        /// reports at load time), from the first worker only: every worker loads the same
        /// rules. Errors while lines are answered go into their lines' `presented`.
        public var presentWhileLoading: (@Sendable (PresentedError) -> Void)?

        /// Outcomes carry the `revision` that answered them (for a pool that reloads).
        public var stampsRevision = false

        /// Called when a worker stops before its next batch because the completed batches'
        /// answers waiting for the writer passed 4 MiB, with their size then; under the
        /// pipeline's lock, so it must not block. For tests.
        package var waitingForWriter: (@Sendable (Int) -> Void)?

        /// The bundle the rules come from, in place of `rulesFile` (`RulesPool.Options(bundle:workers:)`).
        public var bundle: RuleBundle?

        /// Options for the rules in `rulesFile`, with the defaults: one worker, stdin, not strict.
        public init(rulesFile: String) {
            self.rulesFile = rulesFile
        }

        /// The pool these options describe: `jobs` states, lines named by `inputName`.
        public var pool: RulesPool.Options {
            var pool = bundle.map { RulesPool.Options(bundle: $0, workers: jobs) } ?? RulesPool.Options(rulesFile: rulesFile, workers: jobs)
            pool.arguments = arguments
            pool.hierarchy = hierarchy
            pool.maxLineBytes = maxLineBytes
            pool.inputName = inputName
            pool.stampsRevision = stampsRevision
            pool.print = print
            pool.presentWhileLoading = presentWhileLoading
            return pool
        }
    }

    /// What a run came to: lines answered by status, and why it stopped early, if it did.
    public struct Summary: Sendable, CustomStringConvertible {
        /// Lines answered, by status.
        public var counts: [LineStatus: Int] = [:]
        /// With `strict`: the invalid line the run stopped at.
        public var stoppedAtLine: Int?
        /// Reading the input or writing the output failed (the run stopped there).
        public var ioError: String?
        /// The output was a pipe whose reader closed it (EPIPE): the run ended there; a
        /// command-line tool ends quietly then.
        public var outputClosed = false
        /// The signal that interrupted the run (SIGINT, SIGTERM), if one did.
        public var interruption: Int32?
        /// Lines read but not answered when the run was interrupted.
        public var unanswered = 0

        /// Lines answered, of every status.
        public var answered: Int { counts.values.reduce(0, +) }

        /// An empty summary: no lines answered.
        public init() {}

        /// `N lines: a handled, b unhandled, c detached, d invalid`, and what interrupted it.
        public var description: String {
            let parts = LineStatus.allCases.map { "\(counts[$0, default: 0]) \($0.rawValue)" }
            var text = "\(answered) line\(answered == 1 ? "" : "s"): " + parts.joined(separator: ", ")
            if let interruption {
                text += "; interrupted by \(Interruption.name(of: interruption))"
                text += ", \(unanswered) line\(unanswered == 1 ? "" : "s") read but not answered"
            }
            return text
        }
    }

    /// Loads the rules in a pool of `options.jobs` states, then answers every line of `input`
    /// on `output`. Throws the rules' error if they fail to load (nothing is read then).
    public static func run(_ options: Options, input: Int32, output: Int32) throws(ScriptError) -> Summary {
        let pool = try RulesPool(options: options.pool)
        defer { pool.shutDownBlocking() }
        return run(options, on: pool, input: input, output: output)
    }

    /// Answers every line of `input` on `output` with `pool`'s states (its options, not these,
    /// say how they load the rules); a pool that reloads meanwhile answers the lines read
    /// after the swap with the new revision.
    public static func run(_ options: Options, on pool: RulesPool, input: Int32, output: Int32) -> Summary {
        let pipeline = Pipeline(options: options, pool: pool, output: output)
        guard let flusher = LargeStack.spawn(size: 256 << 10, { pipeline.flushWaitingAnswers() }) else {
            var summary = Summary()
            summary.ioError = "could not start a thread"
            return summary
        }
        var reader = LineReader(pipeline: pipeline, input: input, maxLineBytes: options.maxLineBytes, lineOffset: options.lineOffset)
        reader.readAll()
        pipeline.waitUntilAnswered()
        pipeline.stopFlushing()
        flusher.join()
        return pipeline.finalSummary()
    }
}

/// A run of whole input lines, answered together.
final class Batch {
    /// A line: its bytes in `chunk`, or only its length when it was too long to keep.
    typealias Line = LuaEngine.RunLine

    let sequence: Int
    let chunk: [UInt8]
    let lines: [Line]
    /// The lines' tapes, read ahead by the reader (nil, or a line without one: it is read
    /// straight when answered).
    let tapes: LineTapes?
    /// The worker's: how many answers it handed over.
    // Unchecked: the worker alone touches these (`answered` under `answers`); a dynamic
    // exclusivity check per line was a measurable share of a line's cost.
    @exclusivity(unchecked) var answeredLines = 0
    /// The answers handed over and not yet let go, guarded by `answers` (the worker appends
    /// while the flusher may write them); how many of them are written (by whoever has the
    /// writing turn), and how many bytes were written and let go before them.
    let answers = Monitor()
    @exclusivity(unchecked) var answered: [UInt8] = []
    var written = 0
    var writtenBefore = 0
    /// The worker's: the answer bytes written whose charge it gave back.
    @exclusivity(unchecked) var released = 0
    /// Lines answered, by `LineStatus.index`.
    @exclusivity(unchecked) var counts = [0, 0, 0, 0]
    /// With strict: the invalid line after which nothing more is answered.
    var stopLine: Int?
    /// Its answers not yet written when it was completed (under the pipeline's `writer`).
    var unwrittenWhenCompleted = 0

    /// The bytes of its own lines kept in `chunk` (a chunk is one read, shared by the
    /// batches cut from it): about the room its answers take.
    let lineBytes: Int

    init(sequence: Int, chunk: [UInt8], lines: [Line], tapes: LineTapes? = nil) {
        self.sequence = sequence
        self.chunk = chunk
        self.lines = lines
        self.tapes = tapes
        var kept = 0
        for line in lines where !line.oversized { kept += line.count }
        lineBytes = min(chunk.count, kept)
    }
}

/// The state the pool's workers, the reader and the writer share, under one monitor (the
/// queue) plus one for the output.
final class Pipeline: @unchecked Sendable {
    let options: LineDispatcher.Options
    private let pool: RulesPool
    private let outputDescriptor: Int32
    private let queue = Monitor()
    private let writer = Monitor()

    // Guarded by `queue`.
    private var stopped = false
    /// Batches handed to the pool and not yet completed.
    private var pending = 0
    /// Batches handed in and not yet written, and the input bytes they hold: bounds memory
    /// (long lines would otherwise hold `maxInFlight` megabytes outside any cap).
    private var inFlight = 0
    private var inFlightBytes = 0
    static let maxInFlightBytes = 2 << 20
    /// Lines handed to the workers.
    private var submittedLines = 0

    // Guarded by `writer`.
    /// A thread has the writing turn: it writes answers in order, outside the lock; the others
    /// leave what is ready to it.
    private var writing = false
    private var finished: [Int: Batch] = [:]
    private var nextToWrite = 0
    /// Batches being answered, by sequence: the flusher writes what the one next in order
    /// has answered so far.
    private var open: [Int: Batch] = [:]
    /// Answer bytes of completed batches not written yet. Their worker's charge was given
    /// back when it completed them, so past `maxUnwrittenBytes` a worker waits in `complete`
    /// for the writer before it runs its next batch: what waits outside the cap stays bounded.
    private var completedUnwritten = 0
    private var flushing = true
    static let flushPeriod = 0.002
    static let flushLimit = 0.05
    private(set) var summary = LineDispatcher.Summary()

    /// The pool's states.
    let jobs: Int
    /// With `strict`, one batch at a time: the next begins once the one before is written, so
    /// no line after the one the run stops at is run (nor its decision recorded).
    var maxInFlight: Int { options.strict ? 1 : 4 * jobs + 4 }

    init(options: LineDispatcher.Options, pool: RulesPool, output: Int32) {
        self.options = options
        self.pool = pool
        self.outputDescriptor = output
        self.jobs = pool.workers
    }

    // MARK: Workers

    /// On a state of the pool: answers `batch` (nothing once the run stopped) and files it
    /// for writing.
    private func work(on batch: Batch, with worker: PoolWorker) {
        if !isStopped {
            // The batch's output counts against the state's memory cap while it is answered
            // (its later lines see it); given back as it is written.
            let held = worker.processor.outputCharge()
            let answered = batch.chunk.withUnsafeBytes { bytes in
                worker.answer(bytes, lines: batch.lines, held: held, strict: options.strict, tape: batch.tapes?.words) { answer, charged, _ in
                    handOver(answer, of: batch, held: held, charged: charged)
                    return true
                }
            }
            batch.counts = answered.counts
            batch.stopLine = answered.stopLine
            withExtendedLifetime(held) {}
        }
        complete(batch)
        queue.locked {
            pending -= 1
            queue.broadcast()
        }
    }

    /// Waits until every batch handed to the pool was completed (the input ended, or the run
    /// stopped).
    func waitUntilAnswered() {
        queue.locked {
            while pending > 0 { queue.wait() }
        }
    }

    // MARK: Reader side

    /// Hands a batch to the workers; waits while too many are in flight. False once the run
    /// has stopped (strict, or output failed).
    func submit(_ batch: Batch) -> Bool {
        queue.locked {
            while (inFlight >= maxInFlight || (inFlight > 0 && inFlightBytes + batch.chunk.count > Self.maxInFlightBytes))
                && !halted
            {
                queue.wait()
            }
            if halted { return false }
            inFlight += 1
            inFlightBytes += batch.chunk.count
            submittedLines += batch.lines.count
            pending += 1
            return true
        } && handToPool(batch)
    }

    private func handToPool(_ batch: Batch) -> Bool {
        if pool.run({ self.work(on: batch, with: $0) }) { return true }
        queue.locked {
            pending -= 1
            inFlight -= 1
            inFlightBytes -= batch.chunk.count
            submittedLines -= batch.lines.count
            stopped = true
            queue.broadcast()
        }
        writer.locked { if summary.ioError == nil { summary.ioError = "the pool was shut down" } }
        return false
    }

    var isStopped: Bool { queue.locked { halted } }

    /// Under `queue`: the run has stopped, or an interrupt asked it to.
    private var halted: Bool { stopped || Interruption.signal != nil }

    /// Ends the run on an I/O failure (`ioError` goes into the summary).
    func stop(ioError: String) {
        queue.locked {
            stopped = true
            queue.broadcast()
        }
        writer.locked { if summary.ioError == nil { summary.ioError = ioError } }
    }

    // MARK: Writer side

    /// Moves the answer the worker just wrote into `batch.answered`, where the flusher can
    /// write it if the batch is next in order and still being answered: an answer does not
    /// wait behind a slow line after it in its batch (contract §8). The batch's own lock, which
    /// only the flusher ever contends: a lock every worker took per line cost 10% of the
    /// throughput with two jobs.
    /// Hands an answer over to be written. `charged`: the processor charged it to `held`
    /// already (its own path charges as it writes, to leave out trace values the cap refuses).
    private func handOver(_ answer: UnsafeRawBufferPointer, of batch: Batch, held: MemoryCharge, charged: Bool = false) {
        if batch.answeredLines == 0 {
            writer.locked {
                // The flusher sleeps while no batch is open.
                if open.isEmpty { writer.broadcast() }
                open[batch.sequence] = batch
            }
        }
        batch.answeredLines += 1
        // Held until written, on the rules' behalf (contract §7): charged now, given back once
        // written (what the cap refuses is held all the same, and its line is answered).
        if !charged { _ = held.add(answer.count) }
        if answer.count > Self.maxUnwrittenBytes {
            // A large answer is written from where it was made, once the batch's turn comes
            // (after the answers before it): a copy into the batch would hold it twice.
            writeOwnAnswers(of: batch, then: answer)
            release(upTo: batch.answers.locked { batch.writtenBefore + batch.written }, of: batch, held: held)
            return
        }
        let (written, unwritten) = batch.answers.locked {
            // Room for about its lines' own length at once (their answers are seldom shorter),
            // not ten regrowths, each a copy: at most the input in flight (`maxInFlightBytes`).
            if batch.answered.isEmpty { batch.answered.reserveCapacity(batch.lineBytes) }
            // As typed bytes: Array copies a contiguous typed buffer with one memcpy, a raw
            // one byte by byte.
            answer.withMemoryRebound(to: UInt8.self) { batch.answered.append(contentsOf: $0) }
            return (batch.writtenBefore + batch.written, batch.answered.count - batch.written)
        }
        release(upTo: written, of: batch, held: held)
        if unwritten > Self.maxUnwrittenBytes {
            writeOwnAnswers(of: batch)
            // What it wrote is let go of now, not at the next answer: the next line's room
            // under the cap must not depend on when this one's answer was written.
            release(upTo: batch.answers.locked { batch.writtenBefore + batch.written }, of: batch, held: held)
        }
    }

    /// Gives back to `held` the bytes of `batch`'s answers written up to `written`.
    private func release(upTo written: Int, of batch: Batch, held: MemoryCharge) {
        guard written > batch.released else { return }
        held.remove(written - batch.released)
        batch.released = written
    }

    /// Unwritten answers one batch may hold before its worker stops to write them: the
    /// memory a stream of large answers holds stays bounded, whatever the cap.
    static let maxUnwrittenBytes = 4 << 20

    /// The worker of `batch`, holding more than `maxUnwrittenBytes` of unwritten answers (or
    /// handing over an `answer` larger than that), writes them, then `answer` from where it
    /// was made: once its batch is next in order (the batches before it written by the
    /// flusher, or still being answered by other workers) and it has the writing turn.
    private func writeOwnAnswers(of batch: Batch, then answer: UnsafeRawBufferPointer? = nil) {
        let turn: Bool = writer.locked {
            while (nextToWrite != batch.sequence || writing) && summary.ioError == nil && !isHalted {
                writer.wait(until: Monitor.now + Self.flushPeriod)
            }
            guard nextToWrite == batch.sequence, !writing else { return false }
            writing = true
            return true
        }
        guard turn else { return }
        if let code = writeRest(of: batch) {
            fail(writing: code)
        } else if let answer {
            if let code = OutputWriter.writeAll(answer, to: outputDescriptor, watchful: true) { fail(writing: code) }
            // Counted as written with the batch's bytes (the flusher's measure of progress).
            batch.answers.locked { batch.writtenBefore += answer.count }
        }
        writeFinished()
    }

    /// Whether the run has stopped (under `writer`: a look at the queue's flag).
    private var isHalted: Bool { queue.locked { halted } }

    /// The writer thread's loop, until `stopFlushing()` and every completed batch written: the
    /// completed batches next in order as they come; and every `flushPeriod`, what the batch
    /// next in order has answered and not written, once its worker has answered nothing more
    /// for a whole period (it is on a slow line) or the answers have waited `flushLimit`. A
    /// batch whose lines keep coming is written whole once it completes: the flusher writing
    /// every 2 ms cost 3% of the throughput.
    func flushWaitingAnswers() {
        var seen: (sequence: Int, answered: Int, since: Double)?
        writer.locked {
            while true {
                // The finished batches next in order, first; then, once the run has ended,
                // nothing is left to write (every batch begun was completed).
                if finished[nextToWrite] != nil, !writing {
                    writing = true
                    writer.unlocked { writeFinished() }
                    continue
                }
                guard flushing else { break }
                if open.isEmpty {
                    writer.wait()
                    continue
                }
                writer.wait(until: Monitor.now + Self.flushPeriod)
                guard flushing, let batch = open[nextToWrite], !writing, summary.stoppedAtLine == nil, summary.ioError == nil
                else { continue }
                let (answered, unwritten) = batch.answers.locked {
                    (batch.writtenBefore + batch.answered.count, batch.answered.count - batch.written)
                }
                guard unwritten > 0 else { continue }
                let now = Monitor.now
                guard let last = seen, last.sequence == batch.sequence else {
                    seen = (batch.sequence, answered, now)   // first seen waiting: give it a period
                    continue
                }
                let stalled = last.answered == answered
                guard stalled || now - last.since >= Self.flushLimit else {
                    seen = (batch.sequence, answered, last.since)
                    continue
                }
                seen = nil
                // The writing turn, or nothing this period: a worker holding more than
                // `maxUnwrittenBytes` is writing its own answers.
                guard !writing else { continue }
                writing = true
                writer.unlocked {
                    if let code = writeRest(of: batch) { fail(writing: code) }
                    writeFinished()
                }
            }
        }
    }

    /// Ends the flusher's loop (the workers have ended: every batch begun was completed).
    func stopFlushing() {
        writer.locked {
            flushing = false
            writer.broadcast()
        }
    }

    /// With the writing turn: writes the answers of `batch` not written yet; the errno of a
    /// failure.
    private func writeRest(of batch: Batch) -> Int32? {
        batch.answers.locked {
            let count = batch.answered.count
            guard batch.written < count else { return nil }
            if let code = writeAll(batch.answered[batch.written..<count]) { return code }
            // Written: let the bytes go (a batch of large answers would otherwise hold them all).
            batch.writtenBefore += count
            batch.answered.removeAll()
            batch.written = 0
            return nil
        }
    }

    /// Output failed with `code`: the summary says so, and the run stops.
    private func fail(writing code: Int32) {
        writer.locked {
            if summary.ioError == nil {
                summary.ioError = code == OutputWriter.abandoned
                    ? "stopped writing: the output was not being read"
                    : "cannot write the output: \(String(cString: strerror(code)))"
                summary.outputClosed = code == EPIPE
            }
        }
        queue.locked {
            stopped = true
            queue.broadcast()
        }
    }

    /// After the workers ended: the summary, with what an interrupt left unanswered. (Every
    /// batch a worker took was completed and written in order, cut short or not; the ones
    /// never taken were all after it.)
    func finalSummary() -> LineDispatcher.Summary {
        writer.locked {
            guard let signal = Interruption.signal else { return summary }
            summary.interruption = signal
            summary.unanswered = queue.locked { submittedLines } - summary.answered
            return summary
        }
    }

    /// Files a finished batch for the writer thread, which writes the batches in input order:
    /// the worker goes on to its next batch at once (a write of a batch's answers, ~0.1 MB,
    /// was 4% of a worker's time on `--jobs 1`).
    private func complete(_ batch: Batch) {
        let unwritten = batch.answers.locked { batch.answered.count - batch.written }
        writer.locked {
            finished[batch.sequence] = batch
            open.removeValue(forKey: batch.sequence)
            completedUnwritten += unwritten
            batch.unwrittenWhenCompleted = unwritten
            if batch.sequence == nextToWrite { writer.broadcast() }
            if completedUnwritten > Self.maxUnwrittenBytes { options.waitingForWriter?(completedUnwritten) }
            while completedUnwritten > Self.maxUnwrittenBytes && summary.ioError == nil && !isHalted {
                writer.wait(until: Monitor.now + Self.flushPeriod)
            }
        }
    }

    /// With the writing turn: writes the finished batches next in order, outside the `writer`
    /// lock (a worker finishing a batch meanwhile is not held up behind a write), until none is
    /// ready; then gives the turn back.
    private func writeFinished() {
        while true {
            var ready: [Batch] = []
            var skipping = false
            writer.locked {
                while let next = finished.removeValue(forKey: nextToWrite) {
                    nextToWrite += 1
                    ready.append(next)
                }
                if ready.isEmpty { writing = false }
                // Leaving the queue (written below, or skipped once the run has stopped).
                for next in ready { completedUnwritten -= next.unwrittenWhenCompleted }
                // A worker may wait for its batch's turn to write (writeOwnAnswers).
                writer.broadcast()
                skipping = summary.stoppedAtLine != nil || summary.ioError != nil
            }
            if ready.isEmpty { return }
            var stopNow = false
            for next in ready where !skipping {
                if let code = writeRest(of: next) {
                    fail(writing: code)
                    skipping = true
                    continue
                }
                writer.locked {
                    for status in LineStatus.allCases where next.counts[status.index] > 0 {
                        summary.counts[status, default: 0] += next.counts[status.index]
                    }
                    if let line = next.stopLine {
                        summary.stoppedAtLine = line
                        stopNow = true
                        skipping = true
                    }
                }
            }
            queue.locked {
                inFlight -= ready.count
                inFlightBytes -= ready.reduce(0) { $0 + $1.chunk.count }
                if stopNow { stopped = true }
                queue.broadcast()
            }
        }
    }

    /// The whole buffer (OutputWriter: a signal can abandon a write nobody reads); the errno
    /// of a failure.
    private func writeAll(_ bytes: ArraySlice<UInt8>) -> Int32? {
        // Watchful: workers and the flusher write, and a signal reaches only one thread.
        bytes.withUnsafeBytes { OutputWriter.writeAll($0, to: outputDescriptor, watchful: true) }
    }
}
