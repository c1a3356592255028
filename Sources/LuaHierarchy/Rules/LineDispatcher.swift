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
/// returned, split so every worker gets some); workers take batches as they free up; the
/// worker that completes the next batch in order writes it, and any that were waiting
/// behind it. Nothing waits for input that has not arrived, so an interactive producer gets
/// each answer as soon as it is computed. Lines in flight are bounded, so memory is too.
public enum LineDispatcher {
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
        /// Where the rules' `print` goes: never the outcome stream. Called from worker threads.
        /// By default stderr, escaped and bounded as all text the host prints for a script.
        public var print: @Sendable (String) -> Void = { line in
            let text = PrintableText.block(line) + "\n"
            _ = text.utf8CString.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count - 1) }
        }

        public init(rulesFile: String) {
            self.rulesFile = rulesFile
        }
    }

    public struct Summary: Sendable, CustomStringConvertible {
        /// Lines answered, by status.
        public var counts: [LineStatus: Int] = [:]
        /// With `strict`: the invalid line the run stopped at.
        public var stoppedAtLine: Int?
        /// Reading the input or writing the output failed (the run stopped there).
        public var ioError: String?

        public var answered: Int { counts.values.reduce(0, +) }

        /// `N lines: a handled, b unhandled, c detached, d invalid`.
        public var description: String {
            let parts = LineStatus.allCases.map { "\(counts[$0, default: 0]) \($0.rawValue)" }
            return "\(answered) line\(answered == 1 ? "" : "s"): " + parts.joined(separator: ", ")
        }
    }

    /// Loads the rules in every worker, then answers every line of `input` on `output`.
    /// Throws the rules' error if they fail to load (nothing is read then).
    public static func run(_ options: Options, input: Int32, output: Int32) throws(ScriptError) -> Summary {
        let pipeline = Pipeline(options: options, output: output)
        let workers = (0..<pipeline.jobs).map { _ in
            LargeStack.spawn { pipeline.work() }
        }
        func shutDown() {
            pipeline.finish()
            for worker in workers { worker?.join() }
        }
        guard !workers.contains(where: { $0 == nil }) else {
            shutDown()
            throw ScriptError(type: "HostError", message: "could not start \(options.jobs) worker threads")
        }
        if let failure = pipeline.waitUntilLoaded() {
            shutDown()
            throw failure
        }
        var reader = LineReader(pipeline: pipeline, input: input, maxLineBytes: options.maxLineBytes)
        reader.readAll()
        shutDown()
        return pipeline.summary
    }
}

/// A run of whole input lines, answered together.
final class Batch {
    /// A line: its bytes in `chunk`, or only its length when it was too long to keep.
    struct Line {
        var number: Int
        var start: Int
        var count: Int
        var oversized: Bool
    }

    let sequence: Int
    let chunk: [UInt8]
    let lines: ArraySlice<Line>
    var output = JSONWriter()
    var counts: [LineStatus: Int] = [:]
    /// With strict: the invalid line after which nothing more is answered.
    var stopLine: Int?

    init(sequence: Int, chunk: [UInt8], lines: ArraySlice<Line>) {
        self.sequence = sequence
        self.chunk = chunk
        self.lines = lines
    }
}

/// The state workers, the reader and the writer share, under one monitor (the queue) plus
/// one for the output.
final class Pipeline: @unchecked Sendable {
    let options: LineDispatcher.Options
    private let outputDescriptor: Int32
    private let queue = Monitor()
    private let writer = Monitor()

    // Guarded by `queue`.
    private var waiting: [Batch] = []
    private var waitingHead = 0
    private var inputDone = false
    private var stopped = false
    private var loaded = 0
    private var loadFailure: ScriptError?
    /// Batches handed in and not yet written, and the input bytes they hold: bounds memory
    /// (long lines would otherwise hold `maxInFlight` megabytes outside any cap).
    private var inFlight = 0
    private var inFlightBytes = 0
    static let maxInFlightBytes = 2 << 20

    // Guarded by `writer`.
    private var finished: [Int: Batch] = [:]
    private var nextToWrite = 0
    private(set) var summary = LineDispatcher.Summary()

    /// Workers: `options.jobs`, at least one.
    let jobs: Int
    var maxInFlight: Int { 4 * jobs + 4 }

    init(options: LineDispatcher.Options, output: Int32) {
        self.options = options
        self.outputDescriptor = output
        self.jobs = max(1, options.jobs)
    }

    // MARK: Workers

    /// One worker: load the rules, then answer batches until the input ends or the run stops.
    func work() {
        let processor: LineProcessor
        do {
            let hierarchy = try Hierarchy(options: options.hierarchy)
            hierarchy.output = options.print
            hierarchy.presenter = nil
            try hierarchy.run(file: options.rulesFile, arguments: options.arguments)
            processor = LineProcessor(hierarchy: hierarchy, inputName: options.inputName, maxLineBytes: options.maxLineBytes)
        } catch let error as ScriptError {
            reportLoaded(error)
            return
        } catch {
            reportLoaded(ScriptError(type: "HostError", message: "\(error)"))
            return
        }
        reportLoaded(nil)
        while let batch = nextBatch() {
            answer(batch, with: processor)
            complete(batch)
        }
    }

    private func answer(_ batch: Batch, with processor: LineProcessor) {
        // The batch's output counts against the worker's memory cap while it is answered (its
        // later lines see it); given back when the batch goes to the writer.
        let held = processor.outputCharge()
        defer { withExtendedLifetime(held) {} }
        batch.chunk.withUnsafeBytes { bytes in
            for line in batch.lines {
                let status: LineStatus
                if line.oversized {
                    processor.refuseOversized(length: line.count, number: line.number, into: &batch.output)
                    status = .invalid
                } else {
                    let text = UnsafeRawBufferPointer(rebasing: bytes[line.start..<line.start + line.count])
                    status = processor.process(text, number: line.number, into: &batch.output, held: held)
                }
                batch.counts[status, default: 0] += 1
                if status == .invalid && options.strict {
                    batch.stopLine = line.number
                    return
                }
            }
        }
    }

    private func reportLoaded(_ failure: ScriptError?) {
        queue.locked {
            loaded += 1
            if let failure, loadFailure == nil { loadFailure = failure }
            queue.broadcast()
        }
    }

    /// Waits until every worker loaded the rules; the first failure, if any.
    func waitUntilLoaded() -> ScriptError? {
        queue.locked {
            while loaded < jobs { queue.wait() }
            return loadFailure
        }
    }

    private func nextBatch() -> Batch? {
        queue.locked {
            while waitingHead == waiting.count && !inputDone && !stopped { queue.wait() }
            if stopped || waitingHead == waiting.count { return nil }
            let batch = waiting[waitingHead]
            waitingHead += 1
            if waitingHead > 64 && waitingHead * 2 > waiting.count {
                waiting.removeFirst(waitingHead)
                waitingHead = 0
            }
            return batch
        }
    }

    // MARK: Reader side

    /// Hands a batch to the workers; waits while too many are in flight. False once the run
    /// has stopped (strict, or output failed).
    func submit(_ batch: Batch) -> Bool {
        queue.locked {
            while (inFlight >= maxInFlight || (inFlight > 0 && inFlightBytes + batch.chunk.count > Self.maxInFlightBytes))
                && !stopped
            {
                queue.wait()
            }
            if stopped { return false }
            inFlight += 1
            inFlightBytes += batch.chunk.count
            waiting.append(batch)
            queue.broadcast()
            return true
        }
    }

    var isStopped: Bool { queue.locked { stopped } }

    /// No more input (or the run is over): idle workers end.
    func finish() {
        queue.locked {
            inputDone = true
            queue.broadcast()
        }
    }

    /// Ends the run on an I/O failure (`ioError` goes into the summary).
    func stop(ioError: String) {
        queue.locked {
            stopped = true
            queue.broadcast()
        }
        writer.locked { if summary.ioError == nil { summary.ioError = ioError } }
    }

    // MARK: Writer side

    /// Files a finished batch and writes every batch that is now next in order.
    private func complete(_ batch: Batch) {
        var written = 0
        var writtenBytes = 0
        var stopNow = false
        writer.locked {
            finished[batch.sequence] = batch
            while let next = finished.removeValue(forKey: nextToWrite) {
                nextToWrite += 1
                written += 1
                writtenBytes += next.chunk.count
                if summary.stoppedAtLine != nil || summary.ioError != nil { continue }
                if let error = writeAll(next.output.bytes) {
                    summary.ioError = error
                    stopNow = true
                    continue
                }
                for (status, count) in next.counts { summary.counts[status, default: 0] += count }
                if let line = next.stopLine {
                    summary.stoppedAtLine = line
                    stopNow = true
                }
            }
        }
        queue.locked {
            inFlight -= written
            inFlightBytes -= writtenBytes
            if stopNow { stopped = true }
            queue.broadcast()
        }
    }

    /// The whole buffer, across short writes and interrupts; a message on failure.
    private func writeAll(_ bytes: [UInt8]) -> String? {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let count = write(outputDescriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if count < 0 {
                    if errno == EINTR { continue }
                    return "cannot write the output: \(String(cString: strerror(errno)))"
                }
                offset += count
            }
            return nil
        }
    }
}
