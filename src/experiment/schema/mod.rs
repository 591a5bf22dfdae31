//! The experiment file format, described once: every key with its type, range, default,
//! one-line meaning and the `kind` it belongs to. Everything about the format comes from
//! here:
//!
//! - checking a file ([`check`]): unknown keys (with "did you mean" and "belongs to another
//!   kind"), wrong types, values out of range, missing keys, all named by their full key;
//! - the defaults ([`check`] fills them in before serde maps the tree onto `super::spec`);
//! - `retrysim schema`, a JSON Schema for editors ([`json`]);
//! - the README's key reference ([`markdown`]), which a test keeps in step.
//!
//! Rules between keys (`cap >= base`, schedule order, a client that would wait forever) are in
//! `super::validate`.

pub mod check;
pub mod json;
pub mod markdown;

use crate::engine::Span;
use crate::policy::autoscale::{
    HPA_MIN_REPLICAS, HPA_SCALE_DOWN_STABILIZATION, HPA_SYNC_PERIOD, HPA_TOLERANCE,
};
use crate::policy::breaker::RetryRatioParams;
use crate::policy::budget::{
    BrookerBucketParams, ConcurrencyBudgetParams, GrpcThrottleParams, RatioBudgetParams, TokenBucketParams,
};
use crate::policy::bulkhead::BulkheadParams;
use crate::policy::kpa::{
    KPA_MAX_SCALE_DOWN_RATE, KPA_MAX_SCALE_UP_RATE, KPA_PANIC_THRESHOLD_PERCENT, KPA_PANIC_WINDOW_PERCENT,
    KPA_STABLE_WINDOW, KPA_TARGET, KPA_TARGET_UTILIZATION,
};
use crate::policy::limit::aimd::AimdParams;
use crate::policy::limit::envoy_gradient::GradientParams;
use crate::policy::limit::gradient2::Gradient2Params;
use crate::policy::limit::vegas::VegasParams;
use crate::policy::outlier::OutlierParams;
use crate::policy::pool::PoolParams;
use crate::policy::throttle::EnvoyAdmissionParams;
use crate::policy::{BreakerParams, BreakerWindow, SreThrottleParams};
use std::borrow::Cow;

/// The type of a value.
#[derive(Debug)]
pub enum Ty {
    /// `"10ms"`, `"1.5s"`, `"2m"` (or `0`).
    Duration,
    /// A whole number from `min` to `max`.
    Int {
        min: i64,
        max: i64,
    },
    /// A finite real number (an integer is accepted).
    Num,
    Bool,
    /// Any string.
    Str,
    /// One of these strings.
    Choice(&'static [&'static str]),
    /// An HTTP status (400..=599), `"timeout"` or `"connection-error"`.
    StatusOrFailure,
    /// A retry condition: an HTTP status (400..=599), `"timeout"`, `"connection-error"`, or
    /// one of Envoy's `retry_on` groups ([`RETRY_GROUPS`]).
    RetryCondition,
    /// A whole number of calls, or a duration.
    CallsOrDuration,
    /// A count (an integer >= 0), or a percentage of the replicas (`"25%"`, 0 to 100), as
    /// Kubernetes writes `maxUnavailable` and `maxSurge`.
    CountOrPercent,
    /// A list of values of one type.
    List(&'static Ty),
    /// A table with fixed keys.
    Table(&'static Table),
    /// A table whose `kind` (or `dist`) picks its other keys.
    Tagged(&'static Tagged),
    /// A table whose keys are dotted keys of the format (`backoff.base`,
    /// `server.faults[0].duration`), each checked by the loader against the key it names:
    /// `[tune.space]` (`lists`: each value is a range or a list of that key's values) and the
    /// entries of `tune.scenarios` (each value is one value of that key).
    Keys {
        lists: bool,
    },
    /// `[output] windows`: a table of `NAME = [start, end]`, each NAME an identifier and each
    /// window two durations with start < end.
    Windows,
}

/// Envoy's `retry_on` groups a retry list may name (router docs `x-envoy-retry-on`; reference
/// retry-policies §3g), as the model's outcomes meet them (`interop::strategy::envoy_group_failures`).
pub const RETRY_GROUPS: [&str; 6] = crate::experiment::spec::RetryGroup::NAMES;

/// A table with fixed keys.
#[derive(Debug)]
pub struct Table {
    pub fields: &'static [Field],
    /// The table is merged with others before it is complete (`[client]` and strategies: a
    /// strategy's keys come from itself, its preset and `[client]`), so none of its keys is
    /// required on its own but a strategy's `name`.
    pub partial: bool,
}

/// A table whose tag picks its keys.
#[derive(Debug)]
pub struct Tagged {
    /// The tag's key: `kind` or `dist`.
    pub tag: &'static str,
    /// How messages call the tag's values: "backoff kind", "distribution".
    pub what: &'static str,
    /// The kind of a table without the tag, if it may be left out.
    pub default: Option<&'static str>,
    pub variants: &'static [Variant],
}

/// Keys a reader may look for in one kind of a tagged table that the schema keeps elsewhere:
/// (what, kind, key, where it is). An unknown key found here is refused with the pointer
/// instead of a list of the table's keys.
pub static KEPT_ELSEWHERE: &[(&str, &str, &str, &str)] = &[
    (
        "workload kind",
        "queue",
        "consumers",
        "a queue's consumers are the server's workers: set `[server] concurrency`",
    ),
    (
        "workload kind",
        "queue",
        "processing_time",
        "a queue's processing time is the server's: set `[server] service_time`",
    ),
];

/// One kind of a tagged table.
#[derive(Debug)]
pub struct Variant {
    pub kind: &'static str,
    pub doc: &'static str,
    pub fields: &'static [Field],
}

/// One key.
#[derive(Debug)]
pub struct Field {
    pub key: &'static str,
    pub ty: Ty,
    pub default: IfAbsent,
    pub range: Range,
    /// The message when the value is out of range, instead of the generated one; `{v}` in it
    /// stands for the value.
    pub range_message: Option<&'static str>,
    /// What the key means (one line, for docs and editors).
    pub doc: &'static str,
    /// Rules that involve other keys, for the docs (checked in `validate`).
    pub rules: &'static str,
}

/// What an absent key means.
#[derive(Debug)]
pub enum IfAbsent {
    /// The file must give it.
    Required,
    /// Absent is meaningful (no timeout, no cap, ...); the text says what it means.
    Absent(&'static str),
    /// This TOML value.
    Value(&'static str),
    /// This number, written as a TOML float ([`toml_float`]). The defaults that are production
    /// numbers take them from the policy layer's constants, which the presets are written
    /// from too: each number has one source.
    Num(f64),
    /// This whole number (from a policy constant, like [`IfAbsent::Num`]).
    Int(u64),
    /// This duration, spelled in this unit ([`toml_duration`]; from a policy constant, like
    /// [`IfAbsent::Num`]).
    Duration(Span, &'static str),
}

impl IfAbsent {
    /// The default as TOML text (`"client"`, `500.0`, `"10s"`); `None` when absence is not a
    /// value.
    pub fn toml(&self) -> Option<Cow<'static, str>> {
        match *self {
            Required | Absent(_) => None,
            Value(text) => Some(Cow::Borrowed(text)),
            Num(x) => Some(Cow::Owned(toml_float(x))),
            Int(n) => Some(Cow::Owned(n.to_string())),
            Duration(span, unit) => Some(Cow::Owned(toml_duration(span, unit))),
        }
    }
}

/// A number as TOML text that reads back as a float: `500.0`, `0.1`.
pub fn toml_float(x: f64) -> String {
    format!("{x:?}")
}

/// A duration as a TOML string in `unit` (one of the file's units): `"10s"`, `"2m"`.
pub fn toml_duration(span: Span, unit: &str) -> String {
    format!("\"{}\"", super::Duration(span.as_ns()).in_unit(unit))
}

/// The values a number or duration may take.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Range {
    Any,
    /// `>= x`.
    AtLeast(f64),
    /// `> x`.
    Above(f64),
    /// In `[lo, hi]`.
    Between(f64, f64),
    /// In `(lo, hi]`.
    AboveUpTo(f64, f64),
    /// In `[lo, hi)`.
    AtLeastBelow(f64, f64),
}

/// A field with defaults for the parts most keys share.
const fn f(key: &'static str, ty: Ty, default: IfAbsent, doc: &'static str) -> Field {
    Field { key, ty, default, range: Range::Any, range_message: None, doc, rules: "" }
}

impl Field {
    const fn range(mut self, range: Range) -> Field {
        self.range = range;
        self
    }
    const fn message(mut self, m: &'static str) -> Field {
        self.range_message = Some(m);
        self
    }
    const fn rules(mut self, r: &'static str) -> Field {
        self.rules = r;
        self
    }
}

use IfAbsent::{Absent, Duration, Int, Num, Required, Value};

const U32: Ty = Ty::Int { min: 0, max: u32::MAX as i64 };
const U64: Ty = Ty::Int { min: 0, max: i64::MAX };
const STATUS: Ty = Ty::Int { min: 400, max: 599 };
const PROBABILITY: Range = Range::Between(0.0, 1.0);
const POSITIVE: Range = Range::Above(0.0);
const SCOPE: Ty = Ty::Choice(&["client", "shared"]);

/// `priorities` of a workload (DESIGN §3.3).
const fn priorities() -> Field {
    f(
        "priorities",
        Ty::Table(&PRIORITIES),
        Absent("no classes: every operation alike"),
        "the share of operations in each criticality class (Google SRE book): a full server queue turns away the least critical first; adds the columns `METRIC@CLASS`",
    )
    .rules("shares sum to 1; not with server.kind = \"occ\"")
}

/// `[workload] priorities`: a share per class, most critical first.
pub static PRIORITIES: Table = Table {
    partial: false,
    fields: &[
        f("critical_plus", Ty::Num, Value("0.0"), "share of CRITICAL_PLUS operations: shed last")
            .range(PROBABILITY),
        f("critical", Ty::Num, Value("0.0"), "share of CRITICAL operations").range(PROBABILITY),
        f("sheddable_plus", Ty::Num, Value("0.0"), "share of SHEDDABLE_PLUS operations").range(PROBABILITY),
        f("sheddable", Ty::Num, Value("0.0"), "share of SHEDDABLE operations: shed first").range(PROBABILITY),
    ],
};

const fn scope() -> Field {
    f(
        "scope",
        SCOPE,
        Value("\"client\""),
        "\"client\": one per client process, as in the real libraries; \"shared\": one for the whole fleet",
    )
}

/// The whole file.
pub static ROOT: Table = Table {
    partial: false,
    fields: &[
        f("name", Ty::Str, Required, "names the output folder results/<name>/")
            .rules("non-empty; only A-Z a-z 0-9 . _ -; not only dots"),
        f("seed", U64, Value("1"), "master seed; each run's streams derive from (seed, run)"),
        f("runs", U32, Value("1"), "replications per (point, strategy)")
            .range(Range::AtLeast(1.0))
            .message("must be at least 1: the number of replications per point and strategy"),
        f(
            "horizon",
            Ty::Duration,
            Value("\"1h\""),
            "simulated time at which a run stops; operations still pending fail as `unfinished`",
        )
        .range(POSITIVE)
        .message("must be > 0: the simulated time at which a run stops, e.g. \"120s\""),
        f("workload", Ty::Tagged(&WORKLOAD), Required, "who calls the server, and when"),
        f("network", Ty::Table(&NETWORK), Value("{}"), "one-way delay per hop, losses"),
        f(
            "services",
            Ty::List(&Ty::Table(&SERVICE)),
            Value("[]"),
            "a call graph of services, see [[services]]; the clients call the first",
        )
        .rules("names unique; every called service exists; no cycle; not with [server]"),
        f("server", Ty::Tagged(&SERVER), Required, "the server")
            .rules("not with [[services]]: the first service is the server the clients call"),
        f("client", Ty::Table(&CLIENT), Value("{}"), "retry policy defaults for every strategy"),
        f("strategies", Ty::List(&Ty::Table(&STRATEGY)), Required, "the policies to compare")
            .rules("at least one; names unique"),
        f("output", Ty::Table(&OUTPUT), Value("{}"), "how results are written"),
        f(
            "sweep",
            Ty::Table(&SWEEP),
            Absent("no sweep: one point"),
            "parameter sweep: KEY = [values], see \"Sweeps\"",
        ),
        f(
            "tune",
            Ty::Table(&TUNE),
            Absent("none: `retrysim tune` needs it; `run` ignores it"),
            "what `retrysim tune` searches, see \"Tuning\"",
        ),
    ],
};

/// `[tune]`: the question `retrysim tune` answers. The loader keeps it unchecked; the tune
/// layer checks it against these fields and what they cannot say alone: the strategy exists,
/// every key of `space` belongs to its kinds, the metrics exist, the scenarios are valid
/// experiments.
pub static TUNE: Table = Table {
    partial: false,
    fields: &[
        f("strategy", Ty::Str, Absent("the only strategy, when the file has one"), "the strategy to tune, by name"),
        f("objective", Ty::Str, Required, "the metric to minimise (a summary.csv column), at its worst over the scenarios"),
        f("maximize", Ty::Bool, Value("false"), "maximise the objective instead"),
        f(
            "constraints",
            Ty::List(&Ty::Str),
            Value("[]"),
            "\"METRIC OP VALUE\" (OP one of <=, <, >=, >; VALUE a number or a duration), each to hold on the mean in every scenario",
        ),
        f(
            "space",
            Ty::Keys { lists: true },
            Required,
            "KEY = [low, high] or a list of values, KEY a key of the strategy (`backoff.base`, `max_attempts`, `budget.ratio`); durations and positive numbers are searched on a log scale, integers as integers; `{ values = [a, b] }` is a list of two",
        )
        .rules("at least one key; low <= high"),
        f(
            "scenarios",
            Ty::List(&Ty::Keys { lists: false }),
            Absent("one: the file as written"),
            "override sets (dotted KEY = value, as for --set; `name` labels it) over which every constraint must hold and the objective is taken at its worst",
        ),
        f("levels", U32, Value("9"), "values per [low, high] range: the search resolution (integers: every one, up to 2 x levels)")
            .range(Range::AtLeast(2.0)),
        f("candidates", U32, Absent("6 per parameter, at least 12"), "candidates of the coarse design (a maximin Latin hypercube)")
            .range(Range::AtLeast(1.0)),
        f("runs", U32, Value("2"), "runs per scenario of a candidate's first evaluation; doubled at each halving")
            .range(Range::AtLeast(1.0)),
        f("rounds", U32, Value("4"), "rounds of halving and refinement after the coarse design"),
        f("confirm", U32, Value("3"), "finalists confirmed with `confirm_runs` runs").range(Range::AtLeast(1.0)),
        f("confirm_runs", U32, Absent("the experiment's `runs`, at least 10"), "runs per scenario of the confirmation (at least the last round's)")
            .range(Range::AtLeast(2.0)),
        f(
            "precision",
            Ty::Num,
            Value("0.05"),
            "the confirmation doubles its runs (up to 4 x confirm_runs) until the winner's 95 % half-width is at most this fraction of its objective",
        )
        .range(Range::AboveUpTo(0.0, 1.0)),
        f("seed", U64, Absent("the experiment's `seed`"), "seed of the design (the workloads keep the experiment's seed)"),
        f(
            "export",
            Ty::List(&Ty::Str),
            Value("[]"),
            "production formats to write the recommendation in too, beside recommendation.toml (`envoy` writes recommendation.envoy.yaml; istio, linkerd, ...: see `retrysim export`); what a format cannot express is dropped, and said in the file and the summary",
        )
        .rules("each a format `retrysim export` knows, once"),
    ],
};

/// `[sweep]` has free keys (checked by the loader); only `skip_invalid` is fixed.
pub static SWEEP: Table = Table {
    partial: false,
    fields: &[f(
        "skip_invalid",
        Ty::Bool,
        Value("false"),
        "skip points that validation refuses (listed on stderr) instead of refusing the sweep",
    )],
};

pub static OUTPUT: Table = Table {
    partial: false,
    fields: &[
        f("bucket", Ty::Duration, Value("\"1s\""), "width of timeseries.csv's time buckets")
            .range(POSITIVE)
            .message("must be > 0: the width of timeseries.csv's buckets, e.g. \"1s\""),
        f("timeseries", Ty::Bool, Value("true"), "whether to write timeseries.csv"),
        f(
            "windows",
            Ty::Windows,
            Value("{}"),
            "windows of simulated time measured on their own, `NAME = [start, end]` (`[start, end)`): each adds `ops@NAME`, `success_rate@NAME`, `latency_ok_p99_s@NAME` and `server_amplification@NAME` to runs.csv and summary.csv",
        )
        .rules("end <= horizon"),
        f(
            "reference",
            Ty::Keys { lists: false },
            Value("{}"),
            "the verdict's reference point, `\"SWEPT KEY\" = value` (e.g. `{ \"client.timeout\" = \"2s\" }`): each strategy is quoted there besides its worst point; the first point when empty; `--reference KEY=VALUE` overrides it",
        )
        .rules("each key swept, each value one of its values"),
    ],
};

pub static WORKLOAD: Tagged = Tagged {
    tag: "kind",
    what: "workload kind",
    default: None,
    variants: &[
        Variant {
            kind: "closed",
            doc: "`clients` clients each perform `ops_per_client` operations one after another",
            fields: &[
                f("clients", U32, Value("1"), "clients, each running its operations one after another")
                    .range(Range::AtLeast(1.0))
                    .message("must be at least 1")
                    .rules("<= 100000000"),
                f("ops_per_client", U32, Value("1"), "logical operations per client")
                    .range(Range::AtLeast(1.0))
                    .message("must be at least 1")
                    .rules("clients x ops_per_client <= 4294967295"),
                f(
                    "think_time",
                    Ty::Duration,
                    Value("\"0\""),
                    "pause between one operation's end and the next one's start",
                ),
                f(
                    "ramp",
                    Ty::Duration,
                    Value("\"0\""),
                    "client start times spread uniformly over [0, ramp); 0 = all at t=0 (thundering herd)",
                ),
                priorities(),
            ],
        },
        Variant {
            kind: "open",
            doc: "operations arrive at a rate: a Poisson process, per-client Poisson streams, or at fixed intervals",
            fields: &[
                f("rate", Ty::Num, Required, "Poisson arrivals per second")
                    .range(Range::AtLeast(0.0))
                    .message("{v} is not a rate: write operations per second as a number >= 0, e.g. 1000.0"),
                f("duration", Ty::Duration, Required, "how long operations arrive")
                    .range(POSITIVE)
                    .message("must be > 0: how long operations arrive, e.g. \"60s\""),
                f(
                    "schedule",
                    Ty::List(&Ty::Table(&RATE_STEP)),
                    Value("[]"),
                    "from `at` on, the rate is `rate` (piecewise constant)",
                )
                .rules("`at` strictly increasing; `rate` or a schedule rate > 0"),
                f(
                    "clients",
                    U32,
                    Value("1"),
                    "client processes the operations are spread over (per-client budgets and breakers)",
                )
                .range(Range::AtLeast(1.0))
                .message("must be at least 1")
                .rules("<= 100000000"),
                f(
                    "arrivals",
                    Ty::Choice(&["poisson", "per-client", "fixed"]),
                    Value("\"poisson\""),
                    "`poisson`: one stream for the fleet, each arrival given to a client at random; `per-client`: each client its own Poisson stream at rate / clients (Brooker's retry_sim); `fixed`: one arrival every 1 / rate",
                ),
                f(
                    "first_call",
                    Ty::Tagged(&DIST),
                    Absent("none"),
                    "`per-client` only: each client makes one call when it first wakes, at a draw of this, and its stream starts then (retry_sim: exponential, mean 10ms)",
                )
                .rules("only with arrivals = \"per-client\""),
                f(
                    "rate_changes",
                    Ty::Choice(&["exact", "at-next-arrival"]),
                    Value("\"exact\""),
                    "how a Poisson stream follows the schedule: `exact` redraws a gap that crosses a rate change from the change (a Poisson process of the schedule); `at-next-arrival` draws each gap at the rate in force at the arrival that starts it, so a change takes effect from the first arrival after it, as a load generator that sleeps a random gap after each call (Brooker's simple_collapse_sim)",
                )
                .rules("not with arrivals = \"fixed\""),
                priorities(),
            ],
        },
        Variant {
            kind: "serial",
            doc: "`clients` clients, each with one call at a time, the next starting at max(end of the previous call, its start + a draw of `gap`), until `duration` (Brooker's `SerialClient`)",
            fields: &[
                f("clients", U32, Value("1"), "clients, each with one call in flight at a time")
                    .range(Range::AtLeast(1.0))
                    .message("must be at least 1")
                    .rules("<= 100000000"),
                f("gap", Ty::Tagged(&DIST), Required, "target time from one call's start to the next one's (retry_sim: exponential, mean 1 / rate per client)"),
                f("duration", Ty::Duration, Required, "no call starts after this")
                    .range(POSITIVE)
                    .message("must be > 0: how long clients start calls, e.g. \"10s\""),
                f(
                    "first_call",
                    Ty::Tagged(&DIST),
                    Absent("at 0"),
                    "each client's wake-up: its first call starts at max(wake-up, a draw of `gap`)",
                ),
                priorities(),
            ],
        },
        Variant {
            kind: "queue",
            doc: "messages in a queue (SQS-style), taken by consumers: the `[server]`'s `concurrency` workers, processing each for its `service_time`, behind its admission stages (the service they call, with its idempotency store); a message not acknowledged within `visibility_timeout` of being taken is delivered again; a consumer's error does not delete it. A strategy sets `backoff` (the delay after the timeout before the message is visible again; `none`: at once), `idempotency` (a key per message) and `redrive`; the queue sets the rest",
            fields: QUEUE_WORKLOAD,
        },
    ],
};

/// The keys of `[workload] kind = "queue"`.
const QUEUE_WORKLOAD: &[Field] = &[
    f("rate", Ty::Num, Required, "messages sent to the queue per second")
        .range(Range::AtLeast(0.0))
        .message("{v} is not a rate: write messages per second as a number >= 0, e.g. 10.0"),
    f("duration", Ty::Duration, Required, "how long messages arrive")
        .range(POSITIVE)
        .message("must be > 0: how long messages arrive, e.g. \"60s\""),
    f(
        "arrivals",
        Ty::Choice(&["poisson", "fixed"]),
        Value("\"poisson\""),
        "`poisson`: a Poisson stream of messages; `fixed`: one every 1 / rate",
    ),
    f(
        "visibility_timeout",
        Ty::Duration,
        Value("\"30s\""),
        "a message a consumer took and did not acknowledge within this becomes visible again and is delivered again (SQS's default, 30 s)",
    )
    .range(POSITIVE)
    .message("must be > 0: how long a taken message stays invisible, e.g. \"30s\" (Lambda's guidance: at least 6 x the function timeout)"),
    f(
        "max_receive_count",
        U32,
        Absent("no limit: a message is delivered until it is acknowledged"),
        "deliveries of a message before it moves to the dead-letter queue (`dead_lettered`; SQS's maxReceiveCount)",
    )
    .range(Range::Between(1.0, 1000.0))
    .message("must be from 1 to 1000 (SQS's range)"),
    f("ack_loss", Ty::Num, Value("0.0"), "probability that a consumer's acknowledgement (the delete) is lost: the message is delivered again")
        .range(PROBABILITY),
];

pub static RATE_STEP: Table = Table {
    partial: false,
    fields: &[
        f("at", Ty::Duration, Required, "when the rate changes"),
        f("rate", Ty::Num, Required, "the rate from then on, per second")
            .range(Range::AtLeast(0.0))
            .message("{v} is not a rate: write operations per second as a number >= 0, e.g. 1000.0"),
    ],
};

pub static DIST: Tagged = Tagged {
    tag: "dist",
    what: "distribution",
    default: None,
    variants: &[
        Variant {
            kind: "constant",
            doc: "always `value`",
            fields: &[f("value", Ty::Duration, Required, "the value")],
        },
        Variant {
            kind: "uniform",
            doc: "U(low, high)",
            fields: &[
                f("low", Ty::Duration, Required, "lower bound"),
                f("high", Ty::Duration, Required, "upper bound").rules("low <= high"),
            ],
        },
        Variant {
            kind: "normal",
            doc: "abs(N(mean, sd)), as in the AWS study's simulator",
            fields: &[f("mean", Ty::Duration, Required, "mean"), f("sd", Ty::Duration, Required, "standard deviation")],
        },
        Variant {
            kind: "exponential",
            doc: "exponential with this mean",
            fields: &[f("mean", Ty::Duration, Required, "mean").rules("> 0 for a service time")],
        },
        Variant {
            kind: "lognormal",
            doc: "median x exp(sigma x N(0, 1))",
            fields: &[
                f("median", Ty::Duration, Required, "median").range(POSITIVE).message(
                    "must be > 0: a lognormal is positive (for no delay use { dist = \"constant\", value = \"0\" })",
                ),
                f("sigma", Ty::Num, Required, "spread (a number)")
                    .range(Range::AtLeast(0.0))
                    .message("{v} is not a spread: sigma must be a finite number >= 0"),
            ],
        },
        Variant {
            kind: "discrete",
            doc: "one of the `points`' values, each with its weight's probability: `[{ value = \"0.1ms\", weight = 0.999 }, { value = \"10ms\", weight = 0.001 }]`",
            fields: &[f("points", Ty::List(&Ty::Table(&DISCRETE_POINT)), Required, "the values and their probabilities")
                .rules("1 to 16 points; weights sum to 1")],
        },
    ],
};

/// One point of `{ dist = "discrete" }`.
pub static DISCRETE_POINT: Table = Table {
    partial: false,
    fields: &[
        f("value", Ty::Duration, Required, "the value"),
        f("weight", Ty::Num, Required, "its probability")
            .range(Range::AboveUpTo(0.0, 1.0))
            .message("{v} is not a probability above 0: write the point's share of draws, e.g. 0.001"),
    ],
};

pub static NETWORK: Table = Table {
    partial: false,
    fields: &[
        f(
            "latency",
            Ty::Tagged(&DIST),
            Value("{ dist = \"constant\", value = \"0\" }"),
            "one-way delay, drawn per hop",
        ),
        f(
            "request_loss",
            Ty::Num,
            Value("0.0"),
            "probability that a request is lost (the client sees a timeout)",
        )
        .range(PROBABILITY)
        .rules("0 with server.kind = \"occ\""),
        f(
            "response_loss",
            Ty::Num,
            Value("0.0"),
            "probability that a response is lost (the server did the work)",
        )
        .range(PROBABILITY)
        .rules("0 with server.kind = \"occ\""),
    ],
};

/// The keys of a queue server: `[server]` (kind "queue") and every `[[services]]` entry.
macro_rules! queue_server_fields {
    ($($extra:expr),* $(,)?) => {
        &[
            $($extra,)*
                f("concurrency", U32, Required, "workers serving in parallel")
                    .range(Range::AtLeast(1.0))
                    .message("zero concurrency: the server needs at least 1 worker; set concurrency >= 1")
                    .rules("<= 100000000"),
                f("service_time", Ty::Tagged(&DIST), Required, "time to serve one request"),
                f(
                    "queue",
                    U32,
                    Absent("unbounded"),
                    "FIFO waiting room; 0 = none (a request that finds every worker busy is rejected)",
                ),
                f("reject_status", STATUS, Value("503"), "answer to a request that finds the queue full")
                    .rules("429 or 503"),
                f(
                    "reject_dont_retry",
                    Ty::Bool,
                    Value("false"),
                    "full-queue answers say \"overloaded; don't retry\" (Google SRE book): clients and layers with honor_dont_retry stop",
                ),
                f(
                    "errors",
                    Ty::List(&Ty::Table(&ERROR)),
                    Value("[]"),
                    "background error answers; an active `errors` fault replaces them",
                )
                .rules("probabilities add up to <= 1"),
                f(
                    "drop_expired",
                    Ty::Bool,
                    Value("false"),
                    "drop a queued request whose client already timed out instead of serving it",
                ),
                f("faults", Ty::List(&Ty::Tagged(&FAULT)), Value("[]"), "faults, see [[server.faults]]"),
                f(
                    "rate_limit",
                    Ty::Tagged(&RATE_LIMIT),
                    Absent("no rate limit"),
                    "a rate limiter (token bucket by default) answering 429 with Retry-After, see [server.rate_limit]",
                ),
                f(
                    "idempotency",
                    Ty::Table(&IDEMPOTENCY),
                    Absent("no dedup store: keys are ignored"),
                    "the dedup store for idempotency keys",
                ),
                f(
                    "overload",
                    Ty::Table(&OVERLOAD),
                    Absent("no collapse"),
                    "service time grows with the requests in service past a knee",
                ),
                f(
                    "discipline",
                    Ty::Choice(&["fifo", "lifo", "codel", "codel-rpc", "adaptive-lifo"]),
                    Value("\"fifo\""),
                    "the order free workers take waiting requests in: oldest first, newest first, RFC 8289 CoDel (sheds by its drop schedule), folly's CoDel for RPC (sheds requests queued over 2 x target while overloaded), adaptive LIFO (newest first while a queue stands); shed requests are answered 503, retryable",
                ),
                f(
                    "codel",
                    Ty::Table(&CODEL),
                    Value("{}"),
                    "CoDel's constants, for discipline = \"codel\", \"codel-rpc\" and \"adaptive-lifo\"",
                ),
                f(
                    "adaptive_concurrency",
                    Ty::Table(&ADAPTIVE_CONCURRENCY),
                    Absent("no adaptive concurrency limit"),
                    "Envoy's adaptive concurrency filter (gradient controller) in front of the workers: a request over the limit is answered 503, retryable",
                ),
                f(
                    "replicas",
                    U32,
                    Value("1"),
                    "copies of the server behind a load balancer, each with its own workers, queue, service times and faults",
                )
                .range(Range::AtLeast(1.0))
                .message("zero replicas: a service needs at least 1; set replicas >= 1")
                .rules("<= 10000; above 1, no rate_limit or idempotency"),
                f(
                    "balancer",
                    Ty::Choice(&["round-robin", "random", "least-request", "peak-ewma", "ring-hash"]),
                    Value("\"round-robin\""),
                    "how requests are spread over the replicas: in turn (Envoy's default), uniformly at random, Envoy's least request (fewest active of `choice_count` drawn with replacement), Finagle's/linkerd's power of two choices over peak-EWMA latency x (pending + 1), Envoy's ring hash of the operation (its retries land on the same replica)",
                ),
                f("choice_count", U32, Int(LEAST_REQUEST_CHOICES as u64), "least-request: replicas drawn, with replacement (Envoy's choice_count)")
                    .range(Range::AtLeast(2.0))
                    .message("must be at least 2 (Envoy's minimum): the replicas compared per pick"),
                f("ewma", Ty::Table(&EWMA), Value("{}"), "peak-ewma's constants"),
                f("minimum_ring_size", U32, Int(RING_SIZE as u64), "ring-hash: points on the ring (Envoy's minimum_ring_size)")
                    .range(Range::Between(1.0, 8_388_608.0)),
                f(
                    "panic_threshold",
                    Ty::Num,
                    Num(PANIC_THRESHOLD_PERCENT),
                    "percent of replicas that must be healthy (not ejected); below it the balancer ignores health (Envoy's healthy_panic_threshold)",
                )
                .range(Range::Between(0.0, 100.0)),
                f(
                    "outlier",
                    Ty::Table(&OUTLIER),
                    Absent("no outlier detection"),
                    "Envoy's outlier detection: replicas that fail are ejected from the balancer for a while, see [server.outlier]",
                ),
                f(
                    "slow_start",
                    Ty::Table(&SLOW_START),
                    Absent("no slow start: a replica that comes up takes its full share at once"),
                    "Envoy's slow start: a replica that (re)joins gets a share of traffic growing over a window, see [server.slow_start]",
                )
                .rules("balancer round-robin or least-request (Envoy applies it to those only)"),
                f(
                    "deploys",
                    Ty::List(&Ty::Table(&DEPLOY)),
                    Value("[]"),
                    "rolling deploys (a Kubernetes Deployment's RollingUpdate), see [[server.deploys]]",
                )
                .rules("replicas > 1; one after the other"),
                f(
                    "autoscale",
                    Ty::Tagged(&AUTOSCALE),
                    Absent("no autoscaler: the replicas stay as many as `replicas`"),
                    "an autoscaler setting the replicas from their utilisation (the Kubernetes HPA) or their concurrency (Knative's KPA), see [server.autoscale]",
                )
                .rules("replicas > 1 (the starting count), min <= replicas <= max; not with deploys"),
        ]
    };
}

/// The Kubernetes HPA's defaults (`autoscaling/v2`, kube-controller-manager flags), through
/// `policy::autoscale`, and Knative's KPA's (`config-autoscaler`), through `policy::kpa`.
pub static AUTOSCALE: Tagged = Tagged {
    tag: "kind",
    what: "autoscaler kind",
    default: None,
    variants: &[Variant {
        kind: "hpa",
        doc: "the Kubernetes Horizontal Pod Autoscaler: every `sync_period`, desired = ceil(ready x utilisation / target_utilization) unless the ratio is within `tolerance` of 1, held by the stabilisation windows and the rate policies, clamped to [min, max]; utilisation is the ready replicas' busy workers over their workers, averaged over the sync period and truncated to a whole percent",
        fields: &[
            f(
                "target_utilization",
                Ty::Num,
                Required,
                "the busy share of a replica's workers the autoscaler aims at (averageUtilization / 100)",
            )
            .range(Range::AboveUpTo(0.0, 1.0))
            .message("must be in (0, 1]: the target share of busy workers, e.g. 0.75 for Kubernetes' averageUtilization: 75"),
            f("min", U32, Int(HPA_MIN_REPLICAS as u64), "fewest replicas (minReplicas)")
                .range(Range::AtLeast(1.0))
                .rules("<= replicas"),
            f("max", U32, Required, "most replicas (maxReplicas); the replica slots are allocated once, this many")
                .rules(">= replicas, <= 10000"),
            f(
                "sync_period",
                Ty::Duration,
                Duration(HPA_SYNC_PERIOD, "s"),
                "how often the autoscaler syncs (--horizontal-pod-autoscaler-sync-period); the first sync is one period after the start",
            )
            .range(POSITIVE),
            f(
                "stabilization_down",
                Ty::Duration,
                Duration(HPA_SCALE_DOWN_STABILIZATION, "s"),
                "a scale-down goes no lower than the highest recommendation of this window (behavior.scaleDown.stabilizationWindowSeconds)",
            ),
            f(
                "stabilization_up",
                Ty::Duration,
                Duration(Span::ZERO, "s"),
                "a scale-up goes no higher than the lowest recommendation of this window (behavior.scaleUp.stabilizationWindowSeconds)",
            ),
            f(
                "tolerance",
                Ty::Num,
                Num(HPA_TOLERANCE),
                "no change while |1 - utilisation / target| is at most this (--horizontal-pod-autoscaler-tolerance)",
            )
            .range(Range::AtLeastBelow(0.0, 1.0)),
            f(
                "startup",
                Ty::Duration,
                Required,
                "from a new replica's creation until it is ready and the balancer may pick it (its start-up and readiness)",
            ),
            f(
                "scale_up",
                Ty::List(&Ty::Table(&SCALING_POLICY)),
                Value("[{ type = \"percent\", value = 100, period = \"15s\" }, { type = \"pods\", value = 4, period = \"15s\" }]"),
                "scale-up rate policies (behavior.scaleUp.policies)",
            ),
            f(
                "scale_down",
                Ty::List(&Ty::Table(&SCALING_POLICY)),
                Value("[{ type = \"percent\", value = 100, period = \"15s\" }]"),
                "scale-down rate policies (behavior.scaleDown.policies)",
            ),
            f(
                "select_up",
                Ty::Choice(&["max", "min", "disabled"]),
                Value("\"max\""),
                "which scale-up policy wins: the one allowing the most change, the least, or no scale-up (selectPolicy)",
            ),
            f(
                "select_down",
                Ty::Choice(&["max", "min", "disabled"]),
                Value("\"max\""),
                "which scale-down policy wins: the one allowing the most change, the least, or no scale-down (selectPolicy)",
            ),
        ],
    }, Variant {
        kind: "kpa",
        doc: "Knative's Pod Autoscaler: every 2 s, the replicas' concurrency (requests in service and queued) averaged over `stable_window` and over its `panic_window_percentage` asks for ceil(concurrency / (target x target_utilization)) replicas, within [floor(ready / max_scale_down_rate), ceil(max_scale_up_rate x ready)]; when the panic window's count reaches `panic_threshold_percentage` of the ready replicas it panics (takes the larger count and never scales down) until a stable window passes without that; clamped to [min, max]",
        fields: &[
            f(
                "target",
                Ty::Num,
                Num(KPA_TARGET),
                "concurrent requests per replica aimed at (autoscaling.knative.dev/target; container-concurrency-target-default)",
            )
            .range(Range::AtLeast(0.01))
            .message("must be at least 0.01 (Knative's bound), e.g. 100"),
            f(
                "target_utilization",
                Ty::Num,
                Num(KPA_TARGET_UTILIZATION),
                "the share of `target` aimed at (container-concurrency-target-percentage / 100)",
            )
            .range(Range::AboveUpTo(0.0, 1.0))
            .message("must be in (0, 1], e.g. 0.7 for Knative's 70 %"),
            f("min", U32, Int(1), "fewest replicas (min-scale; retrysim does not scale to zero)")
                .range(Range::AtLeast(1.0))
                .rules("<= replicas"),
            f("max", U32, Required, "most replicas (max-scale); the replica slots are allocated once, this many")
                .rules(">= replicas, <= 10000"),
            f(
                "stable_window",
                Ty::Duration,
                Duration(KPA_STABLE_WINDOW, "s"),
                "the window the stable concurrency is averaged over (stable-window); a panic ends a window after the threshold was last crossed",
            )
            .rules("whole seconds, from 6s to 1h (Knative's bounds)"),
            f(
                "panic_window_percentage",
                Ty::Num,
                Num(KPA_PANIC_WINDOW_PERCENT),
                "the panic window as a percentage of the stable window, in whole seconds (at least 1)",
            )
            .range(Range::Between(1.0, 100.0)),
            f(
                "panic_threshold_percentage",
                Ty::Num,
                Num(KPA_PANIC_THRESHOLD_PERCENT),
                "the panic window's replica count, in percent of the ready replicas, that starts a panic",
            )
            .range(Range::Between(110.0, 1000.0)),
            f(
                "max_scale_up_rate",
                Ty::Num,
                Num(KPA_MAX_SCALE_UP_RATE),
                "a tick asks for at most this many times the ready replicas",
            )
            .range(Range::Above(1.0)),
            f(
                "max_scale_down_rate",
                Ty::Num,
                Num(KPA_MAX_SCALE_DOWN_RATE),
                "a tick asks for no fewer than the ready replicas over this",
            )
            .range(Range::Above(1.0)),
            f(
                "scale_down_delay",
                Ty::Duration,
                Duration(Span::ZERO, "s"),
                "the count is the largest asked for over this window (scale-down-delay)",
            )
            .rules("at most 1h (Knative's bound)"),
            f(
                "startup",
                Ty::Duration,
                Required,
                "from a new replica's creation until it is ready and the balancer may pick it (its start-up and readiness)",
            ),
        ],
    }],
};

pub static SCALING_POLICY: Table = Table {
    partial: false,
    fields: &[
        f(
            "type",
            Ty::Choice(&["pods", "percent"]),
            Required,
            "at most `value` replicas, or `value` percent of the replicas at the period's start, added or removed per period",
        ),
        f("value", U32, Required, "the replicas or percent").range(Range::AtLeast(1.0)),
        f("period", Ty::Duration, Required, "the window the change is counted over (periodSeconds)")
            .range(Range::AboveUpTo(0.0, 1800e9))
            .message("must be in (0s, 1800s] (Kubernetes' periodSeconds range), e.g. \"15s\""),
    ],
};

pub static SERVER: Tagged = Tagged {
    tag: "kind",
    what: "server kind",
    default: Some("queue"),
    variants: &[
        Variant {
            kind: "queue",
            doc: "`concurrency` workers and a FIFO queue behind an admission pipeline",
            fields: queue_server_fields!(),
        },
        Variant {
            kind: "occ",
            doc: "the optimistic-concurrency row of the AWS \"Exponential Backoff and Jitter\" study",
            fields: &[],
        },
    ],
};

/// Envoy's least-request `choice_count` (`least_request.proto`).
pub const LEAST_REQUEST_CHOICES: u32 = 2;
/// Envoy's ring hash `minimum_ring_size` (`cluster.proto`, `RingHashLbConfig`).
pub const RING_SIZE: u32 = 1024;
/// Envoy's `healthy_panic_threshold` (`cluster.proto`), in percent.
pub const PANIC_THRESHOLD_PERCENT: f64 = 50.0;
/// linkerd2-proxy's peak-EWMA decay and default RTT (docs/overload-and-topology.md §1.6).
pub const EWMA_DECAY: Span = Span::from_secs(10);
pub const EWMA_DEFAULT_RTT: Span = Span::from_millis(30);

pub static EWMA: Table = Table {
    partial: false,
    fields: &[
        f(
            "decay",
            Ty::Duration,
            Duration(EWMA_DECAY, "s"),
            "how fast a latency estimate forgets (linkerd: 10 s)",
        )
        .range(POSITIVE),
        f(
            "default_rtt",
            Ty::Duration,
            Duration(EWMA_DEFAULT_RTT, "ms"),
            "a replica's estimate before it answers (linkerd: 30 ms)",
        ),
    ],
};

/// Envoy's `SlowStartConfig` defaults (`cluster.proto`): aggression 1.0, min weight 10 %.
pub const SLOW_START_AGGRESSION: f64 = 1.0;
pub const SLOW_START_MIN_WEIGHT_PERCENT: f64 = 10.0;

pub static SLOW_START: Table = Table {
    partial: false,
    fields: &[
        f(
            "window",
            Ty::Duration,
            Required,
            "how long a replica that came up stays in slow start (Envoy's slow_start_window)",
        )
        .range(POSITIVE),
        f(
            "aggression",
            Ty::Num,
            Num(SLOW_START_AGGRESSION),
            "the ramp's shape: weight x (time in window / window)^(1 / aggression); 1 = linear",
        )
        .range(POSITIVE),
        f(
            "min_weight_percent",
            Ty::Num,
            Num(SLOW_START_MIN_WEIGHT_PERCENT),
            "the least share of its weight a replica in slow start gets, in percent",
        )
        .range(Range::Between(0.0, 100.0)),
    ],
};

/// Kubernetes' Deployment `RollingUpdate` defaults: 25 % unavailable, 25 % surge.
pub static DEPLOY: Table = Table {
    partial: false,
    fields: &[
        f("start", Ty::Duration, Required, "when the deploy begins"),
        f(
            "max_unavailable",
            Ty::CountOrPercent,
            Value("\"25%\""),
            "most replicas unavailable at once: a count, or a percentage of replicas rounded down (Kubernetes' maxUnavailable)",
        )
        .rules("not 0 when max_surge is 0"),
        f(
            "max_surge",
            Ty::CountOrPercent,
            Value("\"25%\""),
            "most replicas above `replicas` at once: a count, or a percentage of replicas rounded up (Kubernetes' maxSurge)",
        ),
        f("startup", Ty::Duration, Required, "from a new replica's creation until it has started"),
        f(
            "readiness",
            Ty::Duration,
            Value("\"0s\""),
            "from its start until its readiness probe passes and the balancer may pick it",
        ),
    ],
};

/// The outlier detector's defaults are Envoy's (`outlier_detection.proto`), through
/// `OutlierParams::default`.
const OUTLIER_DEFAULTS: OutlierParams = OutlierParams::ENVOY;

pub static OUTLIER: Table = Table {
    partial: false,
    fields: &[
        f(
            "consecutive_5xx",
            U32,
            Int(OUTLIER_DEFAULTS.consecutive_5xx as u64),
            "5xx answers in a row (a timeout or connection error counts as one) that eject a replica; 0 = off",
        ),
        f(
            "enforcing_consecutive_5xx",
            Ty::Int { min: 0, max: 100 },
            Int(OUTLIER_DEFAULTS.enforcing_consecutive_5xx as u64),
            "percent chance a consecutive-5xx detection ejects",
        ),
        f(
            "interval",
            Ty::Duration,
            Duration(OUTLIER_DEFAULTS.interval, "s"),
            "period of the ejection sweep: success-rate checks and returns from ejection",
        )
        .range(POSITIVE),
        f(
            "base_ejection_time",
            Ty::Duration,
            Duration(OUTLIER_DEFAULTS.base_ejection_time, "s"),
            "an ejection lasts this x the replica's ejection count (decremented while it stays healthy)",
        )
        .range(POSITIVE),
        f(
            "max_ejection_time",
            Ty::Duration,
            Duration(OUTLIER_DEFAULTS.max_ejection_time, "s"),
            "the longest ejection",
        )
        .rules(">= base_ejection_time"),
        f(
            "max_ejection_percent",
            Ty::Int { min: 0, max: 100 },
            Int(OUTLIER_DEFAULTS.max_ejection_percent as u64),
            "most replicas ejected at once, in percent (with 10 %, fewer than 10 replicas are never ejected)",
        ),
        f(
            "always_eject_one_host",
            Ty::Bool,
            Value("false"),
            "eject one replica even when that exceeds max_ejection_percent (Envoy's default before 1.27)",
        ),
        f(
            "success_rate_minimum_hosts",
            U32,
            Int(OUTLIER_DEFAULTS.success_rate_minimum_hosts as u64),
            "replicas with enough requests needed for the success-rate check",
        ),
        f(
            "success_rate_request_volume",
            U32,
            Int(OUTLIER_DEFAULTS.success_rate_request_volume as u64),
            "requests in an interval for a replica to be in the success-rate check",
        ),
        f(
            "success_rate_stdev_factor",
            U32,
            Int(OUTLIER_DEFAULTS.success_rate_stdev_factor as u64),
            "a replica below mean - stdev x this / 1000 is ejected",
        ),
        f(
            "enforcing_success_rate",
            Ty::Int { min: 0, max: 100 },
            Int(OUTLIER_DEFAULTS.enforcing_success_rate as u64),
            "percent chance a success-rate detection ejects; 0 = off",
        ),
    ],
};

pub static ERROR: Table = Table {
    partial: false,
    fields: &[
        f("status", STATUS, Required, "the error's status"),
        f("probability", Ty::Num, Required, "probability of answering it instead of serving")
            .range(PROBABILITY),
        f(
            "after_effect",
            Ty::Bool,
            Value("false"),
            "the work and its side effect happen; only the answer is an error",
        ),
    ],
};

const START: Field = f("start", Ty::Duration, Required, "when the fault begins");
const REPLICA: Field = f("replica", U32, Absent("every replica"), "the replica it strikes, numbered from 0")
    .rules("< server.replicas; not with replica_share");
const REPLICA_SHARE: Field = f(
    "replica_share",
    Ty::Num,
    Absent("every replica"),
    "the share of the replicas it strikes: replicas 0 .. ceil(share x replicas) - 1",
)
.range(Range::AboveUpTo(0.0, 1.0));
const DURATION: Field =
    f("duration", Ty::Duration, Required, "how long it lasts; active on [start, start + duration)")
        .range(POSITIVE)
        .message("must be > 0: how long the fault lasts, e.g. \"5s\"");

pub static FAULT: Tagged = Tagged {
    tag: "kind",
    what: "fault kind",
    default: None,
    variants: &[
        Variant {
            kind: "outage",
            doc: "every request is answered `status` without the work",
            fields: &[
                START,
                DURATION,
                REPLICA,
                REPLICA_SHARE,
                f(
                    "status",
                    Ty::StatusOrFailure,
                    Value("503"),
                    "the answer; \"timeout\" = no answer at all; \"connection-error\" = a fast failure",
                ),
                f("retry_after", Ty::Duration, Absent("no Retry-After"), "Retry-After sent with the answer"),
            ],
        },
        Variant {
            kind: "capacity",
            doc: "`factor` x concurrency workers remain",
            fields: &[
                START,
                DURATION,
                REPLICA,
                REPLICA_SHARE,
                f("factor", Ty::Num, Required, "the fraction of the workers still available")
                    .range(PROBABILITY)
                    .message("{v} is outside [0, 1]: the fraction of the workers still available, e.g. 0.5"),
            ],
        },
        Variant {
            kind: "slowdown",
            doc: "service times are multiplied by `factor`",
            fields: &[
                START,
                DURATION,
                REPLICA,
                REPLICA_SHARE,
                f("factor", Ty::Num, Required, "service-time multiplier").range(POSITIVE).message(
                    "{v} is not a multiplier: service times are multiplied by it; use a number > 0, e.g. 3.0",
                ),
            ],
        },
        Variant {
            kind: "errors",
            doc: "a request is answered `status` with `probability` instead of being served",
            fields: &[
                START,
                DURATION,
                REPLICA,
                REPLICA_SHARE,
                f("probability", Ty::Num, Required, "probability of the error answer").range(PROBABILITY),
                f("status", STATUS, Value("503"), "the error's status"),
                f(
                    "after_effect",
                    Ty::Bool,
                    Value("false"),
                    "the work and its side effect happen; only the answer is an error",
                ),
                f("retry_after", Ty::Duration, Absent("no Retry-After"), "Retry-After sent with the answer"),
            ],
        },
        Variant {
            kind: "restart",
            doc: "the replica restarts: every request it holds (queued or in service) is dropped with a connection reset, and the balancer does not pick it (its health check fails) until the end",
            fields: &[START, DURATION, REPLICA, REPLICA_SHARE],
        },
    ],
};

/// The Retry-After of a refusal, the same for every kind.
const RETRY_AFTER_FORMAT: Field = f(
    "retry_after",
    Ty::Choice(&["seconds", "exact", "none"]),
    Value("\"seconds\""),
    "the refusal's Retry-After: the time until a request would be admitted, in whole seconds rounded up (as HTTP sends it), exact (to the millisecond), or none",
);

/// The status of a refusal; `default` is the kind's documented one.
const fn refusal_status(default: &'static str) -> Field {
    f("status", STATUS, Value(default), "the status a refused request is answered with")
}

const LIMIT: Field =
    f("limit", Ty::Int { min: 1, max: 10_000_000 }, Required, "requests admitted per window");
const WINDOW: Field = f("window", Ty::Duration, Required, "the window")
    .range(POSITIVE)
    .message("must be > 0: the window the limit counts over, e.g. \"1s\"");

pub static RATE_LIMIT: Tagged = Tagged {
    tag: "kind",
    what: "rate limiter kind",
    default: Some("token-bucket"),
    variants: &[
        Variant {
            kind: "token-bucket",
            doc: "a bucket of `burst` tokens, full at the start; a request takes one or is refused until the next token; refilled continuously at `rate`, or by Envoy's local rate limit: `tokens_per_fill` every `fill_interval`",
            fields: &[
                f("rate", Ty::Num, Absent("none: then fill_interval is required"), "tokens per second, refilled continuously")
                    .range(POSITIVE)
                    .rules("exactly one of rate and fill_interval"),
                f("burst", Ty::Num, Value("1.0"), "bucket size (the most requests let through at once; Envoy's max_tokens)")
                    .range(Range::AtLeast(1.0)),
                f("fill_interval", Ty::Duration, Absent("continuous refill at rate"), "Envoy: the bucket gets tokens_per_fill tokens every fill_interval, from the start")
                    .range(POSITIVE)
                    .rules(">= 50ms, as Envoy requires"),
                f("tokens_per_fill", Ty::Int { min: 1, max: u32::MAX as i64 }, Absent("1 (Envoy's default) with fill_interval"), "Envoy: tokens added at each fill")
                    .rules("only with fill_interval"),
                refusal_status("429"),
                RETRY_AFTER_FORMAT,
            ],
        },
        Variant {
            kind: "leaky-bucket",
            doc: "nginx limit_req: excess = max(0, excess - rate x ms + 1) in milli-requests; above burst refused, else delayed excess / rate at the server (not with nodelay)",
            fields: &[
                f("rate", Ty::Num, Required, "requests per second (kept to the milli-request per second, as nginx)")
                    .range(Range::AtLeast(0.001))
                    .message("must be at least 0.001 requests per second (nginx keeps the rate in milli-requests per second), e.g. 10.0"),
                f("burst", U32, Value("0"), "requests beyond the rate that are delayed (or, with nodelay, let through) instead of refused"),
                f("nodelay", Ty::Bool, Value("false"), "let the burst through at once instead of delaying it"),
                refusal_status("503"),
                RETRY_AFTER_FORMAT,
            ],
        },
        Variant {
            kind: "fixed-window",
            doc: "resilience4j AtomicRateLimiter: `limit` per `window`, windows counted from the start, no carry-over; a refusal's wait is the window's end (plus the windows reserved permits use up)",
            fields: &[
                LIMIT,
                WINDOW,
                f("max_wait", Ty::Duration, Value("\"0s\""), "resilience4j timeoutDuration: a request whose permit comes within max_wait reserves it and is held until then, instead of refused"),
                refusal_status("429"),
                RETRY_AFTER_FORMAT,
            ],
        },
        Variant {
            kind: "sliding-window",
            doc: ".NET SlidingWindowRateLimiter: `limit` per `window` of `segments` segments; at each segment boundary the permits taken a window earlier come back",
            fields: &[
                LIMIT,
                WINDOW.rules("a whole number of nanoseconds per segment"),
                f("segments", Ty::Int { min: 1, max: 100_000 }, Required, "segments per window (SegmentsPerWindow)"),
                refusal_status("429"),
                RETRY_AFTER_FORMAT,
            ],
        },
        Variant {
            kind: "sliding-log",
            doc: "the log of admission times (a Redis sorted set): admitted iff fewer than `limit` in the last `window`; refusals are not logged",
            fields: &[LIMIT, WINDOW, refusal_status("429"), RETRY_AFTER_FORMAT],
        },
        Variant {
            kind: "gcra",
            doc: "redis-cell CL.THROTTLE: T = period / count, tau = T x (max_burst + 1); allowed iff now >= max(tat, now) + T - tau",
            fields: &[
                f("max_burst", U32, Required, "requests allowed at once beyond the steady rate (the limit is max_burst + 1)"),
                f("count", Ty::Int { min: 1, max: u32::MAX as i64 }, Required, "requests per period"),
                f("period", Ty::Duration, Required, "the period count is given over")
                    .range(POSITIVE)
                    .message("must be > 0: count requests are allowed per period, e.g. \"1s\""),
                refusal_status("429"),
                RETRY_AFTER_FORMAT,
            ],
        },
    ],
};

pub static IDEMPOTENCY: Table = Table {
    partial: false,
    fields: &[
        f(
            "ttl",
            Ty::Duration,
            Value("\"24h\""),
            "how long a finished key is remembered; a repeat after that executes again",
        )
        .range(POSITIVE)
        .message("must be > 0: how long a finished key is remembered, e.g. \"24h\""),
        f(
            "on_in_progress",
            Ty::Choice(&["conflict", "wait"]),
            Value("\"conflict\""),
            "a repeat while the first request is in progress: 409 (\"conflict\") or wait for its answer (\"wait\", like SET NX)",
        ),
        f(
            "lock_ttl",
            Ty::Duration,
            Absent("none: the lock lasts until its request finishes or is dropped"),
            "the in-progress lock expires after this, while the work may still run (`SET lock:<key> NX PX`); a later request with the key then takes it and executes again",
        )
        .range(POSITIVE)
        .message("must be > 0: how long the in-progress lock lasts, e.g. \"30s\"; leave it out for a lock that never expires")
        .rules("needs on_in_progress = \"conflict\""),
        f(
            "release",
            Ty::Choice(&["delete", "compare-and-delete"]),
            Value("\"compare-and-delete\""),
            "how a finished (or dropped) holder releases the lock: delete it whoever holds it now, or only if it is still its own (Redis's Lua release); matters only with lock_ttl",
        ),
        f(
            "fencing",
            Ty::Bool,
            Value("false"),
            "fencing tokens: a holder whose lock was granted again since cannot apply its effect (`fenced`, answered 409); matters only with lock_ttl",
        ),
    ],
};

pub static CODEL: Table = Table {
    partial: false,
    fields: &[
        f(
            "target",
            Ty::Duration,
            Value("\"5ms\""),
            "the acceptable standing queueing delay (RFC 8289, folly: 5 ms)",
        )
        .range(POSITIVE)
        .message("must be > 0: the acceptable queueing delay, e.g. \"5ms\""),
        f(
            "interval",
            Ty::Duration,
            Value("\"100ms\""),
            "how long a delay must persist before CoDel acts (RFC 8289, folly: 100 ms)",
        )
        .range(POSITIVE)
        .message("must be > 0: the window a delay must persist over, e.g. \"100ms\""),
    ],
};

pub static OVERLOAD: Table = Table {
    partial: false,
    fields: &[
        f("alpha", Ty::Num, Required, "service time x (1 + alpha x max(0, in_service - knee))")
            .range(Range::AtLeast(0.0)),
        f("knee", U32, Value("0"), "requests in service before service slows").rules("<= concurrency"),
    ],
};

/// The keys of `[client]` and of every strategy (DESIGN §4).
macro_rules! policy_fields {
    ($($extra:expr),* $(,)?) => {
        &[
            $($extra,)*
            f("max_attempts", U32, Absent("unlimited"), "attempts per operation, the first one included (1 = no retries)")
                .range(Range::AtLeast(1.0))
                .message("must be at least 1 (it counts the first attempt; 1 = no retries)"),
            f("timeout", Ty::Duration, Absent("none: wait for the answer however long it takes"), "per-attempt timeout")
                .range(POSITIVE)
                .message("must be > 0; leave it out to wait for every answer"),
            f("deadline", Ty::Duration, Absent("none"), "operation deadline, measured from its first attempt; no retry starts that cannot begin before it")
                .range(POSITIVE)
                .message("must be > 0; leave it out for no deadline"),
            f("retry_on", Ty::List(&Ty::RetryCondition), Absent("429, 502, 503, 504, 409 from the idempotency store, timeout, connection error"), "outcomes that are retried")
                .rules("non-empty (to never retry, set max_attempts = 1)"),
            f("backoff", Ty::Tagged(&BACKOFF), Required, "the delay before each retry").rules("required in the strategy, [client] or its preset"),
            f("honor_retry_after", Ty::Bool, Value("false"), "use the server's Retry-After instead of the backoff"),
            f("retry_after_cap", Ty::Duration, Absent("no cap"), "the longest Retry-After honoured (a Retry-After: 86400 must not park a worker for a day)"),
            f(
                "retry_after_mode",
                Ty::Choice(&["replace", "envoy", "aws-2026", "grpc-pushback", "at-least-backoff"]),
                Value("\"replace\""),
                "how Retry-After combines with the backoff: replace it (urllib3); Envoy's U(v, 1.5v), discarded above 300 s; AWS 2026's clamp to [t, t + 5 s]; gRPC pushback (exact); max(backoff, v) (axios-retry)",
            ),
            f("honor_dont_retry", Ty::Bool, Value("false"), "do not retry an answer that says \"overloaded; don't retry\" (server.reject_dont_retry)"),
            f("idempotency", Ty::Choice(&["none", "per-op", "per-attempt"]), Value("\"none\""), "idempotency keys: none, one per operation made before the retry loop (correct), or a new one per attempt (the classic bug)"),
            f("budget", Ty::Tagged(&BUDGET), Absent("no budget"), "a retry budget: a retry it refuses ends the operation as failed_budget"),
            f("breaker", Ty::Tagged(&BREAKER), Absent("no breaker"), "a circuit breaker: an open resilience4j one fails every attempt locally, a retry-ratio one refuses retries (failed_breaker)"),
            f("throttle", Ty::Tagged(&THROTTLE), Absent("no throttling"), "client-side adaptive throttling (failed_throttled)"),
            f("pool", Ty::Table(&POOL), Absent("no pool: every attempt is sent at once"), "a connection pool: attempts wait in the client for one of `size` connections (the Go MongoDB driver)")
                .rules("queue server only; not with layers or network loss"),
            f("retry_other_replica", Ty::Bool, Value("false"), "a retry avoids the replicas its operation already tried (Envoy's previous_hosts retry predicate); otherwise each attempt is a fresh pick")
                .rules("not with [[services]]: set it on the edges there (a `calls` entry or hop_policy)"),
            f("host_selection_retry_max_attempts", U32, Int(1), "with retry_other_replica: picks made again when a pick was already tried, before the last pick is used anyway (Envoy's default 1)"),
            f("bulkhead", Ty::Table(&BULKHEAD), Absent("no bulkhead: every operation starts at once"), "a bulkhead: at most `max_in_flight` operations in flight, across their retries; the rest wait up to `max_wait`, then fail as failed_bulkhead (resilience4j's SemaphoreBulkhead)")
                .rules("queue server only"),
            f("limit", Ty::Tagged(&CONCURRENCY_LIMIT), Absent("no limit"), "an adaptive concurrency limit (Netflix concurrency-limits: aimd, vegas, gradient2): an attempt over the limit is rejected locally (failed_limited)")
                .rules("queue server only"),
            f("hedge", Ty::Table(&HEDGE), Absent("no hedging: one copy of each attempt"), "hedged requests: more copies of a call before its answer, the first good answer wins and the others are cancelled (gRPC A6 hedgingPolicy; presets polly and envoy)")
                .rules("queue server only; max_attempts = 1 (hedging replaces retrying, as gRPC allows only one of retryPolicy and hedgingPolicy); not with layers, pool, dead_letter, limit or a queue workload"),
            f("layers", Ty::List(&Ty::Table(&LAYER)), Value("[]"), "gateways in front of the server, the first nearest the client, each retrying with its own policy"),
            f("propagate_deadline", Ty::Bool, Value("false"), "[[services]]: the attempt's deadline travels down the call graph (gRPC); each call waits min(its own timeout, what remains), and no hop starts work past it"),
            f("propagate_cancellation", Ty::Bool, Value("false"), "[[services]]: a caller that gives up cancels its downstream requests (queued ones removed, those waiting for their own calls stopped, down the tree)"),
            f("cancel_in_service", Ty::Bool, Value("false"), "[[services]], with propagate_cancellation: a cancelled request a worker is serving is stopped at once; else its own work runs to the end"),
            f("hop_policy", Ty::Table(&HOP_POLICY), Absent("none: each edge keeps the policy its `calls` entry gives"), "[[services]]: the client policy of every edge of the call graph, replacing the edges' own (the library every service uses)"),
            f("dead_letter", Ty::Table(&DEAD_LETTER), Absent("none: an operation whose tries are used up fails (failed_exhausted)"), "a dead-letter queue: an operation whose tries are used up is dead-lettered (dead_lettered) instead of failed")
                .rules("queue server only"),
            f("redrive", Ty::Table(&REDRIVE), Absent("none: dead-lettered operations stay"), "send the dead-letter queue again later, each item once, through the same retry policy (redriven, redrive_succeeded)")
                .rules("needs dead_letter"),
            f("app_retry", Ty::Table(&APP_RETRY), Absent("none: a failure the library's loop gives up on is the operation's"), "the application's own retry loop above the library's (a person pressing \"try again\" on the next screen, a job re-running its step): when the library's loop fails, the application waits its own backoff and runs the whole loop again, as a new call (attempts, backoff and deadline start over; the budget and breaker see a new operation); the operation's latency counts from its first pass")
                .rules("queue server only; not with hedge, dead_letter, bulkhead or a queue workload"),
        ]
    };
}

pub static CLIENT: Table = Table { partial: true, fields: policy_fields!() };

pub static DEAD_LETTER: Table = Table {
    partial: false,
    fields: &[f(
        "after",
        U32,
        Absent("max_attempts"),
        "tries after which an operation is dead-lettered (a batch job's DLQ after 5 tries)",
    )
    .range(Range::AtLeast(1.0))
    .message("must be at least 1 (it counts the first try)")
    .rules("<= max_attempts")],
};

pub static REDRIVE: Table = Table {
    partial: false,
    fields: &[
        f(
            "at",
            Ty::Duration,
            Absent("none"),
            "re-drive the whole queue at this moment (by a person): what it holds then; later items stay",
        )
        .rules("exactly one of at and after"),
        f(
            "after",
            Ty::Duration,
            Absent("none"),
            "re-drive each item this long after it was dead-lettered (automatic)",
        )
        .rules("exactly one of at and after"),
        f(
            "rate",
            Ty::Num,
            Absent("all at once"),
            "items re-driven per second at most, in the order they were dead-lettered",
        )
        .range(POSITIVE)
        .message("must be > 0 items per second; leave it out to re-drive every item at once"),
        f(
            "key",
            Ty::Choice(&["same", "new"]),
            Value("\"same\""),
            "the idempotency key a re-driven item carries: its own (the store answers a paid item from its result) or a new one (it executes again)",
        ),
    ],
};

pub static APP_RETRY: Table = Table {
    partial: false,
    fields: &[
        f(
            "max_attempts",
            U32,
            Required,
            "passes of the library's whole retry loop per operation, the first included (1 = the application does not retry)",
        )
        .range(Range::Between(1.0, 255.0))
        .message("must be between 1 and 255 (it counts the first pass; 1 = the application does not retry)"),
        f(
            "backoff",
            Ty::Tagged(&BACKOFF),
            Required,
            "the application's delay before each new pass (k = passes failed so far): seconds for a person on the next screen, minutes for a job re-run",
        ),
        f(
            "retry_on",
            Ty::List(&Ty::Choice(&crate::policy::FailReasons::RAISED_NAMES)),
            Absent("every reason but non_retryable"),
            "the library's failure reasons (the failed_<reason> columns) the application retries",
        )
        .rules("non-empty (to never retry, leave app_retry out)"),
        f(
            "key",
            Ty::Choice(&["same", "new"]),
            Value("\"new\""),
            "the idempotency key of a new pass: a new one, as a new call to a library that makes a key per call does (an effect that happened in a failed pass happens again: duplicates), or the first pass's (the application made the key and hands it to every pass)",
        ),
    ],
};

pub static STRATEGY: Table = Table {
    partial: true,
    fields: policy_fields!(
        f(
            "name",
            Ty::Str,
            Required,
            "labels the strategy's rows and charts; `--set strategies.NAME...` addresses it"
        )
        .rules("non-empty; unique; `[[strategies]]` only"),
        f(
            "preset",
            Ty::Str,
            Absent("none"),
            "start from a production library's defaults (`retrysim presets`); other keys override it"
        )
        .rules("`[[strategies]]` only (per strategy), not `[client]`"),
        f(
            "import",
            Ty::Table(&IMPORT),
            Absent("none"),
            "start from a production config file (`retrysim import` reads the same formats: envoy, istio, linkerd, ...); other keys override it, it overrides the preset"
        )
        .rules("`[[strategies]]` only; `file` is read from the experiment file's folder at every load; cannot be swept"),
    ),
};

/// `[[strategies]] import`: a production config file the strategy is read from.
pub static IMPORT: Table = Table {
    partial: false,
    fields: &[
        f(
            "kind",
            Ty::Str,
            Required,
            "the file's format, as `retrysim import KIND` names it (envoy, istio, linkerd, ...)",
        ),
        f("file", Ty::Str, Required, "the file, relative to the experiment file"),
    ],
};

const BASE: Field = f("base", Ty::Duration, Required, "base delay");
const CAP: Field = f("cap", Ty::Duration, Absent("no cap"), "longest delay").rules("cap >= base");
/// urllib3's `Retry.get_backoff_time` (2.x): 0 while the run of errors is 1, the formula from
/// the second retry on.
const IMMEDIATE_FIRST: Field = f(
    "immediate_first",
    Ty::Bool,
    Value("false"),
    "the first retry goes at once, the formula applies from retry 2 (urllib3)",
);
const MULTIPLIER: Field = f("multiplier", Ty::Num, Value("2.0"), "growth per retry")
    .range(Range::AtLeast(1.0))
    .message("{v} would shrink the delays: multiplier must be a finite number >= 1");

pub static BACKOFF: Tagged = Tagged {
    tag: "kind",
    what: "backoff kind",
    default: None,
    variants: &[
        Variant { kind: "none", doc: "0", fields: &[] },
        Variant { kind: "constant", doc: "base", fields: &[BASE] },
        Variant { kind: "linear", doc: "min(cap, base * k)", fields: &[BASE, CAP] },
        Variant {
            kind: "exponential",
            doc: "min(cap, base * multiplier^(k-1))",
            fields: &[BASE, CAP, MULTIPLIER, IMMEDIATE_FIRST],
        },
        Variant {
            kind: "full-jitter",
            doc: "U(0, min(cap, base * multiplier^(k-1)))",
            fields: &[BASE, CAP, MULTIPLIER],
        },
        Variant {
            kind: "equal-jitter",
            doc: "v/2 + U(0, v/2), v = min(cap, base * multiplier^(k-1))",
            fields: &[BASE, CAP, MULTIPLIER],
        },
        Variant {
            kind: "decorrelated-jitter",
            doc: "s_k = min(cap, U(base, 3 * s_(k-1))), s_0 = base",
            fields: &[BASE, CAP],
        },
        Variant {
            kind: "decorrelated-jitter-v2",
            doc: "Polly's DecorrelatedJitterBackoffV2 (base = median first delay)",
            fields: &[BASE, CAP],
        },
        Variant {
            kind: "additive-jitter",
            doc: "min(cap, base * multiplier^(k-1) + U(0, jitter))",
            fields: &[
                BASE,
                CAP,
                MULTIPLIER,
                f("jitter", Ty::Duration, Required, "the most added at random"),
                IMMEDIATE_FIRST,
            ],
        },
        Variant {
            kind: "proportional-jitter",
            doc: "v * U(1 - p, 1 + p), gRPC's +-20 % after the cap",
            fields: &[
                BASE,
                CAP,
                MULTIPLIER,
                f("p", Ty::Num, Value("0.2"), "relative jitter")
                    .range(PROBABILITY)
                    .message("{v} is outside [0, 1]: the relative jitter, e.g. 0.2 for +-20 %"),
            ],
        },
    ],
};

/// The defaults of a `token-bucket` budget: botocore's standard mode v2.0.
const AWS_QUOTA: TokenBucketParams = TokenBucketParams::AWS_STANDARD;
/// The defaults of a `ratio` budget: Finagle's `RetryBudget()`.
const FINAGLE: RatioBudgetParams = RatioBudgetParams::FINAGLE_DEFAULT;
/// The defaults of a `concurrency` budget: Envoy's, once a retry budget is configured.
const ENVOY: ConcurrencyBudgetParams = ConcurrencyBudgetParams::ENVOY_DEFAULT;
/// The defaults of a `brooker` budget: the post's 5 / 0.1 / 1.
const BROOKER_BUCKET: BrookerBucketParams = BrookerBucketParams::BROOKER_2022;

pub static BUDGET: Tagged = Tagged {
    tag: "kind",
    what: "budget kind",
    default: None,
    variants: &[
        Variant {
            kind: "token-bucket",
            doc: "AWS SDK retry quota: a retry takes tokens, a success refunds",
            fields: &[
                f("capacity", Ty::Num, Num(AWS_QUOTA.capacity), "tokens, and the bucket's start").range(POSITIVE),
                f("retry_cost", Ty::Num, Num(AWS_QUOTA.retry_cost), "tokens a retry takes").range(Range::AtLeast(0.0)),
                f("timeout_cost", Ty::Num, Num(AWS_QUOTA.timeout_cost), "tokens a retry after a timeout takes").range(Range::AtLeast(0.0)),
                f("throttling_cost", Ty::Num, Num(AWS_QUOTA.throttling_cost), "tokens a retry after a 429 takes").range(Range::AtLeast(0.0)),
                f("success_refund", Ty::Num, Num(AWS_QUOTA.success_refund), "tokens a success without retries gives back (a success after retries returns its last retry's cost)").range(Range::AtLeast(0.0)),
                scope(),
            ],
        },
        Variant {
            kind: "grpc-throttle",
            doc: "gRPC retryThrottling: -1 per failure, +token_ratio per success, retry while tokens > max_tokens / 2",
            fields: &[
                f("max_tokens", Ty::Num, Num(GrpcThrottleParams::A6_EXAMPLE.max_tokens), "tokens, and the start").range(Range::AboveUpTo(0.0, 1000.0)),
                f("token_ratio", Ty::Num, Num(GrpcThrottleParams::A6_EXAMPLE.token_ratio), "tokens per success").range(POSITIVE),
                scope(),
            ],
        },
        Variant {
            kind: "ratio",
            doc: "Finagle / Linkerd / tower: retries <= ratio x requests + min_per_second x ttl over a sliding ttl",
            fields: &[
                f("ratio", Ty::Num, Num(FINAGLE.ratio), "retries allowed per request").range(Range::Between(0.0, 1000.0)),
                f("min_per_second", Ty::Num, Num(FINAGLE.min_per_second), "free retries per second").range(Range::AtLeast(0.0)),
                f("ttl", Ty::Duration, Duration(FINAGLE.ttl, "s"), "the sliding window").rules("from 1s to 60s"),
                scope(),
            ],
        },
        Variant {
            kind: "concurrency",
            doc: "Envoy: active retries < max(percent % x active requests, min_concurrency)",
            fields: &[
                f("percent", Ty::Num, Num(ENVOY.percent), "percent of the active requests").range(Range::Between(0.0, 100.0)),
                f("min_concurrency", U32, Int(ENVOY.min_concurrency as u64), "retries always allowed at once"),
                scope(),
            ],
        },
        Variant {
            kind: "brooker",
            doc: "Brooker's adaptive bucket (retry_sim 2022): starts full, +per_call per operation started up to capacity, a retry needs tokens > retry_cost and takes it",
            fields: &[
                f("capacity", Ty::Num, Num(BROOKER_BUCKET.capacity), "tokens, and the bucket's start").range(POSITIVE).rules(">= retry_cost"),
                f("per_call", Ty::Num, Num(BROOKER_BUCKET.per_call), "tokens each operation deposits when it starts").range(Range::AtLeast(0.0))
                    .message("{v} is negative: per_call is the deposit of each operation, >= 0 (0 = only the starting tokens)"),
                f("retry_cost", Ty::Num, Num(BROOKER_BUCKET.retry_cost), "tokens a retry takes; a retry needs more than this").range(Range::AtLeast(0.0)),
                scope(),
            ],
        },
    ],
};

/// The defaults of a breaker: resilience4j's.
const RESILIENCE4J: BreakerParams = BreakerParams::RESILIENCE4J;
/// resilience4j's default window, a count of calls.
const RESILIENCE4J_WINDOW: u64 = match RESILIENCE4J.window {
    BreakerWindow::Count(calls) => calls as u64,
    BreakerWindow::Time(_) => panic!("resilience4j's default window counts calls"),
};

/// The defaults of a `retry-ratio` breaker: the post's 10 %.
const RETRY_RATIO: RetryRatioParams = RetryRatioParams::BROOKER_2022;

pub static BREAKER: Tagged = Tagged {
    tag: "kind",
    what: "breaker kind",
    default: Some("resilience4j"),
    variants: &[
        Variant {
            kind: "resilience4j",
            doc: "resilience4j's CircuitBreaker (Hystrix is the `hystrix` preset): opens on a failure or slow-call rate over a sliding window, then fails every attempt locally for open_for",
            fields: RESILIENCE4J_FIELDS,
        },
        Variant {
            kind: "retry-ratio",
            doc: "Brooker's retry breaker (retry_sim 2022): after a failure, no retry while failed attempts / operations started > threshold; first attempts always go; no open state",
            fields: &[
                f("threshold", Ty::Num, Num(RETRY_RATIO.threshold), "refuse retries above this ratio of failed attempts to operations started")
                    .range(Range::AboveUpTo(0.0, 1.0))
                    .message("{v} is outside (0, 1]: the threshold is a ratio of failed attempts to operations, e.g. 0.1 for 10 %"),
                f("window", Ty::Duration, Absent("since the start"), "count over the last span of simulated time (10 slices) instead of since the start")
                    .rules("> 0"),
                scope(),
            ],
        },
    ],
};

const RESILIENCE4J_FIELDS: &[Field] = &[
    f(
        "window",
        Ty::CallsOrDuration,
        Int(RESILIENCE4J_WINDOW),
        "the last N calls (a number), or the calls of the last whole seconds (a duration)",
    )
    .rules("> 0; a duration is whole seconds"),
    f("failure_rate", Ty::Num, Num(RESILIENCE4J.failure_rate), "opens when the failure rate reaches this")
        .range(Range::AboveUpTo(0.0, 1.0)),
    f(
        "slow_call_rate",
        Ty::Num,
        Num(RESILIENCE4J.slow_call_rate),
        "opens when the slow-call rate reaches this",
    )
    .range(Range::AboveUpTo(0.0, 1.0)),
    f(
        "slow_call_duration",
        Ty::Duration,
        Duration(RESILIENCE4J.slow_call_duration, "s"),
        "a call longer than this is slow",
    ),
    f("minimum_calls", U32, Int(RESILIENCE4J.minimum_calls as u64), "calls in the window before it may open")
        .range(Range::AtLeast(1.0)),
    f(
        "open_for",
        Ty::Duration,
        Duration(RESILIENCE4J.open_for, "s"),
        "how long it stays open before letting probes through",
    ),
    f("half_open_calls", U32, Int(RESILIENCE4J.half_open_calls as u64), "probes let through when half-open")
        .range(Range::AtLeast(1.0)),
    scope(),
];

pub static THROTTLE: Tagged = Tagged {
    tag: "kind",
    what: "throttle kind",
    default: None,
    variants: &[
        Variant {
            kind: "sre",
            doc: "Google SRE: reject locally with probability max(0, (requests - k x accepts) / (requests + 1))",
            fields: &[
                f("k", Ty::Num, Num(SreThrottleParams::SRE_BOOK.k), "the multiplier K")
                    .range(Range::AtLeast(1.0)),
                f(
                    "window",
                    Ty::Duration,
                    Duration(SreThrottleParams::SRE_BOOK.window, "m"),
                    "the window requests and accepts are counted over",
                )
                .range(POSITIVE),
                scope(),
            ],
        },
        Variant {
            kind: "aws-adaptive",
            doc: "AWS SDK adaptive mode: a CUBIC send-rate limiter that delays attempts after throttling",
            fields: &[scope()],
        },
        Variant {
            kind: "envoy-admission-control",
            doc: "Envoy's admission_control filter: reject locally with probability min(max_rejection_probability, max(0, (n - s / sr_threshold) / (n + 1))^(1 / aggression)), n requests and s successes (status < 500) over the window; rejected requests are not counted",
            fields: ENVOY_ADMISSION_CONTROL,
        },
    ],
};

/// A percentage as Envoy's `type.v3.Percent` writes it.
const PERCENT: Range = Range::Between(0.0, 100.0);

pub static ADAPTIVE_CONCURRENCY: Table = Table {
    partial: false,
    fields: &[
        f(
            "enabled",
            Ty::Bool,
            Value("true"),
            "false: the filter lets every request through (Envoy's `enabled` runtime flag), so that a sweep can turn it on and off",
        ),
        f(
            "concurrency_update_interval",
            Ty::Duration,
            Required,
            "how often the limit is recalculated from the latencies sampled since (Envoy requires it)",
        )
        .range(Range::AtLeast(1e6))
        .message("must be at least 1ms (Envoy counts it in whole milliseconds), e.g. \"100ms\""),
        f(
            "sample_aggregate_percentile",
            Ty::Num,
            Num(GradientParams::ENVOY_PERCENTILE),
            "the percentile of the samples that is sampleRTT (and minRTT), in percent",
        )
        .range(Range::AboveUpTo(0.0, 100.0))
        .message("{v} is not a percentile in (0, 100]: e.g. 50 for the median (Envoy's default)"),
        f("max_concurrency_limit", U32, Int(GradientParams::ENVOY_MAX_LIMIT as u64), "the highest limit")
            .range(Range::AtLeast(1.0)),
        f(
            "min_concurrency_limit",
            U32,
            Absent("min_concurrency is the floor"),
            "a floor for the calculated limit, apart from the minRTT probe's pinned min_concurrency",
        )
        .range(Range::AtLeast(1.0))
        .rules("<= max_concurrency_limit"),
        f(
            "min_rtt_interval",
            Ty::Duration,
            Required,
            "how often minRTT is measured again (Envoy's min_rtt_calc_params.interval)",
        )
        .range(Range::AtLeast(1e6))
        .message("must be at least 1ms (Envoy counts it in whole milliseconds), e.g. \"60s\""),
        f(
            "min_rtt_request_count",
            U32,
            Int(GradientParams::ENVOY_MIN_RTT_REQUESTS as u64),
            "samples a minRTT measurement takes",
        )
        .range(Range::AtLeast(1.0)),
        f(
            "jitter",
            Ty::Num,
            Num(GradientParams::ENVOY_JITTER_PERCENT),
            "a random delay of up to this percent of min_rtt_interval before each minRTT measurement",
        )
        .range(PERCENT)
        .message("{v} is not a percentage in [0, 100]: e.g. 15 (Envoy's default)"),
        f(
            "min_concurrency",
            U32,
            Int(GradientParams::ENVOY_MIN_CONCURRENCY as u64),
            "the limit while minRTT is measured, and its floor without min_concurrency_limit",
        )
        .range(Range::AtLeast(1.0))
        .rules("<= max_concurrency_limit"),
        f(
            "buffer",
            Ty::Num,
            Num(GradientParams::ENVOY_BUFFER_PERCENT),
            "the latency above minRTT tolerated before the limit falls, in percent of minRTT",
        )
        .range(PERCENT)
        .message("{v} is not a percentage in [0, 100]: e.g. 25 (Envoy's default)"),
    ],
};

const LIMIT_WINDOWED: Field = f(
    "windowed",
    Ty::Bool,
    Value("false"),
    "sample through the library's WindowedLimit (1 s windows of at least 10 samples, RTTs under 100 us ignored; the inner limit sees each window's mean RTT), not call by call (the library's default)",
);

pub static CONCURRENCY_LIMIT: Tagged = Tagged {
    tag: "kind",
    what: "limit kind",
    default: None,
    variants: &[
        Variant {
            kind: "aimd",
            doc: "AIMDLimit: on a drop or an RTT over timeout, limit x backoff_ratio; else +1 while at least half the limit is in flight",
            fields: &[
                f("initial_limit", U32, Int(AimdParams::NETFLIX.initial_limit as u64), "the limit at the start").range(Range::AtLeast(1.0)),
                f("min_limit", U32, Int(AimdParams::NETFLIX.min_limit as u64), "the lowest limit").range(Range::AtLeast(1.0)),
                f("max_limit", U32, Int(AimdParams::NETFLIX.max_limit as u64), "the highest limit")
                    .range(Range::AtLeast(1.0))
                    .rules(">= min_limit"),
                f("backoff_ratio", Ty::Num, Num(AimdParams::NETFLIX.backoff_ratio), "the factor applied on a drop")
                    .range(Range::AtLeastBelow(AimdParams::BACKOFF_RATIO_MIN, 1.0))
                    .message("{v} is outside [0.5, 1): AIMDLimit requires a backoff ratio of at least 0.5 and below 1, e.g. 0.9 (its default)"),
                f("timeout", Ty::Duration, Duration(AimdParams::NETFLIX.timeout, "s"), "a call slower than this counts as a drop")
                    .range(POSITIVE)
                    .message("must be > 0: a call slower than this counts as a drop, e.g. \"5s\" (AIMDLimit's default)"),
                LIMIT_WINDOWED,
                scope(),
            ],
        },
        Variant {
            kind: "vegas",
            doc: "VegasLimit (the library's default): queue = ceil(L x (1 - rtt_noload / rtt)); +6 log10(L) without a queue, +log10(L) under 3 log10(L), -log10(L) over 6 log10(L) or on a drop",
            fields: &[
                f("initial_limit", U32, Int(VegasParams::NETFLIX.initial_limit as u64), "the limit at the start").range(Range::AtLeast(1.0)),
                f("max_limit", U32, Int(VegasParams::NETFLIX.max_limit as u64), "the highest limit (maxConcurrency)").range(Range::AtLeast(1.0)),
                f("smoothing", Ty::Num, Num(VegasParams::NETFLIX.smoothing), "the share of each new limit taken (1: all of it)")
                    .range(Range::AboveUpTo(0.0, 1.0))
                    .message("{v} is outside (0, 1]: the share of each new limit taken, e.g. 1.0 (VegasLimit's default)"),
                f("probe_multiplier", U32, Int(VegasParams::NETFLIX.probe_multiplier as u64), "rtt_noload is measured again every U(0.5, 1) x probe_multiplier x limit samples")
                    .range(Range::AtLeast(1.0)),
                LIMIT_WINDOWED,
                scope(),
            ],
        },
        Variant {
            kind: "gradient2",
            doc: "Gradient2Limit: gradient = clamp(rtt_tolerance x long RTT / RTT, 0.5, 1); L = L (1 - smoothing) + (L x gradient + queue_size) x smoothing",
            fields: &[
                f("initial_limit", U32, Int(Gradient2Params::NETFLIX.initial_limit as u64), "the limit at the start").range(Range::AtLeast(1.0)),
                f("min_limit", U32, Int(Gradient2Params::NETFLIX.min_limit as u64), "the lowest limit").range(Range::AtLeast(1.0)),
                f("max_limit", U32, Int(Gradient2Params::NETFLIX.max_limit as u64), "the highest limit (maxConcurrency)")
                    .range(Range::AtLeast(1.0))
                    .rules(">= min_limit"),
                f("smoothing", Ty::Num, Num(Gradient2Params::NETFLIX.smoothing), "the share of each new limit taken")
                    .range(Range::AboveUpTo(0.0, 1.0))
                    .message("{v} is outside (0, 1]: the share of each new limit taken, e.g. 0.2 (Gradient2Limit's default)"),
                f("queue_size", U32, Int(Gradient2Params::NETFLIX.queue_size as u64), "requests added to the limit at each update (the headroom for a queue)"),
                f("long_window", U32, Int(Gradient2Params::NETFLIX.long_window as u64), "samples in the long RTT's exponential average")
                    .range(Range::AtLeast(1.0)),
                f("rtt_tolerance", Ty::Num, Num(Gradient2Params::NETFLIX.rtt_tolerance), "how much slower than the long RTT a call may be before the limit falls")
                    .range(Range::AtLeast(1.0))
                    .message("{v} is below 1: Gradient2Limit requires a tolerance >= 1.0, e.g. 1.5 (its default)"),
                LIMIT_WINDOWED,
                scope(),
            ],
        },
    ],
};
/// The keys of `throttle = { kind = "envoy-admission-control" }` (Envoy's defaults, read in
/// `source/extensions/filters/http/admission_control/`).
const ENVOY_ADMISSION_CONTROL: &[Field] = &[
    f(
        "sampling_window",
        Ty::Duration,
        Duration(EnvoyAdmissionParams::ENVOY.sampling_window, "s"),
        "requests and successes are counted over this window, in samples of 1 s",
    )
    .range(Range::AtLeast(1e9))
    .message("must be at least 1s: Envoy keeps its window in whole seconds, e.g. \"30s\"")
    .rules("whole seconds"),
    f(
        "sr_threshold",
        Ty::Num,
        Num(EnvoyAdmissionParams::ENVOY.sr_threshold),
        "the success rate below which requests are rejected (Envoy's percent as a fraction: 95 % is 0.95)",
    )
    .range(Range::Between(0.01, 1.0))
    .message("{v} is not a success rate Envoy accepts: write a fraction from 0.01 to 1, e.g. 0.95 for 95 %"),
    f(
        "aggression",
        Ty::Num,
        Num(EnvoyAdmissionParams::ENVOY.aggression),
        "the rejection curve's exponent is 1 / aggression: higher rejects sooner",
    )
    .range(Range::AtLeast(1.0))
    .message("{v} is below 1, which Envoy treats as 1: write aggression >= 1"),
    f(
        "rps_threshold",
        U32,
        Int(EnvoyAdmissionParams::ENVOY.rps_threshold as u64),
        "below this many requests per second over the window nothing is rejected",
    ),
    f(
        "max_rejection_probability",
        Ty::Num,
        Num(EnvoyAdmissionParams::ENVOY.max_rejection_probability),
        "the rejection probability never exceeds this (Envoy's percent as a fraction: 80 % is 0.8)",
    )
    .range(PROBABILITY),
    scope(),
];

pub static POOL: Table = Table {
    partial: false,
    fields: &[
        f(
            "size",
            U32,
            Int(PoolParams::GO_DRIVER_SIZE as u64),
            "connections per pool; a request that finds all of them in use waits (the Go MongoDB driver's maxPoolSize)",
        )
        .range(Range::AtLeast(1.0))
        .message("a pool of {v} connections could never send anything: set size >= 1 (the Go MongoDB driver's default is 100)"),
        f(
            "max_wait",
            Ty::Duration,
            Absent("no limit of its own: the attempt's timeout bounds the wait (the Go driver)"),
            "a wait for a connection longer than this fails the attempt without reaching the server (CMAP's waitQueueTimeoutMS)",
        )
        .range(POSITIVE)
        .message("must be > 0; leave it out to let the attempt's timeout bound the wait"),
        f(
            "close_on_timeout",
            Ty::Bool,
            Value("true"),
            "a request the client gave up on closes its connection (the Go driver); false: the connection stays busy until the answer arrives",
        ),
        f(
            "connect_time",
            Ty::Duration,
            Value("\"0s\""),
            "opening a connection (connections open on demand, and again after a close) before the request is sent on it",
        ),
        scope(),
    ],
};

pub static HEDGE: Table = Table {
    partial: false,
    fields: &[
        f("preset", Ty::Choice(&["polly", "envoy"]), Absent("gRPC A6: the keys below"), "polly: Polly v8's latency mode (2 copies, the second after 2 s or at once on a handled failure, every failure handled); envoy: Envoy's hedge_on_per_try_timeout (2 copies, the second when the first's per-try timeout fires, the first still waited for)"),
        f("max_attempts", Ty::Int { min: 2, max: 5 }, Absent("required; 2 with preset polly or envoy"), "copies of a call, the first included (gRPC maxAttempts, 2 to 5: its client caps it at 5)"),
        f("delay", Ty::Str, Absent("\"0s\" (gRPC: every copy at once); \"2s\" with preset polly; none with envoy"), "when the next copy goes out without an answer: a duration (0 = all at once), or \"pNN\", the NN-th percentile (0 < NN < 100) of the client's own latency over the last `window` (tower's hedge)"),
        f("non_fatal", Ty::List(&Ty::RetryCondition), Absent("none (gRPC); every failure with preset polly; 5xx and connection-error with envoy"), "failures after which the next copy goes out at once; any other failure cancels the copies and fails the call (gRPC nonFatalStatusCodes)"),
        f("hedge_on_per_try_timeout", Ty::Bool, Absent("false; true with preset envoy"), "when a copy's `timeout` fires, send the next copy and keep waiting for the late one (Envoy); else the late copy is abandoned as a timeout")
            .rules("needs timeout"),
        f("window", Ty::Duration, Value("\"10s\""), "the rotation period of the latency histogram a percentile delay reads (tower's period; retrysim's default)")
            .range(POSITIVE)
            .message("must be > 0: the period the latency percentile is taken over, e.g. \"10s\""),
        f("min_samples", U32, Value("100"), "latencies the last window must hold before a percentile delay hedges anything (tower's min_data_points; retrysim's default)"),
        f("budget", Ty::Table(&HEDGE_BUDGET), Absent("no budget: every copy is sent"), "a token bucket bounding the extra copies (Brooker: about 5 %): each call deposits `ratio` tokens, each hedge takes one"),
        f("cancel_in_service", Ty::Bool, Value("false"), "a cancelled copy a worker is serving is stopped at once (its effect does not happen); else it finishes (queued copies are always removed)"),
        scope(),
    ],
};

pub static HEDGE_BUDGET: Table = Table {
    partial: false,
    fields: &[
        f("ratio", Ty::Num, Value("0.05"), "tokens each call deposits: the long-run bound on hedges per call (Brooker, 2023: about 5 %)")
            .range(Range::AboveUpTo(0.0, 1.0))
            .message("{v} is not a share of calls: set ratio in (0, 1], e.g. 0.05"),
        f("capacity", Ty::Num, Value("5.0"), "tokens at the start and the most the bucket holds; a hedge needs more than one (the bucket of Brooker's simulator: 5)")
            .range(Range::Above(1.0))
            .message("{v} tokens would never allow a hedge (a hedge needs more than 1): set capacity > 1, e.g. 5.0"),
    ],
};

pub static BULKHEAD: Table = Table {
    partial: false,
    fields: &[
        f(
            "max_in_flight",
            U32,
            Int(BulkheadParams::RESILIENCE4J_MAX_IN_FLIGHT as u64),
            "operations inside the bulkhead at once, each from its first attempt to its end (resilience4j's maxConcurrentCalls)",
        )
        .range(Range::AtLeast(1.0))
        .message("a bulkhead admitting {v} operations would fail every one: set max_in_flight >= 1 (resilience4j's default is 25)"),
        f(
            "max_wait",
            Ty::Duration,
            Value("\"0s\""),
            "how long an operation waits in a FIFO for a permit before it fails as failed_bulkhead; 0: it fails at once (resilience4j's maxWaitDuration)",
        )
        .range(Range::AtLeast(0.0))
        .message("a wait cannot be negative: set max_wait >= 0 (0 fails a call over the limit at once, resilience4j's default)"),
        scope(),
    ],
};

/// The client policy keys of a call graph's edge (`[[services]] calls`, and a strategy's
/// `hop_policy`).
macro_rules! hop_policy_fields {
    ($($extra:expr),* $(,)?) => {
        &[
            $($extra,)*
            f("preset", Ty::Str, Absent("none"), "start from a production library's defaults (`retrysim presets`): its max_attempts, timeout, deadline, retry_on, backoff, honor_dont_retry, budget and breaker; other keys override it"),
            f("max_attempts", U32, Value("1"), "attempts per call along this edge, the first included (1 = no retries)")
                .range(Range::AtLeast(1.0))
                .message("must be at least 1 (it counts the first attempt; 1 = no retries)"),
            f("timeout", Ty::Duration, Absent("none: wait for the answer however long it takes"), "per-attempt timeout of this edge")
                .range(POSITIVE)
                .message("must be > 0; leave it out to wait for every answer"),
            f("route_timeout", Ty::Duration, Absent("none; 15s with preset envoy"), "Envoy's route timeout: over all tries and backoffs of a call along this edge, from its first attempt; when it fires the try in flight is given up, no further try starts and the call fails 504 (each try's timeout is cut to what is left)")
                .range(POSITIVE)
                .message("must be > 0; leave it out for no route timeout"),
            f("deadline", Ty::Duration, Absent("none"), "deadline of a call along this edge, measured from its first attempt")
                .range(POSITIVE)
                .message("must be > 0; leave it out for no deadline"),
            f("retry_on", Ty::List(&Ty::RetryCondition), Absent("the defaults, as for a strategy"), "outcomes this edge retries"),
            f("backoff", Ty::Tagged(&BACKOFF), Value("{ kind = \"none\" }"), "this edge's delay before each retry"),
            f("honor_dont_retry", Ty::Bool, Value("false"), "do not retry an answer that says \"overloaded; don't retry\""),
            f("honor_overloaded", Ty::Bool, Value("false"), "do not retry a local overflow 503 marked x-envoy-overloaded (a breaker refusal of the edge below), as Envoy's router never does; true with preset envoy"),
            f("hedge", Ty::Table(&HEDGE), Absent("no hedging"), "hedged calls along this edge: up to max_attempts copies sent `delay` apart, the first success wins and the others are cancelled (gRPC A6 hedgingPolicy)")
                .rules("max_attempts = 1 on the edge (hedging replaces retrying); not preset envoy nor hedge_on_per_try_timeout; scope does not apply (one edge, one caller)"),
            f("budget", Ty::Tagged(&BUDGET), Absent("no budget"), "this edge's retry budget (the calling service as one client)"),
            f("breaker", Ty::Tagged(&BREAKER), Absent("no breaker"), "this edge's circuit breaker (the calling service as one client); a call it refuses fails 503 marked x-envoy-overloaded"),
            f("retry_other_replica", Ty::Bool, Value("false"), "a retry along this edge avoids the callee's replicas its call already tried (Envoy's previous_hosts retry predicate, per call along the edge); otherwise each attempt is a fresh pick"),
            f("host_selection_retry_max_attempts", U32, Int(1), "with retry_other_replica: picks made again when a pick was already tried, before the last pick is used anyway (Envoy's default 1)"),
        ]
    };
}

/// `[[services]]`: a service of the call graph, its server's keys and its calls.
pub static SERVICE: Table = Table {
    partial: false,
    fields: queue_server_fields!(
        f("name", Ty::Str, Required, "names the service in `calls` and in its columns (`METRIC@NAME`)")
            .rules("unique; only A-Z a-z 0-9 _ -"),
        f(
            "calls",
            Ty::List(&Ty::Table(&CALL)),
            Value("[]"),
            "the services it calls after its own work, edge by edge in this order, holding its worker"
        ),
    ),
};

/// One edge of the call graph: `calls = [{ service = "db", count = 2, ... }]`.
pub static CALL: Table = Table {
    partial: false,
    fields: hop_policy_fields!(
        f("service", Ty::Str, Required, "the service called")
            .rules("a service of [[services]], not one that calls this one (no cycle)"),
        f("count", U32, Value("1"), "calls per request along this edge (fan-out)")
            .range(Range::Between(1.0, 100_000.0)),
        f("parallel", Ty::Bool, Value("true"), "the `count` calls go out together (else one after another)"),
        f("optional", Ty::Bool, Value("false"), "a failed call does not fail the request (a partial result)"),
    ),
};

/// A strategy's `hop_policy`: the client policy of every edge.
pub static HOP_POLICY: Table = Table { partial: false, fields: hop_policy_fields!() };

pub static LAYER: Table = Table {
    partial: false,
    fields: &[
        f("name", Ty::Str, Value("\"gateway\""), "labels the layer in messages"),
        f(
            "max_attempts",
            U32,
            Value("3"),
            "attempts this layer makes per request it receives, the first included",
        )
        .range(Range::Between(1.0, 255.0))
        .message("must be between 1 and 255 (it counts the first attempt; 1 = no retries)"),
        f("timeout", Ty::Duration, Absent("none"), "per-attempt timeout of this layer").range(POSITIVE),
        f("route_timeout", Ty::Duration, Absent("none; 15s with preset envoy"), "Envoy's route timeout: over all tries and backoffs of a request this layer received; when it fires the try in flight is given up, no further try starts and the layer answers 504 (each try's timeout is cut to what is left)")
            .range(POSITIVE)
            .message("must be > 0; leave it out for no route timeout"),
        f("retry_on", Ty::List(&Ty::RetryCondition), Absent("the defaults"), "outcomes this layer retries"),
        f(
            "backoff",
            Ty::Tagged(&BACKOFF),
            Value("{ kind = \"none\" }"),
            "this layer's delay before each retry",
        ),
        f(
            "honor_dont_retry",
            Ty::Bool,
            Value("false"),
            "do not retry an answer that says \"overloaded; don't retry\"",
        ),
        f(
            "honor_overloaded",
            Ty::Bool,
            Value("false"),
            "do not retry a local overflow 503 marked x-envoy-overloaded (a breaker refusal of the layer below), as Envoy's router never does; true with preset envoy",
        ),
        f(
            "preset",
            Ty::Str,
            Absent("none"),
            "a production preset's retry keys as this layer's defaults (`envoy`: Envoy's router as a proxy layer); its Retry-After and deadline keys do not apply to a layer",
        )
        .rules("one of the presets (retrysim presets)"),
        f(
            "budget",
            Ty::Tagged(&BUDGET),
            Absent("no budget"),
            "this layer's own retry budget, shared by every request through it (one proxy; `scope` does not apply): a retry it refuses ends the layer's request with the failure it had",
        ),
        f(
            "breaker",
            Ty::Tagged(&BREAKER),
            Absent("no breaker"),
            "this layer's own circuit breaker: an open one answers the layer's caller a local 503 without sending the request down",
        ),
    ],
};

#[cfg(test)]
pub(crate) mod tests;
