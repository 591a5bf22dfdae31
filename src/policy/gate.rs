//! The gate around every attempt: a client's controls (budgets, breakers, throttles), asked
//! before any attempt is sent and told of every answer.
//!
//! The client talks to its controls only through this type, at five moments:
//!
//! | moment | call | what controls do there |
//! |---|---|---|
//! | an operation starts | [`Gate::op_started`] | ratio budgets deposit |
//! | an attempt is about to be sent (the first included) | [`Gate::admit`] | a breaker or a throttle may fail it locally, a rate limiter may delay it |
//! | an attempt failed and the retry decision asks | [`RetryPermission::permit_retry`] (through [`Gate::client`]) | budgets take tokens or refuse |
//! | an answer arrived, or the attempt timed out | [`Gate::answered`] | breakers and throttles record it |
//! | an operation ended | [`Gate::op_ended`] | token buckets refund |
//!
//! Controls are scoped per client process or shared by all (DESIGN §4.2). A gate without
//! controls answers every question at once ([`Gate::is_empty`] lets the model skip it).

use super::{FailReason, FailedAttempt, Outcome, RetryPermission};
use crate::engine::{Instant, Span};

/// The gate's answer before an attempt is sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admit {
    /// Send it now.
    Send,
    /// Send it after this wait (a client-side rate limiter).
    Wait(Span),
    /// Do not send it: the operation fails locally with this reason.
    Refuse(FailReason),
}

/// What the controls are told after each attempt the client stopped waiting for: the answer,
/// or a timeout.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Answered {
    pub now: Instant,
    /// 1-based attempt number within its operation.
    pub attempt: u32,
    pub outcome: Outcome,
    /// From the attempt being sent to now.
    pub latency: Span,
}

/// One strategy's controls for every client of a run.
#[derive(Debug, Default)]
pub struct Gate {}

impl Gate {
    /// A gate with no controls.
    pub fn none() -> Gate {
        Gate {}
    }

    /// Whether there is no control at all (every call is then a no-op).
    #[inline]
    pub fn is_empty(&self) -> bool {
        true
    }

    /// An operation of `client` starts.
    #[inline]
    pub fn op_started(&mut self, _client: u32, _now: Instant) {}

    /// Attempt number `attempt` of an operation of `client` is about to be sent at `now`.
    #[inline]
    pub fn admit(&mut self, _client: u32, _now: Instant, _attempt: u32) -> Admit {
        Admit::Send
    }

    /// The client stopped waiting for an attempt: it was answered, or it timed out.
    #[inline]
    pub fn answered(&mut self, _client: u32, _a: &Answered) {}

    /// An operation of `client` ended, successfully or not.
    #[inline]
    pub fn op_ended(&mut self, _client: u32, _success: bool) {}

    /// The controls of one client, as the retry decision asks them.
    #[inline]
    pub fn client(&mut self, client: u32) -> ClientGate<'_> {
        ClientGate { _gate: self, _client: client }
    }
}

/// The gate seen by one client's retry decision.
pub struct ClientGate<'g> {
    _gate: &'g mut Gate,
    _client: u32,
}

impl RetryPermission for ClientGate<'_> {
    #[inline]
    fn permit_retry(&mut self, _failed: &FailedAttempt) -> Result<(), FailReason> {
        Ok(())
    }
}
