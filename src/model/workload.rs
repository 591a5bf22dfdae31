//! Who calls and when (DESIGN §3.1): the closed herd of clients, or open arrivals (Poisson or
//! at fixed intervals, for the fleet or per client) generated one at a time as the run goes
//! (never materialised up front).

use super::dist::Dist;
use crate::engine::rng::u01;
use crate::engine::{Instant, NS_PER_S, Span};
use rand::Rng;
use rand_distr::{Distribution, Exp1};

/// How the arrivals of an open workload are spaced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spacing {
    /// Exponential gaps: a Poisson process.
    Poisson,
    /// Exponential gaps, each drawn at the rate in force at the arrival that starts it and
    /// kept across rate changes: a change takes effect from the first arrival after it, as
    /// in a load generator that sleeps a random gap after each call (Brooker's
    /// simple_collapse_sim, `RampUpDownLoadGenerator.gen_load`). Where the rate is 0 the
    /// stream waits for the next step with a positive rate and draws from its start.
    PoissonAtNextArrival,
    /// Exactly `1 / rate` apart (rounded to the nanosecond), the first `1 / rate` after the
    /// start of its rate step, as a load generator inserting on a timer (the OSDI '22
    /// experiment's client inserts every 75,000 ns).
    Fixed,
}

/// Open-loop arrivals: a Poisson process, or a fixed-interval one, whose rate is piecewise
/// constant.
#[derive(Clone, Debug)]
pub struct OpenArrivals {
    /// `(from, rate per second)`, `from` strictly increasing, the first at 0.
    steps: Vec<(Instant, f64)>,
    end: Instant,
    spacing: Spacing,
}

impl OpenArrivals {
    pub fn new(rate: f64, duration: Span, schedule: &[(Span, f64)]) -> OpenArrivals {
        OpenArrivals::spaced(Spacing::Poisson, rate, duration, schedule)
    }

    pub fn spaced(spacing: Spacing, rate: f64, duration: Span, schedule: &[(Span, f64)]) -> OpenArrivals {
        let mut steps = vec![(Instant::ZERO, rate)];
        for &(at, r) in schedule {
            let at = Instant::ZERO + at;
            if at == Instant::ZERO {
                steps[0].1 = r;
            } else {
                steps.push((at, r));
            }
        }
        OpenArrivals { steps, end: Instant::ZERO + duration, spacing }
    }

    /// The same schedule with every rate multiplied by `factor` (one client's share of a
    /// fleet's rate).
    pub fn scaled(&self, factor: f64) -> OpenArrivals {
        let steps = self.steps.iter().map(|&(from, r)| (from, r * factor)).collect();
        OpenArrivals { steps, end: self.end, spacing: self.spacing }
    }

    /// The first arrival strictly after `now` (or at 0 for the first call with `now = 0`),
    /// `None` once past the workload's duration. Memorylessness makes it exact across rate
    /// changes: a draw that overshoots the next change is discarded and redrawn from there
    /// (with [`Spacing::PoissonAtNextArrival`] it is kept, up to the duration).
    /// At fixed spacing: the next multiple of the gap after the start of the step, no draw.
    pub fn next_after<R: Rng + ?Sized>(&self, now: Instant, rng: &mut R) -> Option<Instant> {
        match self.spacing {
            Spacing::Fixed => self.first_in_steps(now, |from, rate, t, boundary| {
                let gap = (NS_PER_S / rate).round().max(1.0) as u64;
                let (from, t) = (from.as_ns(), t.as_ns());
                let next = ((t - from) / gap + 1).checked_mul(gap).and_then(|d| d.checked_add(from));
                next.filter(|&n| n < boundary.as_ns()).map(Instant::from_ns)
            }),
            Spacing::Poisson => self.first_in_steps(now, |_, rate, t, boundary| {
                let gap: f64 = Exp1.sample(rng);
                let next = t.as_ns() as f64 + gap / rate * NS_PER_S;
                (next < boundary.as_ns() as f64).then(|| Instant::ZERO + Span::from_ns_f64(next))
            }),
            // The gap is drawn at the rate in force now and kept whatever changes after it:
            // the first step with a positive rate draws, and the answer is final.
            Spacing::PoissonAtNextArrival => self
                .first_in_steps(now, |_, rate, t, _| {
                    let gap: f64 = Exp1.sample(rng);
                    let next = t.as_ns() as f64 + gap / rate * NS_PER_S;
                    Some((next < self.end.as_ns() as f64).then(|| Instant::ZERO + Span::from_ns_f64(next)))
                })
                .flatten(),
        }
    }

    /// Walks the rate steps from `now`: in each step with a positive rate, `next_in_step(step
    /// start, rate, from, step end)` gives the arrival inside the step, if any; an empty step
    /// moves on to the next one from its start, until the workload's end.
    #[inline]
    fn first_in_steps<T>(
        &self,
        now: Instant,
        mut next_in_step: impl FnMut(Instant, f64, Instant, Instant) -> Option<T>,
    ) -> Option<T> {
        let mut t = now;
        let mut i = self.steps.partition_point(|&(from, _)| from <= t).saturating_sub(1);
        loop {
            let (from, rate) = self.steps[i];
            let boundary = self.steps.get(i + 1).map_or(self.end, |s| s.0.min(self.end));
            if rate > 0.0
                && let Some(next) = next_in_step(from, rate, t, boundary)
            {
                return Some(next);
            }
            if boundary >= self.end {
                return None;
            }
            t = boundary;
            i += 1;
        }
    }
}

/// Whose arrivals an open workload's stream is.
#[derive(Clone, Debug)]
pub enum Streams {
    /// One stream for the fleet; each arrival goes to a client drawn uniformly.
    Fleet,
    /// Each client its own stream at the fleet's rate / clients (Brooker's retry_sim: every
    /// client a Poisson source). With `first_call`, each client first wakes at a draw of it,
    /// makes one call then, and its stream starts from there.
    PerClient { first_call: Option<Dist> },
}

/// Start times of a closed workload's clients, generated in increasing order one at a time, so
/// that a million-client herd is one pending event rather than a million.
///
/// Without a ramp every client starts at 0. With one, the times are the order statistics of
/// `clients` uniform draws on `[0, ramp)`, generated sequentially: with `u_0 = 0`,
/// `u_i = u_(i-1) + (1 - u_(i-1)) * (1 - V^(1/(n-i+1)))`, `V ~ U(0,1)`. Client `i` gets the
/// `i`-th smallest; clients are interchangeable, so this is the same workload as giving each
/// client its own uniform start.
#[derive(Clone, Debug)]
pub struct StartTimes {
    clients: u32,
    ramp: Span,
    next: u32,
    u: f64,
}

impl StartTimes {
    pub fn new(clients: u32, ramp: Span) -> StartTimes {
        StartTimes { clients, ramp, next: 0, u: 0.0 }
    }

    /// The next client and its start time, or `None` when every client has started.
    pub fn next<R: Rng + ?Sized>(&mut self, rng: &mut R) -> Option<(u32, Instant)> {
        if self.next >= self.clients {
            return None;
        }
        let client = self.next;
        self.next += 1;
        if self.ramp.is_zero() {
            return Some((client, Instant::ZERO));
        }
        let remaining = (self.clients - client) as f64;
        self.u += (1.0 - self.u) * (1.0 - u01(rng).powf(1.0 / remaining));
        // Truncated, not rounded: a start time stays strictly inside [0, ramp).
        Some((client, Instant::from_ns((self.u * self.ramp.as_ns() as f64) as u64)))
    }
}

/// When serial clients start their calls: each call's start is remembered, and the next one
/// starts at max(end of the call, its start + a draw of the gap), as `SerialClient.gen_load`
/// in Brooker's retry_sim computes `next_t = t + max(0, Exp(rate) - t + last_call_start)`.
#[derive(Clone, Debug)]
pub struct SerialStarts {
    gap: Dist,
    end: Instant,
    last_start: Vec<Instant>,
}

impl SerialStarts {
    pub fn new(clients: u32, gap: Dist, end: Instant) -> SerialStarts {
        SerialStarts { gap, end, last_start: vec![Instant::ZERO; clients as usize] }
    }

    /// When `client`, free from `now` on, starts its next call (`None`: at or after the end).
    pub fn next<R: Rng + ?Sized>(&mut self, client: u32, now: Instant, rng: &mut R) -> Option<Instant> {
        let last = &mut self.last_start[client as usize];
        let at = now.max(*last + self.gap.sample(rng));
        (at < self.end).then(|| {
            *last = at;
            at
        })
    }
}

/// The workload in engine units.
#[derive(Clone, Debug)]
pub enum Workload {
    Closed {
        clients: u32,
        ops_per_client: u32,
        think: Span,
        ramp: Span,
    },
    Open {
        arrivals: OpenArrivals,
        clients: u32,
        streams: Streams,
    },
    /// Each client one call at a time, the next starting at max(end of the previous call, its
    /// start + a draw of `gap`), none at or after `end` (Brooker's `SerialClient`). The first
    /// starts at max(a draw of `first_call`, a draw of `gap`), as if a call had started at 0.
    Serial {
        clients: u32,
        gap: Dist,
        end: Instant,
        first_call: Option<Dist>,
    },
}

impl Workload {
    /// Client processes (each has its own jitter stream).
    pub fn clients(&self) -> u32 {
        match *self {
            Workload::Closed { clients, .. }
            | Workload::Open { clients, .. }
            | Workload::Serial { clients, .. } => clients,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    const S: u64 = 1_000_000_000;

    fn secs(n: u64) -> Span {
        Span::from_ns(n * S)
    }

    /// Arrivals in `[from, to)` (ns), and the last arrival (ns).
    fn count(a: &OpenArrivals, from: u64, to: u64, seed: u64) -> (u64, u64) {
        let mut r = Xoshiro256PlusPlus::seed_from_u64(seed);
        let (mut t, mut n, mut last) = (Instant::ZERO, 0, 0);
        while let Some(next) = a.next_after(t, &mut r) {
            assert!(next >= t, "arrivals never go back in time");
            if (from..to).contains(&next.as_ns()) {
                n += 1;
            }
            t = next;
            last = next.as_ns();
        }
        (n, last)
    }

    #[test]
    fn poisson_counts_match_the_schedule() {
        // 1000/s for 10 s, then a 5 s spike at 3000/s, then 0 until the end at 20 s.
        let a = OpenArrivals::new(1000.0, secs(20), &[(secs(10), 3000.0), (secs(15), 0.0)]);
        let (base, _) = count(&a, 0, 10 * S, 1);
        let (spike, _) = count(&a, 10 * S, 15 * S, 1);
        let (quiet, last) = count(&a, 15 * S, 20 * S, 1);
        // Poisson: sd = sqrt(mean); 5 sd bounds.
        assert!((base as f64 - 10_000.0).abs() < 5.0 * 100.0, "{base}");
        assert!((spike as f64 - 15_000.0).abs() < 5.0 * 122.5, "{spike}");
        assert_eq!(quiet, 0);
        assert!(last < 15 * S);
    }

    #[test]
    fn ramp_start_times_are_sorted_uniform_order_statistics() {
        let n = 100_000u32;
        let mut st = StartTimes::new(n, secs(10));
        let mut r = Xoshiro256PlusPlus::seed_from_u64(4);
        let times: Vec<u64> = std::iter::from_fn(|| st.next(&mut r)).map(|(_, t)| t.as_ns()).collect();
        assert_eq!(times.len(), n as usize);
        assert!(times.windows(2).all(|w| w[0] <= w[1]));
        assert!(*times.last().unwrap() < 10 * S);
        // Uniform on [0, 10 s): mean 5 s (se = 10/sqrt(12 n)), and a tenth in each second.
        let mean = times.iter().map(|&t| t as f64).sum::<f64>() / n as f64 / S as f64;
        let se = 10.0 / (12.0 * n as f64).sqrt();
        assert!((mean - 5.0).abs() < 5.0 * se, "{mean}");
        let first_second = times.iter().filter(|&&t| t < S).count() as f64 / n as f64;
        assert!((first_second - 0.1).abs() < 5.0 * (0.09 / n as f64).sqrt(), "{first_second}");
        // Without a ramp, everyone starts at 0.
        let mut herd = StartTimes::new(3, Span::ZERO);
        assert_eq!(
            std::iter::from_fn(|| herd.next(&mut r)).collect::<Vec<_>>(),
            vec![(0, Instant::ZERO), (1, Instant::ZERO), (2, Instant::ZERO)]
        );
    }

    #[test]
    fn fixed_spacing_is_exact_across_rate_steps() {
        // 4/s for 1 s, then 2/s until 2 s: 0.25, 0.5, 0.75 s, then 1.5 s (the step restarts
        // its spacing at 1 s; 2 s itself is the end, excluded).
        let a = OpenArrivals::spaced(Spacing::Fixed, 4.0, secs(2), &[(secs(1), 2.0)]);
        let mut r = Xoshiro256PlusPlus::seed_from_u64(1);
        let (mut t, mut got) = (Instant::ZERO, Vec::new());
        while let Some(next) = a.next_after(t, &mut r) {
            got.push(next.as_ns());
            t = next;
        }
        assert_eq!(got, vec![S / 4, S / 2, 3 * S / 4, S + S / 2]);
        // A fixed stream draws nothing: the generator is where it was.
        let mut fresh = Xoshiro256PlusPlus::seed_from_u64(1);
        assert_eq!(r.next_u64(), fresh.next_u64());
    }

    /// Arrivals of `a` from 0 until it stops, with the generator seeded `seed`.
    fn all(a: &OpenArrivals, seed: u64) -> Vec<u64> {
        let mut r = Xoshiro256PlusPlus::seed_from_u64(seed);
        let (mut t, mut got) = (Instant::ZERO, Vec::new());
        while let Some(next) = a.next_after(t, &mut r) {
            got.push(next.as_ns());
            t = next;
        }
        got
    }

    #[test]
    fn at_next_arrival_keeps_the_gap_that_crosses_a_change() {
        // 1000/s until 1 s, then 0 until the end at 2 s.
        let steps = [(secs(1), 0.0)];
        let exact = OpenArrivals::new(1000.0, secs(2), &steps);
        let kept = OpenArrivals::spaced(Spacing::PoissonAtNextArrival, 1000.0, secs(2), &steps);
        for seed in 0..50 {
            let (e, k) = (all(&exact, seed), all(&kept, seed));
            // The same draws until the change; the exact stream discards the gap that crosses
            // it, the other keeps it: exactly one arrival after 1 s, then the rate 0 stops it.
            assert!(e.iter().all(|&t| t < S), "{e:?}");
            assert_eq!(k.len(), e.len() + 1, "seed {seed}");
            assert_eq!(k[..e.len()], e[..]);
            assert!((S..2 * S).contains(&k[e.len()]), "{k:?}");
        }
        // After a zero-rate step the stream starts again from the next positive step: one
        // arrival carried into [1 s, 2 s), then about 1000 in [2 s, 3 s).
        let gap = OpenArrivals::spaced(
            Spacing::PoissonAtNextArrival,
            1000.0,
            secs(3),
            &[(secs(1), 0.0), (secs(2), 1000.0)],
        );
        let k = all(&gap, 3);
        assert_eq!(k.iter().filter(|&&t| (S..2 * S).contains(&t)).count(), 1);
        let last = k.iter().filter(|&&t| t >= 2 * S).count() as f64;
        assert!((last - 1000.0).abs() < 5.0 * 31.7, "{last}");
    }

    #[test]
    fn at_next_arrival_lags_a_rise_by_one_gap() {
        // 1/s until 1 s, then 1000/s: the first arrival is drawn at 1/s (mean 1 s) and the
        // draw is kept, so the rise takes effect only from it. Over 2000 seeds, the first
        // arrival after 1 s comes at 1 s + Exp(1)'s remainder beyond 1 s, i.e. 1 s later on
        // average (memoryless), not 1 ms later as in the exact stream.
        let steps = [(secs(1), 1000.0)];
        let kept = OpenArrivals::spaced(Spacing::PoissonAtNextArrival, 1.0, secs(100), &steps);
        let exact = OpenArrivals::new(1.0, secs(100), &steps);
        let first_after = |a: &OpenArrivals, seed| -> f64 {
            let mut r = Xoshiro256PlusPlus::seed_from_u64(seed);
            let mut next = a.next_after(Instant::ZERO, &mut r).unwrap();
            while next.as_ns() < S {
                next = a.next_after(next, &mut r).unwrap();
            }
            (next.as_ns() - S) as f64 / S as f64
        };
        let n = 2000;
        let mean = |a: &OpenArrivals| (0..n).map(|s| first_after(a, s)).sum::<f64>() / n as f64;
        let (k, e) = (mean(&kept), mean(&exact));
        assert!((k - 1.0).abs() < 5.0 / (n as f64).sqrt(), "kept: {k} s after the rise");
        assert!((e - 0.001).abs() < 5.0 * 0.001 / (n as f64).sqrt(), "exact: {e} s after the rise");
    }

    #[test]
    fn scaled_arrivals_keep_the_schedule() {
        let a = OpenArrivals::new(1000.0, secs(20), &[(secs(10), 3000.0)]).scaled(0.1);
        let (base, _) = count(&a, 0, 10 * S, 2);
        let (spike, _) = count(&a, 10 * S, 20 * S, 2);
        assert!((base as f64 - 1_000.0).abs() < 5.0 * 31.7, "{base}");
        assert!((spike as f64 - 3_000.0).abs() < 5.0 * 54.8, "{spike}");
    }

    #[test]
    fn stops_at_the_duration() {
        let a = OpenArrivals::new(500.0, secs(2), &[]);
        let (n, last) = count(&a, 0, u64::MAX, 9);
        assert!(last < 2 * S);
        assert!((n as f64 - 1000.0).abs() < 5.0 * 31.7, "{n}");
    }
}
