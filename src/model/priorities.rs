//! Request priority classes (`[workload] priorities`, DESIGN §3.3): the criticality classes of
//! the Google SRE book (ch. 21, "Handling Overload": CRITICAL_PLUS, CRITICAL, SHEDDABLE_PLUS,
//! SHEDDABLE; sre.google/sre-book/handling-overload), which travel with every request of an
//! operation and let an overloaded server shed the least critical first.
//!
//! Each operation draws its class when it starts, from its own stream (`Stream::Priorities`,
//! so no other draw moves): class `c` with probability `shares[c]`. Its attempts carry it to
//! the server ([`super::server::priority`] sheds by it). Per class the run counts the
//! operations started, those that succeeded, the requests that reached the server and the
//! successful operations' latencies; they become the `METRIC@CLASS` columns, after the
//! windows' (the same four measures as a window's, over a class instead of a span of time).

use crate::engine::Span;
use crate::engine::rng::{Stream, stream, u01};
use crate::metrics::{WindowMetrics, latency_histogram, quantile_s};
use hdrhistogram::Histogram;
use rand_xoshiro::Xoshiro256PlusPlus;

/// A class, by rank: 0 = CRITICAL_PLUS (shed last), 1 = CRITICAL, 2 = SHEDDABLE_PLUS,
/// 3 = SHEDDABLE (shed first).
pub type Class = u8;

/// `[workload] priorities`: the share of operations in each class, by rank (validated to sum
/// to 1).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PriorityParams {
    pub shares: [f64; 4],
}

/// One run's class draws and per-class measures.
pub struct Priorities {
    /// Cumulative shares; the last is 1.
    cumulative: [f64; 4],
    rng: Xoshiro256PlusPlus,
    ops: [u64; 4],
    succeeded: [u64; 4],
    server_calls: [u64; 4],
    ok_ns: Vec<Histogram<u64>>,
    ok_max_ns: [u64; 4],
}

impl Priorities {
    pub fn new(params: PriorityParams, run_seed: u64) -> Priorities {
        let mut cumulative = [0.0; 4];
        let mut sum = 0.0;
        for (c, share) in params.shares.iter().enumerate() {
            sum += share;
            cumulative[c] = sum;
        }
        // The shares sum to 1 within 1e-9: the last class takes what rounding leaves.
        cumulative[3] = 1.0;
        Priorities {
            cumulative,
            rng: stream(run_seed, Stream::Priorities),
            ops: [0; 4],
            succeeded: [0; 4],
            server_calls: [0; 4],
            ok_ns: (0..4).map(|_| latency_histogram()).collect(),
            ok_max_ns: [0; 4],
        }
    }

    /// The class of an operation starting now (one draw), counted as started.
    pub fn draw(&mut self) -> Class {
        let u = u01(&mut self.rng);
        let class = self.cumulative.iter().position(|&c| u < c).unwrap_or(3) as Class;
        // A class with share 0 is never drawn: its cumulative share equals the one before.
        self.ops[class as usize] += 1;
        class
    }

    /// An operation of `class` succeeded `latency` after it started.
    pub fn succeeded(&mut self, class: Class, latency: Span) {
        let c = class as usize;
        self.succeeded[c] += 1;
        let ns = latency.as_ns();
        let _ = self.ok_ns[c].record(ns);
        self.ok_max_ns[c] = self.ok_max_ns[c].max(ns);
    }

    /// A request of `class` reached the server.
    pub fn server_call(&mut self, class: Class) {
        self.server_calls[class as usize] += 1;
    }

    /// Each class's measures, by rank.
    pub fn finish(&self) -> impl Iterator<Item = WindowMetrics> + '_ {
        (0..4).map(|c| WindowMetrics {
            ops: self.ops[c],
            succeeded: self.succeeded[c],
            server_calls: self.server_calls[c],
            latency_ok_p99_s: quantile_s(&self.ok_ns[c], self.ok_max_ns[c], 0.99),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_are_drawn_in_their_shares_and_an_empty_class_never() {
        let mut p = Priorities::new(PriorityParams { shares: [0.1, 0.2, 0.0, 0.7] }, 9);
        let n = 200_000;
        for _ in 0..n {
            p.draw();
        }
        assert_eq!(p.ops[2], 0, "share 0: never drawn");
        assert_eq!(p.ops.iter().sum::<u64>(), n);
        for (c, share) in [0.1, 0.2, 0.0, 0.7].into_iter().enumerate() {
            let se = (n as f64 * share * (1.0 - share)).sqrt();
            assert!((p.ops[c] as f64 - n as f64 * share).abs() <= 5.0 * se, "class {c}: {}", p.ops[c]);
        }
    }

    #[test]
    fn measures_per_class() {
        let mut p = Priorities::new(PriorityParams { shares: [0.0, 1.0, 0.0, 0.0] }, 1);
        assert_eq!(p.draw(), 1);
        assert_eq!(p.draw(), 1);
        p.succeeded(1, Span::from_millis(3));
        p.server_call(1);
        p.server_call(1);
        p.server_call(1);
        let m: Vec<WindowMetrics> = p.finish().collect();
        assert_eq!((m[1].ops, m[1].succeeded, m[1].server_calls), (2, 1, 3));
        assert_eq!(m[1].success_rate(), Some(0.5));
        assert_eq!(m[1].latency_ok_p99_s, Some(0.003));
        assert_eq!((m[0].ops, m[0].success_rate(), m[0].latency_ok_p99_s), (0, None, None));
    }
}
