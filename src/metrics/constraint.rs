//! A constraint on a metric, `METRIC OP VALUE` (`latency_p99_s <= 0.5`): what `--where` ranks
//! a sweep's rows by and what `[tune]`'s `constraints` hold every candidate to. Both read the
//! same metric columns, so the constraint lives beside the metric catalogue.

use crate::engine::Span;

/// A comparison operator of a constraint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `<=`
    Le,
    /// `<`
    Lt,
    /// `>=`
    Ge,
    /// `>`
    Gt,
}

impl Op {
    fn as_str(self) -> &'static str {
        match self {
            Op::Le => "<=",
            Op::Lt => "<",
            Op::Ge => ">=",
            Op::Gt => ">",
        }
    }

    /// Whether `x op bound`.
    pub fn holds(self, x: f64, bound: f64) -> bool {
        match self {
            Op::Le => x <= bound,
            Op::Lt => x < bound,
            Op::Ge => x >= bound,
            Op::Gt => x > bound,
        }
    }
}

/// `METRIC OP VALUE`, e.g. `latency_p99_s <= 0.5`: holds for a row when the metric's mean
/// satisfies it. VALUE is a number, or a duration (`500ms`) read as seconds.
#[derive(Clone, Debug, PartialEq)]
pub struct Constraint {
    /// Metric column name.
    pub metric: String,
    /// The operator.
    pub op: Op,
    /// The bound.
    pub value: f64,
}

/// A constraint that does not parse: the text and what is wrong with it.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error(
    "bad constraint `{text}`: {reason}; write it as \"METRIC OP VALUE\", e.g. \"latency_p99_s <= 0.5\", with OP one of <=, <, >=, >"
)]
pub struct ConstraintError {
    /// The constraint as given.
    pub text: String,
    /// What is wrong with it.
    pub reason: String,
}

impl std::fmt::Display for Constraint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} {}", self.metric, self.op.as_str(), self.value)
    }
}

impl std::str::FromStr for Constraint {
    type Err = ConstraintError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Constraint::parse(s)
    }
}

impl Constraint {
    /// Parses `"METRIC OP VALUE"` (spaces optional). Only the syntax is checked here; whether
    /// the metric exists depends on where it is used (the results' columns for `--where`, the
    /// metric catalogue for `[tune]`).
    pub fn parse(text: &str) -> Result<Constraint, ConstraintError> {
        let bad = |reason: String| ConstraintError { text: text.to_string(), reason };
        let at = text.find(['<', '>', '=', '!']).ok_or_else(|| bad("no operator".into()))?;
        let rest = &text[at..];
        let (op, len) = if rest.starts_with("<=") {
            (Op::Le, 2)
        } else if rest.starts_with(">=") {
            (Op::Ge, 2)
        } else if rest.starts_with('<') && !rest.starts_with("<>") {
            (Op::Lt, 1)
        } else if rest.starts_with('>') {
            (Op::Gt, 1)
        } else {
            let shown: String = rest.chars().take_while(|c| "<>=!".contains(*c)).collect();
            return Err(bad(format!("`{shown}` is not an operator")));
        };
        let metric = text[..at].trim();
        let value = text[at + len..].trim();
        if metric.is_empty() {
            return Err(bad("no metric before the operator".into()));
        }
        if metric.contains(char::is_whitespace) {
            return Err(bad(format!("`{metric}` is not a metric name (no spaces)")));
        }
        if value.is_empty() {
            return Err(bad("no value after the operator".into()));
        }
        if value.starts_with(['<', '>', '=']) {
            return Err(bad(format!("`{}{}` is not an operator", op.as_str(), &value[..1])));
        }
        let number = value
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .or_else(|| Span::parse(value).ok().map(Span::as_secs_f64));
        let value =
            number.ok_or_else(|| bad(format!("`{value}` is not a number (nor a duration like 500ms)")))?;
        Ok(Constraint { metric: metric.to_string(), op, value })
    }

    /// Whether a value `x` of the metric satisfies the constraint.
    pub fn holds(&self, x: f64) -> bool {
        self.op.holds(x, self.value)
    }

    /// How far `x` is on the good side of the bound (negative: violated).
    pub fn margin(&self, x: f64) -> f64 {
        match self.op {
            Op::Le | Op::Lt => self.value - x,
            Op::Ge | Op::Gt => x - self.value,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constraints_parse_or_say_why_not() {
        let c: Constraint = "latency_p99_s <= 0.5".parse().unwrap();
        assert_eq!((c.metric.as_str(), c.value), ("latency_p99_s", 0.5));
        assert_eq!(Constraint::parse("success_rate>=0.99").unwrap().to_string(), "success_rate >= 0.99");
        assert_eq!(Constraint::parse("latency_p99_s < 500ms").unwrap().value, 0.5);
        for (text, reason) in [
            ("latency_p99_s = 0.5", "`=` is not an operator"),
            ("latency_p99_s == 0.5", "`==` is not an operator"),
            ("latency_p99_s != 0.5", "`!=` is not an operator"),
            ("latency_p99_s <> 0.5", "`<>` is not an operator"),
            ("latency_p99_s =< 0.5", "`=<` is not an operator"),
            ("latency_p99_s <== 0.5", "`<==` is not an operator"),
            ("latency_p99_s 0.5", "no operator"),
            ("<= 0.5", "no metric"),
            ("latency_p99_s <=", "no value"),
            ("latency_p99_s <= fast", "`fast` is not a number"),
            ("p99 latency <= 1", "not a metric name"),
        ] {
            let e = Constraint::parse(text).unwrap_err();
            let msg = e.to_string();
            assert_eq!(e.text, text);
            assert!(msg.contains(reason), "{text}: {msg}");
            assert!(msg.contains("METRIC OP VALUE"), "{msg}");
        }
    }

    #[test]
    fn holds_and_margin_agree_on_the_side_of_the_bound() {
        let c = |t: &str| Constraint::parse(t).unwrap();
        for (text, x, holds, margin) in [
            ("a <= 1", 1.0, true, 0.0),
            ("a < 1", 1.0, false, 0.0),
            ("a <= 1", 1.5, false, -0.5),
            ("a >= 2", 3.0, true, 1.0),
            ("a > 2", 2.0, false, 0.0),
            ("a >= 2", 1.5, false, -0.5),
        ] {
            assert_eq!(c(text).holds(x), holds, "{text} at {x}");
            assert_eq!(c(text).margin(x), margin, "{text} at {x}");
        }
    }
}
