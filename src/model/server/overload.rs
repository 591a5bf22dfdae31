//! `[server.overload]`: congestion collapse (DESIGN §3.3). A request's service time is
//!
//! ```text
//! service x (1 + alpha x max(0, in_service - knee))
//! ```
//!
//! where `in_service` is the number of requests being served when it **starts**, itself
//! included, and `service` is the time drawn from `service_time` (after any `slowdown`
//! fault). Up to `knee` requests in service run at full speed; each one past the knee makes
//! every request that starts then `alpha` times its service time slower (lock contention,
//! cache thrashing, GC pressure). The factor is fixed when the request starts: it does not
//! change while it is served.
//!
//! Why: Brooker's simulations of retry-driven overload ("Metastability and Distributed
//! Systems", 2021; "Fixing retries with token buckets and circuit breakers", 2022, on
//! brooker.co.za) and the retry experiment of Huang et al., "Metastable Failures in the Wild"
//! (OSDI '22; `docs/retry-policies.md` §8: a MongoDB primary whose goodput collapses under
//! immediate resends after a 10 s CPU cut) show goodput *falling* as offered load rises past
//! capacity. A plain queue of fixed-speed workers does not do that: its goodput stays at
//! capacity however long the queue. The linear factor above is this simulator's simplest model
//! of that contention, not a formula from those sources. With `alpha > 0`, the extra load of
//! retries lowers capacity itself, so once a trigger (a capacity cut, an outage) has filled the
//! workers, clients' timeouts and retries can keep them full after the trigger is gone.
//! Together with timeouts, retries and `drop_expired = false` (the server finishing work whose
//! client left) this sustains metastable failures; `experiments/metastable.toml` shows which
//! changes break the loop (with a long FIFO queue, `drop_expired` alone does not: the oldest
//! live requests it serves expire in service).
//!
//! With the default `knee = 0`, every request is slowed, even one alone (`1 + alpha`); set
//! `knee` to the concurrency the server handles at full speed.

use crate::engine::Span;

/// The stretch of [the module docs](self): `alpha` per request in service beyond `knee`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OverloadParams {
    pub alpha: f64,
    pub knee: u32,
}

pub struct Overload {
    alpha: f64,
    knee: u32,
}

impl Overload {
    pub fn new(params: &OverloadParams) -> Overload {
        Overload { alpha: params.alpha, knee: params.knee }
    }

    /// The service time of a request that starts with `in_service` requests in service (itself
    /// included).
    #[inline]
    pub fn stretch(&self, service: Span, in_service: u32) -> Span {
        let over = in_service.saturating_sub(self.knee);
        if over == 0 || self.alpha == 0.0 {
            return service;
        }
        service.mul_f64(1.0 + self.alpha * over as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_factor_grows_past_the_knee() {
        let o = Overload::new(&OverloadParams { alpha: 0.5, knee: 4 });
        let s = Span::from_millis(100);
        assert_eq!(o.stretch(s, 1), s);
        assert_eq!(o.stretch(s, 4), s, "at the knee: full speed");
        assert_eq!(o.stretch(s, 5), Span::from_millis(150));
        assert_eq!(o.stretch(s, 8), Span::from_millis(300));
        let flat = Overload::new(&OverloadParams { alpha: 0.0, knee: 0 });
        assert_eq!(flat.stretch(s, 100), s);
        let zero_knee = Overload::new(&OverloadParams { alpha: 0.1, knee: 0 });
        assert_eq!(zero_knee.stretch(s, 1), Span::from_millis(110), "knee 0: even one request is slowed");
    }
}
