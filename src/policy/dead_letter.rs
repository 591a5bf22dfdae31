//! The client's dead-letter queue and its re-drive (`dead_letter`, `redrive`).
//!
//! An operation whose tries are used up (`max_attempts`, or `dead_letter.after` when it is
//! lower) is *dead-lettered* instead of failed: it is parked for a person or a job to send it
//! again later, as a batch job's DLQ after 5 failed tries, or an SQS queue's after
//! `maxReceiveCount` receives (Amazon SQS Developer Guide, "Using dead-letter queues"). A
//! re-drive sends each item again, once, through the same retry policy: at one moment for the
//! whole queue (`at`: what is in the queue then; later items stay), or each item a fixed time
//! after it was dead-lettered (`after`), at most `rate` items a second, in the order they
//! were dead-lettered. [`RedriveSchedule`] computes when each item goes.

use crate::engine::{Instant, Span};

/// When the dead-letter queue is re-driven.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RedriveWhen {
    /// At this moment, every item in the queue then (by a person); later items stay.
    At(Instant),
    /// Each item this long after it was dead-lettered (automatic).
    After(Span),
}

/// A re-drive of the dead-letter queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Redrive {
    pub when: RedriveWhen,
    /// The least time between two items sent again (`1 / rate`; zero: all at once).
    pub spacing: Span,
    /// The item is sent with a new idempotency key (else with its own).
    pub new_key: bool,
}

/// The dead-letter queue of a strategy: operations whose tries are used up are dead-lettered,
/// and maybe re-driven.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeadLetter {
    pub redrive: Option<Redrive>,
}

/// When each dead-lettered item is sent again: items come in the order they were
/// dead-lettered (the clock's), and each goes at its due time, no sooner than `spacing` after
/// the previous one.
#[derive(Clone, Debug)]
pub struct RedriveSchedule {
    redrive: Redrive,
    /// The earliest time the next item may go.
    next_free: Instant,
}

impl RedriveSchedule {
    pub fn new(redrive: Redrive) -> RedriveSchedule {
        RedriveSchedule { redrive, next_free: Instant::ZERO }
    }

    /// Whether items are sent again with a new idempotency key.
    pub fn new_key(&self) -> bool {
        self.redrive.new_key
    }

    /// When an item dead-lettered at `now` is sent again; `None`: never (it came after the
    /// one re-drive at `at`). Calls come with non-decreasing `now`.
    pub fn schedule(&mut self, now: Instant) -> Option<Instant> {
        let due = match self.redrive.when {
            RedriveWhen::At(at) if now > at => return None,
            RedriveWhen::At(at) => at,
            RedriveWhen::After(wait) => now + wait,
        };
        let at = due.max(self.next_free);
        self.next_free = at + self.redrive.spacing;
        Some(at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: u64) -> Instant {
        Instant::ZERO + Span::from_secs(s)
    }

    #[test]
    fn a_redrive_at_a_moment_takes_what_the_queue_holds_then_spaced_by_the_rate() {
        let mut s = RedriveSchedule::new(Redrive {
            when: RedriveWhen::At(t(100)),
            spacing: Span::from_secs(2),
            new_key: false,
        });
        assert_eq!(s.schedule(t(10)), Some(t(100)));
        assert_eq!(s.schedule(t(50)), Some(t(102)));
        assert_eq!(s.schedule(t(100)), Some(t(104)));
        assert_eq!(s.schedule(t(101)), None, "dead-lettered after the re-drive: stays");
    }

    #[test]
    fn a_redrive_after_a_wait_follows_each_item_unless_the_rate_holds_it_back() {
        let mut s = RedriveSchedule::new(Redrive {
            when: RedriveWhen::After(Span::from_secs(600)),
            spacing: Span::from_secs(10),
            new_key: true,
        });
        assert_eq!(s.schedule(t(0)), Some(t(600)));
        assert_eq!(s.schedule(t(5)), Some(t(610)), "10 s after the previous one");
        assert_eq!(s.schedule(t(100)), Some(t(700)));
        let mut all_at_once = RedriveSchedule::new(Redrive {
            when: RedriveWhen::After(Span::ZERO),
            spacing: Span::ZERO,
            new_key: false,
        });
        assert_eq!((all_at_once.schedule(t(3)), all_at_once.schedule(t(3))), (Some(t(3)), Some(t(3))));
    }
}
