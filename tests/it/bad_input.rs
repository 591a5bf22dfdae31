//! Bad input is refused before anything runs (DESIGN §7, §8): exit code 2, a message on stderr
//! that names the key, and no output folder. Each case runs through `retrysim check`,
//! `retrysim run --out DIR` and `retrysim slurm --out DIR`.

use assert_cmd::cargo::cargo_bin_cmd;
use std::path::Path;

const VALID: &str = r#"name = "t"
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

const STRATEGY: &str =
    "[[strategies]]\nname = \"fj\"\nbackoff = { kind = \"full-jitter\", base = \"10ms\", cap = \"1s\" }\n";

/// One refused input: the file's text, extra arguments, and what stderr must contain.
struct Case {
    what: &'static str,
    text: String,
    args: &'static [&'static str],
    stderr: &'static [&'static str],
}

fn replaced(from: &str, to: &str) -> String {
    assert!(VALID.contains(from), "test bug: {from:?} is not in the valid file");
    VALID.replacen(from, to, 1)
}

/// A valid call graph api -> db, with `api_calls` and `db_calls` added to the services.
fn graph(api_calls: &str, db_calls: &str) -> String {
    format!(
        "name = \"g\"\nruns = 1\nhorizon = \"5s\"\n[workload]\nkind = \"closed\"\nclients = 2\n\
         [[services]]\nname = \"api\"\nconcurrency = 4\nservice_time = {{ dist = \"constant\", value = \"1ms\" }}\n{api_calls}\n\
         [[services]]\nname = \"db\"\nconcurrency = 4\nservice_time = {{ dist = \"constant\", value = \"1ms\" }}\n{db_calls}\n{STRATEGY}"
    )
}

fn cases() -> Vec<Case> {
    let valid = || VALID.to_owned();
    vec![
        Case {
            what: "unknown key",
            text: replaced("concurrency = 4", "concurrenc = 4"),
            args: &[],
            stderr: &["`server.concurrenc`", "did you mean `server.concurrency`?"],
        },
        Case {
            what: "an import of an unknown format",
            text: replaced("name = \"fj\"", "name = \"fj\"\nimport = { kind = \"nginx\", file = \"route.yaml\" }"),
            args: &[],
            stderr: &["`strategies.fj.import.kind`", "unknown format \"nginx\"", "envoy"],
        },
        Case {
            what: "an import of a missing file",
            text: replaced("name = \"fj\"", "name = \"fj\"\nimport = { kind = \"envoy\", file = \"route.yaml\" }"),
            args: &[],
            stderr: &["`strategies.fj.import.file`", "cannot read", "route.yaml"],
        },
        Case {
            what: "unknown key inside a strategy's backoff",
            text: replaced("base = \"10ms\"", "bse = \"10ms\""),
            args: &[],
            stderr: &["`strategies.fj.backoff.bse`", "did you mean `strategies.fj.backoff.base`?"],
        },
        Case {
            what: "unparsable duration",
            text: replaced("horizon = \"20s\"", "horizon = \"20 seconds\""),
            args: &[],
            stderr: &["`horizon`", "unknown unit"],
        },
        Case {
            what: "negative duration",
            text: replaced("max_attempts = 3", "max_attempts = 3\ntimeout = \"-1s\""),
            args: &[],
            stderr: &["`client.timeout`", "negative"],
        },
        Case {
            what: "cap < base",
            text: replaced("cap = \"1s\"", "cap = \"1ms\""),
            args: &[],
            stderr: &["`strategies.fj.backoff.cap`", "cap must be >= base"],
        },
        Case {
            what: "probability outside [0, 1]",
            text: format!("{VALID}[network]\nrequest_loss = 1.5\n"),
            args: &[],
            stderr: &["`network.request_loss`", "outside [0, 1]"],
        },
        Case {
            what: "zero concurrency",
            text: replaced("concurrency = 4", "concurrency = 0"),
            args: &[],
            stderr: &["`server.concurrency`", "zero concurrency"],
        },
        Case {
            what: "no strategies",
            text: replaced(STRATEGY, ""),
            args: &[],
            stderr: &["`strategies`", "no strategies"],
        },
        Case {
            what: "two strategies with one name",
            text: format!("{VALID}{STRATEGY}"),
            args: &[],
            stderr: &["`strategies.fj`", "two strategies with one name"],
        },
        Case {
            what: "missing key",
            text: replaced("kind = \"closed\"\n", ""),
            args: &[],
            stderr: &["missing key `workload.kind`", "closed, open"],
        },
        Case {
            what: "wrong kind",
            text: replaced("kind = \"full-jitter\"", "kind = \"fulljitter\""),
            args: &[],
            stderr: &["`strategies.fj.backoff.kind`", "did you mean \"full-jitter\"", "decorrelated-jitter"],
        },
        Case {
            what: "TOML syntax error",
            text: replaced("seed = 7", "seed = = 7"),
            args: &[],
            stderr: &["not valid TOML", "line 2, column"],
        },
        Case {
            what: "fixed-interval arrivals with a closed workload",
            text: replaced("clients = 20\n", "clients = 20\narrivals = \"fixed\"\n"),
            args: &[],
            stderr: &["`workload.arrivals`"],
        },
        Case {
            what: "a first call without per-client streams",
            text: replaced(
                "kind = \"closed\"\nclients = 20\n",
                "kind = \"open\"\nrate = 10.0\nduration = \"5s\"\nfirst_call = { dist = \"exponential\", mean = \"10ms\" }\n",
            ),
            args: &[],
            stderr: &["`workload.first_call`", "arrivals = \"per-client\""],
        },
        Case {
            what: "rate changes at the next arrival with fixed-interval arrivals",
            text: replaced(
                "kind = \"closed\"\nclients = 20\n",
                "kind = \"open\"\nrate = 10.0\nduration = \"5s\"\narrivals = \"fixed\"\nrate_changes = \"at-next-arrival\"\n",
            ),
            args: &[],
            stderr: &["`workload.rate_changes`", "arrivals = \"poisson\""],
        },
        Case {
            what: "an unknown arrival process",
            text: replaced(
                "kind = \"closed\"\nclients = 20\n",
                "kind = \"open\"\nrate = 10.0\nduration = \"5s\"\narrivals = \"perclient\"\n",
            ),
            args: &[],
            stderr: &["`workload.arrivals`", "per-client"],
        },
        Case {
            what: "a serial workload on the OCC server",
            text: replaced(
                "kind = \"closed\"\nclients = 20\n",
                "kind = \"serial\"\nclients = 20\ngap = { dist = \"exponential\", mean = \"100ms\" }\nduration = \"5s\"\n",
            )
            .replace("concurrency = 4\n", "kind = \"occ\"\n")
            .replace("service_time = { dist = \"exponential\", mean = \"10ms\" }\nqueue = 0\n", ""),
            args: &[],
            stderr: &["`workload.kind`", "closed workloads only"],
        },
        Case {
            what: "a serial workload without its gap",
            text: replaced(
                "kind = \"closed\"\nclients = 20\n",
                "kind = \"serial\"\nclients = 20\nduration = \"5s\"\n",
            ),
            args: &[],
            stderr: &["`workload.gap`"],
        },
        Case {
            what: "a --set key that does not exist",
            text: valid(),
            args: &["--set", "server.concurency=5"],
            stderr: &["server.concurency", "did you mean `server.concurrency`?"],
        },
        Case {
            what: "a --set key under a misspelt table",
            text: valid(),
            args: &["--set", "clent.timeout=2s"],
            stderr: &["clent.timeout", "did you mean `client.timeout`?"],
        },
        Case {
            what: "a --set of an unknown strategy",
            text: valid(),
            args: &["--set", "strategies.fast.backoff.base=1s"],
            stderr: &["strategies.fast.backoff.base", "no strategy named `fast`", "fj"],
        },
        Case {
            what: "malformed --set (no `=`)",
            text: valid(),
            args: &["--set", "server.concurrency"],
            stderr: &["server.concurrency"],
        },
        Case {
            what: "zero concurrency from --set",
            text: valid(),
            args: &["--set", "server.concurrency=0"],
            stderr: &["server.concurrency=0", "zero concurrency"],
        },
        Case {
            what: "cap < base from --set",
            text: valid(),
            args: &["--set", "strategies.fj.backoff.cap=1ms"],
            stderr: &["strategies.fj.backoff.cap", "cap must be >= base"],
        },
        Case {
            what: "probability from --set",
            text: valid(),
            args: &["--set", "network.response_loss=-0.5"],
            stderr: &["network.response_loss", "outside [0, 1]"],
        },
        Case {
            what: "unparsable duration from --set",
            text: valid(),
            args: &["--set", "client.timeout=soon"],
            stderr: &["client.timeout", "duration"],
        },
        Case {
            what: "a ratio budget with a negative ratio",
            text: valid(),
            args: &["--set", "strategies.fj.budget={ kind = \"ratio\", ratio = -0.1 }"],
            stderr: &["strategies.fj.budget.ratio", "outside [0, 1000]"],
        },
        Case {
            what: "a token bucket of capacity 0",
            text: valid(),
            args: &["--set", "strategies.fj.budget={ kind = \"token-bucket\", capacity = 0 }"],
            stderr: &["strategies.fj.budget.capacity", "> 0"],
        },
        Case {
            what: "an unknown preset",
            text: replaced("name = \"fj\"", "name = \"fj\"\npreset = \"envoi\""),
            args: &[],
            stderr: &["strategies.fj.preset", "did you mean \"envoy\"", "aws-standard"],
        },
        Case {
            what: "a breaker threshold outside [0, 1]",
            text: valid(),
            args: &["--set", "strategies.fj.breaker={ failure_rate = 1.5 }"],
            stderr: &["strategies.fj.breaker.failure_rate", "outside (0, 1]"],
        },
        Case {
            what: "a brooker bucket whose capacity is below its retry cost",
            text: valid(),
            args: &["--set", "strategies.fj.budget={ kind = \"brooker\", capacity = 0.5, retry_cost = 1.0 }"],
            stderr: &["strategies.fj.budget.capacity", "below retry_cost"],
        },
        Case {
            what: "a brooker bucket with a negative per-call deposit",
            text: valid(),
            args: &["--set", "strategies.fj.budget={ kind = \"brooker\", per_call = -0.1 }"],
            stderr: &["strategies.fj.budget.per_call", "negative"],
        },
        Case {
            what: "a retry-ratio threshold of 0",
            text: valid(),
            args: &["--set", "strategies.fj.breaker={ kind = \"retry-ratio\", threshold = 0 }"],
            stderr: &["strategies.fj.breaker.threshold", "outside (0, 1]"],
        },
        Case {
            what: "a retry-ratio threshold above 1",
            text: valid(),
            args: &["--set", "strategies.fj.breaker={ kind = \"retry-ratio\", threshold = 1.5 }"],
            stderr: &["strategies.fj.breaker.threshold", "outside (0, 1]"],
        },
        Case {
            what: "a retry-ratio window of 0",
            text: valid(),
            args: &["--set", "strategies.fj.breaker={ kind = \"retry-ratio\", window = \"0s\" }"],
            stderr: &["strategies.fj.breaker.window", "too short"],
        },
        Case {
            what: "a retry-ratio window that is not a duration",
            text: valid(),
            args: &["--set", "strategies.fj.breaker={ kind = \"retry-ratio\", window = 100 }"],
            stderr: &["strategies.fj.breaker.window"],
        },
        Case {
            what: "a resilience4j key in a retry-ratio breaker",
            text: valid(),
            args: &["--set", "strategies.fj.breaker={ kind = \"retry-ratio\", failure_rate = 0.5 }"],
            stderr: &["strategies.fj.breaker.failure_rate"],
        },
        Case {
            what: "a connection pool of size 0",
            text: valid(),
            args: &["--set", "strategies.fj.pool.size=0"],
            stderr: &["strategies.fj.pool.size", "size >= 1"],
        },
        Case {
            what: "a negative max_wait",
            text: replaced("max_attempts = 3", "max_attempts = 3\npool = { max_wait = \"-5ms\" }"),
            args: &[],
            stderr: &["`client.pool.max_wait`", "negative"],
        },
        Case {
            what: "a negative connect_time",
            text: valid(),
            args: &["--set", "strategies.fj.pool={ connect_time = \"-1ms\" }"],
            stderr: &["strategies.fj.pool.connect_time", "negative"],
        },
        Case {
            what: "an unknown key in a pool",
            text: replaced("max_attempts = 3", "max_attempts = 3\npool = { sise = 10 }"),
            args: &[],
            stderr: &["`client.pool.sise`", "did you mean `client.pool.size`?"],
        },
        Case {
            what: "a connection pool on the OCC server",
            text: replaced("concurrency = 4\n", "kind = \"occ\"\n")
                .replace("service_time = { dist = \"exponential\", mean = \"10ms\" }\nqueue = 0\n", ""),
            args: &["--set", "strategies.fj.pool.size=10"],
            stderr: &["`strategies.fj.pool`", "not supported for server.kind = \"occ\""],
        },
        Case {
            what: "a connection pool with gateway layers",
            text: valid(),
            args: &["--set", "strategies.fj.pool.size=10", "--set", "strategies.fj.layers=[{ name = \"edge\" }]"],
            stderr: &["`strategies.fj.pool`", "layers"],
        },
        Case {
            what: "a connection pool with network loss",
            text: format!("{VALID}[network]\nresponse_loss = 0.1\n"),
            args: &["--set", "client.pool.size=10", "--set", "client.timeout=1s"],
            stderr: &["`strategies.fj.pool`", "response_loss"],
        },
        Case {
            what: "a bulkhead admitting no operation",
            text: valid(),
            args: &["--set", "strategies.fj.bulkhead.max_in_flight=0"],
            stderr: &["strategies.fj.bulkhead.max_in_flight", "max_in_flight >= 1"],
        },
        Case {
            what: "a negative bulkhead wait",
            text: replaced("max_attempts = 3", "max_attempts = 3\nbulkhead = { max_wait = \"-5ms\" }"),
            args: &[],
            stderr: &["`client.bulkhead.max_wait`", "negative"],
        },
        Case {
            what: "an unknown key in a bulkhead",
            text: replaced("max_attempts = 3", "max_attempts = 3\nbulkhead = { max_concurrent_calls = 5 }"),
            args: &[],
            stderr: &["`client.bulkhead.max_concurrent_calls`"],
        },
        Case {
            what: "a bulkhead on the OCC server",
            text: replaced("concurrency = 4\n", "kind = \"occ\"\n")
                .replace("service_time = { dist = \"exponential\", mean = \"10ms\" }\nqueue = 0\n", ""),
            args: &["--set", "strategies.fj.bulkhead.max_in_flight=10"],
            stderr: &["`strategies.fj.bulkhead`", "not supported for server.kind = \"occ\""],
        },
        Case {
            what: "an unknown concurrency limit kind",
            text: replaced("max_attempts = 3", "max_attempts = 3\nlimit = { kind = \"vegass\" }"),
            args: &[],
            stderr: &["`client.limit.kind`", "vegas"],
        },
        Case {
            what: "an AIMD backoff ratio of 1 (AIMDLimit requires [0.5, 1))",
            text: replaced("max_attempts = 3", "max_attempts = 3\nlimit = { kind = \"aimd\", backoff_ratio = 1.0 }"),
            args: &[],
            stderr: &["`client.limit.backoff_ratio`", "[0.5, 1)"],
        },
        Case {
            what: "an AIMD backoff ratio below 0.5",
            text: valid(),
            args: &["--set", "strategies.fj.limit.kind=aimd", "--set", "strategies.fj.limit.backoff_ratio=0.4"],
            stderr: &["strategies.fj.limit.backoff_ratio", "[0.5, 1)"],
        },
        Case {
            what: "a Gradient2 tolerance below 1",
            text: replaced("max_attempts = 3", "max_attempts = 3\nlimit = { kind = \"gradient2\", rtt_tolerance = 0.9 }"),
            args: &[],
            stderr: &["`client.limit.rtt_tolerance`", ">= 1.0"],
        },
        Case {
            what: "a limit's min above its max",
            text: replaced("max_attempts = 3", "max_attempts = 3\nlimit = { kind = \"aimd\", min_limit = 50, max_limit = 10 }"),
            args: &[],
            stderr: &["`strategies.fj.limit.min_limit`", "max_limit"],
        },
        Case {
            what: "a Vegas key on an AIMD limit",
            text: replaced("max_attempts = 3", "max_attempts = 3\nlimit = { kind = \"aimd\", probe_multiplier = 30 }"),
            args: &[],
            stderr: &["`client.limit.probe_multiplier`"],
        },
        Case {
            what: "a concurrency limit on the OCC server",
            text: replaced("concurrency = 4\n", "kind = \"occ\"\n")
                .replace("service_time = { dist = \"exponential\", mean = \"10ms\" }\nqueue = 0\n", ""),
            args: &["--set", "strategies.fj.limit.kind=vegas"],
            stderr: &["`strategies.fj.limit`", "not supported for server.kind = \"occ\""],
        },
        Case {
            what: "adaptive concurrency without its required update interval",
            text: replaced("queue = 0\n", "queue = 0\nadaptive_concurrency = { min_rtt_interval = \"60s\" }\n"),
            args: &[],
            stderr: &["`server.adaptive_concurrency.concurrency_update_interval`"],
        },
        Case {
            what: "an adaptive concurrency percentile outside (0, 100]",
            text: replaced(
                "queue = 0\n",
                "queue = 0\nadaptive_concurrency = { concurrency_update_interval = \"100ms\", min_rtt_interval = \"60s\", sample_aggregate_percentile = 0 }\n",
            ),
            args: &[],
            stderr: &["`server.adaptive_concurrency.sample_aggregate_percentile`", "(0, 100]"],
        },
        Case {
            what: "an adaptive concurrency floor above its ceiling",
            text: replaced(
                "queue = 0\n",
                "queue = 0\nadaptive_concurrency = { concurrency_update_interval = \"100ms\", min_rtt_interval = \"60s\", min_concurrency_limit = 2000 }\n",
            ),
            args: &[],
            stderr: &["`server.adaptive_concurrency.min_concurrency_limit`", "max_concurrency_limit"],
        },
        Case {
            what: "a hedge of more than 5 copies",
            text: replaced("name = \"fj\"\n", "name = \"fj\"\nmax_attempts = 1\nhedge = { max_attempts = 6, delay = \"10ms\" }\n"),
            args: &[],
            stderr: &["`strategies.fj.hedge.max_attempts`", "from 2 to 5"],
        },
        Case {
            what: "a negative hedge delay",
            text: replaced("name = \"fj\"\n", "name = \"fj\"\nmax_attempts = 1\nhedge = { max_attempts = 2, delay = \"-10ms\" }\n"),
            args: &[],
            stderr: &["`strategies.fj.hedge.delay`", "p95"],
        },
        Case {
            what: "a hedge percentile of 100",
            text: replaced("name = \"fj\"\n", "name = \"fj\"\nmax_attempts = 1\nhedge = { max_attempts = 2, delay = \"p100\" }\n"),
            args: &[],
            stderr: &["`strategies.fj.hedge.delay`", "not a percentile in (0, 100)"],
        },
        Case {
            what: "a hedge percentile of 0",
            text: replaced("name = \"fj\"\n", "name = \"fj\"\nmax_attempts = 1\nhedge = { max_attempts = 2, delay = \"p0\" }\n"),
            args: &[],
            stderr: &["`strategies.fj.hedge.delay`", "not a percentile in (0, 100)"],
        },
        Case {
            what: "a hedge without max_attempts or a preset",
            text: replaced("name = \"fj\"\n", "name = \"fj\"\nmax_attempts = 1\nhedge = { delay = \"10ms\" }\n"),
            args: &[],
            stderr: &["`strategies.fj.hedge.max_attempts`", "is required without a preset"],
        },
        Case {
            what: "a hedged strategy that also retries",
            text: replaced("name = \"fj\"\n", "name = \"fj\"\nhedge = { max_attempts = 2, delay = \"10ms\" }\n"),
            args: &[],
            stderr: &["`strategies.fj.max_attempts`", "hedging replaces retrying", "max_attempts = 1"],
        },
        Case {
            what: "Envoy's hedge on per-try timeout without a timeout",
            text: replaced("name = \"fj\"\n", "name = \"fj\"\nmax_attempts = 1\nhedge = { preset = \"envoy\" }\n"),
            args: &[],
            stderr: &["`strategies.fj.timeout`", "hedge_on_per_try_timeout"],
        },
        Case {
            what: "a hedge with a concurrency limit (its permits per copy are not modelled)",
            text: replaced(
                "name = \"fj\"\n",
                "name = \"fj\"\nmax_attempts = 1\nhedge = { max_attempts = 2, delay = \"10ms\" }\nlimit = { kind = \"vegas\" }\n",
            ),
            args: &[],
            stderr: &["`strategies.fj.hedge`", "a concurrency limit", "remove hedge or limit"],
        },
        Case {
            what: "priority classes with replicas (shedding by class per replica is not modelled)",
            text: valid(),
            args: &[
                "--set",
                "server.replicas=2",
                "--set",
                "workload.priorities={ critical = 0.5, sheddable = 0.5 }",
            ],
            stderr: &["`workload.priorities`", "replicas = 2"],
        },
        Case {
            what: "a hedge budget that never allows a hedge",
            text: replaced("name = \"fj\"\n", "name = \"fj\"\nmax_attempts = 1\nhedge = { max_attempts = 2, delay = \"p95\", budget = { capacity = 1.0 } }\n"),
            args: &[],
            stderr: &["`strategies.fj.hedge.budget.capacity`", "capacity > 1"],
        },
        Case {
            what: "an admission-control window that is not whole seconds",
            text: replaced(
                "max_attempts = 3",
                "max_attempts = 3\nthrottle = { kind = \"envoy-admission-control\", sampling_window = \"1500ms\" }",
            ),
            args: &[],
            stderr: &["`strategies.fj.throttle.sampling_window`", "whole number of seconds"],
        },
        Case {
            what: "an admission-control threshold below Envoy's 1 %",
            text: replaced("max_attempts = 3", "max_attempts = 3\nthrottle = { kind = \"envoy-admission-control\", sr_threshold = 0.005 }"),
            args: &[],
            stderr: &["`client.throttle.sr_threshold`", "from 0.01 to 1"],
        },
        Case {
            what: "an admission-control aggression below 1",
            text: replaced("max_attempts = 3", "max_attempts = 3\nthrottle = { kind = \"envoy-admission-control\", aggression = 0.5 }"),
            args: &[],
            stderr: &["`client.throttle.aggression`", "aggression >= 1"],
        },
        Case {
            what: "discrete weights that do not sum to 1",
            text: replaced(
                "service_time = { dist = \"exponential\", mean = \"10ms\" }",
                "service_time = { dist = \"discrete\", points = [{ value = \"1ms\", weight = 0.9 }, { value = \"10ms\", weight = 0.2 }] }",
            ),
            args: &[],
            stderr: &["`server.service_time.points`", "sum to"],
        },
        Case {
            what: "a discrete distribution without points",
            text: replaced(
                "service_time = { dist = \"exponential\", mean = \"10ms\" }",
                "service_time = { dist = \"discrete\", points = [] }",
            ),
            args: &[],
            stderr: &["`server.service_time.points`", "has 0 points"],
        },
        Case {
            what: "priority shares that do not sum to 1",
            text: replaced("clients = 20\n", "clients = 20\npriorities = { critical = 0.5, sheddable = 0.4 }\n"),
            args: &[],
            stderr: &["`workload.priorities`", "sum to 0.9"],
        },
        Case {
            what: "an unknown priority class",
            text: replaced("clients = 20\n", "clients = 20\npriorities = { important = 1.0 }\n"),
            args: &[],
            stderr: &["`workload.priorities.important`"],
        },
        Case {
            what: "a window named after a priority class",
            text: format!(
                "{}[output]\nwindows = {{ critical = [\"1s\", \"2s\"] }}\n",
                replaced("clients = 20\n", "clients = 20\npriorities = { critical = 1.0 }\n")
            ),
            args: &[],
            stderr: &["`output.windows.critical`", "priority class"],
        },
        Case {
            what: "priorities on the OCC server",
            text: replaced("concurrency = 4\n", "kind = \"occ\"\n")
                .replace("service_time = { dist = \"exponential\", mean = \"10ms\" }\nqueue = 0\n", "")
                .replace("clients = 20\n", "clients = 20\npriorities = { critical = 1.0 }\n"),
            args: &[],
            stderr: &["`workload.priorities`", "not supported for server.kind = \"occ\""],
        },
        Case {
            what: "a run that cannot fit in memory",
            text: valid(),
            args: &["--set", "workload.clients=100000000", "--threads", "64"],
            stderr: &["`workload.clients`", "more than this machine's", "--threads"],
        },
        Case {
            what: "--shard 0/3",
            text: valid(),
            args: &["--shard", "0/3"],
            stderr: &["--shard 0/3", "between 1 and N"],
        },
        Case {
            what: "--shard 4/3",
            text: valid(),
            args: &["--shard", "4/3"],
            stderr: &["--shard 4/3", "between 1 and N"],
        },
        Case {
            what: "zero replicas",
            text: replaced("queue = 0", "queue = 0\nreplicas = 0"),
            args: &[],
            stderr: &["`server.replicas`", "set replicas >= 1"],
        },
        Case {
            what: "unknown balancer",
            text: replaced("queue = 0", "queue = 0\nreplicas = 2\nbalancer = \"least-requests\""),
            args: &[],
            stderr: &["`server.balancer`", "least-request"],
        },
        Case {
            what: "a fault naming a replica that does not exist",
            text: replaced(
                "queue = 0",
                "queue = 0\nreplicas = 2\n[[server.faults]]\nkind = \"outage\"\nstart = \"1s\"\nduration = \"1s\"\nreplica = 2",
            ),
            args: &[],
            stderr: &["`server.faults[0].replica`", "numbered from 0 to 1"],
        },
        Case {
            what: "a deploy without replicas",
            text: replaced("queue = 0", "queue = 0\n[[server.deploys]]\nstart = \"1s\"\nstartup = \"1s\""),
            args: &[],
            stderr: &["`server.deploys`", "set server.replicas > 1"],
        },
        Case {
            what: "autoscale without replicas",
            text: replaced("queue = 0", "queue = 0\nautoscale = { kind = \"hpa\", target_utilization = 0.75, max = 8, startup = \"5s\" }"),
            args: &[],
            stderr: &["`server.autoscale`", "set server.replicas > 1"],
        },
        Case {
            what: "autoscale min above max",
            text: replaced("queue = 0", "queue = 0\nreplicas = 4\nautoscale = { kind = \"hpa\", target_utilization = 0.75, min = 9, max = 8, startup = \"5s\" }"),
            args: &[],
            stderr: &["`server.autoscale.min`", "set min <= max"],
        },
        Case {
            what: "autoscale max below the replicas",
            text: replaced("queue = 0", "queue = 0\nreplicas = 10\nautoscale = { kind = \"hpa\", target_utilization = 0.75, max = 8, startup = \"5s\" }"),
            args: &[],
            stderr: &["`server.autoscale.max`", "raise max or lower replicas"],
        },
        Case {
            what: "autoscale target outside (0, 1]",
            text: replaced("queue = 0", "queue = 0\nreplicas = 4\nautoscale = { kind = \"hpa\", target_utilization = 75, max = 8, startup = \"5s\" }"),
            args: &[],
            stderr: &["`server.autoscale.target_utilization`", "must be in (0, 1]"],
        },
        Case {
            what: "autoscale with deploys",
            text: replaced(
                "queue = 0",
                "queue = 0\nreplicas = 4\nautoscale = { kind = \"hpa\", target_utilization = 0.75, max = 8, startup = \"5s\" }\n[[server.deploys]]\nstart = \"1s\"\nstartup = \"1s\"",
            ),
            args: &[],
            stderr: &["`server.autoscale`", "remove one of them"],
        },
        Case {
            what: "a deploy with max_unavailable 0 and max_surge 0",
            text: replaced(
                "queue = 0",
                "queue = 0\nreplicas = 4\n[[server.deploys]]\nstart = \"1s\"\nstartup = \"1s\"\nmax_unavailable = 0\nmax_surge = \"0%\"",
            ),
            args: &[],
            stderr: &["`server.deploys[0].max_unavailable`", "set max_unavailable >= 1 or max_surge >= 1"],
        },
        Case {
            what: "a deploy's max_surge that is not a count or a percentage",
            text: replaced(
                "queue = 0",
                "queue = 0\nreplicas = 4\n[[server.deploys]]\nstart = \"1s\"\nstartup = \"1s\"\nmax_surge = \"25 percent\"",
            ),
            args: &[],
            stderr: &["`server.deploys[0].max_surge`", "a percentage such as \"25%\""],
        },
        Case {
            what: "a deploy that starts before the one before it has ended",
            text: replaced(
                "queue = 0",
                "queue = 0\nreplicas = 4\n[[server.deploys]]\nstart = \"1s\"\nstartup = \"5s\"\n[[server.deploys]]\nstart = \"3s\"\nstartup = \"5s\"",
            ),
            args: &[],
            stderr: &["`server.deploys[1].start`", "one after the other"],
        },
        Case {
            what: "a restart naming a replica that does not exist",
            text: replaced(
                "queue = 0",
                "queue = 0\nreplicas = 3\n[[server.faults]]\nkind = \"restart\"\nstart = \"1s\"\nduration = \"1s\"\nreplica = 3",
            ),
            args: &[],
            stderr: &["`server.faults[0].replica`", "numbered from 0 to 2"],
        },
        Case {
            what: "slow start with a balancer Envoy does not apply it to",
            text: replaced(
                "queue = 0",
                "queue = 0\nreplicas = 3\nbalancer = \"random\"\nslow_start = { window = \"30s\" }",
            ),
            args: &[],
            stderr: &["`server.slow_start`", "round-robin and least-request"],
        },
        Case {
            what: "a rate limiter with replicas",
            text: replaced("queue = 0", "queue = 0\nreplicas = 2\nrate_limit = { rate = 10.0, burst = 5 }"),
            args: &[],
            stderr: &["`server.rate_limit`", "set replicas = 1"],
        },
        Case {
            what: "unknown queue discipline",
            text: replaced("queue = 0", "queue = 0\ndiscipline = \"red\""),
            args: &[],
            stderr: &["`server.discipline`", "codel-rpc"],
        },
        Case {
            what: "zero CoDel target",
            text: replaced("queue = 0", "queue = 0\ndiscipline = \"codel\"\ncodel = { target = \"0ms\" }"),
            args: &[],
            stderr: &["`server.codel.target`", "> 0"],
        },
        Case {
            what: "negative CoDel interval",
            text: replaced("queue = 0", "queue = 0"),
            args: &["--set", "server.codel.interval=\"-100ms\""],
            stderr: &["`server.codel.interval`"],
        },
        Case {
            what: "negative overload alpha",
            text: replaced("queue = 0", "queue = 0\noverload = { alpha = -0.5, knee = 2 }"),
            args: &[],
            stderr: &["`server.overload.alpha`", ">= 0"],
        },
        Case {
            what: "overload knee above concurrency",
            text: replaced("queue = 0", "queue = 0\noverload = { alpha = 0.1, knee = 5 }"),
            args: &[],
            stderr: &["`server.overload.knee`", "above concurrency (4)"],
        },
        Case {
            what: "idempotency ttl 0",
            text: replaced("queue = 0", "queue = 0\nidempotency = { ttl = \"0\" }"),
            args: &[],
            stderr: &["`server.idempotency.ttl`", "must be > 0"],
        },
        Case {
            what: "lock_ttl 0",
            text: replaced("queue = 0", "queue = 0\nidempotency = { lock_ttl = \"0s\" }"),
            args: &[],
            stderr: &["`server.idempotency.lock_ttl`", "must be > 0"],
        },
        Case {
            what: "negative lock_ttl",
            text: replaced("queue = 0", "queue = 0\nidempotency = { lock_ttl = \"-30s\" }"),
            args: &[],
            stderr: &["`server.idempotency.lock_ttl`", "negative"],
        },
        Case {
            what: "lock_ttl with parked waiters",
            text: replaced("queue = 0", "queue = 0\nidempotency = { lock_ttl = \"30s\", on_in_progress = \"wait\" }"),
            args: &[],
            stderr: &["`server.idempotency.lock_ttl`", "on_in_progress = \"conflict\""],
        },
        Case {
            what: "unknown lock release",
            text: replaced("queue = 0", "queue = 0\nidempotency = { release = \"unlink\" }"),
            args: &[],
            stderr: &["`server.idempotency.release`", "delete, compare-and-delete"],
        },
        Case {
            what: "dead_letter.after above max_attempts",
            text: replaced("max_attempts = 3", "max_attempts = 3\ndead_letter = { after = 5 }"),
            args: &[],
            stderr: &["`strategies.fj.dead_letter.after`", "above max_attempts = 3"],
        },
        Case {
            what: "dead_letter.after 0",
            text: replaced("max_attempts = 3", "max_attempts = 3\ndead_letter = { after = 0 }"),
            args: &[],
            stderr: &["`client.dead_letter.after`", "at least 1"],
        },
        Case {
            what: "dead_letter with unlimited attempts",
            text: replaced("max_attempts = 3", "dead_letter = {}"),
            args: &[],
            stderr: &["`strategies.fj.dead_letter.after`", "unlimited"],
        },
        Case {
            what: "a re-drive without a dead-letter queue",
            text: replaced("max_attempts = 3", "max_attempts = 3\nredrive = { after = \"10m\" }"),
            args: &[],
            stderr: &["`strategies.fj.redrive`", "add dead_letter"],
        },
        Case {
            what: "a re-drive with at and after",
            text: replaced(
                "max_attempts = 3",
                "max_attempts = 3\ndead_letter = { after = 3 }\nredrive = { at = \"2h\", after = \"10m\" }",
            ),
            args: &[],
            stderr: &["`strategies.fj.redrive`", "exactly one of at"],
        },
        Case {
            what: "a re-drive at rate 0",
            text: replaced(
                "max_attempts = 3",
                "max_attempts = 3\ndead_letter = { after = 3 }\nredrive = { at = \"2h\", rate = 0 }",
            ),
            args: &[],
            stderr: &["`client.redrive.rate`", "must be > 0"],
        },
        Case {
            what: "app_retry without its backoff",
            text: replaced("name = \"fj\"\n", "name = \"fj\"\napp_retry = { max_attempts = 3 }\n"),
            args: &[],
            stderr: &["`strategies.fj.app_retry.backoff`"],
        },
        Case {
            what: "app_retry max_attempts 0",
            text: replaced("name = \"fj\"\n", "name = \"fj\"\napp_retry = { max_attempts = 3, backoff = { kind = \"constant\", base = \"5s\" } }\n"),
            args: &["--set", "strategies.fj.app_retry.max_attempts=0"],
            stderr: &["`strategies.fj.app_retry.max_attempts`", "between 1 and 255"],
        },
        Case {
            what: "app_retry on an unknown reason",
            text: replaced("name = \"fj\"\n", "name = \"fj\"\napp_retry = { max_attempts = 3, backoff = { kind = \"constant\", base = \"5s\" } }\n"),
            args: &["--set", "strategies.fj.app_retry.retry_on=[\"exhausted\", \"timeout\"]"],
            stderr: &["`strategies.fj.app_retry.retry_on", "non_retryable"],
        },
        Case {
            what: "app_retry on nothing",
            text: replaced("name = \"fj\"\n", "name = \"fj\"\napp_retry = { max_attempts = 3, backoff = { kind = \"constant\", base = \"5s\" } }\n"),
            args: &["--set", "strategies.fj.app_retry.retry_on=[]"],
            stderr: &["`strategies.fj.app_retry.retry_on`", "leave app_retry out"],
        },
        Case {
            what: "app_retry with hedging",
            text: replaced(
                "name = \"fj\"\n",
                "name = \"fj\"\nmax_attempts = 1\nhedge = { max_attempts = 2, delay = \"10ms\" }\napp_retry = { max_attempts = 3, backoff = { kind = \"constant\", base = \"5s\" } }\n",
            ),
            args: &[],
            stderr: &["`strategies.fj.app_retry`", "with hedge is not modelled"],
        },
        Case {
            what: "app_retry with a dead-letter queue",
            text: replaced("name = \"fj\"\n", "name = \"fj\"\ndead_letter = { after = 3 }\napp_retry = { max_attempts = 3, backoff = { kind = \"constant\", base = \"5s\" } }\n"),
            args: &[],
            stderr: &["`strategies.fj.app_retry`", "with dead_letter is not modelled"],
        },
        Case {
            what: "app_retry with a bulkhead",
            text: replaced("name = \"fj\"\n", "name = \"fj\"\nbulkhead = { max_in_flight = 5 }\napp_retry = { max_attempts = 3, backoff = { kind = \"constant\", base = \"5s\" } }\n"),
            args: &[],
            stderr: &["`strategies.fj.app_retry`", "with bulkhead is not modelled"],
        },
        Case {
            what: "app_retry on the OCC server",
            text: replaced("concurrency = 4\n", "kind = \"occ\"\n")
                .replace("service_time = { dist = \"exponential\", mean = \"10ms\" }\nqueue = 0\n", "")
                .replace("name = \"fj\"\n", "name = \"fj\"\napp_retry = { max_attempts = 3, backoff = { kind = \"constant\", base = \"5s\" } }\n"),
            args: &[],
            stderr: &["`strategies.fj.app_retry`", "not supported for server.kind = \"occ\""],
        },
        Case {
            what: "app_retry with a queue workload",
            text: replaced(
                "kind = \"closed\"\nclients = 20",
                "kind = \"queue\"\nrate = 10.0\nduration = \"10s\"\nvisibility_timeout = \"1s\"",
            )
            .replace("queue = 0\n", "")
            .replace("max_attempts = 3\n", "")
            .replace("name = \"fj\"\n", "name = \"fj\"\napp_retry = { max_attempts = 3, backoff = { kind = \"constant\", base = \"5s\" } }\n"),
            args: &[],
            stderr: &["`strategies.fj.app_retry`", "set by the queue workload"],
        },
        Case {
            what: "visibility_timeout 0",
            text: replaced(
                "kind = \"closed\"\nclients = 20",
                "kind = \"queue\"\nrate = 10.0\nduration = \"10s\"\nvisibility_timeout = \"0s\"",
            )
            .replace("queue = 0\n", "")
            .replace("max_attempts = 3\n", ""),
            args: &[],
            stderr: &["`workload.visibility_timeout`", "must be > 0"],
        },
        Case {
            what: "a bulkhead with a dead-letter queue",
            text: replaced("max_attempts = 3", "max_attempts = 3\ndead_letter = { after = 3 }\nbulkhead = { max_in_flight = 5 }"),
            args: &[],
            stderr: &["`strategies.fj.bulkhead`", "dead-letter queue"],
        },
        Case {
            what: "a queue's consumers where the schema keeps them",
            text: replaced(
                "kind = \"closed\"\nclients = 20",
                "kind = \"queue\"\nrate = 10.0\nduration = \"10s\"\nconsumers = 10",
            )
            .replace("queue = 0\n", "")
            .replace("max_attempts = 3\n", ""),
            args: &[],
            stderr: &["`workload.consumers`", "`[server] concurrency`"],
        },
        Case {
            what: "max_attempts with a queue workload",
            text: replaced("kind = \"closed\"\nclients = 20", "kind = \"queue\"\nrate = 10.0\nduration = \"10s\"")
                .replace("queue = 0\n", ""),
            args: &[],
            stderr: &["`strategies.fj.max_attempts`", "workload.max_receive_count"],
        },
        Case {
            what: "a bounded queue in front of a queue workload's consumers",
            text: replaced("kind = \"closed\"\nclients = 20", "kind = \"queue\"\nrate = 10.0\nduration = \"10s\"")
                .replace("max_attempts = 3\n", ""),
            args: &[],
            stderr: &["`server.queue`", "remove server.queue"],
        },
        Case {
            what: "unknown on_in_progress",
            text: replaced("queue = 0", "queue = 0\nidempotency = { on_in_progress = \"block\" }"),
            args: &[],
            stderr: &["`server.idempotency.on_in_progress`", "conflict, wait"],
        },
        Case {
            what: "unknown idempotency mode",
            text: replaced("max_attempts = 3", "max_attempts = 3\nidempotency = \"per-request\""),
            args: &[],
            stderr: &["`client.idempotency`", "none, per-op, per-attempt"],
        },
        Case {
            what: "unknown idempotency mode in a strategy, from --set",
            text: valid(),
            args: &["--set", "strategies.fj.idempotency=per-call"],
            stderr: &["`strategies.fj.idempotency`", "none, per-op, per-attempt"],
        },
        Case {
            what: "rate limit rate 0",
            text: replaced("queue = 0", "queue = 0\nrate_limit = { rate = 0 }"),
            args: &[],
            stderr: &["`server.rate_limit.rate`", "> 0"],
        },
        Case {
            what: "rate limit burst below one request",
            text: valid(),
            args: &["--set", "server.rate_limit={ rate = 10, burst = 0.5 }"],
            stderr: &["`server.rate_limit.burst`", ">= 1"],
        },
        Case {
            what: "unknown Retry-After format",
            text: replaced("queue = 0", "queue = 0\nrate_limit = { rate = 10, retry_after = \"ms\" }"),
            args: &[],
            stderr: &["`server.rate_limit.retry_after`", "seconds, exact"],
        },
        Case {
            what: "unknown rate limiter kind",
            text: valid(),
            args: &["--set", "server.rate_limit={ kind = \"fixed-windw\", limit = 10, window = \"1s\" }"],
            stderr: &["`server.rate_limit.kind`", "did you mean \"fixed-window\""],
        },
        Case {
            what: "leaky bucket with a negative burst",
            text: valid(),
            args: &["--set", "server.rate_limit={ kind = \"leaky-bucket\", rate = 10, burst = -1 }"],
            stderr: &["`server.rate_limit.burst`", "0"],
        },
        Case {
            what: "leaky bucket rate 0",
            text: valid(),
            args: &["--set", "server.rate_limit={ kind = \"leaky-bucket\", rate = 0 }"],
            stderr: &["`server.rate_limit.rate`", "0.001"],
        },
        Case {
            what: "fixed window of zero length",
            text: valid(),
            args: &["--set", "server.rate_limit={ kind = \"fixed-window\", limit = 10, window = \"0s\" }"],
            stderr: &["`server.rate_limit.window`", "> 0"],
        },
        Case {
            what: "fixed window limit 0",
            text: valid(),
            args: &["--set", "server.rate_limit={ kind = \"fixed-window\", limit = 0, window = \"1s\" }"],
            stderr: &["`server.rate_limit.limit`", "from 1"],
        },
        Case {
            what: "sliding window of 0 segments",
            text: valid(),
            args: &["--set", "server.rate_limit={ kind = \"sliding-window\", limit = 10, window = \"1s\", segments = 0 }"],
            stderr: &["`server.rate_limit.segments`", "from 1"],
        },
        Case {
            what: "sliding window segments that do not divide it",
            text: valid(),
            args: &["--set", "server.rate_limit={ kind = \"sliding-window\", limit = 10, window = \"1s\", segments = 7 }"],
            stderr: &["`server.rate_limit.segments`", "divides"],
        },
        Case {
            what: "sliding log without a window",
            text: valid(),
            args: &["--set", "server.rate_limit={ kind = \"sliding-log\", limit = 10 }"],
            stderr: &["`server.rate_limit.window`"],
        },
        Case {
            what: "gcra period 0",
            text: valid(),
            args: &["--set", "server.rate_limit={ kind = \"gcra\", max_burst = 1, count = 10, period = \"0s\" }"],
            stderr: &["`server.rate_limit.period`", "> 0"],
        },
        Case {
            what: "a key of another limiter kind",
            text: valid(),
            args: &["--set", "server.rate_limit={ kind = \"gcra\", max_burst = 1, count = 10, period = \"1s\", segments = 3 }"],
            stderr: &["`server.rate_limit.segments`", "sliding-window"],
        },
        Case {
            what: "token bucket with rate and fill_interval",
            text: valid(),
            args: &["--set", "server.rate_limit={ rate = 10, fill_interval = \"100ms\" }"],
            stderr: &["`server.rate_limit.fill_interval`", "either"],
        },
        Case {
            what: "token bucket fill_interval below Envoy's 50 ms",
            text: valid(),
            args: &["--set", "server.rate_limit={ fill_interval = \"10ms\" }"],
            stderr: &["`server.rate_limit.fill_interval`", "50ms"],
        },
        Case {
            what: "token bucket without rate or fill_interval",
            text: valid(),
            args: &["--set", "server.rate_limit={ burst = 5.0 }"],
            stderr: &["`server.rate_limit.rate`", "fill_interval"],
        },
        Case {
            what: "rate limit status outside 400..599",
            text: valid(),
            args: &["--set", "server.rate_limit={ rate = 10, status = 200 }"],
            stderr: &["`server.rate_limit.status`", "400"],
        },
        Case {
            what: "a gateway layer of 300 attempts",
            text: valid(),
            args: &["--set", "strategies.fj.layers=[{ max_attempts = 300 }]"],
            stderr: &["strategies.fj.layers[0].max_attempts", "between 1 and 255"],
        },
        Case {
            what: "Envoy's refused-stream, which never matches",
            text: valid(),
            args: &["--set", "strategies.fj.layers=[{ retry_on = [\"5xx\", \"refused-stream\"] }]"],
            stderr: &["strategies.fj.layers[0].retry_on[1]", "refused-stream", "never match"],
        },
        Case {
            what: "retriable-status-codes without a status",
            text: valid(),
            args: &["--set", "client.retry_on=[\"retriable-status-codes\", \"reset\"]"],
            stderr: &["strategies.fj.retry_on", "retriable-status-codes", "no status"],
        },
        Case {
            what: "an unknown retry group",
            text: valid(),
            args: &["--set", "client.retry_on=[\"gateway-errors\"]"],
            stderr: &["client.retry_on[0]", "did you mean \"gateway-error\"?"],
        },
        Case {
            what: "a layer's route timeout of 0",
            text: valid(),
            args: &["--set", "strategies.fj.layers=[{ route_timeout = \"0s\" }]"],
            stderr: &["strategies.fj.layers[0].route_timeout", "> 0"],
        },
        Case {
            what: "an edge's route timeout of 0",
            text: graph("calls = [{ service = \"db\", route_timeout = \"0s\" }]", ""),
            args: &[],
            stderr: &["services[0].calls[0].route_timeout", "> 0"],
        },
        Case {
            what: "layers with per-attempt idempotency keys",
            text: valid(),
            args: &[
                "--set",
                "strategies.fj.layers=[{}]",
                "--set",
                "strategies.fj.idempotency=\"per-attempt\"",
            ],
            stderr: &["strategies.fj.layers", "per-attempt"],
        },
        Case {
            what: "swept key that does not exist",
            text: format!("{VALID}[sweep]\n\"server.concurency\" = [1, 2]\n"),
            args: &[],
            stderr: &["sweep.\"server.concurency\"", "did you mean `sweep.\"server.concurrency\"`?"],
        },
        Case {
            what: "a reference point on a key that is not swept",
            text: format!(
                "{VALID}[sweep]\n\"server.concurrency\" = [4, 8]\n[output]\nreference = {{ \"server.concurency\" = 4 }}\n"
            ),
            args: &[],
            stderr: &[
                "`output.reference.\"server.concurency\"`",
                "not a swept key (did you mean `server.concurrency`?)",
            ],
        },
        Case {
            what: "a reference point on a value the sweep does not have",
            text: format!("{VALID}[sweep]\n\"server.concurrency\" = [4, 8]\n[output]\nreference = {{ \"server.concurrency\" = 5 }}\n"),
            args: &[],
            stderr: &["`output.reference.\"server.concurrency\"`", "5 is not one of the swept values", "4, 8"],
        },
        Case {
            what: "a call graph with a cycle",
            text: graph("calls = [{ service = \"db\" }]", "calls = [{ service = \"api\" }]"),
            args: &[],
            stderr: &["`services[1].calls[0].service`", "cycle", "api -> db -> api"],
        },
        Case {
            what: "a call to a service that does not exist",
            text: graph("calls = [{ service = \"cache\" }]", ""),
            args: &[],
            stderr: &["`services[0].calls[0].service`", "\"cache\" is not a service", "api, db"],
        },
        Case {
            what: "[server] next to [[services]]",
            text: format!("{}[server]\nconcurrency = 2\nservice_time = {{ dist = \"constant\", value = \"1ms\" }}\n", graph("", "")),
            args: &[],
            stderr: &["`server`", "first service"],
        },
        Case {
            what: "two services with one name",
            text: graph("", "").replace("name = \"db\"", "name = \"api\""),
            args: &[],
            stderr: &["`services[1].name`", "used twice"],
        },
        Case {
            what: "no entry service: neither [server] nor [[services]]",
            text: graph("", "").split("[[services]]").next().unwrap().to_owned() + STRATEGY,
            args: &[],
            stderr: &["`server`"],
        },
        Case {
            what: "a service's server key out of range",
            text: graph("", "").replacen("concurrency = 4", "concurrency = 0", 1),
            args: &[],
            stderr: &["`services[0].concurrency`"],
        },
        Case {
            what: "a rolling deploy and an autoscaler on one service of the call graph",
            text: graph(
                "replicas = 4\nautoscale = { kind = \"hpa\", target_utilization = 0.5, max = 8, startup = \"5s\" }\n[[services.deploys]]\nstart = \"1s\"\nstartup = \"1s\"",
                "",
            ),
            args: &[],
            stderr: &["`services[0].autoscale`", "not modelled"],
        },
        Case {
            what: "a service's restart fault naming a replica that does not exist",
            text: graph(
                "",
                "replicas = 2\n[[services.faults]]\nkind = \"restart\"\nstart = \"1s\"\nduration = \"1s\"\nreplica = 2",
            ),
            args: &[],
            stderr: &["`services[1].faults[0].replica`", "replica 2 does not exist"],
        },
        Case {
            what: "an autoscaler on a service of one replica",
            text: graph("", "autoscale = { kind = \"hpa\", target_utilization = 0.5, max = 4, startup = \"5s\" }"),
            args: &[],
            stderr: &["`services[1].autoscale`", "needs replicas"],
        },
        Case {
            what: "slow start on a service of one replica",
            text: graph("", "slow_start = { window = \"10s\" }"),
            args: &[],
            stderr: &["`services[1].slow_start`", "needs replicas"],
        },
        Case {
            what: "a service's outlier detector ejecting for less than its base time",
            text: graph("", "replicas = 2\noutlier = { base_ejection_time = \"30s\", max_ejection_time = \"10s\" }"),
            args: &[],
            stderr: &["`services[1].outlier.max_ejection_time`", "below base_ejection_time"],
        },
        Case {
            what: "an edge's retry_other_replica towards a service of one replica",
            text: graph("calls = [{ service = \"db\", max_attempts = 2, retry_other_replica = true }]", ""),
            args: &[],
            stderr: &["`services[0].calls[0].retry_other_replica`", "\"db\" has one replica"],
        },
        Case {
            what: "the client's retry_other_replica with a call graph",
            text: graph("calls = [{ service = \"db\" }]", "replicas = 2"),
            args: &["--set", "strategies.fj.retry_other_replica=true"],
            stderr: &["`strategies.fj.retry_other_replica`", "on the edges"],
        },
        Case {
            what: "deadline propagation without a call graph",
            text: valid(),
            args: &["--set", "strategies.fj.propagate_deadline=true"],
            stderr: &["`strategies.fj.propagate_deadline`", "[[services]]"],
        },
        Case {
            what: "a reference point without a sweep",
            text: valid(),
            args: &["--set", "output.reference={ \"server.concurrency\" = 4 }"],
            stderr: &["output.reference.\"server.concurrency\"", "has no [sweep]"],
        },
    ]
}

/// Runs `retrysim ARGS` in `dir` and checks the refusal.
fn assert_refused(dir: &Path, args: &[&str], case: &Case) {
    let output = cargo_bin_cmd!("retrysim").current_dir(dir).args(args).output().expect("the binary runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let shown = format!("case {:?}, retrysim {}:\n{stderr}", case.what, args.join(" "));
    assert_eq!(output.status.code(), Some(2), "{shown}");
    for fragment in case.stderr {
        assert!(stderr.contains(fragment), "stderr lacks {fragment:?}: {shown}");
    }
    assert!(!dir.join("out").exists(), "--out folder created: {shown}");
    assert!(!dir.join("results").exists(), "default output folder created: {shown}");
}

#[test]
fn bad_input_is_refused_with_the_key_and_no_output() {
    for case in cases() {
        let tmp = tempfile::tempdir().expect("a temporary folder");
        std::fs::write(tmp.path().join("e.toml"), &case.text).expect("the file is written");
        let mut check = vec!["check", "e.toml"];
        check.extend(case.args);
        assert_refused(tmp.path(), &check, &case);
        let mut run = vec!["run", "e.toml", "--out", "out"];
        run.extend(case.args);
        assert_refused(tmp.path(), &run, &case);
        // Without --out, `run` would write results/<name>/: still nothing.
        let mut default_out = vec!["run", "e.toml"];
        default_out.extend(case.args);
        assert_refused(tmp.path(), &default_out, &case);
        // `slurm` checks the file as `run` does before it writes its scripts. It shares
        // `run`'s --set but not --threads or --shard (it writes the shards' commands), so
        // cases about those flags are `run`'s alone.
        let run_only_flag = case.args.iter().any(|a| a.starts_with("--") && *a != "--set");
        if !run_only_flag {
            let mut slurm = vec!["slurm", "e.toml", "--shards", "1", "--out", "out"];
            slurm.extend(case.args);
            assert_refused(tmp.path(), &slurm, &case);
        }
    }
}

#[test]
fn a_missing_file_is_bad_input() {
    let tmp = tempfile::tempdir().expect("a temporary folder");
    let case = Case { what: "missing file", text: String::new(), args: &[], stderr: &["nope.toml"] };
    assert_refused(tmp.path(), &["check", "nope.toml"], &case);
    assert_refused(tmp.path(), &["run", "nope.toml", "--out", "out", "--set", "server.concurrency=2"], &case);
}

#[test]
fn the_valid_file_passes_check() {
    let tmp = tempfile::tempdir().expect("a temporary folder");
    std::fs::write(tmp.path().join("e.toml"), VALID).expect("the file is written");
    let output = cargo_bin_cmd!("retrysim")
        .current_dir(tmp.path())
        .args(["check", "e.toml", "--set", "strategies.fj.backoff.base=20ms", "--set", "client.timeout=2s"])
        .output()
        .expect("the binary runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(!tmp.path().join("results").exists(), "check writes nothing");
}

#[test]
fn plot_refuses_a_folder_that_is_not_a_result() {
    let tmp = tempfile::tempdir().expect("a temporary folder");
    std::fs::write(tmp.path().join("notes.txt"), "not a result").unwrap();
    let output = cargo_bin_cmd!("retrysim").arg("plot").arg(tmp.path()).output().expect("the binary runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("is not a retrysim result folder") && stderr.contains("summary.csv"), "{stderr}");
    assert!(
        !tmp.path().join("report.html").exists() && !tmp.path().join("charts").exists(),
        "nothing is written"
    );
}

/// `run --reference` is checked against the sweep before anything runs, like the file's
/// `[output] reference`.
#[test]
fn a_bad_reference_flag_is_refused_before_the_run() {
    let tmp = tempfile::tempdir().expect("a temporary folder");
    std::fs::write(tmp.path().join("e.toml"), format!("{VALID}[sweep]\n\"server.concurrency\" = [4, 8]\n"))
        .expect("the file is written");
    for (flag, fragments) in [
        ("server.concurrency=5", &["--reference server.concurrency=5", "not one of the swept values"][..]),
        (
            "server.concurency=4",
            &["--reference server.concurency=4", "did you mean `server.concurrency`?"][..],
        ),
    ] {
        let case = Case { what: "--reference", text: String::new(), args: &[], stderr: fragments };
        assert_refused(tmp.path(), &["run", "e.toml", "--out", "out", "--reference", flag], &case);
    }
}

/// What `retrysim serve` cannot play is refused before it listens, naming the key or flag,
/// with no output folder.
#[test]
fn serve_refuses_what_it_cannot_play() {
    let cases: Vec<(&str, String, &[&str], &[&str])> = vec![
        (
            "drop_expired",
            replaced("queue = 0", "queue = 0\ndrop_expired = true"),
            &[],
            &["`server.drop_expired`", "cannot see when a real client stops waiting"],
        ),
        (
            "an occ server",
            replaced(
                "[server]\nconcurrency = 4\nservice_time = { dist = \"exponential\", mean = \"10ms\" }\nqueue = 0\n",
                "[server]\nkind = \"occ\"\n",
            ),
            &[],
            &["`server.kind`", "only kind = \"queue\""],
        ),
        (
            "network latency",
            replaced("[server]", "[network]\nlatency = { dist = \"constant\", value = \"1ms\" }\n[server]"),
            &[],
            &["`network.latency`", "the network is the real one"],
        ),
        (
            "a sweep",
            VALID.to_owned() + "[sweep]\n\"server.concurrency\" = [2, 4]\n",
            &[],
            &["`sweep`", "--set"],
        ),
        (
            "a non-loopback address",
            VALID.to_owned(),
            &["--listen", "192.0.2.1:80"],
            &["--listen", "loopback"],
        ),
        ("an unreadable address", VALID.to_owned(), &["--listen", "localhost"], &["--listen localhost"]),
        ("a zero --for", VALID.to_owned(), &["--for", "0"], &["--for 0", "longer than 0"]),
        ("a --for without unit", VALID.to_owned(), &["--for", "5"], &["--for 5", "no unit"]),
    ];
    for (what, text, args, stderr) in cases {
        let tmp = tempfile::tempdir().expect("a temporary folder");
        std::fs::write(tmp.path().join("e.toml"), &text).expect("the file is written");
        let mut serve = vec!["serve", "e.toml", "--out", "out"];
        // Were it accepted, it would stop by itself.
        if !args.contains(&"--for") {
            serve.extend(["--for", "1ms"]);
        }
        serve.extend(args);
        assert_refused(tmp.path(), &serve, &Case { what, text: text.clone(), args, stderr });
    }
}

#[test]
fn the_valid_graph_passes_check() {
    let tmp = tempfile::tempdir().expect("a temporary folder");
    std::fs::write(tmp.path().join("e.toml"), graph("calls = [{ service = \"db\", count = 2 }]", ""))
        .expect("the file is written");
    let output = cargo_bin_cmd!("retrysim")
        .current_dir(tmp.path())
        .args(["check", "e.toml"])
        .output()
        .expect("the binary runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
}

/// `retrysim import` and `export` refuse a malformed file, an unknown format, a unit-less
/// duration, a value out of range and a strategy the format cannot express (without
/// `--lossy`) with exit code 2, naming the field, and write nothing.
#[test]
fn import_and_export_refuse_bad_files_naming_the_field() {
    let cases: &[(&str, &str, &str, &[&str])] = &[
        ("malformed file", "envoy", "retry_policy: [\n", &["envoy: the file does not parse"]),
        (
            "unknown KIND",
            "nginx",
            "retry_policy: {}\n",
            &["unknown format \"nginx\"", "envoy, istio, linkerd"],
        ),
        (
            "unit-less duration",
            "envoy",
            "retry_policy: {retry_on: 5xx, per_try_timeout: 1}\n",
            &["retry_policy.per_try_timeout", "1 has no unit"],
        ),
        (
            "field out of range",
            "linkerd",
            "spec:\n  retryBudget: {ttl: 90s}\n",
            &["spec.retryBudget.ttl", "out of range", "from 1s to 60s"],
        ),
        (
            "unrepresentable field",
            "istio",
            "spec:\n  http:\n  - retries: {attempts: 2, retryRemoteLocalities: true}\n",
            &["retryRemoteLocalities", "cannot represent"],
        ),
    ];
    for (what, kind, text, stderr) in cases {
        let tmp = tempfile::tempdir().expect("a temporary folder");
        std::fs::write(tmp.path().join("f.yaml"), text).expect("the file is written");
        let case = Case { what, text: String::new(), args: &[], stderr };
        assert_refused(tmp.path(), &["import", kind, "f.yaml"], &case);
    }
    let tmp = tempfile::tempdir().expect("a temporary folder");
    std::fs::write(tmp.path().join("e.toml"), VALID).expect("the file is written");
    let case = Case {
        what: "inexpressible strategy without --lossy",
        text: String::new(),
        args: &[],
        stderr: &["linkerd: cannot express `backoff`", "pass --lossy"],
    };
    assert_refused(tmp.path(), &["export", "linkerd", "--strategy", "fj", "e.toml", "--out", "out"], &case);
    let case = Case {
        what: "unknown strategy",
        text: String::new(),
        args: &[],
        stderr: &["no strategy named \"nope\""],
    };
    assert_refused(tmp.path(), &["export", "envoy", "--strategy", "nope", "e.toml"], &case);
}
