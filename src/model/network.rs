//! The network between clients and server (DESIGN §3.2): a latency per hop and losses.

use super::dist::Dist;
use crate::engine::Span;
use crate::engine::rng::u01;
use rand_xoshiro::Xoshiro256PlusPlus;

pub struct Network {
    /// Instantaneous and lossless: every hop is `Some(0)` without looking further.
    perfect: bool,
    latency: Dist,
    request_loss: f64,
    response_loss: f64,
    rng: Xoshiro256PlusPlus,
}

/// The network's parameters: each hop's latency, and the probabilities that a request or a
/// response is lost.
#[derive(Clone, Debug)]
pub struct NetworkParams {
    pub latency: Dist,
    pub request_loss: f64,
    pub response_loss: f64,
}

impl Network {
    pub fn new(params: &NetworkParams, rng: Xoshiro256PlusPlus) -> Network {
        let latency = params.latency.clone();
        Network {
            perfect: latency.is_zero() && params.request_loss == 0.0 && params.response_loss == 0.0,
            latency,
            request_loss: params.request_loss,
            response_loss: params.response_loss,
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
