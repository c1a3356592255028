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
/// answer went out, on the candidate's own states at the lowest CPU priority, and the two
/// answers are compared field by field (`OutcomeDifferences`). Nothing of it reaches the
/// live answer: a sampled request that finds the candidate's queue full is skipped, counted.
final class Shadow: Sendable {
    let candidate: RulesPool
    /// The candidate's rules file, as given.
    let file: String
    /// The fraction of requests sampled, 0...1.
    let sample: Double
    /// When it was loaded (seconds since 1970).
    let since: Double
    private let threshold: UInt64
    private let counters: ShadowCounters
    private let state = Mutex(Counts())

    /// Requests and their live answers held for the candidate at most, in bytes: past it, a
    /// sampled request is skipped (the candidate is behind).
    static let maxPendingBytes = 16 << 20
    /// Differences kept for `GET /v1/shadow`'s `recent`.
    static let recentKept = 20

    struct Counts {
        var sampled = 0, compared = 0, skipped = 0, pendingBytes = 0, pending = 0
        var lines = 0, same = 0, different = 0
        var fields: [String: Int] = [:]
        var recent: [(requestID: String, line: Int, fields: [String])] = []
    }

    init(candidate: RulesPool, file: String, sample: Double, counters: ShadowCounters) {
        self.candidate = candidate
        self.file = file
        self.sample = min(max(sample, 0), 1)
        self.counters = counters
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        since = Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
        threshold = self.sample >= 1 ? .max : UInt64(self.sample * 0x1p64)
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
    /// or a batch's lines), and the live answers in order. Returns at once; the comparison runs
    /// on the candidate's states, its differences recorded in `log`.
    func submit(_ body: [UInt8], batch: Bool, requestID: String, live: [RulesPool.LiveAnswer], liveRevision: Revision, log: DecisionLog?) {
        let bytes = body.count + live.reduce(0) { $0 + $1.json.count }
        let taken: Bool = state.withLock { counts in
            counts.sampled += 1
            guard counts.pendingBytes + bytes <= Self.maxPendingBytes else {
                counts.skipped += 1
                return false
            }
            counts.pendingBytes += bytes
            counts.pending += 1
            return true
        }
        counters.sampled.increment()
        guard taken else {
            counters.skipped["busy"]?.increment()
            return
        }
        candidate.shadow(body, batch: batch, requestID: requestID, live: live, liveRevision: liveRevision, log: log) { result in
            self.finish(result, requestID: requestID, bytes: bytes)
        }
    }

    private func finish(_ result: RulesPool.ShadowResult?, requestID: String, bytes: Int) {
        state.withLock { counts in
            counts.pendingBytes -= bytes
            counts.pending -= 1
            guard let result else {
                counts.skipped += 1
                return
            }
            counts.compared += 1
            for (number, fields) in result.lines {
                counts.lines += 1
                if fields.isEmpty {
                    counts.same += 1
                    continue
                }
                counts.different += 1
                for field in fields { counts.fields[field, default: 0] += 1 }
                if counts.recent.count == Self.recentKept { counts.recent.removeFirst() }
                counts.recent.append((requestID, number, fields))
            }
        }
        guard let result else {
            // Its queue was full, or it was stopped (replaced) first.
            counters.skipped[candidate.isShutDown ? "stopped" : "busy"]?.increment()
            return
        }
        for (_, fields) in result.lines {
            counters.lines[fields.isEmpty ? "same" : "different"]?.increment()
            for field in fields { counters.fields[field]?.increment() }
        }
    }

    /// What `GET /v1/shadow` shows of it.
    func report(live: Revision) -> [String: Value] {
        let counts = state.withLock { $0 }
        let revision = candidate.revision
        return [
            "active": true,
            "file": .string(file),
            "sample": .double(sample),
            "since": .double(since),
            "revision": .map(["number": .int(Int64(revision.number)), "hash": .string(revision.hash)]),
            "live_revision": .map(["number": .int(Int64(live.number)), "hash": .string(live.hash)]),
            "requests": .map([
                "sampled": .int(Int64(counts.sampled)), "compared": .int(Int64(counts.compared)),
                "skipped": .int(Int64(counts.skipped)), "pending": .int(Int64(counts.pending)),
            ]),
            "lines": .map([
                "compared": .int(Int64(counts.lines)), "same": .int(Int64(counts.same)),
                "different": .int(Int64(counts.different)),
            ]),
            "differences": .map(Dictionary(uniqueKeysWithValues: OutcomeDifferences.compared.map {
                ($0, .int(Int64(counts.fields[$0, default: 0])))
            })),
            "recent": .array(counts.recent.map {
                .map(["request_id": .string($0.requestID), "line": .int(Int64($0.line)), "differences": .array($0.fields.map { .string($0) })])
            }),
        ]
    }
}

/// The shadow's counters in `/metrics`, kept across candidates (a new candidate starts its
/// own counts in `GET /v1/shadow`; the counters go on growing):
/// `luahier_shadow_sampled_total`, `luahier_shadow_skipped_total{reason}` (`busy`: the
/// candidate was behind; `stopped`: it was replaced or stopped first),
/// `luahier_shadow_lines_total{result}` (`same`, `different`), and
/// `luahier_shadow_differences_total{field}` (a line counts once in each field that differs).
final class ShadowCounters: Sendable {
    let sampled: Counter
    let skipped: [String: Counter]
    let lines: [String: Counter]
    let fields: [String: Counter]

    init(registry: PrometheusCollectorRegistry) {
        sampled = registry.makeCounter(descriptor: .named("luahier_shadow_sampled_total", "Requests sampled for the shadow revision."))
        skipped = Dictionary(uniqueKeysWithValues: ["busy", "stopped"].map { reason in
            (reason, registry.makeCounter(
                descriptor: .named("luahier_shadow_skipped_total", "Sampled requests the shadow revision did not answer: it was behind, or stopped."),
                labels: [("reason", reason)]))
        })
        lines = Dictionary(uniqueKeysWithValues: ["same", "different"].map { result in
            (result, registry.makeCounter(
                descriptor: .named("luahier_shadow_lines_total", "Request lines the shadow revision answered, by whether its outcome was the live one's."),
                labels: [("result", result)]))
        })
        fields = Dictionary(uniqueKeysWithValues: OutcomeDifferences.compared.map { field in
            (field, registry.makeCounter(
                descriptor: .named("luahier_shadow_differences_total", "Request lines whose shadow outcome differs from the live one, by field."),
                labels: [("field", field)]))
        })
    }
}
#endif
