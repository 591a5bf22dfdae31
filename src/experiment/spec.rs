//! The experiment file's data model: one Rust type per table of DESIGN §7.
//!
//! These types hold a file once [`super::schema`] has checked it and filled in every default:
//! serde only maps the finished tree onto them, so they carry no defaults of their own.
//! `deny_unknown_fields` everywhere makes a test (`schema::tests`) fail if the schema and
//! these types ever disagree. Cross-field rules (`cap >= base`, ...) live in
//! `super::validate`.

use super::duration::Duration;
use serde::Deserialize;

/// One experiment, at one sweep point, with `--set` applied and the strategies resolved.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExperimentSpec {
    /// Names the output folder `results/<name>/`.
    pub name: String,
    /// Master seed: every run's streams derive from (seed, run).
    pub seed: u64,
    /// Replications per (point, strategy).
    pub runs: u32,
    /// Simulated time at which a run stops; operations still pending then fail as `unfinished`.
    pub horizon: Duration,
    pub workload: WorkloadSpec,
    pub network: NetworkSpec,
    pub server: ServerSpec,
    /// `[[services]]`: the call graph, the first service the entry (empty without one; with
    /// one, `server` is the first service's server, filled in by the loader).
    pub services: Vec<ServiceSpec>,
    pub output: OutputSpec,
    /// The strategies, each merged over `[client]` and its preset (see `super::load`).
    #[serde(skip)]
    pub strategies: Vec<Strategy>,
}

/// `[output]`: how results are written.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputSpec {
    /// The width of `timeseries.csv`'s buckets.
    pub bucket: Duration,
    /// Whether to write `timeseries.csv`.
    pub timeseries: bool,
    /// The windows measured on their own, `[start, end]` by name (in name order).
    pub windows: std::collections::BTreeMap<String, [Duration; 2]>,
    /// The verdict's reference point: swept key -> one of its values (checked against the
    /// sweep by the loader).
    pub reference: toml::Table,
}

/// Who calls the server and when (DESIGN §3.1).
#[derive(Clone, Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum WorkloadSpec {
    /// `clients` clients each run `ops_per_client` operations back to back.
    Closed {
        clients: u32,
        ops_per_client: u32,
        think_time: Duration,
        ramp: Duration,
        #[serde(default)]
        priorities: Option<PrioritiesSpec>,
    },
    /// `clients` clients, each starting its next call at max(end of its previous call, that
    /// call's start + a draw of `gap`), until `duration`.
    Serial {
        clients: u32,
        gap: DistSpec,
        duration: Duration,
        #[serde(default)]
        first_call: Option<DistSpec>,
        #[serde(default)]
        priorities: Option<PrioritiesSpec>,
    },
    /// Arrivals at `rate` per second for `duration`.
    Open {
        rate: f64,
        duration: Duration,
        schedule: Vec<RateStep>,
        clients: u32,
        #[serde(default)]
        arrivals: ArrivalsSpec,
        /// `arrivals = "per-client"` only: each client's first call, at a draw of this.
        #[serde(default)]
        first_call: Option<DistSpec>,
        /// How a Poisson stream follows the schedule's rate changes.
        #[serde(default)]
        rate_changes: RateChangesSpec,
        #[serde(default)]
        priorities: Option<PrioritiesSpec>,
    },
    /// Messages arrive in a queue at `rate` for `duration`; the server's workers are the
    /// consumers that take them, each message waited for `visibility_timeout` from when a
    /// consumer takes it (SQS).
    Queue {
        rate: f64,
        duration: Duration,
        #[serde(default)]
        arrivals: ArrivalsSpec,
        visibility_timeout: Duration,
        /// Receives before a message goes to the dead-letter queue; absent: no limit.
        max_receive_count: Option<u32>,
        /// Probability that a consumer's acknowledgement (delete) is lost.
        ack_loss: f64,
    },
}

/// `[workload] priorities`: the share of operations in each criticality class of the Google
/// SRE book (DESIGN §3.3), most critical first; absent classes have share 0.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PrioritiesSpec {
    pub critical_plus: f64,
    pub critical: f64,
    pub sheddable_plus: f64,
    pub sheddable: f64,
}

/// The classes' names, most critical first: the order of [`PrioritiesSpec::shares`], of the
/// model's class numbers, and of the `METRIC@CLASS` columns.
pub const PRIORITY_CLASSES: [&str; 4] = ["critical_plus", "critical", "sheddable_plus", "sheddable"];

impl PrioritiesSpec {
    /// The shares, in [`PRIORITY_CLASSES`] order.
    pub fn shares(&self) -> [f64; 4] {
        [self.critical_plus, self.critical, self.sheddable_plus, self.sheddable]
    }
}

impl WorkloadSpec {
    /// `priorities`, if the workload has classes.
    pub fn priorities(&self) -> Option<&PrioritiesSpec> {
        match self {
            WorkloadSpec::Closed { priorities, .. }
            | WorkloadSpec::Serial { priorities, .. }
            | WorkloadSpec::Open { priorities, .. } => priorities.as_ref(),
            WorkloadSpec::Queue { .. } => None,
        }
    }

    /// The rate, duration and rate steps of a workload whose operations arrive at a rate
    /// (`open`, and `queue` with a constant rate).
    pub fn rates(&self) -> Option<(f64, Duration, &[RateStep])> {
        match self {
            WorkloadSpec::Open { rate, duration, schedule, .. } => Some((*rate, *duration, schedule)),
            WorkloadSpec::Queue { rate, duration, .. } => Some((*rate, *duration, &[])),
            WorkloadSpec::Closed { .. } | WorkloadSpec::Serial { .. } => None,
        }
    }

    /// How long operations arrive (`open`, `serial`, `queue`); `None` for a closed workload.
    pub fn duration(&self) -> Option<Duration> {
        match self {
            WorkloadSpec::Open { duration, .. }
            | WorkloadSpec::Serial { duration, .. }
            | WorkloadSpec::Queue { duration, .. } => Some(*duration),
            WorkloadSpec::Closed { .. } => None,
        }
    }
}

/// How an open workload's operations arrive (`[workload] arrivals`).
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum ArrivalsSpec {
    /// One Poisson stream for the fleet, each arrival given to a client drawn at random.
    #[default]
    Poisson,
    /// Each client its own Poisson stream at `rate / clients`.
    PerClient,
    /// One arrival every `1 / rate`.
    Fixed,
}

/// How a Poisson stream follows the schedule's rate changes (`[workload] rate_changes`).
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum RateChangesSpec {
    /// A gap that crosses a change is redrawn from it: a Poisson process of the schedule.
    #[default]
    Exact,
    /// Each gap is drawn at the rate in force at the arrival that starts it, as a load
    /// generator that sleeps a random gap after each call (Brooker's simple_collapse_sim).
    AtNextArrival,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateStep {
    pub at: Duration,
    pub rate: f64,
}

/// A distribution of durations (network hops, service times), DESIGN §3.2.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(tag = "dist", rename_all = "kebab-case", deny_unknown_fields)]
pub enum DistSpec {
    Constant {
        value: Duration,
    },
    Uniform {
        low: Duration,
        high: Duration,
    },
    /// `|N(mean, sd)|`: the absolute value, as in the AWS study's simulator.
    Normal {
        mean: Duration,
        sd: Duration,
    },
    Exponential {
        mean: Duration,
    },
    Lognormal {
        median: Duration,
        sigma: f64,
    },
    /// `value` of one of `points`, each with probability `weight` (the weights sum to 1): a
    /// bimodal service time such as Brooker's 0.1 ms with 0.1 % at 10 ms.
    Discrete {
        points: Vec<DiscretePoint>,
    },
}

/// One value of a `discrete` distribution and its probability.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DiscretePoint {
    pub value: Duration,
    pub weight: f64,
}

/// `E[X^k]` in seconds^k of a `discrete` distribution's points.
pub fn discrete_moment(points: &[DiscretePoint], k: i32) -> f64 {
    points.iter().map(|p| p.weight * p.value.as_secs_f64().powi(k)).sum()
}

impl Default for DistSpec {
    fn default() -> Self {
        DistSpec::Constant { value: Duration::ZERO }
    }
}

/// `[network]`: one-way delay per hop and loss probabilities.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkSpec {
    pub latency: DistSpec,
    pub request_loss: f64,
    pub response_loss: f64,
}

/// `[server]` (DESIGN §3.3).
#[derive(Clone, Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
#[allow(clippy::large_enum_variant, reason = "one per sweep point, never in a collection of many")]
pub enum ServerSpec {
    Queue(QueueServerSpec),
    Occ {},
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueServerSpec {
    pub concurrency: u32,
    pub service_time: DistSpec,
    /// Waiting room; `None` = unbounded, 0 = none.
    pub queue: Option<u32>,
    pub reject_status: u16,
    /// Full-queue rejections say "overloaded; don't retry" (Google SRE book).
    pub reject_dont_retry: bool,
    pub errors: Vec<ErrorSpec>,
    pub drop_expired: bool,
    pub faults: Vec<FaultSpec>,
    pub rate_limit: Option<RateLimitSpec>,
    pub idempotency: Option<IdempotencySpec>,
    pub overload: Option<OverloadSpec>,
    /// The order free workers take waiting requests in, and what is shed.
    pub discipline: DisciplineSpec,
    /// CoDel's constants (used by `codel`, `codel-rpc` and `adaptive-lifo`).
    pub codel: CodelSpec,
    /// Copies of the server behind a load balancer (DESIGN §3.3).
    pub replicas: u32,
    pub balancer: BalancerSpec,
    /// `least-request`: replicas drawn per pick.
    pub choice_count: u32,
    pub ewma: EwmaSpec,
    pub minimum_ring_size: u32,
    /// Percent of healthy replicas below which the balancer ignores health.
    pub panic_threshold: f64,
    pub outlier: Option<OutlierSpec>,
    /// Envoy's slow start for a replica that (re)joins (round robin and least request).
    pub slow_start: Option<SlowStartSpec>,
    /// Rolling deploys (`[[server.deploys]]`, DESIGN §3.4).
    pub deploys: Vec<DeploySpec>,
    /// Envoy's adaptive concurrency filter in front of the workers (DESIGN §3.3).
    pub adaptive_concurrency: Option<AdaptiveConcurrencySpec>,
    /// An autoscaler that sets the replicas from their utilisation (DESIGN §3.3).
    pub autoscale: Option<AutoscaleSpec>,
}

impl QueueServerSpec {
    /// The autoscaler's most replicas, with `autoscale`.
    pub fn autoscale_max(&self) -> Option<u32> {
        self.autoscale.as_ref().map(AutoscaleSpec::max)
    }
}

/// `[server] autoscale`: the autoscaler, by `kind`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum AutoscaleSpec {
    /// The Kubernetes Horizontal Pod Autoscaler on the replicas' utilisation.
    Hpa(HpaSpec),
    /// Knative's Pod Autoscaler on the replicas' concurrency.
    Kpa(KpaSpec),
}

impl AutoscaleSpec {
    /// The most replicas, the fewest, and the time a new one takes to be ready.
    pub fn max(&self) -> u32 {
        match self {
            AutoscaleSpec::Hpa(h) => h.max,
            AutoscaleSpec::Kpa(k) => k.max,
        }
    }

    pub fn min(&self) -> u32 {
        match self {
            AutoscaleSpec::Hpa(h) => h.min,
            AutoscaleSpec::Kpa(k) => k.min,
        }
    }
}

/// `autoscale = { kind = "kpa", ... }` (Knative Serving's `config-autoscaler` keys and the
/// revision's `autoscaling.knative.dev/*` annotations).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct KpaSpec {
    /// Concurrent requests per replica aimed at (`autoscaling.knative.dev/target`).
    pub target: f64,
    /// The share of `target` aimed at, in (0, 1] (`target-utilization-percentage` / 100).
    pub target_utilization: f64,
    pub min: u32,
    pub max: u32,
    pub stable_window: Duration,
    pub panic_window_percentage: f64,
    pub panic_threshold_percentage: f64,
    pub max_scale_up_rate: f64,
    pub max_scale_down_rate: f64,
    pub scale_down_delay: Duration,
    /// From a new replica's creation until the balancer may pick it.
    pub startup: Duration,
}

/// `autoscale = { kind = "hpa", ... }` (the `autoscaling/v2` HorizontalPodAutoscaler).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HpaSpec {
    /// Target busy share of a replica's workers, in (0, 1] (`averageUtilization` / 100).
    pub target_utilization: f64,
    pub min: u32,
    pub max: u32,
    pub sync_period: Duration,
    pub stabilization_down: Duration,
    pub stabilization_up: Duration,
    pub tolerance: f64,
    /// From a new replica's creation until the balancer may pick it.
    pub startup: Duration,
    pub scale_up: Vec<ScalingPolicySpec>,
    pub scale_down: Vec<ScalingPolicySpec>,
    pub select_up: SelectPolicySpec,
    pub select_down: SelectPolicySpec,
}

/// One rate policy (`HPAScalingPolicy`): at most `value` pods, or `value` percent, per `period`.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ScalingPolicySpec {
    #[serde(rename = "type")]
    pub kind: ScalingPolicyKind,
    pub value: u32,
    pub period: Duration,
}

#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum ScalingPolicyKind {
    Pods,
    Percent,
}

/// `selectPolicy`.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum SelectPolicySpec {
    Max,
    Min,
    Disabled,
}

/// `[server.slow_start]`: Envoy's `SlowStartConfig`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SlowStartSpec {
    pub window: Duration,
    pub aggression: f64,
    pub min_weight_percent: f64,
}

/// `[[server.deploys]]`: a Kubernetes Deployment's rolling update (DESIGN §3.4).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DeploySpec {
    pub start: Duration,
    pub max_unavailable: CountOrPercentSpec,
    pub max_surge: CountOrPercentSpec,
    /// From a new replica's creation until it is started.
    pub startup: Duration,
    /// From its start until its readiness probe passes.
    pub readiness: Duration,
}

/// A count (`1`) or a percentage of the replicas (`"25%"`), as Kubernetes writes
/// `maxUnavailable` and `maxSurge`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CountOrPercentSpec {
    Count(u32),
    Percent(f64),
}

impl CountOrPercentSpec {
    /// The text of a percentage ("25%"), if it is one.
    pub fn parse_percent(text: &str) -> Option<f64> {
        let n: f64 = text.strip_suffix('%')?.trim().parse().ok()?;
        (n.is_finite() && n >= 0.0).then_some(n)
    }

    pub fn is_zero(self) -> bool {
        match self {
            CountOrPercentSpec::Count(n) => n == 0,
            CountOrPercentSpec::Percent(p) => p == 0.0,
        }
    }
}

impl<'de> Deserialize<'de> for CountOrPercentSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Count(u32),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Count(n) => Ok(CountOrPercentSpec::Count(n)),
            Raw::Text(t) => {
                CountOrPercentSpec::parse_percent(&t).map(CountOrPercentSpec::Percent).ok_or_else(|| {
                    serde::de::Error::custom(format!(
                        "\"{t}\" is not a count or a percentage such as \"25%\""
                    ))
                })
            }
        }
    }
}

/// `[server.adaptive_concurrency]`: Envoy's gradient controller; percentages as Envoy writes
/// them (0 to 100).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AdaptiveConcurrencySpec {
    /// Envoy's `enabled`: false makes the filter a pass-through.
    pub enabled: bool,
    pub concurrency_update_interval: Duration,
    pub sample_aggregate_percentile: f64,
    pub max_concurrency_limit: u32,
    pub min_concurrency_limit: Option<u32>,
    pub min_rtt_interval: Duration,
    pub min_rtt_request_count: u32,
    pub jitter: f64,
    pub min_concurrency: u32,
    pub buffer: f64,
}

/// `[server] balancer`.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum BalancerSpec {
    RoundRobin,
    Random,
    LeastRequest,
    PeakEwma,
    RingHash,
}

/// `[server] ewma = { decay, default_rtt }`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct EwmaSpec {
    pub decay: Duration,
    pub default_rtt: Duration,
}

/// `[server.outlier]`: Envoy's outlier detection, its keys.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct OutlierSpec {
    pub consecutive_5xx: u32,
    pub enforcing_consecutive_5xx: u32,
    pub interval: Duration,
    pub base_ejection_time: Duration,
    pub max_ejection_time: Duration,
    pub max_ejection_percent: u32,
    pub always_eject_one_host: bool,
    pub success_rate_minimum_hosts: u32,
    pub success_rate_request_volume: u32,
    pub success_rate_stdev_factor: u32,
    pub enforcing_success_rate: u32,
}

/// `[server] discipline`.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum DisciplineSpec {
    Fifo,
    Lifo,
    Codel,
    CodelRpc,
    AdaptiveLifo,
}

/// `[server] codel = { target, interval }`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CodelSpec {
    pub target: Duration,
    pub interval: Duration,
}

/// `errors = [{ status = 503, probability = 0.01 }]`: answer `status` instead of serving.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorSpec {
    pub status: u16,
    pub probability: f64,
    /// The work and its side effect happen; only the answer is an error.
    pub after_effect: bool,
}

/// `[[server.faults]]` (DESIGN §3.4): active on `[start, start + duration)`.
#[derive(Clone, Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum FaultSpec {
    /// Every request is answered with `status`, or gets no answer when `status = "timeout"`.
    Outage {
        start: Duration,
        duration: Duration,
        replica: Option<u32>,
        replica_share: Option<f64>,
        status: FaultStatus,
        retry_after: Option<Duration>,
    },
    /// `factor` x concurrency workers are available.
    Capacity {
        start: Duration,
        duration: Duration,
        replica: Option<u32>,
        replica_share: Option<f64>,
        factor: f64,
    },
    /// Service times are multiplied by `factor`.
    Slowdown {
        start: Duration,
        duration: Duration,
        replica: Option<u32>,
        replica_share: Option<f64>,
        factor: f64,
    },
    /// A request is answered `status` with `probability` instead of being served.
    Errors {
        start: Duration,
        duration: Duration,
        replica: Option<u32>,
        replica_share: Option<f64>,
        probability: f64,
        status: u16,
        after_effect: bool,
        retry_after: Option<Duration>,
    },
    /// The replica restarts: what it holds is dropped (connection resets), and it takes no
    /// request for `duration`.
    Restart { start: Duration, duration: Duration, replica: Option<u32>, replica_share: Option<f64> },
}

impl FaultSpec {
    pub fn window(&self) -> (Duration, Duration) {
        match *self {
            FaultSpec::Outage { start, duration, .. }
            | FaultSpec::Capacity { start, duration, .. }
            | FaultSpec::Slowdown { start, duration, .. }
            | FaultSpec::Errors { start, duration, .. }
            | FaultSpec::Restart { start, duration, .. } => (start, duration),
        }
    }

    /// Its kind as the file writes it, and its factor (capacity and slowdown).
    pub fn kind_and_factor(&self) -> (&'static str, Option<f64>) {
        match *self {
            FaultSpec::Outage { .. } => ("outage", None),
            FaultSpec::Capacity { factor, .. } => ("capacity", Some(factor)),
            FaultSpec::Slowdown { factor, .. } => ("slowdown", Some(factor)),
            FaultSpec::Errors { .. } => ("errors", None),
            FaultSpec::Restart { .. } => ("restart", None),
        }
    }

    /// The replicas it names: one (`replica`), a share (`replica_share`), or every one.
    pub fn target(&self) -> (Option<u32>, Option<f64>) {
        match *self {
            FaultSpec::Outage { replica, replica_share, .. }
            | FaultSpec::Capacity { replica, replica_share, .. }
            | FaultSpec::Slowdown { replica, replica_share, .. }
            | FaultSpec::Errors { replica, replica_share, .. }
            | FaultSpec::Restart { replica, replica_share, .. } => (replica, replica_share),
        }
    }

    /// Whether it strikes replica `r` of `replicas`: the one it names, replicas
    /// `0 .. ceil(share x replicas) - 1`, or every one.
    pub fn strikes(&self, r: u32, replicas: u32) -> bool {
        match self.target() {
            (Some(one), _) => one == r,
            (None, Some(share)) => (r as f64) < (share * replicas as f64).ceil(),
            (None, None) => true,
        }
    }
}

/// What an outage answers: an HTTP status, no answer at all, or a fast connection error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum FaultStatus {
    Status(u16),
    Named(NamedFailure),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NamedFailure {
    Timeout,
    ConnectionError,
}

/// `[server.rate_limit]`: the rate limiter in front of the server, by `kind` (the default
/// kind is `token-bucket`).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum RateLimitSpec {
    /// A token bucket: continuous refill at `rate`, or Envoy's discrete `fill_interval`.
    TokenBucket {
        /// Tokens per second (continuous refill); `None` with `fill_interval`.
        rate: Option<f64>,
        /// Bucket size.
        burst: f64,
        /// Envoy: add `tokens_per_fill` tokens every `fill_interval`.
        fill_interval: Option<Duration>,
        tokens_per_fill: Option<u32>,
        status: u16,
        /// How the refusal's Retry-After is given.
        retry_after: RetryAfterFormat,
    },
    /// nginx `limit_req`.
    LeakyBucket { rate: f64, burst: u32, nodelay: bool, status: u16, retry_after: RetryAfterFormat },
    /// resilience4j `AtomicRateLimiter`.
    FixedWindow {
        limit: u32,
        window: Duration,
        max_wait: Duration,
        status: u16,
        retry_after: RetryAfterFormat,
    },
    /// .NET `SlidingWindowRateLimiter`.
    SlidingWindow { limit: u32, window: Duration, segments: u32, status: u16, retry_after: RetryAfterFormat },
    /// A log of admission times.
    SlidingLog { limit: u32, window: Duration, status: u16, retry_after: RetryAfterFormat },
    /// redis-cell's GCRA.
    Gcra { max_burst: u32, count: u32, period: Duration, status: u16, retry_after: RetryAfterFormat },
}

impl RateLimitSpec {
    /// The most requests per second it lets through in the long run.
    pub fn rate_per_s(&self) -> f64 {
        let per = |n: f64, d: &Duration| n / d.span().as_secs_f64();
        match self {
            RateLimitSpec::TokenBucket { rate: Some(r), .. } => *r,
            RateLimitSpec::TokenBucket { fill_interval, tokens_per_fill, .. } => per(
                f64::from(tokens_per_fill.unwrap_or(1)),
                fill_interval.as_ref().expect("validation: rate or fill_interval"),
            ),
            RateLimitSpec::LeakyBucket { rate, .. } => *rate,
            RateLimitSpec::FixedWindow { limit, window, .. }
            | RateLimitSpec::SlidingWindow { limit, window, .. }
            | RateLimitSpec::SlidingLog { limit, window, .. } => per(f64::from(*limit), window),
            RateLimitSpec::Gcra { count, period, .. } => per(f64::from(*count), period),
        }
    }
}

#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum RetryAfterFormat {
    /// Whole seconds, rounded up, as HTTP's `Retry-After: <delay-seconds>`.
    Seconds,
    /// The exact time until the request would be admitted.
    Exact,
    /// No Retry-After.
    None,
}

/// `[server.idempotency]`: the dedup store for idempotency keys.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct IdempotencySpec {
    /// How long a finished key is remembered.
    pub ttl: Duration,
    pub on_in_progress: InProgress,
    /// How long the in-progress lock lasts; `None`: until its request finishes.
    pub lock_ttl: Option<Duration>,
    pub release: LockRelease,
    /// The resource refuses the effect of a holder whose lock was granted again since.
    pub fencing: bool,
}

/// How a holder lets go of the key's lock.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum LockRelease {
    /// Delete the lock whoever holds it.
    Delete,
    /// Delete it only if this holder still holds it.
    CompareAndDelete,
}

#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum InProgress {
    /// Answer 409 while the first request with the key is in progress.
    Conflict,
    /// Wait for the first request to finish, then answer with its result.
    Wait,
}

/// `[server.overload]`: service time grows past a knee of requests in service.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct OverloadSpec {
    pub alpha: f64,
    pub knee: u32,
}

/// One entry of `retry_on`: a status code, `"timeout"` / `"connection-error"`, or one of
/// Envoy's groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum RetryOnItem {
    Status(u16),
    Named(NamedFailure),
    Group(RetryGroup),
}

/// Envoy's `retry_on` conditions (router docs, `x-envoy-retry-on`) that the model's outcomes
/// can meet; what each retries is `assembly::client::retry_on`'s (docs/retry-policies.md §3g).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
pub enum RetryGroup {
    #[serde(rename = "5xx")]
    FiveXx,
    #[serde(rename = "gateway-error")]
    GatewayError,
    #[serde(rename = "reset")]
    Reset,
    #[serde(rename = "connect-failure")]
    ConnectFailure,
    #[serde(rename = "retriable-4xx")]
    Retriable4xx,
    /// The list's own status codes (Envoy's `retriable_status_codes`).
    #[serde(rename = "retriable-status-codes")]
    RetriableStatusCodes,
}

impl RetryGroup {
    /// Every group with its name in Envoy's `retry_on` (and in a retry list); `refused-stream`
    /// is not one: the model has no HTTP/2 stream refusal, so it would never match.
    pub const ALL: [(RetryGroup, &'static str); 6] = [
        (RetryGroup::FiveXx, "5xx"),
        (RetryGroup::GatewayError, "gateway-error"),
        (RetryGroup::Reset, "reset"),
        (RetryGroup::ConnectFailure, "connect-failure"),
        (RetryGroup::Retriable4xx, "retriable-4xx"),
        (RetryGroup::RetriableStatusCodes, "retriable-status-codes"),
    ];

    /// The names of [`RetryGroup::ALL`], in its order.
    pub const NAMES: [&'static str; 6] = {
        let mut names = [""; 6];
        let mut i = 0;
        while i < names.len() {
            names[i] = Self::ALL[i].1;
            i += 1;
        }
        names
    };

    /// Its name in Envoy's `retry_on`.
    pub fn name(self) -> &'static str {
        Self::ALL.iter().find(|(g, _)| *g == self).map(|(_, n)| *n).expect("every group is in ALL")
    }

    /// The model's outcomes it retries ([`crate::interop::strategy::envoy_group_failures`],
    /// the one home of the mapping).
    pub fn outcomes(self) -> Vec<crate::policy::Outcome> {
        use crate::interop::strategy::{Failure, envoy_group_failures};
        use crate::policy::Outcome;
        let failures = envoy_group_failures(self.name()).expect("every group has its failures");
        failures
            .into_iter()
            .map(|f| match f {
                Failure::Status(s) => Outcome::Status(s),
                Failure::Timeout => Outcome::Timeout,
                Failure::ConnectionError => Outcome::ConnectionError,
            })
            .collect()
    }
}

/// A strategy: its name and its retry policy, resolved from `[client]`, its preset and its
/// own keys (DESIGN §4).
#[derive(Clone, Debug, PartialEq)]
pub struct Strategy {
    pub name: String,
    /// The preset it started from, if any.
    pub preset: Option<String>,
    pub policy: PolicySpec,
}

/// The client-side policy: the keys of `[client]` and of every `[[strategies]]` entry.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PolicySpec {
    /// Attempts per operation, the first included; absent = until success or the horizon.
    pub max_attempts: Option<u32>,
    /// Per-attempt timeout; absent = wait for the answer however long it takes.
    pub timeout: Option<Duration>,
    /// Operation deadline measured from its first attempt.
    pub deadline: Option<Duration>,
    /// Outcomes that are retried; absent = DESIGN §3.5's defaults.
    pub retry_on: Option<Vec<RetryOnItem>>,
    pub backoff: BackoffSpec,
    pub honor_retry_after: bool,
    pub retry_after_cap: Option<Duration>,
    pub retry_after_mode: RetryAfterModeSpec,
    /// Do not retry an answer that says "overloaded; don't retry".
    pub honor_dont_retry: bool,
    pub idempotency: IdempotencyMode,
    pub budget: Option<BudgetSpec>,
    pub breaker: Option<BreakerSpec>,
    pub throttle: Option<ThrottleSpec>,
    /// The client's connection pool (DESIGN §4.7); absent = every attempt is sent at once.
    pub pool: Option<PoolSpec>,
    /// The client's bulkhead (DESIGN §4.8); absent = every operation starts at once.
    pub bulkhead: Option<BulkheadSpec>,
    /// The client's adaptive concurrency limit (DESIGN §4.9); absent = none.
    pub limit: Option<LimitSpec>,
    /// Hedged requests (DESIGN §4.10); absent = one copy per attempt.
    pub hedge: Option<HedgeSpec>,
    pub layers: Vec<LayerSpec>,
    /// Operations whose tries are used up are dead-lettered instead of failed.
    pub dead_letter: Option<DeadLetterSpec>,
    /// The dead-letter queue is sent again later.
    pub redrive: Option<RedriveSpec>,
    /// The application's retry loop above the library's.
    pub app_retry: Option<AppRetrySpec>,
    /// A retry avoids the replicas its operation already tried (Envoy's `previous_hosts`).
    pub retry_other_replica: bool,
    /// `[[services]]`: gRPC deadline propagation down the call graph.
    pub propagate_deadline: bool,
    /// `[[services]]`: a caller that gives up cancels its downstream requests.
    pub propagate_cancellation: bool,
    /// With `propagate_cancellation`: a cancelled request in service is stopped.
    pub cancel_in_service: bool,
    /// `[[services]]`: every edge's client policy, replacing the edges' own.
    pub hop_policy: Option<HopPolicySpec>,
    /// Picks made again when a pick was already tried (Envoy's
    /// `host_selection_retry_max_attempts`).
    pub host_selection_retry_max_attempts: u32,
}

impl PolicySpec {
    /// Passes of the library's retry loop the application makes per operation (`app_retry`;
    /// 1 without it): every attempt count above multiplies by it.
    pub fn app_passes(&self) -> u32 {
        self.app_retry.as_ref().map_or(1, |a| a.max_attempts)
    }
}

/// `dead_letter = { after = N }`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DeadLetterSpec {
    /// Tries before an operation is dead-lettered; absent: `max_attempts`.
    pub after: Option<u32>,
}

/// `redrive = { at = ... | after = ..., rate = ..., key = ... }`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RedriveSpec {
    /// The moment the whole queue is re-driven.
    pub at: Option<Duration>,
    /// Each item is re-driven this long after it was dead-lettered.
    pub after: Option<Duration>,
    /// Items re-driven per second at most; absent: all at once.
    pub rate: Option<f64>,
    pub key: RedriveKey,
}

/// `app_retry = { max_attempts, backoff, retry_on, key }`: the application runs the library's
/// whole retry loop again when it fails (DESIGN §4.4).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AppRetrySpec {
    /// Passes of the library's loop per operation, the first included.
    pub max_attempts: u32,
    /// The application's delay before each new pass.
    pub backoff: BackoffSpec,
    /// The library's failure reasons the application retries (`failed_<reason>` names);
    /// absent: every one but `non_retryable`.
    pub retry_on: Option<Vec<String>>,
    /// The idempotency key of each new pass.
    pub key: RedriveKey,
}

/// The idempotency key a re-driven item, or an application's new pass, carries.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum RedriveKey {
    /// Its own.
    Same,
    /// A new one.
    New,
}

#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum RetryAfterModeSpec {
    Replace,
    Envoy,
    #[serde(rename = "aws-2026")]
    Aws2026,
    GrpcPushback,
    AtLeastBackoff,
}

#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum IdempotencyMode {
    None,
    PerOp,
    PerAttempt,
}

#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Scope {
    Client,
    Shared,
}

/// `budget = { kind = ... }` (DESIGN §4.2).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum BudgetSpec {
    TokenBucket {
        capacity: f64,
        retry_cost: f64,
        timeout_cost: f64,
        throttling_cost: f64,
        success_refund: f64,
        scope: Scope,
    },
    GrpcThrottle {
        max_tokens: f64,
        token_ratio: f64,
        scope: Scope,
    },
    Ratio {
        ratio: f64,
        min_per_second: f64,
        ttl: Duration,
        scope: Scope,
    },
    Concurrency {
        percent: f64,
        min_concurrency: u32,
        scope: Scope,
    },
    /// Brooker's adaptive retry bucket.
    Brooker {
        capacity: f64,
        per_call: f64,
        retry_cost: f64,
        scope: Scope,
    },
}

/// `breaker = { kind = ... }` (DESIGN §4.3): resilience4j semantics (the default kind), or
/// Brooker's retry-ratio breaker.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum BreakerSpec {
    #[serde(rename = "resilience4j")]
    Resilience4j(Resilience4jSpec),
    RetryRatio {
        threshold: f64,
        /// Absent: counted since the start.
        window: Option<Duration>,
        scope: Scope,
    },
}

impl BreakerSpec {
    /// One breaker per client process, or one for all.
    pub fn scope(&self) -> Scope {
        match self {
            BreakerSpec::Resilience4j(r) => r.scope,
            BreakerSpec::RetryRatio { scope, .. } => *scope,
        }
    }
}

/// The keys of a `resilience4j` breaker.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Resilience4jSpec {
    pub window: BreakerWindowSpec,
    pub failure_rate: f64,
    pub slow_call_rate: f64,
    pub slow_call_duration: Duration,
    pub minimum_calls: u32,
    pub open_for: Duration,
    pub half_open_calls: u32,
    pub scope: Scope,
}

/// A count of calls, or a duration.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(untagged)]
pub enum BreakerWindowSpec {
    Calls(u32),
    Time(Duration),
}

/// `throttle = { kind = ... }` (DESIGN §4.4).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum ThrottleSpec {
    Sre {
        k: f64,
        window: Duration,
        scope: Scope,
    },
    AwsAdaptive {
        scope: Scope,
    },
    /// Envoy's `admission_control` filter (DESIGN §4.4).
    EnvoyAdmissionControl {
        sampling_window: Duration,
        sr_threshold: f64,
        aggression: f64,
        rps_threshold: u32,
        max_rejection_probability: f64,
        scope: Scope,
    },
}

/// `pool = { ... }` (DESIGN §4.7): the client's connection pool.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PoolSpec {
    pub size: u32,
    /// Absent: only the attempt's timeout bounds the wait.
    pub max_wait: Option<Duration>,
    pub close_on_timeout: bool,
    pub connect_time: Duration,
    pub scope: Scope,
}

/// `bulkhead = { ... }` (DESIGN §4.8): at most `max_in_flight` operations in flight.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BulkheadSpec {
    pub max_in_flight: u32,
    pub max_wait: Duration,
    pub scope: Scope,
}

/// `limit = { kind = ... }` (DESIGN §4.9): a Netflix concurrency-limits limit.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum LimitSpec {
    Aimd {
        initial_limit: u32,
        min_limit: u32,
        max_limit: u32,
        backoff_ratio: f64,
        timeout: Duration,
        windowed: bool,
        scope: Scope,
    },
    Vegas {
        initial_limit: u32,
        max_limit: u32,
        smoothing: f64,
        probe_multiplier: u32,
        windowed: bool,
        scope: Scope,
    },
    Gradient2 {
        initial_limit: u32,
        min_limit: u32,
        max_limit: u32,
        smoothing: f64,
        queue_size: u32,
        long_window: u32,
        rtt_tolerance: f64,
        windowed: bool,
        scope: Scope,
    },
}

/// `hedge = { ... }` (DESIGN §4.10): copies of a call sent before its answer. Absent keys take
/// the preset's values (assembly), else gRPC A6's.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HedgeSpec {
    pub preset: Option<HedgePreset>,
    pub max_attempts: Option<u32>,
    /// A duration (`"500ms"`, `"0s"`) or a percentile of the client's latency (`"p95"`).
    pub delay: Option<String>,
    pub non_fatal: Option<Vec<RetryOnItem>>,
    pub hedge_on_per_try_timeout: Option<bool>,
    pub window: Duration,
    pub min_samples: u32,
    pub budget: Option<HedgeBudgetSpec>,
    pub cancel_in_service: bool,
    pub scope: Scope,
}

/// `hedge.delay`, read.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum HedgeDelaySpec {
    After(Duration),
    /// A percentile in (0, 100).
    Percentile(f64),
}

impl HedgeSpec {
    /// `delay` read (`None` when absent), or why it cannot be.
    pub fn parsed_delay(&self) -> Result<Option<HedgeDelaySpec>, String> {
        let Some(text) = &self.delay else { return Ok(None) };
        if let Some(p) = text.strip_prefix('p') {
            return match p.parse::<f64>() {
                Ok(p) if p > 0.0 && p < 100.0 => Ok(Some(HedgeDelaySpec::Percentile(p))),
                _ => Err(format!(
                    "{text:?} is not a percentile in (0, 100): write \"p95\" or \"p99.9\", or a duration such as \"500ms\""
                )),
            };
        }
        Duration::parse(text).map(|d| Some(HedgeDelaySpec::After(d))).map_err(|e| {
            format!("{text:?} is neither a duration nor a percentile ({e}): write \"500ms\", \"0s\" (every copy at once) or \"p95\"")
        })
    }
}

/// `hedge.preset`.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum HedgePreset {
    /// Polly v8's hedging strategy in latency mode.
    Polly,
    /// Envoy's route `HedgePolicy` with `hedge_on_per_try_timeout`.
    Envoy,
}

/// `hedge.budget = { ratio, capacity }`: Brooker's token bucket for hedges.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HedgeBudgetSpec {
    pub ratio: f64,
    pub capacity: f64,
}

/// `[[services]]`: one service of the call graph.
#[derive(Clone, Debug, Deserialize)]
pub struct ServiceSpec {
    pub name: String,
    /// Its edges, in the order it calls them.
    pub calls: Vec<CallSpec>,
    /// Its server: the keys of a queue `[server]`.
    #[serde(flatten)]
    pub server: QueueServerSpec,
}

/// One edge of the call graph (`calls = [{ service = "db", ... }]`).
#[derive(Clone, Debug, Deserialize)]
pub struct CallSpec {
    pub service: String,
    pub count: u32,
    pub parallel: bool,
    pub optional: bool,
    #[serde(flatten)]
    pub policy: HopPolicySpec,
}

/// The client policy of an edge of the call graph.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HopPolicySpec {
    pub max_attempts: u32,
    pub timeout: Option<Duration>,
    /// Envoy's route timeout: over all tries, answered 504 when it fires.
    pub route_timeout: Option<Duration>,
    pub deadline: Option<Duration>,
    pub retry_on: Option<Vec<RetryOnItem>>,
    pub backoff: BackoffSpec,
    pub honor_dont_retry: bool,
    /// Do not retry a local overflow 503 marked `x-envoy-overloaded` (Envoy's router).
    pub honor_overloaded: bool,
    pub budget: Option<BudgetSpec>,
    pub breaker: Option<BreakerSpec>,
    /// Hedged calls along this edge (gRPC A6 hedgingPolicy).
    pub hedge: Option<HedgeSpec>,
    /// A retry along this edge avoids the callee's replicas its call already tried (Envoy's
    /// `previous_hosts`).
    pub retry_other_replica: bool,
    /// With `retry_other_replica`: picks made again when a pick was already tried (Envoy's
    /// `host_selection_retry_max_attempts`).
    pub host_selection_retry_max_attempts: u32,
}

/// One gateway layer in front of the server, with its own retry policy.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LayerSpec {
    pub name: String,
    pub max_attempts: u32,
    pub timeout: Option<Duration>,
    /// Envoy's route timeout: over all tries, answered 504 when it fires.
    pub route_timeout: Option<Duration>,
    pub retry_on: Option<Vec<RetryOnItem>>,
    pub backoff: BackoffSpec,
    pub honor_dont_retry: bool,
    /// Do not retry a local overflow 503 marked `x-envoy-overloaded` (Envoy's router).
    pub honor_overloaded: bool,
    /// The layer's own retry budget (one proxy: shared by every request through it).
    pub budget: Option<BudgetSpec>,
    /// The layer's own circuit breaker.
    pub breaker: Option<BreakerSpec>,
}

/// DESIGN §4.1's backoff kinds. `cap` absent = no cap.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum BackoffSpec {
    None {},
    Constant {
        base: Duration,
    },
    Linear {
        base: Duration,
        cap: Option<Duration>,
    },
    Exponential {
        base: Duration,
        cap: Option<Duration>,
        multiplier: f64,
        /// The first retry goes at once, the formula applies from the second (urllib3).
        immediate_first: bool,
    },
    FullJitter {
        base: Duration,
        cap: Option<Duration>,
        multiplier: f64,
    },
    EqualJitter {
        base: Duration,
        cap: Option<Duration>,
        multiplier: f64,
    },
    DecorrelatedJitter {
        base: Duration,
        cap: Option<Duration>,
    },
    /// Polly's `DecorrelatedJitterBackoffV2`; `base` is the median first-retry delay.
    DecorrelatedJitterV2 {
        base: Duration,
        cap: Option<Duration>,
    },
    AdditiveJitter {
        base: Duration,
        cap: Option<Duration>,
        multiplier: f64,
        jitter: Duration,
        /// The first retry goes at once, the formula applies from the second (urllib3).
        immediate_first: bool,
    },
    /// `v * U(1 - p, 1 + p)`, gRPC's current +-20 % (`p = 0.2`) applied after the cap.
    ProportionalJitter {
        base: Duration,
        cap: Option<Duration>,
        multiplier: f64,
        p: f64,
    },
}
