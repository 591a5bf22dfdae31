//! Envoy's ring hash (Ketama; `RingHashLoadBalancer`, `source/extensions/load_balancing_policies/
//! ring_hash/ring_hash_lb.cc`; `minimum_ring_size` 1024, `cluster.proto` `RingHashLbConfig`):
//! each replica puts `ceil(minimum_ring_size / replicas)` points on a ring of 64-bit hashes; a
//! request's key goes to the first point at or after its hash, clockwise. A host-selection
//! retry number `k` (with `previous_hosts`) moves `k` points further along the ring, as
//! Envoy's `Ring::chooseHost(h, attempt)` does, so retries of one operation land on the same
//! replica unless the hash is mutated so.
//!
//! Two differences from Envoy, both stated in DESIGN §3.3: the points' hash is SplitMix64's
//! finaliser of (replica, point number) instead of xxHash of the host's address, and an ejected
//! replica's points are skipped (the pick walks on clockwise) instead of the ring being rebuilt
//! over the healthy hosts: the keys of the ejected replica move to the next replica on the
//! ring either way, and the others stay where they were.

use crate::engine::rng::{derive, mix64};

#[derive(Clone, Debug)]
pub struct Ring {
    /// (point hash, replica), sorted by hash.
    points: Vec<(u64, u32)>,
}

impl Ring {
    pub fn new(replicas: u32, minimum_ring_size: u32) -> Ring {
        let per_replica = minimum_ring_size.div_ceil(replicas.max(1)).max(1);
        let mut points: Vec<(u64, u32)> = (0..replicas)
            .flat_map(|r| (0..per_replica).map(move |i| (mix64(derive(r as u64, i as u64)), r)))
            .collect();
        points.sort_unstable();
        Ring { points }
    }

    /// The replica for `key`, `selection` points past the first at or after its hash, then on
    /// to the first usable one.
    pub fn pick(&self, key: u64, selection: u32, usable: &[bool]) -> u32 {
        let n = self.points.len();
        let first = self.points.partition_point(|&(h, _)| h < key) % n;
        let mut i = (first + selection as usize) % n;
        for _ in 0..n {
            let replica = self.points[i].1;
            if usable[replica as usize] {
                return replica;
            }
            i = (i + 1) % n;
        }
        self.points[first].1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_always_lands_on_the_same_replica_and_keys_spread() {
        let ring = Ring::new(4, 1024);
        assert_eq!(ring.points.len(), 1024);
        let usable = [true; 4];
        let mut counts = [0u32; 4];
        for op in 0..40_000u64 {
            let key = mix64(op);
            let r = ring.pick(key, 0, &usable);
            assert_eq!(ring.pick(key, 0, &usable), r);
            counts[r as usize] += 1;
        }
        // 256 points each: shares within a few percent of a quarter.
        assert!(counts.iter().all(|&k| (8_500..11_500).contains(&k)), "{counts:?}");
    }

    #[test]
    fn an_unusable_replica_gives_its_keys_to_the_next_and_keeps_the_others() {
        let ring = Ring::new(3, 1024);
        let all = [true; 3];
        let without_1 = [true, false, true];
        for op in 0..5_000u64 {
            let key = mix64(op);
            let before = ring.pick(key, 0, &all);
            let after = ring.pick(key, 0, &without_1);
            assert_ne!(after, 1);
            if before != 1 {
                assert_eq!(after, before, "a key not on the ejected replica stays");
            }
        }
    }

    #[test]
    fn a_selection_retry_moves_along_the_ring() {
        let ring = Ring::new(2, 1024);
        let usable = [true; 2];
        let moved = (0..10_000u64)
            .filter(|&op| ring.pick(mix64(op), 1, &usable) != ring.pick(mix64(op), 0, &usable))
            .count();
        // The next point belongs to the other replica about half the time.
        assert!((4_000..6_000).contains(&moved), "{moved}");
    }
}
