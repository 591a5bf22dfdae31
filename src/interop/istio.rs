//! Istio: a VirtualService's `http[].retries` and `http[].timeout`, as Istio turns them into
//! an Envoy route (reference §3h): Istio's own defaults (2 retries on connect-failure,
//! refused-stream, unavailable, cancelled and 503, previous hosts, 5 host selections) apply
//! over Envoy's (back-off 25 ms, max 10 x base).
//!
//! | Istio | retrysim | source (docs/retry-policies.md) |
//! |---|---|---|
//! | `retries` absent | Istio's default policy | §3h |
//! | `attempts` (0 or absent: no retries) | `max_attempts = attempts + 1` | §3h |
//! | `retryOn` (numbers are statuses) | `retry_on` | §3g, §3h |
//! | `perTryTimeout` | `timeout` | §3h |
//! | `timeout` (default: none) | `deadline` | §3h |
//! | `retryIgnorePreviousHosts` (default true) | `retry_other_replica`, 5 host selections | §3h |
//! | `backoff` (the base; max 10 x base) | `backoff = full-jitter` | §3f, §3h |
//! | `retryRemoteLocalities: true` | refused: retrysim has no localities | §3h |

use super::envoy::{self, DEFAULT_BASE, DEFAULT_CAP_FACTOR};
use super::keys::{Keys, dropped_comment};
use super::strategy::{duration_value, retry_on_value};
use super::yaml::{self, bad, documents, field, map, mapping, string};
use super::{Exported, Format, Imported, InteropError};
use crate::engine::Span;
use serde_yaml_ng::{Mapping, Value};
use toml::Table;

/// The Istio format.
pub struct Istio;

const KIND: &str = "istio";

/// Istio's default `retryOn` (reference §3h: `DefaultPolicy` in pilot's retry.go).
pub const DEFAULT_RETRY_ON: &str =
    "connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes";
/// Istio's default retriable status codes (reference §3h).
pub const DEFAULT_STATUS_CODES: &[u16] = &[503];
/// Istio's default number of retries (reference §3h).
pub const DEFAULT_ATTEMPTS: i64 = 2;
/// Istio's fixed `host_selection_retry_max_attempts` (reference §3h).
pub const HOST_SELECTIONS: i64 = 5;

const RETRIES_FIELDS: &[&str] =
    &["attempts", "perTryTimeout", "retryOn", "retryRemoteLocalities", "retryIgnorePreviousHosts", "backoff"];

impl Format for Istio {
    fn kind(&self) -> &'static str {
        KIND
    }
    fn extension(&self) -> &'static str {
        "istio.yaml"
    }
    fn import(&self, text: &str, name: &str) -> Result<Imported, InteropError> {
        import(text, name)
    }
    fn export(&self, strategy: &Table, lossy: bool) -> Result<Exported, InteropError> {
        export(strategy, lossy)
    }
}

/// The VirtualService's `spec` (or the document itself when it is a bare spec), with its path.
fn spec(docs: &[Value]) -> Result<(String, &Mapping), InteropError> {
    let services: Vec<(usize, &Mapping)> = docs
        .iter()
        .enumerate()
        .filter_map(|(i, d)| d.as_mapping().map(|m| (i, m)))
        .filter(|(_, m)| field(m, "kind").and_then(Value::as_str) == Some("VirtualService"))
        .collect();
    if services.len() > 1 {
        return Err(bad(
            KIND,
            "kind",
            format!("the file has {} VirtualServices", services.len()),
            "keep the one to simulate",
        ));
    }
    if let Some((_, vs)) = services.first() {
        let Some(spec) = field(vs, "spec") else {
            return Err(bad(
                KIND,
                "spec",
                "is missing",
                "give the VirtualService's spec with its http routes",
            ));
        };
        return Ok(("spec".into(), mapping(KIND, "spec", spec)?));
    }
    for d in docs.iter().filter_map(Value::as_mapping) {
        if let Some(spec) =
            field(d, "spec").and_then(Value::as_mapping).filter(|s| field(s, "http").is_some())
        {
            return Ok(("spec".into(), spec));
        }
        if field(d, "http").is_some() {
            return Ok((String::new(), d));
        }
    }
    Err(bad(
        KIND,
        "spec.http",
        "the file has no VirtualService http routes",
        "give a VirtualService (kind: VirtualService) with spec.http",
    ))
}

fn import(text: &str, name: &str) -> Result<Imported, InteropError> {
    let docs = documents(KIND, text)?;
    let (spec_path, spec) = spec(&docs)?;
    let http_path = if spec_path.is_empty() { "http".to_string() } else { format!("{spec_path}.http") };
    let routes = match field(spec, "http") {
        Some(Value::Sequence(r)) if !r.is_empty() => r,
        _ => return Err(bad(KIND, &http_path, "is missing or empty", "give at least one http route")),
    };
    let settings =
        |r: &Value| r.as_mapping().map(|m| (field(m, "retries").cloned(), field(m, "timeout").cloned()));
    if let Some(i) = routes.iter().position(|r| settings(r) != settings(&routes[0])) {
        return Err(bad(
            KIND,
            &format!("{http_path}[{i}]"),
            format!("its retries or timeout differ from {http_path}[0]'s: a strategy is one route's policy"),
            "keep only the http route to simulate",
        ));
    }
    let route_path = format!("{http_path}[0]");
    let route = mapping(KIND, &route_path, &routes[0])?;
    let mut notes = Vec::new();
    if routes.len() > 1 {
        notes.push(format!("{} http routes with the same retries and timeout: one strategy", routes.len()));
    }
    for other in ["fault", "mirror", "mirrors", "mirrorPercentage"] {
        if field(route, other).is_some() {
            notes.push(format!("{route_path}.{other}: not part of the retry policy: not simulated"));
        }
    }
    let mut strategy = Table::new();
    strategy.insert("name".into(), toml::Value::String(name.to_string()));
    read_retries(field(route, "retries"), &format!("{route_path}.retries"), &mut strategy, &mut notes)?;
    match field(route, "timeout") {
        Some(v) => {
            let at = format!("{route_path}.timeout");
            let t = yaml::go_duration(KIND, &at, v)?;
            if t.is_zero() {
                notes.push(format!("{at} = 0s: no timeout, no deadline"));
            } else {
                strategy.insert("deadline".into(), duration_value(t));
            }
        }
        None => notes.push("default applied: no route timeout (Istio's default is none), no deadline (docs/retry-policies.md §3h)".to_string()),
    }
    strategy.insert("honor_retry_after".into(), toml::Value::Boolean(false));
    notes.push("no budget: Istio's connection pool maxRetries (a DestinationRule, not read here) defaults to 2^32-1, no limit (docs/retry-policies.md §3h)".to_string());
    Ok(Imported { strategy, server: Table::new(), notes })
}

/// `retries` into the strategy, with Istio's defaults where it leaves fields out.
fn read_retries(
    v: Option<&Value>,
    path: &str,
    strategy: &mut Table,
    notes: &mut Vec<String>,
) -> Result<(), InteropError> {
    let empty = Mapping::new();
    let r = match v {
        None => {
            notes.push("default applied: no retries field: Istio's default policy, 2 retries on connect-failure, refused-stream, unavailable, cancelled and 503, previous hosts avoided, 5 host selections (docs/retry-policies.md §3h)".to_string());
            &empty
        }
        Some(v) => mapping(KIND, path, v)?,
    };
    let at = |k: &str| format!("{path}.{k}");
    yaml::unknown_fields(r, RETRIES_FIELDS, path, notes);
    if let Some(v) = field(r, "retryRemoteLocalities")
        && yaml::boolean(KIND, &at("retryRemoteLocalities"), v)?
    {
        return Err(InteropError::Unrepresentable {
            kind: KIND,
            field: at("retryRemoteLocalities"),
            why: "retrysim's replicas have no localities to retry in".to_string(),
        });
    }
    let attempts = match (v, field(r, "attempts")) {
        (None, _) => DEFAULT_ATTEMPTS,
        (Some(_), Some(a)) => yaml::integer(KIND, &at("attempts"), a, 0, i64::from(i32::MAX))?,
        (Some(_), None) => {
            notes.push(format!(
                "{}: absent, so 0: Istio turns retries off (docs/retry-policies.md §3h)",
                at("attempts")
            ));
            0
        }
    };
    let (conditions, codes): (Vec<String>, Vec<u16>) = match field(r, "retryOn") {
        Some(Value::String(text)) if !text.trim().is_empty() => {
            let mut conditions = Vec::new();
            let mut codes = Vec::new();
            for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                match part.parse::<u16>() {
                    Ok(code) if (100..=599).contains(&code) => codes.push(code),
                    _ => conditions.push(part.to_string()),
                }
            }
            if !codes.is_empty() && !conditions.iter().any(|c| c == "retriable-status-codes") {
                conditions.push("retriable-status-codes".to_string());
            }
            (conditions, codes)
        }
        Some(Value::String(_)) | None => {
            if v.is_some() {
                notes.push(format!("default applied: {} = \"{DEFAULT_RETRY_ON}\" with status 503 (docs/retry-policies.md §3h)", at("retryOn")));
            }
            (DEFAULT_RETRY_ON.split(',').map(str::to_string).collect(), DEFAULT_STATUS_CODES.to_vec())
        }
        Some(other) => {
            return Err(bad(
                KIND,
                &at("retryOn"),
                format!("{} is not a string", yaml::show(other)),
                "write the conditions comma-separated, e.g. \"5xx,connect-failure\"",
            ));
        }
    };
    let list: Vec<&str> = conditions.iter().map(String::as_str).collect();
    let set = envoy::conditions(&at("retryOn"), &list, &codes, notes)?;
    if attempts == 0 || set.is_empty() {
        strategy.insert("max_attempts".into(), toml::Value::Integer(1));
    } else {
        strategy.insert("max_attempts".into(), toml::Value::Integer(attempts + 1));
    }
    if !set.is_empty() {
        strategy.insert("retry_on".into(), retry_on_value(&set));
    }
    if let Some(t) = field(r, "perTryTimeout") {
        let t = yaml::go_duration(KIND, &at("perTryTimeout"), t)?;
        if t < Span::from_millis(1) {
            return Err(bad(
                KIND,
                &at("perTryTimeout"),
                "is below 1ms",
                "Istio requires perTryTimeout >= 1ms",
            ));
        }
        strategy.insert("timeout".into(), duration_value(t));
    }
    let previous_hosts = match field(r, "retryIgnorePreviousHosts") {
        Some(b) => yaml::boolean(KIND, &at("retryIgnorePreviousHosts"), b)?,
        None => true,
    };
    strategy.insert("retry_other_replica".into(), toml::Value::Boolean(previous_hosts));
    if previous_hosts {
        strategy.insert("host_selection_retry_max_attempts".into(), toml::Value::Integer(HOST_SELECTIONS));
    }
    let base = match field(r, "backoff") {
        Some(b) => {
            let base = yaml::go_duration(KIND, &at("backoff"), b)?;
            if base < Span::from_millis(1) || !base.as_ns().is_multiple_of(1_000_000) {
                return Err(bad(
                    KIND,
                    &at("backoff"),
                    "is not a whole number of milliseconds >= 1ms",
                    "Envoy reads the base in milliseconds: round it",
                ));
            }
            base
        }
        None => {
            notes.push("default applied: Envoy's back-off, base 25ms, max 250ms, full jitter (docs/retry-policies.md §3f)".to_string());
            DEFAULT_BASE
        }
    };
    strategy.insert(
        "backoff".into(),
        envoy::backoff_value(base, Span::from_ns(base.as_ns() * DEFAULT_CAP_FACTOR)),
    );
    Ok(())
}

/// The keys an Istio export carries.
const CARRIED: &[&str] = &[
    "max_attempts",
    "timeout",
    "deadline",
    "retry_on",
    "backoff",
    "retry_other_replica",
    "host_selection_retry_max_attempts",
];

fn export(table: &Table, lossy: bool) -> Result<Exported, InteropError> {
    let mut loss = Keys::carrying(KIND, table, lossy, CARRIED, "an Istio VirtualService")?;
    let s = loss.strategy();
    let mut retries = Mapping::new();
    let mut put = |k: &str, v: Value| {
        retries.insert(string(k), v);
    };
    match s.int("max_attempts")? {
        Some(n) => put("attempts", Value::from(n - 1)),
        None => loss.refuse(
            "max_attempts",
            "Istio's attempts is a number; an unlimited max_attempts cannot be said",
        )?,
    }
    if let Some(t) = s.span("timeout")? {
        if t < Span::from_millis(1) {
            loss.refuse("timeout", "Istio requires perTryTimeout >= 1ms")?;
        } else {
            put("perTryTimeout", string(yaml::go_duration_text(t)));
        }
    }
    let (conditions, codes) = envoy::conditions_for(&s.retry_on()?, &mut loss)?;
    let parts: Vec<String> =
        conditions.iter().map(|c| c.to_string()).chain(codes.iter().map(u16::to_string)).collect();
    put("retryOn", string(parts.join(",")));
    let previous_hosts = s.flag("retry_other_replica");
    if !previous_hosts {
        // Written only when it changes Istio's default (true), which older Istio lacks.
        put("retryIgnorePreviousHosts", Value::Bool(false));
    }
    if previous_hosts && s.int("host_selection_retry_max_attempts")?.unwrap_or(1) != HOST_SELECTIONS {
        loss.refuse(
            "host_selection_retry_max_attempts",
            "Istio always makes 5 host selections with previous hosts",
        )?;
    }
    if let Some((base, _)) = envoy::export_backoff(&s, &mut loss, true)?
        && base != DEFAULT_BASE
    {
        put("backoff", string(yaml::go_duration_text(base)));
    }
    let host = dns_label(s.str("name").unwrap_or("service"));
    let mut route = Mapping::new();
    route.insert(
        string("route"),
        Value::Sequence(vec![map([("destination", map([("host", string(host.clone()))]))])]),
    );
    if let Some(d) = s.span("deadline")? {
        route.insert(string("timeout"), string(yaml::go_duration_text(d)));
    }
    route.insert(string("retries"), Value::Mapping(retries));
    let doc = map([
        ("apiVersion", string("networking.istio.io/v1")),
        ("kind", string("VirtualService")),
        ("metadata", map([("name", string(host.clone()))])),
        (
            "spec",
            map([
                ("hosts", Value::Sequence(vec![string(host)])),
                ("http", Value::Sequence(vec![Value::Mapping(route)])),
            ]),
        ),
    ]);
    // carrying() took or refused every key: finish() refuses nothing more.
    let dropped = loss.finish("")?;
    let header = format!(
        "# Istio VirtualService of retrysim strategy \"{}\" (docs/config-files.md): replace the host\n\
         # with your service's. Istio's back-off is Envoy's full jitter, max 10 x base.\n{}",
        s.str("name").unwrap_or("strategy"),
        dropped_comment("#", &dropped)
    );
    Ok(Exported { text: yaml::write(&header, &doc), dropped })
}

/// A Kubernetes name from a strategy name: lower case, other characters as `-`.
pub(super) fn dns_label(name: &str) -> String {
    let label: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect();
    let label = label.trim_matches('-');
    if label.is_empty() { "service".to_string() } else { label.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interop::strategy::Failure;
    use crate::interop::strategy::Strategy;

    fn get<'a>(t: &'a Table, key: &str) -> &'a toml::Value {
        Strategy { kind: KIND, table: t }.get(key).unwrap_or_else(|| panic!("no {key} in {t}"))
    }

    /// Istio's HTTPRetry example (the VirtualService reference): 3 retries on
    /// gateway-error, connect-failure and refused-stream, 2 s per attempt.
    const DOC_EXAMPLE: &str = "apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: ratings-route
spec:
  hosts:
  - ratings.prod.svc.cluster.local
  http:
  - route:
    - destination:
        host: ratings.prod.svc.cluster.local
        subset: v1
    retries:
      attempts: 3
      perTryTimeout: 2s
      retryOn: gateway-error,connect-failure,refused-stream
";

    #[test]
    fn the_documented_example_imports_to_its_values_with_istios_defaults() {
        let i = Istio.import(DOC_EXAMPLE, "ratings").unwrap();
        let s = &i.strategy;
        assert_eq!(get(s, "max_attempts").as_integer(), Some(4));
        assert_eq!(get(s, "timeout").as_str(), Some("2s"));
        assert_eq!(get(s, "retry_on").to_string(), r#"[502, 503, 504, "timeout", "connection-error"]"#);
        assert_eq!(get(s, "retry_other_replica").as_bool(), Some(true));
        assert_eq!(get(s, "host_selection_retry_max_attempts").as_integer(), Some(5));
        assert_eq!(
            get(s, "backoff").to_string(),
            r#"{ base = "25ms", cap = "250ms", kind = "full-jitter", multiplier = 2.0 }"#
        );
        assert!(s.get("deadline").is_none() && s.get("budget").is_none());
        assert!(
            i.notes.iter().any(|n| n.contains("refused-stream") && n.contains("no effect")),
            "{:?}",
            i.notes
        );
        assert!(i.notes.iter().any(|n| n.contains("§3h")), "{:?}", i.notes);
    }

    #[test]
    fn no_retries_field_is_istios_default_policy() {
        let text = "spec:\n  http:\n  - route: [{destination: {host: a}}]\n    timeout: 1500ms\n";
        let i = Istio.import(text, "d").unwrap();
        let s = &i.strategy;
        assert_eq!(get(s, "max_attempts").as_integer(), Some(3));
        let retried = Strategy { kind: KIND, table: s }.retry_on().unwrap();
        let expected = [Failure::Status(499), Failure::Status(503), Failure::ConnectionError];
        assert_eq!(retried.into_iter().collect::<Vec<_>>(), expected, "cancelled = 499, unavailable = 503");
        assert_eq!(get(s, "deadline").as_str(), Some("1500ms"));
        assert!(i.notes.iter().any(|n| n.contains("default applied") && n.contains("§3h")), "{:?}", i.notes);
    }

    #[test]
    fn zero_or_absent_attempts_turn_retries_off_and_localities_are_refused() {
        let off = "spec:\n  http:\n  - retries: {perTryTimeout: 1s}\n";
        assert_eq!(get(&Istio.import(off, "o").unwrap().strategy, "max_attempts").as_integer(), Some(1));
        let remote = "spec:\n  http:\n  - retries: {attempts: 2, retryRemoteLocalities: true}\n";
        let e = Istio.import(remote, "r").unwrap_err();
        assert!(
            matches!(&e, InteropError::Unrepresentable { field, .. } if field == "spec.http[0].retries.retryRemoteLocalities"),
            "{e}"
        );
        let unitless = "spec:\n  http:\n  - retries: {attempts: 2, perTryTimeout: 2}\n";
        let e = Istio.import(unitless, "u").unwrap_err().to_string();
        assert!(e.contains("spec.http[0].retries.perTryTimeout: 2 has no unit"), "{e}");
        let differ = "spec:\n  http:\n  - retries: {attempts: 2}\n  - retries: {attempts: 3}\n";
        assert!(Istio.import(differ, "x").unwrap_err().to_string().contains("spec.http[1]"));
    }

    #[test]
    fn import_of_export_is_the_strategy_key_by_key() {
        let strategies = [
            r#"name = "a"
max_attempts = 3
retry_on = [499, 503, "connection-error"]
backoff = { kind = "full-jitter", base = "25ms", cap = "250ms", multiplier = 2.0 }
retry_other_replica = true
host_selection_retry_max_attempts = 5
honor_retry_after = false
"#,
            r#"name = "b"
max_attempts = 1
timeout = "300ms"
deadline = "2s"
retry_on = [409, 429, "timeout", "connection-error"]
backoff = { kind = "full-jitter", base = "100ms", cap = "1s", multiplier = 2.0 }
retry_other_replica = false
honor_retry_after = false
"#,
        ];
        for text in strategies {
            let s: Table = text.parse().unwrap();
            let out = Istio.export(&s, false).unwrap();
            let back = Istio.import(&out.text, s["name"].as_str().unwrap()).unwrap().strategy;
            assert_eq!(back, s, "through\n{}", out.text);
        }
    }

    #[test]
    fn what_a_virtual_service_cannot_say_is_refused_or_listed() {
        let s: Table = r#"name = "x"
max_attempts = 3
retry_on = [503]
backoff = { kind = "full-jitter", base = "100ms", cap = "3s", multiplier = 2.0 }
budget = { kind = "concurrency", percent = 20.0, min_concurrency = 3 }
honor_retry_after = true
retry_after_mode = "envoy"
"#
        .parse()
        .unwrap();
        let e = Istio.export(&s, false).unwrap_err();
        assert!(matches!(&e, InteropError::Inexpressible { key, .. } if key == "budget"), "{e}");
        let out = Istio.export(&s, true).unwrap();
        let keys: Vec<&str> = out.dropped.iter().map(|d| d.split(':').next().unwrap()).collect();
        assert_eq!(keys, ["budget", "honor_retry_after", "retry_after_mode", "backoff.cap"]);
    }
}
