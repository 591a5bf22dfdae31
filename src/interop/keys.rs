//! What every format shares: the one record of what an export cannot carry ([`Keys`]: a
//! format takes a strategy's keys, and whatever it refuses or leaves is listed by key, an error
//! without `lossy`, stated in the file's comment by [`dropped_comment`] where the format has
//! comments and in the summary of `retrysim export` and `tune`); an import builds the table with
//! durations in [`duration_text`](super::duration_text) and says what it applied or ignored.

use super::InteropError;
use super::strategy::Strategy;
pub(crate) use super::strategy::duration_value;
use crate::engine::Span;
use std::collections::BTreeSet;
use toml::{Table, Value};

/// Keys whose value here changes nothing a library could be told: a strategy may carry them
/// to any target, whichever format reads it. `retry_after_mode` and `retry_after_cap` join
/// them when `honor_retry_after` is off, and `host_selection_retry_max_attempts` when
/// `retry_other_replica` is, since none of them is read then.
const NEUTRAL: &[(&str, &str)] = &[
    ("honor_retry_after", "false"),
    ("honor_dont_retry", "false"),
    ("idempotency", "\"none\""),
    ("retry_other_replica", "false"),
    ("layers", "[]"),
    // The call graph's switches (DESIGN §3.7), off by default.
    ("propagate_deadline", "false"),
    ("propagate_cancellation", "false"),
    ("cancel_in_service", "false"),
];

/// Whether `key = v` of `table` changes nothing a library could be told (see [`NEUTRAL`]).
pub(crate) fn is_neutral(table: &Table, key: &str, v: &Value) -> bool {
    NEUTRAL.iter().any(|(nk, nv)| *nk == key && nv.parse::<Value>().is_ok_and(|n| &n == v))
        || (matches!(key, "retry_after_mode" | "retry_after_cap")
            && table.get("honor_retry_after").and_then(Value::as_bool) != Some(true))
        || (key == "host_selection_retry_max_attempts"
            && table.get("retry_other_replica").and_then(Value::as_bool) != Some(true))
}

/// A strategy table read by an export, for every format: every key a format takes is its to
/// write; what it refuses, and at [`Keys::finish`] every key it left, is an error naming the key
/// (or, when lossy, a line `key: why` of the dropped list). Keys at their neutral value
/// ([`is_neutral`]) are never a loss.
pub(crate) struct Keys<'a> {
    kind: &'static str,
    table: &'a Table,
    left: BTreeSet<String>,
    lossy: bool,
    dropped: Vec<String>,
}

impl<'a> Keys<'a> {
    pub(crate) fn new(kind: &'static str, table: &'a Table, lossy: bool) -> Keys<'a> {
        let left = table
            .iter()
            .filter(|(k, v)| !matches!(k.as_str(), "name" | "preset") && !is_neutral(table, k, v))
            .map(|(k, _)| k.clone())
            .collect();
        Keys { kind, table, left, lossy, dropped: Vec::new() }
    }

    /// For a format with a fixed list of settings (the proxies): the keys in `carried` are the
    /// format's to write, every other one is refused now (`target` names what has no such
    /// setting), so that nothing the strategy does is lost silently.
    pub(crate) fn carrying(
        kind: &'static str,
        table: &'a Table,
        lossy: bool,
        carried: &[&str],
        target: &str,
    ) -> Result<Keys<'a>, InteropError> {
        let mut keys = Keys::new(kind, table, lossy);
        for key in std::mem::take(&mut keys.left) {
            if !carried.contains(&key.as_str()) {
                keys.refuse(&key, format!("{target} has no such setting"))?;
            }
        }
        Ok(keys)
    }

    /// The table read with dotted keys and typed values (the proxies' exports).
    pub(crate) fn strategy(&self) -> Strategy<'a> {
        Strategy { kind: self.kind, table: self.table }
    }

    /// The strategy's name (`"strategy"` without one).
    pub(crate) fn name(&self) -> &'a str {
        self.table.get("name").and_then(Value::as_str).unwrap_or("strategy")
    }

    /// `key`'s value, now the format's to write (or refuse).
    pub(crate) fn take(&mut self, key: &str) -> Option<&'a Value> {
        self.left.remove(key);
        self.table.get(key)
    }

    /// `key` as the strategy reads it, without taking it.
    pub(crate) fn peek(&self, key: &str) -> Option<&'a Value> {
        self.table.get(key)
    }

    /// The target cannot carry `key`: an error, or with `lossy` a line of `dropped`.
    pub(crate) fn refuse(&mut self, key: &str, why: impl Into<String>) -> Result<(), InteropError> {
        self.left.remove(key);
        let why = why.into();
        if self.lossy {
            self.dropped.push(format!("{key}: {why}"));
            Ok(())
        } else {
            Err(InteropError::Inexpressible { kind: self.kind, key: key.to_string(), why })
        }
    }

    /// Refuses every key not taken (`why` says what the target carries), then gives the
    /// dropped lines.
    pub(crate) fn finish(mut self, why: &str) -> Result<Vec<String>, InteropError> {
        for key in std::mem::take(&mut self.left) {
            self.refuse(&key, why)?;
        }
        Ok(self.dropped)
    }

    /// A duration value of the strategy (`key` names it in an error).
    pub(crate) fn span(&self, key: &str, v: &Value) -> Result<Span, InteropError> {
        let text = v.as_str().ok_or_else(|| self.bad(key, "is not a duration string"))?;
        Span::parse(text).map_err(|e| self.bad(key, &e))
    }

    /// A number of the strategy (an integer reads as a float).
    pub(crate) fn number(&self, key: &str, v: &Value) -> Result<f64, InteropError> {
        v.as_float().or(v.as_integer().map(|i| i as f64)).ok_or_else(|| self.bad(key, "is not a number"))
    }

    /// A non-negative integer of the strategy.
    pub(crate) fn count(&self, key: &str, v: &Value) -> Result<u64, InteropError> {
        v.as_integer().and_then(|i| u64::try_from(i).ok()).ok_or_else(|| self.bad(key, "is not a count"))
    }

    fn bad(&self, key: &str, problem: &str) -> InteropError {
        InteropError::Field {
            kind: self.kind,
            field: key.to_string(),
            problem: problem.to_string(),
            fix: "check the strategy with `retrysim check`".to_string(),
        }
    }
}

/// The comment lines of an exported file that say what was dropped (none without loss).
pub(crate) fn dropped_comment(prefix: &str, dropped: &[String]) -> String {
    if dropped.is_empty() {
        return String::new();
    }
    let mut out = format!("{prefix} Not expressible here, dropped (--lossy):\n");
    for d in dropped {
        out.push_str(&format!("{prefix}   {d}\n"));
    }
    out
}

/// A strategy's table (`backoff`, `breaker`, ...) as a table, or an error naming it.
pub(crate) fn sub<'a>(kind: &'static str, key: &str, v: &'a Value) -> Result<&'a Table, InteropError> {
    v.as_table().ok_or_else(|| InteropError::Field {
        kind,
        field: key.to_string(),
        problem: "is not a table".to_string(),
        fix: "check the strategy with `retrysim check`".to_string(),
    })
}

/// The keys of `table` besides `known`, as `path.key` (for refusing the rest of a sub-table).
pub(crate) fn other_keys(table: &Table, path: &str, known: &[&str]) -> Vec<String> {
    table.keys().filter(|k| !known.contains(&k.as_str())).map(|k| format!("{path}.{k}")).collect()
}

/// A field of the imported file is missing, of the wrong type or out of range.
pub(crate) fn field_error(
    kind: &'static str,
    field: &str,
    problem: impl Into<String>,
    fix: impl Into<String>,
) -> InteropError {
    InteropError::Field { kind, field: field.to_string(), problem: problem.into(), fix: fix.into() }
}

/// A field of the imported file that retrysim's keys cannot state exactly.
pub(crate) fn unrepresentable(kind: &'static str, field: &str, why: impl Into<String>) -> InteropError {
    InteropError::Unrepresentable { kind, field: field.to_string(), why: why.into() }
}

/// `retry_on` in its one order: statuses ascending, then `"timeout"`, then `"connection-error"`,
/// so that an import gives the same list whatever order the file used.
pub(crate) fn retry_on_value(statuses: &BTreeSet<u16>, timeout: bool, connection_error: bool) -> Value {
    let mut list: Vec<Value> = statuses.iter().map(|s| Value::Integer(i64::from(*s))).collect();
    if timeout {
        list.push(Value::String("timeout".into()));
    }
    if connection_error {
        list.push(Value::String("connection-error".into()));
    }
    Value::Array(list)
}

/// A `retry_on` (or `non_fatal`) list split into statuses and the two failures; an entry that
/// is neither is an error naming `key`.
pub(crate) fn outcomes(kind: &'static str, key: &str, v: &Value) -> Result<Outcomes, InteropError> {
    let list = v.as_array().ok_or_else(|| field_error(kind, key, "is not a list", "check the strategy"))?;
    let mut out = Outcomes::default();
    for item in list {
        match item {
            Value::Integer(s) if (400..=599).contains(s) => {
                out.statuses.insert(*s as u16);
            }
            Value::String(s) if s == "timeout" => out.timeout = true,
            Value::String(s) if s == "connection-error" => out.connection_error = true,
            other => {
                return Err(field_error(
                    kind,
                    key,
                    format!("{other} is not an outcome"),
                    "check the strategy",
                ));
            }
        }
    }
    Ok(out)
}

/// The outcomes a `retry_on` list names.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Outcomes {
    pub statuses: BTreeSet<u16>,
    pub timeout: bool,
    pub connection_error: bool,
}

impl Outcomes {
    pub(crate) fn value(&self) -> Value {
        retry_on_value(&self.statuses, self.timeout, self.connection_error)
    }
}

/// The notes for the fields of a file object that the format does not read: `path.key` each.
pub(crate) fn unknown_notes<'k>(
    path: &str,
    keys: impl Iterator<Item = &'k str>,
    known: &[&str],
) -> Vec<String> {
    keys.filter(|k| !known.iter().any(|n| n.eq_ignore_ascii_case(k)))
        .map(|k| format!("unknown field `{path}{k}`: not read, so it changes nothing in the simulation"))
        .collect()
}

/// `t` with every duration in [`duration_text`](super::duration_text), every outcome list in its one order and no
/// neutral key (`honor_retry_after = false`...), so that two tables saying the same thing
/// compare equal.
pub(crate) fn normalized(t: &Table) -> Table {
    t.iter().filter(|(k, v)| !is_neutral(t, k, v)).map(|(k, v)| (k.clone(), normal_value(k, v))).collect()
}

fn normal_value(key: &str, v: &Value) -> Value {
    match v {
        Value::Table(t) => Value::Table(normalized(t)),
        Value::String(s) if s.chars().next().is_some_and(|c| c.is_ascii_digit()) => {
            Span::parse(s).map(duration_value).unwrap_or_else(|_| v.clone())
        }
        Value::Array(_) if matches!(key, "retry_on" | "non_fatal") => {
            outcomes("normalized", key, v).map(|o| o.value()).unwrap_or_else(|_| v.clone())
        }
        _ => v.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_at_its_neutral_value_is_not_a_loss() {
        let table: Table =
            "honor_retry_after = false\nretry_after_mode = \"envoy\"\nlayers = []\nbreaker = { kind = \"resilience4j\" }\nmax_attempts = 3"
                .parse()
                .unwrap();
        let keys = Keys::carrying("test", &table, true, &["max_attempts"], "the target").unwrap();
        let dropped = keys.finish("").unwrap();
        assert_eq!(dropped, ["breaker: the target has no such setting"]);
        assert_eq!(
            dropped_comment("#", &dropped),
            "# Not expressible here, dropped (--lossy):\n#   breaker: the target has no such setting\n"
        );
        assert_eq!(dropped_comment("#", &[]), "");
        let err = Keys::carrying("test", &table, false, &["max_attempts"], "the target").err().unwrap();
        assert!(err.to_string().contains("cannot express `breaker`"), "{err}");
        // What a format neither takes nor refuses is refused at the end.
        let err = Keys::new("test", &table, false).finish("the target carries nothing").unwrap_err();
        assert!(err.to_string().contains("cannot express `breaker`"), "{err}");
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! Round trips and refusals, for every format's tests.

    use super::super::{Format, InteropError};
    pub(crate) use super::normalized;
    use super::*;

    /// A strategy table from the body of a `[[strategies]]` entry, named `s`.
    pub(crate) fn strategy(body: &str) -> Table {
        let mut t: Table = body.parse().unwrap_or_else(|e| panic!("{body}: {e}"));
        t.insert("name".into(), Value::String("s".into()));
        t
    }

    /// import(export(s)) == s, key by key, for each body.
    pub(crate) fn assert_round_trips(format: &dyn Format, bodies: &[&str]) {
        for body in bodies {
            let s = strategy(body);
            let exported = format.export(&s, false).unwrap_or_else(|e| panic!("export of {body}: {e}"));
            assert!(exported.dropped.is_empty());
            let imported = format
                .import(&exported.text, "s")
                .unwrap_or_else(|e| panic!("import of the export of {body}: {e}\n{}", exported.text));
            assert_eq!(
                normalized(&imported.strategy),
                normalized(&s),
                "{body}\nexported:\n{}",
                exported.text
            );
        }
    }

    /// Exporting `body` is refused naming `key`, and with lossy `key` is listed as dropped.
    pub(crate) fn assert_refused(format: &dyn Format, body: &str, key: &str) {
        let s = strategy(body);
        match format.export(&s, false) {
            Err(InteropError::Inexpressible { key: k, .. }) => assert_eq!(k, key, "{body}"),
            other => panic!("{body}: expected {key} refused, got {other:?}"),
        }
        let lossy = format.export(&s, true).unwrap_or_else(|e| panic!("lossy export of {body}: {e}"));
        assert!(
            lossy.dropped.iter().any(|d| d.starts_with(&format!("{key}:"))),
            "{body}: {:?}",
            lossy.dropped
        );
    }

    /// The error of importing `text` names `field`.
    pub(crate) fn assert_import_error(format: &dyn Format, text: &str, field: &str) -> InteropError {
        let err = format.import(text, "s").expect_err(text);
        let named = match &err {
            InteropError::Field { field: f, .. } | InteropError::Unrepresentable { field: f, .. } => {
                f == field
            }
            InteropError::Parse { .. } => field.is_empty(),
            _ => false,
        };
        assert!(named, "{text}: expected an error naming {field:?}, got {err}");
        err
    }
}
