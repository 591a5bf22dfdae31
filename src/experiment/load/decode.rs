//! Tree -> [`ExperimentSpec`], key by key, so that every error names its full dotted key.
//!
//! Why not the serde derives through `serde_path_to_error`: serde buffers internally tagged
//! enums (`kind = ...`, `dist = ...`) and untagged ones before it dispatches on them, and the
//! path is lost inside: an unknown `bse` in a backoff is reported at `strategies[0].backoff`,
//! a missing `server.faults[0].start` at `server`, a bad outage status as "data did not match
//! any variant". Decoding by hand also lets each table refuse unknown keys *before* reporting
//! missing ones, so a typo is reported as the typo and not as the key it hides. The derives
//! stay for other callers; `tests::decoder_agrees_with_serde` keeps both in step.

use super::super::ConfigError;
use super::super::duration::Duration;
use super::super::spec::{
    self, BackoffSpec, ClientSpec, DistSpec, ErrorSpec, ExperimentSpec, FaultSpec, FaultStatus, NamedFailure,
    NetworkSpec, OutputSpec, QueueServerSpec, RateStep, RetryOnItem, ServerSpec, StrategySpec, WorkloadSpec,
};
use super::paths::strategy_key;
use super::{closest, join, list};
use serde::Deserialize;
use toml::{Table, Value};

type R<T> = Result<T, ConfigError>;

const ROOT_KEYS: &[&str] = &[
    "name",
    "seed",
    "runs",
    "horizon",
    "workload",
    "network",
    "server",
    "client",
    "strategies",
    "output",
    "sweep",
];

/// Decodes a whole experiment tree (with `[sweep]` already taken out by the caller).
pub(super) fn experiment(root: &Table, origin: &str) -> R<ExperimentSpec> {
    let f = Fields { origin, path: String::new(), table: root, keys: ROOT_KEYS };
    f.check_unknown(&|_| None)?;
    Ok(ExperimentSpec {
        name: f.req("name")?,
        seed: f.or("seed", spec::default_seed)?,
        runs: f.or("runs", spec::default_runs)?,
        horizon: f.or("horizon", spec::default_horizon)?,
        workload: f.req_sub("workload", |o, p, v| tagged(o, p, v, &WORKLOAD), WORKLOAD.help())?,
        network: f.sub("network", network)?.unwrap_or_default(),
        server: f.req_sub("server", |o, p, v| tagged(o, p, v, &SERVER), SERVER.help())?,
        client: f.sub("client", client)?.unwrap_or_default(),
        strategies: strategies(&f)?,
        output: f.sub("output", output)?.unwrap_or_default(),
        sweep: None,
    })
}

/// One table being decoded: `keys` are all the keys it may have.
struct Fields<'a> {
    origin: &'a str,
    /// Dotted key of the table itself, empty at the top level.
    path: String,
    table: &'a Table,
    keys: &'static [&'static str],
}

impl<'a> Fields<'a> {
    /// `value` at `path` as a plain table with exactly `keys`, unknown keys refused.
    fn open(origin: &'a str, path: String, value: &'a Value, keys: &'static [&'static str]) -> R<Self> {
        let f = Fields { origin, path: path.clone(), table: as_table(origin, &path, value)?, keys };
        f.check_unknown(&|_| None)?;
        Ok(f)
    }

    /// Refuses the first key not in `keys`. `note` may explain a key that is valid elsewhere
    /// (another kind); otherwise the closest valid key is suggested, or all are listed.
    fn check_unknown(&self, note: &dyn Fn(&str) -> Option<String>) -> R<()> {
        let Some(key) = self.table.keys().find(|k| !self.keys.contains(&k.as_str())) else {
            return Ok(());
        };
        let mut help = note(key);
        let suggestion = match help {
            Some(_) => None,
            None => closest(key, self.keys.iter().copied()).map(|s| join(&self.path, s)),
        };
        if help.is_none() && suggestion.is_none() {
            help = Some(format!("valid keys {}: {}", self.place(), list(self.keys.iter().copied())));
        }
        Err(ConfigError::UnknownKey { origin: self.origin.to_owned(), key: self.key(key), suggestion, help })
    }

    fn place(&self) -> String {
        if self.path.is_empty() { "at the top level".to_owned() } else { format!("in `{}`", self.path) }
    }

    fn key(&self, key: &str) -> String {
        join(&self.path, key)
    }

    fn get(&self, key: &str) -> Option<&'a Value> {
        debug_assert!(self.keys.contains(&key), "decoder reads `{key}`, missing from its key list");
        self.table.get(key)
    }

    fn opt<T: Leaf>(&self, key: &str) -> R<Option<T>> {
        self.get(key).map(|v| leaf(self.origin, self.key(key), v)).transpose()
    }

    fn req<T: Leaf>(&self, key: &str) -> R<T> {
        self.opt(key)?.ok_or_else(|| missing(self.origin, self.key(key), None))
    }

    fn or<T: Leaf>(&self, key: &str, default: fn() -> T) -> R<T> {
        Ok(self.opt(key)?.unwrap_or_else(default))
    }

    /// A nested table (or any value) decoded by `decode`.
    fn sub<T>(&self, key: &str, decode: impl Fn(&str, String, &Value) -> R<T>) -> R<Option<T>> {
        self.get(key).map(|v| decode(self.origin, self.key(key), v)).transpose()
    }

    fn req_sub<T>(&self, key: &str, decode: impl Fn(&str, String, &Value) -> R<T>, help: String) -> R<T> {
        self.sub(key, decode)?.ok_or_else(|| missing(self.origin, self.key(key), Some(help)))
    }

    /// A list whose items are named `key[i]`.
    fn list<T>(&self, key: &str, decode: impl Fn(&str, String, &Value) -> R<T>) -> R<Option<Vec<T>>> {
        let Some(items) = self.array(key)? else {
            return Ok(None);
        };
        let path = self.key(key);
        let decoded = items.iter().enumerate().map(|(i, v)| decode(self.origin, format!("{path}[{i}]"), v));
        decoded.collect::<R<Vec<T>>>().map(Some)
    }

    fn array(&self, key: &str) -> R<Option<&'a Vec<Value>>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Array(items)) => Ok(Some(items)),
            Some(other) => {
                let reason = format!(
                    "expected a list such as [...] or [[{}]] tables, found a {}",
                    self.key(key),
                    other.type_str()
                );
                Err(invalid(self.origin, self.key(key), reason))
            }
        }
    }
}

fn as_table<'a>(origin: &str, path: &str, value: &'a Value) -> R<&'a Table> {
    value.as_table().ok_or_else(|| {
        let reason = format!("expected a table such as {{ key = value, ... }}, found a {}", value.type_str());
        invalid(origin, path.to_owned(), reason)
    })
}

fn invalid(origin: &str, key: String, reason: String) -> ConfigError {
    ConfigError::InvalidValue { origin: origin.to_owned(), key, reason }
}

fn missing(origin: &str, key: String, help: Option<String>) -> ConfigError {
    ConfigError::MissingKey { origin: origin.to_owned(), key, help }
}

// ---------------------------------------------------------------------------------------------
// Tagged tables: `kind = "..."` (or `dist = "..."`) picks the keys that the rest may have.

/// One kind of a tagged table: its keys (the tag included) and how to decode them.
struct Variant<T> {
    kind: &'static str,
    keys: &'static [&'static str],
    decode: fn(&Fields<'_>) -> R<T>,
}

struct Tagged<T: 'static> {
    tag: &'static str,
    /// How messages call the tag's values: "workload kind", "distribution".
    what: &'static str,
    /// The kind of a table without the tag, if it may be left out.
    default: Option<&'static str>,
    variants: &'static [Variant<T>],
}

impl<T> Tagged<T> {
    fn kinds(&self) -> String {
        list(self.variants.iter().map(|v| v.kind))
    }

    fn help(&self) -> String {
        format!("add it with {} = one of: {}", self.tag, self.kinds())
    }
}

fn tagged<T>(origin: &str, path: String, value: &Value, t: &Tagged<T>) -> R<T> {
    let table = as_table(origin, &path, value)?;
    let kind = tag_value(origin, &path, table, t)?;
    let variant = t.variants.iter().find(|v| v.kind == kind).ok_or_else(|| {
        let hint = closest(kind, t.variants.iter().map(|v| v.kind))
            .map(|c| format!(" (did you mean \"{c}\"?)"))
            .unwrap_or_default();
        let reason = format!("unknown {} \"{kind}\"{hint}; valid {}s: {}", t.what, t.what, t.kinds());
        invalid(origin, join(&path, t.tag), reason)
    })?;
    let f = Fields { origin, path, table, keys: variant.keys };
    f.check_unknown(&|key| other_kinds(t, variant.kind, key))?;
    (variant.decode)(&f)
}

fn tag_value<'a, T>(origin: &str, path: &str, table: &'a Table, t: &Tagged<T>) -> R<&'a str> {
    match table.get(t.tag) {
        Some(Value::String(kind)) => Ok(kind),
        None => t.default.ok_or_else(|| {
            missing(origin, join(path, t.tag), Some(format!("set it to one of: {}", t.kinds())))
        }),
        Some(other) => {
            let reason = format!(
                "expected a {} in quotes, one of: {}; found a {}",
                t.what,
                t.kinds(),
                other.type_str()
            );
            Err(invalid(origin, join(path, t.tag), reason))
        }
    }
}

/// "`rate` belongs to workload kind open, not closed" when `key` is valid for other kinds.
fn other_kinds<T>(t: &Tagged<T>, current: &str, key: &str) -> Option<String> {
    let owners: Vec<&str> = t.variants.iter().filter(|v| v.keys.contains(&key)).map(|v| v.kind).collect();
    (!owners.is_empty())
        .then(|| format!("`{key}` belongs to {} {}, not to {} = \"{current}\"", t.what, list(owners), t.tag))
}

// ---------------------------------------------------------------------------------------------
// Leaves: scalars with messages that say what to write.

trait Leaf: Sized {
    /// The value, or what is wrong with it.
    fn leaf(v: &Value) -> Result<Self, String>;
}

fn leaf<T: Leaf>(origin: &str, key: String, v: &Value) -> R<T> {
    T::leaf(v).map_err(|reason| invalid(origin, key, reason))
}

macro_rules! whole_number {
    ($($t:ty),*) => {$(
        impl Leaf for $t {
            fn leaf(v: &Value) -> Result<Self, String> {
                match v {
                    Value::Integer(i) => <$t>::try_from(*i).map_err(|_| {
                        format!("{i} is out of range: expected a whole number from 0 to {}", <$t>::MAX)
                    }),
                    Value::Float(x) => Err(format!("expected a whole number, found {x}: write it without a decimal point")),
                    other => Err(format!("expected a whole number, found a {}", other.type_str())),
                }
            }
        }
    )*};
}
whole_number!(u16, u32, u64);

impl Leaf for f64 {
    fn leaf(v: &Value) -> Result<Self, String> {
        match v {
            Value::Float(x) => Ok(*x),
            // Exact for every integer a human writes; TOML integers are i64.
            Value::Integer(i) => Ok(*i as f64),
            other => Err(format!("expected a number, found a {}", other.type_str())),
        }
    }
}

impl Leaf for bool {
    fn leaf(v: &Value) -> Result<Self, String> {
        v.as_bool().ok_or_else(|| format!("expected true or false, found a {}", v.type_str()))
    }
}

impl Leaf for String {
    fn leaf(v: &Value) -> Result<Self, String> {
        v.as_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("expected a string in quotes, found a {}", v.type_str()))
    }
}

impl Leaf for Duration {
    /// Reuses the serde impl: it holds the duration syntax and its messages.
    fn leaf(v: &Value) -> Result<Self, String> {
        Duration::deserialize(v.clone()).map_err(|e| e.message().to_owned())
    }
}

impl Leaf for NamedFailure {
    fn leaf(v: &Value) -> Result<Self, String> {
        const NAMES: [&str; 2] = ["timeout", "connection-error"];
        match v.as_str() {
            Some("timeout") => Ok(NamedFailure::Timeout),
            Some("connection-error") => Ok(NamedFailure::ConnectionError),
            Some(other) => {
                let hint =
                    closest(other, NAMES).map(|c| format!(" (did you mean \"{c}\"?)")).unwrap_or_default();
                Err(format!(
                    "unknown failure \"{other}\"{hint}: expected a status code such as 503, \"timeout\" or \"connection-error\""
                ))
            }
            None => {
                Err(format!("expected a status code such as 503, or \"timeout\", found a {}", v.type_str()))
            }
        }
    }
}

/// A status code or a named failure: `503`, `"timeout"`, `"connection-error"`.
fn status_or_failure(v: &Value) -> Result<Result<u16, NamedFailure>, String> {
    match v {
        Value::Integer(_) => u16::leaf(v).map(Ok),
        _ => NamedFailure::leaf(v).map(Err),
    }
}

impl Leaf for FaultStatus {
    fn leaf(v: &Value) -> Result<Self, String> {
        Ok(status_or_failure(v)?.map_or_else(FaultStatus::Named, FaultStatus::Status))
    }
}

impl Leaf for RetryOnItem {
    fn leaf(v: &Value) -> Result<Self, String> {
        Ok(status_or_failure(v)?.map_or_else(RetryOnItem::Named, RetryOnItem::Status))
    }
}

// ---------------------------------------------------------------------------------------------
// The format, table by table (DESIGN §3, §4, §7).

static WORKLOAD: Tagged<WorkloadSpec> = Tagged {
    tag: "kind",
    what: "workload kind",
    default: None,
    variants: &[
        Variant {
            kind: "closed",
            keys: &["kind", "clients", "ops_per_client", "think_time", "ramp"],
            decode: closed,
        },
        Variant { kind: "open", keys: &["kind", "rate", "duration", "schedule", "clients"], decode: open },
    ],
};

fn closed(f: &Fields<'_>) -> R<WorkloadSpec> {
    Ok(WorkloadSpec::Closed {
        clients: f.or("clients", spec::one)?,
        ops_per_client: f.or("ops_per_client", spec::one)?,
        think_time: f.or("think_time", Duration::default)?,
        ramp: f.or("ramp", Duration::default)?,
    })
}

fn open(f: &Fields<'_>) -> R<WorkloadSpec> {
    Ok(WorkloadSpec::Open {
        rate: f.req("rate")?,
        duration: f.req("duration")?,
        schedule: f.list("schedule", rate_step)?.unwrap_or_default(),
        clients: f.or("clients", spec::one)?,
    })
}

fn rate_step(origin: &str, path: String, v: &Value) -> R<RateStep> {
    let f = Fields::open(origin, path, v, &["at", "rate"])?;
    Ok(RateStep { at: f.req("at")?, rate: f.req("rate")? })
}

static DIST: Tagged<DistSpec> = Tagged {
    tag: "dist",
    what: "distribution",
    default: None,
    variants: &[
        Variant {
            kind: "constant",
            keys: &["dist", "value"],
            decode: |f| Ok(DistSpec::Constant { value: f.req("value")? }),
        },
        Variant {
            kind: "uniform",
            keys: &["dist", "low", "high"],
            decode: |f| Ok(DistSpec::Uniform { low: f.req("low")?, high: f.req("high")? }),
        },
        Variant {
            kind: "normal",
            keys: &["dist", "mean", "sd"],
            decode: |f| Ok(DistSpec::Normal { mean: f.req("mean")?, sd: f.req("sd")? }),
        },
        Variant {
            kind: "exponential",
            keys: &["dist", "mean"],
            decode: |f| Ok(DistSpec::Exponential { mean: f.req("mean")? }),
        },
        Variant {
            kind: "lognormal",
            keys: &["dist", "median", "sigma"],
            decode: |f| Ok(DistSpec::Lognormal { median: f.req("median")?, sigma: f.req("sigma")? }),
        },
    ],
};

fn dist(origin: &str, path: String, v: &Value) -> R<DistSpec> {
    tagged(origin, path, v, &DIST)
}

fn output(origin: &str, path: String, v: &Value) -> R<OutputSpec> {
    let f = Fields::open(origin, path, v, &["bucket", "timeseries"])?;
    Ok(OutputSpec {
        bucket: f.or("bucket", spec::default_bucket)?,
        timeseries: f.or("timeseries", spec::default_true)?,
    })
}

fn network(origin: &str, path: String, v: &Value) -> R<NetworkSpec> {
    let f = Fields::open(origin, path, v, &["latency", "request_loss", "response_loss"])?;
    Ok(NetworkSpec {
        latency: f.sub("latency", dist)?.unwrap_or_default(),
        request_loss: f.or("request_loss", || 0.0)?,
        response_loss: f.or("response_loss", || 0.0)?,
    })
}

static SERVER: Tagged<ServerSpec> = Tagged {
    tag: "kind",
    what: "server kind",
    default: Some("queue"),
    variants: &[
        Variant {
            kind: "queue",
            keys: &[
                "kind",
                "concurrency",
                "service_time",
                "queue",
                "reject_status",
                "errors",
                "drop_expired",
                "faults",
            ],
            decode: queue_server,
        },
        Variant { kind: "occ", keys: &["kind"], decode: |_| Ok(ServerSpec::Occ {}) },
    ],
};

fn queue_server(f: &Fields<'_>) -> R<ServerSpec> {
    Ok(ServerSpec::Queue(QueueServerSpec {
        concurrency: f.req("concurrency")?,
        service_time: f.req_sub("service_time", dist, DIST.help())?,
        queue: f.opt("queue")?,
        reject_status: f.or("reject_status", spec::default_reject_status)?,
        errors: f.list("errors", error_spec)?.unwrap_or_default(),
        drop_expired: f.or("drop_expired", bool::default)?,
        faults: f.list("faults", |o, p, v| tagged(o, p, v, &FAULT))?.unwrap_or_default(),
    }))
}

fn error_spec(origin: &str, path: String, v: &Value) -> R<ErrorSpec> {
    let f = Fields::open(origin, path, v, &["status", "probability", "after_effect"])?;
    Ok(ErrorSpec {
        status: f.req("status")?,
        probability: f.req("probability")?,
        after_effect: f.or("after_effect", bool::default)?,
    })
}

static FAULT: Tagged<FaultSpec> = Tagged {
    tag: "kind",
    what: "fault kind",
    default: None,
    variants: &[
        Variant {
            kind: "outage",
            keys: &["kind", "start", "duration", "status"],
            decode: |f| {
                Ok(FaultSpec::Outage {
                    start: f.req("start")?,
                    duration: f.req("duration")?,
                    status: f.or("status", spec::default_outage_status)?,
                })
            },
        },
        Variant {
            kind: "capacity",
            keys: &["kind", "start", "duration", "factor"],
            decode: |f| {
                Ok(FaultSpec::Capacity {
                    start: f.req("start")?,
                    duration: f.req("duration")?,
                    factor: f.req("factor")?,
                })
            },
        },
        Variant {
            kind: "slowdown",
            keys: &["kind", "start", "duration", "factor"],
            decode: |f| {
                Ok(FaultSpec::Slowdown {
                    start: f.req("start")?,
                    duration: f.req("duration")?,
                    factor: f.req("factor")?,
                })
            },
        },
        Variant {
            kind: "errors",
            keys: &["kind", "start", "duration", "probability", "status", "after_effect"],
            decode: |f| {
                Ok(FaultSpec::Errors {
                    start: f.req("start")?,
                    duration: f.req("duration")?,
                    probability: f.req("probability")?,
                    status: f.or("status", spec::default_status_503)?,
                    after_effect: f.or("after_effect", bool::default)?,
                })
            },
        },
    ],
};

fn client(origin: &str, path: String, v: &Value) -> R<ClientSpec> {
    let f = Fields::open(origin, path, v, &["max_attempts", "timeout", "deadline", "retry_on"])?;
    Ok(ClientSpec {
        max_attempts: f.opt("max_attempts")?,
        timeout: f.opt("timeout")?,
        deadline: f.opt("deadline")?,
        retry_on: f.list("retry_on", leaf)?,
    })
}

/// `[[strategies]]`, each named in messages by its name when that is unambiguous.
fn strategies(f: &Fields<'_>) -> R<Vec<StrategySpec>> {
    let Some(items) = f.array("strategies")? else {
        return Ok(Vec::new());
    };
    let names: Vec<Option<&str>> = items.iter().map(|s| s.get("name").and_then(Value::as_str)).collect();
    items.iter().enumerate().map(|(i, v)| strategy(f.origin, strategy_key(&names, i), v)).collect()
}

fn strategy(origin: &str, path: String, v: &Value) -> R<StrategySpec> {
    const KEYS: &[&str] = &["name", "backoff", "max_attempts", "timeout", "deadline", "retry_on"];
    let f = Fields::open(origin, path, v, KEYS)?;
    Ok(StrategySpec {
        name: f.req("name")?,
        backoff: f.req_sub("backoff", |o, p, v| tagged(o, p, v, &BACKOFF), BACKOFF.help())?,
        max_attempts: f.opt("max_attempts")?,
        timeout: f.opt("timeout")?,
        deadline: f.opt("deadline")?,
        retry_on: f.list("retry_on", leaf)?,
    })
}

const GROWING: &[&str] = &["kind", "base", "cap", "multiplier"];

static BACKOFF: Tagged<BackoffSpec> = Tagged {
    tag: "kind",
    what: "backoff kind",
    default: None,
    variants: &[
        Variant { kind: "none", keys: &["kind"], decode: |_| Ok(BackoffSpec::None {}) },
        Variant {
            kind: "constant",
            keys: &["kind", "base"],
            decode: |f| Ok(BackoffSpec::Constant { base: f.req("base")? }),
        },
        Variant {
            kind: "linear",
            keys: &["kind", "base", "cap"],
            decode: |f| Ok(BackoffSpec::Linear { base: f.req("base")?, cap: f.opt("cap")? }),
        },
        Variant {
            kind: "exponential",
            keys: GROWING,
            decode: |f| {
                Ok(BackoffSpec::Exponential {
                    base: f.req("base")?,
                    cap: f.opt("cap")?,
                    multiplier: f.or("multiplier", spec::two)?,
                })
            },
        },
        Variant {
            kind: "full-jitter",
            keys: GROWING,
            decode: |f| {
                Ok(BackoffSpec::FullJitter {
                    base: f.req("base")?,
                    cap: f.opt("cap")?,
                    multiplier: f.or("multiplier", spec::two)?,
                })
            },
        },
        Variant {
            kind: "equal-jitter",
            keys: GROWING,
            decode: |f| {
                Ok(BackoffSpec::EqualJitter {
                    base: f.req("base")?,
                    cap: f.opt("cap")?,
                    multiplier: f.or("multiplier", spec::two)?,
                })
            },
        },
        Variant {
            kind: "decorrelated-jitter",
            keys: &["kind", "base", "cap"],
            decode: |f| Ok(BackoffSpec::DecorrelatedJitter { base: f.req("base")?, cap: f.opt("cap")? }),
        },
        Variant {
            kind: "decorrelated-jitter-v2",
            keys: &["kind", "base", "cap"],
            decode: |f| Ok(BackoffSpec::DecorrelatedJitterV2 { base: f.req("base")?, cap: f.opt("cap")? }),
        },
        Variant {
            kind: "additive-jitter",
            keys: &["kind", "base", "cap", "multiplier", "jitter"],
            decode: |f| {
                Ok(BackoffSpec::AdditiveJitter {
                    base: f.req("base")?,
                    cap: f.opt("cap")?,
                    multiplier: f.or("multiplier", spec::two)?,
                    jitter: f.req("jitter")?,
                })
            },
        },
        Variant {
            kind: "proportional-jitter",
            keys: &["kind", "base", "cap", "multiplier", "p"],
            decode: |f| {
                Ok(BackoffSpec::ProportionalJitter {
                    base: f.req("base")?,
                    cap: f.opt("cap")?,
                    multiplier: f.or("multiplier", spec::two)?,
                    p: f.or("p", spec::default_proportion)?,
                })
            },
        },
    ],
};
