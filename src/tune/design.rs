//! The designs placed on the lattice (`dims[j]` levels of parameter `j`): a maximin Latin
//! hypercube for the coarse stage, axis neighbours at a shrinking step for the refinement.
//! Pure functions of their arguments and a seed.

use super::lattice::Index;
use crate::engine::rng::u01;
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

/// Latin hypercubes drawn to pick the most spread-out one.
pub const MAXIMIN_TRIES: usize = 32;

/// A uniform index below `n` (> 0).
fn below(rng: &mut Xoshiro256PlusPlus, n: usize) -> usize {
    ((u01(rng) * n as f64) as usize).min(n - 1)
}

/// One Latin hypercube of `n` points on a lattice of `dims[j]` levels per parameter: each
/// parameter's range is cut into `n` equal strata, every stratum holds exactly one point, and
/// the point falls at a random place of its stratum, rounded down to a level.
fn latin_hypercube(dims: &[usize], n: usize, rng: &mut Xoshiro256PlusPlus) -> Vec<Index> {
    let mut points = vec![vec![0; dims.len()]; n];
    for (j, &levels) in dims.iter().enumerate() {
        let mut strata: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            strata.swap(i, below(rng, i + 1));
        }
        for (p, &s) in points.iter_mut().zip(&strata) {
            let x = (s as f64 + u01(rng)) / n as f64;
            p[j] = ((x * levels as f64) as usize).min(levels - 1);
        }
    }
    points
}

/// Squared distance between two points, each coordinate scaled to [0, 1].
fn distance2(a: &Index, b: &Index, dims: &[usize]) -> f64 {
    a.iter()
        .zip(b)
        .zip(dims)
        .filter(|&(_, &l)| l > 1)
        .map(|((&x, &y), &l)| {
            let d = (x as f64 - y as f64) / (l - 1) as f64;
            d * d
        })
        .sum()
}

/// The smallest distance between two distinct points of a design (infinite for one point).
fn min_distance(points: &[Index], dims: &[usize]) -> f64 {
    let mut best = f64::INFINITY;
    for (i, a) in points.iter().enumerate() {
        for b in &points[i + 1..] {
            best = best.min(distance2(a, b, dims));
        }
    }
    best
}

/// The coarse design: of [`MAXIMIN_TRIES`] Latin hypercubes of `n` points, the one whose
/// closest two points are farthest apart (repeated points removed, first kept), from `seed`.
pub fn maximin_lhs(dims: &[usize], n: usize, seed: u64) -> Vec<Index> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut best: Option<(f64, Vec<Index>)> = None;
    for _ in 0..MAXIMIN_TRIES {
        let mut design = latin_hypercube(dims, n, &mut rng);
        let mut seen = std::collections::BTreeSet::new();
        design.retain(|p| seen.insert(p.clone()));
        // Repeats (more points than levels) count as distance 0 through the shorter design.
        let score = if design.len() < n { -((n - design.len()) as f64) } else { min_distance(&design, dims) };
        if best.as_ref().is_none_or(|(b, _)| score > *b) {
            best = Some((score, design));
        }
    }
    best.map(|(_, d)| d).unwrap_or_default()
}

/// A uniformly random lattice point (to replace design points that validation refuses).
pub fn random_point(dims: &[usize], rng: &mut Xoshiro256PlusPlus) -> Index {
    dims.iter().map(|&l| below(rng, l)).collect()
}

/// The refinement's step in round `round` (1-based): a quarter of each parameter's levels
/// in round 1, halved each round, at least one level.
pub fn step(dims: &[usize], round: u32) -> Vec<usize> {
    dims.iter().map(|&l| ((l.saturating_sub(1)) >> (round + 1).min(63)).max(1)).collect()
}

/// The axis neighbours of `center` at `step`: one parameter moved up or down by its step,
/// clamped to the lattice; the centre itself left out.
pub fn neighbours(center: &Index, step: &[usize], dims: &[usize]) -> Vec<Index> {
    let mut out = Vec::with_capacity(2 * dims.len());
    for j in 0..dims.len() {
        for up in [false, true] {
            let mut p = center.clone();
            p[j] =
                if up { (center[j] + step[j]).min(dims[j] - 1) } else { center[j].saturating_sub(step[j]) };
            if p != *center && !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}

/// The random stream of a search, from its seed.
pub fn rng(seed: u64, label: u64) -> Xoshiro256PlusPlus {
    Xoshiro256PlusPlus::seed_from_u64(crate::engine::rng::derive(seed, label))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_latin_hypercube_fills_every_stratum() {
        let dims = [10, 10, 10];
        let d = maximin_lhs(&dims, 10, 7);
        assert_eq!(d.len(), 10);
        for j in 0..3 {
            let mut levels: Vec<usize> = d.iter().map(|p| p[j]).collect();
            levels.sort();
            assert_eq!(levels, (0..10).collect::<Vec<_>>(), "parameter {j}: one point per level");
        }
        assert_eq!(d, maximin_lhs(&dims, 10, 7), "the same seed gives the same design");
        assert_ne!(d, maximin_lhs(&dims, 10, 8));
    }

    #[test]
    fn designs_larger_than_the_lattice_lose_their_repeats() {
        let d = maximin_lhs(&[2], 5, 1);
        assert_eq!(d.len(), 2);
    }

    #[test]
    fn neighbours_move_one_parameter_within_the_lattice() {
        let dims = [9, 7];
        assert_eq!(step(&dims, 1), [2, 1]);
        assert_eq!(step(&dims, 2), [1, 1]);
        assert_eq!(step(&dims, 9), [1, 1]);
        let n = neighbours(&vec![0, 3], &[2, 1], &dims);
        assert_eq!(n, vec![vec![2, 3], vec![0, 2], vec![0, 4]]);
        assert!(neighbours(&vec![0], &[1], &[1]).is_empty());
    }
}
