//! Power of two choices over a peak-EWMA latency estimate: Finagle's `p2cPeakEwma`
//! (finagle-core `loadbalancer/PeakEwma.scala`) as tower writes it (`tower/src/load/peak_ewma.rs`,
//! `tower/src/balance/p2c`), which linkerd2-proxy runs with a default RTT of 30 ms and a decay
//! of 10 s (docs/overload-and-topology.md §1.6).
//!
//! Each replica keeps an RTT estimate (the default RTT until it answers). An answer slower
//! than the estimate replaces it (the peak); a faster one pulls it towards itself by
//! `1 - exp(-elapsed / decay)`, `elapsed` being the time since the last update. Reading a
//! replica's load first decays its estimate towards 0 the same way (tower's
//! `RttEstimate::decay`), and the load is `estimate x (pending + 1)`. A pick draws two distinct
//! candidates and takes the one with the lower load, the first on a tie.

use super::uniform_index;
use crate::engine::{Instant, Span};
use rand::Rng;

#[derive(Clone, Copy, Debug)]
struct Estimate {
    rtt_ns: f64,
    updated: Instant,
}

impl Estimate {
    /// tower's `RttEstimate::update`: the peak, or a decayed average towards `rtt_ns`.
    fn update(&mut self, rtt_ns: f64, now: Instant, decay_ns: f64) -> f64 {
        if self.rtt_ns < rtt_ns {
            self.rtt_ns = rtt_ns;
        } else {
            let elapsed = now.since(self.updated).as_ns() as f64;
            let decay = (-elapsed / decay_ns).exp();
            self.rtt_ns = self.rtt_ns * decay + rtt_ns * (1.0 - decay);
        }
        self.updated = now;
        self.rtt_ns
    }
}

#[derive(Clone, Debug)]
pub struct PeakEwma {
    estimates: Vec<Estimate>,
    decay_ns: f64,
}

impl PeakEwma {
    pub fn new(replicas: u32, decay: Span, default_rtt: Span) -> PeakEwma {
        let first = Estimate { rtt_ns: default_rtt.as_ns() as f64, updated: Instant::ZERO };
        PeakEwma { estimates: vec![first; replicas as usize], decay_ns: decay.as_ns().max(1) as f64 }
    }

    /// tower's `load`: the estimate decayed to `now` (an update with a zero RTT), times
    /// pending + 1.
    pub fn load(&mut self, replica: u32, pending: u32, now: Instant) -> f64 {
        let estimate = self.estimates[replica as usize].update(0.0, now, self.decay_ns);
        estimate * f64::from(pending + 1)
    }

    /// Replica `replica` answered after `rtt`.
    pub fn observe(&mut self, replica: u32, rtt: Span, now: Instant) {
        self.estimates[replica as usize].update(rtt.as_ns() as f64, now, self.decay_ns);
    }

    /// Two distinct candidates drawn uniformly; the lower load wins, the first on a tie.
    pub fn pick<R: Rng + ?Sized>(
        &mut self,
        candidates: &[u32],
        pending: &[u32],
        now: Instant,
        rng: &mut R,
    ) -> u32 {
        if candidates.len() == 1 {
            return candidates[0];
        }
        let i = uniform_index(candidates.len(), rng);
        let mut j = uniform_index(candidates.len() - 1, rng);
        if j >= i {
            j += 1;
        }
        let (a, b) = (candidates[i], candidates[j]);
        let load_a = self.load(a, pending[a as usize], now);
        let load_b = self.load(b, pending[b as usize], now);
        if load_a <= load_b { a } else { b }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: f64 = 1_000_000.0;

    fn at_ms(ms: u64) -> Instant {
        Instant::ZERO + Span::from_millis(ms)
    }

    /// tower's `compound_decay` test, step for step: default RTT 20 ms, decay 1 s.
    #[test]
    fn tower_compound_decay_vector() {
        let mut p = PeakEwma::new(1, Span::from_millis(1000), Span::from_millis(20));
        assert_eq!(p.load(0, 0, at_ms(0)), 20.0 * MS);
        // At 100 ms one request is pending: above 20 ms.
        assert!(p.load(0, 1, at_ms(100)) > 20.0 * MS);
        // At 200 ms two are pending: above 40 ms.
        assert!(p.load(0, 2, at_ms(200)) > 40.0 * MS);
        // At 300 ms the first answers after 200 ms: the peak, one still pending.
        p.observe(0, Span::from_millis(200), at_ms(300));
        assert_eq!(p.load(0, 1, at_ms(300)), 400.0 * MS);
        // At 400 ms the second answers after 200 ms: no longer pending.
        p.observe(0, Span::from_millis(200), at_ms(400));
        assert_eq!(p.load(0, 0, at_ms(400)), 200.0 * MS);
        assert!(p.load(0, 0, at_ms(1400)) < 100.0 * MS);
        assert!(p.load(0, 0, at_ms(11_400)) < 0.1 * MS);
    }

    #[test]
    fn a_slow_replica_is_avoided_once_seen() {
        let mut p = PeakEwma::new(2, Span::from_secs(10), Span::from_millis(30));
        p.observe(1, Span::from_millis(900), at_ms(10));
        let mut rng = <rand_xoshiro::Xoshiro256PlusPlus as rand::SeedableRng>::seed_from_u64(5);
        for _ in 0..100 {
            assert_eq!(p.pick(&[0, 1], &[3, 0], at_ms(20), &mut rng), 0);
        }
    }
}
