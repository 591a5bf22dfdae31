//! The `grpc-throttle` budget: gRPC client retry throttling (gRFC A6 `retryThrottling`,
//! reference §2), one token less per failure, `token_ratio` more per success, retries only
//! above half the tokens.

/// Parameters of a [`GrpcThrottle`] (a service config's `retryThrottling`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GrpcThrottleParams {
    /// `maxTokens`, in (0, 1000] (reference §2): the start and the ceiling.
    pub max_tokens: f64,
    /// `tokenRatio`, > 0 with at most 3 decimals (reference §2): tokens added per success.
    pub token_ratio: f64,
}

impl GrpcThrottleParams {
    /// The example of gRFC A6 (reference §2: "Spec example: 10 / 0.1"). gRPC has no default:
    /// without `retryThrottling` in the service config there is no throttling.
    pub const A6_EXAMPLE: GrpcThrottleParams = GrpcThrottleParams {
        max_tokens: 10.0, // reference §2: spec example maxTokens 10
        token_ratio: 0.1, // reference §2: spec example tokenRatio 0.1
    };
}

/// gRPC client retry throttling (gRFC A6 `retryThrottling`, reference §2), one per server name.
///
/// `token_count` starts at `max_tokens` and stays in `[0, max_tokens]`; every failed RPC
/// (retryable status, or a "don't retry" pushback) takes 1 ([`GrpcThrottle::record_failure`]),
/// every successful RPC adds `token_ratio` ([`GrpcThrottle::record_success`]); retries (and
/// hedges after the first) are allowed only while `token_count > max_tokens / 2`
/// ([`GrpcThrottle::retry_allowed`]). A refused retry does not wait: the failure is returned.
///
/// **Order (grpc-go, reference §2):** on each retryable failure grpc-go *first* decrements
/// (floor 0) and *then* checks the threshold, so the failure that crosses the threshold is
/// itself not retried. The gate calls [`GrpcThrottle::record_failure`] then
/// [`GrpcThrottle::retry_allowed`], or [`GrpcThrottle::record_failure_and_check`] which does
/// both.
///
/// **What counts (grpc-go `csAttempt.shouldRetry`):** every failed *attempt* whose status is
/// retryable, checked before `maxAttempts`, so the last attempt's failure counts too; a
/// negative pushback counts as a failure whatever the status; a success is counted once per
/// successful call. The reference says "every failed RPC"; grpc-go counts attempts.
///
/// In steady state, with a fraction `f` of RPCs failing, tokens drift by
/// `(1 - f) * token_ratio - f` per RPC: retries stop once `f > token_ratio / (1 + token_ratio)`
/// (about 9 % for the spec example's 0.1).
///
/// Tokens are kept as integer thousandths (gRPC C-core's `milli_tokens`), which is exact for the
/// 3 decimals gRFC A6 allows; grpc-go keeps an `f64`, whose rounding (ten additions of 0.1 are
/// not exactly 1) can move a threshold crossing by one RPC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GrpcThrottle {
    max_milli: i64,
    ratio_milli: i64,
    milli: i64,
}

impl GrpcThrottle {
    /// A throttle at `max_tokens`.
    pub fn new(params: GrpcThrottleParams) -> GrpcThrottle {
        let max_milli = to_milli(params.max_tokens);
        GrpcThrottle { max_milli, ratio_milli: to_milli(params.token_ratio), milli: max_milli }
    }

    /// Tokens left.
    #[inline]
    pub fn tokens(&self) -> f64 {
        self.milli as f64 / 1000.0
    }

    /// A failed RPC (retryable status or "don't retry" pushback): one token less, not below 0.
    #[inline]
    pub fn record_failure(&mut self) {
        self.milli = (self.milli - 1000).max(0);
    }

    /// A successful RPC: `token_ratio` more, not above `max_tokens`.
    #[inline]
    pub fn record_success(&mut self) {
        self.milli = (self.milli + self.ratio_milli).min(self.max_milli);
    }

    /// Whether a retry (or a hedge after the first) may be sent: `tokens > max_tokens / 2`.
    #[inline]
    pub fn retry_allowed(&self) -> bool {
        2 * self.milli > self.max_milli
    }

    /// grpc-go's order on a retryable failure: records the failure, then says whether it may
    /// be retried (so the failure that crosses the threshold is not).
    #[inline]
    pub fn record_failure_and_check(&mut self) -> bool {
        self.record_failure();
        self.retry_allowed()
    }
}

/// Tokens to integer thousandths, rounded (gRFC A6 allows 3 decimals).
fn to_milli(tokens: f64) -> i64 {
    (tokens * 1000.0).round() as i64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::rng::u01;
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    #[test]
    fn grpc_throttle_decrements_before_checking() {
        let mut t = GrpcThrottle::new(GrpcThrottleParams::A6_EXAMPLE);
        assert_eq!(t.tokens(), 10.0);
        assert!(t.retry_allowed());
        // 10 -> 9, 8, 7, 6: each still > 5, retried; the 5th failure brings it to 5, which is
        // not > 5: the failure that crosses the threshold is itself not retried (checking
        // before decrementing would have seen 6 and retried it).
        let verdicts: Vec<bool> = (0..7).map(|_| t.record_failure_and_check()).collect();
        assert_eq!(verdicts, [true, true, true, true, false, false, false]);
        assert_eq!(t.tokens(), 3.0);
        // Floor at 0.
        for _ in 0..10 {
            t.record_failure();
        }
        assert_eq!(t.tokens(), 0.0);
        // From 0, 50 successes give exactly 5.0 (not > 5); the 51st gives 5.1. Integer
        // thousandths make this exact (fifty f64 additions of 0.1 are not exactly 5).
        for _ in 0..50 {
            t.record_success();
        }
        assert_eq!(t.tokens(), 5.0);
        assert!(!t.retry_allowed());
        t.record_success();
        assert!(t.retry_allowed());
        // Ceiling at max_tokens.
        for _ in 0..1000 {
            t.record_success();
        }
        assert_eq!(t.tokens(), 10.0);
    }

    /// Runs `rpcs` RPCs where `fails(i)` says whether RPC `i` fails; returns how many failures
    /// were retried among the failures of the second half (after any warm-up).
    fn retried_share(p: GrpcThrottleParams, rpcs: usize, mut fails: impl FnMut(usize) -> bool) -> f64 {
        let mut t = GrpcThrottle::new(p);
        let (mut failures, mut retried) = (0u64, 0u64);
        for i in 0..rpcs {
            if fails(i) {
                let ok = t.record_failure_and_check();
                if i >= rpcs / 2 {
                    failures += 1;
                    retried += ok as u64;
                }
            } else {
                t.record_success();
            }
        }
        retried as f64 / failures as f64
    }

    #[test]
    fn grpc_throttle_stops_retries_above_ratio_over_one_plus_ratio() {
        // One failure every m RPCs: per cycle tokens move by (m - 1) * ratio - 1, so retries
        // go on forever iff 1/m < ratio / (1 + ratio). Exact, deterministic.
        for (ratio, max) in [(0.1, 10.0), (0.25, 100.0), (0.5, 4.0), (1.0, 1000.0)] {
            let p = GrpcThrottleParams { max_tokens: max, token_ratio: ratio };
            let threshold = ratio / (1.0 + ratio);
            for m in 2..40usize {
                let f = 1.0 / m as f64;
                if ((m - 1) as f64 * ratio - 1.0).abs() < 1e-9 {
                    continue; // exactly at the threshold: tokens stand still
                }
                let share = retried_share(p, 400_000, |i| i % m == m - 1);
                if f < threshold {
                    assert_eq!(share, 1.0, "ratio {ratio}, 1 failure in {m}: below threshold");
                } else {
                    assert_eq!(share, 0.0, "ratio {ratio}, 1 failure in {m}: above threshold");
                }
            }
        }
    }

    #[test]
    fn grpc_throttle_random_failures_cross_over_at_the_threshold() {
        // Independent failures with probability f (A6 example, threshold 1/11 = 0.0909).
        // Tokens are a random walk reflected at 0 and at max; by Kingman's bound the stationary
        // chance of being d tokens from the reflecting end is at most exp(-theta d), with theta
        // the root of E[exp(theta step)] = 1 for the walk's steps measured away from that end.
        // - f = threshold / 2 = 0.0455: the deficit below 10 steps +1 (f) or -0.1; theta = 1.25;
        //   a failure is refused only if the deficit was already >= 4: at most exp(-5) = 0.7 %.
        // - f = 2 threshold = 0.182: tokens step +0.1 or -1 (f); theta = 1.63; a failure is
        //   retried only if tokens were > 6: at most exp(-9.8) = 6e-5 (plus ~50 RPCs of
        //   warm-up from the full start, dropped with the first half).
        // Failures see the stationary law (they are independent of the past), so the shares
        // below have margins of about 7x and 150x over those bounds.
        let p = GrpcThrottleParams::A6_EXAMPLE;
        let threshold = 0.1 / 1.1;
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(0x9C9C);
        let below = retried_share(p, 2_000_000, |_| u01(&mut rng) < threshold / 2.0);
        assert!(below > 0.95, "retried share {below} below the threshold");
        let above = retried_share(p, 2_000_000, |_| u01(&mut rng) < threshold * 2.0);
        assert!(above < 0.01, "retried share {above} above the threshold");
    }
}
