//! The statistics of the validation suite: means with their standard errors, Student t and
//! normal quantiles, z-scores, and the tolerance rule every check uses.
//!
//! Everything here is plain `f64` arithmetic in a fixed order, so the same inputs give the
//! same bits on every machine (VALIDATION.md is compared byte for byte).

/// Standard errors in a tolerance: a check passes when the simulated value is within
/// `Z_TOLERANCE` standard errors of the difference (plus a stated resolution) of the expected
/// one. Under the hypothesis that the simulator is right, a deviation that large has a
/// two-sided probability of 6e-5 for a normal estimate (about 8e-4 for a t estimate with 19
/// degrees of freedom), so a suite of a few hundred comparisons fails by chance with a
/// probability of a few percent at most, while a real error of a few standard errors shows.
pub const Z_TOLERANCE: f64 = 4.0;

/// Relative spread below which values differ only by floating-point rounding (about 10^4
/// units in the last place of an `f64`).
pub const ROUNDING_NOISE: f64 = 1e-12;

/// Confidence of the intervals printed beside simulated values.
pub const CONFIDENCE: f64 = 0.95;

/// A mean over `n` independent runs and its standard error.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    pub mean: f64,
    /// Standard error of the mean: the sample standard deviation (n - 1) over sqrt(n); 0 for a
    /// single run.
    pub se: f64,
    /// Runs (independent replications) behind the mean.
    pub n: usize,
}

impl Estimate {
    /// The mean of `xs` (one value per run) and its standard error. A standard deviation
    /// below [`ROUNDING_NOISE`] of the mean is floating-point rounding in the values (e.g.
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
        Estimate { mean, se, n }
    }

    /// An exact value (no sampling error), measured over `n` runs.
    pub fn exact(value: f64, n: usize) -> Estimate {
        Estimate { mean: value, se: 0.0, n }
    }

    /// Half-width of the two-sided [`CONFIDENCE`] interval: `t(0.975, n - 1) * se`; 0 when
    /// the standard error is 0 or there is a single run.
    pub fn half_width(&self) -> f64 {
        if self.n < 2 || self.se == 0.0 {
            0.0
        } else {
            t_quantile(0.5 + CONFIDENCE / 2.0, (self.n - 1) as f64) * self.se
        }
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

/// Standard error of a difference of two independent estimates.
pub fn combined_se(a: f64, b: f64) -> f64 {
    a.hypot(b)
}

/// The z-score of `observed - expected` with standard error `se`: None when `se` is 0 (an
/// exact comparison).
pub fn z_score(observed: f64, expected: f64, se: f64) -> Option<f64> {
    (se > 0.0).then(|| (observed - expected) / se)
}

/// The tolerance rule: [`Z_TOLERANCE`] standard errors of the difference plus a resolution
/// (a known bound on non-statistical error, e.g. a histogram's precision or a published
/// value's rounding).
pub fn tolerance(deviation_se: f64, resolution: f64) -> f64 {
    Z_TOLERANCE * deviation_se + resolution
}

/// ln Gamma(x) for x > 0 (Lanczos, g = 7, 9 terms: relative error below 1e-15).
pub fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Gamma(x) Gamma(1 - x) = pi / sin(pi x).
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + G + 0.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// The regularized incomplete beta function I_x(a, b), by its continued fraction (modified
/// Lentz; Numerical Recipes §6.4).
pub fn incomplete_beta(x: f64, a: f64, b: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front = (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    // The fraction converges fast for x < (a + 1) / (a + b + 2); use the symmetry otherwise.
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(x, a, b) / a
    } else {
        1.0 - front * beta_fraction(1.0 - x, b, a) / b
    }
}

/// The continued fraction of the regularised incomplete beta function, by the modified Lentz
/// method (Numerical Recipes, `betacf`): terms alternate between an even and an odd
/// coefficient, and each term updates `c` and `d` the same way (`lentz`).
fn beta_fraction(x: f64, a: f64, b: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let away_from_zero = |v: f64| if v.abs() < TINY { TINY } else { v };
    // One Lentz step with coefficient `aa`: the factor it multiplies the fraction by.
    let lentz = |aa: f64, c: &mut f64, d: &mut f64| {
        *d = 1.0 / away_from_zero(1.0 + aa * *d);
        *c = away_from_zero(1.0 + aa / *c);
        *d * *c
    };
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 / away_from_zero(1.0 - qab * x / qap);
    let mut h = d;
    for m in 1..=300 {
        let m = m as f64;
        let m2 = 2.0 * m;
        h *= lentz(m * (b - m) * x / ((qam + m2) * (a + m2)), &mut c, &mut d);
        let del = lentz(-(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)), &mut c, &mut d);
        h *= del;
        if (del - 1.0).abs() < 1e-16 {
            break;
        }
    }
    h
}

/// The Student t distribution's CDF with `df` degrees of freedom.
pub fn t_cdf(t: f64, df: f64) -> f64 {
    let tail = 0.5 * incomplete_beta(df / (df + t * t), df / 2.0, 0.5);
    if t >= 0.0 { 1.0 - tail } else { tail }
}

/// The Student t quantile: the `t` with `t_cdf(t, df) = p`, for p in (0, 1), by bisection
/// (deterministic, to the last bit that matters).
pub fn t_quantile(p: f64, df: f64) -> f64 {
    assert!(p > 0.0 && p < 1.0 && df > 0.0, "t_quantile({p}, {df})");
    if p < 0.5 {
        return -t_quantile(1.0 - p, df);
    }
    let mut hi = 1.0;
    while t_cdf(hi, df) < p {
        hi *= 2.0;
    }
    let mut lo = 0.0;
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if t_cdf(mid, df) < p { lo = mid } else { hi = mid }
    }
    0.5 * (lo + hi)
}

/// Wichura's AS 241 (PPND16) coefficients, highest degree first: numerator and denominator
/// for |p - 1/2| <= 0.425, then for the tails (r <= 5 and beyond).
#[allow(clippy::excessive_precision)]
const AS241: [[f64; 8]; 6] = [
    [
        2509.0809287301226727,
        33430.575583588128105,
        67265.770927008700853,
        45921.953931549871457,
        13731.693765509461125,
        1971.5909503065514427,
        133.14166789178437745,
        3.387132872796366608,
    ],
    [
        5226.495278852545925,
        28729.085735721942674,
        39307.89580009271061,
        21213.794301586595867,
        5394.1960214247511077,
        687.1870074920579083,
        42.313330701600911252,
        1.0,
    ],
    [
        7.7454501427834140764e-4,
        0.0227238449892691845833,
        0.24178072517745061177,
        1.27045825245236838258,
        3.64784832476320460504,
        5.7694972214606914055,
        4.6303378461565452959,
        1.42343711074968357734,
    ],
    [
        1.05075007164441684324e-9,
        5.475938084995344946e-4,
        0.0151986665636164571966,
        0.14810397642748007459,
        0.68976733498510000455,
        1.6763848301838038494,
        2.05319162663775882187,
        1.0,
    ],
    [
        2.01033439929228813265e-7,
        2.71155556874348757815e-5,
        0.0012426609473880784386,
        0.026532189526576123093,
        0.29656057182850489123,
        1.7848265399172913358,
        5.4637849111641143699,
        6.6579046435011037772,
    ],
    [
        2.04426310338993978564e-15,
        1.4215117583164458887e-7,
        1.8463183175100546818e-5,
        7.868691311456132591e-4,
        0.0148753612908506148525,
        0.13692988092273580531,
        0.59983220655588793769,
        1.0,
    ],
];

/// A polynomial with coefficients from the highest degree, at `x` (Horner).
fn horner(c: &[f64; 8], x: f64) -> f64 {
    c.iter().fold(0.0, |acc, &k| acc * x + k)
}

/// The standard normal quantile (Wichura's AS 241, PPND16: relative error about 1e-16).
pub fn normal_quantile(p: f64) -> f64 {
    assert!(p > 0.0 && p < 1.0, "normal_quantile({p})");
    let q = p - 0.5;
    if q.abs() <= 0.425 {
        let r = 0.180625 - q * q;
        return q * horner(&AS241[0], r) / horner(&AS241[1], r);
    }
    let r = if q < 0.0 { p } else { 1.0 - p };
    let r = (-r.ln()).sqrt();
    let x = if r <= 5.0 {
        let r = r - 1.6;
        horner(&AS241[2], r) / horner(&AS241[3], r)
    } else {
        let r = r - 5.0;
        horner(&AS241[4], r) / horner(&AS241[5], r)
    };
    if q < 0.0 { -x } else { x }
}

/// The standard normal CDF, `Phi(x) = erfc(-x / sqrt 2) / 2`.
pub fn normal_cdf(x: f64) -> f64 {
    let z = x / std::f64::consts::SQRT_2;
    if x >= 0.0 { 1.0 - 0.5 * erfc(z) } else { 0.5 * erfc(-z) }
}

/// erfc(x) for x >= 0: the series of erf below 2.5, the continued fraction above (both
/// converge to double precision there).
fn erfc(x: f64) -> f64 {
    debug_assert!(x >= 0.0);
    if x < 2.5 {
        // erf(x) = 2/sqrt(pi) * sum_n (-1)^n x^(2n+1) / (n! (2n+1)).
        let mut term = x;
        let mut sum = x;
        let x2 = x * x;
        for n in 1..200 {
            term *= -x2 / n as f64;
            let add = term / (2 * n + 1) as f64;
            sum += add;
            if add.abs() < 1e-17 * sum.abs() {
                break;
            }
        }
        1.0 - 2.0 / std::f64::consts::PI.sqrt() * sum
    } else {
        // erfc(x) = exp(-x^2)/sqrt(pi) * 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))).
        let mut f = x;
        for k in (1..=60).rev() {
            f = x + (k as f64 / 2.0) / f;
        }
        (-x * x).exp() / std::f64::consts::PI.sqrt() / f
    }
}

/// The chi-square quantile with `df` degrees of freedom, by the Wilson-Hilferty cube-root
/// approximation (relative error below 1e-3 for df >= 30, 1e-5 for df near 1000).
pub fn chi_square_quantile(p: f64, df: f64) -> f64 {
    let h = 2.0 / (9.0 * df);
    df * (1.0 - h + normal_quantile(p) * h.sqrt()).powi(3)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs().max(1e-300)
    }

    #[test]
    fn mean_sd_and_standard_error() {
        let xs = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert_eq!(mean(&xs), 5.0);
        assert!(close(sample_sd(&xs), (32.0f64 / 7.0).sqrt(), 1e-15));
        let e = Estimate::of(&xs);
        assert!(close(e.se, (32.0f64 / 7.0).sqrt() / 8f64.sqrt(), 1e-15));
        assert_eq!(e.n, 8);
        assert_eq!(Estimate::of(&[3.0]).se, 0.0);
        assert_eq!(Estimate::of(&[3.0]).half_width(), 0.0);
        // Rounding noise is not sampling error.
        assert_eq!(Estimate::of(&[0.03 - 0.02, 0.01, 0.02 - 0.01]).se, 0.0);
        assert_eq!(standard_error(3.0, 9), 1.0);
        assert_eq!(combined_se(3.0, 4.0), 5.0);
    }

    /// Published t table values (e.g. NIST/SEMATECH e-Handbook, table 1.3.6.7.2).
    #[test]
    fn t_quantiles_match_the_tables() {
        for (df, t975) in [
            (1.0, 12.706),
            (2.0, 4.303),
            (5.0, 2.571),
            (10.0, 2.228),
            (19.0, 2.093),
            (39.0, 2.023),
            (99.0, 1.984),
            (299.0, 1.968),
        ] {
            let t = t_quantile(0.975, df);
            assert!((t - t975).abs() < 6e-4, "df {df}: {t} vs {t975}");
            assert!(close(t_cdf(t, df), 0.975, 1e-12), "df {df}");
        }
        assert!((t_quantile(0.995, 10.0) - 3.169).abs() < 6e-4);
        assert!((t_quantile(0.025, 19.0) + 2.093).abs() < 6e-4);
        // Large df: the normal quantile.
        assert!((t_quantile(0.975, 1e7) - 1.959_964).abs() < 1e-5);
        // Half-width of a 95 % interval over 20 runs.
        let e = Estimate { mean: 1.0, se: 0.5, n: 20 };
        assert!((e.half_width() - 2.093 * 0.5).abs() < 3e-4);
    }

    #[test]
    fn normal_quantiles_and_cdf() {
        assert!((normal_quantile(0.975) - 1.959_963_984_540_054).abs() < 1e-14);
        assert!((normal_quantile(0.5)).abs() < 1e-16);
        assert!((normal_quantile(0.001) + 3.090_232_306_167_813_5).abs() < 1e-13);
        assert!((normal_quantile(1e-10) + 6.361_340_902_404_056).abs() < 1e-11);
        for x in [-4.0, -2.0, -1.0, 0.0, 0.5, 1.96, 2.6, 3.0, 6.0] {
            let p = normal_cdf(x);
            if p > 1e-7 && p < 1.0 - 1e-7 {
                assert!((normal_quantile(p) - x).abs() < 1e-9, "x {x}");
            }
        }
        // P(|Z| < 2) and P(|Z| < 3).
        assert!((normal_cdf(2.0) - normal_cdf(-2.0) - 0.954_499_736_103_641_6).abs() < 1e-14);
        assert!((normal_cdf(3.0) - normal_cdf(-3.0) - 0.997_300_203_936_739_8).abs() < 1e-14);
    }

    #[test]
    fn chi_square_quantiles() {
        // Tables (NIST/SEMATECH e-Handbook, table 1.3.6.7.4).
        assert!(close(chi_square_quantile(0.975, 30.0), 46.979, 1e-3));
        assert!(close(chi_square_quantile(0.025, 30.0), 16.791, 1e-3));
        assert!(close(chi_square_quantile(0.975, 100.0), 129.561, 2e-4));
        assert!(close(chi_square_quantile(0.025, 100.0), 74.222, 2e-4));
    }

    #[test]
    fn z_scores_and_tolerances() {
        assert_eq!(z_score(12.0, 10.0, 0.5), Some(4.0));
        assert_eq!(z_score(12.0, 10.0, 0.0), None);
        assert_eq!(tolerance(0.5, 0.1), 2.1);
        // A reference mean of 100 (sd 30, 300 runs) against ours of 103 (sd 20, 100 runs).
        let se = combined_se(standard_error(30.0, 300), standard_error(20.0, 100));
        assert!(close(se, (900.0f64 / 300.0 + 400.0 / 100.0).sqrt(), 1e-15));
        assert!(close(z_score(103.0, 100.0, se).unwrap(), 3.0 / 7f64.sqrt(), 1e-15));
    }

    #[test]
    fn ln_gamma_values() {
        assert!(ln_gamma(1.0).abs() < 1e-14);
        assert!((ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-14);
        assert!((ln_gamma(10.0) - 362_880f64.ln()).abs() < 1e-12);
    }
}
