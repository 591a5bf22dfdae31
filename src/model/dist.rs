//! Duration distributions (DESIGN §3.2) turned into samplers over nanoseconds.

use crate::engine::Span;
use crate::engine::rng::u01;
use rand::Rng;
use rand_distr::{Distribution, Exp, LogNormal, Normal};
use std::sync::Arc;

/// A sampler of non-negative durations. Parameters were validated when the file was read,
/// so building one cannot fail on a checked spec. Cloning is cheap (the discrete kind's points
/// are shared).
#[derive(Clone, Debug)]
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
    /// Values with probabilities: each point is (the cumulative probability up to and
    /// including it, its value); the last point's cumulative probability is 1.
    Discrete(Arc<[(f64, Span)]>),
}

impl Dist {
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
            Dist::Discrete(points) => return discrete(points, u01(rng)),
        };
        // Saturating float-to-int conversion: a huge lognormal tail stays finite.
        Span::from_ns_f64(x)
    }
}

/// The value of the first point whose cumulative probability exceeds `u` (the last point takes
/// what rounding leaves).
#[inline(never)]
fn discrete(points: &[(f64, Span)], u: f64) -> Span {
    let last = points.len() - 1;
    points[..last].iter().find(|(cumulative, _)| u < *cumulative).unwrap_or(&points[last]).1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discrete_picks_the_point_whose_share_the_draw_falls_in() {
        let points: Arc<[(f64, Span)]> =
            [(0.999, Span::from_ns(100_000)), (1.0, Span::from_millis(10))].into_iter().collect();
        assert_eq!(discrete(&points, 0.0), Span::from_ns(100_000));
        assert_eq!(discrete(&points, 0.998_999), Span::from_ns(100_000));
        assert_eq!(discrete(&points, 0.999), Span::from_millis(10));
        assert_eq!(discrete(&points, 0.999_999_9), Span::from_millis(10));
    }
}
