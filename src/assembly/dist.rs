//! A duration distribution (DESIGN §3.2) as the model's sampler, in nanoseconds.

use crate::engine::Span;
use crate::experiment::{DistSpec, Duration};
use crate::model::dist::Dist;
use rand_distr::{Exp, LogNormal, Normal};

/// The sampler of a validated distribution (building one cannot fail on a checked spec).
pub fn dist(spec: &DistSpec) -> Dist {
    let ns = |d: Duration| d.as_ns() as f64;
    match *spec {
        // One point: a constant, which draws nothing.
        DistSpec::Discrete { ref points } if points.len() == 1 => Dist::Constant(points[0].value.span()),
        DistSpec::Discrete { ref points } => {
            let mut cumulative = 0.0;
            let mut table: Vec<(f64, Span)> = points
                .iter()
                .map(|p| {
                    cumulative += p.weight;
                    (cumulative, p.value.span())
                })
                .collect();
            // Validated to sum to 1 within 1e-9: the last point takes the rest.
            table.last_mut().expect("validated: at least one point").0 = 1.0;
            Dist::Discrete(table.into())
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::DiscretePoint;
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    fn mean_se(spec: DistSpec, n: usize) -> (f64, f64) {
        let d = dist(&spec);
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
            // Brooker's bimodal service: 0.1 ms w.p. 0.999, 10 ms w.p. 0.001: mean 0.1099 ms.
            (
                DistSpec::Discrete {
                    points: vec![
                        DiscretePoint { value: Duration(MS / 10), weight: 0.999 },
                        DiscretePoint { value: Duration(10 * MS), weight: 0.001 },
                    ],
                },
                0.1099e6,
            ),
        ];
        for (spec, expected) in cases {
            let (m, se) = mean_se(spec.clone(), n);
            assert!((m - expected).abs() <= 5.0 * se + 1.0, "{spec:?}: mean {m} vs {expected} (se {se})");
        }
    }

    #[test]
    fn only_a_constant_zero_is_zero() {
        assert!(dist(&DistSpec::default()).is_zero());
        assert!(dist(&DistSpec::Exponential { mean: Duration(0) }).is_zero());
        let u = dist(&DistSpec::Uniform { low: Duration(5), high: Duration(9) });
        assert!(!u.is_zero());
    }
}
