//! The bare binary-heap loop of the 10,000-client herd (see `benches/bare_loop.rs`): shared by
//! the `bare_loop` and `compare` benches.

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

const CLIENTS: u32 = 10_000;
const WORKERS: u32 = 100;
const MAX_ATTEMPTS: u8 = 6;
const SERVICE_MEAN_NS: f64 = 10e6;
const BASE_NS: f64 = 10e6;
const CAP_NS: f64 = 1e9;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    Attempt(u32),
    Done,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct Outcome {
    pub succeeded: u64,
    pub calls: u64,
    pub completion_ns: u64,
    pub events: u64,
}

/// `U(0, 1)` from the top 53 bits of one draw.
#[inline]
fn u01(rng: &mut Xoshiro256PlusPlus) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// One run of the herd with its own random stream.
pub fn run(seed: u64) -> Outcome {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut heap = BinaryHeap::with_capacity(CLIENTS as usize);
    let mut attempts = vec![0u8; CLIENTS as usize];
    let mut seq = 0u64;
    for c in 0..CLIENTS {
        heap.push(Reverse((0u64, seq, Ev::Attempt(c))));
        seq += 1;
    }
    let mut busy = 0u32;
    let mut out = Outcome::default();
    while let Some(Reverse((now, _, ev))) = heap.pop() {
        out.events += 1;
        match ev {
            Ev::Attempt(c) => {
                out.calls += 1;
                let a = &mut attempts[c as usize];
                *a += 1;
                if busy < WORKERS {
                    busy += 1;
                    // Exponential by inversion; 1 - u is in (0, 1].
                    let service = (-SERVICE_MEAN_NS * (1.0 - u01(&mut rng)).ln()).round() as u64;
                    heap.push(Reverse((now + service, seq, Ev::Done)));
                    seq += 1;
                } else if *a < MAX_ATTEMPTS {
                    let k = *a as i32; // the retry number: 1 after the first rejection
                    let delay = u01(&mut rng) * CAP_NS.min(BASE_NS * 2f64.powi(k - 1));
                    heap.push(Reverse((now + delay.round() as u64, seq, Ev::Attempt(c))));
                    seq += 1;
                } else {
                    out.completion_ns = now; // failed: 6 rejections
                }
            }
            Ev::Done => {
                busy -= 1;
                out.succeeded += 1;
                out.completion_ns = now;
            }
        }
    }
    out
}
