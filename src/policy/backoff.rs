//! Backoff delays, exactly the formulas of DESIGN §4.1 (`k` = retry number, 1 for the first
//! retry; `U(a, b)` uniform; `v = min(cap, base * multiplier^(k-1))`).
//!
//! | kind | delay before retry k |
//! |---|---|
//! | `none` | 0 |
//! | `constant` | `base` |
//! | `linear` | `min(cap, base * k)` |
//! | `exponential` | `v` |
//! | `full-jitter` | `U(0, v)` |
//! | `equal-jitter` | `v/2 + U(0, v/2)` |
//! | `decorrelated-jitter` | `s_k = min(cap, U(base, 3 * s_(k-1)))`, `s_0 = base` |
//! | `decorrelated-jitter-v2` | Polly's `DecorrelatedJitterBackoffV2` |
//! | `additive-jitter` | `min(cap, base * multiplier^(k-1) + U(0, jitter))` |
//! | `proportional-jitter` | `v * U(1 - p, 1 + p)` |
//!
//! `exponential` and `additive-jitter` with `immediate_first` wait 0 before retry 1 and follow
//! their formula from retry 2 on, drawing nothing for the first: urllib3 2.x's
//! `Retry.get_backoff_time` returns 0 while the run of consecutive errors is 1, then
//! `backoff_factor * 2^(n-1)` (+ `random() * backoff_jitter`), clamped to `backoff_max`, `n`
//! the errors so far, so `base = backoff_factor` (docs/retry-policies.md §7).
//!
//! Delays are computed in `f64` nanoseconds and rounded to the nearest nanosecond. Kinds with
//! no randomness draw nothing, so adding a deterministic strategy never shifts another stream.

use crate::engine::Span;
use crate::engine::rng::{u01, uniform};
use rand::Rng;

/// The longest delay a backoff returns (100 years): an uncapped exponential overflows `f64`
/// after about a thousand retries, and simulated time is a `u64` of nanoseconds.
pub const MAX_DELAY_NS: f64 = 100.0 * 365.0 * 86_400e9;

/// A backoff with its parameters in nanoseconds. `cap_ns` is `MAX_DELAY_NS` when uncapped.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Backoff {
    None,
    Constant { base_ns: f64 },
    Linear { base_ns: f64, cap_ns: f64 },
    Exponential { base_ns: f64, cap_ns: f64, multiplier: f64, immediate_first: bool },
    FullJitter { base_ns: f64, cap_ns: f64, multiplier: f64 },
    EqualJitter { base_ns: f64, cap_ns: f64, multiplier: f64 },
    DecorrelatedJitter { base_ns: f64, cap_ns: f64 },
    DecorrelatedJitterV2 { base_ns: f64, cap_ns: f64 },
    AdditiveJitter { base_ns: f64, cap_ns: f64, multiplier: f64, jitter_ns: f64, immediate_first: bool },
    ProportionalJitter { base_ns: f64, cap_ns: f64, multiplier: f64, p: f64 },
}

/// Per-operation memory of the stateful backoffs; reset when an operation starts.
///
/// For `decorrelated-jitter` it is `s_(k-1)` in nanoseconds; for `decorrelated-jitter-v2` it is
/// Polly's `prev` (the previous value of the unscaled "soft exponential" curve).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BackoffState(f64);

/// Polly's V2 constants (docs/retry-policies.md §5, `RetryHelper.cs`): `pFactor = 4`,
/// `rpScalingFactor = 1/1.4`.
const POLLY_P_FACTOR: f64 = 4.0;
const POLLY_RP_SCALING: f64 = 1.0 / 1.4;

impl Backoff {
    /// The state an operation starts with.
    pub fn initial_state(&self) -> BackoffState {
        match *self {
            // s_0 = base (AWS study: `self.sleep = self.base`).
            Backoff::DecorrelatedJitter { base_ns, .. } => BackoffState(base_ns),
            // Polly: `prev` starts at 0.
            _ => BackoffState(0.0),
        }
    }

    /// Whether the delay depends on random draws (used to skip seeding a stream nobody reads).
    pub fn is_random(&self) -> bool {
        !matches!(
            self,
            Backoff::None | Backoff::Constant { .. } | Backoff::Linear { .. } | Backoff::Exponential { .. }
        )
    }

    /// The delay before retry `k` (k >= 1).
    // Always inlined: the client's failure path makes several copies of the retry decision
    // (with and without controls, and the plain one), and the compiler then left this out of
    // line; inlined, the herd runs fewer instructions per event (benches/README.md).
    #[inline(always)]
    pub fn delay<R: Rng + ?Sized>(&self, k: u32, state: &mut BackoffState, rng: &mut R) -> Span {
        debug_assert!(k >= 1, "retry numbers start at 1");
        let d = match *self {
            Backoff::None => 0.0,
            Backoff::Constant { base_ns } => base_ns,
            Backoff::Linear { base_ns, cap_ns } => cap_ns.min(base_ns * k as f64),
            Backoff::Exponential { immediate_first: true, .. }
            | Backoff::AdditiveJitter { immediate_first: true, .. }
                if k == 1 =>
            {
                0.0
            }
            Backoff::Exponential { base_ns, cap_ns, multiplier, .. } => {
                exponential(base_ns, cap_ns, multiplier, k)
            }
            Backoff::FullJitter { base_ns, cap_ns, multiplier } => {
                u01(rng) * exponential(base_ns, cap_ns, multiplier, k)
            }
            Backoff::EqualJitter { base_ns, cap_ns, multiplier } => {
                let half = exponential(base_ns, cap_ns, multiplier, k) / 2.0;
                half + uniform(rng, 0.0, half)
            }
            Backoff::DecorrelatedJitter { base_ns, cap_ns } => {
                let s = cap_ns.min(uniform(rng, base_ns, 3.0 * state.0));
                state.0 = s;
                s
            }
            Backoff::DecorrelatedJitterV2 { base_ns, cap_ns } => {
                // Polly counts retries from 0: `t = attempt + U(0,1)`,
                // `next = 2^t * tanh(sqrt(4t))`, delay = (next - prev) / 1.4 * base.
                let t = (k - 1) as f64 + u01(rng);
                let next = t.exp2() * (POLLY_P_FACTOR * t).sqrt().tanh();
                let d = (next - state.0) * POLLY_RP_SCALING * base_ns;
                state.0 = next;
                cap_ns.min(d)
            }
            Backoff::AdditiveJitter { base_ns, cap_ns, multiplier, jitter_ns, .. } => {
                cap_ns.min(base_ns * growth(multiplier, k) + uniform(rng, 0.0, jitter_ns))
            }
            Backoff::ProportionalJitter { base_ns, cap_ns, multiplier, p } => {
                exponential(base_ns, cap_ns, multiplier, k) * uniform(rng, 1.0 - p, 1.0 + p)
            }
        };
        Span::from_ns_f64_clamped(d, MAX_DELAY_NS)
    }
}

/// `k - 1` as the exponent; saturating keeps `powi` in range (the cap takes over long before).
#[inline]
fn exponent(k: u32) -> i32 {
    (k - 1).min(i32::MAX as u32) as i32
}

/// `multiplier^(k-1)`. For the common multiplier 2 the power is written straight into the
/// float's exponent bits (`2^(k-1)` for `k - 1 <= 1023`): exact like `powi`, without its
/// library loop or an integer-to-float conversion.
#[inline]
fn growth(multiplier: f64, k: u32) -> f64 {
    if multiplier == 2.0 && k <= 1024 {
        f64::from_bits((1022 + k as u64) << 52)
    } else {
        multiplier.powi(exponent(k))
    }
}

/// `v = min(cap, base * multiplier^(k-1))`.
#[inline]
fn exponential(base_ns: f64, cap_ns: f64, multiplier: f64, k: u32) -> f64 {
    cap_ns.min(base_ns * growth(multiplier, k))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    const MS: f64 = 1e6;
    const DRAWS: usize = 200_000;

    fn rng() -> Xoshiro256PlusPlus {
        Xoshiro256PlusPlus::seed_from_u64(0xB0FF)
    }

    /// `v` milliseconds in ns.
    fn ms(v: u64) -> f64 {
        v as f64 * MS
    }

    const UNCAPPED: f64 = MAX_DELAY_NS;

    /// Draws `DRAWS` delays for retry `k` (fresh state each time) and returns them in ms.
    fn sample(b: &Backoff, k: u32) -> Vec<f64> {
        let mut r = rng();
        (0..DRAWS)
            .map(|_| {
                let mut st = b.initial_state();
                // Walk the state up to retry k, as an operation would.
                let mut d = 0;
                for i in 1..=k {
                    d = b.delay(i, &mut st, &mut r).as_ns();
                }
                d as f64 / MS
            })
            .collect()
    }

    fn mean_and_se(xs: &[f64]) -> (f64, f64) {
        let n = xs.len() as f64;
        let m = xs.iter().sum::<f64>() / n;
        let var = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0);
        (m, (var / n).sqrt())
    }

    /// Asserts a sample mean is within 5 standard errors of the theoretical mean (a false
    /// alarm has probability below 1e-6; a formula off by even a few percent fails).
    fn assert_mean(xs: &[f64], expected: f64) {
        let (m, se) = mean_and_se(xs);
        assert!((m - expected).abs() <= 5.0 * se.max(1e-9), "mean {m} vs expected {expected} (se {se})");
    }

    fn spec_fj(base: u64, cap: u64) -> Backoff {
        Backoff::FullJitter { base_ns: ms(base), cap_ns: ms(cap), multiplier: 2.0 }
    }

    #[test]
    fn deterministic_kinds_follow_their_formula() {
        let mut r = rng();
        let mut st = BackoffState(0.0);
        let none = Backoff::None;
        let constant = Backoff::Constant { base_ns: ms(30) };
        let linear = Backoff::Linear { base_ns: ms(30), cap_ns: ms(100) };
        let expo = Backoff::Exponential {
            base_ns: ms(10),
            cap_ns: ms(2000),
            multiplier: 2.0,
            immediate_first: false,
        };
        let expo3 = Backoff::Exponential {
            base_ns: ms(10),
            cap_ns: UNCAPPED,
            multiplier: 3.0,
            immediate_first: false,
        };
        for k in 1..=12u32 {
            assert_eq!(none.delay(k, &mut st, &mut r).as_ns(), 0);
            assert_eq!(constant.delay(k, &mut st, &mut r).as_ns(), 30_000_000);
            assert_eq!(linear.delay(k, &mut st, &mut r).as_ns(), (30_000_000 * k as u64).min(100_000_000));
            let v = (10_000_000u64 << (k - 1)).min(2_000_000_000);
            assert_eq!(expo.delay(k, &mut st, &mut r).as_ns(), v, "k={k}");
            assert_eq!(expo3.delay(k, &mut st, &mut r).as_ns(), 10_000_000 * 3u64.pow(k - 1));
        }
        // The first retry waits `base`, the 8th hits the cap (10ms * 2^7 = 1.28s, 2^8 > 2s).
        assert_eq!(expo.delay(1, &mut st, &mut r).as_ns(), 10_000_000);
        assert_eq!(expo.delay(9, &mut st, &mut r).as_ns(), 2_000_000_000);
    }

    #[test]
    fn deterministic_kinds_draw_nothing() {
        let mut r = rng();
        let untouched = rng();
        let mut st = BackoffState(0.0);
        for b in [
            Backoff::None,
            Backoff::Constant { base_ns: 1.0 },
            Backoff::Linear { base_ns: 1.0, cap_ns: 9.0 },
            Backoff::Exponential { base_ns: 1.0, cap_ns: 9.0, multiplier: 2.0, immediate_first: false },
        ] {
            assert!(!b.is_random());
            b.delay(3, &mut st, &mut r).as_ns();
        }
        assert_eq!(r, untouched);
    }

    #[test]
    fn growth_by_two_is_exactly_powi() {
        for k in 1..=2000u32 {
            assert_eq!(growth(2.0, k), 2f64.powi(exponent(k)), "k={k}");
        }
        assert_eq!(growth(1.5, 3), 2.25);
    }

    #[test]
    fn uncapped_exponential_saturates_instead_of_overflowing() {
        let b = Backoff::Exponential {
            base_ns: ms(10),
            cap_ns: UNCAPPED,
            multiplier: 2.0,
            immediate_first: false,
        };
        let d = b.delay(5000, &mut b.initial_state(), &mut rng()).as_ns();
        assert_eq!(d, MAX_DELAY_NS as u64);
    }

    #[test]
    fn full_jitter_is_uniform_below_the_capped_exponential() {
        let b = spec_fj(10, 2000);
        for (k, v) in [(1u32, 10.0), (3, 40.0), (8, 1280.0), (9, 2000.0), (20, 2000.0)] {
            let xs = sample(&b, k);
            assert!(xs.iter().all(|&x| (0.0..=v).contains(&x)), "k={k}");
            assert_mean(&xs, v / 2.0);
            // Uniform: a quarter of the draws below v/4, within 5 binomial standard errors.
            let below = xs.iter().filter(|&&x| x < v / 4.0).count() as f64 / DRAWS as f64;
            let se = (0.25f64 * 0.75 / DRAWS as f64).sqrt();
            assert!((below - 0.25).abs() < 5.0 * se, "k={k} below={below}");
        }
    }

    #[test]
    fn equal_jitter_lies_in_the_upper_half() {
        let b = Backoff::EqualJitter { base_ns: ms(10), cap_ns: ms(2000), multiplier: 2.0 };
        for (k, v) in [(1u32, 10.0), (4, 80.0), (12, 2000.0)] {
            let xs = sample(&b, k);
            assert!(xs.iter().all(|&x| (v / 2.0..=v).contains(&x)), "k={k}");
            assert_mean(&xs, 0.75 * v);
        }
    }

    #[test]
    fn decorrelated_jitter_follows_its_state() {
        let b = Backoff::DecorrelatedJitter { base_ns: ms(5), cap_ns: ms(2000) };
        let mut r = rng();
        // First retry: U(base, 3 * base) since s_0 = base; mean 2 * base.
        let firsts: Vec<f64> =
            (0..DRAWS).map(|_| b.delay(1, &mut b.initial_state(), &mut r).as_ns() as f64 / MS).collect();
        assert!(firsts.iter().all(|&x| (5.0..=15.0).contains(&x)));
        assert_mean(&firsts, 10.0);
        // Each delay is drawn from U(base, 3 * previous delay), capped, and becomes the state.
        let mut st = b.initial_state();
        let mut prev = 5.0 * MS;
        for k in 1..200 {
            let d = b.delay(k, &mut st, &mut r).as_ns() as f64;
            assert!(
                d >= 5.0 * MS - 0.5 && d <= (3.0 * prev).min(2000.0 * MS) + 0.5,
                "k={k} d={d} prev={prev}"
            );
            assert_eq!(Span::from_ns_f64(st.0).as_ns() as f64, d);
            prev = st.0;
        }
        // The cap is reached and then it bunches there (Polly#530), never above it.
        assert!(prev <= 2000.0 * MS);
        // Conditional mean given the state: E[min(cap, U(b, 3s))] with 3s below the cap.
        let xs: Vec<f64> = (0..DRAWS)
            .map(|_| {
                let mut st = BackoffState(100.0 * MS);
                b.delay(2, &mut st, &mut r).as_ns() as f64 / MS
            })
            .collect();
        assert_mean(&xs, (5.0 + 300.0) / 2.0);
    }

    #[test]
    fn decorrelated_v2_matches_pollys_formula() {
        let b = Backoff::DecorrelatedJitterV2 { base_ns: ms(100), cap_ns: UNCAPPED };
        // Hand-computed from Polly's formula with a known uniform draw sequence.
        let mut r = rng();
        let mut check = rng();
        let mut st = b.initial_state();
        let mut prev = 0.0;
        for k in 1..=6u32 {
            let t = (k - 1) as f64 + u01(&mut check);
            let next = 2f64.powf(t) * (4.0 * t).sqrt().tanh();
            let expected = (next - prev) / 1.4 * 100.0 * MS;
            prev = next;
            assert_eq!(b.delay(k, &mut st, &mut r).as_ns(), Span::from_ns_f64(expected).as_ns(), "k={k}");
        }
        // The first delay increases with t = U(0,1), so its median is the formula at t = 0.5:
        // 2^0.5 * tanh(sqrt(2)) / 1.4 * base = 0.8975 * base (Polly calls `base` "the median
        // first-retry delay": approximately so).
        let mut firsts: Vec<f64> =
            (0..20_001).map(|_| b.delay(1, &mut b.initial_state(), &mut r).as_ns() as f64).collect();
        firsts.sort_by(f64::total_cmp);
        let median = firsts[10_000] / MS;
        let expected = 2f64.sqrt() * 2f64.sqrt().tanh() / 1.4 * 100.0;
        // The sample median of t has sd 1/(2 sqrt(n)) = 0.0035; the delay's slope there is
        // about 92 ms per unit of t, so the sd is about 0.33 ms: 2 ms is 6 sd.
        assert!((median - expected).abs() < 2.0, "median first delay {median} ms vs {expected}");
        // Always non-negative, and the cap bounds it.
        let capped = Backoff::DecorrelatedJitterV2 { base_ns: ms(100), cap_ns: ms(1000) };
        for x in sample(&capped, 10) {
            assert!((0.0..=1000.0).contains(&x));
        }
    }

    #[test]
    fn immediate_first_is_urllib3s_backoff() {
        // urllib3 2.x, Retry(backoff_factor = 0.1, backoff_max = 0.5): 0, 0.2, 0.4, 0.5, 0.5 s.
        let expo = Backoff::Exponential {
            base_ns: ms(100),
            cap_ns: ms(500),
            multiplier: 2.0,
            immediate_first: true,
        };
        let mut r = rng();
        let untouched = rng();
        let got: Vec<u64> =
            (1..=5).map(|k| expo.delay(k, &mut expo.initial_state(), &mut r).as_ns() / 1_000_000).collect();
        assert_eq!(got, [0, 200, 400, 500, 500]);
        assert_eq!(r, untouched);
        // With backoff_jitter = 0.05: nothing drawn for the first retry, U(0, 50 ms) added after.
        let add = Backoff::AdditiveJitter {
            base_ns: ms(100),
            cap_ns: ms(1000),
            multiplier: 2.0,
            jitter_ns: ms(50),
            immediate_first: true,
        };
        assert_eq!(add.delay(1, &mut add.initial_state(), &mut r).as_ns(), 0);
        assert_eq!(r, untouched);
        let xs = sample(&add, 3);
        assert!(xs.iter().all(|&x| (400.0..=450.0).contains(&x)));
        assert_mean(&xs, 425.0);
    }

    #[test]
    fn additive_and_proportional_jitter() {
        let add = Backoff::AdditiveJitter {
            base_ns: ms(100),
            cap_ns: ms(1000),
            multiplier: 2.0,
            jitter_ns: ms(50),
            immediate_first: false,
        };
        let xs = sample(&add, 2);
        assert!(xs.iter().all(|&x| (200.0..=250.0).contains(&x)));
        assert_mean(&xs, 225.0);
        // The cap applies after the jitter.
        assert!(sample(&add, 5).iter().all(|&x| x == 1000.0));

        let grpc =
            Backoff::ProportionalJitter { base_ns: ms(100), cap_ns: ms(1000), multiplier: 2.0, p: 0.2 };
        let xs = sample(&grpc, 3);
        assert!(xs.iter().all(|&x| (320.0..=480.0).contains(&x)));
        assert_mean(&xs, 400.0);
        // +-20 % after the cap: may exceed the cap by up to 20 % (gRFC A6).
        let xs = sample(&grpc, 10);
        assert!(xs.iter().all(|&x| (800.0..=1200.0).contains(&x)));
        assert!(xs.iter().any(|&x| x > 1000.0));
        assert_mean(&xs, 1000.0);
    }
}
