//! What one run measures. The recorder is fed by the model as events happen and keeps only
//! bounded state: counters, a latency histogram and per-second buckets.

use crate::engine::{NS_PER_S, Nanos};
use crate::policy::FailReason;
use hdrhistogram::Histogram;

/// The metrics of one run (DESIGN §5).
#[derive(Clone, Debug, PartialEq)]
pub struct RunMetrics {
    pub ops: u64,
    pub succeeded: u64,
    pub failed: u64,
    /// Indexed like [`FailReason::ALL`].
    pub failed_by: [u64; 7],
    pub calls: u64,
    pub server_calls: u64,
    pub completion_time_s: f64,
    pub latency_p50_s: f64,
    pub latency_p99_s: f64,
    pub latency_max_s: f64,
    pub duplicates: u64,
    pub wasted_work_s: f64,
    pub peak_offered_rps: u64,
    /// `None` when the run never recovered before the horizon.
    pub recovery_time_s: Option<f64>,
    pub metastable: bool,
    pub events: u64,
}

impl RunMetrics {
    pub fn success_rate(&self) -> f64 {
        if self.ops == 0 { 0.0 } else { self.succeeded as f64 / self.ops as f64 }
    }
    pub fn amplification(&self) -> f64 {
        if self.ops == 0 { 0.0 } else { self.calls as f64 / self.ops as f64 }
    }
}

/// Milliseconds in the sliding window of `peak_offered_rps`.
const WINDOW_MS: usize = 1000;
/// The bucket width of the recovery analysis.
const BUCKET_NS: Nanos = 1_000_000_000;
/// DESIGN §5: recovered once the success rate of operations started in each 1 s bucket is
/// >= 95 % for 5 consecutive buckets.
const RECOVERED_RATE: f64 = 0.95;
const RECOVERED_BUCKETS: usize = 5;

/// Accumulates one run's measurements.
pub struct RunRecorder {
    ops: u64,
    succeeded: u64,
    failed_by: [u64; 7],
    calls: u64,
    server_calls: u64,
    last_end_ns: Nanos,
    latency_ns: Histogram<u64>,
    duplicates: u64,
    wasted_ns: u128,
    /// Calls per millisecond over the last second, a ring indexed by `ms % 1000`: a sliding
    /// 1 s window at 1 ms resolution, so `peak_offered_rps` is the most calls in any 1 s
    /// window (not only whole seconds) in 8 KB, whatever the call rate.
    calls_per_ms: Box<[u64; WINDOW_MS]>,
    /// The millisecond of the newest call, and the calls in the window ending with it.
    last_ms: u64,
    window_calls: u64,
    peak_calls_per_s: u64,
    /// Operations started, and started-then-succeeded, per start second (recovery analysis);
    /// kept only when the run has faults.
    started_per_s: Vec<u32>,
    succeeded_per_s: Vec<u32>,
    track_recovery: bool,
}

impl RunRecorder {
    /// `track_recovery`: whether the run has faults (otherwise recovery is 0 by definition and
    /// the per-second success buckets are not kept).
    pub fn new(track_recovery: bool) -> RunRecorder {
        RunRecorder {
            ops: 0,
            succeeded: 0,
            failed_by: [0; 7],
            calls: 0,
            server_calls: 0,
            last_end_ns: 0,
            // 3 significant digits: quantiles within 0.1 %; auto-resizing covers ns to years.
            latency_ns: Histogram::new(3).expect("3 significant figures is a valid precision"),
            duplicates: 0,
            wasted_ns: 0,
            calls_per_ms: Box::new([0; WINDOW_MS]),
            last_ms: 0,
            window_calls: 0,
            peak_calls_per_s: 0,
            started_per_s: Vec::new(),
            succeeded_per_s: Vec::new(),
            track_recovery,
        }
    }

    #[inline]
    fn bucket(t: Nanos) -> usize {
        (t / BUCKET_NS) as usize
    }

    #[inline]
    fn bump<T: Copy + Default + std::ops::AddAssign + From<u8>>(v: &mut Vec<T>, i: usize) {
        if i >= v.len() {
            v.resize(i + 1, T::default());
        }
        v[i] += T::from(1u8);
    }

    #[inline]
    pub fn op_started(&mut self, now: Nanos) {
        self.ops += 1;
        if self.track_recovery {
            Self::bump(&mut self.started_per_s, Self::bucket(now));
        }
    }

    #[inline]
    pub fn call_sent(&mut self, now: Nanos) {
        self.calls += 1;
        let ms = now / 1_000_000;
        // Slide the window to end at `ms`: the milliseconds that fall out are cleared (at most
        // the whole ring, however long the gap since the last call).
        let first_stale = self.last_ms + 1;
        for old in first_stale..=ms.min(first_stale + WINDOW_MS as u64 - 1) {
            let slot = &mut self.calls_per_ms[(old % WINDOW_MS as u64) as usize];
            self.window_calls -= *slot;
            *slot = 0;
        }
        self.last_ms = self.last_ms.max(ms);
        self.calls_per_ms[(ms % WINDOW_MS as u64) as usize] += 1;
        self.window_calls += 1;
        self.peak_calls_per_s = self.peak_calls_per_s.max(self.window_calls);
    }

    #[inline]
    pub fn server_call(&mut self) {
        self.server_calls += 1;
    }

    /// A served request executed its operation's side effect; `executions` counts them for the
    /// operation so far, this one included.
    #[inline]
    pub fn side_effect(&mut self, executions: u32) {
        if executions > 1 {
            self.duplicates += 1;
        }
    }

    #[inline]
    pub fn wasted(&mut self, ns: Nanos) {
        self.wasted_ns += ns as u128;
    }

    #[inline]
    pub fn op_succeeded(&mut self, started: Nanos, now: Nanos) {
        self.succeeded += 1;
        self.ended(started, now);
        if self.track_recovery {
            Self::bump(&mut self.succeeded_per_s, Self::bucket(started));
        }
    }

    #[inline]
    pub fn op_failed(&mut self, reason: FailReason, started: Nanos, now: Nanos) {
        self.failed_by[reason as usize] += 1;
        self.ended(started, now);
    }

    #[inline]
    fn ended(&mut self, started: Nanos, now: Nanos) {
        self.last_end_ns = self.last_end_ns.max(now);
        // Cannot fail: the histogram auto-resizes and values are non-negative.
        let _ = self.latency_ns.record(now - started);
    }

    /// Operations still pending at the horizon end there, as `unfinished` (not in latency).
    pub fn unfinished(&mut self, count: u64, horizon: Nanos) {
        if count > 0 {
            self.failed_by[FailReason::Unfinished as usize] += count;
            self.last_end_ns = self.last_end_ns.max(horizon);
        }
    }

    /// Closes the run. `faults_end` is when the last fault ends (None without faults);
    /// `horizon` bounds the recovery analysis.
    pub fn finish(self, events: u64, faults_end: Option<Nanos>, horizon: Nanos) -> RunMetrics {
        let q = |p: f64| {
            if self.latency_ns.is_empty() {
                0.0
            } else {
                self.latency_ns.value_at_quantile(p) as f64 / NS_PER_S
            }
        };
        let (recovery_time_s, metastable) = match faults_end {
            None => (Some(0.0), false),
            Some(end) => match self.recovery_ns(end, horizon) {
                Some(r) => (Some(r as f64 / NS_PER_S), false),
                None => (None, true),
            },
        };
        let failed = self.failed_by.iter().sum();
        RunMetrics {
            ops: self.ops,
            succeeded: self.succeeded,
            failed,
            failed_by: self.failed_by,
            calls: self.calls,
            server_calls: self.server_calls,
            completion_time_s: self.last_end_ns as f64 / NS_PER_S,
            latency_p50_s: q(0.5),
            latency_p99_s: q(0.99),
            latency_max_s: if self.latency_ns.is_empty() {
                0.0
            } else {
                self.latency_ns.max() as f64 / NS_PER_S
            },
            duplicates: self.duplicates,
            wasted_work_s: self.wasted_ns as f64 / NS_PER_S,
            peak_offered_rps: self.peak_calls_per_s,
            recovery_time_s,
            metastable,
            events,
        }
    }

    /// Looks, from the bucket containing `faults_end` on, among whole buckets before the
    /// horizon, for the first bucket from which the success rate of the operations started in
    /// each bucket is >= 95 % and stays there: for `RECOVERED_BUCKETS` consecutive buckets, or
    /// until the load ends, if it visibly ends (whole buckets with no start follow) before
    /// that many remain. Buckets where no operation started say nothing about health and are
    /// skipped (they neither extend nor break a streak). With no operation started after the
    /// fault at all, nothing was harmed: recovered at once. The recovery time is the streak's
    /// first bucket start minus `faults_end`, at least 0.
    fn recovery_ns(&self, faults_end: Nanos, horizon: Nanos) -> Option<Nanos> {
        let horizon_buckets = (horizon / BUCKET_NS) as usize;
        let from = Self::bucket(faults_end);
        let healthy = |b: usize| {
            let ok = self.succeeded_per_s.get(b).copied().unwrap_or(0);
            ok as f64 >= RECOVERED_RATE * self.started_per_s[b] as f64
        };
        let mut streak = 0;
        let mut first = from;
        for b in from..horizon_buckets.min(self.started_per_s.len()) {
            if self.started_per_s[b] == 0 {
                continue;
            }
            if healthy(b) {
                if streak == 0 {
                    first = b;
                }
                streak += 1;
                if streak == RECOVERED_BUCKETS {
                    return Some((first as Nanos * BUCKET_NS).saturating_sub(faults_end));
                }
            } else {
                streak = 0;
                first = usize::MAX;
            }
        }
        // Fewer than RECOVERED_BUCKETS healthy buckets remain: they count only if the load
        // ended before the horizon (else the horizon cut the evidence short).
        let load_ended = self.started_per_s.len() < horizon_buckets;
        (first != usize::MAX && load_ended).then(|| (first as Nanos * BUCKET_NS).saturating_sub(faults_end))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Nanos = 1_000_000_000;

    #[test]
    fn counts_and_rates() {
        let mut r = RunRecorder::new(false);
        for i in 0..4 {
            r.op_started(i);
            r.call_sent(i);
        }
        r.call_sent(S + 1);
        r.op_succeeded(0, 2 * S);
        r.op_succeeded(1, S);
        r.op_failed(FailReason::Exhausted, 2, 3 * S);
        r.unfinished(1, 10 * S);
        r.side_effect(1);
        r.side_effect(2);
        r.side_effect(3);
        let m = r.finish(99, None, 10 * S);
        assert_eq!((m.ops, m.succeeded, m.failed), (4, 2, 2));
        assert_eq!(m.failed_by[FailReason::Exhausted as usize], 1);
        assert_eq!(m.failed_by[FailReason::Unfinished as usize], 1);
        assert_eq!(m.calls, 5);
        assert_eq!(m.amplification(), 1.25);
        assert_eq!(m.success_rate(), 0.5);
        // Calls at 0, 1, 2, 3 ns and 1 s + 1 ns: the window [0, 1 s) holds the first four.
        assert_eq!(m.peak_offered_rps, 4);
        assert_eq!(m.duplicates, 2);
        assert_eq!(m.completion_time_s, 10.0);
        assert_eq!(m.recovery_time_s, Some(0.0));
        assert!(!m.metastable);
        // Latency of the three ended operations: ~1 s, ~2 s, ~3 s (hdr: within 0.1 %).
        assert!((m.latency_max_s - 3.0).abs() < 0.003);
        assert!((m.latency_p50_s - 2.0).abs() < 0.002);
    }

    #[test]
    fn peak_rps_is_over_any_one_second_window() {
        let mut r = RunRecorder::new(false);
        // 600 calls in [0.5 s, 1 s) and 600 in [1 s, 1.5 s): no whole second sees more than
        // 600, but the window [0.5 s, 1.5 s) sees all 1200.
        for i in 0..1200u64 {
            r.call_sent(S / 2 + i * (S / 1200));
        }
        assert_eq!(r.finish(0, None, 2 * S).peak_offered_rps, 1200);
        let mut r = RunRecorder::new(false);
        // One call every 10 ms for 10 s: 100 per second in any window.
        for i in 0..1000u64 {
            r.call_sent(i * 10_000_000);
        }
        assert_eq!(r.finish(0, None, 20 * S).peak_offered_rps, 100);
        // A burst, a long gap, a burst: the window forgets the first one.
        let mut r = RunRecorder::new(false);
        for i in 0..50u64 {
            r.call_sent(i);
        }
        for i in 0..50u64 {
            r.call_sent(3600 * S + i);
        }
        r.call_sent(3600 * S + S / 2);
        assert_eq!(r.finish(0, None, 7200 * S).peak_offered_rps, 51);
    }

    #[test]
    fn recovery_waits_for_five_healthy_buckets() {
        let mut r = RunRecorder::new(true);
        // Seconds 0..30: 10 ops per second; seconds 10..17 fail, the rest succeed.
        for s in 0..30u64 {
            for i in 0..10 {
                let t = s * S + i;
                r.op_started(t);
                if (10..17).contains(&s) {
                    r.op_failed(FailReason::Exhausted, t, t + 1);
                } else {
                    r.op_succeeded(t, t + 1);
                }
            }
        }
        // The fault ended at 15.5 s: buckets 15 and 16 still fail, 17..21 are healthy.
        let m = r.finish(0, Some(15 * S + S / 2), 30 * S);
        assert!(!m.metastable);
        assert!((m.recovery_time_s.unwrap() - 1.5).abs() < 1e-9);
    }

    #[test]
    fn never_recovering_is_metastable() {
        let mut r = RunRecorder::new(true);
        for s in 0..20u64 {
            r.op_started(s * S);
            if s % 3 == 0 {
                r.op_failed(FailReason::Exhausted, s * S, s * S);
            } else {
                r.op_succeeded(s * S, s * S);
            }
        }
        let m = r.finish(0, Some(5 * S), 20 * S);
        assert!(m.metastable);
        assert_eq!(m.recovery_time_s, None);
    }

    #[test]
    fn empty_buckets_neither_count_nor_break() {
        let run = |healthy: &[u64], failing_after: Option<u64>| {
            let mut r = RunRecorder::new(true);
            r.op_started(0);
            r.op_failed(FailReason::Exhausted, 0, 1);
            for &s in healthy {
                r.op_started(s * S);
                r.op_succeeded(s * S, s * S + 1);
            }
            if let Some(s) = failing_after {
                r.op_started(s * S);
                r.op_failed(FailReason::Exhausted, s * S, s * S + 1);
            }
            r.finish(0, Some(S / 2), 30 * S)
        };
        // Bucket 0 fails; healthy operations start only in even seconds from 2 on.
        assert_eq!(run(&[2, 4, 6, 8, 10], None).recovery_time_s, Some(1.5), "the streak starts at bucket 2");
        // Four healthy buckets and then the load stops: healthy until the end, recovered.
        assert_eq!(run(&[2, 4, 6, 8], None).recovery_time_s, Some(1.5));
        // Four healthy buckets, then a failing one as the load ends: not recovered.
        assert!(run(&[2, 4, 6, 8], Some(9)).metastable);
    }

    #[test]
    fn no_load_after_the_fault_is_recovered_at_once() {
        let mut r = RunRecorder::new(true);
        r.op_started(0);
        r.op_succeeded(0, 1);
        let m = r.finish(0, Some(25 * S), 30 * S);
        assert_eq!(m.recovery_time_s, Some(0.0));
        assert!(!m.metastable);
    }
}
