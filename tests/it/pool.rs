//! The client connection pool (DESIGN §4.7 `pool`) on whole runs, with constant service times
//! and fixed-interval arrivals so that every count and every instant is exact: waits queue in
//! the client and expire without reaching the server, a timed-out request closes its
//! connection (or keeps it until its answer), a new connection costs `connect_time`, scopes,
//! and a pool that never binds changes nothing.

use crate::support::run_one as run;
use crate::support::shipped;
use retrysim::assembly::simulate;
use retrysim::engine::rng::run_seed;

/// One request every 100 ms from t = 0.1 s to 0.9 s (9 operations, one attempt each) to one
/// worker that takes 250 ms each, through a pool of one connection.
const SLOW: &str = r#"
name = "pool"
seed = 1
runs = 1
horizon = "5s"
[workload]
kind = "open"
arrivals = "fixed"
rate = 10.0
duration = "1s"
[server]
concurrency = 1
service_time = { dist = "constant", value = "250ms" }
[client]
max_attempts = 1
pool = { size = 1 }
[[strategies]]
name = "once"
backoff = { kind = "none" }
"#;

const MS: f64 = 1e-3;

/// Waits longer than `max_wait` (320 ms) fail in the client. Operation k arrives at 0.1 k s.
/// 1 is served at once (0.1-0.35); 2 and 3 take the connection as it comes back (at 0.35 and
/// 0.60); 4 and 5 wait from 0.4 and 0.5 and give up at 0.72 and 0.82, before it comes back at
/// 0.85; 6 takes it then, 7 gives up at 1.02, 8 takes it at 1.10, 9 gives up at 1.22.
#[test]
fn waits_beyond_max_wait_fail_in_the_client_and_never_reach_the_server() {
    let m = run(SLOW, &["client.pool.max_wait=320ms"]);
    assert_eq!((m.ops, m.calls, m.succeeded), (9, 9, 5));
    assert_eq!(m.pool_timeouts, 4, "operations 4, 5, 7 and 9");
    assert_eq!(m.server_calls, 5, "the waits that expired never reached the server");
    assert_eq!(m.failed_by[retrysim::metrics::FailReason::Exhausted as usize], 4);
    assert_eq!(m.wasted_work_s, 0.0, "every request served had a client waiting");
    // Latencies: successes 250, 400, 550, 500 and 550 ms; four waits of exactly 320 ms.
    assert!(
        (m.latency_mean_s - (250.0 + 400.0 + 550.0 + 500.0 + 550.0 + 4.0 * 320.0) * MS / 9.0).abs() < 1e-12
    );
    assert_eq!((m.latency_min_s, m.latency_max_s), (0.25, 0.55));
    assert_eq!(m.completion_time_s, 1.35, "8's answer, at 1.10 + 0.25");
}

/// Without `max_wait`, the attempt's timeout (320 ms) bounds the wait and the request alike.
/// Closing on timeout (the Go driver): 2 is sent at 0.35 and times out at 0.52 while served;
/// its connection closes and 3 opens a new one at once, joins the server's queue behind 2 and
/// times out too, and so on: every waiter reaches the server, which serves all 9 (the last
/// until 2.35) although only the first client still waited.
#[test]
fn closing_on_timeout_lets_every_waiter_through_to_a_server_that_works_for_nobody() {
    let m = run(SLOW, &["client.timeout=320ms"]);
    assert_eq!((m.ops, m.succeeded, m.pool_timeouts, m.server_calls), (9, 1, 0, 9));
    // 2 is served 80 ms past its timeout (0.52 to 0.60), 3 for 230 ms (0.62 to 0.85), 4 to 9
    // wholly after theirs: 0.08 + 0.23 + 6 x 0.25.
    assert!((m.wasted_work_s - 1.81).abs() < 1e-12, "{}", m.wasted_work_s);
    assert_eq!(m.completion_time_s, 1.22, "9 gives up at 0.9 + 0.32");
}

/// Keeping the connection until the answer (`close_on_timeout = false`) caps the requests at
/// the server at the pool's size: 2 holds it until 0.60, 3 until 0.85, 6 until 1.10, 8 until
/// 1.35; 4, 5, 7 and 9 give up waiting for it.
#[test]
fn keeping_the_connection_until_the_answer_caps_the_work_at_the_server() {
    let m = run(SLOW, &["client.timeout=320ms", "client.pool.close_on_timeout=false"]);
    assert_eq!((m.ops, m.succeeded, m.pool_timeouts, m.server_calls), (9, 1, 4, 5));
    // 2 from 0.52 to 0.60, 3 from 0.62 to 0.85, 6 from 0.92 to 1.10, 8 from 1.12 to 1.35.
    assert!((m.wasted_work_s - 0.72).abs() < 1e-12, "{}", m.wasted_work_s);
    assert!(m.in_server_mean <= 1.0, "never more than one request at the server");
}

/// One operation a second, at 1 s and 2 s, one attempt with a 200 ms timeout, a pool of one
/// connection that takes 50 ms to open; 100 ms of service, three times longer during a slowdown
/// over [0.5 s, 1.5 s), so that the first request times out and the second succeeds.
const CONNECT: &str = r#"
name = "pool-connect"
seed = 1
runs = 1
horizon = "5s"
[workload]
kind = "open"
arrivals = "fixed"
rate = 1.0
duration = "3s"
[server]
concurrency = 1
service_time = { dist = "constant", value = "100ms" }
[[server.faults]]
kind = "slowdown"
start = "500ms"
duration = "1s"
factor = 3.0
[client]
max_attempts = 1
timeout = "200ms"
pool = { size = 1, connect_time = "50ms" }
[[strategies]]
name = "once"
backoff = { kind = "none" }
"#;

/// The first request opens the connection (sent at 1.05, served until 1.35) and times out at
/// 1.2. Closed then, the next request opens a new one and is answered 150 ms after it starts
/// (2.15); kept until the answer at 1.35, the connection idles and the next request is sent at
/// once (answered at 2.10).
#[test]
fn a_closed_connection_makes_the_next_request_pay_connect_time() {
    let closed = run(CONNECT, &[]);
    assert_eq!((closed.ops, closed.succeeded, closed.server_calls, closed.pool_timeouts), (2, 1, 2, 0));
    assert_eq!(closed.completion_time_s, 2.15);
    assert!((closed.latency_mean_s - (0.2 + 0.15) / 2.0).abs() < 1e-12, "{}", closed.latency_mean_s);
    let kept = run(CONNECT, &["client.pool.close_on_timeout=false"]);
    assert_eq!((kept.ops, kept.succeeded, kept.server_calls), (2, 1, 2));
    assert_eq!(kept.completion_time_s, 2.1);
    assert!((kept.latency_mean_s - (0.2 + 0.1) / 2.0).abs() < 1e-12, "{}", kept.latency_mean_s);
}

/// An attempt whose timeout comes while its connection is still opening fails in the client
/// (a pool timeout); the connection, once open, serves the next request without a new cost.
#[test]
fn a_timeout_while_the_connection_opens_is_a_pool_timeout() {
    let m = run(CONNECT, &["client.pool.connect_time=300ms", "server.faults=[]"]);
    // 1: opening until 1.3, gives up at 1.2 (pool timeout). 2: the connection idles from 1.3,
    // so 2 is sent at once and answered at 2.1.
    assert_eq!((m.ops, m.succeeded, m.pool_timeouts, m.server_calls), (2, 1, 1, 1));
    assert_eq!(m.completion_time_s, 2.1);
}

/// Four clients start one operation each at t = 0 against four workers: a pool per client
/// sends all four at once; one shared pool of one connection sends them one after another.
#[test]
fn a_shared_pool_is_one_for_the_fleet() {
    let herd = r#"
name = "pool-scope"
seed = 3
runs = 1
horizon = "5s"
[workload]
kind = "closed"
clients = 4
ops_per_client = 1
[server]
concurrency = 4
service_time = { dist = "constant", value = "100ms" }
[client]
max_attempts = 1
pool = { size = 1 }
[[strategies]]
name = "once"
backoff = { kind = "none" }
"#;
    let per_client = run(herd, &[]);
    assert_eq!((per_client.succeeded, per_client.latency_max_s, per_client.completion_time_s), (4, 0.1, 0.1));
    let shared = run(herd, &["client.pool.scope=shared"]);
    assert_eq!((shared.succeeded, shared.latency_max_s, shared.completion_time_s), (4, 0.4, 0.4));
    assert!((shared.latency_mean_s - 0.25).abs() < 1e-12);
}

/// A pool that never binds (more connections than requests ever in flight, opened at no cost)
/// gives exactly the metrics of no pool, events included: on the retry storm (timeouts,
/// retries, an outage) and on a plain thundering herd.
#[test]
fn a_pool_that_never_binds_changes_nothing() {
    for (file, sets) in [
        ("retry-storm.toml", vec![("runs", "2"), ("strategies.*.pool.size", "4000000000")]),
        ("herd-10k.toml", vec![("runs", "2"), ("strategies.*.pool.size", "4000000000")]),
    ] {
        let with = shipped(file, &sets);
        let without = shipped(file, &sets[..1]);
        for (pw, po) in with.points.iter().zip(&without.points) {
            for (sw, so) in pw.strategies.iter().zip(&po.strategies) {
                assert!(sw.policy.pool.is_some() && so.policy.pool.is_none());
                for r in 0..2 {
                    let seed = run_seed(with.seed, r);
                    let a = simulate(&pw.spec, sw, seed);
                    let b = simulate(&po.spec, so, seed);
                    assert_eq!(a, b, "{file}, {}, run {r}", sw.name);
                }
            }
        }
    }
}
