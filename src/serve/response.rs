//! What the model's answer looks like over HTTP: a status, `Retry-After`, or no answer at
//! all.
//!
//! - A success is `200`; an error status is itself.
//! - A Retry-After is sent as whole seconds, rounded up (RFC 9110 §10.2.3 allows only whole
//!   seconds or a date), or as an HTTP-date with `--retry-after-date`; when the model's delay
//!   is not a whole number of seconds (a `retry_after = "500ms"`, a rate limiter's
//!   `retry_after = "exact"`), `Retry-After-Ms` carries it in milliseconds as well (the header
//!   Azure's SDKs read). `x-amz-retry-after` carries it in milliseconds on every such answer:
//!   it is the only form the AWS SDKs read (botocore 1.44's `ExponentialBackoff` reads
//!   `x-amz-retry-after` and nothing else), so that an AWS client meets the same server value.
//! - "Overloaded; don't retry" (`reject_dont_retry`) has no HTTP header of its own: it is
//!   sent as `X-Retrysim-Dont-Retry: 1` without Retry-After, so that a client can be taught to
//!   read it.
//! - An outage with `status = "timeout"` never answers; one with `"connection-error"` closes
//!   the connection.

use crate::model::server::Reply;
use crate::policy::{Outcome, RetryAfter};
use std::time::{Duration, SystemTime};

/// What the HTTP front sends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    Http(HttpAnswer),
    /// Keep the request open, never answering.
    Silence,
    /// Close the connection without an answer.
    Reset,
}

/// An HTTP answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpAnswer {
    pub status: u16,
    /// `Retry-After`'s value.
    pub retry_after: Option<String>,
    /// `Retry-After-Ms`'s value.
    pub retry_after_ms: Option<u64>,
    /// `x-amz-retry-after`'s value: the delay in milliseconds, rounded up.
    pub amz_retry_after_ms: Option<u64>,
    pub dont_retry: bool,
}

impl HttpAnswer {
    pub fn status(status: u16) -> HttpAnswer {
        HttpAnswer {
            status,
            retry_after: None,
            retry_after_ms: None,
            amz_retry_after_ms: None,
            dont_retry: false,
        }
    }
}

/// How Retry-After is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetryAfterStyle {
    /// `Retry-After: 2`.
    Seconds,
    /// `Retry-After: Thu, 03 Dec 2026 12:00:02 GMT`, the wall-clock time then.
    Date,
}

/// The HTTP form of `reply`, sent at wall-clock time `now`.
pub fn answer(reply: Reply, style: RetryAfterStyle, now: SystemTime) -> Answer {
    let status = match reply.outcome {
        Outcome::Success => 200,
        Outcome::Status(s) => s,
        Outcome::Timeout => return Answer::Silence,
        Outcome::ConnectionError => return Answer::Reset,
    };
    let mut a = HttpAnswer::status(status);
    match reply.retry_after.decode() {
        None => {}
        Some(RetryAfter::DontRetry) => a.dont_retry = true,
        Some(RetryAfter::After(span)) => {
            let ns = span.as_ns();
            let secs = ns.div_ceil(1_000_000_000);
            a.retry_after = Some(match style {
                RetryAfterStyle::Seconds => secs.to_string(),
                RetryAfterStyle::Date => {
                    // A date is read to the second: the next whole second at or after the
                    // delay's end, so that a client never retries early.
                    let at = now + Duration::from_nanos(ns);
                    let since_epoch = at.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
                    let whole = since_epoch.as_nanos().div_ceil(1_000_000_000) as u64;
                    httpdate::fmt_http_date(SystemTime::UNIX_EPOCH + Duration::from_secs(whole))
                }
            });
            let ms = ns.div_ceil(1_000_000);
            if !ns.is_multiple_of(1_000_000_000) {
                a.retry_after_ms = Some(ms);
            }
            a.amz_retry_after_ms = Some(ms);
        }
    }
    Answer::Http(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Span;
    use crate::model::server::RetryAfterCode;

    fn reply(outcome: Outcome, retry_after: RetryAfterCode) -> Reply {
        Reply { outcome, retry_after }
    }

    #[test]
    fn retry_after_is_whole_seconds_rounded_up_with_the_milliseconds_beside() {
        let now = SystemTime::UNIX_EPOCH;
        let a = answer(
            reply(Outcome::Status(503), RetryAfterCode::after(Span::from_millis(1500))),
            RetryAfterStyle::Seconds,
            now,
        );
        let want = HttpAnswer {
            status: 503,
            retry_after: Some("2".into()),
            retry_after_ms: Some(1500),
            amz_retry_after_ms: Some(1500),
            dont_retry: false,
        };
        assert_eq!(a, Answer::Http(want));
        let a = answer(
            reply(Outcome::Status(429), RetryAfterCode::after(Span::from_secs(3))),
            RetryAfterStyle::Seconds,
            now,
        );
        let want = HttpAnswer {
            status: 429,
            retry_after: Some("3".into()),
            retry_after_ms: None,
            amz_retry_after_ms: Some(3000),
            dont_retry: false,
        };
        assert_eq!(a, Answer::Http(want));
        let a = answer(
            reply(Outcome::Status(429), RetryAfterCode::after(Span::from_secs(3))),
            RetryAfterStyle::Date,
            now,
        );
        let Answer::Http(a) = a else { panic!() };
        assert_eq!(a.retry_after.as_deref(), Some("Thu, 01 Jan 1970 00:00:03 GMT"));
        assert_eq!(
            answer(Reply::SUCCESS, RetryAfterStyle::Seconds, now),
            Answer::Http(HttpAnswer::status(200))
        );
    }

    #[test]
    fn dont_retry_silence_and_reset() {
        let now = SystemTime::UNIX_EPOCH;
        let Answer::Http(a) =
            answer(reply(Outcome::Status(503), RetryAfterCode::DONT_RETRY), RetryAfterStyle::Seconds, now)
        else {
            panic!()
        };
        assert!(a.dont_retry && a.retry_after.is_none() && a.amz_retry_after_ms.is_none());
        assert_eq!(answer(Reply::of(Outcome::Timeout), RetryAfterStyle::Seconds, now), Answer::Silence);
        assert_eq!(answer(Reply::of(Outcome::ConnectionError), RetryAfterStyle::Seconds, now), Answer::Reset);
    }
}
