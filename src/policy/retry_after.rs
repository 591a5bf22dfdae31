//! Honouring a server's Retry-After (or gRPC pushback) when choosing the delay before a retry
//! (DESIGN §4: "delay = Retry-After (clamped to `retry_after_cap`) when the server sent one
//! and `honor_retry_after`, else the backoff"), in each of the ways production clients do it
//! (`docs/retry-policies.md`, cited as "reference §x"). `t` is the backoff's delay for
//! this retry, `ra` the server's value, `cap` the policy's `retry_after_cap`.
//!
//! | mode | models | delay | where `cap` applies |
//! |---|---|---|---|
//! | [`RetryAfterMode::Replace`] | urllib3 (§7), smithy-rs before 2.1 (§1c), generic | `min(ra, cap)` | clamps `ra` |
//! | [`RetryAfterMode::Envoy`] | Envoy `rate_limited_retry_back_off` (§3f) | `ra > max_interval`: `t`; else `U(v, 1.5 v)`, `v = min(ra, cap)` | clamps `ra` after the discard test, before the jitter |
//! | [`RetryAfterMode::Aws2026`] | AWS SDK retry behaviour 2.1 (§1b, §1c) | `max(t, min(v, t + 5 s))`, `v = min(ra, cap)` | clamps `ra` before the `[t, t + 5 s]` clamp |
//! | [`RetryAfterMode::GrpcPushback`] | gRPC `grpc-retry-pushback-ms` (§2) | exactly `min(ra, cap)`, and the backoff's exponent resets; a negative pushback: no retry | clamps `ra` |
//! | [`RetryAfterMode::AtLeastBackoff`] | axios-retry `exponentialDelay` (§7) | `max(t, min(ra, cap))` | clamps `ra` |
//!
//! The rule is the same everywhere: `cap` bounds what the client takes from the server, before
//! the mode combines it with the backoff (no cap: `ra` as sent). No answer value, or
//! `honor = false`: the backoff, unchanged. [`RetryAfter::DontRetry`] is understood only by
//! [`RetryAfterMode::GrpcPushback`]; an HTTP Retry-After cannot be negative (RFC 9110
//! `delay-seconds = 1*DIGIT`, §7), so the other modes treat it as absent and use the backoff.
//!
//! Only [`RetryAfterMode::Envoy`] draws a random number, once, when it uses the server's value;
//! every other path draws nothing, so honouring Retry-After never shifts the client's stream
//! where no jitter is applied.

use crate::engine::Span;
use crate::engine::rng::uniform;
use rand::Rng;

/// urllib3's `retry_after_max = 21600` s, 6 h (reference §7, added by PR #3743 after a server's
/// huge Retry-After overflowed `sleep`): the usual `cap` for [`RetryAfterMode::Replace`].
pub const URLLIB3_RETRY_AFTER_MAX: Span = Span::from_secs(21_600); // reference §7: retry_after_max = 21600

/// Envoy's default `max_interval` for `rate_limited_retry_back_off` (reference §3f: 300 s); a
/// larger header value is discarded.
pub const ENVOY_MAX_INTERVAL: Span = Span::from_secs(300); // reference §3f: max_interval default 300 s

/// How far past the backoff the AWS SDK 2.1 lets `x-amz-retry-after` push the delay
/// (reference §1b v2.1: `ra` clamped to `[t_i, t_i + 5 s]`).
pub const AWS_2026_MAX_EXTRA: Span = Span::from_secs(5); // reference §1b/§1c: t_i + 5 s

/// What an answer tells the client about when to retry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetryAfter {
    /// Retry after this long (HTTP `Retry-After`, `x-amz-retry-after`, a non-negative
    /// `grpc-retry-pushback-ms`).
    After(Span),
    /// Do not retry: a negative or unparseable gRPC pushback (reference §2).
    DontRetry,
}

/// How a client combines the server's [`RetryAfter`] with its own backoff.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetryAfterMode {
    /// The server's value replaces the backoff, clamped to the cap (urllib3: capped at
    /// `retry_after_max`, then slept exactly, reference §7; smithy-rs before 2.1:
    /// `min(retry_after, max_backoff)`, §1c).
    Replace,
    /// Envoy's `rate_limited_retry_back_off` (reference §3f): a value above `max_interval`
    /// ([`ENVOY_MAX_INTERVAL`] by default) is discarded and the exponential backoff used;
    /// otherwise the delay is `U(v, 1.5 v)` (`JitteredLowerBoundBackOffStrategy`).
    Envoy {
        /// Longest value taken from the header; longer ones are discarded.
        max_interval: Span,
    },
    /// AWS SDK retry behaviour 2.1 (reference §1b v2.1, §1c): `max(t, min(ra, t + 5 s))`, the
    /// server's value clamped to `[t, t + 5 s]` around the backoff delay `t`.
    Aws2026,
    /// gRPC pushback (reference §2): a non-negative pushback is the delay, exactly, and the
    /// backoff restarts from `initialBackoff` (`numRetriesSincePushback`); a negative one means
    /// "do not retry".
    GrpcPushback,
    /// axios-retry's `exponentialDelay` (reference §7): `max(backoff, ra)`. (axios then adds
    /// `U(0, 0.2) x` that maximum; the jitter belongs to the backoff here, see the presets.)
    AtLeastBackoff,
}

/// A strategy's Retry-After settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryAfterPolicy {
    /// Whether the client reads the server's value at all (`honor_retry_after`).
    pub honor: bool,
    /// The longest value taken from the server (`retry_after_cap`); `None`: no limit.
    pub cap: Option<Span>,
    /// How the value is combined with the backoff (`retry_after_mode`).
    pub mode: RetryAfterMode,
}

/// The delay before the next retry, or no retry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetryDelay {
    /// Retry after `delay`. When `reset_backoff`, the server's pushback restarts the backoff:
    /// the gate numbers the following retries from 1 again (gRPC's `numRetriesSincePushback`,
    /// reference §2) and resets its stateful backoff.
    Wait { delay: Span, reset_backoff: bool },
    /// The server said not to retry (a negative gRPC pushback): the operation fails with the
    /// answer it got.
    DontRetry,
}

impl RetryDelay {
    /// The backoff's own delay, nothing reset.
    #[inline]
    fn backoff(delay: Span) -> RetryDelay {
        RetryDelay::Wait { delay, reset_backoff: false }
    }
}

impl RetryAfterPolicy {
    /// A policy that never reads the server's value.
    pub const IGNORE: RetryAfterPolicy =
        RetryAfterPolicy { honor: false, cap: None, mode: RetryAfterMode::Replace };

    /// The delay before a retry, given the backoff's delay for it (`backoff`, already drawn)
    /// and what the failed answer carried (`ra`). Draws from `rng` only in
    /// [`RetryAfterMode::Envoy`] when it uses the server's value (one draw).
    #[inline]
    pub fn delay<R: Rng + ?Sized>(&self, backoff: Span, ra: Option<RetryAfter>, rng: &mut R) -> RetryDelay {
        if !self.honor {
            return RetryDelay::backoff(backoff);
        }
        let ra = match ra {
            None => return RetryDelay::backoff(backoff),
            Some(RetryAfter::DontRetry) => {
                return match self.mode {
                    RetryAfterMode::GrpcPushback => RetryDelay::DontRetry,
                    _ => RetryDelay::backoff(backoff),
                };
            }
            Some(RetryAfter::After(ra)) => ra,
        };
        let capped = self.cap.map_or(ra, |cap| ra.min(cap));
        match self.mode {
            RetryAfterMode::Replace => RetryDelay::backoff(capped),
            RetryAfterMode::Envoy { max_interval } => {
                if ra > max_interval {
                    return RetryDelay::backoff(backoff);
                }
                let v = capped.as_ns_f64();
                RetryDelay::backoff(Span::from_ns_f64(uniform(rng, v, 1.5 * v)))
            }
            RetryAfterMode::Aws2026 => {
                RetryDelay::backoff(backoff.max(capped.min(backoff + AWS_2026_MAX_EXTRA)))
            }
            RetryAfterMode::GrpcPushback => RetryDelay::Wait { delay: capped, reset_backoff: true },
            RetryAfterMode::AtLeastBackoff => RetryDelay::backoff(backoff.max(capped)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    const ALL_MODES: [RetryAfterMode; 5] = [
        RetryAfterMode::Replace,
        RetryAfterMode::Envoy { max_interval: ENVOY_MAX_INTERVAL },
        RetryAfterMode::Aws2026,
        RetryAfterMode::GrpcPushback,
        RetryAfterMode::AtLeastBackoff,
    ];

    fn rng() -> Xoshiro256PlusPlus {
        Xoshiro256PlusPlus::seed_from_u64(0x4A7E)
    }

    fn ms(v: u64) -> Span {
        Span::from_millis(v)
    }

    fn s(v: u64) -> Span {
        Span::from_secs(v)
    }

    fn policy(mode: RetryAfterMode, cap: Option<Span>) -> RetryAfterPolicy {
        RetryAfterPolicy { honor: true, cap, mode }
    }

    fn wait(delay: Span) -> RetryDelay {
        RetryDelay::Wait { delay, reset_backoff: false }
    }

    /// The delay, asserting that no random number was drawn.
    fn no_draw(p: &RetryAfterPolicy, backoff: Span, ra: Option<RetryAfter>) -> RetryDelay {
        let mut r = rng();
        let d = p.delay(backoff, ra, &mut r);
        assert_eq!(r, rng(), "{p:?} drew for {ra:?}");
        d
    }

    #[test]
    fn absent_or_not_honoured_is_the_backoff() {
        let b = ms(123);
        for mode in ALL_MODES {
            for cap in [None, Some(ms(1))] {
                let on = policy(mode, cap);
                assert_eq!(no_draw(&on, b, None), wait(b), "{mode:?}");
                let off = RetryAfterPolicy { honor: false, ..on };
                for ra in [None, Some(RetryAfter::After(s(30))), Some(RetryAfter::DontRetry)] {
                    assert_eq!(no_draw(&off, b, ra), wait(b), "{mode:?} ignores {ra:?}");
                }
            }
        }
        assert_eq!(no_draw(&RetryAfterPolicy::IGNORE, b, Some(RetryAfter::After(s(9)))), wait(b));
    }

    #[test]
    fn dont_retry_is_understood_only_as_a_grpc_pushback() {
        let b = ms(40);
        for mode in ALL_MODES {
            let d = no_draw(&policy(mode, None), b, Some(RetryAfter::DontRetry));
            if mode == RetryAfterMode::GrpcPushback {
                assert_eq!(d, RetryDelay::DontRetry);
            } else {
                assert_eq!(d, wait(b), "{mode:?}: not valid HTTP, so the backoff");
            }
        }
    }

    #[test]
    fn replace_sleeps_the_servers_value_up_to_the_cap() {
        let urllib3 = policy(RetryAfterMode::Replace, Some(URLLIB3_RETRY_AFTER_MAX));
        // Shorter or longer than the backoff, it replaces it.
        assert_eq!(no_draw(&urllib3, s(2), Some(RetryAfter::After(ms(500)))), wait(ms(500)));
        assert_eq!(no_draw(&urllib3, ms(10), Some(RetryAfter::After(s(120)))), wait(s(120)));
        assert_eq!(no_draw(&urllib3, ms(10), Some(RetryAfter::After(Span::ZERO))), wait(Span::ZERO));
        // A day-long Retry-After (urllib3#1338) is clamped to 6 h.
        assert_eq!(no_draw(&urllib3, ms(10), Some(RetryAfter::After(s(86_400)))), wait(s(21_600)));
        // Without a cap, a day it is.
        let uncapped = policy(RetryAfterMode::Replace, None);
        assert_eq!(no_draw(&uncapped, ms(10), Some(RetryAfter::After(s(86_400)))), wait(s(86_400)));
        // smithy-rs before 2.1: min(retry_after, max_backoff = 20 s).
        let smithy = policy(RetryAfterMode::Replace, Some(s(20)));
        assert_eq!(no_draw(&smithy, s(1), Some(RetryAfter::After(s(90)))), wait(s(20)));
    }

    #[test]
    fn envoy_discards_values_above_the_max_interval() {
        let envoy = policy(RetryAfterMode::Envoy { max_interval: ENVOY_MAX_INTERVAL }, None);
        let b = ms(17);
        // 300 s is still taken (only a value > max_interval is discarded) ...
        let mut r = rng();
        match envoy.delay(b, Some(RetryAfter::After(s(300))), &mut r) {
            RetryDelay::Wait { delay, reset_backoff: false } => assert!((s(300)..s(450)).contains(&delay)),
            other => panic!("{other:?}"),
        }
        assert_ne!(r, rng(), "the jitter drew");
        // ... one nanosecond more, or a day, is discarded: the backoff, and no draw.
        for ra in [s(300) + Span::from_ns(1), s(86_400)] {
            assert_eq!(no_draw(&envoy, b, Some(RetryAfter::After(ra))), wait(b));
        }
        // Even with a cap that would have brought the day down, the discard comes first.
        let capped = policy(RetryAfterMode::Envoy { max_interval: ENVOY_MAX_INTERVAL }, Some(s(60)));
        assert_eq!(no_draw(&capped, b, Some(RetryAfter::After(s(86_400)))), wait(b));
        // A cap below the value clamps it before the jitter: U(60 s, 90 s).
        let d = capped.delay(b, Some(RetryAfter::After(s(200))), &mut rng());
        assert!(matches!(d, RetryDelay::Wait { delay, .. } if (s(60)..s(90)).contains(&delay)), "{d:?}");
    }

    #[test]
    fn envoy_jitter_is_uniform_between_v_and_one_and_a_half_v() {
        // U(v, 1.5 v) for v = 10 s: mean 12.5 s, sd 0.5 v / sqrt(12) = 1.443 s. Within 5
        // standard errors of the mean (a false alarm below 1e-6), a quarter below 11.25 s
        // within 5 binomial standard errors.
        let envoy = policy(RetryAfterMode::Envoy { max_interval: ENVOY_MAX_INTERVAL }, None);
        let n = 200_000;
        let mut r = rng();
        let xs: Vec<f64> = (0..n)
            .map(|_| match envoy.delay(ms(1), Some(RetryAfter::After(s(10))), &mut r) {
                RetryDelay::Wait { delay, reset_backoff: false } => delay.as_secs_f64(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert!(xs.iter().all(|&x| (10.0..15.0).contains(&x)));
        let mean = xs.iter().sum::<f64>() / n as f64;
        let se = 5.0 / 12f64.sqrt() / (n as f64).sqrt();
        assert!((mean - 12.5).abs() < 5.0 * se, "mean {mean}");
        let below = xs.iter().filter(|&&x| x < 11.25).count() as f64 / n as f64;
        assert!((below - 0.25).abs() < 5.0 * (0.25f64 * 0.75 / n as f64).sqrt(), "below {below}");
    }

    #[test]
    fn aws_2026_clamps_the_header_to_five_seconds_past_the_backoff() {
        let aws = policy(RetryAfterMode::Aws2026, None);
        let t = ms(800);
        let at = |ra: Span| no_draw(&aws, t, Some(RetryAfter::After(ra)));
        assert_eq!(at(ms(100)), wait(t), "never sooner than the backoff");
        assert_eq!(at(ms(800)), wait(t));
        assert_eq!(at(s(3)), wait(s(3)), "inside [t, t + 5 s]: the header");
        assert_eq!(at(ms(5800)), wait(ms(5800)));
        assert_eq!(at(s(60)), wait(ms(5800)), "at most t + 5 s");
        assert_eq!(at(s(86_400)), wait(ms(5800)));
        // A cap applies to the header first: min(60 s, 2 s) = 2 s, inside [t, t + 5 s].
        let capped = policy(RetryAfterMode::Aws2026, Some(s(2)));
        assert_eq!(no_draw(&capped, t, Some(RetryAfter::After(s(60)))), wait(s(2)));
        // A cap below the backoff cannot bring the delay under it.
        let tight = policy(RetryAfterMode::Aws2026, Some(ms(100)));
        assert_eq!(no_draw(&tight, t, Some(RetryAfter::After(s(60)))), wait(t));
    }

    #[test]
    fn grpc_pushback_is_exact_and_resets_the_backoff() {
        let grpc = policy(RetryAfterMode::GrpcPushback, None);
        for (b, ra) in [(s(1), ms(250)), (ms(10), s(30)), (ms(10), Span::ZERO)] {
            assert_eq!(
                no_draw(&grpc, b, Some(RetryAfter::After(ra))),
                RetryDelay::Wait { delay: ra, reset_backoff: true }
            );
        }
        assert_eq!(no_draw(&grpc, s(1), Some(RetryAfter::DontRetry)), RetryDelay::DontRetry);
        assert_eq!(no_draw(&grpc, s(1), None), wait(s(1)), "no pushback: the backoff, no reset");
        let capped = policy(RetryAfterMode::GrpcPushback, Some(URLLIB3_RETRY_AFTER_MAX));
        assert_eq!(
            no_draw(&capped, s(1), Some(RetryAfter::After(s(86_400)))),
            RetryDelay::Wait { delay: s(21_600), reset_backoff: true }
        );
    }

    #[test]
    fn at_least_backoff_takes_the_longer() {
        let axios = policy(RetryAfterMode::AtLeastBackoff, None);
        assert_eq!(no_draw(&axios, ms(200), Some(RetryAfter::After(ms(50)))), wait(ms(200)));
        assert_eq!(no_draw(&axios, ms(200), Some(RetryAfter::After(s(3)))), wait(s(3)));
        assert_eq!(no_draw(&axios, ms(200), Some(RetryAfter::After(s(86_400)))), wait(s(86_400)));
        let capped = policy(RetryAfterMode::AtLeastBackoff, Some(URLLIB3_RETRY_AFTER_MAX));
        assert_eq!(no_draw(&capped, ms(200), Some(RetryAfter::After(s(86_400)))), wait(s(21_600)));
        // The cap bounds the header, not the backoff.
        let small = policy(RetryAfterMode::AtLeastBackoff, Some(ms(100)));
        assert_eq!(no_draw(&small, ms(200), Some(RetryAfter::After(s(86_400)))), wait(ms(200)));
    }
}
