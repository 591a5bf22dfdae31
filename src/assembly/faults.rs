//! `[[server.faults]]` and the server's background `errors` (DESIGN §3.4) as the model's
//! windows of simulated time and answers.

use crate::engine::Instant;
use crate::experiment::{Duration, ErrorSpec, FaultSpec, FaultStatus, NamedFailure};
use crate::model::server::RetryAfterCode;
use crate::model::server::faults::{ErrorAnswer, ErrorRate, Fault, FaultKind, OutageAnswer};
use crate::policy::Outcome;

/// A fault, active on `[start, start + duration)`.
pub fn fault(spec: &FaultSpec) -> Fault {
    let (start, duration) = spec.window();
    let start = Instant::ZERO + start.span();
    let kind = match *spec {
        FaultSpec::Outage { status, retry_after, .. } => FaultKind::Outage {
            answer: match status {
                FaultStatus::Status(s) => OutageAnswer::Answer(Outcome::Status(s)),
                FaultStatus::Named(NamedFailure::Timeout) => OutageAnswer::Silence,
                FaultStatus::Named(NamedFailure::ConnectionError) => {
                    OutageAnswer::Answer(Outcome::ConnectionError)
                }
            },
            retry_after: code(retry_after),
        },
        FaultSpec::Capacity { factor, .. } => FaultKind::Capacity { factor },
        FaultSpec::Slowdown { factor, .. } => FaultKind::Slowdown { factor },
        FaultSpec::Errors { probability, status, after_effect, retry_after, .. } => {
            FaultKind::Errors(ErrorRate {
                answer: ErrorAnswer { status, after_effect, retry_after: code(retry_after) },
                probability,
            })
        }
        FaultSpec::Restart { .. } => FaultKind::Restart,
    };
    Fault { start, end: start + duration.span(), kind }
}

/// A background error: answered without a Retry-After.
pub fn background_error(spec: &ErrorSpec) -> ErrorRate {
    ErrorRate {
        answer: ErrorAnswer {
            status: spec.status,
            after_effect: spec.after_effect,
            retry_after: RetryAfterCode::NONE,
        },
        probability: spec.probability,
    }
}

fn code(retry_after: Option<Duration>) -> RetryAfterCode {
    retry_after.map_or(RetryAfterCode::NONE, |d| RetryAfterCode::after(d.span()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn a_fault_becomes_its_window_and_answer() {
        let outage = fault(&FaultSpec::Outage {
            start: Duration(10 * S),
            duration: Duration(5 * S),
            replica: None,
            replica_share: None,
            status: FaultStatus::Named(NamedFailure::ConnectionError),
            retry_after: Some(Duration(2 * S)),
        });
        assert_eq!((outage.start, outage.end), (Instant::from_ns(10 * S), Instant::from_ns(15 * S)));
        assert_eq!(
            outage.kind,
            FaultKind::Outage {
                answer: OutageAnswer::Answer(Outcome::ConnectionError),
                retry_after: RetryAfterCode::after(crate::engine::Span::from_ns(2 * S)),
            }
        );
        let silent = fault(&FaultSpec::Outage {
            start: Duration(0),
            duration: Duration(S),
            replica: None,
            replica_share: None,
            status: FaultStatus::Named(NamedFailure::Timeout),
            retry_after: None,
        });
        assert_eq!(
            silent.kind,
            FaultKind::Outage { answer: OutageAnswer::Silence, retry_after: RetryAfterCode::NONE }
        );
    }
}
