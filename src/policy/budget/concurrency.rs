//! The `concurrency` budget: Envoy's retry budget (reference §3e), a bound on the retries in
//! flight as a share of the requests in flight, with a floor.

/// Parameters of a [`ConcurrencyBudget`] (Envoy's `RetryBudget` in `circuit_breaker.proto`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConcurrencyBudgetParams {
    /// `budget_percent`: 20.0 means active retries may be 20 % of active requests.
    pub percent: f64,
    /// `min_retry_concurrency`: retries allowed at once whatever the traffic.
    pub min_concurrency: u32,
}

impl ConcurrencyBudgetParams {
    /// Envoy's defaults once a retry budget is configured (reference §3e): 20 %, at least 3.
    pub const ENVOY_DEFAULT: ConcurrencyBudgetParams = ConcurrencyBudgetParams {
        percent: 20.0,      // reference §3e: budget_percent 20 %
        min_concurrency: 3, // reference §3e: min_retry_concurrency 3
    };

    /// Envoy without a retry budget: the `max_retries` circuit breaker (reference §3e: default
    /// 3 concurrent retries), which is this budget with 0 % and a minimum of 3.
    pub const ENVOY_MAX_RETRIES: ConcurrencyBudgetParams = ConcurrencyBudgetParams {
        percent: 0.0,
        min_concurrency: 3, // reference §3e: max_retries circuit breaker, default 3
    };
}

/// Envoy's retry budget (reference §3e; `ResourceManagerImpl::RetryBudgetImpl` in
/// `source/common/upstream/resource_manager_impl.h` at the reference's commit 01c2c1fa): a
/// bound on *concurrent* retries, not on a rate.
///
/// `max_active_retries = max(floor(percent / 100 * active_requests), min_concurrency)`, and a
/// retry may start only if `active_retries < max_active_retries`; otherwise it overflows and
/// the original failure is returned (`upstream_rq_retry_overflow`).
///
/// - `active_requests` counts every attempt in flight, first attempts and retries (Envoy's
///   `requests + pending_requests`: streams open or waiting for a connection).
/// - `active_retries` counts retries in flight.
/// - **The retry about to start does not count itself**: Envoy checks `canCreate()`
///   (`count() < max()`) and only then `inc()`s the retry counter, and its failed attempt has
///   ended. So the gate asks [`ConcurrencyBudget::retry_allowed`] after
///   [`ConcurrencyBudget::attempt_ended`] for the failed attempt and before
///   [`ConcurrencyBudget::attempt_started`]`(true)` for the retry.
/// - The `floor` is Envoy's conversion of the real product to `uint64_t`
///   (`std::max<uint64_t>(budget_percent / 100.0 * current_active, min_retry_concurrency)`);
///   the reference states the formula without it. With 20 % and 19 requests in flight the
///   bound is 3, not 3.8.
///
/// **Difference from Envoy:** Envoy's router takes the retry slot when it *decides* to retry
/// and holds it through the backoff until that retry's answer is judged
/// (`RetryStateImpl::shouldRetry` / `resetRetry`); here a retry counts from
/// [`ConcurrencyBudget::attempt_started`] to [`ConcurrencyBudget::attempt_ended`], i.e. only
/// while in flight, as the gate's interface has it. With backoffs short next to response times
/// (Envoy's 25–250 ms) the two are close; with long backoffs Envoy is stricter.
///
/// DESIGN §4.2 states the rule as it is checked here, before the retry's own request is
/// counted: "active retries < max(floor(percent / 100 x active requests), min_concurrency)"
/// (once the retry has started, the same bound reads `<=`: for integers `a + 1 <= m` is
/// `a < m`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConcurrencyBudget {
    params: ConcurrencyBudgetParams,
    active_requests: u64,
    active_retries: u64,
}

impl ConcurrencyBudget {
    /// A budget with nothing in flight.
    pub fn new(params: ConcurrencyBudgetParams) -> ConcurrencyBudget {
        ConcurrencyBudget { params, active_requests: 0, active_retries: 0 }
    }

    /// An attempt (a retry if `is_retry`) was sent.
    #[inline]
    pub fn attempt_started(&mut self, is_retry: bool) {
        self.active_requests += 1;
        self.active_retries += is_retry as u64;
    }

    /// An attempt (a retry if `is_retry`) got its answer, timed out or was abandoned.
    #[inline]
    pub fn attempt_ended(&mut self, is_retry: bool) {
        debug_assert!(self.active_requests > 0, "attempt_ended without attempt_started");
        debug_assert!(!is_retry || self.active_retries > 0, "a retry ended that never started");
        self.active_requests = self.active_requests.saturating_sub(1);
        self.active_retries = self.active_retries.saturating_sub(is_retry as u64);
    }

    /// Attempts in flight.
    #[inline]
    pub fn active_requests(&self) -> u64 {
        self.active_requests
    }

    /// Retries in flight.
    #[inline]
    pub fn active_retries(&self) -> u64 {
        self.active_retries
    }

    /// `max(floor(percent / 100 * active_requests), min_concurrency)`.
    #[inline]
    pub fn max_active_retries(&self) -> u64 {
        let share = (self.params.percent / 100.0 * self.active_requests as f64) as u64;
        share.max(self.params.min_concurrency as u64)
    }

    /// Whether one more retry may start now: `active_retries < max_active_retries`.
    #[inline]
    pub fn retry_allowed(&self) -> bool {
        self.active_retries < self.max_active_retries()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concurrency_budget_floor_is_the_minimum() {
        let mut b = ConcurrencyBudget::new(ConcurrencyBudgetParams::ENVOY_DEFAULT);
        // Nothing in flight: 3 retries may run at once (min_retry_concurrency).
        for _ in 0..3 {
            assert!(b.retry_allowed());
            b.attempt_started(true);
        }
        assert!(!b.retry_allowed(), "3 retries in flight, max(floor(0.6), 3) = 3");
        // One ends: the next may start. The retry about to start does not count itself.
        b.attempt_ended(true);
        assert!(b.retry_allowed());
        assert_eq!((b.active_requests(), b.active_retries()), (2, 2));
    }

    #[test]
    fn concurrency_budget_share_of_requests_in_flight() {
        let mut b = ConcurrencyBudget::new(ConcurrencyBudgetParams::ENVOY_DEFAULT);
        for _ in 0..100 {
            b.attempt_started(false);
        }
        assert_eq!(b.max_active_retries(), 20);
        // Retries are requests too: k retries may run while k < floor(0.2 (100 + k)), i.e.
        // up to k = 24 (24 < floor(24.8) is false).
        let mut k = 0;
        while b.retry_allowed() {
            b.attempt_started(true);
            k += 1;
        }
        assert_eq!(k, 24);
        // First attempts ending shrink the bound; in-flight retries are never cancelled.
        for _ in 0..50 {
            b.attempt_ended(false);
        }
        assert_eq!(b.max_active_retries(), 14, "floor(0.2 * 74)");
        assert!(!b.retry_allowed());
    }

    #[test]
    fn concurrency_budget_rounds_the_share_down_like_envoy() {
        let mut b = ConcurrencyBudget::new(ConcurrencyBudgetParams { percent: 20.0, min_concurrency: 0 });
        let mut maxima = Vec::new();
        for _ in 0..26 {
            maxima.push(b.max_active_retries());
            b.attempt_started(false);
        }
        // floor(0.2 n) for n = 0..25.
        let expected: Vec<u64> = (0..26u64).map(|n| n / 5).collect();
        assert_eq!(maxima, expected);
        // 19 in flight: 3.8 -> 3, so 3 retries fill it (a real-valued bound would allow a 4th).
        let mut b = ConcurrencyBudget::new(ConcurrencyBudgetParams { percent: 20.0, min_concurrency: 0 });
        for _ in 0..16 {
            b.attempt_started(false);
        }
        for _ in 0..3 {
            assert!(b.retry_allowed());
            b.attempt_started(true);
        }
        // 19 attempts in flight, 3 of them retries: 3 < floor(3.8) = 3 is false.
        assert!(!b.retry_allowed());
        // Envoy's default max_retries breaker: 3 concurrent retries whatever the traffic.
        let mut b = ConcurrencyBudget::new(ConcurrencyBudgetParams::ENVOY_MAX_RETRIES);
        for _ in 0..1000 {
            b.attempt_started(false);
        }
        assert_eq!(b.max_active_retries(), 3);
    }
}
