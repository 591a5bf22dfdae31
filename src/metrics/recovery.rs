//! Recovery after faults (DESIGN §5: `recovery_time_s` and `metastable`), as a pure function
//! of per-second buckets of operation starts. This is the one place the definition lives.
//!
//! A 1 s bucket of operation *starts* is **healthy** when the operations started in it have
//!
//! | criterion | threshold |
//! |---|---|
//! | success rate | `>= min(0.95, baseline - 0.02)` |
//! | calls per operation | `<= 1.1 x baseline + 0.05` |
//! | mean latency | `<= 2 x baseline + 10 ms` |
//!
//! where each baseline is taken over the operations started in the whole buckets before the
//! first fault, the first bucket (t = 0 to 1 s, the warm-up) excluded. Buckets in which no
//! operation started say nothing and are skipped: they neither extend nor break a streak.
//!
//! - `recovery_time_s`: from the end of the last fault to the start of the first run of
//!   [`HEALTHY_RUN`] consecutive healthy buckets, searched from the bucket that contains the
//!   fault's end (a run that starts in that bucket gives 0).
//! - `metastable`: no such run both starts and ends while load is still arriving (before the
//!   end of the last bucket in which an operation started). A degraded state that lasts until
//!   the load ends is metastable; the drain after the load has stopped is not recovery.
//! - Both are *unmeasurable* (empty in runs.csv) when fewer than [`HEALTHY_RUN`] buckets of
//!   load lie wholly before the first fault, or wholly after the last one and before the end
//!   of the load: the data cannot tell.
//!
//! Three criteria rather than the success rate alone: with several attempts, a saturated
//! server still lets most operations succeed eventually, at the price of extra calls and
//! seconds of latency; a success-rate threshold alone is then crossed at random. The extra
//! calls and the latency are what a congested state cannot hide.

use crate::engine::{Instant, Span};

/// The buckets' width: one second.
pub const BUCKET: Span = Span::from_secs(1);
/// Consecutive healthy buckets that make a recovery.
pub const HEALTHY_RUN: usize = 5;
/// Success-rate criterion: `>= min(SUCCESS_CEILING, baseline - SUCCESS_SLACK)`.
const SUCCESS_CEILING: f64 = 0.95;
const SUCCESS_SLACK: f64 = 0.02;
/// Calls-per-operation criterion: `<= CALLS_FACTOR x baseline + CALLS_SLACK`.
const CALLS_FACTOR: f64 = 1.1;
const CALLS_SLACK: f64 = 0.05;
/// Latency criterion: `<= LATENCY_FACTOR x baseline + LATENCY_SLACK_NS`.
const LATENCY_FACTOR: f64 = 2.0;
const LATENCY_SLACK_NS: f64 = 10e6;

/// What happened to the operations started in one 1 s bucket.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StartBucket {
    pub started: u64,
    pub succeeded: u64,
    /// Attempts sent by these operations.
    pub calls: u64,
    /// Sum of their latencies in ns (an operation still pending at the horizon counts up to
    /// it).
    pub latency_ns: u128,
}

impl StartBucket {
    fn add(&mut self, o: &StartBucket) {
        self.started += o.started;
        self.succeeded += o.succeeded;
        self.calls += o.calls;
        self.latency_ns += o.latency_ns;
    }

    fn success_rate(&self) -> f64 {
        self.succeeded as f64 / self.started as f64
    }

    fn calls_per_op(&self) -> f64 {
        self.calls as f64 / self.started as f64
    }

    fn mean_latency_ns(&self) -> f64 {
        self.latency_ns as f64 / self.started as f64
    }
}

/// The thresholds a bucket must meet, from the pre-fault baseline.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Health {
    pub min_success_rate: f64,
    pub max_calls_per_op: f64,
    pub max_mean_latency_ns: f64,
}

impl Health {
    pub fn from_baseline(b: &StartBucket) -> Health {
        Health {
            min_success_rate: SUCCESS_CEILING.min(b.success_rate() - SUCCESS_SLACK),
            max_calls_per_op: CALLS_FACTOR * b.calls_per_op() + CALLS_SLACK,
            max_mean_latency_ns: LATENCY_FACTOR * b.mean_latency_ns() + LATENCY_SLACK_NS,
        }
    }

    pub fn is_healthy(&self, b: &StartBucket) -> bool {
        b.success_rate() >= self.min_success_rate
            && b.calls_per_op() <= self.max_calls_per_op
            && b.mean_latency_ns() <= self.max_mean_latency_ns
    }
}

/// The fault windows that matter: faults starting before the horizon.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultSpan {
    /// Start of the earliest fault.
    pub first_start: Instant,
    /// End of the last fault (the latest end among them).
    pub last_end: Instant,
}

impl FaultSpan {
    /// The span of both: from the earlier start to the later end (either alone when the
    /// other is `None`).
    pub fn union(a: Option<FaultSpan>, b: Option<FaultSpan>) -> Option<FaultSpan> {
        match (a, b) {
            (Some(a), Some(b)) => Some(FaultSpan {
                first_start: a.first_start.min(b.first_start),
                last_end: a.last_end.max(b.last_end),
            }),
            (a, b) => a.or(b),
        }
    }
}

/// The outcome of the analysis.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Recovery {
    /// No fault before the horizon: recovery 0, not metastable.
    NoFault,
    /// Recovered this long after the last fault ended.
    Recovered { after: Span },
    /// No healthy run while load was still arriving.
    Metastable,
    /// Too few buckets of load before the first fault or after the last one.
    Unmeasurable,
}

impl Recovery {
    /// `recovery_time_s` (None = empty cell).
    pub fn time_s(self) -> Option<f64> {
        match self {
            Recovery::NoFault => Some(0.0),
            Recovery::Recovered { after } => Some(after.as_secs_f64()),
            Recovery::Metastable | Recovery::Unmeasurable => None,
        }
    }

    /// `metastable` (None = empty cell).
    pub fn metastable(self) -> Option<bool> {
        match self {
            Recovery::NoFault | Recovery::Recovered { .. } => Some(false),
            Recovery::Metastable => Some(true),
            Recovery::Unmeasurable => None,
        }
    }
}

/// Runs the analysis over `buckets` (index = start second) with the faults `faults` (None when
/// no fault starts before the horizon). The load ends with the last bucket in which an
/// operation started, and at the horizon at the latest.
pub fn analyse(buckets: &[StartBucket], faults: Option<FaultSpan>, horizon: Instant) -> Recovery {
    let Some(faults) = faults else { return Recovery::NoFault };
    let start = |b: usize| Instant::ZERO + BUCKET * b as u64;
    let end = |b: usize| start(b + 1);
    let load_end = buckets.iter().rposition(|b| b.started > 0).map_or(Instant::ZERO, end).min(horizon);
    let loaded = |b: &usize| buckets[*b].started > 0;

    // The baseline: whole buckets before the first fault; at least HEALTHY_RUN with load.
    let before: Vec<usize> = (0..buckets.len())
        .take_while(|&b| end(b) <= faults.first_start.min(horizon))
        .filter(loaded)
        .collect();
    let after =
        (0..buckets.len()).filter(|&b| start(b) >= faults.last_end && end(b) <= load_end).filter(loaded);
    if before.len() < HEALTHY_RUN || after.count() < HEALTHY_RUN {
        return Recovery::Unmeasurable;
    }
    let mut baseline = StartBucket::default();
    for &b in before.iter().filter(|&&b| b > 0) {
        baseline.add(&buckets[b]);
    }
    let health = Health::from_baseline(&baseline);

    // The first run of HEALTHY_RUN consecutive healthy buckets with load, from the bucket that
    // holds the end of the last fault, that ends while load is still arriving.
    let from = faults.last_end.bucket(BUCKET);
    let mut streak = 0;
    let mut first = from;
    for b in (from..buckets.len()).filter(loaded) {
        if end(b) > load_end {
            break;
        }
        if !health.is_healthy(&buckets[b]) {
            streak = 0;
            continue;
        }
        if streak == 0 {
            first = b;
        }
        streak += 1;
        if streak == HEALTHY_RUN {
            return Recovery::Recovered { after: start(first).since(faults.last_end) };
        }
    }
    Recovery::Metastable
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn t(ns: u64) -> Instant {
        Instant::from_ns(ns)
    }

    fn after(ns: u64) -> Recovery {
        Recovery::Recovered { after: Span::from_ns(ns) }
    }
    const MS: u128 = 1_000_000;

    /// A bucket of 100 operations with this success rate, calls per op and mean latency (ms).
    fn b(success: f64, calls: f64, latency_ms: u128) -> StartBucket {
        StartBucket {
            started: 100,
            succeeded: (success * 100.0).round() as u64,
            calls: (calls * 100.0).round() as u64,
            latency_ns: 100 * latency_ms * MS,
        }
    }

    fn good() -> StartBucket {
        b(1.0, 1.0, 100)
    }

    /// `n` buckets, of which `bad` (a range of seconds) are `sick`.
    fn series(n: usize, bad: std::ops::Range<usize>, sick: StartBucket) -> Vec<StartBucket> {
        (0..n).map(|s| if bad.contains(&s) { sick } else { good() }).collect()
    }

    fn span(first_start: u64, last_end: u64) -> Option<FaultSpan> {
        Some(FaultSpan { first_start: t(first_start), last_end: t(last_end) })
    }

    #[test]
    fn thresholds_follow_the_baseline() {
        let h = Health::from_baseline(&b(0.99, 1.0, 100));
        assert!((h.min_success_rate - 0.95).abs() < 1e-12, "capped at 0.95");
        assert!((h.max_calls_per_op - 1.15).abs() < 1e-12);
        assert!((h.max_mean_latency_ns - 210e6).abs() < 1e-3);
        let weak = Health::from_baseline(&b(0.90, 1.2, 50));
        assert!((weak.min_success_rate - 0.88).abs() < 1e-12, "baseline - 0.02 when below 0.97");
        assert!(weak.is_healthy(&b(0.88, 1.37, 110)));
        assert!(!weak.is_healthy(&b(0.87, 1.0, 50)), "success rate");
        assert!(!weak.is_healthy(&b(0.95, 1.4, 50)), "calls per operation");
        assert!(!weak.is_healthy(&b(0.95, 1.0, 111)), "latency");
    }

    #[test]
    fn recovers_after_a_known_delay() {
        // Fault 10 s to 15.5 s; buckets 10..18 are sick (too many calls), 18.. healthy.
        let buckets = series(40, 10..18, b(1.0, 1.8, 100));
        let r = analyse(&buckets, span(10 * S, 15 * S + S / 2), t(60 * S));
        assert_eq!(r, after(2 * S + S / 2));
        assert_eq!(r.time_s(), Some(2.5));
        assert_eq!(r.metastable(), Some(false));
    }

    #[test]
    fn congestion_until_the_load_ends_is_metastable() {
        // Sick (slow) from the fault until the load ends at 40 s; the drain is not looked at.
        let mut buckets = series(40, 10..40, b(0.97, 1.0, 900));
        buckets.extend([StartBucket::default(); 20]);
        let r = analyse(&buckets, span(10 * S, 15 * S), t(60 * S));
        assert_eq!(r, Recovery::Metastable);
        assert_eq!((r.time_s(), r.metastable()), (None, Some(true)));
    }

    #[test]
    fn a_healthy_run_must_end_before_the_load_does() {
        // Four healthy buckets before the load ends at 30 s are not enough.
        let buckets = series(30, 10..26, b(0.5, 2.0, 900));
        assert_eq!(analyse(&buckets, span(10 * S, 15 * S), t(60 * S)), Recovery::Metastable);
        let buckets = series(30, 10..25, b(0.5, 2.0, 900));
        assert_eq!(analyse(&buckets, span(10 * S, 15 * S), t(60 * S)), after(10 * S));
    }

    #[test]
    fn empty_buckets_neither_count_nor_break() {
        let mut buckets = series(40, 10..16, b(0.0, 4.0, 50));
        for s in [17, 19, 21] {
            buckets[s] = StartBucket::default();
        }
        // Healthy from 16 with gaps: 16, 18, 20, 22, 23 are the five.
        assert_eq!(analyse(&buckets, span(10 * S, 15 * S), t(60 * S)), after(S));
    }

    #[test]
    fn too_little_load_is_unmeasurable() {
        // A fault 3 s before the load ends.
        let buckets = series(40, 37..40, b(0.0, 4.0, 50));
        assert_eq!(analyse(&buckets, span(37 * S, 38 * S), t(60 * S)), Recovery::Unmeasurable);
        // A fault in the fourth second: only buckets 0..3 before it.
        let buckets = series(40, 3..5, b(0.0, 4.0, 50));
        let r = analyse(&buckets, span(3 * S, 5 * S), t(60 * S));
        assert_eq!((r, r.time_s(), r.metastable()), (Recovery::Unmeasurable, None, None));
        // A fault that outlasts the horizon.
        let buckets = series(40, 10..40, b(0.0, 4.0, 50));
        assert_eq!(analyse(&buckets, span(10 * S, 90 * S), t(40 * S)), Recovery::Unmeasurable);
    }

    #[test]
    fn no_fault_is_recovery_zero() {
        let r = analyse(&series(10, 0..0, good()), None, t(10 * S));
        assert_eq!((r.time_s(), r.metastable()), (Some(0.0), Some(false)));
    }
}
