//! Numbers for people: rounded to the digits that mean something, formatted the same way on
//! every platform (Rust's float formatting is exact and locale-free).

use crate::stats::{decimal_exponent, fixed, sig};

/// Decimal places that show `x` to `sig` significant digits (0 for numbers >= 10^(sig-1)).
fn decimals_for(x: f64, sig: i32) -> usize {
    if x == 0.0 || !x.is_finite() {
        return 0;
    }
    (sig - 1 - decimal_exponent(x)).clamp(0, 12) as usize
}

/// The rounding step of a half-width: one significant digit, two when it starts with 1 (so
/// that 0.0014 does not become 0.001). Returned as a power of ten's exponent.
fn half_width_exponent(hw: f64) -> i32 {
    let e = hw.log10().floor() as i32;
    let leading = (hw / 10f64.powi(e)).round();
    if leading < 2.0 { e - 1 } else { e }
}

/// Rounds to a multiple of `10^e` and prints without noise.
fn round_to(x: f64, e: i32) -> String {
    if e >= 0 {
        let q = 10f64.powi(e);
        fixed((x / q).round() * q, 0)
    } else {
        fixed(x, (-e) as usize)
    }
}

/// `mean ± half-width`, both rounded to the half-width's last meaningful digit:
/// `0.958 ± 0.002`, `134780 ± 130`. Without an interval, the mean to 4 significant digits.
pub fn with_interval(mean: f64, half_width: Option<f64>) -> String {
    match half_width {
        Some(hw) if hw > 0.0 && hw.is_finite() => {
            let e = half_width_exponent(hw);
            format!("{} ± {}", round_to(mean, e), round_to(hw, e))
        }
        _ => sig(mean, 4),
    }
}

/// A value for a table cell next to others of its column: 4 significant digits.
pub fn cell(x: Option<f64>) -> String {
    x.map(|x| sig(x, 4)).unwrap_or_default()
}

/// An axis tick: short, exact for round numbers, `1.5k`-free (plain digits).
pub fn tick(x: f64, step: f64) -> String {
    let d = if step > 0.0 && step.is_finite() { decimals_for(step, 1) } else { decimals_for(x, 3) };
    let abs = x.abs();
    if x != 0.0 && !(1e-4..1e6).contains(&abs) {
        let s = format!("{x:.1e}");
        return s.replace(".0e", "e");
    }
    fixed(x, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_round_to_the_half_width() {
        assert_eq!(with_interval(0.95847466959527, Some(0.0003)), "0.9585 ± 0.0003");
        assert_eq!(with_interval(0.95847466959527, Some(0.0021)), "0.958 ± 0.002");
        assert_eq!(with_interval(0.95847466959527, Some(0.0014)), "0.9585 ± 0.0014");
        assert_eq!(with_interval(134783.25, Some(132.4)), "134780 ± 130");
        assert_eq!(with_interval(134783.25, Some(1324.0)), "134800 ± 1300");
        assert_eq!(with_interval(3.5, None), "3.5");
        assert_eq!(with_interval(0.123456, Some(0.0)), "0.1235");
    }

    #[test]
    fn ticks() {
        assert_eq!(tick(0.5, 0.1), "0.5");
        assert_eq!(tick(2000.0, 500.0), "2000");
        assert_eq!(tick(-0.0, 1.0), "0");
    }
}
