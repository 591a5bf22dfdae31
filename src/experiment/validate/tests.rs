use super::*;
use crate::experiment::spec::{NamedFailure, RateStep};
use crate::experiment::{Overrides, load_str};

const BASE: &str = r#"
name = "t"
seed = 7
runs = 2
horizon = "20s"
[workload]
kind = "closed"
clients = 20
[server]
concurrency = 4
service_time = { dist = "exponential", mean = "10ms" }
queue = 0
[client]
max_attempts = 3
[[strategies]]
name = "fj"
backoff = { kind = "full-jitter", base = "10ms", cap = "1s" }
"#;

const OPEN: &str = r#"
name = "o"
[workload]
kind = "open"
rate = 100.0
duration = "10s"
[server]
concurrency = 4
service_time = { dist = "constant", value = "10ms" }
[[strategies]]
name = "fj"
backoff = { kind = "full-jitter", base = "10ms", cap = "1s" }
max_attempts = 3
"#;

fn base() -> ExperimentSpec {
    spec_of(BASE)
}

fn spec_of(text: &str) -> ExperimentSpec {
    load_str(text, "t", &Overrides::default()).unwrap_or_else(|e| panic!("{e}")).points.remove(0).spec
}

fn ms(n: u64) -> Duration {
    Duration(n * 1_000_000)
}

fn queue(spec: &mut ExperimentSpec) -> &mut QueueServerSpec {
    match &mut spec.server {
        ServerSpec::Queue(q) => q,
        ServerSpec::Occ {} => panic!("queue server expected"),
    }
}

/// Applies `change` to a valid spec and returns the refused key and reason.
fn refused(mut spec: ExperimentSpec, change: impl FnOnce(&mut ExperimentSpec)) -> (String, String) {
    change(&mut spec);
    match validate(&spec, "t.toml") {
        Err(ConfigError::InvalidValue { key, reason, origin }) => {
            assert_eq!(origin, "t.toml");
            (key, reason)
        }
        other => panic!("expected InvalidValue, got {other:?}"),
    }
}

fn assert_refused(spec: ExperimentSpec, change: impl FnOnce(&mut ExperimentSpec), key: &str, reason: &str) {
    let (k, r) = refused(spec, change);
    assert_eq!(k, key, "{r}");
    assert!(r.contains(reason), "`{k}`: {r} should contain {reason:?}");
}

fn assert_ok(mut spec: ExperimentSpec, change: impl FnOnce(&mut ExperimentSpec)) {
    change(&mut spec);
    if let Err(e) = validate(&spec, "t") {
        panic!("should be accepted: {e}");
    }
}

fn set_backoff(b: BackoffSpec) -> impl FnOnce(&mut ExperimentSpec) {
    move |s| s.strategies[0].backoff = b
}

#[test]
fn valid_files_pass() {
    assert_ok(base(), |_| {});
    assert_ok(spec_of(OPEN), |_| {});
}

#[test]
fn name_must_be_a_portable_folder_name() {
    assert_refused(base(), |s| s.name = String::new(), "name", "folder name");
    assert_refused(base(), |s| s.name = "..".into(), "name", "folder name");
    assert_refused(base(), |s| s.name = "a/b".into(), "name", "'/' is not allowed");
    assert_refused(base(), |s| s.name = "a b".into(), "name", "letters, digits");
    assert_ok(base(), |s| s.name = "Retry-storm_2.v1".into());
}

#[test]
fn runs_and_horizon_must_be_positive() {
    assert_refused(base(), |s| s.runs = 0, "runs", "at least 1");
    assert_refused(base(), |s| s.horizon = Duration::ZERO, "horizon", "> 0");
}

#[test]
fn closed_workload_limits() {
    let closed = |clients, ops| {
        move |s: &mut ExperimentSpec| {
            s.workload = WorkloadSpec::Closed {
                clients,
                ops_per_client: ops,
                think_time: Duration::ZERO,
                ramp: Duration::ZERO,
            }
        }
    };
    assert_refused(base(), closed(0, 1), "workload.clients", "at least 1");
    assert_refused(base(), closed(1, 0), "workload.ops_per_client", "at least 1");
    assert_refused(base(), closed(70_000, 70_000), "workload.ops_per_client", "above 4294967295");
    assert_ok(base(), closed(65_535, 65_537));
}

fn open_with(
    rate: f64,
    duration: Duration,
    schedule: Vec<RateStep>,
    clients: u32,
) -> impl FnOnce(&mut ExperimentSpec) {
    move |s| s.workload = WorkloadSpec::Open { rate, duration, schedule, clients }
}

fn step(at_ms: u64, rate: f64) -> RateStep {
    RateStep { at: ms(at_ms), rate }
}

#[test]
fn open_workload_limits() {
    let sec = ms(1000);
    assert_refused(spec_of(OPEN), open_with(-1.0, sec, vec![], 1), "workload.rate", "number >= 0");
    assert_refused(spec_of(OPEN), open_with(f64::NAN, sec, vec![], 1), "workload.rate", "number >= 0");
    assert_refused(spec_of(OPEN), open_with(f64::INFINITY, sec, vec![], 1), "workload.rate", "number >= 0");
    assert_refused(spec_of(OPEN), open_with(1.0, Duration::ZERO, vec![], 1), "workload.duration", "> 0");
    assert_refused(spec_of(OPEN), open_with(1.0, sec, vec![], 0), "workload.clients", "at least 1");
    let unordered = vec![step(10, 1.0), step(10, 2.0)];
    assert_refused(
        spec_of(OPEN),
        open_with(1.0, sec, unordered, 1),
        "workload.schedule[1].at",
        "strictly increasing",
    );
    let negative = vec![step(10, 1.0), step(20, -2.0)];
    assert_refused(spec_of(OPEN), open_with(1.0, sec, negative, 1), "workload.schedule[1].rate", ">= 0");
    assert_refused(
        spec_of(OPEN),
        open_with(0.0, sec, vec![step(5, 0.0)], 1),
        "workload.rate",
        "every rate is 0",
    );
    // A spike that starts from zero is fine.
    assert_ok(spec_of(OPEN), open_with(0.0, sec, vec![step(5, 10.0), step(6, 0.0)], 1));
}

#[test]
fn distributions() {
    let latency = |d: DistSpec| move |s: &mut ExperimentSpec| s.network.latency = d;
    assert_refused(
        base(),
        latency(DistSpec::Uniform { low: ms(2), high: ms(1) }),
        "network.latency.high",
        "low <= high",
    );
    assert_ok(base(), latency(DistSpec::Uniform { low: ms(1), high: ms(1) }));
    let lognormal = |sigma| DistSpec::Lognormal { median: ms(1), sigma };
    assert_refused(base(), latency(lognormal(-0.1)), "network.latency.sigma", ">= 0");
    assert_refused(base(), latency(lognormal(f64::NAN)), "network.latency.sigma", ">= 0");
    assert_refused(
        base(),
        latency(DistSpec::Lognormal { median: Duration::ZERO, sigma: 1.0 }),
        "network.latency.median",
        "> 0",
    );
    assert_ok(base(), latency(DistSpec::Normal { mean: Duration::ZERO, sd: ms(5) }));
    assert_ok(base(), latency(DistSpec::Exponential { mean: Duration::ZERO }));
    let service = |d: DistSpec| move |s: &mut ExperimentSpec| queue(s).service_time = d;
    assert_refused(
        base(),
        service(DistSpec::Exponential { mean: Duration::ZERO }),
        "server.service_time.mean",
        "> 0",
    );
    assert_refused(
        base(),
        service(DistSpec::Uniform { low: ms(3), high: ms(1) }),
        "server.service_time.high",
        "low <= high",
    );
    assert_ok(base(), service(DistSpec::Constant { value: Duration::ZERO }));
}

#[test]
fn probabilities_are_in_zero_one() {
    for bad in [-0.1, 1.5, f64::NAN, f64::INFINITY] {
        assert_refused(base(), |s| s.network.request_loss = bad, "network.request_loss", "outside [0, 1]");
        assert_refused(base(), |s| s.network.response_loss = bad, "network.response_loss", "outside [0, 1]");
        let error = ErrorSpec { status: 503, probability: bad, after_effect: false };
        assert_refused(
            base(),
            |s| queue(s).errors = vec![error],
            "server.errors[0].probability",
            "outside [0, 1]",
        );
        let fault = FaultSpec::Errors {
            start: ms(1),
            duration: ms(1),
            probability: bad,
            status: 503,
            after_effect: false,
        };
        assert_refused(
            base(),
            |s| queue(s).faults = vec![fault],
            "server.faults[0].probability",
            "outside [0, 1]",
        );
    }
    assert_ok(base(), |s| {
        s.network.request_loss = 1.0;
        s.client.timeout = Some(ms(100));
    });
}

#[test]
fn error_probabilities_sum_to_at_most_one() {
    let e = |p| ErrorSpec { status: 503, probability: p, after_effect: false };
    assert_refused(base(), |s| queue(s).errors = vec![e(0.6), e(0.5)], "server.errors", "add up to 1.1");
    assert_ok(base(), |s| queue(s).errors = vec![e(0.7), e(0.2), e(0.1)]);
}

#[test]
fn queue_server_rules() {
    assert_refused(base(), |s| queue(s).concurrency = 0, "server.concurrency", "zero concurrency");
    assert_refused(base(), |s| queue(s).reject_status = 500, "server.reject_status", "429 or 503");
    assert_ok(base(), |s| queue(s).reject_status = 429);
    let error = |status| ErrorSpec { status, probability: 0.1, after_effect: false };
    assert_refused(base(), |s| queue(s).errors = vec![error(200)], "server.errors[0].status", "400 to 599");
    assert_refused(base(), |s| queue(s).errors = vec![error(600)], "server.errors[0].status", "400 to 599");
    assert_ok(base(), |s| queue(s).errors = vec![error(400), error(599)]);
}

#[test]
fn fault_rules() {
    let window = (ms(1000), ms(1000));
    let outage = |status| FaultSpec::Outage { start: window.0, duration: window.1, status };
    let faults = |f: FaultSpec| {
        move |s: &mut ExperimentSpec| queue(s).faults = vec![outage(FaultStatus::Status(503)), f]
    };
    assert_refused(base(), faults(outage(FaultStatus::Status(302))), "server.faults[1].status", "400 to 599");
    assert_ok(base(), |s| {
        faults(outage(FaultStatus::Named(NamedFailure::Timeout)))(s);
        s.client.timeout = Some(ms(100));
    });
    assert_ok(base(), faults(outage(FaultStatus::Named(NamedFailure::ConnectionError))));
    let zero = FaultSpec::Outage { start: ms(1), duration: Duration::ZERO, status: FaultStatus::Status(503) };
    assert_refused(base(), faults(zero), "server.faults[1].duration", "> 0");
    let capacity = |factor| FaultSpec::Capacity { start: window.0, duration: window.1, factor };
    assert_refused(base(), faults(capacity(1.5)), "server.faults[1].factor", "outside [0, 1]");
    assert_refused(base(), faults(capacity(f64::NAN)), "server.faults[1].factor", "outside [0, 1]");
    assert_ok(base(), faults(capacity(0.0)));
    let slowdown = |factor| FaultSpec::Slowdown { start: window.0, duration: window.1, factor };
    assert_refused(base(), faults(slowdown(0.0)), "server.faults[1].factor", "> 0");
    assert_refused(base(), faults(slowdown(f64::INFINITY)), "server.faults[1].factor", "> 0");
    assert_ok(base(), faults(slowdown(0.5)));
    let errors = |status| FaultSpec::Errors {
        start: window.0,
        duration: window.1,
        probability: 0.5,
        status,
        after_effect: true,
    };
    assert_refused(base(), faults(errors(200)), "server.faults[1].status", "400 to 599");
}

#[test]
fn occ_refuses_timeouts_deadlines_and_losses() {
    let occ = |s: &mut ExperimentSpec| s.server = ServerSpec::Occ {};
    let not_supported = "not supported for server.kind = \"occ\"";
    assert_ok(base(), occ);
    assert_refused(
        base(),
        |s| {
            occ(s);
            s.client.timeout = Some(ms(1))
        },
        "client.timeout",
        not_supported,
    );
    assert_refused(
        base(),
        |s| {
            occ(s);
            s.client.deadline = Some(ms(1))
        },
        "client.deadline",
        not_supported,
    );
    assert_refused(
        base(),
        |s| {
            occ(s);
            s.strategies[0].timeout = Some(ms(1))
        },
        "strategies.fj.timeout",
        not_supported,
    );
    assert_refused(
        base(),
        |s| {
            occ(s);
            s.strategies[0].deadline = Some(ms(1))
        },
        "strategies.fj.deadline",
        not_supported,
    );
    assert_refused(
        base(),
        |s| {
            occ(s);
            s.network.request_loss = 0.1
        },
        "network.request_loss",
        not_supported,
    );
    assert_refused(
        base(),
        |s| {
            occ(s);
            s.network.response_loss = 0.1
        },
        "network.response_loss",
        not_supported,
    );
}

#[test]
fn client_and_strategy_limits() {
    assert_refused(base(), |s| s.client.max_attempts = Some(0), "client.max_attempts", "at least 1");
    assert_refused(base(), |s| s.client.timeout = Some(Duration::ZERO), "client.timeout", "> 0");
    assert_refused(base(), |s| s.client.deadline = Some(Duration::ZERO), "client.deadline", "> 0");
    assert_refused(base(), |s| s.client.retry_on = Some(vec![]), "client.retry_on", "is empty");
    let status = |c| Some(vec![RetryOnItem::Named(NamedFailure::Timeout), RetryOnItem::Status(c)]);
    assert_refused(base(), |s| s.client.retry_on = status(200), "client.retry_on[1]", "400 to 599");
    assert_ok(base(), |s| s.client.retry_on = status(409));
    assert_refused(
        base(),
        |s| s.strategies[0].max_attempts = Some(0),
        "strategies.fj.max_attempts",
        "at least 1",
    );
    assert_refused(
        base(),
        |s| s.strategies[0].timeout = Some(Duration::ZERO),
        "strategies.fj.timeout",
        "> 0",
    );
    assert_refused(
        base(),
        |s| s.strategies[0].deadline = Some(Duration::ZERO),
        "strategies.fj.deadline",
        "> 0",
    );
    assert_refused(
        base(),
        |s| s.strategies[0].retry_on = Some(vec![]),
        "strategies.fj.retry_on",
        "max_attempts = 1",
    );
    assert_refused(
        base(),
        |s| s.strategies[0].retry_on = status(700),
        "strategies.fj.retry_on[1]",
        "400 to 599",
    );
}

#[test]
fn strategies_need_unique_non_empty_names() {
    assert_refused(base(), |s| s.strategies.clear(), "strategies", "no strategies");
    assert_refused(base(), |s| s.strategies[0].name = " ".into(), "strategies[0].name", "is empty");
    let twice = |s: &mut ExperimentSpec| {
        let copy = s.strategies[0].clone();
        s.strategies.push(copy);
    };
    assert_refused(base(), twice, "strategies.fj", "two strategies with one name");
}

#[test]
fn backoff_rules() {
    let fj =
        |base, cap, multiplier| BackoffSpec::FullJitter { base: ms(base), cap: Some(ms(cap)), multiplier };
    assert_refused(base(), set_backoff(fj(10, 5, 2.0)), "strategies.fj.backoff.cap", "cap must be >= base");
    assert_ok(base(), set_backoff(fj(10, 10, 2.0)));
    assert_ok(base(), set_backoff(BackoffSpec::FullJitter { base: ms(10), cap: None, multiplier: 2.0 }));
    let caps = [
        BackoffSpec::Linear { base: ms(10), cap: Some(ms(1)) },
        BackoffSpec::DecorrelatedJitter { base: ms(10), cap: Some(ms(1)) },
        BackoffSpec::DecorrelatedJitterV2 { base: ms(10), cap: Some(ms(1)) },
        BackoffSpec::Exponential { base: ms(10), cap: Some(ms(1)), multiplier: 2.0 },
        BackoffSpec::EqualJitter { base: ms(10), cap: Some(ms(1)), multiplier: 2.0 },
        BackoffSpec::AdditiveJitter { base: ms(10), cap: Some(ms(1)), multiplier: 2.0, jitter: ms(1) },
        BackoffSpec::ProportionalJitter { base: ms(10), cap: Some(ms(1)), multiplier: 2.0, p: 0.2 },
    ];
    for b in caps {
        assert_refused(base(), set_backoff(b), "strategies.fj.backoff.cap", "cap must be >= base");
    }
    for m in [0.5, f64::NAN, f64::INFINITY] {
        assert_refused(base(), set_backoff(fj(10, 100, m)), "strategies.fj.backoff.multiplier", ">= 1");
    }
    assert_ok(base(), set_backoff(fj(10, 100, 1.0)));
    let pj = |p| BackoffSpec::ProportionalJitter { base: ms(10), cap: None, multiplier: 2.0, p };
    assert_refused(base(), set_backoff(pj(1.5)), "strategies.fj.backoff.p", "outside [0, 1]");
    assert_refused(base(), set_backoff(pj(-0.1)), "strategies.fj.backoff.p", "outside [0, 1]");
    assert_ok(base(), set_backoff(pj(1.0)));
    let aj = BackoffSpec::AdditiveJitter { base: ms(10), cap: None, multiplier: 2.0, jitter: ms(1_000_000) };
    assert_ok(base(), set_backoff(aj));
}

#[test]
fn zeno_guard_refuses_retrying_forever_at_one_instant() {
    let unlimited = |s: &mut ExperimentSpec| {
        s.client.max_attempts = None;
        s.strategies[0].max_attempts = None;
    };
    let zero_delays = [
        BackoffSpec::None {},
        BackoffSpec::Constant { base: Duration::ZERO },
        BackoffSpec::Linear { base: Duration::ZERO, cap: None },
        BackoffSpec::Exponential { base: Duration::ZERO, cap: None, multiplier: 2.0 },
        BackoffSpec::EqualJitter { base: Duration::ZERO, cap: None, multiplier: 2.0 },
        BackoffSpec::FullJitter { base: Duration::ZERO, cap: None, multiplier: 2.0 },
        BackoffSpec::AdditiveJitter {
            base: Duration::ZERO,
            cap: None,
            multiplier: 2.0,
            jitter: Duration::ZERO,
        },
    ];
    for b in zero_delays {
        let change = |s: &mut ExperimentSpec| {
            unlimited(s);
            s.strategies[0].backoff = b.clone();
        };
        assert_refused(base(), change, "strategies.fj.max_attempts", "set max_attempts");
        // Any one of: a limit, a nonzero latency, a nonzero delay makes it safe.
        assert_ok(base(), |s| {
            unlimited(s);
            s.strategies[0].backoff = b.clone();
            s.strategies[0].max_attempts = Some(100);
        });
        assert_ok(base(), |s| {
            unlimited(s);
            s.strategies[0].backoff = b.clone();
            s.network.latency = DistSpec::Constant { value: Duration(1) };
        });
    }
    assert_ok(base(), |s| {
        unlimited(s);
        s.strategies[0].backoff =
            BackoffSpec::AdditiveJitter { base: Duration::ZERO, cap: None, multiplier: 2.0, jitter: ms(1) };
    });
    assert_ok(base(), unlimited);
    // The limit may come from [client].
    assert_ok(base(), |s| {
        s.strategies[0].max_attempts = None;
        s.strategies[0].backoff = BackoffSpec::None {};
    });
}

#[test]
fn occ_runs_closed_workloads_only() {
    let mut open = spec_of(OPEN);
    open.server = ServerSpec::Occ {};
    let (key, reason) = refused(open, |_| {});
    assert_eq!(key, "workload.kind");
    assert!(reason.contains("closed workloads only"), "{reason}");
}

#[test]
fn lost_messages_need_a_timeout() {
    let no_timeout = "would wait for them forever";
    assert_refused(base(), |s| s.network.request_loss = 0.1, "strategies.fj.timeout", no_timeout);
    assert_refused(base(), |s| s.network.response_loss = 0.1, "strategies.fj.timeout", no_timeout);
    let silent = FaultSpec::Outage {
        start: ms(10),
        duration: ms(10),
        status: FaultStatus::Named(NamedFailure::Timeout),
    };
    assert_refused(base(), |s| queue(s).faults.push(silent.clone()), "strategies.fj.timeout", no_timeout);
    // A timeout or a deadline, in [client] or in the strategy, is enough.
    assert_ok(base(), |s| {
        s.network.response_loss = 0.1;
        s.client.timeout = Some(ms(100));
    });
    assert_ok(base(), |s| {
        queue(s).faults.push(silent.clone());
        s.strategies[0].deadline = Some(ms(500));
    });
    // An outage that answers (503) needs nothing.
    assert_ok(base(), |s| {
        queue(s).faults.push(FaultSpec::Outage {
            start: ms(10),
            duration: ms(10),
            status: FaultStatus::Status(503),
        })
    });
}

#[test]
fn sizes_that_would_exhaust_memory_are_refused() {
    assert_refused(
        base(),
        |s| {
            s.workload = WorkloadSpec::Closed {
                clients: 200_000_000,
                ops_per_client: 1,
                think_time: ms(0),
                ramp: ms(0),
            }
        },
        "workload.clients",
        "at most 100000000",
    );
    assert_refused(
        base(),
        |s| queue(s).concurrency = 2_000_000_000,
        "server.concurrency",
        "at most 100000000",
    );
    assert_ok(base(), |s| queue(s).concurrency = 100_000_000);
}
