//! Brooker's retry_sim `run_sims` (mbrooker/simulator_example, commit bbfe394), run unchanged
//! over independent seeds (`experiments/validation/brooker-retry-sim-upstream.csv`, made by
//! `scripts/upstream/run_sims.py`): per failure rate and strategy, success rate and
//! amplification against upstream's mean over its seeds.

use super::parameters::{estimate, queue_server, require};
use crate::experiment::Experiment;
use crate::metrics::RunMetrics;
use crate::stats::{self, Estimate};
use crate::sweep::Results;
use crate::validation::{Evaluation, Row, Unit};
use std::collections::BTreeMap;
use std::path::Path;

/// The upstream outputs, in the suite folder.
pub const REFERENCE: &str = "brooker-retry-sim-upstream.csv";

pub const METHOD: &str = "Expected: upstream's mean over its seeds (one run of `run_sims` per \
seed, `random.seed(s)`), per seed successes / unique_calls and total_calls / unique_calls, with \
standard error sd / sqrt(seeds). Simulated: our mean over runs of `success_rate` and \
`amplification`. Both sides are means over independent seeds, so under the hypothesis that both \
programs implement the same model the difference has standard error sqrt(se_up^2 + se_ours^2); \
the tolerance is 4 of those (136 comparisons: the chance that one exceeds 4 by chance is about \
136 x 6.3e-5 = 0.9 %). No resolution term: upstream's counts are whole numbers.";

/// Per (failure rate, strategy): per seed (success rate, amplification).
type Upstream = BTreeMap<(u64, String), Vec<(f64, f64)>>;

/// Reads the upstream file; failure rates are keyed by their bits.
pub fn read_reference(path: &Path) -> Result<Upstream, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let expect = "seed,failure_rate,successes,total_calls,unique_calls,name";
    let mut lines = text.lines().filter(|l| !l.starts_with('#'));
    if lines.next().unwrap_or_default() != expect {
        return Err(format!("{}: the header is not `{expect}`", path.display()));
    }
    let mut out = Upstream::new();
    for line in lines.filter(|l| !l.trim().is_empty()) {
        let bad = || format!("{}: `{line}` is not {expect}", path.display());
        let f: Vec<&str> = line.split(',').collect();
        if f.len() != 6 {
            return Err(bad());
        }
        let num = |s: &str| s.parse::<f64>().map_err(|_| bad());
        let (rate, ok, total, unique) = (num(f[1])?, num(f[2])?, num(f[3])?, num(f[4])?);
        out.entry((rate.to_bits(), f[5].to_string())).or_default().push((ok / unique, total / unique));
    }
    Ok(out)
}

pub fn evaluate(exp: &Experiment, results: &Results, suite: &Path) -> Result<Evaluation, String> {
    let upstream = read_reference(&suite.join(REFERENCE))?;
    let mut rows = Vec::new();
    for (p, point) in exp.points.iter().enumerate() {
        let q = queue_server(&point.spec)?;
        require(q.errors.len() == 1 && q.faults.is_empty(), || {
            "this check needs one server.errors entry and no faults".into()
        })?;
        let rate = q.errors[0].probability;
        for (s, strategy) in point.strategies.iter().enumerate() {
            let seeds = upstream.get(&(rate.to_bits(), strategy.name.clone())).ok_or_else(|| {
                format!("{REFERENCE} has no line for failure rate {rate}, strategy `{}`", strategy.name)
            })?;
            type Metric = (&'static str, fn(&(f64, f64)) -> f64, fn(&RunMetrics) -> f64);
            let metrics: [Metric; 2] = [
                ("success rate", |x| x.0, |m| m.success_rate()),
                ("amplification", |x| x.1, |m| m.amplification()),
            ];
            for (name, upstream_value, ours) in metrics {
                let up = Estimate::of(&seeds.iter().map(upstream_value).collect::<Vec<_>>());
                rows.push(Row::value(
                    format!("p = {rate}, {}: {name}", strategy.name),
                    Unit::NUMBER,
                    up.mean,
                    up.se,
                    estimate(results, p, s, ours),
                    0.0,
                ));
            }
        }
    }
    let largest = rows.iter().filter_map(|r| r.z()).map(f64::abs).fold(0.0, f64::max);
    let seeds = upstream.values().map(Vec::len).min().unwrap_or(0);
    let summary = (
        format!("upstream run_sims: {} means over {seeds} seeds", rows.len()),
        format!("largest |z| {}", stats::sig_padded(largest, 2)),
    );
    Ok(Evaluation { rows, summary: Some(summary), ..Evaluation::default() })
}
