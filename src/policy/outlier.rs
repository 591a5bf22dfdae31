//! Outlier detection: Envoy's passive health checking of a cluster's hosts (DESIGN §3.3),
//! step for step after `source/common/upstream/outlier_detection_impl.cc` with the defaults of
//! `envoy/config/cluster/v3/outlier_detection.proto` (docs/overload-and-topology.md §1.7):
//!
//! - **consecutive 5xx** (5, enforcing 100 %): every answer counts; a 5xx (locally made ones
//!   too: a connection failure is a 503, a timeout a 504, as `putResultNoLocalExternalSplit`
//!   maps them) adds one, anything else resets the count; reaching the threshold ejects the
//!   host at once (unless it is ejected already) and resets the count;
//! - **success rate** (enforcing 100 %): at each `interval` (10 s) the hosts not ejected with at
//!   least `request_volume` (100) answers in the interval just ended, when there are at least
//!   `minimum_hosts` (5) of them, are compared with mean - stdev x `stdev_factor` / 1000 (1900:
//!   1.9 population standard deviations); a host below it is ejected;
//! - an ejection is refused when it would take the ejected share above `max_ejection_percent`
//!   (10 %) of the hosts, unless `always_eject_one_host` (false) and none is ejected;
//! - an ejected host comes back at the first interval tick at least
//!   min(`base_ejection_time` (30 s) x its back-off, `max_ejection_time` (300 s)) after its
//!   ejection; the back-off grows by one at each ejection (while base x back-off < max + base)
//!   and shrinks by one at each tick that finds the host in and back for at least an interval.
//!
//! The interval timer starts with the detector (at time 0). The gateway-failure and
//! failure-percentage detectors, off by default (enforcing 0 %), and the ejection-time jitter
//! (0 by default) are not modelled.

use crate::engine::rng::u01;
use crate::engine::{Instant, Span};
use rand::Rng;

/// The detector's constants, Envoy's names.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OutlierParams {
    /// Consecutive 5xx answers that eject a host; 0 turns the detector off.
    pub consecutive_5xx: u32,
    /// Percent chance that a consecutive-5xx detection is enforced.
    pub enforcing_consecutive_5xx: u32,
    /// The period of the interval timer (success-rate checks, un-ejection).
    pub interval: Span,
    pub base_ejection_time: Span,
    pub max_ejection_time: Span,
    pub max_ejection_percent: u32,
    pub always_eject_one_host: bool,
    pub success_rate_minimum_hosts: u32,
    pub success_rate_request_volume: u32,
    /// In thousandths of a standard deviation (1900 = 1.9).
    pub success_rate_stdev_factor: u32,
    /// Percent chance that a success-rate detection is enforced; 0 turns it off.
    pub enforcing_success_rate: u32,
}

impl OutlierParams {
    /// Envoy's defaults (`outlier_detection.proto`).
    pub const ENVOY: OutlierParams = OutlierParams {
        consecutive_5xx: 5,
        enforcing_consecutive_5xx: 100,
        interval: Span::from_secs(10),
        base_ejection_time: Span::from_secs(30),
        max_ejection_time: Span::from_secs(300),
        max_ejection_percent: 10,
        always_eject_one_host: false,
        success_rate_minimum_hosts: 5,
        success_rate_request_volume: 100,
        success_rate_stdev_factor: 1900,
        enforcing_success_rate: 100,
    };
}

impl Default for OutlierParams {
    fn default() -> OutlierParams {
        OutlierParams::ENVOY
    }
}

/// What the detector knows of one host.
#[derive(Clone, Copy, Debug, Default)]
struct Monitor {
    consecutive_5xx: u32,
    ejected: bool,
    /// Envoy's `ejectTimeBackoff`: the multiplier of the base ejection time.
    backoff: u32,
    last_ejection: Instant,
    last_unejection: Option<Instant>,
    /// Answers and successes in the current interval, and in the one before it.
    current: (u32, u32),
    previous: (u32, u32),
    ejections: u32,
}

/// The detector of one service's replicas.
#[derive(Clone, Debug)]
pub struct Detector {
    params: OutlierParams,
    hosts: Vec<Monitor>,
    ejected: u32,
}

impl Detector {
    pub fn new(params: OutlierParams, hosts: u32) -> Detector {
        Detector { params, hosts: vec![Monitor::default(); hosts as usize], ejected: 0 }
    }

    /// When the interval timer fires after `now`'s tick.
    pub fn interval(&self) -> Span {
        self.params.interval
    }

    #[inline]
    pub fn is_ejected(&self, host: u32) -> bool {
        self.hosts[host as usize].ejected
    }

    /// Hosts ejected now.
    pub fn ejected_count(&self) -> u32 {
        self.ejected
    }

    /// Times `host` was ejected so far.
    pub fn ejections(&self, host: u32) -> u32 {
        self.hosts[host as usize].ejections
    }

    /// `host` answered (`error`: a 5xx, or a failure counted as one). Returns whether the
    /// host was ejected by it.
    pub fn answer<R: Rng + ?Sized>(&mut self, host: u32, error: bool, now: Instant, rng: &mut R) -> bool {
        let threshold = self.params.consecutive_5xx;
        let m = &mut self.hosts[host as usize];
        m.current.0 += 1;
        if !error {
            m.current.1 += 1;
            m.consecutive_5xx = 0;
            return false;
        }
        m.consecutive_5xx += 1;
        if threshold == 0 || m.consecutive_5xx != threshold || m.ejected {
            // An ejected host's count runs on past the threshold and fires no more until it is
            // reset (Envoy's `onConsecutiveErrorWorker` returns before resetting it).
            return false;
        }
        let ejected = self.eject(host, self.params.enforcing_consecutive_5xx, now, rng);
        self.hosts[host as usize].consecutive_5xx = 0;
        ejected
    }

    /// The interval timer fires at `now`: un-ejections, the success-rate check, back-offs.
    /// Returns whether any host was ejected or came back.
    pub fn tick<R: Rng + ?Sized>(&mut self, now: Instant, rng: &mut R) -> bool {
        let mut changed = false;
        let p = self.params;
        for m in &mut self.hosts {
            if m.ejected {
                let wait = Span::from_ns(
                    (p.base_ejection_time.as_ns().saturating_mul(m.backoff as u64))
                        .min(p.max_ejection_time.as_ns()),
                );
                if wait <= now.since(m.last_ejection) {
                    m.ejected = false;
                    m.consecutive_5xx = 0;
                    m.last_unejection = Some(now);
                    self.ejected -= 1;
                    changed = true;
                }
            }
            m.previous = m.current;
            m.current = (0, 0);
        }
        changed |= self.success_rate_ejections(now, rng);
        for m in &mut self.hosts {
            if !m.ejected
                && let Some(back) = m.last_unejection
                && now.since(back) >= p.interval
                && m.backoff > 0
            {
                m.backoff -= 1;
            }
        }
        changed
    }

    /// Envoy's `processSuccessRateEjections` for the interval just ended.
    fn success_rate_ejections<R: Rng + ?Sized>(&mut self, now: Instant, rng: &mut R) -> bool {
        let p = self.params;
        if p.enforcing_success_rate == 0 || (self.hosts.len() as u32) < p.success_rate_minimum_hosts {
            return false;
        }
        let valid: Vec<(u32, f64)> = (0..self.hosts.len() as u32)
            .filter_map(|h| {
                let m = &self.hosts[h as usize];
                let (total, ok) = m.previous;
                (!m.ejected && total > 0 && total >= p.success_rate_request_volume)
                    .then(|| (h, ok as f64 * 100.0 / total as f64))
            })
            .collect();
        if valid.is_empty() || (valid.len() as u32) < p.success_rate_minimum_hosts {
            return false;
        }
        let threshold = success_rate_threshold(valid.iter().map(|v| v.1), p.success_rate_stdev_factor);
        let mut changed = false;
        for (host, rate) in valid {
            if rate < threshold {
                changed |= self.eject(host, p.enforcing_success_rate, now, rng);
            }
        }
        changed
    }

    /// Envoy's `ejectHost`: within `max_ejection_percent`, and enforced with `enforcing` %.
    fn eject<R: Rng + ?Sized>(&mut self, host: u32, enforcing: u32, now: Instant, rng: &mut R) -> bool {
        let p = self.params;
        let share = 100.0 * (self.ejected + 1) as f64 / self.hosts.len() as f64;
        let allowed =
            share <= p.max_ejection_percent.min(100) as f64 || (p.always_eject_one_host && self.ejected == 0);
        if !allowed || !(enforcing >= 100 || u01(rng) * 100.0 < enforcing as f64) {
            return false;
        }
        let m = &mut self.hosts[host as usize];
        m.ejected = true;
        m.ejections += 1;
        m.last_ejection = now;
        if (m.backoff as u64) * p.base_ejection_time.as_ns()
            < p.max_ejection_time.as_ns() + p.base_ejection_time.as_ns()
        {
            m.backoff += 1;
        }
        self.ejected += 1;
        true
    }
}

/// Envoy's `successRateEjectionThreshold`: mean - factor / 1000 x population standard deviation
/// of the success rates (in percent).
pub fn success_rate_threshold(rates: impl Iterator<Item = f64> + Clone, stdev_factor: u32) -> f64 {
    let n = rates.clone().count() as f64;
    let mean = rates.clone().sum::<f64>() / n;
    let variance = rates.map(|r| (r - mean) * (r - mean)).sum::<f64>() / n;
    mean - stdev_factor as f64 / 1000.0 * variance.sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    fn s(secs: f64) -> Instant {
        Instant::ZERO + Span::from_secs_f64(secs)
    }

    /// Envoy's worked example in `successRateEjectionThreshold`: {50, 100, 100, 100, 100} has
    /// mean 90 and stdev 20, so a factor of 1.9 gives 52.
    #[test]
    fn envoy_success_rate_threshold_example() {
        let t = success_rate_threshold([50.0, 100.0, 100.0, 100.0, 100.0].into_iter(), 1900);
        assert!((t - 52.0).abs() < 1e-9, "{t}");
    }

    /// Ten hosts (10 % may be ejected): five 5xx in a row eject at once; the host is back at the
    /// first tick 30 s after; failing again at once, its second ejection lasts 60 s.
    #[test]
    fn ejection_timing_follows_the_interval_ticks() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let mut d = Detector::new(OutlierParams::default(), 10);
        for i in 0..4 {
            assert!(!d.answer(3, true, s(1.0 + i as f64 * 0.1), &mut rng));
        }
        assert!(d.answer(3, true, s(1.5), &mut rng), "the fifth consecutive 5xx ejects");
        assert!(d.is_ejected(3));
        for t in [10.0, 20.0, 30.0] {
            assert!(!d.tick(s(t), &mut rng));
            assert!(d.is_ejected(3), "still out at {t} s");
        }
        assert!(d.tick(s(40.0), &mut rng), "back at the first tick 30 s after 1.5 s");
        assert!(!d.is_ejected(3));
        for i in 0..5 {
            d.answer(3, true, s(40.1 + i as f64 * 0.1), &mut rng);
        }
        assert!(d.is_ejected(3));
        assert_eq!(d.ejections(3), 2);
        for t in [50.0, 60.0, 70.0, 80.0, 90.0, 100.0] {
            d.tick(s(t), &mut rng);
            assert!(d.is_ejected(3), "second ejection lasts 60 s: still out at {t} s");
        }
        assert!(d.tick(s(110.0), &mut rng));
        assert!(!d.is_ejected(3));
    }

    #[test]
    fn a_success_resets_the_count_and_the_backoff_decays() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let mut d = Detector::new(OutlierParams::default(), 10);
        for _ in 0..4 {
            d.answer(0, true, s(1.0), &mut rng);
        }
        d.answer(0, false, s(1.0), &mut rng);
        for _ in 0..4 {
            assert!(!d.answer(0, true, s(1.0), &mut rng));
        }
        assert!(d.answer(0, true, s(2.0), &mut rng));
        d.tick(s(10.0), &mut rng);
        d.tick(s(20.0), &mut rng);
        d.tick(s(30.0), &mut rng);
        assert!(d.tick(s(40.0), &mut rng));
        // Healthy for two ticks: the back-off goes back to 0, so the next ejection is 30 s again.
        d.tick(s(50.0), &mut rng);
        d.tick(s(60.0), &mut rng);
        for _ in 0..5 {
            d.answer(0, true, s(61.0), &mut rng);
        }
        assert!(d.is_ejected(0));
        d.tick(s(70.0), &mut rng);
        d.tick(s(80.0), &mut rng);
        assert!(d.tick(s(100.0), &mut rng), "30 s after 61 s, at the tick of 100 s");
    }

    /// Three hosts: one ejection would be 33 % > 10 %, so none happens unless
    /// `always_eject_one_host`.
    #[test]
    fn the_max_ejection_percent_holds_unless_one_host_is_always_ejected() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let mut d = Detector::new(OutlierParams::default(), 3);
        for _ in 0..20 {
            assert!(!d.answer(1, true, s(1.0), &mut rng));
        }
        let mut d =
            Detector::new(OutlierParams { always_eject_one_host: true, ..OutlierParams::default() }, 3);
        for _ in 0..5 {
            d.answer(1, true, s(1.0), &mut rng);
        }
        assert!(d.is_ejected(1));
        for _ in 0..5 {
            d.answer(2, true, s(1.0), &mut rng);
        }
        assert!(!d.is_ejected(2), "a second host is over the share");
    }

    #[test]
    fn success_rate_ejects_the_outlier_among_enough_busy_hosts() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let params = OutlierParams { consecutive_5xx: 0, ..OutlierParams::default() };
        let mut d = Detector::new(params, 10);
        for h in 0..10u32 {
            for i in 0..200 {
                // Host 4 fails every other request (never 5 in a row), the others 1 in 100.
                let error = if h == 4 { i % 2 == 0 } else { i % 100 == 0 };
                d.answer(h, error, s(5.0), &mut rng);
            }
        }
        assert!(d.tick(s(10.0), &mut rng));
        assert!(d.is_ejected(4));
        assert_eq!(d.ejected_count(), 1);
    }
}
