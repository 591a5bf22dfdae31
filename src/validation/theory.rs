//! The closed forms the checks compare against: Erlang B and C, Pollaczek-Khinchine, the
//! moments of the service-time distributions, and the backoff formulas' means and bounds.
//! Every function is the textbook formula, computed from the experiment file's own values.

use crate::experiment::spec::discrete_moment;
use crate::experiment::{BackoffSpec, DistSpec, Duration};

/// Erlang B: the share of arrivals blocked in an M/G/c/c system offered `a` erlangs, by the
/// stable recursion `B(0) = 1`, `B(k) = a B(k-1) / (k + a B(k-1))`.
pub fn erlang_b(c: u32, a: f64) -> f64 {
    let mut b = 1.0;
    for k in 1..=c {
        b = a * b / (k as f64 + a * b);
    }
    b
}

/// Erlang C: the probability that an arrival waits in an M/M/c queue offered `a < c` erlangs,
/// `C = c B / (c - a (1 - B))`.
pub fn erlang_c(c: u32, a: f64) -> f64 {
    let b = erlang_b(c, a);
    c as f64 * b / (c as f64 - a * (1.0 - b))
}

/// M/M/c mean wait in the queue: `W_q = C(c, a) / (c mu - lambda)`, with `a = lambda / mu`.
pub fn erlang_c_wait(c: u32, lambda: f64, mean_service_s: f64) -> f64 {
    let mu = 1.0 / mean_service_s;
    erlang_c(c, lambda * mean_service_s) / (c as f64 * mu - lambda)
}

/// Pollaczek-Khinchine: the M/G/1 mean wait in the queue, `W_q = lambda E[S^2] / (2 (1 - rho))`.
pub fn pollaczek_khinchine_wait(lambda: f64, mean_service_s: f64, second_moment_s2: f64) -> f64 {
    let rho = lambda * mean_service_s;
    lambda * second_moment_s2 / (2.0 * (1.0 - rho))
}

/// The mean of a duration distribution, in seconds (`normal` is |N(mean, sd)|: the folded
/// normal's mean).
pub fn dist_mean(d: &DistSpec) -> f64 {
    match *d {
        DistSpec::Constant { value } => value.as_secs_f64(),
        DistSpec::Uniform { low, high } => (low.as_secs_f64() + high.as_secs_f64()) / 2.0,
        DistSpec::Exponential { mean } => mean.as_secs_f64(),
        DistSpec::Lognormal { median, sigma } => median.as_secs_f64() * (sigma * sigma / 2.0).exp(),
        DistSpec::Discrete { ref points } => discrete_moment(points, 1),
        DistSpec::Normal { mean, sd } => {
            let (m, s) = (mean.as_secs_f64(), sd.as_secs_f64());
            if s == 0.0 {
                return m.abs();
            }
            s * (2.0 / std::f64::consts::PI).sqrt() * (-m * m / (2.0 * s * s)).exp()
                + m * (1.0 - 2.0 * crate::stats::normal_cdf(-m / s))
        }
    }
}

/// The second moment `E[S^2]` of a duration distribution, in s^2.
pub fn dist_second_moment(d: &DistSpec) -> f64 {
    match *d {
        DistSpec::Constant { value } => value.as_secs_f64().powi(2),
        DistSpec::Uniform { low, high } => {
            let (l, h) = (low.as_secs_f64(), high.as_secs_f64());
            (l * l + l * h + h * h) / 3.0
        }
        DistSpec::Exponential { mean } => 2.0 * mean.as_secs_f64().powi(2),
        DistSpec::Lognormal { median, sigma } => median.as_secs_f64().powi(2) * (2.0 * sigma * sigma).exp(),
        DistSpec::Discrete { ref points } => discrete_moment(points, 2),
        // Folding does not change the square.
        DistSpec::Normal { mean, sd } => mean.as_secs_f64().powi(2) + sd.as_secs_f64().powi(2),
    }
}

/// The mean and the bounds of the delay before retry `k` (1-based), in seconds, for the
/// backoff kinds the suite checks; None for the others.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DelayLaw {
    pub mean: f64,
    pub low: f64,
    pub high: f64,
}

/// DESIGN §4.1: `v = min(cap, base * multiplier^(k-1))`; exponential `v`; full jitter
/// `U(0, v)`; equal jitter `v/2 + U(0, v/2)`; decorrelated jitter
/// `s_k = min(cap, U(base, 3 s_(k-1)))`, `s_0 = base` (mean by [`decorrelated_means`], bounds
/// `[base, min(cap, 3^k base)]`).
pub fn delay_laws(b: &BackoffSpec, retries: u32) -> Option<Vec<DelayLaw>> {
    let cap = |c: &Option<Duration>| c.map_or(f64::INFINITY, Duration::as_secs_f64);
    let v = |base: Duration, cap: f64, m: f64, k: u32| cap.min(base.as_secs_f64() * m.powi(k as i32 - 1));
    let laws = match b {
        BackoffSpec::Exponential { base, cap: c, multiplier, immediate_first } => (1..=retries)
            .map(|k| {
                let v = if *immediate_first && k == 1 { 0.0 } else { v(*base, cap(c), *multiplier, k) };
                DelayLaw { mean: v, low: v, high: v }
            })
            .collect(),
        BackoffSpec::FullJitter { base, cap: c, multiplier } => (1..=retries)
            .map(|k| {
                let v = v(*base, cap(c), *multiplier, k);
                DelayLaw { mean: v / 2.0, low: 0.0, high: v }
            })
            .collect(),
        BackoffSpec::EqualJitter { base, cap: c, multiplier } => (1..=retries)
            .map(|k| {
                let v = v(*base, cap(c), *multiplier, k);
                DelayLaw { mean: 0.75 * v, low: v / 2.0, high: v }
            })
            .collect(),
        BackoffSpec::DecorrelatedJitter { base, cap: c } => {
            let (b, c) = (base.as_secs_f64(), cap(c));
            decorrelated_means(b, c, retries)
                .into_iter()
                .enumerate()
                .map(|(i, mean)| DelayLaw { mean, low: b, high: c.min(b * 3f64.powi(i as i32 + 1)) })
                .collect()
        }
        _ => return None,
    };
    Some(laws)
}

/// Cells of the grid that carries the distribution of `s_(k-1)` in [`decorrelated_means`].
const GRID: usize = 200_000;

/// The means of the decorrelated-jitter delays `s_1 .. s_K`, `s_k = min(cap, U(base,
/// 3 s_(k-1)))`, `s_0 = base`.
///
/// Given `s_(k-1) = x`, `E[s_k | x] = g(x)` exactly: `(base + 3x) / 2` when `3x <= cap`, else
/// the uniform part below the cap plus the atom at the cap,
/// `(cap - base)/(3x - base) * (base + cap)/2 + (3x - cap)/(3x - base) * cap`. Without a cap
/// that binds this is the recursion `E_k = (base + 3 E_(k-1)) / 2`; with one, the law of
/// `s_(k-1)` is needed: it is carried on a grid of 200,000 cells over [base, cap] plus the
/// atom at the cap, each cell's mass placed at its midpoint (an error of order (cell width)^2,
/// below 1e-9 relative here), and pushed one retry further by spreading each mass uniformly
/// over [base, min(3x, cap)].
pub fn decorrelated_means(base: f64, cap: f64, retries: u32) -> Vec<f64> {
    let g = |x: f64| {
        let u = 3.0 * x;
        if u <= cap {
            (base + u) / 2.0
        } else {
            (cap - base) / (u - base) * (base + cap) / 2.0 + (u - cap) / (u - base) * cap
        }
    };
    if !cap.is_finite() || base * 3f64.powi(retries as i32) <= cap || cap <= base {
        // The cap never binds (or there is no room under it): the linear recursion.
        let mut out = Vec::new();
        let mut e = base;
        for _ in 0..retries {
            e = if cap <= base { cap.min(base) } else { (base + 3.0 * e) / 2.0 };
            out.push(e);
        }
        return out;
    }
    let width = (cap - base) / GRID as f64;
    let mid = |i: usize| base + (i as f64 + 0.5) * width;
    // The law of s_(k-1): masses at the cells' midpoints, and the atom at the cap.
    let mut cells = vec![0.0f64; GRID];
    let mut atom = 0.0;
    // s_0 = base: one point mass, handled as a source of its own.
    let mut sources: Vec<(f64, f64)> = vec![(base, 1.0)];
    let mut out = Vec::new();
    for k in 1..=retries {
        out.push(sources.iter().map(|&(x, w)| w * g(x)).sum::<f64>() + atom * g(cap));
        if k == retries {
            break;
        }
        // Push every mass one retry further: a uniform spread over [base, min(3x, cap)] and
        // the rest on the cap's atom.
        let mut density_steps = vec![0.0f64; GRID + 1];
        let mut partial = vec![0.0f64; GRID];
        let mut next_atom = 0.0;
        let mut spread = |x: f64, w: f64, steps: &mut Vec<f64>, partial: &mut Vec<f64>| {
            let u = (3.0 * x).min(cap);
            let total = 3.0 * x - base;
            let density = w / total;
            next_atom += w * (3.0 * x - u) / total;
            let span = (u - base) / width;
            let full = (span.floor() as usize).min(GRID);
            steps[0] += density * width;
            steps[full] -= density * width;
            if full < GRID {
                partial[full] += density * width * (span - full as f64);
            }
        };
        for &(x, w) in &sources {
            spread(x, w, &mut density_steps, &mut partial);
        }
        if atom > 0.0 {
            spread(cap, atom, &mut density_steps, &mut partial);
        }
        let mut level = 0.0;
        for i in 0..GRID {
            level += density_steps[i];
            cells[i] = level + partial[i];
        }
        atom = next_atom;
        sources = cells.iter().enumerate().filter(|(_, w)| **w > 0.0).map(|(i, &w)| (mid(i), w)).collect();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::rng::u01;
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    #[test]
    fn erlang_b_and_c() {
        // Erlang B(10, 8) = 0.12166 (tables); B(1, a) = a / (1 + a).
        assert!((erlang_b(10, 8.0) - 0.121_661).abs() < 1e-6);
        assert!((erlang_b(1, 0.5) - 1.0 / 3.0).abs() < 1e-15);
        // M/M/1: C = rho, W_q = rho / (mu - lambda).
        assert!((erlang_c(1, 0.8) - 0.8).abs() < 1e-15);
        assert!((erlang_c_wait(1, 800.0, 0.001) - 0.8 / 200.0).abs() < 1e-15);
        assert!((erlang_c(10, 8.0) - 0.409_180).abs() < 1e-6);
    }

    #[test]
    fn pollaczek_khinchine() {
        // M/D/1 at rho = 0.8, service 1 ms: rho / (2 mu (1 - rho)) = 2 ms.
        let d = DistSpec::Constant { value: Duration(1_000_000) };
        let w = pollaczek_khinchine_wait(800.0, dist_mean(&d), dist_second_moment(&d));
        assert!((w - 0.002).abs() < 1e-15);
        // M/M/1: twice that.
        let e = DistSpec::Exponential { mean: Duration(1_000_000) };
        let w = pollaczek_khinchine_wait(800.0, dist_mean(&e), dist_second_moment(&e));
        assert!((w - 0.004).abs() < 1e-15);
    }

    #[test]
    fn distribution_moments() {
        let ms = |v: u64| Duration(v * 1_000_000);
        let ln = DistSpec::Lognormal { median: ms(10), sigma: 1.0 };
        assert!((dist_mean(&ln) - 0.01 * 0.5f64.exp()).abs() < 1e-15);
        let n = DistSpec::Normal { mean: ms(10), sd: ms(2) };
        // Folding at 5 sd changes the mean by less than 1e-9.
        assert!((dist_mean(&n) - 0.01).abs() < 1e-9);
        let half = DistSpec::Normal { mean: ms(0), sd: ms(2) };
        assert!((dist_mean(&half) - 0.002 * (2.0 / std::f64::consts::PI).sqrt()).abs() < 1e-15);
        let u = DistSpec::Uniform { low: ms(0), high: ms(3) };
        assert!((dist_second_moment(&u) - 3e-6).abs() < 1e-18);
    }

    #[test]
    fn decorrelated_means_without_a_binding_cap_follow_the_recursion() {
        let m = decorrelated_means(0.01, 1.0, 4);
        let expect = [0.02, 0.035, 0.0575, 0.09125];
        for (a, b) in m.iter().zip(expect) {
            assert!((a - b).abs() < 1e-15, "{m:?}");
        }
    }

    /// The grid against a Monte Carlo of the recursion itself (1,000,000 draws: standard error
    /// about 3e-4 relative), with a cap that binds from the first retry and one that binds
    /// only later.
    #[test]
    fn decorrelated_means_with_a_cap_match_monte_carlo() {
        for (base, cap) in [(0.01, 0.02), (0.01, 1.0), (0.005, 0.1)] {
            let k = 6;
            let grid = decorrelated_means(base, cap, k);
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
            let n = 1_000_000;
            let mut sums = vec![0.0; k as usize];
            let mut sq = vec![0.0; k as usize];
            for _ in 0..n {
                let mut s: f64 = base;
                for j in 0..k as usize {
                    s = cap.min(base + (3.0 * s - base) * u01(&mut rng));
                    sums[j] += s;
                    sq[j] += s * s;
                }
            }
            for j in 0..k as usize {
                let mean = sums[j] / n as f64;
                let se = ((sq[j] / n as f64 - mean * mean) / n as f64).sqrt();
                assert!(
                    (grid[j] - mean).abs() < 5.0 * se + 1e-12,
                    "base {base} cap {cap} k {}: {} vs {mean}",
                    j + 1,
                    grid[j]
                );
            }
        }
        // The first retry exactly: min(cap, U(b, 3b)) with cap = 2b has mean 1.75 b.
        assert!((decorrelated_means(0.01, 0.02, 1)[0] - 0.0175).abs() < 1e-15);
    }

    #[test]
    fn delay_laws_follow_design_4_1() {
        let ms = |v: u64| Duration(v * 1_000_000);
        let full = BackoffSpec::FullJitter { base: ms(10), cap: Some(ms(50)), multiplier: 2.0 };
        let laws = delay_laws(&full, 4).unwrap();
        assert_eq!(laws[0], DelayLaw { mean: 0.005, low: 0.0, high: 0.01 });
        assert_eq!(laws[3], DelayLaw { mean: 0.025, low: 0.0, high: 0.05 }, "the cap binds at 80 ms");
        let equal = BackoffSpec::EqualJitter { base: ms(10), cap: None, multiplier: 2.0 };
        assert_eq!(delay_laws(&equal, 2).unwrap()[1], DelayLaw { mean: 0.015, low: 0.01, high: 0.02 });
        let dec = BackoffSpec::DecorrelatedJitter { base: ms(10), cap: Some(ms(50)) };
        let laws = delay_laws(&dec, 3).unwrap();
        assert_eq!((laws[0].low, laws[0].high), (0.01, 0.03));
        assert_eq!((laws[2].low, laws[2].high), (0.01, 0.05));
        assert!(delay_laws(&BackoffSpec::None {}, 1).is_none());
    }
}
