//! The rules of `hedge` (DESIGN §4.10) between keys.

use super::{Check, fail};
use crate::experiment::{ExperimentSpec, HedgePreset, HopPolicySpec, ServerSpec, Strategy, WorkloadSpec};

/// A hedged edge's rules (`[[services]] calls`, `hop_policy`): a readable delay, gRPC's
/// `maxAttempts` given, no retries besides the copies, and no hedge on the per-try timeout
/// (Envoy's, which keeps a timed-out copy waiting: not modelled on an edge).
pub(super) fn edge_hedge(p: &HopPolicySpec, key: &str) -> Check {
    let Some(h) = &p.hedge else { return Ok(()) };
    let hkey = format!("{key}.hedge");
    if let Err(reason) = h.parsed_delay() {
        fail(format!("{hkey}.delay"), reason)?;
    }
    if h.preset == Some(HedgePreset::Envoy) || h.hedge_on_per_try_timeout == Some(true) {
        fail(
            hkey.clone(),
            "with Envoy's hedge on per-try timeout is not modelled on an edge (a timed-out copy kept waiting); \
             use gRPC's hedging (max_attempts and delay) or preset = \"polly\"",
        )?;
    }
    if h.preset.is_none() && h.max_attempts.is_none() {
        fail(
            format!("{hkey}.max_attempts"),
            "is required without a preset (gRPC's maxAttempts has no default): set it between 2 and 5",
        )?;
    }
    if p.max_attempts != 1 {
        fail(
            format!("{key}.max_attempts"),
            format!(
                "is {} with hedge: hedging replaces retrying (gRPC allows only one of retryPolicy and \
                 hedgingPolicy per method); set max_attempts = 1 on this edge, and the copies with \
                 hedge.max_attempts",
                p.max_attempts
            ),
        )?;
    }
    Ok(())
}

/// A hedged strategy's rules: a readable delay, `max_attempts` given (A6 requires it) unless a
/// preset sets it, no retries besides the copies (gRPC allows only one of retryPolicy and
/// hedgingPolicy), a per-try timeout for Envoy's hedge on it, and none of the features whose
/// interplay with several copies in flight is not modelled.
pub(super) fn hedge(spec: &ExperimentSpec, s: &Strategy, key: &str) -> Check {
    let Some(h) = &s.policy.hedge else { return Ok(()) };
    let hkey = format!("{key}.hedge");
    if let Err(reason) = h.parsed_delay() {
        fail(format!("{hkey}.delay"), reason)?;
    }
    if h.preset.is_none() && h.max_attempts.is_none() {
        fail(
            format!("{hkey}.max_attempts"),
            "is required without a preset (gRPC's maxAttempts has no default): set it between 2 and 5, \
             or use preset = \"polly\" or \"envoy\"",
        )?;
    }
    if s.policy.max_attempts != Some(1) {
        let now = s.policy.max_attempts.map_or("unlimited".to_owned(), |n| n.to_string());
        fail(
            format!("{key}.max_attempts"),
            format!(
                "is {now} with hedge: hedging replaces retrying (gRPC allows only one of retryPolicy and \
                 hedgingPolicy per method); set max_attempts = 1 in this strategy, and the copies with \
                 hedge.max_attempts"
            ),
        )?;
    }
    let on_timeout = h.hedge_on_per_try_timeout.unwrap_or(h.preset == Some(HedgePreset::Envoy));
    if on_timeout && s.policy.timeout.is_none() {
        fail(
            format!("{key}.timeout"),
            "is needed by hedge_on_per_try_timeout (preset envoy): the next copy goes out when a copy's \
             per-try timeout fires; set timeout, e.g. \"100ms\"",
        )?;
    }
    let unsupported = [
        ("layers", !s.policy.layers.is_empty(), "gateway layers"),
        ("pool", s.policy.pool.is_some(), "a connection pool"),
        ("dead_letter", s.policy.dead_letter.is_some(), "a dead-letter queue"),
        ("limit", s.policy.limit.is_some(), "a concurrency limit"),
    ];
    for (k, present, what) in unsupported {
        if present {
            fail(
                hkey.clone(),
                format!(
                    "with {what} is not modelled (several copies of a call in flight); remove hedge or {k}"
                ),
            )?;
        }
    }
    if let ServerSpec::Queue(q) = &spec.server
        && q.replicas > 1
    {
        fail(
            hkey.clone(),
            format!(
                "with server.replicas = {} is not modelled yet (cancelling a copy at its replica); remove hedge or set replicas = 1",
                q.replicas
            ),
        )?;
    }
    if matches!(spec.workload, WorkloadSpec::Queue { .. }) {
        fail(
            hkey,
            "with a queue workload is not modelled (the queue, not a caller, delivers a message again); \
             remove hedge or use an open or closed workload",
        )?;
    }
    Ok(())
}
