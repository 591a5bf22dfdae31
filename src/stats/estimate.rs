//! A mean over independent runs, its standard error and its 95 % confidence half-width: the
//! one estimate summary.csv's intervals, the report, the comparison, tune and the validation
//! suite all print.
//!
//! The constructors keep each caller's arithmetic: [`Estimate::from_summary`] takes the
//! half-width as `t975(n - 1) · sd / √n` with the three-decimal t table (summary.csv's
//! intervals), [`Estimate::of`] as the exact `t_quantile(0.975, n - 1) · se` (VALIDATION.md).
//! See [`super::t`] for why the two quantiles stay apart.

use super::t::{t_quantile, t975};
use super::tolerance::ROUNDING_NOISE;

/// Confidence of every interval printed beside a mean.
pub const CONFIDENCE: f64 = 0.95;

/// A mean over `n` independent runs with its standard error and confidence half-width.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    /// The mean over the runs that have a value.
    pub mean: f64,
    /// Standard error of the mean: the sample standard deviation (n - 1) over √n; 0 for a
    /// single run or a spread within rounding noise; NaN when the spread is unknown (a
    /// summary without a standard deviation).
    pub se: f64,
    /// Runs (independent replications) behind the mean.
    pub n: u64,
    /// Half-width of the two-sided [`CONFIDENCE`] interval; `None` with fewer than two runs
    /// or without a spread.
    pub half_width: Option<f64>,
}

impl Estimate {
    /// From a mean, a sample sd and a count (summary.csv's view).
    pub fn from_summary(mean: f64, sd: Option<f64>, n: u64) -> Estimate {
        let half_width = match sd {
            Some(sd) if n >= 2 && sd.is_finite() => Some(t975(n - 1) * sd / (n as f64).sqrt()),
            _ => None,
        };
        let se = sd.map_or(f64::NAN, |sd| standard_error(sd, n as usize));
        Estimate { mean, se, n, half_width }
    }

    /// From the values of the runs (runs.csv's view); `None` when there are none.
    pub fn from_values(xs: &[f64]) -> Option<Estimate> {
        if xs.is_empty() {
            return None;
        }
        let n = xs.len() as f64;
        let mean = xs.iter().sum::<f64>() / n;
        let sd = if xs.len() < 2 {
            None
        } else {
            Some((xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt())
        };
        Some(Estimate::from_summary(mean, sd, xs.len() as u64))
    }

    /// The mean of `xs` (one value per run) and its standard error, with the exact t
    /// quantile (the validation suite's view). A standard deviation below
    /// [`ROUNDING_NOISE`] of the mean is floating-point rounding in the values (e.g.
    /// differences of means of exact delays), not sampling: the standard error is then 0.
    ///
    /// # Panics
    /// If `xs` is empty.
    pub fn of(xs: &[f64]) -> Estimate {
        assert!(!xs.is_empty(), "an estimate needs at least one run");
        let n = xs.len();
        let mean = mean(xs);
        let sd = sample_sd(xs);
        let se = if n < 2 || sd <= ROUNDING_NOISE * mean.abs() { 0.0 } else { sd / (n as f64).sqrt() };
        Estimate::from_se(mean, se, n as u64)
    }

    /// A mean with a known standard error over `n` runs, its half-width by the exact t
    /// quantile; no half-width when the standard error is 0 or there is a single run.
    pub fn from_se(mean: f64, se: f64, n: u64) -> Estimate {
        let half_width =
            (n >= 2 && se != 0.0).then(|| t_quantile(0.5 + CONFIDENCE / 2.0, (n - 1) as f64) * se);
        Estimate { mean, se, n, half_width }
    }

    /// An exact value (no sampling error), measured over `n` runs.
    pub fn exact(value: f64, n: u64) -> Estimate {
        Estimate { mean: value, se: 0.0, n, half_width: None }
    }

    /// Lower end of the interval (the mean itself without one).
    pub fn low(&self) -> f64 {
        self.mean - self.half_width.unwrap_or(0.0)
    }

    /// Upper end of the interval (the mean itself without one).
    pub fn high(&self) -> f64 {
        self.mean + self.half_width.unwrap_or(0.0)
    }

    /// Whether the two intervals share a point. Without intervals, only equal means overlap.
    pub fn overlaps(&self, other: &Estimate) -> bool {
        self.low() <= other.high() && other.low() <= self.high()
    }
}

/// Arithmetic mean (0 for no values).
pub fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Sample standard deviation with n - 1 (0 for fewer than two values).
pub fn sample_sd(xs: &[f64]) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    let m = mean(xs);
    (xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (xs.len() - 1) as f64).sqrt()
}

/// Standard error of the mean of `n` values whose standard deviation is `sd`.
pub fn standard_error(sd: f64, n: usize) -> f64 {
    if n == 0 { f64::INFINITY } else { sd / (n as f64).sqrt() }
}
