//! Envoy: a route's `retry_policy` (with the route's `timeout`) and the cluster's
//! `circuit_breakers`, read from and written to Envoy's YAML.
//!
//! | Envoy | retrysim | source (docs/retry-policies.md) |
//! |---|---|---|
//! | `num_retries` (default 1) | `max_attempts = num_retries + 1` | §3f |
//! | `retry_on`, `retriable_status_codes` | `retry_on` (each condition's outcomes, `conditions`) | §3g |
//! | `per_try_timeout` | `timeout` | §3f |
//! | route `timeout` (default 15 s, `0s` disables) | `deadline` | §3f |
//! | `retry_back_off` (25 ms, max 10 x base) | `backoff = full-jitter`, multiplier 2 | §3f |
//! | `rate_limited_retry_back_off` (Retry-After, SECONDS; max 300 s) | `honor_retry_after`, `retry_after_mode = "envoy"` | §3f |
//! | `retry_host_predicate` previous_hosts, `host_selection_retry_max_attempts` (default 1) | `retry_other_replica`, `host_selection_retry_max_attempts` | §3g |
//! | `circuit_breakers` `retry_budget` (20 %, 3) or `max_retries` (default 3) | `budget = concurrency` | §3e |
//!
//! What retrysim cannot simulate (retry priorities, other host predicates, header matchers,
//! per-try idle timeouts, hedging on per-try timeout, a rate-limited back-off other than
//! Retry-After in seconds with the 300 s maximum) is refused, naming the field.

use super::keys::{Keys, dropped_comment};
use super::strategy::{
    Failure, Strategy, duration_value, envoy_group_failures, retry_on_value, server_errors,
};
use super::yaml::{self, bad, documents, field, map, mapping, string};
use super::{Exported, Format, Imported, InteropError};
use crate::engine::Span;
use serde_yaml_ng::{Mapping, Value};
use std::collections::BTreeSet;
use toml::Table;

/// The Envoy format.
pub struct Envoy;

const KIND: &str = "envoy";

impl Format for Envoy {
    fn kind(&self) -> &'static str {
        KIND
    }
    fn extension(&self) -> &'static str {
        "envoy.yaml"
    }
    fn import(&self, text: &str, name: &str) -> Result<Imported, InteropError> {
        import(text, name)
    }
    fn export(&self, strategy: &Table, lossy: bool) -> Result<Exported, InteropError> {
        export(strategy, lossy)
    }
}

/// Envoy's default back-off base (reference §3f: 25 ms).
pub const DEFAULT_BASE: Span = Span::from_millis(25);
/// Envoy's default `max_interval` is this many times the base (reference §3f: 250 ms).
pub const DEFAULT_CAP_FACTOR: u64 = 10;
/// `rate_limited_retry_back_off.max_interval` by default, and the only value retrysim's
/// `envoy` Retry-After mode has (reference §3f: 300 s).
pub const RATE_LIMITED_MAX_INTERVAL: Span = Span::from_secs(300);
/// A route's `timeout` when the route leaves it out (reference §3f: 15 s).
pub const DEFAULT_ROUTE_TIMEOUT: Span = Span::from_secs(15);
/// The `max_retries` circuit breaker's default (reference §3e: 3 concurrent retries).
pub const DEFAULT_MAX_RETRIES: i64 = 3;
/// `retry_budget`'s defaults (reference §3e: 20 %, 3).
pub const DEFAULT_BUDGET_PERCENT: f64 = 20.0;
pub const DEFAULT_MIN_RETRY_CONCURRENCY: i64 = 3;
/// `max_retries` at the largest value its uint32 holds: a limit that never binds, written
/// for a strategy without a budget.
pub const UNLIMITED_RETRIES: i64 = u32::MAX as i64;
/// The host predicate `retry_other_replica` stands for.
const PREVIOUS_HOSTS: &str = "envoy.retry_host_predicates.previous_hosts";
const PREVIOUS_HOSTS_TYPE: &str =
    "type.googleapis.com/envoy.extensions.retry.host.previous_hosts.v3.PreviousHostsPredicate";

/// The fields of `RetryPolicy` that retrysim reads (anything else is reported as unknown).
const POLICY_FIELDS: &[&str] = &[
    "retry_on",
    "num_retries",
    "max_retries",
    "per_try_timeout",
    "per_try_idle_timeout",
    "retry_priority",
    "retry_host_predicate",
    "retry_options_predicates",
    "host_selection_retry_max_attempts",
    "retriable_status_codes",
    "retry_back_off",
    "rate_limited_retry_back_off",
    "retriable_headers",
    "retriable_request_headers",
];

/// A route action's fields that say it is one (so its `timeout` default applies).
const ROUTE_ACTION_FIELDS: &[&str] =
    &["cluster", "weighted_clusters", "cluster_header", "cluster_specifier_plugin"];

fn import(text: &str, name: &str) -> Result<Imported, InteropError> {
    let docs = documents(KIND, text)?;
    let mut notes = Vec::new();
    let mut policies = Vec::new();
    let mut breakers = Vec::new();
    let mut hedges = Vec::new();
    for (i, doc) in docs.iter().enumerate() {
        let at = if docs.len() == 1 { String::new() } else { format!("document{}", i + 1) };
        find(doc, &at, "retry_policy", &mut policies);
        find(doc, &at, "circuit_breakers", &mut breakers);
        find(doc, &at, "hedge_policy", &mut hedges);
    }
    let (path, policy, parent) = match one(policies, "retry_policy")? {
        Some(found) => found,
        None => {
            let bare = docs.iter().find(|d| {
                d.as_mapping().is_some_and(|m| {
                    m.keys()
                        .filter_map(Value::as_str)
                        .any(|k| POLICY_FIELDS.contains(&k) && k != "max_retries")
                })
            });
            let Some(bare) = bare else {
                return Err(bad(
                    KIND,
                    "retry_policy",
                    "the file has no retry_policy",
                    "give a route (or a virtual host) with its retry_policy, or the policy's own fields at the top level",
                ));
            };
            notes.push("the file is a bare RetryPolicy: its route is not in the file".to_string());
            (String::new(), bare, None)
        }
    };
    let policy = mapping(KIND, &path, policy)?;
    let mut strategy = Table::new();
    strategy.insert("name".into(), toml::Value::String(name.to_string()));
    read_policy(policy, &path, &mut strategy, &mut notes)?;
    read_route(parent, &path, &mut strategy, &mut notes)?;
    for (at, hedge, _) in &hedges {
        let on_timeout = hedge.as_mapping().and_then(|h| field(h, "hedge_on_per_try_timeout"));
        if on_timeout.and_then(Value::as_bool) == Some(true) {
            return Err(unrepresentable(
                &format!("{at}.hedge_on_per_try_timeout"),
                "a hedge on per-try timeout keeps the timed-out attempt running; retrysim's hedge sends copies at fixed delays (hedge.delay) instead",
            ));
        }
    }
    match one(breakers, "circuit_breakers")? {
        Some((at, breakers, _)) => {
            read_breakers(mapping(KIND, &at, breakers)?, &at, &mut strategy, &mut notes)?
        }
        None => {
            strategy.insert("budget".into(), concurrency(0.0, DEFAULT_MAX_RETRIES));
            notes.push(format!(
                "default applied: the cluster's circuit_breakers are not in the file: max_retries = {DEFAULT_MAX_RETRIES} concurrent retries, budget = concurrency 0 % / {DEFAULT_MAX_RETRIES} (docs/retry-policies.md §3e)"
            ));
        }
    }
    notes.push("the budget is per Envoy: scope \"client\" is a sidecar per client; for one proxy in front of every client set budget.scope = \"shared\"".to_string());
    Ok(Imported { strategy, server: Table::new(), notes })
}

/// Every mapping under a key `name` in `v`, with its path and the mapping that holds it.
fn find<'a>(v: &'a Value, path: &str, name: &str, out: &mut Vec<(String, &'a Value, Option<&'a Mapping>)>) {
    match v {
        Value::Mapping(m) => {
            for (k, child) in m {
                let Some(k) = k.as_str() else { continue };
                let at = join(path, k);
                if k == name {
                    out.push((at, child, Some(m)));
                } else {
                    find(child, &at, name, out);
                }
            }
        }
        Value::Sequence(items) => {
            for (i, item) in items.iter().enumerate() {
                find(item, &format!("{path}[{i}]"), name, out);
            }
        }
        _ => {}
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() { key.to_string() } else { format!("{path}.{key}") }
}

/// The one value found (several equal ones count as one); several different ones cannot be
/// one strategy.
#[allow(clippy::type_complexity)]
fn one<'a>(
    found: Vec<(String, &'a Value, Option<&'a Mapping>)>,
    what: &str,
) -> Result<Option<(String, &'a Value, Option<&'a Mapping>)>, InteropError> {
    let Some(first) = found.first() else { return Ok(None) };
    if let Some(other) = found.iter().find(|f| f.1 != first.1) {
        return Err(bad(
            KIND,
            &other.0,
            format!("differs from {} at {}: a strategy is one {what}", what, first.0),
            format!("keep only the {what} of the route to simulate"),
        ));
    }
    Ok(found.into_iter().next())
}

fn unrepresentable(field: &str, why: &str) -> InteropError {
    InteropError::Unrepresentable { kind: KIND, field: field.to_string(), why: why.to_string() }
}

/// The fields of a `RetryPolicy` into `strategy`.
fn read_policy(
    p: &Mapping,
    path: &str,
    strategy: &mut Table,
    notes: &mut Vec<String>,
) -> Result<(), InteropError> {
    let at = |k: &str| join(path, k);
    yaml::unknown_fields(p, POLICY_FIELDS, if path.is_empty() { "retry_policy" } else { path }, notes);
    for refused in
        ["per_try_idle_timeout", "retry_priority", "retry_options_predicates", "retriable_request_headers"]
    {
        if field(p, refused).is_some_and(|v| !is_empty(v)) {
            let why = match refused {
                "per_try_idle_timeout" => {
                    "retrysim's attempts have no idle timeout, only a timeout for the whole attempt"
                }
                "retry_priority" => "retrysim's replicas have no priorities or localities to prefer",
                "retriable_request_headers" => "retrysim's requests carry no headers to match",
                _ => "retrysim has no retry options predicates",
            };
            return Err(unrepresentable(&at(refused), why));
        }
    }
    let retries = match field(p, "num_retries").or_else(|| field(p, "max_retries")) {
        Some(v) => yaml::integer(KIND, &at("num_retries"), v, 0, i64::from(u32::MAX) - 1)?,
        None => {
            notes.push("default applied: num_retries = 1 (docs/retry-policies.md §3f)".to_string());
            1
        }
    };
    let codes = match field(p, "retriable_status_codes") {
        None => Vec::new(),
        Some(Value::Sequence(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| {
                yaml::integer(KIND, &format!("{}[{i}]", at("retriable_status_codes")), v, 100, 599)
                    .map(|c| c as u16)
            })
            .collect::<Result<Vec<u16>, _>>()?,
        Some(_) => {
            return Err(bad(
                KIND,
                &at("retriable_status_codes"),
                "is not a list",
                "write a list of statuses, e.g. [503, 429]",
            ));
        }
    };
    let retry_on = match field(p, "retry_on") {
        None => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => {
            return Err(bad(
                KIND,
                &at("retry_on"),
                format!("{} is not a string", yaml::show(v)),
                "write the conditions comma-separated, e.g. \"5xx,reset\"",
            ));
        }
    };
    let headers = field(p, "retriable_headers").is_some_and(|v| !is_empty(v));
    let list: Vec<&str> = retry_on.split(',').map(str::trim).filter(|c| !c.is_empty()).collect();
    if headers && !list.contains(&"retriable-headers") {
        notes.push(format!("{} is ignored: retry_on has no retriable-headers", at("retriable_headers")));
    }
    let set = conditions(&at("retry_on"), &list, &codes, notes)?;
    if set.is_empty() {
        notes.push(format!(
            "{}: no condition that retrysim's outcomes can meet: nothing is retried, max_attempts = 1",
            at("retry_on")
        ));
        strategy.insert("max_attempts".into(), toml::Value::Integer(1));
    } else {
        strategy.insert("max_attempts".into(), toml::Value::Integer(retries + 1));
        strategy.insert("retry_on".into(), retry_on_value(&set));
    }
    match field(p, "per_try_timeout") {
        Some(v) => {
            let t = whole_ms(&at("per_try_timeout"), yaml::proto_duration(KIND, &at("per_try_timeout"), v)?)?;
            if t.is_zero() {
                notes.push(format!("{} = 0s: no per-try timeout", at("per_try_timeout")));
            } else {
                strategy.insert("timeout".into(), duration_value(t));
            }
        }
        None => notes.push(
            "no per_try_timeout: each attempt may take up to the route timeout (docs/retry-policies.md §3f)"
                .to_string(),
        ),
    }
    read_backoff(field(p, "retry_back_off"), &at("retry_back_off"), strategy, notes)?;
    read_rate_limited(
        field(p, "rate_limited_retry_back_off"),
        &at("rate_limited_retry_back_off"),
        strategy,
        notes,
    )?;
    read_hosts(p, path, strategy, notes)
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Sequence(s) => s.is_empty(),
        Value::Mapping(m) => m.is_empty(),
        _ => false,
    }
}

/// A duration Envoy reads in whole milliseconds (back-off intervals, timeouts).
fn whole_ms(path: &str, span: Span) -> Result<Span, InteropError> {
    if !span.as_ns().is_multiple_of(1_000_000) {
        return Err(bad(
            KIND,
            path,
            format!("\"{}\" is not a whole number of milliseconds", yaml::proto_duration_text(span)),
            "Envoy reads it in milliseconds: round it to a whole ms",
        ));
    }
    Ok(span)
}

/// What each condition retries in retrysim's outcomes, for the notes.
const CONDITION_MEANINGS: &[(&str, &str)] = &[
    ("5xx", "every 5xx (500..599), a timeout and a failed connection"),
    ("gateway-error", "502, 503, 504, a timeout and a failed connection"),
    ("reset", "a timeout and a failed connection"),
    ("connect-failure", "a failed connection"),
    ("reset-before-request", "a failed connection"),
    ("retriable-4xx", "409"),
    ("cancelled", "499 (gRPC CANCELLED)"),
    ("deadline-exceeded", "504 (gRPC DEADLINE_EXCEEDED)"),
    ("internal", "500 (gRPC INTERNAL)"),
    ("resource-exhausted", "429 (gRPC RESOURCE_EXHAUSTED)"),
    ("unavailable", "503 (gRPC UNAVAILABLE)"),
];

/// The retried outcomes of Envoy's `retry_on` conditions (and, with `retriable-status-codes`,
/// of `codes`), reference §3g. gRPC conditions stand for the HTTP status of their code
/// (google.rpc.Code's HTTP mapping), as the presets' statuses do.
pub(super) fn conditions(
    path: &str,
    list: &[&str],
    codes: &[u16],
    notes: &mut Vec<String>,
) -> Result<BTreeSet<Failure>, InteropError> {
    use Failure::Status;
    let mut set = BTreeSet::new();
    for c in list {
        if let Some(meaning) = CONDITION_MEANINGS.iter().find(|(name, _)| name == c).map(|(_, m)| m) {
            notes.push(format!("{path}: {c} retries {meaning} (docs/retry-policies.md §3g)"));
        }
        if let Some(failures) = envoy_group_failures(c) {
            set.extend(failures);
        }
        match *c {
            "5xx" | "gateway-error" | "reset" | "connect-failure" | "retriable-4xx" => {}
            "reset-before-request" => set.extend(envoy_group_failures("connect-failure").unwrap_or_default()),
            "retriable-status-codes" => {
                for &code in codes {
                    if code >= 400 {
                        set.insert(Status(code));
                    } else {
                        notes
                            .push(format!("{path}: status {code} is never a failure in retrysim: no effect"));
                    }
                }
            }
            "refused-stream" | "http3-post-connect-failure" => notes.push(format!(
                "{path}: {c}: retrysim has no such failure (HTTP/2 REFUSED_STREAM, HTTP/3): no effect"
            )),
            "cancelled" => {
                set.insert(Status(499));
            }
            "deadline-exceeded" => {
                set.insert(Status(504));
            }
            "internal" => {
                set.insert(Status(500));
            }
            "resource-exhausted" => {
                set.insert(Status(429));
            }
            "unavailable" => {
                set.insert(Status(503));
            }
            "envoy-ratelimited" => {
                return Err(InteropError::Unrepresentable {
                    kind: KIND,
                    field: path.to_string(),
                    why: "envoy-ratelimited retries answers with x-envoy-ratelimited, which retrysim's server never sets; to retry its 429s use retriable-status-codes with 429".to_string(),
                });
            }
            "retriable-headers" => {
                return Err(InteropError::Unrepresentable {
                    kind: KIND,
                    field: path.to_string(),
                    why: "retriable-headers matches response headers, which retrysim's answers do not carry"
                        .to_string(),
                });
            }
            other => {
                return Err(bad(
                    KIND,
                    path,
                    format!("unknown retry condition \"{other}\""),
                    "use 5xx, gateway-error, reset, reset-before-request, connect-failure, retriable-4xx, refused-stream, retriable-status-codes, http3-post-connect-failure or the gRPC ones (cancelled, deadline-exceeded, internal, resource-exhausted, unavailable)",
                ));
            }
        }
    }
    if !codes.is_empty() && !list.contains(&"retriable-status-codes") {
        notes.push(format!(
            "{path}: retriable_status_codes are ignored: retry_on has no retriable-status-codes"
        ));
    }
    Ok(set)
}

/// The conditions and status codes that retry exactly `set`: `5xx` when it holds every 5xx,
/// the timeout and connection errors; `reset` for both failures, `connect-failure` for
/// connection errors alone; the other statuses as codes. A timeout alone cannot be said.
pub(super) fn conditions_for(
    set: &BTreeSet<Failure>,
    loss: &mut Keys<'_>,
) -> Result<(Vec<&'static str>, Vec<u16>), InteropError> {
    let timeout = set.contains(&Failure::Timeout);
    let connection = set.contains(&Failure::ConnectionError);
    let mut codes: Vec<u16> =
        set.iter().filter_map(|f| if let Failure::Status(s) = f { Some(*s) } else { None }).collect();
    let mut list = Vec::new();
    if timeout && connection && server_errors().all(|f| set.contains(&f)) {
        list.push("5xx");
        codes.retain(|s| !(500..=599).contains(s));
    } else {
        match (timeout, connection) {
            (true, true) => list.push("reset"),
            (false, true) => list.push("connect-failure"),
            (true, false) => loss.refuse(
                "retry_on",
                "\"timeout\" without \"connection-error\": Envoy retries a per-try timeout only under 5xx, gateway-error or reset, which retry failed connections too",
            )?,
            (false, false) => {}
        }
    }
    Ok((list, codes))
}

/// `retry_back_off` into `backoff`.
fn read_backoff(
    v: Option<&Value>,
    path: &str,
    strategy: &mut Table,
    notes: &mut Vec<String>,
) -> Result<(), InteropError> {
    let (base, cap) = match v {
        None => {
            notes.push("default applied: retry_back_off base_interval 25ms, max_interval 250ms, full jitter (docs/retry-policies.md §3f)".to_string());
            (DEFAULT_BASE, None)
        }
        Some(v) => {
            let m = mapping(KIND, path, v)?;
            yaml::unknown_fields(m, &["base_interval", "max_interval"], path, notes);
            let base_path = join(path, "base_interval");
            let Some(base) = field(m, "base_interval") else {
                return Err(bad(
                    KIND,
                    &base_path,
                    "is missing",
                    "retry_back_off needs a base_interval, e.g. \"0.025s\"",
                ));
            };
            let base = yaml::proto_duration(KIND, &base_path, base)?;
            if base.is_zero() {
                return Err(bad(KIND, &base_path, "must be > 0", "give the base interval, e.g. \"0.025s\""));
            }
            let base = if base < Span::from_millis(1) {
                notes.push(format!(
                    "{base_path}: Envoy rounds a base below 1 ms up to 1 ms (docs/retry-policies.md §3f)"
                ));
                Span::from_millis(1)
            } else {
                whole_ms(&base_path, base)?
            };
            let cap = match field(m, "max_interval") {
                None => None,
                Some(c) => {
                    let cap_path = join(path, "max_interval");
                    let cap = whole_ms(&cap_path, yaml::proto_duration(KIND, &cap_path, c)?)?;
                    if cap < base {
                        return Err(bad(
                            KIND,
                            &cap_path,
                            "is below base_interval",
                            "make max_interval >= base_interval",
                        ));
                    }
                    Some(cap)
                }
            };
            (base, cap)
        }
    };
    let cap = cap.unwrap_or_else(|| {
        if v.is_some() {
            notes.push(
                "default applied: max_interval = 10 x base_interval (docs/retry-policies.md §3f)".to_string(),
            );
        }
        Span::from_ns(base.as_ns() * DEFAULT_CAP_FACTOR)
    });
    strategy.insert("backoff".into(), backoff_value(base, cap));
    Ok(())
}

/// Envoy's back-off in retrysim's keys: full jitter over `min(2^(k-1) base, cap)` (reference
/// §3f, the source's behaviour).
pub(super) fn backoff_value(base: Span, cap: Span) -> toml::Value {
    let mut t = Table::new();
    t.insert("kind".into(), toml::Value::String("full-jitter".into()));
    t.insert("base".into(), duration_value(base));
    t.insert("cap".into(), duration_value(cap));
    t.insert("multiplier".into(), toml::Value::Float(2.0));
    toml::Value::Table(t)
}

/// `rate_limited_retry_back_off` into `honor_retry_after` and its mode.
fn read_rate_limited(
    v: Option<&Value>,
    path: &str,
    strategy: &mut Table,
    notes: &mut Vec<String>,
) -> Result<(), InteropError> {
    let Some(v) = v else {
        strategy.insert("honor_retry_after".into(), toml::Value::Boolean(false));
        return Ok(());
    };
    let m = mapping(KIND, path, v)?;
    yaml::unknown_fields(m, &["reset_headers", "max_interval"], path, notes);
    if let Some(max) = field(m, "max_interval") {
        let max_path = join(path, "max_interval");
        if yaml::proto_duration(KIND, &max_path, max)? != RATE_LIMITED_MAX_INTERVAL {
            return Err(unrepresentable(
                &max_path,
                "retrysim's envoy Retry-After mode discards values above 300 s, Envoy's default; another max_interval cannot be simulated",
            ));
        }
    } else {
        notes.push(
            "default applied: rate_limited_retry_back_off.max_interval = 300s (docs/retry-policies.md §3f)"
                .to_string(),
        );
    }
    let headers_path = join(path, "reset_headers");
    let Some(Value::Sequence(headers)) = field(m, "reset_headers") else {
        return Err(bad(
            KIND,
            &headers_path,
            "is missing or not a list",
            "list at least one header, e.g. [{name: Retry-After, format: SECONDS}]",
        ));
    };
    let mut honor = false;
    for (i, h) in headers.iter().enumerate() {
        let at = format!("{headers_path}[{i}]");
        let h = mapping(KIND, &at, h)?;
        let name = field(h, "name").and_then(Value::as_str).unwrap_or_default();
        let format = field(h, "format").and_then(Value::as_str).unwrap_or("SECONDS");
        if !name.eq_ignore_ascii_case("retry-after") {
            notes.push(format!(
                "{at}: retrysim's server sends only Retry-After: header {name:?} never matches"
            ));
        } else if format == "SECONDS" {
            honor = true;
        } else {
            return Err(unrepresentable(
                &format!("{at}.format"),
                "retrysim's Retry-After is in seconds; Envoy would read it as a Unix time",
            ));
        }
    }
    strategy.insert("honor_retry_after".into(), toml::Value::Boolean(honor));
    if honor {
        strategy.insert("retry_after_mode".into(), toml::Value::String("envoy".into()));
        strategy.insert("retry_after_cap".into(), duration_value(RATE_LIMITED_MAX_INTERVAL));
    }
    Ok(())
}

/// `retry_host_predicate` and `host_selection_retry_max_attempts`.
fn read_hosts(
    p: &Mapping,
    path: &str,
    strategy: &mut Table,
    notes: &mut Vec<String>,
) -> Result<(), InteropError> {
    let pred_path = join(path, "retry_host_predicate");
    let mut previous_hosts = false;
    match field(p, "retry_host_predicate") {
        None => {}
        Some(Value::Sequence(items)) => {
            for (i, item) in items.iter().enumerate() {
                let at = format!("{pred_path}[{i}]");
                let item = mapping(KIND, &at, item)?;
                let name = field(item, "name").and_then(Value::as_str).unwrap_or_default();
                let ty = field(item, "typed_config")
                    .and_then(Value::as_mapping)
                    .and_then(|t| field(t, "@type"))
                    .and_then(Value::as_str);
                if name == PREVIOUS_HOSTS || ty == Some(PREVIOUS_HOSTS_TYPE) {
                    previous_hosts = true;
                } else {
                    return Err(unrepresentable(
                        &at,
                        "retrysim's only host predicate is previous_hosts (retry_other_replica)",
                    ));
                }
            }
        }
        Some(_) => {
            return Err(bad(KIND, &pred_path, "is not a list", "write a list of {name, typed_config}"));
        }
    }
    strategy.insert("retry_other_replica".into(), toml::Value::Boolean(previous_hosts));
    let attempts_path = join(path, "host_selection_retry_max_attempts");
    let attempts = match field(p, "host_selection_retry_max_attempts") {
        Some(v) => Some(yaml::integer(KIND, &attempts_path, v, 0, i64::from(u32::MAX))?),
        None => None,
    };
    if previous_hosts {
        let n = attempts.unwrap_or_else(|| {
            notes.push(
                "default applied: host_selection_retry_max_attempts = 1 (docs/retry-policies.md §3g)"
                    .to_string(),
            );
            1
        });
        strategy.insert("host_selection_retry_max_attempts".into(), toml::Value::Integer(n));
    } else if attempts.is_some() {
        notes.push(format!("{attempts_path} is ignored: no retry_host_predicate"));
    }
    Ok(())
}

/// The route's `timeout` into `deadline`.
fn read_route(
    parent: Option<&Mapping>,
    path: &str,
    strategy: &mut Table,
    notes: &mut Vec<String>,
) -> Result<(), InteropError> {
    let Some(route) = parent else {
        notes.push("the route's timeout is not in the file: no deadline set (Envoy's default route timeout is 15 s, docs/retry-policies.md §3f)".to_string());
        return Ok(());
    };
    let route_path = path.strip_suffix(".retry_policy").or(path.strip_suffix("retry_policy")).unwrap_or(path);
    match field(route, "timeout") {
        Some(v) => {
            let at = join(route_path, "timeout");
            let t = whole_ms(&at, yaml::proto_duration(KIND, &at, v)?)?;
            if t.is_zero() {
                notes.push(format!("{at} = 0s: the route has no timeout, no deadline"));
            } else {
                strategy.insert("deadline".into(), duration_value(t));
            }
        }
        None if route.keys().filter_map(Value::as_str).any(|k| ROUTE_ACTION_FIELDS.contains(&k)) => {
            strategy.insert("deadline".into(), duration_value(DEFAULT_ROUTE_TIMEOUT));
            notes.push("default applied: the route's timeout = 15s, covering every retry: deadline = \"15s\" (docs/retry-policies.md §3f)".to_string());
        }
        None => notes.push("the route's timeout is not in the file: no deadline set (Envoy's default route timeout is 15 s, docs/retry-policies.md §3f)".to_string()),
    }
    Ok(())
}

/// The cluster's `circuit_breakers` into `budget` (reference §3e).
fn read_breakers(
    m: &Mapping,
    path: &str,
    strategy: &mut Table,
    notes: &mut Vec<String>,
) -> Result<(), InteropError> {
    yaml::unknown_fields(m, &["thresholds", "per_host_thresholds"], path, notes);
    if field(m, "per_host_thresholds").is_some() {
        notes.push(format!(
            "{path}.per_host_thresholds: connection limits per host, not retries: not simulated"
        ));
    }
    let thresholds_path = join(path, "thresholds");
    let thresholds: &[Value] = match field(m, "thresholds") {
        None => &[],
        Some(Value::Sequence(items)) => items,
        Some(_) => {
            return Err(bad(
                KIND,
                &thresholds_path,
                "is not a list",
                "write a list of thresholds, one per priority",
            ));
        }
    };
    let mut default = None;
    for (i, t) in thresholds.iter().enumerate() {
        let at = format!("{thresholds_path}[{i}]");
        let t = mapping(KIND, &at, t)?;
        match field(t, "priority").and_then(Value::as_str).unwrap_or("DEFAULT") {
            "DEFAULT" => default = Some((at, t)),
            other => notes.push(format!(
                "{at}: priority {other}: retrysim's requests are all of the DEFAULT priority: ignored"
            )),
        }
    }
    let Some((at, t)) = default else {
        strategy.insert("budget".into(), concurrency(0.0, DEFAULT_MAX_RETRIES));
        notes.push(format!("default applied: no DEFAULT threshold: max_retries = {DEFAULT_MAX_RETRIES} (docs/retry-policies.md §3e)"));
        return Ok(());
    };
    yaml::unknown_fields(
        t,
        &[
            "priority",
            "max_connections",
            "max_pending_requests",
            "max_requests",
            "max_retries",
            "retry_budget",
            "track_remaining",
            "max_connection_pools",
        ],
        &at,
        notes,
    );
    for limit in ["max_connections", "max_pending_requests", "max_requests", "max_connection_pools"] {
        if field(t, limit).is_some() {
            notes.push(format!(
                "{at}.{limit}: a connection or request limit of the proxy, not of its retries: not simulated"
            ));
        }
    }
    let budget = field(t, "retry_budget").and_then(Value::as_mapping).filter(|b| !b.is_empty());
    if let Some(b) = budget {
        let bp = join(&at, "retry_budget");
        yaml::unknown_fields(b, &["budget_percent", "min_retry_concurrency"], &bp, notes);
        let percent = match field(b, "budget_percent") {
            Some(v) => {
                let pp = join(&bp, "budget_percent.value");
                let value =
                    mapping(KIND, &join(&bp, "budget_percent"), v).ok().and_then(|m| field(m, "value"));
                let Some(value) = value else {
                    return Err(bad(KIND, &pp, "is missing", "write budget_percent: {value: 20.0}"));
                };
                yaml::number(KIND, &pp, value, 0.0, 100.0)?
            }
            None => {
                notes.push(
                    "default applied: retry_budget.budget_percent = 20 % (docs/retry-policies.md §3e)"
                        .to_string(),
                );
                DEFAULT_BUDGET_PERCENT
            }
        };
        let min = match field(b, "min_retry_concurrency") {
            Some(v) => yaml::integer(KIND, &join(&bp, "min_retry_concurrency"), v, 0, i64::from(u32::MAX))?,
            None => {
                notes.push(
                    "default applied: retry_budget.min_retry_concurrency = 3 (docs/retry-policies.md §3e)"
                        .to_string(),
                );
                DEFAULT_MIN_RETRY_CONCURRENCY
            }
        };
        if field(t, "max_retries").is_some() {
            notes.push(format!(
                "{at}.max_retries is ignored: a retry_budget replaces it (docs/retry-policies.md §3e)"
            ));
        }
        strategy.insert("budget".into(), concurrency(percent, min));
        return Ok(());
    }
    let max = match field(t, "max_retries") {
        Some(v) => yaml::integer(KIND, &join(&at, "max_retries"), v, 0, UNLIMITED_RETRIES)?,
        None => {
            notes.push(format!(
                "default applied: max_retries = {DEFAULT_MAX_RETRIES} (docs/retry-policies.md §3e)"
            ));
            DEFAULT_MAX_RETRIES
        }
    };
    if max == UNLIMITED_RETRIES {
        notes.push(format!("{at}.max_retries = {UNLIMITED_RETRIES}: no limit, no budget"));
    } else {
        strategy.insert("budget".into(), concurrency(0.0, max));
    }
    Ok(())
}

/// A `concurrency` budget: active retries < max(percent % of active requests, min).
fn concurrency(percent: f64, min: i64) -> toml::Value {
    let mut t = Table::new();
    t.insert("kind".into(), toml::Value::String("concurrency".into()));
    t.insert("percent".into(), toml::Value::Float(percent));
    t.insert("min_concurrency".into(), toml::Value::Integer(min));
    toml::Value::Table(t)
}

/// The keys an Envoy export carries.
const CARRIED: &[&str] = &[
    "max_attempts",
    "timeout",
    "deadline",
    "retry_on",
    "backoff",
    "honor_retry_after",
    "retry_after_mode",
    "retry_after_cap",
    "budget",
    "retry_other_replica",
    "host_selection_retry_max_attempts",
];

fn export(table: &Table, lossy: bool) -> Result<Exported, InteropError> {
    let mut loss = Keys::carrying(KIND, table, lossy, CARRIED, "Envoy's route and cluster")?;
    let s = loss.strategy();
    let mut policy = Mapping::new();
    let mut put = |k: &str, v: Value| {
        policy.insert(string(k), v);
    };
    let (conditions, codes) = conditions_for(&s.retry_on()?, &mut loss)?;
    let mut conditions = conditions;
    if !codes.is_empty() {
        conditions.push("retriable-status-codes");
    }
    put("retry_on", string(conditions.join(",")));
    match s.int("max_attempts")? {
        Some(n) => put("num_retries", Value::from(n - 1)),
        None => loss.refuse("max_attempts", "Envoy always bounds the retries per request (num_retries, 1 when left out); an unlimited max_attempts cannot be said")?,
    }
    if let Some(t) = s.span("timeout")? {
        put("per_try_timeout", string(yaml::proto_duration_text(ms_exact(&mut loss, "timeout", t)?)));
    }
    if let Some((base, cap)) = export_backoff(&s, &mut loss, false)? {
        put(
            "retry_back_off",
            map([
                ("base_interval", string(yaml::proto_duration_text(base))),
                ("max_interval", string(yaml::proto_duration_text(cap))),
            ]),
        );
    }
    if s.honors_retry_after() {
        let envoy_mode = s.str("retry_after_mode") == Some("envoy");
        let cap_ok = s.span("retry_after_cap")?.is_none_or(|c| c >= RATE_LIMITED_MAX_INTERVAL);
        if envoy_mode && cap_ok {
            put(
                "rate_limited_retry_back_off",
                map([
                    (
                        "reset_headers",
                        Value::Sequence(vec![map([
                            ("name", string("Retry-After")),
                            ("format", string("SECONDS")),
                        ])]),
                    ),
                    ("max_interval", string(yaml::proto_duration_text(RATE_LIMITED_MAX_INTERVAL))),
                ]),
            );
        } else if !envoy_mode {
            loss.refuse("retry_after_mode", "Envoy honours Retry-After only as its rate-limited back-off, U(v, 1.5 v) (retry_after_mode = \"envoy\")")?;
        } else {
            loss.refuse("retry_after_cap", "Envoy discards a Retry-After above max_interval rather than clamping it; retrysim's envoy mode keeps the 300 s maximum")?;
        }
    }
    if !codes.is_empty() {
        put("retriable_status_codes", Value::Sequence(codes.iter().map(|&c| Value::from(c)).collect()));
    }
    if s.flag("retry_other_replica") {
        put(
            "retry_host_predicate",
            Value::Sequence(vec![map([
                ("name", string(PREVIOUS_HOSTS)),
                ("typed_config", map([("@type", string(PREVIOUS_HOSTS_TYPE))])),
            ])]),
        );
        put(
            "host_selection_retry_max_attempts",
            Value::from(s.int("host_selection_retry_max_attempts")?.unwrap_or(1)),
        );
    }
    let route_timeout = match s.span("deadline")? {
        Some(d) => ms_exact(&mut loss, "deadline", d)?,
        None => Span::ZERO,
    };
    let threshold = export_budget(&s, &mut loss)?;
    let doc = map([
        (
            "route",
            map([
                ("timeout", string(yaml::proto_duration_text(route_timeout))),
                ("retry_policy", Value::Mapping(policy)),
            ]),
        ),
        ("circuit_breakers", map([("thresholds", Value::Sequence(vec![threshold]))])),
    ]);
    let name = s.str("name").unwrap_or("strategy");
    // carrying() took or refused every key: finish() refuses nothing more.
    let dropped = loss.finish("")?;
    let header = format!(
        "# Envoy retry settings of retrysim strategy \"{name}\" (docs/config-files.md).\n\
         # `route` holds RouteAction fields (a route's `route:`), `circuit_breakers` the cluster's.\n\
         # Back-off: Envoy's full jitter U(0, min(2^(k-1) x base, max)), in whole milliseconds.\n{}",
        dropped_comment("#", &dropped)
    );
    Ok(Exported { text: yaml::write(&header, &doc), dropped })
}

/// A span Envoy reads in whole milliseconds: refused (or, lossy, rounded to the nearest ms).
fn ms_exact(loss: &mut Keys<'_>, key: &str, span: Span) -> Result<Span, InteropError> {
    if span.as_ns().is_multiple_of(1_000_000) && !span.is_zero() {
        return Ok(span);
    }
    loss.refuse(key, "Envoy reads it in whole milliseconds (at least 1 ms): rounded to the nearest")?;
    Ok(Span::from_millis(((span.as_ns() + 500_000) / 1_000_000).max(1)))
}

/// The strategy's backoff as Envoy's (base, max): full jitter, multiplier 2, whole ms. With
/// `fixed_cap` (Istio, which sets only the base) the max must be 10 x base. `None` when dropped.
pub(super) fn export_backoff(
    s: &Strategy<'_>,
    loss: &mut Keys<'_>,
    fixed_cap: bool,
) -> Result<Option<(Span, Span)>, InteropError> {
    let kind = s.str("backoff.kind").unwrap_or("none");
    if kind != "full-jitter" {
        loss.refuse(
            "backoff",
            format!("the proxy's back-off is always full jitter U(0, min(2^(k-1) x base, max)), not {kind}"),
        )?;
        return Ok(None);
    }
    let multiplier = s.num("backoff.multiplier")?.unwrap_or(2.0);
    if multiplier != 2.0 {
        loss.refuse(
            "backoff.multiplier",
            format!("the proxy doubles the interval at each retry, not x {multiplier}"),
        )?;
    }
    let Some(base) = s.span("backoff.base")? else { return Ok(None) };
    let base = ms_exact(loss, "backoff.base", base)?;
    let default_cap = Span::from_ns(base.as_ns() * DEFAULT_CAP_FACTOR);
    let cap = match s.span("backoff.cap")? {
        Some(cap) if fixed_cap && cap != default_cap => {
            loss.refuse("backoff.cap", "Istio sets only the base interval; the max is always 10 x base")?;
            default_cap
        }
        Some(cap) => ms_exact(loss, "backoff.cap", cap)?,
        None => {
            loss.refuse("backoff.cap", "the proxy's back-off always has a max (10 x base when left out); an uncapped back-off cannot be said")?;
            default_cap
        }
    };
    Ok(Some((base, cap)))
}

/// The DEFAULT circuit-breaker threshold for the strategy's budget.
fn export_budget(s: &Strategy<'_>, loss: &mut Keys<'_>) -> Result<Value, InteropError> {
    let default = |extra: (&str, Value)| map([("priority", string("DEFAULT")), extra]);
    match s.str("budget.kind") {
        None => Ok(default(("max_retries", Value::from(UNLIMITED_RETRIES)))),
        Some("concurrency") => {
            let percent = s.num("budget.percent")?.unwrap_or(DEFAULT_BUDGET_PERCENT);
            let min = s.int("budget.min_concurrency")?.unwrap_or(DEFAULT_MIN_RETRY_CONCURRENCY);
            if percent == 0.0 {
                Ok(default(("max_retries", Value::from(min))))
            } else {
                Ok(default((
                    "retry_budget",
                    map([
                        ("budget_percent", map([("value", Value::from(percent))])),
                        ("min_retry_concurrency", Value::from(min)),
                    ]),
                )))
            }
        }
        Some(other) => {
            loss.refuse(
                "budget",
                format!(
                    "Envoy's retry budget limits concurrent retries (kind = \"concurrency\"), not {other}"
                ),
            )?;
            Ok(default(("max_retries", Value::from(DEFAULT_MAX_RETRIES))))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interop::strategy::Failure;

    fn strategy(text: &str) -> Table {
        text.parse().unwrap()
    }

    fn get<'a>(t: &'a Table, key: &str) -> &'a toml::Value {
        Strategy { kind: KIND, table: t }.get(key).unwrap_or_else(|| panic!("no {key} in {t}"))
    }

    /// Envoy's retry plugin example (docs/root/intro/arch_overview/http/http_connection_management.rst,
    /// "Retry plugin configuration"): previous hosts, host selection tried 3 times. It has no
    /// retry_on, so nothing is retried; every other value is Envoy's default.
    #[test]
    fn the_retry_plugin_example_imports_with_envoys_defaults() {
        let yaml = "retry_policy:\n  retry_host_predicate:\n  - name: envoy.retry_host_predicates.previous_hosts\n  host_selection_retry_max_attempts: 3\n";
        let i = Envoy.import(yaml, "plugins").unwrap();
        let s = &i.strategy;
        assert_eq!(get(s, "retry_other_replica").as_bool(), Some(true));
        assert_eq!(get(s, "host_selection_retry_max_attempts").as_integer(), Some(3));
        assert_eq!(get(s, "max_attempts").as_integer(), Some(1), "no retry_on: nothing is retried");
        assert_eq!(
            get(s, "backoff").to_string(),
            r#"{ base = "25ms", cap = "250ms", kind = "full-jitter", multiplier = 2.0 }"#
        );
        assert_eq!(
            get(s, "budget").to_string(),
            r#"{ kind = "concurrency", min_concurrency = 3, percent = 0.0 }"#
        );
        assert_eq!(get(s, "honor_retry_after").as_bool(), Some(false));
        for cited in ["§3f", "§3e"] {
            assert!(
                i.notes.iter().any(|n| n.contains("default applied") && n.contains(cited)),
                "{cited}: {:?}",
                i.notes
            );
        }
    }

    /// The `rate_limited_retry_back_off` example of route_components.proto: Retry-After in
    /// seconds (X-RateLimit-Reset is never sent by retrysim's server), max 300 s.
    #[test]
    fn the_rate_limited_back_off_example_honours_retry_after_the_envoy_way() {
        let yaml = "retry_on: retriable-status-codes\nretriable_status_codes: [429]\nrate_limited_retry_back_off:\n  reset_headers:\n  - name: Retry-After\n    format: SECONDS\n  - name: X-RateLimit-Reset\n    format: UNIX_TIMESTAMP\n  max_interval: \"300s\"\n";
        let i = Envoy.import(yaml, "rl").unwrap();
        let s = &i.strategy;
        assert_eq!(get(s, "honor_retry_after").as_bool(), Some(true));
        assert_eq!(get(s, "retry_after_mode").as_str(), Some("envoy"));
        assert_eq!(get(s, "retry_after_cap").as_str(), Some("300s"));
        assert_eq!(get(s, "retry_on").to_string(), "[429]");
        assert_eq!(get(s, "max_attempts").as_integer(), Some(2), "num_retries defaults to 1");
        assert!(i.notes.iter().any(|n| n.contains("X-RateLimit-Reset")), "{:?}", i.notes);
        let other_max = yaml.replace("\"300s\"", "\"60s\"");
        let e = Envoy.import(&other_max, "rl").unwrap_err();
        assert!(
            matches!(&e, InteropError::Unrepresentable { field, .. } if field == "rate_limited_retry_back_off.max_interval"),
            "{e}"
        );
    }

    /// A route with its retry policy and the cluster's retry budget, as the router docs
    /// describe them: 5xx is every 5xx, the timeout and failed connections.
    #[test]
    fn a_route_and_its_cluster_import_to_the_values_they_state() {
        let yaml = "route:\n  cluster: backend\n  timeout: 3s\n  retry_policy:\n    retry_on: 5xx,retriable-4xx\n    num_retries: 3\n    per_try_timeout: 0.25s\n    retry_back_off: {base_interval: 0.1s, max_interval: 1s}\ncircuit_breakers:\n  thresholds:\n  - priority: DEFAULT\n    max_connections: 100\n    retry_budget: {budget_percent: {value: 25.0}, min_retry_concurrency: 5}\n  - priority: HIGH\n    max_retries: 10\n";
        let i = Envoy.import(yaml, "route").unwrap();
        let s = &i.strategy;
        assert_eq!(get(s, "max_attempts").as_integer(), Some(4));
        assert_eq!(get(s, "timeout").as_str(), Some("250ms"));
        assert_eq!(get(s, "deadline").as_str(), Some("3s"));
        let retried = Strategy { kind: KIND, table: s }.retry_on().unwrap();
        assert_eq!(retried.len(), 100 + 1 + 2, "500..=599, 409, timeout, connection-error");
        assert!(retried.contains(&Failure::Status(409)) && retried.contains(&Failure::Timeout));
        assert_eq!(get(s, "backoff.base").as_str(), Some("100ms"));
        assert_eq!(get(s, "backoff.cap").as_str(), Some("1s"));
        assert_eq!(
            get(s, "budget").to_string(),
            r#"{ kind = "concurrency", min_concurrency = 5, percent = 25.0 }"#
        );
        assert!(i.notes.iter().any(|n| n.contains("max_connections")), "{:?}", i.notes);
        assert!(i.notes.iter().any(|n| n.contains("priority HIGH")), "{:?}", i.notes);
    }

    #[test]
    fn a_route_without_timeout_gets_envoys_15_s_and_unknown_fields_are_noted() {
        let yaml =
            "cluster: backend\nretry_policy: {retry_on: connect-failure, num_retries: 2, retry_mystery: 1}\n";
        let i = Envoy.import(yaml, "r").unwrap();
        assert_eq!(get(&i.strategy, "deadline").as_str(), Some("15s"));
        assert_eq!(get(&i.strategy, "retry_on").to_string(), r#"["connection-error"]"#);
        assert!(
            i.notes.iter().any(|n| n.contains("unknown field retry_policy.retry_mystery")),
            "{:?}",
            i.notes
        );
    }

    #[test]
    fn what_retrysim_cannot_simulate_is_refused_naming_the_field() {
        let cases = [
            (
                "retry_policy: {retry_on: 5xx, retry_priority: {name: envoy.retry_priorities.previous_priorities}}",
                "retry_policy.retry_priority",
            ),
            ("retry_policy: {retry_on: envoy-ratelimited}", "retry_policy.retry_on"),
            (
                "retry_policy: {retry_on: 5xx, retry_host_predicate: [{name: envoy.retry_host_predicates.omit_canary_hosts}]}",
                "retry_policy.retry_host_predicate[0]",
            ),
            ("retry_policy: {retry_on: 5xx, per_try_idle_timeout: 1s}", "retry_policy.per_try_idle_timeout"),
        ];
        for (yaml, field_name) in cases {
            match Envoy.import(yaml, "x") {
                Err(InteropError::Unrepresentable { field, .. }) => assert_eq!(field, field_name, "{yaml}"),
                other => panic!("{yaml}: {other:?}"),
            }
        }
        let bad_input = [
            ("retry_policy: {per_try_timeout: 1}", "retry_policy.per_try_timeout", "has no unit"),
            ("retry_policy: {per_try_timeout: 250ms}", "retry_policy.per_try_timeout", "is not in seconds"),
            ("retry_policy: {num_retries: -1}", "retry_policy.num_retries", "out of range"),
            ("retry_policy: {retry_on: 6xx}", "retry_policy.retry_on", "unknown retry condition"),
            (
                "retry_policy: {retry_back_off: {base_interval: 1s, max_interval: 0.5s}}",
                "retry_policy.retry_back_off.max_interval",
                "below",
            ),
        ];
        for (yaml, field_name, problem_text) in bad_input {
            match Envoy.import(yaml, "x") {
                Err(InteropError::Field { field, problem, .. }) => {
                    assert_eq!(field, field_name, "{yaml}");
                    assert!(problem.contains(problem_text), "{yaml}: {problem}");
                }
                other => panic!("{yaml}: {other:?}"),
            }
        }
        assert!(matches!(Envoy.import("retry_policy: [", "x"), Err(InteropError::Parse { .. })));
    }

    /// Strategies Envoy can express: each exported and imported again is the same table.
    const EXPRESSIBLE: &[&str] = &[
        r#"name = "a"
max_attempts = 3
retry_on = [503, "connection-error"]
backoff = { kind = "full-jitter", base = "25ms", cap = "250ms", multiplier = 2.0 }
honor_retry_after = false
retry_other_replica = false
budget = { kind = "concurrency", percent = 20.0, min_concurrency = 3 }
deadline = "10s"
"#,
        r#"name = "b"
max_attempts = 1
timeout = "750ms"
retry_on = [409, 429, 502, 503, 504, "timeout", "connection-error"]
backoff = { kind = "full-jitter", base = "1ms", cap = "1s", multiplier = 2.0 }
honor_retry_after = true
retry_after_mode = "envoy"
retry_after_cap = "300s"
retry_other_replica = true
host_selection_retry_max_attempts = 5
budget = { kind = "concurrency", percent = 0.0, min_concurrency = 7 }
"#,
        r#"name = "c"
max_attempts = 6
retry_on = [429]
backoff = { kind = "full-jitter", base = "2s", cap = "2s", multiplier = 2.0 }
honor_retry_after = false
retry_other_replica = false
"#,
    ];

    #[test]
    fn import_of_export_is_the_strategy_key_by_key() {
        let mut all_5xx = strategy(EXPRESSIBLE[0]);
        let set: BTreeSet<Failure> = server_errors()
            .chain([Failure::Status(429), Failure::Timeout, Failure::ConnectionError])
            .collect();
        all_5xx.insert("retry_on".into(), retry_on_value(&set));
        all_5xx.insert("name".into(), toml::Value::String("d".into()));
        let mut tables: Vec<Table> = EXPRESSIBLE.iter().map(|t| strategy(t)).collect();
        tables.push(all_5xx);
        for s in tables {
            let name = s["name"].as_str().unwrap().to_string();
            let out = Envoy.export(&s, false).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(out.dropped.is_empty());
            let back = Envoy.import(&out.text, &name).unwrap().strategy;
            for (k, v) in &s {
                assert_eq!(back.get(k), Some(v), "{name}: {k} after a round trip through\n{}", out.text);
            }
            assert_eq!(back.len(), s.len(), "{name}: {back:?}");
        }
    }

    #[test]
    fn an_inexpressible_key_is_refused_without_lossy_and_listed_with_it() {
        let mut s = strategy(EXPRESSIBLE[0]);
        s.insert("breaker".into(), toml::Value::Table(strategy("kind = \"resilience4j\"")));
        s.insert("backoff".into(), toml::Value::Table(strategy("kind = \"exponential\"\nbase = \"10ms\"")));
        let e = Envoy.export(&s, false).unwrap_err();
        assert!(matches!(&e, InteropError::Inexpressible { key, .. } if key == "breaker"), "{e}");
        let out = Envoy.export(&s, true).unwrap();
        let keys: Vec<&str> = out.dropped.iter().map(|d| d.split(':').next().unwrap()).collect();
        assert_eq!(keys, ["breaker", "backoff"]);
        assert!(out.text.contains("dropped (--lossy)") && out.text.contains("#   breaker:"), "{}", out.text);
        let timeout_alone = strategy(
            "name = \"t\"\nmax_attempts = 2\nretry_on = [\"timeout\"]\nbackoff = { kind = \"full-jitter\", base = \"25ms\", cap = \"250ms\" }",
        );
        let e = Envoy.export(&timeout_alone, false).unwrap_err();
        assert!(matches!(&e, InteropError::Inexpressible { key, .. } if key == "retry_on"), "{e}");
    }
}
