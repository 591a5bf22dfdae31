//! Durations as they are written in experiment files: `"10ms"`, `"1.5s"`, `"2m"`.
//!
//! Simulated time is an integer count of nanoseconds (DESIGN §2), so every duration is turned
//! into nanoseconds once, when the file is read, and rounded to the nearest nanosecond.

use crate::engine::Span;
use serde::{Deserialize, Deserializer};
use std::fmt;

/// A non-negative span of simulated time, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(pub u64);

impl Duration {
    pub const ZERO: Duration = Duration(0);

    pub fn as_ns(self) -> u64 {
        self.0
    }

    /// The same length as simulated time.
    pub fn span(self) -> Span {
        Span::from_ns(self.0)
    }

    /// The length in seconds.
    pub fn as_secs_f64(self) -> f64 {
        self.span().as_secs_f64()
    }

    /// The length in `unit` (one of ns, us, µs, ms, s, m, h, d), as a number and the unit:
    /// `"2m"` for two minutes in `"m"`, `"120s"` in `"s"`. Production defaults are written in
    /// the unit their source uses.
    ///
    /// # Panics
    /// If `unit` is not one of the file's units.
    pub fn in_unit(self, unit: &str) -> String {
        let scale = Span::unit_scale(unit).unwrap_or_else(|| panic!("no unit {unit:?}"));
        format!("{}{unit}", self.0 as f64 / scale)
    }

    /// Parses `"<number><unit>"`, the grammar of [`Span::parse`] (the unit one of ns, us, µs,
    /// ms, s, m, h, d; a bare `"0"`).
    pub fn parse(text: &str) -> Result<Duration, String> {
        Span::parse(text).map(|s| Duration(s.as_ns()))
    }
}

impl fmt::Display for Duration {
    /// The shortest exact spelling, so that a duration printed in a CSV reads back the same.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0;
        for (unit, scale) in [
            ("h", 3_600_000_000_000u64),
            ("m", 60_000_000_000),
            ("s", 1_000_000_000),
            ("ms", 1_000_000),
            ("us", 1_000),
        ] {
            if ns >= scale && ns.is_multiple_of(scale) {
                return write!(f, "{}{unit}", ns / scale);
            }
        }
        if ns >= 1_000_000 {
            // Not a whole number of a unit: print fractional seconds exactly enough.
            return write!(f, "{}s", ns as f64 * 1e-9);
        }
        write!(f, "{ns}ns")
    }
}

impl<'de> Deserialize<'de> for Duration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Duration;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a duration string such as \"10ms\", \"1.5s\" or \"2m\"")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Duration, E> {
                Duration::parse(v).map_err(E::custom)
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Duration, E> {
                match v {
                    0 => Ok(Duration::ZERO),
                    v if v < 0 => Err(E::custom(format!("negative duration {v}: durations must be >= 0"))),
                    v => Err(E::custom(format!(
                        "duration {v} has no unit: write it as a string like \"{v}ms\" or \"{v}s\""
                    ))),
                }
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Duration, E> {
                self.visit_i64(v.min(i64::MAX as u64) as i64)
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Duration, E> {
                if v < 0.0 {
                    Err(E::custom(format!("negative duration {v}: durations must be >= 0")))
                } else {
                    Err(E::custom(format!("duration {v} has no unit: write it as a string like \"{v}s\"")))
                }
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_reads_back() {
        for s in ["10ms", "2m", "1h", "250us", "7ns", "1500ms"] {
            let d = Duration::parse(s).unwrap();
            assert_eq!(Duration::parse(&d.to_string()).unwrap(), d, "{s}");
        }
    }
}
