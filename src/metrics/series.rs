//! What happened over simulated time in one run, bucketed (`[output] bucket`, default 1 s):
//! the columns of `timeseries.csv` (DESIGN §6). This is the one list of series; the writer,
//! the aggregation across runs and the reports all read [`SERIES`], and docs/outputs.md is
//! generated from it and [`SERIES_MEANING`].

use super::replica_series::ReplicaSeries;
use crate::engine::{Instant, Span};

/// The series, in CSV order.
pub const SERIES: [&str; 11] = [
    "offered",
    "server_calls",
    "accepted",
    "rejected",
    "successes",
    "failures",
    "timeouts",
    "in_service",
    "queued",
    "duplicates",
    "success_rate",
];

/// Unit and meaning of each series, in [`SERIES`]'s order (Markdown, for docs/outputs.md),
/// with the summary metric its total over buckets equals, where there is one.
pub const SERIES_MEANING: [(&str, &str); 11] = [
    ("attempts per bucket", "attempts sent by clients (total over buckets: `calls`)"),
    (
        "requests per bucket",
        "requests that reached the server, after every gateway layer's retries (above `offered` behind a retrying gateway; below it while requests are lost or in flight) (total over buckets: `server_calls`)",
    ),
    (
        "requests per bucket",
        "requests the server took in: started, queued, answered from the dedup store (a repeat of a finished idempotency key, answered its stored result without the work), or parked on a key in progress (`on_in_progress = \"wait\"`, answered later); an `after_effect` error counts as accepted (the work is done)",
    ),
    (
        "requests per bucket",
        "requests the server turned away without the work: fault answers and silence, the rate limiter's 429, the dedup store's 409 (a key in progress), a full queue (total over buckets: `server_calls - accepted`)",
    ),
    ("operations per bucket", "operations that ended in success (total: `succeeded`)"),
    (
        "operations per bucket",
        "operations that ended in failure, those pending at the horizon in the last bucket (total: `failed`); dead-lettered operations are counted in neither this nor `successes`",
    ),
    ("attempts per bucket", "attempts whose client stopped waiting before an answer"),
    ("requests", "requests being served at the bucket's end"),
    ("requests", "requests waiting at the bucket's end"),
    ("executions per bucket", "side-effect executions beyond an operation's first (total: `duplicates`)"),
    ("fraction of operations", "success rate of the operations *started* in the bucket (empty if none)"),
];

/// Series that appear only in experiments that use what they measure (after [`SERIES`], in
/// this order): the adaptive concurrency limits in force. A plain experiment's timeseries.csv
/// keeps its columns.
pub const GAUGES: [&str; 2] = ["client_limit", "server_limit"];

/// Unit and meaning of each gauge, in [`GAUGES`]'s order.
pub const GAUGE_MEANING: [(&str, &str); 2] = [
    (
        "requests",
        "the client-side adaptive concurrency limit (`limit`) at the bucket's end: the shared limiter's, or the sum of the client processes' own; a column only when a strategy of the experiment has a `limit`, empty for strategies without one",
    ),
    (
        "requests",
        "the server's adaptive concurrency limit (`[server.adaptive_concurrency]`, Envoy's gradient controller) at the bucket's end; a column only when a point of the experiment has one, empty where it has none",
    ),
];

/// Index of each gauge in [`GAUGES`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum Gauge {
    ClientLimit = 0,
    ServerLimit = 1,
}

/// Index of each count series in a bucket's array.
#[derive(Clone, Copy, Debug)]
#[repr(usize)]
pub enum Count {
    Offered = 0,
    ServerCalls = 1,
    Accepted = 2,
    Rejected = 3,
    Successes = 4,
    Failures = 5,
    Timeouts = 6,
    InService = 7,
    Queued = 8,
    Duplicates = 9,
}

const COUNTS: usize = 10;

/// One bucket of one run.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Bucket {
    counts: [u64; COUNTS],
    /// Operations started in the bucket, and how many of them succeeded.
    started: u64,
    started_ok: u64,
    /// Each gauge's latest value set in the bucket.
    gauges: [Option<f64>; GAUGES.len()],
}

/// One run's series.
#[derive(Clone, Debug, PartialEq)]
pub struct TimeSeries {
    width: Span,
    buckets: Vec<Bucket>,
    /// The current bucket's end, so that recording at monotone times is one comparison.
    current: usize,
    current_end: Instant,
    /// Levels (in service, queued) since the last change, carried into buckets that end
    /// before the next change.
    levels: (u64, u64),
    levels_from: usize,
    /// Which gauges were set in this run.
    gauges_used: [bool; GAUGES.len()],
    /// The replicas' own series, in a run with `replicas` > 1.
    replicas: Option<Box<ReplicaSeries>>,
    /// The call graph's services that autoscale or deploy, each its replica counts (no
    /// per-replica columns), in file order.
    services: Vec<ReplicaSeries>,
}

impl TimeSeries {
    /// Buckets of `width` covering `[0, horizon]` (the horizon instant is in the last one).
    pub fn new(width: Span, horizon: Instant) -> TimeSeries {
        let n = horizon.bucket(width) + 1;
        TimeSeries {
            width,
            buckets: vec![Bucket::default(); n],
            current: 0,
            current_end: Instant::ZERO + width,
            levels: (0, 0),
            levels_from: 0,
            gauges_used: [false; GAUGES.len()],
            replicas: None,
            services: Vec::new(),
        }
    }

    /// An empty series (no buckets), for runs that keep none.
    pub fn none() -> TimeSeries {
        TimeSeries {
            width: Span::from_secs(1),
            buckets: Vec::new(),
            current: 0,
            current_end: Instant::NEVER,
            levels: (0, 0),
            levels_from: 0,
            gauges_used: [false; GAUGES.len()],
            replicas: None,
            services: Vec::new(),
        }
    }

    pub fn width(&self) -> Span {
        self.width
    }

    /// Keeps the series of `replicas` replicas too, `up` of them up at the start (a run with
    /// `replicas` > 1).
    pub fn track_replicas(&mut self, replicas: u32, up: u32) {
        self.replicas = Some(Box::new(ReplicaSeries::new(replicas, self.buckets.len(), self.width, up)));
    }

    /// The replicas' series, if this run keeps them.
    #[inline]
    pub fn replicas(&mut self) -> Option<&mut ReplicaSeries> {
        self.replicas.as_deref_mut()
    }

    /// Keeps the replica counts of a service of the call graph too, `up` of its replicas up at
    /// the start; its index among them.
    pub fn track_service(&mut self, up: u32) -> usize {
        self.services.push(ReplicaSeries::new(0, self.buckets.len(), self.width, up));
        self.services.len() - 1
    }

    /// The replica counts of the `i`th service tracked ([`TimeSeries::track_service`]).
    pub fn service(&mut self, i: usize) -> &mut ReplicaSeries {
        &mut self.services[i]
    }

    /// Bucket `i`'s replica columns ([`super::replica_series::columns`]), or the call graph's
    /// services' (`replicas_up@NAME` ..., [`super::replica_series::service_columns`]), if this
    /// run keeps them.
    pub fn replica_row(&self, i: usize) -> Option<Vec<Option<f64>>> {
        if self.replicas.is_none() && !self.services.is_empty() {
            return Some(self.services.iter().flat_map(|s| s.row(i)).collect());
        }
        self.replicas.as_ref().map(|r| r.row(i))
    }

    /// Buckets in the series.
    pub fn len(&self) -> usize {
        self.buckets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buckets.is_empty()
    }

    /// The bucket of `now`, for times that never decrease between calls (the clock).
    #[inline]
    fn at(&mut self, now: Instant) -> Option<&mut Bucket> {
        if now >= self.current_end {
            self.current = now.bucket(self.width);
            self.current_end = Instant::ZERO + self.width * (self.current as u64 + 1);
        }
        self.buckets.get_mut(self.current)
    }

    /// Adds one to series `c` at the current time `now`.
    #[inline]
    pub fn count(&mut self, c: Count, now: Instant) {
        if let Some(b) = self.at(now) {
            b.counts[c as usize] += 1;
        }
    }

    /// An operation that started at `started` ended at `now` (`ok`: in success).
    #[inline]
    pub fn op_ended(&mut self, started: Instant, now: Instant, ok: bool) {
        let c = if ok { Count::Successes } else { Count::Failures };
        self.count(c, now);
        if ok && let Some(b) = self.buckets.get_mut(started.bucket(self.width)) {
            b.started_ok += 1;
        }
    }

    /// An operation started at `now`.
    #[inline]
    pub fn op_started(&mut self, now: Instant) {
        if let Some(b) = self.at(now) {
            b.started += 1;
        }
    }

    /// From `now` on, `in_service` requests are being served and `queued` wait. Buckets that
    /// ended since the last change keep the levels from before it.
    #[inline]
    pub fn levels(&mut self, now: Instant, in_service: u64, queued: u64) {
        if self.buckets.is_empty() {
            return;
        }
        let b = if self.at(now).is_some() { self.current } else { self.buckets.len() - 1 };
        self.fill_levels(b);
        self.levels = (in_service, queued);
    }

    /// Writes the current levels into the buckets `levels_from..upto` (those that ended).
    fn fill_levels(&mut self, upto: usize) {
        for bucket in &mut self.buckets[self.levels_from..upto] {
            bucket.counts[Count::InService as usize] = self.levels.0;
            bucket.counts[Count::Queued as usize] = self.levels.1;
        }
        self.levels_from = self.levels_from.max(upto);
    }

    /// From `now` on, gauge `g` reads `value` (it holds until the next change).
    #[inline]
    pub fn gauge(&mut self, g: Gauge, now: Instant, value: f64) {
        self.gauges_used[g as usize] = true;
        let last = self.buckets.len().saturating_sub(1);
        let i = if self.at(now).is_some() { self.current } else { last };
        if let Some(b) = self.buckets.get_mut(i) {
            b.gauges[g as usize] = Some(value);
        }
    }

    /// Closes the series at the end of the run: the last levels hold to the end.
    ///
    /// Every request that reaches the server is accepted or rejected at that instant (the
    /// queue and OCC models count exactly one of them per arrival), so the server-calls series
    /// is their sum, filled in here rather than counted per arrival on the hot path.
    pub fn finish(&mut self) {
        let n = self.buckets.len();
        self.fill_levels(n);
        if let Some(r) = &mut self.replicas {
            r.finish();
        }
        for s in &mut self.services {
            s.finish();
        }
        // A gauge unchanged through a bucket keeps its value from the bucket before.
        for g in 0..GAUGES.len() {
            let mut value = None;
            for b in &mut self.buckets {
                value = b.gauges[g].or(value);
                b.gauges[g] = value;
            }
        }
        for b in &mut self.buckets {
            b.counts[Count::ServerCalls as usize] =
                b.counts[Count::Accepted as usize] + b.counts[Count::Rejected as usize];
        }
    }

    /// The value of every series in bucket `i`, in [`SERIES`] order (`success_rate` is None
    /// when no operation started in the bucket).
    pub fn row(&self, i: usize) -> [Option<f64>; SERIES.len()] {
        let b = &self.buckets[i];
        let mut row = [None; SERIES.len()];
        for (c, v) in b.counts.iter().enumerate() {
            row[c] = Some(*v as f64);
        }
        row[COUNTS] = (b.started > 0).then(|| b.started_ok as f64 / b.started as f64);
        row
    }

    /// Each gauge's value at the end of bucket `i` (`None`: not set in this run).
    pub fn gauge_row(&self, i: usize) -> [Option<f64>; GAUGES.len()] {
        let mut row = self.buckets[i].gauges;
        for (v, used) in row.iter_mut().zip(self.gauges_used) {
            if !used {
                *v = None;
            }
        }
        row
    }

    /// Operations started in bucket `i` (the denominator of `success_rate`; not a column of
    /// its own).
    pub fn started(&self, i: usize) -> u64 {
        self.buckets[i].started
    }

    /// The sum of count series `c` over all buckets.
    pub fn total(&self, c: Count) -> u64 {
        self.buckets.iter().map(|b| b.counts[c as usize]).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: u64) -> Instant {
        Instant::from_ns(ms * 1_000_000)
    }

    #[test]
    fn counts_land_in_their_bucket() {
        let mut s = TimeSeries::new(Span::from_secs(1), t(3000));
        assert_eq!(s.len(), 4, "[0, 3 s] in 1 s buckets: the horizon is in the fourth");
        s.count(Count::Offered, t(0));
        s.count(Count::Offered, t(999));
        s.count(Count::Offered, t(1000));
        s.count(Count::Offered, t(3000));
        assert_eq!(s.row(0)[0], Some(2.0));
        assert_eq!(s.row(1)[0], Some(1.0));
        assert_eq!(s.row(2)[0], Some(0.0));
        assert_eq!(s.row(3)[0], Some(1.0));
        assert_eq!(s.total(Count::Offered), 4);
    }

    #[test]
    fn success_rate_is_by_start_bucket() {
        let mut s = TimeSeries::new(Span::from_secs(1), t(5000));
        for _ in 0..4 {
            s.op_started(t(100));
        }
        s.op_ended(t(100), t(2500), true);
        s.op_ended(t(100), t(2600), false);
        s.op_ended(t(100), t(2700), true);
        let (ok, fail, rate) = (Count::Successes as usize, Count::Failures as usize, COUNTS);
        assert_eq!(s.row(0)[rate], Some(0.5), "2 of the 4 started in bucket 0 succeeded");
        assert_eq!((s.started(0), s.started(2)), (4, 0));
        assert_eq!(s.row(2)[rate], None, "nothing started in bucket 2");
        assert_eq!((s.row(2)[ok], s.row(2)[fail]), (Some(2.0), Some(1.0)), "ends by end time");
    }

    #[test]
    fn levels_are_taken_at_each_bucket_end() {
        let mut s = TimeSeries::new(Span::from_secs(1), t(4000));
        s.levels(t(200), 3, 1);
        s.levels(t(700), 5, 2);
        // Nothing changes for two seconds: buckets 0 and 1 end with (5, 2).
        s.levels(t(2100), 1, 0);
        s.finish();
        let levels = |i| (s.row(i)[Count::InService as usize], s.row(i)[Count::Queued as usize]);
        assert_eq!(levels(0), (Some(5.0), Some(2.0)));
        assert_eq!(levels(1), (Some(5.0), Some(2.0)));
        assert_eq!(levels(2), (Some(1.0), Some(0.0)));
        assert_eq!(levels(4), (Some(1.0), Some(0.0)), "the last levels hold to the end");
    }

    #[test]
    fn a_gauge_holds_its_last_value_and_is_absent_unless_set() {
        let mut s = TimeSeries::new(Span::from_secs(1), t(4000));
        s.gauge(Gauge::ServerLimit, t(0), 3.0);
        s.gauge(Gauge::ServerLimit, t(1200), 20.0);
        s.gauge(Gauge::ServerLimit, t(1900), 57.0);
        s.finish();
        let server = |i| s.gauge_row(i)[Gauge::ServerLimit as usize];
        assert_eq!(
            [server(0), server(1), server(2), server(4)],
            [Some(3.0), Some(57.0), Some(57.0), Some(57.0)]
        );
        assert_eq!(s.gauge_row(2)[Gauge::ClientLimit as usize], None, "never set");
    }
}
