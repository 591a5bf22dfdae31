//! The distribution over the runs of one cell of one per-run metric (a latency percentile, in
//! seconds), read from runs.csv in memory that does not grow with the number of runs.
//!
//! Up to [`EXACT_RUNS`] values are kept as they are, so the charts of cells with that many
//! runs or fewer draw every run. Past that, the values go into an HDR histogram (2 significant
//! digits: each value within 1 % of its recorded bucket, at nanosecond resolution), and the
//! chart draws [`EXACT_RUNS`] evenly spaced quantiles of it. Both are deterministic: the same
//! runs.csv gives the same points.

use hdrhistogram::Histogram;

/// Cells with at most this many runs are drawn run by run; larger ones from as many quantiles.
pub const EXACT_RUNS: usize = 500;

/// Significant digits of the histogram: 1 % resolution, whatever the number of runs.
const SIGNIFICANT_DIGITS: u8 = 2;

/// The largest value the histogram tells apart, in nanoseconds (one day); larger values are
/// recorded as this. Explicit bounds, because a histogram made with `Histogram::new` tracks
/// up to 2 and `saturating_record` clamps to its bound instead of growing.
const HIGHEST_NS: u64 = 86_400 * 1_000_000_000;

/// Values in seconds are recorded as whole nanoseconds.
const NANOS_PER_S: f64 = 1e9;

/// One cell's values of one metric over its runs.
#[derive(Clone, Debug, Default)]
pub struct RunDistribution {
    exact: Vec<f64>,
    sketch: Option<Histogram<u64>>,
}

impl RunDistribution {
    /// Adds one run's value (seconds; a negative or non-finite value counts as 0).
    pub fn push(&mut self, value_s: f64) {
        if self.sketch.is_none() && self.exact.len() < EXACT_RUNS {
            self.exact.push(value_s);
            return;
        }
        let sketch = self.sketch.get_or_insert_with(|| {
            let mut h = Histogram::new_with_bounds(1, HIGHEST_NS, SIGNIFICANT_DIGITS)
                .expect("1 ns .. 1 day at 2 significant digits is a valid histogram");
            for &v in &self.exact {
                h.saturating_record(nanos(v));
            }
            h
        });
        sketch.saturating_record(nanos(value_s));
        self.exact.clear();
    }

    /// Runs with a value.
    pub fn len(&self) -> u64 {
        self.sketch.as_ref().map_or(self.exact.len() as u64, |h| h.len())
    }

    /// Whether no run had a value.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the values were summarised (more than [`EXACT_RUNS`] runs) rather than kept.
    pub fn is_summarised(&self) -> bool {
        self.sketch.is_some()
    }

    /// The values to draw, sorted: every run's when kept, else [`EXACT_RUNS`] quantiles at
    /// `(i + 0.5) / EXACT_RUNS`, so that an empirical CDF through them follows the runs'.
    pub fn plotted(&self) -> Vec<f64> {
        match &self.sketch {
            None => {
                let mut v = self.exact.clone();
                v.sort_by(f64::total_cmp);
                v
            }
            Some(h) => (0..EXACT_RUNS)
                .map(|i| {
                    let q = (i as f64 + 0.5) / EXACT_RUNS as f64;
                    h.value_at_quantile(q) as f64 / NANOS_PER_S
                })
                .collect(),
        }
    }
}

fn nanos(value_s: f64) -> u64 {
    if value_s.is_finite() && value_s > 0.0 { (value_s * NANOS_PER_S).round() as u64 } else { 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_cells_keep_every_value() {
        let mut d = RunDistribution::default();
        for v in [0.3, 0.1, 0.2] {
            d.push(v);
        }
        assert!(!d.is_summarised());
        assert_eq!(d.plotted(), vec![0.1, 0.2, 0.3]);
    }

    #[test]
    fn large_cells_draw_a_bounded_number_of_close_quantiles() {
        let mut d = RunDistribution::default();
        let n = 20 * EXACT_RUNS;
        // 1 ms .. 1 s, spread evenly in rank.
        for i in 0..n {
            d.push(0.001 + 0.999 * ((i * 7919) % n) as f64 / n as f64);
        }
        assert!(d.is_summarised());
        assert_eq!(d.len(), n as u64);
        let v = d.plotted();
        assert_eq!(v.len(), EXACT_RUNS);
        assert!(v.windows(2).all(|w| w[0] <= w[1]));
        for (i, x) in v.iter().enumerate() {
            let want = 0.001 + 0.999 * (i as f64 + 0.5) / EXACT_RUNS as f64;
            assert!((x - want).abs() <= 0.011 * want + 1e-3, "quantile {i}: {x} vs {want}");
        }
    }
}
