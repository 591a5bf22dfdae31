//! Checks a TOML tree against the schema, key by key, so that every error names its full
//! dotted key, and fills in the defaults.
//!
//! Why not serde alone (even through `serde_path_to_error`): serde buffers internally tagged
//! enums (`kind = ...`) and untagged ones before it dispatches on them, and the path is lost
//! inside: an unknown `bse` in a backoff would be reported at `strategies[0].backoff`, a bad
//! outage status as "data did not match any variant". Checking against the schema first also
//! refuses unknown keys *before* reporting missing ones, so a typo is reported as the typo and
//! not as the key it hides. Once a tree passes, serde maps it onto `super::super::spec`.

use super::{Field, IfAbsent, RETRY_GROUPS, Range, Table, Tagged, Ty};
use crate::experiment::ConfigError;
use crate::experiment::duration::Duration;
use crate::experiment::spec::CountOrPercentSpec;
use crate::suggest::{closest, list};
use serde::Deserialize;
use toml::Value;

type R<T> = Result<T, ConfigError>;

/// What a check does besides checking.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fill {
    /// Insert every absent default (a table ready for serde).
    Defaults,
    /// Leave absent keys absent and do not require required keys: for tables that are merged
    /// with others before they are complete (`[client]`, a strategy, a preset).
    Nothing,
}

/// The context of one check: where the text came from, and what to do with absent keys.
#[derive(Clone, Copy)]
pub struct Checker<'a> {
    pub origin: &'a str,
    pub fill: Fill,
    /// What to do inside partial tables ([`Table::partial`]): `Nothing` when checking a file
    /// (they are merged later), `Defaults` when checking a merged strategy.
    pub partials: Fill,
    /// Names a list entry in messages: `strategies[3]` -> `strategies.NAME` when unambiguous.
    pub name_entry: &'a dyn Fn(&str, usize, &Value) -> String,
}

impl Checker<'_> {
    /// Checks `value` at `path` against `ty`, filling defaults inside it as told.
    pub fn value(
        &self,
        path: &str,
        ty: &Ty,
        value: &mut Value,
        range: Range,
        message: Option<&str>,
    ) -> R<()> {
        let bad = |reason: String| invalid(self.origin, path, reason);
        match ty {
            Ty::Duration => {
                let d = Duration::deserialize(value.clone()).map_err(|e| bad(e.message().to_owned()))?;
                check_range(d.as_ns() as f64, &d.to_string(), range, message).map_err(bad)
            }
            Ty::Int { min, max } => match value {
                Value::Integer(i) if (*min..=*max).contains(i) => {
                    check_range(*i as f64, &i.to_string(), range, message).map_err(bad)
                }
                Value::Integer(i) => {
                    Err(bad(format!("{i} is out of range: expected a whole number from {min} to {max}")))
                }
                Value::Float(x) => {
                    Err(bad(format!("expected a whole number, found {x}: write it without a decimal point")))
                }
                other => Err(bad(format!("expected a whole number, found a {}", other.type_str()))),
            },
            Ty::Num => {
                let x = match value {
                    Value::Float(x) => *x,
                    // Exact for every integer a human writes; TOML integers are i64.
                    Value::Integer(i) => {
                        let x = *i as f64;
                        *value = Value::Float(x);
                        x
                    }
                    other => return Err(bad(format!("expected a number, found a {}", other.type_str()))),
                };
                if !x.is_finite() {
                    return Err(bad(format!("{x} is not a finite number")));
                }
                check_range(x, &x.to_string(), range, message).map_err(bad)
            }
            Ty::Bool => match value {
                Value::Boolean(_) => Ok(()),
                other => Err(bad(format!("expected true or false, found a {}", other.type_str()))),
            },
            Ty::Str => match value {
                Value::String(_) => Ok(()),
                other => Err(bad(format!("expected a string in quotes, found a {}", other.type_str()))),
            },
            Ty::Choice(choices) => match value {
                Value::String(s) if choices.contains(&s.as_str()) => Ok(()),
                Value::String(s) => {
                    let hint = closest(s, choices.iter().copied())
                        .map(|c| format!(" (did you mean \"{c}\"?)"))
                        .unwrap_or_default();
                    Err(bad(format!(
                        "unknown value \"{s}\"{hint}; expected one of: {}",
                        list(choices.iter().copied())
                    )))
                }
                other => Err(bad(format!(
                    "expected one of {} in quotes, found a {}",
                    list(choices.iter().copied()),
                    other.type_str()
                ))),
            },
            Ty::StatusOrFailure => status_or_failure(value).map_err(bad),
            Ty::RetryCondition => retry_condition(value).map_err(bad),
            Ty::CallsOrDuration => match value {
                Value::Integer(i) if (1..=u32::MAX as i64).contains(i) => Ok(()),
                Value::Integer(i) => Err(bad(format!(
                    "{i} calls is not a window: give a number of calls >= 1, or a duration such as \"10s\""
                ))),
                Value::String(_) => {
                    let d = Duration::deserialize(value.clone()).map_err(|e| bad(e.message().to_owned()))?;
                    if d.as_ns() == 0 || d.as_ns() % 1_000_000_000 != 0 {
                        return Err(bad(format!(
                            "{d} is not a whole number of seconds > 0 (the window keeps one bucket per second)"
                        )));
                    }
                    Ok(())
                }
                other => Err(bad(format!(
                    "expected a number of calls or a duration, found a {}",
                    other.type_str()
                ))),
            },
            Ty::CountOrPercent => match value {
                Value::Integer(i) if (0..=u32::MAX as i64).contains(i) => Ok(()),
                Value::String(t) => match CountOrPercentSpec::parse_percent(t) {
                    Some(p) if p <= 100.0 => Ok(()),
                    Some(p) => Err(bad(format!(
                        "{p}% is above 100%: give a percentage of the replicas up to \"100%\""
                    ))),
                    None => Err(bad(format!(
                        "\"{t}\" is not a percentage: write a count such as 1, or a percentage such as \"25%\""
                    ))),
                },
                other => Err(bad(format!(
                    "expected a count such as 1 or a percentage such as \"25%\", found {}",
                    other.type_str()
                ))),
            },
            Ty::List(item) => {
                let Value::Array(items) = value else {
                    return Err(bad(format!(
                        "expected a list such as [...] or [[{path}]] tables, found a {}",
                        value.type_str()
                    )));
                };
                for (i, v) in items.iter_mut().enumerate() {
                    let shown = (self.name_entry)(path, i, v);
                    self.value(&shown, item, v, Range::Any, None)?;
                }
                Ok(())
            }
            Ty::Table(t) => self.table(path, t, value),
            Ty::Tagged(t) => self.tagged(path, t, value),
            // The keys are dotted keys of the format, checked by whoever reads them (`[tune]`'s
            // by the tune layer).
            Ty::Keys { .. } => as_table(self.origin, path, value).map(|_| ()),
            Ty::Windows => windows(self.origin, path, value),
        }
    }

    /// A table with fixed keys: unknown keys first, then each key, then the missing ones.
    pub fn table(&self, path: &str, t: &Table, value: &mut Value) -> R<()> {
        if t.partial && self.fill != self.partials {
            return Checker { fill: self.partials, ..*self }.table(path, t, value);
        }
        let table = as_table(self.origin, path, value)?;
        let keys: Vec<&str> = t.fields.iter().map(|f| f.key).collect();
        check_unknown(self.origin, path, table, &keys, &|_| None)?;
        self.fields(path, t.fields, table, None)
    }

    fn tagged(&self, path: &str, t: &Tagged, value: &mut Value) -> R<()> {
        let table = as_table(self.origin, path, value)?;
        let kind = tag_value(self.origin, path, table, t, self.fill)?;
        let Some(kind) = kind else {
            // No tag yet (a partial table to be merged): check the keys that exist against
            // every kind that has them.
            return self.untagged_partial(path, t, table);
        };
        let variant = t.variants.iter().find(|v| v.kind == kind).ok_or_else(|| {
            let hint = closest(&kind, t.variants.iter().map(|v| v.kind))
                .map(|c| format!(" (did you mean \"{c}\"?)"))
                .unwrap_or_default();
            let reason = format!("unknown {} \"{kind}\"{hint}; valid {}s: {}", t.what, t.what, kinds(t));
            invalid(self.origin, &join(path, t.tag), reason)
        })?;
        let mut keys: Vec<&str> = vec![t.tag];
        keys.extend(variant.fields.iter().map(|f| f.key));
        check_unknown(self.origin, path, table, &keys, &|key| other_kinds(t, variant.kind, key))?;
        if self.fill == Fill::Defaults && !table.contains_key(t.tag) {
            table.insert(t.tag.to_owned(), Value::String(kind.clone()));
        }
        self.fields(path, variant.fields, table, Some(t))
    }

    /// A tagged table without its tag (possible only in partial tables): each key must belong
    /// to some kind, and is checked as that kind's key.
    fn untagged_partial(&self, path: &str, t: &Tagged, table: &mut toml::Table) -> R<()> {
        let all: Vec<&str> = t.variants.iter().flat_map(|v| v.fields.iter().map(|f| f.key)).collect();
        check_unknown(self.origin, path, table, &all, &|_| None)?;
        for (key, value) in table.iter_mut() {
            if let Some(field) = t.variants.iter().flat_map(|v| v.fields.iter()).find(|f| f.key == key) {
                self.value(&join(path, key), &field.ty, value, field.range, field.range_message)?;
            }
        }
        Ok(())
    }

    /// Checks the present keys and fills (or reports) the absent ones.
    fn fields(
        &self,
        path: &str,
        fields: &[Field],
        table: &mut toml::Table,
        tagged: Option<&Tagged>,
    ) -> R<()> {
        for field in fields {
            let key = join(path, field.key);
            match table.get_mut(field.key) {
                Some(v) => self.value(&key, &field.ty, v, field.range, field.range_message)?,
                None => match (&field.default, self.fill) {
                    (IfAbsent::Required, Fill::Defaults) => {
                        let help = match &field.ty {
                            Ty::Tagged(t) => Some(format!("add it with {} = one of: {}", t.tag, kinds(t))),
                            Ty::List(_) => {
                                Some(format!("no {0}: add at least one [[{key}]] entry", field.key))
                            }
                            _ => None,
                        };
                        return Err(ConfigError::MissingKey { origin: self.origin.to_owned(), key, help });
                    }
                    (default, Fill::Defaults) => {
                        if let Some(text) = default.toml() {
                            let mut v = literal(&text);
                            self.value(&key, &field.ty, &mut v, field.range, field.range_message)?;
                            table.insert(field.key.to_owned(), v);
                        }
                    }
                    (_, Fill::Nothing) => {}
                },
            }
        }
        let _ = tagged;
        Ok(())
    }
}

/// A TOML value written as text in the schema (defaults).
pub fn literal(text: &str) -> Value {
    let doc: toml::Table =
        format!("v = {text}").parse().unwrap_or_else(|e| panic!("schema default `{text}`: {e}"));
    doc.get("v").cloned().unwrap_or_else(|| panic!("schema default `{text}` is not a value"))
}

fn check_range(x: f64, shown: &str, range: Range, message: Option<&str>) -> Result<(), String> {
    let ok = match range {
        Range::Any => true,
        Range::AtLeast(lo) => x >= lo,
        Range::Above(lo) => x > lo,
        Range::Between(lo, hi) => (lo..=hi).contains(&x),
        Range::AboveUpTo(lo, hi) => x > lo && x <= hi,
        Range::AtLeastBelow(lo, hi) => x >= lo && x < hi,
    };
    if ok {
        return Ok(());
    }
    if let Some(m) = message {
        return Err(m.replace("{v}", shown));
    }
    Err(match range {
        Range::Any => unreachable!(),
        Range::AtLeast(lo) => format!("{shown} is below {lo}: it must be >= {lo}"),
        Range::Above(lo) => format!("{shown} is not above {lo}: it must be > {lo}"),
        Range::Between(lo, hi) if (lo, hi) == (0.0, 1.0) => {
            format!("{shown} is outside [0, 1]: write a probability such as 0.05 for 5 %")
        }
        Range::Between(lo, hi) => format!("{shown} is outside [{lo}, {hi}]"),
        Range::AboveUpTo(lo, hi) => format!("{shown} is outside ({lo}, {hi}]: it must be > {lo} and <= {hi}"),
        Range::AtLeastBelow(lo, hi) => {
            format!("{shown} is outside [{lo}, {hi}): it must be >= {lo} and < {hi}")
        }
    })
}

/// `NAME = [start, end]` entries: identifiers naming two durations, start < end (the horizon
/// bound is a rule between keys, checked in `validate`).
fn windows(origin: &str, path: &str, value: &mut Value) -> R<()> {
    let example = "write it as NAME = [\"60s\", \"100s\"]: the window [start, end) in simulated time";
    for (name, v) in as_table(origin, path, value)? {
        let key = join(path, name);
        let bad = |reason: String| invalid(origin, &key, reason);
        let ident = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ident {
            return Err(bad(format!(
                "\"{name}\" is not a window name: use letters, digits and '_', starting with a letter (it names columns such as success_rate@NAME)"
            )));
        }
        let ends = match v {
            Value::Array(items) if items.len() == 2 => items
                .iter()
                .map(|d| {
                    Duration::deserialize(d.clone()).map_err(|e| bad(format!("{}; {example}", e.message())))
                })
                .collect::<R<Vec<Duration>>>()?,
            other => {
                let found = match other {
                    Value::Array(items) => format!("a list of {}", items.len()),
                    other => format!("a {}", other.type_str()),
                };
                return Err(bad(format!("expected [start, end], found {found}; {example}")));
            }
        };
        if ends[0] >= ends[1] {
            return Err(bad(format!(
                "starts at {} and ends at {}: the start must be before the end",
                ends[0], ends[1]
            )));
        }
    }
    Ok(())
}

fn status_or_failure(v: &Value) -> Result<(), String> {
    const NAMES: [&str; 2] = ["timeout", "connection-error"];
    match v {
        Value::Integer(i) if (400..=599).contains(i) => Ok(()),
        Value::Integer(i) => Err(format!("{i} is not an error status: use a code from 400 to 599, e.g. 503")),
        Value::String(s) if NAMES.contains(&s.as_str()) => Ok(()),
        Value::String(s) => {
            let hint = closest(s, NAMES).map(|c| format!(" (did you mean \"{c}\"?)")).unwrap_or_default();
            Err(format!(
                "unknown failure \"{s}\"{hint}: expected a status code such as 503, \"timeout\" or \"connection-error\""
            ))
        }
        other => {
            Err(format!("expected a status code such as 503, or \"timeout\", found a {}", other.type_str()))
        }
    }
}

/// A retry list's entry: [`status_or_failure`], or one of Envoy's groups ([`RETRY_GROUPS`]).
fn retry_condition(v: &Value) -> Result<(), String> {
    match v {
        Value::String(s) if RETRY_GROUPS.contains(&s.as_str()) => Ok(()),
        Value::String(s) if s == "refused-stream" => Err(
            "Envoy's refused-stream retries an HTTP/2 REFUSED_STREAM reset, which retrysim never produces (it would never match): remove it"
                .to_owned(),
        ),
        Value::String(s) if !["timeout", "connection-error"].contains(&s.as_str()) => {
            let names = ["timeout", "connection-error"].into_iter().chain(RETRY_GROUPS);
            let hint = closest(s, names).map(|c| format!(" (did you mean \"{c}\"?)")).unwrap_or_default();
            Err(format!(
                "unknown failure \"{s}\"{hint}: expected a status code such as 503, \"timeout\", \"connection-error\" or an Envoy group ({})",
                RETRY_GROUPS.join(", ")
            ))
        }
        other => status_or_failure(other),
    }
}

fn as_table<'v>(origin: &str, path: &str, value: &'v mut Value) -> R<&'v mut toml::Table> {
    let found = value.type_str();
    value.as_table_mut().ok_or_else(|| {
        invalid(origin, path, format!("expected a table such as {{ key = value, ... }}, found a {found}"))
    })
}

/// The tag's value, or the default kind (`None` only for partial tables without it).
fn tag_value(origin: &str, path: &str, table: &toml::Table, t: &Tagged, fill: Fill) -> R<Option<String>> {
    match table.get(t.tag) {
        Some(Value::String(kind)) => Ok(Some(kind.clone())),
        None => match (t.default, fill) {
            (Some(d), _) => Ok(Some(d.to_owned())),
            (None, Fill::Nothing) => Ok(None),
            (None, Fill::Defaults) => Err(ConfigError::MissingKey {
                origin: origin.to_owned(),
                key: join(path, t.tag),
                help: Some(format!("set it to one of: {}", kinds(t))),
            }),
        },
        Some(other) => Err(invalid(
            origin,
            &join(path, t.tag),
            format!("expected a {} in quotes, one of: {}; found a {}", t.what, kinds(t), other.type_str()),
        )),
    }
}

/// Refuses the first key not in `keys`. `note` may explain a key that is valid elsewhere
/// (another kind); otherwise the closest valid key is suggested, or all are listed.
fn check_unknown(
    origin: &str,
    path: &str,
    table: &toml::Table,
    keys: &[&str],
    note: &dyn Fn(&str) -> Option<String>,
) -> R<()> {
    let Some(key) = table.keys().find(|k| !keys.contains(&k.as_str())) else {
        return Ok(());
    };
    let mut help = note(key);
    let suggestion = match help {
        Some(_) => None,
        None => closest(key, keys.iter().copied()).map(|s| join(path, s)),
    };
    if help.is_none() && suggestion.is_none() {
        let place = if path.is_empty() { "at the top level".to_owned() } else { format!("in `{path}`") };
        help = Some(format!("valid keys {place}: {}", list(keys.iter().copied())));
    }
    Err(ConfigError::UnknownKey { origin: origin.to_owned(), key: join(path, key), suggestion, help })
}

fn kinds(t: &Tagged) -> String {
    list(t.variants.iter().map(|v| v.kind))
}

/// "`rate` belongs to workload kind open, not to kind = \"closed\"" when `key` is valid for
/// other kinds, or where the schema keeps it ([`super::KEPT_ELSEWHERE`]).
fn other_kinds(t: &Tagged, current: &str, key: &str) -> Option<String> {
    if let Some((.., place)) = super::KEPT_ELSEWHERE
        .iter()
        .find(|&&(what, kind, k, _)| what == t.what && kind == current && k == key)
    {
        return Some((*place).to_owned());
    }
    let owners: Vec<&str> =
        t.variants.iter().filter(|v| v.fields.iter().any(|f| f.key == key)).map(|v| v.kind).collect();
    (!owners.is_empty())
        .then(|| format!("`{key}` belongs to {} {}, not to {} = \"{current}\"", t.what, list(owners), t.tag))
}

pub(crate) fn invalid(origin: &str, key: &str, reason: String) -> ConfigError {
    ConfigError::InvalidValue { origin: origin.to_owned(), key: key.to_owned(), reason }
}

/// `a.b` from `a` and `b`; just `b` at the top level.
pub fn join(path: &str, key: &str) -> String {
    if path.is_empty() { key.to_owned() } else { format!("{path}.{key}") }
}
