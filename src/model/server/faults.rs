//! Server faults (DESIGN §3.4) and background errors, as functions of simulated time: the
//! first stage of the admission pipeline ([`Faults::admit`]), and the capacity and service
//! time factors the workers ask for.

use crate::engine::Instant;
use crate::engine::rng::u01;
use crate::metrics::recovery::FaultSpan;
use crate::policy::Outcome;
use rand_xoshiro::Xoshiro256PlusPlus;

use super::{Admission, Reply, Request, RetryAfterCode};

/// An error answer chosen for a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ErrorAnswer {
    pub status: u16,
    /// The work and its side effect happen; only the answer is the error.
    pub after_effect: bool,
    /// Sent with the answer (an `errors` fault's `retry_after`).
    pub retry_after: RetryAfterCode,
}

/// What an outage does to a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutageAnswer {
    /// Answer with this outcome without doing the work.
    Answer(Outcome),
    /// Never answer: the client sees its timeout.
    Silence,
}

/// A fault: what it does while active, on `[start, end)` of simulated time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fault {
    pub start: Instant,
    pub end: Instant,
    pub kind: FaultKind,
}

/// What an active fault does.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FaultKind {
    /// Every request gets `answer`, with `retry_after` when it is answered.
    Outage { answer: OutageAnswer, retry_after: RetryAfterCode },
    /// The usable workers are multiplied by `factor` (rounded down).
    Capacity { factor: f64 },
    /// Service times are multiplied by `factor`.
    Slowdown { factor: f64 },
    /// Requests get an error answer with a probability, replacing the background errors.
    Errors(ErrorRate),
    /// The replica restarts: at the start it drops every request it holds, and it refuses
    /// requests until the end (the model takes it down and up, [`Faults::restarts`]; the
    /// admission stage does nothing for it).
    Restart,
}

/// An error answer and the probability that a request gets it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ErrorRate {
    pub answer: ErrorAnswer,
    pub probability: f64,
}

pub struct Faults {
    faults: Vec<Fault>,
    background: Vec<ErrorRate>,
    rng: Xoshiro256PlusPlus,
}

impl Faults {
    /// `faults` in file order; `background` errors apply outside `errors` faults.
    pub fn new(faults: Vec<Fault>, background: Vec<ErrorRate>, rng: Xoshiro256PlusPlus) -> Faults {
        Faults { faults, background, rng }
    }

    pub fn is_empty(&self) -> bool {
        self.faults.is_empty() && self.background.is_empty()
    }

    /// The stage: an active outage answers the request at once (or never); an error, drawn
    /// from the active `errors` fault or else the background errors, answers it without the
    /// work, or, with `after_effect`, marks it to be served and then answered with the error.
    #[inline]
    pub fn admit(&mut self, now: Instant, req: &mut Request) -> Admission {
        if self.is_empty() {
            return Admission::Continue;
        }
        match self.outage(now) {
            Some((OutageAnswer::Silence, _)) => return Admission::Silence,
            Some((OutageAnswer::Answer(o), ra)) => {
                return Admission::Answer(Reply { outcome: o, retry_after: ra });
            }
            None => {}
        }
        if let Some(e) = self.error(now) {
            let reply = Reply { outcome: Outcome::Status(e.status), retry_after: e.retry_after };
            if !e.after_effect {
                return Admission::Answer(reply);
            }
            req.answer = reply;
        }
        Admission::Continue
    }

    /// The span of the faults that start before `horizon` (`None` without any): the recovery
    /// analysis looks before the first and after the last. A fault that starts at or after the
    /// horizon never happens in the run, so it does not count.
    pub fn span(&self, horizon: Instant) -> Option<FaultSpan> {
        let happening = self.faults.iter().filter(|f| f.start < horizon);
        let first_start = happening.clone().map(|f| f.start).min()?;
        let last_end = happening.map(|f| f.end).max()?;
        Some(FaultSpan { first_start, last_end })
    }

    /// The windows of the `restart` faults, in file order.
    pub fn restarts(&self) -> impl Iterator<Item = (Instant, Instant)> + '_ {
        self.faults.iter().filter(|f| f.kind == FaultKind::Restart).map(|f| (f.start, f.end))
    }

    /// Times at which the available capacity goes back up (capacity faults ending), when
    /// waiting requests may start.
    pub fn capacity_restorations(&self) -> impl Iterator<Item = Instant> + '_ {
        self.faults.iter().filter(|f| matches!(f.kind, FaultKind::Capacity { .. })).map(|f| f.end)
    }

    fn active(&self, now: Instant) -> impl Iterator<Item = &FaultKind> {
        self.faults.iter().filter(move |f| f.start <= now && now < f.end).map(|f| &f.kind)
    }

    /// The first active outage's answer and its Retry-After, if any.
    pub fn outage(&self, now: Instant) -> Option<(OutageAnswer, RetryAfterCode)> {
        self.active(now).find_map(|f| match f {
            FaultKind::Outage { answer, retry_after } => Some((*answer, *retry_after)),
            _ => None,
        })
    }

    /// Workers available out of `concurrency`: the product of active capacity factors,
    /// rounded down.
    pub fn capacity(&self, now: Instant, concurrency: u32) -> u32 {
        let f: f64 = self
            .active(now)
            .filter_map(|f| match f {
                FaultKind::Capacity { factor } => Some(*factor),
                _ => None,
            })
            .product();
        (concurrency as f64 * f).floor() as u32
    }

    /// The service-time multiplier: the product of active slowdown factors.
    pub fn slowdown(&self, now: Instant) -> f64 {
        self.active(now)
            .filter_map(|f| match f {
                FaultKind::Slowdown { factor } => Some(*factor),
                _ => None,
            })
            .product()
    }

    /// Draws whether a request is answered with an error. While an `errors` fault is active,
    /// its probability (the active ones in file order, one after the other on the same draw)
    /// replaces the background errors, which apply only outside faults (DESIGN §3.4). No draw
    /// is made when no error can happen.
    pub fn error(&mut self, now: Instant) -> Option<ErrorAnswer> {
        let mut faults = self
            .faults
            .iter()
            .filter(|f| f.start <= now && now < f.end)
            .filter_map(|f| match f.kind {
                FaultKind::Errors(e) => Some(e),
                _ => None,
            })
            .peekable();
        if faults.peek().is_some() {
            let u = u01(&mut self.rng);
            return pick(u, faults);
        }
        if self.background.is_empty() {
            return None;
        }
        let u = u01(&mut self.rng);
        pick(u, self.background.iter().copied())
    }
}

/// The answer whose slice of `[0, 1)` holds `u`, the slices laid end to end in order.
fn pick(u: f64, candidates: impl Iterator<Item = ErrorRate>) -> Option<ErrorAnswer> {
    let mut cumulative = 0.0;
    for c in candidates {
        cumulative += c.probability;
        if u < cumulative {
            return Some(c.answer);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    const S: u64 = 1_000_000_000;

    fn t(ns: u64) -> Instant {
        Instant::from_ns(ns)
    }

    fn fault(start_s: u64, duration_s: u64, kind: FaultKind) -> Fault {
        Fault { start: t(start_s * S), end: t((start_s + duration_s) * S), kind }
    }

    fn error(status: u16, after_effect: bool, probability: f64) -> ErrorRate {
        ErrorRate {
            answer: ErrorAnswer { status, after_effect, retry_after: RetryAfterCode::NONE },
            probability,
        }
    }

    fn faults() -> Faults {
        let f = vec![
            fault(
                10,
                5,
                FaultKind::Outage { answer: OutageAnswer::Silence, retry_after: RetryAfterCode::NONE },
            ),
            fault(20, 10, FaultKind::Capacity { factor: 0.25 }),
            fault(25, 10, FaultKind::Slowdown { factor: 3.0 }),
            fault(40, 1, FaultKind::Errors(error(500, true, 1.0))),
        ];
        Faults::new(f, vec![error(503, false, 0.1)], Xoshiro256PlusPlus::seed_from_u64(5))
    }

    #[test]
    fn windows_are_half_open() {
        let f = faults();
        assert_eq!(f.outage(t(10 * S - 1)), None);
        assert_eq!(f.outage(t(10 * S)).map(|o| o.0), Some(OutageAnswer::Silence));
        assert_eq!(f.outage(t(15 * S)), None);
        assert_eq!(f.capacity(t(19 * S), 100), 100);
        assert_eq!(f.capacity(t(20 * S), 100), 25);
        assert_eq!(f.capacity(t(20 * S), 3), 0);
        assert_eq!(f.slowdown(t(26 * S)), 3.0);
        assert_eq!(f.slowdown(t(24 * S)), 1.0);
        assert_eq!(f.span(t(100 * S)), Some(FaultSpan { first_start: t(10 * S), last_end: t(41 * S) }));
        // Faults from the horizon on never happen.
        assert_eq!(f.span(t(40 * S)), Some(FaultSpan { first_start: t(10 * S), last_end: t(35 * S) }));
        assert_eq!(f.span(t(10 * S)), None);
        assert_eq!(f.capacity_restorations().collect::<Vec<_>>(), vec![t(30 * S)]);
    }

    #[test]
    fn error_probabilities() {
        let mut f = faults();
        let n = 100_000;
        let bg = (0..n).filter(|_| f.error(t(0)).is_some()).count() as f64 / n as f64;
        let se = (0.1f64 * 0.9 / n as f64).sqrt();
        assert!((bg - 0.1).abs() < 5.0 * se, "{bg}");
        // During the error fault its 500 replaces the background: every request gets it.
        assert!((0..1000).all(|_| f.error(t(40 * S))
            == Some(ErrorAnswer { status: 500, after_effect: true, retry_after: RetryAfterCode::NONE })));
    }
}
