//! YAML files (Envoy, Istio, Linkerd, ...) read with `serde_yaml_ng`, and the two duration
//! syntaxes they use: protobuf's JSON form (`"0.25s"`, Envoy) and Go's (`"250ms"`, `"1m30s"`,
//! Kubernetes resources).

use super::InteropError;
use crate::engine::Span;
use serde_yaml_ng::{Mapping, Value};

/// Every document of a YAML stream (`---` separated), empty ones left out.
pub fn documents(kind: &'static str, text: &str) -> Result<Vec<Value>, InteropError> {
    let mut docs = Vec::new();
    for doc in serde_yaml_ng::Deserializer::from_str(text) {
        let value: Value = serde::Deserialize::deserialize(doc)
            .map_err(|e| InteropError::Parse { kind, message: e.to_string() })?;
        if !value.is_null() {
            docs.push(value);
        }
    }
    Ok(docs)
}

/// A mapping's field.
pub fn field<'a>(map: &'a Mapping, key: &str) -> Option<&'a Value> {
    map.get(key)
}

/// The keys of `map` that are not in `known`, as notes (`"unknown field PATH.KEY ignored"`).
pub fn unknown_fields(map: &Mapping, known: &[&str], path: &str, notes: &mut Vec<String>) {
    for key in map.keys() {
        let name = key.as_str().map_or_else(|| format!("{key:?}"), str::to_string);
        if !known.contains(&name.as_str()) {
            notes.push(format!("unknown field {path}.{name}: ignored (not part of what retrysim reads)"));
        }
    }
}

/// A field error of `kind` at `field`.
pub fn bad(
    kind: &'static str,
    field: &str,
    problem: impl Into<String>,
    fix: impl Into<String>,
) -> InteropError {
    InteropError::Field { kind, field: field.to_string(), problem: problem.into(), fix: fix.into() }
}

/// A field that must be a mapping.
pub fn mapping<'a>(kind: &'static str, path: &str, v: &'a Value) -> Result<&'a Mapping, InteropError> {
    v.as_mapping().ok_or_else(|| bad(kind, path, "is not a mapping", "write it as `key: value` lines"))
}

/// A whole number in `[min, max]`.
pub fn integer(kind: &'static str, path: &str, v: &Value, min: i64, max: i64) -> Result<i64, InteropError> {
    match v.as_i64() {
        Some(i) if (min..=max).contains(&i) => Ok(i),
        Some(i) => Err(bad(
            kind,
            path,
            format!("{i} is out of range"),
            format!("use a whole number from {min} to {max}"),
        )),
        None => Err(bad(
            kind,
            path,
            format!("{} is not a whole number", show(v)),
            format!("use a whole number from {min} to {max}"),
        )),
    }
}

/// A number (an integer is accepted) in `[min, max]`.
pub fn number(kind: &'static str, path: &str, v: &Value, min: f64, max: f64) -> Result<f64, InteropError> {
    match v.as_f64() {
        Some(x) if x.is_finite() && (min..=max).contains(&x) => Ok(x),
        Some(x) => {
            Err(bad(kind, path, format!("{x} is out of range"), format!("use a number from {min} to {max}")))
        }
        None => Err(bad(
            kind,
            path,
            format!("{} is not a number", show(v)),
            format!("use a number from {min} to {max}"),
        )),
    }
}

/// A boolean.
pub fn boolean(kind: &'static str, path: &str, v: &Value) -> Result<bool, InteropError> {
    v.as_bool()
        .ok_or_else(|| bad(kind, path, format!("{} is not true or false", show(v)), "write true or false"))
}

/// A value as it reads in a message.
pub fn show(v: &Value) -> String {
    serde_yaml_ng::to_string(v).map_or_else(|_| format!("{v:?}"), |s| s.trim().to_string())
}

/// A protobuf duration in its JSON form, as Envoy reads it: seconds with up to nine decimals
/// and an `s` (`"0.025s"`, `"300s"`).
pub fn proto_duration(kind: &'static str, path: &str, v: &Value) -> Result<Span, InteropError> {
    let fix = "write seconds with an `s`, e.g. \"0.25s\" (Envoy reads durations in the protobuf JSON form)";
    let Some(text) = v.as_str() else {
        return Err(bad(kind, path, format!("{} has no unit", show(v)), fix));
    };
    let Some(number) = text.strip_suffix('s') else {
        return Err(bad(kind, path, format!("\"{text}\" is not in seconds"), fix));
    };
    if number.ends_with(|c: char| c.is_ascii_alphabetic()) {
        return Err(bad(kind, path, format!("\"{text}\" is not in seconds"), fix));
    }
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let digits = |d: &str| d.chars().all(|c| c.is_ascii_digit());
    if whole.is_empty()
        || !digits(whole)
        || !digits(fraction)
        || fraction.len() > 9
        || (number.contains('.') && fraction.is_empty())
    {
        return Err(bad(kind, path, format!("\"{text}\" is not a duration"), fix));
    }
    let secs: u64 = whole.parse().map_err(|_| bad(kind, path, format!("\"{text}\" is too long"), fix))?;
    let nanos: u64 = format!("{fraction:0<9}").parse().unwrap_or(0);
    secs.checked_mul(1_000_000_000)
        .and_then(|ns| ns.checked_add(nanos))
        .map(Span::from_ns)
        .ok_or_else(|| bad(kind, path, format!("\"{text}\" is too long"), fix))
}

/// A span in protobuf's JSON form: `"0.025s"`, `"300s"`.
pub fn proto_duration_text(span: Span) -> String {
    let ns = span.as_ns();
    let (secs, nanos) = (ns / 1_000_000_000, ns % 1_000_000_000);
    if nanos == 0 {
        return format!("{secs}s");
    }
    let fraction = format!("{nanos:09}");
    format!("{secs}.{}s", fraction.trim_end_matches('0'))
}

/// A Go duration (`time.ParseDuration`), as Kubernetes resources write them: one or more
/// `<number><unit>`, the unit one of h, m, s, ms, us, µs, ns (`"300ms"`, `"1m30s"`); a bare
/// `0` is zero.
pub fn go_duration(kind: &'static str, path: &str, v: &Value) -> Result<Span, InteropError> {
    let fix = "write it with a unit, e.g. \"300ms\", \"2s\" or \"1m30s\"";
    let text = match v {
        Value::String(s) => s.as_str(),
        Value::Number(n) if n.as_u64() == Some(0) => return Ok(Span::ZERO),
        _ => return Err(bad(kind, path, format!("{} has no unit", show(v)), fix)),
    };
    let mut rest = text.trim();
    if rest == "0" {
        return Ok(Span::ZERO);
    }
    if rest.is_empty() {
        return Err(bad(kind, path, "is empty", fix));
    }
    let mut total = 0.0_f64;
    while !rest.is_empty() {
        let split = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        let (number, tail) = rest.split_at(split);
        let unit_len = tail.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(tail.len());
        let (unit, next) = tail.split_at(unit_len);
        let scale = match unit {
            "h" => 3600e9,
            "m" => 60e9,
            "s" => 1e9,
            "ms" => 1e6,
            "us" | "µs" => 1e3,
            "ns" => 1.0,
            "" => return Err(bad(kind, path, format!("\"{text}\" has no unit"), fix)),
            other => return Err(bad(kind, path, format!("\"{text}\" has an unknown unit \"{other}\""), fix)),
        };
        let x: f64 =
            number.parse().map_err(|_| bad(kind, path, format!("\"{text}\" is not a duration"), fix))?;
        total += x * scale;
        rest = next;
    }
    Ok(Span::from_ns_f64(total))
}

/// A span as a Go duration: [`super::duration_text`]'s spelling (`"2s"`, `"250ms"`) is one.
pub fn go_duration_text(span: Span) -> String {
    super::duration_text(span)
}

/// A mapping built in order (`serde_yaml_ng` keeps insertion order when it writes).
pub fn map<const N: usize>(entries: [(&str, Value); N]) -> Value {
    let mut m = Mapping::new();
    for (k, v) in entries {
        m.insert(Value::String(k.to_string()), v);
    }
    Value::Mapping(m)
}

/// A string value.
pub fn string(s: impl Into<String>) -> Value {
    Value::String(s.into())
}

/// `doc` as YAML text after the comment lines `header` (each line already starting with `#`).
pub fn write(header: &str, doc: &Value) -> String {
    let body = serde_yaml_ng::to_string(doc).unwrap_or_else(|e| format!("# cannot write YAML: {e}\n"));
    format!("{header}{body}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(text: &str) -> Value {
        Value::String(text.to_string())
    }

    #[test]
    fn proto_durations_are_seconds_with_an_s() {
        assert_eq!(proto_duration("t", "f", &s("0.025s")).unwrap(), Span::from_millis(25));
        assert_eq!(proto_duration("t", "f", &s("300s")).unwrap(), Span::from_secs(300));
        assert_eq!(proto_duration("t", "f", &s("1.000000001s")).unwrap(), Span::from_ns(1_000_000_001));
        for bad_text in ["25ms", "0.25", "s", ".5s", "1.s", "-1s", "1.0000000001s"] {
            assert!(proto_duration("t", "f", &s(bad_text)).is_err(), "{bad_text}");
        }
        let unitless = proto_duration("t", "f", &Value::from(1)).unwrap_err().to_string();
        assert!(unitless.contains("f: 1 has no unit"), "{unitless}");
        for ns in [0, 1, 25_000_000, 1_500_000_000, 300_000_000_000] {
            let span = Span::from_ns(ns);
            assert_eq!(proto_duration("t", "f", &s(&proto_duration_text(span))).unwrap(), span);
        }
    }

    #[test]
    fn go_durations_read_as_time_parse_duration_does() {
        assert_eq!(go_duration("t", "f", &s("300ms")).unwrap(), Span::from_millis(300));
        assert_eq!(go_duration("t", "f", &s("1m30s")).unwrap(), Span::from_secs(90));
        assert_eq!(go_duration("t", "f", &s("1.5s")).unwrap(), Span::from_millis(1500));
        assert_eq!(go_duration("t", "f", &s("0")).unwrap(), Span::ZERO);
        for bad_text in ["10", "10 s", "1x", "", "ms"] {
            assert!(go_duration("t", "f", &s(bad_text)).is_err(), "{bad_text:?}");
        }
        assert!(go_duration("t", "f", &Value::from(10)).unwrap_err().to_string().contains("no unit"));
        for ns in [1, 25_000_000, 2_000_000_000, 1_500] {
            let span = Span::from_ns(ns);
            assert_eq!(go_duration("t", "f", &s(&go_duration_text(span))).unwrap(), span);
        }
    }
}
