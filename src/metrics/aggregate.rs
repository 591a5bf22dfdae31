//! Aggregation across the runs of one (point, strategy) cell, one run at a time, so that no
//! run's result is kept once it is added in: the `summary.csv` statistics of every metric and
//! the `timeseries.csv` statistics of every series and bucket.
//!
//! Runs are added in run order, whatever the thread that simulated them, so the floating-point
//! sums (and so the files) are the same on any number of threads.

use super::RunMetrics;
use super::series::{SERIES, TimeSeries};
use super::summary::{METRICS, Stat};

/// Mean and sample standard deviation of a stream of values: the mean as sum / n (in the order
/// the values came), the variance by Welford's update (numerically stable in one pass).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Running {
    n: u64,
    sum: f64,
    mean: f64,
    m2: f64,
}

impl Running {
    #[inline]
    pub fn push(&mut self, x: f64) {
        self.n += 1;
        self.sum += x;
        let delta = x - self.mean;
        self.mean += delta / self.n as f64;
        self.m2 += delta * (x - self.mean);
    }

    /// How many values were pushed.
    pub fn count(&self) -> u64 {
        self.n
    }

    /// Mean and sample sd (n - 1; 0 for one value); `None` without values.
    pub fn stat(&self) -> Stat {
        if self.n == 0 {
            return Stat { mean: None, sd: None };
        }
        let sd = if self.n < 2 { 0.0 } else { (self.m2.max(0.0) / (self.n - 1) as f64).sqrt() };
        Stat { mean: Some(self.sum / self.n as f64), sd: Some(sd) }
    }
}

/// The summary statistics of one cell, run by run.
#[derive(Clone, Debug)]
pub struct CellSummary {
    runs: u32,
    metrics: Vec<Running>,
}

impl Default for CellSummary {
    fn default() -> Self {
        CellSummary { runs: 0, metrics: vec![Running::default(); METRICS.len()] }
    }
}

impl CellSummary {
    /// Adds the next run (a metric without a value in this run is left out of its statistic).
    pub fn push(&mut self, m: &RunMetrics) {
        self.runs += 1;
        for (acc, metric) in self.metrics.iter_mut().zip(METRICS) {
            if let Some(x) = (metric.read)(m).as_f64() {
                acc.push(x);
            }
        }
    }

    pub fn runs(&self) -> u32 {
        self.runs
    }

    /// One statistic per metric, in [`METRICS`] order.
    pub fn stats(&self) -> impl Iterator<Item = Stat> + '_ {
        self.metrics.iter().map(Running::stat)
    }
}

/// The time-series statistics of one cell: for every bucket and series, mean and sd over runs.
#[derive(Clone, Debug, Default)]
pub struct CellSeries {
    buckets: Vec<[Running; SERIES.len()]>,
    /// One past the last bucket with a nonzero value in any run: trailing buckets where
    /// nothing happened in any run are left out of the file.
    used: usize,
    width_s: f64,
}

impl CellSeries {
    pub fn push(&mut self, s: &TimeSeries) {
        if self.buckets.len() < s.len() {
            self.buckets.resize(s.len(), [Running::default(); SERIES.len()]);
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
        }
    }

    /// `(bucket start in s, one statistic per series)` for every bucket up to the last used.
    pub fn rows(&self) -> impl Iterator<Item = (f64, Vec<Stat>)> + '_ {
        self.buckets[..self.used]
            .iter()
            .enumerate()
            .map(|(i, b)| (i as f64 * self.width_s, b.iter().map(Running::stat).collect()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn running_mean_and_sd_match_two_passes() {
        let xs = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        let mut r = Running::default();
        for x in xs {
            r.push(x);
        }
        let s = r.stat();
        assert_eq!(s.mean, Some(5.0));
        assert!((s.sd.unwrap() - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        let mut one = Running::default();
        one.push(3.0);
        assert_eq!(one.stat(), Stat { mean: Some(3.0), sd: Some(0.0) });
        assert_eq!(Running::default().stat(), Stat { mean: None, sd: None });
    }

    #[test]
    fn large_offsets_do_not_lose_the_variance() {
        // A naive sum-of-squares formula loses every digit here; Welford keeps them.
        let mut r = Running::default();
        for x in [1e9 + 4.0, 1e9 + 7.0, 1e9 + 13.0, 1e9 + 16.0] {
            r.push(x);
        }
        assert!((r.stat().sd.unwrap() - 30f64.sqrt()).abs() < 1e-6);
    }
}
