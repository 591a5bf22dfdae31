//! Simulated time: an [`Instant`] (a point on the run's clock) and a [`Span`] (a length of
//! time) are distinct types, both integer nanoseconds (DESIGN §2).
//!
//! The arithmetic allowed is the one that makes sense: `Instant + Span = Instant`,
//! `Instant - Instant = Span` ([`Instant::since`]), `Span + Span`, `Span x n`. Adding two
//! instants does not compile. Sums saturate at the end of time ([`Instant::NEVER`]), which
//! doubles as "no such time" (a timer that never fires, a client that never gives up), so an
//! overflow can never wrap around to the past.
//!
//! Real numbers of nanoseconds (from distributions and backoff formulas) become spans through
//! [`Span::from_ns_f64`], the one place that rounds.

use std::fmt;
use std::ops::{Add, AddAssign, Mul, Sub};

/// A point in simulated time: nanoseconds since the run started.
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(u64);

/// A length of simulated time in nanoseconds.
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Span(u64);

/// Nanoseconds per second, for conversions at the edges (files, CSV columns).
pub const NS_PER_S: f64 = 1e9;

impl Instant {
    /// The start of the run.
    pub const ZERO: Instant = Instant(0);
    /// The end of time: later than any event; "never".
    pub const NEVER: Instant = Instant(u64::MAX);

    #[inline]
    pub const fn from_ns(ns: u64) -> Instant {
        Instant(ns)
    }

    #[inline]
    pub const fn as_ns(self) -> u64 {
        self.0
    }

    pub fn from_secs(s: u64) -> Instant {
        Instant(s.saturating_mul(1_000_000_000))
    }

    #[inline]
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / NS_PER_S
    }

    /// The span from `earlier` to `self`; zero if `earlier` is later.
    #[inline]
    pub fn since(self, earlier: Instant) -> Span {
        Span(self.0.saturating_sub(earlier.0))
    }

    /// `self - span`, stopping at the start of the run.
    #[inline]
    pub fn saturating_sub(self, span: Span) -> Instant {
        Instant(self.0.saturating_sub(span.0))
    }

    /// Whether this is [`Instant::NEVER`].
    #[inline]
    pub fn is_never(self) -> bool {
        self.0 == u64::MAX
    }

    /// The index of the `width`-long bucket holding this instant (buckets start at 0).
    #[inline]
    pub fn bucket(self, width: Span) -> usize {
        (self.0 / width.0) as usize
    }
}

impl Span {
    pub const ZERO: Span = Span(0);
    /// The longest span: saturates every sum.
    pub const MAX: Span = Span(u64::MAX);

    #[inline]
    pub const fn from_ns(ns: u64) -> Span {
        Span(ns)
    }

    #[inline]
    pub const fn as_ns(self) -> u64 {
        self.0
    }

    pub const fn from_millis(ms: u64) -> Span {
        Span(ms * 1_000_000)
    }

    pub const fn from_secs(s: u64) -> Span {
        Span(s * 1_000_000_000)
    }

    /// A non-negative real number of nanoseconds, rounded to the nearest nanosecond (halves
    /// up), saturating at [`Span::MAX`]; NaN and negatives give 0. Spelled `(x + 0.5) as u64`
    /// because `f64::round` is a library call on baseline x86-64 and this sits on every
    /// sampled delay.
    #[inline]
    pub fn from_ns_f64(x: f64) -> Span {
        Span((x + 0.5) as u64)
    }

    /// `from_ns_f64(x.clamp(0.0, max_ns))`, for a `max_ns` below 2^62 (a backoff's delays):
    /// the clamped value plus a half fits an `i64`, so it converts with one truncating
    /// instruction instead of the saturating `u64` conversion's eleven. NaN, which the clamp
    /// keeps, gives 0 as in `from_ns_f64`.
    #[inline(always)]
    pub fn from_ns_f64_clamped(x: f64, max_ns: f64) -> Span {
        debug_assert!((0.0..4.6e18).contains(&max_ns));
        let r = x.clamp(0.0, max_ns) + 0.5;
        if r >= 0.5 {
            // SAFETY: `r` is finite and in [0.5, max_ns + 0.5], inside `i64`'s range.
            Span(unsafe { r.to_int_unchecked::<i64>() } as u64)
        } else {
            Span::ZERO
        }
    }

    /// Seconds as a real number, rounded to the nearest nanosecond.
    pub fn from_secs_f64(s: f64) -> Span {
        Span::from_ns_f64(s * NS_PER_S)
    }

    #[inline]
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / NS_PER_S
    }

    #[inline]
    pub fn as_ns_f64(self) -> f64 {
        self.0 as f64
    }

    #[inline]
    pub fn is_zero(self) -> bool {
        self.0 == 0
    }

    /// `self - other`, zero if `other` is longer.
    #[inline]
    pub fn saturating_sub(self, other: Span) -> Span {
        Span(self.0.saturating_sub(other.0))
    }

    /// The span scaled by a non-negative real factor, rounded like [`Span::from_ns_f64`].
    #[inline]
    pub fn mul_f64(self, factor: f64) -> Span {
        Span::from_ns_f64(self.0 as f64 * factor)
    }

    /// Parses a length of time as files and the command line write it, `"<number><unit>"`
    /// (`"10ms"`, `"1.5s"`, `"2m"`), the unit one of ns, us, µs, ms, s, m, h, d, rounded to
    /// the nearest nanosecond. A bare `"0"` is accepted; any other number needs a unit, because
    /// a bare number is ambiguous. The error says what is wrong, for a message.
    pub fn parse(text: &str) -> Result<Span, String> {
        let t = text.trim();
        if t == "0" {
            return Ok(Span::ZERO);
        }
        if t.starts_with('-') {
            return Err(format!("negative duration \"{text}\": durations must be >= 0"));
        }
        let split = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == 'e' || c == 'E'))
            .unwrap_or(t.len());
        // `1e3ms` is fine, but `e` can also not start a unit; back off if the unit is empty.
        let (num, unit) = t.split_at(split);
        let unit = unit.trim();
        let scale = Span::unit_scale(unit).ok_or_else(|| {
            if unit.is_empty() {
                format!("duration \"{text}\" has no unit: write it like \"10ms\", \"1.5s\" or \"2m\"")
            } else {
                format!("duration \"{text}\" has an unknown unit \"{unit}\": use ns, us, ms, s, m, h or d")
            }
        })?;
        let value: f64 = num.parse().map_err(|_| {
            format!("\"{text}\" is not a duration: write it like \"10ms\", \"1.5s\" or \"2m\"")
        })?;
        let ns = value * scale;
        if !ns.is_finite() || ns > MAX_PARSED_NS {
            return Err(format!("duration \"{text}\" is too long (at most 100 years)"));
        }
        Ok(Span(ns.round() as u64))
    }

    /// Nanoseconds in one of the units [`Span::parse`] reads (`"ms"` -> 1e6).
    pub fn unit_scale(unit: &str) -> Option<f64> {
        UNITS.iter().find(|(u, _)| *u == unit).map(|(_, s)| *s)
    }
}

/// Units [`Span::parse`] accepts after the number, longest first so that `ms` is not read as
/// `m`.
const UNITS: &[(&str, f64)] = &[
    ("ns", 1.0),
    ("us", 1e3),
    ("µs", 1e3),
    ("ms", 1e6),
    ("s", 1e9),
    ("m", 60e9),
    ("h", 3600e9),
    ("d", 86_400e9),
];

/// The longest span [`Span::parse`] accepts: about 292 years would overflow `u64`
/// nanoseconds; a century of simulated time is more than any experiment needs and leaves room
/// for additions.
const MAX_PARSED_NS: f64 = 100.0 * 365.0 * 86_400e9;

impl Add<Span> for Instant {
    type Output = Instant;
    /// Saturates at [`Instant::NEVER`].
    #[inline]
    fn add(self, span: Span) -> Instant {
        Instant(self.0.saturating_add(span.0))
    }
}

impl AddAssign<Span> for Instant {
    #[inline]
    fn add_assign(&mut self, span: Span) {
        *self = *self + span;
    }
}

impl Add for Span {
    type Output = Span;
    /// Saturates at [`Span::MAX`].
    #[inline]
    fn add(self, other: Span) -> Span {
        Span(self.0.saturating_add(other.0))
    }
}

impl AddAssign for Span {
    #[inline]
    fn add_assign(&mut self, other: Span) {
        *self = *self + other;
    }
}

impl Sub for Span {
    type Output = Span;
    /// Saturates at zero.
    #[inline]
    fn sub(self, other: Span) -> Span {
        self.saturating_sub(other)
    }
}

impl Mul<u64> for Span {
    type Output = Span;
    /// Saturates at [`Span::MAX`].
    #[inline]
    fn mul(self, n: u64) -> Span {
        Span(self.0.saturating_mul(n))
    }
}

impl std::iter::Sum for Span {
    fn sum<I: Iterator<Item = Span>>(iter: I) -> Span {
        iter.fold(Span::ZERO, Add::add)
    }
}

impl fmt::Debug for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_never() { write!(f, "t=never") } else { write!(f, "t={}ns", self.0) }
    }
}

impl fmt::Debug for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}ns", self.0)
    }
}

impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} s", self.as_secs_f64())
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} s", self.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_and_spans_combine_as_time_does() {
        let t = Instant::from_ns(10);
        let later = t + Span::from_ns(5);
        assert_eq!(later, Instant::from_ns(15));
        assert_eq!(later.since(t), Span::from_ns(5));
        assert_eq!(t.since(later), Span::ZERO, "since saturates at zero");
        assert_eq!(Span::from_secs(2) + Span::from_millis(500), Span::from_ns(2_500_000_000));
        assert_eq!(Span::from_ns(3) * 4, Span::from_ns(12));
        assert_eq!(Span::from_ns(3) - Span::from_ns(4), Span::ZERO);
        assert_eq!(Instant::from_secs(3).bucket(Span::from_secs(1)), 3);
        assert_eq!((Instant::from_secs(3) + Span::from_ns(999_999_999)).bucket(Span::from_secs(1)), 3);
    }

    #[test]
    fn sums_saturate_at_the_end_of_time() {
        assert_eq!(Instant::from_ns(u64::MAX - 1) + Span::from_ns(5), Instant::NEVER);
        assert!(Instant::NEVER.is_never());
        assert_eq!(Span::MAX + Span::from_ns(1), Span::MAX);
        assert_eq!(Span::MAX * 2, Span::MAX);
    }

    #[test]
    fn the_clamped_conversion_is_the_clamp_then_the_saturating_one() {
        let max = 3.1536e18;
        let mut xs = vec![
            f64::NAN,
            f64::INFINITY,
            -f64::INFINITY,
            -1.0,
            -0.4,
            0.0,
            0.49,
            0.5,
            1.5,
            2.5,
            max,
            max + 1e6,
        ];
        xs.extend((0..2000).map(|i| (i as f64 * 0.37).exp() - 1.2));
        for x in xs {
            assert_eq!(Span::from_ns_f64_clamped(x, max), Span::from_ns_f64(x.clamp(0.0, max)), "{x}");
        }
    }

    #[test]
    fn reals_round_to_the_nearest_nanosecond() {
        assert_eq!(Span::from_ns_f64(1.49), Span::from_ns(1));
        assert_eq!(Span::from_ns_f64(1.5), Span::from_ns(2));
        assert_eq!(Span::from_ns_f64(f64::NAN), Span::ZERO);
        assert_eq!(Span::from_ns_f64(-3.0), Span::ZERO);
        assert_eq!(Span::from_ns_f64(1e300), Span::MAX);
        assert_eq!(Span::from_secs_f64(1.5), Span::from_ns(1_500_000_000));
        assert_eq!(Span::from_ns(10).mul_f64(2.5), Span::from_ns(25));
    }

    #[test]
    fn parses_every_unit() {
        assert_eq!(Span::parse("10ms").unwrap().as_ns(), 10_000_000);
        assert_eq!(Span::parse("1.5s").unwrap().as_ns(), 1_500_000_000);
        assert_eq!(Span::parse("2m").unwrap().as_ns(), 120_000_000_000);
        assert_eq!(Span::parse("1h").unwrap().as_ns(), 3_600_000_000_000);
        assert_eq!(Span::parse("250us").unwrap().as_ns(), 250_000);
        assert_eq!(Span::parse("7ns").unwrap().as_ns(), 7);
        assert_eq!(Span::parse("0").unwrap().as_ns(), 0);
        assert_eq!(Span::parse(" 3 s ").unwrap().as_ns(), 3_000_000_000);
    }

    #[test]
    fn refuses_bad_durations() {
        assert!(Span::parse("-5ms").unwrap_err().contains("negative"));
        assert!(Span::parse("10").unwrap_err().contains("no unit"));
        assert!(Span::parse("10 fortnights").unwrap_err().contains("unknown unit"));
        assert!(Span::parse("abc").is_err());
        assert!(Span::parse("1e30h").unwrap_err().contains("too long"));
    }
}
