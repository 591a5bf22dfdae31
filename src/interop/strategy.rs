//! The intermediate `[[strategies]]` table, read and written the same way by every format:
//! its durations, its `retry_on` set, and the record of what an export cannot carry.

use super::{InteropError, duration_text};
use crate::engine::Span;
use std::collections::BTreeSet;
use toml::{Table, Value};

/// One outcome a strategy may retry (`retry_on`), ordered as the intermediate table writes
/// them: statuses ascending, then `"timeout"`, then `"connection-error"`, so that the same set
/// is always the same array.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Failure {
    Status(u16),
    Timeout,
    ConnectionError,
}

/// Every status of the class `5xx` (500 to 599).
pub fn server_errors() -> impl Iterator<Item = Failure> {
    (500..=599).map(Failure::Status)
}

/// `retry_on` as the intermediate table writes it.
pub fn retry_on_value(set: &BTreeSet<Failure>) -> Value {
    Value::Array(
        set.iter()
            .map(|f| match f {
                Failure::Status(s) => Value::Integer(i64::from(*s)),
                Failure::Timeout => Value::String("timeout".into()),
                Failure::ConnectionError => Value::String("connection-error".into()),
            })
            .collect(),
    )
}

/// A duration as the intermediate table writes it ([`duration_text`]).
pub fn duration_value(span: Span) -> Value {
    Value::String(duration_text(span))
}

/// Read access to a complete strategy table (`[client]` and its preset folded in, defaults
/// filled), for the exports: every accessor names the dotted key in its error.
pub struct Strategy<'a> {
    pub kind: &'static str,
    pub table: &'a Table,
}

impl<'a> Strategy<'a> {
    /// The value at dotted `key` (`backoff.base`), if set.
    pub fn get(&self, key: &str) -> Option<&'a Value> {
        let mut parts = key.split('.');
        let mut v = self.table.get(parts.next()?)?;
        for p in parts {
            v = v.as_table()?.get(p)?;
        }
        Some(v)
    }

    fn wrong(&self, key: &str, what: &str) -> InteropError {
        InteropError::Field {
            kind: self.kind,
            field: key.to_string(),
            problem: format!("is not {what}"),
            fix: "give the strategy as an experiment file writes it".to_string(),
        }
    }

    /// A duration (`"25ms"`), if set.
    pub fn span(&self, key: &str) -> Result<Option<Span>, InteropError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Span::parse(s).map(Some).map_err(|_| self.wrong(key, "a duration")),
            Some(Value::Integer(0)) => Ok(Some(Span::ZERO)),
            Some(_) => Err(self.wrong(key, "a duration")),
        }
    }

    /// A whole number, if set.
    pub fn int(&self, key: &str) -> Result<Option<i64>, InteropError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Integer(i)) => Ok(Some(*i)),
            Some(_) => Err(self.wrong(key, "a whole number")),
        }
    }

    /// A number (an integer is accepted), if set.
    pub fn num(&self, key: &str) -> Result<Option<f64>, InteropError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Float(x)) => Ok(Some(*x)),
            Some(Value::Integer(i)) => Ok(Some(*i as f64)),
            Some(_) => Err(self.wrong(key, "a number")),
        }
    }

    /// A string, if set.
    pub fn str(&self, key: &str) -> Option<&'a str> {
        self.get(key).and_then(Value::as_str)
    }

    /// A boolean; `false` when absent (every boolean key of a strategy defaults to false).
    pub fn flag(&self, key: &str) -> bool {
        self.get(key).and_then(Value::as_bool).unwrap_or(false)
    }

    /// `retry_on` as a set. A complete strategy always has it (the loader writes the default
    /// list when the file leaves it out).
    pub fn retry_on(&self) -> Result<BTreeSet<Failure>, InteropError> {
        let Some(Value::Array(items)) = self.get("retry_on") else {
            return Err(InteropError::Field {
                kind: self.kind,
                field: "retry_on".into(),
                problem: "is missing".into(),
                fix: "export the resolved strategy (`retrysim export` writes the default list)".into(),
            });
        };
        items
            .iter()
            .map(|v| match v {
                Value::Integer(s) if (400..=599).contains(s) => Ok(Failure::Status(*s as u16)),
                Value::String(s) if s == "timeout" => Ok(Failure::Timeout),
                Value::String(s) if s == "connection-error" => Ok(Failure::ConnectionError),
                _ => Err(self.wrong("retry_on", "a list of statuses, \"timeout\" and \"connection-error\"")),
            })
            .collect()
    }

    /// Whether the strategy reads the server's Retry-After.
    pub fn honors_retry_after(&self) -> bool {
        self.flag("honor_retry_after")
    }
}

/// What an export could not carry: an error at the first key without `lossy`, the list of
/// every one with it.
pub struct Loss {
    kind: &'static str,
    lossy: bool,
    /// `key: why`, one per key dropped.
    pub dropped: Vec<String>,
}

impl Loss {
    pub fn new(kind: &'static str, lossy: bool) -> Loss {
        Loss { kind, lossy, dropped: Vec::new() }
    }

    /// The start of every export: `table` read as a strategy of `kind`, and every key outside
    /// `carried` that is not at its neutral value refused (or dropped), `target` naming what
    /// has no such setting.
    pub fn begin<'a>(
        kind: &'static str,
        table: &'a Table,
        lossy: bool,
        carried: &[&str],
        target: &str,
    ) -> Result<(Strategy<'a>, Loss), InteropError> {
        let s = Strategy { kind, table };
        let mut loss = Loss::new(kind, lossy);
        loss.only(&s, carried, target)?;
        Ok((s, loss))
    }

    /// The target cannot carry `key`: refused, or (with `lossy`) recorded and left out.
    pub fn cannot(&mut self, key: &str, why: impl Into<String>) -> Result<(), InteropError> {
        let why = why.into();
        if self.lossy {
            self.dropped.push(format!("{key}: {why}"));
            Ok(())
        } else {
            Err(InteropError::Inexpressible { kind: self.kind, key: key.to_string(), why })
        }
    }

    /// Refuses (or drops) every key of `s` outside `carried` that is set to something other
    /// than what leaving it out means, so that nothing the strategy does is lost silently.
    pub fn only(&mut self, s: &Strategy<'_>, carried: &[&str], target: &str) -> Result<(), InteropError> {
        for (key, value) in s.table {
            if key == "name"
                || carried.contains(&key.as_str())
                || super::keys::is_neutral(s.table, key, value)
            {
                continue;
            }
            self.cannot(key, format!("{target} has no such setting"))?;
        }
        Ok(())
    }

    /// The comment lines of an exported file that say what was dropped (none without loss).
    pub fn comment(&self, prefix: &str) -> String {
        if self.dropped.is_empty() {
            return String::new();
        }
        let mut out = format!("{prefix} Not expressible here, dropped (--lossy):\n");
        for d in &self.dropped {
            out.push_str(&format!("{prefix}   {d}\n"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_on_is_written_in_one_order_whatever_the_order_read() {
        let set: BTreeSet<Failure> =
            [Failure::ConnectionError, Failure::Status(503), Failure::Timeout, Failure::Status(429)].into();
        assert_eq!(retry_on_value(&set).to_string(), r#"[429, 503, "timeout", "connection-error"]"#);
    }

    #[test]
    fn a_key_at_its_neutral_value_is_not_a_loss() {
        let table: Table =
            "honor_retry_after = false\nretry_after_mode = \"envoy\"\nlayers = []\nbreaker = { kind = \"resilience4j\" }"
                .parse()
                .unwrap();
        let s = Strategy { kind: "test", table: &table };
        let mut loss = Loss::new("test", true);
        loss.only(&s, &[], "the target").unwrap();
        assert_eq!(loss.dropped, ["breaker: the target has no such setting"]);
        let err = Loss::new("test", false).only(&s, &[], "the target").unwrap_err();
        assert!(err.to_string().contains("cannot express `breaker`"), "{err}");
    }
}
