public import Logging
import Synchronization

/// Where every answered request is recorded, one decision record each (NDJSON, format `v` 1:
/// `time`, `request_id`, `source`, `revision`, `line`, `request`, `outcome`, `evaluation_ms`;
/// docs/decision-log.md), for audits and for replaying against other rules.
///
/// Records are made on the thread that answered, from bytes already at hand (the request as
/// it came, the outcome as it was answered), and go into a buffer of `bufferBytes`; a thread
/// of the log's own hands them to its `sink`. Answering never waits for the log: when the
/// buffer is full (a slow or failing sink), a record is dropped and counted.
///
/// ```swift
/// let sink = try DecisionFileSink(path: "decisions.ndjson")
/// var options = RulesPool.Options(rulesFile: "rules.lua")
/// options.decisionLog = DecisionLog(sink: sink, mask: ["/request/event/user/email"])
/// ```
public final class DecisionLog: @unchecked Sendable {
    /// What the log did so far (for metrics).
    public struct Statistics: Sendable, Equatable {
        /// Records the sink took.
        public var logged = 0
        /// Records dropped because the buffer was full.
        public var droppedBufferFull = 0
        /// Records dropped because the sink failed to take them.
        public var droppedSinkFailed = 0
        /// A shadow revision's records dropped because the buffer was a quarter full: they
        /// never take room the live revision's records need.
        public var droppedShadowShare = 0

        /// All counts zero.
        public init() {}
    }

    /// `serve`, `dispatch` or `pool`: the record's `source`.
    public let source: String
    /// The JSON pointers masked in every record (RFC 6901, into the record).
    public let mask: [String]
    /// Where the records go.
    public let sink: any DecisionSink
    private let bufferBytes: Int
    private let pointers: [[String]]
    /// Whether a pointer reaches into the request: then a request that is not JSON, whose
    /// fields cannot be found, keeps no text (`request_text` is `"<masked>"`).
    let masksRequest: Bool
    /// `pointers` into the answer (`/outcome/...`) moved under `/live`, for a shadow record's
    /// live side: the live outcome in it is masked as the live revision's own records are.
    private let livePointers: [[String]]
    private let logger: Logger
    /// `,"source":"..."` as records carry it.
    let sourceMember: [UInt8]

    private let monitor = Monitor()
    /// Shadow records a full `BackgroundRelay` refused: counted without the lock.
    private let relayRefused = Atomic<Int>(0)
    // Guarded by `monitor`.
    private var pending: [[UInt8]] = []
    private var pendingBytes = 0
    /// Records taken by the log's thread and not yet handed to the sink.
    private var inHand = 0
    /// Whether `close(timeout:)` counted the records in hand as dropped, its sink too slow:
    /// the write, if it ever ends, counts them no more.
    private var inHandDropped = false
    private var counts = Statistics()
    private var closing = false
    private var thread: LargeStack.Joinable?

    /// A log handing records to `sink` from a thread of its own, holding at most
    /// `bufferBytes` of records meanwhile. `mask`: JSON pointers into the record
    /// (`/request/event/user/email`) whose values are written as `"<masked>"`. `source`
    /// names who answered (`pool` for an embedder's pool). The sink's failures are logged
    /// to `logger` at `warning`.
    public init(
        sink: any DecisionSink, bufferBytes: Int = 8 << 20, mask: [String] = [], source: String = "pool",
        logger: Logger = Logger(label: "LuaHierarchy", factory: { _ in SwiftLogNoOpLogHandler() })
    ) {
        self.sink = sink
        self.bufferBytes = max(bufferBytes, 1)
        self.mask = mask
        self.pointers = mask.map(JSONPointer.tokens)
        self.masksRequest = pointers.contains { $0.first == "request" }
        self.livePointers = pointers.filter { ["outcome", "responder_key", "revision"].contains($0.first) }.map { ["live"] + $0 }
        self.source = source
        self.logger = logger
        var member = JSONWriter()
        member.writeKey("source")
        member.writeString(source)
        self.sourceMember = member.bytes
        thread = LargeStack.spawn(size: 256 << 10) { [self] in drain() }
    }

    deinit {
        close()
    }

    /// What the log did so far: records logged and dropped.
    public var statistics: Statistics {
        var statistics = monitor.locked { counts }
        statistics.droppedShadowShare += relayRefused.load(ordering: .relaxed)
        return statistics
    }

    /// Records made and not yet handed to the sink (in the buffer, or in the log's hands).
    public var backlog: Int { monitor.locked { pending.count + inHand } }

    /// Takes `record` (one JSON object and its newline) if the buffer has room; drops and
    /// counts it otherwise. Never waits for the sink.
    func submit(_ record: [UInt8], shadow: Bool = false) {
        monitor.locked {
            // A shadow record goes only into the first quarter of the buffer: a candidate whose
            // answers are large or differ often cannot crowd out the live revision's records
            // (a second attack's find: 23 of 30 live records dropped behind a slow sink).
            if shadow && !closing && pendingBytes + record.count > bufferBytes / 4 {
                counts.droppedShadowShare += 1
                return
            }
            if closing || pendingBytes + record.count > bufferBytes {
                counts.droppedBufferFull += 1
                return
            }
            if pending.isEmpty { monitor.broadcast() }
            pending.append(record)
            pendingBytes += record.count
        }
    }

    /// `submit` for a shadow record (`DecisionRecorder.Comparison`): the masks that reach into
    /// an answer are applied to its live side too, here, on the candidate's thread. With
    /// `relay`, the record is taken into the buffer on the relay's thread: a candidate's thread
    /// never holds the lock the live threads' records take (`BackgroundRelay`). A record the
    /// full relay refuses is counted as one past the shadow's share.
    func submitShadow(_ record: [UInt8], relay: BackgroundRelay? = nil) {
        let masked = livePointers.isEmpty ? record : JSONPointer.mask(record, at: livePointers)
        guard let relay else { return submit(masked, shadow: true) }
        if !relay.send({ [self] in submit(masked, shadow: true) }) { relayRefused.add(1, ordering: .relaxed) }
    }

    /// Hands every record still buffered to the sink, closes it, and ends the log's thread;
    /// records made after it are dropped. Blocks the calling thread until then, or for at most
    /// `timeout` seconds: past it, the records still buffered and those of a write under way
    /// are dropped (counted as the sink's failure, and logged), and the write is left to the
    /// process's end (a receiver that is down cannot hold a shutdown up).
    public func close(timeout: Double? = nil) {
        let running: LargeStack.Joinable? = monitor.locked {
            closing = true
            monitor.broadcast()
            defer { thread = nil }
            return thread
        }
        guard let running else { return }
        if let timeout {
            let deadline = Monitor.now + timeout
            let abandoned: Int = monitor.locked {
                while !(pending.isEmpty && inHand == 0) {
                    if Monitor.now >= deadline {
                        let count = pending.count + inHand
                        counts.droppedSinkFailed += count
                        inHandDropped = inHand > 0
                        pending = []
                        pendingBytes = 0
                        return count
                    }
                    monitor.wait(until: min(deadline, Monitor.now + 0.05))
                }
                return 0
            }
            if abandoned > 0 || backlog > 0 {
                logger.warning("decision log: \(abandoned) records dropped: the sink did not take them within \(timeout) s of closing")
                return
            }
        }
        running.join()
        sink.close()
    }

    /// Waits until every record made so far was handed to the sink (or dropped), at most
    /// `timeout` seconds; whether it was.
    @discardableResult
    public func flush(timeout: Double = 10) -> Bool {
        let deadline = Monitor.now + timeout
        return monitor.locked {
            while !(pending.isEmpty && inHand == 0) {
                if Monitor.now >= deadline { return false }
                monitor.wait(until: min(deadline, Monitor.now + 0.01))
            }
            return true
        }
    }

    /// The log's thread: takes what the sink's batching asks for, masks it, hands it over.
    private func drain() {
        let limit = sink.batching
        while true {
            let taken: [[UInt8]]? = monitor.locked {
                var since: Double?
                while true {
                    if pending.isEmpty {
                        if closing { return nil }
                        since = nil
                        monitor.wait()
                        continue
                    }
                    let first = since ?? Monitor.now
                    since = first
                    let full = pending.count >= limit.records || pendingBytes >= limit.bytes
                    let waited = Monitor.now - first >= limit.interval
                    if full || waited || closing { break }
                    monitor.wait(until: first + limit.interval)
                }
                var count = 0, bytes = 0
                while count < pending.count && count < limit.records && (count == 0 || bytes + pending[count].count <= limit.bytes) {
                    bytes += pending[count].count
                    count += 1
                }
                var batch: [[UInt8]] = []
                if count == pending.count {
                    // All of it (the usual case): the buffer is handed over, not copied.
                    swap(&batch, &pending)
                    pending.reserveCapacity(batch.count)
                } else {
                    batch = Array(pending[..<count])
                    pending.removeFirst(count)
                }
                pendingBytes -= bytes
                inHand = count
                return batch
            }
            guard var records = taken else { return }
            if !pointers.isEmpty {
                records = records.map { JSONPointer.mask($0, at: pointers) }
            }
            var failed = false
            do {
                try sink.write(records)
            } catch {
                failed = true
                logger.warning("decision log: \(records.count) records dropped: \(error)")
            }
            monitor.locked {
                if inHandDropped {
                    inHandDropped = false
                } else if failed {
                    counts.droppedSinkFailed += records.count
                } else {
                    counts.logged += records.count
                }
                inHand = 0
                monitor.broadcast()
            }
        }
    }
}

/// Where a `DecisionLog` writes its records: a file (`DecisionFileSink`), an HTTP receiver,
/// or an embedder's own.
public protocol DecisionSink: AnyObject, Sendable {
    /// How many records the log gathers before it hands them over.
    var batching: DecisionBatching { get }
    /// Takes `records` (each one JSON object and its newline), in order, on the log's own
    /// thread: it may block. A throw drops them, counted as the sink's failure.
    func write(_ records: [[UInt8]]) throws
    /// No more records come: write what is held, and let go of files and connections.
    func close()
}

/// How many records a `DecisionLog` gathers before it hands them to its sink: it hands them
/// over once `records` or `bytes` are reached, or `interval` seconds after the first came.
public struct DecisionBatching: Sendable, Equatable {
    /// Records at most in one hand-over.
    public var records: Int
    /// Bytes in one hand-over, at most (a larger record goes alone).
    public var bytes: Int
    /// Seconds the first record of a hand-over may wait for others (0: none).
    public var interval: Double

    /// A batching of at most `records` records and `bytes` bytes, gathered for `interval` s.
    public init(records: Int, bytes: Int, interval: Double) {
        (self.records, self.bytes, self.interval) = (max(records, 1), max(bytes, 1), max(interval, 0))
    }

    /// What there is, at once: for a file.
    public static let immediate = DecisionBatching(records: 4096, bytes: 1 << 20, interval: 0)
}
