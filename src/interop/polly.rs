//! Polly v8 strategy options as JSON, as `appsettings.json` binds them: `Retry`
//! (`RetryStrategyOptions`), `CircuitBreaker` (`CircuitBreakerStrategyOptions`) and `Hedging`
//! (`HedgingStrategyOptions`), at the top of the file or in one named section
//! (docs/retry-policies.md §5). Durations are .NET TimeSpan strings, `"00:00:02"`; keys are
//! read without regard to case, as the .NET configuration binder does.
//!
//! `ShouldHandle` is code, not options, so the strategy's `retry_on` stays the `[client]`'s.

use super::keys::{Keys, duration_value, field_error, other_keys, sub, unknown_notes, unrepresentable};
use super::{Exported, Format, Imported, InteropError};
use crate::engine::Span;
use serde_json::{Map, Value as Json, json};
use toml::{Table, Value};

const KIND: &str = "polly";

/// `RetryStrategyOptions` defaults (§5).
const DEFAULT_RETRIES: u64 = 3;
const DEFAULT_DELAY: Span = Span::from_secs(2);
/// `CircuitBreakerStrategyOptions` defaults (§5).
const DEFAULT_FAILURE_RATIO: f64 = 0.1;
const DEFAULT_MINIMUM_THROUGHPUT: u64 = 100;
const DEFAULT_SAMPLING: Span = Span::from_secs(30);
const DEFAULT_BREAK: Span = Span::from_secs(5);
/// `HedgingStrategyOptions` defaults (the hedge preset `polly`, DESIGN §4.10).
const DEFAULT_HEDGED_ATTEMPTS: u64 = 1;
const DEFAULT_HEDGING_DELAY: Span = Span::from_secs(2);
/// The jitter of Constant and Linear delays: `U[0.75 d, 1.25 d)` (§5).
const JITTER: f64 = 0.25;

const SECTIONS: &[&str] = &["Retry", "CircuitBreaker", "Hedging", "Timeout"];

pub struct Polly;

impl Format for Polly {
    fn kind(&self) -> &'static str {
        KIND
    }

    fn extension(&self) -> &'static str {
        "polly.json"
    }

    fn import(&self, text: &str, name: &str) -> Result<Imported, InteropError> {
        let root: Json = serde_json::from_str(text)
            .map_err(|e| InteropError::Parse { kind: KIND, message: e.to_string() })?;
        let mut o = object(&root, "(file)")?;
        let mut path = String::new();
        // One named section holding the strategies (`{ "MyPipeline": { "Retry": ... } }`).
        if !o.keys().any(|k| SECTIONS.iter().any(|s| s.eq_ignore_ascii_case(k)))
            && o.len() == 1
            && let Some((section, inner)) = o.iter().next()
            && inner.is_object()
        {
            path = format!("{section}.");
            o = object(inner, section)?;
        }
        let mut notes = unknown_notes(&path, o.keys().map(String::as_str), SECTIONS);
        if get(o, "Timeout").is_some() {
            return Err(unrepresentable(
                KIND,
                &format!("{path}Timeout"),
                "whether it bounds each attempt or the whole call depends on its place in the pipeline, which the \
                 options do not say: remove it and set timeout (per attempt) or deadline in the strategy",
            ));
        }
        let mut s = Table::new();
        s.insert("name".into(), Value::String(name.into()));
        let retry = get(o, "Retry");
        let hedging = get(o, "Hedging");
        if retry.is_some() && hedging.is_some() {
            return Err(unrepresentable(
                KIND,
                &format!("{path}Hedging"),
                "hedging with a retry around it: retrysim's hedge replaces retrying (max_attempts = 1)",
            ));
        }
        match (retry, hedging) {
            (Some(r), _) => retry_options(object(r, "Retry")?, &format!("{path}Retry."), &mut s, &mut notes)?,
            (None, Some(h)) => {
                hedging_options(object(h, "Hedging")?, &format!("{path}Hedging."), &mut s, &mut notes)?
            }
            (None, None) => {
                s.insert("max_attempts".into(), Value::Integer(1));
                s.insert("backoff".into(), kind_table("none"));
                notes.push("no Retry or Hedging: one attempt".into());
            }
        }
        if let Some(cb) = get(o, "CircuitBreaker") {
            let breaker = breaker_options(
                object(cb, "CircuitBreaker")?,
                &format!("{path}CircuitBreaker."),
                &mut notes,
            )?;
            s.insert("breaker".into(), breaker);
        }
        notes.push("ShouldHandle is code, not options: retry_on is the [client]'s".into());
        Ok(Imported { strategy: s, server: Table::new(), notes })
    }

    fn export(&self, strategy: &Table, lossy: bool) -> Result<Exported, InteropError> {
        let mut k = Keys::new(KIND, strategy, lossy);
        let mut root = Map::new();
        let attempts = match k.take("max_attempts") {
            Some(v) => k.count("max_attempts", v)?,
            None => {
                k.refuse("max_attempts", "unlimited attempts: MaxRetryAttempts is a count")?;
                DEFAULT_RETRIES + 1
            }
        };
        if let Some(h) = k.take("hedge") {
            root.insert("Hedging".into(), hedging_json(&mut k, sub(KIND, "hedge", h)?)?);
            k.take("backoff");
        } else if attempts > 1 {
            root.insert("Retry".into(), retry_json(&mut k, attempts)?);
        } else if let Some(b) = k.take("backoff")
            && sub(KIND, "backoff", b)?.get("kind").and_then(Value::as_str) != Some("none")
        {
            k.refuse("backoff", "one attempt writes no Retry, so no delay")?;
        }
        if let Some(b) = k.take("breaker") {
            root.insert("CircuitBreaker".into(), breaker_json(&mut k, sub(KIND, "breaker", b)?)?);
        }
        if k.take("retry_on").is_some() {
            k.refuse("retry_on", "ShouldHandle is code, not options")?;
        }
        let dropped = k.finish("Polly's options carry Retry, CircuitBreaker and Hedging")?;
        let text = serde_json::to_string_pretty(&Json::Object(root)).expect("a JSON value prints") + "\n";
        Ok(Exported { text, dropped })
    }
}

fn retry_options(
    r: &Map<String, Json>,
    path: &str,
    s: &mut Table,
    notes: &mut Vec<String>,
) -> Result<(), InteropError> {
    notes.extend(unknown_notes(
        path,
        r.keys().map(String::as_str),
        &[
            "MaxRetryAttempts",
            "Delay",
            "BackoffType",
            "UseJitter",
            "MaxDelay",
            "ShouldRetryAfterHeader",
            "Name",
        ],
    ));
    let field = |f: &str| format!("{path}{f}");
    let retries = match get(r, "MaxRetryAttempts") {
        None => {
            notes.push(format!("{} absent: {DEFAULT_RETRIES} (§5)", field("MaxRetryAttempts")));
            DEFAULT_RETRIES
        }
        Some(v) => v.as_u64().filter(|n| *n >= 1 && *n < i32::MAX as u64).ok_or_else(|| {
            field_error(
                KIND,
                &field("MaxRetryAttempts"),
                format!("{v} is not an integer >= 1"),
                "Polly validates it in [1, int.MaxValue]",
            )
        })?,
    };
    s.insert("max_attempts".into(), Value::Integer(retries as i64 + 1));
    let delay = match get(r, "Delay") {
        None => {
            notes.push(format!("{} absent: 00:00:02 (§5)", field("Delay")));
            DEFAULT_DELAY
        }
        Some(v) => timespan(v, &field("Delay"))?,
    };
    let backoff_type = match get(r, "BackoffType") {
        None => {
            notes.push(format!("{} absent: Constant (§5)", field("BackoffType")));
            "constant".to_string()
        }
        Some(Json::String(t))
            if ["constant", "linear", "exponential"].contains(&t.to_ascii_lowercase().as_str()) =>
        {
            t.to_ascii_lowercase()
        }
        Some(v) => {
            return Err(field_error(
                KIND,
                &field("BackoffType"),
                format!("{v} is not a backoff type"),
                "use Constant, Linear or Exponential",
            ));
        }
    };
    let jitter = match get(r, "UseJitter") {
        None => {
            notes.push(format!("{} absent: false (§5)", field("UseJitter")));
            false
        }
        Some(v) => v.as_bool().ok_or_else(|| {
            field_error(KIND, &field("UseJitter"), format!("{v} is not true or false"), "write true or false")
        })?,
    };
    let max = match get(r, "MaxDelay") {
        None | Some(Json::Null) => None,
        Some(v) => Some(timespan(v, &field("MaxDelay"))?),
    };
    let with = |kind: &str, extra: Vec<(&str, Value)>| {
        let mut t = Table::from_iter([
            ("kind".to_string(), Value::String(kind.into())),
            ("base".to_string(), duration_value(delay)),
        ]);
        t.extend(extra.into_iter().map(|(k, v)| (k.to_string(), v)));
        if let Some(m) = max {
            t.insert("cap".into(), duration_value(m));
        }
        Value::Table(t)
    };
    let backoff = match (backoff_type.as_str(), jitter) {
        _ if delay.is_zero() => kind_table("none"),
        ("constant", false) => {
            let mut t = Table::from_iter([("kind".to_string(), Value::String("constant".into()))]);
            t.insert("base".into(), duration_value(max.map_or(delay, |m| m.min(delay))));
            Value::Table(t)
        }
        ("constant", true) => {
            // The cap is applied after the jitter: exact only when it is never reached.
            if max.is_some_and(|m| m.as_ns_f64() < delay.as_ns_f64() * (1.0 + JITTER)) {
                return Err(unrepresentable(
                    KIND,
                    &field("MaxDelay"),
                    "Polly caps after the ±25 % jitter; retrysim's proportional jitter comes after its cap",
                ));
            }
            let mut t = Table::from_iter([("kind".to_string(), Value::String("proportional-jitter".into()))]);
            t.insert("base".into(), duration_value(delay));
            t.insert("multiplier".into(), Value::Float(1.0));
            t.insert("p".into(), Value::Float(JITTER));
            Value::Table(t)
        }
        ("linear", false) => with("linear", vec![]),
        ("linear", true) => {
            return Err(unrepresentable(
                KIND,
                &field("UseJitter"),
                "a linear delay with ±25 % jitter: retrysim's jitters are on exponential delays",
            ));
        }
        ("exponential", false) => with("exponential", vec![("multiplier", Value::Float(2.0))]),
        _ => with("decorrelated-jitter-v2", vec![]),
    };
    s.insert("backoff".into(), backoff);
    match get(r, "ShouldRetryAfterHeader") {
        Some(Json::Bool(true)) => {
            s.insert("honor_retry_after".into(), Value::Boolean(true));
            s.insert("retry_after_mode".into(), Value::String("replace".into()));
            notes.push(format!(
                "{}: the Retry-After replaces the delay, not capped by MaxDelay (§5)",
                field("ShouldRetryAfterHeader")
            ));
        }
        Some(Json::Bool(false)) | None => {}
        Some(v) => {
            return Err(field_error(
                KIND,
                &field("ShouldRetryAfterHeader"),
                format!("{v} is not true or false"),
                "write true or false",
            ));
        }
    }
    Ok(())
}

fn hedging_options(
    h: &Map<String, Json>,
    path: &str,
    s: &mut Table,
    notes: &mut Vec<String>,
) -> Result<(), InteropError> {
    notes.extend(unknown_notes(path, h.keys().map(String::as_str), &["MaxHedgedAttempts", "Delay", "Name"]));
    let field = |f: &str| format!("{path}{f}");
    let hedged = match get(h, "MaxHedgedAttempts") {
        None => {
            notes.push(format!(
                "{} absent: {DEFAULT_HEDGED_ATTEMPTS} (DESIGN §4.10, preset polly)",
                field("MaxHedgedAttempts")
            ));
            DEFAULT_HEDGED_ATTEMPTS
        }
        Some(v) => v.as_u64().filter(|n| (1..=10).contains(n)).ok_or_else(|| {
            field_error(
                KIND,
                &field("MaxHedgedAttempts"),
                format!("{v} is not an integer from 1 to 10"),
                "Polly validates it in [1, 10]",
            )
        })?,
    };
    if hedged > 4 {
        return Err(unrepresentable(
            KIND,
            &field("MaxHedgedAttempts"),
            format!("{hedged} hedges: retrysim sends at most 5 copies of a call (gRPC's cap)"),
        ));
    }
    let delay = match get(h, "Delay") {
        None => {
            notes.push(format!("{} absent: 00:00:02 (DESIGN §4.10, preset polly)", field("Delay")));
            DEFAULT_HEDGING_DELAY
        }
        Some(v) => timespan(v, &field("Delay"))?,
    };
    let hedge = Table::from_iter([
        ("preset".to_string(), Value::String("polly".into())),
        ("max_attempts".to_string(), Value::Integer(hedged as i64 + 1)),
        ("delay".to_string(), duration_value(delay)),
    ]);
    s.insert("max_attempts".into(), Value::Integer(1));
    s.insert("backoff".into(), kind_table("none"));
    s.insert("hedge".into(), Value::Table(hedge));
    notes.push(
        "Hedging's ShouldHandle handles every failure: each sends the next copy at once (preset polly)"
            .into(),
    );
    Ok(())
}

fn breaker_options(
    cb: &Map<String, Json>,
    path: &str,
    notes: &mut Vec<String>,
) -> Result<Value, InteropError> {
    notes.extend(unknown_notes(
        path,
        cb.keys().map(String::as_str),
        &["FailureRatio", "MinimumThroughput", "SamplingDuration", "BreakDuration", "Name"],
    ));
    let field = |f: &str| format!("{path}{f}");
    let ratio = match get(cb, "FailureRatio") {
        None => {
            notes.push(format!("{} absent: {DEFAULT_FAILURE_RATIO} (§5)", field("FailureRatio")));
            DEFAULT_FAILURE_RATIO
        }
        Some(v) if v.as_f64() == Some(0.0) => {
            return Err(unrepresentable(
                KIND,
                &field("FailureRatio"),
                "0 opens on any throughput; retrysim's failure_rate is > 0",
            ));
        }
        Some(v) => v.as_f64().filter(|r| *r > 0.0 && *r <= 1.0).ok_or_else(|| {
            field_error(
                KIND,
                &field("FailureRatio"),
                format!("{v} is not a ratio in [0, 1]"),
                "write e.g. 0.1 for 10 % (Polly validates [0, 1])",
            )
        })?,
    };
    let throughput = match get(cb, "MinimumThroughput") {
        None => {
            notes.push(format!("{} absent: {DEFAULT_MINIMUM_THROUGHPUT} (§5)", field("MinimumThroughput")));
            DEFAULT_MINIMUM_THROUGHPUT
        }
        Some(v) => v.as_u64().filter(|n| *n >= 2).ok_or_else(|| {
            field_error(
                KIND,
                &field("MinimumThroughput"),
                format!("{v} is not an integer >= 2"),
                "Polly validates it >= 2",
            )
        })?,
    };
    let sampling = match get(cb, "SamplingDuration") {
        None => {
            notes.push(format!("{} absent: 00:00:30 (§5)", field("SamplingDuration")));
            DEFAULT_SAMPLING
        }
        Some(v) => breaker_span(v, &field("SamplingDuration"))?,
    };
    if sampling.is_zero() || sampling.as_ns() % 1_000_000_000 != 0 {
        return Err(unrepresentable(
            KIND,
            &field("SamplingDuration"),
            "retrysim's breaker window over time is whole seconds",
        ));
    }
    let open = match get(cb, "BreakDuration") {
        None => {
            notes.push(format!("{} absent: 00:00:05 (§5)", field("BreakDuration")));
            DEFAULT_BREAK
        }
        Some(v) => breaker_span(v, &field("BreakDuration"))?,
    };
    notes.push(
        "the breaker is retrysim's resilience4j breaker over a time window, as in the polly-v8 preset: its slow-call \
         rule and 10 half-open probes are the key defaults, not Polly's (one probe)"
            .into(),
    );
    Ok(Value::Table(Table::from_iter([
        ("window".to_string(), duration_value(sampling)),
        ("failure_rate".to_string(), Value::Float(ratio)),
        ("minimum_calls".to_string(), Value::Integer(throughput as i64)),
        ("open_for".to_string(), duration_value(open)),
        ("scope".to_string(), Value::String("client".into())),
    ])))
}

fn retry_json(k: &mut Keys, attempts: u64) -> Result<Json, InteropError> {
    let mut r = Map::new();
    r.insert("MaxRetryAttempts".into(), json!(attempts - 1));
    let b = sub(
        KIND,
        "backoff",
        k.take("backoff").ok_or_else(|| field_error(KIND, "backoff", "is missing", "set it"))?,
    )?;
    let kind = b.get("kind").and_then(Value::as_str).unwrap_or("");
    let base = b.get("base").map(|v| k.span("backoff.base", v)).transpose()?;
    let cap = b.get("cap").map(|v| k.span("backoff.cap", v)).transpose()?;
    let multiplier = b.get("multiplier").map(|v| k.number("backoff.multiplier", v)).transpose()?;
    let p = b.get("p").map(|v| k.number("backoff.p", v)).transpose()?;
    let (backoff_type, jitter, cap_allowed) = match kind {
        "none" => ("Constant", false, false),
        "constant" => ("Constant", false, false),
        "proportional-jitter" if multiplier == Some(1.0) && p == Some(JITTER) => ("Constant", true, false),
        "linear" => ("Linear", false, true),
        "exponential" if multiplier.unwrap_or(2.0) == 2.0 => ("Exponential", false, true),
        "decorrelated-jitter-v2" => ("Exponential", true, true),
        other => {
            k.refuse(
                "backoff",
                format!(
                    "{other}: Polly's delays are constant, linear, exponential x2, constant ±25 % \
                     (proportional-jitter, multiplier 1, p 0.25) and DecorrelatedJitterBackoffV2"
                ),
            )?;
            ("Exponential", false, true)
        }
    };
    r.insert("Delay".into(), json!(timespan_text(base.unwrap_or(Span::ZERO))));
    r.insert("BackoffType".into(), json!(backoff_type));
    r.insert("UseJitter".into(), json!(jitter));
    if let Some(c) = cap {
        if cap_allowed {
            r.insert("MaxDelay".into(), json!(timespan_text(c)));
        } else {
            k.refuse(
                "backoff.cap",
                "Polly's MaxDelay caps after the jitter, and a constant delay needs no cap",
            )?;
        }
    }
    if k.peek("honor_retry_after").and_then(Value::as_bool) == Some(true) {
        k.take("honor_retry_after");
        if k.take("retry_after_mode").and_then(Value::as_str).unwrap_or("replace") != "replace" {
            k.refuse("retry_after_mode", "ShouldRetryAfterHeader replaces the delay with the Retry-After")?;
        }
        if k.take("retry_after_cap").is_some() {
            k.refuse("retry_after_cap", "the Retry-After delay is not capped")?;
        }
        r.insert("ShouldRetryAfterHeader".into(), json!(true));
    }
    Ok(Json::Object(r))
}

fn hedging_json(k: &mut Keys, h: &Table) -> Result<Json, InteropError> {
    if h.get("preset").and_then(Value::as_str) != Some("polly") {
        k.refuse("hedge", "Polly's hedging is the hedge preset polly (every failure sends the next copy)")?;
    }
    let attempts = h.get("max_attempts").map(|v| k.count("hedge.max_attempts", v)).transpose()?.unwrap_or(2);
    let delay = match h.get("delay").and_then(Value::as_str) {
        None => DEFAULT_HEDGING_DELAY,
        Some(d) => match Span::parse(d) {
            Ok(span) => span,
            Err(_) => {
                k.refuse("hedge.delay", format!("{d:?}: Polly's Delay is a fixed TimeSpan"))?;
                DEFAULT_HEDGING_DELAY
            }
        },
    };
    for extra in other_keys(h, "hedge", &["preset", "max_attempts", "delay", "scope", "cancel_in_service"]) {
        k.refuse(&extra, "Polly's Hedging has MaxHedgedAttempts and Delay")?;
    }
    if h.get("scope").and_then(Value::as_str).is_some_and(|s| s != "client") {
        k.refuse("hedge.scope", "Polly's hedging is per pipeline")?;
    }
    if h.get("cancel_in_service").and_then(Value::as_bool) == Some(true) {
        k.refuse("hedge.cancel_in_service", "the server's behaviour, not Polly's")?;
    }
    Ok(json!({ "MaxHedgedAttempts": attempts.saturating_sub(1), "Delay": timespan_text(delay) }))
}

fn breaker_json(k: &mut Keys, b: &Table) -> Result<Json, InteropError> {
    if b.get("kind").and_then(Value::as_str).unwrap_or("resilience4j") != "resilience4j" {
        k.refuse("breaker", "Polly's breaker opens on a failure ratio (kind resilience4j)")?;
        return Ok(json!({}));
    }
    let mut out = Map::new();
    match b.get("window") {
        Some(w) if w.is_str() => {
            out.insert("SamplingDuration".into(), json!(timespan_text(k.span("breaker.window", w)?)));
        }
        _ => k.refuse("breaker.window", "Polly samples over a duration, not a count of calls")?,
    }
    if let Some(r) = b.get("failure_rate") {
        out.insert("FailureRatio".into(), json!(k.number("breaker.failure_rate", r)?));
    } else {
        k.refuse("breaker.failure_rate", "retrysim's default (0.5) is not Polly's: set it")?;
    }
    if let Some(m) = b.get("minimum_calls") {
        out.insert("MinimumThroughput".into(), json!(k.count("breaker.minimum_calls", m)?));
    } else {
        k.refuse("breaker.minimum_calls", "retrysim's default is not Polly's: set it")?;
    }
    if let Some(o) = b.get("open_for") {
        out.insert("BreakDuration".into(), json!(timespan_text(k.span("breaker.open_for", o)?)));
    } else {
        k.refuse("breaker.open_for", "retrysim's default (60 s) is not Polly's: set it")?;
    }
    for extra in
        other_keys(b, "breaker", &["kind", "window", "failure_rate", "minimum_calls", "open_for", "scope"])
    {
        k.refuse(&extra, "Polly's breaker has no slow-call rule and one half-open probe")?;
    }
    if b.get("scope").and_then(Value::as_str).is_some_and(|s| s != "client") {
        k.refuse("breaker.scope", "Polly's breaker is per pipeline")?;
    }
    Ok(Json::Object(out))
}

fn kind_table(kind: &str) -> Value {
    Value::Table(Table::from_iter([("kind".to_string(), Value::String(kind.into()))]))
}

/// A key of a .NET configuration section, found without regard to case.
fn get<'a>(m: &'a Map<String, Json>, key: &str) -> Option<&'a Json> {
    m.iter().find(|(k, _)| k.eq_ignore_ascii_case(key)).map(|(_, v)| v)
}

fn object<'a>(v: &'a Json, what: &str) -> Result<&'a Map<String, Json>, InteropError> {
    v.as_object().ok_or_else(|| field_error(KIND, what, "is not an object", "write a JSON object { ... }"))
}

/// `SamplingDuration` and `BreakDuration`: Polly validates both in [0.5 s, 1 day]
/// (`CircuitBreakerStrategyOptions`).
fn breaker_span(v: &Json, field: &str) -> Result<Span, InteropError> {
    let span = timespan(v, field)?;
    if span < Span::from_millis(500) || span > Span::from_secs(86_400) {
        return Err(field_error(
            KIND,
            field,
            format!("{} is outside [00:00:00.5, 1.00:00:00]", timespan_text(span)),
            "Polly validates it from 0.5 s to 1 day",
        ));
    }
    Ok(span)
}

fn timespan(v: &Json, field: &str) -> Result<Span, InteropError> {
    let text = v.as_str().ok_or_else(|| {
        field_error(KIND, field, format!("{v} is not a string"), "write a TimeSpan, e.g. \"00:00:02\"")
    })?;
    parse_timespan(text).ok_or_else(|| {
        field_error(
            KIND,
            field,
            format!("{text:?} is not a TimeSpan"),
            "write [d.]hh:mm:ss[.fffffff], e.g. \"00:00:02\" or \"00:00:00.5\"",
        )
    })
}

/// A .NET TimeSpan in its constant form, `[d.]hh:mm:ss[.fffffff]` (non-negative).
fn parse_timespan(text: &str) -> Option<Span> {
    let (days, rest) = match text.split_once('.') {
        Some((d, r)) if !d.contains(':') => (d.parse::<u64>().ok()?, r),
        _ => (0, text),
    };
    let (clock, frac) = match rest.rsplit_once('.') {
        Some((c, f)) => (c, f),
        None => (rest, ""),
    };
    let parts: Vec<&str> = clock.split(':').collect();
    let [h, m, s] = parts.as_slice() else { return None };
    let num = |t: &str, max: u64| t.parse::<u64>().ok().filter(|v| *v < max && !t.is_empty() && t.len() <= 2);
    let (h, m, s) = (num(h, 24)?, num(m, 60)?, num(s, 60)?);
    if frac.len() > 7 || !frac.chars().all(|c| c.is_ascii_digit()) || (rest.contains('.') && frac.is_empty())
    {
        return None;
    }
    let ticks: u64 = if frac.is_empty() { 0 } else { format!("{frac:0<7}").parse().ok()? };
    let secs = ((days * 24 + h) * 60 + m) * 60 + s;
    Some(Span::from_ns(secs * 1_000_000_000 + ticks * 100))
}

/// A span as a .NET TimeSpan: `"00:00:02"`, `"00:00:00.5"`, `"1.00:00:00"`; below 100 ns
/// (one tick) is lost.
fn timespan_text(span: Span) -> String {
    let ns = span.as_ns();
    let secs = ns / 1_000_000_000;
    let ticks = (ns % 1_000_000_000) / 100;
    let (d, h, m, s) = (secs / 86_400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    let days = if d > 0 { format!("{d}.") } else { String::new() };
    let frac =
        if ticks > 0 { format!(".{}", format!("{ticks:07}").trim_end_matches('0')) } else { String::new() };
    format!("{days}{h:02}:{m:02}:{s:02}{frac}")
}

#[cfg(test)]
mod tests {
    use super::super::keys::testing::*;
    use super::*;

    /// Polly's documented defaults, written out (docs/strategies/retry.md, circuit-breaker.md).
    const DOCUMENTED_DEFAULTS: &str = r#"{
      "Retry": { "MaxRetryAttempts": 3, "Delay": "00:00:02", "BackoffType": "Constant", "UseJitter": false },
      "CircuitBreaker": { "FailureRatio": 0.1, "MinimumThroughput": 100, "SamplingDuration": "00:00:30", "BreakDuration": "00:00:05" }
    }"#;

    const POLLY_V8: &str = r#"max_attempts = 4
        backoff = { kind = "constant", base = "2s" }
        breaker = { window = "30s", failure_rate = 0.1, minimum_calls = 100, open_for = "5s", scope = "client" }"#;

    #[test]
    fn the_documented_defaults_import_to_their_values_written_or_not() {
        let written = Polly.import(DOCUMENTED_DEFAULTS, "s").unwrap();
        assert_eq!(normalized(&written.strategy), normalized(&strategy(POLLY_V8)));
        let absent = Polly.import(r#"{ "Retry": {}, "CircuitBreaker": {} }"#, "s").unwrap();
        assert_eq!(normalized(&absent.strategy), normalized(&strategy(POLLY_V8)));
        for default in
            ["Retry.MaxRetryAttempts absent: 3", "Retry.Delay absent", "CircuitBreaker.BreakDuration absent"]
        {
            assert!(absent.notes.iter().any(|n| n.starts_with(default)), "{default}: {:?}", absent.notes);
        }
    }

    #[test]
    fn a_named_section_and_any_case_are_read() {
        let text = r#"{ "OrdersPipeline": { "retry": { "maxretryattempts": 5, "delay": "00:00:00.2", "backofftype": "Exponential", "usejitter": true, "maxdelay": "00:00:10" } } }"#;
        let imp = Polly.import(text, "s").unwrap();
        assert_eq!(imp.strategy["max_attempts"].as_integer(), Some(6));
        let b = imp.strategy["backoff"].as_table().unwrap();
        assert_eq!(
            (b["kind"].as_str(), b["base"].as_str(), b["cap"].as_str()),
            (Some("decorrelated-jitter-v2"), Some("200ms"), Some("10s"))
        );
    }

    #[test]
    fn hedging_is_the_polly_hedge_preset() {
        let imp =
            Polly.import(r#"{ "Hedging": { "MaxHedgedAttempts": 2, "Delay": "00:00:00.1" } }"#, "s").unwrap();
        let h = imp.strategy["hedge"].as_table().unwrap();
        assert_eq!(
            (h["preset"].as_str(), h["max_attempts"].as_integer(), h["delay"].as_str()),
            (Some("polly"), Some(3), Some("100ms"))
        );
        assert_eq!(imp.strategy["max_attempts"].as_integer(), Some(1));
    }

    #[test]
    fn timespans_read_and_write_exactly() {
        for (text, ns) in [
            ("00:00:02", 2_000_000_000u64),
            ("00:00:00.5", 500_000_000),
            ("01:02:03.0000001", 3_723_000_000_100),
            ("2.00:00:00", 172_800_000_000_000),
        ] {
            assert_eq!(parse_timespan(text), Some(Span::from_ns(ns)), "{text}");
            assert_eq!(timespan_text(Span::from_ns(ns)), text);
        }
        for bad in ["2s", "00:00", "00:60:00", "24:00:00", "-00:00:01", "00:00:00.", "00:00:00.12345678"] {
            assert_eq!(parse_timespan(bad), None, "{bad}");
        }
    }

    #[test]
    fn what_polly_expresses_round_trips_key_by_key() {
        assert_round_trips(
            &Polly,
            &[
                POLLY_V8,
                r#"max_attempts = 6
                   backoff = { kind = "exponential", base = "200ms", cap = "10s", multiplier = 2.0 }"#,
                r#"max_attempts = 3
                   backoff = { kind = "linear", base = "1500ms" }
                   honor_retry_after = true
                   retry_after_mode = "replace""#,
                r#"max_attempts = 2
                   backoff = { kind = "proportional-jitter", base = "1s", multiplier = 1.0, p = 0.25 }"#,
                r#"max_attempts = 5
                   backoff = { kind = "decorrelated-jitter-v2", base = "100ms", cap = "5s" }
                   breaker = { window = "10s", failure_rate = 0.5, minimum_calls = 20, open_for = "30s", scope = "client" }"#,
                r#"max_attempts = 4
                   backoff = { kind = "none" }"#,
                r#"max_attempts = 1
                   backoff = { kind = "none" }
                   hedge = { preset = "polly", max_attempts = 3, delay = "250ms" }"#,
            ],
        );
    }

    #[test]
    fn what_polly_cannot_express_is_refused_or_dropped_with_lossy() {
        assert_refused(
            &Polly,
            "max_attempts = 3\nbackoff = { kind = \"full-jitter\", base = \"1s\" }",
            "backoff",
        );
        assert_refused(
            &Polly,
            "max_attempts = 3\nbackoff = { kind = \"constant\", base = \"1s\" }\ntimeout = \"1s\"",
            "timeout",
        );
        assert_refused(
            &Polly,
            "max_attempts = 3\nbackoff = { kind = \"constant\", base = \"1s\" }\nretry_on = [503]",
            "retry_on",
        );
        assert_refused(
            &Polly,
            "max_attempts = 3\nbackoff = { kind = \"constant\", base = \"1s\" }\nbreaker = { window = 100, failure_rate = 0.5, minimum_calls = 10, open_for = \"5s\" }",
            "breaker.window",
        );
        assert_refused(
            &Polly,
            "max_attempts = 3\nbackoff = { kind = \"constant\", base = \"1s\" }\nbreaker = { window = \"10s\", failure_rate = 0.5, minimum_calls = 10, open_for = \"5s\", half_open_calls = 3 }",
            "breaker.half_open_calls",
        );
        assert_refused(
            &Polly,
            "max_attempts = 1\nbackoff = { kind = \"none\" }\nhedge = { max_attempts = 2, delay = \"1s\" }",
            "hedge",
        );
    }

    #[test]
    fn malformed_files_and_values_name_the_field() {
        assert_import_error(&Polly, "{ \"Retry\": ", "");
        assert_import_error(&Polly, r#"{ "Retry": { "MaxRetryAttempts": 0 } }"#, "Retry.MaxRetryAttempts");
        assert_import_error(&Polly, r#"{ "Retry": { "Delay": "2s" } }"#, "Retry.Delay");
        assert_import_error(&Polly, r#"{ "Retry": { "BackoffType": "Fibonacci" } }"#, "Retry.BackoffType");
        assert_import_error(
            &Polly,
            r#"{ "Retry": { "BackoffType": "Linear", "UseJitter": true } }"#,
            "Retry.UseJitter",
        );
        assert_import_error(
            &Polly,
            r#"{ "Retry": { "UseJitter": true, "MaxDelay": "00:00:02" } }"#,
            "Retry.MaxDelay",
        );
        assert_import_error(
            &Polly,
            r#"{ "CircuitBreaker": { "FailureRatio": 1.5 } }"#,
            "CircuitBreaker.FailureRatio",
        );
        assert_import_error(
            &Polly,
            r#"{ "CircuitBreaker": { "MinimumThroughput": 1 } }"#,
            "CircuitBreaker.MinimumThroughput",
        );
        assert_import_error(
            &Polly,
            r#"{ "CircuitBreaker": { "SamplingDuration": "00:00:00.5" } }"#,
            "CircuitBreaker.SamplingDuration",
        );
        assert_import_error(
            &Polly,
            r#"{ "Hedging": { "MaxHedgedAttempts": 5 } }"#,
            "Hedging.MaxHedgedAttempts",
        );
        assert_import_error(
            &Polly,
            r#"{ "CircuitBreaker": { "BreakDuration": "00:00:00.1" } }"#,
            "CircuitBreaker.BreakDuration",
        );
        assert_import_error(
            &Polly,
            r#"{ "CircuitBreaker": { "SamplingDuration": "2.00:00:00" } }"#,
            "CircuitBreaker.SamplingDuration",
        );
        assert_import_error(
            &Polly,
            r#"{ "CircuitBreaker": { "FailureRatio": 0 } }"#,
            "CircuitBreaker.FailureRatio",
        );
        assert_import_error(&Polly, r#"{ "Retry": {}, "Hedging": {} }"#, "Hedging");
        assert_import_error(&Polly, r#"{ "Timeout": { "Timeout": "00:00:30" } }"#, "Timeout");
    }
}
