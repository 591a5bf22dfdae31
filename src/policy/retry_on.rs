//! Retry classification (DESIGN §3.5): which outcomes a client retries.

/// What a client sees at the end of one attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A 2xx answer.
    Success,
    /// An error answer with this HTTP status.
    Status(u16),
    /// No answer within `client.timeout` (or the answer was lost).
    Timeout,
    /// A fast failure to connect.
    ConnectionError,
}

/// The set of retryable outcomes: one bit per status 400..=599, plus timeout and connection
/// error. Checking is a shift and a mask, cheap enough for the event loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryOn {
    statuses: [u64; 4],
    timeout: bool,
    connection_error: bool,
}

/// DESIGN §3.5: 429, 502, 503, 504, 409 (idempotency key still in progress), timeout,
/// connection error. Not 400, 401, 403, 422 (nor 500: a server bug is not fixed by retrying).
pub const DEFAULT_RETRY_STATUSES: [u16; 5] = [409, 429, 502, 503, 504];

impl Default for RetryOn {
    fn default() -> Self {
        let mut r = RetryOn::none();
        for s in DEFAULT_RETRY_STATUSES {
            r.add_status(s);
        }
        r.timeout = true;
        r.connection_error = true;
        r
    }
}

impl RetryOn {
    /// Retries nothing.
    pub fn none() -> RetryOn {
        RetryOn { statuses: [0; 4], timeout: false, connection_error: false }
    }

    /// Every failure: every status 400..=599, timeouts and connection errors.
    pub fn all_failures() -> RetryOn {
        RetryOn { statuses: [u64::MAX; 4], timeout: true, connection_error: true }
    }

    /// Exactly these failures: statuses (400..=599; others are ignored), timeouts and
    /// connection errors.
    pub fn of(failures: impl IntoIterator<Item = Outcome>) -> RetryOn {
        let mut r = RetryOn::none();
        for f in failures {
            match f {
                Outcome::Status(s) => r.add_status(s),
                Outcome::Timeout => r.timeout = true,
                Outcome::ConnectionError => r.connection_error = true,
                Outcome::Success => {}
            }
        }
        r
    }

    fn add_status(&mut self, status: u16) {
        if (400..=599).contains(&status) {
            let i = (status - 400) as usize;
            self.statuses[i / 64] |= 1 << (i % 64);
        }
    }

    /// Whether a failed attempt with this outcome may be retried.
    #[inline]
    pub fn retries(&self, outcome: Outcome) -> bool {
        match outcome {
            Outcome::Success => false,
            Outcome::Timeout => self.timeout,
            Outcome::ConnectionError => self.connection_error,
            Outcome::Status(s) if (400..=599).contains(&s) => {
                let i = (s - 400) as usize;
                self.statuses[i / 64] & (1 << (i % 64)) != 0
            }
            Outcome::Status(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_design() {
        let r = RetryOn::default();
        for s in [409, 429, 502, 503, 504] {
            assert!(r.retries(Outcome::Status(s)), "{s}");
        }
        for s in [400, 401, 403, 422, 500, 599] {
            assert!(!r.retries(Outcome::Status(s)), "{s}");
        }
        assert!(r.retries(Outcome::Timeout));
        assert!(r.retries(Outcome::ConnectionError));
        assert!(!r.retries(Outcome::Success));
    }

    #[test]
    fn explicit_list_replaces_defaults() {
        let r = RetryOn::of([Outcome::Status(500), Outcome::Timeout]);
        assert!(r.retries(Outcome::Status(500)));
        assert!(!r.retries(Outcome::Status(503)));
        assert!(r.retries(Outcome::Timeout));
        assert!(!r.retries(Outcome::ConnectionError));
        // Every bit is independent, across the word boundaries of the bitset.
        for s in 400..=599u16 {
            let one = RetryOn::of([Outcome::Status(s)]);
            for t in 400..=599u16 {
                assert_eq!(one.retries(Outcome::Status(t)), s == t);
            }
        }
    }
}
