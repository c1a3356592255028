#if Server
import LuaHierarchy
internal import Prometheus
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The series `ServerMetrics` shows, registered when first used (`ServerMetrics.series`):
/// their registry costs a start millions of instructions, most of them the runtime's first
/// look at Prometheus' generic types.
final class MetricSeries: Sendable {
    private let registry = PrometheusCollectorRegistry()
    private let pool: RulesPool
    /// `luahier_outcomes_total{status}`, in `LineStatus.allCases`' order (`outcomeIndex`): an
    /// array, where a dictionary keyed by the status would cost the start the runtime's
    /// lookup of `LineStatus: Hashable`, a scan of every conformance record.
    private let outcomes: [Counter]
    private let requestEvaluation: DurationHistogram
    private let batchEvaluation: DurationHistogram
    private let revision: Gauge
    private let failing: Gauge
    private let workers: Gauge
    private let waiting: Gauge
    private let ready: Gauge
    private let waits: Counter
    private let overloaded: Counter
    private let bodies: BudgetSeries
    private let answers: BudgetSeries
    private let printer: DetachedPrinter?
    private let printDropped: Counter
    private let process: ProcessGauges
    /// The pool's counts as last shown: the counters grow by the difference.
    private let shown = Mutex(RulesPool.Statistics())
    private let shownDropped = Mutex(0)
    private let decisions: DecisionMetrics?
    /// `luahier_bundle_polls_total{result}`, by `BundlePoller.Result`.
    private let bundlePolls: [String: Counter]
    /// `luahier_revision_info{hash}`: 1 for the running revision's hash (the one series).
    private let revisionInfo = Mutex<(hash: String, gauge: Gauge)?>(nil)
    /// The shadow revision's counters (`ShadowCounters`).
    let shadow: ShadowCounters
    private let shadowActive: Gauge

    init(pool: RulesPool, printer: DetachedPrinter?, bodies: ByteBudget, answers: ByteBudget) {
        self.pool = pool
        self.printer = printer
        let registry = self.registry
        outcomes = LineStatus.allCases.map { status in
            registry.makeCounter(descriptor: .named("luahier_outcomes_total", "Request lines answered, by outcome status."), labels: [("status", status.rawValue)])
        }
        func evaluation(_ kind: String) -> DurationHistogram {
            registry.makeDurationHistogram(
                descriptor: .named("luahier_evaluation_seconds", "Time on a state (the rules' work: read, run, written), per request or per batch."),
                labels: [("kind", kind)],
                buckets: [.microseconds(10), .microseconds(25), .microseconds(50), .microseconds(100), .microseconds(250),
                          .microseconds(500), .milliseconds(1), .milliseconds(2.5), .milliseconds(5), .milliseconds(10),
                          .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
                          .seconds(1), .seconds(2.5), .seconds(5), .seconds(10)])
        }
        requestEvaluation = evaluation("request")
        batchEvaluation = evaluation("batch")
        revision = registry.makeGauge(descriptor: .named("luahier_revision", "The number of the revision answering."))
        failing = registry.makeGauge(descriptor: .named("luahier_reload_failing", "1 while the last reload failed (the running revision answers)."))
        workers = registry.makeGauge(descriptor: .named("luahier_workers", "Lua states in the pool."))
        waiting = registry.makeGauge(descriptor: .named("luahier_pool_waiting", "Requests waiting for a free state."))
        ready = registry.makeGauge(descriptor: .named("luahier_ready", "1 while /readyz answers 200: not draining, not overloaded."))
        waits = registry.makeCounter(descriptor: .named("luahier_pool_waits_total", "Requests that waited for a free state."))
        overloaded = registry.makeCounter(descriptor: .named("luahier_pool_overloaded_total", "Requests refused: no state was free in time."))
        self.bodies = BudgetSeries(
            bodies, registry: registry,
            held: .named("luahier_body_bytes_in_flight", "Bytes of request bodies held now, across connections (--max-bodies-in-flight)."),
            refused: .named("luahier_bodies_refused_total", "Requests answered 503: their body would have passed --max-bodies-in-flight."))
        self.answers = BudgetSeries(
            answers, registry: registry,
            held: .named("luahier_answer_bytes_unsent", "Bytes of answers waiting for their clients to read them (--max-answers-unsent)."),
            refused: .named("luahier_answers_refused_total", "Requests answered 503: the answers waiting for their clients held --max-answers-unsent."))
        printDropped = registry.makeCounter(descriptor: .named("luahier_print_dropped_total", "Lines the rules printed that were dropped: stderr was not being read."))
        registry.makeGauge(
            descriptor: .named("luahier_build_info", "The build: its version and Lua's (always 1)."),
            labels: [("version", PackageVersion.number), ("lua", Hierarchy.luaVersion)]
        ).set(1.0)
        process = ProcessGauges(registry: registry)
        decisions = pool.options.decisionLog.map { DecisionMetrics(log: $0, registry: registry) }
        shadow = ShadowCounters(registry: registry)
        bundlePolls = Dictionary(uniqueKeysWithValues: BundlePoller.Result.allCases.map { result in
            (result.rawValue, registry.makeCounter(
                descriptor: .named("luahier_bundle_polls_total", "Polls of --bundle-url, by what became of them."),
                labels: [("result", result.rawValue)]))
        })
        shadowActive = registry.makeGauge(descriptor: .named("luahier_shadow_active", "1 while a shadow revision runs beside the live one."))
        for result in ["loaded", "unchanged", "failed"] { reloads(result).increment(by: Int64(0)) }
        for reason in ["client_gone", "client_stalled"] { batchesStopped(reason).increment(by: Int64(0)) }
        for limit in ["time", "instructions", "memory", "batch_time"] { trips(limit).increment(by: Int64(0)) }
        // Every label value of a fixed, documented set starts at 0, so that the first of each
        // shows as an increase; the error types are the host's one list of them.
        for type in RuleFailures.errorTypes.map(\.type) { recordRuleFailures(type, count: 0) }
        for (route, _) in RulesServer.routeMethods { _ = latency(route: route) }
        for code in [200, 400, 413, 503] { requests(code: code, method: "POST", route: "/v1/dispatch").increment(by: Int64(0)) }
    }

    /// Every answer, of every route: by code, method (`other` past the nine names) and route
    /// (the route's pattern; `unmatched` when none matched, `unparsed` when the HTTP parser
    /// could not read the request).
    func requests(code: Int, method: String, route: String) -> Counter {
        registry.makeCounter(
            descriptor: .named("luahier_http_requests_total", "HTTP requests answered, by code, method and route."),
            labels: [("code", String(code)), ("method", method), ("route", route)])
    }

    private func latency(route: String) -> DurationHistogram {
        registry.makeDurationHistogram(
            descriptor: .named("luahier_request_duration_seconds", "Time to answer a request, head read to last byte written, by route."),
            labels: [("route", route)],
            buckets: [.microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2.5),
                      .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
                      .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2.5), .seconds(5), .seconds(10)])
    }

    /// A request answered `code` on `route` after `duration`.
    func record(code: Int, method: String, route: String, duration: Duration) {
        let key = AnswerKey(code: code, method: method, route: route)
        let (counter, histogram) = answerMetrics.withLock { known in
            // Most answers repeat the one before: its key compares in a few instructions where
            // hashing it takes hundreds.
            if let last = known.last, last.key == key { return last.metrics }
            let found: (Counter, DurationHistogram)
            if let seen = known.all[key] {
                found = seen
            } else {
                found = (requests(code: code, method: method, route: route), latency(route: route))
                known.all[key] = found
            }
            known.last = (key, found)
            return found
        }
        counter.increment()
        histogram.record(duration)
    }

    /// The registry finds a metric by building its name and labels each time: the few that
    /// every request updates are kept at hand.
    private struct AnswerKey: Hashable {
        var code: Int
        var method, route: String
    }

    private struct AnswerMetrics {
        var all: [AnswerKey: (Counter, DurationHistogram)] = [:]
        var last: (key: AnswerKey, metrics: (Counter, DurationHistogram))?
    }

    private let answerMetrics = Mutex(AnswerMetrics())

    /// Bytes the HTTP parser could not read as a request, answered 400 by Hummingbird.
    func recordUnparsed() {
        requests(code: 400, method: "unknown", route: "unparsed").increment()
    }

    private func reloads(_ result: String) -> Counter {
        registry.makeCounter(descriptor: .named("luahier_reloads_total", "Reloads, by result."), labels: [("result", result)])
    }

    private func trips(_ limit: String) -> Counter {
        registry.makeCounter(descriptor: .named("luahier_limit_trips_total", "Requests a limit ended, by limit."), labels: [("limit", limit)])
    }

    private func batchesStopped(_ reason: String) -> Counter {
        registry.makeCounter(descriptor: .named("luahier_batches_stopped_total", "Batches stopped before their last line: the client went away, or left the answers unread too long."), labels: [("reason", reason)])
    }

    /// A batch stopped early: its client went away, or `stalled` (read nothing for too long).
    func recordBatchStopped(stalled: Bool) {
        batchesStopped(stalled ? "client_stalled" : "client_gone").increment()
    }

    /// A batch whose time budget ran out before its last line began.
    func recordBatchOutOfTime() {
        trips("batch_time").increment()
    }

    func record(_ status: LineStatus, count: Int = 1) {
        outcomes[Self.outcomeIndex(status)].increment(by: Int64(count))
    }

    /// Where `status` stands in `LineStatus.allCases` (its cases' declaration order).
    private static func outcomeIndex(_ status: LineStatus) -> Int {
        switch status {
        case .handled: 0
        case .unhandled: 1
        case .detached: 2
        case .invalid: 3
        }
    }

    /// The time a request (`batch` false) or a whole batch spent on its state.
    func recordEvaluation(_ duration: Duration, batch: Bool) {
        (batch ? batchEvaluation : requestEvaluation).record(duration)
    }

    private func ruleErrors(_ type: String) -> Counter {
        registry.makeCounter(
            descriptor: .named("luahier_rule_errors_total", "Request lines whose rules failed, by the error the host made of it."),
            labels: [("type", type)])
    }

    /// A request line whose rules failed in the ways `failures` holds (a raise, a broken
    /// responder contract, a limit that tripped): counted once under each error type, and a
    /// limit's also by limit. Taken from the engine, never from the outcome's text, which a
    /// client's own error value or a rule's own error type can make look alike.
    func recordRuleFailures(_ failures: RuleFailures) {
        guard !failures.isEmpty else { return }
        for type in failures.types { recordRuleFailures(type, count: 1) }
    }

    /// A batch's lines whose rules failed, by error type (`BatchSummary.ruleFailures`).
    func recordRuleFailures(byType counts: [String: Int]) {
        for (type, count) in counts { recordRuleFailures(type, count: count) }
    }

    private func recordRuleFailures(_ type: String, count: Int) {
        let (errors, trips) = failureCounters.withLock { known in
            if let found = known[type] { return found }
            let made = (ruleErrors(type), Self.limitNames[type].map { self.trips($0) })
            known[type] = made
            return made
        }
        errors.increment(by: Int64(count))
        trips?.increment(by: Int64(count))
    }

    /// The counters of each error type seen (the registry builds a name per look-up).
    private let failureCounters = Mutex<[String: (errors: Counter, trips: Counter?)]>([:])

    /// `luahier_limit_trips_total`'s label of each limit's error type.
    private static let limitNames = [
        "TimeLimitExceeded": "time", "InstructionLimitExceeded": "instructions", "MemoryLimitExceeded": "memory",
    ]

    func recordReload(_ result: ReloadResult) {
        switch result {
        case .loaded: reloads("loaded").increment()
        case .unchanged: reloads("unchanged").increment()
        case .failed: reloads("failed").increment()
        }
    }

    /// A poll of `--bundle-url`, counted.
    func recordBundlePoll(_ result: BundlePoller.Result) {
        bundlePolls[result.rawValue]?.increment()
    }

    /// `luahier_revision_info{hash}` names `hash`: a fleet's revisions compared by content.
    private func showRevision(_ hash: String) {
        let registry = self.registry
        revisionInfo.withLock { shown in
            guard shown?.hash != hash else { return }
            if let old = shown { registry.unregisterGauge(old.gauge) }
            let gauge = registry.makeGauge(
                descriptor: .named("luahier_revision_info", "The running revision's content hash (always 1)."), labels: [("hash", hash)])
            gauge.set(1.0)
            shown = (hash, gauge)
        }
    }

    /// The metrics as Prometheus text, the pool's gauges read now, and `ready` as `/readyz`
    /// would answer now.
    func text(ready isReady: Bool, shadowing: Bool) -> String {
        let statistics = pool.statistics
        let dropped = printer?.dropped ?? 0
        let before = shown.withLock { shown in defer { shown = statistics }; return shown }
        let droppedBefore = shownDropped.withLock { shown in defer { shown = dropped }; return shown }
        printDropped.increment(by: Int64(dropped - droppedBefore))
        waits.increment(by: Int64(statistics.waits - before.waits))
        overloaded.increment(by: Int64(statistics.overloaded - before.overloaded))
        bodies.update()
        answers.update()
        revision.set(Double(pool.revision.number))
        failing.set(pool.lastReloadFailure == nil ? 0.0 : 1.0)
        workers.set(Double(pool.workers))
        waiting.set(Double(pool.waiting))
        ready.set(isReady ? 1.0 : 0.0)
        shadowActive.set(shadowing ? 1.0 : 0.0)
        shadow.update()
        showRevision(pool.revision.hash)
        process.update()
        decisions?.update()
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return String(decoding: buffer, as: UTF8.self)
    }
}

/// A `ByteBudget`'s series: what it holds (a gauge) and the requests refused for it (a
/// counter, grown by the refusals since it was last shown).
final class BudgetSeries: Sendable {
    private let budget: ByteBudget
    private let held: Gauge
    private let refused: Counter
    private let shownRefusals = Mutex(0)

    init(_ budget: ByteBudget, registry: PrometheusCollectorRegistry, held: MetricNameDescriptor, refused: MetricNameDescriptor) {
        self.budget = budget
        self.held = registry.makeGauge(descriptor: held)
        self.refused = registry.makeCounter(descriptor: refused)
    }

    func update() {
        let refusals = budget.refusals
        refused.increment(by: Int64(refusals - shownRefusals.withLock { shown in defer { shown = refusals }; return shown }))
        held.set(Double(budget.heldBytes))
    }
}

/// A decision log's counts, grown by what it did since they were last shown.
final class DecisionMetrics: Sendable {
    let log: DecisionLog
    let logged: Counter
    let dropped: [String: Counter]
    let batches: [String: Counter]
    private let shown = Mutex((DecisionLog.Statistics(), [String: Int]()))

    init(log: DecisionLog, registry: PrometheusCollectorRegistry) {
        self.log = log
        logged = registry.makeCounter(descriptor: .named("luahier_decisions_logged_total", "Decision records the decision log's sink took."))
        dropped = Dictionary(uniqueKeysWithValues: ["buffer_full", "sink_failed", "shadow_share"].map { reason in
            (reason, registry.makeCounter(
                descriptor: .named("luahier_decisions_dropped_total", "Decision records dropped: the buffer was full, the sink failed, or a shadow record found the buffer a quarter full."),
                labels: [("reason", reason)]))
        })
        batches = log.sink is HTTPDecisionSink ? Dictionary(uniqueKeysWithValues: ["sent", "retried", "failed"].map { result in
            (result, registry.makeCounter(
                descriptor: .named("luahier_decision_batches_total", "Batches of decision records sent to --decision-log-url, by result."),
                labels: [("result", result)]))
        }) : [:]
    }

    func update() {
        let now = log.statistics
        let sent = (log.sink as? HTTPDecisionSink)?.batches ?? [:]
        let (before, sentBefore) = shown.withLock { shown in defer { shown = (now, sent) }; return shown }
        logged.increment(by: Int64(now.logged - before.logged))
        dropped["buffer_full"]?.increment(by: Int64(now.droppedBufferFull - before.droppedBufferFull))
        dropped["sink_failed"]?.increment(by: Int64(now.droppedSinkFailed - before.droppedSinkFailed))
        dropped["shadow_share"]?.increment(by: Int64(now.droppedShadowShare - before.droppedShadowShare))
        for (result, counter) in batches { counter.increment(by: Int64(sent[result, default: 0] - sentBefore[result, default: 0])) }
    }
}

/// The process's own metrics, as Prometheus' client libraries name them, read from /proc (Linux;
/// elsewhere they stay 0).
struct ProcessGauges: Sendable {
    let resident, virtual, cpu, fds, start: Gauge

    init(registry: PrometheusCollectorRegistry) {
        resident = registry.makeGauge(descriptor: .named("process_resident_memory_bytes", "Resident memory size in bytes."))
        virtual = registry.makeGauge(descriptor: .named("process_virtual_memory_bytes", "Virtual memory size in bytes."))
        cpu = registry.makeGauge(descriptor: .named("process_cpu_seconds_total", "Total user and system CPU time spent in seconds."))
        fds = registry.makeGauge(descriptor: .named("process_open_fds", "Number of open file descriptors."))
        start = registry.makeGauge(descriptor: .named("process_start_time_seconds", "Start time of the process since the epoch, in seconds."))
    }

    func update() {
        #if os(Linux)
        // /proc/self/stat: fields after the command's closing parenthesis, from the state (3).
        guard let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        func field(_ number: Int) -> Double { Double(fields[number - 3]) ?? 0 }
        guard fields.count > 21, ticks > 0 else { return }
        cpu.set((field(14) + field(15)) / ticks)
        virtual.set(field(23))
        resident.set(field(24) * Double(sysconf(Int32(_SC_PAGESIZE))))
        if let boot = Self.bootTime { start.set(boot + field(22) / ticks) }
        fds.set(Double((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0))
        #endif
    }

    /// When the machine booted (seconds since 1970), from /proc/stat's `btime`.
    static let bootTime: Double? = {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8) else { return nil }
        return text.split(separator: "\n").first { $0.hasPrefix("btime ") }.flatMap { Double($0.dropFirst(6)) }
    }()
}

extension MetricNameDescriptor {
    /// A metric called `name` (no namespace, subsystem or unit of its own: the name says them).
    static func named(_ name: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: name, unitName: "", helpText: help)
    }
}
#endif
