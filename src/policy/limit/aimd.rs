//! Netflix concurrency-limits' `AIMDLimit` (docs/overload-and-topology.md §1.3): additive
//! increase while the limit is used, multiplicative decrease on a drop or a slow sample.
//!
//! Read at Netflix/concurrency-limits 78a74b9,
//! `concurrency-limits-core/src/main/java/com/netflix/concurrency/limits/limit/AIMDLimit.java`:
//!
//! ```text
//! if (didDrop || rtt > timeout)      limit = (int) (limit * backoffRatio);
//! else if (inflight * 2 >= limit)    limit = limit + 1;
//! limit = min(maxLimit, max(minLimit, limit));
//! ```
//!
//! The limit is an integer; the decrease truncates toward zero (Java's `(int)` cast).

use super::Sample;
use crate::engine::Span;

/// An [`Aimd`] limit's parameters (the builder's fields).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AimdParams {
    pub initial_limit: u32,
    pub min_limit: u32,
    pub max_limit: u32,
    /// In `[0.5, 1)`, as the builder checks.
    pub backoff_ratio: f64,
    /// A sample slower than this counts as a drop.
    pub timeout: Span,
}

impl AimdParams {
    /// `AIMDLimit.Builder`'s defaults: initial 20, min 20, max 200, backoffRatio 0.9,
    /// timeout 5 s.
    pub const NETFLIX: AimdParams = AimdParams {
        initial_limit: 20,
        min_limit: 20,
        max_limit: 200,
        backoff_ratio: 0.9,
        timeout: Span::from_secs(5),
    };
    /// The builder refuses a backoff ratio outside `[0.5, 1)`.
    pub const BACKOFF_RATIO_MIN: f64 = 0.5;
}

/// The AIMD limit's state: the limit itself.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Aimd {
    params: AimdParams,
    limit: u32,
}

impl Aimd {
    pub fn new(params: AimdParams) -> Aimd {
        // `AbstractLimit(initialLimit)`: the initial limit is taken as given (the builder only
        // warns when it lies outside [min, max]).
        Aimd { params, limit: params.initial_limit }
    }

    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// `_update(startTime, rtt, inflight, didDrop)`.
    pub fn on_sample(&mut self, s: Sample) {
        let p = &self.params;
        let mut limit = self.limit as i64;
        if s.dropped || s.rtt > p.timeout {
            limit = (limit as f64 * p.backoff_ratio) as i64;
        } else if s.inflight as i64 * 2 >= limit {
            limit += 1;
        }
        self.limit = limit.max(p.min_limit as i64).min(p.max_limit as i64) as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Instant;

    fn sample(rtt_ms: u64, inflight: u32, dropped: bool) -> Sample {
        Sample { now: Instant::ZERO, rtt: Span::from_millis(rtt_ms), inflight, dropped }
    }

    fn params(initial: u32, min: u32) -> AimdParams {
        AimdParams { initial_limit: initial, min_limit: min, ..AimdParams::NETFLIX }
    }

    #[test]
    fn grows_by_one_while_at_least_half_used() {
        let mut a = Aimd::new(params(20, 1));
        a.on_sample(sample(10, 10, false));
        assert_eq!(a.limit(), 21, "10 x 2 >= 20: +1");
        a.on_sample(sample(10, 10, false));
        assert_eq!(a.limit(), 21, "10 x 2 < 21: held");
        a.on_sample(sample(10, 11, false));
        assert_eq!(a.limit(), 22);
    }

    #[test]
    fn a_drop_multiplies_by_the_backoff_ratio_and_truncates() {
        let mut a = Aimd::new(params(100, 1));
        a.on_sample(sample(10, 100, true));
        assert_eq!(a.limit(), 90, "100 x 0.9");
        a.on_sample(sample(10, 0, true));
        assert_eq!(a.limit(), 81, "90 x 0.9");
        a.on_sample(sample(10, 0, true));
        assert_eq!(a.limit(), 72, "(int) 72.9");
        // A sample slower than the 5 s timeout is a drop too.
        a.on_sample(sample(5_001, 72, false));
        assert_eq!(a.limit(), 64, "(int) 64.8");
        a.on_sample(sample(5_000, 72, false));
        assert_eq!(a.limit(), 65, "exactly the timeout is not slow: +1");
    }

    #[test]
    fn clamped_to_min_and_max() {
        // With the library's defaults (min 20) a drop at 20 stays at 20.
        let mut a = Aimd::new(AimdParams::NETFLIX);
        a.on_sample(sample(10, 20, true));
        assert_eq!(a.limit(), 20);
        let mut a = Aimd::new(AimdParams { initial_limit: 200, ..AimdParams::NETFLIX });
        a.on_sample(sample(10, 200, false));
        assert_eq!(a.limit(), 200, "max 200");
    }
}
