#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A pool of Lua states loaded from one rules file: the rules engine for many threads and
/// tasks (contract §7, §9). `luahier dispatch` and `luahier serve` both run on it.
///
/// Each state has its own thread and answers one request at a time; a request waits for a
/// free state, bounded in number (`maxWaiting`) and in time (`maxWait`), and is refused
/// `overloaded` past either. Limits apply per request, as for `dispatch` lines. Requests are
/// `dispatch` lines (`{"id", "at", "event" | "error"}`) and answers are its outcome lines,
/// each carrying the `revision` that answered it.
///
/// `reload()` loads the rules file again into new states while the running ones answer;
/// only once every new state loaded does the pool swap them in, in one step: a request is
/// answered by the revision it was queued to, old or new, whole. The old states answer what
/// was queued to them, then close. A rules file that fails to load leaves the running
/// revision answering, and `lastReloadFailure` says why.
///
/// ```swift
/// let pool = try RulesPool(options: .init(rulesFile: "rules.lua", workers: 4))
/// let answer = try await pool.dispatch(#"{"at": "/app/feed", "event": "Tap"}"#)
/// print(answer.status, answer.revision.number, answer.text)
/// ```
public final class RulesPool: @unchecked Sendable {
    /// What a pool loads, on how many states, and how it answers and bounds requests.
    public struct Options: Sendable {
        /// The rules script each state runs once when its revision loads; with `rulesSource`,
        /// the name its chunk has (`rules.lua:3` in messages), and no file is read.
        public var rulesFile: String
        /// The rules as text, in place of reading `rulesFile` (a reload loads this same text,
        /// and modules it requires afresh).
        public var rulesSource: String?
        /// Runs on every state of every revision (reloads included), before its rules load:
        /// Swift responders, subscriptions and host functions (`Hierarchy.register(function:)`)
        /// registered here are on every state, and the rules may call those functions as they
        /// load. An error it throws fails the load (the first revision's, or a reload's).
        public var setup: (@Sendable (Hierarchy) throws -> Void)?
        /// `arg` and `...` for the rules script.
        public var arguments: [String] = []
        /// Sandbox, limits and trace level for every state.
        public var hierarchy = Hierarchy.Options()
        /// States, each with its own thread.
        public var workers = 1
        /// Longer request lines are answered `LineTooLong`.
        public var maxLineBytes = 1 << 20
        /// How `where` names a request line (`request:1`).
        public var inputName = "request"
        /// Outcomes carry `"revision":{"number","hash"}`.
        public var stampsRevision = true
        /// Each answer names its handling responder by its key (`Answer.responderKey`, and the
        /// key handed beside each outcome of `dispatchBatch(_:requestID:deliverKeyed:)`): a
        /// responder identity that survives lines moving in the rules (`ResponderKey`), for a
        /// decision log. The outcome lines themselves are the same either way.
        public var responderKeys = false
        /// Requests that may wait while every state is busy; more are refused `overloaded`.
        public var maxWaiting = 1024
        /// Seconds a request may wait for a state before it is refused `overloaded`.
        public var maxWait = 10.0
        /// Seconds a batch (`dispatchBatch`) may take (nil: no bound): no line of it begins
        /// after that; each line left is answered `invalid` (`BatchTimeLimitExceeded`) without
        /// running. A line under way goes on within its own limits, so a batch ends within
        /// this and one dispatch's time.
        public var batchTime: Double? = 30
        /// Where the rules' `print` goes, from the states' threads. Nil (the default): to
        /// `hierarchy.logger`, at `info`, as a `Hierarchy` prints.
        public var print: (@Sendable (String) -> Void)?
        /// Where the rules' `print` goes, with the id of the request being answered (the
        /// `requestID` given to `dispatch` or `dispatchBatch`; nil when none was, and while the
        /// rules load). Takes the place of `print` when set.
        public var printForRequest: (@Sendable (_ line: String, _ requestID: String?) -> Void)?
        /// Where each answered request is recorded (`dispatch`, `dispatchBatch`: one decision
        /// record per request line; nil: nowhere). The log never holds answering up.
        public var decisionLog: DecisionLog?
        /// The states' threads run only on a CPU nothing else wants (SCHED_IDLE, on Linux): for
        /// work that must never take the CPU from the requests of others, as a shadow
        /// revision's.
        package var background = false
        /// What a candidate's (`background`) states hand to what the live threads share goes
        /// through this relay, closed when the pool shuts down.
        package var relay: BackgroundRelay?
        /// Errors that pass the root while the first revision loads (a rule that reports at
        /// load time), from its first state only.
        public var presentWhileLoading: (@Sendable (PresentedError) -> Void)?

        /// Options for the rules in `rulesFile`, on `workers` states.
        public init(rulesFile: String, workers: Int = 1) {
            self.rulesFile = rulesFile
            self.workers = workers
        }

        /// Options for rules given as text, named `name` in messages, on `workers` states.
        public init(rulesSource: String, name: String = "rules.lua", workers: Int = 1) {
            self.rulesFile = name
            self.rulesSource = rulesSource
            self.workers = workers
        }

        /// Options for the rules of `bundle` (read and checked by
        /// ``RuleBundle/init(bytes:publicKey:maxBytes:)``), on `workers` states: `rulesFile` is
        /// its entry, and `require` finds the bundle's modules only, never a file on disk.
        /// Its revision hash is the bundle's `revisionHash`. Needs the sandbox.
        public init(bundle: RuleBundle, workers: Int = 1) {
            self.rulesFile = bundle.entry
            self.bundle = bundle
            self.workers = workers
        }

        /// The bundle the rules come from (`init(bundle:workers:)`), if they do.
        public private(set) var bundle: RuleBundle?

        /// These options with the rules of `text`, under the same name, in place of those they
        /// had (a bundle's, a file's or a text's).
        func replacing(source text: String) -> Options {
            var options = self
            options.bundle = nil
            options.rulesSource = text
            return options
        }

        /// These options with the rules of `bundle` in place of those they had.
        func replacing(bundle: RuleBundle) -> Options {
            var options = self
            options.bundle = bundle
            options.rulesFile = bundle.entry
            options.rulesSource = nil
            return options
        }

        /// The rules' text: the bundle's, `rulesSource`, or the file, read as a rules file is.
        func rulesText() -> Result<[UInt8], ScriptError> {
            if let bundle { return .success(bundle.rulesText) }
            if let rulesSource { return .success(Array(rulesSource.utf8)) }
            return readRulesFile(rulesFile, limit: hierarchy.limits.memory)
        }
    }

    /// Why a request was not answered.
    public enum Refusal: Error, Sendable, Equatable {
        /// Every state was busy and `maxWaiting` requests waited, or it waited `maxWait`.
        case overloaded
        /// The pool was shut down.
        case shutDown
    }

    /// One answered request.
    public struct Answer: Sendable {
        /// What became of the request.
        public let status: LineStatus
        /// The outcome, one JSON object (no newline).
        public let json: [UInt8]
        /// The revision that answered it.
        public let revision: Revision
        /// How long it took on its state (read, run and written), the wait for a free state
        /// not counted.
        public var evaluation: Duration = .zero
        /// With `Options.responderKeys`: the handling responder's key (`FILE#NODEPATH#N`,
        /// `ResponderKey`); nil when no responder handled it, or keys were not asked for.
        public var responderKey: String?
        /// How its rules failed (empty when none did), whether or not a responder caught the
        /// failure: a raise, a broken contract, a limit.
        public var ruleFailures: RuleFailures = []

        /// The outcome as a string.
        public var text: String { String(decoding: json, as: UTF8.self) }
        /// The outcome as plain data.
        public var value: Value { json.withUnsafeBytes { try? JSON.parse($0) } ?? .null }
    }

    /// What a batch's lines came to.
    public struct BatchSummary: Sendable {
        /// Lines answered, by status.
        public var counts: [LineStatus: Int] = [:]
        /// The revision that answered every line of the batch.
        public let revision: Revision
        /// `deliver` refused an answer: the lines after it were not answered.
        public var stoppedEarly = false
        /// The batch's time budget (`Options.batchTime`) ran out before its last line began.
        public var outOfTime = false
        /// How long the whole batch took on its state, the wait for a free state not counted.
        public var evaluation: Duration = .zero
        /// Lines whose rules failed, by the error type the host made of it
        /// (`RuleFailures.errorTypes`): a line counts once under each type it failed with.
        public var ruleFailures: [String: Int] = [:]
    }

    /// The options the pool was made with.
    public let options: Options
    private let monitor = Monitor()
    /// What a reload loads: `options`, with the rules of the last bundle loaded, if any
    /// (guarded by `monitor`).
    private var source: Options
    // Guarded by `monitor`.
    private var current: Generation
    private var closed = false
    private var reloading = false
    private var failure: ReloadFailure?
    private var counts = Statistics()

    /// What the pool did so far (for metrics).
    public struct Statistics: Sendable {
        /// Reloads that loaded a new revision, found nothing changed, or failed.
        public var reloads = 0, unchangedReloads = 0, failedReloads = 0
        /// Requests that waited for a state, and those refused `overloaded`.
        public var waits = 0, overloaded = 0

        /// All counts zero.
        public init() {}
    }

    /// Loads the first revision into `options.workers` states; throws the rules' error
    /// (`rules.lua:3: ...`) if they fail to load.
    public init(options: Options) throws(ScriptError) {
        self.options = options
        source = options
        let stamp = FileStamp(path: options.rulesFile)
        let text = try options.rulesText().get()
        current = try Generation(options: options, text: text, stamp: stamp, number: 1)
    }

    deinit {
        current.retire()
        current.detach()
    }

    /// The revision answering new requests.
    public var revision: Revision { monitor.locked { current.revision } }

    /// Whether the pool was shut down (it answers no more requests).
    package var isShutDown: Bool { monitor.locked { closed } }

    /// The running revision's files as they were when it read them (RulesWatcher).
    var loadedStamps: [String: FileStamp] { monitor.locked { current.stamps } }

    /// Why the last reload failed, if it did (cleared by the next one that loads).
    public var lastReloadFailure: ReloadFailure? { monitor.locked { failure } }

    /// What the pool did so far: reloads, waits and refusals.
    public var statistics: Statistics { monitor.locked { counts } }

    /// States in the running revision.
    public var workers: Int { monitor.locked { current.size } }

    /// Requests waiting for a state.
    public var waiting: Int { monitor.locked { current }.waiting }

    /// How busy the running revision's states are, read in one step.
    public struct Load: Sendable, Equatable {
        /// States in the revision, and those free (waiting for a request).
        public var workers: Int, idle: Int
        /// Requests queued for a state.
        public var waiting: Int
        /// Seconds every state has been busy with none coming free since; nil while one is
        /// free.
        public var allBusyFor: Double?

        /// A load of these counts (the pool makes them; tests and embedders may too).
        public init(workers: Int, idle: Int, waiting: Int, allBusyFor: Double?) {
            (self.workers, self.idle, self.waiting, self.allBusyFor) = (workers, idle, waiting, allBusyFor)
        }
    }

    /// The running revision's load now.
    public var load: Load { monitor.locked { current }.load }

    /// Whether a request made now would be refused `overloaded`, by the pool's own state: no
    /// state is free and `maxWaiting` requests already wait (refused at once), or every state
    /// has been busy, none coming free, for `maxWait` or longer (a request queued as they all
    /// became busy would have been refused by now). A reload that swapped in fresh states
    /// ends it.
    public var isOverloaded: Bool {
        let load = self.load
        if load.idle == 0 && load.waiting >= options.maxWaiting { return true }
        return (load.allBusyFor ?? 0) >= options.maxWait
    }

    // MARK: Requests

    /// Answers one request (a JSON object, as a `dispatch` line) on a free state. A request
    /// that is not valid gets an `invalid` answer, as a line does; limits that trip fail only
    /// this request.
    /// `requestID` names the request to the rules' `print` (`Options.printForRequest`).
    public func dispatch(_ request: [UInt8], requestID: String? = nil) async throws(Refusal) -> Answer {
        // Admitted always: the answer is there.
        try await dispatch(request, requestID: requestID, admit: nil)!
    }

    /// `dispatch`, asking `admit` on the state, before any rule runs, whether the request may
    /// still run: nil when it may not (`serve` refuses requests while the answers its clients
    /// left unread hold their budget, and a request may have waited for its state meanwhile).
    package func dispatch(
        _ request: [UInt8], requestID: String?, admit: (@Sendable () -> Bool)?
    ) async throws(Refusal) -> Answer? {
        try await onFreeState { worker in
            if let admit, !admit() { return nil }
            worker.request.id = requestID
            defer { worker.request.id = nil }
            let started = ContinuousClock.now
            var json: [UInt8] = []
            var key: String?
            var failures: RuleFailures = []
            let held = worker.processor.outputCharge()
            let answered = request.withUnsafeBytes { bytes in
                worker.answer(bytes, lines: [Self.line(count: bytes.count, limit: self.options.maxLineBytes)], held: held, numbered: false) { answer, _, failed in
                    json = Array(answer.dropLast())   // the newline
                    key = worker.processor.keys?.key
                    failures = failed
                    return true
                }
            }
            return Answer(
                status: answered.last ?? .invalid, json: json, revision: worker.generation.revision,
                evaluation: ContinuousClock.now - started, responderKey: key, ruleFailures: failures)
        }
    }

    /// Triggers `event` at the node at `path` on a free state of the running revision (contract
    /// §5) and returns its outcome, stamped with the revision that answered it. Throws
    /// `Refusal` when no state came free in time, or `DispatchError` when there is no node
    /// at `path`.
    public func trigger(_ event: Value, at path: String) async throws -> Outcome {
        try await dispatch(event, as: .event, at: path)
    }

    /// Reports `error` at the node at `path`, as `trigger` does.
    public func report(_ error: Value, at path: String) async throws -> Outcome {
        try await dispatch(error, as: .error, at: path)
    }

    private func dispatch(_ value: Value, as domain: Domain, at path: String) async throws -> Outcome {
        let result: Result<Outcome, any Error> = try await onFreeState { worker in
            let hierarchy = worker.processor.hierarchy
            return Result { () throws -> Outcome in
                guard let node = try hierarchy.node(at: path) else { throw DispatchError.noSuchNode(path) }
                var outcome = domain == .event ? try hierarchy.trigger(value, at: node) : try hierarchy.report(value, at: node)
                outcome.revision = worker.generation.revision
                return outcome
            }
        }
        return try result.get()
    }

    /// Why a `trigger` or `report` of the pool was not dispatched.
    public enum DispatchError: Error, Sendable, Equatable, CustomStringConvertible {
        /// No node is at that path in the rules' tree.
        case noSuchNode(String)

        /// `no node at /path`.
        public var description: String {
            switch self {
            case .noSuchNode(let path): "no node at \(path)"
            }
        }
    }

    /// Answers one request given as text.
    public func dispatch(_ request: String) async throws(Refusal) -> Answer {
        try await dispatch(Array(request.utf8))
    }

    /// Answers the JSON lines of `body` in order on one state, so one revision answers them
    /// all; each outcome line (with its newline) goes to `deliver` as it is written, from the
    /// state's thread. Blank lines are skipped; `line` counts from 1. `deliver` returns false
    /// when no one wants more answers (the client went away): the batch stops there.
    /// `requestID` names the batch to the rules' `print` (`Options.printForRequest`).
    public func dispatchBatch(
        _ body: [UInt8], requestID: String? = nil, deliver: @escaping @Sendable (UnsafeRawBufferPointer) -> Bool
    ) async throws(Refusal) -> BatchSummary {
        try await dispatchBatch(body, requestID: requestID) { answer, _ in deliver(answer) }
    }

    /// `dispatchBatch`, each outcome line handed over with its handling responder's key (nil
    /// when none handled it, or without `Options.responderKeys`).
    public func dispatchBatch(
        _ body: [UInt8], requestID: String? = nil,
        deliverKeyed deliver: @escaping @Sendable (UnsafeRawBufferPointer, _ responderKey: String?) -> Bool
    ) async throws(Refusal) -> BatchSummary {
        var cutter = LineCutter(maxLineBytes: options.maxLineBytes)
        let lines = cutter.cut(body)
        return try await onFreeState { worker in
            worker.request.id = requestID
            defer { worker.request.id = nil }
            let started = ContinuousClock.now
            let held = worker.processor.outputCharge()
            var failed: [String: Int] = [:]
            let answered = body.withUnsafeBytes { bytes in
                worker.answer(bytes, lines: lines, held: held, timeBudget: self.options.batchTime) { answer, _, failures in
                    for type in failures.types { failed[type, default: 0] += 1 }
                    return deliver(answer, worker.processor.keys?.key)
                }
            }
            var summary = BatchSummary(revision: worker.generation.revision, stoppedEarly: answered.cancelled, outOfTime: answered.expiredFrom != nil)
            summary.ruleFailures = failed
            for status in LineStatus.allCases where answered.counts[status.index] > 0 {
                summary.counts[status] = answered.counts[status.index]
            }
            summary.evaluation = ContinuousClock.now - started
            return summary
        }
    }

    /// Runs `work` on a free state of the running revision and returns what it returned;
    /// refused `overloaded` when none came free within `maxWait` (or too many waited).
    func onFreeState<T: Sendable>(_ work: @escaping (PoolWorker) -> T) async throws(Refusal) -> T {
        // Resumed once: the job runs or is refused, never both (`PoolJob.taken`), and a job
        // that was not queued is neither. Unchecked: a checked continuation is one more
        // allocation on every request's way to a state and back.
        let result: Result<T, Refusal> = await withUnsafeContinuation { continuation in
            let job = PoolJob(maxWait: options.maxWait, work: { worker in
                continuation.resume(returning: .success(work(worker)))
            }, refused: { [self] in
                monitor.locked { counts.overloaded += 1 }
                continuation.resume(returning: .failure(.overloaded))
            })
            if let refusal = submit(job) { continuation.resume(returning: .failure(refusal)) }
        }
        return try result.get()
    }

    /// The outcome a request gets when it is refused before any state sees it (a body over
    /// the server's limit, an overloaded pool): `status` `invalid`, an error of `type` with
    /// `message`, where `where` says, and the running revision when outcomes carry it. One
    /// JSON object, no newline.
    public func refusal(type: String, message: String, where place: String) -> [UInt8] {
        var output = JSONWriter()
        let invalid = LineProcessor.InvalidLine(id: nil, type: type, message: message, column: nil)
        LineProcessor.write(invalid, number: 1, where: place, into: &output)
        let stamp = monitor.locked { current }.stamp
        var refusal: [UInt8] = []
        output.bytes.withUnsafeBytes { PoolWorker.splice($0, stamp: stamp, numbered: false, into: &refusal) }
        return Array(refusal.dropLast())
    }

    /// One request as a line of its own text.
    static func line(count: Int, limit: Int) -> LuaEngine.RunLine {
        LuaEngine.RunLine(number: 1, start: 0, count: count, oversized: count > limit)
    }

    /// Queues `job` to the running revision; the refusal if it was not queued.
    func submit(_ job: PoolJob) -> Refusal? {
        while true {
            let (generation, isClosed) = monitor.locked { (current, closed) }
            if isClosed { return .shutDown }
            switch generation.enqueue(job, maxWaiting: options.maxWaiting) {
            case .started: return nil
            case .waiting:
                monitor.locked { counts.waits += 1 }
                return nil
            case .overloaded:
                monitor.locked { counts.overloaded += 1 }
                return .overloaded
            case .retired: continue   // swapped out meanwhile: the next one takes it
            }
        }
    }

    /// For `dispatch`: runs `work` on a state of the running revision, with no wait bound.
    /// False once the pool is shut down.
    func run(_ work: @escaping (PoolWorker) -> Void) -> Bool {
        while true {
            let (generation, isClosed) = monitor.locked { (current, closed) }
            if isClosed { return false }
            if generation.enqueue(PoolJob(work: work), maxWaiting: .max) != .retired { return true }
        }
    }

    // MARK: Reloading

    /// `reload()`, blocking the calling thread while the states load (for threads of the
    /// host's own: the watcher's; call it off the states' threads).
    @discardableResult
    package func reloadBlocking(bundle: RuleBundle? = nil) -> ReloadResult {
        let options: Options = monitor.locked {
            while reloading { monitor.wait() }
            reloading = true
            return bundle.map { source.replacing(bundle: $0) } ?? source
        }
        defer {
            monitor.locked {
                reloading = false
                monitor.broadcast()
            }
        }
        let running = revision
        let loaded: Generation
        do {
            let stamp = FileStamp(path: options.rulesFile)
            let text = try options.rulesText().get()
            loaded = try Generation(options: options, text: text, stamp: stamp, number: running.number + 1)
        } catch {
            monitor.locked {
                failure = ReloadFailure(error: error, at: Monitor.now)
                counts.failedReloads += 1
            }
            return .failed(running: running, message: error.description)
        }
        if loaded.revision.hash == running.hash {
            loaded.retire()
            loaded.join()
            monitor.locked {
                failure = nil
                counts.unchangedReloads += 1
            }
            return .unchanged(running)
        }
        let retiring: Generation? = monitor.locked {
            if closed { return nil }
            let old = current
            current = loaded
            source = options
            failure = nil
            counts.reloads += 1
            return old
        }
        guard let retiring else {
            loaded.retire()
            loaded.join()
            return .failed(running: running, message: "the pool was shut down")
        }
        retiring.retire()
        retiring.join()
        return .loaded(loaded.revision)
    }

    /// Loads the rules again into new states while the running ones answer, and swaps them in
    /// once all loaded; the running revision goes on if they fail to load or did not change.
    /// Reloads asked for while one runs wait for it, then run. The loading runs on a thread of
    /// its own, off the caller's task.
    public func reload() async -> ReloadResult {
        await reload(with: nil)
    }

    /// `reload()` with the rules of `bundle` (read and checked: `RuleBundle(bytes:publicKey:)`)
    /// in place of those the pool had; later reloads load this bundle again. For rules pulled
    /// from elsewhere (`luahier serve --bundle-url`): every guarantee of a reload holds.
    public func reload(bundle: RuleBundle) async -> ReloadResult {
        await reload(with: bundle)
    }

    private func reload(with bundle: RuleBundle?) async -> ReloadResult {
        await withCheckedContinuation { continuation in
            if !LargeStack.detached(size: 256 << 10, { continuation.resume(returning: self.reloadBlocking(bundle: bundle)) }) {
                continuation.resume(returning: .failed(running: revision, message: "could not start a thread to reload"))
            }
        }
    }

    // MARK: Shutting down

    /// `shutDown()`, blocking the calling thread until every state is closed.
    package func shutDownBlocking() {
        let generation: Generation = monitor.locked {
            closed = true
            return current
        }
        generation.retire()
        generation.join()
        options.relay?.close()
    }

    /// Refuses new requests, answers those queued, then closes every state and returns. The
    /// waiting runs on a thread of its own, off the caller's task.
    public func shutDown() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            if !LargeStack.detached(size: 256 << 10, { self.shutDownBlocking(); continuation.resume() }) {
                shutDownBlocking()
                continuation.resume()
            }
        }
    }
}
