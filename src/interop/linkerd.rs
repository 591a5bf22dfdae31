//! Linkerd: a ServiceProfile's `retryBudget` and its routes' `isRetryable` and `timeout`
//! (reference §3b). Linkerd retries the 5xx answers of a retryable route at once (no
//! back-off), as often as the budget allows, within the route's timeout.
//!
//! | Linkerd | retrysim | source (docs/retry-policies.md) |
//! |---|---|---|
//! | `retryBudget` (0.2, 10/s, 10 s) | `budget = ratio` | §3b |
//! | `routes[].isRetryable` (default false) | no `max_attempts` (unbounded), or `max_attempts = 1` | §3b |
//! | `routes[].timeout` (default 10 s) | `deadline` | §3b |
//! | (5xx) | `retry_on = 500..599` | §3b |
//! | (no back-off) | `backoff = none` | §3b |

use super::keys::{Keys, dropped_comment};
use super::strategy::{Failure, duration_value, retry_on_value, server_errors};
use super::yaml::{self, bad, documents, field, map, mapping, string};
use super::{Exported, Format, Imported, InteropError};
use crate::engine::Span;
use serde_yaml_ng::{Mapping, Value};
use std::collections::BTreeSet;
use toml::Table;

/// The Linkerd format.
pub struct Linkerd;

const KIND: &str = "linkerd";

/// The retry budget when the profile has none (reference §3b).
pub const DEFAULT_RETRY_RATIO: f64 = 0.2;
pub const DEFAULT_MIN_RETRIES_PER_SECOND: i64 = 10;
pub const DEFAULT_TTL: Span = Span::from_secs(10);
/// A route's timeout when it gives none (reference §3b).
pub const DEFAULT_TIMEOUT: Span = Span::from_secs(10);
/// The range of `ttl` the proxy accepts (reference §3b).
const TTL_RANGE: (Span, Span) = (Span::from_secs(1), Span::from_secs(60));

impl Format for Linkerd {
    fn kind(&self) -> &'static str {
        KIND
    }
    fn extension(&self) -> &'static str {
        "linkerd.yaml"
    }
    fn import(&self, text: &str, name: &str) -> Result<Imported, InteropError> {
        import(text, name)
    }
    fn export(&self, strategy: &Table, lossy: bool) -> Result<Exported, InteropError> {
        export(strategy, lossy)
    }
}

fn import(text: &str, name: &str) -> Result<Imported, InteropError> {
    let docs = documents(KIND, text)?;
    let profiles: Vec<&Mapping> = docs
        .iter()
        .filter_map(Value::as_mapping)
        .filter(|m| field(m, "kind").and_then(Value::as_str) == Some("ServiceProfile"))
        .collect();
    if profiles.len() > 1 {
        return Err(bad(
            KIND,
            "kind",
            format!("the file has {} ServiceProfiles", profiles.len()),
            "keep the one to simulate",
        ));
    }
    let (path, spec) = match profiles.first() {
        Some(p) => (
            "spec",
            mapping(
                KIND,
                "spec",
                field(p, "spec")
                    .ok_or_else(|| bad(KIND, "spec", "is missing", "give the ServiceProfile's spec"))?,
            )?,
        ),
        None => {
            let profile_like =
                |m: &&Mapping| field(m, "routes").is_some() || field(m, "retryBudget").is_some();
            let maps = || docs.iter().filter_map(Value::as_mapping);
            let spec = maps().filter_map(|m| field(m, "spec").and_then(Value::as_mapping)).find(profile_like);
            match (spec, maps().find(profile_like)) {
                (Some(m), _) => ("spec", m),
                (None, Some(m)) => ("", m),
                (None, None) => {
                    return Err(bad(
                        KIND,
                        "spec",
                        "the file has no ServiceProfile",
                        "give a ServiceProfile (kind: ServiceProfile) with its spec",
                    ));
                }
            }
        }
    };
    let at = |k: &str| if path.is_empty() { k.to_string() } else { format!("{path}.{k}") };
    let mut notes = Vec::new();
    yaml::unknown_fields(
        spec,
        &["routes", "retryBudget", "dstOverrides", "opaquePorts"],
        if path.is_empty() { "spec" } else { path },
        &mut notes,
    );
    for other in ["dstOverrides", "opaquePorts"] {
        if field(spec, other).is_some() {
            notes.push(format!(
                "{}: traffic splitting or protocol detection, not retries: not simulated",
                at(other)
            ));
        }
    }
    let mut strategy = Table::new();
    strategy.insert("name".into(), toml::Value::String(name.to_string()));
    let retried: BTreeSet<Failure> = server_errors().collect();
    strategy.insert("retry_on".into(), retry_on_value(&retried));
    strategy.insert(
        "backoff".into(),
        toml::Value::Table(Table::from_iter([("kind".to_string(), toml::Value::String("none".into()))])),
    );
    notes.push("Linkerd retries the 5xx answers of a retryable route, at once: retry_on = 500..599, backoff none (docs/retry-policies.md §3b)".to_string());
    read_routes(field(spec, "routes"), &at("routes"), &mut strategy, &mut notes)?;
    read_budget(field(spec, "retryBudget"), &at("retryBudget"), &mut strategy, &mut notes)?;
    Ok(Imported { strategy, server: Table::new(), notes })
}

/// `routes`: every route must retry and time out alike (a strategy is one policy).
fn read_routes(
    v: Option<&Value>,
    path: &str,
    strategy: &mut Table,
    notes: &mut Vec<String>,
) -> Result<(), InteropError> {
    let routes: &[Value] = match v {
        None => &[],
        Some(Value::Sequence(r)) => r,
        Some(_) => return Err(bad(KIND, path, "is not a list", "write a list of routes")),
    };
    let Some(first) = routes.first() else {
        notes.push(format!("{path}: no routes: Linkerd neither retries nor times out a request outside a route (docs/retry-policies.md §3b): max_attempts = 1, no deadline"));
        strategy.insert("max_attempts".into(), toml::Value::Integer(1));
        return Ok(());
    };
    let settings =
        |r: &Value| r.as_mapping().map(|m| (field(m, "isRetryable").cloned(), field(m, "timeout").cloned()));
    if let Some(i) = routes.iter().position(|r| settings(r) != settings(first)) {
        return Err(bad(
            KIND,
            &format!("{path}[{i}]"),
            format!("its isRetryable or timeout differs from {path}[0]'s: a strategy is one route's policy"),
            "keep only the route to simulate (or give every route the same isRetryable and timeout)",
        ));
    }
    let route_path = format!("{path}[0]");
    let route = mapping(KIND, &route_path, first)?;
    yaml::unknown_fields(
        route,
        &["name", "condition", "responseClasses", "isRetryable", "timeout"],
        &route_path,
        notes,
    );
    if field(route, "responseClasses").is_some() {
        return Err(InteropError::Unrepresentable {
            kind: KIND,
            field: format!("{route_path}.responseClasses"),
            why: "response classes redefine which answers are failures; retrysim retries the 5xx of Linkerd's default classification".to_string(),
        });
    }
    let retryable = match field(route, "isRetryable") {
        Some(b) => yaml::boolean(KIND, &format!("{route_path}.isRetryable"), b)?,
        None => {
            notes.push(format!(
                "default applied: {route_path}.isRetryable = false (docs/retry-policies.md §3b)"
            ));
            false
        }
    };
    if retryable {
        notes.push("max_attempts left out: Linkerd bounds a request's retries only by the budget and the timeout (docs/retry-policies.md §3b); a [client] max_attempts would apply".to_string());
    } else {
        strategy.insert("max_attempts".into(), toml::Value::Integer(1));
    }
    let timeout = match field(route, "timeout") {
        Some(t) => {
            let at = format!("{route_path}.timeout");
            let t = yaml::go_duration(KIND, &at, t)?;
            if t.is_zero() {
                return Err(bad(KIND, &at, "must be > 0", "give the route's timeout, e.g. \"10s\""));
            }
            t
        }
        None => {
            notes.push(format!("default applied: {route_path}.timeout = 10s, covering every retry (docs/retry-policies.md §3b)"));
            DEFAULT_TIMEOUT
        }
    };
    strategy.insert("deadline".into(), duration_value(timeout));
    Ok(())
}

/// `retryBudget` into a `ratio` budget (Finagle's, which Linkerd's proxy ports).
fn read_budget(
    v: Option<&Value>,
    path: &str,
    strategy: &mut Table,
    notes: &mut Vec<String>,
) -> Result<(), InteropError> {
    let empty = Mapping::new();
    let b = match v {
        Some(v) => mapping(KIND, path, v)?,
        None => {
            notes.push("default applied: retryBudget retryRatio 0.2, minRetriesPerSecond 10, ttl 10s (docs/retry-policies.md §3b)".to_string());
            &empty
        }
    };
    yaml::unknown_fields(b, &["retryRatio", "minRetriesPerSecond", "ttl"], path, notes);
    let mut default = |key: &str, value: &str| {
        if v.is_some() {
            notes.push(format!("default applied: {path}.{key} = {value} (docs/retry-policies.md §3b)"));
        }
    };
    let ratio = match field(b, "retryRatio") {
        Some(r) => yaml::number(KIND, &format!("{path}.retryRatio"), r, 0.0, 1000.0)?,
        None => {
            default("retryRatio", "0.2");
            DEFAULT_RETRY_RATIO
        }
    };
    let per_second = match field(b, "minRetriesPerSecond") {
        Some(m) => yaml::integer(KIND, &format!("{path}.minRetriesPerSecond"), m, 0, i64::from(u32::MAX))?,
        None => {
            default("minRetriesPerSecond", "10");
            DEFAULT_MIN_RETRIES_PER_SECOND
        }
    };
    let ttl = match field(b, "ttl") {
        Some(t) => {
            let at = format!("{path}.ttl");
            let t = yaml::go_duration(KIND, &at, t)?;
            if t < TTL_RANGE.0 || t > TTL_RANGE.1 {
                return Err(bad(
                    KIND,
                    &at,
                    format!("\"{}\" is out of range", yaml::go_duration_text(t)),
                    "the proxy accepts a ttl from 1s to 60s",
                ));
            }
            t
        }
        None => {
            default("ttl", "10s");
            DEFAULT_TTL
        }
    };
    let mut budget = Table::new();
    budget.insert("kind".into(), toml::Value::String("ratio".into()));
    budget.insert("ratio".into(), toml::Value::Float(ratio));
    budget.insert("min_per_second".into(), toml::Value::Float(per_second as f64));
    budget.insert("ttl".into(), duration_value(ttl));
    strategy.insert("budget".into(), toml::Value::Table(budget));
    Ok(())
}

/// The keys a Linkerd export carries.
const CARRIED: &[&str] = &["max_attempts", "deadline", "retry_on", "backoff", "budget"];

fn export(table: &Table, lossy: bool) -> Result<Exported, InteropError> {
    let mut loss = Keys::carrying(KIND, table, lossy, CARRIED, "a Linkerd ServiceProfile")?;
    let s = loss.strategy();
    if s.str("backoff.kind") != Some("none") {
        loss.refuse("backoff", "Linkerd retries at once: it has no back-off")?;
    }
    let retryable = match s.int("max_attempts")? {
        None => true,
        Some(1) => false,
        Some(n) => {
            loss.refuse("max_attempts", format!("Linkerd bounds a request's retries only by the budget and the timeout, not by {n} attempts"))?;
            true
        }
    };
    if retryable && s.retry_on()? != server_errors().collect::<BTreeSet<_>>() {
        loss.refuse(
            "retry_on",
            "Linkerd retries the 5xx answers of a retryable route (500..599), nothing else",
        )?;
    }
    let mut route = Mapping::new();
    route.insert(string("name"), string("every request"));
    route.insert(string("condition"), map([("pathRegex", string(".*"))]));
    route.insert(string("isRetryable"), Value::Bool(retryable));
    match s.span("deadline")? {
        Some(d) => {
            route.insert(string("timeout"), string(yaml::go_duration_text(d)));
        }
        None => loss.refuse(
            "deadline",
            "a Linkerd route always has a timeout (10s when left out); no deadline cannot be said",
        )?,
    }
    let mut spec = Mapping::new();
    spec.insert(string("routes"), Value::Sequence(vec![Value::Mapping(route)]));
    match s.str("budget.kind") {
        Some("ratio") => {
            let ratio = s.num("budget.ratio")?.unwrap_or(DEFAULT_RETRY_RATIO);
            let per_second = s.num("budget.min_per_second")?.unwrap_or(DEFAULT_MIN_RETRIES_PER_SECOND as f64);
            let ttl = s.span("budget.ttl")?.unwrap_or(DEFAULT_TTL);
            let whole = per_second.round();
            if whole != per_second {
                loss.refuse("budget.min_per_second", format!("minRetriesPerSecond is a whole number, not {per_second}: rounded"))?;
            }
            spec.insert(string("retryBudget"), map([
                ("retryRatio", Value::from(ratio)),
                ("minRetriesPerSecond", Value::from(whole as i64)),
                ("ttl", string(yaml::go_duration_text(ttl))),
            ]));
        }
        Some(other) => loss.refuse("budget", format!("Linkerd's budget is a ratio of requests (kind = \"ratio\"), not {other}"))?,
        None => loss.refuse("budget", "Linkerd's retries always go through a retry budget (0.2 of requests + 10/s over 10s when left out)")?,
    }
    let service = super::istio::dns_label(s.str("name").unwrap_or("service"));
    let doc = map([
        ("apiVersion", string("linkerd.io/v1alpha2")),
        ("kind", string("ServiceProfile")),
        (
            "metadata",
            map([
                ("name", string(format!("{service}.default.svc.cluster.local"))),
                ("namespace", string("default")),
            ]),
        ),
        ("spec", Value::Mapping(spec)),
    ]);
    // carrying() took or refused every key: finish() refuses nothing more.
    let dropped = loss.finish("")?;
    let header = format!(
        "# Linkerd ServiceProfile of retrysim strategy \"{}\" (docs/config-files.md): name it after\n\
         # your service's FQDN and narrow the route's condition to the requests it covers.\n{}",
        s.str("name").unwrap_or("strategy"),
        dropped_comment("#", &dropped)
    );
    Ok(Exported { text: yaml::write(&header, &doc), dropped })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interop::strategy::Strategy;

    /// Linkerd's documentation example (configuring retries and timeouts): a retryable route
    /// with a 300 ms timeout, and the default budget written out.
    const DOC_EXAMPLE: &str = "apiVersion: linkerd.io/v1alpha2
kind: ServiceProfile
metadata:
  name: books.booksapp.svc.cluster.local
  namespace: booksapp
spec:
  routes:
  - condition:
      method: GET
      pathRegex: /books/[^/]*\\.json
    name: GET /books/{id}.json
    isRetryable: true
    timeout: 300ms
  retryBudget:
    retryRatio: 0.2
    minRetriesPerSecond: 10
    ttl: 10s
";

    fn strategy(text: &str) -> Table {
        text.parse().unwrap()
    }

    #[test]
    fn the_documented_example_imports_to_its_values() {
        let i = Linkerd.import(DOC_EXAMPLE, "books").unwrap();
        let s = &i.strategy;
        assert!(s.get("max_attempts").is_none(), "retries bounded by the budget and the timeout only");
        assert_eq!(s["deadline"].as_str(), Some("300ms"));
        assert_eq!(s["backoff"].to_string(), r#"{ kind = "none" }"#);
        assert_eq!(
            s["budget"].to_string(),
            r#"{ kind = "ratio", min_per_second = 10.0, ratio = 0.2, ttl = "10s" }"#
        );
        assert_eq!(Strategy { kind: KIND, table: s }.retry_on().unwrap().len(), 100);
    }

    #[test]
    fn defaults_apply_when_the_profile_leaves_them_out() {
        let i = Linkerd
            .import(
                "kind: ServiceProfile\nspec:\n  routes:\n  - name: all\n    condition: {pathRegex: .*}\n",
                "d",
            )
            .unwrap();
        assert_eq!(i.strategy["max_attempts"].as_integer(), Some(1), "isRetryable defaults to false");
        assert_eq!(i.strategy["deadline"].as_str(), Some("10s"));
        assert_eq!(i.strategy["budget"]["ttl"].as_str(), Some("10s"));
        for field_name in ["isRetryable = false", "timeout = 10s", "retryBudget retryRatio 0.2"] {
            assert!(
                i.notes.iter().any(|n| n.contains(field_name) && n.contains("§3b")),
                "{field_name}: {:?}",
                i.notes
            );
        }
    }

    #[test]
    fn bad_and_unrepresentable_fields_are_refused_by_name() {
        let cases = [
            ("spec:\n  retryBudget: {ttl: 90s}\n", "spec.retryBudget.ttl"),
            ("spec:\n  retryBudget: {ttl: 10}\n", "spec.retryBudget.ttl"),
            ("spec:\n  retryBudget: {retryRatio: -1}\n", "spec.retryBudget.retryRatio"),
            ("spec:\n  routes: [{isRetryable: true}, {isRetryable: false}]\n", "spec.routes[1]"),
            (
                "spec:\n  routes: [{isRetryable: true, responseClasses: [{condition: {status: {min: 500}}, isFailure: true}]}]\n",
                "spec.routes[0].responseClasses",
            ),
        ];
        for (yaml, field_name) in cases {
            match Linkerd.import(yaml, "x") {
                Err(InteropError::Field { field, .. } | InteropError::Unrepresentable { field, .. }) => {
                    assert_eq!(field, field_name, "{yaml}")
                }
                other => panic!("{yaml}: {other:?}"),
            }
        }
    }

    #[test]
    fn import_of_export_is_the_strategy_key_by_key() {
        let five_xx = retry_on_value(&server_errors().collect());
        for text in [
            "name = \"a\"\ndeadline = \"300ms\"\nbackoff = { kind = \"none\" }\nbudget = { kind = \"ratio\", ratio = 0.2, min_per_second = 10.0, ttl = \"10s\" }",
            "name = \"b\"\nmax_attempts = 1\ndeadline = \"2s\"\nbackoff = { kind = \"none\" }\nbudget = { kind = \"ratio\", ratio = 0.5, min_per_second = 0.0, ttl = \"60s\" }",
        ] {
            let mut s = strategy(text);
            s.insert("retry_on".into(), five_xx.clone());
            let out = Linkerd.export(&s, false).unwrap();
            let back = Linkerd.import(&out.text, s["name"].as_str().unwrap()).unwrap().strategy;
            assert_eq!(back, s, "through\n{}", out.text);
        }
    }

    #[test]
    fn a_backoff_or_an_attempt_limit_is_refused_without_lossy_and_listed_with_it() {
        let s = strategy(
            "name = \"x\"\nmax_attempts = 3\nretry_on = [503]\ndeadline = \"1s\"\nbackoff = { kind = \"exponential\", base = \"10ms\" }\nbudget = { kind = \"ratio\" }",
        );
        let e = Linkerd.export(&s, false).unwrap_err();
        assert!(matches!(&e, InteropError::Inexpressible { key, .. } if key == "backoff"), "{e}");
        let out = Linkerd.export(&s, true).unwrap();
        let keys: Vec<&str> = out.dropped.iter().map(|d| d.split(':').next().unwrap()).collect();
        assert_eq!(keys, ["backoff", "max_attempts", "retry_on"]);
    }
}
