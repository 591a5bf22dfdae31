//! Numbers for people, to a number of significant digits: the one formatter behind the
//! report, `tune` and VALIDATION.md. The magnitude of a number is found by multiplying and
//! dividing by 10 in a fixed order (each step correctly rounded, so the same on every IEEE
//! machine, unlike `log10`, whose last bit depends on the platform's maths library), and
//! Rust's float formatting is exact and locale-free, so the text is the same bytes wherever
//! it is made.

/// The decimal exponent `e` with `10^e <= |x| < 10^(e+1)`, for a finite non-zero `x`; exact
/// for `|x| >= 1`, and below 1 within the rounding of the powers `0.1, 0.01, ...` it compares
/// against (a number a hair from a power of ten may land on either side).
pub fn decimal_exponent(x: f64) -> i32 {
    let a = x.abs();
    let mut e = 0i32;
    let mut p = 1.0f64;
    if a >= 1.0 {
        while a >= p * 10.0 {
            p *= 10.0;
            e += 1;
        }
    } else {
        while a < p {
            p /= 10.0;
            e -= 1;
        }
    }
    e
}

/// `x` with `decimals` places, never "-0".
pub fn fixed(x: f64, decimals: usize) -> String {
    let s = format!("{x:.decimals$}");
    match s.strip_prefix('-') {
        Some(rest) if rest.chars().all(|c| c == '0' || c == '.') => rest.to_string(),
        _ => s,
    }
}

/// `x` to `digits` significant digits with its trailing zeros kept (`0.9500`), as a table of
/// measured values prints them; whole numbers keep all their digits, never an exponent.
pub fn sig_padded(x: f64, digits: i32) -> String {
    if !x.is_finite() {
        return x.to_string();
    }
    if x.fract() == 0.0 && x.abs() < 1e15 {
        return fixed(x, 0);
    }
    fixed(x, (digits - 1 - decimal_exponent(x)).max(0) as usize)
}

/// `x` to `digits` significant digits without trailing zeros (`0.95`, `3.2`), for a value
/// alone in a sentence or a cell; whole numbers keep all their digits, never an exponent.
pub fn sig(x: f64, digits: i32) -> String {
    let s = sig_padded(x, digits);
    if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn significant_digits() {
        assert_eq!(sig(1.0, 4), "1");
        assert_eq!(sig(4213.8, 4), "4214");
        assert_eq!(sig(0.0698286, 3), "0.0698");
        assert_eq!(sig(3.2, 4), "3.2");
        assert_eq!(sig(-0.00001, 1), "-0.00001");
        assert_eq!(sig_padded(0.95, 4), "0.9500");
        assert_eq!(sig_padded(-0.0000012, 2), "-0.0000012");
        assert_eq!(sig_padded(-0.0, 3), "0");
        assert_eq!(sig_padded(f64::INFINITY, 3), "inf");
        assert_eq!(sig_padded(0.121661, 4), "0.1217");
        assert_eq!(sig_padded(2.046, 4), "2.046");
        assert_eq!(sig_padded(101173.5, 4), "101174");
        assert_eq!(sig_padded(1000.0, 4), "1000");
        assert_eq!(sig_padded(40.0, 4), "40");
        assert_eq!(sig_padded(-3.0, 4), "-3");
        assert_eq!(sig_padded(0.00089, 2), "0.00089");
        assert_eq!(sig_padded(-0.00001, 2), "-0.000010");
        assert_eq!(sig_padded(0.0, 4), "0");
        assert_eq!(sig_padded(9.9996, 4), "10.000");
    }

    #[test]
    fn exponents() {
        for e in 0..=15 {
            assert_eq!(decimal_exponent(10f64.powi(e)), e, "10^{e}");
            assert_eq!(decimal_exponent(10f64.powi(e) * 0.999_999), e - 1, "just below 10^{e}");
        }
        for e in -12..=15 {
            assert_eq!(decimal_exponent(-3.0 * 10f64.powi(e)), e, "-3 x 10^{e}");
        }
        assert_eq!(decimal_exponent(0.999), -1);
    }
}
