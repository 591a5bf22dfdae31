//! The replicas over time (DESIGN §6): with `[server] replicas` > 1, timeseries.csv gains
//! `replicas_up` and, per replica `r` (the deploys' surge slots included),
//! `replica{r}_requests`, `replica{r}_queued` and `replica{r}_success_rate`. They are columns
//! only in experiments with replicas, so that every other timeseries.csv keeps its columns.
//! With `[[services]]`, a service that deploys or autoscales has its replica counts instead
//! (`replicas_up@NAME` ..., [`service_columns`]; no per-replica columns).

use crate::engine::{Instant, Span};

/// The columns after `replicas_up`, per replica, in order.
pub const PER_REPLICA: [&str; 3] = ["requests", "queued", "success_rate"];

/// Unit and meaning of `replicas_up`, of the autoscaler's three columns, then of each
/// per-replica column (Markdown, for docs/outputs.md).
pub const REPLICA_MEANING: [(&str, &str, &str); 7] = [
    (
        "replicas_up",
        "replicas",
        "the fewest replicas up (not restarting, not vacant; an ejected replica counts) at any instant of the bucket; a column only with `replicas` > 1",
    ),
    (
        "replicas_desired",
        "replicas",
        "the replicas the autoscaler asks for (starting or ready) at the bucket's end; a column only with `autoscale`",
    ),
    (
        "replicas_ready",
        "replicas",
        "the replicas up (ready, taking requests) at the bucket's end; a column only with `autoscale`",
    ),
    (
        "utilization",
        "fraction",
        "busy workers over the workers of the replicas up, averaged over the bucket (what the autoscaler measures, over its sync period); a column only with `autoscale`",
    ),
    (
        "replica{r}_requests",
        "requests per bucket",
        "requests the balancer sent to replica r (numbered from 0; a deploy's surge replicas come after the others); a column per replica only with `replicas` > 1",
    ),
    ("replica{r}_queued", "requests", "requests waiting at replica r at the bucket's end"),
    (
        "replica{r}_success_rate",
        "fraction of answers",
        "the share of replica r's answers in the bucket that were successes (a connection reset by its restart is an answer that failed; empty if it answered none)",
    ),
];

/// What a call graph service's replica counts ([`service_columns`]) are, for docs/outputs.md.
pub const SERVICE_MEANING: &str = "with [[services]], in place of the columns above: for each service NAME with `replicas` > 1 that deploys or autoscales, in file order, its replicas' count as the column without `@NAME` says (`replicas_up@NAME`; the autoscaler's three only with its `autoscale`; a worker waiting for the service's downstream calls counts as busy); a point without them leaves them empty";

/// The autoscaler's columns in [`REPLICA_MEANING`], after `replicas_up`.
pub const AUTOSCALED: usize = 3;

/// The column names for `replicas` replicas: `replicas_up`, the autoscaler's if `autoscale`,
/// then each replica's.
pub fn columns(replicas: u32, autoscale: bool) -> Vec<String> {
    let mut c = vec![REPLICA_MEANING[0].0.to_owned()];
    if autoscale {
        c.extend(REPLICA_MEANING[1..=AUTOSCALED].iter().map(|m| m.0.to_owned()));
    }
    for r in 0..replicas {
        c.extend(PER_REPLICA.iter().map(|k| format!("replica{r}_{k}")));
    }
    c
}

/// The replica counts of a service `name` of the call graph that autoscales or deploys:
/// `replicas_up@NAME`, then, with `autoscale`, the autoscaler's three columns, each `@NAME`
/// (the meanings of [`REPLICA_MEANING`], for that service).
pub fn service_columns(name: &str, autoscale: bool) -> Vec<String> {
    let n = if autoscale { 1 + AUTOSCALED } else { 1 };
    REPLICA_MEANING[..n].iter().map(|m| format!("{}@{name}", m.0)).collect()
}

/// One run's replica series, bucket by bucket.
#[derive(Clone, Debug, PartialEq)]
pub struct ReplicaSeries {
    replicas: usize,
    width: Span,
    /// Per bucket and replica (`bucket * replicas + r`): requests sent, answers, successes,
    /// and the queue at its last change in the bucket.
    sent: Vec<u32>,
    answered: Vec<u32>,
    ok: Vec<u32>,
    queued: Vec<Option<u32>>,
    /// Per bucket: the fewest replicas up for a while in it (a count that lasts no time, as
    /// between changes at one instant, does not count).
    up_min: Vec<Option<u32>>,
    /// Replicas up since `up_since`.
    up: u32,
    up_since: Instant,
    /// With `[server] autoscale`, per bucket: desired and ready replicas, and utilisation.
    autoscale: Option<Vec<[Option<f64>; 3]>>,
}

impl ReplicaSeries {
    /// `buckets` buckets of `width`; `up` replicas up at the start.
    pub fn new(replicas: u32, buckets: usize, width: Span, up: u32) -> ReplicaSeries {
        let n = replicas as usize * buckets;
        let up_min = vec![None; buckets];
        ReplicaSeries {
            replicas: replicas as usize,
            width,
            sent: vec![0; n],
            answered: vec![0; n],
            ok: vec![0; n],
            queued: vec![None; n],
            up_min,
            up,
            up_since: Instant::ZERO,
            autoscale: None,
        }
    }

    /// The cell of replica `r` at `now`, if `now` is before the horizon's bucket ends.
    fn cell(&self, r: u32, now: Instant) -> Option<usize> {
        let i = now.bucket(self.width) * self.replicas + r as usize;
        (i < self.sent.len()).then_some(i)
    }

    pub fn sent(&mut self, r: u32, now: Instant) {
        if let Some(i) = self.cell(r, now) {
            self.sent[i] += 1;
        }
    }

    pub fn answered(&mut self, r: u32, now: Instant, ok: bool) {
        if let Some(i) = self.cell(r, now) {
            self.answered[i] += 1;
            self.ok[i] += u32::from(ok);
        }
    }

    pub fn queued(&mut self, r: u32, now: Instant, queued: usize) {
        if let Some(i) = self.cell(r, now) {
            self.queued[i] = Some(queued as u32);
        }
    }

    /// From `now` on, `up` replicas are up.
    pub fn up(&mut self, now: Instant, up: u32) {
        self.held(now);
        self.up = up;
        self.up_since = now;
    }

    /// The count since `up_since` lasted until `now`: it is a candidate minimum of every
    /// bucket it overlapped for a while.
    fn held(&mut self, now: Instant) {
        if now <= self.up_since {
            return;
        }
        let first = self.up_since.bucket(self.width);
        // Up to the bucket holding the instant before `now`.
        let last =
            Instant::from_ns(now.as_ns() - 1).bucket(self.width).min(self.up_min.len().saturating_sub(1));
        for m in self.up_min.iter_mut().take(last + 1).skip(first) {
            *m = Some(m.map_or(self.up, |m| m.min(self.up)));
        }
    }

    /// Fills the buckets where nothing changed with the values carried from before, and the
    /// last count to the end.
    pub fn finish(&mut self) {
        let end = Instant::ZERO + self.width * self.up_min.len() as u64;
        self.held(end);
        for r in 0..self.replicas {
            let mut q = Some(0);
            for b in 0..self.up_min.len() {
                let i = b * self.replicas + r;
                q = self.queued[i].or(q);
                self.queued[i] = q;
            }
        }
    }

    /// The autoscaler's columns, per bucket (`REPLICA_MEANING[1..=AUTOSCALED]`).
    pub fn autoscaled(&mut self, rows: Vec<[Option<f64>; 3]>) {
        self.autoscale = Some(rows);
    }

    /// Bucket `b`'s values in [`columns`] order (a success rate is `None` without answers).
    pub fn row(&self, b: usize) -> Vec<Option<f64>> {
        let mut row = vec![self.up_min[b].map(f64::from)];
        if let Some(rows) = &self.autoscale {
            row.extend(rows.get(b).copied().unwrap_or([None; 3]));
        }
        for r in 0..self.replicas {
            let i = b * self.replicas + r;
            row.push(Some(f64::from(self.sent[i])));
            row.push(self.queued[i].map(f64::from));
            row.push((self.answered[i] > 0).then(|| f64::from(self.ok[i]) / f64::from(self.answered[i])));
        }
        row
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: u64) -> Instant {
        Instant::from_ns(ms * 1_000_000)
    }

    /// Four replicas, one restarting from 1.2 s to 3.5 s and another from 3.2 s to 3.4 s: the
    /// bucket minimum catches the dip, and buckets without a change keep the count before.
    #[test]
    fn replicas_up_is_the_bucket_minimum_and_holds_between_changes() {
        let mut s = ReplicaSeries::new(4, 7, Span::from_secs(1), 4);
        s.up(t(1200), 3);
        s.up(t(3200), 2);
        s.up(t(3400), 3);
        s.up(t(3500), 4);
        // Back at the first instant of bucket 5: it never has fewer than 4; changes at one
        // instant count only where they end.
        s.up(t(4500), 3);
        s.up(t(5000), 2);
        s.up(t(5000), 3);
        s.up(t(5000), 4);
        s.queued(2, t(500), 7);
        s.sent(2, t(500));
        s.answered(2, t(600), true);
        s.answered(2, t(700), false);
        s.finish();
        let up: Vec<Option<f64>> = (0..7).map(|b| s.row(b)[0]).collect();
        assert_eq!(up, [Some(4.0), Some(3.0), Some(3.0), Some(2.0), Some(3.0), Some(4.0), Some(4.0)]);
        let replica2 = |b: usize| s.row(b)[1 + 3 * 2..1 + 3 * 3].to_vec();
        assert_eq!(replica2(0), [Some(1.0), Some(7.0), Some(0.5)]);
        assert_eq!(replica2(3), [Some(0.0), Some(7.0), None], "the queue holds; no answers");
        assert_eq!(
            columns(2, false),
            [
                "replicas_up",
                "replica0_requests",
                "replica0_queued",
                "replica0_success_rate",
                "replica1_requests",
                "replica1_queued",
                "replica1_success_rate"
            ]
        );
    }
}
