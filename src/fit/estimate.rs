//! Maximum-likelihood fits of every backoff kind to a log's retry delays, the BIC ranking,
//! the goodness of fit of the best, and the attempt limit and Retry-After treatment.

use super::FitError;
use super::kinds::{Delay, Kind, Noise, OVERHEAD_MAX_S, Params, delay};
use super::log::AttemptLog;
use crate::stats::{ks_p_value, ks_statistic, minimise};
use std::collections::BTreeMap;
use std::path::Path;

/// Fewer backoff delays than this cannot tell the kinds apart reliably.
pub const MIN_DELAYS: usize = 20;
/// The best kind is rejected when the Kolmogorov-Smirnov p-value of its fit is below this.
pub const KS_REJECT: f64 = 1e-3;
/// Two kinds whose BIC differ by less than this are as good as each other (Kass & Raftery
/// 1995: a difference under 2 is "not worth more than a bare mention").
pub const BIC_DECISIVE: f64 = 2.0;
/// The share of delays the likelihood lets fall outside every kind (a paused client, a
/// stray request): a uniform background of this weight keeps one outlier from deciding a fit.
const OUTLIER_SHARE: f64 = 1e-3;
/// The smallest noise the fit allows, in seconds (below a log's clock resolution).
const SIGMA_FLOOR_S: f64 = 1e-6;
/// The smallest mean of the overhead's exponential part, in seconds (where it is the normal).
const TAIL_FLOOR_S: f64 = 1e-9;
/// The optimiser's starting value of the overhead's offset and tail: the logit of 1 %.
const OVERHEAD_START: f64 = -4.595_119_850_134_59;

/// One retry's delay: from the previous answer (or arrival) to this attempt's arrival.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    /// The retry number: 1 for the delay between the first and the second attempt.
    pub k: u32,
    pub delay_s: f64,
    /// The operation's previous delay (decorrelated jitter's state), if it had one.
    pub previous_s: Option<f64>,
    /// The Retry-After of the answer before this delay.
    pub retry_after_s: Option<f64>,
}

/// How a client combines a server's Retry-After with its backoff (DESIGN §4.6's modes that a
/// log can tell apart; `Ignore` is `honor_retry_after = false`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetryAfterMode {
    Ignore,
    Replace,
    Envoy,
    AtLeastBackoff,
}

impl RetryAfterMode {
    pub const ALL: [RetryAfterMode; 4] = [
        RetryAfterMode::Ignore,
        RetryAfterMode::Replace,
        RetryAfterMode::Envoy,
        RetryAfterMode::AtLeastBackoff,
    ];

    /// The `retry_after_mode` of experiment files (`ignore`: `honor_retry_after = false`).
    pub fn name(self) -> &'static str {
        match self {
            RetryAfterMode::Ignore => "ignore",
            RetryAfterMode::Replace => "replace",
            RetryAfterMode::Envoy => "envoy",
            RetryAfterMode::AtLeastBackoff => "at-least-backoff",
        }
    }

    /// The delay after an answer with Retry-After `ra_s`, given the backoff's delay.
    fn delay(self, backoff: Delay, ra_s: f64) -> Delay {
        match self {
            RetryAfterMode::Ignore => backoff,
            RetryAfterMode::Replace => Delay::uniform(ra_s, ra_s),
            RetryAfterMode::Envoy => Delay::uniform(ra_s, 1.5 * ra_s),
            RetryAfterMode::AtLeastBackoff => backoff.at_least(ra_s),
        }
    }

    /// Whether the delays after a Retry-After still tell of the backoff.
    fn shows_backoff(self) -> bool {
        matches!(self, RetryAfterMode::Ignore | RetryAfterMode::AtLeastBackoff)
    }
}

/// A kind fitted to the delays.
#[derive(Clone, Debug, PartialEq)]
pub struct KindFit {
    pub kind: Kind,
    /// How the delays after a Retry-After were explained (`Ignore` when the log has none).
    pub mode: RetryAfterMode,
    pub params: Params,
    pub log_likelihood: f64,
    pub bic: f64,
    /// Whether the fitted cap bounds any delay of the log; if not, the cap is only known to
    /// be at least the largest delay the kind would have given there.
    pub cap_reached: bool,
    pub uncapped_max_s: f64,
    /// Whether every delay this kind gives in the log (before the overhead) is at most
    /// [`OVERHEAD_MAX_S`]: such a kind cannot be told from a client that retries at once
    /// (`none`) and takes that long to send again, so it ranks after every kind that can.
    pub within_overhead: bool,
}

/// What the log says of the attempt limit.
#[derive(Clone, Debug, PartialEq)]
pub enum Limit {
    /// Every operation that ended on a status the client retries elsewhere used this many.
    Exact(u32),
    /// Such operations used different numbers (a budget, a quota, a deadline or mixed
    /// clients): the largest, with the counts. The first three only ever stop an operation
    /// early, so the largest is the limit of the client that reached it.
    Mixed { largest: u32, counts: BTreeMap<u32, usize> },
    /// No operation ran out of attempts: the limit is at least the most attempts seen.
    AtLeast(u32),
}

impl Limit {
    pub fn attempts(&self) -> u32 {
        match self {
            Limit::Exact(n) | Limit::AtLeast(n) => *n,
            Limit::Mixed { largest, .. } => *largest,
        }
    }
}

/// How the client treats Retry-After: the best kind fitted jointly with each mode.
#[derive(Clone, Debug, PartialEq)]
pub struct RetryAfterFit {
    /// Retries after an answer that carried Retry-After.
    pub delays: usize,
    /// (mode, log-likelihood of the whole log with the best kind refitted under it), best
    /// first.
    pub modes: Vec<(RetryAfterMode, f64)>,
}

/// Whether the log decides a strategy.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    Decided,
    TooFewDelays { delays: usize },
    NoKindFits { p_value: f64 },
    Tie { first: Kind, second: Kind, delta_bic: f64 },
}

/// Everything `fit` found.
#[derive(Clone, Debug, PartialEq)]
pub struct FitReport {
    pub operations: usize,
    pub attempts: usize,
    pub rows: usize,
    pub without_op: usize,
    pub has_durations: bool,
    /// Backoff delays fitted (retries after an answer without Retry-After).
    pub delays: usize,
    /// Retries that arrived before the previous attempt's answer left, or after one never
    /// answered: the client gave up on it (a timeout), so the delay is not the backoff's.
    /// Not fitted.
    pub overlapping: usize,
    /// Every kind, best (lowest BIC) first.
    pub fits: Vec<KindFit>,
    pub ks_statistic: f64,
    pub ks_p_value: f64,
    pub limit: Limit,
    /// Statuses followed by a retry, and how often; statuses never followed by one.
    pub retried_after: BTreeMap<u16, usize>,
    pub final_after: BTreeMap<u16, usize>,
    pub retry_after: Option<RetryAfterFit>,
    pub verdict: Verdict,
}

impl FitReport {
    pub fn best(&self) -> &KindFit {
        &self.fits[0]
    }

    /// The next best kind that a log can tell from an immediate retry (the kinds that read as
    /// `none` are the best one's equals when it is `none`, and never its rivals); `None` when
    /// every other kind reads as `none`.
    pub fn runner_up(&self) -> Option<&KindFit> {
        self.fits.get(1..)?.iter().find(|f| !f.within_overhead)
    }
}

/// A log-likelihood or BIC as an integer in thousandths, so that two modes that explain the
/// log equally (`replace` and `at-least-backoff` when every backoff is below the Retry-After:
/// their likelihoods differ in the seventh decimal, by the optimiser's rounding) tie, and the
/// stable sort keeps the simpler one, the first of [`RetryAfterMode::ALL`].
fn tie_key(x: f64) -> i64 {
    (x * 1e3).round() as i64
}

/// Fits `log` (read from `path`, named in errors).
pub fn fit(log: &AttemptLog, path: &Path) -> Result<FitReport, FitError> {
    let samples = samples(log);
    let retries = log.operations.iter().map(|o| o.attempts.len().saturating_sub(1)).sum::<usize>();
    if retries == 0 {
        return Err(FitError::NoRetries {
            path: path.into(),
            operations: log.operations.len(),
            rows: log.rows,
            without_op: log.without_op,
        });
    }
    let overlapping = retries - samples.len();
    let with_ra = samples.iter().filter(|s| s.retry_after_s.is_some()).count();
    let modes: &[RetryAfterMode] = if with_ra > 0 { &RetryAfterMode::ALL } else { &[RetryAfterMode::Ignore] };

    // Every kind under every mode; per kind the mode that explains the log best.
    let per_kind: Vec<Vec<KindFit>> = if samples.is_empty() {
        Vec::new()
    } else {
        Kind::ALL.iter().map(|&k| modes.iter().map(|&m| fit_kind(k, m, &samples)).collect()).collect()
    };
    let mut fits: Vec<KindFit> = per_kind
        .iter()
        .map(|under| under.iter().min_by_key(|f| tie_key(f.bic)).expect("one mode at least").clone())
        .collect();
    // The kinds that a log can tell from an immediate retry first, each group by BIC.
    fits.sort_by(|a, b| a.within_overhead.cmp(&b.within_overhead).then(a.bic.total_cmp(&b.bic)));
    let retry_after = fits.first().filter(|_| with_ra > 0).map(|best| {
        let under = per_kind.iter().find(|u| u[0].kind == best.kind).expect("the best kind was fitted");
        let mut modes: Vec<(RetryAfterMode, f64)> =
            under.iter().map(|f| (f.mode, f.log_likelihood)).collect();
        modes.sort_by_key(|m| std::cmp::Reverse(tie_key(m.1)));
        RetryAfterFit { delays: with_ra, modes }
    });
    // The delays that tell of the backoff: all but those a Retry-After replaced.
    let delays = match fits.first() {
        Some(best) if !best.mode.shows_backoff() => samples.len() - with_ra,
        _ => samples.len(),
    };
    let (ks_d, ks_p) = match fits.first() {
        Some(best) => {
            let mut u: Vec<f64> = samples
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    sample_delay(best.kind, best.mode, &best.params, s).pit(s.delay_s, &best.params.noise, i)
                })
                .collect();
            let d = ks_statistic(&mut u);
            (d, ks_p_value(d, u.len()))
        }
        None => (f64::NAN, f64::NAN),
    };
    let verdict = if delays < MIN_DELAYS {
        Verdict::TooFewDelays { delays }
    } else if ks_p < KS_REJECT {
        Verdict::NoKindFits { p_value: ks_p }
    } else if let Some(second) =
        fits[1..].iter().find(|f| !f.within_overhead).filter(|f| f.bic - fits[0].bic < BIC_DECISIVE)
    {
        Verdict::Tie { first: fits[0].kind, second: second.kind, delta_bic: second.bic - fits[0].bic }
    } else {
        Verdict::Decided
    };

    let (mut retried_after, mut final_after) = (BTreeMap::new(), BTreeMap::new());
    for o in &log.operations {
        for (i, a) in o.attempts.iter().enumerate() {
            if i + 1 < o.attempts.len() {
                *retried_after.entry(a.status).or_insert(0) += 1;
            } else if !a.succeeded() {
                *final_after.entry(a.status).or_insert(0) += 1;
            }
        }
    }
    Ok(FitReport {
        operations: log.operations.len(),
        attempts: log.operations.iter().map(|o| o.attempts.len()).sum(),
        rows: log.rows,
        without_op: log.without_op,
        has_durations: log.has_durations,
        delays,
        overlapping,
        fits,
        ks_statistic: ks_d,
        ks_p_value: ks_p,
        limit: limit(log, &retried_after),
        retried_after,
        final_after,
        retry_after,
        verdict,
    })
}

/// The delays before each retry. A retry that arrived before the previous answer left is left
/// out (the client stopped waiting: its delay started at its own timeout, which the server
/// cannot see), and the next delay then has no known predecessor.
pub fn samples(log: &AttemptLog) -> Vec<Sample> {
    let mut out = Vec::new();
    for o in &log.operations {
        let mut previous_s = None;
        for (i, pair) in o.attempts.windows(2).enumerate() {
            let d = pair[1].at_s - pair[0].answered_s;
            // Negative, or NaN for an attempt never answered.
            if d.is_nan() || d < 0.0 {
                previous_s = None;
                continue;
            }
            out.push(Sample {
                k: i as u32 + 1,
                delay_s: d,
                previous_s,
                retry_after_s: pair[0].retry_after_s,
            });
            previous_s = Some(d);
        }
    }
    out
}

/// The attempt limit: from the operations whose last answer has a status the client retried
/// after elsewhere in the log (so it ran out of attempts rather than met a final status).
fn limit(log: &AttemptLog, retried_after: &BTreeMap<u16, usize>) -> Limit {
    let mut counts: BTreeMap<u32, usize> = BTreeMap::new();
    for o in &log.operations {
        let last = o.attempts.last().expect("an operation has at least one attempt");
        if !last.succeeded() && retried_after.contains_key(&last.status) {
            *counts.entry(o.attempts.len() as u32).or_insert(0) += 1;
        }
    }
    let most = log.operations.iter().map(|o| o.attempts.len() as u32).max().unwrap_or(1);
    match counts.len() {
        0 => Limit::AtLeast(most),
        1 => Limit::Exact(*counts.keys().next().expect("one entry")),
        _ => {
            let largest = *counts.keys().next_back().expect("two or more entries");
            Limit::Mixed { largest, counts }
        }
    }
}

/// The distribution of one sample's delay: the backoff's, combined with the answer's
/// Retry-After (if it carried one) as `mode` says.
fn sample_delay(kind: Kind, mode: RetryAfterMode, p: &Params, s: &Sample) -> Delay {
    let backoff = delay(kind, p, s.k, s.previous_s);
    match s.retry_after_s {
        Some(ra) => mode.delay(backoff, ra),
        None => backoff,
    }
}

/// The negative log-likelihood of `samples` under `kind` and `mode` with `p`, with the
/// outlier background.
fn negative_log_likelihood(
    kind: Kind,
    mode: RetryAfterMode,
    p: &Params,
    samples: &[Sample],
    background: f64,
) -> f64 {
    samples
        .iter()
        .map(|s| {
            let f = sample_delay(kind, mode, p, s).density(s.delay_s, &p.noise);
            -((1.0 - OUTLIER_SHARE) * f + OUTLIER_SHARE * background).ln()
        })
        .sum()
}

/// The kind's parameters from the optimiser's unconstrained variables: logs of durations, of
/// `multiplier - 1`, the logit of proportional jitter's `p`, and last the logits of the
/// overhead's offset and tail as shares of [`OVERHEAD_MAX_S`].
fn params_of(kind: Kind, x: &[f64], sigma_floor_s: f64) -> Params {
    let mut it = x.iter().copied();
    let sigma_s = sigma_floor_s + it.next().expect("sigma is always fitted").exp();
    // Durations of at least a microsecond (below that a log cannot tell), growth at most 10x
    // per retry.
    let base_s = if kind == Kind::None { 0.0 } else { SIGMA_FLOOR_S + it.next().expect("base").exp() };
    let cap_s = if kind.has_cap() { SIGMA_FLOOR_S + it.next().expect("cap").exp() } else { f64::INFINITY };
    let multiplier =
        if kind.has_multiplier() { 1.0 + 9.0 / (1.0 + (-it.next().expect("multiplier")).exp()) } else { 2.0 };
    let extra = match kind.formula() {
        Kind::AdditiveJitter => SIGMA_FLOOR_S + it.next().expect("jitter").exp(),
        // p below 1/2: at p = 1 the kind would be full jitter under another base.
        Kind::ProportionalJitter => 0.5 / (1.0 + (-it.next().expect("p")).exp()),
        _ => 0.0,
    };
    let logistic = |v: f64| 1.0 / (1.0 + (-v).exp());
    // A constant's base and the overhead's offset only show as their sum: the base takes it.
    let offset_s =
        if kind.fits_offset() { OVERHEAD_MAX_S * logistic(it.next().expect("offset")) } else { 0.0 };
    let tail_s = TAIL_FLOOR_S + OVERHEAD_MAX_S * logistic(it.next().expect("tail"));
    Params { base_s, cap_s, multiplier, extra, noise: Noise { offset_s, sigma_s, tail_s } }
}

/// Starting points for the optimiser, from simple statistics of the delays.
fn starts(kind: Kind, samples: &[Sample]) -> Vec<Vec<f64>> {
    if kind.immediate_first() {
        // From retry 2 on, the formula's own: its starts on the delays of retry 2 and later,
        // each taken as one retry earlier, with the base moved back one growth step
        // (x = [sigma, base, cap, multiplier, ...] for both such kinds).
        let later: Vec<Sample> =
            samples.iter().filter(|s| s.k >= 2).map(|s| Sample { k: s.k - 1, ..*s }).collect();
        if later.is_empty() {
            return starts(kind.formula(), samples);
        }
        return starts(kind.formula(), &later)
            .into_iter()
            .map(|mut x| {
                let multiplier = 1.0 + 9.0 / (1.0 + (-x[3]).exp());
                x[1] -= multiplier.ln();
                x
            })
            .collect();
    }
    let of_k = |k: u32| -> Vec<f64> {
        let mut v: Vec<f64> = samples.iter().filter(|s| s.k == k).map(|s| s.delay_s).collect();
        v.sort_by(f64::total_cmp);
        v
    };
    let all = {
        let mut v: Vec<f64> = samples.iter().map(|s| s.delay_s).collect();
        v.sort_by(f64::total_cmp);
        v
    };
    let median = |v: &[f64]| if v.is_empty() { f64::NAN } else { v[v.len() / 2] };
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (first, second) = (of_k(1), of_k(2));
    let first = if first.is_empty() { all.clone() } else { first };
    let tiny = 1e-4_f64;
    let pos = |x: f64| if x.is_finite() && x > tiny { x } else { tiny };
    let (min1, max1, mean1, med1) = (first[0], first[first.len() - 1], mean(&first), median(&first));
    let largest = all[all.len() - 1];
    // Growth per retry, from the edge or centre of the first two retries' delays that the
    // kind scales: the upper edge for the jitters from 0 or v/2, the lower edge for an added
    // jitter, the centre otherwise.
    let growth = if second.is_empty() {
        2.0
    } else {
        let ratio = match kind.formula() {
            Kind::FullJitter | Kind::EqualJitter => second[second.len() - 1] / max1,
            Kind::AdditiveJitter => second[0] / min1,
            _ => median(&second) / med1,
        };
        if ratio.is_finite() { ratio.clamp(1.05, 9.9) } else { 2.0 }
    };
    let base = match kind.formula() {
        Kind::None => 0.0,
        Kind::Constant => median(&all),
        Kind::Linear | Kind::Exponential => med1,
        Kind::FullJitter => 2.0 * mean1,
        Kind::EqualJitter => max1,
        Kind::DecorrelatedJitter | Kind::AdditiveJitter => min1,
        Kind::ProportionalJitter => mean1,
        Kind::ExponentialImmediateFirst | Kind::AdditiveJitterImmediateFirst => unreachable!("a formula"),
    };
    let sigma = pos(0.01 * median(&all));
    let caps: &[f64] = if kind.has_cap() { &[1.001, 100.0] } else { &[1.0] };
    caps.iter()
        .map(|&c| {
            let mut x = vec![sigma.ln()];
            if kind != Kind::None {
                x.push(pos(base).ln());
            }
            if kind.has_cap() {
                x.push(pos(largest * c).ln());
            }
            if kind.has_multiplier() {
                // The inverse of multiplier = 1 + 9 / (1 + e^-x).
                let g = ((growth - 1.0) / 9.0).clamp(0.001, 0.999);
                x.push((g / (1.0 - g)).ln());
            }
            match kind.formula() {
                Kind::AdditiveJitter => x.push(pos(max1 - min1).ln()),
                Kind::ProportionalJitter => {
                    let p = ((max1 - min1) / (max1 + min1)).clamp(0.005, 0.495);
                    x.push((p / (0.5 - p)).ln());
                }
                _ => {}
            }
            // The overhead's offset and tail at 1 % of their bound (0.1 ms).
            if kind.fits_offset() {
                x.push(OVERHEAD_START);
            }
            x.push(OVERHEAD_START);
            x
        })
        .collect()
}

/// The maximum-likelihood fit of one kind: Nelder-Mead from each start, restarted once from
/// its best point (a simplex can stall on a ridge), the best kept.
fn fit_kind(kind: Kind, mode: RetryAfterMode, samples: &[Sample]) -> KindFit {
    let largest = samples.iter().map(|s| s.delay_s).fold(0.0, f64::max);
    let background = 1.0 / (2.0 * largest).max(1e-3);
    // The starting points come from the delays that show the backoff.
    let shown: Vec<Sample> =
        samples.iter().copied().filter(|s| s.retry_after_s.is_none() || mode.shows_backoff()).collect();
    let from = if shown.is_empty() { samples } else { &shown };
    let objective = |floor: f64| {
        move |x: &[f64]| {
            let p = params_of(kind, x, floor);
            let v = negative_log_likelihood(kind, mode, &p, samples, background);
            if v.is_finite() { v } else { f64::INFINITY }
        }
    };
    // Continuation in the noise: with little noise the likelihood has cliffs at the edges of
    // the jitter's support, where a simplex stalls; so the fit first runs with the noise held
    // above 1 % and then 0.1 % of the median delay (a smooth surface that finds the basin),
    // and only then with the floor of 1 us, each stage starting where the last ended.
    let mut sorted: Vec<f64> = from.iter().map(|s| s.delay_s).collect();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2].max(1e-3);
    let floors = [1e-2 * median, 1e-3 * median, SIGMA_FLOOR_S];
    let mut best = starts(kind, from)
        .into_iter()
        .map(|x0| minimise(objective(floors[0]), &x0, 0.5, 1e-9, 1500))
        .min_by(|a, b| a.value.total_cmp(&b.value))
        .expect("at least one start");
    let mut floor = floors[0];
    for &next in &floors[1..] {
        // The same noise under the new floor.
        let sigma = floor + best.x[0].exp();
        best.x[0] = (sigma - next).max(1e-12).ln();
        floor = next;
        best = minimise(objective(floor), &best.x, 0.2, 1e-10, 1500);
    }
    // Restarts from the best point until they stop improving: a simplex that collapsed on an
    // edge gets a fresh, larger one (Nelder-Mead's usual remedy for premature convergence).
    for _ in 0..6 {
        let again = minimise(objective(floor), &best.x, 0.3, 1e-11, 1000);
        let improved = again.value < best.value - 1e-6;
        best = if again.value < best.value { again } else { best };
        if !improved {
            break;
        }
    }
    let params = params_of(kind, &best.x, floor);
    let uncapped = Params { cap_s: f64::INFINITY, ..params };
    let uncapped_max_s =
        samples.iter().map(|s| delay(kind, &uncapped, s.k, s.previous_s).support().1).fold(0.0, f64::max);
    let largest_s =
        samples.iter().map(|s| delay(kind, &params, s.k, s.previous_s).support().1).fold(0.0, f64::max);
    let n = samples.len() as f64;
    KindFit {
        kind,
        mode,
        params,
        log_likelihood: -best.value,
        bic: kind.parameters() as f64 * n.ln() + 2.0 * best.value,
        cap_reached: kind.has_cap() && params.cap_s < uncapped_max_s,
        uncapped_max_s,
        within_overhead: kind != Kind::None && largest_s <= OVERHEAD_MAX_S,
    }
}
