//! Duration distributions (DESIGN §3.2) turned into samplers over nanoseconds.

use crate::engine::Span;
use crate::engine::rng::u01;
use crate::experiment::DistSpec;
use rand::Rng;
use rand_distr::{Distribution, Exp, LogNormal, Normal};

/// A sampler of non-negative durations. Parameters were validated when the file was read,
/// so building one cannot fail on a checked spec.
#[derive(Clone, Copy, Debug)]
pub enum Dist {
    Constant(Span),
    Uniform {
        low: f64,
        width: f64,
    },
    /// `|N(mean, sd)|`: the AWS study's network model takes the absolute value.
    Normal(Normal<f64>),
    Exponential(Exp<f64>),
    LogNormal(LogNormal<f64>),
}

impl Dist {
    pub fn from_spec(spec: &DistSpec) -> Dist {
        let ns = |d: crate::experiment::Duration| d.as_ns() as f64;
        match *spec {
            DistSpec::Constant { value } => Dist::Constant(value.span()),
            DistSpec::Uniform { low, high } => Dist::Uniform { low: ns(low), width: ns(high) - ns(low) },
            DistSpec::Normal { mean, sd } => {
                Dist::Normal(Normal::new(ns(mean), ns(sd)).expect("validated: sd is a finite duration"))
            }
            // A mean of 0 means every sample is 0.
            DistSpec::Exponential { mean } if mean.as_ns() == 0 => Dist::Constant(Span::ZERO),
            DistSpec::Exponential { mean } => {
                Dist::Exponential(Exp::new(1.0 / ns(mean)).expect("validated: mean > 0"))
            }
            // median = e^mu, so mu = ln(median); a median of 0 gives only zeros.
            DistSpec::Lognormal { median, .. } if median.as_ns() == 0 => Dist::Constant(Span::ZERO),
            DistSpec::Lognormal { median, sigma } => {
                Dist::LogNormal(LogNormal::new(ns(median).ln(), sigma).expect("validated: sigma >= 0"))
            }
        }
    }

    /// Whether every sample is zero (lets the model skip scheduling zero-delay hops).
    pub fn is_zero(&self) -> bool {
        matches!(self, Dist::Constant(Span::ZERO))
    }

    /// One sample, rounded to the nearest nanosecond. Constant draws nothing.
    #[inline]
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> Span {
        let x = match self {
            Dist::Constant(v) => return *v,
            Dist::Uniform { low, width } => low + width * u01(rng),
            Dist::Normal(n) => n.sample(rng).abs(),
            Dist::Exponential(e) => e.sample(rng),
            Dist::LogNormal(l) => l.sample(rng),
        };
        // Saturating float-to-int conversion: a huge lognormal tail stays finite.
        Span::from_ns_f64(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::Duration;
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    fn mean_se(spec: DistSpec, n: usize) -> (f64, f64) {
        let d = Dist::from_spec(&spec);
        let mut r = Xoshiro256PlusPlus::seed_from_u64(3);
        let xs: Vec<f64> = (0..n).map(|_| d.sample(&mut r).as_ns_f64()).collect();
        let m = xs.iter().sum::<f64>() / n as f64;
        let v = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n as f64 - 1.0);
        (m, (v / n as f64).sqrt())
    }

    const MS: u64 = 1_000_000;

    #[test]
    fn means_match_theory() {
        let n = 200_000;
        let cases: Vec<(DistSpec, f64)> = vec![
            (DistSpec::Constant { value: Duration(7 * MS) }, 7e6),
            (DistSpec::Uniform { low: Duration(2 * MS), high: Duration(4 * MS) }, 3e6),
            (DistSpec::Exponential { mean: Duration(10 * MS) }, 10e6),
            // E|N(10, 2)| = 10 to many digits (the fold at 0 is 5 sd away).
            (DistSpec::Normal { mean: Duration(10 * MS), sd: Duration(2 * MS) }, 10e6),
            // E|N(0, s)| = s * sqrt(2/pi): the absolute value is taken.
            (
                DistSpec::Normal { mean: Duration(0), sd: Duration(MS) },
                1e6 * (2.0 / std::f64::consts::PI).sqrt(),
            ),
            // Lognormal: mean = median * exp(sigma^2 / 2).
            (DistSpec::Lognormal { median: Duration(10 * MS), sigma: 0.5 }, 10e6 * (0.125f64).exp()),
        ];
        for (spec, expected) in cases {
            let (m, se) = mean_se(spec.clone(), n);
            assert!((m - expected).abs() <= 5.0 * se + 1.0, "{spec:?}: mean {m} vs {expected} (se {se})");
        }
    }

    #[test]
    fn only_a_constant_zero_is_zero() {
        assert!(Dist::from_spec(&DistSpec::default()).is_zero());
        assert!(Dist::from_spec(&DistSpec::Exponential { mean: Duration(0) }).is_zero());
        let u = Dist::from_spec(&DistSpec::Uniform { low: Duration(5), high: Duration(9) });
        assert!(!u.is_zero());
    }
}
