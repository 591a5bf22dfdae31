//! The search space as a lattice: each searched key's values ([`Param::levels`]: a list as
//! written, or round values across a range), and a point of the lattice as one level index per
//! key ([`Index`]).

use super::spec::{Domain, Numeric, Param};
use crate::experiment::{Duration, value_text};
use toml::Value;

/// Lattice coordinates: one level index per parameter.
pub type Index = Vec<usize>;

/// One value of a searched key: as written into the experiment, as shown in CSV cells, and
/// as a position on a chart axis (seconds for durations; the index for other lists).
#[derive(Clone, Debug, PartialEq)]
pub struct Level {
    pub value: Value,
    pub label: String,
    pub position: f64,
    /// Whether `position` is a number of the key (not a list index): charts may use a log axis.
    pub numeric: bool,
}

impl Param {
    /// The values searched: a list as written, or `levels` values across a range (log-spaced
    /// when low > 0 for durations and numbers, rounded to two significant digits with the ends
    /// kept exact; every integer when there are at most 2 x `levels`), without repeats.
    pub fn levels(&self, levels: u32) -> Vec<Level> {
        match &self.domain {
            Domain::Values(values) => {
                let numbers: Option<Vec<f64>> = values.iter().map(position_of).collect();
                values
                    .iter()
                    .enumerate()
                    .map(|(i, v)| Level {
                        value: v.clone(),
                        label: value_text(v),
                        position: numbers.as_ref().map_or(i as f64, |n| n[i]),
                        numeric: numbers.is_some(),
                    })
                    .collect()
            }
            Domain::Range { low, high, ty } => range_levels(*low, *high, *ty, levels.max(2) as usize),
        }
    }
}

/// A list value's number: seconds for durations, the number itself; `None` otherwise.
fn position_of(v: &Value) -> Option<f64> {
    match v {
        Value::Integer(i) => Some(*i as f64),
        Value::Float(x) => Some(*x),
        Value::String(s) => Duration::parse(s).ok().map(|d| d.as_ns() as f64 / 1e9),
        _ => None,
    }
}

fn range_levels(low: f64, high: f64, ty: Numeric, n: usize) -> Vec<Level> {
    let raw: Vec<f64> = if low == high {
        vec![low]
    } else if ty == Numeric::Int && high - low < 2.0 * n as f64 {
        (low as i64..=high as i64).map(|i| i as f64).collect()
    } else {
        let log = low > 0.0;
        (0..n)
            .map(|i| {
                let f = i as f64 / (n - 1) as f64;
                if i == 0 {
                    low
                } else if i == n - 1 {
                    high
                } else if log {
                    (low.ln() + f * (high.ln() - low.ln())).exp()
                } else {
                    low + f * (high - low)
                }
            })
            .collect()
    };
    let mut out: Vec<Level> = Vec::with_capacity(raw.len());
    for (i, x) in raw.iter().enumerate() {
        let ends = i == 0 || i + 1 == raw.len();
        let level = match ty {
            Numeric::Int => {
                let v = x.round() as i64;
                Level { value: Value::Integer(v), label: v.to_string(), position: v as f64, numeric: true }
            }
            Numeric::Num => {
                let v = if ends { *x } else { two_digits(*x).clamp(low, high) };
                Level {
                    value: Value::Float(v),
                    label: Value::Float(v).to_string(),
                    position: v,
                    numeric: true,
                }
            }
            Numeric::Duration => {
                let ns = (x * 1e9).round();
                let ns = if ends { ns } else { two_digits(ns).clamp(low * 1e9, high * 1e9) };
                let label = duration_label(ns as u64);
                let position = Duration::parse(&label).map_or(ns, |d| d.as_ns() as f64) / 1e9;
                Level { value: Value::String(label.clone()), label, position, numeric: true }
            }
        };
        if out.last().is_none_or(|l: &Level| l.label != level.label) {
            out.push(level);
        }
    }
    out
}

/// `x` rounded to two significant digits (as the nearest double to that decimal).
fn two_digits(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    format!("{x:.1e}").parse().unwrap_or(x)
}

/// A duration in the unit that reads best: `220ms`, `1.5s`, `22s`, `90us`; exact (it reads back
/// as the same number of nanoseconds).
pub fn duration_label(ns: u64) -> String {
    for (unit, scale) in [("s", 1e9), ("ms", 1e6), ("us", 1e3)] {
        if ns as f64 >= scale {
            let text = format!("{}{unit}", ns as f64 / scale);
            if Duration::parse(&text).is_ok_and(|d| d.as_ns() == ns) {
                return text;
            }
        }
    }
    Duration(ns).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(p: &Param, n: u32) -> Vec<String> {
        p.levels(n).into_iter().map(|l| l.label).collect()
    }

    #[test]
    fn ranges_become_round_levels() {
        let base = Param {
            key: "backoff.base".into(),
            domain: Domain::Range { low: 0.01, high: 5.0, ty: Numeric::Duration },
        };
        assert_eq!(
            labels(&base, 9),
            ["10ms", "22ms", "47ms", "100ms", "220ms", "490ms", "1.1s", "2.3s", "5s"]
        );
        let attempts = Param {
            key: "max_attempts".into(),
            domain: Domain::Range { low: 2.0, high: 8.0, ty: Numeric::Int },
        };
        assert_eq!(labels(&attempts, 9), ["2", "3", "4", "5", "6", "7", "8"]);
        let wide =
            Param { key: "x".into(), domain: Domain::Range { low: 1.0, high: 1000.0, ty: Numeric::Int } };
        assert_eq!(labels(&wide, 4), ["1", "10", "100", "1000"]);
        let ratio = Param {
            key: "budget.ratio".into(),
            domain: Domain::Range { low: 0.05, high: 1.0, ty: Numeric::Num },
        };
        let l = ratio.levels(5);
        assert_eq!(
            l.iter().map(|l| l.label.as_str()).collect::<Vec<_>>(),
            ["0.05", "0.11", "0.22", "0.47", "1.0"]
        );
        let zero = Param { key: "x".into(), domain: Domain::Range { low: 0.0, high: 1.0, ty: Numeric::Num } };
        assert_eq!(labels(&zero, 5), ["0.0", "0.25", "0.5", "0.75", "1.0"]);
        let one = Param { key: "x".into(), domain: Domain::Range { low: 3.0, high: 3.0, ty: Numeric::Int } };
        assert_eq!(labels(&one, 5), ["3"]);
    }

    #[test]
    fn duration_labels_read_back_exactly() {
        for ns in [1u64, 999, 90_000, 1_500_000, 220_000_000, 1_100_000_000, 22_000_000_000, 123_456_789] {
            let label = duration_label(ns);
            assert_eq!(Duration::parse(&label).unwrap().as_ns(), ns, "{label}");
        }
        assert_eq!(duration_label(1_100_000_000), "1.1s");
        assert_eq!(duration_label(220_000_000), "220ms");
    }
}
