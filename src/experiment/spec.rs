//! The experiment file's data model: one Rust type per table of DESIGN §7.
//!
//! The serde derives read the format directly (handy in tests and tools), but
//! [`super::load`] does not use them: serde loses the key path inside internally tagged
//! (`kind = ...`) and untagged enums, so the loader decodes the TOML tree key by key to name
//! every bad key in full. A test in `load` checks that both read the same files alike, and the
//! `pub(crate)` default functions below are shared by both. Cross-field rules (`cap >= base`,
//! ...) live in `super::validate`.

use super::duration::Duration;
use serde::Deserialize;

/// One experiment file, after `--set` overrides and with one sweep point applied.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExperimentSpec {
    /// Names the output folder `results/<name>/`.
    pub name: String,
    /// Master seed: every run's streams derive from (seed, point, run).
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Replications per (point, strategy).
    #[serde(default = "default_runs")]
    pub runs: u32,
    /// Simulated time at which a run stops; operations still pending then fail as `unfinished`.
    #[serde(default = "default_horizon")]
    pub horizon: Duration,
    pub workload: WorkloadSpec,
    #[serde(default)]
    pub network: NetworkSpec,
    pub server: ServerSpec,
    #[serde(default)]
    pub client: ClientSpec,
    #[serde(default)]
    pub strategies: Vec<StrategySpec>,
    #[serde(default)]
    pub output: OutputSpec,
    /// Key -> list of values; expanded by [`super::load`] before this type is built, kept here
    /// so that a file with a `[sweep]` table deserialises.
    #[serde(default)]
    pub sweep: Option<toml::Table>,
}

/// `[output]`: how results are written.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputSpec {
    /// The width of `timeseries.csv`'s buckets.
    #[serde(default = "default_bucket")]
    pub bucket: Duration,
    /// Whether to write `timeseries.csv`.
    #[serde(default = "default_true")]
    pub timeseries: bool,
}

impl Default for OutputSpec {
    fn default() -> Self {
        OutputSpec { bucket: default_bucket(), timeseries: true }
    }
}

pub(crate) fn default_true() -> bool {
    true
}

pub(crate) fn default_bucket() -> Duration {
    Duration(1_000_000_000)
}

pub(crate) fn default_seed() -> u64 {
    1
}
pub(crate) fn default_runs() -> u32 {
    1
}
pub(crate) fn default_horizon() -> Duration {
    Duration(3_600_000_000_000)
}

/// Who calls the server and when (DESIGN §3.1).
#[derive(Clone, Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum WorkloadSpec {
    /// `clients` clients each run `ops_per_client` operations back to back.
    Closed {
        #[serde(default = "one")]
        clients: u32,
        #[serde(default = "one")]
        ops_per_client: u32,
        /// Pause between the end of one operation and the start of the next.
        #[serde(default)]
        think_time: Duration,
        /// Client start times spread uniformly over `[0, ramp)`; 0 = all at t=0 (the herd).
        #[serde(default)]
        ramp: Duration,
    },
    /// Poisson arrivals at `rate` per second for `duration`.
    Open {
        rate: f64,
        duration: Duration,
        /// Piecewise-constant rate changes: from `at` on, the rate is `rate`.
        #[serde(default)]
        schedule: Vec<RateStep>,
        /// Client processes the operations are spread over (uniformly at random).
        #[serde(default = "one")]
        clients: u32,
    },
}

pub(crate) fn one() -> u32 {
    1
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
    #[serde(default)]
    pub latency: DistSpec,
    /// Probability that a request is lost on the way to the server.
    #[serde(default)]
    pub request_loss: f64,
    /// Probability that a response is lost on the way back (the server did the work).
    #[serde(default)]
    pub response_loss: f64,
}

/// `[server]` (DESIGN §3.3). A missing `kind` means `queue`.
#[derive(Clone, Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum ServerSpec {
    Queue(QueueServerSpec),
    Occ {},
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueServerSpec {
    /// Workers serving requests in parallel.
    pub concurrency: u32,
    pub service_time: DistSpec,
    /// Waiting room; absent = unbounded, 0 = none (a request that finds every worker busy is
    /// rejected at once).
    #[serde(default)]
    pub queue: Option<u32>,
    /// Status of the answer to a request that finds the queue full: 429 or 503.
    #[serde(default = "default_reject_status")]
    pub reject_status: u16,
    /// Background error answers outside faults.
    #[serde(default)]
    pub errors: Vec<ErrorSpec>,
    /// Drop a queued request whose client has already timed out instead of serving it.
    #[serde(default)]
    pub drop_expired: bool,
    #[serde(default)]
    pub faults: Vec<FaultSpec>,
}

pub(crate) fn default_reject_status() -> u16 {
    503
}

/// `errors = [{ status = 503, probability = 0.01 }]`: answer `status` instead of serving.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorSpec {
    pub status: u16,
    pub probability: f64,
    /// The work and its side effect happen; only the answer is an error.
    #[serde(default)]
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
        #[serde(default = "default_outage_status")]
        status: FaultStatus,
    },
    /// `factor` x concurrency workers are available.
    Capacity { start: Duration, duration: Duration, factor: f64 },
    /// Service times are multiplied by `factor`.
    Slowdown { start: Duration, duration: Duration, factor: f64 },
    /// A request is answered `status` with `probability` instead of being served.
    Errors {
        start: Duration,
        duration: Duration,
        probability: f64,
        #[serde(default = "default_status_503")]
        status: u16,
        #[serde(default)]
        after_effect: bool,
    },
}

impl FaultSpec {
    pub fn window(&self) -> (Duration, Duration) {
        match *self {
            FaultSpec::Outage { start, duration, .. }
            | FaultSpec::Capacity { start, duration, .. }
            | FaultSpec::Slowdown { start, duration, .. }
            | FaultSpec::Errors { start, duration, .. } => (start, duration),
        }
    }
}

pub(crate) fn default_status_503() -> u16 {
    503
}
pub(crate) fn default_outage_status() -> FaultStatus {
    FaultStatus::Status(503)
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

/// `[client]` defaults; every field may be overridden by a `[[strategies]]` entry.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ClientSpec {
    /// Attempts per operation, the first included; absent = until success or the horizon.
    pub max_attempts: Option<u32>,
    /// Per-attempt timeout; absent = wait for the answer however long it takes.
    pub timeout: Option<Duration>,
    /// Operation deadline measured from its first attempt.
    pub deadline: Option<Duration>,
    /// Outcomes that are retried; absent = DESIGN §3.5's defaults.
    pub retry_on: Option<Vec<RetryOnItem>>,
}

/// One entry of `retry_on`: a status code, or `"timeout"` / `"connection-error"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum RetryOnItem {
    Status(u16),
    Named(NamedFailure),
}

/// One `[[strategies]]` entry: a name, a backoff, and overrides of `[client]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StrategySpec {
    pub name: String,
    pub backoff: BackoffSpec,
    pub max_attempts: Option<u32>,
    pub timeout: Option<Duration>,
    pub deadline: Option<Duration>,
    pub retry_on: Option<Vec<RetryOnItem>>,
}

/// DESIGN §4.1's backoff kinds. `cap` absent = no cap; `multiplier` defaults to 2.
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
        #[serde(default = "two")]
        multiplier: f64,
    },
    FullJitter {
        base: Duration,
        cap: Option<Duration>,
        #[serde(default = "two")]
        multiplier: f64,
    },
    EqualJitter {
        base: Duration,
        cap: Option<Duration>,
        #[serde(default = "two")]
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
        #[serde(default = "two")]
        multiplier: f64,
        jitter: Duration,
    },
    /// `v * U(1 - p, 1 + p)`, gRPC's current +-20 % (`p = 0.2`) applied after the cap.
    ProportionalJitter {
        base: Duration,
        cap: Option<Duration>,
        #[serde(default = "two")]
        multiplier: f64,
        #[serde(default = "default_proportion")]
        p: f64,
    },
}

pub(crate) fn two() -> f64 {
    2.0
}
pub(crate) fn default_proportion() -> f64 {
    0.2
}
