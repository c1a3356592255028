#if Server
import LuaHierarchy
internal import Prometheus
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A candidate revision running beside the live one (`--shadow`, docs/shadow.md): a sample
/// of live requests, chosen by request id, is answered again by the candidate after the live
/// answer went out, on the candidate's own states in the background (SCHED_IDLE), and the two
/// answers are compared field by field (`OutcomeDifferences`).
///
/// Nothing of it can hold a live request up. The live side takes no lock a thread of the
/// candidate's takes: it counts with atomics and hands the request to a `ShadowIntake`, which
/// only tries its lock. A sampled request that finds the intake busy, or the backlog full, is
/// skipped and counted. The candidate's side keeps its counts in atomics too; only `recent`
/// is under a lock, which readers only try. Its revision is read once, here, not from the
/// candidate's pool, whose lock its threads take. What its threads hand to the decision log
/// and to the log handler goes through a `BackgroundRelay`.
final class Shadow: Sendable {
    let candidate: RulesPool
    /// The candidate's revision (it never reloads), read when it was installed.
    let candidateRevision: Revision
    /// The candidate's rules file, as given.
    let file: String
    /// The folder `file` was checked against, a client's name (`POST /v1/shadow`); nil for a
    /// file the operator or the embedder gave, which loading it again does not check.
    let folder: String?
    /// The fraction of requests sampled, 0...1.
    let sample: Double
    /// When it was loaded (seconds since 1970).
    let since: Double
    private let threshold: UInt64
    private let intake: ShadowIntake
    private let counters: ShadowCounters

    private let sampled = Tally(), compared = Tally(), skipped = Tally(), pending = Tally(), pendingBytes = Tally()
    private let lines = Tally(), same = Tally()
    private let fields = OutcomeDifferences.compared.map { _ in Tally() }
    private let recent = Mutex<[(requestID: String, line: Int, fields: [String])]>([])

    /// Requests and their live answers held for the candidate at most, in bytes: past it, a
    /// sampled request is skipped (the candidate is behind).
    static let maxPendingBytes = 16 << 20
    /// Differences kept for `GET /v1/shadow`'s `recent`.
    static let recentKept = 20

    init(candidate: RulesPool, file: String, within folder: String? = nil, sample: Double, counters: ShadowCounters) {
        self.folder = folder
        self.candidate = candidate
        candidateRevision = candidate.revision
        self.file = file
        self.sample = min(max(sample, 0), 1)
        self.counters = counters
        intake = ShadowIntake(pool: candidate)
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        since = Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
        threshold = self.sample >= 1 ? .max : UInt64(self.sample * 0x1p64)
    }

    /// Takes no more requests; those handed over are answered or refused by the candidate.
    func close() {
        intake.close()
    }

    /// Whether the request of `requestID` is sampled: by a hash of the id, so a request
    /// retried with the same `X-Request-Id` is sampled alike, and server-made ids (random)
    /// sample at random.
    func samples(_ requestID: String) -> Bool {
        if threshold == 0 { return false }
        if threshold == .max { return true }
        // FNV-1a, then a 64-bit finaliser (splitmix64's) to spread short ids over the range.
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in requestID.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        hash = (hash ^ (hash >> 30)) &* 0xbf58_476d_1ce4_e5b9
        hash = (hash ^ (hash >> 27)) &* 0x94d0_49bb_1331_11eb
        hash ^= hash >> 31
        return hash < threshold
    }

    /// Hands a sampled request to the candidate: `body` as the live pool got it (one request,
    /// or a batch's lines), and the live answers in order. Returns at once, having waited on
    /// nothing; the comparison runs on the candidate's states, its differences recorded in
    /// `log`.
    func submit(_ body: [UInt8], batch: Bool, requestID: String, live: [RulesPool.LiveAnswer], liveRevision: Revision, log: DecisionLog?) {
        let bytes = body.count + live.reduce(0) { $0 + $1.json.count }
        sampled.add(1)
        counters.sampled.add(1)
        if pendingBytes.add(bytes) > Self.maxPendingBytes {
            pendingBytes.add(-bytes)
            skip(stopped: false)
            return
        }
        pending.add(1)
        let offer = ShadowIntake.Offer(body: body, batch: batch, requestID: requestID, live: live, liveRevision: liveRevision, log: log) {
            [self] result in
            finish(result, requestID: requestID, bytes: bytes)
        }
        if !intake.offer(offer) {
            pending.add(-1)
            pendingBytes.add(-bytes)
            skip(stopped: false)
        }
    }

    private func skip(stopped: Bool) {
        skipped.add(1)
        (stopped ? counters.skippedStopped : counters.skippedBusy).add(1)
    }

    /// On a thread of the candidate's: what it made of a request, or nil when it did not answer.
    private func finish(_ result: RulesPool.ShadowResult?, requestID: String, bytes: Int) {
        defer {
            pendingBytes.add(-bytes)
            pending.add(-1)
        }
        guard let result else {
            // Its queue was full, or it was stopped (replaced) first.
            skip(stopped: candidate.isShutDown)
            return
        }
        compared.add(1)
        var differing: [(String, Int, [String])] = []
        for (number, differences) in result.lines {
            lines.add(1)
            counters.lines.add(1)
            if differences.isEmpty {
                same.add(1)
                counters.same.add(1)
                continue
            }
            for (index, field) in OutcomeDifferences.compared.enumerated() where differences.contains(field) {
                fields[index].add(1)
                counters.fields[index].add(1)
            }
            differing.append((requestID, number, differences))
        }
        if !differing.isEmpty {
            recent.withLock { recent in
                recent.append(contentsOf: differing.suffix(Self.recentKept))
                if recent.count > Self.recentKept { recent.removeFirst(recent.count - Self.recentKept) }
            }
        }
    }

    /// What `GET /v1/shadow` shows of it. `recent` is read only if its lock is free now (a
    /// thread of the candidate's may hold it while stopped): else it is left out this time.
    func report(live: Revision) -> [String: Value] {
        let revision = candidateRevision
        let count = { (tally: Tally) in Value.int(Int64(tally.value)) }
        let linesCompared = lines.value, linesSame = same.value
        var report: [String: Value] = [
            "active": true,
            "file": .string(file),
            "sample": .double(sample),
            "since": .double(since),
            "revision": .map(["number": .int(Int64(revision.number)), "hash": .string(revision.hash)]),
            "live_revision": .map(["number": .int(Int64(live.number)), "hash": .string(live.hash)]),
            "requests": .map([
                "sampled": count(sampled), "compared": count(compared), "skipped": count(skipped), "pending": count(pending),
            ]),
            "lines": .map([
                "compared": .int(Int64(linesCompared)), "same": .int(Int64(linesSame)),
                "different": .int(Int64(linesCompared - linesSame)),
            ]),
            "differences": .map(Dictionary(uniqueKeysWithValues: OutcomeDifferences.compared.enumerated().map {
                ($0.element, count(fields[$0.offset]))
            })),
        ]
        if let recent = recent.withLockIfAvailable({ $0 }) {
            report["recent"] = .array(recent.map {
                .map(["request_id": .string($0.requestID), "line": .int(Int64($0.line)), "differences": .array($0.fields.map { .string($0) })])
            })
        }
        return report
    }
}

/// The shadow's counts as `/metrics` shows them, kept across candidates (a new candidate
/// starts its own counts in `GET /v1/shadow`; these go on growing). Atomics, counted by both
/// sides without a lock, and copied into the Prometheus counters when the metrics are read:
/// `luahier_shadow_sampled_total`, `luahier_shadow_skipped_total{reason}` (`busy`: the
/// candidate was behind; `stopped`: it was replaced or stopped first),
/// `luahier_shadow_lines_total{result}` (`same`, `different`), and
/// `luahier_shadow_differences_total{field}` (a line counts once in each field that differs).
final class ShadowCounters: Sendable {
    let sampled = Tally(), skippedBusy = Tally(), skippedStopped = Tally(), lines = Tally(), same = Tally()
    let fields = OutcomeDifferences.compared.map { _ in Tally() }

    private let shownSampled: Counter
    private let shownSkipped: [Counter]
    private let shownLines: [Counter]
    private let shownFields: [Counter]
    /// The values as last shown (sampled, busy, stopped, same, different, then the fields):
    /// the counters grow by the difference.
    private let shown = Mutex([Int](repeating: 0, count: 5 + OutcomeDifferences.compared.count))

    init(registry: PrometheusCollectorRegistry) {
        shownSampled = registry.makeCounter(descriptor: .named("luahier_shadow_sampled_total", "Requests sampled for the shadow revision."))
        shownSkipped = ["busy", "stopped"].map { reason in
            registry.makeCounter(
                descriptor: .named("luahier_shadow_skipped_total", "Sampled requests the shadow revision did not answer: it was behind, or stopped."),
                labels: [("reason", reason)])
        }
        shownLines = ["same", "different"].map { result in
            registry.makeCounter(
                descriptor: .named("luahier_shadow_lines_total", "Request lines the shadow revision answered, by whether its outcome was the live one's."),
                labels: [("result", result)])
        }
        shownFields = OutcomeDifferences.compared.map { field in
            registry.makeCounter(
                descriptor: .named("luahier_shadow_differences_total", "Request lines whose shadow outcome differs from the live one, by field."),
                labels: [("field", field)])
        }
    }

    /// Brings the Prometheus counters up to the atomics (when `/metrics` is read).
    func update() {
        let lines = self.lines.value, same = self.same.value
        let now = [
            sampled.value, skippedBusy.value, skippedStopped.value,
            same, lines - same,
        ] + fields.indices.map { fields[$0].value }
        let before = shown.withLock { shown in defer { shown = now }; return shown }
        let targets = [shownSampled] + shownSkipped + shownLines + shownFields
        for (index, counter) in targets.enumerated() { counter.increment(by: Int64(now[index] - before[index])) }
    }
}

/// A count both sides keep without a lock.
final class Tally: Sendable {
    private let atomic = Atomic(0)

    /// Adds `amount` (negative: takes it away); the new value.
    @discardableResult
    func add(_ amount: Int) -> Int {
        atomic.add(amount, ordering: .relaxed).newValue
    }

    var value: Int { atomic.load(ordering: .relaxed) }
}
#endif
