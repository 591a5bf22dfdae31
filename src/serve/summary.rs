//! `summary.csv` and `timeseries.csv` of a `serve` session: the metrics of `retrysim run`
//! (DESIGN §5) that a server can see, counted from the rows of the request log. An operation
//! is an operation id (`Idempotency-Key`, `X-Idempotency-Key` or `X-Op-Id`); a request without
//! one is an operation of its own. A server does not see what the client finally made of an
//! operation, so an operation "succeeded" when some attempt of it was answered 2xx.

use super::log::{Fate, Row, secs};
use crate::results::{WriteError, write_atomically};
use std::collections::HashMap;
use std::path::Path;

/// summary.csv's columns, in order.
pub const SUMMARY_COLUMNS: [&str; 16] = [
    "duration_s",
    "server_calls",
    "bad_requests",
    "ops",
    "server_amplification",
    "succeeded",
    "success_rate",
    "applied",
    "duplicates",
    "answered_2xx",
    "answered_4xx",
    "answered_5xx",
    "unanswered",
    "wait_mean_s",
    "peak_offered_rps",
    "idempotency_keys_peak",
];

/// timeseries.csv's columns: per bucket of `[output] bucket`, by arrival time.
pub const SERIES_COLUMNS: [&str; 6] = ["t_s", "calls", "succeeded", "errors", "unanswered", "effects"];

#[derive(Clone, Copy, Debug, Default)]
struct OpTally {
    effects: u32,
    succeeded: bool,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Bucket {
    calls: u64,
    succeeded: u64,
    errors: u64,
    unanswered: u64,
    effects: u64,
}

/// The counts so far.
#[derive(Debug)]
pub struct Tally {
    bucket_ns: u64,
    calls: u64,
    bad_requests: u64,
    /// Requests without an operation id: each its own operation.
    anonymous_ops: u64,
    anonymous_succeeded: u64,
    anonymous_applied: u64,
    ops: HashMap<String, OpTally>,
    by_class: [u64; 3],
    unanswered: u64,
    started: u64,
    waited_s: f64,
    /// Calls per whole second since the start.
    per_second: Vec<u64>,
    series: Vec<Bucket>,
}

/// The summary's values, in [`SUMMARY_COLUMNS`] order.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub duration_s: f64,
    pub server_calls: u64,
    pub bad_requests: u64,
    pub ops: u64,
    pub server_amplification: f64,
    pub succeeded: u64,
    pub success_rate: f64,
    pub applied: u64,
    pub duplicates: u64,
    pub answered: [u64; 3],
    pub unanswered: u64,
    pub wait_mean_s: f64,
    pub peak_offered_rps: u64,
    pub idempotency_keys_peak: u64,
}

impl Tally {
    /// Counts with timeseries.csv buckets `bucket_ns` wide.
    pub fn new(bucket_ns: u64) -> Tally {
        Tally {
            bucket_ns: bucket_ns.max(1),
            calls: 0,
            bad_requests: 0,
            anonymous_ops: 0,
            anonymous_succeeded: 0,
            anonymous_applied: 0,
            ops: HashMap::new(),
            by_class: [0; 3],
            unanswered: 0,
            started: 0,
            waited_s: 0.0,
            per_second: Vec::new(),
            series: Vec::new(),
        }
    }

    /// Counts a finished request.
    pub fn add(&mut self, r: &Row) {
        if r.fate == Some(Fate::BadRequest) {
            self.bad_requests += 1;
            return;
        }
        self.calls += 1;
        let ok = r.status.is_some_and(|s| (200..300).contains(&s));
        match r.status {
            Some(200..=299) => self.by_class[0] += 1,
            Some(400..=499) => self.by_class[1] += 1,
            Some(500..=599) => self.by_class[2] += 1,
            Some(_) => {}
            None => self.unanswered += 1,
        }
        if matches!(r.fate, Some(Fate::Served)) {
            self.started += 1;
            self.waited_s += r.queue_wait_s;
        }
        match &r.op_id {
            Some(id) => {
                let op = self.ops.entry(id.clone()).or_default();
                op.effects += u32::from(r.effect);
                op.succeeded |= ok;
            }
            None => {
                self.anonymous_ops += 1;
                self.anonymous_succeeded += u64::from(ok);
                self.anonymous_applied += u64::from(r.effect);
            }
        }
        let second = r.arrival_s.max(0.0) as usize;
        grow(&mut self.per_second, second)[second] += 1;
        let b = ((r.arrival_s.max(0.0) * 1e9) as u64 / self.bucket_ns) as usize;
        let bucket = &mut grow(&mut self.series, b)[b];
        bucket.calls += 1;
        match r.status {
            Some(_) if ok => bucket.succeeded += 1,
            Some(_) => bucket.errors += 1,
            None => bucket.unanswered += 1,
        }
        bucket.effects += u64::from(r.effect);
    }

    /// The summary of a session that lasted `duration_s`, whose dedup store held at most
    /// `keys_peak` keys.
    pub fn summary(&self, duration_s: f64, keys_peak: u64) -> Summary {
        let ops = self.ops.len() as u64 + self.anonymous_ops;
        let succeeded = self.ops.values().filter(|o| o.succeeded).count() as u64 + self.anonymous_succeeded;
        let applied = self.ops.values().filter(|o| o.effects > 0).count() as u64 + self.anonymous_applied;
        let duplicates = self.ops.values().map(|o| u64::from(o.effects.saturating_sub(1))).sum();
        let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        Summary {
            duration_s,
            server_calls: self.calls,
            bad_requests: self.bad_requests,
            ops,
            server_amplification: ratio(self.calls, ops),
            succeeded,
            success_rate: ratio(succeeded, ops),
            applied,
            duplicates,
            answered: self.by_class,
            unanswered: self.unanswered,
            wait_mean_s: if self.started == 0 { 0.0 } else { self.waited_s / self.started as f64 },
            peak_offered_rps: self.per_second.iter().copied().max().unwrap_or(0),
            idempotency_keys_peak: keys_peak,
        }
    }

    /// Writes `dir/summary.csv` (the summary's one row) and `dir/timeseries.csv`.
    pub fn write(&self, dir: &Path, s: &Summary) -> Result<(), WriteError> {
        let values = [
            secs(s.duration_s),
            s.server_calls.to_string(),
            s.bad_requests.to_string(),
            s.ops.to_string(),
            format!("{:.6}", s.server_amplification),
            s.succeeded.to_string(),
            format!("{:.6}", s.success_rate),
            s.applied.to_string(),
            s.duplicates.to_string(),
            s.answered[0].to_string(),
            s.answered[1].to_string(),
            s.answered[2].to_string(),
            s.unanswered.to_string(),
            secs(s.wait_mean_s),
            s.peak_offered_rps.to_string(),
            s.idempotency_keys_peak.to_string(),
        ];
        let summary = format!("{}\n{}\n", SUMMARY_COLUMNS.join(","), values.join(","));
        write_atomically(&dir.join("summary.csv"), summary.as_bytes())?;
        let mut series = SERIES_COLUMNS.join(",") + "\n";
        for (i, b) in self.series.iter().enumerate() {
            let t = (i as u64 * self.bucket_ns) as f64 / 1e9;
            series += &format!(
                "{},{},{},{},{},{}\n",
                secs(t),
                b.calls,
                b.succeeded,
                b.errors,
                b.unanswered,
                b.effects
            );
        }
        write_atomically(&dir.join("timeseries.csv"), series.as_bytes())
    }
}

/// `v`, grown with defaults so that `v[i]` exists.
fn grow<T: Default + Clone>(v: &mut Vec<T>, i: usize) -> &mut Vec<T> {
    if v.len() <= i {
        v.resize(i + 1, T::default());
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(arrival_s: f64, op: Option<&str>, status: Option<u16>, effect: bool) -> Row {
        Row {
            arrival_s,
            op_id: op.map(str::to_owned),
            status,
            effect,
            fate: Some(if effect { Fate::Served } else { Fate::Refused }),
            ..Row::default()
        }
    }

    #[test]
    fn operations_group_their_attempts_and_count_extra_effects_as_duplicates() {
        let mut t = Tally::new(1_000_000_000);
        t.add(&row(0.1, Some("a"), Some(503), false));
        t.add(&row(0.2, Some("a"), Some(504), true));
        t.add(&row(1.5, Some("a"), Some(200), true));
        t.add(&row(1.6, Some("b"), Some(429), false));
        t.add(&row(1.7, None, Some(200), true));
        t.add(&row(1.8, None, None, false));
        t.add(&Row { fate: Some(Fate::BadRequest), status: Some(400), ..Row::default() });
        let s = t.summary(2.0, 1);
        assert_eq!(
            (s.server_calls, s.bad_requests, s.ops, s.succeeded, s.applied, s.duplicates),
            (6, 1, 4, 2, 2, 1)
        );
        assert_eq!((s.answered, s.unanswered, s.peak_offered_rps), ([2, 1, 2], 1, 4));
        assert_eq!((s.server_amplification, s.success_rate), (1.5, 0.5));
        assert_eq!(t.series.len(), 2);
        assert_eq!(t.series[1], Bucket { calls: 4, succeeded: 2, errors: 1, unanswered: 1, effects: 2 });
    }
}
