//! resilience4j's Spring Boot `application.yml`: `resilience4j.retry.instances.NAME` and
//! `resilience4j.circuitbreaker.instances.NAME`, each inheriting from `configs.NAME` by
//! `baseConfig` (or from `configs.default` without one), docs/retry-policies.md §6. Keys are
//! read in Spring's relaxed forms (`maxAttempts`, `max-attempts`); durations in Spring's
//! simple form (`500ms`, `10s`; a bare number is milliseconds).
//!
//! The exception filters (`retryExceptions`, `recordExceptions`, ...) name Java classes, not
//! outcomes: they are reported and not modelled, as in the `resilience4j` preset.

use super::keys::{
    Keys, dropped_comment, duration_value, field_error, other_keys, sub, unknown_notes, unrepresentable,
};
use super::{Exported, Format, Imported, InteropError};
use crate::engine::Span;
use serde_json::{Map, Value as Json, json};
use toml::{Table, Value};

const KIND: &str = "resilience4j";

/// `RetryConfig` and `IntervalFunction` defaults (§6).
const DEFAULT_ATTEMPTS: u64 = 3;
const DEFAULT_WAIT_MS: u64 = 500;
const DEFAULT_MULTIPLIER: f64 = 1.5;
/// `CircuitBreakerConfig` defaults (§6).
const DEFAULT_FAILURE_RATE: f64 = 50.0;
const DEFAULT_SLOW_RATE: f64 = 100.0;
const DEFAULT_SLOW_DURATION: Span = Span::from_secs(60);
const DEFAULT_WINDOW: u64 = 100;
const DEFAULT_MINIMUM_CALLS: u64 = 100;
const DEFAULT_OPEN: Span = Span::from_secs(60);
const DEFAULT_HALF_OPEN_CALLS: u64 = 10;

/// Settings that change which failures count, not the numbers: reported, not modelled.
const FILTERS: &[&str] = &[
    "retryExceptions",
    "ignoreExceptions",
    "recordExceptions",
    "recordFailurePredicate",
    "retryExceptionPredicate",
    "resultPredicate",
    "retryOnResultPredicate",
    "recordResultPredicate",
    "ignoreExceptionPredicate",
];
/// Settings with no effect on calls (health, events, stack traces).
const QUIET: &[&str] = &[
    "registerHealthIndicator",
    "allowHealthIndicatorToFail",
    "eventConsumerBufferSize",
    "writableStackTraceEnabled",
    "failAfterMaxAttempts",
    "baseConfig",
];
const RETRY_KEYS: &[&str] = &[
    "maxAttempts",
    "waitDuration",
    "enableExponentialBackoff",
    "exponentialBackoffMultiplier",
    "exponentialMaxWaitDuration",
    "enableRandomizedWait",
    "randomizedWaitFactor",
];
const BREAKER_KEYS: &[&str] = &[
    "failureRateThreshold",
    "slowCallRateThreshold",
    "slowCallDurationThreshold",
    "slidingWindowType",
    "slidingWindowSize",
    "minimumNumberOfCalls",
    "waitDurationInOpenState",
    "permittedNumberOfCallsInHalfOpenState",
    "automaticTransitionFromOpenToHalfOpenEnabled",
    "maxWaitDurationInHalfOpenState",
];

pub struct Resilience4j;

impl Format for Resilience4j {
    fn kind(&self) -> &'static str {
        KIND
    }

    fn extension(&self) -> &'static str {
        "resilience4j.yml"
    }

    fn import(&self, text: &str, name: &str) -> Result<Imported, InteropError> {
        let root: Json = serde_yaml_ng::from_str(text)
            .map_err(|e| InteropError::Parse { kind: KIND, message: e.to_string() })?;
        let root = expand_dots(root);
        let r4j = get(object(&root, "(file)")?, "resilience4j").ok_or_else(|| {
            field_error(KIND, "resilience4j", "is missing", "put the settings under resilience4j:")
        })?;
        let r4j = object(r4j, "resilience4j")?;
        let mut notes = unknown_notes(
            "resilience4j.",
            r4j.keys().map(String::as_str),
            &["retry", "circuitbreaker", "bulkhead", "ratelimiter", "timelimiter"],
        );
        for other in ["bulkhead", "ratelimiter", "timelimiter"] {
            if get(r4j, other).is_some() {
                notes.push(format!("resilience4j.{other}: not read (only retry and circuitbreaker are)"));
            }
        }
        let retry = get(r4j, "retry").map(|m| object(m, "resilience4j.retry")).transpose()?;
        let breaker =
            get(r4j, "circuitbreaker").map(|m| object(m, "resilience4j.circuitbreaker")).transpose()?;
        let instance_names = |m: Option<&Map<String, Json>>| -> Vec<String> {
            m.and_then(|m| get(m, "instances"))
                .and_then(Json::as_object)
                .map(|i| i.keys().cloned().collect())
                .unwrap_or_default()
        };
        let mut names = instance_names(retry);
        names.extend(instance_names(breaker));
        names.sort();
        names.dedup();
        let instance = if names.iter().any(|n| n == name) {
            name.to_string()
        } else if names.len() == 1 {
            names[0].clone()
        } else {
            return Err(field_error(
                KIND,
                "instances",
                if names.is_empty() {
                    "there is no retry or circuitbreaker instance".to_string()
                } else {
                    format!("{} instances ({}) and none is called {name:?}", names.len(), names.join(", "))
                },
                "pass --name with the instance to read",
            ));
        };
        let mut s = Table::new();
        s.insert("name".into(), Value::String(name.into()));
        match retry.map(|r| settings(r, "retry", &instance, RETRY_KEYS, &mut notes)).transpose()?.flatten() {
            Some(r) => {
                retry_settings(&r, &format!("resilience4j.retry.instances.{instance}."), &mut s, &mut notes)?
            }
            None => {
                s.insert("max_attempts".into(), Value::Integer(1));
                s.insert("backoff".into(), kind_table("none"));
                notes.push(format!("no retry instance {instance}: one attempt"));
            }
        }
        if let Some(cb) = breaker
            .map(|b| settings(b, "circuitbreaker", &instance, BREAKER_KEYS, &mut notes))
            .transpose()?
            .flatten()
        {
            let path = format!("resilience4j.circuitbreaker.instances.{instance}.");
            s.insert("breaker".into(), breaker_settings(&cb, &path, &mut notes)?);
        }
        Ok(Imported { strategy: s, server: Table::new(), notes })
    }

    fn export(&self, strategy: &Table, lossy: bool) -> Result<Exported, InteropError> {
        let mut k = Keys::new(KIND, strategy, lossy);
        let name = k.name().to_string();
        let mut retry = Map::new();
        let attempts = match k.take("max_attempts") {
            Some(v) => k.count("max_attempts", v)?,
            None => {
                k.refuse("max_attempts", "unlimited attempts: maxAttempts is a count")?;
                DEFAULT_ATTEMPTS
            }
        };
        retry.insert("maxAttempts".into(), json!(attempts));
        let b = sub(
            KIND,
            "backoff",
            k.take("backoff").ok_or_else(|| field_error(KIND, "backoff", "is missing", "set it"))?,
        )?;
        let base = b.get("base").map(|v| k.span("backoff.base", v)).transpose()?.unwrap_or(Span::ZERO);
        let cap = b.get("cap").map(|v| k.span("backoff.cap", v)).transpose()?;
        let multiplier =
            b.get("multiplier").map(|v| k.number("backoff.multiplier", v)).transpose()?.unwrap_or(2.0);
        if base.as_ns() % 1_000_000 != 0 || cap.is_some_and(|c| c.as_ns() % 1_000_000 != 0) {
            k.refuse("backoff", "resilience4j's waits are whole milliseconds")?;
        }
        retry.insert("waitDuration".into(), json!(spring_duration(base)));
        match b.get("kind").and_then(Value::as_str) {
            Some("none") | Some("constant") => {}
            Some("exponential") => {
                retry.insert("enableExponentialBackoff".into(), json!(true));
                retry.insert("exponentialBackoffMultiplier".into(), json!(multiplier));
                if let Some(c) = cap {
                    retry.insert("exponentialMaxWaitDuration".into(), json!(spring_duration(c)));
                }
                if let Err(why) = truncation_exact(base, multiplier, cap, attempts) {
                    k.refuse("backoff.multiplier", why)?;
                }
            }
            other => k.refuse(
                "backoff",
                format!(
                    "{}: resilience4j's exact waits are constant and exponential (its randomized wait is whole milliseconds, capped after the jitter)",
                    other.unwrap_or("?")
                ),
            )?,
        }
        let mut root = Map::new();
        let mut r4j = Map::new();
        r4j.insert("retry".into(), json!({ "instances": { name.clone(): retry } }));
        if let Some(b) = k.take("breaker") {
            let cb = breaker_json(&mut k, sub(KIND, "breaker", b)?)?;
            r4j.insert("circuitbreaker".into(), json!({ "instances": { name: cb } }));
        }
        if k.take("retry_on").is_some() {
            k.refuse(
                "retry_on",
                "resilience4j retries by Java exception class (retryExceptions), not by outcome",
            )?;
        }
        root.insert("resilience4j".into(), Json::Object(r4j));
        let dropped = k.finish(
            "resilience4j's retry and circuitbreaker instances carry the attempts, the wait and the breaker",
        )?;
        let yaml = serde_yaml_ng::to_string(&Json::Object(root))
            .map_err(|e| InteropError::Parse { kind: KIND, message: e.to_string() })?;
        let text = format!(
            "# retrysim export: resilience4j Retry and CircuitBreaker (Spring Boot application.yml).\n\
             # retryExceptions / recordExceptions are left to their defaults (every exception).\n{}{yaml}",
            dropped_comment("#", &dropped)
        );
        Ok(Exported { text, dropped })
    }
}

/// An instance's settings merged over its base config (`baseConfig`, else `configs.default`),
/// keys in their camelCase form; `None` without such an instance.
fn settings(
    module: &Map<String, Json>,
    what: &str,
    instance: &str,
    keys: &[&str],
    notes: &mut Vec<String>,
) -> Result<Option<Map<String, Json>>, InteropError> {
    let Some(own) = get(module, "instances").and_then(|i| i.as_object()).and_then(|i| i.get(instance)) else {
        return Ok(None);
    };
    let path = format!("resilience4j.{what}.instances.{instance}");
    let own = object(own, &path)?;
    let configs = get(module, "configs").and_then(Json::as_object);
    let base_name = get(own, "baseConfig")
        .and_then(Json::as_str)
        .map(str::to_string)
        .or_else(|| configs.and_then(|c| c.get("default")).map(|_| "default".to_string()));
    let mut merged = Map::new();
    if let Some(b) = &base_name {
        let base = configs.and_then(|c| c.get(b)).ok_or_else(|| {
            field_error(
                KIND,
                &format!("{path}.baseConfig"),
                format!("names no config {b:?}"),
                format!("define resilience4j.{what}.configs.{b}"),
            )
        })?;
        for (k, v) in object(base, &format!("resilience4j.{what}.configs.{b}"))? {
            merged.insert(camel(k), v.clone());
        }
        notes.push(format!("{path} inherits resilience4j.{what}.configs.{b}"));
    }
    for (k, v) in own {
        merged.insert(camel(k), v.clone());
    }
    let mut known: Vec<&str> = keys.to_vec();
    known.extend(FILTERS);
    known.extend(QUIET);
    notes.extend(unknown_notes(&format!("{path}."), merged.keys().map(String::as_str), &known));
    for f in FILTERS.iter().filter(|f| merged.contains_key(**f)) {
        notes.push(format!("not modelled: {path}.{f} (Java exception classes or predicates; every failure counts, as in the resilience4j preset)"));
    }
    Ok(Some(merged))
}

fn retry_settings(
    r: &Map<String, Json>,
    path: &str,
    s: &mut Table,
    notes: &mut Vec<String>,
) -> Result<(), InteropError> {
    let field = |f: &str| format!("{path}{f}");
    let attempts = match r.get("maxAttempts") {
        None => {
            notes.push(format!("{} absent: {DEFAULT_ATTEMPTS} (§6)", field("maxAttempts")));
            DEFAULT_ATTEMPTS
        }
        Some(v) => v.as_u64().filter(|n| *n >= 1).ok_or_else(|| {
            field_error(
                KIND,
                &field("maxAttempts"),
                format!("{v} is not an integer >= 1"),
                "write the attempts, the first included, e.g. 3",
            )
        })?,
    };
    let wait = match r.get("waitDuration") {
        None => {
            notes.push(format!("{} absent: {DEFAULT_WAIT_MS} ms (§6)", field("waitDuration")));
            Span::from_millis(DEFAULT_WAIT_MS)
        }
        Some(v) => duration(v, &field("waitDuration"), notes)?,
    };
    if wait.as_ns() % 1_000_000 != 0 {
        return Err(unrepresentable(
            KIND,
            &field("waitDuration"),
            "resilience4j truncates it to whole milliseconds",
        ));
    }
    if flag(r, "enableRandomizedWait", path)? {
        return Err(unrepresentable(
            KIND,
            &field("enableRandomizedWait"),
            "resilience4j's U[d(1-f), d(1+f)+1) in whole milliseconds, capped after the jitter, is no retrysim backoff",
        ));
    }
    s.insert("max_attempts".into(), Value::Integer(attempts as i64));
    let backoff = if wait.is_zero() {
        kind_table("none")
    } else if flag(r, "enableExponentialBackoff", path)? {
        let multiplier = match r.get("exponentialBackoffMultiplier") {
            None => {
                notes.push(format!(
                    "{} absent: {DEFAULT_MULTIPLIER} (§6 IntervalFunction)",
                    field("exponentialBackoffMultiplier")
                ));
                DEFAULT_MULTIPLIER
            }
            Some(v) => v.as_f64().filter(|m| *m >= 1.0).ok_or_else(|| {
                field_error(
                    KIND,
                    &field("exponentialBackoffMultiplier"),
                    format!("{v} is not a number >= 1"),
                    "write e.g. 2",
                )
            })?,
        };
        let cap = r
            .get("exponentialMaxWaitDuration")
            .map(|v| duration(v, &field("exponentialMaxWaitDuration"), notes))
            .transpose()?;
        if let Some(c) = cap
            && c < wait
        {
            return Err(unrepresentable(
                KIND,
                &field("exponentialMaxWaitDuration"),
                "is below waitDuration; retrysim's cap is >= its base",
            ));
        }
        truncation_exact(wait, multiplier, cap, attempts)
            .map_err(|why| unrepresentable(KIND, &field("exponentialBackoffMultiplier"), why))?;
        let mut t = Table::from_iter([
            ("kind".to_string(), Value::String("exponential".into())),
            ("base".to_string(), duration_value(wait)),
            ("multiplier".to_string(), Value::Float(multiplier)),
        ]);
        if let Some(c) = cap {
            t.insert("cap".into(), duration_value(c));
        }
        Value::Table(t)
    } else {
        Value::Table(Table::from_iter([
            ("kind".to_string(), Value::String("constant".into())),
            ("base".to_string(), duration_value(wait)),
        ]))
    };
    s.insert("backoff".into(), backoff);
    Ok(())
}

/// resilience4j's exponential wait truncates to whole milliseconds at each step
/// (`(long) (interval * multiplier)`); retrysim's does not. Exact when no retry of the
/// operation sees the difference.
fn truncation_exact(base: Span, multiplier: f64, cap: Option<Span>, attempts: u64) -> Result<(), String> {
    let mut truncated_ms = (base.as_ns() / 1_000_000) as f64;
    for k in 1..attempts {
        let exact_ms = base.as_ns_f64() / 1e6 * multiplier.powi(k as i32 - 1);
        let cap_ms = cap.map_or(f64::INFINITY, |c| c.as_ns_f64() / 1e6);
        let (t, e) = (truncated_ms.min(cap_ms), exact_ms.min(cap_ms));
        if (t - e).abs() > 1e-6 * e.max(1.0) {
            return Err(format!(
                "retry {k} waits {t} ms in resilience4j (whole milliseconds at each step) but {e} ms in retrysim's exponential backoff"
            ));
        }
        truncated_ms = (truncated_ms * multiplier).floor();
    }
    Ok(())
}

fn breaker_settings(
    cb: &Map<String, Json>,
    path: &str,
    notes: &mut Vec<String>,
) -> Result<Value, InteropError> {
    let field = |f: &str| format!("{path}{f}");
    let percent = |key: &str, default: f64, notes: &mut Vec<String>| -> Result<f64, InteropError> {
        match cb.get(key) {
            None => {
                notes.push(format!("{} absent: {default} % (§6)", field(key)));
                Ok(default / 100.0)
            }
            Some(v) => v.as_f64().filter(|p| *p > 0.0 && *p <= 100.0).map(|p| p / 100.0).ok_or_else(|| {
                field_error(
                    KIND,
                    &field(key),
                    format!("{v} is not a percentage in (0, 100]"),
                    "write e.g. 50",
                )
            }),
        }
    };
    let count = |key: &str, default: u64, notes: &mut Vec<String>| -> Result<u64, InteropError> {
        match cb.get(key) {
            None => {
                notes.push(format!("{} absent: {default} (§6)", field(key)));
                Ok(default)
            }
            Some(v) => v.as_u64().filter(|n| *n >= 1).ok_or_else(|| {
                field_error(KIND, &field(key), format!("{v} is not an integer >= 1"), "write e.g. 10")
            }),
        }
    };
    let span = |key: &str, default: Span, notes: &mut Vec<String>| -> Result<Span, InteropError> {
        match cb.get(key) {
            None => {
                notes.push(format!("{} absent: {} (§6)", field(key), super::duration_text(default)));
                Ok(default)
            }
            Some(v) => duration(v, &field(key), notes),
        }
    };
    let failure_rate = percent("failureRateThreshold", DEFAULT_FAILURE_RATE, notes)?;
    let slow_rate = percent("slowCallRateThreshold", DEFAULT_SLOW_RATE, notes)?;
    let slow_duration = span("slowCallDurationThreshold", DEFAULT_SLOW_DURATION, notes)?;
    let size = count("slidingWindowSize", DEFAULT_WINDOW, notes)?;
    let window = match cb.get("slidingWindowType").and_then(Json::as_str) {
        None => {
            notes.push(format!("{} absent: COUNT_BASED (§6)", field("slidingWindowType")));
            Value::Integer(size as i64)
        }
        Some(t) if t.eq_ignore_ascii_case("COUNT_BASED") => Value::Integer(size as i64),
        Some(t) if t.eq_ignore_ascii_case("TIME_BASED") => duration_value(Span::from_secs(size)),
        Some(t) => {
            return Err(field_error(
                KIND,
                &field("slidingWindowType"),
                format!("{t:?} is not a window type"),
                "use COUNT_BASED or TIME_BASED",
            ));
        }
    };
    let minimum = count("minimumNumberOfCalls", DEFAULT_MINIMUM_CALLS, notes)?;
    let open = span("waitDurationInOpenState", DEFAULT_OPEN, notes)?;
    let half_open = count("permittedNumberOfCallsInHalfOpenState", DEFAULT_HALF_OPEN_CALLS, notes)?;
    if let Some(w) = cb.get("maxWaitDurationInHalfOpenState")
        && !duration(w, &field("maxWaitDurationInHalfOpenState"), notes)?.is_zero()
    {
        return Err(unrepresentable(
            KIND,
            &field("maxWaitDurationInHalfOpenState"),
            "retrysim's breaker waits in half-open for its probes indefinitely (resilience4j's default 0)",
        ));
    }
    if flag(cb, "automaticTransitionFromOpenToHalfOpenEnabled", path)? {
        notes.push(format!(
            "{}: the same calls are let through as with the lazy transition (the first call after open_for)",
            field("automaticTransitionFromOpenToHalfOpenEnabled")
        ));
    }
    Ok(Value::Table(Table::from_iter([
        ("window".to_string(), window),
        ("failure_rate".to_string(), Value::Float(failure_rate)),
        ("slow_call_rate".to_string(), Value::Float(slow_rate)),
        ("slow_call_duration".to_string(), duration_value(slow_duration)),
        ("minimum_calls".to_string(), Value::Integer(minimum as i64)),
        ("open_for".to_string(), duration_value(open)),
        ("half_open_calls".to_string(), Value::Integer(half_open as i64)),
        ("scope".to_string(), Value::String("client".into())),
    ])))
}

fn breaker_json(k: &mut Keys, b: &Table) -> Result<Json, InteropError> {
    let mut out = Map::new();
    if b.get("kind").and_then(Value::as_str).unwrap_or("resilience4j") != "resilience4j" {
        k.refuse("breaker", "resilience4j's CircuitBreaker is kind resilience4j")?;
        return Ok(Json::Object(out));
    }
    match b.get("window") {
        Some(Value::Integer(n)) => {
            out.insert("slidingWindowType".into(), json!("COUNT_BASED"));
            out.insert("slidingWindowSize".into(), json!(n));
        }
        Some(w) => {
            let span = k.span("breaker.window", w)?;
            out.insert("slidingWindowType".into(), json!("TIME_BASED"));
            out.insert("slidingWindowSize".into(), json!(span.as_ns() / 1_000_000_000));
        }
        None => {}
    }
    let ms = |k: &Keys, key: &str, v: &Value| -> Result<String, InteropError> {
        Ok(spring_duration(k.span(key, v)?))
    };
    for (key, yaml) in [("failure_rate", "failureRateThreshold"), ("slow_call_rate", "slowCallRateThreshold")]
    {
        if let Some(v) = b.get(key) {
            out.insert(yaml.into(), json!(k.number(&format!("breaker.{key}"), v)? * 100.0));
        }
    }
    for (key, yaml) in [
        ("minimum_calls", "minimumNumberOfCalls"),
        ("half_open_calls", "permittedNumberOfCallsInHalfOpenState"),
    ] {
        if let Some(v) = b.get(key) {
            out.insert(yaml.into(), json!(k.count(&format!("breaker.{key}"), v)?));
        }
    }
    for (key, yaml) in
        [("slow_call_duration", "slowCallDurationThreshold"), ("open_for", "waitDurationInOpenState")]
    {
        if let Some(v) = b.get(key) {
            let span = k.span(&format!("breaker.{key}"), v)?;
            if span.as_ns() % 1_000_000 != 0 {
                k.refuse(&format!("breaker.{key}"), "resilience4j's durations are whole milliseconds here")?;
            }
            out.insert(yaml.into(), json!(ms(k, &format!("breaker.{key}"), v)?));
        }
    }
    for extra in other_keys(
        b,
        "breaker",
        &[
            "kind",
            "window",
            "failure_rate",
            "slow_call_rate",
            "slow_call_duration",
            "minimum_calls",
            "open_for",
            "half_open_calls",
            "scope",
        ],
    ) {
        k.refuse(&extra, "not a CircuitBreakerConfig setting")?;
    }
    if b.get("scope").and_then(Value::as_str).is_some_and(|s| s != "client") {
        k.refuse("breaker.scope", "a resilience4j breaker lives in one client")?;
    }
    Ok(Json::Object(out))
}

/// A span in Spring Boot's simple form, whole seconds or milliseconds (`10s`, `200ms`).
fn spring_duration(span: Span) -> String {
    let ms = span.as_ns() / 1_000_000;
    if ms.is_multiple_of(1000) { format!("{}s", ms / 1000) } else { format!("{ms}ms") }
}

/// A Spring Boot duration: an integer with an optional unit (ns, us, ms, s, m, h, d); a bare
/// number is milliseconds.
fn duration(v: &Json, field: &str, notes: &mut Vec<String>) -> Result<Span, InteropError> {
    let bad = || {
        field_error(
            KIND,
            field,
            format!("{v} is not a Spring Boot duration"),
            "write an integer with a unit, e.g. 500ms or 10s (ISO-8601 forms are not read)",
        )
    };
    if let Some(ms) = v.as_u64() {
        notes.push(format!("{field} = {ms}: a bare number is milliseconds (Spring Boot)"));
        return Ok(Span::from_millis(ms));
    }
    let text = v.as_str().ok_or_else(bad)?.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: u64 = number.parse().map_err(|_| bad())?;
    let ns_per = match unit {
        "" => {
            notes.push(format!("{field} = {n}: a bare number is milliseconds (Spring Boot)"));
            1_000_000
        }
        "ns" => 1,
        "us" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "d" => 86_400_000_000_000,
        _ => return Err(bad()),
    };
    n.checked_mul(ns_per).map(Span::from_ns).ok_or_else(bad)
}

fn flag(m: &Map<String, Json>, key: &str, path: &str) -> Result<bool, InteropError> {
    match m.get(key) {
        None => Ok(false),
        Some(v) => v.as_bool().ok_or_else(|| {
            field_error(
                KIND,
                &format!("{path}{key}"),
                format!("{v} is not true or false"),
                "write true or false",
            )
        }),
    }
}

/// Spring reads `a.b: v` as `a: { b: v }`: every dotted key nested, merged with its siblings.
fn expand_dots(v: Json) -> Json {
    let Json::Object(m) = v else { return v };
    let mut out = Map::new();
    for (key, value) in m {
        let mut parts = key.rsplit('.');
        let last = parts.next().unwrap_or_default().to_string();
        let (mut key, mut value) = (last, expand_dots(value));
        for part in parts {
            value = Json::Object(Map::from_iter([(key, value)]));
            key = part.to_string();
        }
        merge(&mut out, key, value);
    }
    Json::Object(out)
}

fn merge(into: &mut Map<String, Json>, key: String, value: Json) {
    match (into.get_mut(&key), value) {
        (Some(Json::Object(a)), Json::Object(b)) => {
            for (k, v) in b {
                merge(a, k, v);
            }
        }
        (_, value) => {
            into.insert(key, value);
        }
    }
}

/// A relaxed-binding key in its camelCase form (`max-attempts` -> `maxAttempts`).
fn camel(key: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for c in key.chars() {
        if c == '-' || c == '_' {
            upper = true;
        } else if upper {
            out.push(c.to_ascii_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

fn get<'a>(m: &'a Map<String, Json>, key: &str) -> Option<&'a Json> {
    m.iter().find(|(k, _)| camel(k).eq_ignore_ascii_case(key)).map(|(_, v)| v)
}

fn object<'a>(v: &'a Json, what: &str) -> Result<&'a Map<String, Json>, InteropError> {
    v.as_object()
        .ok_or_else(|| field_error(KIND, what, "is not a mapping", "write a YAML mapping (key: value)"))
}

fn kind_table(kind: &str) -> Value {
    Value::Table(Table::from_iter([("kind".to_string(), Value::String(kind.into()))]))
}

#[cfg(test)]
mod tests {
    use super::super::keys::testing::*;
    use super::*;

    /// The Spring Boot example of resilience4j's documentation ("Getting Started: Spring
    /// Boot 2", application.yml), its retry and circuitbreaker parts.
    const REFERENCE_YAML: &str = r#"
resilience4j.circuitbreaker:
  configs:
    default:
      registerHealthIndicator: true
      slidingWindowSize: 10
      minimumNumberOfCalls: 5
      permittedNumberOfCallsInHalfOpenState: 3
      automaticTransitionFromOpenToHalfOpenEnabled: true
      waitDurationInOpenState: 5s
      failureRateThreshold: 50
      eventConsumerBufferSize: 10
      recordExceptions:
        - org.springframework.web.client.HttpServerErrorException
        - java.util.concurrent.TimeoutException
        - java.io.IOException
      ignoreExceptions:
        - io.github.robwin.exception.BusinessException
    shared:
      slidingWindowSize: 100
      permittedNumberOfCallsInHalfOpenState: 30
      waitDurationInOpenState: 1s
      failureRateThreshold: 50
      eventConsumerBufferSize: 10
  instances:
    backendA:
      baseConfig: default
    backendB:
      registerHealthIndicator: true
      slidingWindowSize: 10
      minimumNumberOfCalls: 10
      permittedNumberOfCallsInHalfOpenState: 3
      waitDurationInOpenState: 5s
      failureRateThreshold: 50
      eventConsumerBufferSize: 10
resilience4j.retry:
  configs:
    default:
      maxAttempts: 3
      waitDuration: 100
      retryExceptions:
        - org.springframework.web.client.HttpServerErrorException
        - java.util.concurrent.TimeoutException
        - java.io.IOException
      ignoreExceptions:
        - io.github.robwin.exception.BusinessException
  instances:
    backendA:
      baseConfig: default
    backendB:
      baseConfig: default
"#;

    #[test]
    fn the_reference_yaml_imports_to_the_values_it_states() {
        let a = Resilience4j.import(REFERENCE_YAML, "backendA").unwrap();
        let want = strategy(
            r#"max_attempts = 3
               backoff = { kind = "constant", base = "100ms" }
               breaker = { window = 10, failure_rate = 0.5, slow_call_rate = 1.0, slow_call_duration = "60s", minimum_calls = 5, open_for = "5s", half_open_calls = 3, scope = "client" }"#,
        );
        let mut got = a.strategy.clone();
        got.insert("name".into(), "s".into());
        assert_eq!(normalized(&got), normalized(&want));
        assert!(
            a.notes.iter().any(|n| n.contains("inherits resilience4j.circuitbreaker.configs.default")),
            "{:?}",
            a.notes
        );
        assert!(
            a.notes.iter().any(|n| n.contains("not modelled") && n.contains("recordExceptions")),
            "{:?}",
            a.notes
        );
        assert!(a.notes.iter().any(|n| n.contains("a bare number is milliseconds")), "{:?}", a.notes);
        let b = Resilience4j.import(REFERENCE_YAML, "backendB").unwrap();
        assert_eq!(b.strategy["breaker"]["minimum_calls"].as_integer(), Some(10));
        assert_eq!(b.strategy["max_attempts"].as_integer(), Some(3));
    }

    #[test]
    fn defaults_and_relaxed_keys() {
        let imp = Resilience4j
            .import("resilience4j:\n  retry:\n    instances:\n      x: {}\n  circuitbreaker:\n    instances:\n      x:\n        sliding-window-type: TIME_BASED\n        sliding-window-size: 30\n", "x")
            .unwrap();
        assert_eq!(imp.strategy["max_attempts"].as_integer(), Some(3));
        assert_eq!(imp.strategy["backoff"]["base"].as_str(), Some("500ms"));
        assert_eq!(imp.strategy["breaker"]["window"].as_str(), Some("30s"));
        assert_eq!(imp.strategy["breaker"]["open_for"].as_str(), Some("60s"));
        assert!(imp.notes.iter().any(|n| n.contains("maxAttempts absent: 3")), "{:?}", imp.notes);
    }

    #[test]
    fn exponential_waits_import_only_while_whole_milliseconds_agree() {
        let yaml = |attempts: u32| {
            format!(
                "resilience4j:\n  retry:\n    instances:\n      x:\n        maxAttempts: {attempts}\n        waitDuration: 500ms\n        enableExponentialBackoff: true\n"
            )
        };
        // 500, 750, 1125 ms exactly; the fourth retry would wait 1687 ms (truncated), not 1687.5.
        let ok = Resilience4j.import(&yaml(4), "x").unwrap();
        assert_eq!(ok.strategy["backoff"]["multiplier"].as_float(), Some(1.5));
        assert_import_error(
            &Resilience4j,
            &yaml(5),
            "resilience4j.retry.instances.x.exponentialBackoffMultiplier",
        );
    }

    #[test]
    fn what_resilience4j_expresses_round_trips_key_by_key() {
        assert_round_trips(
            &Resilience4j,
            &[
                r#"max_attempts = 3
                   backoff = { kind = "constant", base = "500ms" }
                   breaker = { window = 100, failure_rate = 0.5, slow_call_rate = 1.0, slow_call_duration = "60s", minimum_calls = 100, open_for = "60s", half_open_calls = 10, scope = "client" }"#,
                r#"max_attempts = 5
                   backoff = { kind = "exponential", base = "100ms", multiplier = 2.0, cap = "1s" }"#,
                r#"max_attempts = 2
                   backoff = { kind = "none" }
                   breaker = { window = "10s", failure_rate = 0.25, slow_call_rate = 0.8, slow_call_duration = "2500ms", minimum_calls = 20, open_for = "30s", half_open_calls = 2, scope = "client" }"#,
            ],
        );
    }

    #[test]
    fn what_resilience4j_cannot_express_is_refused_or_dropped_with_lossy() {
        assert_refused(
            &Resilience4j,
            "max_attempts = 3\nbackoff = { kind = \"full-jitter\", base = \"1s\" }",
            "backoff",
        );
        assert_refused(
            &Resilience4j,
            "max_attempts = 3\nbackoff = { kind = \"constant\", base = \"1s\" }\nretry_on = [503]",
            "retry_on",
        );
        assert_refused(
            &Resilience4j,
            "max_attempts = 3\nbackoff = { kind = \"constant\", base = \"1s\" }\nbudget = { kind = \"ratio\" }",
            "budget",
        );
        assert_refused(
            &Resilience4j,
            "max_attempts = 6\nbackoff = { kind = \"exponential\", base = \"500ms\", multiplier = 1.5 }",
            "backoff.multiplier",
        );
        assert_refused(
            &Resilience4j,
            "max_attempts = 3\nbackoff = { kind = \"constant\", base = \"1s\" }\nbreaker = { kind = \"retry-ratio\" }",
            "breaker",
        );
    }

    #[test]
    fn malformed_files_and_values_name_the_field() {
        assert_import_error(&Resilience4j, "resilience4j: [unclosed", "");
        assert_import_error(&Resilience4j, "spring: {}\n", "resilience4j");
        let p = "resilience4j.retry.instances.x.";
        let retry =
            |body: &str| format!("resilience4j:\n  retry:\n    instances:\n      x:\n        {body}\n");
        assert_import_error(&Resilience4j, &retry("maxAttempts: 0"), &format!("{p}maxAttempts"));
        assert_import_error(&Resilience4j, &retry("waitDuration: PT0.5S"), &format!("{p}waitDuration"));
        assert_import_error(&Resilience4j, &retry("waitDuration: 1.5s"), &format!("{p}waitDuration"));
        assert_import_error(
            &Resilience4j,
            &retry("enableRandomizedWait: true"),
            &format!("{p}enableRandomizedWait"),
        );
        assert_import_error(&Resilience4j, &retry("baseConfig: missing"), &format!("{p}baseConfig"));
        let cb = |body: &str| {
            format!("resilience4j:\n  circuitbreaker:\n    instances:\n      x:\n        {body}\n")
        };
        let c = "resilience4j.circuitbreaker.instances.x.";
        assert_import_error(
            &Resilience4j,
            &cb("failureRateThreshold: 150"),
            &format!("{c}failureRateThreshold"),
        );
        assert_import_error(
            &Resilience4j,
            &cb("slidingWindowType: SESSION"),
            &format!("{c}slidingWindowType"),
        );
        assert_import_error(
            &Resilience4j,
            &cb("maxWaitDurationInHalfOpenState: 5s"),
            &format!("{c}maxWaitDurationInHalfOpenState"),
        );
        let two = "resilience4j:\n  retry:\n    instances:\n      a: {}\n      b: {}\n";
        assert_import_error(&Resilience4j, two, "instances");
    }
}
