//! The standard normal distribution (quantile and CDF) and the chi-square quantile derived
//! from it.

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
    } else if x > 27.5 {
        // exp(-x^2) is exactly 0 in f64 beyond 27.3: the continued fraction would only
        // divide zero (this is the common case of a fit whose noise is small).
        0.0
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
