use super::*;
use crate::experiment::{
    BackoffSpec, Duration, ExperimentSpec, FaultStatus, NamedFailure, RetryOnItem, ServerSpec, WorkloadSpec,
};

const MINIMAL: &str = r#"
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

/// DESIGN §7's example, without its `[sweep]`.
const DESIGN: &str = r#"
name = "retry-storm"
seed = 42
runs = 20
horizon = "120s"
[workload]
kind = "open"
rate = 1000.0
duration = "60s"
[server]
kind = "queue"
concurrency = 120
service_time = { dist = "exponential", mean = "100ms" }
queue = 2000
[[server.faults]]
kind = "outage"
start = "10s"
duration = "5s"
status = 503
[client]
timeout = "1s"
max_attempts = 4
[[strategies]]
name = "immediate"
backoff = { kind = "none" }
[[strategies]]
name = "full-jitter"
backoff = { kind = "full-jitter", base = "100ms", cap = "10s" }
"#;

/// Every table, kind and optional key at least once.
const EVERYTHING: &str = r#"
name = "all"
[workload]
kind = "open"
rate = 10
duration = "1m"
clients = 3
schedule = [{ at = "10s", rate = 50.0 }, { at = "20s", rate = 10 }]
[network]
latency = { dist = "lognormal", median = "1ms", sigma = 0.5 }
request_loss = 0.01
response_loss = 0
[server]
concurrency = 2
service_time = { dist = "uniform", low = "1ms", high = "2ms" }
reject_status = 429
drop_expired = true
errors = [{ status = 500, probability = 0.1, after_effect = true }, { status = 502, probability = 0.2 }]
faults = [
  { kind = "outage", start = "1s", duration = "1s", status = "timeout" },
  { kind = "outage", start = "1s", duration = "1s", status = "connection-error" },
  { kind = "outage", start = "1s", duration = "1s" },
  { kind = "capacity", start = "1s", duration = "1s", factor = 0.5 },
  { kind = "slowdown", start = "1s", duration = "1s", factor = 3 },
  { kind = "errors", start = "1s", duration = "1s", probability = 0.5 },
  { kind = "errors", start = "1s", duration = "1s", probability = 0.5, status = 429, after_effect = true },
]
[client]
max_attempts = 5
timeout = "1s"
deadline = "10s"
retry_on = [503, "timeout", "connection-error"]
[[strategies]]
name = "none"
backoff = { kind = "none" }
max_attempts = 2
timeout = "2s"
deadline = "3s"
retry_on = [429]
[[strategies]]
name = "c"
backoff = { kind = "constant", base = "1ms" }
[[strategies]]
name = "l"
backoff = { kind = "linear", base = "1ms", cap = "5ms" }
[[strategies]]
name = "e"
backoff = { kind = "exponential", base = "1ms", cap = "5ms", multiplier = 3 }
[[strategies]]
name = "fj"
backoff = { kind = "full-jitter", base = "1ms" }
[[strategies]]
name = "ej"
backoff = { kind = "equal-jitter", base = "1ms", cap = "1s", multiplier = 1.5 }
[[strategies]]
name = "dj"
backoff = { kind = "decorrelated-jitter", base = "1ms", cap = "1s" }
[[strategies]]
name = "dj2"
backoff = { kind = "decorrelated-jitter-v2", base = "1ms" }
[[strategies]]
name = "aj"
backoff = { kind = "additive-jitter", base = "1ms", jitter = "3ms" }
[[strategies]]
name = "pj"
backoff = { kind = "proportional-jitter", base = "1ms", cap = "1s", p = 0.1 }
[[strategies]]
name = "pj-default"
backoff = { kind = "proportional-jitter", base = "1ms" }
"#;

const CLOSED_DISTS: &str = r#"
name = "d"
[workload]
kind = "closed"
ops_per_client = 2
think_time = "1ms"
ramp = "1s"
[network]
latency = { dist = "normal", mean = "1ms", sd = "0" }
[server]
kind = "occ"
[[strategies]]
name = "x"
backoff = { kind = "constant", base = "1ms" }
"#;

fn ok(text: &str) -> Experiment {
    load_str(text, "t.toml", &Overrides::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn err(text: &str) -> ConfigError {
    load_str(text, "t.toml", &Overrides::default()).expect_err("should be refused")
}

fn with_sets(text: &str, sets: &[&str]) -> Result<Experiment, ConfigError> {
    let set = sets.iter().map(|s| parse_set_arg(s).unwrap()).collect();
    load_str(text, "t.toml", &Overrides { set, ..Overrides::default() })
}

fn set_ok(text: &str, sets: &[&str]) -> Experiment {
    with_sets(text, sets).unwrap_or_else(|e| panic!("{e}"))
}

fn set_err(text: &str, sets: &[&str]) -> ConfigError {
    with_sets(text, sets).expect_err("should be refused")
}

fn spec(text: &str) -> ExperimentSpec {
    ok(text).points.remove(0).spec
}

/// The text with `line` added at the top level, before any table.
fn top(line: &str) -> String {
    format!("{line}\n{MINIMAL}")
}

fn no_strategies(text: &str) -> String {
    text.replace("[[strategies]]\nname = \"fj\"\nbackoff = { kind = \"full-jitter\", base = \"10ms\", cap = \"1s\" }\n", "")
}

fn unknown(e: &ConfigError) -> (&str, Option<&str>, Option<&str>) {
    match e {
        ConfigError::UnknownKey { key, suggestion, help, .. } => {
            (key, suggestion.as_deref(), help.as_deref())
        }
        other => panic!("expected UnknownKey, got {other:?}"),
    }
}

fn invalid_at(e: &ConfigError) -> (&str, &str) {
    match e {
        ConfigError::InvalidValue { key, reason, .. } => (key, reason),
        other => panic!("expected InvalidValue, got {other:?}"),
    }
}

fn missing_at(e: &ConfigError) -> &str {
    match e {
        ConfigError::MissingKey { key, .. } => key,
        other => panic!("expected MissingKey, got {other:?}"),
    }
}

fn bad_override(e: &ConfigError) -> (&str, &str) {
    match e {
        ConfigError::BadOverride { arg, reason } => (arg, reason),
        other => panic!("expected BadOverride, got {other:?}"),
    }
}

// --- the valid path ------------------------------------------------------------------------

#[test]
fn loads_the_minimal_file() {
    let exp = ok(MINIMAL);
    assert_eq!((exp.name.as_str(), exp.seed, exp.runs), ("t", 7, 2));
    assert!(exp.sweep_keys.is_empty());
    assert_eq!(exp.points.len(), 1);
    let point = &exp.points[0];
    assert!(point.values.is_empty());
    assert!(
        matches!(point.spec.server, ServerSpec::Queue(ref q) if q.concurrency == 4 && q.queue == Some(0))
    );
    assert_eq!(point.strategies.len(), 1);
    assert_eq!(point.strategies[0].policy.max_attempts, Some(3), "[client] defaults fill the strategy");
}

#[test]
fn defaults_are_filled_from_the_schema() {
    let s = spec(MINIMAL);
    assert_eq!(s.horizon, Duration::parse("20s").unwrap());
    assert_eq!((s.network.request_loss, s.output.bucket), (0.0, Duration::parse("1s").unwrap()));
    let ServerSpec::Queue(q) = &s.server else { panic!("queue") };
    assert_eq!((q.reject_status, q.drop_expired, q.errors.len()), (503, false, 0));
    let p = &s.strategies[0].policy;
    assert_eq!(
        p.backoff,
        BackoffSpec::FullJitter {
            base: Duration(10_000_000),
            cap: Some(Duration(1_000_000_000)),
            multiplier: 2.0
        }
    );
    assert!(!p.honor_retry_after && p.budget.is_none() && p.layers.is_empty());
    let closed = spec(CLOSED_DISTS);
    let WorkloadSpec::Closed { clients, ops_per_client, .. } = closed.workload else { panic!("closed") };
    assert_eq!((clients, ops_per_client), (1, 2), "clients defaults to 1");
    assert!(matches!(closed.server, ServerSpec::Occ {}));
}

#[test]
fn reads_untagged_statuses() {
    let s = spec(EVERYTHING);
    let ServerSpec::Queue(q) = &s.server else { panic!("queue") };
    let statuses: Vec<FaultStatus> = q
        .faults
        .iter()
        .filter_map(|f| match f {
            crate::experiment::FaultSpec::Outage { status, .. } => Some(*status),
            _ => None,
        })
        .collect();
    let named = |n| FaultStatus::Named(n);
    assert_eq!(
        statuses,
        [named(NamedFailure::Timeout), named(NamedFailure::ConnectionError), FaultStatus::Status(503)]
    );
    let retry_on = [
        RetryOnItem::Status(503),
        RetryOnItem::Named(NamedFailure::Timeout),
        RetryOnItem::Named(NamedFailure::ConnectionError),
    ];
    assert_eq!(s.strategies[1].policy.retry_on.as_deref(), Some(&retry_on[..]), "[client]'s list");
    assert_eq!(s.strategies[0].policy.retry_on, Some(vec![RetryOnItem::Status(429)]), "the strategy's own");
}

#[test]
fn server_kind_defaults_to_queue_and_design_example_loads() {
    assert!(matches!(spec(MINIMAL).server, ServerSpec::Queue(_)));
    let exp = ok(DESIGN);
    assert_eq!(exp.points[0].strategies.len(), 2);
    assert_eq!(exp.points[0].strategies[1].policy.timeout, Some(Duration::parse("1s").unwrap()));
}

#[test]
fn loads_from_a_file_and_reports_a_missing_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("e.toml");
    std::fs::write(&path, MINIMAL).unwrap();
    assert_eq!(load(&path, &Overrides::default()).unwrap().name, "t");
    let e = load(&dir.path().join("nope.toml"), &Overrides::default()).unwrap_err();
    assert!(matches!(e, ConfigError::Read { .. }));
    assert!(e.to_string().contains("nope.toml"), "{e}");
}

#[test]
fn runs_and_seed_overrides_win() {
    let o = Overrides { runs: Some(9), seed: Some(11), ..Overrides::default() };
    let exp = load_str(MINIMAL, "t", &o).unwrap();
    assert_eq!((exp.runs, exp.seed), (9, 11));
    assert_eq!(exp.points[0].spec.runs, 9);
    let o = Overrides { runs: Some(0), ..Overrides::default() };
    assert_eq!(invalid_at(&load_str(MINIMAL, "t", &o).unwrap_err()).0, "runs");
}

// --- syntax ----------------------------------------------------------------------------------

#[test]
fn syntax_errors_give_line_and_column() {
    let e = err("name = \"t\"\nseed = = 3\n");
    let ConfigError::Syntax { message, origin } = &e else { panic!("{e:?}") };
    assert_eq!(origin, "t.toml");
    assert!(message.starts_with("line 2, column 8"), "{message}");
    assert!(e.to_string().contains("not valid TOML"));
}

// --- unknown keys -----------------------------------------------------------------------------

#[test]
fn unknown_keys_are_named_in_full_with_a_suggestion() {
    let cases = [
        (top("nmae = 1"), "nmae", Some("name")),
        (
            MINIMAL.replace("concurrency = 4", "concurrenc = 4"),
            "server.concurrenc",
            Some("server.concurrency"),
        ),
        (MINIMAL.replace("[client]", "[clent]"), "clent", Some("client")),
        (
            MINIMAL.replace("base = \"10ms\"", "bse = \"10ms\""),
            "strategies.fj.backoff.bse",
            Some("strategies.fj.backoff.base"),
        ),
        (
            MINIMAL.replace("mean = \"10ms\"", "maen = \"10ms\""),
            "server.service_time.maen",
            Some("server.service_time.mean"),
        ),
        (MINIMAL.replace("clients = 20", "client = 20"), "workload.client", Some("workload.clients")),
        (
            MINIMAL.replace("max_attempts = 3", "max-attempts = 3"),
            "client.max-attempts",
            Some("client.max_attempts"),
        ),
        (
            format!("{MINIMAL}[network]\nrequest_los = 0.1\n"),
            "network.request_los",
            Some("network.request_loss"),
        ),
    ];
    for (text, key, suggestion) in cases {
        let e = err(&text);
        assert_eq!(unknown(&e).0, key, "{e}");
        assert_eq!(unknown(&e).1, suggestion, "{e}");
        assert!(e.to_string().contains(&format!("did you mean `{}`", suggestion.unwrap())), "{e}");
    }
}

#[test]
fn unknown_keys_inside_lists_name_the_entry() {
    // A second "fj": the name is ambiguous, so the entry is named by its index.
    let no_name =
        format!("{MINIMAL}[[strategies]]\nname = \"fj\"\nbackoff = {{ kind = \"none\", cap = \"1s\" }}\n");
    let e = err(&no_name);
    assert_eq!(unknown(&e).0, "strategies[1].backoff.cap");
    assert!(unknown(&e).2.unwrap().contains("belongs to backoff kind linear"), "{e}");
    let fault = format!("{MINIMAL}[[server.faults]]\nkind = \"outage\"\nstrat = \"1s\"\nduration = \"1s\"\n");
    let e = err(&fault);
    assert_eq!(unknown(&e), ("server.faults[0].strat", Some("server.faults[0].start"), None));
    let errors = MINIMAL.replace("queue = 0", "errors = [{ status = 503, probabilty = 0.1 }]");
    assert_eq!(unknown(&err(&errors)).1, Some("server.errors[0].probability"));
    let schedule = MINIMAL.replace(
        "kind = \"closed\"\nclients = 20",
        "kind = \"open\"\nrate = 1\nduration = \"1s\"\nschedule = [{ at = \"1s\", rat = 2 }]",
    );
    assert_eq!(unknown(&err(&schedule)).1, Some("workload.schedule[0].rate"));
}

#[test]
fn far_typos_list_the_valid_keys() {
    let e = err(&MINIMAL.replace("queue = 0", "zzzzzz = 0"));
    let (key, suggestion, help) = unknown(&e);
    assert_eq!((key, suggestion), ("server.zzzzzz", None));
    assert!(help.unwrap().contains("valid keys in `server`: kind, concurrency, service_time"), "{e}");
    let e = err(&top("colour = 1"));
    assert!(unknown(&e).2.unwrap().contains("at the top level: name, seed"), "{e}");
}

#[test]
fn keys_of_another_kind_say_so() {
    let e = err(&MINIMAL.replace("clients = 20", "clients = 20\nrate = 5.0"));
    let (key, suggestion, help) = unknown(&e);
    assert_eq!((key, suggestion), ("workload.rate", None));
    assert!(help.unwrap().contains("belongs to workload kind open, queue, not to kind = \"closed\""), "{e}");
}

#[test]
fn unknown_keys_come_before_missing_ones() {
    // `bse` hides `base`: the typo is the useful report.
    let e = err(&MINIMAL.replace("base = \"10ms\", cap = \"1s\"", "bse = \"10ms\""));
    assert_eq!(unknown(&e).0, "strategies.fj.backoff.bse");
}

// --- kinds -------------------------------------------------------------------------------------

#[test]
fn wrong_kinds_list_the_valid_ones() {
    let e = err(&MINIMAL.replace("kind = \"closed\"", "kind = \"clsoed\""));
    let (key, reason) = invalid_at(&e);
    assert_eq!(key, "workload.kind");
    assert!(
        reason.contains("did you mean \"closed\"") && reason.contains("valid workload kinds: closed, open"),
        "{reason}"
    );
    let e = err(&MINIMAL.replace("dist = \"exponential\"", "dist = \"gauss\""));
    let (key, reason) = invalid_at(&e);
    assert_eq!(key, "server.service_time.dist");
    assert!(reason.contains("constant, uniform, normal, exponential, lognormal"), "{reason}");
    let e = err(&MINIMAL.replace("kind = \"full-jitter\"", "kind = \"full_jitter\""));
    let (key, reason) = invalid_at(&e);
    assert_eq!(key, "strategies.fj.backoff.kind");
    assert!(
        reason.contains("did you mean \"full-jitter\"") && reason.contains("proportional-jitter"),
        "{reason}"
    );
    let e = err(&MINIMAL.replace("concurrency = 4", "kind = \"stack\""));
    assert!(invalid_at(&e).1.contains("queue, occ"), "{e}");
    let e = err(&MINIMAL.replace("kind = \"closed\"", "kind = 3"));
    assert!(invalid_at(&e).1.contains("one of: closed, open, serial, queue; found a integer"), "{e}");
    let fault = format!("{MINIMAL}[[server.faults]]\nkind = \"brownout\"\n");
    assert_eq!(invalid_at(&err(&fault)).0, "server.faults[0].kind");
}

// --- missing keys ----------------------------------------------------------------------------

#[test]
fn missing_keys_are_named_in_full() {
    let cases = [
        (MINIMAL.replace("kind = \"closed\"\n", ""), "workload.kind"),
        (
            MINIMAL.replace("service_time = { dist = \"exponential\", mean = \"10ms\" }\n", ""),
            "server.service_time",
        ),
        (
            MINIMAL.replace("backoff = { kind = \"full-jitter\", base = \"10ms\", cap = \"1s\" }\n", ""),
            "strategies.fj.backoff",
        ),
        (MINIMAL.replace("base = \"10ms\", ", ""), "strategies.fj.backoff.base"),
        (MINIMAL.replace("name = \"t\"\n", ""), "name"),
        (MINIMAL.replace("[workload]\nkind = \"closed\"\nclients = 20\n", ""), "workload"),
        (MINIMAL.replace("concurrency = 4\n", ""), "server.concurrency"),
        (MINIMAL.replace(", mean = \"10ms\"", ""), "server.service_time.mean"),
        (
            format!("{MINIMAL}[[server.faults]]\nkind = \"outage\"\nduration = \"1s\"\n"),
            "server.faults[0].start",
        ),
        (format!("{MINIMAL}[[strategies]]\nbackoff = {{ kind = \"none\" }}\n"), "strategies[1].name"),
    ];
    for (text, key) in &cases {
        assert_eq!(missing_at(&err(text)), *key);
    }
    let e = err(&cases[0].0);
    assert!(e.to_string().contains("missing key `workload.kind`; set it to one of: closed, open"), "{e}");
    let e = err(&cases[2].0);
    assert!(e.to_string().contains("kind = one of: none, constant"), "{e}");
}

// --- leaf values ------------------------------------------------------------------------------

#[test]
fn bad_values_name_the_key() {
    let cases = [
        (
            MINIMAL.replace("concurrency = 4", "concurrency = \"4\""),
            "server.concurrency",
            "whole number, found a string",
        ),
        (
            MINIMAL.replace("concurrency = 4", "concurrency = 4.0"),
            "server.concurrency",
            "without a decimal point",
        ),
        (MINIMAL.replace("concurrency = 4", "concurrency = -4"), "server.concurrency", "out of range"),
        (MINIMAL.replace("horizon = \"20s\"", "horizon = 20"), "horizon", "no unit"),
        (MINIMAL.replace("horizon = \"20s\"", "horizon = \"20 seconds\""), "horizon", "unknown unit"),
        (MINIMAL.replace("horizon = \"20s\"", "horizon = \"abc\""), "horizon", "duration \"abc\""),
        (MINIMAL.replace("cap = \"1s\"", "cap = \"-1s\""), "strategies.fj.backoff.cap", "negative"),
        (MINIMAL.replace("name = \"t\"", "name = 5"), "name", "string in quotes"),
        (
            MINIMAL.replace("[workload]\nkind = \"closed\"\nclients = 20\n", "workload = 3\n"),
            "workload",
            "expected a table",
        ),
        (no_strategies(&top("strategies = 3")), "strategies", "expected a list"),
        (MINIMAL.replace("queue = 0", "drop_expired = 1"), "server.drop_expired", "true or false"),
        (MINIMAL.replace("max_attempts = 3", "retry_on = [503, true]"), "client.retry_on[1]", "status code"),
        (
            MINIMAL.replace("max_attempts = 3", "retry_on = [\"timeot\"]"),
            "client.retry_on[0]",
            "did you mean \"timeout\"",
        ),
        (
            MINIMAL.replace("max_attempts = 3", "retry_on = [70000]"),
            "client.retry_on[0]",
            "not an error status",
        ),
    ];
    for (text, key, reason) in cases {
        let e = err(&text);
        let (k, r) = invalid_at(&e);
        assert_eq!(k, key, "{e}");
        assert!(r.contains(reason), "{e}");
    }
    let fault = format!(
        "{MINIMAL}[[server.faults]]\nkind = \"outage\"\nstart = \"1s\"\nduration = \"1s\"\nstatus = \"timout\"\n"
    );
    assert_eq!(invalid_at(&err(&fault)).0, "server.faults[0].status");
}

// --- --set ----------------------------------------------------------------------------------------

#[test]
fn set_arg_is_split_at_the_first_equals() {
    assert_eq!(parse_set_arg("a.b=c=d").unwrap(), ("a.b".to_owned(), "c=d".to_owned()));
    assert_eq!(parse_set_arg(" k =v").unwrap(), ("k".to_owned(), "v".to_owned()));
    let e = parse_set_arg("server.concurrency").unwrap_err();
    assert_eq!(bad_override(&e).0, "server.concurrency");
    assert!(e.to_string().contains("KEY=VALUE"));
    assert!(bad_override(&parse_set_arg("=5").unwrap_err()).1.contains("empty"));
}

#[test]
fn set_overrides_keys_of_every_type() {
    let exp = set_ok(
        MINIMAL,
        &[
            "server.concurrency=8",
            "client.timeout=2s",
            "horizon=\"1m\"",
            "server.queue=5",
            "server.drop_expired=true",
        ],
    );
    let s = &exp.points[0].spec;
    let ServerSpec::Queue(q) = &s.server else { panic!("queue") };
    assert_eq!((q.concurrency, q.queue, q.drop_expired), (8, Some(5), true));
    assert_eq!(s.horizon, Duration::parse("1m").unwrap());
    assert_eq!(exp.points[0].strategies[0].policy.timeout, Some(Duration::parse("2s").unwrap()));
}

#[test]
fn set_creates_missing_tables() {
    let text = MINIMAL.replace("[client]\nmax_attempts = 3\n", "");
    let exp =
        set_ok(&text, &["client.max_attempts=5", "network.latency={ dist = \"constant\", value = \"1ms\" }"]);
    assert_eq!(exp.points[0].strategies[0].policy.max_attempts, Some(5));
    let exp = set_ok(&text, &["network.latency.dist=constant", "network.latency.value=2ms"]);
    assert_eq!(
        exp.points[0].spec.network.latency,
        crate::experiment::DistSpec::Constant { value: Duration(2_000_000) }
    );
}

#[test]
fn set_on_one_strategy_changes_only_that_strategy() {
    let exp =
        set_ok(DESIGN, &["strategies.full-jitter.backoff.base=50ms", "strategies.immediate.max_attempts=2"]);
    let p = &exp.points[0];
    assert_eq!(p.spec.strategies[0].policy.backoff, BackoffSpec::None {});
    assert_eq!(
        p.spec.strategies[1].policy.backoff,
        BackoffSpec::FullJitter {
            base: Duration(50_000_000),
            cap: Some(Duration(10_000_000_000)),
            multiplier: 2.0
        }
    );
    assert_eq!(p.strategies[0].policy.max_attempts, Some(2));
    assert_eq!(p.strategies[1].policy.max_attempts, Some(4));
}

#[test]
fn later_sets_win_and_kinds_can_change() {
    let exp = set_ok(MINIMAL, &["server.concurrency=8", "server.concurrency=9"]);
    assert!(matches!(&exp.points[0].spec.server, ServerSpec::Queue(q) if q.concurrency == 9));
    let exp = set_ok(MINIMAL, &["workload={ kind = \"open\", rate = 5, duration = \"1s\" }"]);
    assert!(matches!(exp.points[0].spec.workload, WorkloadSpec::Open { rate: 5.0, .. }));
}

#[test]
fn set_of_an_unknown_key_is_a_bad_override_with_a_suggestion() {
    let cases = [
        ("server.concurency=5", "server.concurency", "server.concurrency"),
        ("clent.timeout=2s", "clent.timeout", "client.timeout"),
        ("strategies.fj.backoff.bse=1s", "strategies.fj.backoff.bse", "strategies.fj.backoff.base"),
        ("strategies[0].backoff.bse=1s", "strategies.fj.backoff.bse", "strategies.fj.backoff.base"),
        ("workload.clinets=3", "workload.clinets", "workload.clients"),
    ];
    for (set, key, suggestion) in cases {
        let e = set_err(MINIMAL, &[set]);
        let (arg, reason) = bad_override(&e);
        assert_eq!(arg, set);
        assert!(reason.contains(&format!("`{key}` is not a valid key")), "{e}");
        assert!(reason.contains(&format!("did you mean `{suggestion}`")), "{e}");
    }
    let e = set_err(MINIMAL, &["workload.rate=5"]);
    assert!(bad_override(&e).1.contains("belongs to workload kind open"), "{e}");
    let e = set_err(MINIMAL, &["strategies.fj.backoff={ kind = \"none\", bse = 1 }"]);
    assert!(bad_override(&e).1.contains("`strategies.fj.backoff.bse` is not a valid key"), "{e}");
}

#[test]
fn set_of_an_unknown_strategy_lists_the_strategies() {
    let e = set_err(DESIGN, &["strategies.full-jiter.backoff.base=1s"]);
    let (_, reason) = bad_override(&e);
    assert!(reason.contains("no strategy named `full-jiter` (did you mean `full-jitter`?)"), "{e}");
    assert!(reason.contains("immediate, full-jitter"), "{e}");
}

#[test]
fn bad_set_values_blame_the_override() {
    let e = set_err(MINIMAL, &["server.concurrency=abc"]);
    assert_eq!(
        bad_override(&e),
        ("server.concurrency=abc", "`server.concurrency`: expected a whole number, found a string")
    );
    let e = set_err(MINIMAL, &["server.concurrency=0"]);
    assert!(bad_override(&e).1.contains("zero concurrency"), "{e}");
    let e = set_err(MINIMAL, &["name.x=1"]);
    assert!(bad_override(&e).1.contains("`name` is a string, not a table"), "{e}");
    let e = set_err(MINIMAL, &["workload={ clients = 3 }"]);
    assert!(bad_override(&e).1.contains("missing key `workload.kind`"), "{e}");
    // An error elsewhere in the file is still the file's.
    let e = set_err(&MINIMAL.replace("runs = 2", "runs = 0"), &["server.concurrency=3"]);
    assert_eq!(invalid_at(&e).0, "runs");
}

// --- sweep --------------------------------------------------------------------------------------

const SWEPT: &str = r#"
[sweep]
"server.concurrency" = [4, 8]
"strategies.fj.backoff.base" = ["10ms", "20ms", "30ms"]
"#;

#[test]
fn sweep_expands_in_file_order_last_key_fastest() {
    let exp = ok(&format!("{MINIMAL}{SWEPT}"));
    assert_eq!(exp.sweep_keys, ["server.concurrency", "strategies.fj.backoff.base"]);
    let values: Vec<Vec<String>> = exp.points.iter().map(|p| p.values.clone()).collect();
    let expected = [["4", "10ms"], ["4", "20ms"], ["4", "30ms"], ["8", "10ms"], ["8", "20ms"], ["8", "30ms"]];
    assert_eq!(values, expected);
    for p in &exp.points {
        let ServerSpec::Queue(q) = &p.spec.server else { panic!("queue") };
        assert_eq!(q.concurrency.to_string(), p.values[0]);
        let BackoffSpec::FullJitter { base, .. } = p.strategies[0].policy.backoff else { panic!("fj") };
        assert_eq!(base.to_string(), p.values[1]);
    }
}

#[test]
fn sweep_values_render_like_toml() {
    let text = DESIGN.to_owned() + "[sweep]\n\"workload.rate\" = [800.0, 1000.0, 1200]\n";
    let exp = ok(&text);
    let values: Vec<&str> = exp.points.iter().map(|p| p.values[0].as_str()).collect();
    assert_eq!(values, ["800.0", "1000.0", "1200"]);
    assert!(matches!(exp.points[2].spec.workload, WorkloadSpec::Open { rate: 1200.0, .. }));
}

#[test]
fn sweep_accepts_unquoted_dotted_keys() {
    let text = format!("{MINIMAL}[sweep]\nworkload.clients = [1, 2]\nserver.concurrency = [3]\n");
    let exp = ok(&text);
    assert_eq!(exp.sweep_keys, ["workload.clients", "server.concurrency"]);
    assert_eq!(exp.points.len(), 2);
}

#[test]
fn set_replaces_a_swept_key_and_can_set_the_sweep() {
    let text = format!("{MINIMAL}{SWEPT}");
    let exp = set_ok(&text, &["server.concurrency=16"]);
    assert_eq!(exp.sweep_keys, ["strategies.fj.backoff.base"]);
    assert_eq!(exp.points.len(), 3);
    assert!(exp.points.iter().all(|p| matches!(&p.spec.server, ServerSpec::Queue(q) if q.concurrency == 16)));
    let exp = set_ok(&text, &["sweep.\"server.concurrency\"=[1, 2, 3]"]);
    assert_eq!(exp.points.len(), 9);
    let exp = set_ok(&text, &["sweep.workload.clients=[5, 6]"]);
    assert_eq!(exp.sweep_keys, ["server.concurrency", "strategies.fj.backoff.base", "workload.clients"]);
    assert_eq!(set_ok(&text, &["sweep={}"]).points.len(), 1);
    assert!(bad_override(&set_err(&text, &["sweep=3"])).1.contains("must be set to a table"));
}

#[test]
fn swept_unknown_keys_are_refused_like_unknown_keys() {
    let e = err(&format!("{MINIMAL}[sweep]\n\"server.concurency\" = [1, 2]\n"));
    assert_eq!(unknown(&e), ("sweep.\"server.concurency\"", Some("sweep.\"server.concurrency\""), None));
    let e = err(&format!("{MINIMAL}[sweep]\n\"strategies.nope.backoff.base\" = [\"1s\"]\n"));
    let (key, _, help) = unknown(&e);
    assert_eq!(key, "sweep.\"strategies.nope.backoff.base\"");
    assert!(help.unwrap().contains("no strategy named `nope`"), "{e}");
}

#[test]
fn sweep_entries_must_be_non_empty_lists_of_sweepable_keys() {
    let cases = [
        ("\"server.concurrency\" = []", "sweep.\"server.concurrency\"", "empty"),
        ("\"server.concurrency\" = 4", "sweep.\"server.concurrency\"", "list of values"),
        ("name = [\"a\", \"b\"]", "sweep.\"name\"", "cannot be swept"),
        ("seed = [1, 2]", "sweep.\"seed\"", "cannot be swept"),
    ];
    for (entry, key, reason) in cases {
        let e = err(&format!("{MINIMAL}[sweep]\n{entry}\n"));
        let (k, r) = invalid_at(&e);
        assert_eq!(k, key);
        assert!(r.contains(reason), "{e}");
    }
    let e = err(&top("sweep = 3"));
    assert_eq!(invalid_at(&e).0, "sweep");
}

#[test]
fn huge_sweeps_are_refused() {
    let values = format!("[{}]", (0..100).map(|i| i.to_string()).collect::<Vec<_>>().join(", "));
    let text = format!("{MINIMAL}[sweep]\n\"seed2\" = {values}\n\"a\" = {values}\n\"b\" = {values}\n");
    let e = err(&text);
    assert_eq!(invalid_at(&e).0, "sweep");
    assert!(invalid_at(&e).1.contains("more than 100000 points"));
}

#[test]
fn invalid_swept_values_name_the_sweep() {
    let e = err(&format!("{MINIMAL}[sweep]\n\"server.concurrency\" = [4, 0]\n"));
    let (key, reason) = invalid_at(&e);
    assert_eq!(key, "server.concurrency");
    assert!(
        reason.contains("zero concurrency") && reason.contains("comes from [sweep] \"server.concurrency\""),
        "{e}"
    );
    let e = err(&format!("{MINIMAL}[sweep]\n\"server.concurrency\" = [4, \"x\"]\n"));
    assert!(invalid_at(&e).1.contains("whole number"), "{e}");
}

#[test]
fn setting_a_kind_blames_the_set_for_the_table_it_invalidates() {
    let e = set_err(MINIMAL, &["server.kind=occ"]);
    let (arg, reason) = bad_override(&e);
    assert_eq!(arg, "server.kind=occ");
    assert!(
        reason
            .contains("`server.concurrency` is not a valid key; `concurrency` belongs to server kind queue"),
        "{e}"
    );
    let e = set_err(MINIMAL, &["workload.kind=open"]);
    assert!(bad_override(&e).1.contains("missing key `workload.rate`"), "{e}");
    let e = set_err(MINIMAL, &["strategies.fj.backoff.kind=constant"]);
    assert!(bad_override(&e).1.contains("`strategies.fj.backoff.cap` is not a valid key"), "{e}");
    let exp = set_ok(MINIMAL, &["strategies.fj.backoff.kind=exponential"]);
    assert!(matches!(exp.points[0].strategies[0].policy.backoff, BackoffSpec::Exponential { .. }));
}

// --- robustness: no input makes the loader panic -------------------------------------------

/// `text` with `len` bytes at `pos` replaced by `insert` (the fixtures are ASCII).
fn mutate(text: &str, pos: usize, len: usize, insert: &str) -> String {
    let start = pos.min(text.len());
    let end = (start + len).min(text.len());
    let mut out = text.to_owned();
    out.replace_range(start..end, insert);
    out
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

    #[test]
    fn mutated_files_never_panic(pos in 0usize..2500, len in 0usize..6, insert in "[ -~\n]{0,6}") {
        for text in [MINIMAL, EVERYTHING, DESIGN] {
            let text = mutate(text, pos % text.len(), len, &insert);
            let _ = load_str(&format!("{text}{SWEPT}"), "t", &Overrides::default());
        }
    }

    #[test]
    fn any_set_never_panics(key in "[a-z_.\\[\\]0-9\"]{0,30}", value in "[ -~]{0,20}") {
        let o = Overrides { set: vec![(key, value)], ..Overrides::default() };
        let _ = load_str(&format!("{EVERYTHING}{SWEPT}"), "t", &o);
    }
}
