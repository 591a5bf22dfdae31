//! The verdict: what a result folder says, in plain sentences generated from its numbers, read
//! first in report.html and printed first at the end of a run. Per strategy: the headline
//! metrics at its worst point (by the comparison's primary metric) and at the reference
//! point, and the sweep ranges over which it is metastable, fails the `--where` constraints
//! or is the best strategy.
//!
//! A pure function of a [`ResultSet`]: the same files give the same sentences, in the
//! terminal and on the page.

use super::ReportError;
use super::compare::{COMPARE_METRICS, is_better, primary_metric};
use super::table::ResultSet;
use crate::metrics::catalogue::{self, Better, label};
use crate::metrics::constraint::Constraint;
use crate::stats::sig;

/// The metrics a verdict quotes, in order, those the folder has.
pub const HEADLINE_METRICS: &[&str] =
    &["success_rate", "amplification", "latency_p99_s", "recovery_time_s", "metastable"];

/// What the verdict is asked about.
#[derive(Clone, Debug, Default)]
pub struct VerdictOptions {
    /// The reference point, as `(swept key, value)` pairs (`--reference`): the first point
    /// whose values match every pair (a value as written in the CSV column, or the same
    /// number or duration). Empty: the manifest's (`[output] reference`), else the first
    /// point.
    pub reference: Vec<(String, String)>,
    /// Constraints a cell must meet; the verdict says where each strategy fails them.
    pub constraints: Vec<Constraint>,
}

/// The verdict on one result folder.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// What the sentences compare: the primary metric and the reference point.
    pub intro: String,
    /// Per strategy, in the folder's order: its name and its sentences.
    pub strategies: Vec<(String, Vec<String>)>,
}

impl Verdict {
    /// The verdict as text: the intro, then one paragraph per strategy.
    pub fn text(&self) -> String {
        let mut out = format!("{}\n", self.intro);
        for (name, sentences) in &self.strategies {
            out.push_str(&format!("- {name}: {}\n", sentences.join("; ")));
        }
        out
    }
}

/// Parses `KEY=VALUE` (a reference point's coordinate).
pub fn parse_reference(text: &str) -> Result<(String, String), ReportError> {
    match text.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() && !v.trim().is_empty() => {
            Ok((k.trim().to_string(), v.trim().trim_matches('"').to_string()))
        }
        _ => Err(ReportError::BadReference {
            text: text.to_string(),
            reason: "expected KEY=VALUE, a swept key and one of its values".into(),
        }),
    }
}

/// The index of the reference point: the first point matching every pair of `reference`
/// (checked as the loader checks `[output] reference`: [`crate::experiment::resolve_reference`]).
pub fn reference_point(set: &ResultSet, reference: &[(String, String)]) -> Result<usize, ReportError> {
    let values: Vec<&[String]> = set.points.iter().map(|p| p.values.as_slice()).collect();
    let text = || reference.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ");
    let pairs = crate::experiment::resolve_reference(&set.sweep_keys, &values, reference).map_err(
        |crate::experiment::BadReference { key, reason }| ReportError::BadReference {
            text: key
                .and_then(|k| reference.iter().find(|(r, _)| *r == k))
                .map_or_else(text, |(k, v)| format!("{k}={v}")),
            reason,
        },
    )?;
    let keys: Vec<usize> =
        pairs.iter().filter_map(|(k, _)| set.sweep_keys.iter().position(|s| s == k)).collect();
    Ok((0..set.points.len())
        .find(|&p| keys.iter().zip(&pairs).all(|(&k, (_, v))| set.points[p].values[k] == *v))
        .unwrap_or(0))
}

/// The metric that ranks points: the first of the comparison's metrics with a direction
/// whose means differ; without one, success_rate.
fn ranking_metric(set: &ResultSet) -> Option<usize> {
    let varying: Vec<usize> = COMPARE_METRICS
        .iter()
        .filter_map(|m| set.metric_index(m))
        .filter(|&m| set.has_values(m))
        .filter(|&m| {
            let mut values = set.summary.iter().filter_map(|r| r.mean[m]);
            let first = values.next();
            values.any(|v| Some(v) != first)
        })
        .collect();
    primary_metric(set, &varying).or_else(|| set.metric_index("success_rate"))
}

/// One headline metric of one (point, strategy) in words: `success 0.198`, `p99 6.01 s`,
/// `never recovered (20 of 20 runs)`, `metastable in 16 of 20 runs`. `None` when the cell
/// has nothing to say about it (recovery and metastability where the point has no fault).
fn headline(set: &ResultSet, point: usize, strategy: usize, metric: &str) -> Option<String> {
    let m = set.metric_index(metric)?;
    let mean = set.summary_row(point, strategy)?.mean[m];
    // Without a fault window there is nothing to recover from: "recovery 0 s, not metastable"
    // beside a success rate of 0 (errors all along) would read as a healthy service.
    let faultless = set.points[point].faults.is_empty();
    match metric {
        "recovery_time_s" if faultless && mean == Some(0.0) => None,
        "metastable" if faultless && set.metastable_runs(point, strategy)?.0 == 0 => None,
        "recovery_time_s" => match (mean, set.never_recovered(point, strategy)) {
            (None, Some((k, n))) if k > 0 => Some(format!("never recovered ({k} of {n} runs)")),
            (Some(v), Some((k, n))) if k > 0 => {
                Some(format!("recovery {} s, never in {k} of {n} runs", sig(v, 3)))
            }
            (Some(v), _) => Some(format!("recovery {} s", sig(v, 3))),
            (None, _) => None,
        },
        "metastable" => match set.metastable_runs(point, strategy)? {
            (0, _) => Some("not metastable".into()),
            (k, n) => Some(format!("metastable in {k} of {n} runs")),
        },
        _ => {
            let v = mean?;
            let word = match metric {
                "success_rate" => "success".to_string(),
                "latency_p99_s" => "p99".to_string(),
                other => label(other),
            };
            let unit = if metric.ends_with("_s") { " s" } else { "" };
            Some(format!("{word} {}{unit}", sig(v, 3)))
        }
    }
}

fn headlines(set: &ResultSet, point: usize, strategy: usize) -> String {
    HEADLINE_METRICS.iter().filter_map(|m| headline(set, point, strategy, m)).collect::<Vec<_>>().join(", ")
}

/// The folder's windows and priority classes (`success_rate@NAME` columns), each with its
/// span as the experiment file wrote it (`[output] windows`, read from the manifest's copy of
/// the file; none for a class): windows in order of their start, then the classes.
fn window_names(set: &ResultSet) -> Vec<(&str, Option<(String, String)>)> {
    let spans: toml::Table = toml::from_str::<toml::Table>(&set.manifest.experiment_toml)
        .ok()
        .and_then(|t| t.get("output")?.get("windows")?.as_table().cloned())
        .unwrap_or_default();
    let span = |name: &str| -> Option<(String, String)> {
        let pair = spans.get(name)?.as_array()?;
        Some((pair.first()?.as_str()?.to_string(), pair.get(1)?.as_str()?.to_string()))
    };
    let mut names: Vec<(&str, Option<(String, String)>)> =
        set.metrics.iter().filter_map(|m| m.strip_prefix("success_rate@")).map(|n| (n, span(n))).collect();
    let start = |s: &Option<(String, String)>| {
        s.as_ref()
            .and_then(|(a, _)| crate::experiment::Duration::parse(a).ok())
            .map_or(u64::MAX, |d| d.as_ns())
    };
    names.sort_by_key(|(_, s)| start(s));
    names
}

/// What one window (or priority class) of one cell measured: `during slowdown: success 0.97,
/// p99 of successes 0.312 s, server amplification 1.85`. A whole-run figure can hide a stretch
/// of the run (a slowdown's 30 s in 300 s), so each window is said beside the headlines.
/// `None` when no operation started in it.
fn window_words(
    set: &ResultSet,
    point: usize,
    strategy: usize,
    (name, span): &(&str, Option<(String, String)>),
) -> Option<String> {
    let row = set.summary_row(point, strategy)?;
    let mean = |metric: &str| set.metric_index(&format!("{metric}@{name}")).and_then(|m| row.mean[m]);
    let success = mean("success_rate")?;
    let mut parts = vec![format!("success {}", sig(success, 3))];
    if let Some(p99) = mean("latency_ok_p99_s") {
        parts.push(format!("p99 of successes {} s", sig(p99, 3)));
    }
    if let Some(amp) = mean("server_amplification") {
        parts.push(format!("server amplification {}", sig(amp, 3)));
    }
    let when = span.as_ref().map_or(String::new(), |(a, b)| format!(" [{a}, {b})"));
    Some(format!("during {name}{when}: {}", parts.join(", ")))
}

/// The point's values as `key = value` pairs.
fn point_words(set: &ResultSet, point: usize) -> String {
    set.sweep_keys
        .iter()
        .zip(&set.points[point].values)
        .map(|(k, v)| format!("{k} = {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The distinct values of swept key `k`, in the order of the points.
fn key_values(set: &ResultSet, k: usize) -> Vec<&str> {
    let mut values: Vec<&str> = Vec::new();
    for p in &set.points {
        if !values.contains(&p.values[k].as_str()) {
            values.push(&p.values[k]);
        }
    }
    values
}

/// `key <= v`, `key >= v`, `key in a..b`, `key = v`, joined by `or`; `key in {a, b}` when
/// every part is one value: the values of `key` at the indices `chosen` of `values`. Ranges
/// only for values that are numbers (or durations) in increasing order; other values are
/// listed.
fn describe_values(key: &str, values: &[&str], chosen: &[usize]) -> String {
    let ordered = values
        .iter()
        .map(|v| crate::experiment::value_number(v))
        .collect::<Option<Vec<f64>>>()
        .is_some_and(|n| n.windows(2).all(|w| w[0] < w[1]));
    // Contiguous runs of chosen indices (each index alone when the values have no order).
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for &i in chosen {
        match runs.last_mut() {
            Some((_, end)) if ordered && *end + 1 == i => *end = i,
            _ => runs.push((i, i)),
        }
    }
    if runs.iter().all(|(a, b)| a == b) {
        return match runs.as_slice() {
            [(a, _)] => format!("{key} = {}", values[*a]),
            _ => format!(
                "{key} in {{{}}}",
                runs.iter().map(|&(a, _)| values[a]).collect::<Vec<_>>().join(", ")
            ),
        };
    }
    let last = values.len() - 1;
    let parts: Vec<String> = runs
        .iter()
        .map(|&(a, b)| match (a, b) {
            (a, b) if a == b => format!("{key} = {}", values[a]),
            (0, b) => format!("{key} <= {}", values[b]),
            (a, b) if b == last => format!("{key} >= {}", values[a]),
            (a, b) => format!("{key} in {}..{}", values[a], values[b]),
        })
        .collect();
    parts.join(" or ")
}

/// `text` in parentheses when it is a disjunction, so that `and` binds as read.
fn grouped(text: &str) -> String {
    if text.contains(" or ") { format!("({text})") } else { text.to_string() }
}

/// The points of `chosen` (by index), said compactly: `every point`, a range of the one
/// swept key, or for two keys the cells grouped by the first key ("every cell with
/// queue = 1e8 and timeout <= 3s"); with more keys, or when grouping says little, the
/// points listed.
fn describe_points(set: &ResultSet, chosen: &[usize]) -> String {
    let n = set.points.len();
    if chosen.len() == n {
        return if set.sweep_keys.len() >= 2 { "every cell".into() } else { "every point".into() };
    }
    match set.sweep_keys.len() {
        1 => {
            let values = key_values(set, 0);
            let idx: Vec<usize> = chosen
                .iter()
                .filter_map(|&p| values.iter().position(|v| *v == set.points[p].values[0]))
                .collect();
            describe_values(&set.sweep_keys[0], &values, &idx)
        }
        2 => describe_two_keys(set, chosen).unwrap_or_else(|| list_points(set, chosen)),
        _ => list_points(set, chosen),
    }
}

fn describe_two_keys(set: &ResultSet, chosen: &[usize]) -> Option<String> {
    let (first, second) = (key_values(set, 0), key_values(set, 1));
    // Per value of the first key, the indices (into `second`) of the chosen cells and of the
    // cells that exist at all (skip_invalid can leave some out).
    let at = |a: &str, of: &mut dyn Iterator<Item = usize>| -> Vec<usize> {
        let mut idx: Vec<usize> = of
            .filter(|&p| set.points[p].values[0] == a)
            .filter_map(|p| second.iter().position(|v| *v == set.points[p].values[1]))
            .collect();
        idx.sort_unstable();
        idx
    };
    // Groups of first-key values sharing the same second-key condition, in order.
    let mut groups: Vec<(Option<String>, Vec<usize>)> = Vec::new();
    for (i, a) in first.iter().enumerate() {
        let picked = at(a, &mut chosen.iter().copied());
        if picked.is_empty() {
            continue;
        }
        let present = at(a, &mut (0..set.points.len()));
        let condition = (picked != present).then(|| describe_values(&set.sweep_keys[1], &second, &picked));
        match groups.iter_mut().find(|(c, _)| *c == condition) {
            Some((_, members)) => members.push(i),
            None => groups.push((condition, vec![i])),
        }
    }
    if groups.len() > 3 {
        return None;
    }
    let parts: Vec<String> = groups
        .iter()
        .map(|(condition, members)| {
            let on_first =
                (members.len() < first.len()).then(|| describe_values(&set.sweep_keys[0], &first, members));
            match (on_first, condition) {
                (Some(f), Some(c)) => format!("{} and {}", grouped(&f), grouped(c)),
                (Some(f), None) => f,
                (None, Some(c)) => c.clone(),
                (None, None) => "any values".into(),
            }
        })
        .collect();
    Some(format!("every cell with {}", parts.join(", and every cell with ")))
}

/// At most 6 points by their values, then how many more.
fn list_points(set: &ResultSet, chosen: &[usize]) -> String {
    let shown: Vec<String> = chosen.iter().take(6).map(|&p| format!("({})", point_words(set, p))).collect();
    let more = chosen.len().saturating_sub(shown.len());
    if more > 0 { format!("{} and {more} more", shown.join(", ")) } else { shown.join(", ") }
}

/// `0.25` or `0.25 to 0.36`: the range of a metric over some cells of one strategy.
fn value_range(set: &ResultSet, m: usize, strategy: usize, points: &[usize]) -> Option<String> {
    let values: Vec<f64> =
        points.iter().filter_map(|&p| set.summary_row(p, strategy).and_then(|r| r.mean[m])).collect();
    let lo = values.iter().copied().reduce(f64::min)?;
    let hi = values.iter().copied().reduce(f64::max)?;
    let (a, b) = (sig(lo, 3), sig(hi, 3));
    Some(if a == b { a } else { format!("{a} to {b}") })
}

fn percent(x: f64) -> String {
    format!("{} %", sig(100.0 * x, 2))
}

/// The verdict on `set`.
pub fn verdict(set: &ResultSet, opts: &VerdictOptions) -> Result<Verdict, ReportError> {
    let from_file: Vec<(String, String)> = set.manifest.reference.clone().into_iter().collect();
    let (pairs, mut how) = match (opts.reference.is_empty(), from_file.is_empty()) {
        (false, _) => (&opts.reference, "chosen with --reference"),
        (true, false) => (&from_file, "chosen with [output] reference; another with --reference KEY=VALUE"),
        (true, true) => (&opts.reference, "the first point; another with --reference KEY=VALUE"),
    };
    // A shard or a partial result holds some of the points: when the reference is not among
    // them, the first point stands in (the whole result has it).
    let some_points = set.manifest.shard.is_some() || set.manifest.partial;
    let reference = match reference_point(set, pairs) {
        Err(_) if some_points => {
            how = "the first point here: the reference point is not among the points of this shard or partial result";
            0
        }
        other => other?,
    };
    let primary = ranking_metric(set);
    let better = primary.and_then(|m| catalogue::better(&set.metrics[m])).unwrap_or(Better::Lower);
    let primary_label = primary.map(|m| label(&set.metrics[m])).unwrap_or_default();
    let n = set.points.len();
    let swept = !set.sweep_keys.is_empty();
    let noun = if set.sweep_keys.len() >= 2 { "cells" } else { "points" };
    let value = |p: usize, s: usize| primary.and_then(|m| set.summary_row(p, s)?.mean[m]);

    // The best strategies of each point by the primary metric (ties all count).
    let best_at: Vec<Vec<usize>> = (0..n)
        .map(|p| {
            let values: Vec<(usize, f64)> =
                (0..set.strategies.len()).filter_map(|s| value(p, s).map(|v| (s, v))).collect();
            let best =
                values.iter().map(|&(_, v)| v).reduce(|a, b| if is_better(better, b, a) { b } else { a });
            values.iter().filter(|&&(_, v)| Some(v) == best).map(|&(s, _)| s).collect()
        })
        .collect();

    let intro = if swept {
        format!(
            "Verdict: each strategy at its worst point by {primary_label} of {n} {noun}, and at the reference point ({}: {how}).",
            point_words(set, reference)
        )
    } else {
        format!(
            "Verdict: {} strateg{} at the one point of this experiment.",
            set.strategies.len(),
            if set.strategies.len() == 1 { "y" } else { "ies" }
        )
    };

    // The windows and classes, read once from the manifest's copy of the file.
    let windows = window_names(set);
    let mut strategies = Vec::new();
    for (s, name) in set.strategies.iter().enumerate() {
        let points: Vec<usize> = (0..n).filter(|&p| set.summary_row(p, s).is_some()).collect();
        if points.is_empty() {
            continue;
        }
        let mut sentences = Vec::new();
        let worst = points
            .iter()
            .copied()
            .filter_map(|p| value(p, s).map(|v| (p, v)))
            .reduce(|a, b| if is_better(better, a.1, b.1) { b } else { a })
            .map(|(p, _)| p);
        if swept {
            match worst {
                Some(w) if w == reference => sentences.push(format!(
                    "worst at the reference point ({}): {}",
                    point_words(set, w),
                    headlines(set, w, s)
                )),
                Some(w) => {
                    sentences.push(format!("worst at {}: {}", point_words(set, w), headlines(set, w, s)));
                    if set.summary_row(reference, s).is_some() {
                        sentences.push(format!("at the reference: {}", headlines(set, reference, s)));
                    }
                }
                None => sentences.push(format!("at the reference: {}", headlines(set, reference, s))),
            }
        } else {
            sentences.push(headlines(set, 0, s));
        }
        // The windows at the point the headlines speak of first.
        let headline_point = if swept { worst.unwrap_or(reference) } else { 0 };
        sentences.extend(windows.iter().filter_map(|w| window_words(set, headline_point, s, w)));

        // Where it is metastable.
        if swept && let Some(m) = set.metric_index("metastable") {
            let storm: Vec<usize> = points
                .iter()
                .copied()
                .filter(|&p| set.summary_row(p, s).and_then(|r| r.mean[m]).is_some_and(|v| v > 0.0))
                .collect();
            if !storm.is_empty() {
                let all_runs =
                    storm.iter().all(|&p| set.summary_row(p, s).and_then(|r| r.mean[m]) == Some(1.0));
                let share = if all_runs {
                    String::new()
                } else {
                    let fractions: Vec<f64> =
                        storm.iter().filter_map(|&p| set.summary_row(p, s)?.mean[m]).collect();
                    let lo = fractions.iter().copied().fold(f64::INFINITY, f64::min);
                    let hi = fractions.iter().copied().fold(0.0, f64::max);
                    if lo == hi {
                        format!(" (in {} of the runs)", percent(lo))
                    } else {
                        format!(" (in {} to {} of the runs)", percent(lo), percent(hi))
                    }
                };
                let mut sentence = format!(
                    "metastable in {} of {} {noun}{share}: {}",
                    storm.len(),
                    points.len(),
                    describe_points(set, &storm)
                );
                if let Some(sr) = set.metric_index("success_rate")
                    && let Some(r) = value_range(set, sr, s, &storm)
                {
                    sentence.push_str(&format!("; success {r} there"));
                }
                sentences.push(sentence);
            }
        }

        // Where it fails the constraints.
        if !opts.constraints.is_empty() {
            let failing: Vec<usize> = points
                .iter()
                .copied()
                .filter(|&p| {
                    let row = set.summary_row(p, s);
                    !opts.constraints.iter().all(|c| {
                        set.metric_index(&c.metric).and_then(|m| row?.mean[m]).is_some_and(|x| c.holds(x))
                    })
                })
                .collect();
            let what = opts.constraints.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(" and ");
            sentences.push(if failing.is_empty() {
                format!("meets {what} everywhere")
            } else if !swept {
                format!("fails {what}")
            } else {
                format!(
                    "fails {what} in {} of {} {noun}: {}",
                    failing.len(),
                    points.len(),
                    describe_points(set, &failing)
                )
            });
        }

        // Where it is the best strategy.
        if set.strategies.len() > 1
            && let Some(m) = primary
        {
            let best: Vec<usize> = points.iter().copied().filter(|&p| best_at[p].contains(&s)).collect();
            let tied = |p: usize| best_at[p].len() > 1;
            if !swept {
                if !best.is_empty() {
                    let with = if tied(0) { " (tied)" } else { "" };
                    // Others whose mean lies inside this one's 95 % interval are not told apart
                    // from it by these runs: said, so that "best" is not read as "better".
                    let close: Vec<&str> = match set.estimate(0, s, m) {
                        Some(e) => (0..set.strategies.len())
                            .filter(|&o| o != s && !best_at[0].contains(&o))
                            .filter(|&o| value(0, o).is_some_and(|v| e.low() <= v && v <= e.high()))
                            .map(|o| set.strategies[o].as_str())
                            .collect(),
                        None => Vec::new(),
                    };
                    let within = if close.is_empty() {
                        String::new()
                    } else {
                        format!(" ({} within its 95 % interval)", close.join(", "))
                    };
                    sentences.push(format!(
                        "the best {primary_label} of the {} strategies{with}{within}",
                        set.strategies.len()
                    ));
                }
            } else if !best.is_empty() {
                let with = if best.iter().all(|&p| tied(p)) { " (tied)" } else { "" };
                sentences.push(format!(
                    "best {primary_label}{with} in {} of {} {noun}: {}",
                    best.len(),
                    points.len(),
                    describe_points(set, &best)
                ));
            }
        }
        strategies.push((name.clone(), sentences));
    }
    Ok(Verdict { intro, strategies })
}
