//! The backoff kinds a recorded client is fitted to, each as the distribution of the delay
//! before retry `k` (DESIGN §4.1's formulas, in seconds), blurred by the recording's noise.
//!
//! Every kind's delay is a mixture of at most two simple pieces: a point (a deterministic
//! delay, or a cap that a draw reached) and a uniform interval (a jitter). The observed delay
//! is that plus the client's own time to send again and the clock's noise ([`Noise`]: a
//! constant, a normal and an exponential part), whose density and CDF have closed forms for
//! both pieces, so the likelihood needs no numerical integration.

use std::f64::consts::{PI, SQRT_2};

/// The standard normal CDF, from libm's `erfc` (musl's, accurate to about an ulp and without
/// loops: the likelihood calls it millions of times).
#[inline]
fn normal_cdf(x: f64) -> f64 {
    0.5 * libm::erfc(-x / SQRT_2)
}

/// A point's normal noise below this share of its delay counts as the point's own (see
/// [`Delay::pit`]).
const POINT_NOISE_SHARE: f64 = 0.02;

/// The largest time a client may take to send again after an answer, in seconds: the bound
/// of [`Noise`]'s constant and exponential parts, and the window after a point within which
/// a delay counts as the point ([`Delay::pit`]). A constant backoff shorter than this cannot
/// be told from a client that retries at once and takes that long to do so (measured on the
/// loopback: urllib3 0.2-16 ms before its immediate retry, median 0.4 ms; axios-retry 1-21
/// ms, median 2.8 ms; tenacity about 1 ms).
pub const OVERHEAD_MAX_S: f64 = 0.010;

/// What the recording adds to the backoff's delay: the client's own time to send again (it
/// reads the answer, decides, may sign or reconnect) and the clock's noise, as
/// `offset + N(0, sigma^2) + Exp(mean tail)`: the ex-Gaussian of response-time studies
/// (Luce 1986), shifted. Its density is `f(y) = phi(u) R(s - u) / tail` with
/// `u = (y - offset) / sigma`, `s = sigma / tail` and `R` the Mills ratio `Phi(-t) / phi(t)`;
/// its CDF is `Phi(u) - tail f(y)`. With `tail` near 0 it is the normal.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Noise {
    /// The constant part (seconds, in `[0, OVERHEAD_MAX_S]`).
    pub offset_s: f64,
    /// The standard deviation of the normal part (seconds).
    pub sigma_s: f64,
    /// The mean of the exponential part (seconds, in `(0, OVERHEAD_MAX_S]`).
    pub tail_s: f64,
}

impl Noise {
    /// Normal noise only, `N(0, sigma^2)`.
    pub fn normal(sigma_s: f64) -> Noise {
        Noise { offset_s: 0.0, sigma_s, tail_s: 0.0 }
    }

    /// Whether the exponential part is below a hundred-millionth of the normal's (or absent):
    /// then the noise is the normal, computed as such.
    fn is_normal(&self) -> bool {
        let s = self.sigma_s / self.tail_s;
        s.is_nan() || s >= 1e8
    }

    /// The density at `y` (seconds after the backoff's delay).
    pub fn density(&self, y: f64) -> f64 {
        let (sigma, tail) = (self.sigma_s, self.tail_s);
        let u = (y - self.offset_s) / sigma;
        let s = sigma / tail;
        if self.is_normal() {
            return (-0.5 * u * u).exp() / (sigma * (2.0 * PI).sqrt());
        }
        let t = s - u;
        if (0.0..30.0).contains(&t) {
            // phi(u) R(t) in one exponential: exp((t^2 - u^2) / 2) erfc(t / sqrt 2) / 2, whose
            // exponent stays below 450 for t < 30.
            0.5 * (0.5 * (t * t - u * u)).exp() * libm::erfc(t / SQRT_2) / tail
        } else if t >= 30.0 {
            (-0.5 * u * u).exp() / (2.0 * PI).sqrt() * mills_ratio(t) / tail
        } else {
            // The exponential tail: exp(s^2/2 - s u) Phi(u - s), its exponent below -s^2/2.
            (s * (0.5 * s - u)).exp() * normal_cdf(u - s) / tail
        }
    }

    /// The CDF at `y`.
    pub fn cdf(&self, y: f64) -> f64 {
        let u = (y - self.offset_s) / self.sigma_s;
        if self.is_normal() {
            return normal_cdf(u);
        }
        (normal_cdf(u) - self.tail_s * self.density(y)).clamp(0.0, 1.0)
    }

    /// `1 - cdf(y)`, keeping its digits where the CDF is near 1.
    fn survival(&self, y: f64) -> f64 {
        let u = (y - self.offset_s) / self.sigma_s;
        if self.is_normal() {
            return normal_cdf(-u);
        }
        (normal_cdf(-u) + self.tail_s * self.density(y)).clamp(0.0, 1.0)
    }

    /// The integral of the CDF up to `y`: `sigma (u Phi(u) + phi(u)) - tail F(y)` (the first
    /// term integrates `Phi(u)`; the second `tail f`, whose integral is `tail F`).
    fn cdf_integral(&self, y: f64) -> f64 {
        let u = (y - self.offset_s) / self.sigma_s;
        let normal = self.sigma_s * (u * normal_cdf(u) + (-0.5 * u * u).exp() / (2.0 * PI).sqrt());
        if self.is_normal() { normal } else { normal - self.tail_s * self.cdf(y) }
    }

    /// Where a delay counts as on a point, relative to the point: from the offset less 8 of the
    /// normal part's standard deviations to the offset plus [`OVERHEAD_MAX_S`] and those 8.
    fn window(&self) -> (f64, f64) {
        (self.offset_s - 8.0 * self.sigma_s, self.offset_s + OVERHEAD_MAX_S + 8.0 * self.sigma_s)
    }
}

/// The Mills ratio `R(t) = Phi(-t) / phi(t) = sqrt(pi / 2) exp(t^2 / 2) erfc(t / sqrt 2)` for
/// `t >= 0`; above 30, where `erfc` nears the bottom of the doubles, its asymptotic series
/// `(1 - 1/t^2 + 3/t^4 - 15/t^6 + 105/t^8) / t` (relative error below 1e-12 there).
fn mills_ratio(t: f64) -> f64 {
    if t < 30.0 {
        (PI / 2.0).sqrt() * (0.5 * t * t).exp() * libm::erfc(t / SQRT_2)
    } else {
        let r = 1.0 / (t * t);
        (1.0 - r * (1.0 - r * (3.0 - r * (15.0 - 105.0 * r)))) / t
    }
}

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

    /// Whether the overhead's constant part is fitted: not for `constant`, whose base and that
    /// offset only show as their sum (the base takes it).
    pub fn fits_offset(self) -> bool {
        self != Kind::Constant
    }

    /// The number of free parameters, the noise's included (for the BIC).
    pub fn parameters(self) -> usize {
        2 + usize::from(self.fits_offset())
            + usize::from(self != Kind::None)
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
    /// What the recording adds to the backoff's delay.
    pub noise: Noise,
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

    /// The density of the observed delay `x` (the backoff plus `noise`).
    pub fn density(&self, x: f64, noise: &Noise) -> f64 {
        self.pieces()
            .iter()
            .map(|p| {
                if p.high - p.low <= 1e-9 * noise.sigma_s {
                    p.weight * noise.density(x - p.low)
                } else {
                    // The density of U(a, b) + noise is (F(x - a) - F(x - b)) / (b - a); in the
                    // upper tail from the survival function, where both CDFs are near 1.
                    let between = if x - p.high > noise.offset_s {
                        noise.survival(x - p.high) - noise.survival(x - p.low)
                    } else {
                        noise.cdf(x - p.low) - noise.cdf(x - p.high)
                    };
                    p.weight * between.max(0.0) / (p.high - p.low)
                }
            })
            .sum()
    }

    /// The CDF of the observed delay at `x`.
    pub fn cdf(&self, x: f64, noise: &Noise) -> f64 {
        self.pieces()
            .iter()
            .map(|p| {
                if p.high - p.low <= 1e-9 * noise.sigma_s {
                    p.weight * noise.cdf(x - p.low)
                } else {
                    // The CDF of U(a, b) + noise is (G(x - a) - G(x - b)) / (b - a), G the
                    // integral of the noise's CDF.
                    p.weight * (noise.cdf_integral(x - p.low) - noise.cdf_integral(x - p.high))
                        / (p.high - p.low)
                }
            })
            .sum::<f64>()
            .clamp(0.0, 1.0)
    }

    /// The probability integral transform of `x` for a goodness-of-fit test: the CDF, except
    /// that an observation on a point piece whose normal noise is small (under 2 % of the
    /// point, or under an eighth of [`OVERHEAD_MAX_S`]: the log's delays lie on the backoff's
    /// points, as a deterministic client's do) is given a uniform value within the point's
    /// mass, the randomised transform for discrete distributions (Brockwell 2007), drawn from
    /// a fixed hash of `index` so that the test is reproducible. On the point means from 8
    /// standard deviations below it to [`OVERHEAD_MAX_S`] (and 8 more) above: the test asks
    /// whether the delays are the backoff plus an overhead of at most that, and leaves the
    /// overhead's shape, which the likelihood only approximates, untested.
    pub fn pit(&self, x: f64, noise: &Noise, index: usize) -> f64 {
        // splitmix64 of the index, as a fraction in [0, 1).
        let mut z = (index as u64).wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        let v = (z ^ (z >> 31)) as f64 / 2f64.powi(64);
        let (below, above) = noise.window();
        self.pieces()
            .iter()
            .map(|p| {
                let is_point = p.high - p.low <= 1e-9 * noise.sigma_s;
                let small = noise.sigma_s < (POINT_NOISE_SHARE * p.low).max(OVERHEAD_MAX_S / 8.0);
                if is_point && small {
                    p.weight
                        * if x < p.low + below {
                            0.0
                        } else if x > p.low + above {
                            1.0
                        } else {
                            v
                        }
                } else {
                    Delay::one(Piece { weight: 1.0, ..*p }).cdf(x, noise) * p.weight
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
        Params { base_s, cap_s, multiplier: 2.0, extra: 0.0, noise: Noise::normal(1e-3) }
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

    /// The client overheads of the tests: normal only, and shifted ex-Gaussians whose normal or
    /// exponential part dominates.
    const NOISES: [Noise; 3] = [
        Noise { offset_s: 0.0, sigma_s: 1e-3, tail_s: 0.0 },
        Noise { offset_s: 0.002, sigma_s: 3e-4, tail_s: 0.004 },
        Noise { offset_s: 0.001, sigma_s: 2e-3, tail_s: 1e-4 },
    ];

    #[test]
    fn density_integrates_to_one_and_cdf_agrees() {
        let p = params(0.1, 0.5);
        for noise in NOISES {
            for d in [
                delay(Kind::FullJitter, &p, 2, None),
                delay(Kind::DecorrelatedJitter, &p, 2, Some(0.2)),
                delay(Kind::Exponential, &p, 1, None),
            ] {
                let (dx, mut area) = (1e-6, 0.0);
                let mut x = -0.05;
                while x < 0.7 {
                    let step = d.density(x, &noise) * dx;
                    area += step;
                    let cdf = d.cdf(x, &noise);
                    assert!(
                        (cdf - area).abs() < 2e-3,
                        "{noise:?}: cdf {cdf} against the integral {area} at {x}"
                    );
                    x += dx;
                }
                assert!((area - 1.0).abs() < 1e-3, "{noise:?}: {area}");
            }
        }
    }

    #[test]
    fn the_noise_is_the_convolution_of_its_normal_and_exponential_parts() {
        // The ex-Gaussian density by quadrature of phi((y - offset - e) / sigma) / sigma
        // against the exponential's density of e, at points in its body and both tails.
        let noise = Noise { offset_s: 0.002, sigma_s: 5e-4, tail_s: 0.003 };
        for y in [-0.001, 0.0015, 0.002, 0.003, 0.008, 0.02, 0.04] {
            let (de, mut sum) = (1e-7, 0.0);
            let mut e = de / 2.0;
            while e < 0.2 {
                let z = (y - noise.offset_s - e) / noise.sigma_s;
                sum += (-0.5 * z * z).exp() / (noise.sigma_s * (2.0 * PI).sqrt()) * (-e / noise.tail_s).exp()
                    / noise.tail_s
                    * de;
                e += de;
            }
            let f = noise.density(y);
            assert!((f - sum).abs() <= 1e-6 * sum.max(1.0), "at {y}: {f} against {sum}");
            assert!((noise.cdf(y) + noise.survival(y) - 1.0).abs() < 1e-12);
        }
        // A vanishing exponential part is the normal.
        let tiny = Noise { offset_s: 0.0, sigma_s: 1e-3, tail_s: 1e-12 };
        for y in [-0.002, 0.0, 0.0005, 0.003] {
            let normal = Noise::normal(1e-3);
            assert!((tiny.density(y) - normal.density(y)).abs() < 1e-6 * normal.density(0.0));
            assert!((tiny.cdf(y) - normal.cdf(y)).abs() < 1e-9);
        }
    }

    #[test]
    fn the_mills_ratio_is_continuous_where_its_two_forms_meet() {
        // exp(450) carries the rounding of its argument: about 3e-11 relative, measured.
        let (below, above) = (mills_ratio(30.0 - 1e-9), mills_ratio(30.0));
        assert!((below - above).abs() < 1e-9 * above, "{below} against {above}");
        // R(t) -> 1/t for large t, R(0) = sqrt(pi/2).
        assert!((mills_ratio(0.0) - (PI / 2.0).sqrt()).abs() < 1e-12);
        assert!((mills_ratio(1e3) * 1e3 - 1.0).abs() < 1e-5);
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
        assert_eq!(Kind::None.parameters(), 3);
        assert_eq!(Kind::Constant.parameters(), 3);
        assert_eq!(Kind::FullJitter.parameters(), 6);
        assert_eq!(Kind::AdditiveJitter.parameters(), 7);
    }
}
