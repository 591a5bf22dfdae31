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
    assert_eq!(Estimate::of(&[3.0]).half_width, None);
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
    let e = Estimate::from_se(1.0, 0.5, 20);
    assert!((e.half_width.unwrap() - 2.093 * 0.5).abs() < 3e-4);
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

#[test]
fn t_quantiles_match_tables() {
    assert_eq!(t975(1), 12.706);
    assert_eq!(t975(19), 2.093);
    // Tables: t(0.975, 40) = 2.021, 60: 2.000, 120: 1.980.
    assert!((t975(40) - 2.021).abs() < 1e-3, "{}", t975(40));
    assert!((t975(60) - 2.000).abs() < 1e-3, "{}", t975(60));
    assert!((t975(120) - 1.980).abs() < 1e-3, "{}", t975(120));
    // Continuity at the end of the table.
    assert!((t975(31) - 2.040).abs() < 1e-3, "{}", t975(31));
}

#[test]
fn interval_from_values() {
    let e = Estimate::from_values(&[1.0, 2.0, 3.0]).unwrap();
    assert_eq!(e.mean, 2.0);
    assert!((e.half_width.unwrap() - 4.303 / 3f64.sqrt()).abs() < 1e-12);
    assert_eq!(Estimate::from_values(&[5.0]).unwrap().half_width, None);
    assert_eq!(Estimate::from_values(&[]), None);
}
