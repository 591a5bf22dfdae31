//! The one way policies turn random bits into a uniform real.

use rand::Rng;

/// `U(0, 1)`: the top 53 bits of one `u64` draw, so every value is a multiple of 2^-53 in
/// `[0, 1)`. Spelled out here (rather than left to a library) so results stay the same across
/// library versions.
#[inline]
pub fn u01<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// `U(a, b)` for `a <= b`.
#[inline]
pub fn uniform<R: Rng + ?Sized>(rng: &mut R, a: f64, b: f64) -> f64 {
    a + (b - a) * u01(rng)
}
