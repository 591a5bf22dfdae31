//! The one-sample Kolmogorov-Smirnov test: how far an empirical distribution lies from a
//! continuous model, given the model's CDF at each observation.

/// `D = sup |F_n(x) - F(x)|`, from `u_i = F(x_i)` (the probability integral transform of each
/// observation under the model). `u` is sorted in place; `NaN` is not allowed.
pub fn ks_statistic(u: &mut [f64]) -> f64 {
    u.sort_by(f64::total_cmp);
    let n = u.len() as f64;
    u.iter().enumerate().fold(0.0_f64, |d, (i, &ui)| {
        let above = (i + 1) as f64 / n - ui;
        let below = ui - i as f64 / n;
        d.max(above).max(below)
    })
}

/// `P(D_n >= d)` for a fully specified model: Kolmogorov's limiting distribution with
/// Stephens' small-sample correction, `lambda = (sqrt(n) + 0.12 + 0.11 / sqrt(n)) d`,
/// `Q(lambda) = 2 sum_(k>=1) (-1)^(k-1) exp(-2 k^2 lambda^2)` (Stephens 1970; Numerical Recipes
/// §14.3). When the model's parameters were fitted to the same observations the true
/// p-value is smaller than this one (Lilliefors): a low value rejects reliably, a high value
/// does not prove the model.
pub fn ks_p_value(d: f64, n: usize) -> f64 {
    if n == 0 {
        return 1.0;
    }
    let sn = (n as f64).sqrt();
    let lambda = (sn + 0.12 + 0.11 / sn) * d;
    if lambda < 0.2 {
        // The series converges too slowly there; the probability is 1 to 15 digits.
        return 1.0;
    }
    let mut sum = 0.0;
    let mut sign = 1.0;
    for k in 1..=100 {
        let term = sign * (-2.0 * (k * k) as f64 * lambda * lambda).exp();
        sum += term;
        if term.abs() < 1e-16 {
            break;
        }
        sign = -sign;
    }
    (2.0 * sum).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistic_of_a_perfect_grid_is_half_a_step() {
        let mut u: Vec<f64> = (0..10).map(|i| (i as f64 + 0.5) / 10.0).collect();
        assert!((ks_statistic(&mut u) - 0.05).abs() < 1e-12);
    }

    #[test]
    fn statistic_of_a_point_mass_is_near_one() {
        let mut u = vec![0.0; 50];
        assert!((ks_statistic(&mut u) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn p_values_match_the_tables() {
        // Kolmogorov's limit: Q(1.358) = 0.05, Q(1.628) = 0.01 (large n, the correction -> 1).
        let n = 1_000_000;
        assert!((ks_p_value(1.358 / (n as f64).sqrt(), n) - 0.05).abs() < 5e-4);
        assert!((ks_p_value(1.628 / (n as f64).sqrt(), n) - 0.01).abs() < 2e-4);
        assert_eq!(ks_p_value(0.0, 10), 1.0);
        assert!(ks_p_value(0.9, 100) < 1e-12);
    }
}
