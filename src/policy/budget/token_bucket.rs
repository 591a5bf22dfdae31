//! The `token-bucket` budget: the AWS SDK retry quota (reference §1b botocore standard mode
//! v2.0 and v2.1, §1c smithy-rs), a bucket that starts full, pays for each retry with tokens
//! priced by the failure's [`RetryCause`] and is refilled only by successes.

use super::RetryCause;
use std::borrow::Borrow;

/// Parameters of a [`TokenBucket`], in tokens.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TokenBucketParams {
    /// Tokens at start, and the most the bucket holds.
    pub capacity: f64,
    /// Cost of a retry after a failure that is neither a timeout nor throttling.
    pub retry_cost: f64,
    /// Cost of a retry after a timeout.
    pub timeout_cost: f64,
    /// Cost of a retry after throttling (429).
    pub throttling_cost: f64,
    /// Refund when an operation succeeds without having acquired anything.
    pub success_refund: f64,
}

impl TokenBucketParams {
    /// botocore standard mode v2.0 (reference §1b `RetryQuota`; the same numbers in JS v3 and
    /// smithy-rs "legacy" era, §1c/§1d): `INITIAL_CAPACITY = 500` (also the maximum), 10 tokens
    /// after a timeout, 5 otherwise (throttling included), `NO_RETRY_INCREMENT = 1`.
    pub const AWS_STANDARD: TokenBucketParams = TokenBucketParams {
        capacity: 500.0,      // reference §1b: INITIAL_CAPACITY = 500
        retry_cost: 5.0,      // reference §1b: 5 for any other retryable error
        timeout_cost: 10.0,   // reference §1b: 10 for ConnectTimeoutError/ReadTimeoutError
        throttling_cost: 5.0, // reference §1b: throttling is not a separate class in v2.0
        success_refund: 1.0,  // reference §1b: NO_RETRY_INCREMENT = 1
    };

    /// Standard mode v2.1 (`AWS_NEW_RETRIES_2026`, reference §1a/§1b/§1c): 500 tokens, a
    /// throttling retry costs 5, any other retryable error 14; timeouts are no longer a separate
    /// class (so they cost 14 too).
    pub const AWS_STANDARD_2026: TokenBucketParams = TokenBucketParams {
        capacity: 500.0,      // reference §1a/§1b v2.1: retry quota 500 tokens
        retry_cost: 14.0,     // reference §1b v2.1: _RETRY_COST_V2, any other retryable error 14
        timeout_cost: 14.0,   // reference §1a/§1c: timeouts no longer a separate cost class (2.1: timeout 14)
        throttling_cost: 5.0, // reference §1b v2.1: throttling error 5
        success_refund: 1.0,  // reference §1b: NO_RETRY_INCREMENT = 1 (the reference lists no v2.1 change)
    };

    /// The cost of a retry after a failure of this cause.
    #[inline]
    pub fn cost(&self, cause: RetryCause) -> f64 {
        match cause {
            RetryCause::Timeout => self.timeout_cost,
            RetryCause::Throttling => self.throttling_cost,
            RetryCause::Other => self.retry_cost,
        }
    }
}

/// The AWS SDK retry quota (reference §1b botocore `RetryQuota` for standard v2.0 and v2.1,
/// §1c smithy-rs `TokenBucket`): a bucket that starts full, pays for each retry with tokens
/// priced by the failure's cause, and is refilled only by successes.
///
/// - Before a retry, [`TokenBucket::try_acquire`] takes the cost of that retry, or refuses the
///   retry (taking nothing) when fewer tokens remain than it costs: botocore then returns the
///   error at once (`RetryQuotaReached`).
/// - When an operation's final answer is a success (HTTP 2xx),
///   [`TokenBucket::on_success`] refunds `success_refund` (botocore's `NO_RETRY_INCREMENT = 1`,
///   smithy-rs's `regenerate_a_token`) if the operation never acquired tokens, else the amount
///   of its *last* acquisition (smithy-rs: the held permit is released); the bucket never holds
///   more than `capacity`.
/// - A failed ending refunds nothing (reference §1b "Non-2xx endings refund nothing"; the
///   go-v2#3186 issue), and a retry that fails loses its tokens (smithy-rs: the permit is
///   "forgotten").
///
/// In a total outage a full bucket of 500 tokens at cost 5 allows exactly 100 retries, then
/// none until successes come back; with `scope = "shared"` the whole fleet shares those.
///
/// The bucket owns its parameters or shares them (`&TokenBucketParams`, `Rc`): a million
/// per-client buckets then hold one pointer and their tokens each.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TokenBucket<P: Borrow<TokenBucketParams> = TokenBucketParams> {
    params: P,
    tokens: f64,
}

impl<P: Borrow<TokenBucketParams>> TokenBucket<P> {
    /// A full bucket.
    pub fn new(params: P) -> TokenBucket<P> {
        let tokens = params.borrow().capacity;
        TokenBucket { params, tokens }
    }

    /// The parameters it was made with.
    pub fn params(&self) -> &TokenBucketParams {
        self.params.borrow()
    }

    /// Tokens left.
    #[inline]
    pub fn tokens(&self) -> f64 {
        self.tokens
    }

    /// Before a retry after a failure of this `cause`: takes its cost and returns it (the gate
    /// keeps it as the operation's last acquisition, for [`TokenBucket::on_success`]), or
    /// returns `None` and takes nothing when fewer tokens remain than the retry costs (the retry
    /// is refused).
    #[inline]
    pub fn try_acquire(&mut self, cause: RetryCause) -> Option<f64> {
        let cost = self.params().cost(cause);
        if self.tokens < cost {
            return None;
        }
        self.tokens -= cost;
        Some(cost)
    }

    /// The operation's final answer was a success: refunds its last acquisition, or
    /// `success_refund` when it acquired nothing (`last_cost = None`), up to `capacity`.
    /// Call it once per successful operation, never after a failure.
    #[inline]
    pub fn on_success(&mut self, last_cost: Option<f64>) {
        let p = self.params.borrow();
        let refund = last_cost.unwrap_or(p.success_refund);
        self.tokens = (self.tokens + refund).min(p.capacity);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Retries granted in a total outage (every retry fails, nothing refunds) until refused.
    fn outage_retries(params: TokenBucketParams, cause: RetryCause) -> u32 {
        let mut b = TokenBucket::new(params);
        let mut n = 0;
        while b.try_acquire(cause).is_some() {
            n += 1;
            assert!(n <= 10_000, "never refused");
        }
        n
    }

    #[test]
    fn token_bucket_runs_dry_after_capacity_over_cost_retries() {
        let std = TokenBucketParams::AWS_STANDARD;
        assert_eq!(outage_retries(std, RetryCause::Other), 100, "500 / 5");
        assert_eq!(outage_retries(std, RetryCause::Throttling), 100, "500 / 5");
        assert_eq!(outage_retries(std, RetryCause::Timeout), 50, "500 / 10");
        let v21 = TokenBucketParams::AWS_STANDARD_2026;
        assert_eq!(outage_retries(v21, RetryCause::Other), 35, "floor(500 / 14)");
        assert_eq!(outage_retries(v21, RetryCause::Timeout), 35, "timeouts cost 14 in 2.1");
        assert_eq!(outage_retries(v21, RetryCause::Throttling), 100, "500 / 5");

        // After 35 transient retries 10 tokens remain: too few for a 14, enough for two 5s.
        let mut b = TokenBucket::new(v21);
        for _ in 0..35 {
            assert_eq!(b.try_acquire(RetryCause::Other), Some(14.0));
        }
        assert_eq!(b.tokens(), 10.0);
        assert_eq!(b.try_acquire(RetryCause::Other), None);
        assert_eq!(b.tokens(), 10.0, "a refused retry takes nothing");
        assert_eq!(b.try_acquire(RetryCause::Throttling), Some(5.0));
        assert_eq!(b.try_acquire(RetryCause::Throttling), Some(5.0));
        assert_eq!(b.try_acquire(RetryCause::Throttling), None);
        assert_eq!(b.tokens(), 0.0);
    }

    #[test]
    fn token_bucket_refunds_the_last_acquisition_or_one_token_on_success_only() {
        let mut b = TokenBucket::new(TokenBucketParams::AWS_STANDARD);
        // A success without retries at a full bucket: clamped at the capacity.
        b.on_success(None);
        assert_eq!(b.tokens(), 500.0);
        // An operation retries after a 503 (5), then after a timeout (10), then succeeds: only
        // its last acquisition comes back.
        let first = b.try_acquire(RetryCause::Other);
        let last = b.try_acquire(RetryCause::Timeout);
        assert_eq!((first, last), (Some(5.0), Some(10.0)));
        assert_eq!(b.tokens(), 485.0);
        b.on_success(last);
        assert_eq!(b.tokens(), 495.0);
        // A failed operation refunds nothing: the gate simply does not call on_success.
        b.try_acquire(RetryCause::Other);
        assert_eq!(b.tokens(), 490.0);
        // Clean successes refill one token each, never above the capacity.
        for _ in 0..7 {
            b.on_success(None);
        }
        assert_eq!(b.tokens(), 497.0);
        b.on_success(Some(10.0));
        assert_eq!(b.tokens(), 500.0, "clamped");
        // Refill from empty: 5 clean successes pay for one more retry.
        let mut b = TokenBucket::new(TokenBucketParams::AWS_STANDARD);
        while b.try_acquire(RetryCause::Other).is_some() {}
        for i in 1..=5 {
            b.on_success(None);
            assert_eq!(b.try_acquire(RetryCause::Other).is_some(), i == 5, "after {i} successes");
        }
    }

    #[test]
    fn token_bucket_free_cause_is_always_granted() {
        // Java v2 legacy charges 0 for throttling (reference §1d): never refused, even empty.
        let p = TokenBucketParams { throttling_cost: 0.0, ..TokenBucketParams::AWS_STANDARD };
        let mut b = TokenBucket::new(p);
        while b.try_acquire(RetryCause::Other).is_some() {}
        assert_eq!(b.try_acquire(RetryCause::Throttling), Some(0.0));
        assert_eq!(b.tokens(), 0.0);
    }
}
