//! The gate around every attempt: a client's controls (budgets, breakers, throttles), asked
//! before any attempt is sent and told of every answer.
//!
//! The client talks to its controls only through this type, at five moments:
//!
//! | moment | call | what the controls do there |
//! |---|---|---|
//! | an operation starts | [`Gate::op_started`] | a ratio budget deposits (Finagle: once per original request); Brooker's bucket deposits, his retry-ratio breaker counts a call |
//! | an attempt is about to be sent (the first included) | [`Gate::admit`] | the AWS adaptive limiter may delay it; a concurrency limit, a breaker, the SRE throttle or Envoy's admission control may fail it locally; the Envoy budget counts it active |
//! | an attempt failed and the retry decision asks | [`RetryPermission::permit_retry`] (through [`Gate::client`]) | an open breaker refuses, and so does a retry-ratio breaker over its threshold; a budget takes tokens or refuses |
//! | the client stopped waiting for an attempt (answer or timeout) | [`Gate::answered`] | breakers, throttles and the gRPC token count record it (a retry-ratio breaker counts failures only); the Envoy budget counts it ended; a concurrency limit takes its permit back and learns from it |
//! | an operation ended | [`Gate::op_ended`] | a token bucket refunds on success |
//!
//! Controls are scoped per client process or shared by all (DESIGN §4.2, [`Scope`]). A gate
//! without controls answers every question at once, and [`Gate::is_empty`] lets the model skip
//! it entirely. What counts as a failure, an acceptance or a throttling answer for each control
//! is decided here, once ([`is_failure`], [`is_accepted`], [`retry_cause`]).

use super::breaker::{Breaker, BreakerParams, RetryRatioBreaker, RetryRatioParams};
use super::budget::{
    BrookerBucket, BrookerBucketParams, ConcurrencyBudget, ConcurrencyBudgetParams, GrpcThrottle,
    GrpcThrottleParams, RatioBudget, RatioBudgetParams, RetryCause, TokenBucket, TokenBucketParams,
};
use super::limit::{LimitParams, Limiter, Release};
use super::throttle::{
    AwsAdaptive, EnvoyAdmission, EnvoyAdmissionParams, SreThrottle, SreThrottleParams, envoy_admission,
};
use super::{
    BackoffState, BreakerState, Decision, FailReason, FailedAttempt, Outcome, RetryPermission, RetryPolicy,
};
use crate::engine::rng::u01;
use crate::engine::{Instant, Span};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::rc::Rc;

/// The gate's answer before an attempt is sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admit {
    /// Send it now.
    Send,
    /// Send it after this wait (a client-side rate limiter); the wait is paid: ask again
    /// with `paid = true`.
    Wait(Span),
    /// Do not send it: the operation fails locally with this reason.
    Refuse(FailReason),
}

/// What the controls are told when the client stops waiting for an attempt.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Answered {
    pub now: Instant,
    /// 1-based attempt number within its operation.
    pub attempt: u32,
    pub outcome: Outcome,
    /// From the attempt being sent to now.
    pub latency: Span,
    /// Whether the strategy's `retry_on` retries this outcome (gRPC counts only those).
    pub retryable: bool,
    /// Calls in flight under the client's concurrency limit when this attempt was admitted,
    /// itself included ([`Gate::limit_inflight`]; 0 without a limit).
    pub inflight: u32,
}

/// One per client process, or one for all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    Client,
    Shared,
}

/// A retry budget's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BudgetParams {
    TokenBucket(TokenBucketParams),
    Grpc(GrpcThrottleParams),
    Ratio(RatioBudgetParams),
    Concurrency(ConcurrencyBudgetParams),
    Brooker(BrookerBucketParams),
}

/// A circuit breaker's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BreakerKind {
    /// resilience4j's (and Hystrix's) state machine.
    Resilience4j(BreakerParams),
    /// Brooker's retry-ratio breaker.
    RetryRatio(RetryRatioParams),
}

/// A client-side throttle's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ThrottleParams {
    Sre(SreThrottleParams),
    AwsAdaptive,
    EnvoyAdmission(EnvoyAdmissionParams),
}

/// A strategy's controls, as plain parameters.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GateParams {
    pub budget: Option<(BudgetParams, Scope)>,
    pub breaker: Option<(BreakerKind, Scope)>,
    pub throttle: Option<(ThrottleParams, Scope)>,
    /// An adaptive concurrency limit (Netflix concurrency-limits, DESIGN §4.9).
    pub limit: Option<(LimitParams, Scope)>,
}

/// A budget of each kind, per client or shared: one vector per kind, so that a million
/// per-client buckets cost what a bucket costs, not what the largest kind costs.
enum Budget {
    TokenBucket(Scoped<TokenBucket<Rc<TokenBucketParams>>>),
    Grpc(Scoped<GrpcThrottle>),
    Ratio(Scoped<RatioBudget>),
    Concurrency(Scoped<ConcurrencyBudget>),
    Brooker(Scoped<BrookerBucket<Rc<BrookerBucketParams>>>),
}

/// A breaker of each kind, per client or shared.
enum Breakers {
    Resilience4j(Scoped<Breaker<Rc<BreakerParams>>>),
    RetryRatio(Scoped<RetryRatioBreaker>),
}

enum Throttle {
    Sre(Scoped<SreThrottle>),
    AwsAdaptive(Scoped<AwsAdaptive>),
    EnvoyAdmission(Scoped<EnvoyAdmission>),
}

/// One control shared by all clients, or one per client.
enum Scoped<T> {
    Shared(T),
    PerClient(Vec<T>),
}

impl<T> Scoped<T> {
    fn new(scope: Scope, clients: u32, mut make: impl FnMut() -> T) -> Scoped<T> {
        match scope {
            Scope::Shared => Scoped::Shared(make()),
            Scope::Client => Scoped::PerClient((0..clients.max(1)).map(|_| make()).collect()),
        }
    }

    #[inline]
    fn get(&mut self, client: u32) -> &mut T {
        match self {
            Scoped::Shared(t) => t,
            Scoped::PerClient(all) => &mut all[client as usize],
        }
    }
}

/// One strategy's controls for every client of a run.
pub struct Gate {
    budget: Option<Budget>,
    breaker: Option<Breakers>,
    throttle: Option<Throttle>,
    limit: Option<Scoped<Limiter>>,
    /// The limits in force, summed over the limiters (kept as they change).
    limit_sum: u64,
    /// Calls in flight under the limit when the last attempt was admitted.
    admitted_inflight: u32,
    /// The SRE throttle's rejection draws and Vegas's probe jitter.
    rng: Xoshiro256PlusPlus,
}

impl Gate {
    /// A gate with no controls.
    pub fn none() -> Gate {
        Gate {
            budget: None,
            breaker: None,
            throttle: None,
            limit: None,
            limit_sum: 0,
            admitted_inflight: 0,
            rng: rand::SeedableRng::seed_from_u64(0),
        }
    }

    /// The controls of `params` for `clients` client processes; `rng` draws the throttle's
    /// rejections.
    pub fn new(params: &GateParams, clients: u32, mut rng: Xoshiro256PlusPlus) -> Gate {
        let start = Instant::ZERO;
        let budget = params.budget.map(|(b, scope)| match b {
            BudgetParams::TokenBucket(p) => {
                let shared = Rc::new(p);
                Budget::TokenBucket(Scoped::new(scope, clients, || TokenBucket::new(Rc::clone(&shared))))
            }
            BudgetParams::Grpc(p) => Budget::Grpc(Scoped::new(scope, clients, || GrpcThrottle::new(p))),
            BudgetParams::Ratio(p) => {
                Budget::Ratio(Scoped::new(scope, clients, || RatioBudget::new(p, start)))
            }
            BudgetParams::Concurrency(p) => {
                Budget::Concurrency(Scoped::new(scope, clients, || ConcurrencyBudget::new(p)))
            }
            BudgetParams::Brooker(p) => {
                let shared = Rc::new(p);
                Budget::Brooker(Scoped::new(scope, clients, || BrookerBucket::new(Rc::clone(&shared))))
            }
        });
        let breaker = params.breaker.map(|(kind, scope)| match kind {
            BreakerKind::Resilience4j(p) => {
                // Per-client breakers share one copy of the parameters.
                let shared = Rc::new(p);
                Breakers::Resilience4j(Scoped::new(scope, clients, || Breaker::new(Rc::clone(&shared))))
            }
            BreakerKind::RetryRatio(p) => {
                Breakers::RetryRatio(Scoped::new(scope, clients, || RetryRatioBreaker::new(p, start)))
            }
        });
        let throttle = params.throttle.map(|(t, scope)| match t {
            ThrottleParams::Sre(p) => Throttle::Sre(Scoped::new(scope, clients, || SreThrottle::new(p))),
            ThrottleParams::AwsAdaptive => {
                Throttle::AwsAdaptive(Scoped::new(scope, clients, || AwsAdaptive::new(start)))
            }
            ThrottleParams::EnvoyAdmission(p) => {
                Throttle::EnvoyAdmission(Scoped::new(scope, clients, || EnvoyAdmission::new(p)))
            }
        });
        let limit = params.limit.map(|(p, scope)| Scoped::new(scope, clients, || Limiter::new(p, &mut rng)));
        let limit_sum = match &limit {
            Some(Scoped::Shared(l)) => l.limit() as u64,
            Some(Scoped::PerClient(all)) => all.iter().map(|l| l.limit() as u64).sum(),
            None => 0,
        };
        Gate { budget, breaker, throttle, limit, limit_sum, admitted_inflight: 0, rng }
    }

    /// Whether there is no control at all (every call is then a no-op).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.budget.is_none() && self.breaker.is_none() && self.throttle.is_none() && self.limit.is_none()
    }

    /// Whether there is a concurrency limit.
    #[inline]
    pub fn has_limit(&self) -> bool {
        self.limit.is_some()
    }

    /// Calls in flight under the limit when the attempt [`Gate::admit`] just let through was
    /// admitted, itself included: the client keeps it for [`Answered::inflight`].
    #[inline]
    pub fn limit_inflight(&self) -> u32 {
        self.admitted_inflight
    }

    /// The concurrency limit in force: the shared limiter's, or the sum of the client
    /// processes' own (`None` without a limit).
    #[inline]
    pub fn limit_total(&self) -> Option<u64> {
        self.limit.as_ref().map(|_| self.limit_sum)
    }

    /// An operation of `client` starts.
    #[inline]
    pub fn op_started(&mut self, client: u32, now: Instant) {
        match &mut self.budget {
            Some(Budget::Ratio(r)) => r.get(client).deposit(now),
            Some(Budget::Brooker(b)) => b.get(client).on_call_started(),
            _ => {}
        }
        if let Some(Breakers::RetryRatio(b)) = &mut self.breaker {
            b.get(client).on_call_started(now);
        }
    }

    /// Attempt number `attempt` of an operation of `client` is about to be sent at `now`.
    /// `paid`: the adaptive limiter's wait for this attempt has already been served.
    #[inline]
    pub fn admit(&mut self, client: u32, now: Instant, attempt: u32, paid: bool) -> Admit {
        if !paid && let Some(Throttle::AwsAdaptive(a)) = &mut self.throttle {
            let wait = a.get(client).acquire(now);
            if !wait.is_zero() {
                return Admit::Wait(wait);
            }
        }
        // The concurrency limit is the outermost decorator: a call over it reaches no other
        // control (Netflix's limiter rejects before the call exists).
        if let Some(l) = &mut self.limit {
            match l.get(client).try_acquire() {
                Some(inflight) => self.admitted_inflight = inflight,
                None => return Admit::Refuse(FailReason::Limited),
            }
        }
        if let Some(reason) = self.refusal(client, now) {
            // The call never starts: its permit comes back without a sample (`onIgnore`).
            if let Some(l) = &mut self.limit {
                l.get(client).release(Release::Ignored, now, now, 0, &mut self.rng);
            }
            return Admit::Refuse(reason);
        }
        if let Some(Budget::Concurrency(c)) = &mut self.budget {
            c.get(client).attempt_started(attempt > 1);
        }
        Admit::Send
    }

    /// Whether the SRE throttle or an open breaker fails the attempt locally.
    #[inline]
    fn refusal(&mut self, client: u32, now: Instant) -> Option<FailReason> {
        // `admit` counts the request whatever it answers (a refused request still counts).
        let throttled = match &mut self.throttle {
            Some(Throttle::Sre(s)) => !s.get(client).admit(now, u01(&mut self.rng)),
            // A request Envoy's admission control rejects is not recorded.
            Some(Throttle::EnvoyAdmission(e)) => !e.get(client).admit(now, u01(&mut self.rng)),
            _ => false,
        };
        if throttled {
            return Some(FailReason::Throttled);
        }
        // A retry-ratio breaker never refuses an attempt here, only a retry.
        if let Some(Breakers::Resilience4j(b)) = &mut self.breaker
            && !b.get(client).try_acquire(now)
        {
            return Some(FailReason::Breaker);
        }
        None
    }

    /// The client stopped waiting for an attempt: it was answered, or it timed out.
    #[inline]
    pub fn answered(&mut self, client: u32, a: &Answered) {
        if let Some(l) = &mut self.limit {
            let l = l.get(client);
            let before = l.limit() as u64;
            let sent = a.now.saturating_sub(a.latency);
            l.release(Release::of(a.outcome), sent, a.now, a.inflight, &mut self.rng);
            self.limit_sum = self.limit_sum - before + l.limit() as u64;
        }
        match &mut self.breaker {
            Some(Breakers::Resilience4j(b)) => {
                b.get(client).on_result(a.now, is_failure(a.outcome), a.latency)
            }
            Some(Breakers::RetryRatio(b)) if is_failure(a.outcome) => b.get(client).on_failure(a.now),
            _ => {}
        }
        match &mut self.throttle {
            Some(Throttle::Sre(s)) if is_accepted(a.outcome) => s.get(client).on_accept(a.now),
            Some(Throttle::AwsAdaptive(ad)) => {
                ad.get(client).on_response(a.now, a.outcome == Outcome::Status(429))
            }
            Some(Throttle::EnvoyAdmission(e)) => {
                e.get(client).record(a.now, envoy_admission::is_success(a.outcome))
            }
            _ => {}
        }
        match &mut self.budget {
            // gRFC A6: successes add token_ratio; only retryable failures count.
            Some(Budget::Grpc(g)) if a.outcome == Outcome::Success => g.get(client).record_success(),
            Some(Budget::Grpc(g)) if a.retryable => g.get(client).record_failure(),
            Some(Budget::Concurrency(c)) => c.get(client).attempt_ended(a.attempt > 1),
            _ => {}
        }
    }

    /// An operation of `client` ended; `last_cost` is the cost class of its last retry's
    /// tokens ([`CostClass`]).
    #[inline]
    pub fn op_ended(&mut self, client: u32, success: bool, last_cost: CostClass) {
        if success && let Some(Budget::TokenBucket(t)) = &mut self.budget {
            let t = t.get(client);
            let cost = last_cost.cause().map(|c| t.params().cost(c));
            t.on_success(cost);
        }
    }

    /// A proxy hop's controls (a gateway layer's, a call-graph edge's: one gate, one client,
    /// the proxy) learn that it stopped waiting at `now` for its attempt `attempt`, sent at
    /// `sent`. Nothing for a hop without controls.
    #[inline]
    pub fn hop_answered(
        &mut self,
        policy: &RetryPolicy,
        attempt: u32,
        outcome: Outcome,
        sent: Instant,
        now: Instant,
    ) {
        if self.is_empty() {
            return;
        }
        let retryable = policy.retry_on.retries(outcome);
        let a = Answered { now, attempt, outcome, latency: now.since(sent), retryable, inflight: 0 };
        self.answered(0, &a);
    }

    /// A proxy hop's retry decision after `failed`, asking its controls when it has any.
    #[inline]
    pub fn hop_decision<R: rand::Rng + ?Sized>(
        &mut self,
        policy: &RetryPolicy,
        failed: &FailedAttempt,
        backoff: &mut BackoffState,
        last_cost: &mut CostClass,
        rng: &mut R,
    ) -> Decision {
        if self.is_empty() {
            policy.after_failure(failed, backoff, &mut (), rng)
        } else {
            policy.after_failure(failed, backoff, &mut self.client(0, last_cost), rng)
        }
    }

    /// The controls of one client, as the retry decision asks them; `last_cost` is where the
    /// operation remembers what its retry cost.
    #[inline]
    pub fn client<'g>(&'g mut self, client: u32, last_cost: &'g mut CostClass) -> ClientGate<'g> {
        ClientGate { gate: self, client, last_cost }
    }
}

/// The kind of tokens an operation's last retry took from a token bucket (stored in the
/// operation in one byte; the amount follows from the bucket's parameters).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CostClass(u8);

impl CostClass {
    pub const NONE: CostClass = CostClass(0);

    fn of(cause: RetryCause) -> CostClass {
        CostClass(match cause {
            RetryCause::Timeout => 1,
            RetryCause::Throttling => 2,
            RetryCause::Other => 3,
        })
    }

    fn cause(self) -> Option<RetryCause> {
        match self.0 {
            1 => Some(RetryCause::Timeout),
            2 => Some(RetryCause::Throttling),
            3 => Some(RetryCause::Other),
            _ => None,
        }
    }
}

/// The gate seen by one client's retry decision.
pub struct ClientGate<'g> {
    gate: &'g mut Gate,
    client: u32,
    last_cost: &'g mut CostClass,
}

impl RetryPermission for ClientGate<'_> {
    #[inline]
    fn permit_retry(&mut self, failed: &FailedAttempt) -> Result<(), FailReason> {
        let g = &mut *self.gate;
        // An open breaker fails the retry at once rather than after the backoff.
        let refused = match &mut g.breaker {
            Some(Breakers::Resilience4j(b)) => {
                matches!(b.get(self.client).state(), BreakerState::Open { until } if failed.now <= until)
            }
            // Brooker's breaker: after the failure was counted (`answered`), no retry over the
            // threshold.
            Some(Breakers::RetryRatio(b)) => !b.get(self.client).retry_allowed(failed.now),
            None => false,
        };
        if refused {
            return Err(FailReason::Breaker);
        }
        let Some(b) = &mut g.budget else { return Ok(()) };
        let allowed = match b {
            Budget::TokenBucket(t) => {
                let cause = retry_cause(failed.outcome);
                let took = t.get(self.client).try_acquire(cause).is_some();
                if took {
                    *self.last_cost = CostClass::of(cause);
                }
                took
            }
            Budget::Grpc(g) => g.get(self.client).retry_allowed(),
            Budget::Ratio(r) => r.get(self.client).try_withdraw(failed.now),
            Budget::Concurrency(c) => c.get(self.client).retry_allowed(),
            Budget::Brooker(b) => b.get(self.client).try_retry(),
        };
        if allowed { Ok(()) } else { Err(FailReason::Budget) }
    }
}

/// What a breaker records as a failed call: timeouts, connection errors, 5xx, 408 and 429. Other
/// 4xx answers mean the service is up and said no: not its failure.
pub fn is_failure(o: Outcome) -> bool {
    match o {
        Outcome::Success => false,
        Outcome::Status(s) => !(400..500).contains(&s) || s == 408 || s == 429,
        Outcome::Timeout | Outcome::ConnectionError => true,
    }
}

/// What the SRE throttle counts as accepted by the backend: everything but overload answers
/// (429, 503), timeouts and connection errors (Google SRE book ch. 21: the backend accepted the
/// request when it did not reject it for overload).
pub fn is_accepted(o: Outcome) -> bool {
    !matches!(o, Outcome::Status(429 | 503) | Outcome::Timeout | Outcome::ConnectionError)
}

/// The token bucket's cost class of a failure (docs/retry-policies.md §1b: timeouts cost more; throttling
/// errors cost less under AWS 2.1).
pub fn retry_cause(o: Outcome) -> RetryCause {
    match o {
        Outcome::Timeout => RetryCause::Timeout,
        Outcome::Status(429) => RetryCause::Throttling,
        _ => RetryCause::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::breaker::BreakerWindow;
    use rand::SeedableRng;

    fn t(ms: u64) -> Instant {
        Instant::from_ns(ms * 1_000_000)
    }

    fn failed(now: Instant, outcome: Outcome) -> FailedAttempt {
        FailedAttempt { outcome, attempt: 1, k: 1, started: Instant::ZERO, now, retry_after: None }
    }

    fn gate(p: GateParams, clients: u32) -> Gate {
        Gate::new(&p, clients, Xoshiro256PlusPlus::seed_from_u64(1))
    }

    #[test]
    fn no_controls_is_empty_and_admits_everything() {
        let mut g = Gate::none();
        assert!(g.is_empty());
        assert_eq!(g.admit(0, t(0), 1, false), Admit::Send);
        let mut c = CostClass::NONE;
        assert_eq!(g.client(0, &mut c).permit_retry(&failed(t(0), Outcome::Timeout)), Ok(()));
    }

    #[test]
    fn a_token_bucket_takes_its_cost_and_refunds_it_on_success() {
        let p = TokenBucketParams::AWS_STANDARD;
        let mut g = gate(
            GateParams { budget: Some((BudgetParams::TokenBucket(p), Scope::Shared)), ..Default::default() },
            3,
        );
        // 500 tokens, 10 per retry after a timeout: 50 retries, then refused.
        let mut granted = 0;
        for i in 0..60 {
            let mut c = CostClass::NONE;
            if g.client(i % 3, &mut c).permit_retry(&failed(t(0), Outcome::Timeout)).is_ok() {
                granted += 1;
                assert_eq!(c.cause(), Some(RetryCause::Timeout));
            }
        }
        assert_eq!(granted, 50);
        let mut c = CostClass::NONE;
        assert_eq!(
            g.client(0, &mut c).permit_retry(&failed(t(0), Outcome::Status(503))),
            Err(FailReason::Budget)
        );
        // A success after a timeout retry gives the 10 tokens back: one more retry of cost 5
        // or 10 fits.
        g.op_ended(1, true, CostClass::of(RetryCause::Timeout));
        assert!(g.client(2, &mut c).permit_retry(&failed(t(0), Outcome::Timeout)).is_ok());
    }

    #[test]
    fn per_client_budgets_are_separate() {
        let p = TokenBucketParams { capacity: 10.0, retry_cost: 10.0, ..TokenBucketParams::AWS_STANDARD };
        let mut g = gate(
            GateParams { budget: Some((BudgetParams::TokenBucket(p), Scope::Client)), ..Default::default() },
            2,
        );
        let mut c = CostClass::NONE;
        let f = failed(t(0), Outcome::Status(503));
        assert!(g.client(0, &mut c).permit_retry(&f).is_ok());
        assert!(g.client(0, &mut c).permit_retry(&f).is_err(), "client 0 spent its bucket");
        assert!(g.client(1, &mut c).permit_retry(&f).is_ok(), "client 1 still has its own");
    }

    #[test]
    fn an_open_breaker_refuses_attempts_and_retries() {
        let p = BreakerParams {
            window: BreakerWindow::Count(4),
            minimum_calls: 4,
            open_for: Span::from_secs(1),
            half_open_calls: 1,
            ..BreakerParams::default()
        };
        let mut g = gate(
            GateParams { breaker: Some((BreakerKind::Resilience4j(p), Scope::Shared)), ..Default::default() },
            1,
        );
        for i in 0..4 {
            assert_eq!(g.admit(0, t(i), 1, false), Admit::Send);
            let a = Answered {
                now: t(i),
                attempt: 1,
                outcome: Outcome::Timeout,
                latency: Span::ZERO,
                retryable: true,
                inflight: 0,
            };
            g.answered(0, &a);
        }
        assert_eq!(g.admit(0, t(10), 1, false), Admit::Refuse(FailReason::Breaker));
        let mut c = CostClass::NONE;
        assert_eq!(
            g.client(0, &mut c).permit_retry(&failed(t(10), Outcome::Timeout)),
            Err(FailReason::Breaker)
        );
        // After open_for: one probe passes, the next is refused while it is out.
        assert_eq!(g.admit(0, t(1_010), 1, false), Admit::Send);
        assert_eq!(g.admit(0, t(1_011), 1, false), Admit::Refuse(FailReason::Breaker));
    }

    /// Every attempt of one client times out; the operation's first attempt is admitted and
    /// answered, then the decision asks for a retry until refused. Returns (attempts sent,
    /// retries granted) for `ops` operations one after another.
    fn outage(g: &mut Gate, ops: u32) -> (u32, u32) {
        let (mut sent, mut retries) = (0, 0);
        for i in 0..ops {
            let now = t(i as u64);
            g.op_started(0, now);
            let mut attempt = 1;
            loop {
                assert_eq!(g.admit(0, now, attempt, false), Admit::Send, "op {i} attempt {attempt}");
                sent += 1;
                let a = Answered {
                    now,
                    attempt,
                    outcome: Outcome::Timeout,
                    latency: Span::ZERO,
                    retryable: true,
                    inflight: 0,
                };
                g.answered(0, &a);
                let mut c = CostClass::NONE;
                let f = FailedAttempt { attempt, ..failed(now, Outcome::Timeout) };
                match g.client(0, &mut c).permit_retry(&f) {
                    Ok(()) => {
                        retries += 1;
                        attempt += 1;
                    }
                    Err(reason) => {
                        assert!(matches!(reason, FailReason::Budget | FailReason::Breaker));
                        break;
                    }
                }
            }
            g.op_ended(0, false, CostClass::NONE);
        }
        (sent, retries)
    }

    #[test]
    fn a_brooker_bucket_deposits_per_operation_and_pays_retries() {
        let p = BudgetParams::Brooker(BrookerBucketParams::BROOKER_2022);
        let mut g = gate(GateParams { budget: Some((p, Scope::Client)), ..Default::default() }, 1);
        // 4 retries for the first operation, then one per 10 operations (2, 12, ..., 92).
        assert_eq!(outage(&mut g, 100), (100 + 4 + 10, 4 + 10));
    }

    #[test]
    fn a_retry_ratio_breaker_refuses_retries_never_first_attempts() {
        let p = BreakerKind::RetryRatio(RetryRatioParams::BROOKER_2022);
        let mut g = gate(GateParams { breaker: Some((p, Scope::Shared)), ..Default::default() }, 1);
        // Every first attempt is sent (`outage` asserts it) and fails: 1 failure per call, so
        // failures / calls = 1 > 0.1 and no retry is ever granted.
        assert_eq!(outage(&mut g, 50), (50, 0));
        // 540 clean operations bring the ratio down to 50 / 590; a failing operation then
        // gets retries until its own failures push the ratio over 0.1 again.
        for i in 0..540 {
            g.op_started(0, t(100 + i));
            let a = Answered {
                now: t(100 + i),
                attempt: 1,
                outcome: Outcome::Success,
                latency: Span::ZERO,
                retryable: false,
                inflight: 0,
            };
            g.answered(0, &a);
        }
        // 591 calls: retries while failures <= 59.1, i.e. failures 51..=59 allow 9 retries.
        assert_eq!(outage(&mut g, 1), (10, 9));
    }

    #[test]
    fn the_sre_throttle_rejects_when_the_backend_rejects() {
        let p = SreThrottleParams { k: 2.0, window: Span::from_secs(120) };
        let mut g = gate(
            GateParams { throttle: Some((ThrottleParams::Sre(p), Scope::Shared)), ..Default::default() },
            1,
        );
        let mut refused = 0;
        for i in 0..2000 {
            match g.admit(0, t(i), 1, false) {
                Admit::Send => {
                    let a = Answered {
                        now: t(i),
                        attempt: 1,
                        outcome: Outcome::Status(503),
                        latency: Span::ZERO,
                        retryable: true,
                        inflight: 0,
                    };
                    g.answered(0, &a);
                }
                Admit::Refuse(FailReason::Throttled) => refused += 1,
                other => panic!("{other:?}"),
            }
        }
        // Nothing is accepted, so p = requests / (requests + 1) -> 1: almost all refused.
        assert!(refused > 1900, "{refused}");
    }

    #[test]
    fn classifications() {
        assert!(
            is_failure(Outcome::Timeout)
                && is_failure(Outcome::Status(503))
                && is_failure(Outcome::Status(429))
        );
        assert!(
            !is_failure(Outcome::Success)
                && !is_failure(Outcome::Status(404))
                && !is_failure(Outcome::Status(409))
        );
        assert!(
            is_accepted(Outcome::Status(500))
                && !is_accepted(Outcome::Status(503))
                && !is_accepted(Outcome::Timeout)
        );
        assert_eq!(retry_cause(Outcome::Status(429)), RetryCause::Throttling);
        assert_eq!(retry_cause(Outcome::Timeout), RetryCause::Timeout);
        assert_eq!(retry_cause(Outcome::Status(503)), RetryCause::Other);
    }
}
