//! Mean and standard deviation of values seen one at a time, so that no value is kept once it
//! is added in (summary.csv and timeseries.csv aggregate a cell's runs this way).

/// Mean and sample standard deviation of one metric over runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stat {
    /// `None` when no run has a value.
    pub mean: Option<f64>,
    /// Sample standard deviation (n - 1); 0 for a single value.
    pub sd: Option<f64>,
}

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
