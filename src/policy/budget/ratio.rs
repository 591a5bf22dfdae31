//! The `ratio` budget: Finagle's `RetryBudget` (reference §3a) and its ports in Linkerd (§3b)
//! and tower (§3c), retries as a share of recent requests plus a reserve per second, kept in
//! Finagle's integer arithmetic over a [`WindowedAdder`].

use crate::engine::{Instant, Span};

/// Parameters of a [`RatioBudget`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RatioBudgetParams {
    /// Retries allowed per deposited request (`percentCanRetry`, `retryRatio`,
    /// `retry_percent`), in [0, 1000]; 0.2 = 20 %.
    pub ratio: f64,
    /// Retries per second allowed on top (`minRetriesPerSec`, `minRetriesPerSecond`), >= 0.
    pub min_per_second: f64,
    /// How long deposits and withdrawals count (Finagle accepts [1 s, 60 s]).
    pub ttl: Span,
}

impl RatioBudgetParams {
    /// `RetryBudget()` in Finagle (reference §3a: ttl 10 s, minRetriesPerSec 10,
    /// percentCanRetry 0.2); also Linkerd's default `retryBudget` (§3b) and tower's
    /// `TpsBudget::default()` (§3c).
    pub const FINAGLE_DEFAULT: RatioBudgetParams = RatioBudgetParams {
        ratio: 0.2,               // reference §3a: percentCanRetry = 0.2
        min_per_second: 10.0,     // reference §3a: minRetriesPerSec = 10
        ttl: Span::from_secs(10), // reference §3a: ttl = 10 s
    };
}

/// Finagle's integer scale (reference §3a: `deposit = 1000`; `ScaleFactor` in `RetryBudget.scala`).
pub const RATIO_SCALE: i64 = 1000;

/// Slices of the windowed adder over `ttl` (reference §3a: "a `WindowedAdder` over `ttl` with
/// 10 slices"; tower §3c: 10 slots).
pub const WINDOW_SLICES: usize = 10;

/// A time-windowed sum: Finagle's `WindowedAdder` (twitter/util `WindowedAdder.scala`, used by
/// `TokenBucket.newLeakyBucket` behind `RetryBudget`, reference §3a), with 10 slices over a
/// range.
///
/// It keeps a `writer` for the current slice and a ring of the 9 previous slices. When a call
/// comes at least one slice width (`range / 10`) after the current slice began, the writer is
/// moved into the ring (overwriting the oldest slice), `floor(elapsed / width) - 1` further
/// slices (at most 9) are zeroed for the time that passed with no call, and the new slice
/// begins *at that call* (Finagle's `old = now()`: slices are not aligned to a grid). An entry
/// leaves with the 10th slice after its own: with calls at least once per width it counts for
/// 9 to 10 widths plus the waits for the calls that rolled (about `range`); after a silence of
/// a whole `range` everything is forgotten, and not a nanosecond before.
///
/// Fixed arrays: no allocation. Times are nanoseconds where Finagle uses milliseconds; the
/// slice width is `range / 10` rounded down, as Finagle's `range / slices`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowedAdder {
    /// Width of one slice.
    width: Span,
    /// Sum of the current slice.
    writer: i64,
    /// The previous `WINDOW_SLICES - 1` slices; `ring[i]` is the next one to overwrite.
    ring: [i64; WINDOW_SLICES - 1],
    i: usize,
    /// When the current slice began.
    old: Instant,
}

impl WindowedAdder {
    /// An empty adder over `range`, its first slice beginning at `now`.
    ///
    /// # Panics
    /// If `range` is shorter than 10 ns (a slice would have no width).
    pub fn new(range: Span, now: Instant) -> WindowedAdder {
        let width = Span::from_ns(range.as_ns() / WINDOW_SLICES as u64);
        assert!(!width.is_zero(), "a windowed adder needs a range of at least {WINDOW_SLICES} ns");
        WindowedAdder { width, writer: 0, ring: [0; WINDOW_SLICES - 1], i: 0, old: now }
    }

    /// Moves to the slice holding `now` (Finagle's `expired()`, run by `add` and `sum` whenever
    /// a slice width has passed since the current slice began). A `now` earlier than the
    /// current slice's start changes nothing.
    #[inline]
    fn roll(&mut self, now: Instant) {
        let elapsed = now.since(self.old);
        if elapsed < self.width {
            return;
        }
        const N: usize = WINDOW_SLICES - 1;
        self.ring[self.i] = self.writer;
        self.writer = 0;
        self.i = (self.i + 1) % N;
        // Slices that passed with no call at all hold nothing.
        let skipped = (elapsed.as_ns() / self.width.as_ns() - 1).min(N as u64) as usize;
        for j in 0..skipped {
            self.ring[(self.i + j) % N] = 0;
        }
        self.i = (self.i + skipped) % N;
        self.old = now;
    }

    /// Adds `x` (negative for a withdrawal) to the slice holding `now`.
    #[inline]
    pub fn add(&mut self, now: Instant, x: i64) {
        self.roll(now);
        self.writer += x;
    }

    /// The sum over the live window at `now`.
    #[inline]
    pub fn sum(&mut self, now: Instant) -> i64 {
        self.roll(now);
        self.writer + self.ring.iter().sum::<i64>()
    }
}

/// A retry budget as a ratio of recent requests: Finagle's `RetryBudget` with its exact integer
/// arithmetic (reference §3a), also Linkerd's `retryBudget` (§3b) and tower's `TpsBudget`
/// (§3c), which are ports of it.
///
/// With `ratio > 0`: `deposit = 1000`, `withdraw = floor(1000 / ratio)` (5000 for 0.2). With
/// `ratio = 0`: requests earn nothing (`deposit = 0`) and a retry costs 1, so only the reserve
/// pays. `reserve = floor(min_per_second * ttl_seconds * withdraw)` with `ttl_seconds` whole
/// seconds (Finagle's `ttl.inSeconds`, tower's `ttl.as_secs()`; Finagle takes integer
/// `minRetriesPerSec`, here a real, rounded down once in the product). Deposits and withdrawals
/// go into one [`WindowedAdder`] over `ttl` (10 slices), so both expire after about `ttl`.
///
/// - [`RatioBudget::deposit`]: once per *original request* (Finagle's `RetryFilter` and
///   `RequeueFilter` deposit in `apply()`; DESIGN §4.2: each operation's first attempt).
/// - [`RatioBudget::try_withdraw`]: before a retry; succeeds iff
///   `windowed_sum + reserve >= withdraw`, and then records `-withdraw`.
///
/// Over any sliding `ttl` this allows about `ratio x requests + min_per_second x ttl` retries
/// (with the defaults 20 % of requests plus 100 retries per 10 s). Just before each roll the
/// live window is exactly the last 10 slices, so a client whose every request wants a retry
/// gets `ratio x rate + min_per_second x ttl / P` retries per second in steady state, where
/// `P` is the time 10 slices actually take: `ttl` under steady traffic, a little more when
/// requests are sparse (a slice ends only at the first call after its width has passed). The
/// tests check this to within a derived tolerance.
///
/// **tower's truncation (reference §3c, tower-rs/tower#857), not modelled:** tower scales
/// `0 < ratio <= 1` as `deposit = 1`, `withdraw = floor(1 / ratio)`, so a fractional `1 / ratio`
/// is truncated and the effective ratio becomes `1 / floor(1 / ratio)`: 0.6 behaves as 100 %,
/// 0.3 as 33 %, while 0.2, 0.25 and 0.5 are exact. Finagle's scale of 1000 keeps the error
/// below 0.1 %. To see tower's behaviour, give this budget `ratio = 1 / floor(1 / ratio)`.
///
/// Other variants, not modelled here: reqwest deposits only on success (§3d); Finagle's
/// MethodBuilder deposits twice (twitter/finagle#956, §3a), i.e. twice the ratio; Finagle's
/// per-request cap `ceil(maxRetriesPerReq x balance)` is the gate's `max_attempts`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RatioBudget {
    deposit: i64,
    withdraw: i64,
    reserve: i64,
    window: WindowedAdder,
}

impl RatioBudget {
    /// A budget with an empty window whose first slice begins at `now` (the reserve is
    /// available at once).
    ///
    /// # Panics
    /// If `ratio` is outside [0, 1000] or not a number, `min_per_second` is negative or not a
    /// number, or `ttl` is shorter than 10 ns (validation refuses these first).
    pub fn new(params: RatioBudgetParams, now: Instant) -> RatioBudget {
        let RatioBudgetParams { ratio, min_per_second, ttl } = params;
        assert!(
            (0.0..=RATIO_SCALE as f64).contains(&ratio),
            "a ratio budget's ratio must be in [0, 1000], not {ratio}"
        );
        assert!(min_per_second >= 0.0, "a ratio budget's min_per_second must be >= 0, not {min_per_second}");
        // Finagle: (0, 1) when percentCanRetry == 0, else (1000, (1000 / percentCanRetry).toInt).
        let (deposit, withdraw) =
            if ratio == 0.0 { (0, 1) } else { (RATIO_SCALE, (RATIO_SCALE as f64 / ratio) as i64) };
        let ttl_seconds = ttl.as_ns() / 1_000_000_000;
        let reserve = (min_per_second * ttl_seconds as f64 * withdraw as f64).floor() as i64;
        RatioBudget { deposit, withdraw, reserve, window: WindowedAdder::new(ttl, now) }
    }

    /// Tokens one request deposits (1000, or 0 when `ratio = 0`).
    pub fn deposit_amount(&self) -> i64 {
        self.deposit
    }

    /// Tokens one retry withdraws (`floor(1000 / ratio)`, or 1 when `ratio = 0`).
    pub fn withdraw_amount(&self) -> i64 {
        self.withdraw
    }

    /// The standing reserve in tokens (`floor(min_per_second * ttl_seconds * withdraw)`).
    pub fn reserve(&self) -> i64 {
        self.reserve
    }

    /// Records one original request at `now`.
    #[inline]
    pub fn deposit(&mut self, now: Instant) {
        self.window.add(now, self.deposit);
    }

    /// Before a retry at `now`: withdraws and returns `true` iff the windowed sum plus the
    /// reserve is at least one withdrawal; otherwise changes nothing and returns `false`.
    #[inline]
    pub fn try_withdraw(&mut self, now: Instant) -> bool {
        let ok = self.window.sum(now) + self.reserve >= self.withdraw;
        if ok {
            self.window.add(now, -self.withdraw);
        }
        ok
    }

    /// Retries that could be made at `now` (Finagle's `balance`: `count / withdraw`, rounded
    /// toward zero).
    #[inline]
    pub fn balance(&mut self, now: Instant) -> i64 {
        (self.window.sum(now) + self.reserve) / self.withdraw
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::rng::u01;
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    fn secs(s: f64) -> Instant {
        Instant::ZERO + Span::from_secs_f64(s)
    }

    // ----- WindowedAdder -----

    /// Finagle's `expired()` transcribed literally (two `Arrays.fill` calls and all), to check
    /// the ring loop against.
    struct LiteralAdder {
        window: u64,
        writer: i64,
        buf: [i64; 9],
        i: usize,
        old: u64,
    }

    impl LiteralAdder {
        fn expired(&mut self, now: u64) {
            let n = 9;
            self.buf[self.i] = self.writer;
            self.writer = 0;
            self.i = (self.i + 1) % n;
            let nskip = (((now - self.old) / self.window) as i64 - 1).min(n as i64);
            if nskip > 0 {
                let nskip = nskip as usize;
                let r = nskip.min(n - self.i);
                self.buf[self.i..self.i + r].fill(0);
                self.buf[0..nskip - r].fill(0);
                self.i = (self.i + nskip) % n;
            }
            self.old = now;
        }
        fn add(&mut self, now: u64, x: i64) {
            if now - self.old >= self.window {
                self.expired(now);
            }
            self.writer += x;
        }
        fn sum(&mut self, now: u64) -> i64 {
            if now - self.old >= self.window {
                self.expired(now);
            }
            self.writer + self.buf.iter().sum::<i64>()
        }
    }

    #[test]
    fn windowed_adder_matches_finagles_expiry_on_random_schedules() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(0xADD);
        for trial in 0..200 {
            let range = 1_000 + (u01(&mut rng) * 1e6) as u64;
            let mut ours = WindowedAdder::new(Span::from_ns(range), Instant::ZERO);
            let mut lit = LiteralAdder { window: range / 10, writer: 0, buf: [0; 9], i: 0, old: 0 };
            let mut now = 0u64;
            // Gaps from nothing to 1.5 ranges, so every skip count 0..=9 and beyond occurs.
            let scale = if trial % 2 == 0 { 0.3 } else { 1.5 };
            for _ in 0..2_000 {
                now += (u01(&mut rng) * u01(&mut rng) * scale * range as f64) as u64;
                let t = Instant::from_ns(now);
                if u01(&mut rng) < 0.5 {
                    let x = (u01(&mut rng) * 2000.0) as i64 - 1000;
                    ours.add(t, x);
                    lit.add(now, x);
                } else {
                    assert_eq!(ours.sum(t), lit.sum(now), "trial {trial} at {now}");
                }
            }
        }
    }

    #[test]
    fn windowed_adder_slides_and_forgets() {
        let s = |x: f64| secs(x);
        // Finagle's "maintains a sliding window" scenario, with 10 one-second slices: a call
        // every second keeps the slices aligned; an entry leaves with the 10th roll after it.
        let mut w = WindowedAdder::new(Span::from_secs(10), s(0.0));
        w.add(s(0.0), 1);
        w.add(s(0.5), 2);
        for t in 1..10 {
            assert_eq!(w.sum(s(t as f64)), 3, "t={t}");
        }
        w.add(s(9.0), 4);
        assert_eq!(w.sum(s(9.999)), 7);
        assert_eq!(w.sum(s(10.0)), 4, "slice [0, 1) expired after exactly 10 s (1 and 2 lived 10 and 9.5 s)");
        // With no call from 10 s to 18.999 s, the roll at 18.999 zeroes the 7 slices that
        // passed empty and starts a slice *there* (Finagle's `old = now()`): the 4 stays until
        // a whole slice width after 18.999, not until 19 s.
        assert_eq!(w.sum(s(18.999)), 4);
        assert_eq!(w.sum(s(19.0)), 4);
        assert_eq!(w.sum(s(19.998)), 4);
        assert_eq!(w.sum(s(19.999)), 0);

        // Left alone, it forgets everything once a whole range passes with no call, and not
        // a nanosecond before.
        let mut w = WindowedAdder::new(Span::from_secs(10), s(0.0));
        w.add(s(0.0), 5);
        let mut copy = w;
        assert_eq!(w.sum(s(10.0).saturating_sub(Span::from_ns(1))), 5);
        assert_eq!(copy.sum(s(10.0)), 0);

        // A gap of 2.5 widths: the roll at 2.5 files [0, 2.5) as one slice and zeroes one more
        // for the width that passed empty; the next slice begins at 2.5, off the 1 s grid.
        let mut w = WindowedAdder::new(Span::from_secs(10), s(0.0));
        w.add(s(0.0), 1);
        w.add(s(2.5), 10);
        assert_eq!(w.sum(s(2.5)), 11);
        // At 10.4 (7.9 widths later) the 10 is filed and 6 more slices zeroed: 9 slices since
        // the 1 was written, so it still counts, and keeps counting until the next roll, a
        // whole width later: the 10th slice after it. It lived 11.4 s ("approximately ttl").
        assert_eq!(w.sum(s(10.4)), 11);
        assert_eq!(w.sum(s(11.39)), 11);
        assert_eq!(w.sum(s(11.4)), 10);
    }

    // ----- RatioBudget -----

    fn ratio(ratio: f64, min_per_second: f64, ttl_s: f64) -> RatioBudget {
        RatioBudget::new(
            RatioBudgetParams { ratio, min_per_second, ttl: Span::from_secs_f64(ttl_s) },
            Instant::ZERO,
        )
    }

    #[test]
    fn ratio_budget_uses_finagles_integers() {
        let b = RatioBudget::new(RatioBudgetParams::FINAGLE_DEFAULT, Instant::ZERO);
        assert_eq!((b.deposit_amount(), b.withdraw_amount(), b.reserve()), (1000, 5000, 500_000));
        let b = ratio(0.3, 2.0, 5.0);
        assert_eq!((b.deposit_amount(), b.withdraw_amount(), b.reserve()), (1000, 3333, 33_330));
        let b = ratio(0.0, 10.0, 10.0);
        assert_eq!((b.deposit_amount(), b.withdraw_amount(), b.reserve()), (0, 1, 100));
        let b = ratio(1000.0, 0.0, 10.0);
        assert_eq!((b.deposit_amount(), b.withdraw_amount(), b.reserve()), (1000, 1, 0));
        // Whole seconds of ttl, as Finagle's ttl.inSeconds: 1.9 s counts as 1.
        assert_eq!(ratio(0.2, 10.0, 1.9).reserve(), 10 * 5000);
        // A fractional min_per_second is rounded down once, in the product.
        assert_eq!(ratio(0.2, 0.25, 10.0).reserve(), 12_500);
    }

    #[test]
    fn ratio_budget_exact_small_scenarios() {
        // The reserve alone: 10/s over 10 s = exactly 100 retries, then refused.
        let mut b = RatioBudget::new(RatioBudgetParams::FINAGLE_DEFAULT, Instant::ZERO);
        let t = secs(0.0);
        assert_eq!(b.balance(t), 100);
        for i in 0..100 {
            assert!(b.try_withdraw(t), "retry {i}");
        }
        assert!(!b.try_withdraw(t));
        assert_eq!(b.balance(t), 0);
        // Each 5 requests (5 x 1000) pay for one retry (5000) at 20 %.
        for i in 1..=10 {
            b.deposit(t);
            assert_eq!(b.try_withdraw(t), i == 5 || i == 10, "after {i} deposits");
        }
        // Withdrawals expire too: after ttl with no traffic the whole reserve is back.
        assert_eq!(b.balance(secs(10.0)), 100);

        // ratio 0: requests earn nothing, the reserve is all.
        let mut b = ratio(0.0, 1.0, 10.0);
        for _ in 0..1000 {
            b.deposit(t);
        }
        let granted = (0..100).filter(|_| b.try_withdraw(t)).count();
        assert_eq!(granted, 10);
        // Nothing at all when both are 0 (Finagle's RetryBudget.Empty).
        let mut b = ratio(0.0, 0.0, 10.0);
        b.deposit(t);
        assert!(!b.try_withdraw(t));
        // A refused withdrawal leaves the window untouched.
        let mut b = ratio(0.2, 0.0, 10.0);
        for _ in 0..4 {
            b.deposit(t);
        }
        assert!(!b.try_withdraw(t));
        b.deposit(t);
        assert!(b.try_withdraw(t));
    }

    #[test]
    fn ratio_budget_forgets_deposits_after_ttl() {
        // 100 requests at t = 0 earn 20 retries; 10 s later (a whole ttl with no call) they
        // are forgotten and only the reserve (here 1 retry per second, 10 per window) is left.
        let mut b = ratio(0.2, 1.0, 10.0);
        for _ in 0..100 {
            b.deposit(secs(0.0));
        }
        let mut late = b;
        assert_eq!(b.balance(secs(9.9)), 30);
        assert_eq!(late.balance(secs(10.0)), 10);
        // With steady calls, a deposit made mid-slice is gone 9.5 slices later.
        let mut b = ratio(0.2, 0.0, 10.0);
        b.deposit(secs(0.0)); // the first slice begins at 0
        for _ in 0..5 {
            b.deposit(secs(0.5));
        }
        for s in 1..10 {
            assert_eq!(b.balance(secs(s as f64)), 1, "at {s} s");
        }
        assert_eq!(b.balance(secs(10.0)), 0);
    }

    /// What a stream of requests that all want a retry gets from a ratio budget, measured over
    /// `[warmup, warmup + run)`.
    struct Steady {
        /// Retries granted per second.
        retries: f64,
        /// Requests (deposits) per second.
        requests: f64,
        /// Extremes of `count / withdraw` just before a roll of the adder.
        count_lo: f64,
        count_hi: f64,
    }

    /// Requests at the times `next_gap` spaces them by (in seconds); each deposits, then asks
    /// for a retry at once.
    fn steady(p: RatioBudgetParams, warmup: f64, run: f64, mut next_gap: impl FnMut() -> f64) -> Steady {
        let mut b = RatioBudget::new(p, Instant::ZERO);
        let w = b.withdraw_amount() as f64;
        let (mut t, mut granted, mut requests) = (0.0, 0u64, 0u64);
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        let mut last_count = f64::NAN;
        while t < warmup + run {
            let now = secs(t);
            let slice_began = b.window.old;
            b.deposit(now);
            if b.window.old != slice_began && t >= warmup {
                // This request rolled the adder: the count the previous request left was the
                // count just before the roll.
                lo = lo.min(last_count);
                hi = hi.max(last_count);
            }
            let ok = b.try_withdraw(now);
            if t >= warmup {
                requests += 1;
                granted += ok as u64;
            }
            // Same instant: no roll, just the count.
            last_count = (b.window.sum(now) + b.reserve) as f64 / w;
            t += next_gap();
        }
        Steady { retries: granted as f64 / run, requests: requests as f64 / run, count_lo: lo, count_hi: hi }
    }

    #[test]
    fn ratio_budget_steady_state_is_ratio_times_rate_plus_minimum() {
        // Derivation. Let the adder roll at t_1 < t_2 < ...; slice j = [t_j, t_j+1) nets
        // n_j = 1000 deposits_j - withdraw x retries_j. Just before roll j + 10 the live window
        // is exactly slices j..j+9, so count_(j+10) = reserve + n_j + ... + n_(j+9). Summing
        // over K disjoint periods of 10 slices (P seconds each):
        //   withdraw x retries = 1000 x deposits + K x reserve - sum_k count_k,
        // so retries per second = ratio x requests/s + min_per_second x ttl / P - c / P, where
        // c is the mean of count_k / withdraw, bounded by the pre-roll counts the test records;
        // plus at most (retries in one period + 2) / run for the partial periods at both ends
        // of the measurement. P is 10 slice widths (= ttl) plus, for each roll, the wait for
        // the first request after the width has passed: none for evenly spaced requests at a
        // rate dividing the width, a mean of 1 / rate for Poisson ones.
        // Evenly spaced requests that all want a retry keep the pre-roll count in [0, 1)
        // withdrawal (the last request before the roll withdrew if it could, and a
        // request's own deposit is less than a withdrawal); Poisson ones leave a few
        // withdrawals unspent after a sparse slice.
        let ttl10 = Span::from_secs(10);
        let cases = [
            (100.0, RatioBudgetParams::FINAGLE_DEFAULT, false),
            (1000.0, RatioBudgetParams::FINAGLE_DEFAULT, false),
            (20.0, RatioBudgetParams::FINAGLE_DEFAULT, false),
            (500.0, RatioBudgetParams { ratio: 0.1, min_per_second: 0.0, ttl: ttl10 }, false),
            (50.0, RatioBudgetParams { ratio: 0.0, min_per_second: 5.0, ttl: ttl10 }, false),
            (300.0, RatioBudgetParams { ratio: 0.5, min_per_second: 3.0, ttl: Span::from_secs(2) }, false),
            (100.0, RatioBudgetParams::FINAGLE_DEFAULT, true),
            (40.0, RatioBudgetParams { ratio: 0.25, min_per_second: 20.0, ttl: Span::from_secs(5) }, true),
        ];
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(0x7A7E);
        for (rate, p, poisson) in cases {
            let run = 2000.0;
            let m = if poisson {
                steady(p, 100.0, run, || -(1.0 - u01(&mut rng)).ln() / rate)
            } else {
                steady(p, 100.0, run, || 1.0 / rate)
            };
            let what = format!("{p:?} at {rate}/s (poisson: {poisson})");
            let c = m.count_lo.abs().max(m.count_hi.abs());
            if poisson {
                assert!(c < 10.0, "{what}: pre-roll count up to {c} withdrawals");
            } else {
                assert!(m.count_lo >= 0.0 && m.count_hi < 1.0, "{what}: {} .. {}", m.count_lo, m.count_hi);
            }
            let ttl = p.ttl.as_secs_f64();
            let period = if poisson { ttl + 10.0 / rate } else { ttl };
            let expected = p.ratio * m.requests + p.min_per_second * ttl / period;
            let tol = c.max(1.0) / period + (expected * period + 2.0) / run;
            assert!(
                (m.retries - expected).abs() <= tol,
                "{what}: {} retries/s, expected {expected} +- {tol}",
                m.retries
            );
            // Hence ratio x rate + min_per_second, up to the same tolerance, the stretch of the
            // periods, and (Poisson) 4 standard errors of the measured request rate.
            let ideal = p.ratio * rate + p.min_per_second;
            let stretch = p.min_per_second * (1.0 - ttl / period);
            let sampling = if poisson { 4.0 * p.ratio * (rate / run).sqrt() } else { 0.0 };
            assert!(
                (m.retries - ideal).abs() <= tol + stretch + sampling,
                "{what}: {} retries/s vs {ideal}",
                m.retries
            );
            if !poisson {
                assert!((m.retries - ideal).abs() <= 0.01 * ideal, "{what}: within 1 %");
            }
        }
    }
}
