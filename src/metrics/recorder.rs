//! What one run measures. The recorder is fed by the model as events happen and keeps only
//! bounded state: counters, latency histograms (every ended operation, the successful ones,
//! and the successful ones of each `[output] windows` window) and per-second buckets.

use super::recovery::{self, FaultSpan, StartBucket};
use super::series::{Count, Gauge, TimeSeries};
use crate::engine::{Instant, NS_PER_S, Span};
use crate::policy::FailReason;
use hdrhistogram::Histogram;

/// The metrics of one run (DESIGN §5).
#[derive(Clone, Debug, PartialEq)]
pub struct RunMetrics {
    pub ops: u64,
    pub succeeded: u64,
    pub failed: u64,
    /// Indexed like [`FailReason::ALL`].
    pub failed_by: [u64; 9],
    /// Operations whose tries were used up with a dead-letter queue: a third ending, so that
    /// `ops = succeeded + failed + dead_lettered`.
    pub dead_lettered: u64,
    pub calls: u64,
    pub server_calls: u64,
    /// Attempts that failed waiting for a client connection (never reached the server).
    pub pool_timeouts: u64,
    /// Hedged requests: copies sent besides each call's first (DESIGN §4.10).
    pub hedges: u64,
    /// Calls whose winning answer came from a hedge, not from the first copy.
    pub hedge_wins: u64,
    /// Copies the client cancelled because another copy had decided the call.
    pub cancelled: u64,
    pub completion_time_s: f64,
    pub latency_p50_s: f64,
    pub latency_p99_s: f64,
    /// The 99.9th percentile, from the same histogram (hedging's tail, DESIGN §4.10).
    pub latency_p999_s: f64,
    /// The exact maximum (not a histogram bucket edge).
    pub latency_max_s: f64,
    /// The exact minimum (0 when no operation ended).
    pub latency_min_s: f64,
    /// The exact mean over the operations that ended (not from the histogram).
    pub latency_mean_s: f64,
    /// The median and 99th percentile latency of the operations that succeeded (`None` when
    /// none did).
    pub latency_ok_p50_s: Option<f64>,
    pub latency_ok_p99_s: Option<f64>,
    pub duplicates: u64,
    /// Operations whose side effect happened at least once (so side-effect executions are
    /// `applied + duplicates`).
    pub applied: u64,
    /// Operations the client counts as failed although their side effect happened at least
    /// once (by the horizon): the ambiguous outcomes someone must reconcile.
    pub failed_but_applied: u64,
    /// Dead-lettered operations whose side effect happened at least once (before, during or
    /// after their re-drive): `applied = succeeded + failed_but_applied +
    /// dead_lettered_but_applied`.
    pub dead_lettered_but_applied: u64,
    /// Dead-lettered operations whose re-drive started, and of those, the ones whose re-drive
    /// succeeded (they stay counted as dead-lettered).
    pub redriven: u64,
    pub redrive_succeeded: u64,
    /// A queue workload's messages delivered again because their visibility timeout ran out
    /// before they were acknowledged.
    pub redeliveries: u64,
    /// The most idempotency keys the server's dedup store held at once.
    pub idempotency_keys_peak: u64,
    /// Lock grants of the dedup store whose `lock_ttl` ran out while their request was still
    /// at the server.
    pub lock_expired: u64,
    /// Completions the resource refused because their lock grant was no longer the latest
    /// (`fencing`): work done without its effect.
    pub fenced: u64,
    pub wasted_work_s: f64,
    /// Mean time the requests a worker started had waited in the server's queue (0 for those
    /// started on arrival); 0 when none started.
    pub wait_mean_s: f64,
    /// Of the requests the server accepted (started or queued), the fraction that were queued
    /// (found every usable worker busy); 0 when none was accepted.
    pub queued_fraction: f64,
    /// Time-average number of requests at the server (in service + queued) over
    /// `[0, completion_time_s]`.
    pub in_server_mean: f64,
    pub peak_offered_rps: u64,
    /// `None` when the run never recovered, or recovery could not be measured.
    pub recovery_time_s: Option<f64>,
    /// `None` when recovery could not be measured (too little load around the faults).
    pub metastable: Option<bool>,
    pub events: u64,
    /// The measures of each `[output] windows` window, in the experiment's order.
    pub windows: Vec<WindowMetrics>,
    /// The run over time (`timeseries.csv`).
    pub series: TimeSeries,
    /// Per service and per edge of a call graph (`[[services]]`); empty without one.
    pub graph: super::graph::GraphCounts,
}

/// What happened in one window `[start, end)` of simulated time (DESIGN §5, windowed metrics):
/// the operations *started* in it and the requests that *arrived* at the server in it.
#[derive(Clone, Debug, PartialEq)]
pub struct WindowMetrics {
    /// Operations started in the window.
    pub ops: u64,
    /// Of those, the ones that succeeded (whenever they ended).
    pub succeeded: u64,
    /// Requests that arrived at the server in the window.
    pub server_calls: u64,
    /// The 99th percentile latency of the window's successful operations (`None`: none).
    pub latency_ok_p99_s: Option<f64>,
}

impl WindowMetrics {
    /// `succeeded / ops`; `None` when no operation started in the window.
    pub fn success_rate(&self) -> Option<f64> {
        (self.ops > 0).then(|| self.succeeded as f64 / self.ops as f64)
    }
    /// `server_calls / ops`; `None` when no operation started in the window.
    pub fn server_amplification(&self) -> Option<f64> {
        (self.ops > 0).then(|| self.server_calls as f64 / self.ops as f64)
    }
}

/// A window `[start, end)` of simulated time to measure (`[output] windows`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub start: Instant,
    pub end: Instant,
}

impl Window {
    #[inline]
    fn contains(&self, t: Instant) -> bool {
        self.start <= t && t < self.end
    }
}

/// The latency histograms of a run: every ended operation's, and the successful ones'. A
/// thread reuses them from one run to the next (`model::workspace`).
#[derive(Clone, Debug)]
pub struct Latencies {
    pub all: Histogram<u64>,
    pub ok: Histogram<u64>,
}

impl Latencies {
    /// New, empty histograms ([`latency_histogram`]).
    pub fn new() -> Latencies {
        Latencies { all: latency_histogram(), ok: latency_histogram() }
    }

    /// Empties both, keeping their memory. An empty histogram is left alone: resetting one
    /// clears every count it could hold, and a run whose operations all succeeded (or all
    /// failed) leaves one of the two untouched (a sweep of short runs spent a tenth of its
    /// time there: benches/README.md).
    pub fn reset(&mut self) {
        for h in [&mut self.all, &mut self.ok] {
            if !h.is_empty() {
                h.reset();
            }
        }
    }

    fn is_empty(&self) -> bool {
        self.all.is_empty() && self.ok.is_empty()
    }
}

impl Default for Latencies {
    fn default() -> Self {
        Latencies::new()
    }
}

/// One window's accumulators.
struct WindowAcc {
    window: Window,
    ops: u64,
    succeeded: u64,
    server_calls: u64,
    ok_ns: Histogram<u64>,
    ok_max_ns: u64,
}

impl RunMetrics {
    pub fn success_rate(&self) -> f64 {
        if self.ops == 0 { 0.0 } else { self.succeeded as f64 / self.ops as f64 }
    }
    pub fn amplification(&self) -> f64 {
        if self.ops == 0 { 0.0 } else { self.calls as f64 / self.ops as f64 }
    }
    /// Requests that reached the server per operation (0 without operations, like
    /// [`Self::amplification`]).
    pub fn server_amplification(&self) -> f64 {
        if self.ops == 0 { 0.0 } else { self.server_calls as f64 / self.ops as f64 }
    }
}

/// Milliseconds in the sliding window of `peak_offered_rps`.
const WINDOW_MS: usize = 1000;
use recovery::BUCKET;

/// Accumulates one run's measurements.
pub struct RunRecorder {
    ops: u64,
    succeeded: u64,
    failed_by: [u64; 9],
    dead_lettered: u64,
    calls: u64,
    server_calls: u64,
    pool_timeouts: u64,
    hedges: u64,
    hedge_wins: u64,
    cancelled: u64,
    last_end: Instant,
    latency_ns: Histogram<u64>,
    latency_max_ns: u64,
    /// The latencies of the operations that succeeded, and their exact maximum.
    latency_ok_ns: Histogram<u64>,
    latency_ok_max_ns: u64,
    latency_min_ns: u64,
    /// Sum of the latencies of the operations that ended, and how many ended.
    latency_sum_ns: u128,
    ended: u64,
    duplicates: u64,
    applied: u64,
    failed_but_applied: u64,
    dead_lettered_but_applied: u64,
    redriven: u64,
    redrive_succeeded: u64,
    redeliveries: u64,
    keys_peak: u64,
    locks_expired: u64,
    fenced: u64,
    wasted_ns: u128,
    /// Requests accepted by the server (started or queued), and of those, queued.
    accepted: u64,
    queued: u64,
    /// Requests a worker started, and their total wait in the queue.
    started: u64,
    wait_sum_ns: u128,
    /// The time integral of the requests at the server (request-nanoseconds), the level since
    /// the last change, and when that change happened.
    in_server_area: u128,
    in_server: u64,
    in_server_since: Instant,
    /// The integral up to the latest operation end (the makespan so far).
    in_server_area_at_end: u128,
    /// Calls per millisecond over the last second, a ring indexed by `ms % 1000`: a sliding
    /// 1 s window at 1 ms resolution, so `peak_offered_rps` is the most calls in any 1 s
    /// window (not only whole seconds) in 8 KB, whatever the call rate.
    calls_per_ms: Box<[u64; WINDOW_MS]>,
    /// The end of the millisecond of the newest call, that millisecond's slot in
    /// `calls_per_ms`, and the calls in the window ending with it.
    last_ms_end: Instant,
    last_ms_slot: usize,
    window_calls: u64,
    peak_calls_per_s: u64,
    /// What became of the operations started in each second (the recovery analysis); kept
    /// only when the run has faults.
    by_start_s: Vec<StartBucket>,
    track_recovery: bool,
    series: TimeSeries,
    /// `[output] windows` (empty without: then no per-window work is done).
    windows: Vec<WindowAcc>,
}

impl RunRecorder {
    /// `track_recovery`: whether the run has faults (otherwise recovery is 0 by definition and
    /// the per-second success buckets are not kept); `series`: the buckets over time to fill
    /// ([`TimeSeries::none`] to keep none); `latency`: the histograms to record latencies
    /// into, empty (new [`Latencies`], or ones an earlier run handed back, reset); `windows`:
    /// the windows to measure.
    pub fn new(
        track_recovery: bool,
        series: TimeSeries,
        latency: Latencies,
        windows: &[Window],
    ) -> RunRecorder {
        debug_assert!(latency.is_empty());
        let windows = windows
            .iter()
            .map(|&window| WindowAcc {
                window,
                ops: 0,
                succeeded: 0,
                server_calls: 0,
                ok_ns: latency_histogram(),
                ok_max_ns: 0,
            })
            .collect();
        RunRecorder {
            ops: 0,
            succeeded: 0,
            failed_by: [0; 9],
            dead_lettered: 0,
            calls: 0,
            server_calls: 0,
            pool_timeouts: 0,
            hedges: 0,
            hedge_wins: 0,
            cancelled: 0,
            last_end: Instant::ZERO,
            latency_ns: latency.all,
            latency_max_ns: 0,
            latency_ok_ns: latency.ok,
            latency_ok_max_ns: 0,
            latency_min_ns: u64::MAX,
            latency_sum_ns: 0,
            ended: 0,
            duplicates: 0,
            applied: 0,
            failed_but_applied: 0,
            dead_lettered_but_applied: 0,
            redriven: 0,
            redrive_succeeded: 0,
            redeliveries: 0,
            keys_peak: 0,
            locks_expired: 0,
            fenced: 0,
            wasted_ns: 0,
            accepted: 0,
            queued: 0,
            started: 0,
            wait_sum_ns: 0,
            in_server_area: 0,
            in_server: 0,
            in_server_since: Instant::ZERO,
            in_server_area_at_end: 0,
            calls_per_ms: Box::new([0; WINDOW_MS]),
            last_ms_end: Instant::from_ns(1_000_000),
            last_ms_slot: 0,
            window_calls: 0,
            peak_calls_per_s: 0,
            by_start_s: Vec::new(),
            track_recovery,
            series,
            windows,
        }
    }

    #[inline]
    fn bucket(t: Instant) -> usize {
        t.bucket(BUCKET)
    }

    /// The start bucket of an operation that started at `started`.
    #[inline]
    fn start_bucket(&mut self, started: Instant) -> &mut StartBucket {
        let i = Self::bucket(started);
        if i >= self.by_start_s.len() {
            self.by_start_s.resize(i + 1, StartBucket::default());
        }
        &mut self.by_start_s[i]
    }

    /// An operation started at `now`. `PLAIN`: the run has no windows (a plain run's copy of
    /// the model never pays for the check).
    #[inline]
    pub fn op_started<const PLAIN: bool>(&mut self, now: Instant) {
        self.ops += 1;
        self.series.op_started(now);
        if self.track_recovery {
            self.start_bucket(now).started += 1;
        }
        if !PLAIN && !self.windows.is_empty() {
            self.window_op_started(now);
        }
    }

    #[cold]
    #[inline(never)]
    fn window_op_started(&mut self, now: Instant) {
        for w in self.windows.iter_mut().filter(|w| w.window.contains(now)) {
            w.ops += 1;
        }
    }

    /// An operation started at `started` succeeded after `latency_ns`.
    #[cold]
    #[inline(never)]
    fn window_op_succeeded(&mut self, started: Instant, latency_ns: u64) {
        for w in self.windows.iter_mut().filter(|w| w.window.contains(started)) {
            w.succeeded += 1;
            let _ = w.ok_ns.record(latency_ns);
            w.ok_max_ns = w.ok_max_ns.max(latency_ns);
        }
    }

    #[cold]
    #[inline(never)]
    fn window_server_call(&mut self, now: Instant) {
        for w in self.windows.iter_mut().filter(|w| w.window.contains(now)) {
            w.server_calls += 1;
        }
    }

    #[inline]
    pub fn call_sent(&mut self, now: Instant) {
        self.calls += 1;
        self.series.count(Count::Offered, now);
        if now < self.last_ms_end {
            // Within the millisecond of the last call: nothing slides out.
            self.calls_per_ms[self.last_ms_slot] += 1;
        } else {
            self.slide_window(now);
        }
        self.window_calls += 1;
        self.peak_calls_per_s = self.peak_calls_per_s.max(self.window_calls);
    }

    /// Moves the calls-per-second window to end at the millisecond of `now` (later than the
    /// last call's) and counts a call in it.
    #[inline(never)]
    fn slide_window(&mut self, now: Instant) {
        let ms = now.as_ns() / 1_000_000;
        // Slide the window to end at `ms`: the milliseconds that fall out are cleared (at most
        // the whole ring, however long the gap since the last call).
        let first_stale = self.last_ms_end.as_ns() / 1_000_000;
        for old in first_stale..=ms.min(first_stale + WINDOW_MS as u64 - 1) {
            let slot = &mut self.calls_per_ms[(old % WINDOW_MS as u64) as usize];
            self.window_calls -= *slot;
            *slot = 0;
        }
        self.last_ms_end = Instant::from_ns((ms + 1).saturating_mul(1_000_000));
        self.last_ms_slot = (ms % WINDOW_MS as u64) as usize;
        self.calls_per_ms[self.last_ms_slot] += 1;
    }

    /// A request arrived at the server at `now` (after any gateway layers). `PLAIN`: as for
    /// [`RunRecorder::op_started`].
    #[inline]
    pub fn server_call<const PLAIN: bool>(&mut self, now: Instant) {
        self.server_calls += 1;
        if !PLAIN && !self.windows.is_empty() {
            self.window_server_call(now);
        }
    }

    /// The server took a request in at `now`: a worker started it (`queued = false`), it waits
    /// in the queue, it was answered from the dedup store or parked on a key in progress.
    #[inline]
    pub fn accepted(&mut self, now: Instant, queued: bool) {
        self.accepted += 1;
        self.queued += queued as u64;
        self.series.count(Count::Accepted, now);
    }

    /// A worker started a request that had waited `waited` in the queue (zero if it never
    /// queued).
    #[inline]
    pub fn service_started(&mut self, waited: Span) {
        self.started += 1;
        self.wait_sum_ns += waited.as_ns() as u128;
    }

    /// The server turned a request away without the work at `now`.
    #[inline]
    pub fn rejected(&mut self, now: Instant) {
        self.series.count(Count::Rejected, now);
    }

    /// A client stopped waiting for an attempt at `now` (its timeout or deadline).
    #[inline]
    pub fn timed_out(&mut self, now: Instant) {
        self.series.count(Count::Timeouts, now);
    }

    /// The attempt that just timed out was still waiting for a connection of its pool.
    #[inline]
    pub fn pool_timeout(&mut self) {
        self.pool_timeouts += 1;
    }

    /// From `now` on, gauge `g` of the time series reads `value` (an adaptive limit).
    #[inline]
    pub fn gauge(&mut self, g: Gauge, now: Instant, value: f64) {
        self.series.gauge(g, now, value);
    }

    /// A hedge (a copy besides the call's first) was sent.
    #[inline]
    pub fn hedge_sent(&mut self) {
        self.hedges += 1;
    }

    /// A call succeeded with a hedge's answer.
    #[inline]
    pub fn hedge_won(&mut self) {
        self.hedge_wins += 1;
    }

    /// The client cancelled a copy it no longer needed.
    #[inline]
    pub fn copy_cancelled(&mut self) {
        self.cancelled += 1;
    }

    /// The replicas' own series (runs with `replicas` > 1 whose time series is kept).
    #[inline]
    pub fn replica_series(&mut self) -> Option<&mut super::replica_series::ReplicaSeries> {
        self.series.replicas()
    }

    /// The time series, for the call graph's per-service replica counts.
    pub fn series(&mut self) -> &mut super::series::TimeSeries {
        &mut self.series
    }

    /// From `now` on, the server serves `in_service` requests and `queued` wait.
    #[inline]
    pub fn levels(&mut self, now: Instant, in_service: u32, queued: usize) {
        self.integrate_in_server(now);
        self.in_server = in_service as u64 + queued as u64;
        self.series.levels(now, in_service as u64, queued as u64);
    }

    /// Adds the level since the last change up to `now` to the integral.
    #[inline]
    fn integrate_in_server(&mut self, now: Instant) {
        self.in_server_area = self.in_server_area_to(now);
        self.in_server_since = self.in_server_since.max(now);
    }

    /// The integral of the requests at the server from 0 to `now` (no earlier than the last
    /// change).
    #[inline]
    fn in_server_area_to(&self, now: Instant) -> u128 {
        let held = if now > self.in_server_since { now.since(self.in_server_since).as_ns() } else { 0 };
        self.in_server_area + self.in_server as u128 * held as u128
    }

    /// The makespan reaches `now` (an operation ended): keeps the level integral up to it.
    #[inline]
    fn makespan_to(&mut self, now: Instant) {
        if now >= self.last_end {
            self.last_end = now;
            self.in_server_area_at_end = self.in_server_area_to(now);
        }
    }

    /// A served request executed its operation's side effect at `now`; `executions` counts
    /// them for the operation so far, this one included.
    #[inline]
    pub fn side_effect(&mut self, executions: u32, now: Instant) {
        if executions > 1 {
            self.duplicates += 1;
            self.series.count(Count::Duplicates, now);
        } else {
            self.applied += 1;
        }
    }

    /// An operation the client counts as failed had its side effect (counted once per
    /// operation: when it fails after its first execution, when its first execution comes
    /// after it failed, or at the horizon for an unfinished one that had it).
    #[inline]
    pub fn failed_but_applied(&mut self) {
        self.failed_but_applied += 1;
    }

    /// A dead-lettered operation had its side effect (counted once per operation: when it is
    /// dead-lettered after its first execution, or at its first execution after that).
    #[inline]
    pub fn dead_lettered_but_applied(&mut self) {
        self.dead_lettered_but_applied += 1;
    }

    /// A dead-lettered operation's re-drive started.
    pub fn redriven(&mut self) {
        self.redriven += 1;
    }

    /// A re-drive succeeded.
    pub fn redrive_succeeded(&mut self) {
        self.redrive_succeeded += 1;
    }

    /// A message was delivered again (its visibility timeout ran out).
    pub fn redelivered(&mut self) {
        self.redeliveries += 1;
    }

    /// The most keys the server's dedup store held at once in the run.
    pub fn keys_peak(&mut self, peak: u64) {
        self.keys_peak = peak;
    }

    /// The dedup store's lock grants that expired while their request was at the server, and
    /// the completions fencing refused, in the run.
    pub fn locks(&mut self, expired: u64, fenced: u64) {
        self.locks_expired = expired;
        self.fenced = fenced;
    }

    #[inline]
    pub fn wasted(&mut self, span: Span) {
        self.wasted_ns += span.as_ns() as u128;
    }

    /// An operation that started at `started` and sent `attempts` attempts succeeded at `now`.
    /// `PLAIN`: as for [`RunRecorder::op_started`].
    #[inline]
    pub fn op_succeeded<const PLAIN: bool>(&mut self, started: Instant, attempts: u32, now: Instant) {
        self.succeeded += 1;
        self.series.op_ended(started, now, true);
        self.ended::<PLAIN>(started, attempts, now, true);
    }

    /// An operation that started at `started` and sent `attempts` attempts failed at `now`.
    #[inline]
    pub fn op_failed(&mut self, reason: FailReason, started: Instant, attempts: u32, now: Instant) {
        self.failed_by[reason as usize] += 1;
        self.series.op_ended(started, now, false);
        self.ended::<false>(started, attempts, now, false);
    }

    /// An operation that started at `started` and sent `attempts` attempts was dead-lettered
    /// at `now`. Its latency is that of an operation that did not succeed; the time series
    /// does not count it among the `failures`.
    #[cold]
    pub fn op_dead_lettered(&mut self, started: Instant, attempts: u32, now: Instant) {
        self.dead_lettered += 1;
        self.ended::<false>(started, attempts, now, false);
    }

    /// What every ending records but the time series' count (the caller's).
    #[inline]
    fn ended<const PLAIN: bool>(&mut self, started: Instant, attempts: u32, now: Instant, success: bool) {
        self.makespan_to(now);
        let latency = now.since(started).as_ns();
        self.latency_sum_ns += latency as u128;
        self.ended += 1;
        self.latency_max_ns = self.latency_max_ns.max(latency);
        self.latency_min_ns = self.latency_min_ns.min(latency);
        // One record per operation: failures into `latency_ns`, successes into
        // `latency_ok_ns`, and `finish` adds the second into the first, so the quantiles of all
        // operations cost no second record (the buckets depend on the value alone, so the sum
        // is the histogram of every value). Cannot fail: the histograms auto-resize.
        if !success {
            let _ = self.latency_ns.record(latency);
        } else {
            let _ = self.latency_ok_ns.record(latency);
            self.latency_ok_max_ns = self.latency_ok_max_ns.max(latency);
            if !PLAIN && !self.windows.is_empty() {
                self.window_op_succeeded(started, latency);
            }
        }
        if self.track_recovery {
            let b = self.start_bucket(started);
            b.succeeded += success as u64;
            b.calls += attempts as u64;
            b.latency_ns += latency as u128;
        }
    }

    /// An operation still pending at the horizon ends there, as `unfinished`. It is not in the
    /// latency percentiles; the recovery analysis counts its latency up to the horizon.
    pub fn unfinished(&mut self, started: Instant, attempts: u32, horizon: Instant) {
        self.failed_by[FailReason::Unfinished as usize] += 1;
        self.makespan_to(horizon);
        self.series.op_ended(started, horizon, false);
        if self.track_recovery {
            let b = self.start_bucket(started);
            b.calls += attempts as u64;
            b.latency_ns += horizon.since(started).as_ns() as u128;
        }
    }

    /// Closes the run, handing the latency histograms back for another run. `faults` spans the
    /// faults that start before the horizon (None without any); `horizon` bounds the recovery
    /// analysis.
    pub fn finish(
        mut self,
        events: u64,
        faults: Option<FaultSpan>,
        horizon: Instant,
    ) -> (RunMetrics, Latencies) {
        self.series.finish();
        let ok = quantiles_s(&self.latency_ok_ns, self.latency_ok_max_ns);
        let (p50_ok, p99_ok) = (ok.map(|q| q[0]), ok.map(|q| q[1]));
        let [p50, p99, p999] = if self.latency_ns.is_empty() {
            // No operation failed: every ended one is in `latency_ok_ns` (and its maximum is
            // the maximum of all), so the sum would be a copy of it.
            ok.unwrap_or([0.0; 3])
        } else {
            // Cannot fail: both histograms auto-resize.
            let _ = self.latency_ns.add(&self.latency_ok_ns);
            quantiles_s(&self.latency_ns, self.latency_max_ns).unwrap_or([0.0; 3])
        };
        let windows = self
            .windows
            .iter()
            .map(|w| WindowMetrics {
                ops: w.ops,
                succeeded: w.succeeded,
                server_calls: w.server_calls,
                latency_ok_p99_s: quantile_s(&w.ok_ns, w.ok_max_ns, 0.99),
            })
            .collect();
        let recovery = recovery::analyse(&self.by_start_s, faults, horizon);
        let failed = self.failed_by.iter().sum();
        let end = self.last_end;
        let ratio = |num: u128, den: u64| if den == 0 { 0.0 } else { num as f64 / den as f64 };
        let metrics = RunMetrics {
            ops: self.ops,
            succeeded: self.succeeded,
            failed,
            failed_by: self.failed_by,
            dead_lettered: self.dead_lettered,
            calls: self.calls,
            server_calls: self.server_calls,
            pool_timeouts: self.pool_timeouts,
            hedges: self.hedges,
            hedge_wins: self.hedge_wins,
            cancelled: self.cancelled,
            completion_time_s: self.last_end.as_secs_f64(),
            latency_p50_s: p50,
            latency_p99_s: p99,
            latency_p999_s: p999,
            latency_max_s: self.latency_max_ns as f64 / NS_PER_S,
            latency_min_s: if self.ended == 0 { 0.0 } else { self.latency_min_ns as f64 / NS_PER_S },
            latency_mean_s: ratio(self.latency_sum_ns, self.ended) / NS_PER_S,
            latency_ok_p50_s: p50_ok,
            latency_ok_p99_s: p99_ok,
            duplicates: self.duplicates,
            applied: self.applied,
            failed_but_applied: self.failed_but_applied,
            dead_lettered_but_applied: self.dead_lettered_but_applied,
            redriven: self.redriven,
            redrive_succeeded: self.redrive_succeeded,
            redeliveries: self.redeliveries,
            idempotency_keys_peak: self.keys_peak,
            lock_expired: self.locks_expired,
            fenced: self.fenced,
            wasted_work_s: self.wasted_ns as f64 / NS_PER_S,
            wait_mean_s: ratio(self.wait_sum_ns, self.started) / NS_PER_S,
            queued_fraction: ratio(self.queued as u128, self.accepted),
            in_server_mean: ratio(self.in_server_area_at_end, end.as_ns()),
            peak_offered_rps: self.peak_calls_per_s,
            recovery_time_s: recovery.time_s(),
            metastable: recovery.metastable(),
            events,
            windows,
            series: self.series,
            graph: Default::default(),
        };
        (metrics, Latencies { all: self.latency_ns, ok: self.latency_ok_ns })
    }
}

/// Quantile `p` of a latency histogram in seconds (`None` when it is empty). A quantile is the
/// top of its histogram bucket (within 0.1 %), which can lie above the exact maximum: no
/// quantile exceeds the maximum, so it is clamped there.
pub(crate) fn quantile_s(h: &Histogram<u64>, max_ns: u64, p: f64) -> Option<f64> {
    (!h.is_empty()).then(|| h.value_at_quantile(p).min(max_ns) as f64 / NS_PER_S)
}

/// The 0.5, 0.99 and 0.999 quantiles of `h`, as [`quantile_s`] gives each, from one walk over
/// the histogram's buckets (`value_at_quantiles`: the same values as three separate walks,
/// which cost a run's close a third of its instructions on short runs, benches/README.md).
pub(crate) fn quantiles_s(h: &Histogram<u64>, max_ns: u64) -> Option<[f64; 3]> {
    if h.is_empty() {
        return None;
    }
    let mut out = [0.0; 3];
    for (slot, v) in out.iter_mut().zip(h.value_at_quantiles([0.5, 0.99, 0.999])) {
        *slot = v.min(max_ns) as f64 / NS_PER_S;
    }
    Some(out)
}

/// A new, empty latency histogram: 3 significant digits (quantiles within 0.1 %),
/// auto-resizing to cover nanoseconds to years.
pub fn latency_histogram() -> Histogram<u64> {
    Histogram::new(3).expect("3 significant figures is a valid precision")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recorder(track_recovery: bool) -> RunRecorder {
        RunRecorder::new(track_recovery, TimeSeries::none(), Latencies::new(), &[])
    }

    impl RunRecorder {
        /// [`RunRecorder::finish`]'s metrics.
        fn metrics(self, events: u64, faults: Option<FaultSpan>, horizon: Instant) -> RunMetrics {
            self.finish(events, faults, horizon).0
        }
    }

    const S: u64 = 1_000_000_000;

    fn t(ns: u64) -> Instant {
        Instant::from_ns(ns)
    }

    #[test]
    fn counts_and_rates() {
        let mut r = recorder(false);
        for i in 0..4 {
            r.op_started::<false>(t(i));
            r.call_sent(t(i));
        }
        r.call_sent(t(S + 1));
        r.op_succeeded::<false>(t(0), 2, t(2 * S));
        r.op_succeeded::<false>(t(1), 1, t(S));
        r.op_failed(FailReason::Exhausted, t(2), 1, t(3 * S));
        r.unfinished(t(3), 1, t(10 * S));
        r.side_effect(1, t(0));
        r.side_effect(2, t(0));
        r.side_effect(3, t(0));
        let m = r.metrics(99, None, t(10 * S));
        assert_eq!((m.ops, m.succeeded, m.failed), (4, 2, 2));
        assert_eq!(m.failed_by[FailReason::Exhausted as usize], 1);
        assert_eq!(m.failed_by[FailReason::Unfinished as usize], 1);
        assert_eq!(m.calls, 5);
        assert_eq!(m.amplification(), 1.25);
        assert_eq!(m.success_rate(), 0.5);
        // Calls at 0, 1, 2, 3 ns and 1 s + 1 ns: the window [0, 1 s) holds the first four.
        assert_eq!(m.peak_offered_rps, 4);
        assert_eq!(m.duplicates, 2);
        assert_eq!(m.applied, 1);
        assert_eq!(m.completion_time_s, 10.0);
        assert_eq!(m.recovery_time_s, Some(0.0));
        assert_eq!(m.metastable, Some(false));
        // Latency of the three ended operations: 2 s, 1 s - 1 ns, 3 s - 2 ns. The maximum is
        // exact; the median is within the histogram's 0.1 %.
        assert_eq!(m.latency_max_s, (3 * S - 2) as f64 / 1e9);
        assert!((m.latency_p50_s - 2.0).abs() < 0.002);
    }

    /// The exact latency mean and minimum, the queue's wait and share, and the level integral
    /// over the makespan.
    #[test]
    fn means_waits_and_the_level_integral() {
        let mut r = recorder(false);
        // Two requests: one started at once at 0, one queued at 1 s and started at 3 s.
        r.op_started::<false>(t(0));
        r.accepted(t(0), false);
        r.service_started(Span::ZERO);
        r.levels(t(0), 1, 0);
        r.op_started::<false>(t(S));
        r.accepted(t(S), true);
        r.levels(t(S), 1, 1);
        r.op_succeeded::<false>(t(0), 1, t(3 * S));
        r.service_started(Span::from_secs(2));
        r.levels(t(3 * S), 1, 0);
        r.op_succeeded::<false>(t(S), 1, t(4 * S));
        r.levels(t(4 * S), 0, 0);
        // Work after the last operation ended is not in the makespan's integral.
        r.levels(t(5 * S), 1, 0);
        r.levels(t(9 * S), 0, 0);
        let m = r.metrics(0, None, t(10 * S));
        assert_eq!((m.latency_min_s, m.latency_mean_s, m.latency_max_s), (3.0, 3.0, 3.0));
        assert_eq!(m.wait_mean_s, 1.0, "waits 0 and 2 s");
        assert_eq!(m.queued_fraction, 0.5);
        // 1 request over [0, 1), 2 over [1, 3), 1 over [3, 4): 6 request-seconds in 4 s.
        assert_eq!(m.completion_time_s, 4.0);
        assert_eq!(m.in_server_mean, 1.5);
        // Nothing ended: zeros, not NaN.
        let m = recorder(false).metrics(0, None, t(S));
        assert_eq!(
            (m.latency_min_s, m.latency_mean_s, m.wait_mean_s, m.queued_fraction, m.in_server_mean),
            (0.0, 0.0, 0.0, 0.0, 0.0)
        );
    }

    #[test]
    fn the_maximum_latency_is_exact() {
        let mut r = recorder(false);
        r.op_started::<false>(t(0));
        r.op_succeeded::<false>(t(0), 1, t(11 * S));
        let m = r.metrics(0, None, t(20 * S));
        assert_eq!(m.latency_max_s, 11.0);
        // The histogram's bucket top is 11.0059 s; no percentile is above the maximum.
        assert_eq!((m.latency_p50_s, m.latency_p99_s), (11.0, 11.0));
    }

    #[test]
    fn peak_rps_is_over_any_one_second_window() {
        let mut r = recorder(false);
        // 600 calls in [0.5 s, 1 s) and 600 in [1 s, 1.5 s): no whole second sees more than
        // 600, but the window [0.5 s, 1.5 s) sees all 1200.
        for i in 0..1200u64 {
            r.call_sent(t(S / 2 + i * (S / 1200)));
        }
        assert_eq!(r.metrics(0, None, t(2 * S)).peak_offered_rps, 1200);
        let mut r = recorder(false);
        // One call every 10 ms for 10 s: 100 per second in any window.
        for i in 0..1000u64 {
            r.call_sent(t(i * 10_000_000));
        }
        assert_eq!(r.metrics(0, None, t(20 * S)).peak_offered_rps, 100);
        // A burst, a long gap, a burst: the window forgets the first one.
        let mut r = recorder(false);
        for i in 0..50u64 {
            r.call_sent(t(i));
        }
        for i in 0..50u64 {
            r.call_sent(t(3600 * S + i));
        }
        r.call_sent(t(3600 * S + S / 2));
        assert_eq!(r.metrics(0, None, t(7200 * S)).peak_offered_rps, 51);
    }

    /// Successful operations' latencies on their own; windows count the operations started
    /// in `[start, end)`, their successes and the server arrivals in it.
    #[test]
    fn successes_latencies_and_windows() {
        let windows = [Window { start: t(S), end: t(3 * S) }, Window { start: t(9 * S), end: t(10 * S) }];
        let mut r = RunRecorder::new(false, TimeSeries::none(), Latencies::new(), &windows);
        // Started at 0 s (outside), 1 s (inside, succeeds after 2 s), 2 s (inside, fails after
        // 5 s), 3 s (outside: the end is excluded, succeeds after 4 s).
        for s in 0..4 {
            r.op_started::<false>(t(s * S));
        }
        for at in [S - 1, S, 3 * S - 1, 3 * S] {
            r.server_call::<false>(t(at));
        }
        r.op_succeeded::<false>(t(0), 1, t(S / 2));
        r.op_succeeded::<false>(t(S), 1, t(3 * S));
        r.op_failed(FailReason::Exhausted, t(2 * S), 1, t(7 * S));
        r.op_succeeded::<false>(t(3 * S), 1, t(7 * S));
        let m = r.metrics(0, None, t(20 * S));
        assert_eq!(m.server_calls, 4);
        assert_eq!(m.server_amplification(), 1.0);
        // All latencies: 0.5, 2, 5, 4 s; the successes': 0.5, 2, 4 s.
        assert_eq!((m.latency_p99_s, m.latency_ok_p99_s), (5.0, Some(4.0)));
        assert!((m.latency_ok_p50_s.unwrap() - 2.0).abs() < 0.002);
        let w = &m.windows[0];
        assert_eq!((w.ops, w.succeeded, w.server_calls), (2, 1, 2));
        assert_eq!((w.success_rate(), w.server_amplification()), (Some(0.5), Some(1.0)));
        assert_eq!(w.latency_ok_p99_s, Some(2.0));
        let empty = &m.windows[1];
        assert_eq!(
            (empty.ops, empty.success_rate(), empty.server_amplification(), empty.latency_ok_p99_s),
            (0, None, None, None)
        );
        // Nothing succeeded: no successful latency, rather than 0.
        let mut r = recorder(false);
        r.op_started::<false>(t(0));
        r.op_failed(FailReason::Exhausted, t(0), 1, t(S));
        let m = r.metrics(0, None, t(2 * S));
        assert_eq!((m.latency_ok_p50_s, m.latency_ok_p99_s, m.latency_p99_s), (None, None, 1.0));
        assert!(m.windows.is_empty());
    }

    /// The recorder feeds the recovery analysis what happened to each second's operations:
    /// calls and latency by start second, pending operations up to the horizon.
    #[test]
    fn buckets_by_start_second_feed_the_recovery_analysis() {
        let run = |sick_from: u64, sick_to: u64| {
            let mut r = recorder(true);
            for s in 0..40u64 {
                for i in 0..10 {
                    let at = s * S + i * (S / 10);
                    r.op_started::<false>(t(at));
                    if (sick_from..sick_to).contains(&s) {
                        // Three attempts and 2 s each while sick.
                        r.op_succeeded::<false>(t(at), 3, t(at + 2 * S));
                    } else {
                        r.op_succeeded::<false>(t(at), 1, t(at + S / 10));
                    }
                }
            }
            r.metrics(0, Some(FaultSpan { first_start: t(10 * S), last_end: t(15 * S) }), t(60 * S))
        };
        let m = run(10, 20);
        assert_eq!((m.recovery_time_s, m.metastable), (Some(5.0), Some(false)));
        let m = run(10, 40);
        assert_eq!((m.recovery_time_s, m.metastable), (None, Some(true)));
        // Operations still pending at the horizon make their bucket unhealthy.
        let mut r = recorder(true);
        for s in 0..40u64 {
            r.op_started::<false>(t(s * S));
            if !(10..16).contains(&s) {
                r.op_succeeded::<false>(t(s * S), 1, t(s * S + 1));
            } else {
                r.unfinished(t(s * S), 1, t(60 * S));
            }
        }
        let m = r.metrics(0, Some(FaultSpan { first_start: t(10 * S), last_end: t(12 * S) }), t(60 * S));
        assert_eq!((m.recovery_time_s, m.metastable), (Some(4.0), Some(false)));
    }
}
