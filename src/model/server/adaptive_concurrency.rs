//! `[server.adaptive_concurrency]`: Envoy's adaptive concurrency filter in front of the
//! workers (DESIGN §3.3), with its gradient controller
//! ([`crate::policy::limit::envoy_gradient`]).
//!
//! A request is *outstanding* from when the filter forwards it to the workers (it starts or
//! is queued) until a worker finishes it or the queue lets go of it: so the outstanding count
//! is the workers' in service plus queued. A request that finds the limit reached is answered
//! 503 without Retry-After (Envoy's local reply), which clients may retry. A finished request
//! is a latency sample, from its forwarding to its end (queueing and service).
//!
//! **Differences from Envoy:** Envoy also samples the answers the upstream gives without the
//! work (a full queue's 503, a request the discipline sheds), and drops a request from the
//! count when its client resets it; here only finished work is sampled, and a request whose
//! client gave up counts until the server is done with it (the server does not see resets).

use crate::engine::{Instant, Span};
use crate::policy::limit::envoy_gradient::{GradientController, GradientParams, Timer};
use rand_xoshiro::Xoshiro256PlusPlus;

/// The filter's state: the controller, and when each worker's request was forwarded.
pub struct AdaptiveConcurrency {
    controller: GradientController,
    forwarded_at: Vec<Instant>,
    /// The limit last reported ([`AdaptiveConcurrency::limit_changed`]).
    reported: Option<u32>,
}

/// The answer to a request over the limit: 503 (Envoy's `sendLocalReply`), no Retry-After.
pub const LIMITED_STATUS: u16 = 503;

impl AdaptiveConcurrency {
    pub fn new(params: GradientParams, workers: u32, rng: Xoshiro256PlusPlus) -> AdaptiveConcurrency {
        AdaptiveConcurrency {
            controller: GradientController::new(params, Instant::ZERO, rng),
            forwarded_at: vec![Instant::ZERO; workers as usize],
            reported: None,
        }
    }

    /// Whether a request may be forwarded with `outstanding` requests at the workers.
    #[inline]
    pub fn admit(&self, outstanding: u32) -> bool {
        self.controller.admit(outstanding)
    }

    /// Worker `worker` started a request forwarded `waited` ago.
    #[inline]
    pub fn started(&mut self, worker: u32, now: Instant, waited: Span) {
        self.forwarded_at[worker as usize] = now.saturating_sub(waited);
    }

    /// Worker `worker` finished its request at `now`: a latency sample.
    #[inline]
    pub fn finished(&mut self, worker: u32, now: Instant) {
        self.controller.record(self.forwarded_at[worker as usize], now);
    }

    /// A controller timer fires at `now`.
    pub fn fire(&mut self, which: Timer, now: Instant) {
        self.controller.fire(which, now);
    }

    /// Timers armed since the last call, to schedule.
    pub fn take_armed(&mut self) -> impl Iterator<Item = (Timer, Instant)> + '_ {
        self.controller.take_armed()
    }

    /// The limit, if it changed since the last call (the first call reports it).
    pub fn limit_changed(&mut self) -> Option<u32> {
        let limit = self.controller.limit();
        (self.reported != Some(limit)).then(|| {
            self.reported = Some(limit);
            limit
        })
    }
}
