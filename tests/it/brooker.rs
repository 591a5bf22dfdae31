//! Brooker's adaptive retry bucket (`budget.kind = "brooker"`) and retry-ratio breaker
//! (`breaker.kind = "retry-ratio"`) through whole runs: exact retry counts in a total outage,
//! first attempts never refused, and the presets named after the post.

use retrysim::experiment::{self, Experiment, Overrides};
use retrysim::metrics::{FailReason, RunMetrics};

fn load(text: &str, sets: &[&str]) -> Experiment {
    let set = sets.iter().map(|s| experiment::parse_set_arg(s).unwrap()).collect();
    experiment::load_str(text, "brooker.toml", &Overrides { set, ..Default::default() })
        .unwrap_or_else(|e| panic!("{e}"))
}

fn metrics(exp: &Experiment) -> Vec<RunMetrics> {
    retrysim::sweep::run(exp, &|_| {}).runs.into_iter().map(|r| r.metrics).collect()
}

/// Clients that each make 1000 operations one after another against a server that answers
/// every request 503, retrying at once with no attempt limit: only the control bounds them.
const OUTAGE: &str = r#"
name = "brooker-outage"
seed = 5
runs = 2
horizon = "1h"
[workload]
kind = "closed"
clients = 1
ops_per_client = 1000
think_time = "1ms"
[server]
concurrency = 10
service_time = { dist = "constant", value = "1ms" }
errors = [{ status = 503, probability = 1.0 }]
[[strategies]]
name = "bucket"
backoff = { kind = "none" }
budget = { kind = "brooker" }
"#;

/// Retries Brooker's bucket (5 tokens, +0.1 per call up to 5, a retry needs > 1 and takes 1)
/// grants to `calls` calls when every attempt fails and `lost` of their deposits fell into the
/// full bucket (the calls that started before the first failure). Whatever the interleaving,
/// retries = 5 + 0.1 x (calls - lost) - tokens left, and the tokens left are in [0, 1]: the
/// last thing the bucket sees is a refused retry (every call ends refused), so at most 1
/// token, and never below 0. So retries = floor(5 + 0.1 x (calls - lost)), unless that sum is
/// a whole number (then 1 token may be left: one less).
///
/// One client, calls one after another: the first call's deposit is lost and it retries 4
/// times (5 -> 1), the second makes 1.1 (one retry), then every 10th call (12, 22, ...): 104
/// for 1000 calls, `floor(4.9 + 0.1 x 1000)`.
fn bucket_retries(calls: u64, lost: u64) -> u64 {
    // In tenths of a token, exactly: 50 + (calls - lost) tenths.
    let tenths = 50 + (calls - lost);
    if tenths.is_multiple_of(10) { tenths / 10 - 1 } else { tenths / 10 }
}

#[test]
fn brooker_bucket_grants_exactly_its_tokens_in_a_total_outage() {
    assert_eq!(bucket_retries(1000, 1), 104);
    for m in metrics(&load(OUTAGE, &[])) {
        assert_eq!(m.ops, 1000);
        assert_eq!(m.calls - m.ops, bucket_retries(1000, 1), "retries");
        assert_eq!(m.server_calls, m.calls);
        assert_eq!(m.succeeded, 0);
        assert_eq!(m.failed_by[FailReason::Budget as usize], 1000, "every operation ends refused");
    }
    // Per client: three clients, three buckets, each serial. Shared: one bucket for 3000
    // interleaved calls; the three clients start together at t = 0, before any failure, so
    // three deposits are lost: floor(5 + 0.1 x 2997) = 304.
    let three = ["workload.clients=3"];
    for m in metrics(&load(OUTAGE, &three)) {
        assert_eq!(m.calls - m.ops, 3 * bucket_retries(1000, 1));
    }
    let shared = ["workload.clients=3", "strategies.bucket.budget.scope=\"shared\""];
    for m in metrics(&load(OUTAGE, &shared)) {
        assert_eq!(m.calls - m.ops, bucket_retries(3000, 3));
        assert_eq!(bucket_retries(3000, 3), 304);
    }
}

#[test]
fn retry_ratio_breaker_refuses_retries_but_never_a_first_attempt() {
    // Every attempt fails: each client's first failure already makes failures / calls = 1,
    // so no retry is ever granted, and every operation still sends its first attempt.
    let text = OUTAGE.replace("budget = { kind = \"brooker\" }\n", "max_attempts = 4\n");
    let breaker = "strategies.bucket.breaker={ kind = \"retry-ratio\" }";
    for clients in [1, 3] {
        let c = format!("workload.clients={clients}");
        for m in metrics(&load(&text, &[&c, breaker])) {
            assert_eq!(m.calls, m.ops, "{clients} clients: one attempt per operation");
            assert_eq!(m.failed_by[FailReason::Breaker as usize], m.ops);
        }
    }
    // resilience4j's breaker in the same outage opens and then fails first attempts too.
    let r4j = "strategies.bucket.breaker={ window = 20, minimum_calls = 20, open_for = \"1h\" }";
    for m in metrics(&load(&text, &[r4j])) {
        assert!(m.calls < m.ops, "an open resilience4j breaker refuses first attempts");
    }
}

/// Failures at 5 % over an open workload of 100 clients: the breaker refuses the retries of
/// clients whose first failure came within their first 10 calls (1 failure in fewer than 10
/// calls is over 10 %), grants the others, and every operation's first attempt reaches the
/// server.
#[test]
fn retry_ratio_breaker_sends_every_first_attempt_under_partial_failure() {
    let text = r#"
name = "brooker-partial"
seed = 7
runs = 3
horizon = "12s"
[workload]
kind = "open"
rate = 1000.0
duration = "10s"
clients = 100
[server]
concurrency = 100
service_time = { dist = "constant", value = "1ms" }
errors = [{ status = 503, probability = 0.05 }]
[[strategies]]
name = "breaker"
preset = "brooker-circuit-breaker"
"#;
    for m in metrics(&load(text, &[])) {
        assert!(m.failed_by[FailReason::Breaker as usize] > 0, "early failures are over 10 %");
        assert!(m.calls >= m.ops, "{} calls for {} ops: a first attempt was refused", m.calls, m.ops);
        let retries = m.calls - m.ops;
        assert!(retries > 0, "below 10 % the breaker grants retries");
        // Each granted retry follows its own counted failure, and at its last grant a client
        // had counted at most 0.1 x its calls: retries <= 0.1 x operations, exactly.
        assert!(retries as f64 <= 0.1 * m.ops as f64, "{retries} retries for {} ops", m.ops);
        assert_eq!(m.server_calls, m.calls);
    }
}
