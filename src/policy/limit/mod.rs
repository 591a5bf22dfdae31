//! Adaptive concurrency limits (DESIGN §4.9, §3.3): the client-side limits of Netflix's
//! concurrency-limits library ([`aimd`], [`vegas`], [`gradient2`], optionally behind its
//! [`windowed`] sampling), wrapped in the library's `SimpleLimiter` ([`Limiter`]), and
//! Envoy's server-side gradient controller ([`envoy_gradient`]). Pure state machines: the
//! model tells them the samples and, for Envoy's, the timers that fire.

pub mod aimd;
pub mod envoy_gradient;
pub mod gradient2;
pub mod vegas;
pub mod windowed;

use super::Outcome;
use crate::engine::{Instant, Span};
use aimd::{Aimd, AimdParams};
use gradient2::{Gradient2, Gradient2Params};
use rand_xoshiro::Xoshiro256PlusPlus;
use vegas::{Vegas, VegasParams};
use windowed::Windowed;

/// One measurement a limit learns from (`Limit.onSample(startTime, rtt, inflight, didDrop)`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    /// When it is reported (the call's end: `startTime + rtt`).
    pub now: Instant,
    pub rtt: Span,
    /// Calls in flight when this one was admitted, itself included.
    pub inflight: u32,
    /// The call was dropped (refused for overload).
    pub dropped: bool,
}

/// Which limit, with its parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LimitKind {
    Aimd(AimdParams),
    Vegas(VegasParams),
    Gradient2(Gradient2Params),
}

/// A client limiter's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LimitParams {
    pub kind: LimitKind,
    /// Behind `WindowedLimit` (one sample per window), or sample by sample (the library's
    /// default).
    pub windowed: bool,
}

#[derive(Clone, Debug)]
enum Algorithm {
    Aimd(Aimd),
    Vegas(Vegas),
    Gradient2(Gradient2),
}

/// How a call that held a permit ended, as the library's gRPC client interceptor tells its
/// listener (`ConcurrencyLimitClientInterceptor`, 78a74b9): `OK` is a success, `UNAVAILABLE`
/// a drop, anything else (a deadline, a cancellation, another error) is ignored: the permit
/// comes back without a sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Release {
    Success,
    Dropped,
    Ignored,
}

impl Release {
    /// An attempt's outcome in the interceptor's terms. gRPC's HTTP-to-status mapping
    /// (grpc/grpc `doc/http-grpc-status-mapping.md`) makes 429, 502, 503 and 504
    /// `UNAVAILABLE`, and a connection that fails is `UNAVAILABLE` too; the client's own
    /// timeout is `DEADLINE_EXCEEDED` (ignored).
    pub fn of(outcome: Outcome) -> Release {
        match outcome {
            Outcome::Success => Release::Success,
            Outcome::Status(429 | 502 | 503 | 504) | Outcome::ConnectionError => Release::Dropped,
            Outcome::Status(_) | Outcome::Timeout => Release::Ignored,
        }
    }
}

/// The library's `SimpleLimiter` around one limit: a call is admitted while fewer than the
/// limit are in flight (its adjustable semaphore), else rejected at once; a call's end gives
/// its permit back and, unless ignored, reports a sample.
#[derive(Clone, Debug)]
pub struct Limiter {
    algorithm: Algorithm,
    window: Option<Windowed>,
    in_flight: u32,
}

impl Limiter {
    /// `rng` draws Vegas's probe jitter (the library's `ThreadLocalRandom`).
    pub fn new(params: LimitParams, rng: &mut Xoshiro256PlusPlus) -> Limiter {
        let algorithm = match params.kind {
            LimitKind::Aimd(p) => Algorithm::Aimd(Aimd::new(p)),
            LimitKind::Vegas(p) => Algorithm::Vegas(Vegas::new(p, rng)),
            LimitKind::Gradient2(p) => Algorithm::Gradient2(Gradient2::new(p)),
        };
        Limiter { algorithm, window: params.windowed.then(Windowed::default), in_flight: 0 }
    }

    /// The limit in force.
    pub fn limit(&self) -> u32 {
        match &self.algorithm {
            Algorithm::Aimd(a) => a.limit(),
            Algorithm::Vegas(v) => v.limit(),
            Algorithm::Gradient2(g) => g.limit(),
        }
    }

    pub fn in_flight(&self) -> u32 {
        self.in_flight
    }

    /// `acquire`: a permit, with the calls in flight counting it (the sample's `inflight`),
    /// or `None`: the call is rejected.
    pub fn try_acquire(&mut self) -> Option<u32> {
        if self.in_flight >= self.limit() {
            return None;
        }
        self.in_flight += 1;
        Some(self.in_flight)
    }

    /// A call admitted with `inflight` (what [`Limiter::try_acquire`] returned) and sent at
    /// `sent` ended at `now`.
    pub fn release(
        &mut self,
        how: Release,
        sent: Instant,
        now: Instant,
        inflight: u32,
        rng: &mut Xoshiro256PlusPlus,
    ) {
        debug_assert!(self.in_flight > 0, "a release without a permit");
        self.in_flight -= 1;
        let dropped = match how {
            Release::Ignored => return,
            Release::Success => false,
            Release::Dropped => true,
        };
        let sample = Sample { now, rtt: now.since(sent), inflight, dropped };
        let sample = match &mut self.window {
            None => sample,
            Some(w) => match w.on_sample(sample) {
                Some(s) => s,
                None => return,
            },
        };
        match &mut self.algorithm {
            Algorithm::Aimd(a) => a.on_sample(sample),
            Algorithm::Vegas(v) => v.on_sample(sample, rng),
            Algorithm::Gradient2(g) => g.on_sample(sample),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn rejects_at_the_limit_and_a_drop_lowers_it() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let aimd = AimdParams { initial_limit: 3, min_limit: 1, ..AimdParams::NETFLIX };
        let mut l = Limiter::new(LimitParams { kind: LimitKind::Aimd(aimd), windowed: false }, &mut rng);
        let t = Instant::from_ns;
        assert_eq!(
            [l.try_acquire(), l.try_acquire(), l.try_acquire(), l.try_acquire()],
            [Some(1), Some(2), Some(3), None]
        );
        // An ignored end (a timeout) frees the permit without a sample.
        l.release(Release::of(Outcome::Timeout), t(0), t(10), 1, &mut rng);
        assert_eq!((l.limit(), l.in_flight()), (3, 2));
        // A 503 is a drop: 3 x 0.9 = 2.
        l.release(Release::of(Outcome::Status(503)), t(0), t(10), 2, &mut rng);
        assert_eq!((l.limit(), l.in_flight()), (2, 1));
        assert_eq!(l.try_acquire(), Some(2));
        assert_eq!(l.try_acquire(), None, "2 in flight at a limit of 2");
        // A success with 2 x 2 >= 2 in flight: +1.
        l.release(Release::Success, t(0), t(10), 2, &mut rng);
        assert_eq!((l.limit(), l.in_flight()), (3, 1));
    }

    #[test]
    fn outcomes_as_the_grpc_interceptor_reports_them() {
        assert_eq!(Release::of(Outcome::Success), Release::Success);
        for s in [429, 502, 503, 504] {
            assert_eq!(Release::of(Outcome::Status(s)), Release::Dropped);
        }
        assert_eq!(Release::of(Outcome::ConnectionError), Release::Dropped);
        assert_eq!(Release::of(Outcome::Timeout), Release::Ignored);
        assert_eq!(Release::of(Outcome::Status(500)), Release::Ignored);
    }
}
