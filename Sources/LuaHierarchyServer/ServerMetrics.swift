#if Server
import LuaHierarchy
import Synchronization

/// What `GET /metrics` shows, in Prometheus text:
///
/// - `luahier_outcomes_total{status}`: request lines answered, by outcome status
///   (`handled`, `unhandled`, `detached`, `invalid`), batch lines included;
/// - `luahier_http_requests_total{code,method,route}`: every answer, of every route (`unmatched`
///   when none matched, `unparsed` for bytes the HTTP parser refused and Hummingbird answered:
///   never a request the client's leaving cut short, which gets no answer);
/// - `luahier_request_duration_seconds{route}`: their latency, a histogram, each route's
///   (`RulesServer.routeMethods`) shown from the start, `unmatched` from its first answer;
/// - `luahier_evaluation_seconds{kind}`: the time on a state alone (the rules' work: read, run,
///   written; no HTTP, no wait for a state), a histogram, for each `request` and each `batch`;
/// - `luahier_limit_trips_total{limit}`: request lines a limit ended (`time`, `instructions`,
///   `memory`), as the engine's budget tripped (never read off an outcome), and batches whose
///   time budget ran out (`batch_time`);
/// - `luahier_rule_errors_total{type}`: request lines whose rules failed, by the error the host
///   made of it (each of `RuleFailures.errorTypes`, shown from the start), whether
///   or not a responder caught it: counted apart from `unhandled`, which a rule's own error
///   types and unclaimed events also end as, so a bad deploy shows as such;
/// - `luahier_batches_stopped_total{reason}`: batches stopped early because the client went
///   away (`client_gone`) or left the answers unread too long (`client_stalled`);
/// - `luahier_reloads_total{result}`: `loaded`, `unchanged`, `failed`;
/// - `luahier_bodies_refused_total`: requests answered 503 because their body would have
///   passed `--max-bodies-in-flight`; gauge `luahier_body_bytes_in_flight`: what the bodies
///   read and not yet answered hold (`ByteBudget`);
/// - `luahier_answers_refused_total`: requests answered 503 because the answers waiting for
///   their clients held `--max-answers-unsent`; gauge `luahier_answer_bytes_unsent`: what
///   they hold (`UnsentAnswer`);
/// - `luahier_pool_waits_total`, `luahier_pool_overloaded_total`: requests that waited for
///   a free state, and those refused because none came in time;
/// - `luahier_print_dropped_total`: lines the rules printed that were dropped because
///   stderr was not being read;
/// - with a decision log: `luahier_decisions_logged_total`, records its sink took;
///   `luahier_decisions_dropped_total{reason}`, records dropped because its buffer was full
///   (`buffer_full`), its sink failed (`sink_failed`), or a shadow record found the buffer a
///   quarter full (`shadow_share`); and with the HTTP sink
///   `luahier_decision_batches_total{result}`, batches `sent`, `retried` (a send that failed
///   and was made again) and `failed` (dropped after the last attempt);
/// - the shadow revision's (`ShadowCounters`), and `luahier_shadow_active`;
/// - with `--bundle-url`: `luahier_bundle_polls_total{result}` (`loaded`, `unchanged`,
///   `not_modified`, `refused`, `failed`);
/// - gauges: `luahier_revision_info{hash}` (1, the running revision's content hash), `luahier_revision`, `luahier_reload_failing` (1 while the last reload failed),
///   `luahier_workers`, `luahier_pool_waiting`, `luahier_ready` (1 while `/readyz` answers
///   200);
/// - `luahier_build_info{version,lua}` (always 1), and the process's own, read from /proc when
///   the metrics are asked for: `process_resident_memory_bytes`, `process_virtual_memory_bytes`,
///   `process_cpu_seconds_total`, `process_open_fds`, `process_start_time_seconds`.
///
/// Its series are registered once the port is bound (`register()`, before the "listening"
/// line), or at the first call that counts or shows one if that comes first (`series`): the
/// port accepts without waiting for them, and `/metrics` shows the same series, the zero ones
/// included, whenever it is first asked.
final class ServerMetrics: Sendable {
    private let pool: RulesPool
    private let printer: DetachedPrinter?
    private let bodies: ByteBudget
    private let answers: ByteBudget
    private let registered = Mutex<MetricSeries?>(nil)

    init(pool: RulesPool, printer: DetachedPrinter?, bodies: ByteBudget, answers: ByteBudget) {
        self.pool = pool
        self.printer = printer
        self.bodies = bodies
        self.answers = answers
    }

    /// Registers the series now, if they were not yet.
    func register() { _ = series }

    /// Whether the series are registered (for tests).
    package var isRegistered: Bool { registered.withLock { $0 != nil } }

    /// The series, registered now if they were not yet.
    private var series: MetricSeries {
        registered.withLock { registered in
            if let registered { return registered }
            let made = MetricSeries(pool: pool, printer: printer, bodies: bodies, answers: answers)
            registered = made
            return made
        }
    }

    /// The shadow revision's counters (`ShadowCounters`).
    var shadow: ShadowCounters { series.shadow }

    /// A request answered `code` on `route` after `duration`.
    func record(code: Int, method: String, route: String, duration: Duration) {
        series.record(code: code, method: method, route: route, duration: duration)
    }

    /// Bytes the HTTP parser could not read as a request, answered 400 by Hummingbird (not those
    /// the connection's end cut short: `ConnectionGuard`).
    func recordUnparsed() { series.recordUnparsed() }

    /// A batch stopped early: its client went away, or `stalled` (read nothing for too long).
    func recordBatchStopped(stalled: Bool) { series.recordBatchStopped(stalled: stalled) }

    /// A batch whose time budget ran out before its last line began.
    func recordBatchOutOfTime() { series.recordBatchOutOfTime() }

    func record(_ status: LineStatus, count: Int = 1) { series.record(status, count: count) }

    /// The time a request (`batch` false) or a whole batch spent on its state.
    func recordEvaluation(_ duration: Duration, batch: Bool) { series.recordEvaluation(duration, batch: batch) }

    /// A request line whose rules failed in the ways `failures` holds (`MetricSeries`).
    func recordRuleFailures(_ failures: RuleFailures) {
        guard !failures.isEmpty else { return }
        series.recordRuleFailures(failures)
    }

    /// A batch's lines whose rules failed, by error type (`BatchSummary.ruleFailures`).
    func recordRuleFailures(byType counts: [String: Int]) {
        guard !counts.isEmpty else { return }
        series.recordRuleFailures(byType: counts)
    }

    func recordReload(_ result: ReloadResult) { series.recordReload(result) }

    /// A poll of `--bundle-url`, counted.
    func recordBundlePoll(_ result: BundlePoller.Result) { series.recordBundlePoll(result) }

    /// The metrics as Prometheus text, the pool's gauges read now, and `ready` as `/readyz`
    /// would answer now.
    func text(ready isReady: Bool, shadowing: Bool = false) -> String {
        series.text(ready: isReady, shadowing: shadowing)
    }
}
#endif
