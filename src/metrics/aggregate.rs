//! Aggregation across the runs of one (point, strategy) cell, one run at a time, so that no
//! run's result is kept once it is added in: the `summary.csv` statistics of every metric and
//! the `timeseries.csv` statistics of every series and bucket.
//!
//! Runs are added in run order, whatever the thread that simulated them, so the floating-point
//! sums (and so the files) are the same on any number of threads.

use super::RunMetrics;
use super::catalogue;
use super::series::{GAUGES, SERIES, TimeSeries};
use crate::stats::{Running, Stat};

/// The summary statistics of one cell, run by run.
#[derive(Clone, Debug, Default)]
pub struct CellSummary {
    runs: u32,
    /// One per column of [`catalogue::columns`] (sized by the first run).
    metrics: Vec<Running>,
}

impl CellSummary {
    /// Adds the next run (a metric without a value in this run is left out of its statistic).
    pub fn push(&mut self, m: &RunMetrics) {
        self.runs += 1;
        for (i, v) in catalogue::values(m).enumerate() {
            if i == self.metrics.len() {
                self.metrics.push(Running::default());
            }
            if let Some(x) = v.as_f64() {
                self.metrics[i].push(x);
            }
        }
    }

    pub fn runs(&self) -> u32 {
        self.runs
    }

    /// One statistic per metric, in [`catalogue::columns`] order.
    pub fn stats(&self) -> impl Iterator<Item = Stat> + '_ {
        self.metrics.iter().map(Running::stat)
    }
}

/// The time-series statistics of one cell: for every bucket and series, mean and sd over runs.
#[derive(Clone, Debug, Default)]
pub struct CellSeries {
    buckets: Vec<[Running; SERIES.len()]>,
    /// The gauges' statistics, bucket by bucket (a run that did not set a gauge is left out
    /// of its statistic).
    gauges: Vec<[Running; GAUGES.len()]>,
    /// The replica columns' statistics, bucket by bucket (empty without replicas).
    replicas: Vec<Vec<Running>>,
    /// One past the last bucket with a nonzero value in any run: trailing buckets where
    /// nothing happened in any run are left out of the file.
    used: usize,
    width_s: f64,
}

impl CellSeries {
    pub fn push(&mut self, s: &TimeSeries) {
        if self.buckets.len() < s.len() {
            self.buckets.resize(s.len(), [Running::default(); SERIES.len()]);
            self.gauges.resize(s.len(), [Running::default(); GAUGES.len()]);
        }
        self.width_s = s.width().as_secs_f64();
        for i in 0..s.len() {
            let row = s.row(i);
            let mut any = false;
            for (acc, v) in self.buckets[i].iter_mut().zip(row) {
                if let Some(x) = v {
                    acc.push(x);
                    any |= x != 0.0;
                }
            }
            if any {
                self.used = self.used.max(i + 1);
            }
            // A gauge alone does not make a bucket used: trailing buckets stay out.
            for (acc, v) in self.gauges[i].iter_mut().zip(s.gauge_row(i)) {
                if let Some(x) = v {
                    acc.push(x);
                }
            }
            if let Some(row) = s.replica_row(i) {
                if self.replicas.len() < s.len() {
                    self.replicas.resize(s.len(), Vec::new());
                }
                let acc = &mut self.replicas[i];
                if acc.len() < row.len() {
                    acc.resize(row.len(), Running::default());
                }
                for (acc, x) in acc.iter_mut().zip(row) {
                    if let Some(x) = x {
                        acc.push(x);
                    }
                }
            }
        }
    }

    /// `(bucket start in s, one statistic per series, then one per gauge, then one per
    /// replica column the runs had)` for every bucket up to the last used.
    pub fn rows(&self) -> impl Iterator<Item = (f64, Vec<Stat>)> + '_ {
        self.buckets[..self.used].iter().zip(&self.gauges).enumerate().map(|(i, (b, g))| {
            let replicas = self.replicas.get(i).map_or(&[][..], |r| &r[..]);
            (i as f64 * self.width_s, b.iter().chain(g).chain(replicas).map(Running::stat).collect())
        })
    }
}
