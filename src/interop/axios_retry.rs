//! axios-retry's options object `axiosRetry(axios, options)` as JSON (docs/retry-policies.md
//! §7). Functions cannot travel in JSON, so `retryDelay` and `retryCondition` name the
//! library's built-ins: `retryDelay` is `"noDelay"` (the default), or
//! `{ "name": "linearDelay" | "exponentialDelay", "delayFactor": ms }`; `retryCondition` is
//! `"isNetworkOrIdempotentRequestError"` (the default), `"isRetryableError"` or
//! `"isNetworkError"`. A driver turns the names into the functions and passes the rest as it is.
//!
//! Every built-in delay reads Retry-After as `max(delay, retryAfter)`: `at-least-backoff`.
//! `exponentialDelay(n, error, f)` is `d + d * 0.2 * random()` with `d = max(2^n f, retryAfter)`
//! (`n` = 1 for the first retry): without a Retry-After that is exactly `proportional-jitter`
//! with `base = 2.2 f`, `multiplier = 2`, `p = 1/11` and no cap (2^n f x U(1, 1.2) =
//! 2.2 f x 2^(n-1) x U(1 - 1/11, 1 + 1/11)). Its jitter also falls on a Retry-After, which
//! `at-least-backoff` takes as it is: the import says so in a note (as the preset does), the
//! export refuses `retry_after_mode` without `--lossy`.

use super::keys::{
    Keys, Outcomes, duration_value, field_error, outcomes, sub, unknown_notes, unrepresentable,
};
use super::{Exported, Format, Imported, InteropError};
use crate::engine::Span;
use serde_json::{Map, Value as Json, json};
use std::collections::BTreeSet;
use toml::{Table, Value};

const KIND: &str = "axios-retry";

/// `DEFAULT_OPTIONS.retries`.
const DEFAULT_RETRIES: u64 = 3;
/// The delay factor of `linearDelay()` and `exponentialDelay` when none is given, in ms.
const DEFAULT_DELAY_FACTOR_MS: u64 = 100;
/// `exponentialDelay`'s jitter as a `proportional-jitter` `p`: U(1, 1.2) = 1.1 x U(1 - p, 1 + p).
const EXPONENTIAL_P: f64 = 1.0 / 11.0;
/// `exponentialDelay`'s `proportional-jitter` base per ms of delay factor: 2 (its n starts at 1)
/// x 1.1 (the middle of U(1, 1.2)), in ns.
const EXPONENTIAL_BASE_NS_PER_FACTOR_MS: f64 = 2.2e6;

/// The statuses of `isRetryableError` (429 and 5xx) that retrysim's servers answer.
const RETRYABLE_STATUSES: [u16; 5] = [429, 500, 502, 503, 504];

pub struct AxiosRetry;

impl Format for AxiosRetry {
    fn kind(&self) -> &'static str {
        KIND
    }

    fn extension(&self) -> &'static str {
        "axios-retry.json"
    }

    fn import(&self, text: &str, name: &str) -> Result<Imported, InteropError> {
        let root: Json = serde_json::from_str(text)
            .map_err(|e| InteropError::Parse { kind: KIND, message: e.to_string() })?;
        let o = root.as_object().ok_or_else(|| {
            field_error(KIND, "(file)", "is not a JSON object", "write the options as { ... }")
        })?;
        let mut notes = unknown_notes(
            "",
            o.keys().map(String::as_str),
            &["retries", "retryDelay", "retryCondition", "shouldResetTimeout"],
        );
        let mut s = Table::new();
        s.insert("name".into(), Value::String(name.into()));
        let retries = match o.get("retries") {
            None => {
                notes.push(format!("retries absent: {DEFAULT_RETRIES} (§7)"));
                DEFAULT_RETRIES
            }
            Some(v) => v.as_u64().ok_or_else(|| {
                field_error(
                    KIND,
                    "retries",
                    format!("{v} is not a count"),
                    "write the retries after the first request, e.g. 3",
                )
            })?,
        };
        s.insert("max_attempts".into(), Value::Integer(retries as i64 + 1));
        let on = match o.get("retryCondition") {
            None => {
                notes.push("retryCondition absent: isNetworkOrIdempotentRequestError (§7)".into());
                condition("isNetworkOrIdempotentRequestError", &mut notes)?
            }
            Some(Json::String(c)) => condition(c, &mut notes)?,
            Some(v) => {
                return Err(field_error(
                    KIND,
                    "retryCondition",
                    format!("{v} is not a name"),
                    "name a built-in, e.g. \"isNetworkError\"",
                ));
            }
        };
        s.insert("retry_on".into(), on.value());
        s.insert("honor_retry_after".into(), Value::Boolean(true));
        s.insert("retry_after_mode".into(), Value::String("at-least-backoff".into()));
        let backoff = match o.get("retryDelay") {
            None => {
                notes.push("retryDelay absent: noDelay, max(0, retryAfter) (§7)".into());
                Table::from_iter([("kind".to_string(), Value::String("none".into()))])
            }
            Some(Json::String(n)) => delay(n, None, &mut notes)?,
            Some(Json::Object(d)) => {
                notes.extend(unknown_notes(
                    "retryDelay.",
                    d.keys().map(String::as_str),
                    &["name", "delayFactor"],
                ));
                let n = d.get("name").and_then(Json::as_str).ok_or_else(|| {
                    field_error(
                        KIND,
                        "retryDelay.name",
                        "is missing",
                        "name a built-in: noDelay, linearDelay or exponentialDelay",
                    )
                })?;
                let factor = match d.get("delayFactor") {
                    None => None,
                    Some(f) => Some(f.as_f64().filter(|f| *f > 0.0).ok_or_else(|| {
                        field_error(
                            KIND,
                            "retryDelay.delayFactor",
                            format!("{f} is not a number > 0"),
                            "write milliseconds, e.g. 100",
                        )
                    })?),
                };
                delay(n, factor, &mut notes)?
            }
            Some(v) => {
                return Err(field_error(
                    KIND,
                    "retryDelay",
                    format!("{v} is not a name"),
                    "write e.g. \"noDelay\"",
                ));
            }
        };
        s.insert("backoff".into(), Value::Table(backoff));
        match o.get("shouldResetTimeout") {
            Some(Json::Bool(true)) => {}
            Some(Json::Bool(false)) | None => notes.push(
                "shouldResetTimeout false (the default, §7): with an axios timeout, retries get what is left of it; \
                 the timeout is axios's, not in these options"
                    .into(),
            ),
            Some(v) => return Err(field_error(KIND, "shouldResetTimeout", format!("{v} is not true or false"), "write true or false")),
        }
        Ok(Imported { strategy: s, server: Table::new(), notes })
    }

    fn export(&self, strategy: &Table, lossy: bool) -> Result<Exported, InteropError> {
        let mut k = Keys::new(KIND, strategy, lossy);
        let mut o = Map::new();
        let retries = match k.take("max_attempts") {
            Some(v) => k.count("max_attempts", v)?.saturating_sub(1),
            None => {
                k.refuse("max_attempts", "unlimited attempts: axios-retry counts retries")?;
                DEFAULT_RETRIES
            }
        };
        o.insert("retries".into(), json!(retries));
        let mut jittered_retry_after = false;
        if let Some(b) = k.take("backoff") {
            let b = sub(KIND, "backoff", b)?;
            if let Some(delay) = retry_delay(&mut k, b)? {
                jittered_retry_after = delay["name"] == "exponentialDelay";
                o.insert("retryDelay".into(), delay);
            }
        }
        if k.take("honor_retry_after").and_then(Value::as_bool) != Some(true)
            || k.take("retry_after_mode").and_then(Value::as_str) != Some("at-least-backoff")
        {
            k.refuse(
                "retry_after_mode",
                "axios-retry's built-in delays always wait max(delay, Retry-After) (at-least-backoff)",
            )?;
        } else if jittered_retry_after {
            k.refuse(
                "retry_after_mode",
                "exponentialDelay waits max(2^n x delayFactor, Retry-After) x U(1, 1.2): the Retry-After is \
                 jittered too, which at-least-backoff does not do (the delays without a Retry-After are exact)",
            )?;
        }
        if k.take("retry_after_cap").is_some() {
            k.refuse("retry_after_cap", "axios-retry does not cap Retry-After")?;
        }
        let on = match k.take("retry_on") {
            Some(v) => outcomes(KIND, "retry_on", v)?,
            None => Outcomes::default(),
        };
        let network = Outcomes { statuses: BTreeSet::new(), timeout: false, connection_error: true };
        let default = Outcomes { statuses: RETRYABLE_STATUSES.into(), ..network.clone() };
        if on == network {
            o.insert("retryCondition".into(), json!("isNetworkError"));
        } else {
            if on != default {
                k.refuse(
                    "retry_on",
                    "axios-retry's built-in conditions retry connection errors, with or without 429 and 5xx \
                     ([429, 500, 502, 503, 504, \"connection-error\"] or [\"connection-error\"])",
                )?;
            }
            o.insert("retryCondition".into(), json!("isNetworkOrIdempotentRequestError"));
        }
        o.insert("shouldResetTimeout".into(), json!(true));
        let dropped = k.finish(
            "axios-retry's options carry the retries, a built-in delay and condition; the request timeout is axios's",
        )?;
        let text = serde_json::to_string_pretty(&Json::Object(o)).expect("a JSON value prints") + "\n";
        Ok(Exported { text, dropped })
    }
}

/// The `retryDelay` of a strategy's backoff (`None` for `none`: noDelay, the default);
/// what no built-in says exactly is refused (or dropped) as `backoff`.
fn retry_delay(k: &mut Keys<'_>, b: &Table) -> Result<Option<Json>, InteropError> {
    let builtins = "axios-retry's built-ins are noDelay (none), linearDelay (linear without a cap) and \
                    exponentialDelay (proportional-jitter, multiplier 2, p = 1/11, no cap)";
    let kind = b.get("kind").and_then(Value::as_str).unwrap_or("?");
    let base =
        || b.get("base").ok_or_else(|| field_error(KIND, "backoff.base", "is missing", "check the strategy"));
    match kind {
        "none" => Ok(None),
        "linear" if !b.contains_key("cap") => {
            let base = k.span("backoff.base", base()?)?;
            if base.as_ns() % 1_000_000 != 0 {
                k.refuse("backoff", "linearDelay's factor is whole milliseconds")?;
            }
            Ok(Some(json!({ "name": "linearDelay", "delayFactor": base.as_ns() / 1_000_000 })))
        }
        "proportional-jitter" if !b.contains_key("cap") => {
            let multiplier = b.get("multiplier").map_or(Ok(2.0), |v| k.number("backoff.multiplier", v))?;
            let p = b.get("p").map_or(Ok(0.2), |v| k.number("backoff.p", v))?;
            if multiplier != 2.0 || (p - EXPONENTIAL_P).abs() > 1e-12 {
                k.refuse(
                    "backoff",
                    format!("proportional-jitter with multiplier {multiplier} and p {p}: {builtins}"),
                )?;
                return Ok(None);
            }
            let factor_ms = k.span("backoff.base", base()?)?.as_ns_f64() / EXPONENTIAL_BASE_NS_PER_FACTOR_MS;
            let factor = if factor_ms.fract() == 0.0 { json!(factor_ms as u64) } else { json!(factor_ms) };
            Ok(Some(json!({ "name": "exponentialDelay", "delayFactor": factor })))
        }
        _ => {
            k.refuse("backoff", format!("{kind}: {builtins}"))?;
            Ok(None)
        }
    }
}

/// The outcomes a named `retryCondition` retries.
fn condition(name: &str, notes: &mut Vec<String>) -> Result<Outcomes, InteropError> {
    let network = Outcomes { statuses: BTreeSet::new(), timeout: false, connection_error: true };
    match name {
        "isNetworkError" => Ok(network),
        "isRetryableError" | "isNetworkOrIdempotentRequestError" => {
            if name == "isNetworkOrIdempotentRequestError" {
                notes.push(
                    "not modelled: 429 and 5xx are retried only for GET, HEAD, OPTIONS, PUT, DELETE, not POST (§7); \
                     the simulated operations are taken to be idempotent"
                        .into(),
                );
            }
            notes.push("timeouts (ECONNABORTED) are not retried (§7)".into());
            Ok(Outcomes { statuses: RETRYABLE_STATUSES.into(), ..network })
        }
        other => Err(unrepresentable(
            KIND,
            "retryCondition",
            format!(
                "{other:?} is not one of the built-ins read (isNetworkOrIdempotentRequestError, isRetryableError, isNetworkError)"
            ),
        )),
    }
}

/// The backoff of a named `retryDelay`.
fn delay(name: &str, factor_ms: Option<f64>, notes: &mut Vec<String>) -> Result<Table, InteropError> {
    let kind = |k: &str| ("kind".to_string(), Value::String(k.into()));
    match name {
        "noDelay" => Ok(Table::from_iter([kind("none")])),
        "linearDelay" => {
            let ms = factor_ms.unwrap_or_else(|| {
                notes.push(format!("retryDelay.delayFactor absent: {DEFAULT_DELAY_FACTOR_MS} ms (§7)"));
                DEFAULT_DELAY_FACTOR_MS as f64
            });
            Ok(Table::from_iter([
                kind("linear"),
                ("base".to_string(), duration_value(Span::from_ns_f64(ms * 1e6))),
            ]))
        }
        "exponentialDelay" => {
            let ms = factor_ms.unwrap_or_else(|| {
                notes.push(format!("retryDelay.delayFactor absent: {DEFAULT_DELAY_FACTOR_MS} ms (§7)"));
                DEFAULT_DELAY_FACTOR_MS as f64
            });
            notes.push(
                "not modelled: exponentialDelay jitters a Retry-After too, max(2^n x delayFactor, Retry-After) x \
                 U(1, 1.2); retrysim waits max(backoff, Retry-After) (at-least-backoff, as the axios-retry preset)"
                    .into(),
            );
            Ok(Table::from_iter([
                kind("proportional-jitter"),
                (
                    "base".to_string(),
                    duration_value(Span::from_ns_f64(ms * EXPONENTIAL_BASE_NS_PER_FACTOR_MS)),
                ),
                ("multiplier".to_string(), Value::Float(2.0)),
                ("p".to_string(), Value::Float(EXPONENTIAL_P)),
            ]))
        }
        other => Err(unrepresentable(
            KIND,
            "retryDelay",
            format!("{other:?} is not one of the built-ins read (noDelay, linearDelay, exponentialDelay)"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::super::keys::testing::*;
    use super::*;

    #[test]
    fn the_documented_defaults_import_with_notes() {
        let imp = AxiosRetry.import("{}", "a").unwrap();
        let want = strategy(
            r#"max_attempts = 4
               retry_on = [429, 500, 502, 503, 504, "connection-error"]
               honor_retry_after = true
               retry_after_mode = "at-least-backoff"
               backoff = { kind = "none" }"#,
        );
        let mut got = imp.strategy.clone();
        got.insert("name".into(), "s".into());
        assert_eq!(normalized(&got), normalized(&want));
        for default in [
            "retries absent: 3",
            "retryCondition absent",
            "retryDelay absent: noDelay",
            "not modelled: 429 and 5xx",
        ] {
            assert!(imp.notes.iter().any(|n| n.starts_with(default)), "{default}: {:?}", imp.notes);
        }
    }

    #[test]
    fn linear_delay_is_a_linear_backoff_and_exponential_is_refused() {
        let imp = AxiosRetry.import(r#"{"retries": 5, "retryDelay": {"name": "linearDelay", "delayFactor": 250}, "retryCondition": "isNetworkError"}"#, "a").unwrap();
        assert_eq!(imp.strategy["max_attempts"].as_integer(), Some(6));
        assert_eq!(imp.strategy["backoff"]["kind"].as_str(), Some("linear"));
        assert_eq!(imp.strategy["backoff"]["base"].as_str(), Some("250ms"));
        assert_eq!(imp.strategy["retry_on"], Value::Array(vec!["connection-error".into()]));
        let linear_default = AxiosRetry.import(r#"{"retryDelay": "linearDelay"}"#, "a").unwrap();
        assert_eq!(linear_default.strategy["backoff"]["base"].as_str(), Some("100ms"));
    }

    #[test]
    fn exponential_delay_is_proportional_jitter_with_its_retry_after_jitter_noted() {
        // README: `retryDelay: axiosRetry.exponentialDelay`, delayFactor 100 ms by default:
        // 2^n x 100 ms x U(1, 1.2), i.e. 200-240, 400-480, 800-960 ms.
        let imp = AxiosRetry.import(r#"{"retryDelay": "exponentialDelay"}"#, "a").unwrap();
        let want = strategy(&format!(
            "backoff = {{ kind = \"proportional-jitter\", base = \"220ms\", multiplier = 2.0, p = {EXPONENTIAL_P:?} }}"
        ));
        assert_eq!(normalized(&imp.strategy)["backoff"], normalized(&want)["backoff"]);
        assert!(
            imp.notes.iter().any(|n| n.starts_with("retryDelay.delayFactor absent: 100 ms")),
            "{:?}",
            imp.notes
        );
        assert!(imp.notes.iter().any(|n| n.contains("jitters a Retry-After too")), "{:?}", imp.notes);
        // The range of each retry is exactly the library's: base x 2^(n-1) x (1 +- 1/11).
        let f = AxiosRetry
            .import(r#"{"retryDelay": {"name": "exponentialDelay", "delayFactor": 50}}"#, "a")
            .unwrap();
        let base_ms = Span::parse(f.strategy["backoff"]["base"].as_str().unwrap()).unwrap().as_ns_f64() / 1e6;
        for n in 1..=4 {
            let lo = base_ms * 2f64.powi(n - 1) * (1.0 - EXPONENTIAL_P);
            let hi = base_ms * 2f64.powi(n - 1) * (1.0 + EXPONENTIAL_P);
            let library = 2f64.powi(n) * 50.0;
            assert!((lo - library).abs() < 1e-9 && (hi - 1.2 * library).abs() < 1e-9, "n {n}: {lo}..{hi}");
        }
    }

    #[test]
    fn what_axios_retry_expresses_round_trips_key_by_key() {
        let common = "honor_retry_after = true\nretry_after_mode = \"at-least-backoff\"";
        assert_round_trips(
            &AxiosRetry,
            &[
                &format!(
                    "max_attempts = 4\nretry_on = [429, 500, 502, 503, 504, \"connection-error\"]\nbackoff = {{ kind = \"none\" }}\n{common}"
                ),
                &format!(
                    "max_attempts = 1\nretry_on = [\"connection-error\"]\nbackoff = {{ kind = \"linear\", base = \"300ms\" }}\n{common}"
                ),
                &format!(
                    "max_attempts = 9\nretry_on = [\"connection-error\"]\nbackoff = {{ kind = \"none\" }}\n{common}"
                ),
            ],
        );
        // exponentialDelay: exact but for the Retry-After's jitter, the one key --lossy drops.
        for base in ["220ms", "110ms", "50ms", "1s"] {
            let s = strategy(&format!(
                "max_attempts = 4\nretry_on = [429, 500, 502, 503, 504, \"connection-error\"]\n\
                 backoff = {{ kind = \"proportional-jitter\", base = \"{base}\", multiplier = 2.0, p = {EXPONENTIAL_P:?} }}\n{common}"
            ));
            let exported = AxiosRetry.export(&s, true).unwrap();
            assert_eq!(exported.dropped.len(), 1, "{:?}", exported.dropped);
            assert!(
                exported.dropped[0].starts_with("retry_after_mode: exponentialDelay"),
                "{:?}",
                exported.dropped
            );
            let imported = AxiosRetry.import(&exported.text, "s").unwrap();
            assert_eq!(normalized(&imported.strategy), normalized(&s), "{base}:\n{}", exported.text);
        }
    }

    #[test]
    fn what_axios_retry_cannot_express_is_refused_or_dropped_with_lossy() {
        let common = "honor_retry_after = true\nretry_after_mode = \"at-least-backoff\"\nretry_on = [\"connection-error\"]";
        assert_refused(
            &AxiosRetry,
            &format!(
                "max_attempts = 3\nbackoff = {{ kind = \"linear\", base = \"1ms\", cap = \"5ms\" }}\n{common}"
            ),
            "backoff",
        );
        assert_refused(
            &AxiosRetry,
            &format!("max_attempts = 3\nbackoff = {{ kind = \"full-jitter\", base = \"1ms\" }}\n{common}"),
            "backoff",
        );
        assert_refused(
            &AxiosRetry,
            &format!("max_attempts = 3\ntimeout = \"1s\"\nbackoff = {{ kind = \"none\" }}\n{common}"),
            "timeout",
        );
        assert_refused(
            &AxiosRetry,
            "max_attempts = 3\nbackoff = { kind = \"none\" }\nretry_on = [\"connection-error\"]",
            "retry_after_mode",
        );
        assert_refused(
            &AxiosRetry,
            &format!(
                "max_attempts = 3\nbackoff = {{ kind = \"none\" }}\n{}",
                common.replace("[\"connection-error\"]", "[503, \"timeout\"]")
            ),
            "retry_on",
        );
        assert_refused(&AxiosRetry, &format!("backoff = {{ kind = \"none\" }}\n{common}"), "max_attempts");
        // Not exponentialDelay's jitter, growth or (absent) cap.
        for b in [
            r#"{ kind = "proportional-jitter", base = "220ms" }"#,
            r#"{ kind = "proportional-jitter", base = "220ms", multiplier = 3.0, p = 0.09090909090909091 }"#,
            r#"{ kind = "proportional-jitter", base = "220ms", cap = "5s", p = 0.09090909090909091 }"#,
        ] {
            assert_refused(&AxiosRetry, &format!("max_attempts = 3\nbackoff = {b}\n{common}"), "backoff");
        }
        assert_refused(
            &AxiosRetry,
            &format!(
                "max_attempts = 3\nbackoff = {{ kind = \"proportional-jitter\", base = \"220ms\", p = 0.09090909090909091 }}\n{common}"
            ),
            "retry_after_mode",
        );
    }

    #[test]
    fn malformed_files_and_values_name_the_field() {
        assert_import_error(&AxiosRetry, "{retries: 3}", "");
        assert_import_error(&AxiosRetry, r#"{"retries": -1}"#, "retries");
        assert_import_error(&AxiosRetry, r#"{"retries": "3"}"#, "retries");
        assert_import_error(
            &AxiosRetry,
            r#"{"retryDelay": {"name": "linearDelay", "delayFactor": 0}}"#,
            "retryDelay.delayFactor",
        );
        assert_import_error(&AxiosRetry, r#"{"retryDelay": {"delayFactor": 10}}"#, "retryDelay.name");
        assert_import_error(&AxiosRetry, r#"{"retryCondition": "isSafeRequestError"}"#, "retryCondition");
        assert_import_error(&AxiosRetry, r#"{"shouldResetTimeout": 1}"#, "shouldResetTimeout");
    }
}
