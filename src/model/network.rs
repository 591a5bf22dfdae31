//! The network between clients and server (DESIGN §3.2): a latency per hop and losses.

use super::dist::Dist;
use crate::engine::Span;
use crate::experiment::NetworkSpec;
use crate::policy::uniform::u01;
use rand_xoshiro::Xoshiro256PlusPlus;

pub struct Network {
    latency: Dist,
    request_loss: f64,
    response_loss: f64,
    rng: Xoshiro256PlusPlus,
}

impl Network {
    pub fn new(spec: &NetworkSpec, rng: Xoshiro256PlusPlus) -> Network {
        Network {
            latency: Dist::from_spec(&spec.latency),
            request_loss: spec.request_loss,
            response_loss: spec.response_loss,
            rng,
        }
    }

    /// Whether every hop is instantaneous (the model then delivers without an event).
    pub fn is_instant(&self) -> bool {
        self.latency.is_zero()
    }

    /// The delay of one client-to-server hop, or `None` if the request is lost. A loss draw is
    /// made only when a loss probability is set.
    #[inline]
    pub fn request(&mut self) -> Option<Span> {
        self.hop(self.request_loss)
    }

    /// The delay of one server-to-client hop, or `None` if the response is lost.
    #[inline]
    pub fn response(&mut self) -> Option<Span> {
        self.hop(self.response_loss)
    }

    #[inline]
    fn hop(&mut self, loss: f64) -> Option<Span> {
        if loss > 0.0 && u01(&mut self.rng) < loss {
            return None;
        }
        Some(self.latency.sample(&mut self.rng))
    }
}
