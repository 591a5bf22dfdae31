//! Minimising a smooth function of a few unconstrained variables without derivatives: the
//! Nelder-Mead simplex with the standard coefficients (reflection 1, expansion 2, contraction
//! 1/2, shrink 1/2; Nelder & Mead 1965, as in Numerical Recipes §10.5). Used to fit the
//! parameters of a backoff to recorded delays by maximum likelihood, where the variables are
//! logs of durations and the objective is a negative log-likelihood.

/// The minimum found: the point and the function's value there.
#[derive(Clone, Debug, PartialEq)]
pub struct Minimum {
    pub x: Vec<f64>,
    pub value: f64,
}

/// Minimises `f` from `start`, with an initial simplex of `start` plus `step` along each axis.
/// Stops when the simplex's values agree within `tolerance` (relative, with an absolute floor
/// of 1e-12) or after `max_evaluations`. `f` may return `+inf` for points outside its domain.
pub fn minimise<F: FnMut(&[f64]) -> f64>(
    mut f: F,
    start: &[f64],
    step: f64,
    tolerance: f64,
    max_evaluations: usize,
) -> Minimum {
    let n = start.len();
    let mut simplex: Vec<Vec<f64>> = (0..=n)
        .map(|i| {
            let mut p = start.to_vec();
            if i > 0 {
                p[i - 1] += step;
            }
            p
        })
        .collect();
    let mut values: Vec<f64> = simplex.iter().map(|p| f(p)).collect();
    let mut evaluations = n + 1;
    let along = |from: &[f64], to: &[f64], t: f64| -> Vec<f64> {
        from.iter().zip(to).map(|(a, b)| a + t * (b - a)).collect()
    };
    loop {
        let mut order: Vec<usize> = (0..=n).collect();
        order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
        simplex = order.iter().map(|&i| simplex[i].clone()).collect();
        values = order.iter().map(|&i| values[i]).collect();
        let (best, worst) = (values[0], values[n]);
        let spread = (worst - best).abs();
        if spread <= tolerance * (best.abs() + worst.abs()) / 2.0 + 1e-12 || evaluations >= max_evaluations {
            return Minimum { x: simplex[0].clone(), value: best };
        }
        let centroid: Vec<f64> =
            (0..n).map(|j| simplex[..n].iter().map(|p| p[j]).sum::<f64>() / n as f64).collect();
        // The reflection of the worst point through the centroid of the others.
        let reflected = along(&simplex[n], &centroid, 2.0);
        let fr = f(&reflected);
        evaluations += 1;
        if fr < values[0] {
            let expanded = along(&simplex[n], &centroid, 3.0);
            let fe = f(&expanded);
            evaluations += 1;
            if fe < fr {
                (simplex[n], values[n]) = (expanded, fe);
            } else {
                (simplex[n], values[n]) = (reflected, fr);
            }
        } else if fr < values[n - 1] {
            (simplex[n], values[n]) = (reflected, fr);
        } else {
            let contracted = if fr < values[n] {
                along(&simplex[n], &centroid, 1.5)
            } else {
                along(&simplex[n], &centroid, 0.5)
            };
            let fc = f(&contracted);
            evaluations += 1;
            if fc < values[n].min(fr) {
                (simplex[n], values[n]) = (contracted, fc);
            } else {
                for i in 1..=n {
                    simplex[i] = along(&simplex[0], &simplex[i], 0.5);
                    values[i] = f(&simplex[i]);
                }
                evaluations += n;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_minimum_of_rosenbrock() {
        let rosenbrock = |x: &[f64]| (1.0 - x[0]).powi(2) + 100.0 * (x[1] - x[0] * x[0]).powi(2);
        let m = minimise(rosenbrock, &[-1.2, 1.0], 0.5, 1e-14, 10_000);
        assert!((m.x[0] - 1.0).abs() < 1e-3 && (m.x[1] - 1.0).abs() < 1e-3, "{m:?}");
    }

    #[test]
    fn steps_around_an_infinite_region() {
        let walled = |x: &[f64]| if x[0] < 0.0 { f64::INFINITY } else { (x[0] - 2.0).powi(2) };
        let m = minimise(walled, &[0.5], 1.0, 1e-14, 1_000);
        assert!((m.x[0] - 2.0).abs() < 1e-4, "{m:?}");
    }
}
