//! The calendar queue allocates nothing in steady state, and a cleared queue (or a reset
//! scheduler) runs another identical workload without allocating: its chunks, window and
//! scratch buffers are reused. A whole run that its thread has made before allocates only a
//! few per-run objects. Checked with a counting global allocator.

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use retrysim::engine::{CalendarQueue, EventQueue, Instant, Scheduler, Span};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// Counts this thread's allocations (tests run on several threads at once).
struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn count() {
    // `try_with`: the allocator may be called while the thread's locals are being destroyed.
    let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
}

// SAFETY: every call is forwarded unchanged to the system allocator.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations made by `f` on this thread.
fn allocations(f: impl FnOnce()) -> u64 {
    let before = ALLOCATIONS.with(Cell::get);
    f();
    ALLOCATIONS.with(Cell::get) - before
}

/// An event as big as the queue model's.
type Ev = [u64; 3];

/// The "hold" workload with `pending` events: pop the earliest, push one a random time later
/// (a quarter of them at the same instant, as zero-delay hops are), `steps` times.
struct Hold {
    rng: Xoshiro256PlusPlus,
    now: u64,
    seq: u64,
}

impl Hold {
    fn new(q: &mut CalendarQueue<Ev>, pending: u64) -> Hold {
        let mut h = Hold { rng: Xoshiro256PlusPlus::seed_from_u64(9), now: 0, seq: 0 };
        for _ in 0..pending {
            let t = h.rng.next_u64() % 1_000_000_000;
            h.push(q, t);
        }
        h
    }

    fn push(&mut self, q: &mut CalendarQueue<Ev>, t: u64) {
        q.push(t, self.seq, [t, self.seq, 0]);
        self.seq += 1;
    }

    fn steps(&mut self, q: &mut CalendarQueue<Ev>, steps: u64) {
        for _ in 0..steps {
            let (t, _) = q.pop_if_at_most(u64::MAX).expect("never empty");
            self.now = t;
            let delay = match self.rng.next_u64() % 4 {
                0 => 0,
                _ => self.rng.next_u64() % 2_000_000_000,
            };
            self.push(q, t + delay);
        }
    }
}

#[test]
fn steady_state_allocates_nothing() {
    for pending in [100, 10_000, 200_000] {
        let mut q = CalendarQueue::default();
        let mut hold = Hold::new(&mut q, pending);
        hold.steps(&mut q, 20 * pending);
        assert_eq!(allocations(|| hold.steps(&mut q, 20 * pending)), 0, "{pending} pending");
    }
}

#[test]
fn a_cleared_queue_runs_the_same_workload_without_allocating() {
    let run = |q: &mut CalendarQueue<Ev>| {
        let mut hold = Hold::new(q, 50_000);
        hold.steps(q, 500_000);
        // Drain: the end of a run, when the queue empties.
        while q.pop_if_at_most(u64::MAX).is_some() {}
    };
    let mut q = CalendarQueue::default();
    assert!(allocations(|| run(&mut q)) > 0, "the first run sets up the queue");
    q.clear();
    assert_eq!(allocations(|| run(&mut q)), 0);
}

/// A 10,000-client herd on the scheduler, shaped like `experiments/herd-10k.toml`: every
/// client starts at t = 0 (each start scheduling the next at the same instant), 100 are
/// served for ~10 ms, the others retry after a random backoff, up to 6 attempts.
fn herd(s: &mut Scheduler<Ev, CalendarQueue<Ev>>, seed: u64) -> u64 {
    #[derive(Clone, Copy)]
    enum Kind {
        Start,
        Attempt,
        Done,
    }
    let kind = |e: &Ev| match e[0] {
        0 => Kind::Start,
        1 => Kind::Attempt,
        _ => Kind::Done,
    };
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let (mut busy, mut next_client) = (0u32, 1u64);
    s.schedule_at(Instant::ZERO, [0, 0, 1]);
    while let Some(e) = s.pop_until(Instant::NEVER) {
        match kind(&e) {
            Kind::Start | Kind::Attempt => {
                if matches!(kind(&e), Kind::Start) && next_client < 10_000 {
                    s.schedule_in(Span::ZERO, [0, next_client, 1]);
                    next_client += 1;
                }
                if busy < 100 {
                    busy += 1;
                    s.schedule_in(Span::from_ns(rng.next_u64() % 20_000_000), [2, e[1], e[2]]);
                } else if e[2] < 6 {
                    let backoff = rng.next_u64() % (10_000_000 << e[2]);
                    s.schedule_in(Span::from_ns(backoff), [1, e[1], e[2] + 1]);
                }
            }
            Kind::Done => busy -= 1,
        }
    }
    s.processed()
}

#[test]
fn a_reset_scheduler_runs_another_herd_without_allocating() {
    let mut s = Scheduler::new(CalendarQueue::default());
    let mut first = 0;
    assert!(allocations(|| first = herd(&mut s, 1)) > 0);
    s.reset();
    assert_eq!(s.now(), Instant::ZERO);
    assert_eq!(s.processed(), 0);
    let mut second = 0;
    assert_eq!(allocations(|| second = herd(&mut s, 1)), 0);
    assert_eq!(first, second, "the same run, the same events");
    let mut fresh = Scheduler::new(CalendarQueue::default());
    assert_eq!(herd(&mut fresh, 1), first, "a reset scheduler runs as a new one");
}

/// A whole run of the 10,000-client herd, when its thread has run it before: the queue, the op
/// table and the latency histogram are reused (`model::workspace`), so what is allocated is a
/// handful of per-run objects (the time series that goes into the results, the recorder's
/// window, the server's workers, the clients' counters), not the 60,000 events' worth that a
/// first run grows into.
#[test]
fn a_repeated_run_allocates_only_its_per_run_objects() {
    use retrysim::experiment::{self, Overrides};
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/herd-10k.toml");
    let exp = experiment::load(&path, &Overrides::default()).expect("shipped experiments are valid");
    let (point, seed) = (&exp.points[0], retrysim::engine::rng::run_seed(exp.seed, 0));
    let run = || {
        let m = retrysim::assembly::simulate(&point.spec, &point.strategies[0], seed);
        assert!(m.events > 60_000);
    };
    let first = allocations(run);
    let again = allocations(run);
    // 6 today: the time series, the recorder's window, the workers, the clients' counters.
    assert!(again <= 10, "a repeated run made {again} allocations (the first made {first})");
    assert!(first > again + 10, "the first run grows the reused buffers: {first} allocations");
}
