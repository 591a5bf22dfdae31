//! Duration distributions (DESIGN §3.2) turned into samplers over nanoseconds.

use crate::engine::Span;
use crate::engine::rng::u01;
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
