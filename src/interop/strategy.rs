//! The intermediate `[[strategies]]` table, read and written the same way by every format:
//! its durations and its `retry_on` set (what an export cannot carry is `keys::Keys`'s).

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

/// What an Envoy `retry_on` group that the model's outcomes can meet retries (Envoy's
/// `RetryPolicyImpl::wouldRetryFromHeaders` / `wouldRetryFromReset`), `None` for any other
/// name: a timeout is a per-try timeout, which Envoy resets (a local reset), and a connection
/// error a connection failure, which are retried under `5xx`, `gateway-error` and `reset`;
/// `connect-failure` retries connection failures only; `retriable-4xx` is 409;
/// `retriable-status-codes` the list's own statuses (none of its own). The one home of this
/// mapping: retry lists (`experiment::spec::RetryGroup`, expanded by `assembly::client`) and
/// `retrysim import envoy` both use it.
pub fn envoy_group_failures(name: &str) -> Option<Vec<Failure>> {
    use Failure::{ConnectionError, Status, Timeout};
    const RESETS: [Failure; 2] = [Timeout, ConnectionError];
    Some(match name {
        "5xx" => server_errors().chain(RESETS).collect(),
        "gateway-error" => [Status(502), Status(503), Status(504)].into_iter().chain(RESETS).collect(),
        "reset" => RESETS.to_vec(),
        "connect-failure" => vec![ConnectionError],
        "retriable-4xx" => vec![Status(409)],
        "retriable-status-codes" => Vec::new(),
        _ => return None,
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_on_is_written_in_one_order_whatever_the_order_read() {
        let set: BTreeSet<Failure> =
            [Failure::ConnectionError, Failure::Status(503), Failure::Timeout, Failure::Status(429)].into();
        assert_eq!(retry_on_value(&set).to_string(), r#"[429, 503, "timeout", "connection-error"]"#);
    }
}
