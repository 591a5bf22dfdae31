//! Impossible values are refused with the key and the reason, whether the schema's range or a
//! rule between keys catches them. Each case changes a valid file with `--set` (or a line of
//! text) and loads it the way `retrysim check` does.

use crate::experiment::{ConfigError, Overrides, load_str, parse_set_arg};

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

fn load(text: &str, sets: &[&str]) -> Result<crate::experiment::Experiment, ConfigError> {
    let set = sets.iter().map(|s| parse_set_arg(s).expect("test sets are KEY=VALUE")).collect();
    load_str(text, "t.toml", &Overrides { set, ..Default::default() })
}

/// The refused key and reason, whether the file or a `--set` carried the bad value.
fn refusal(text: &str, sets: &[&str]) -> (String, String) {
    match load(text, sets) {
        Err(ConfigError::InvalidValue { key, reason, origin }) => {
            assert_eq!(origin, "t.toml");
            (key, reason)
        }
        Err(ConfigError::BadOverride { reason, .. }) => {
            let rest = reason.strip_prefix('`').unwrap_or_else(|| panic!("not a value error: {reason}"));
            let (key, reason) =
                rest.split_once("`: ").unwrap_or_else(|| panic!("not a value error: {reason}"));
            (key.to_owned(), reason.to_owned())
        }
        other => panic!("expected a refused value for {sets:?}, got {other:?}"),
    }
}

#[track_caller]
fn refused(text: &str, sets: &[&str], key: &str, reason: &str) {
    let (k, r) = refusal(text, sets);
    assert_eq!(k, key, "{sets:?}: {r}");
    assert!(r.contains(reason), "{sets:?}: `{k}`: {r} should contain {reason:?}");
}

#[track_caller]
fn accepted(text: &str, sets: &[&str]) {
    if let Err(e) = load(text, sets) {
        panic!("{sets:?} should be accepted: {e}");
    }
}

/// `text` with `line` added at the end (a table or an array-of-tables entry).
fn plus(text: &str, line: &str) -> String {
    format!("{text}\n{line}\n")
}

#[test]
fn valid_files_pass() {
    accepted(BASE, &[]);
    accepted(OPEN, &[]);
}

#[test]
fn name_must_be_a_portable_folder_name() {
    refused(BASE, &["name=\"\""], "name", "folder name");
    refused(BASE, &["name=\"..\""], "name", "folder name");
    refused(BASE, &["name=\"a/b\""], "name", "'/' is not allowed");
    refused(BASE, &["name=\"a b\""], "name", "letters, digits");
    accepted(BASE, &["name=Retry-storm_2.v1"]);
}

#[test]
fn runs_and_horizon_must_be_positive() {
    refused(BASE, &["runs=0"], "runs", "at least 1");
    refused(BASE, &["horizon=0"], "horizon", "> 0");
    // --runs applies after the file is checked, and is checked too.
    let o = Overrides { runs: Some(0), ..Default::default() };
    let e = load_str(BASE, "t.toml", &o).unwrap_err();
    assert!(matches!(e, ConfigError::InvalidValue { ref key, .. } if key == "runs"), "{e}");
}

#[test]
fn closed_workload_limits() {
    refused(BASE, &["workload.clients=0"], "workload.clients", "at least 1");
    refused(BASE, &["workload.ops_per_client=0"], "workload.ops_per_client", "at least 1");
    refused(
        BASE,
        &["workload.clients=70000", "workload.ops_per_client=70000"],
        "workload.ops_per_client",
        "above 4294967295",
    );
    accepted(BASE, &["workload.clients=65535", "workload.ops_per_client=65537"]);
    refused(BASE, &["workload.clients=4000000000"], "workload.clients", "at most 100000000");
}

#[test]
fn open_workload_limits() {
    refused(OPEN, &["workload.rate=-1.0"], "workload.rate", "number >= 0");
    refused(OPEN, &["workload.rate=nan"], "workload.rate", "not a finite number");
    refused(OPEN, &["workload.rate=inf"], "workload.rate", "not a finite number");
    refused(OPEN, &["workload.duration=0"], "workload.duration", "> 0");
    refused(OPEN, &["workload.clients=0"], "workload.clients", "at least 1");
    refused(
        OPEN,
        &["workload.schedule=[{ at = \"5s\", rate = 1.0 }, { at = \"5s\", rate = 2.0 }]"],
        "workload.schedule[1].at",
        "strictly increasing",
    );
    refused(
        OPEN,
        &["workload.schedule=[{ at = \"1s\", rate = 1.0 }, { at = \"2s\", rate = -2.0 }]"],
        "workload.schedule[1].rate",
        ">= 0",
    );
    refused(
        OPEN,
        &["workload.rate=0", "workload.schedule=[{ at = \"1s\", rate = 0.0 }]"],
        "workload.rate",
        "every rate is 0",
    );
    accepted(
        OPEN,
        &[
            "workload.rate=0",
            "workload.schedule=[{ at = \"5ms\", rate = 10.0 }, { at = \"6ms\", rate = 0.0 }]",
        ],
    );
}

#[test]
fn distributions() {
    refused(
        BASE,
        &["network.latency={ dist = \"uniform\", low = \"5ms\", high = \"1ms\" }"],
        "network.latency.high",
        "low <= high",
    );
    accepted(BASE, &["network.latency={ dist = \"uniform\", low = \"1ms\", high = \"1ms\" }"]);
    let lognormal = |sigma: &str| {
        format!("network.latency={{ dist = \"lognormal\", median = \"1ms\", sigma = {sigma} }}")
    };
    refused(BASE, &[&lognormal("-0.1")], "network.latency.sigma", ">= 0");
    refused(BASE, &[&lognormal("nan")], "network.latency.sigma", "not a finite number");
    refused(
        BASE,
        &["network.latency={ dist = \"lognormal\", median = \"0\", sigma = 0.5 }"],
        "network.latency.median",
        "> 0",
    );
    accepted(BASE, &["network.latency={ dist = \"normal\", mean = \"0\", sd = \"5ms\" }"]);
    accepted(BASE, &["network.latency={ dist = \"exponential\", mean = \"0\" }"]);
    refused(
        BASE,
        &["server.service_time={ dist = \"exponential\", mean = \"0\" }"],
        "server.service_time.mean",
        "> 0 for an exponential service time",
    );
    refused(
        BASE,
        &["server.service_time={ dist = \"uniform\", low = \"3ms\", high = \"2ms\" }"],
        "server.service_time.high",
        "low <= high",
    );
    accepted(BASE, &["server.service_time={ dist = \"constant\", value = \"0\" }"]);
}

#[test]
fn probabilities_are_in_zero_one() {
    for bad in ["1.5", "-0.1", "nan"] {
        let reason = if bad == "nan" { "not a finite number" } else { "outside [0, 1]" };
        refused(BASE, &[&format!("network.request_loss={bad}")], "network.request_loss", reason);
        refused(BASE, &[&format!("network.response_loss={bad}")], "network.response_loss", reason);
        refused(
            BASE,
            &[&format!("server.errors=[{{ status = 503, probability = {bad} }}]")],
            "server.errors[0].probability",
            reason,
        );
        let fault = format!(
            "[[server.faults]]\nkind = \"errors\"\nstart = \"1s\"\nduration = \"1s\"\nprobability = {bad}"
        );
        refused(&plus(BASE, &fault), &[], "server.faults[0].probability", reason);
    }
    accepted(BASE, &["network.request_loss=1.0", "client.timeout=1s"]);
}

#[test]
fn error_probabilities_sum_to_at_most_one() {
    let errors = |a: f64, b: f64| {
        format!(
            "server.errors=[{{ status = 503, probability = {a} }}, {{ status = 500, probability = {b} }}]"
        )
    };
    refused(BASE, &[&errors(0.6, 0.5)], "server.errors", "add up to 1.1");
    accepted(BASE, &[&errors(0.7, 0.3)]);
}

#[test]
fn queue_server_rules() {
    refused(BASE, &["server.concurrency=0"], "server.concurrency", "zero concurrency");
    refused(BASE, &["server.reject_status=500"], "server.reject_status", "429 or 503");
    accepted(BASE, &["server.reject_status=429"]);
    refused(
        BASE,
        &["server.errors=[{ status = 200, probability = 0.1 }]"],
        "server.errors[0].status",
        "from 400 to 599",
    );
    refused(
        BASE,
        &["server.errors=[{ status = 600, probability = 0.1 }]"],
        "server.errors[0].status",
        "from 400 to 599",
    );
    accepted(
        BASE,
        &["server.errors=[{ status = 400, probability = 0.1 }, { status = 599, probability = 0.1 }]"],
    );
    refused(BASE, &["server.concurrency=100000001"], "server.concurrency", "at most 100000000");
    accepted(BASE, &["server.concurrency=100000000"]);
}

#[test]
fn fault_rules() {
    let fault = |body: &str| plus(BASE, &format!("[[server.faults]]\nstart = \"1s\"\n{body}"));
    refused(
        &fault("kind = \"outage\"\nduration = \"1s\"\nstatus = 302"),
        &[],
        "server.faults[0].status",
        "400 to 599",
    );
    accepted(&fault("kind = \"outage\"\nduration = \"1s\"\nstatus = \"connection-error\""), &[]);
    accepted(&fault("kind = \"outage\"\nduration = \"1s\"\nstatus = 503\nretry_after = \"2s\""), &[]);
    refused(&fault("kind = \"outage\"\nduration = \"0\""), &[], "server.faults[0].duration", "> 0");
    refused(
        &fault("kind = \"capacity\"\nduration = \"1s\"\nfactor = 1.5"),
        &[],
        "server.faults[0].factor",
        "outside [0, 1]",
    );
    accepted(&fault("kind = \"capacity\"\nduration = \"1s\"\nfactor = 0.0"), &[]);
    refused(
        &fault("kind = \"slowdown\"\nduration = \"1s\"\nfactor = 0.0"),
        &[],
        "server.faults[0].factor",
        "> 0",
    );
    accepted(&fault("kind = \"slowdown\"\nduration = \"1s\"\nfactor = 0.5"), &[]);
    refused(
        &fault("kind = \"errors\"\nduration = \"1s\"\nprobability = 0.5\nstatus = 200"),
        &[],
        "server.faults[0].status",
        "400 to 599",
    );
}

#[test]
fn occ_refuses_what_it_does_not_model() {
    let occ = BASE.replace(
        "[server]\nconcurrency = 4\nservice_time = { dist = \"exponential\", mean = \"10ms\" }\nqueue = 0",
        "[server]\nkind = \"occ\"",
    );
    accepted(&occ, &[]);
    let unsupported = [
        ("client.timeout=1s", "strategies.fj.timeout", "an attempt timeout"),
        ("client.deadline=1s", "strategies.fj.deadline", "an operation deadline"),
        ("strategies.fj.budget={ kind = \"token-bucket\" }", "strategies.fj.budget", "a retry budget"),
        ("strategies.fj.breaker={}", "strategies.fj.breaker", "a circuit breaker"),
        ("strategies.fj.throttle={ kind = \"sre\" }", "strategies.fj.throttle", "throttling"),
        ("strategies.fj.layers=[{}]", "strategies.fj.layers", "a gateway layer"),
        ("network.request_loss=0.1", "network.request_loss", "message loss"),
        ("network.response_loss=0.1", "network.response_loss", "message loss"),
    ];
    for (set, key, what) in unsupported {
        refused(&occ, &[set], key, what);
    }
    refused(
        &occ,
        &["workload={ kind = \"open\", rate = 1.0, duration = \"1s\" }"],
        "workload.kind",
        "closed workloads only",
    );
}

#[test]
fn client_and_strategy_limits() {
    refused(BASE, &["client.max_attempts=0"], "client.max_attempts", "at least 1");
    refused(BASE, &["client.timeout=0"], "client.timeout", "> 0");
    refused(BASE, &["client.deadline=0"], "client.deadline", "> 0");
    refused(BASE, &["client.retry_on=[]"], "strategies.fj.retry_on", "is empty");
    refused(BASE, &["client.retry_on=[503, 200]"], "client.retry_on[1]", "400 to 599");
    accepted(BASE, &["client.retry_on=[409, \"timeout\", \"connection-error\"]"]);
    refused(BASE, &["strategies.fj.max_attempts=0"], "strategies.fj.max_attempts", "at least 1");
    refused(BASE, &["strategies.fj.timeout=0"], "strategies.fj.timeout", "> 0");
    refused(
        BASE,
        &["strategies.fj.retry_on=[\"tmeout\"]"],
        "strategies.fj.retry_on[0]",
        "did you mean \"timeout\"",
    );
    refused(BASE, &["strategies.*.max_attempts=0"], "strategies.fj.max_attempts", "at least 1");
}

#[test]
fn strategies_need_unique_non_empty_names() {
    let none = BASE.replace("[[strategies]]\nname = \"fj\"\nbackoff = { kind = \"full-jitter\", base = \"10ms\", cap = \"1s\" }\n", "");
    let e = load(&none, &[]).unwrap_err();
    assert!(matches!(e, ConfigError::MissingKey { ref key, .. } if key == "strategies"), "{e}");
    assert!(e.to_string().contains("no strategies: add at least one [[strategies]]"), "{e}");
    refused(&format!("strategies = []\n{none}"), &[], "strategies", "no strategies");
    refused(BASE, &["strategies.fj.name=\" \""], "strategies[0].name", "is empty");
    let twice = plus(BASE, "[[strategies]]\nname = \"fj\"\nbackoff = { kind = \"none\" }");
    refused(&twice, &[], "strategies.fj", "two strategies with one name");
}

#[test]
fn backoff_rules() {
    refused(BASE, &["strategies.fj.backoff.cap=5ms"], "strategies.fj.backoff.cap", "cap must be >= base");
    accepted(BASE, &["strategies.fj.backoff.cap=10ms"]);
    accepted(BASE, &["strategies.fj.backoff={ kind = \"full-jitter\", base = \"10ms\" }"]);
    for kind in ["linear", "exponential", "equal-jitter", "decorrelated-jitter", "decorrelated-jitter-v2"] {
        let b = format!("strategies.fj.backoff={{ kind = \"{kind}\", base = \"10ms\", cap = \"5ms\" }}");
        refused(BASE, &[&b], "strategies.fj.backoff.cap", "cap must be >= base");
    }
    for m in ["0.5", "nan"] {
        let reason = if m == "nan" { "not a finite number" } else { ">= 1" };
        refused(
            BASE,
            &[&format!("strategies.fj.backoff.multiplier={m}")],
            "strategies.fj.backoff.multiplier",
            reason,
        );
    }
    accepted(BASE, &["strategies.fj.backoff.multiplier=1.0"]);
    let pj = |p: &str| {
        format!("strategies.fj.backoff={{ kind = \"proportional-jitter\", base = \"10ms\", p = {p} }}")
    };
    refused(BASE, &[&pj("1.5")], "strategies.fj.backoff.p", "outside [0, 1]");
    refused(BASE, &[&pj("-0.1")], "strategies.fj.backoff.p", "outside [0, 1]");
    accepted(BASE, &[&pj("1.0")]);
    accepted(
        BASE,
        &["strategies.fj.backoff={ kind = \"additive-jitter\", base = \"10ms\", jitter = \"5ms\" }"],
    );
}

#[test]
fn controls_and_server_stages() {
    refused(
        BASE,
        &["strategies.fj.budget={ kind = \"ratio\", ttl = \"90s\" }"],
        "strategies.fj.budget.ttl",
        "[1s, 60s]",
    );
    refused(
        BASE,
        &["strategies.fj.budget={ kind = \"ratio\", ratio = -1.0 }"],
        "strategies.fj.budget.ratio",
        "outside [0, 1000]",
    );
    refused(
        BASE,
        &["strategies.fj.budget={ kind = \"token-bucket\", capacity = 0 }"],
        "strategies.fj.budget.capacity",
        "> 0",
    );
    refused(
        BASE,
        &["strategies.fj.breaker={ failure_rate = 1.5 }"],
        "strategies.fj.breaker.failure_rate",
        "(0, 1]",
    );
    refused(
        BASE,
        &["strategies.fj.breaker={ window = \"1500ms\" }"],
        "strategies.fj.breaker.window",
        "whole number of seconds",
    );
    refused(BASE, &["strategies.fj.preset=\"grpcc\""], "strategies.fj.preset", "did you mean \"grpc\"");
    refused(BASE, &["server.overload={ alpha = -1.0 }"], "server.overload.alpha", ">= 0");
    refused(
        BASE,
        &["server.overload={ alpha = 0.1, knee = 5 }"],
        "server.overload.knee",
        "above concurrency",
    );
    refused(BASE, &["server.idempotency={ ttl = \"0\" }"], "server.idempotency.ttl", "> 0");
    refused(
        BASE,
        &["client.idempotency=\"per-request\""],
        "client.idempotency",
        "expected one of: none, per-op, per-attempt",
    );
    refused(BASE, &["server.rate_limit={ rate = 0 }"], "server.rate_limit.rate", "> 0");
    accepted(
        BASE,
        &["strategies.fj.budget={ kind = \"token-bucket\" }", "strategies.fj.breaker={ window = \"10s\" }"],
    );
}

#[test]
fn zeno_guard_refuses_retrying_forever_at_one_instant() {
    let forever = [
        "strategies.fj.backoff={ kind = \"none\" }",
        "strategies.fj.backoff={ kind = \"constant\", base = \"0\" }",
        "strategies.fj.backoff={ kind = \"full-jitter\", base = \"0\" }",
        "strategies.fj.backoff={ kind = \"additive-jitter\", base = \"0\", jitter = \"0\" }",
    ];
    let no_limit = BASE.replace("[client]\nmax_attempts = 3\n", "");
    for b in forever {
        refused(&no_limit, &[b], "strategies.fj.max_attempts", "set max_attempts");
        accepted(&no_limit, &[b, "strategies.fj.max_attempts=2"]);
        accepted(&no_limit, &[b, "network.latency={ dist = \"constant\", value = \"1ms\" }"]);
    }
    accepted(
        &no_limit,
        &["strategies.fj.backoff={ kind = \"additive-jitter\", base = \"0\", jitter = \"1ms\" }"],
    );
    accepted(&no_limit, &[]);
}

#[test]
fn lost_messages_need_a_timeout() {
    let no_timeout = "never answered";
    refused(BASE, &["network.request_loss=0.1"], "strategies.fj.timeout", no_timeout);
    refused(BASE, &["network.response_loss=0.1"], "strategies.fj.timeout", no_timeout);
    let silent = plus(
        BASE,
        "[[server.faults]]\nkind = \"outage\"\nstart = \"1s\"\nduration = \"1s\"\nstatus = \"timeout\"",
    );
    refused(&silent, &[], "strategies.fj.timeout", no_timeout);
    accepted(&silent, &["client.timeout=1s"]);
    accepted(&silent, &["strategies.fj.deadline=1s"]);
    accepted(BASE, &["network.request_loss=0.1", "strategies.fj.timeout=1s"]);
}

#[test]
fn output_and_sweep_settings() {
    refused(BASE, &["output.bucket=0"], "output.bucket", "> 0");
    refused(BASE, &["output.bucket=1ns", "horizon=1h"], "output.bucket", "10,000,000 buckets");
}
