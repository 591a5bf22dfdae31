//! The client bulkhead (DESIGN §4.8 `bulkhead`) on whole runs, with constant service times and
//! fixed-interval arrivals so that every count and every instant is exact: exactly
//! `max_in_flight` operations inside, the rest failing at once or waiting in a FIFO up to
//! `max_wait`, a permit held across an operation's retries and backoffs, and the two scopes.

use crate::support::{failed, run_one as run};
use retrysim::metrics::FailReason;

/// Operation k (k = 1..9) arrives at 0.1 k s and takes 250 ms at a server with room for all
/// (10 workers): without a bulkhead up to 3 are in flight at once.
const OPEN: &str = r#"
name = "bulkhead"
seed = 1
runs = 1
horizon = "5s"
[workload]
kind = "open"
arrivals = "fixed"
rate = 10.0
duration = "1s"
[server]
concurrency = 10
service_time = { dist = "constant", value = "250ms" }
[client]
max_attempts = 1
bulkhead = { max_in_flight = 2 }
[[strategies]]
name = "once"
backoff = { kind = "none" }
"#;

const MS: f64 = 1e-3;

/// resilience4j's default wait of 0: with 2 inside, the third fails at once. 1 (0.10-0.35) and
/// 2 (0.20-0.45) are in when 3 arrives; 4 and 5 take the permits 1 and 2 gave back; 6 finds 4
/// and 5 in; 7 and 8 go in after them, and 9 finds 7 and 8 in.
#[test]
fn with_no_wait_the_operation_over_the_limit_fails_at_once() {
    let m = run(OPEN, &[]);
    assert_eq!((m.ops, m.succeeded, m.calls, m.server_calls), (9, 6, 6, 6));
    assert_eq!(failed(&m, FailReason::Bulkhead), 3, "operations 3, 6 and 9");
    assert_eq!(m.failed, 3, "counted in failed");
    // A refused operation ends where it started: 0 s.
    assert_eq!((m.latency_min_s, m.latency_max_s), (0.0, 0.25));
    assert!((m.latency_mean_s - 6.0 * 0.25 / 9.0).abs() < 1e-12, "{}", m.latency_mean_s);
    assert_eq!(m.completion_time_s, 1.05, "8's answer, at 0.80 + 0.25");
    // The refusals happened with exactly 2 inside: one permit more lets every operation in.
    let m3 = run(OPEN, &["client.bulkhead.max_in_flight=3"]);
    assert_eq!((m3.succeeded, failed(&m3, FailReason::Bulkhead)), (9, 0));
    // And without a bulkhead the run is the same as with one that never binds.
    let none = run(&OPEN.replace("bulkhead = { max_in_flight = 2 }\n", ""), &[]);
    assert_eq!(format!("{none:?}"), format!("{m3:?}"));
}

/// A wait of 120 ms in a FIFO: 3 waits 50 ms (1 ends at 0.35), 4 waits 50 ms (2 ends at 0.45),
/// 5 and 6 wait 100 ms (for 3 at 0.60 and 4 at 0.70); 7 would wait 150 ms (5 ends at 0.85), so
/// it fails at 0.82, and 8, next in line, takes 5's permit at 0.85; 9 takes 6's at 0.95.
#[test]
fn a_wait_is_served_in_arrival_order_and_fails_at_max_wait() {
    let m = run(OPEN, &["client.bulkhead.max_wait=120ms"]);
    assert_eq!((m.ops, m.succeeded, m.calls, m.server_calls), (9, 8, 8, 8));
    assert_eq!(failed(&m, FailReason::Bulkhead), 1, "operation 7");
    let latencies_ms = [250.0, 250.0, 300.0, 300.0, 350.0, 350.0, 120.0, 300.0, 300.0];
    let mean = latencies_ms.iter().sum::<f64>() * MS / 9.0;
    assert!((m.latency_mean_s - mean).abs() < 1e-12, "{} vs {mean}", m.latency_mean_s);
    assert_eq!((m.latency_min_s, m.latency_max_s), (0.12, 0.35));
    assert_eq!(m.completion_time_s, 1.2, "9's answer, at 0.95 + 0.25");
    // With 7 waiting (150 ms, until 0.85), 8 waits for 6 (150 ms, until 0.95) and 9 for 7
    // (200 ms, until 1.10): a wait of 160 ms now fails 9 instead; 250 ms lets every one in.
    let m = run(OPEN, &["client.bulkhead.max_wait=160ms"]);
    assert_eq!((m.succeeded, failed(&m, FailReason::Bulkhead)), (8, 1));
    assert_eq!(m.completion_time_s, 1.2, "8's answer, at 0.95 + 0.25; 9 failed at 1.06");
    let m = run(OPEN, &["client.bulkhead.max_wait=250ms"]);
    assert_eq!((m.succeeded, failed(&m, FailReason::Bulkhead)), (9, 0));
    assert_eq!((m.latency_max_s, m.completion_time_s), (0.45, 1.35), "9 waits 200 ms");
}

/// An operation keeps its permit across its retries and its backoff: one permit, attempts that
/// time out after 40 ms, a 100 ms backoff, two attempts. 1 holds the permit from 0.10 to 0.28
/// (attempts at 0.10 and 0.24): 2 arrives during 1's backoff and is refused; 3 holds it from
/// 0.30 to 0.48, and so on: the odd operations run, the even ones are refused. A bulkhead
/// around each attempt instead would have let 2, 4, 6 and 8 in during the backoffs.
#[test]
fn the_permit_is_held_across_retries_and_backoffs() {
    let m = run(
        OPEN,
        &[
            "client.bulkhead.max_in_flight=1",
            "client.max_attempts=2",
            "client.timeout=40ms",
            "strategies.once.backoff={ kind = \"constant\", base = \"100ms\" }",
        ],
    );
    assert_eq!((m.ops, m.succeeded, m.calls, m.server_calls), (9, 0, 10, 10));
    assert_eq!(failed(&m, FailReason::Exhausted), 5, "operations 1, 3, 5, 7 and 9");
    assert_eq!(failed(&m, FailReason::Bulkhead), 4, "operations 2, 4, 6 and 8");
    assert_eq!(m.completion_time_s, 1.08, "9's second attempt times out at 1.04 + 0.04");
}

/// Two closed-workload clients, three operations each, all starting at 0 with no think time;
/// 250 ms of service. One permit per client never binds (each client has one operation at a
/// time); one permit for the fleet does.
const CLOSED: &str = r#"
name = "bulkhead-scope"
seed = 1
runs = 1
horizon = "5s"
[workload]
kind = "closed"
clients = 2
ops_per_client = 3
think_time = "0s"
ramp = "0s"
[server]
concurrency = 10
service_time = { dist = "constant", value = "250ms" }
[client]
max_attempts = 1
bulkhead = { max_in_flight = 1, max_wait = "10s" }
[[strategies]]
name = "once"
backoff = { kind = "none" }
"#;

#[test]
fn a_bulkhead_per_client_binds_each_client_and_a_shared_one_the_fleet() {
    // Per client: both clients run side by side, 3 x 250 ms.
    let m = run(CLOSED, &[]);
    assert_eq!((m.ops, m.succeeded, m.failed), (6, 6, 0));
    assert_eq!((m.completion_time_s, m.latency_max_s), (0.75, 0.25));
    // Shared, waiting: the clients take turns through the one permit (the FIFO puts each
    // client's next operation behind the other's waiting one): 6 x 250 ms, every operation
    // but the first waiting 250 ms.
    let m = run(CLOSED, &["client.bulkhead.scope=shared"]);
    assert_eq!((m.ops, m.succeeded, m.failed), (6, 6, 0));
    assert_eq!((m.completion_time_s, m.latency_min_s, m.latency_max_s), (1.5, 0.25, 0.5));
    // Shared, no wait: the client second at t = 0 is refused three times at once (its next
    // operation starts as the last one fails); the first runs its three.
    let m = run(CLOSED, &["client.bulkhead.scope=shared", "client.bulkhead.max_wait=0s"]);
    assert_eq!((m.ops, m.succeeded, m.calls), (6, 3, 3));
    assert_eq!(failed(&m, FailReason::Bulkhead), 3);
    assert_eq!(m.completion_time_s, 0.75);
}
