//! `kind = "sliding-window"`: .NET's `SlidingWindowRateLimiter`
//! (System.Threading.RateLimiting, docs/overload-and-topology.md §1.4). The window is cut into
//! `segments` segments (`SegmentsPerWindow`); the limiter starts with `limit` permits
//! (`PermitLimit`) and counts the permits taken in the current segment. At every segment
//! boundary (its replenishment timer, every `window / segments` from the start) it moves to
//! the next segment and gives back the permits taken in the segment that falls out of the
//! window, the one a whole window old (`ReplenishInternal`). A request that finds a permit
//! takes it; otherwise it is refused (no queue: `QueueLimit` 0), and its Retry-After is the
//! first boundary at which permits come back (.NET itself attaches none to a sliding
//! window's failed lease).

use super::Verdict;
use crate::engine::{Instant, Span};

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SlidingWindowParams {
    /// Permits per window (`PermitLimit`).
    pub limit: u32,
    pub window: Span,
    /// Segments per window (`SegmentsPerWindow`), >= 1.
    pub segments: u32,
}

pub struct SlidingWindow {
    limit: i64,
    segment_ns: u64,
    /// Permits free now.
    permits: i64,
    /// Permits taken in each segment of the window; `current` is the one being filled.
    taken: Vec<i64>,
    current: usize,
    /// The next boundary.
    next_boundary: u64,
}

impl SlidingWindow {
    pub fn new(params: &SlidingWindowParams) -> SlidingWindow {
        let segment_ns = params.window.as_ns() / u64::from(params.segments);
        SlidingWindow {
            limit: i64::from(params.limit),
            segment_ns,
            permits: i64::from(params.limit),
            taken: vec![0; params.segments as usize],
            current: 0,
            next_boundary: segment_ns,
        }
    }

    #[inline]
    pub fn decide(&mut self, now: Instant) -> Verdict {
        self.replenish(now.as_ns());
        if self.permits >= 1 {
            self.permits -= 1;
            self.taken[self.current] += 1;
            return Verdict::Admit;
        }
        Verdict::Reject(self.until_permit(now))
    }

    /// Runs the boundaries up to `now` (a request arriving at a boundary sees it passed).
    fn replenish(&mut self, now_ns: u64) {
        if now_ns < self.next_boundary {
            return;
        }
        let segments = self.taken.len();
        let boundaries = (now_ns - self.next_boundary) / self.segment_ns + 1;
        if boundaries >= segments as u64 {
            // The whole window fell out: every permit is back.
            self.taken.fill(0);
            self.permits = self.limit;
            self.current = (self.current + (boundaries % segments as u64) as usize) % segments;
        } else {
            for _ in 0..boundaries {
                self.current = (self.current + 1) % segments;
                self.permits += std::mem::take(&mut self.taken[self.current]);
            }
        }
        self.next_boundary += boundaries * self.segment_ns;
    }

    /// The time to the first boundary that gives permits back: the segments after the
    /// current one come back in order at the next boundaries, the current one last.
    fn until_permit(&self, now: Instant) -> Span {
        let segments = self.taken.len();
        let k = (1..=segments)
            .find(|&k| self.taken[(self.current + k) % segments] > 0)
            .expect("with no permit free, the window holds the permits taken");
        Instant::from_ns(self.next_boundary + (k as u64 - 1) * self.segment_ns).since(now)
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_time::*;
    use super::*;

    fn sliding(limit: u32, window: Span, segments: u32) -> SlidingWindow {
        SlidingWindow::new(&SlidingWindowParams { limit, window, segments })
    }

    #[test]
    fn permits_come_back_a_window_after_the_segment_that_took_them() {
        // 4 per 1 s in 4 segments of 250 ms.
        let mut r = sliding(4, Span::from_secs(1), 4);
        // Two taken in segment 0, two in segment 1.
        assert_eq!(r.decide(t(10 * MS)), Verdict::Admit);
        assert_eq!(r.decide(t(20 * MS)), Verdict::Admit);
        assert_eq!(r.decide(t(300 * MS)), Verdict::Admit);
        assert_eq!(r.decide(t(310 * MS)), Verdict::Admit);
        // Full: segment 0's two come back at the boundary at 1 s (segments 2 and 3 empty).
        assert_eq!(r.decide(t(600 * MS)), Verdict::Reject(ms(400)));
        assert_eq!(r.decide(t(S)), Verdict::Admit);
        assert_eq!(r.decide(t(S)), Verdict::Admit);
        // Segment 1's come back at 1.25 s.
        assert_eq!(r.decide(t(S + 100 * MS)), Verdict::Reject(ms(150)));
        assert_eq!(r.decide(t(S + 250 * MS)), Verdict::Admit);
    }

    #[test]
    fn at_most_limit_in_any_window_of_whole_segments() {
        // 10 per 100 ms in 10 segments; one arrival per ms for 2 s: 10 per 100 ms exactly.
        let mut r = sliding(10, ms(100), 10);
        let admitted: Vec<u64> = (0..2000).filter(|&i| r.decide(t(i * MS)) == Verdict::Admit).collect();
        assert_eq!(admitted.len(), 200);
        for w in admitted.windows(11) {
            assert!(w[10] - w[0] >= 100, "11 admissions within 100 ms: {w:?}");
        }
    }

    #[test]
    fn a_long_idle_gap_returns_every_permit() {
        let mut r = sliding(3, Span::from_secs(3), 3);
        for _ in 0..3 {
            assert_eq!(r.decide(t(0)), Verdict::Admit);
        }
        assert!(matches!(r.decide(t(0)), Verdict::Reject(_)));
        for _ in 0..3 {
            assert_eq!(r.decide(t(3600 * S + 1)), Verdict::Admit);
        }
        // Taken in the segment starting at 3600 s: back a window later, at 3603 s.
        assert_eq!(r.decide(t(3600 * S + 1)), Verdict::Reject(Span::from_ns(3 * S - 1)));
    }
}
