//! Student's t distribution: the exact CDF and quantile (the validation suite), and the
//! three-decimal table of `t(0.975, df)` that summary.csv's intervals, the report and the
//! comparison print. The two are kept apart on purpose: the table's rounding (2.093 for
//! df = 19, where the exact quantile is 2.0930240...) is part of every published interval,
//! so switching either caller to the other would change the digits of its outputs.

use super::special::incomplete_beta;

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
