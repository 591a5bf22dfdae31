//! The schema is consistent with itself, with the spec types and with the shipped
//! experiments (the presets are checked against it beside them, in `experiment::presets`).

use super::check::{Checker, Fill, literal};
use super::*;
use crate::experiment::{Overrides, load_str};
use toml::Value;

/// Every field of every table and kind reachable from the root, with its path.
fn walk(path: &str, ty: &'static Ty, out: &mut Vec<(String, &'static Field)>) {
    match ty {
        Ty::List(item) => walk(&format!("{path}[]"), item, out),
        Ty::Table(t) => {
            for f in t.fields {
                let p = format!("{path}.{}", f.key);
                out.push((p.clone(), f));
                walk(&p, &f.ty, out);
            }
        }
        Ty::Tagged(t) => {
            for v in t.variants {
                for f in v.fields {
                    let p = format!("{path}({}).{}", v.kind, f.key);
                    out.push((p.clone(), f));
                    walk(&p, &f.ty, out);
                }
            }
        }
        _ => {}
    }
}

fn all_fields() -> Vec<(String, &'static Field)> {
    static ROOT_TY: Ty = Ty::Table(&ROOT);
    let mut out = Vec::new();
    walk("", &ROOT_TY, &mut out);
    out
}

#[test]
fn every_default_passes_its_own_check() {
    let name = |p: &str, i: usize, _: &Value| format!("{p}[{i}]");
    let checker =
        Checker { origin: "schema", fill: Fill::Defaults, partials: Fill::Nothing, name_entry: &name };
    let mut checked = 0;
    for (path, f) in all_fields() {
        if let Some(text) = f.default.toml() {
            let mut v = literal(&text);
            checker
                .value(&path, &f.ty, &mut v, f.range, f.range_message)
                .unwrap_or_else(|e| panic!("default of {path} = {text}: {e}"));
            checked += 1;
        }
        assert!(!f.doc.is_empty(), "{path} has no doc");
    }
    assert!(checked > 50, "{checked}");
}

#[test]
fn keys_are_unique_within_each_table() {
    fn unique(fields: &[Field], at: &str) {
        let mut keys: Vec<&str> = fields.iter().map(|f| f.key).collect();
        let n = keys.len();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), n, "duplicate key in {at}");
    }
    for (path, f) in all_fields() {
        match &f.ty {
            Ty::Table(t) => unique(t.fields, &path),
            Ty::List(Ty::Table(t)) => unique(t.fields, &path),
            Ty::Tagged(t) => t.variants.iter().for_each(|v| unique(v.fields, &format!("{path}({})", v.kind))),
            _ => {}
        }
    }
    unique(ROOT.fields, "root");
}

/// A file that sets every key of the format (each kind of each tagged table appears once);
/// the tune layer's tests check its `[tune]`.
pub(crate) const EVERY_KEY: &str = r#"
name = "every-key"
seed = 3
runs = 1
horizon = "30s"
[workload]
kind = "open"
rate = 50.0
duration = "20s"
schedule = [{ at = "5s", rate = 60.0 }]
arrivals = "per-client"
first_call = { dist = "exponential", mean = "10ms" }
rate_changes = "at-next-arrival"
clients = 4
[network]
latency = { dist = "lognormal", median = "1ms", sigma = 0.3 }
request_loss = 0.01
response_loss = 0.01
[server]
kind = "queue"
concurrency = 8
service_time = { dist = "uniform", low = "5ms", high = "15ms" }
queue = 20
reject_status = 429
reject_dont_retry = true
errors = [{ status = 500, probability = 0.01, after_effect = true }]
drop_expired = true
rate_limit = { rate = 100.0, burst = 10.0, retry_after = "exact" }
idempotency = { ttl = "1h", on_in_progress = "wait" }
overload = { alpha = 0.1, knee = 6 }
discipline = "codel"
codel = { target = "10ms", interval = "200ms" }
replicas = 1
balancer = "peak-ewma"
choice_count = 3
ewma = { decay = "5s", default_rtt = "20ms" }
minimum_ring_size = 512
panic_threshold = 40.0
outlier = { consecutive_5xx = 4, enforcing_consecutive_5xx = 90, interval = "5s", base_ejection_time = "20s", max_ejection_time = "200s", max_ejection_percent = 20, always_eject_one_host = true, success_rate_minimum_hosts = 3, success_rate_request_volume = 50, success_rate_stdev_factor = 1500, enforcing_success_rate = 80 }
[[server.faults]]
kind = "outage"
start = "6s"
duration = "1s"
replica = 0
status = 503
retry_after = "2s"
[[server.faults]]
kind = "capacity"
start = "8s"
duration = "1s"
replica_share = 0.5
factor = 0.5
[[server.faults]]
kind = "slowdown"
start = "9s"
duration = "1s"
factor = 2.0
[[server.faults]]
kind = "errors"
start = "10s"
duration = "1s"
probability = 0.2
status = 502
after_effect = false
retry_after = "1s"
[client]
max_attempts = 4
timeout = "500ms"
deadline = "5s"
retry_on = [429, 503, "timeout", "connection-error"]
honor_retry_after = true
retry_after_cap = "10s"
retry_after_mode = "aws-2026"
honor_dont_retry = true
idempotency = "per-op"
retry_other_replica = true
host_selection_retry_max_attempts = 2
[[strategies]]
name = "tb"
backoff = { kind = "exponential", base = "10ms", cap = "1s", multiplier = 3.0, immediate_first = true }
budget = { kind = "token-bucket", capacity = 100.0, retry_cost = 5.0, timeout_cost = 10.0, throttling_cost = 5.0, success_refund = 1.0, scope = "shared" }
breaker = { window = 50, failure_rate = 0.5, slow_call_rate = 0.9, slow_call_duration = "200ms", minimum_calls = 20, open_for = "2s", half_open_calls = 3, scope = "client" }
throttle = { kind = "sre", k = 2.0, window = "1m", scope = "shared" }
layers = [{ name = "gw", max_attempts = 2, timeout = "200ms", route_timeout = "1s", retry_on = [503, "5xx", "retriable-status-codes"], backoff = { kind = "constant", base = "5ms" }, honor_dont_retry = true, honor_overloaded = true }]
[[strategies]]
name = "grpc"
backoff = { kind = "proportional-jitter", base = "10ms", cap = "1s", multiplier = 1.6, p = 0.2 }
budget = { kind = "grpc-throttle", max_tokens = 10.0, token_ratio = 0.1 }
throttle = { kind = "aws-adaptive", scope = "client" }
dead_letter = { after = 3 }
redrive = { at = "2s", rate = 5.0, key = "new" }
[[strategies]]
name = "dlq-after"
backoff = { kind = "none" }
dead_letter = {}
redrive = { after = "1s" }
throttle = { kind = "envoy-admission-control", sampling_window = "10s", sr_threshold = 0.9, aggression = 1.5, rps_threshold = 2, max_rejection_probability = 0.7, scope = "shared" }
[[strategies]]
name = "ratio"
backoff = { kind = "decorrelated-jitter", base = "5ms", cap = "1s" }
budget = { kind = "ratio", ratio = 0.2, min_per_second = 10.0, ttl = "10s" }
breaker = { window = "10s" }
app_retry = { max_attempts = 3, backoff = { kind = "constant", base = "2s" }, retry_on = ["exhausted", "breaker"], key = "same" }
[[strategies]]
name = "envoy"
backoff = { kind = "full-jitter", base = "25ms", cap = "250ms" }
budget = { kind = "concurrency", percent = 20.0, min_concurrency = 3 }
[[strategies]]
name = "brooker"
backoff = { kind = "none" }
budget = { kind = "brooker", capacity = 5.0, per_call = 0.1, retry_cost = 1.0, scope = "client" }
breaker = { kind = "retry-ratio", threshold = 0.1, window = "10s", scope = "client" }
[[strategies]]
name = "brooker-cumulative"
backoff = { kind = "none" }
breaker = { kind = "retry-ratio", threshold = 0.2 }
[[strategies]]
name = "others"
backoff = { kind = "additive-jitter", base = "1ms", cap = "1s", multiplier = 2.0, jitter = "3ms", immediate_first = false }
[[strategies]]
name = "more"
backoff = { kind = "equal-jitter", base = "1ms", cap = "1s" }
[[strategies]]
name = "v2"
backoff = { kind = "decorrelated-jitter-v2", base = "1ms", cap = "1s" }
[[strategies]]
name = "lin"
backoff = { kind = "linear", base = "1ms", cap = "1s" }
[[strategies]]
name = "const"
backoff = { kind = "constant", base = "1ms" }
[[strategies]]
name = "fj"
backoff = { kind = "full-jitter", base = "1ms" }
[[strategies]]
name = "nothing"
backoff = { kind = "none" }
[[strategies]]
name = "from-a-preset"
preset = "aws-standard"
max_attempts = 2
[output]
bucket = "500ms"
timeseries = true
windows = { deploy = ["1s", "2s"] }
reference = { "server.concurrency" = 10 }
[sweep]
skip_invalid = false
"server.concurrency" = [8, 10]
[tune]
strategy = "ratio"
objective = "latency_p99_s"
maximize = false
constraints = ["success_rate >= 0.9", "amplification <= 2"]
levels = 5
candidates = 6
runs = 1
rounds = 2
confirm = 2
confirm_runs = 4
precision = 0.1
seed = 9
export = ["envoy"]
[tune.space]
"backoff.base" = ["1ms", "10ms"]
max_attempts = [2, 3]
"budget.ratio" = { values = [0.1, 0.2] }
[[tune.scenarios]]
name = "quiet"
"server.faults" = []
[[tune.scenarios]]
"#;

/// [`EVERY_KEY`] loads, so every key the schema accepts also fits the spec types.
#[test]
fn a_file_with_every_key_loads() {
    let text = EVERY_KEY;
    let exp = load_str(text, "every-key.toml", &Overrides::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(exp.points.len(), 2);
    assert!(exp.tune.is_some(), "[tune] is kept for the tune layer, which checks it");
    // The kinds the file above cannot hold at once: a closed workload against the OCC row.
    let closed = r#"
name = "every-key-closed"
[workload]
kind = "closed"
clients = 3
ops_per_client = 2
think_time = "1ms"
ramp = "10ms"
[network]
latency = { dist = "normal", mean = "1ms", sd = "0" }
[server]
kind = "occ"
[[strategies]]
name = "c"
backoff = { kind = "constant", base = "1ms" }
"#;
    load_str(closed, "closed.toml", &Overrides::default()).unwrap_or_else(|e| panic!("{e}"));
    let service = "[server]\nconcurrency = 1\nservice_time = { dist = \"discrete\", points = [{ value = \"1ms\", weight = 0.9 }, { value = \"5ms\", weight = 0.1 }] }\n\
                   idempotency = { lock_ttl = \"30s\", release = \"delete\", fencing = true }\n\
                   adaptive_concurrency = { enabled = true, concurrency_update_interval = \"100ms\", sample_aggregate_percentile = 90.0, max_concurrency_limit = 500, min_concurrency_limit = 25, min_rtt_interval = \"60s\", min_rtt_request_count = 50, jitter = 10.0, min_concurrency = 50, buffer = 25.0 }\n";
    // A connection pool needs the queue server and a lossless network; a bulkhead, the queue
    // server.
    let pool = "name = \"c\"\npool = { size = 10, max_wait = \"50ms\", close_on_timeout = false, connect_time = \"1ms\", scope = \"shared\" }\n\
                bulkhead = { max_in_flight = 2, max_wait = \"5ms\", scope = \"client\" }\n";
    let constant = closed
        .replace("[server]\nkind = \"occ\"\n", service)
        .replace("dist = \"normal\", mean = \"1ms\", sd = \"0\"", "dist = \"exponential\", mean = \"1ms\"")
        .replace("name = \"c\"\n", pool)
        .replace(
            "ramp = \"10ms\"\n",
            "ramp = \"10ms\"\npriorities = { critical_plus = 0.1, critical = 0.2, sheddable_plus = 0.3, sheddable = 0.4 }\n",
        );
    load_str(&constant, "constant.toml", &Overrides::default()).unwrap_or_else(|e| panic!("{e}"));
    let serial = constant
        .replace("kind = \"closed\"\nclients = 3\nops_per_client = 2\nthink_time = \"1ms\"\nramp = \"10ms\"\n", "kind = \"serial\"\nclients = 3\ngap = { dist = \"exponential\", mean = \"100ms\" }\nduration = \"1s\"\n");
    assert!(serial.contains("kind = \"serial\""), "test bug: the closed workload was not replaced");
    load_str(&serial, "serial.toml", &Overrides::default()).unwrap_or_else(|e| panic!("{e}"));
    // Each rate limiter kind (the file above has the default, a token bucket with rate).
    let mut limiters = String::new();
    for limiter in [
        "{ kind = \"token-bucket\", fill_interval = \"100ms\", tokens_per_fill = 2, burst = 5.0, status = 503, retry_after = \"none\" }",
        "{ kind = \"leaky-bucket\", rate = 10.0, burst = 5, nodelay = true }",
        "{ kind = \"fixed-window\", limit = 10, window = \"1s\", max_wait = \"100ms\" }",
        "{ kind = \"sliding-window\", limit = 10, window = \"1s\", segments = 10 }",
        "{ kind = \"sliding-log\", limit = 10, window = \"1s\" }",
        "{ kind = \"gcra\", max_burst = 4, count = 1, period = \"1s\" }",
    ] {
        let with = constant.replace("[server]\n", &format!("[server]\nrate_limit = {limiter}\n"));
        load_str(&with, "limiter.toml", &Overrides::default()).unwrap_or_else(|e| panic!("{limiter}: {e}"));
        limiters.push_str(limiter);
    }
    // Each concurrency limit kind, with every key.
    for limit in [
        "{ kind = \"aimd\", initial_limit = 20, min_limit = 20, max_limit = 200, backoff_ratio = 0.9, timeout = \"5s\", windowed = false, scope = \"shared\" }",
        "{ kind = \"vegas\", initial_limit = 20, max_limit = 1000, smoothing = 1.0, probe_multiplier = 30, windowed = true }",
        "{ kind = \"gradient2\", initial_limit = 20, min_limit = 20, max_limit = 200, smoothing = 0.2, queue_size = 4, long_window = 600, rtt_tolerance = 1.5 }",
    ] {
        let with = constant.replace("name = \"c\"\n", &format!("name = \"c\"\nlimit = {limit}\n"));
        load_str(&with, "limit.toml", &Overrides::default()).unwrap_or_else(|e| panic!("{limit}: {e}"));
        limiters.push_str(limit);
    }
    let queue = constant.replace(
        "kind = \"closed\"\nclients = 3\nops_per_client = 2\nthink_time = \"1ms\"\nramp = \"10ms\"\n",
        "kind = \"queue\"\nrate = 5.0\nduration = \"1s\"\narrivals = \"fixed\"\nvisibility_timeout = \"30s\"\nmax_receive_count = 5\nack_loss = 0.01\n",
    )
    // A bulkhead with a queue workload is refused (its own check); a queue has no priorities.
    .replace("bulkhead = { max_in_flight = 2, max_wait = \"5ms\", scope = \"client\" }\n", "")
    .replace("priorities = { critical_plus = 0.1, critical = 0.2, sheddable_plus = 0.3, sheddable = 0.4 }\n", "");
    assert!(queue.contains("kind = \"queue\""), "test bug: the closed workload was not replaced");
    load_str(&queue, "queue.toml", &Overrides::default()).unwrap_or_else(|e| panic!("{e}"));
    // A hedge needs the queue server, no pool and max_attempts = 1 (hedging replaces retrying).
    let hedged = closed.replace("[server]\nkind = \"occ\"\n", service).replace(
        "name = \"c\"\n",
        "name = \"c\"\nmax_attempts = 1\ntimeout = \"1s\"\nhedge = { preset = \"polly\", max_attempts = 3, delay = \"p99.9\", \
         non_fatal = [503, \"timeout\"], hedge_on_per_try_timeout = true, window = \"5s\", min_samples = 10, \
         budget = { ratio = 0.05, capacity = 5.0 }, cancel_in_service = true, scope = \"shared\" }\n",
    );
    load_str(&hedged, "hedged.toml", &Overrides::default()).unwrap_or_else(|e| panic!("{e}"));
    // Restarts, deploys and slow start need replicas (which the first file cannot have).
    let deployed = "name = \"deployed\"\nhorizon = \"60s\"\n[workload]\nkind = \"open\"\nrate = 10.0\nduration = \"50s\"\n\
        [server]\nconcurrency = 2\nservice_time = { dist = \"constant\", value = \"1ms\" }\nreplicas = 4\n\
        balancer = \"least-request\"\nslow_start = { window = \"30s\", aggression = 2.0, min_weight_percent = 20.0 }\n\
        [[server.faults]]\nkind = \"restart\"\nstart = \"2s\"\nduration = \"1s\"\nreplica = 1\n\
        [[server.deploys]]\nstart = \"10s\"\nmax_unavailable = 1\nmax_surge = \"25%\"\nstartup = \"2s\"\nreadiness = \"1s\"\n\
        [[strategies]]\nname = \"d\"\nmax_attempts = 2\nbackoff = { kind = \"none\" }\n";
    load_str(deployed, "deployed.toml", &Overrides::default()).unwrap_or_else(|e| panic!("{e}"));
    // The autoscaler needs replicas and refuses deploys.
    let autoscaled = "name = \"autoscaled\"\nhorizon = \"60s\"\n[workload]\nkind = \"open\"\nrate = 10.0\nduration = \"50s\"\n\
        [server]\nconcurrency = 2\nservice_time = { dist = \"constant\", value = \"1ms\" }\nreplicas = 4\n\
        autoscale = { kind = \"hpa\", target_utilization = 0.7, min = 2, max = 8, sync_period = \"15s\", \
        stabilization_down = \"300s\", stabilization_up = \"0s\", tolerance = 0.1, startup = \"30s\", \
        scale_up = [{ type = \"percent\", value = 100, period = \"15s\" }], scale_down = [{ type = \"pods\", value = 1, period = \"60s\" }], \
        select_up = \"max\", select_down = \"min\" }\n\
        [[strategies]]\nname = \"a\"\nmax_attempts = 2\nbackoff = { kind = \"none\" }\n";
    load_str(autoscaled, "autoscaled.toml", &Overrides::default()).unwrap_or_else(|e| panic!("{e}"));
    let knative = autoscaled.replace(
        "kind = \"hpa\", target_utilization = 0.7, min = 2, max = 8, sync_period = \"15s\", \
        stabilization_down = \"300s\", stabilization_up = \"0s\", tolerance = 0.1, startup = \"30s\", \
        scale_up = [{ type = \"percent\", value = 100, period = \"15s\" }], scale_down = [{ type = \"pods\", value = 1, period = \"60s\" }], \
        select_up = \"max\", select_down = \"min\"",
        "kind = \"kpa\", target = 10, target_utilization = 0.7, min = 2, max = 8, stable_window = \"30s\", \
        panic_window_percentage = 20, panic_threshold_percentage = 300, max_scale_up_rate = 10, max_scale_down_rate = 4, \
        scale_down_delay = \"10s\", startup = \"5s\"",
    );
    assert!(knative.contains("kpa"));
    load_str(&knative, "knative.toml", &Overrides::default()).unwrap_or_else(|e| panic!("{e}"));
    // A call graph with every key of a service's call and of the strategies' graph keys.
    let graph = "name = \"g\"\n[workload]\nkind = \"closed\"\nclients = 2\n\
        [[services]]\nname = \"api\"\nconcurrency = 2\nservice_time = { dist = \"constant\", value = \"1ms\" }\n\
        calls = [{ service = \"db\", count = 2, parallel = false, optional = true, preset = \"envoy\", max_attempts = 3, \
        timeout = \"1s\", route_timeout = \"3s\", deadline = \"2s\", retry_on = [503, \"reset\"], backoff = { kind = \"none\" }, honor_dont_retry = true, \
        honor_overloaded = true, budget = { kind = \"ratio\" }, breaker = { kind = \"retry-ratio\", threshold = 0.5 } }, \
        { service = \"cache\", hedge = { max_attempts = 2, delay = \"5ms\" } }]\n\
        [[services]]\nname = \"db\"\nconcurrency = 2\nservice_time = { dist = \"constant\", value = \"1ms\" }\n\
        [[services]]\nname = \"cache\"\nconcurrency = 2\nservice_time = { dist = \"constant\", value = \"1ms\" }\n\
        [[strategies]]\nname = \"g\"\nmax_attempts = 2\nbackoff = { kind = \"none\" }\npropagate_deadline = true\npropagate_cancellation = true\n\
        cancel_in_service = true\nhop_policy = { max_attempts = 2 }\n";
    load_str(graph, "graph.toml", &Overrides::default()).unwrap_or_else(|e| panic!("{e}"));
    // A strategy read from a production config file (relative to the working directory here,
    // the crate's root, since the origin has no folder).
    let imported = constant.replace(
        "name = \"c\"\n",
        "name = \"c\"\nimport = { kind = \"envoy\", file = \"experiments/bring-your-config/envoy-route.yaml\" }\n",
    );
    load_str(&imported, "imported.toml", &Overrides::default()).unwrap_or_else(|e| panic!("{e}"));
    let text = format!(
        "{text}{closed}{constant}{serial}{limiters}{queue}{hedged}{deployed}{autoscaled}{knative}{graph}{imported}"
    );
    // Every key of every table appears in the text above (so the test covers the format).
    for (path, f) in all_fields() {
        let key = f.key;
        assert!(
            [format!("{key} ="), format!("[{key}]"), format!(".{key}]"), format!("\"{key}")]
                .iter()
                .any(|k| text.contains(k)),
            "the every-key file lacks `{key}` ({path}): add it"
        );
    }
}

#[test]
fn json_schema_accepts_the_shipped_experiments_and_refuses_unknown_keys() {
    let schema = json::schema();
    let validator = jsonschema::validator_for(&schema).expect("the generated schema is a valid JSON Schema");
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments");
    let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.retain(|p| p.extension().is_some_and(|e| e == "toml"));
    files.sort();
    assert!(files.len() >= 5);
    for path in &files {
        let doc: toml::Value =
            std::fs::read_to_string(path).unwrap().parse::<toml::Table>().map(Value::Table).unwrap();
        let json = serde_json::to_value(&doc).unwrap();
        let errors: Vec<String> =
            validator.iter_errors(&json).map(|e| format!("{} at {}", e, e.instance_path)).collect();
        assert!(errors.is_empty(), "{}: {errors:?}", path.display());
    }
    let bad: toml::Table = "name = \"x\"\n[workload]\nkind = \"closed\"\nclientz = 3\n".parse().unwrap();
    assert!(!validator.is_valid(&serde_json::to_value(&bad).unwrap()), "an unknown key must not validate");
    let bad_kind: toml::Table = "name = \"x\"\n[workload]\nkind = \"closd\"\n".parse().unwrap();
    assert!(!validator.is_valid(&serde_json::to_value(&bad_kind).unwrap()));
}
