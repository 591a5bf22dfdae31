//! Envoy's least-request balancer with equal weights (`LeastRequestLoadBalancer::
//! unweightedHostPick`, `source/common/upstream/load_balancer_impl.cc`; `choice_count` 2,
//! `least_request.proto`): `choice_count` hosts drawn **with replacement**; the first drawn is
//! the candidate, and a later draw replaces it only with strictly fewer active requests. With
//! two hosts the busier one is picked when both draws are it: 1/4 of the time (Envoy's docs,
//! `load_balancers.rst`).

use super::uniform_index;
use rand::Rng;

/// One pick among `candidates`, by their `active` requests.
#[inline]
pub fn pick<R: Rng + ?Sized>(candidates: &[u32], active: &[u32], choice_count: u32, rng: &mut R) -> u32 {
    let mut best = candidates[uniform_index(candidates.len(), rng)];
    for _ in 1..choice_count {
        let drawn = candidates[uniform_index(candidates.len(), rng)];
        if active[drawn as usize] < active[best as usize] {
            best = drawn;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    /// Envoy's documented case: two hosts, one busier; two draws with replacement pick the
    /// busier host exactly when both draws are it, with probability 1/4.
    #[test]
    fn two_hosts_pick_the_busier_a_quarter_of_the_time() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(42);
        let n = 400_000;
        let busier = (0..n).filter(|_| pick(&[0, 1], &[5, 2], 2, &mut rng) == 0).count();
        let p = busier as f64 / n as f64;
        let se = (0.25f64 * 0.75 / n as f64).sqrt();
        assert!(
            (p - 0.25).abs() < 4.0 * se,
            "busier host picked {p} of the time, expected 0.25 +- {}",
            4.0 * se
        );
    }

    #[test]
    fn ties_keep_the_first_draw_and_more_choices_find_the_idlest() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        // One idle host among ten busy ones: with 30 choices it is nearly always found.
        let active: Vec<u32> = (0..10).map(|i| if i == 7 { 0 } else { 9 }).collect();
        let c: Vec<u32> = (0..10).collect();
        let found = (0..1000).filter(|_| pick(&c, &active, 30, &mut rng) == 7).count();
        assert!(found > 940, "{found}");
        // Equal loads: the first draw stands, so picks are uniform.
        let mut counts = [0u32; 4];
        for _ in 0..40_000 {
            counts[pick(&[0, 1, 2, 3], &[1, 1, 1, 1], 2, &mut rng) as usize] += 1;
        }
        assert!(counts.iter().all(|&k| (9_400..10_600).contains(&k)), "{counts:?}");
    }
}
