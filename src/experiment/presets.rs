//! Production presets (DESIGN §4.5): the retry behaviour of real clients, with their real
//! defaults, as the body of a `[[strategies]]` table. Every number comes from
//! `docs/retry-policies.md` and each line cites its section; what a preset cannot express
//! in the file's keys is listed in a `# not modelled:` comment instead of being approximated,
//! and the few settings the reference does not give are marked "not in the reference".
//!
//! Mapping notes (DESIGN §4.1 numbers retries from `k = 1`):
//! - botocore's `t_i = U(0,1) * min(2^(n-1), 20)` s, `n` the attempt that just failed, is
//!   `full-jitter` with base 1 s, cap 20 s (cap before jitter, §1b); legacy has no cap.
//! - gRPC's `min(initialBackoff * mult^(n-1), maxBackoff) * U(0.8, 1.2)` is
//!   `proportional-jitter` with `p = 0.2` (±20 % after the cap, §2).
//! - Envoy's source behaviour `U[0, min(2^(k-1) * 25 ms, 250 ms))` is `full-jitter` base 25 ms
//!   cap 250 ms (§3f).
//! - `max_attempts` counts the first attempt: urllib3's `total = 10` retries is 11, axios-retry's
//!   `retries = 3` and Polly's `MaxRetryAttempts = 3` are 4, Envoy's `num_retries = 1` is 2.
//! - HTTP statuses stand for the libraries' error classes: AWS throttling error codes and gRPC
//!   `RESOURCE_EXHAUSTED` are the simulator's 429, gRPC `UNAVAILABLE` its 503.

//!
//! The numbers that are also the defaults of the file's keys (a `token-bucket` budget is
//! botocore's, a `ratio` budget Finagle's, a breaker resilience4j's...) are not written here:
//! they are the policy layer's constants (`TokenBucketParams::AWS_STANDARD`,
//! `BreakerParams::RESILIENCE4J`, ...), rendered into the text, as the schema's defaults are.

use crate::engine::Span;
use crate::experiment::schema::{toml_duration, toml_float};
use crate::policy::breaker::RetryRatioParams;
use crate::policy::budget::{
    BrookerBucketParams, ConcurrencyBudgetParams, GrpcThrottleParams, RatioBudgetParams, TokenBucketParams,
};
use crate::policy::retry_after::{ENVOY_MAX_INTERVAL, URLLIB3_RETRY_AFTER_MAX};
use crate::policy::route::ENVOY_ROUTE_TIMEOUT;
use crate::policy::throttle::{AWS_CUBIC_BETA, AWS_CUBIC_C};
use crate::policy::{BreakerParams, BreakerWindow, SreThrottleParams};
use std::sync::LazyLock;

/// A named production policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Preset {
    /// The name a strategy's `preset` key refers to.
    pub name: &'static str,
    /// One line: what it models.
    pub summary: &'static str,
    /// The body of a `[[strategies]]` table (without `name` and `preset`), in the experiment
    /// file's keys, each line commented with its reference section.
    pub toml: String,
    /// Keys that only a proxy hop takes from it (a gateway layer, a call-graph edge: its
    /// router's), in the same form; empty for a client library.
    pub hop: String,
}

/// Every preset, in a stable order (as `retrysim presets` lists them).
pub static PRESETS: LazyLock<Vec<Preset>> = LazyLock::new(|| {
    vec![
        Preset {
            name: "aws-legacy",
            summary: "AWS SDK legacy retry mode (botocore): 5 attempts, U(0,1) * 2^(n-1) s uncapped, no quota",
            toml: [
                set("max_attempts = 5", "§1b legacy: max_attempts = 5 by default"),
                set(r#"retry_on = [429, 500, 503, 509, "timeout", "connection-error"]"#, "§1b legacy: general socket errors, HTTP 500/503/509, 429"),
                set("honor_retry_after = false", "§1b legacy: the delay is the formula alone"),
                set(r#"backoff = { kind = "full-jitter", base = "1s", multiplier = 2.0 }"#, r#"§1b legacy: base = "rand", growth_factor 2: U(0,1) * 2^(n-1) s, no cap"#),
                note("not modelled: HTTP 400 with a Throttling/ThrottlingException code, per-service extras (§1b); DynamoDB's 10 attempts, fixed 50 ms base (§1b)"),
                note(r#"no budget: legacy mode has no retry quota (§1b "no cap and no quota")"#),
            ]
            .concat(),
            hop: String::new(),
        },
        Preset {
            name: "aws-standard",
            summary: "AWS SDK standard mode v2.0 (botocore before 1.44; 1.44.8 follows aws-standard-2026): 3 attempts, full jitter 1 s..20 s, 500-token quota (5, 10 after a timeout, +1 per clean success)",
            toml: [
                set("max_attempts = 3", "§1a: standard defaults to 3 attempts in total"),
                set(r#"retry_on = [429, 500, 502, 503, 504, "timeout", "connection-error"]"#, "§1b v2.0: throttling codes, HTTP 500/502/503/504, connection errors, timeouts"),
                set("honor_retry_after = false", "§1b: v2.0 does not read Retry-After (x-amz-retry-after arrives with v2.1)"),
                set(r#"backoff = { kind = "full-jitter", base = "1s", cap = "20s", multiplier = 2.0 }"#, "§1b v2.0: U(0,1) * min(2^(n-1), 20) s, cap before jitter"),
                set(&format!("budget = {}", token_bucket(&TokenBucketParams::AWS_STANDARD)), "§1b RetryQuota: INITIAL_CAPACITY 500, 10 for timeouts else 5, NO_RETRY_INCREMENT 1, per client"),
            ]
            .concat(),
            hop: String::new(),
        },
        Preset {
            name: "aws-standard-2026",
            summary: "AWS SDK retry behaviour 2.1 (botocore 1.44.8's standard mode): full jitter from 50 ms, quota 500 with costs 14 / 5 (throttling), x-amz-retry-after in [t, t+5 s]",
            toml: [
                set("max_attempts = 3", "§1a v2.1: max attempts stays 3"),
                set(r#"retry_on = [429, 500, 502, 503, 504, "timeout", "connection-error"]"#, "§1b: the v2.0 retryable classes, unchanged"),
                set("honor_retry_after = true", "§1a/§1b v2.1: x-amz-retry-after (ms) is honoured"),
                set(r#"retry_after_mode = "aws-2026""#, "§1b v2.1: delay = max(t_i, min(ra, t_i + 5 s))"),
                set(r#"backoff = { kind = "full-jitter", base = "50ms", cap = "20s", multiplier = 2.0 }"#, "§1b v2.1: U(0,1) * min(0.05 * 2^(n-1), 20) s for transient errors, MAX_BACKOFF before jitter"),
                set(&format!("budget = {}", token_bucket(&TokenBucketParams::AWS_STANDARD_2026)), "§1a/§1b v2.1: 500 tokens, transient 14, throttling 5, timeouts not a separate class (§1c: 14)"),
                note("not modelled: throttling errors back off from 1000 ms, not 50 ms (§1b v2.1 scale 1.0); one base per strategy"),
                note("not modelled: DynamoDB's 4 attempts and 25 ms base (§1a); long-polling operations sleeping when the quota is empty (§1b)"),
            ]
            .concat(),
            hop: String::new(),
        },
        Preset {
            name: "aws-adaptive",
            summary: "AWS SDK adaptive mode v2.0 (botocore before 1.44; 1.44.8 follows aws-adaptive-2026): standard v2.0 plus the client-side CUBIC rate limiter, enabled by the first throttling answer",
            toml: [
                set("max_attempts = 3", "§1a: adaptive defaults to 3 attempts in total"),
                set(r#"retry_on = [429, 500, 502, 503, 504, "timeout", "connection-error"]"#, "§1b: standard mode's retryable classes"),
                set("honor_retry_after = false", "§1b: as standard v2.0"),
                set(r#"backoff = { kind = "full-jitter", base = "1s", cap = "20s", multiplier = 2.0 }"#, "§1b: standard mode's U(0,1) * min(2^(n-1), 20) s"),
                set(&format!("budget = {}", token_bucket(&TokenBucketParams::AWS_STANDARD)), "§1b: standard mode's RetryQuota"),
                set(r#"throttle = { kind = "aws-adaptive" }"#, &format!("§1b adaptive: RateClocker + CUBIC (C {AWS_CUBIC_C}, BETA {AWS_CUBIC_BETA}) token bucket, per client")),
            ]
            .concat(),
            hop: String::new(),
        },
        Preset {
            name: "aws-adaptive-2026",
            summary: "AWS SDK adaptive mode as botocore 1.44 does it: standard 2.1 (50 ms base, quota costs 14 / 5, x-amz-retry-after) plus the CUBIC rate limiter",
            toml: [
                set("max_attempts = 3", "§1a: adaptive defaults to 3 attempts in total"),
                set(r#"retry_on = [429, 500, 502, 503, 504, "timeout", "connection-error"]"#, "§1b: standard mode's retryable classes"),
                set("honor_retry_after = true", "§1b v2.1: x-amz-retry-after (ms) is honoured (botocore 1.44.8 standard.py)"),
                set(r#"retry_after_mode = "aws-2026""#, "§1b v2.1: delay = max(t_i, min(ra, t_i + 5 s))"),
                set(r#"backoff = { kind = "full-jitter", base = "50ms", cap = "20s", multiplier = 2.0 }"#, "§1b v2.1: U(0,1) * min(0.05 * 2^(n-1), 20) s for transient errors"),
                set(&format!("budget = {}", token_bucket(&TokenBucketParams::AWS_STANDARD_2026)), "§1b v2.1: RetryQuotaChecker _RETRY_COST 14, _THROTTLING_RETRY_COST 5 (botocore 1.44.8)"),
                set(r#"throttle = { kind = "aws-adaptive" }"#, &format!("§1b adaptive: RateClocker + CUBIC (C {AWS_CUBIC_C}, BETA {AWS_CUBIC_BETA}) token bucket, per client")),
                note("not modelled: throttling errors back off from 1000 ms, not 50 ms (§1b v2.1 scale 1.0); one base per strategy"),
            ]
            .concat(),
            hop: String::new(),
        },
        Preset {
            name: "grpc",
            summary: "gRPC retryPolicy (gRFC A6 example: 4 attempts, 0.1 s..1 s x2, ±20 % jitter) with retryThrottling 10 / 0.1 and pushback",
            toml: [
                set("max_attempts = 4", "§2: spec example maxAttempts 4 (values above 5 are treated as 5); no policy = no retries"),
                set(r#"retry_on = [503, "connection-error"]"#, r#"§2: retryableStatusCodes ["UNAVAILABLE"] (a 503 or a failed connection)"#),
                set("honor_retry_after = true", "§2: grpc-retry-pushback-ms is always read"),
                set(r#"retry_after_mode = "grpc-pushback""#, "§2: wait exactly the pushback, then reset the backoff; negative: do not retry"),
                set(r#"backoff = { kind = "proportional-jitter", base = "100ms", cap = "1s", multiplier = 2.0, p = 0.2 }"#, "§2: min(0.1 s * 2^(n-1), 1 s) * U(0.8, 1.2), current spec"),
                set(&format!("budget = {}", grpc_throttle(&GrpcThrottleParams::A6_EXAMPLE)), "§2: retryThrottling spec example 10 / 0.1 (off unless configured)"),
                note("not modelled: the old full-jitter backoff still in grpc-node and grpc-java without GRPC_EXPERIMENTAL_RETRY_JITTER (§2); hedging (§2)"),
                note("no deadline here: the call deadline covers all attempts (§2) but has no default"),
            ]
            .concat(),
            hop: String::new(),
        },
        Preset {
            name: "envoy",
            summary: "Envoy router retries: 1 retry, full jitter 25..250 ms, retry budget 20 % / 3, rate-limited back-off (Retry-After up to 300 s)",
            toml: [
                set("max_attempts = 2", "§3f: num_retries = 1 by default when a policy exists"),
                set("honor_retry_after = true", "§3f: rate_limited_retry_back_off (opt-in) reads Retry-After in seconds"),
                set(r#"retry_after_mode = "envoy""#, "§3f: U(v, 1.5 v); a value above max_interval is discarded for the back-off"),
                set(&format!("retry_after_cap = {}", toml_duration(ENVOY_MAX_INTERVAL, "s")), "§3f: max_interval default 300 s"),
                set(r#"backoff = { kind = "full-jitter", base = "25ms", cap = "250ms", multiplier = 2.0 }"#, "§3f: source behaviour U[0, min(2^(k-1) * 25 ms, 250 ms)), cap 10 x base"),
                set(&format!("budget = {}", concurrency(&ConcurrencyBudgetParams::ENVOY_DEFAULT)), "§3e: retry_budget defaults budget_percent 20 %, min_retry_concurrency 3"),
                note("not modelled: the retry_on conditions (Envoy has no default; the [client] list applies); as a client, the route timeout (a layer or an edge takes it, with honor_overloaded)"),
                note("not modelled: the docs' older back-off U[0, (2^k - 1) * 25 ms) (§3f); without retry_budget, the max_retries breaker = concurrency 0 % / 3 (§3e)"),
            ]
            .concat(),
            hop: [
                set(&format!("route_timeout = {}", toml_duration(ENVOY_ROUTE_TIMEOUT, "s")), "route_components.proto RouteAction.timeout: 15 s when unset, over all retries (§3f)"),
                set("honor_overloaded = true", "router: a local overflow 503 carries x-envoy-overloaded, never retried (RetryPolicyImpl::wouldRetryFromHeaders)"),
            ]
            .concat(),
        },
        Preset {
            name: "linkerd",
            summary: "Linkerd 2 proxy retries: budget 20 % of requests + 10/s over 10 s, 5xx, bounded by the 10 s route timeout",
            toml: [
                set("retry_on = [500, 502, 503, 504]", "§3b: retry.linkerd.io/http: 5xx on retryable routes"),
                set(r#"deadline = "10s""#, "§3b: the route timeout, default 10 s, bounds the retries"),
                set(r#"backoff = { kind = "none" }"#, "not in the reference: Linkerd 2 has no retry back-off setting; budgeted retries go at once"),
                set(&format!("budget = {}", ratio(&RatioBudgetParams::FINAGLE_DEFAULT)), "§3b: retryBudget retryRatio 0.2, minRetriesPerSecond 10, ttl 10s (tower Budget, a Finagle port)"),
                note("not modelled: unbounded attempts per request (§3b): max_attempts is left to [client]; request bodies over 64 KiB are not retried"),
            ]
            .concat(),
            hop: String::new(),
        },
        Preset {
            name: "finagle",
            summary: "Finagle RetryBudget(): 20 % of requests plus 10 retries/s over a 10 s window, exact integer arithmetic",
            toml: [
                set(r#"backoff = { kind = "none" }"#, "not in the reference: Finagle's default budgeted requeues are not delayed"),
                set(&format!("budget = {}", ratio(&RatioBudgetParams::FINAGLE_DEFAULT)), "§3a: RetryBudget() = (ttl 10 s, minRetriesPerSec 10, percentCanRetry 0.2)"),
                note("not modelled: the per-request cap ceil(maxRetriesPerReq x balance) (§3a); MethodBuilder's double deposit (finagle#956, §3a)"),
                note("not modelled: which failures Finagle requeues (not in the reference; the [client] retry_on applies) and max_attempts"),
            ]
            .concat(),
            hop: String::new(),
        },
        Preset {
            name: "polly-v8",
            summary: "Polly v8 RetryStrategyOptions defaults (3 retries, constant 2 s, no jitter) with the circuit breaker's defaults",
            toml: [
                set("max_attempts = 4", "§5: MaxRetryAttempts = 3, plus the original call"),
                set("honor_retry_after = false", "§5: the core retry reads no header (DelayGenerator = null)"),
                set(r#"backoff = { kind = "constant", base = "2s" }"#, "§5: BackoffType Constant, Delay 2 s, UseJitter false, MaxDelay null"),
                set(r#"breaker = { window = "30s", failure_rate = 0.1, minimum_calls = 100, open_for = "5s", scope = "client" }"#, "§5: FailureRatio 0.1, MinimumThroughput 100, SamplingDuration 30 s, BreakDuration 5 s"),
                note("not modelled: Microsoft.Extensions.Http.Resilience's exponential + jitter + Retry-After defaults (§5), a different preset"),
            ]
            .concat(),
            hop: String::new(),
        },
        Preset {
            name: "resilience4j",
            summary: "resilience4j Retry (3 attempts, constant 500 ms) and CircuitBreaker defaults (100 calls, 50 %, open 60 s, 10 probes)",
            toml: [
                set("max_attempts = 3", "§6 Retry: maxAttempts 3, the first call included"),
                set(r#"backoff = { kind = "constant", base = "500ms" }"#, "§6 Retry: waitDuration 500 ms, constant"),
                set(&format!("breaker = {}", breaker(&BreakerParams::RESILIENCE4J)), "§6 CircuitBreakerConfig: COUNT_BASED 100, 50 %, slow 100 % over 60 s, minimumNumberOfCalls 100, waitDurationInOpenState 60 s, 10 half-open calls"),
                note("not modelled: maxWaitDurationInHalfOpenState 0 = wait indefinitely (§6) is the breaker's own behaviour; the retry's exception filters"),
            ]
            .concat(),
            hop: String::new(),
        },
        Preset {
            name: "hystrix",
            summary: "Netflix Hystrix command: no retries, 1 s timeout, breaker over 10 s (20 requests, 50 %, sleep 5 s, 1 probe)",
            toml: [
                set("max_attempts = 1", "§6 Hystrix: a command does not retry (it fails or falls back)"),
                set(r#"timeout = "1s""#, "§6 Hystrix: execution.isolation.thread.timeoutInMilliseconds 1000"),
                set(r#"backoff = { kind = "none" }"#, "§6 Hystrix: no retries, so no back-off"),
                set(&format!("breaker = {}", breaker(&BreakerParams::HYSTRIX)), "§6 Hystrix: rolling 10 s (10 buckets), errorThresholdPercentage 50, requestVolumeThreshold 20, sleepWindow 5 s, a single trial"),
                note("not modelled: fallbacks; thread-pool rejections (counted as failures, §6)"),
            ]
            .concat(),
            hop: String::new(),
        },
        Preset {
            name: "urllib3",
            summary: "urllib3 Retry defaults: 10 retries, no back-off, Retry-After obeyed on 413/429/503 up to 6 h",
            toml: [
                set("max_attempts = 11", "§7: total = 10 retries, plus the first attempt"),
                set(r#"retry_on = [413, 429, 503, "timeout", "connection-error"]"#, "§7: RETRY_AFTER_STATUS_CODES {413, 429, 503} (status_forcelist None); connect and read errors"),
                set("honor_retry_after = true", "§7: respect_retry_after_header = True"),
                set(r#"retry_after_mode = "replace""#, "§7: sleep exactly the Retry-After, replacing the back-off"),
                set(&format!("retry_after_cap = {}", toml_duration(URLLIB3_RETRY_AFTER_MAX, "h")), "§7: retry_after_max = 21600 s"),
                set(r#"backoff = { kind = "none" }"#, "§7: backoff_factor = 0, so every retry is immediate"),
                note("backoff_factor f > 0: exponential, base f, cap backoff_max, immediate_first = true (+ backoff_jitter: additive-jitter), §7"),
                note("not modelled: 413/429/503 are retried only when the answer carries Retry-After (§7); allowed_methods (idempotent only)"),
                note("§7: checked against urllib3 2.8.0 by the conformance suite (docs/conformance.md)"),
            ]
            .concat(),
            hop: String::new(),
        },
        Preset {
            name: "axios-retry",
            summary: "axios-retry defaults: 3 retries, no delay unless Retry-After, network errors and 429/5xx, no timeout retries",
            toml: [
                set("max_attempts = 4", "§7: retries = 3, plus the first request"),
                set(r#"retry_on = [429, 500, 502, 503, 504, "connection-error"]"#, "§7: isNetworkOrIdempotentRequestError: network errors (not ECONNABORTED timeouts), 429 and 5xx"),
                set("honor_retry_after = true", "§7: noDelay returns the Retry-After"),
                set(r#"retry_after_mode = "at-least-backoff""#, "§7: max(delay, retryAfter), here max(0, retryAfter)"),
                set(r#"backoff = { kind = "none" }"#, "§7: retryDelay = noDelay"),
                note("not modelled: exponentialDelay (opt-in) = max(2^k * 100 ms, retryAfter) * U(1, 1.2), i.e. proportional-jitter base 220 ms, p = 1/11, no cap, with the jitter also on Retry-After (§7)"),
                note("§7: checked against axios-retry 4.5.0 (GET) by the conformance suite (docs/conformance.md); a POST is not retried by default"),
                note("not modelled: the shrinking request timeout without shouldResetTimeout (§7)"),
            ]
            .concat(),
            hop: String::new(),
        },
        Preset {
            name: "tenacity",
            summary: "tenacity Retrying() defaults: retry whatever the call raises, forever, without waiting",
            toml: [
                set(&format!("retry_on = [{}, \"timeout\", \"connection-error\"]", every_error_status()), "§7 tenacity: retry = retry_if_exception_type(), any exception; a call that raises on every 4xx and 5xx"),
                set("honor_retry_after = false", "§7 tenacity: no wait reads the answer"),
                set(r#"backoff = { kind = "none" }"#, "§7 tenacity: wait = wait_none()"),
                note("no max_attempts: stop = stop_never (§7); [client] max_attempts applies when set"),
                note("not modelled: which exceptions the wrapped call raises (the user's code decides what is retried, §7)"),
            ]
            .concat(),
            hop: String::new(),
        },
        Preset {
            name: "sre",
            summary: "Google SRE book: 3 attempts per request, retries under 10 % of requests, adaptive throttling K = 2 over 2 minutes",
            toml: [
                set("max_attempts = 3", "§4 (1): a per-request retry budget of up to 3 attempts"),
                set(r#"backoff = { kind = "full-jitter", base = "100ms", cap = "10s", multiplier = 2.0 }"#, "§4 ch. 22: randomized exponential back-off; 100 ms / 10 s not in the reference (this preset's choice)"),
                set(r#"budget = { kind = "ratio", ratio = 0.1, min_per_second = 0.0, ttl = "60s" }"#, "§4 (2): retry only while retries are < 10 % of requests; window not given, 60 s is Finagle's longest (§3a)"),
                set(&format!("throttle = {}", sre(&SreThrottleParams::SRE_BOOK)), "§4 ch. 21: P = max(0, (requests - K accepts) / (requests + 1)), K = 2, last 2 minutes"),
                note(r#"not modelled: the "overloaded; don't retry" answer and retrying only at the layer above the rejection (§4)"#),
            ]
            .concat(),
            hop: String::new(),
        },
        Preset {
            name: "brooker-token-bucket",
            summary: "Brooker 2022, \"Fixing retries with token buckets and circuit breakers\": per-client bucket of 5, +0.1 per call, a retry needs > 1 token, immediate retries, no attempt limit",
            toml: [
                set(r#"backoff = { kind = "none" }"#, "§11: run_sims retry_backoff = 0.0, a retry is sent at once"),
                set(&format!("budget = {}", brooker_bucket(&BrookerBucketParams::BROOKER_2022)), "§11: AdaptiveRetryFactory(0.1, 5): full at 5, +0.1 per call started, > 1.0 then -1.0, per client"),
                note("not modelled: upstream's unlimited attempts when [client] sets max_attempts (leave it out there, §11)"),
            ]
            .concat(),
            hop: String::new(),
        },
        Preset {
            name: "brooker-circuit-breaker",
            summary: "Brooker 2022, \"Fixing retries with token buckets and circuit breakers\": 3 retries, refused while failed attempts / calls > 10 % since the start, per client",
            toml: [
                set("max_attempts = 4", "§11: NRetriesFactory(3): 3 retries after the first attempt"),
                set(r#"backoff = { kind = "none" }"#, "§11: run_sims retry_backoff = 0.0, a retry is sent at once"),
                set(&format!("breaker = {}", retry_ratio(&RetryRatioParams::BROOKER_2022)), "§11: CircuitBreakerRetryFactory(..., 0.1): no retry when failures / calls > 0.1, cumulative, per client"),
            ]
            .concat(),
            hop: String::new(),
        },
    ]
});

/// One line of a preset: `setting`, then `# comment` at column 57 (or two spaces after a
/// longer setting).
fn set(setting: &str, comment: &str) -> String {
    format!("{setting:<55}  # {comment}\n")
}

/// Every HTTP error status a `retry_on` list can name (400 to 599), comma-separated.
fn every_error_status() -> String {
    (400..=599).map(|s: u16| s.to_string()).collect::<Vec<_>>().join(", ")
}

/// A line that is only a comment.
fn note(comment: &str) -> String {
    format!("# {comment}\n")
}

/// A `token-bucket` budget table, per client.
fn token_bucket(p: &TokenBucketParams) -> String {
    format!(
        "{{ kind = \"token-bucket\", capacity = {}, retry_cost = {}, timeout_cost = {}, throttling_cost = {}, \
         success_refund = {}, scope = \"client\" }}",
        toml_float(p.capacity),
        toml_float(p.retry_cost),
        toml_float(p.timeout_cost),
        toml_float(p.throttling_cost),
        toml_float(p.success_refund),
    )
}

/// A `grpc-throttle` budget table.
fn grpc_throttle(p: &GrpcThrottleParams) -> String {
    format!(
        "{{ kind = \"grpc-throttle\", max_tokens = {}, token_ratio = {} }}",
        toml_float(p.max_tokens),
        toml_float(p.token_ratio)
    )
}

/// A `ratio` budget table, its window in seconds.
fn ratio(p: &RatioBudgetParams) -> String {
    format!(
        "{{ kind = \"ratio\", ratio = {}, min_per_second = {}, ttl = {} }}",
        toml_float(p.ratio),
        toml_float(p.min_per_second),
        toml_duration(p.ttl, "s")
    )
}

/// A `concurrency` budget table.
fn concurrency(p: &ConcurrencyBudgetParams) -> String {
    format!(
        "{{ kind = \"concurrency\", percent = {}, min_concurrency = {} }}",
        toml_float(p.percent),
        p.min_concurrency
    )
}

/// A `brooker` budget table, per client.
fn brooker_bucket(p: &BrookerBucketParams) -> String {
    format!(
        "{{ kind = \"brooker\", capacity = {}, per_call = {}, retry_cost = {}, scope = \"client\" }}",
        toml_float(p.capacity),
        toml_float(p.per_call),
        toml_float(p.retry_cost)
    )
}

/// A `retry-ratio` breaker table, per client; no `window` when it counts since the start.
fn retry_ratio(p: &RetryRatioParams) -> String {
    let window = p.window.map(|w| format!("window = {}, ", toml_duration(w, "s"))).unwrap_or_default();
    format!(
        "{{ kind = \"retry-ratio\", threshold = {}, {window}scope = \"client\" }}",
        toml_float(p.threshold)
    )
}

/// A breaker table, per client, its durations in seconds. A breaker without a slow-call rule
/// (`slow_call_duration = Span::MAX`, Hystrix) leaves the slow-call keys out.
fn breaker(p: &BreakerParams) -> String {
    let window = match p.window {
        BreakerWindow::Count(calls) => calls.to_string(),
        BreakerWindow::Time(span) => toml_duration(span, "s"),
    };
    let slow = if p.slow_call_duration == Span::MAX {
        String::new()
    } else {
        format!(
            "slow_call_rate = {}, slow_call_duration = {}, ",
            toml_float(p.slow_call_rate),
            toml_duration(p.slow_call_duration, "s")
        )
    };
    format!(
        "{{ window = {window}, failure_rate = {}, {slow}minimum_calls = {}, open_for = {}, half_open_calls = {}, \
         scope = \"client\" }}",
        toml_float(p.failure_rate),
        p.minimum_calls,
        toml_duration(p.open_for, "s"),
        p.half_open_calls,
    )
}

/// An `sre` throttle table, its window in minutes.
fn sre(p: &SreThrottleParams) -> String {
    format!("{{ kind = \"sre\", k = {}, window = {} }}", toml_float(p.k), toml_duration(p.window, "m"))
}

/// The preset with this name.
pub fn find(name: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|p| p.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::{Duration, Overrides, load_str};
    use toml::{Table, Value};

    const NAMES: [&str; 18] = [
        "aws-legacy",
        "aws-standard",
        "aws-standard-2026",
        "aws-adaptive",
        "aws-adaptive-2026",
        "grpc",
        "envoy",
        "linkerd",
        "finagle",
        "polly-v8",
        "resilience4j",
        "hystrix",
        "urllib3",
        "axios-retry",
        "tenacity",
        "sre",
        "brooker-token-bucket",
        "brooker-circuit-breaker",
    ];

    fn table(p: &Preset) -> Table {
        toml::from_str::<Table>(&p.toml).unwrap_or_else(|e| panic!("preset {}: {e}", p.name))
    }

    #[test]
    fn every_preset_is_named_summarised_and_sourced() {
        let names: Vec<&str> = PRESETS.iter().map(|p| p.name).collect();
        assert_eq!(names, NAMES);
        for p in PRESETS.iter() {
            assert!(!p.summary.is_empty() && !p.summary.contains('\n'), "{}: one-line summary", p.name);
            assert_eq!(find(p.name), Some(p));
            assert!(table(p).contains_key("backoff"), "{}: a strategy needs a backoff", p.name);
            // Every setting says where it comes from.
            for line in p.toml.lines().filter(|l| !l.trim().is_empty()) {
                let comment = line.split_once('#').map(|(_, c)| c);
                assert!(comment.is_some(), "{}: uncommented line {line:?}", p.name);
                let c = comment.unwrap();
                assert!(
                    c.contains('§') || c.contains("not in the reference") || c.contains("not modelled"),
                    "{}: line without a reference section: {line:?}",
                    p.name
                );
            }
        }
        assert_eq!(find("aws"), None);
    }

    /// Keys, types and ranges: each preset resolves through the loader, which refuses what the
    /// schema does not allow.
    #[test]
    fn every_preset_resolves_through_the_loader() {
        for p in PRESETS.iter() {
            let text = format!(
                "name = \"p\"\n[workload]\nkind = \"open\"\nrate = 10.0\nduration = \"10s\"\n[server]\nconcurrency = 2\nservice_time = {{ dist = \"constant\", value = \"1ms\" }}\n[client]\ntimeout = \"1s\"\nmax_attempts = 3\n[[strategies]]\nname = \"x\"\npreset = \"{}\"\n",
                p.name
            );
            let exp = load_str(&text, "preset.toml", &Overrides::default())
                .unwrap_or_else(|e| panic!("preset {}: {e}", p.name));
            assert_eq!(exp.points[0].strategies[0].preset.as_deref(), Some(p.name));
        }
    }

    #[test]
    fn lines_align_their_comments() {
        assert_eq!(set("max_attempts = 3", "§1a"), format!("max_attempts = 3{}# §1a\n", " ".repeat(41)));
        let long = "x".repeat(60);
        assert_eq!(set(&long, "§2"), format!("{long}  # §2\n"));
        assert_eq!(note("not modelled: hedging"), "# not modelled: hedging\n");
    }

    // ----- spot checks against the reference -----

    fn get<'a>(t: &'a Table, path: &str) -> &'a Value {
        let mut v: Option<&Value> = None;
        let mut cur = t;
        for part in path.split('.') {
            let next = cur.get(part).unwrap_or_else(|| panic!("no {path}"));
            if let Some(sub) = next.as_table() {
                cur = sub;
            }
            v = Some(next);
        }
        v.unwrap()
    }

    fn f(t: &Table, path: &str) -> f64 {
        let v = get(t, path);
        v.as_float()
            .or(v.as_integer().map(|i| i as f64))
            .unwrap_or_else(|| panic!("{path} = {v} is not a number"))
    }

    fn i(t: &Table, path: &str) -> i64 {
        get(t, path).as_integer().unwrap_or_else(|| panic!("{path} is not an integer"))
    }

    fn d(t: &Table, path: &str) -> Span {
        Duration::parse(get(t, path).as_str().unwrap()).unwrap().span()
    }

    fn st<'a>(t: &'a Table, path: &str) -> &'a str {
        get(t, path).as_str().unwrap()
    }

    fn preset(name: &str) -> Table {
        table(find(name).unwrap())
    }

    fn token_bucket(t: &Table) -> TokenBucketParams {
        TokenBucketParams {
            capacity: f(t, "budget.capacity"),
            retry_cost: f(t, "budget.retry_cost"),
            timeout_cost: f(t, "budget.timeout_cost"),
            throttling_cost: f(t, "budget.throttling_cost"),
            success_refund: f(t, "budget.success_refund"),
        }
    }

    fn ms(v: u64) -> Span {
        Span::from_millis(v)
    }

    #[test]
    fn aws_presets_match_the_reference() {
        let legacy = preset("aws-legacy");
        assert_eq!(i(&legacy, "max_attempts"), 5);
        assert_eq!(st(&legacy, "backoff.kind"), "full-jitter");
        assert_eq!(d(&legacy, "backoff.base"), ms(1000));
        assert!(legacy["backoff"].get("cap").is_none() && !legacy.contains_key("budget"), "no cap, no quota");

        for name in ["aws-standard", "aws-adaptive"] {
            let t = preset(name);
            assert_eq!(i(&t, "max_attempts"), 3);
            assert_eq!((d(&t, "backoff.base"), d(&t, "backoff.cap")), (ms(1000), ms(20_000)));
            assert_eq!(st(&t, "budget.kind"), "token-bucket");
            let tb = token_bucket(&t);
            assert_eq!(tb, TokenBucketParams::AWS_STANDARD);
            assert_eq!(
                (tb.capacity, tb.retry_cost, tb.timeout_cost, tb.success_refund),
                (500.0, 5.0, 10.0, 1.0)
            );
            assert_eq!(st(&t, "budget.scope"), "client");
        }
        assert_eq!(st(&preset("aws-adaptive"), "throttle.kind"), "aws-adaptive");

        // botocore 1.44.8's adaptive mode: standard 2.1 plus the rate limiter.
        let a21 = preset("aws-adaptive-2026");
        assert_eq!(i(&a21, "max_attempts"), 3);
        assert_eq!((d(&a21, "backoff.base"), d(&a21, "backoff.cap")), (ms(50), ms(20_000)));
        assert_eq!(token_bucket(&a21), TokenBucketParams::AWS_STANDARD_2026);
        assert_eq!((st(&a21, "retry_after_mode"), st(&a21, "throttle.kind")), ("aws-2026", "aws-adaptive"));

        let v21 = preset("aws-standard-2026");
        assert_eq!(i(&v21, "max_attempts"), 3);
        assert_eq!((d(&v21, "backoff.base"), d(&v21, "backoff.cap")), (ms(50), ms(20_000)));
        let tb = token_bucket(&v21);
        assert_eq!(tb, TokenBucketParams::AWS_STANDARD_2026);
        assert_eq!(
            (tb.capacity, tb.retry_cost, tb.timeout_cost, tb.throttling_cost),
            (500.0, 14.0, 14.0, 5.0)
        );
        assert_eq!(st(&v21, "retry_after_mode"), "aws-2026");
        assert_eq!(get(&v21, "honor_retry_after").as_bool(), Some(true));
    }

    #[test]
    fn grpc_envoy_linkerd_finagle_match_the_reference() {
        let g = preset("grpc");
        assert_eq!(i(&g, "max_attempts"), 4);
        assert_eq!(st(&g, "backoff.kind"), "proportional-jitter");
        assert_eq!((d(&g, "backoff.base"), d(&g, "backoff.cap")), (ms(100), ms(1000)));
        assert_eq!((f(&g, "backoff.multiplier"), f(&g, "backoff.p")), (2.0, 0.2));
        let throttle = GrpcThrottleParams {
            max_tokens: f(&g, "budget.max_tokens"),
            token_ratio: f(&g, "budget.token_ratio"),
        };
        assert_eq!(throttle, GrpcThrottleParams::A6_EXAMPLE);
        assert_eq!(st(&g, "retry_after_mode"), "grpc-pushback");

        let e = preset("envoy");
        assert_eq!(i(&e, "max_attempts"), 2);
        assert_eq!(st(&e, "backoff.kind"), "full-jitter");
        assert_eq!((d(&e, "backoff.base"), d(&e, "backoff.cap")), (ms(25), ms(250)));
        let c = ConcurrencyBudgetParams {
            percent: f(&e, "budget.percent"),
            min_concurrency: i(&e, "budget.min_concurrency") as u32,
        };
        assert_eq!(c, ConcurrencyBudgetParams::ENVOY_DEFAULT);
        assert_eq!((c.percent, c.min_concurrency), (20.0, 3));
        assert_eq!(st(&e, "retry_after_mode"), "envoy");
        assert_eq!(d(&e, "retry_after_cap"), ENVOY_MAX_INTERVAL);

        for name in ["linkerd", "finagle"] {
            let t = preset(name);
            let r = RatioBudgetParams {
                ratio: f(&t, "budget.ratio"),
                min_per_second: f(&t, "budget.min_per_second"),
                ttl: d(&t, "budget.ttl"),
            };
            assert_eq!(r, RatioBudgetParams::FINAGLE_DEFAULT, "{name}");
            assert_eq!((r.ratio, r.min_per_second, r.ttl), (0.2, 10.0, ms(10_000)));
        }
        assert_eq!(d(&preset("linkerd"), "deadline"), ms(10_000));
    }

    #[test]
    fn library_presets_match_the_reference() {
        let polly = preset("polly-v8");
        assert_eq!(i(&polly, "max_attempts"), 4);
        assert_eq!((st(&polly, "backoff.kind"), d(&polly, "backoff.base")), ("constant", ms(2000)));
        assert_eq!(d(&polly, "breaker.window"), ms(30_000));
        assert_eq!((f(&polly, "breaker.failure_rate"), i(&polly, "breaker.minimum_calls")), (0.1, 100));
        assert_eq!(d(&polly, "breaker.open_for"), ms(5000));

        let r4j = preset("resilience4j");
        assert_eq!(i(&r4j, "max_attempts"), 3);
        assert_eq!((st(&r4j, "backoff.kind"), d(&r4j, "backoff.base")), ("constant", ms(500)));
        assert_eq!(i(&r4j, "breaker.window"), 100);
        assert_eq!((f(&r4j, "breaker.failure_rate"), f(&r4j, "breaker.slow_call_rate")), (0.5, 1.0));
        assert_eq!(d(&r4j, "breaker.slow_call_duration"), ms(60_000));
        assert_eq!((i(&r4j, "breaker.minimum_calls"), i(&r4j, "breaker.half_open_calls")), (100, 10));
        assert_eq!(d(&r4j, "breaker.open_for"), ms(60_000));

        let h = preset("hystrix");
        assert_eq!((i(&h, "max_attempts"), d(&h, "timeout")), (1, ms(1000)));
        assert_eq!(d(&h, "breaker.window"), ms(10_000));
        assert_eq!((f(&h, "breaker.failure_rate"), i(&h, "breaker.minimum_calls")), (0.5, 20));
        assert_eq!((d(&h, "breaker.open_for"), i(&h, "breaker.half_open_calls")), (ms(5000), 1));

        let u = preset("urllib3");
        assert_eq!(i(&u, "max_attempts"), 11);
        assert_eq!(st(&u, "backoff.kind"), "none");
        assert_eq!(d(&u, "retry_after_cap"), URLLIB3_RETRY_AFTER_MAX);
        assert_eq!(d(&u, "retry_after_cap"), Span::from_secs(21_600));
        assert_eq!(st(&u, "retry_after_mode"), "replace");

        let a = preset("axios-retry");
        assert_eq!(i(&a, "max_attempts"), 4);
        assert_eq!(st(&a, "backoff.kind"), "none");
        let on = get(&a, "retry_on").as_array().unwrap();
        assert!(!on.contains(&Value::String("timeout".into())), "axios does not retry ECONNABORTED timeouts");

        // tenacity's Retrying(): wait_none, stop_never, any exception.
        let t = preset("tenacity");
        assert_eq!(st(&t, "backoff.kind"), "none");
        assert!(!t.contains_key("max_attempts"), "stop_never");
        let on = get(&t, "retry_on").as_array().unwrap();
        assert_eq!(on.len(), 200 + 2, "every 4xx and 5xx, timeouts and connection errors");
        assert_eq!(get(&t, "honor_retry_after").as_bool(), Some(false));

        let sre = preset("sre");
        assert_eq!(i(&sre, "max_attempts"), 3);
        assert_eq!((st(&sre, "throttle.kind"), f(&sre, "throttle.k")), ("sre", 2.0));
        assert_eq!(d(&sre, "throttle.window"), ms(120_000));
        assert_eq!(f(&sre, "budget.ratio"), 0.1);
    }

    #[test]
    fn brooker_presets_match_the_upstream_simulator() {
        let b = preset("brooker-token-bucket");
        assert_eq!((st(&b, "backoff.kind"), st(&b, "budget.kind")), ("none", "brooker"));
        let bucket = BrookerBucketParams {
            capacity: f(&b, "budget.capacity"),
            per_call: f(&b, "budget.per_call"),
            retry_cost: f(&b, "budget.retry_cost"),
        };
        assert_eq!(bucket, BrookerBucketParams::BROOKER_2022);
        assert_eq!((bucket.capacity, bucket.per_call, bucket.retry_cost), (5.0, 0.1, 1.0));
        assert_eq!(st(&b, "budget.scope"), "client");
        assert!(!b.contains_key("max_attempts"), "upstream's bucket has no attempt limit");

        let c = preset("brooker-circuit-breaker");
        assert_eq!((i(&c, "max_attempts"), st(&c, "backoff.kind")), (4, "none"));
        assert_eq!((st(&c, "breaker.kind"), f(&c, "breaker.threshold")), ("retry-ratio", 0.1));
        assert!(c["breaker"].get("window").is_none(), "cumulative since the start");
        assert_eq!(RetryRatioParams::BROOKER_2022, RetryRatioParams { threshold: 0.1, window: None });
        assert_eq!(st(&c, "breaker.scope"), "client");
    }
}
