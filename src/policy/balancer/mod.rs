//! Load balancers: which replica of a service a request goes to (DESIGN §3.3). Pure pickers,
//! one file per algorithm, over what a balancer sees of the replicas ([`Hosts`]):
//!
//! - round robin and random: Envoy's `ROUND_ROBIN` and `RANDOM` over the healthy hosts
//!   (Envoy docs, `intro/arch_overview/upstream/load_balancing/load_balancers.rst`);
//! - [`least_request`]: Envoy's `LEAST_REQUEST` with equal weights, `choice_count` hosts
//!   sampled with replacement, the one with the fewest active requests;
//! - [`peak_ewma`]: Finagle's and linkerd's power of two choices over a peak-EWMA latency
//!   estimate (tower `load/peak_ewma.rs`), cost = estimate x (pending + 1);
//! - [`ring_hash`]: Envoy's `RING_HASH` (Ketama) keyed by the operation, so that every attempt
//!   of one operation lands on the same replica.
//!
//! [`Balancer::choose`] is Envoy's `LoadBalancerBase::chooseHost`
//! (`source/common/upstream/load_balancer_impl.cc`): with a retry host predicate
//! (`previous_hosts`) a pick the operation already tried is made again, up to
//! `host_selection_retry_max_attempts` times, and the last pick is used when every one was
//! rejected.

pub mod least_request;
pub mod peak_ewma;
pub mod ring_hash;
pub mod slow_start;

use crate::engine::rng::u01;
use crate::engine::{Instant, Span};
use peak_ewma::PeakEwma;
use rand::Rng;
use ring_hash::Ring;
use slow_start::Edf;

/// A balancer's algorithm and its constants, as plain parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BalancerParams {
    /// The next healthy replica in order.
    RoundRobin,
    /// A healthy replica drawn uniformly.
    Random,
    /// Envoy's least request: `choice_count` draws with replacement, fewest active requests.
    LeastRequest { choice_count: u32 },
    /// Power of two choices over peak-EWMA latency x (pending + 1).
    PeakEwma { decay: Span, default_rtt: Span },
    /// Ketama ring of at least `minimum_ring_size` points, keyed by the operation.
    RingHash { minimum_ring_size: u32 },
}

/// What a balancer sees of the replicas when it picks.
#[derive(Clone, Copy, Debug)]
pub struct Hosts<'a> {
    /// The replicas it may pick, in index order (the healthy ones, or all of them in panic).
    pub candidates: &'a [u32],
    /// Per replica: whether it is among the candidates.
    pub usable: &'a [bool],
    /// Per replica: requests sent to it and not yet answered (Envoy's `rq_active`).
    pub active: &'a [u32],
    /// Per replica: its slow-start weight, when one of the candidates is in its slow-start
    /// window (round robin and least request only; [`slow_start`]); `None`: equal weights.
    pub weights: Option<&'a [f64]>,
}

/// One balancer with its state; round robin and least request keep an EDF scheduler for the
/// picks made with unequal (slow-start) weights.
#[derive(Clone, Debug)]
pub enum Balancer {
    RoundRobin { next: u64, edf: Edf },
    Random,
    LeastRequest { choice_count: u32, edf: Edf },
    PeakEwma(PeakEwma),
    RingHash(Ring),
}

impl Balancer {
    pub fn new(params: BalancerParams, replicas: u32) -> Balancer {
        match params {
            BalancerParams::RoundRobin => Balancer::RoundRobin { next: 0, edf: Edf::default() },
            BalancerParams::Random => Balancer::Random,
            BalancerParams::LeastRequest { choice_count } => {
                Balancer::LeastRequest { choice_count, edf: Edf::default() }
            }
            BalancerParams::PeakEwma { decay, default_rtt } => {
                Balancer::PeakEwma(PeakEwma::new(replicas, decay, default_rtt))
            }
            BalancerParams::RingHash { minimum_ring_size } => {
                Balancer::RingHash(Ring::new(replicas, minimum_ring_size))
            }
        }
    }

    /// Envoy's `chooseHost`: picks, and while a pick is in `avoid` (the replicas the operation
    /// already tried, with `previous_hosts`) picks again, at most `reselects` more times; the
    /// last pick stands when every one was rejected. `key` is the operation's hash (ring hash).
    pub fn choose<R: Rng + ?Sized>(
        &mut self,
        hosts: &Hosts,
        key: u64,
        avoid: &[u32],
        reselects: u32,
        now: Instant,
        rng: &mut R,
    ) -> u32 {
        let mut host = self.pick_once(hosts, key, 0, now, rng);
        for selection in 1..=reselects {
            if !avoid.contains(&host) {
                break;
            }
            host = self.pick_once(hosts, key, selection, now, rng);
        }
        host
    }

    /// One pick (Envoy's `chooseHostOnce`); `selection` counts the host-selection retries
    /// (ring hash moves that many points along the ring).
    pub fn pick_once<R: Rng + ?Sized>(
        &mut self,
        hosts: &Hosts,
        key: u64,
        selection: u32,
        now: Instant,
        rng: &mut R,
    ) -> u32 {
        let c = hosts.candidates;
        debug_assert!(!c.is_empty());
        match self {
            Balancer::RoundRobin { .. } | Balancer::LeastRequest { .. } => match hosts.weights {
                None => self.pick_unweighted(hosts, rng),
                Some(weights) => self.pick_weighted(hosts, weights),
            },
            Balancer::Random => c[uniform_index(c.len(), rng)],
            Balancer::PeakEwma(p) => p.pick(c, hosts.active, now, rng),
            Balancer::RingHash(ring) => ring.pick(key, selection, hosts.usable),
        }
    }

    /// Round robin's or least request's pick with equal weights (the EDF scheduler of the
    /// weighted picks is forgotten: Envoy rebuilds it when the weights change).
    #[inline]
    fn pick_unweighted<R: Rng + ?Sized>(&mut self, hosts: &Hosts, rng: &mut R) -> u32 {
        let c = hosts.candidates;
        match self {
            Balancer::RoundRobin { next, edf } => {
                edf.clear();
                let host = c[(*next % c.len() as u64) as usize];
                *next += 1;
                host
            }
            Balancer::LeastRequest { choice_count, edf } => {
                edf.clear();
                least_request::pick(c, hosts.active, *choice_count, rng)
            }
            _ => unreachable!("only round robin and least request"),
        }
    }

    /// Envoy's weighted round robin, and least request's weight / (active + 1)
    /// (`active_request_bias` 1.0), both over the EDF scheduler.
    #[inline(never)]
    fn pick_weighted(&mut self, hosts: &Hosts, weights: &[f64]) -> u32 {
        match self {
            Balancer::RoundRobin { edf, .. } => {
                edf.pick(hosts.candidates, hosts.usable, |h| weights[h as usize])
            }
            Balancer::LeastRequest { edf, .. } => edf.pick(hosts.candidates, hosts.usable, |h| {
                weights[h as usize] / f64::from(hosts.active[h as usize] + 1)
            }),
            _ => unreachable!("slow start is refused with the other balancers"),
        }
    }

    /// Whether Envoy applies slow start to this balancer (round robin and least request).
    pub fn takes_slow_start(params: BalancerParams) -> bool {
        matches!(params, BalancerParams::RoundRobin | BalancerParams::LeastRequest { .. })
    }

    /// Replica `replica` answered a request sent `rtt` ago (peak EWMA learns from it).
    #[inline]
    pub fn observe(&mut self, replica: u32, rtt: Span, now: Instant) {
        if let Balancer::PeakEwma(p) = self {
            p.observe(replica, rtt, now);
        }
    }

    /// Whether the balancer needs each answer's round-trip time.
    pub fn wants_rtt(&self) -> bool {
        matches!(self, Balancer::PeakEwma(_))
    }
}

/// A uniform index below `n` (`n >= 1`), from one draw.
#[inline]
pub fn uniform_index<R: Rng + ?Sized>(n: usize, rng: &mut R) -> usize {
    ((u01(rng) * n as f64) as usize).min(n - 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    fn all(n: u32) -> (Vec<u32>, Vec<bool>, Vec<u32>) {
        ((0..n).collect(), vec![true; n as usize], vec![0; n as usize])
    }

    #[test]
    fn round_robin_cycles_through_the_candidates() {
        let (c, u, a) = all(3);
        let hosts = Hosts { candidates: &c, usable: &u, active: &a, weights: None };
        let mut b = Balancer::new(BalancerParams::RoundRobin, 3);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let picks: Vec<u32> = (0..7).map(|_| b.pick_once(&hosts, 0, 0, Instant::ZERO, &mut rng)).collect();
        assert_eq!(picks, [0, 1, 2, 0, 1, 2, 0]);
    }

    /// Two replicas, round robin, `previous_hosts` with one reselect: two consecutive picks
    /// differ, so a retry always avoids the replica tried (the exact 100 % of envoy#27317).
    #[test]
    fn round_robin_with_previous_hosts_never_repeats_on_two_replicas() {
        let (c, u, a) = all(2);
        let hosts = Hosts { candidates: &c, usable: &u, active: &a, weights: None };
        let mut b = Balancer::new(BalancerParams::RoundRobin, 2);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        for tried in [0u32, 1, 1, 0, 0] {
            let host = b.choose(&hosts, 0, &[tried], 1, Instant::ZERO, &mut rng);
            assert_ne!(host, tried);
        }
    }

    /// Random, two replicas, one tried, one reselect: the retry lands on the tried replica
    /// only when both picks do, 1/4 of the time.
    #[test]
    fn random_with_one_reselect_repeats_a_quarter_of_the_time() {
        let (c, u, a) = all(2);
        let hosts = Hosts { candidates: &c, usable: &u, active: &a, weights: None };
        let mut b = Balancer::new(BalancerParams::Random, 2);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let n = 200_000;
        let same = (0..n).filter(|_| b.choose(&hosts, 0, &[0], 1, Instant::ZERO, &mut rng) == 0).count();
        let p = same as f64 / n as f64;
        let se = (0.25f64 * 0.75 / n as f64).sqrt();
        assert!((p - 0.25).abs() < 4.0 * se, "{p}");
    }
}
