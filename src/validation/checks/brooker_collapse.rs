//! Brooker's simple_collapse_sim, the two ramp scenarios (mbrooker/simulator_example, commit
//! bbfe394, `run_sim_ramp`), run unchanged over independent seeds
//! (`experiments/validation/brooker-collapse-ramp-upstream.csv`, made by
//! `scripts/upstream/collapse_ramp.py`): per 5 s window, calls started, successes, retries and
//! timeouts, and the collapse onset, against upstream's means over its seeds.
//!
//! Upstream counts per simulated second what its `Stats` object is told: a start when the load
//! generator makes a call, a success when an answer reaches a client still waiting for it, a
//! timeout when an attempt's timer fires while it is the current one, and a retry at that same
//! instant when the call has attempts left (the retry itself is sent after the backoff). The
//! runs' time series give the same counts: operations started and ended in success per
//! second, timeouts per second, and retries as timeouts minus failures, because in this file
//! an operation fails only when its last attempt times out (refused otherwise).

use super::parameters::{queue_server, require, single_point};
use crate::metrics::series::Count;
use crate::metrics::{FailReason, RunMetrics};
use crate::stats::{self, Estimate};
use crate::sweep::Results;
use crate::validation::{Evaluation, Row, Unit};
use std::collections::BTreeMap;
use std::path::Path;

/// The upstream outputs, in the suite folder.
pub const REFERENCE: &str = "brooker-collapse-ramp-upstream.csv";

/// Seconds per compared window.
pub const WINDOW_S: usize = 5;

/// Upstream's counters, in its CSV's order.
pub const COUNTERS: [&str; 4] = ["starts", "successes", "retries", "timeouts"];

/// One simulated second's counters, in [`COUNTERS`] order.
pub type Second = [f64; 4];

const TIMEOUTS: usize = 3;
const SUCCESSES: usize = 1;

pub const METHOD: &str = "Expected: upstream's mean over its seeds (one run of `run_sim_ramp` per \
seed and scenario, after `random.seed(s)`) of each counter summed over the window, with standard \
error sd / sqrt(seeds). Simulated: the same sum per run, from the run's 1 s time series: \
operations started, operations that succeeded, `timeouts`, and retries = `timeouts` - \
`failures` (an operation fails only when its last attempt times out; upstream counts a retry \
when the timeout fires, not when the backed-off retry is sent). Collapse onset: per run, the \
first whole second in which timeouts outnumber successes (80 s for a run that never \
collapses), upstream's runs and ours by the same rule. Both sides are means over independent \
seeds, so under the hypothesis that both programs implement the same model the difference has \
standard error sqrt(se_up^2 + se_ours^2); the tolerance is 4 of those (130 comparisons: the \
chance that one exceeds 4 by chance is about 130 x 6.3e-5 = 0.8 %). A window where both sides \
are 0 in every run compares exactly. No resolution term: the counts are whole numbers on the \
same 1 s grid.";

/// Per scenario (upstream's `run_name`): per seed, per simulated second, the counters.
pub type Upstream = BTreeMap<String, Vec<Vec<Second>>>;

/// Reads the upstream file: every seed of a scenario must have the same seconds, 0, 1, ...
pub fn read_reference(path: &Path) -> Result<Upstream, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let expect = "seed,scenario,t,starts,successes,retries,timeouts";
    let mut lines = text.lines().filter(|l| !l.starts_with('#'));
    if lines.next().unwrap_or_default() != expect {
        return Err(format!("{}: the header is not `{expect}`", path.display()));
    }
    // (scenario, seed) -> seconds, in file order.
    let mut runs: BTreeMap<(String, u64), Vec<Second>> = BTreeMap::new();
    for line in lines.filter(|l| !l.trim().is_empty()) {
        let bad = || format!("{}: `{line}` is not {expect}", path.display());
        let f: Vec<&str> = line.split(',').collect();
        if f.len() != 7 {
            return Err(bad());
        }
        let num = |s: &str| s.parse::<f64>().map_err(|_| bad());
        let seed = f[0].parse::<u64>().map_err(|_| bad())?;
        let run = runs.entry((f[1].to_string(), seed)).or_default();
        if num(f[2])? != run.len() as f64 {
            return Err(format!("{}: `{line}`: seconds must run 0, 1, 2, ... per seed", path.display()));
        }
        run.push([num(f[3])?, num(f[4])?, num(f[5])?, num(f[6])?]);
    }
    let mut out = Upstream::new();
    for ((scenario, _), seconds) in runs {
        out.entry(scenario).or_default().push(seconds);
    }
    for (scenario, seeds) in &out {
        require(seeds.iter().all(|s| s.len() == seeds[0].len()), || {
            format!("{}: the seeds of `{scenario}` cover different seconds", path.display())
        })?;
    }
    Ok(out)
}

/// The collapse onset of one run: the first second in which timeouts outnumber successes;
/// the run's length when that never happens.
pub fn onset(run: &[Second]) -> f64 {
    run.iter().position(|s| s[TIMEOUTS] > s[SUCCESSES]).unwrap_or(run.len()) as f64
}

/// Sums of each counter over the windows of `WINDOW_S` seconds.
fn windows(run: &[Second]) -> Vec<Second> {
    run.chunks(WINDOW_S)
        .map(|w| w.iter().fold([0.0; 4], |acc, s| std::array::from_fn(|c| acc[c] + s[c])))
        .collect()
}

/// Our run's first `seconds` seconds as upstream counts them, or why the run cannot be read so.
fn ours(m: &RunMetrics, seconds: usize) -> Result<Vec<Second>, String> {
    let exhausted_or_pending =
        m.failed_by[FailReason::Exhausted as usize] + m.failed_by[FailReason::Unfinished as usize];
    require(m.failed == exhausted_or_pending && m.series.total(Count::Rejected) == 0, || {
        "retries are counted as timeouts - failures: an operation may fail only by its last \
         attempt's timeout (no rejections, no budget, breaker, throttle or deadline)"
            .into()
    })?;
    require(m.series.len() > seconds && m.series.width().as_ns() == 1_000_000_000, || {
        format!("this check needs [output] bucket = \"1s\" and a horizon of at least {seconds} s")
    })?;
    Ok((0..seconds)
        .map(|i| {
            let row = m.series.row(i);
            let count = |c: Count| row[c as usize].unwrap_or(0.0);
            let timeouts = count(Count::Timeouts);
            [m.series.started(i) as f64, count(Count::Successes), timeouts - count(Count::Failures), timeouts]
        })
        .collect())
}

pub fn evaluate(
    exp: &crate::experiment::Experiment,
    results: &Results,
    suite: &Path,
) -> Result<Evaluation, String> {
    let upstream = read_reference(&suite.join(REFERENCE))?;
    let (spec, strategies) = single_point(exp)?;
    let q = queue_server(spec)?;
    require(q.errors.is_empty() && q.faults.is_empty(), || {
        "this check needs a server without errors or faults".into()
    })?;
    let seconds_unit = Unit { scale: 1.0, suffix: " s" };
    let (mut rows, mut onsets) = (Vec::new(), Vec::new());
    for (s, strategy) in strategies.iter().enumerate() {
        require(strategy.policy.layers.is_empty(), || {
            format!("strategy `{}`: gateway layers would retry where upstream has none", strategy.name)
        })?;
        let up = upstream
            .get(&strategy.name)
            .ok_or_else(|| format!("{REFERENCE} has no scenario named `{}`", strategy.name))?;
        let seconds = up[0].len();
        let ours: Vec<Vec<Second>> =
            results.cell(0, s).iter().map(|r| ours(&r.metrics, seconds)).collect::<Result<_, _>>()?;
        let (up_w, ours_w): (Vec<Vec<Second>>, Vec<Vec<Second>>) =
            (up.iter().map(|r| windows(r)).collect(), ours.iter().map(|r| windows(r)).collect());
        for w in 0..up_w[0].len() {
            for (c, counter) in COUNTERS.iter().enumerate() {
                let column =
                    |runs: &[Vec<Second>]| Estimate::of(&runs.iter().map(|r| r[w][c]).collect::<Vec<_>>());
                let expected = column(&up_w);
                rows.push(Row::value(
                    format!("{}, {}-{} s: {counter}", strategy.name, w * WINDOW_S, (w + 1) * WINDOW_S),
                    Unit::NUMBER,
                    expected.mean,
                    expected.se,
                    column(&ours_w),
                    0.0,
                ));
            }
        }
        let expected = Estimate::of(&up.iter().map(|r| onset(r)).collect::<Vec<_>>());
        let observed = Estimate::of(&ours.iter().map(|r| onset(r)).collect::<Vec<_>>());
        onsets.push(format!("{} {} s", strategy.name, stats::sig_padded(expected.mean, 3)));
        rows.push(Row::value(
            format!("{}: collapse onset", strategy.name),
            seconds_unit,
            expected.mean,
            expected.se,
            observed,
            0.0,
        ));
    }
    let largest = rows.iter().filter_map(|r| r.z()).map(f64::abs).fold(0.0, f64::max);
    let seeds = upstream.values().map(Vec::len).min().unwrap_or(0);
    let summary = (
        format!("upstream ramps: {} means over {seeds} seeds; onset {}", rows.len(), onsets.join(", ")),
        format!("largest |z| {}", stats::sig_padded(largest, 2)),
    );
    Ok(Evaluation { rows, summary: Some(summary), ..Evaluation::default() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn onset_is_the_first_second_with_more_timeouts_than_successes() {
        let run = [[40.0, 30.0, 0.0, 0.0], [45.0, 30.0, 20.0, 30.0], [50.0, 20.0, 25.0, 31.0]];
        assert_eq!(onset(&run), 2.0, "a tie is not a collapse");
        assert_eq!(onset(&run[..2]), 2.0, "never collapsed: the run's length");
    }

    #[test]
    fn windows_sum_each_counter() {
        let run: Vec<Second> = (0..7).map(|i| [i as f64, 1.0, 0.0, 2.0]).collect();
        assert_eq!(windows(&run), vec![[10.0, 5.0, 0.0, 10.0], [11.0, 2.0, 0.0, 4.0]]);
    }

    #[test]
    fn the_reference_needs_consecutive_seconds() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("up.csv");
        let header = "# note\nseed,scenario,t,starts,successes,retries,timeouts\n";
        std::fs::write(
            &file,
            format!("{header}1,a,0,4,0,0,0\n1,a,1,5,3,0,0\n2,a,0,6,0,0,0\n2,a,1,2,4,1,1\n"),
        )
        .unwrap();
        let up = read_reference(&file).unwrap();
        assert_eq!(
            up["a"],
            vec![
                vec![[4.0, 0.0, 0.0, 0.0], [5.0, 3.0, 0.0, 0.0]],
                vec![[6.0, 0.0, 0.0, 0.0], [2.0, 4.0, 1.0, 1.0]]
            ]
        );
        std::fs::write(&file, format!("{header}1,a,0,4,0,0,0\n1,a,2,5,3,0,0\n")).unwrap();
        assert!(read_reference(&file).unwrap_err().contains("seconds must run"));
    }
}
