//! The network between clients and server (DESIGN §3.2): a latency per hop and losses.

use super::dist::Dist;
use crate::engine::Span;
use crate::engine::rng::u01;
use crate::experiment::NetworkSpec;
use rand_xoshiro::Xoshiro256PlusPlus;

pub struct Network {
    /// Instantaneous and lossless: every hop is `Some(0)` without looking further.
    perfect: bool,
    latency: Dist,
    request_loss: f64,
    response_loss: f64,
    rng: Xoshiro256PlusPlus,
}

impl Network {
    pub fn new(spec: &NetworkSpec, rng: Xoshiro256PlusPlus) -> Network {
        let latency = Dist::from_spec(&spec.latency);
        Network {
            perfect: latency.is_zero() && spec.request_loss == 0.0 && spec.response_loss == 0.0,
            latency,
            request_loss: spec.request_loss,
            response_loss: spec.response_loss,
            rng,
        }
    }

    /// Whether every hop is instantaneous and lossless.
    pub fn is_perfect(&self) -> bool {
        self.perfect
    }

    /// Whether every hop is instantaneous (the model then delivers without an event).
    pub fn is_instant(&self) -> bool {
        self.latency.is_zero()
    }

    /// The delay of one client-to-server hop, or `None` if the request is lost. A loss draw is
    /// made only when a loss probability is set.
    #[inline(always)]
    pub fn request(&mut self) -> Option<Span> {
        if self.perfect {
            return Some(Span::ZERO);
        }
        self.hop(self.request_loss)
    }

    /// The delay of one server-to-client hop, or `None` if the response is lost.
    #[inline(always)]
    pub fn response(&mut self) -> Option<Span> {
        if self.perfect {
            return Some(Span::ZERO);
        }
        self.hop(self.response_loss)
    }

    /// A hop of a network with latency or losses (out of line: the perfect network's hops
    /// are the thundering herd's, and cost a flag test).
    #[inline(never)]
    fn hop(&mut self, loss: f64) -> Option<Span> {
        if loss > 0.0 && u01(&mut self.rng) < loss {
            return None;
        }
        Some(self.latency.sample(&mut self.rng))
    }
}
