//! Netflix concurrency-limits' `WindowedLimit` (docs/overload-and-topology.md §1.3): samples
//! are gathered over a window and the inner limit sees one sample per window.
//!
//! Read at Netflix/concurrency-limits 78a74b9, `limit/WindowedLimit.java` and
//! `limit/window/ImmutableAverageSampleWindow.java`. The library does not apply it by default
//! (`AbstractLimiter.Builder` takes `VegasLimit.newDefault()` bare); a strategy asks for it
//! with `windowed = true`, and gets the builder's defaults:
//!
//! - a sample with an RTT under `minRttThreshold` (100 µs) is dropped;
//! - the others add to the window: its minimum RTT, the sum of RTTs, the most in flight, the
//!   count, and whether any was a drop;
//! - a sample ending after `nextUpdateTime` closes the window: the next one ends
//!   `clamp(2 x minimum RTT, minWindowTime, maxWindowTime)` (1 s and 1 s) after that sample's
//!   end, and the closed window, if it holds at least `windowSize` (10) samples, reaches the
//!   inner limit as one sample: the mean RTT, the most in flight and the drop flag. A window
//!   with fewer samples is discarded.

use super::Sample;
use crate::engine::{Instant, Span};

/// `WindowedLimit`'s defaults.
pub const MIN_WINDOW: Span = Span::from_secs(1);
pub const MAX_WINDOW: Span = Span::from_secs(1);
pub const WINDOW_SIZE: u32 = 10;
pub const MIN_RTT_THRESHOLD: Span = Span::from_ns(100_000);

/// The window being filled (`ImmutableAverageSampleWindow`) and when it closes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Windowed {
    min_rtt: Span,
    sum_ns: u64,
    max_inflight: u32,
    count: u32,
    dropped: bool,
    next_update: Instant,
}

impl Default for Windowed {
    fn default() -> Windowed {
        Windowed {
            min_rtt: Span::MAX,
            sum_ns: 0,
            max_inflight: 0,
            count: 0,
            dropped: false,
            next_update: Instant::ZERO,
        }
    }
}

impl Windowed {
    /// `onSample`: the sample the inner limit sees now, if this one closed a full window.
    pub fn on_sample(&mut self, s: Sample) -> Option<Sample> {
        if s.rtt < MIN_RTT_THRESHOLD {
            return None;
        }
        self.min_rtt = self.min_rtt.min(s.rtt);
        self.sum_ns += s.rtt.as_ns();
        self.max_inflight = self.max_inflight.max(s.inflight);
        self.count += 1;
        self.dropped |= s.dropped;
        // The sample's end is `startTime + rtt`, the moment it is reported.
        if s.now <= self.next_update {
            return None;
        }
        let closed = std::mem::take(self);
        let window = Span::from_ns(closed.min_rtt.as_ns().saturating_mul(2)).max(MIN_WINDOW).min(MAX_WINDOW);
        self.next_update = s.now + window;
        (closed.count >= WINDOW_SIZE).then(|| Sample {
            now: s.now,
            rtt: Span::from_ns(closed.sum_ns / closed.count as u64),
            inflight: closed.max_inflight,
            dropped: closed.dropped,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at_ms(ms: u64, rtt_us: u64, inflight: u32) -> Sample {
        Sample {
            now: Instant::from_ns(ms * 1_000_000),
            rtt: Span::from_ns(rtt_us * 1_000),
            inflight,
            dropped: false,
        }
    }

    #[test]
    fn one_sample_per_full_window() {
        let mut w = Windowed::default();
        // The first sample ends after next_update = 0: it closes a window of one, discarded,
        // and the next window ends 1 s later.
        assert_eq!(w.on_sample(at_ms(1, 1_000, 1)), None);
        for i in 0..10u32 {
            assert_eq!(w.on_sample(at_ms(100 + i as u64, 2_000 + 1_000 * i as u64, i)), None);
        }
        // A sample under 100 µs is ignored.
        assert_eq!(w.on_sample(at_ms(1_002, 99, 50)), None);
        // The first sample after 1.001 s closes the window: 11 samples (2..=11 ms and this
        // 13 ms), mean 78 / 11 ms.
        let got = w.on_sample(at_ms(1_002, 13_000, 3)).expect("a full window");
        assert_eq!(got.rtt, Span::from_ns(78_000_000 / 11));
        assert_eq!(got.inflight, 9);
        assert!(!got.dropped);
    }

    #[test]
    fn a_window_with_fewer_than_ten_samples_is_discarded() {
        let mut w = Windowed::default();
        w.on_sample(at_ms(1, 1_000, 1));
        for i in 0..8 {
            w.on_sample(at_ms(10 + i, 1_000, 1));
        }
        assert_eq!(w.on_sample(at_ms(1_500, 1_000, 1)), None, "9 samples");
        assert_eq!(w.count, 0, "a new window started");
    }
}
