//! gRPC service config JSON (gRFC A6): one `methodConfig` entry's `retryPolicy` or
//! `hedgingPolicy` and `timeout`, and the channel's `retryThrottling` (docs/retry-policies.md §2).
//!
//! Status codes stand for retrysim's outcomes by google.rpc.Code's HTTP mapping
//! (googleapis `google/rpc/code.proto`): ABORTED 409, RESOURCE_EXHAUSTED 429, INTERNAL 500,
//! DEADLINE_EXCEEDED 504, and UNAVAILABLE 503 together with a failed connection (the `grpc`
//! preset's reading). The backoff is the current spec's ±20 % after the cap
//! (`proportional-jitter`, `p = 0.2`); pushback is always read (`grpc-pushback`).

use super::keys::{
    Keys, Outcomes, duration_value, field_error, other_keys, outcomes, sub, unknown_notes, unrepresentable,
};
use super::{Exported, Format, Imported, InteropError};
use crate::engine::Span;
use serde_json::{Map, Value as Json, json};
use std::collections::BTreeSet;
use toml::{Table, Value};

const KIND: &str = "grpc";

/// gRPC's client caps `maxAttempts` at 5 (A6, §2).
const MAX_ATTEMPTS_CAP: u64 = 5;

/// The jitter of A6's current backoff: `U(0.8, 1.2)` after the cap.
const JITTER: f64 = 0.2;

/// Status codes by name and number, and the outcomes each stands for.
const CODES: &[(&str, u64, &[u16], bool)] = &[
    ("DEADLINE_EXCEEDED", 4, &[504], false),
    ("RESOURCE_EXHAUSTED", 8, &[429], false),
    ("ABORTED", 10, &[409], false),
    ("INTERNAL", 13, &[500], false),
    ("UNAVAILABLE", 14, &[503], true),
];

pub struct Grpc;

impl Format for Grpc {
    fn kind(&self) -> &'static str {
        KIND
    }

    fn extension(&self) -> &'static str {
        "grpc.json"
    }

    fn import(&self, text: &str, name: &str) -> Result<Imported, InteropError> {
        let root: Json = serde_json::from_str(text)
            .map_err(|e| InteropError::Parse { kind: KIND, message: e.to_string() })?;
        let root = object(&root, "the service config")?;
        let mut notes = unknown_notes(
            "",
            root.keys().map(String::as_str),
            &[
                "methodConfig",
                "retryThrottling",
                "loadBalancingPolicy",
                "loadBalancingConfig",
                "healthCheckConfig",
            ],
        );
        let mut s = Table::new();
        s.insert("name".into(), Value::String(name.into()));
        let method = match get(root, "methodConfig") {
            None => None,
            Some(Json::Array(list)) if list.len() <= 1 => list.first(),
            Some(Json::Array(list)) => {
                return Err(unrepresentable(
                    KIND,
                    "methodConfig",
                    format!(
                        "{} entries: a strategy is one method's policy; keep the entry of the method to simulate",
                        list.len()
                    ),
                ));
            }
            Some(_) => {
                return Err(field_error(
                    KIND,
                    "methodConfig",
                    "is not a list",
                    "write a list of method configs",
                ));
            }
        };
        let method = method.map(|m| object(m, "methodConfig[0]")).transpose()?;
        let retry = method.and_then(|m| get(m, "retryPolicy"));
        let hedging = method.and_then(|m| get(m, "hedgingPolicy"));
        if let Some(m) = method {
            notes.extend(unknown_notes(
                "methodConfig[0].",
                m.keys().map(String::as_str),
                &[
                    "name",
                    "retryPolicy",
                    "retry_policy",
                    "hedgingPolicy",
                    "hedging_policy",
                    "timeout",
                    "waitForReady",
                    "wait_for_ready",
                    "maxRequestMessageBytes",
                    "maxResponseMessageBytes",
                ],
            ));
            if let Some(t) = get(m, "timeout") {
                s.insert("deadline".into(), duration_value(positive(t, "methodConfig[0].timeout")?));
                notes.push(
                    "methodConfig[0].timeout is the call's deadline, over all its attempts (§2): deadline"
                        .into(),
                );
            }
        }
        match (retry, hedging) {
            (Some(_), Some(_)) => {
                return Err(field_error(
                    KIND,
                    "methodConfig[0].hedgingPolicy",
                    "is set with retryPolicy",
                    "keep one of them: A6 allows only one per method",
                ));
            }
            (Some(r), None) => retry_policy(object(r, "retryPolicy")?, &mut s, &mut notes)?,
            (None, Some(h)) => hedging_policy(object(h, "hedgingPolicy")?, &mut s, &mut notes)?,
            (None, None) => {
                s.insert("max_attempts".into(), Value::Integer(1));
                s.insert("backoff".into(), toml_table(&[("kind", Value::String("none".into()))]));
                notes.push(
                    "no retryPolicy or hedgingPolicy: no retries (§2: there is no default policy)".into(),
                );
            }
        }
        match get(root, "retryThrottling") {
            Some(t) => s.insert("budget".into(), throttling(object(t, "retryThrottling")?, &mut notes)?),
            None => {
                notes.push("no retryThrottling: no budget (§2: throttling is off unless configured)".into());
                None
            }
        };
        Ok(Imported { strategy: s, server: Table::new(), notes })
    }

    fn export(&self, strategy: &Table, lossy: bool) -> Result<Exported, InteropError> {
        let mut k = Keys::new(KIND, strategy, lossy);
        let mut method = Map::new();
        method.insert("name".into(), json!([{}]));
        if let Some(d) = k.take("deadline") {
            method.insert("timeout".into(), Json::String(proto_duration(k.span("deadline", d)?)));
        }
        let attempts = match k.take("max_attempts") {
            Some(v) => k.count("max_attempts", v)?,
            None => {
                k.refuse("max_attempts", "unlimited attempts: gRPC's maxAttempts is 2 to 5")?;
                MAX_ATTEMPTS_CAP
            }
        };
        if k.peek("honor_retry_after").and_then(Value::as_bool) == Some(true) {
            k.take("honor_retry_after");
            if k.take("retry_after_mode").and_then(Value::as_str) != Some("grpc-pushback") {
                k.refuse("retry_after_mode", "gRPC waits exactly the pushback (grpc-pushback)")?;
            }
            if k.take("retry_after_cap").is_some() {
                k.refuse("retry_after_cap", "gRPC's pushback has no cap")?;
            }
        } else if attempts > 1 || k.peek("hedge").is_some() {
            k.refuse("honor_retry_after", "gRPC always reads grpc-retry-pushback-ms (§2)")?;
        }
        if let Some(h) = k.take("hedge") {
            let h = sub(KIND, "hedge", h)?;
            method.insert("hedgingPolicy".into(), hedging_json(&mut k, h)?);
            k.take("backoff");
            k.take("retry_on");
            if attempts != 1 {
                k.refuse("max_attempts", "hedging replaces retrying (one of retryPolicy and hedgingPolicy)")?;
            }
        } else if attempts > 1 {
            method.insert("retryPolicy".into(), retry_json(&mut k, attempts)?);
        } else if let Some(b) = k.take("backoff")
            && sub(KIND, "backoff", b)?.get("kind").and_then(Value::as_str) != Some("none")
        {
            k.refuse("backoff", "one attempt writes no retryPolicy, so no backoff")?;
        }
        let mut root = Map::new();
        root.insert("methodConfig".into(), Json::Array(vec![Json::Object(method)]));
        if let Some(b) = k.take("budget") {
            let b = sub(KIND, "budget", b)?;
            if b.get("kind").and_then(Value::as_str) == Some("grpc-throttle")
                && b.get("scope").and_then(Value::as_str).unwrap_or("client") == "client"
            {
                let max_tokens = b
                    .get("max_tokens")
                    .map(|v| k.number("budget.max_tokens", v))
                    .transpose()?
                    .unwrap_or(10.0);
                let ratio = b
                    .get("token_ratio")
                    .map(|v| k.number("budget.token_ratio", v))
                    .transpose()?
                    .unwrap_or(0.1);
                if max_tokens.fract() != 0.0 {
                    k.refuse("budget.max_tokens", "retryThrottling.maxTokens is an integer (a uint32)")?;
                }
                if (ratio * 1000.0 - (ratio * 1000.0).round()).abs() > 1e-9 {
                    k.refuse("budget.token_ratio", "gRPC reads tokenRatio to 3 decimal places")?;
                }
                root.insert(
                    "retryThrottling".into(),
                    json!({ "maxTokens": max_tokens.round() as u64, "tokenRatio": ratio }),
                );
            } else {
                k.refuse("budget", "gRPC's only budget is retryThrottling (kind grpc-throttle, per client)")?;
            }
        }
        let dropped = k.finish(
            "a gRPC service config carries retryPolicy, hedgingPolicy, timeout and retryThrottling",
        )?;
        let text = serde_json::to_string_pretty(&Json::Object(root)).expect("a JSON value prints") + "\n";
        Ok(Exported { text, dropped })
    }
}

fn retry_policy(r: &Map<String, Json>, s: &mut Table, notes: &mut Vec<String>) -> Result<(), InteropError> {
    notes.extend(unknown_notes(
        "retryPolicy.",
        r.keys().map(String::as_str),
        &[
            "maxAttempts",
            "max_attempts",
            "initialBackoff",
            "initial_backoff",
            "maxBackoff",
            "max_backoff",
            "backoffMultiplier",
            "backoff_multiplier",
            "retryableStatusCodes",
            "retryable_status_codes",
        ],
    ));
    let attempts = max_attempts(r, "retryPolicy.maxAttempts", notes)?;
    let initial = positive(required(r, "initialBackoff", "retryPolicy")?, "retryPolicy.initialBackoff")?;
    let max = positive(required(r, "maxBackoff", "retryPolicy")?, "retryPolicy.maxBackoff")?;
    let multiplier = match required(r, "backoffMultiplier", "retryPolicy")? {
        Json::Number(n) if n.as_f64().is_some_and(|m| m > 0.0) => n.as_f64().unwrap_or(0.0),
        _ => {
            return Err(field_error(
                KIND,
                "retryPolicy.backoffMultiplier",
                "is not a number > 0",
                "write e.g. 2 (A6 requires it)",
            ));
        }
    };
    if multiplier < 1.0 {
        return Err(unrepresentable(
            KIND,
            "retryPolicy.backoffMultiplier",
            format!("{multiplier} shrinks the delays; retrysim's multiplier is >= 1"),
        ));
    }
    if max < initial {
        return Err(unrepresentable(
            KIND,
            "retryPolicy.maxBackoff",
            "is below initialBackoff, so every delay is maxBackoff; retrysim's cap is >= its base",
        ));
    }
    let codes = status_codes(
        required(r, "retryableStatusCodes", "retryPolicy")?,
        "retryPolicy.retryableStatusCodes",
    )?;
    if codes == Outcomes::default() {
        return Err(field_error(
            KIND,
            "retryPolicy.retryableStatusCodes",
            "is empty",
            "list at least one code, e.g. [\"UNAVAILABLE\"] (A6 requires it)",
        ));
    }
    s.insert("max_attempts".into(), Value::Integer(attempts as i64));
    s.insert("retry_on".into(), codes.value());
    pushback(s, notes);
    s.insert(
        "backoff".into(),
        toml_table(&[
            ("kind", Value::String("proportional-jitter".into())),
            ("base", duration_value(initial)),
            ("cap", duration_value(max)),
            ("multiplier", Value::Float(multiplier)),
            ("p", Value::Float(JITTER)),
        ]),
    );
    notes.push(
        "backoff: min(initialBackoff x multiplier^(n-1), maxBackoff) x U(0.8, 1.2), the current spec (§2); \
         grpc-node and grpc-java without GRPC_EXPERIMENTAL_RETRY_JITTER still use full jitter"
            .into(),
    );
    Ok(())
}

fn hedging_policy(h: &Map<String, Json>, s: &mut Table, notes: &mut Vec<String>) -> Result<(), InteropError> {
    notes.extend(unknown_notes(
        "hedgingPolicy.",
        h.keys().map(String::as_str),
        &[
            "maxAttempts",
            "max_attempts",
            "hedgingDelay",
            "hedging_delay",
            "nonFatalStatusCodes",
            "non_fatal_status_codes",
        ],
    ));
    let attempts = max_attempts(h, "hedgingPolicy.maxAttempts", notes)?;
    let mut hedge = Table::new();
    hedge.insert("max_attempts".into(), Value::Integer(attempts as i64));
    let delay = match get(h, "hedgingDelay") {
        Some(d) => span(d, "hedgingPolicy.hedgingDelay")?,
        None => {
            notes.push("hedgingPolicy.hedgingDelay absent: 0s, every copy at once (§2)".into());
            Span::ZERO
        }
    };
    hedge.insert("delay".into(), duration_value(delay));
    match get(h, "nonFatalStatusCodes") {
        Some(c) => {
            let codes = status_codes(c, "hedgingPolicy.nonFatalStatusCodes")?;
            if codes != Outcomes::default() {
                hedge.insert("non_fatal".into(), codes.value());
            }
        }
        None => notes
            .push("hedgingPolicy.nonFatalStatusCodes absent: none, any failure ends the call (§2)".into()),
    }
    s.insert("max_attempts".into(), Value::Integer(1));
    s.insert("backoff".into(), toml_table(&[("kind", Value::String("none".into()))]));
    pushback(s, notes);
    s.insert("hedge".into(), Value::Table(hedge));
    Ok(())
}

fn pushback(s: &mut Table, notes: &mut Vec<String>) {
    s.insert("honor_retry_after".into(), Value::Boolean(true));
    s.insert("retry_after_mode".into(), Value::String("grpc-pushback".into()));
    notes.push(
        "grpc-retry-pushback-ms is always read (§2): honor_retry_after, retry_after_mode = \"grpc-pushback\""
            .into(),
    );
}

fn throttling(t: &Map<String, Json>, notes: &mut Vec<String>) -> Result<Value, InteropError> {
    notes.extend(unknown_notes(
        "retryThrottling.",
        t.keys().map(String::as_str),
        &["maxTokens", "max_tokens", "tokenRatio", "token_ratio"],
    ));
    // An integer: grpc core reads the proto's uint32 and refuses 10.5.
    let max_tokens = match required(t, "maxTokens", "retryThrottling")?.as_u64() {
        Some(m) if m > 0 && m <= 1000 => m as f64,
        _ => {
            return Err(field_error(
                KIND,
                "retryThrottling.maxTokens",
                "is not an integer in (0, 1000]",
                "write e.g. 10 (A6; the proto field is a uint32)",
            ));
        }
    };
    let ratio = match required(t, "tokenRatio", "retryThrottling")?.as_f64() {
        Some(r) if r > 0.0 => r,
        _ => {
            return Err(field_error(
                KIND,
                "retryThrottling.tokenRatio",
                "is not a number > 0",
                "write e.g. 0.1 (A6)",
            ));
        }
    };
    if (ratio * 1000.0 - (ratio * 1000.0).round()).abs() > 1e-9 {
        return Err(field_error(
            KIND,
            "retryThrottling.tokenRatio",
            format!("{ratio} has more than 3 decimal places"),
            "round it to 3 decimals: A6 reads no more",
        ));
    }
    Ok(toml_table(&[
        ("kind", Value::String("grpc-throttle".into())),
        ("max_tokens", Value::Float(max_tokens)),
        ("token_ratio", Value::Float(ratio)),
    ]))
}

fn retry_json(k: &mut Keys, attempts: u64) -> Result<Json, InteropError> {
    let attempts = if attempts > MAX_ATTEMPTS_CAP {
        k.refuse("max_attempts", format!("{attempts} attempts: gRPC's client caps maxAttempts at 5"))?;
        MAX_ATTEMPTS_CAP
    } else {
        attempts
    };
    let (base, cap, multiplier) = backoff(k)?;
    let codes = codes_json(k, "retry_on")?;
    Ok(json!({
        "maxAttempts": attempts,
        "initialBackoff": proto_duration(base),
        "maxBackoff": proto_duration(cap),
        "backoffMultiplier": multiplier,
        "retryableStatusCodes": codes,
    }))
}

/// `initialBackoff`, `maxBackoff`, `backoffMultiplier` of the strategy's backoff.
fn backoff(k: &mut Keys) -> Result<(Span, Span, f64), InteropError> {
    let b = sub(
        KIND,
        "backoff",
        k.take("backoff").ok_or_else(|| field_error(KIND, "backoff", "is missing", "set it"))?,
    )?;
    let kind = b.get("kind").and_then(Value::as_str).unwrap_or("");
    let base = b.get("base").map(|v| k.span("backoff.base", v)).transpose()?;
    let multiplier =
        b.get("multiplier").map(|v| k.number("backoff.multiplier", v)).transpose()?.unwrap_or(2.0);
    let cap = b.get("cap").map(|v| k.span("backoff.cap", v)).transpose()?;
    let p = b.get("p").map(|v| k.number("backoff.p", v)).transpose()?.unwrap_or(JITTER);
    let exact = kind == "proportional-jitter" && p == JITTER && cap.is_some();
    for extra in other_keys(b, "backoff", &["kind", "base", "cap", "multiplier", "p"]) {
        k.refuse(&extra, "gRPC's backoff has a base, a cap and a multiplier")?;
    }
    if !exact {
        k.refuse(
            "backoff",
            format!(
                "{kind}{}: gRPC's backoff is min(initialBackoff x multiplier^(n-1), maxBackoff) x U(0.8, 1.2), \
                 a proportional-jitter with p = 0.2 and a cap",
                if cap.is_none() { " without a cap" } else { "" }
            ),
        )?;
    }
    // Lossy: the nearest A6 policy (a 1 ns base where there was none, no cap = the largest delay reached).
    let base = base.unwrap_or(Span::from_ns(1));
    let cap = cap.unwrap_or_else(|| base.mul_f64(multiplier.powi(MAX_ATTEMPTS_CAP as i32 - 2)));
    Ok((base, cap, multiplier))
}

fn hedging_json(k: &mut Keys, h: &Table) -> Result<Json, InteropError> {
    let mut out = Map::new();
    let attempts = match h.get("max_attempts") {
        Some(v) => k.count("hedge.max_attempts", v)?,
        None => {
            k.refuse("hedge.preset", "gRPC's hedgingPolicy needs maxAttempts: set hedge.max_attempts")?;
            2
        }
    };
    out.insert("maxAttempts".into(), json!(attempts));
    let delay = match h.get("delay").and_then(Value::as_str) {
        None => Span::ZERO,
        Some(d) => match Span::parse(d) {
            Ok(span) => span,
            Err(_) => {
                k.refuse("hedge.delay", format!("{d:?}: gRPC's hedgingDelay is a fixed duration"))?;
                Span::ZERO
            }
        },
    };
    out.insert("hedgingDelay".into(), Json::String(proto_duration(delay)));
    if let Some(v) = h.get("non_fatal") {
        out.insert(
            "nonFatalStatusCodes".into(),
            codes_json_of(k, "hedge.non_fatal", &outcomes(KIND, "hedge.non_fatal", v)?)?,
        );
    }
    let neutral = |key: &str, v: &Value| match key {
        "hedge_on_per_try_timeout" | "cancel_in_service" => v.as_bool() == Some(false),
        "scope" => v.as_str() == Some("client"),
        // Read only by a percentile delay.
        "window" | "min_samples" => !h.get("delay").and_then(Value::as_str).unwrap_or("0s").starts_with('p'),
        _ => false,
    };
    for (key, v) in h {
        if !matches!(key.as_str(), "max_attempts" | "delay" | "non_fatal") && !neutral(key, v) {
            k.refuse(
                &format!("hedge.{key}"),
                "gRPC's hedgingPolicy has maxAttempts, hedgingDelay and nonFatalStatusCodes",
            )?;
        }
    }
    Ok(Json::Object(out))
}

fn codes_json(k: &mut Keys, key: &str) -> Result<Json, InteropError> {
    let on = match k.take(key) {
        Some(v) => outcomes(KIND, key, v)?,
        None => {
            k.refuse(
                key,
                "retrysim's default list has 502 and timeouts, which no gRPC status code stands for",
            )?;
            Outcomes { statuses: BTreeSet::from([503]), timeout: false, connection_error: true }
        }
    };
    let codes = codes_json_of(k, key, &on)?;
    if codes.as_array().is_some_and(Vec::is_empty) {
        return Err(InteropError::Inexpressible {
            kind: KIND,
            key: key.into(),
            why:
                "no outcome left that a gRPC status code stands for (retryableStatusCodes must not be empty)"
                    .into(),
        });
    }
    Ok(codes)
}

fn codes_json_of(k: &mut Keys, key: &str, on: &Outcomes) -> Result<Json, InteropError> {
    let mut names = Vec::new();
    let mut covered = BTreeSet::new();
    for (name, _, statuses, connection) in CODES {
        let all = statuses.iter().all(|s| on.statuses.contains(s)) && (!connection || on.connection_error);
        if all {
            names.push(Json::String((*name).into()));
            covered.extend(statuses.iter().copied());
        }
    }
    let stray: Vec<String> = on
        .statuses
        .iter()
        .filter(|s| !covered.contains(*s))
        .map(u16::to_string)
        .chain(on.timeout.then(|| "timeout".to_string()))
        .chain((on.connection_error && !covered.contains(&503)).then(|| "connection-error".to_string()))
        .collect();
    if !stray.is_empty() {
        k.refuse(
            key,
            format!(
                "{} stand for no gRPC status code (409 ABORTED, 429 RESOURCE_EXHAUSTED, 500 INTERNAL, \
                 504 DEADLINE_EXCEEDED, 503 with connection-error UNAVAILABLE)",
                stray.join(", ")
            ),
        )?;
    }
    Ok(Json::Array(names))
}

/// A list of status codes (names or numbers) as the outcomes they stand for.
fn status_codes(v: &Json, field: &str) -> Result<Outcomes, InteropError> {
    let list = v
        .as_array()
        .ok_or_else(|| field_error(KIND, field, "is not a list", "write e.g. [\"UNAVAILABLE\"]"))?;
    let mut out = Outcomes::default();
    for c in list {
        let found = CODES.iter().find(|(name, number, _, _)| match c {
            Json::String(s) => s == name,
            Json::Number(n) => n.as_u64() == Some(*number),
            _ => false,
        });
        let Some((_, _, statuses, connection)) = found else {
            return Err(unrepresentable(
                KIND,
                field,
                format!(
                    "{c} stands for no retrysim outcome: the codes read are {}",
                    CODES.iter().map(|c| c.0).collect::<Vec<_>>().join(", ")
                ),
            ));
        };
        out.statuses.extend(statuses.iter().copied());
        out.connection_error |= connection;
    }
    Ok(out)
}

fn max_attempts(m: &Map<String, Json>, field: &str, notes: &mut Vec<String>) -> Result<u64, InteropError> {
    let n = match get(m, "maxAttempts").and_then(Json::as_u64) {
        Some(n) if n >= 2 => n,
        _ => {
            return Err(field_error(
                KIND,
                field,
                "is missing or below 2",
                "write an integer >= 2 (A6 requires it)",
            ));
        }
    };
    if n > MAX_ATTEMPTS_CAP {
        notes.push(format!("{field} = {n}: gRPC treats values above 5 as 5 (§2)"));
        return Ok(MAX_ATTEMPTS_CAP);
    }
    Ok(n)
}

/// A field by its JSON name or its proto name (`initialBackoff` or `initial_backoff`), as proto
/// JSON parsers read both.
fn get<'a>(m: &'a Map<String, Json>, camel: &str) -> Option<&'a Json> {
    m.get(camel).or_else(|| {
        let snake: String = camel
            .chars()
            .flat_map(|c| if c.is_ascii_uppercase() { vec!['_', c.to_ascii_lowercase()] } else { vec![c] })
            .collect();
        m.get(&snake)
    })
}

fn required<'a>(m: &'a Map<String, Json>, key: &str, path: &str) -> Result<&'a Json, InteropError> {
    get(m, key).ok_or_else(|| field_error(KIND, &format!("{path}.{key}"), "is missing", "A6 requires it"))
}

fn object<'a>(v: &'a Json, what: &str) -> Result<&'a Map<String, Json>, InteropError> {
    v.as_object().ok_or_else(|| field_error(KIND, what, "is not an object", "write a JSON object { ... }"))
}

fn toml_table(entries: &[(&str, Value)]) -> Value {
    Value::Table(entries.iter().map(|(k, v)| ((*k).to_string(), v.clone())).collect())
}

fn positive(v: &Json, field: &str) -> Result<Span, InteropError> {
    let span = span(v, field)?;
    if span.is_zero() {
        return Err(field_error(KIND, field, "is 0", "write a duration > 0, e.g. \"0.1s\" (A6)"));
    }
    Ok(span)
}

fn span(v: &Json, field: &str) -> Result<Span, InteropError> {
    let text =
        v.as_str().ok_or_else(|| field_error(KIND, field, "is not a string", "write e.g. \"0.1s\""))?;
    parse_proto_duration(text).ok_or_else(|| {
        field_error(
            KIND,
            field,
            format!("{text:?} is not a proto JSON duration"),
            "write seconds with an `s`, up to 9 decimals, e.g. \"0.1s\" or \"2s\"",
        )
    })
}

/// A google.protobuf.Duration in its JSON form: seconds, at most 9 decimals, then `s`.
fn parse_proto_duration(text: &str) -> Option<Span> {
    let number = text.strip_suffix('s')?;
    let (whole, frac) = number.split_once('.').unwrap_or((number, ""));
    if frac.len() > 9 || (whole.is_empty() && frac.is_empty()) {
        return None;
    }
    let digits = |s: &str| s.chars().all(|c| c.is_ascii_digit());
    if !digits(whole) || !digits(frac) {
        return None;
    }
    let secs: u64 = if whole.is_empty() { 0 } else { whole.parse().ok()? };
    let nanos: u64 = if frac.is_empty() { 0 } else { format!("{frac:0<9}").parse().ok()? };
    Some(Span::from_ns(secs.checked_mul(1_000_000_000)?.checked_add(nanos)?))
}

/// A span as a google.protobuf.Duration JSON string: `"0.1s"`, `"2s"`.
fn proto_duration(span: Span) -> String {
    let ns = span.as_ns();
    let (secs, nanos) = (ns / 1_000_000_000, ns % 1_000_000_000);
    if nanos == 0 {
        format!("{secs}s")
    } else {
        format!("{secs}.{}s", format!("{nanos:09}").trim_end_matches('0'))
    }
}

#[cfg(test)]
mod tests {
    use super::super::keys::testing::*;
    use super::*;

    /// gRFC A6's example service config ("Integration with Service Config"), with its
    /// retryThrottling example.
    const A6_EXAMPLE: &str = r#"{
      "loadBalancingPolicy": "round_robin",
      "methodConfig": [{
        "name": [{ "service": "EchoService", "method": "Echo" }],
        "retryPolicy": {
          "maxAttempts": 4,
          "initialBackoff": "0.1s",
          "maxBackoff": "1s",
          "backoffMultiplier": 2,
          "retryableStatusCodes": ["UNAVAILABLE"]
        }
      }],
      "retryThrottling": { "maxTokens": 10, "tokenRatio": 0.1 }
    }"#;

    /// A6's hedging example.
    const A6_HEDGING: &str = r#"{
      "methodConfig": [{
        "name": [{ "service": "EchoService" }],
        "hedgingPolicy": {
          "maxAttempts": 4,
          "hedgingDelay": "0.5s",
          "nonFatalStatusCodes": ["UNAVAILABLE", "INTERNAL", "ABORTED"]
        }
      }]
    }"#;

    #[test]
    fn a6s_example_imports_to_the_values_it_states() {
        let imp = Grpc.import(A6_EXAMPLE, "a6").unwrap();
        let want = strategy(
            r#"max_attempts = 4
               retry_on = [503, "connection-error"]
               honor_retry_after = true
               retry_after_mode = "grpc-pushback"
               backoff = { kind = "proportional-jitter", base = "100ms", cap = "1s", multiplier = 2.0, p = 0.2 }
               budget = { kind = "grpc-throttle", max_tokens = 10.0, token_ratio = 0.1 }"#,
        );
        let mut got = imp.strategy.clone();
        got.insert("name".into(), Value::String("s".into()));
        assert_eq!(normalized(&got), normalized(&want));
        assert!(imp.notes.iter().any(|n| n.contains("±20") || n.contains("U(0.8, 1.2)")), "{:?}", imp.notes);
    }

    #[test]
    fn a6s_hedging_example_imports_to_a_hedge() {
        let imp = Grpc.import(A6_HEDGING, "h").unwrap();
        let h = imp.strategy["hedge"].as_table().unwrap();
        assert_eq!(h["max_attempts"].as_integer(), Some(4));
        assert_eq!(h["delay"].as_str(), Some("500ms"));
        assert_eq!(
            h["non_fatal"],
            Value::Array(vec![
                Value::Integer(409),
                Value::Integer(500),
                Value::Integer(503),
                "connection-error".into()
            ])
        );
        assert_eq!(imp.strategy["max_attempts"].as_integer(), Some(1));
        assert!(imp.notes.iter().any(|n| n.contains("no retryThrottling")), "{:?}", imp.notes);
    }

    #[test]
    fn max_attempts_above_five_is_five_as_grpc_does() {
        let text = A6_EXAMPLE.replace("\"maxAttempts\": 4", "\"maxAttempts\": 9");
        let imp = Grpc.import(&text, "x").unwrap();
        assert_eq!(imp.strategy["max_attempts"].as_integer(), Some(5));
        assert!(imp.notes.iter().any(|n| n.contains("above 5")));
    }

    #[test]
    fn proto_json_names_are_read_too_and_unknown_fields_are_reported() {
        let text = r#"{"methodConfig": [{"name": [{}], "timeout": "2.5s", "retry_policy": {"max_attempts": 3,
            "initial_backoff": "0.2s", "max_backoff": "2s", "backoff_multiplier": 1.5,
            "retryable_status_codes": [14, "RESOURCE_EXHAUSTED"], "perAttemptRecvTimeout": "1s"}}], "color": 1}"#;
        let imp = Grpc.import(text, "x").unwrap();
        assert_eq!(imp.strategy["deadline"].as_str(), Some("2500ms"));
        assert_eq!(
            imp.strategy["retry_on"],
            Value::Array(vec![Value::Integer(429), Value::Integer(503), "connection-error".into()])
        );
        assert!(imp.notes.iter().any(|n| n.contains("`color`")), "{:?}", imp.notes);
        assert!(imp.notes.iter().any(|n| n.contains("retryPolicy.perAttemptRecvTimeout")), "{:?}", imp.notes);
    }

    #[test]
    fn proto_durations_read_and_write_exactly() {
        for (text, ns) in
            [("0.1s", 100_000_000), ("1s", 1_000_000_000), ("0.000000001s", 1), ("12.5s", 12_500_000_000)]
        {
            assert_eq!(parse_proto_duration(text), Some(Span::from_ns(ns)), "{text}");
            assert_eq!(proto_duration(Span::from_ns(ns)), text);
        }
        for bad in ["1", "1ms", "-1s", "0.1234567891s", "s", "1.s.s"] {
            assert_eq!(parse_proto_duration(bad), None, "{bad}");
        }
    }

    const EXPRESSIBLE: &[&str] = &[
        r#"max_attempts = 4
           retry_on = [503, "connection-error"]
           honor_retry_after = true
           retry_after_mode = "grpc-pushback"
           backoff = { kind = "proportional-jitter", base = "100ms", cap = "1s", multiplier = 2.0, p = 0.2 }
           budget = { kind = "grpc-throttle", max_tokens = 10.0, token_ratio = 0.1 }"#,
        r#"max_attempts = 5
           deadline = "3s"
           retry_on = [409, 429, 500, 503, 504, "connection-error"]
           honor_retry_after = true
           retry_after_mode = "grpc-pushback"
           backoff = { kind = "proportional-jitter", base = "25ms", cap = "2.5s", multiplier = 1.6, p = 0.2 }"#,
        r#"max_attempts = 2
           retry_on = [429]
           honor_retry_after = true
           retry_after_mode = "grpc-pushback"
           backoff = { kind = "proportional-jitter", base = "1.000000001s", cap = "1.000000001s", multiplier = 1.0, p = 0.2 }
           budget = { kind = "grpc-throttle", max_tokens = 1000.0, token_ratio = 0.025 }"#,
        r#"max_attempts = 1
           honor_retry_after = true
           retry_after_mode = "grpc-pushback"
           backoff = { kind = "none" }
           hedge = { max_attempts = 3, delay = "50ms", non_fatal = [503, "connection-error"] }
           budget = { kind = "grpc-throttle", max_tokens = 5.0, token_ratio = 0.5 }"#,
        r#"max_attempts = 1
           backoff = { kind = "none" }"#,
    ];

    #[test]
    fn what_grpc_expresses_round_trips_key_by_key() {
        assert_round_trips(&Grpc, EXPRESSIBLE);
    }

    #[test]
    fn what_grpc_cannot_express_is_refused_or_dropped_with_lossy() {
        let base = r#"retry_on = [503, "connection-error"]
           honor_retry_after = true
           retry_after_mode = "grpc-pushback"
           backoff = { kind = "proportional-jitter", base = "100ms", cap = "1s", multiplier = 2.0, p = 0.2 }"#;
        assert_refused(&Grpc, &format!("max_attempts = 6\n{base}"), "max_attempts");
        assert_refused(&Grpc, &format!("max_attempts = 3\ntimeout = \"1s\"\n{base}"), "timeout");
        assert_refused(&Grpc, &format!("{base}\n"), "max_attempts");
        let full_jitter = base.replace("proportional-jitter", "full-jitter").replace(", p = 0.2", "");
        assert_refused(&Grpc, &format!("max_attempts = 3\n{full_jitter}"), "backoff");
        assert_refused(
            &Grpc,
            &format!("max_attempts = 3\n{}", base.replace("503, ", "502, 503, ")),
            "retry_on",
        );
        assert_refused(
            &Grpc,
            &format!("max_attempts = 3\n{}", base.replace("true", "false")),
            "honor_retry_after",
        );
        assert_refused(
            &Grpc,
            &format!("max_attempts = 3\n{}", base.replace("grpc-pushback", "replace")),
            "retry_after_mode",
        );
        assert_refused(
            &Grpc,
            &format!("max_attempts = 3\nbudget = {{ kind = \"token-bucket\" }}\n{base}"),
            "budget",
        );
        assert_refused(
            &Grpc,
            &format!("max_attempts = 3\nbudget = {{ kind = \"grpc-throttle\", max_tokens = 7.5 }}\n{base}"),
            "budget.max_tokens",
        );
        assert_refused(
            &Grpc,
            "max_attempts = 3\nbackoff = { kind = \"none\" }\nretry_on = [503, \"connection-error\"]",
            "honor_retry_after",
        );
    }

    #[test]
    fn malformed_files_and_fields_out_of_range_name_the_field() {
        assert_import_error(&Grpc, "{ not json", "");
        let with = |from: &str, to: &str| A6_EXAMPLE.replace(from, to);
        assert_import_error(
            &Grpc,
            &with("\"maxAttempts\": 4", "\"maxAttempts\": 1"),
            "retryPolicy.maxAttempts",
        );
        assert_import_error(&Grpc, &with("\"0.1s\"", "\"100ms\""), "retryPolicy.initialBackoff");
        assert_import_error(&Grpc, &with("\"0.1s\"", "\"0s\""), "retryPolicy.initialBackoff");
        assert_import_error(
            &Grpc,
            &with("\"backoffMultiplier\": 2", "\"backoffMultiplier\": 0.5"),
            "retryPolicy.backoffMultiplier",
        );
        assert_import_error(
            &Grpc,
            &with("\"maxTokens\": 10", "\"maxTokens\": 1001"),
            "retryThrottling.maxTokens",
        );
        assert_import_error(
            &Grpc,
            &with("\"maxTokens\": 10", "\"maxTokens\": 10.5"),
            "retryThrottling.maxTokens",
        );
        assert_import_error(&Grpc, &with("0.1 }", "0.1234 }"), "retryThrottling.tokenRatio");
        assert_import_error(
            &Grpc,
            &with("[\"UNAVAILABLE\"]", "[\"NOT_FOUND\"]"),
            "retryPolicy.retryableStatusCodes",
        );
        assert_import_error(&Grpc, &with("[\"UNAVAILABLE\"]", "[]"), "retryPolicy.retryableStatusCodes");
        assert_import_error(
            &Grpc,
            &with(",\n          \"retryableStatusCodes\": [\"UNAVAILABLE\"]", ""),
            "retryPolicy.retryableStatusCodes",
        );
        let both =
            A6_EXAMPLE.replace("\"retryPolicy\"", "\"hedgingPolicy\": {\"maxAttempts\": 2}, \"retryPolicy\"");
        assert_import_error(&Grpc, &both, "methodConfig[0].hedgingPolicy");
        let two = r#"{"methodConfig": [{"name": [{}]}, {"name": [{}]}]}"#;
        assert_import_error(&Grpc, two, "methodConfig");
    }
}
