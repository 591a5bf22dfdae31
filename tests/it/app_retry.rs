//! The application's retry loop above the library's (`app_retry`, DESIGN §4.4) on scripted
//! runs: each pass runs the library's whole loop again (its attempts, backoff and deadline
//! start over), so calls multiply; the application's backoff sits between passes; the
//! library's controls see one operation per pass; a new pass's new idempotency key pays
//! again; and one pass is the same run as no application loop at all.

use crate::support::{at_point as at, check_endings, first_runs, run_strategy};
use retrysim::metrics::RunMetrics;
use retrysim::policy::FailReason;

/// One client, one operation, against a server that answers 503 at once for the first
/// `OUTAGE` of the run (1 s of work otherwise). The library makes 3 attempts 1 s apart; the
/// application makes 4 passes 10 s apart.
const JOB: &str = r#"
name = "app-retry"
horizon = "5m"
[workload]
kind = "closed"
ops_per_client = 1
[server]
concurrency = 4
service_time = { dist = "constant", value = "1s" }
[[server.faults]]
kind = "outage"
start = "0"
duration = "OUTAGE"
status = 503
[client]
max_attempts = 3
backoff = { kind = "constant", base = "1s" }
[[strategies]]
name = "app"
app_retry = { max_attempts = 4, backoff = { kind = "constant", base = "10s" } }
"#;

fn job(outage: &str) -> String {
    JOB.replace("OUTAGE", outage)
}

fn failed(m: &RunMetrics, reason: FailReason) -> u64 {
    m.failed_by[reason as usize]
}

#[test]
fn against_a_dead_server_calls_per_operation_are_app_passes_times_library_attempts() {
    let runs =
        first_runs(&(job("10m") + "[sweep]\n\"strategies.app.app_retry.max_attempts\" = [1, 2, 4]\n"), &[]);
    for (passes, calls) in [("1", 3), ("2", 6), ("4", 12)] {
        let m = at(&runs, &[passes]);
        check_endings(m);
        assert_eq!((m.ops, m.failed, m.calls), (1, 1, calls), "{passes} passes");
        assert_eq!(failed(m, FailReason::Exhausted), 1, "the last pass's reason");
    }
    // Passes try at 0, 1, 2 s, then 10 s after each failure: 12..14, 24..26, 36..38 s. The
    // latency counts from the first pass's start.
    assert_eq!(at(&runs, &["4"]).latency_max_s, 38.0);
    assert_eq!(at(&runs, &["2"]).latency_max_s, 14.0);
}

#[test]
fn one_pass_is_the_run_without_an_application_loop() {
    let with = run_strategy(&job("10s"), &["strategies.app.app_retry.max_attempts=1"], 0);
    let without = run_strategy(&job("10s").replace("app_retry = {", "# app_retry = {"), &[], 0);
    assert_eq!(format!("{with:?}"), format!("{without:?}"));
}

#[test]
fn the_application_backoff_decides_when_the_outage_is_over() {
    // The outage ends at 20 s. Passes 1 and 2 fail (tries at 0..2 and 12..14 s); pass 3's first
    // try at 24 s is served: success at 25 s after 7 calls. Without the application's loop the
    // operation fails at 2 s.
    let runs =
        first_runs(&(job("20s") + "[sweep]\n\"strategies.app.app_retry.max_attempts\" = [1, 4]\n"), &[]);
    let m = at(&runs, &["4"]);
    check_endings(m);
    assert_eq!((m.succeeded, m.calls, m.applied), (1, 7, 1));
    assert_eq!(m.latency_max_s, 25.0);
    let m = at(&runs, &["1"]);
    assert_eq!((m.succeeded, m.failed, m.calls), (0, 1, 3));
}

#[test]
fn the_application_backoff_grows_with_the_passes_it_failed() {
    // Exponential 10 s, 20 s, 40 s between passes: the last pass starts at 2 + 10 + 2 + 20 +
    // 2 + 40 = 76 s and fails at 78 s.
    let m = run_strategy(
        &job("10m"),
        &["strategies.app.app_retry.backoff={ kind = \"exponential\", base = \"10s\", cap = \"1m\" }"],
        0,
    );
    assert_eq!((m.failed, m.calls), (1, 12));
    assert_eq!(m.latency_max_s, 78.0);
}

#[test]
fn each_pass_has_its_own_deadline() {
    // A 2.5 s deadline and unlimited attempts: each pass tries at +0, +1 and +2 s (its 4th try,
    // at +3 s, could not start before the deadline). Were the deadline the operation's, the
    // second pass could send nothing.
    let m = run_strategy(&job("10m"), &["client.max_attempts=1000", "client.deadline=\"2.5s\""], 0);
    assert_eq!((m.failed, m.calls), (1, 12));
    assert_eq!(failed(&m, FailReason::Deadline), 1);
}

#[test]
fn the_application_retries_only_the_reasons_it_is_told() {
    let only_breaker = ["strategies.app.app_retry.retry_on=[\"breaker\"]"];
    let m = run_strategy(&job("10m"), &only_breaker, 0);
    assert_eq!((m.failed, m.calls), (1, 3), "exhausted is not retried");
    // A 404 is the library's non_retryable: not retried by default, retried when listed.
    let not_found = job("10m").replace("status = 503", "status = 404");
    assert_eq!(run_strategy(&not_found, &[], 0).calls, 1);
    let listed = ["strategies.app.app_retry.retry_on=[\"non_retryable\"]"];
    assert_eq!(run_strategy(&not_found, &listed, 0).calls, 4);
}

#[test]
fn the_library_budget_sees_one_operation_per_pass() {
    // Finagle's budget at one retry per request and no free retries: each pass is a request
    // to it, so each pass gets its one retry (2 calls) before the budget refuses the next,
    // and the application retries that refusal: 4 x 2 calls.
    let budget = ["client.budget={ kind = \"ratio\", ratio = 1.0, min_per_second = 0.0 }"];
    let m = run_strategy(&job("10m"), &budget, 0);
    assert_eq!((m.failed, m.calls), (1, 8));
    assert_eq!(failed(&m, FailReason::Budget), 1);
}

/// A per-operation idempotency key against a gateway that answers 429 after the effect
/// commits, until 10 s: the first pass's try commits at 1 s and its retry gets the stored
/// result behind the 429. The second pass, at 12 s, is after the outage.
const PAID: &str = r#"
name = "app-retry-keys"
horizon = "5m"
[workload]
kind = "closed"
ops_per_client = 1
[server]
concurrency = 4
service_time = { dist = "constant", value = "1s" }
idempotency = { ttl = "24h" }
[[server.faults]]
kind = "errors"
start = "0"
duration = "10s"
probability = 1.0
status = 429
after_effect = true
[client]
max_attempts = 2
backoff = { kind = "constant", base = "1s" }
idempotency = "per-op"
[[strategies]]
name = "app"
app_retry = { max_attempts = 2, backoff = { kind = "constant", base = "10s" } }
[sweep]
"strategies.app.app_retry.key" = ["same", "new"]
"#;

#[test]
fn a_new_pass_with_a_new_key_pays_again() {
    let runs = first_runs(PAID, &[]);
    // The first pass's key: the store answers the paid operation from its result.
    let same = at(&runs, &["same"]);
    check_endings(same);
    assert_eq!((same.succeeded, same.applied, same.duplicates, same.calls), (1, 1, 0, 3));
    // A new key (a library that makes one per call): it executes again, a double charge.
    let new = at(&runs, &["new"]);
    check_endings(new);
    assert_eq!((new.succeeded, new.applied, new.duplicates, new.calls), (1, 1, 1, 3));
    assert!(new.latency_max_s > same.latency_max_s, "the new key's pass does the work again");
}

#[test]
fn the_application_loop_multiplies_the_layers_below_it() {
    // A client of 3 attempts behind two gateway layers of 3 against a server that fails
    // everything: 27 server calls per pass, 54 with two passes of the application.
    let text = r#"
name = "layers"
horizon = "10s"
[workload]
kind = "open"
rate = 100.0
duration = "2s"
[server]
concurrency = 10
service_time = { dist = "constant", value = "1ms" }
errors = [{ status = 503, probability = 1.0 }]
[[strategies]]
name = "app"
backoff = { kind = "none" }
max_attempts = 3
layers = [{ max_attempts = 3 }, { max_attempts = 3 }]
app_retry = { max_attempts = 2, backoff = { kind = "full-jitter", base = "1s" } }
"#;
    let m = run_strategy(text, &[], 0);
    assert!(m.ops > 150, "ops {}", m.ops);
    assert_eq!(m.failed, m.ops);
    assert_eq!((m.calls, m.server_calls), (6 * m.ops, 54 * m.ops));
}

#[test]
fn on_a_call_graph_the_application_loop_multiplies_every_hop() {
    // A 3-deep chain whose bottom answers 503, every hop making 4 attempts: 4 x 4 x 4 = 64
    // calls at the bottom per pass of the client's library, 128 with two passes.
    let app = "strategies.every-layer.app_retry={ max_attempts = 2, backoff = { kind = \"constant\", base = \"100ms\" } }";
    let m = run_strategy(crate::graph::DEAD_CHAIN, &[app], 0);
    assert_eq!((m.ops, m.failed), (100, 100));
    let per_op = |s: usize| m.graph.services[s].calls as f64 / m.ops as f64;
    assert_eq!([per_op(0), per_op(1), per_op(2)], [8.0, 32.0, 128.0]);
}

#[test]
fn a_new_pass_starts_with_a_first_attempt_for_envoys_concurrent_retry_budget() {
    // Envoy's budget at one retry in flight (shared), 1 s of work answered 503, 3 attempts
    // without backoff, 2 passes 250 ms apart; operations X and Y arrive at 0.5 s and 1 s.
    // X: 1.5 s fails, its retry goes (1.5..2.5, then 2.5..3.5), exhausted at 3.5; its second
    // pass runs alone, 3.75..6.75: 6 calls, 6.25 s. Y: 2 s fails while X's retry is in flight:
    // refused; its second pass's first attempt (2.25..3.25) is no retry, and when it fails
    // X's retry is still in flight: refused again, final at 3.25 (2 calls, 2.25 s). Counting
    // that first attempt's end as a retry's would free X's slot for Y: 10 calls.
    let text = r#"
name = "envoy-budget"
horizon = "1m"
[workload]
kind = "open"
rate = 2.0
duration = "1.2s"
arrivals = "fixed"
[server]
concurrency = 4
service_time = { dist = "constant", value = "1s" }
errors = [{ status = 503, probability = 1.0, after_effect = true }]
[[strategies]]
name = "app"
max_attempts = 3
backoff = { kind = "none" }
budget = { kind = "concurrency", percent = 0.0, min_concurrency = 1, scope = "shared" }
app_retry = { max_attempts = 2, backoff = { kind = "constant", base = "250ms" } }
"#;
    let m = run_strategy(text, &[], 0);
    assert_eq!((m.ops, m.calls), (2, 8));
    assert_eq!((failed(&m, FailReason::Budget), failed(&m, FailReason::Exhausted)), (1, 1));
    assert_eq!((m.latency_max_s, m.latency_mean_s), (6.25, 4.25));
}
