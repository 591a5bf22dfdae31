//! The queue-consumer workload (`[workload] kind = "queue"`) on scripted runs: a visibility
//! timeout shorter than a deterministic processing time delivers every message again (then
//! `max_receive_count` dead-letters it), a longer one delivers it once; an idempotency key
//! turns the second processing into a 409 and a later delivery into the stored result; a lost
//! acknowledgement delivers the message again.

use crate::support::{at_point as at, check_endings, first_runs};
use retrysim::metrics::RunMetrics;

/// 9 messages, one every 10 s (at 10, 20, ..., 90 s), each processed for exactly 45 s by one
/// of 20 consumers (never all busy), behind a store that keeps keys for 24 h.
const QUEUE: &str = r#"
name = "queue"
horizon = "5m"
[workload]
kind = "queue"
rate = 0.1
duration = "100s"
arrivals = "fixed"
visibility_timeout = "30s"
max_receive_count = 2
[server]
concurrency = 20
service_time = { dist = "constant", value = "45s" }
idempotency = { ttl = "24h" }
[[strategies]]
name = "consumer"
backoff = { kind = "none" }
[sweep]
"workload.visibility_timeout" = ["30s", "60s"]
"workload.max_receive_count" = [2, 3]
"strategies.consumer.idempotency" = ["none", "per-op"]
"#;

/// The endings add up, and every receive but a message's first is a redelivery (or a
/// re-drive).
fn check_deliveries(m: &RunMetrics) {
    check_endings(m);
    assert_eq!(m.redeliveries, m.calls - m.ops - m.redriven, "{m:?}");
}

#[test]
fn a_visibility_timeout_shorter_than_the_processing_delivers_every_message_again() {
    let runs = first_runs(QUEUE, &[]);
    for receives in ["2", "3"] {
        for keys in ["none", "per-op"] {
            // 60 s > 45 s: each message is taken once, processed and acknowledged after 45 s.
            let m = at(&runs, &["60s", receives, keys]);
            check_deliveries(m);
            assert_eq!((m.ops, m.succeeded, m.calls, m.redeliveries, m.duplicates), (9, 9, 9, 0, 0));
            assert_eq!(m.latency_max_s, 45.0);
        }
    }
    // 30 s < 45 s: the message is visible again at 30 s and another consumer takes it; at 60 s
    // the second receive times out too. With max_receive_count = 2 it is dead-lettered then:
    // delivered exactly twice. Without a key both consumers apply it (the second at 75 s).
    let m = at(&runs, &["30s", "2", "none"]);
    check_deliveries(m);
    assert_eq!((m.dead_lettered, m.redeliveries, m.calls), (9, 9, 18));
    assert_eq!((m.applied, m.duplicates, m.dead_lettered_but_applied), (9, 9, 9));
    assert_eq!(m.latency_max_s, 60.0, "dead-lettered at the second timeout");
    // With a key the second delivery gets 409 (the first is in progress): applied once.
    let m = at(&runs, &["30s", "2", "per-op"]);
    check_deliveries(m);
    assert_eq!((m.dead_lettered, m.redeliveries, m.applied, m.duplicates), (9, 9, 9, 0));
    // A third delivery (60 s): without a key a third execution; with it, the stored result
    // (the first finished at 45 s), so the message is acknowledged at 60 s.
    let m = at(&runs, &["30s", "3", "none"]);
    check_deliveries(m);
    assert_eq!((m.dead_lettered, m.redeliveries, m.duplicates), (9, 18, 18));
    let m = at(&runs, &["30s", "3", "per-op"]);
    check_deliveries(m);
    assert_eq!((m.succeeded, m.dead_lettered, m.redeliveries, m.duplicates), (9, 0, 18, 0));
    assert_eq!(m.latency_max_s, 60.0);
}

#[test]
fn a_lost_acknowledgement_delivers_the_message_again() {
    // Every acknowledgement is lost: each message is delivered max_receive_count = 3 times
    // 60 s apart and dead-lettered; without a key each delivery pays, with one only the first.
    let lost = first_runs(
        QUEUE,
        &[
            ("workload.ack_loss", "1.0"),
            ("workload.max_receive_count", "3"),
            ("workload.visibility_timeout", "60s"),
            ("sweep", "{ \"strategies.consumer.idempotency\" = [\"none\", \"per-op\"] }"),
        ],
    );
    for (keys, duplicates) in [("none", 18), ("per-op", 0)] {
        let m = at(&lost, &[keys]);
        check_deliveries(m);
        assert_eq!(
            (m.succeeded, m.dead_lettered, m.redeliveries, m.duplicates),
            (0, 9, 18, duplicates),
            "{keys}"
        );
        assert_eq!(m.latency_max_s, 180.0);
    }
    // Half of them lost: some messages get through on a later delivery.
    let half = first_runs(
        QUEUE,
        &[("workload.ack_loss", "0.5"), ("workload.visibility_timeout", "60s"), ("sweep", "{}")],
    );
    let m = &half[0].1;
    check_deliveries(m);
    assert!(m.redeliveries > 0 && m.succeeded > 0, "{m:?}");
}

#[test]
fn a_redrive_of_the_queue_s_dead_letters_sends_them_again() {
    // The dead-lettered messages (30 s < 45 s, two receives) are re-driven 2 minutes later
    // with a key per message: the stored result acknowledges each at once.
    let runs = first_runs(
        QUEUE,
        &[
            ("strategies.consumer.redrive", "{ after = \"2m\" }"),
            ("strategies.consumer.idempotency", "\"per-op\""),
            ("sweep", "{}"),
        ],
    );
    let m = &runs[0].1;
    check_deliveries(m);
    assert_eq!((m.dead_lettered, m.redriven, m.redrive_succeeded, m.duplicates), (9, 9, 9, 0));
}

#[test]
fn redeliveries_match_the_chance_that_processing_outlasts_the_visibility_timeout() {
    // Without a receive limit each delivery is processed for an independent lognormal time S
    // (median 10 s, sigma 0.5) and acknowledged if S <= 30 s, else delivered again: deliveries
    // per message are geometric, so redeliveries per message average p / (1 - p) with
    // p = P(S > 30 s) = 1 - Phi(ln 3 / 0.5) = 0.0140. Each redelivery is processed in full,
    // without a key a duplicate; with one, none.
    let text = r#"
name = "visibility"
seed = 3
runs = 20
horizon = "30m"
[workload]
kind = "queue"
rate = 5.0
duration = "10m"
visibility_timeout = "30s"
[server]
concurrency = 200
service_time = { dist = "lognormal", median = "10s", sigma = 0.5 }
idempotency = { ttl = "24h" }
[[strategies]]
name = "consumer"
backoff = { kind = "none" }
[sweep]
"strategies.consumer.idempotency" = ["none", "per-op"]
"#;
    let exp = retrysim::experiment::load_str(text, "visibility.toml", &Default::default()).unwrap();
    let p = 1.0 - retrysim::stats::normal_cdf(3f64.ln() / 0.5);
    let expected = p / (1.0 - p);
    for point in &exp.points {
        let keys = &point.values[0];
        let per_message: Vec<f64> = (0..exp.runs as u64)
            .map(|run| {
                let m = retrysim::assembly::simulate(
                    &point.spec,
                    &point.strategies[0],
                    retrysim::engine::rng::run_seed(exp.seed, run),
                );
                check_deliveries(&m);
                assert_eq!((m.succeeded, m.dead_lettered), (m.ops, 0), "every message acknowledged");
                if keys == "none" {
                    assert_eq!(m.duplicates, m.redeliveries, "each redelivery is processed again");
                } else {
                    assert_eq!(m.duplicates, 0);
                }
                m.redeliveries as f64 / m.ops as f64
            })
            .collect();
        let mean = retrysim::stats::mean(&per_message);
        let se = retrysim::stats::standard_error(retrysim::stats::sample_sd(&per_message), per_message.len());
        if keys == "none" {
            assert!((mean - expected).abs() <= 4.0 * se, "{mean} vs {expected} (se {se})");
        } else {
            // With a key a redelivery while the first processing runs gets 409 and waits out a
            // second timeout: at least as many redeliveries.
            assert!(mean >= expected - 4.0 * se, "{mean} vs {expected} (se {se})");
        }
    }
}
