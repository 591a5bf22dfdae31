//! The tolerance rule of the validation suite: how far a simulated value may sit from the
//! expected one, in standard errors of the difference plus a stated resolution.

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
