//! What a proxy hop's router adds around its retries (a gateway layer, a call-graph edge), as
//! Envoy's router does it: a route timeout over all its tries, and its own overflow answers
//! left unretried.
//!
//! **Route timeout** (Envoy `RouteAction.timeout`, default 15 s; router.cc `onResponseTimeout`):
//! measured from when the hop received the request, it covers every try and every backoff.
//! When it fires, the try in flight is given up, no further try starts, and the hop answers its
//! caller 504 (Envoy's "upstream request timeout"). A try's own timeout (`per_try_timeout`)
//! is cut to what the route has left.
//!
//! **Local overflow** (router.cc `onUpstreamAbort(..., dropped)`): when the hop's own circuit
//! breaker refuses a try, the hop answers 503 with `x-envoy-overloaded: true`, and Envoy's
//! retry policy never retries an answer carrying that header (`RetryPolicyImpl::
//! wouldRetryFromHeaders`: "if (response_headers.EnvoyOverloaded() != nullptr) return false").
//! A hop that honours it (`honor_overloaded`; an Envoy hop) answers it up as it came. A retry
//! its own budget refuses is not marked: Envoy's retry overflow (`RetryStatus::NoOverflow`)
//! forwards the upstream's own answer.

use crate::engine::{Instant, Span};

/// Envoy's route timeout when the route leaves it out (route_components.proto
/// `RouteAction.timeout`: "If not specified, the default is 15s").
pub const ENVOY_ROUTE_TIMEOUT: Span = Span::from_secs(15);

/// The HTTP status a hop answers when its route timeout fires.
pub const ROUTE_TIMEOUT_STATUS: u16 = 504;

/// A hop's router: its route timeout, and whether it leaves overflow answers unretried.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Route {
    /// Over all tries, from when the hop received the request; `None`: no route timeout.
    pub timeout: Option<Span>,
    /// Whether an answer marked overloaded (`x-envoy-overloaded`) is never retried.
    pub honor_overloaded: bool,
}

impl Route {
    /// When the route times out for a request received at `received` ([`Instant::NEVER`]:
    /// never).
    #[inline]
    pub fn ends(&self, received: Instant) -> Instant {
        self.timeout.map_or(Instant::NEVER, |t| received + t)
    }

    /// Whether a failed try's answer stops the retries before any retry decision: it is marked
    /// overloaded and the hop honours the mark.
    #[inline]
    pub fn stops_on(&self, overloaded: bool) -> bool {
        self.honor_overloaded && overloaded
    }
}

/// When the next try may start after a backoff of `delay` from `now`: at `now + delay`, or at
/// the route's end `ends` if that comes first (the hop then answers its route timeout instead).
#[inline]
pub fn retry_at(now: Instant, delay: Span, ends: Instant) -> Instant {
    (now + delay).min(ends)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_route_ends_after_its_timeout_and_cuts_a_backoff() {
        let at = |ms: u64| Instant::ZERO + Span::from_millis(ms);
        let r = Route { timeout: Some(Span::from_secs(1)), honor_overloaded: false };
        assert_eq!(r.ends(at(200)), at(1_200));
        assert_eq!(Route::default().ends(at(200)), Instant::NEVER);
        assert_eq!(retry_at(at(900), Span::from_millis(50), at(1_000)), at(950));
        assert_eq!(retry_at(at(900), Span::from_millis(250), at(1_000)), at(1_000));
        assert_eq!(retry_at(at(900), Span::from_millis(250), Instant::NEVER), at(1_150));
    }

    #[test]
    fn only_a_hop_that_honours_it_stops_on_the_overloaded_mark() {
        let envoy = Route { timeout: None, honor_overloaded: true };
        assert!(envoy.stops_on(true) && !envoy.stops_on(false));
        assert!(!Route::default().stops_on(true));
    }
}
