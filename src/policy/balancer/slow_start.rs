//! Envoy's slow start (`cluster.proto` `SlowStartConfig`; `load_balancing/slow_start.rst`): a
//! replica that (re)joins gets a fraction of its weight that grows over `slow_start_window`,
//!
//! ```text
//! weight = max(min_weight_percent / 100, time_factor ^ (1 / aggression)),
//! time_factor = max(seconds since it joined, 1) / window in seconds,
//! ```
//!
//! and its full weight from the end of the window. Envoy applies it to the round-robin and
//! least-request balancers only, which become weighted while a host is in its window: an
//! earliest-deadline-first scheduler ([`Edf`], Envoy's `EdfScheduler`) over the weights, for
//! least request the weight divided by (active requests + 1) (`active_request_bias` 1.0).

use crate::engine::Span;

/// `slow_start = { window, aggression, min_weight_percent }`, in engine units.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SlowStartParams {
    pub window: Span,
    /// Envoy's `aggression` (default 1.0: linear).
    pub aggression: f64,
    /// Envoy's `min_weight_percent` (default 10), as a fraction.
    pub min_weight: f64,
}

impl SlowStartParams {
    /// The fraction of its weight a host has `since` after it joined (1 from the window's end).
    pub fn weight(&self, since: Span) -> f64 {
        if since >= self.window {
            return 1.0;
        }
        let time_factor = since.as_secs_f64().max(1.0) / self.window.as_secs_f64();
        time_factor.powf(1.0 / self.aggression).max(self.min_weight).min(1.0)
    }
}

/// Envoy's `EdfScheduler`: each host has a deadline; a pick takes the earliest (the first added
/// on a tie), moves the scheduler's time to it, and gives the host its next deadline: that
/// time plus 1 / its weight then. A host that comes (back) among the candidates starts at the
/// current time plus 1 / its weight.
#[derive(Clone, Debug, Default)]
pub struct Edf {
    now: f64,
    /// Per host: its deadline, the order it was added in (ties), whether it is scheduled.
    deadline: Vec<f64>,
    order: Vec<u64>,
    scheduled: Vec<bool>,
    added: u64,
    /// Whether any host is scheduled (so that [`Edf::clear`] costs nothing when unused).
    in_use: bool,
}

impl Edf {
    /// Forgets every host (Envoy rebuilds its scheduler when the weights are equal again).
    #[inline]
    pub fn clear(&mut self) {
        if self.in_use {
            self.scheduled.iter_mut().for_each(|s| *s = false);
            self.now = 0.0;
            self.in_use = false;
        }
    }

    /// Picks among `candidates`, weighted by `weight(host)` (> 0).
    pub fn pick(&mut self, candidates: &[u32], usable: &[bool], weight: impl Fn(u32) -> f64) -> u32 {
        let n = usable.len();
        if self.deadline.len() < n {
            self.deadline.resize(n, 0.0);
            self.order.resize(n, 0);
            self.scheduled.resize(n, false);
        }
        for (s, u) in self.scheduled.iter_mut().zip(usable) {
            *s &= *u;
        }
        for &h in candidates {
            if !self.scheduled[h as usize] {
                self.add(h, weight(h));
            }
        }
        let mut best = candidates[0];
        for &h in &candidates[1..] {
            let (d, b) = (self.deadline[h as usize], self.deadline[best as usize]);
            if d < b || (d == b && self.order[h as usize] < self.order[best as usize]) {
                best = h;
            }
        }
        self.now = self.deadline[best as usize];
        self.add(best, weight(best));
        best
    }

    fn add(&mut self, host: u32, weight: f64) {
        let h = host as usize;
        self.deadline[h] = self.now + 1.0 / weight;
        self.order[h] = self.added;
        self.added += 1;
        self.scheduled[h] = true;
        self.in_use = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn envoy_default(window_s: u64) -> SlowStartParams {
        SlowStartParams { window: Span::from_secs(window_s), aggression: 1.0, min_weight: 0.1 }
    }

    /// The formula of Envoy's docs on their own numbers: a 60 s window, aggression 1 (linear):
    /// 1/60 floored at 10 % in the first second, 30/60 after 30 s, 1 from 60 s; aggression 2
    /// (square root): sqrt(0.25) = 0.5 after 15 s; aggression 0.5 (square): 0.5^2 = 0.25 after
    /// 30 s; a min_weight_percent of 50 floors it at 0.5.
    #[test]
    fn weights_follow_envoys_formula() {
        let linear = envoy_default(60);
        assert_eq!(linear.weight(Span::ZERO), 0.1);
        assert_eq!(linear.weight(Span::from_millis(500)), 0.1, "max(t, 1 s) / window = 1/60, floored");
        assert!((linear.weight(Span::from_secs(12)) - 0.2).abs() < 1e-12);
        assert!((linear.weight(Span::from_secs(30)) - 0.5).abs() < 1e-12);
        assert_eq!(linear.weight(Span::from_secs(60)), 1.0);
        assert_eq!(linear.weight(Span::from_secs(600)), 1.0);
        let root = SlowStartParams { aggression: 2.0, ..linear };
        assert!((root.weight(Span::from_secs(15)) - 0.5).abs() < 1e-12);
        let square = SlowStartParams { aggression: 0.5, ..linear };
        assert!((square.weight(Span::from_secs(30)) - 0.25).abs() < 1e-12);
        let floor = SlowStartParams { min_weight: 0.5, ..linear };
        assert_eq!(floor.weight(Span::from_secs(6)), 0.5);
        assert!((floor.weight(Span::from_secs(45)) - 0.75).abs() < 1e-12);
    }

    /// EDF with weights 1, 1 and 0.25: over 9 picks the light host gets 1, the others 4 each.
    #[test]
    fn edf_picks_in_proportion_to_weight() {
        let mut edf = Edf::default();
        let weights = [1.0, 1.0, 0.25];
        let mut count = [0; 3];
        for _ in 0..900 {
            count[edf.pick(&[0, 1, 2], &[true; 3], |h| weights[h as usize]) as usize] += 1;
        }
        assert_eq!(count, [400, 400, 100]);
    }
}
