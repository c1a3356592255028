#if Server
import Foundation
import Hummingbird
import HummingbirdTesting
import LuaHierarchy
@testable import LuaHierarchyServer
import Testing

/// `/metrics` registers its series when first used, not at start: what it shows must not
/// depend on when that was.
@Suite("The metrics' exposition")
struct MetricsExpositionTests {
    /// The exposition with what changes from run to run taken out (the process's own values,
    /// the revision's hash, the build's versions), its lines sorted: the registry writes its
    /// families in no fixed order.
    static func normalized(_ text: String) -> [String] {
        text.split(separator: "\n").map { line -> String in
            if line.hasPrefix("process_") { return String(line.split(separator: " ")[0]) + " VALUE" }
            if line.hasPrefix("luahier_revision_info{") { return "luahier_revision_info{hash=HASH} 1.0" }
            if line.hasPrefix("luahier_build_info{") { return "luahier_build_info{VERSIONS} 1.0" }
            return String(line)
        }.sorted()
    }

    /// What the server showed before its series were registered lazily (the build that
    /// registered them at start, `serve --workers 1`, its first `GET /metrics`), normalized,
    /// with the zero series of each rule error type and of each route's latency beside them.
    static let zeroState = #"""
        # HELP luahier_answer_bytes_unsent Bytes of answers waiting for their clients to read them (--max-answers-unsent).
        # HELP luahier_answers_refused_total Requests answered 503: the answers waiting for their clients held --max-answers-unsent.
        # HELP luahier_batches_stopped_total Batches stopped before their last line: the client went away, or left the answers unread too long.
        # HELP luahier_bodies_refused_total Requests answered 503: their body would have passed --max-bodies-in-flight.
        # HELP luahier_body_bytes_in_flight Bytes of request bodies held now, across connections (--max-bodies-in-flight).
        # HELP luahier_build_info The build: its version and Lua's (always 1).
        # HELP luahier_bundle_polls_total Polls of --bundle-url, by what became of them.
        # HELP luahier_evaluation_seconds Time on a state (the rules' work: read, run, written), per request or per batch.
        # HELP luahier_http_requests_total HTTP requests answered, by code, method and route.
        # HELP luahier_limit_trips_total Requests a limit ended, by limit.
        # HELP luahier_outcomes_total Request lines answered, by outcome status.
        # HELP luahier_pool_overloaded_total Requests refused: no state was free in time.
        # HELP luahier_pool_waiting Requests waiting for a free state.
        # HELP luahier_pool_waits_total Requests that waited for a free state.
        # HELP luahier_print_dropped_total Lines the rules printed that were dropped: stderr was not being read.
        # HELP luahier_ready 1 while /readyz answers 200: not draining, not overloaded.
        # HELP luahier_reload_failing 1 while the last reload failed (the running revision answers).
        # HELP luahier_reloads_total Reloads, by result.
        # HELP luahier_request_duration_seconds Time to answer a request, head read to last byte written, by route.
        # HELP luahier_revision The number of the revision answering.
        # HELP luahier_revision_info The running revision's content hash (always 1).
        # HELP luahier_rule_errors_total Request lines whose rules failed, by the error the host made of it.
        # HELP luahier_shadow_active 1 while a shadow revision runs beside the live one.
        # HELP luahier_shadow_differences_total Request lines whose shadow outcome differs from the live one, by field.
        # HELP luahier_shadow_lines_total Request lines the shadow revision answered, by whether its outcome was the live one's.
        # HELP luahier_shadow_sampled_total Requests sampled for the shadow revision.
        # HELP luahier_shadow_skipped_total Sampled requests the shadow revision did not answer: it was behind, or stopped.
        # HELP luahier_workers Lua states in the pool.
        # HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.
        # HELP process_open_fds Number of open file descriptors.
        # HELP process_resident_memory_bytes Resident memory size in bytes.
        # HELP process_start_time_seconds Start time of the process since the epoch, in seconds.
        # HELP process_virtual_memory_bytes Virtual memory size in bytes.
        # TYPE luahier_answer_bytes_unsent gauge
        # TYPE luahier_answers_refused_total counter
        # TYPE luahier_batches_stopped_total counter
        # TYPE luahier_bodies_refused_total counter
        # TYPE luahier_body_bytes_in_flight gauge
        # TYPE luahier_build_info gauge
        # TYPE luahier_bundle_polls_total counter
        # TYPE luahier_evaluation_seconds histogram
        # TYPE luahier_http_requests_total counter
        # TYPE luahier_limit_trips_total counter
        # TYPE luahier_outcomes_total counter
        # TYPE luahier_pool_overloaded_total counter
        # TYPE luahier_pool_waiting gauge
        # TYPE luahier_pool_waits_total counter
        # TYPE luahier_print_dropped_total counter
        # TYPE luahier_ready gauge
        # TYPE luahier_reload_failing gauge
        # TYPE luahier_reloads_total counter
        # TYPE luahier_request_duration_seconds histogram
        # TYPE luahier_revision gauge
        # TYPE luahier_revision_info gauge
        # TYPE luahier_rule_errors_total counter
        # TYPE luahier_shadow_active gauge
        # TYPE luahier_shadow_differences_total counter
        # TYPE luahier_shadow_lines_total counter
        # TYPE luahier_shadow_sampled_total counter
        # TYPE luahier_shadow_skipped_total counter
        # TYPE luahier_workers gauge
        # TYPE process_cpu_seconds_total gauge
        # TYPE process_open_fds gauge
        # TYPE process_resident_memory_bytes gauge
        # TYPE process_start_time_seconds gauge
        # TYPE process_virtual_memory_bytes gauge
        luahier_answer_bytes_unsent 0.0
        luahier_answers_refused_total 0
        luahier_batches_stopped_total{reason="client_gone"} 0
        luahier_batches_stopped_total{reason="client_stalled"} 0
        luahier_bodies_refused_total 0
        luahier_body_bytes_in_flight 0.0
        luahier_build_info{VERSIONS} 1.0
        luahier_bundle_polls_total{result="failed"} 0
        luahier_bundle_polls_total{result="loaded"} 0
        luahier_bundle_polls_total{result="not_modified"} 0
        luahier_bundle_polls_total{result="refused"} 0
        luahier_bundle_polls_total{result="unchanged"} 0
        luahier_evaluation_seconds_bucket{kind="batch",le="+Inf"} 0
        luahier_evaluation_seconds_bucket{kind="batch",le="0.00001"} 0
        luahier_evaluation_seconds_bucket{kind="batch",le="0.000025"} 0
        luahier_evaluation_seconds_bucket{kind="batch",le="0.00005"} 0
        luahier_evaluation_seconds_bucket{kind="batch",le="0.0001"} 0
        luahier_evaluation_seconds_bucket{kind="batch",le="0.00025"} 0
        luahier_evaluation_seconds_bucket{kind="batch",le="0.0005"} 0
        luahier_evaluation_seconds_bucket{kind="batch",le="0.001"} 0
        luahier_evaluation_seconds_bucket{kind="batch",le="0.0025"} 0
        luahier_evaluation_seconds_bucket{kind="batch",le="0.005"} 0
        luahier_evaluation_seconds_bucket{kind="batch",le="0.01"} 0
        luahier_evaluation_seconds_bucket{kind="batch",le="0.025"} 0
        luahier_evaluation_seconds_bucket{kind="batch",le="0.05"} 0
        luahier_evaluation_seconds_bucket{kind="batch",le="0.1"} 0
        luahier_evaluation_seconds_bucket{kind="batch",le="0.25"} 0
        luahier_evaluation_seconds_bucket{kind="batch",le="0.5"} 0
        luahier_evaluation_seconds_bucket{kind="batch",le="1.0"} 0
        luahier_evaluation_seconds_bucket{kind="batch",le="10.0"} 0
        luahier_evaluation_seconds_bucket{kind="batch",le="2.5"} 0
        luahier_evaluation_seconds_bucket{kind="batch",le="5.0"} 0
        luahier_evaluation_seconds_bucket{kind="request",le="+Inf"} 0
        luahier_evaluation_seconds_bucket{kind="request",le="0.00001"} 0
        luahier_evaluation_seconds_bucket{kind="request",le="0.000025"} 0
        luahier_evaluation_seconds_bucket{kind="request",le="0.00005"} 0
        luahier_evaluation_seconds_bucket{kind="request",le="0.0001"} 0
        luahier_evaluation_seconds_bucket{kind="request",le="0.00025"} 0
        luahier_evaluation_seconds_bucket{kind="request",le="0.0005"} 0
        luahier_evaluation_seconds_bucket{kind="request",le="0.001"} 0
        luahier_evaluation_seconds_bucket{kind="request",le="0.0025"} 0
        luahier_evaluation_seconds_bucket{kind="request",le="0.005"} 0
        luahier_evaluation_seconds_bucket{kind="request",le="0.01"} 0
        luahier_evaluation_seconds_bucket{kind="request",le="0.025"} 0
        luahier_evaluation_seconds_bucket{kind="request",le="0.05"} 0
        luahier_evaluation_seconds_bucket{kind="request",le="0.1"} 0
        luahier_evaluation_seconds_bucket{kind="request",le="0.25"} 0
        luahier_evaluation_seconds_bucket{kind="request",le="0.5"} 0
        luahier_evaluation_seconds_bucket{kind="request",le="1.0"} 0
        luahier_evaluation_seconds_bucket{kind="request",le="10.0"} 0
        luahier_evaluation_seconds_bucket{kind="request",le="2.5"} 0
        luahier_evaluation_seconds_bucket{kind="request",le="5.0"} 0
        luahier_evaluation_seconds_count{kind="batch"} 0
        luahier_evaluation_seconds_count{kind="request"} 0
        luahier_evaluation_seconds_sum{kind="batch"} 0.0
        luahier_evaluation_seconds_sum{kind="request"} 0.0
        luahier_http_requests_total{code="200",method="POST",route="/v1/dispatch"} 0
        luahier_http_requests_total{code="400",method="POST",route="/v1/dispatch"} 0
        luahier_http_requests_total{code="413",method="POST",route="/v1/dispatch"} 0
        luahier_http_requests_total{code="503",method="POST",route="/v1/dispatch"} 0
        luahier_limit_trips_total{limit="batch_time"} 0
        luahier_limit_trips_total{limit="instructions"} 0
        luahier_limit_trips_total{limit="memory"} 0
        luahier_limit_trips_total{limit="time"} 0
        luahier_outcomes_total{status="detached"} 0
        luahier_outcomes_total{status="handled"} 0
        luahier_outcomes_total{status="invalid"} 0
        luahier_outcomes_total{status="unhandled"} 0
        luahier_pool_overloaded_total 0
        luahier_pool_waiting 0.0
        luahier_pool_waits_total 0
        luahier_print_dropped_total 0
        luahier_ready 1.0
        luahier_reload_failing 0.0
        luahier_reloads_total{result="failed"} 0
        luahier_reloads_total{result="loaded"} 0
        luahier_reloads_total{result="unchanged"} 0
        luahier_request_duration_seconds_bucket{route="/healthz",le="+Inf"} 0
        luahier_request_duration_seconds_bucket{route="/healthz",le="0.0001"} 0
        luahier_request_duration_seconds_bucket{route="/healthz",le="0.00025"} 0
        luahier_request_duration_seconds_bucket{route="/healthz",le="0.0005"} 0
        luahier_request_duration_seconds_bucket{route="/healthz",le="0.001"} 0
        luahier_request_duration_seconds_bucket{route="/healthz",le="0.0025"} 0
        luahier_request_duration_seconds_bucket{route="/healthz",le="0.005"} 0
        luahier_request_duration_seconds_bucket{route="/healthz",le="0.01"} 0
        luahier_request_duration_seconds_bucket{route="/healthz",le="0.025"} 0
        luahier_request_duration_seconds_bucket{route="/healthz",le="0.05"} 0
        luahier_request_duration_seconds_bucket{route="/healthz",le="0.1"} 0
        luahier_request_duration_seconds_bucket{route="/healthz",le="0.25"} 0
        luahier_request_duration_seconds_bucket{route="/healthz",le="0.5"} 0
        luahier_request_duration_seconds_bucket{route="/healthz",le="1.0"} 0
        luahier_request_duration_seconds_bucket{route="/healthz",le="10.0"} 0
        luahier_request_duration_seconds_bucket{route="/healthz",le="2.5"} 0
        luahier_request_duration_seconds_bucket{route="/healthz",le="5.0"} 0
        luahier_request_duration_seconds_bucket{route="/livez",le="+Inf"} 0
        luahier_request_duration_seconds_bucket{route="/livez",le="0.0001"} 0
        luahier_request_duration_seconds_bucket{route="/livez",le="0.00025"} 0
        luahier_request_duration_seconds_bucket{route="/livez",le="0.0005"} 0
        luahier_request_duration_seconds_bucket{route="/livez",le="0.001"} 0
        luahier_request_duration_seconds_bucket{route="/livez",le="0.0025"} 0
        luahier_request_duration_seconds_bucket{route="/livez",le="0.005"} 0
        luahier_request_duration_seconds_bucket{route="/livez",le="0.01"} 0
        luahier_request_duration_seconds_bucket{route="/livez",le="0.025"} 0
        luahier_request_duration_seconds_bucket{route="/livez",le="0.05"} 0
        luahier_request_duration_seconds_bucket{route="/livez",le="0.1"} 0
        luahier_request_duration_seconds_bucket{route="/livez",le="0.25"} 0
        luahier_request_duration_seconds_bucket{route="/livez",le="0.5"} 0
        luahier_request_duration_seconds_bucket{route="/livez",le="1.0"} 0
        luahier_request_duration_seconds_bucket{route="/livez",le="10.0"} 0
        luahier_request_duration_seconds_bucket{route="/livez",le="2.5"} 0
        luahier_request_duration_seconds_bucket{route="/livez",le="5.0"} 0
        luahier_request_duration_seconds_bucket{route="/metrics",le="+Inf"} 0
        luahier_request_duration_seconds_bucket{route="/metrics",le="0.0001"} 0
        luahier_request_duration_seconds_bucket{route="/metrics",le="0.00025"} 0
        luahier_request_duration_seconds_bucket{route="/metrics",le="0.0005"} 0
        luahier_request_duration_seconds_bucket{route="/metrics",le="0.001"} 0
        luahier_request_duration_seconds_bucket{route="/metrics",le="0.0025"} 0
        luahier_request_duration_seconds_bucket{route="/metrics",le="0.005"} 0
        luahier_request_duration_seconds_bucket{route="/metrics",le="0.01"} 0
        luahier_request_duration_seconds_bucket{route="/metrics",le="0.025"} 0
        luahier_request_duration_seconds_bucket{route="/metrics",le="0.05"} 0
        luahier_request_duration_seconds_bucket{route="/metrics",le="0.1"} 0
        luahier_request_duration_seconds_bucket{route="/metrics",le="0.25"} 0
        luahier_request_duration_seconds_bucket{route="/metrics",le="0.5"} 0
        luahier_request_duration_seconds_bucket{route="/metrics",le="1.0"} 0
        luahier_request_duration_seconds_bucket{route="/metrics",le="10.0"} 0
        luahier_request_duration_seconds_bucket{route="/metrics",le="2.5"} 0
        luahier_request_duration_seconds_bucket{route="/metrics",le="5.0"} 0
        luahier_request_duration_seconds_bucket{route="/openapi.json",le="+Inf"} 0
        luahier_request_duration_seconds_bucket{route="/openapi.json",le="0.0001"} 0
        luahier_request_duration_seconds_bucket{route="/openapi.json",le="0.00025"} 0
        luahier_request_duration_seconds_bucket{route="/openapi.json",le="0.0005"} 0
        luahier_request_duration_seconds_bucket{route="/openapi.json",le="0.001"} 0
        luahier_request_duration_seconds_bucket{route="/openapi.json",le="0.0025"} 0
        luahier_request_duration_seconds_bucket{route="/openapi.json",le="0.005"} 0
        luahier_request_duration_seconds_bucket{route="/openapi.json",le="0.01"} 0
        luahier_request_duration_seconds_bucket{route="/openapi.json",le="0.025"} 0
        luahier_request_duration_seconds_bucket{route="/openapi.json",le="0.05"} 0
        luahier_request_duration_seconds_bucket{route="/openapi.json",le="0.1"} 0
        luahier_request_duration_seconds_bucket{route="/openapi.json",le="0.25"} 0
        luahier_request_duration_seconds_bucket{route="/openapi.json",le="0.5"} 0
        luahier_request_duration_seconds_bucket{route="/openapi.json",le="1.0"} 0
        luahier_request_duration_seconds_bucket{route="/openapi.json",le="10.0"} 0
        luahier_request_duration_seconds_bucket{route="/openapi.json",le="2.5"} 0
        luahier_request_duration_seconds_bucket{route="/openapi.json",le="5.0"} 0
        luahier_request_duration_seconds_bucket{route="/readyz",le="+Inf"} 0
        luahier_request_duration_seconds_bucket{route="/readyz",le="0.0001"} 0
        luahier_request_duration_seconds_bucket{route="/readyz",le="0.00025"} 0
        luahier_request_duration_seconds_bucket{route="/readyz",le="0.0005"} 0
        luahier_request_duration_seconds_bucket{route="/readyz",le="0.001"} 0
        luahier_request_duration_seconds_bucket{route="/readyz",le="0.0025"} 0
        luahier_request_duration_seconds_bucket{route="/readyz",le="0.005"} 0
        luahier_request_duration_seconds_bucket{route="/readyz",le="0.01"} 0
        luahier_request_duration_seconds_bucket{route="/readyz",le="0.025"} 0
        luahier_request_duration_seconds_bucket{route="/readyz",le="0.05"} 0
        luahier_request_duration_seconds_bucket{route="/readyz",le="0.1"} 0
        luahier_request_duration_seconds_bucket{route="/readyz",le="0.25"} 0
        luahier_request_duration_seconds_bucket{route="/readyz",le="0.5"} 0
        luahier_request_duration_seconds_bucket{route="/readyz",le="1.0"} 0
        luahier_request_duration_seconds_bucket{route="/readyz",le="10.0"} 0
        luahier_request_duration_seconds_bucket{route="/readyz",le="2.5"} 0
        luahier_request_duration_seconds_bucket{route="/readyz",le="5.0"} 0
        luahier_request_duration_seconds_bucket{route="/v1/dispatch",le="+Inf"} 0
        luahier_request_duration_seconds_bucket{route="/v1/dispatch",le="0.0001"} 0
        luahier_request_duration_seconds_bucket{route="/v1/dispatch",le="0.00025"} 0
        luahier_request_duration_seconds_bucket{route="/v1/dispatch",le="0.0005"} 0
        luahier_request_duration_seconds_bucket{route="/v1/dispatch",le="0.001"} 0
        luahier_request_duration_seconds_bucket{route="/v1/dispatch",le="0.0025"} 0
        luahier_request_duration_seconds_bucket{route="/v1/dispatch",le="0.005"} 0
        luahier_request_duration_seconds_bucket{route="/v1/dispatch",le="0.01"} 0
        luahier_request_duration_seconds_bucket{route="/v1/dispatch",le="0.025"} 0
        luahier_request_duration_seconds_bucket{route="/v1/dispatch",le="0.05"} 0
        luahier_request_duration_seconds_bucket{route="/v1/dispatch",le="0.1"} 0
        luahier_request_duration_seconds_bucket{route="/v1/dispatch",le="0.25"} 0
        luahier_request_duration_seconds_bucket{route="/v1/dispatch",le="0.5"} 0
        luahier_request_duration_seconds_bucket{route="/v1/dispatch",le="1.0"} 0
        luahier_request_duration_seconds_bucket{route="/v1/dispatch",le="10.0"} 0
        luahier_request_duration_seconds_bucket{route="/v1/dispatch",le="2.5"} 0
        luahier_request_duration_seconds_bucket{route="/v1/dispatch",le="5.0"} 0
        luahier_request_duration_seconds_bucket{route="/v1/reload",le="+Inf"} 0
        luahier_request_duration_seconds_bucket{route="/v1/reload",le="0.0001"} 0
        luahier_request_duration_seconds_bucket{route="/v1/reload",le="0.00025"} 0
        luahier_request_duration_seconds_bucket{route="/v1/reload",le="0.0005"} 0
        luahier_request_duration_seconds_bucket{route="/v1/reload",le="0.001"} 0
        luahier_request_duration_seconds_bucket{route="/v1/reload",le="0.0025"} 0
        luahier_request_duration_seconds_bucket{route="/v1/reload",le="0.005"} 0
        luahier_request_duration_seconds_bucket{route="/v1/reload",le="0.01"} 0
        luahier_request_duration_seconds_bucket{route="/v1/reload",le="0.025"} 0
        luahier_request_duration_seconds_bucket{route="/v1/reload",le="0.05"} 0
        luahier_request_duration_seconds_bucket{route="/v1/reload",le="0.1"} 0
        luahier_request_duration_seconds_bucket{route="/v1/reload",le="0.25"} 0
        luahier_request_duration_seconds_bucket{route="/v1/reload",le="0.5"} 0
        luahier_request_duration_seconds_bucket{route="/v1/reload",le="1.0"} 0
        luahier_request_duration_seconds_bucket{route="/v1/reload",le="10.0"} 0
        luahier_request_duration_seconds_bucket{route="/v1/reload",le="2.5"} 0
        luahier_request_duration_seconds_bucket{route="/v1/reload",le="5.0"} 0
        luahier_request_duration_seconds_bucket{route="/v1/required-revision",le="+Inf"} 0
        luahier_request_duration_seconds_bucket{route="/v1/required-revision",le="0.0001"} 0
        luahier_request_duration_seconds_bucket{route="/v1/required-revision",le="0.00025"} 0
        luahier_request_duration_seconds_bucket{route="/v1/required-revision",le="0.0005"} 0
        luahier_request_duration_seconds_bucket{route="/v1/required-revision",le="0.001"} 0
        luahier_request_duration_seconds_bucket{route="/v1/required-revision",le="0.0025"} 0
        luahier_request_duration_seconds_bucket{route="/v1/required-revision",le="0.005"} 0
        luahier_request_duration_seconds_bucket{route="/v1/required-revision",le="0.01"} 0
        luahier_request_duration_seconds_bucket{route="/v1/required-revision",le="0.025"} 0
        luahier_request_duration_seconds_bucket{route="/v1/required-revision",le="0.05"} 0
        luahier_request_duration_seconds_bucket{route="/v1/required-revision",le="0.1"} 0
        luahier_request_duration_seconds_bucket{route="/v1/required-revision",le="0.25"} 0
        luahier_request_duration_seconds_bucket{route="/v1/required-revision",le="0.5"} 0
        luahier_request_duration_seconds_bucket{route="/v1/required-revision",le="1.0"} 0
        luahier_request_duration_seconds_bucket{route="/v1/required-revision",le="10.0"} 0
        luahier_request_duration_seconds_bucket{route="/v1/required-revision",le="2.5"} 0
        luahier_request_duration_seconds_bucket{route="/v1/required-revision",le="5.0"} 0
        luahier_request_duration_seconds_bucket{route="/v1/shadow",le="+Inf"} 0
        luahier_request_duration_seconds_bucket{route="/v1/shadow",le="0.0001"} 0
        luahier_request_duration_seconds_bucket{route="/v1/shadow",le="0.00025"} 0
        luahier_request_duration_seconds_bucket{route="/v1/shadow",le="0.0005"} 0
        luahier_request_duration_seconds_bucket{route="/v1/shadow",le="0.001"} 0
        luahier_request_duration_seconds_bucket{route="/v1/shadow",le="0.0025"} 0
        luahier_request_duration_seconds_bucket{route="/v1/shadow",le="0.005"} 0
        luahier_request_duration_seconds_bucket{route="/v1/shadow",le="0.01"} 0
        luahier_request_duration_seconds_bucket{route="/v1/shadow",le="0.025"} 0
        luahier_request_duration_seconds_bucket{route="/v1/shadow",le="0.05"} 0
        luahier_request_duration_seconds_bucket{route="/v1/shadow",le="0.1"} 0
        luahier_request_duration_seconds_bucket{route="/v1/shadow",le="0.25"} 0
        luahier_request_duration_seconds_bucket{route="/v1/shadow",le="0.5"} 0
        luahier_request_duration_seconds_bucket{route="/v1/shadow",le="1.0"} 0
        luahier_request_duration_seconds_bucket{route="/v1/shadow",le="10.0"} 0
        luahier_request_duration_seconds_bucket{route="/v1/shadow",le="2.5"} 0
        luahier_request_duration_seconds_bucket{route="/v1/shadow",le="5.0"} 0
        luahier_request_duration_seconds_count{route="/healthz"} 0
        luahier_request_duration_seconds_count{route="/livez"} 0
        luahier_request_duration_seconds_count{route="/metrics"} 0
        luahier_request_duration_seconds_count{route="/openapi.json"} 0
        luahier_request_duration_seconds_count{route="/readyz"} 0
        luahier_request_duration_seconds_count{route="/v1/dispatch"} 0
        luahier_request_duration_seconds_count{route="/v1/reload"} 0
        luahier_request_duration_seconds_count{route="/v1/required-revision"} 0
        luahier_request_duration_seconds_count{route="/v1/shadow"} 0
        luahier_request_duration_seconds_sum{route="/healthz"} 0.0
        luahier_request_duration_seconds_sum{route="/livez"} 0.0
        luahier_request_duration_seconds_sum{route="/metrics"} 0.0
        luahier_request_duration_seconds_sum{route="/openapi.json"} 0.0
        luahier_request_duration_seconds_sum{route="/readyz"} 0.0
        luahier_request_duration_seconds_sum{route="/v1/dispatch"} 0.0
        luahier_request_duration_seconds_sum{route="/v1/reload"} 0.0
        luahier_request_duration_seconds_sum{route="/v1/required-revision"} 0.0
        luahier_request_duration_seconds_sum{route="/v1/shadow"} 0.0
        luahier_revision 1.0
        luahier_revision_info{hash=HASH} 1.0
        luahier_rule_errors_total{type="DispatchDepthExceeded"} 0
        luahier_rule_errors_total{type="HostError"} 0
        luahier_rule_errors_total{type="InstructionLimitExceeded"} 0
        luahier_rule_errors_total{type="LuaError"} 0
        luahier_rule_errors_total{type="MemoryError"} 0
        luahier_rule_errors_total{type="MemoryLimitExceeded"} 0
        luahier_rule_errors_total{type="PayloadError"} 0
        luahier_rule_errors_total{type="ResponderContractError"} 0
        luahier_rule_errors_total{type="TimeLimitExceeded"} 0
        luahier_shadow_active 0.0
        luahier_shadow_differences_total{field="by"} 0
        luahier_shadow_differences_total{field="kind"} 0
        luahier_shadow_differences_total{field="responder"} 0
        luahier_shadow_differences_total{field="status"} 0
        luahier_shadow_differences_total{field="type"} 0
        luahier_shadow_differences_total{field="value"} 0
        luahier_shadow_lines_total{result="different"} 0
        luahier_shadow_lines_total{result="same"} 0
        luahier_shadow_sampled_total 0
        luahier_shadow_skipped_total{reason="busy"} 0
        luahier_shadow_skipped_total{reason="stopped"} 0
        luahier_workers 1.0
        process_cpu_seconds_total VALUE
        process_open_fds VALUE
        process_resident_memory_bytes VALUE
        process_start_time_seconds VALUE
        process_virtual_memory_bytes VALUE
        """#

    @Test func theFirstMetricsShowTheSameZeroSeriesAsARegistryMadeAtStart() async throws {
        let (server, _) = try RouteTests.server()
        try await server.application().test(.router) { client in
            let text = try await RouteTests.metrics(client)
            #expect(Self.normalized(text) == Self.zeroState.split(separator: "\n").map(String.init), "\(text)")
        }
    }

    /// A label whose values are a fixed, documented set shows each at 0 before it first
    /// counts, so that its first increase shows: each of the host's error types, and each
    /// route's latency.
    @Test func everyRuleErrorTypeAndEveryRouteShowBeforeTheirFirstCount() async throws {
        let (server, _) = try RouteTests.server()
        try await server.application().test(.router) { client in
            let text = try await RouteTests.metrics(client)
            for type in RuleFailures.errorTypes.map(\.type) {
                #expect(text.contains(#"luahier_rule_errors_total{type="\#(type)"} 0"#), "\(type)")
            }
            for (route, _) in RulesServer.routeMethods {
                #expect(text.contains(#"luahier_request_duration_seconds_count{route="\#(route)"} 0"#), "\(route)")
            }
            // The scrape itself is counted once it is answered: the next one shows it.
            let again = try await RouteTests.metrics(client)
            #expect(again.contains(#"luahier_request_duration_seconds_count{route="/metrics"} 1"#))
        }
    }

    /// Registered once the port is bound, before the first request comes: the registry's
    /// first look at its types is no request's wait, and not part of the start until the port
    /// accepts either.
    @Test func theSeriesAreRegisteredOnceThePortIsBound() async throws {
        let (server, _) = try RouteTests.server()
        #expect(!server.metrics.isRegistered)
        try await server.application().test(.live) { _ in
            #expect(server.metrics.isRegistered)
        }
    }

    /// Each outcome status counts under its own label (the counters are kept by the status's
    /// place among `LineStatus.allCases`).
    @Test func eachOutcomeStatusCountsUnderItsOwnLabel() async throws {
        let (server, _) = try RouteTests.server()
        for (count, status) in LineStatus.allCases.enumerated() { server.metrics.record(status, count: count + 1) }
        try await server.application().test(.router) { client in
            let text = try await RouteTests.metrics(client)
            for (count, status) in LineStatus.allCases.enumerated() {
                #expect(text.contains(#"luahier_outcomes_total{status="\#(status.rawValue)"} \#(count + 1)"#), "\(status) in \(text)")
            }
        }
    }

    /// Made on first use: the counts of what came before are in the first exposition, and the
    /// zero series beside them.
    @Test func countsBeforeTheFirstExpositionAreKept() async throws {
        let (server, _) = try RouteTests.server()
        server.recordReload(.unchanged(server.pool.revision))
        try await server.application().test(.router) { client in
            let answered = try await client.execute(
                uri: "/v1/dispatch", method: .post, headers: RouteTests.json, body: ByteBuffer(string: #"{"id": 1, "at": "/app", "event": "Ask"}"#))
            // Its fields as they were before the answer made them at once: the request id once, last.
            let named = ["content-type", "content-length", "x-request-id"]
            #expect(answered.headers.map(\.name.canonicalName).filter(named.contains) == named)
            #expect(answered.headers[.contentLength] == String(answered.body.readableBytes))
            _ = try await client.execute(uri: "/v1/dispatch", method: .get)
            let text = try await RouteTests.metrics(client)
            for line in [#"luahier_reloads_total{result="unchanged"} 1"#, #"luahier_reloads_total{result="loaded"} 0"#,
                         #"luahier_outcomes_total{status="invalid"} 0"#,
                         #"luahier_http_requests_total{code="200",method="POST",route="/v1/dispatch"} 1"#,
                         #"luahier_http_requests_total{code="405",method="GET",route="/v1/dispatch"} 1"#,
                         #"luahier_limit_trips_total{limit="memory"} 0"#] {
                #expect(text.contains(line), "\(line) in \(text)")
            }
        }
    }
}
#endif
