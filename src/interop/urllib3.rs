//! urllib3's `Retry(**kwargs)` keyword arguments as a JSON object, so that a driver applies the
//! file as it is: `Retry(**json.load(f))` (docs/retry-policies.md §7).
//!
//! Counts: `total` retries (the first attempt is not one), `connect` and `read` per failure
//! class; a class count of 0 takes the class out of `retry_on`, a count at least `total` changes
//! nothing, one in between bounds one class only and is refused. The backoff
//! (`Retry.get_backoff_time`, urllib3 2.x) is 0 for the first retry, then
//! `min(backoff_max, backoff_factor * 2^(c-1) + random() * backoff_jitter)` for c consecutive
//! errors: `exponential` (or `additive-jitter` with a jitter) with `base = backoff_factor`,
//! `multiplier = 2`, `cap = backoff_max` and `immediate_first = true`, exactly.

use super::keys::{Keys, Outcomes, duration_value, field_error, outcomes, sub, unrepresentable};
use super::{Exported, Format, Imported, InteropError};
use crate::engine::Span;
use serde_json::{Map, Value as Json, json};
use std::collections::BTreeSet;
use toml::{Table, Value};

const KIND: &str = "urllib3";

/// `Retry()`'s `total`.
const DEFAULT_TOTAL: u64 = 10;
/// `RETRY_AFTER_STATUS_CODES`: retried with a Retry-After header even outside the forcelist.
const RETRY_AFTER_STATUSES: [u16; 3] = [413, 429, 503];
/// `retry_after_max`'s default, 6 h in seconds.
const RETRY_AFTER_MAX_S: u64 = 21_600;
/// `Retry.DEFAULT_BACKOFF_MAX`, the default `backoff_max`, in seconds.
const DEFAULT_BACKOFF_MAX_S: u64 = 120;

/// `Retry.__init__`'s parameters (urllib3 2.7): anything else makes `Retry(**kwargs)` raise.
const KWARGS: &[&str] = &[
    "total",
    "connect",
    "read",
    "redirect",
    "status",
    "other",
    "allowed_methods",
    "status_forcelist",
    "backoff_factor",
    "backoff_max",
    "raise_on_redirect",
    "raise_on_status",
    "history",
    "respect_retry_after_header",
    "remove_headers_on_redirect",
    "backoff_jitter",
    "retry_after_max",
];

pub struct Urllib3;

impl Format for Urllib3 {
    fn kind(&self) -> &'static str {
        KIND
    }

    fn extension(&self) -> &'static str {
        "urllib3.json"
    }

    fn import(&self, text: &str, name: &str) -> Result<Imported, InteropError> {
        let root: Json = serde_json::from_str(text)
            .map_err(|e| InteropError::Parse { kind: KIND, message: e.to_string() })?;
        let kw = root.as_object().ok_or_else(|| {
            field_error(KIND, "(file)", "is not a JSON object", "write the keyword arguments as { ... }")
        })?;
        if let Some(bad) = kw.keys().find(|k| !KWARGS.contains(&k.as_str())) {
            return Err(field_error(
                KIND,
                bad,
                "is not a keyword argument of urllib3.util.Retry (Retry(**kwargs) would raise)",
                format!("use only {}", KWARGS.join(", ")),
            ));
        }
        let mut notes = Vec::new();
        let mut s = Table::new();
        s.insert("name".into(), Value::String(name.into()));
        // total: None lifts the bound, False means no retries at all.
        let total = match kw.get("total") {
            None => {
                notes.push(format!("total absent: {DEFAULT_TOTAL} retries (§7)"));
                Some(DEFAULT_TOTAL)
            }
            Some(Json::Null) => None,
            Some(Json::Bool(false)) => Some(0),
            Some(v) => Some(count(v, "total")?),
        };
        let respect = match kw.get("respect_retry_after_header") {
            None => {
                notes.push("respect_retry_after_header absent: True (§7)".into());
                true
            }
            Some(v) => flag(v, "respect_retry_after_header")?,
        };
        let mut on = Outcomes { statuses: BTreeSet::new(), timeout: true, connection_error: true };
        if let Some(list) = kw.get("status_forcelist").filter(|v| !v.is_null()) {
            let list = list.as_array().ok_or_else(|| {
                field_error(KIND, "status_forcelist", "is not a list", "write status codes, e.g. [502, 503]")
            })?;
            for v in list {
                match v.as_u64() {
                    Some(code) if (400..=599).contains(&code) => on.statuses.insert(code as u16),
                    _ => {
                        return Err(field_error(
                            KIND,
                            "status_forcelist",
                            format!("{v} is not an error status"),
                            "use codes from 400 to 599",
                        ));
                    }
                };
            }
        } else {
            notes
                .push("status_forcelist absent: None, only the Retry-After statuses are retried (§7)".into());
        }
        if respect {
            on.statuses.extend(RETRY_AFTER_STATUSES);
            notes.push(
                "not modelled: 413/429/503 are retried only when the answer carries Retry-After (§7), \
                 retrysim retries them always (as the urllib3 preset does)"
                    .into(),
            );
        }
        // Per-class counts.
        for (key, class) in
            [("connect", "connection-error"), ("read", "timeout"), ("status", "statuses"), ("other", "")]
        {
            let n = match kw.get(key) {
                None | Some(Json::Null) => continue,
                Some(Json::Bool(false)) => 0,
                Some(v) => count(v, key)?,
            };
            if n == 0 {
                match class {
                    "connection-error" => on.connection_error = false,
                    "timeout" => on.timeout = false,
                    "statuses" => on.statuses.clear(),
                    _ => notes.push("other = 0: retrysim has no other errors to retry".into()),
                }
            } else if total.is_none_or(|t| n < t) {
                return Err(unrepresentable(
                    KIND,
                    key,
                    format!(
                        "{key} = {n} bounds one class of failures below total; retrysim has one max_attempts"
                    ),
                ));
            }
        }
        if let Some(t) = total {
            s.insert("max_attempts".into(), Value::Integer(t as i64 + 1));
        }
        if on == Outcomes::default() {
            // Nothing is retried: one attempt says the same (retry_on must not be empty).
            s.insert("max_attempts".into(), Value::Integer(1));
        } else {
            s.insert("retry_on".into(), on.value());
        }
        if respect {
            s.insert("honor_retry_after".into(), Value::Boolean(true));
            s.insert("retry_after_mode".into(), Value::String("replace".into()));
            let max = match kw.get("retry_after_max") {
                Some(v) => Span::from_secs(count(v, "retry_after_max")?),
                None => {
                    notes.push("retry_after_max absent: 21600 s (§7)".into());
                    Span::from_secs(RETRY_AFTER_MAX_S)
                }
            };
            s.insert("retry_after_cap".into(), duration_value(max));
        }
        let backoff = backoff_of(kw, &mut notes)?;
        s.insert("backoff".into(), Value::Table(backoff));
        for key in ["redirect", "raise_on_redirect", "remove_headers_on_redirect"] {
            if kw.contains_key(key) {
                notes.push(format!("{key}: redirects are not simulated"));
            }
        }
        if kw.contains_key("raise_on_status") {
            notes.push(
                "raise_on_status: raising or returning the last answer is the same failed operation".into(),
            );
        }
        if kw.contains_key("history") {
            notes.push("history: not read (a new Retry starts with none)".into());
        }
        notes.push(match kw.get("allowed_methods") {
            None => "allowed_methods absent: idempotent methods only (§7); the simulated operations are taken to be of one".into(),
            Some(_) => "allowed_methods: the simulated operations are taken to be of an allowed method".into(),
        });
        Ok(Imported { strategy: s, server: Table::new(), notes })
    }

    fn export(&self, strategy: &Table, lossy: bool) -> Result<Exported, InteropError> {
        let mut k = Keys::new(KIND, strategy, lossy);
        let mut kw = Map::new();
        kw.insert(
            "total".into(),
            match k.take("max_attempts") {
                Some(v) => json!(k.count("max_attempts", v)?.saturating_sub(1)),
                None => Json::Null,
            },
        );
        let on = match k.take("retry_on") {
            Some(v) => outcomes(KIND, "retry_on", v)?,
            None => {
                k.refuse("retry_on", "retrysim's default list has 409 and 502, which urllib3 needs in status_forcelist: list retry_on")?;
                Outcomes { statuses: BTreeSet::new(), timeout: true, connection_error: true }
            }
        };
        if !on.connection_error {
            kw.insert("connect".into(), json!(0));
        }
        if !on.timeout {
            kw.insert("read".into(), json!(0));
        }
        let respect = k.take("honor_retry_after").and_then(Value::as_bool) == Some(true);
        if respect {
            if k.take("retry_after_mode").and_then(Value::as_str).unwrap_or("replace") != "replace" {
                k.refuse("retry_after_mode", "urllib3 sleeps exactly the Retry-After (replace)")?;
            }
            match k.take("retry_after_cap") {
                Some(v) => {
                    let cap = k.span("retry_after_cap", v)?;
                    if cap.as_ns() % 1_000_000_000 != 0 {
                        k.refuse("retry_after_cap", "retry_after_max is whole seconds")?;
                    } else if cap != Span::from_secs(RETRY_AFTER_MAX_S) {
                        kw.insert("retry_after_max".into(), json!(cap.as_ns() / 1_000_000_000));
                    }
                }
                None => k.refuse(
                    "retry_after_cap",
                    "urllib3 caps Retry-After at retry_after_max (21600 s by default)",
                )?,
            }
            let missing: Vec<String> = RETRY_AFTER_STATUSES
                .iter()
                .filter(|s| !on.statuses.contains(s))
                .map(u16::to_string)
                .collect();
            if !missing.is_empty() {
                k.refuse(
                    "retry_on",
                    format!(
                        "urllib3 retries {} with Retry-After when it respects the header",
                        missing.join(", ")
                    ),
                )?;
            }
        }
        kw.insert("status_forcelist".into(), json!(on.statuses.iter().collect::<Vec<_>>()));
        kw.insert("respect_retry_after_header".into(), json!(respect));
        if let Some(b) = k.take("backoff") {
            let b = sub(KIND, "backoff", b)?;
            if let Some(kwargs) = backoff_kwargs(&mut k, b)? {
                kw.extend(kwargs);
            }
        }
        kw.entry("backoff_factor").or_insert(json!(0));
        let dropped = k.finish(
            "urllib3's Retry carries the attempt count, the retried statuses and failure classes and Retry-After; \
             timeouts are urllib3.Timeout's, the rest is not urllib3's",
        )?;
        let text = serde_json::to_string_pretty(&Json::Object(kw)).expect("a JSON value prints") + "\n";
        Ok(Exported { text, dropped })
    }
}

/// The backoff of `backoff_factor`, `backoff_jitter` and `backoff_max`: `none` when both the
/// factor and the jitter are 0 (every retry immediate), else urllib3's formula exactly.
fn backoff_of(kw: &Map<String, Json>, notes: &mut Vec<String>) -> Result<Table, InteropError> {
    let factor = number(kw.get("backoff_factor"), "backoff_factor")?;
    let jitter = number(kw.get("backoff_jitter"), "backoff_jitter")?.unwrap_or(0.0);
    let kind = |k: &str| ("kind".to_string(), Value::String(k.into()));
    let factor = match factor {
        None if jitter == 0.0 => {
            notes.push("backoff_factor absent: 0, every retry is immediate (§7)".into());
            return Ok(Table::from_iter([kind("none")]));
        }
        Some(f) if f == 0.0 && jitter == 0.0 => return Ok(Table::from_iter([kind("none")])),
        f => f.unwrap_or(0.0),
    };
    let max = match number(kw.get("backoff_max"), "backoff_max")? {
        Some(m) => m,
        None => {
            notes.push(format!("backoff_max absent: {DEFAULT_BACKOFF_MAX_S} s (§7)"));
            DEFAULT_BACKOFF_MAX_S as f64
        }
    };
    if max < factor {
        return Err(unrepresentable(
            KIND,
            "backoff_max",
            format!(
                "backoff_max {max} s is below backoff_factor {factor} s: every delay after the first retry is \
                 backoff_max, which no retrysim backoff with cap >= base says; raise backoff_max"
            ),
        ));
    }
    let secs = |x: f64| duration_value(Span::from_secs_f64(x));
    let mut t = Table::from_iter([
        kind(if jitter > 0.0 { "additive-jitter" } else { "exponential" }),
        ("base".to_string(), secs(factor)),
        ("cap".to_string(), secs(max)),
        ("multiplier".to_string(), Value::Float(2.0)),
        ("immediate_first".to_string(), Value::Boolean(true)),
    ]);
    if jitter > 0.0 {
        t.insert("jitter".into(), secs(jitter));
    }
    Ok(t)
}

/// The keyword arguments of a strategy's backoff, `None` for `none` (every retry immediate,
/// `backoff_factor` 0); what urllib3's formula cannot say is refused (or dropped) as `backoff`.
fn backoff_kwargs(k: &mut Keys<'_>, b: &Table) -> Result<Option<Map<String, Json>>, InteropError> {
    let kind = b.get("kind").and_then(Value::as_str).unwrap_or("");
    let formula = "urllib3 waits 0 before the first retry, then min(backoff_max, backoff_factor x 2^(c-1) \
                   + U(0, backoff_jitter)): exponential or additive-jitter with multiplier 2, a cap and \
                   immediate_first = true, or none";
    if kind == "none" {
        return Ok(None);
    }
    if !matches!(kind, "exponential" | "additive-jitter") {
        k.refuse("backoff", format!("{kind}: {formula}"))?;
        return Ok(None);
    }
    let multiplier = match b.get("multiplier") {
        Some(v) => k.number("backoff.multiplier", v)?,
        None => 2.0,
    };
    let immediate_first = b.get("immediate_first").and_then(Value::as_bool).unwrap_or(false);
    let (Some(base), Some(cap)) = (b.get("base"), b.get("cap")) else {
        k.refuse("backoff", format!("{kind} without a cap: {formula}"))?;
        return Ok(None);
    };
    if multiplier != 2.0 || !immediate_first {
        k.refuse(
            "backoff",
            format!("{kind} with multiplier {multiplier} and immediate_first = {immediate_first}: {formula}"),
        )?;
        return Ok(None);
    }
    let secs = |s: Span| json!(s.as_secs_f64());
    let mut kw = Map::new();
    kw.insert("backoff_factor".into(), secs(k.span("backoff.base", base)?));
    kw.insert("backoff_max".into(), secs(k.span("backoff.cap", cap)?));
    if kind == "additive-jitter" {
        let jitter = b
            .get("jitter")
            .ok_or_else(|| field_error(KIND, "backoff.jitter", "is missing", "check the strategy"))?;
        kw.insert("backoff_jitter".into(), secs(k.span("backoff.jitter", jitter)?));
    }
    Ok(Some(kw))
}

fn count(v: &Json, field: &str) -> Result<u64, InteropError> {
    v.as_u64().ok_or_else(|| field_error(KIND, field, format!("{v} is not a count"), "write an integer >= 0"))
}

fn flag(v: &Json, field: &str) -> Result<bool, InteropError> {
    v.as_bool()
        .ok_or_else(|| field_error(KIND, field, format!("{v} is not true or false"), "write true or false"))
}

fn number(v: Option<&Json>, field: &str) -> Result<Option<f64>, InteropError> {
    match v {
        None => Ok(None),
        Some(v) => match v.as_f64() {
            Some(x) if x >= 0.0 => Ok(Some(x)),
            _ => {
                Err(field_error(KIND, field, format!("{v} is not a number >= 0"), "write seconds, e.g. 0.5"))
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::super::keys::testing::*;
    use super::*;

    #[test]
    fn retrys_documented_defaults_import_with_notes() {
        let imp = Urllib3.import("{}", "u").unwrap();
        let want = strategy(
            r#"max_attempts = 11
               retry_on = [413, 429, 503, "timeout", "connection-error"]
               honor_retry_after = true
               retry_after_mode = "replace"
               retry_after_cap = "6h"
               backoff = { kind = "none" }"#,
        );
        let mut got = imp.strategy.clone();
        got.insert("name".into(), "s".into());
        assert_eq!(normalized(&got), normalized(&want));
        for default in [
            "total absent: 10",
            "backoff_factor absent: 0",
            "respect_retry_after_header absent",
            "allowed_methods absent",
        ] {
            assert!(imp.notes.iter().any(|n| n.starts_with(default)), "{default}: {:?}", imp.notes);
        }
    }

    #[test]
    fn counts_and_the_forcelist_map_to_attempts_and_outcomes() {
        let imp = Urllib3
            .import(r#"{"total": 3, "connect": 0, "read": 5, "status_forcelist": [502, 504], "respect_retry_after_header": false, "raise_on_status": false}"#, "u")
            .unwrap();
        assert_eq!(imp.strategy["max_attempts"].as_integer(), Some(4));
        assert_eq!(
            imp.strategy["retry_on"],
            Value::Array(vec![Value::Integer(502), Value::Integer(504), "timeout".into()])
        );
        assert!(!imp.strategy.contains_key("honor_retry_after"), "false, the key's default");
        assert!(!imp.strategy.contains_key("retry_after_cap"));
        // A single retry waits 0 whatever the factor; the factor is kept, immediate_first says so.
        let one = Urllib3.import(r#"{"total": 1, "backoff_factor": 2, "backoff_max": 5}"#, "u").unwrap();
        assert_eq!(
            normalized(&one.strategy)["backoff"],
            Value::Table(strategy(
                r#"backoff = { kind = "exponential", base = "2s", cap = "5s", multiplier = 2.0, immediate_first = true }"#
            )["backoff"].as_table().unwrap().clone())
        );
        let none = Urllib3.import(r#"{"total": false}"#, "u").unwrap();
        assert_eq!(none.strategy["max_attempts"].as_integer(), Some(1));
        let unlimited = Urllib3.import(r#"{"total": null}"#, "u").unwrap();
        assert!(!unlimited.strategy.contains_key("max_attempts"));
    }

    #[test]
    fn the_documented_backoff_example_imports_to_immediate_first() {
        // Retry's docstring: "If the backoff_factor is 0.1, then Retry.sleep will sleep for
        // [0.0s, 0.2s, 0.4s, 0.8s, ...] between retries. No backoff will ever be longer than
        // backoff_max" (DEFAULT_BACKOFF_MAX = 120 s).
        let imp = Urllib3.import(r#"{"backoff_factor": 0.1}"#, "u").unwrap();
        let want = strategy(
            r#"backoff = { kind = "exponential", base = "100ms", cap = "120s", multiplier = 2.0, immediate_first = true }"#,
        );
        assert_eq!(normalized(&imp.strategy)["backoff"], normalized(&want)["backoff"]);
        assert!(imp.notes.iter().any(|n| n.starts_with("backoff_max absent: 120 s")), "{:?}", imp.notes);
        // backoff_jitter adds U(0, jitter) before the cap: additive-jitter.
        let jittered = Urllib3
            .import(r#"{"total": 3, "backoff_factor": 0.05, "backoff_jitter": 0.03, "backoff_max": 2}"#, "u")
            .unwrap();
        let want = strategy(
            r#"backoff = { kind = "additive-jitter", base = "50ms", cap = "2s", multiplier = 2.0, jitter = "30ms", immediate_first = true }"#,
        );
        assert_eq!(normalized(&jittered.strategy)["backoff"], normalized(&want)["backoff"]);
        // A jitter without a factor: U(0, jitter) from the second retry on.
        let only_jitter = Urllib3.import(r#"{"backoff_jitter": 0.5, "backoff_max": 1}"#, "u").unwrap();
        assert_eq!(only_jitter.strategy["backoff"]["kind"].as_str(), Some("additive-jitter"));
        assert_eq!(only_jitter.strategy["backoff"]["base"].as_str(), Some("0s"));
        // An explicit factor of 0 is no backoff, without a note.
        let zero = Urllib3.import(r#"{"backoff_factor": 0}"#, "u").unwrap();
        assert_eq!(zero.strategy["backoff"]["kind"].as_str(), Some("none"));
        assert!(!zero.notes.iter().any(|n| n.starts_with("backoff")), "{:?}", zero.notes);
    }

    #[test]
    fn what_urllib3_expresses_round_trips_key_by_key() {
        assert_round_trips(
            &Urllib3,
            &[
                r#"max_attempts = 11
                   retry_on = [413, 429, 503, "timeout", "connection-error"]
                   honor_retry_after = true
                   retry_after_mode = "replace"
                   retry_after_cap = "6h"
                   backoff = { kind = "none" }"#,
                r#"max_attempts = 4
                   retry_on = [500, 502, 503]
                   honor_retry_after = false
                   backoff = { kind = "none" }"#,
                r#"retry_on = [413, 429, 500, 503, "connection-error"]
                   honor_retry_after = true
                   retry_after_mode = "replace"
                   retry_after_cap = "30s"
                   backoff = { kind = "none" }"#,
                r#"max_attempts = 2
                   retry_on = ["timeout"]
                   backoff = { kind = "none" }"#,
                r#"max_attempts = 4
                   retry_on = [429, 500, 502, 503, 504, "timeout", "connection-error"]
                   backoff = { kind = "exponential", base = "50ms", cap = "2s", multiplier = 2.0, immediate_first = true }"#,
                r#"max_attempts = 6
                   retry_on = [413, 429, 503, "timeout", "connection-error"]
                   honor_retry_after = true
                   retry_after_mode = "replace"
                   retry_after_cap = "6h"
                   backoff = { kind = "additive-jitter", base = "20ms", cap = "1s", multiplier = 2.0, jitter = "50ms", immediate_first = true }"#,
                r#"max_attempts = 3
                   retry_on = [503]
                   backoff = { kind = "exponential", base = "1500us", cap = "120s", multiplier = 2.0, immediate_first = true }"#,
            ],
        );
    }

    #[test]
    fn what_urllib3_cannot_express_is_refused_or_dropped_with_lossy() {
        let ok = "max_attempts = 3\nretry_on = [503]\nbackoff = { kind = \"none\" }";
        let with_backoff = |b: &str| ok.replace("{ kind = \"none\" }", b);
        // Not urllib3's formula: the first retry waits, the growth is not 2, no cap, a jitter kind.
        for b in [
            r#"{ kind = "exponential", base = "100ms", cap = "1s" }"#,
            r#"{ kind = "exponential", base = "100ms", cap = "1s", multiplier = 3.0, immediate_first = true }"#,
            r#"{ kind = "exponential", base = "100ms", immediate_first = true }"#,
            r#"{ kind = "full-jitter", base = "100ms", cap = "1s" }"#,
            r#"{ kind = "constant", base = "100ms" }"#,
        ] {
            assert_refused(&Urllib3, &with_backoff(b), "backoff");
        }
        assert_refused(&Urllib3, &format!("{ok}\ntimeout = \"1s\""), "timeout");
        assert_refused(&Urllib3, &format!("{ok}\nbudget = {{ kind = \"ratio\" }}"), "budget");
        assert_refused(
            &Urllib3,
            &format!("{ok}\nhonor_retry_after = true\nretry_after_cap = \"6h\""),
            "retry_on",
        );
        assert_refused(
            &Urllib3,
            "max_attempts = 3\nretry_on = [413, 429, 503]\nbackoff = { kind = \"none\" }\nhonor_retry_after = true\nretry_after_mode = \"at-least-backoff\"\nretry_after_cap = \"6h\"",
            "retry_after_mode",
        );
        assert_refused(&Urllib3, "max_attempts = 3\nbackoff = { kind = \"none\" }", "retry_on");
    }

    #[test]
    fn malformed_files_and_values_name_the_field() {
        assert_import_error(&Urllib3, "{\"total\": ", "");
        assert_import_error(&Urllib3, "[1]", "(file)");
        assert_import_error(&Urllib3, r#"{"totl": 3}"#, "totl");
        assert_import_error(&Urllib3, r#"{"total": -1}"#, "total");
        assert_import_error(&Urllib3, r#"{"status_forcelist": [200]}"#, "status_forcelist");
        assert_import_error(
            &Urllib3,
            r#"{"total": 5, "backoff_factor": 0.5, "backoff_max": 0.2}"#,
            "backoff_max",
        );
        assert_import_error(&Urllib3, r#"{"backoff_jitter": "1s"}"#, "backoff_jitter");
        assert_import_error(&Urllib3, r#"{"total": 5, "backoff_factor": -1}"#, "backoff_factor");
        assert_import_error(&Urllib3, r#"{"total": 5, "connect": 2}"#, "connect");
        assert_import_error(
            &Urllib3,
            r#"{"respect_retry_after_header": "yes"}"#,
            "respect_retry_after_header",
        );
    }
}
