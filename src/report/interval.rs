//! 95 % confidence intervals of a mean over runs: `mean ± t(0.975, n-1) · sd / √n`.

/// Two-sided 95 % quantiles of Student's t, `t(0.975, df)`, for df = 1..=30 (standard tables).
const T975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
    2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
];

/// `t(0.975, df)`: the table up to 30 degrees of freedom, then the Cornish-Fisher expansion
/// around the normal quantile 1.959964 (error below 1e-4 from df = 31 on).
pub fn t975(df: u64) -> f64 {
    if df == 0 {
        return f64::NAN;
    }
    if let Some(t) = T975.get(df as usize - 1) {
        return *t;
    }
    let z: f64 = 1.959_963_984_540_054;
    let n = df as f64;
    let z3 = z.powi(3);
    let z5 = z.powi(5);
    let z7 = z.powi(7);
    z + (z3 + z) / (4.0 * n)
        + (5.0 * z5 + 16.0 * z3 + 3.0 * z) / (96.0 * n * n)
        + (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * z) / (384.0 * n * n * n)
}

/// A mean over runs with its 95 % confidence half-width.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    /// The mean over the runs that have a value.
    pub mean: f64,
    /// Half-width of the 95 % interval; `None` with fewer than two values.
    pub half_width: Option<f64>,
    /// How many runs have a value.
    pub n: u64,
}

impl Estimate {
    /// From a mean, a sample sd and a count (summary.csv's view).
    pub fn from_summary(mean: f64, sd: Option<f64>, n: u64) -> Estimate {
        let half_width = match sd {
            Some(sd) if n >= 2 && sd.is_finite() => Some(t975(n - 1) * sd / (n as f64).sqrt()),
            _ => None,
        };
        Estimate { mean, half_width, n }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles_match_tables() {
        assert_eq!(t975(1), 12.706);
        assert_eq!(t975(19), 2.093);
        // Tables: t(0.975, 40) = 2.021, 60: 2.000, 120: 1.980.
        assert!((t975(40) - 2.021).abs() < 1e-3, "{}", t975(40));
        assert!((t975(60) - 2.000).abs() < 1e-3, "{}", t975(60));
        assert!((t975(120) - 1.980).abs() < 1e-3, "{}", t975(120));
        // Continuity at the end of the table.
        assert!((t975(31) - 2.040).abs() < 1e-3, "{}", t975(31));
    }

    #[test]
    fn interval_from_values() {
        let e = Estimate::from_values(&[1.0, 2.0, 3.0]).unwrap();
        assert_eq!(e.mean, 2.0);
        assert!((e.half_width.unwrap() - 4.303 / 3f64.sqrt()).abs() < 1e-12);
        assert_eq!(Estimate::from_values(&[5.0]).unwrap().half_width, None);
        assert_eq!(Estimate::from_values(&[]), None);
    }
}
