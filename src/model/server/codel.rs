//! `discipline = "codel"`: RFC 8289 CoDel ("Controlled Delay Active Queue Management", Nichols,
//! Jacobson, McGregor, Iyengar, 2018; rfc-editor.org/rfc/rfc8289), its dequeue side (§5.4-5.7
//! of the RFC's pseudocode) applied to the server's wait queue. A request's sojourn time is how
//! long it waited; it is measured when a free worker takes it from the head of the queue.
//!
//! - Once the sojourn time has stayed at or above `target` for a whole `interval` (and more
//!   than the one request taken is waiting: the RFC's "no drop if less than one MTU queued"),
//!   CoDel enters the dropping state: it drops that request and sets the next drop at
//!   `now + interval / sqrt(count)` with `count = 1`.
//! - While dropping, each dequeue at or after the next drop time drops the head, counts it and
//!   schedules the next one at `drop_next + interval / sqrt(count)` (the control law: drops come
//!   faster as long as the delay stays high); a head whose sojourn is below `target`, or an
//!   empty queue, ends the dropping state.
//! - Re-entering the dropping state soon after leaving it (within 16 intervals of the last
//!   scheduled drop) starts from the drops of the last cycle, `count - lastcount`, instead of 1
//!   (the Linux variant the RFC prints).
//!
//! A dropped request is shed: answered 503, retryable (see `workers`). Defaults are the RFC's:
//! target 5 ms, interval 100 ms.

use crate::engine::{Instant, Span};
use std::collections::VecDeque;

/// CoDel's two constants.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CodelParams {
    /// The acceptable standing queueing delay (RFC 8289: 5 ms).
    pub target: Span,
    /// The window a delay must persist over before CoDel acts (RFC 8289: 100 ms).
    pub interval: Span,
}

/// The state of RFC 8289's dequeue.
pub struct Codel {
    params: CodelParams,
    /// When the sojourn time will have stayed above target for an interval (`None`: it is
    /// below target now).
    first_above: Option<Instant>,
    /// When the next drop is due, while dropping.
    drop_next: Instant,
    /// Drops since entering the dropping state (carried over on a quick re-entry).
    count: u32,
    /// `count` when the dropping state was last entered.
    last_count: u32,
    dropping: bool,
}

impl Codel {
    pub fn new(params: CodelParams) -> Codel {
        Codel {
            params,
            first_above: None,
            drop_next: Instant::ZERO,
            count: 0,
            last_count: 0,
            dropping: false,
        }
    }

    /// RFC 8289 `control_law`: `t + interval / sqrt(count)`.
    fn control_law(&self, t: Instant, count: u32) -> Instant {
        t + Span::from_ns_f64(self.params.interval.as_ns_f64() / (count as f64).sqrt())
    }

    /// RFC 8289 `dodequeue`: the head of the queue and whether it may be dropped.
    fn head<T>(&mut self, queue: &mut VecDeque<(T, Instant)>, now: Instant) -> Option<((T, Instant), bool)> {
        let Some(head) = queue.pop_front() else {
            self.first_above = None;
            return None;
        };
        let sojourn = now.since(head.1);
        let mut ok_to_drop = false;
        if sojourn < self.params.target || queue.is_empty() {
            self.first_above = None;
        } else {
            match self.first_above {
                None => self.first_above = Some(now + self.params.interval),
                Some(t) if now >= t => ok_to_drop = true,
                Some(_) => {}
            }
        }
        Some((head, ok_to_drop))
    }

    /// RFC 8289 `dequeue`: the request (and when it was queued) a free worker takes at `now`,
    /// after dropping those the control law drops; each dropped one is passed to `shed`.
    pub fn dequeue<T>(
        &mut self,
        queue: &mut VecDeque<(T, Instant)>,
        now: Instant,
        mut shed: impl FnMut(T),
    ) -> Option<(T, Instant)> {
        let Some((mut item, ok_to_drop)) = self.head(queue, now) else {
            self.dropping = false;
            return None;
        };
        if self.dropping {
            if !ok_to_drop {
                self.dropping = false;
            }
            while self.dropping && now >= self.drop_next {
                shed(item.0);
                self.count += 1;
                let Some((next, ok_to_drop)) = self.head(queue, now) else {
                    self.dropping = false;
                    return None;
                };
                item = next;
                if ok_to_drop {
                    self.drop_next = self.control_law(self.drop_next, self.count);
                } else {
                    self.dropping = false;
                }
            }
        } else if ok_to_drop {
            shed(item.0);
            let next = self.head(queue, now);
            self.dropping = true;
            let delta = self.count.saturating_sub(self.last_count);
            // Linux's test, signed: `now - drop_next < 16 x interval`.
            let recent = now < self.drop_next + self.params.interval * 16;
            self.count = if delta > 1 && recent { delta } else { 1 };
            self.drop_next = self.control_law(now, self.count);
            self.last_count = self.count;
            return next.map(|(item, _)| item);
        }
        Some(item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RFC: CodelParams = CodelParams { target: Span::from_millis(5), interval: Span::from_millis(100) };

    /// A deep queue whose every request has waited long, taken one per `step`: the drops
    /// follow the control law's schedule (issue 26's vector: 0, 100, 170.7, 228.4, 278.4,
    /// 323.2, 364.0, 401.8 ms after entering the dropping state).
    #[test]
    fn drops_follow_the_control_law() {
        let mut codel = Codel::new(RFC);
        let step = Span::from_ns(10_000);
        let mut queue: VecDeque<(u32, Instant)> = (0..100_000).map(|i| (i, Instant::ZERO)).collect();
        let start = Instant::from_secs(1);
        let mut drops: Vec<Instant> = Vec::new();
        let mut now = start;
        while now < start + Span::from_millis(600) {
            let mut shed_now = 0;
            codel.dequeue(&mut queue, now, |_| shed_now += 1);
            drops.extend(std::iter::repeat_n(now, shed_now));
            now += step;
        }
        // The first dequeue starts the interval; the drop state is entered one interval later.
        let entered = start + Span::from_millis(100);
        assert_eq!(drops[0], entered);
        const REFERENCE_MS: [f64; 8] = [0.0, 100.0, 170.7, 228.4, 278.4, 323.2, 364.0, 401.8];
        let step_ms = step.as_secs_f64() * 1e3;
        let mut scheduled_ms = 0.0_f64;
        for (k, reference) in REFERENCE_MS.into_iter().enumerate() {
            if k > 0 {
                scheduled_ms += 100.0 / (k as f64).sqrt();
            }
            let at = drops[k].since(entered).as_secs_f64() * 1e3;
            // Drops happen at dequeues: the first one at or after the scheduled time.
            assert!(
                at >= scheduled_ms - 1e-9 && at < scheduled_ms + step_ms,
                "drop {k} at {at} ms, scheduled at {scheduled_ms} ms"
            );
            // The reference is rounded to 0.1 ms.
            assert!(
                (at - reference).abs() <= 0.05 + step_ms,
                "drop {k} at {at} ms, reference {reference} ms"
            );
        }
    }

    #[test]
    fn a_short_delay_or_an_empty_queue_ends_dropping_and_a_quick_return_resumes_the_count() {
        let mut codel = Codel::new(RFC);
        let old = Instant::ZERO;
        let mut queue: VecDeque<(u32, Instant)> = (0..1000).map(|i| (i, old)).collect();
        let t0 = Instant::from_secs(1);
        let mut shed = Vec::new();
        // Above target from t0: dropping at t0 + 100 ms, then drops at +100, +170.7, +228.4 ms.
        for ms in [0, 100, 200, 271, 329] {
            codel.dequeue(&mut queue, t0 + Span::from_millis(ms), |r| shed.push(r));
        }
        assert_eq!(codel.count, 4, "drops at 100, 200 (due 200), 271 (due 270.7), 329 (due 328.4)");
        assert_eq!(shed.len(), 4);
        // A fresh request (1 ms old) ends the dropping state without a drop.
        let t1 = t0 + Span::from_millis(400);
        queue.clear();
        queue.extend([
            (7, t1.saturating_sub(Span::from_millis(1))),
            (8, t1.saturating_sub(Span::from_millis(1))),
        ]);
        assert_eq!(
            codel.dequeue(&mut queue, t1, |r| shed.push(r)),
            Some((7, t1.saturating_sub(Span::from_millis(1))))
        );
        assert!(!codel.dropping);
        // Delay again for a whole interval: re-entered with count = 4 - 1 = 3, not 1.
        queue.clear();
        queue.extend((0..10).map(|i| (100 + i, old)));
        let t2 = t1 + Span::from_millis(10);
        codel.dequeue(&mut queue, t2, |r| shed.push(r));
        let t3 = t2 + Span::from_millis(100);
        let shed_before = shed.len();
        codel.dequeue(&mut queue, t3, |r| shed.push(r));
        assert_eq!(shed.len(), shed_before + 1);
        assert_eq!(codel.count, 3, "resumed from the previous cycle's drops");
        assert_eq!(codel.drop_next, t3 + Span::from_ns_f64(100e6 / 3f64.sqrt()));
        // The queue running empty ends it too.
        queue.clear();
        assert_eq!(codel.dequeue(&mut queue, t3 + Span::from_millis(1), |r| shed.push(r)), None);
        assert!(!codel.dropping);
    }

    #[test]
    fn a_lone_request_is_never_dropped() {
        let mut codel = Codel::new(RFC);
        let mut shed = 0;
        for s in 1..100 {
            let mut queue: VecDeque<(u32, Instant)> = [(1, Instant::ZERO)].into();
            let now = Instant::from_secs(s);
            assert!(codel.dequeue(&mut queue, now, |_| shed += 1).is_some());
        }
        assert_eq!(shed, 0, "less than one request left queued: no drop (RFC: one MTU)");
    }
}
