//! The backoff kinds a recorded client is fitted to, each as the distribution of the delay
//! before retry `k` (DESIGN §4.1's formulas, in seconds), blurred by the recording's noise.
//!
//! Every kind's delay is a mixture of at most two simple pieces: a point (a deterministic
//! delay, or a cap that a draw reached) and a uniform interval (a jitter). The observed delay
//! is that plus `N(0, sigma^2)`, the client's and the clock's own noise, whose density and
//! CDF have closed forms for both pieces, so the likelihood needs no numerical integration.

use crate::stats::normal_cdf;
use std::f64::consts::PI;

/// A point's noise below this share of its delay counts as the point's own (see
/// [`Delay::pit`]).
const POINT_NOISE_SHARE: f64 = 0.02;

/// A backoff kind that `fit` can recognise: the ones of DESIGN §4.1 whose delay is a point or
/// a uniform draw given the retry number and the previous delay, and `exponential` and
/// `additive-jitter` with `immediate_first` (urllib3 2.x: the first retry at once, then the
/// formula from retry 2 on). (`decorrelated-jitter-v2`, Polly's curve, is not among them: its
/// delay is not uniform.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    None,
    Constant,
    Linear,
    Exponential,
    FullJitter,
    EqualJitter,
    DecorrelatedJitter,
    AdditiveJitter,
    ProportionalJitter,
    /// `exponential` with `immediate_first = true`.
    ExponentialImmediateFirst,
    /// `additive-jitter` with `immediate_first = true`.
    AdditiveJitterImmediateFirst,
}

impl Kind {
    pub const ALL: [Kind; 11] = [
        Kind::None,
        Kind::Constant,
        Kind::Linear,
        Kind::Exponential,
        Kind::FullJitter,
        Kind::EqualJitter,
        Kind::DecorrelatedJitter,
        Kind::AdditiveJitter,
        Kind::ProportionalJitter,
        Kind::ExponentialImmediateFirst,
        Kind::AdditiveJitterImmediateFirst,
    ];

    /// The kind whose formula this one follows from its second retry on (itself for all but
    /// the `immediate_first` kinds).
    pub fn formula(self) -> Kind {
        match self {
            Kind::ExponentialImmediateFirst => Kind::Exponential,
            Kind::AdditiveJitterImmediateFirst => Kind::AdditiveJitter,
            other => other,
        }
    }

    /// Whether the first retry goes at once (`immediate_first = true`).
    pub fn immediate_first(self) -> bool {
        self != self.formula()
    }

    /// The kind as `fit` names it in its tables: the experiment file's kind, with
    /// `immediate_first` said when it is set.
    pub fn label(self) -> &'static str {
        match self {
            Kind::ExponentialImmediateFirst => "exponential, immediate_first",
            Kind::AdditiveJitterImmediateFirst => "additive-jitter, immediate_first",
            other => other.name(),
        }
    }

    /// The name of the kind in experiment files (`immediate_first` is a key of its own).
    pub fn name(self) -> &'static str {
        match self.formula() {
            Kind::None => "none",
            Kind::Constant => "constant",
            Kind::Linear => "linear",
            Kind::Exponential => "exponential",
            Kind::FullJitter => "full-jitter",
            Kind::EqualJitter => "equal-jitter",
            Kind::DecorrelatedJitter => "decorrelated-jitter",
            Kind::AdditiveJitter => "additive-jitter",
            Kind::ProportionalJitter => "proportional-jitter",
            Kind::ExponentialImmediateFirst | Kind::AdditiveJitterImmediateFirst => {
                unreachable!("formula() maps these to their formula's kind")
            }
        }
    }

    /// Whether the kind has a `cap`.
    pub fn has_cap(self) -> bool {
        !matches!(self.formula(), Kind::None | Kind::Constant)
    }

    /// Whether the kind has a `multiplier` (growth per retry).
    pub fn has_multiplier(self) -> bool {
        matches!(
            self.formula(),
            Kind::Exponential
                | Kind::FullJitter
                | Kind::EqualJitter
                | Kind::AdditiveJitter
                | Kind::ProportionalJitter
        )
    }

    /// The kind's own parameter beside base, cap and multiplier: `jitter` (seconds) or `p`.
    pub fn extra(self) -> Option<&'static str> {
        match self.formula() {
            Kind::AdditiveJitter => Some("jitter"),
            Kind::ProportionalJitter => Some("p"),
            _ => None,
        }
    }

    /// The number of free parameters, the noise's sigma included (for the BIC).
    pub fn parameters(self) -> usize {
        1 + usize::from(self != Kind::None)
            + usize::from(self.has_cap())
            + usize::from(self.has_multiplier())
            + usize::from(self.extra().is_some())
    }
}

/// A kind's parameters, in seconds. `cap_s` is `f64::INFINITY` for no cap.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    pub base_s: f64,
    pub cap_s: f64,
    pub multiplier: f64,
    /// `jitter` in seconds for additive jitter, `p` for proportional jitter, else unused.
    pub extra: f64,
    /// The recording's noise: the standard deviation of observed minus backoff delay.
    pub sigma_s: f64,
}

/// One piece of a delay's distribution: a point (`low == high`) or `U(low, high)`, with its
/// probability.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Piece {
    pub low: f64,
    pub high: f64,
    pub weight: f64,
}

/// The distribution of one delay: up to three pieces whose weights sum to 1 (a capped
/// uniform, its cap, and the point a Retry-After floor adds).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Delay {
    pieces: [Piece; 3],
    len: usize,
}

impl Delay {
    /// `U(low, high)`, a point when `low == high`.
    pub fn uniform(low: f64, high: f64) -> Delay {
        Delay::one(Piece { low, high, weight: 1.0 })
    }

    fn point(x: f64) -> Delay {
        Delay::one(Piece { low: x, high: x, weight: 1.0 })
    }

    fn one(p: Piece) -> Delay {
        Delay { pieces: [p; 3], len: 1 }
    }

    /// `U(low, high)`, then `min(cap, .)`: the part above the cap becomes a point at the cap.
    fn uniform_capped(low: f64, high: f64, cap: f64) -> Delay {
        let (low, high) = if low <= high { (low, high) } else { (high, low) };
        if high <= cap {
            return Delay::one(Piece { low, high, weight: 1.0 });
        }
        if low >= cap {
            return Delay::point(cap);
        }
        let below = (cap - low) / (high - low);
        let mut d = Delay::one(Piece { low, high: cap, weight: below });
        d.push(Piece { low: cap, high: cap, weight: 1.0 - below });
        d
    }

    fn push(&mut self, p: Piece) {
        self.pieces[self.len] = p;
        self.len += 1;
    }

    pub fn pieces(&self) -> &[Piece] {
        &self.pieces[..self.len]
    }

    /// The smallest and largest delay the backoff itself can give (before noise).
    pub fn support(&self) -> (f64, f64) {
        let ps = self.pieces();
        (
            ps.iter().map(|p| p.low).fold(f64::INFINITY, f64::min),
            ps.iter().map(|p| p.high).fold(0.0, f64::max),
        )
    }

    /// The density of the observed delay `x` (the backoff plus `N(0, sigma^2)`).
    pub fn density(&self, x: f64, sigma: f64) -> f64 {
        self.pieces()
            .iter()
            .map(|p| {
                if p.high - p.low <= 1e-9 * sigma {
                    let z = (x - p.low) / sigma;
                    p.weight * (-0.5 * z * z).exp() / (sigma * (2.0 * PI).sqrt())
                } else {
                    p.weight * normal_between((x - p.high) / sigma, (x - p.low) / sigma) / (p.high - p.low)
                }
            })
            .sum()
    }

    /// The CDF of the observed delay at `x`.
    pub fn cdf(&self, x: f64, sigma: f64) -> f64 {
        self.pieces()
            .iter()
            .map(|p| {
                if p.high - p.low <= 1e-9 * sigma {
                    p.weight * normal_cdf((x - p.low) / sigma)
                } else {
                    // The CDF of U(a, b) + N(0, s^2) is (G(x - a) - G(x - b)) / (b - a) with
                    // G(y) = y Phi(y / s) + s phi(y / s), the integral of Phi(t / s) up to y.
                    let g = |y: f64| {
                        let z = y / sigma;
                        y * normal_cdf(z) + sigma * (-0.5 * z * z).exp() / (2.0 * PI).sqrt()
                    };
                    p.weight * (g(x - p.low) - g(x - p.high)) / (p.high - p.low)
                }
            })
            .sum::<f64>()
            .clamp(0.0, 1.0)
    }

    /// The probability integral transform of `x` for a goodness-of-fit test: the CDF, except
    /// that an observation on a point piece whose noise is small against the point (`sigma`
    /// under 2 % of it: the log's delays lie on the backoff's points, as a deterministic
    /// client's do) is given a uniform value within the point's mass, the randomised
    /// transform for discrete distributions (Brockwell 2007), drawn from a fixed hash of
    /// `index` so that the test is reproducible. Under the model both are uniform; the
    /// randomised one does not depend on the shape of a noise the model only bounds.
    pub fn pit(&self, x: f64, sigma: f64, index: usize) -> f64 {
        // splitmix64 of the index, as a fraction in [0, 1).
        let mut z = (index as u64).wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        let v = (z ^ (z >> 31)) as f64 / 2f64.powi(64);
        self.pieces()
            .iter()
            .map(|p| {
                let is_point = p.high - p.low <= 1e-9 * sigma;
                if is_point && sigma < POINT_NOISE_SHARE * p.low.max(1e-3) {
                    let z = (x - p.low) / sigma;
                    p.weight
                        * if z < -8.0 {
                            0.0
                        } else if z > 8.0 {
                            1.0
                        } else {
                            v
                        }
                } else {
                    Delay::one(Piece { weight: 1.0, ..*p }).cdf(x, sigma) * p.weight
                }
            })
            .sum::<f64>()
            .clamp(0.0, 1.0)
    }

    /// This delay combined with a server's Retry-After of `ra_s` as `max(delay, ra_s)`
    /// (axios-retry's `exponentialDelay`, DESIGN §4.6 `at-least-backoff`): the mass below
    /// `ra_s` moves to a point at `ra_s`.
    pub fn at_least(&self, ra_s: f64) -> Delay {
        let mut out = Delay { pieces: self.pieces, len: 0 };
        let mut moved = 0.0;
        for p in self.pieces() {
            if p.high <= ra_s {
                moved += p.weight;
            } else if p.low >= ra_s {
                out.push(*p);
            } else {
                let below = (ra_s - p.low) / (p.high - p.low);
                moved += p.weight * below;
                out.push(Piece { low: ra_s, high: p.high, weight: p.weight * (1.0 - below) });
            }
        }
        if moved > 0.0 {
            // At most two pieces can lie above ra_s (a uniform and its cap), so this fits.
            out.push(Piece { low: ra_s, high: ra_s, weight: moved });
        }
        out
    }
}

/// `Phi(upper) - Phi(lower)` for `lower <= upper`, computed in the tail where both are near 1
/// so that the difference keeps its digits.
fn normal_between(lower: f64, upper: f64) -> f64 {
    if lower > 0.0 { normal_cdf(-lower) - normal_cdf(-upper) } else { normal_cdf(upper) - normal_cdf(lower) }
}

/// The distribution of the delay before retry `k` (1 for the first retry) of `kind` with
/// `params`, given the previous observed delay of the same operation (`None` before the first
/// retry). The formulas are DESIGN §4.1's.
pub fn delay(kind: Kind, p: &Params, k: u32, previous_s: Option<f64>) -> Delay {
    if kind.immediate_first() && k == 1 {
        return Delay::point(0.0);
    }
    let growth = p.multiplier.powi(k as i32 - 1);
    let v = (p.base_s * growth).min(p.cap_s);
    match kind.formula() {
        Kind::None => Delay::point(0.0),
        Kind::Constant => Delay::point(p.base_s),
        Kind::Linear => Delay::point((p.base_s * k as f64).min(p.cap_s)),
        Kind::Exponential => Delay::point(v),
        Kind::FullJitter => Delay::one(Piece { low: 0.0, high: v, weight: 1.0 }),
        Kind::EqualJitter => Delay::one(Piece { low: v / 2.0, high: v, weight: 1.0 }),
        Kind::DecorrelatedJitter => {
            // s_k = min(cap, U(base, 3 s_(k-1))), s_0 = base; the state is the delay itself.
            let s = previous_s.unwrap_or(p.base_s).max(0.0);
            Delay::uniform_capped(p.base_s, 3.0 * s, p.cap_s)
        }
        Kind::AdditiveJitter => {
            let low = p.base_s * growth;
            Delay::uniform_capped(low, low + p.extra, p.cap_s)
        }
        Kind::ProportionalJitter => {
            Delay::one(Piece { low: v * (1.0 - p.extra), high: v * (1.0 + p.extra), weight: 1.0 })
        }
        Kind::ExponentialImmediateFirst | Kind::AdditiveJitterImmediateFirst => {
            unreachable!("formula() maps these to their formula's kind")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(base_s: f64, cap_s: f64) -> Params {
        Params { base_s, cap_s, multiplier: 2.0, extra: 0.0, sigma_s: 1e-3 }
    }

    #[test]
    fn formulas_follow_the_design() {
        let p = params(0.1, 0.5);
        assert_eq!(delay(Kind::Exponential, &p, 3, None).support(), (0.4, 0.4));
        assert_eq!(delay(Kind::Exponential, &p, 4, None).support(), (0.5, 0.5));
        assert_eq!(delay(Kind::FullJitter, &p, 2, None).support(), (0.0, 0.2));
        assert_eq!(delay(Kind::EqualJitter, &p, 3, None).support(), (0.2, 0.4));
        assert_eq!(delay(Kind::Linear, &p, 3, None).support(), (0.30000000000000004, 0.30000000000000004));
        // Decorrelated: U(0.1, 0.6) capped at 0.5: 4/5 uniform below the cap, 1/5 at it.
        let d = delay(Kind::DecorrelatedJitter, &p, 2, Some(0.2));
        assert_eq!(d.pieces().len(), 2);
        assert!((d.pieces()[0].weight - 0.8).abs() < 1e-12 && d.pieces()[1].low == 0.5);
    }

    #[test]
    fn density_integrates_to_one_and_cdf_agrees() {
        let p = params(0.1, 0.5);
        for d in [delay(Kind::FullJitter, &p, 2, None), delay(Kind::DecorrelatedJitter, &p, 2, Some(0.2))] {
            let (dx, mut area) = (1e-5, 0.0);
            let mut x = -0.05;
            while x < 0.7 {
                area += d.density(x, p.sigma_s) * dx;
                let mid = d.cdf(x, p.sigma_s);
                assert!((mid - area).abs() < 2e-3, "cdf {mid} against the integral {area} at {x}");
                x += dx;
            }
            assert!((area - 1.0).abs() < 1e-3, "{area}");
        }
    }

    #[test]
    fn at_least_moves_the_mass_below_retry_after() {
        let d = Delay::one(Piece { low: 0.0, high: 2.0, weight: 1.0 }).at_least(0.5);
        let ps = d.pieces();
        assert_eq!(ps.len(), 2);
        assert_eq!((ps[0].low, ps[0].high, ps[0].weight), (0.5, 2.0, 0.75));
        assert_eq!((ps[1].low, ps[1].weight), (0.5, 0.25));
    }

    #[test]
    fn parameter_counts() {
        assert_eq!(Kind::None.parameters(), 1);
        assert_eq!(Kind::Constant.parameters(), 2);
        assert_eq!(Kind::FullJitter.parameters(), 4);
        assert_eq!(Kind::AdditiveJitter.parameters(), 5);
    }
}
