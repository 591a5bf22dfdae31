//! Simulated time for the policy's unit tests: nanoseconds per millisecond and per second, and
//! the instant a nanosecond count names.

use crate::engine::Instant;

pub const MS: u64 = 1_000_000;
pub const S: u64 = 1_000_000_000;

pub fn at(ns: u64) -> Instant {
    Instant::from_ns(ns)
}
