//! The AWS 2015 study ("Exponential Backoff And Jitter", Brooker) against its own simulator's
//! numbers (`experiments/validation/aws-2015-study-sim.csv`): one z-score per point and
//! metric, their distribution, and the study's qualitative claims.

use crate::experiment::{Experiment, WorkloadSpec};
use crate::metrics::RunMetrics;
use crate::stats::sig_padded;
use crate::stats::{self, Estimate, Z_TOLERANCE};
use crate::sweep::Results;
use crate::validation::{Evaluation, Row, Unit};
use std::collections::BTreeMap;
use std::path::Path;

/// The reference file, in the suite folder.
pub const REFERENCE: &str = "aws-2015-study-sim.csv";

/// The study's published means are rounded to 0.1 (calls, and milliseconds): half of that is a
/// bound on the rounding error, added to the tolerance.
const ROUNDING: f64 = 0.05;

pub const METHOD: &str = "Simulated: per point (client count) and strategy, the mean over runs of \
`calls` and of `completion_time_s`. Expected: the reference simulator's mean over its 300 runs, \
with standard error sd / sqrt(300). The z-score of a point is the difference of the means over \
the combined standard error sqrt(sd_ref^2 / 300 + sd_ours^2 / runs); the tolerance is 4 of those \
plus 0.05 (the reference's means are rounded to 0.1 call and 0.1 ms). Under the hypothesis that \
both simulators implement the same model, the z-scores are standard normal: 95.4 % within \
|z| < 2, 99.7 % within |z| < 3. Each claim is judged at each client count in both simulators: it \
*holds* there when every difference it asserts exceeds 4 standard errors in its direction, \
*fails* when one exceeds 4 standard errors the other way, and is *undecided* otherwise (the \
reference's strategies are independent runs; ours share random numbers, so our differences' \
standard errors come from the per-run differences). The check fails if any point is outside its \
tolerance, or if a claim holds in one simulator where it fails in the other.";

/// The study's strategy names for ours.
const NAMES: [(&str, &str); 5] = [
    ("exponential", "Exponential"),
    ("decorrelated-jitter", "Decorr"),
    ("equal-jitter", "EqualJitter"),
    ("full-jitter", "FullJitter"),
    ("no-backoff", "None"),
];

/// One line of the reference file.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reference {
    pub runs: f64,
    pub calls_mean: f64,
    pub calls_sd: f64,
    pub completion_ms_mean: f64,
    pub completion_ms_sd: f64,
}

/// The two metrics compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Metric {
    Calls,
    Time,
}

impl Metric {
    fn label(self) -> &'static str {
        match self {
            Metric::Calls => "calls",
            Metric::Time => "completion time",
        }
    }

    /// Ours, per run, in the reference's unit (calls; milliseconds).
    fn read(self, m: &RunMetrics) -> f64 {
        match self {
            Metric::Calls => m.calls as f64,
            Metric::Time => m.completion_time_s * 1e3,
        }
    }

    /// The reference's mean and sd.
    fn reference(self, r: &Reference) -> (f64, f64) {
        match self {
            Metric::Calls => (r.calls_mean, r.calls_sd),
            Metric::Time => (r.completion_ms_mean, r.completion_ms_sd),
        }
    }
}

/// Reads the reference file: (clients, study strategy name) -> its numbers.
pub fn read_reference(path: &Path) -> Result<BTreeMap<(u32, String), Reference>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = BTreeMap::new();
    let mut lines = text.lines();
    let header = lines.next().unwrap_or_default();
    let expect = "clients,strategy,runs,calls_mean,calls_sd,completion_ms_mean,completion_ms_sd";
    if header != expect {
        return Err(format!("{}: the header is not `{expect}`", path.display()));
    }
    for (i, line) in lines.enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let bad = || format!("{} line {}: `{line}` is not {expect}", path.display(), i + 2);
        let f: Vec<&str> = line.split(',').collect();
        if f.len() != 7 {
            return Err(bad());
        }
        let num = |s: &str| s.parse::<f64>().map_err(|_| bad());
        let clients = f[0].parse::<u32>().map_err(|_| bad())?;
        out.insert(
            (clients, f[1].to_string()),
            Reference {
                runs: num(f[2])?,
                calls_mean: num(f[3])?,
                calls_sd: num(f[4])?,
                completion_ms_mean: num(f[5])?,
                completion_ms_sd: num(f[6])?,
            },
        );
    }
    Ok(out)
}

/// One client count's data: per strategy (in [`NAMES`] order), the reference and our runs.
struct Point {
    clients: u32,
    reference: Vec<Reference>,
    ours: Vec<Vec<RunMetrics>>,
}

pub fn evaluate(exp: &Experiment, results: &Results, suite: &Path) -> Result<Evaluation, String> {
    let reference = read_reference(&suite.join(REFERENCE))?;
    let mut points = Vec::new();
    for (p, point) in exp.points.iter().enumerate() {
        let WorkloadSpec::Closed { clients, .. } = point.spec.workload else {
            return Err("the AWS study's workload is closed".into());
        };
        let mut refs = Vec::new();
        let mut ours = Vec::new();
        for (name, study) in NAMES {
            let s = point
                .strategies
                .iter()
                .position(|s| s.name == name)
                .ok_or_else(|| format!("no strategy named `{name}`"))?;
            refs.push(
                *reference
                    .get(&(clients, study.to_string()))
                    .ok_or_else(|| format!("{REFERENCE} has no line for {clients} clients, {study}"))?,
            );
            ours.push(results.cell(p, s).iter().map(|r| r.metrics.clone()).collect());
        }
        points.push(Point { clients, reference: refs, ours });
    }
    let mut rows = Vec::new();
    for pt in &points {
        for (i, (name, _)) in NAMES.iter().enumerate() {
            for metric in [Metric::Calls, Metric::Time] {
                let (mean, sd) = metric.reference(&pt.reference[i]);
                let ours: Vec<f64> = pt.ours[i].iter().map(|m| metric.read(m)).collect();
                let unit = match metric {
                    Metric::Calls => Unit::NUMBER,
                    Metric::Time => Unit { scale: 1.0, suffix: " ms" },
                };
                rows.push(Row::value(
                    format!("{} clients, {name}: {}", pt.clients, metric.label()),
                    unit,
                    mean,
                    stats::standard_error(sd, pt.reference[i].runs as usize),
                    Estimate::of(&ours),
                    ROUNDING,
                ));
            }
        }
    }
    let zs: Vec<(String, f64)> = rows.iter().filter_map(|r| r.z().map(|z| (r.what.clone(), z))).collect();
    let (claims_md, failures) = claims(&points);
    let within = |limit: f64| zs.iter().filter(|(_, z)| z.abs() < limit).count();
    let summary = (
        format!("the study's simulator: {} means, 300 runs each", rows.len()),
        format!(
            "{} of {} within |z| < 2 ({} expected), {} within 3; max |z| {}",
            within(2.0),
            zs.len(),
            sig_padded(zs.len() as f64 * (stats::normal_cdf(2.0) - stats::normal_cdf(-2.0)), 3),
            within(3.0),
            sig_padded(zs.iter().map(|(_, z)| z.abs()).fold(0.0, f64::max), 2),
        ),
    );
    let sections = vec![z_distribution(&zs, &points), claims_md];
    Ok(Evaluation { rows, sections, failures, summary: Some(summary) })
}

/// The z-scores' distribution: counts within 2 and 3, quantiles against the normal's, and per
/// strategy and metric.
fn z_distribution(zs: &[(String, f64)], points: &[Point]) -> String {
    let n = zs.len();
    let mut sorted: Vec<f64> = zs.iter().map(|(_, z)| *z).collect();
    sorted.sort_by(f64::total_cmp);
    let values: Vec<f64> = zs.iter().map(|(_, z)| *z).collect();
    let p2 = stats::normal_cdf(2.0) - stats::normal_cdf(-2.0);
    let p3 = stats::normal_cdf(3.0) - stats::normal_cdf(-3.0);
    let count = |limit: f64| values.iter().filter(|z| z.abs() < limit).count();
    let mut md = String::new();
    md.push_str("**Distribution of the z-scores.** ");
    md.push_str(&format!(
        "{n} z-scores: mean {} (0 expected), sd {} (1 expected); {} within |z| < 2 ({} expected), {} \
         within |z| < 3 ({} expected). Our runs share their random numbers across strategies and \
         client counts (common random numbers, DESIGN §2), so our side's errors, and the z-scores, \
         are positively correlated: their mean and sd scatter more around 0 and 1 than for 190 \
         independent values.\n\n",
        sig_padded(stats::mean(&values), 2),
        sig_padded(stats::sample_sd(&values), 3),
        count(2.0),
        sig_padded(n as f64 * p2, 4),
        count(3.0),
        sig_padded(n as f64 * p3, 4),
    ));
    md.push_str("QQ summary: the empirical quantiles of the z-scores against the standard normal's.\n\n");
    md.push_str("| probability | normal quantile | z-score quantile |\n|---|---|---|\n");
    for q in [0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99] {
        // Type-7 (linear) interpolation between order statistics.
        let h = q * (n - 1) as f64;
        let (lo, frac) = (h.floor() as usize, h - h.floor());
        let v = sorted[lo] + frac * (sorted[(lo + 1).min(n - 1)] - sorted[lo]);
        md.push_str(&format!("| {q} | {} | {} |\n", fixed(stats::normal_quantile(q), 2), fixed(v, 2)));
    }
    md.push_str(&format!("\nPer strategy and metric, over the {} client counts:\n\n", points.len()));
    md.push_str("| strategy | metric | mean z | largest \\|z\\| | \\|z\\| >= 2 |\n|---|---|---|---|---|\n");
    for (name, _) in NAMES {
        for metric in [Metric::Calls, Metric::Time] {
            let suffix = format!(", {name}: {}", metric.label());
            let mine: Vec<f64> = zs.iter().filter(|(w, _)| w.ends_with(&suffix)).map(|(_, z)| *z).collect();
            let largest = mine.iter().copied().fold(0.0, |a: f64, z| if z.abs() > a.abs() { z } else { a });
            md.push_str(&format!(
                "| {name} | {} | {} | {} | {} |\n",
                metric.label(),
                fixed(stats::mean(&mine), 2),
                fixed(largest, 2),
                mine.iter().filter(|z| z.abs() >= 2.0).count()
            ));
        }
    }
    let mut far: Vec<&(String, f64)> = zs.iter().filter(|(_, z)| z.abs() >= 3.0).collect();
    far.sort_by(|a, b| b.1.abs().total_cmp(&a.1.abs()));
    if !far.is_empty() {
        md.push_str("\nPoints with |z| >= 3: ");
        let list: Vec<String> = far.iter().map(|(w, z)| format!("{w} (z = {})", fixed(*z, 2))).collect();
        md.push_str(&list.join("; "));
        md.push_str(&format!(
            ". Among {n} comparisons, about {} beyond 3 are expected by chance.\n",
            sig_padded(n as f64 * (1.0 - p3), 2)
        ));
    }
    md
}

/// `a` compared with `factor x b` for each `b`: greater or less.
struct Claim {
    text: &'static str,
    metric: Metric,
    a: &'static str,
    /// Empty: every other strategy.
    others: &'static [&'static str],
    greater: bool,
    factor: f64,
}

/// The study's qualitative claims (Brooker 2015: "The no-jitter exponential backoff approach
/// is the clear loser. It not only takes more work, but also takes more time than the jittered
/// approaches. ... Of the jittered approaches, 'Equal Jitter' is the loser. It does slightly
/// more work than 'Full Jitter', and takes much longer. The decision between 'Decorrelated
/// Jitter' and 'Full Jitter' is less clear. The 'Full Jitter' approach uses less work, but
/// slightly more time."), the README's headline, and no backoff's place.
const CLAIMS: &[Claim] = &[
    Claim {
        text: "exponential takes the most time",
        metric: Metric::Time,
        a: "exponential",
        others: &[],
        greater: true,
        factor: 1.0,
    },
    Claim {
        text: "exponential makes more calls than every jittered strategy",
        metric: Metric::Calls,
        a: "exponential",
        others: &["decorrelated-jitter", "equal-jitter", "full-jitter"],
        greater: true,
        factor: 1.0,
    },
    Claim {
        text: "no backoff finishes first",
        metric: Metric::Time,
        a: "no-backoff",
        others: &[],
        greater: false,
        factor: 1.0,
    },
    Claim {
        text: "no backoff makes the most calls",
        metric: Metric::Calls,
        a: "no-backoff",
        others: &[],
        greater: true,
        factor: 1.0,
    },
    Claim {
        text: "full jitter makes the fewest calls",
        metric: Metric::Calls,
        a: "full-jitter",
        others: &[],
        greater: false,
        factor: 1.0,
    },
    Claim {
        text: "equal jitter makes more calls than full jitter",
        metric: Metric::Calls,
        a: "equal-jitter",
        others: &["full-jitter"],
        greater: true,
        factor: 1.0,
    },
    Claim {
        text: "equal jitter takes longer than full jitter",
        metric: Metric::Time,
        a: "equal-jitter",
        others: &["full-jitter"],
        greater: true,
        factor: 1.0,
    },
    Claim {
        text: "full jitter makes fewer calls than decorrelated jitter",
        metric: Metric::Calls,
        a: "full-jitter",
        others: &["decorrelated-jitter"],
        greater: false,
        factor: 1.0,
    },
    Claim {
        text: "full jitter takes longer than decorrelated jitter",
        metric: Metric::Time,
        a: "full-jitter",
        others: &["decorrelated-jitter"],
        greater: true,
        factor: 1.0,
    },
    Claim {
        text: "full jitter makes fewer than half the calls of exponential",
        metric: Metric::Calls,
        a: "full-jitter",
        others: &["exponential"],
        greater: false,
        factor: 0.5,
    },
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verdict {
    Holds,
    Fails,
    Undecided,
}

/// Combines the verdicts of a claim's comparisons: it holds if all hold, fails if one fails.
fn all(verdicts: impl Iterator<Item = Verdict>) -> Verdict {
    let v: Vec<Verdict> = verdicts.collect();
    if v.contains(&Verdict::Fails) {
        Verdict::Fails
    } else if v.iter().all(|v| *v == Verdict::Holds) {
        Verdict::Holds
    } else {
        Verdict::Undecided
    }
}

/// `diff` (positive when the claim holds) against `Z_TOLERANCE` standard errors.
fn verdict(diff: f64, se: f64) -> Verdict {
    if diff > Z_TOLERANCE * se {
        Verdict::Holds
    } else if diff < -Z_TOLERANCE * se {
        Verdict::Fails
    } else {
        Verdict::Undecided
    }
}

fn index(name: &str) -> usize {
    NAMES.iter().position(|(n, _)| *n == name).expect("claims name known strategies")
}

/// Each claim at each client count in both simulators, as a Markdown table, and the
/// disagreements.
fn claims(points: &[Point]) -> (String, Vec<String>) {
    let mut md = String::from(
        "**The study's claims.** At each client count, in the reference simulator and in ours \
         (holds / fails / undecided at 4 standard errors):\n\n\
         | claim | reference: holds at | reference: fails at | ours: holds at | ours: fails at | agree |\n\
         |---|---|---|---|---|---|\n",
    );
    let mut failures = Vec::new();
    for c in CLAIMS {
        let a = index(c.a);
        let others: Vec<usize> = if c.others.is_empty() {
            (0..NAMES.len()).filter(|&i| i != a).collect()
        } else {
            c.others.iter().map(|o| index(o)).collect()
        };
        let sign = if c.greater { 1.0 } else { -1.0 };
        let mut reference = Vec::new();
        let mut ours = Vec::new();
        for pt in points {
            let r = all(others.iter().map(|&b| {
                let (ma, sa) = c.metric.reference(&pt.reference[a]);
                let (mb, sb) = c.metric.reference(&pt.reference[b]);
                let (na, nb) = (pt.reference[a].runs as usize, pt.reference[b].runs as usize);
                let se = stats::combined_se(
                    stats::standard_error(sa, na),
                    c.factor * stats::standard_error(sb, nb),
                );
                verdict(sign * (ma - c.factor * mb), se)
            }));
            let o = all(others.iter().map(|&b| {
                let d: Vec<f64> = pt.ours[a]
                    .iter()
                    .zip(&pt.ours[b])
                    .map(|(x, y)| sign * (c.metric.read(x) - c.factor * c.metric.read(y)))
                    .collect();
                let e = Estimate::of(&d);
                verdict(e.mean, e.se)
            }));
            if (r == Verdict::Holds && o == Verdict::Fails) || (r == Verdict::Fails && o == Verdict::Holds) {
                failures.push(format!(
                    "claim \"{}\" at {} clients: {} in the reference, {} in ours",
                    c.text,
                    pt.clients,
                    if r == Verdict::Holds { "holds" } else { "fails" },
                    if o == Verdict::Holds { "holds" } else { "fails" }
                ));
            }
            reference.push((pt.clients, r));
            ours.push((pt.clients, o));
        }
        let at = |v: &[(u32, Verdict)], which: Verdict| ranges(v, which);
        let disagree = reference
            .iter()
            .zip(&ours)
            .filter(|((_, r), (_, o))| {
                matches!((r, o), (Verdict::Holds, Verdict::Fails) | (Verdict::Fails, Verdict::Holds))
            })
            .count();
        md.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            c.text,
            at(&reference, Verdict::Holds),
            at(&reference, Verdict::Fails),
            at(&ours, Verdict::Holds),
            at(&ours, Verdict::Fails),
            if disagree == 0 { "yes".to_string() } else { format!("**no** ({disagree} counts)") }
        ));
    }
    md.push_str("\nClient counts not listed under holds or fails are undecided.\n");
    (md, failures)
}

/// The client counts with verdict `which`, as ranges over the sweep: "10-90, 110", or "none".
fn ranges(v: &[(u32, Verdict)], which: Verdict) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < v.len() {
        if v[i].1 != which {
            i += 1;
            continue;
        }
        let start = i;
        while i + 1 < v.len() && v[i + 1].1 == which {
            i += 1;
        }
        parts.push(if start == i { v[i].0.to_string() } else { format!("{}-{}", v[start].0, v[i].0) });
        i += 1;
    }
    if parts.is_empty() { "none".into() } else { parts.join(", ") }
}

/// `x` with `decimals` decimals, "-0.00" written "0.00".
fn fixed(x: f64, decimals: usize) -> String {
    let s = format!("{x:.decimals$}");
    if s.trim_start_matches('-').chars().all(|c| c == '0' || c == '.') {
        s.trim_start_matches('-').to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_of_client_counts() {
        let v = [
            (10, Verdict::Holds),
            (20, Verdict::Holds),
            (30, Verdict::Undecided),
            (40, Verdict::Holds),
            (50, Verdict::Fails),
        ];
        assert_eq!(ranges(&v, Verdict::Holds), "10-20, 40");
        assert_eq!(ranges(&v, Verdict::Fails), "50");
        assert_eq!(ranges(&v[..3], Verdict::Fails), "none");
        assert_eq!(fixed(-0.001, 2), "0.00");
        assert_eq!(fixed(-1.256, 2), "-1.26");
    }

    #[test]
    fn verdicts_at_four_standard_errors() {
        assert_eq!(verdict(4.1, 1.0), Verdict::Holds);
        assert_eq!(verdict(-4.1, 1.0), Verdict::Fails);
        assert_eq!(verdict(3.9, 1.0), Verdict::Undecided);
        assert_eq!(all([Verdict::Holds, Verdict::Undecided].into_iter()), Verdict::Undecided);
        assert_eq!(all([Verdict::Holds, Verdict::Fails].into_iter()), Verdict::Fails);
        assert_eq!(all([Verdict::Holds, Verdict::Holds].into_iter()), Verdict::Holds);
    }

    #[test]
    fn the_shipped_reference_reads() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(crate::validation::SUITE_DIR).join(REFERENCE);
        let r = read_reference(&path).unwrap();
        assert_eq!(r.len(), 95);
        let ten = r[&(10, "Decorr".to_string())];
        assert_eq!(
            ten,
            Reference {
                runs: 300.0,
                calls_mean: 37.6,
                calls_sd: 2.2,
                completion_ms_mean: 434.1,
                completion_ms_sd: 91.7
            }
        );
    }
}
