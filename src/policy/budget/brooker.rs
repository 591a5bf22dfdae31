//! The `brooker` budget: the adaptive retry bucket of Marc Brooker's retry simulator
//! (`AdaptiveRetryStrategy` in `retry_sim/retry_strategy.py`, mbrooker/simulator_example
//! commit bbfe3946f0459a69f6012737c68fc63b973471be; the "adaptive" strategy of "Fixing retries
//! with token buckets and circuit breakers", 2022; docs/retry-policies.md §11).
//!
//! Upstream, per client:
//!
//! ```text
//! bucket = bucket_size                                      # starts full
//! start():        bucket = min(bucket + bucket_fill_rate, bucket_size)
//! should_retry(): if bucket > 1.0: bucket -= 1.0; return True  else: return False
//! ```
//!
//! `start()` runs once per call (`Call.start`, the first attempt only: retries go straight
//! back to the server), `should_retry()` after every failed attempt. So a call deposits before
//! its first attempt is sent, a deposit into a full bucket is lost, a retry needs strictly
//! more than its cost and takes it, and nothing else (successes, time) refills the bucket. The
//! bucket sets no attempt limit of its own. The arithmetic is `f64` in the same order as
//! upstream's Python floats (IEEE doubles), so the token sequence is upstream's to the bit.

use std::borrow::Borrow;

/// Parameters of a [`BrookerBucket`], in tokens.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BrookerBucketParams {
    /// Tokens at start, and the most the bucket holds (upstream `bucket_size`).
    pub capacity: f64,
    /// Tokens each call deposits when it starts (upstream `bucket_fill_rate`).
    pub per_call: f64,
    /// Tokens a retry takes; a retry needs strictly more than this (upstream `1.0`).
    pub retry_cost: f64,
}

impl BrookerBucketParams {
    /// `AdaptiveRetryFactory(0.1, 5)` of `run_sims` ("adaptive_10pct", §11): 5 tokens, +0.1
    /// per call, 1 per retry.
    pub const BROOKER_2022: BrookerBucketParams = BrookerBucketParams {
        capacity: 5.0,   // §11: AdaptiveRetryFactory(0.1, 5): bucket_size = 5
        per_call: 0.1,   // §11: bucket_fill_rate = 0.1
        retry_cost: 1.0, // §11: should_retry: bucket > 1.0, then bucket -= 1.0
    };
}

/// Brooker's adaptive retry bucket (module docs): starts full, `+per_call` per call started
/// (capped at `capacity`), a retry allowed while `tokens > retry_cost`, taking `retry_cost`.
///
/// The bucket owns its parameters or shares them (`&BrookerBucketParams`, `Rc`), as the
/// token bucket does: a million per-client buckets then hold one pointer and their tokens.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BrookerBucket<P: Borrow<BrookerBucketParams> = BrookerBucketParams> {
    params: P,
    tokens: f64,
}

impl<P: Borrow<BrookerBucketParams>> BrookerBucket<P> {
    /// A full bucket.
    pub fn new(params: P) -> BrookerBucket<P> {
        let tokens = params.borrow().capacity;
        BrookerBucket { params, tokens }
    }

    /// The parameters it was made with.
    pub fn params(&self) -> &BrookerBucketParams {
        self.params.borrow()
    }

    /// Tokens held.
    #[inline]
    pub fn tokens(&self) -> f64 {
        self.tokens
    }

    /// A call starts (before its first attempt): deposits `per_call`, up to `capacity`.
    #[inline]
    pub fn on_call_started(&mut self) {
        let p = self.params.borrow();
        self.tokens = (self.tokens + p.per_call).min(p.capacity);
    }

    /// After a failed attempt: takes `retry_cost` and returns `true` when the bucket holds
    /// strictly more than that, else takes nothing and returns `false`.
    #[inline]
    pub fn try_retry(&mut self) -> bool {
        let cost = self.params.borrow().retry_cost;
        if self.tokens > cost {
            self.tokens -= cost;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: BrookerBucketParams = BrookerBucketParams::BROOKER_2022;

    /// Upstream's rules transcribed as Python runs them: each call `start()`s, then its
    /// attempts fail until `should_retry()` says no (a total outage, calls one after another).
    /// Returns the retries each call got.
    fn upstream_outage(calls: usize) -> Vec<u32> {
        let (size, fill) = (5.0f64, 0.1f64);
        let mut bucket = size;
        (0..calls)
            .map(|_| {
                bucket = f64::min(bucket + fill, size);
                let mut retries = 0;
                while bucket > 1.0 {
                    bucket -= 1.0;
                    retries += 1;
                }
                retries
            })
            .collect()
    }

    /// The same outage through the state machine.
    fn outage(calls: usize) -> Vec<u32> {
        let mut b = BrookerBucket::new(P);
        (0..calls)
            .map(|_| {
                b.on_call_started();
                let mut retries = 0;
                while b.try_retry() {
                    retries += 1;
                    assert!(retries < 100, "never refused");
                }
                retries
            })
            .collect()
    }

    #[test]
    fn brooker_bucket_starts_full_and_loses_the_first_deposit() {
        let mut b = BrookerBucket::new(P);
        assert_eq!(b.tokens(), 5.0);
        b.on_call_started();
        assert_eq!(b.tokens(), 5.0, "capped at 5: the first call's deposit is lost");
        // Four retries: 5 -> 4 -> 3 -> 2 -> 1; then 1 is not more than 1.
        for left in [4.0, 3.0, 2.0, 1.0] {
            assert!(b.try_retry());
            assert_eq!(b.tokens(), left);
        }
        assert!(!b.try_retry(), "a retry needs strictly more than its cost");
        assert_eq!(b.tokens(), 1.0, "a refused retry takes nothing");
        // The next call brings it to 1.1: one retry, leaving 0.1 (as a double, 1.1 - 1).
        b.on_call_started();
        assert_eq!(b.tokens(), 1.0 + 0.1);
        assert!(b.try_retry());
        assert_eq!(b.tokens(), 1.0 + 0.1 - 1.0);
        assert!(!b.try_retry());
    }

    #[test]
    fn brooker_bucket_outage_sequence_is_upstreams() {
        // In a total outage with calls one after another: 4 retries for the first call, then
        // one retry every 10th call (calls 2, 12, 22, ...), none in between.
        let got = outage(1000);
        assert_eq!(got, upstream_outage(1000));
        for (i, &r) in got.iter().enumerate() {
            let call = i + 1;
            let want = match call {
                1 => 4,
                c if c % 10 == 2 => 1,
                _ => 0,
            };
            assert_eq!(r, want, "call {call}");
        }
        // 4 + floor((N + 8) / 10) retries for N >= 2 calls.
        for n in [2usize, 11, 12, 99, 1000] {
            let total: u32 = outage(n).iter().sum();
            assert_eq!(total as usize, 4 + (n + 8) / 10, "{n} calls");
        }
    }

    #[test]
    fn brooker_bucket_never_holds_more_than_capacity() {
        let mut b = BrookerBucket::new(P);
        assert!(b.try_retry() && b.try_retry());
        assert_eq!(b.tokens(), 3.0);
        // 20 deposits of 0.1 give back the two tokens; the next 10 are lost at the cap.
        for _ in 0..30 {
            b.on_call_started();
            assert!(b.tokens() <= 5.0);
        }
        assert_eq!(b.tokens(), 5.0);
        // Other parameters: a retry cost of 2 needs more than 2 tokens.
        let p = BrookerBucketParams { capacity: 4.0, per_call: 0.5, retry_cost: 2.0 };
        let mut b = BrookerBucket::new(&p);
        assert!(b.try_retry());
        assert!(!b.try_retry(), "2 tokens left is not more than 2");
        b.on_call_started();
        assert!(b.try_retry());
        assert_eq!(b.tokens(), 0.5);
    }

    #[test]
    fn brooker_bucket_with_zero_deposit_allows_a_fixed_number_of_retries() {
        let p = BrookerBucketParams { per_call: 0.0, ..P };
        let mut b = BrookerBucket::new(p);
        let mut n = 0;
        for _ in 0..100 {
            b.on_call_started();
            while b.try_retry() {
                n += 1;
            }
        }
        assert_eq!(n, 4, "5 tokens, more than 1 needed per retry");
    }
}
