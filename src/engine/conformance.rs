//! The contract every event queue must meet, as tests shared by all implementations: pop in
//! exact `(time, seq)` order, identical to the reference binary heap, under random schedules
//! with ties, bursts far ahead and horizons.

use super::{EventQueue, HeapQueue};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// Drives `Q` and the binary heap with the same random schedule (pushes never before the last
/// pop, many ties, a burst every thousand steps, some far ahead) and checks they pop identical
/// sequences, and that `peek`, when `Q` offers it, shows the next event.
fn same_as_heap<Q: EventQueue<u64>>(seed: u64, steps: usize, spread: u64) {
    let mut r = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut heap = HeapQueue::default();
    let mut q = Q::default();
    let (mut now, mut seq) = (0u64, 0u64);
    for step in 0..steps {
        let pushes = if step % 1000 == 0 { 500 } else { r.next_u64() % 4 };
        for _ in 0..pushes {
            let t = match r.next_u64() % 8 {
                0 | 1 => now,
                2 => now.saturating_add(r.next_u64() % spread.saturating_mul(1000)),
                _ => now.saturating_add(r.next_u64() % spread),
            };
            heap.push(t, seq, seq);
            q.push(t, seq, seq);
            seq += 1;
        }
        let horizon = now.saturating_add(r.next_u64() % spread);
        let expected = heap.pop_if_at_most(horizon);
        if let (Some((_, e)), Some(p)) = (expected, q.peek()) {
            assert_eq!(*p, e, "peek shows the next event");
        }
        assert_eq!(q.pop_if_at_most(horizon), expected, "step {step}");
        if let Some((t, _)) = expected {
            now = t;
        }
        assert_eq!(heap.len(), q.len());
    }
    while let Some(a) = heap.pop_if_at_most(u64::MAX) {
        assert_eq!(Some(a), q.pop_if_at_most(u64::MAX));
    }
    assert!(q.is_empty());
    assert_eq!(q.pop_if_at_most(u64::MAX), None);
}

/// Runs the whole contract against `Q`.
pub(crate) fn check<Q: EventQueue<u64>>() {
    for seed in 0..20 {
        same_as_heap::<Q>(seed, 20_000, 1 + seed * seed * 1000);
    }
    same_as_heap::<Q>(99, 5_000, u64::MAX / 4);
    same_as_heap::<Q>(98, 5_000, 3);

    // Ties pop in scheduling order.
    let mut q = Q::default();
    for s in 0..1000u64 {
        q.push(if s % 2 == 0 { 5 } else { 0 }, s, s);
    }
    let order: Vec<u64> = std::iter::from_fn(|| q.pop_if_at_most(u64::MAX).map(|(_, e)| e)).collect();
    let mut expected: Vec<u64> = (0..1000).filter(|s| s % 2 == 1).collect();
    expected.extend((0..1000).filter(|s| s % 2 == 0));
    assert_eq!(order, expected);

    // Bursts at the current time (zero-delay hops, a herd all starting at t=0), pushed while
    // earlier events at that time are still pending and interleaved with pops.
    same_instant_bursts::<Q>();

    // A cleared queue is as good as new: after a run stopped midway (events pending in
    // every tier) or run to the end, it pops a new schedule exactly as a new queue does.
    let mut reused = Q::default();
    for (seed, cut) in [(5, usize::MAX), (6, 700), (7, 3)] {
        let last = drive(&mut reused, seed, 2_000, 10_000, cut).last().map_or(1, |&(t, _)| t.max(1));
        reused.clear();
        assert!(reused.is_empty());
        assert_eq!(reused.pop_if_at_most(u64::MAX), None, "a cleared queue is empty");
        // Its clock is back at 0: the old last pop's time is no longer "now".
        reused.push(last, 0, 0);
        reused.push(last - 1, 1, 1);
        assert_eq!(reused.pop_if_at_most(u64::MAX), Some((last - 1, 1)));
        assert_eq!(reused.pop_if_at_most(u64::MAX), Some((last, 0)));
        reused.clear();
        let fresh = drive(&mut Q::default(), seed + 100, 2_000, 10_000, usize::MAX);
        assert_eq!(drive(&mut reused, seed + 100, 2_000, 10_000, usize::MAX), fresh);
        reused.clear();
    }

    // The end of time: events at `u64::MAX` (saturated sums) pop last, in scheduling order,
    // also when nothing else is pending.
    let mut q = Q::default();
    q.push(u64::MAX, 0, 0);
    q.push(u64::MAX, 1, 1);
    assert_eq!(q.pop_if_at_most(u64::MAX - 1), None);
    assert_eq!(q.pop_if_at_most(u64::MAX), Some((u64::MAX, 0)));
    q.push(u64::MAX, 2, 2);
    assert_eq!(q.pop_if_at_most(u64::MAX), Some((u64::MAX, 1)));
    assert_eq!(q.pop_if_at_most(u64::MAX), Some((u64::MAX, 2)));
    let mut q = Q::default();
    for (s, t) in [5, u64::MAX, u64::MAX - 1, 7, u64::MAX].into_iter().enumerate() {
        q.push(t, s as u64, s as u64);
    }
    assert_eq!(q.pop_if_at_most(u64::MAX), Some((5, 0)));
    q.push(u64::MAX, 5, 5);
    let rest: Vec<_> = std::iter::from_fn(|| q.pop_if_at_most(u64::MAX)).collect();
    assert_eq!(rest, [(7, 3), (u64::MAX - 1, 2), (u64::MAX, 1), (u64::MAX, 4), (u64::MAX, 5)]);

    // The horizon leaves later events pending, and earlier ones can still be pushed.
    let mut q = Q::default();
    q.push(10, 0, 100);
    q.push(30, 1, 300);
    assert_eq!(q.pop_if_at_most(20), Some((10, 100)));
    assert_eq!(q.pop_if_at_most(20), None);
    assert_eq!(q.len(), 1);
    q.push(25, 2, 250);
    assert_eq!(q.pop_if_at_most(u64::MAX), Some((25, 250)));
    assert_eq!(q.pop_if_at_most(u64::MAX), Some((30, 300)));
}

#[test]
fn binary_heap_meets_the_contract() {
    check::<HeapQueue<u64>>();
}

/// Pushes many events at the time of the last pop, some while events at that same time are
/// still pending (scheduled before it), interleaved with pops and pushes a little later,
/// checking every pop against the binary heap.
fn same_instant_bursts<Q: EventQueue<u64>>() {
    let mut r = Xoshiro256PlusPlus::seed_from_u64(42);
    let mut heap = HeapQueue::default();
    let mut q = Q::default();
    let (mut now, mut seq) = (0u64, 0u64);
    let push = |heap: &mut HeapQueue<u64>, q: &mut Q, t: u64, seq: &mut u64| {
        heap.push(t, *seq, *seq);
        q.push(t, *seq, *seq);
        *seq += 1;
    };
    // A herd: ten thousand events at t = 0, each popped one scheduling the next at t = 0 and
    // one a little later, as `FirstStart` does.
    for _ in 0..3 {
        push(&mut heap, &mut q, now, &mut seq);
    }
    for step in 0..30_000u64 {
        let expected = heap.pop_if_at_most(u64::MAX);
        if let (Some((_, e)), Some(p)) = (expected, q.peek()) {
            assert_eq!(*p, e, "peek shows the next event (step {step})");
        }
        assert_eq!(q.pop_if_at_most(u64::MAX), expected, "step {step}");
        let Some((t, _)) = expected else { break };
        now = t;
        let burst = match step {
            0..10_000 => 1,
            _ if r.next_u64() % 50 == 0 => 40,
            _ => (r.next_u64() % 3) as usize,
        };
        for _ in 0..burst {
            push(&mut heap, &mut q, now, &mut seq);
        }
        for _ in 0..(r.next_u64() % 3) {
            let t = now
                + match r.next_u64() % 4 {
                    0 => 1,
                    1 => r.next_u64() % 10,
                    _ => r.next_u64() % 1_000_000,
                };
            push(&mut heap, &mut q, t, &mut seq);
        }
        assert_eq!(heap.len(), q.len());
    }
    while let Some(a) = heap.pop_if_at_most(u64::MAX) {
        assert_eq!(Some(a), q.pop_if_at_most(u64::MAX));
    }
    assert!(q.is_empty());
}

/// Drives `q` with a random schedule (pushes never before the last pop, ties, events at the
/// current time, far ones) for `steps` steps or until `cut` pops, and returns what it popped.
fn drive<Q: EventQueue<u64>>(q: &mut Q, seed: u64, steps: usize, spread: u64, cut: usize) -> Vec<(u64, u64)> {
    let mut r = Xoshiro256PlusPlus::seed_from_u64(seed);
    let (mut now, mut seq, mut out) = (0u64, 0u64, Vec::new());
    for _ in 0..steps {
        for _ in 0..r.next_u64() % 4 {
            let t = match r.next_u64() % 8 {
                0 | 1 => now,
                2 => now + r.next_u64() % (spread * 1000),
                _ => now + r.next_u64() % spread,
            };
            q.push(t, seq, seq);
            seq += 1;
        }
        if let Some((t, e)) = q.pop_if_at_most(now + r.next_u64() % spread) {
            now = t;
            out.push((t, e));
            if out.len() >= cut {
                break;
            }
        }
    }
    out
}
