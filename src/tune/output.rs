//! What `retrysim tune` writes and prints: `tune.csv` (every candidate evaluated),
//! `recommendation.toml` (a ready `[[strategies]]` block), the chart of the objective over the
//! space, and the summary. Pure functions of a finished [`Tuner`], so the same search gives
//! byte-identical files.

use super::Tuner;
use super::recommendation::strategy_block;
use super::spec::{Domain, Numeric};
use crate::metrics::catalogue::{axis_title, label};
use crate::report::chart::KEY_METRICS;
use crate::report::chart::axis::Axis;
use crate::report::chart::tune::{TuneChart, TunePoint, charts, param_axis};
use crate::report::format::with_interval;
use crate::report::{ReportError, paths};
use crate::results::{WriteError, write_atomically};
use crate::stats::Estimate;
use crate::stats::sig;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The table of every candidate.
pub const TUNE_CSV: &str = "tune.csv";
/// The chosen values as a `[[strategies]]` block.
pub const RECOMMENDATION: &str = "recommendation.toml";

/// The metrics of tune.csv: the objective, the constrained ones, then the key metrics.
pub fn csv_metrics(t: &Tuner) -> Vec<String> {
    let mut names: Vec<&str> = vec![t.spec.objective.as_str()];
    names.extend(t.spec.constraints.iter().map(|c| c.metric.as_str()));
    names.extend(KEY_METRICS.iter().copied());
    let mut out: Vec<String> = Vec::new();
    for n in names {
        if t.metric_index(n).is_some() && !out.iter().any(|o| o == n) {
            out.push(n.to_string());
        }
    }
    out
}

/// tune.csv: one row per (candidate, scenario) in the order candidates were first evaluated:
/// `candidate`, each parameter, `scenario`, `runs`, `stage`, `feasible` and `objective` (the
/// candidate's, over every scenario), then each metric's mean and `_sd` in this scenario. Every
/// value is over all the runs the candidate got.
pub fn csv_text(t: &Tuner) -> Result<Vec<u8>, csv::Error> {
    let metrics = csv_metrics(t);
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header: Vec<String> = vec!["candidate".into()];
    header.extend(t.spec.params.iter().map(|p| p.key.clone()));
    header.extend(["scenario", "runs", "stage", "feasible", "objective"].map(String::from));
    for m in &metrics {
        header.push(m.to_string());
        header.push(format!("{m}_sd"));
    }
    w.write_record(&header)?;
    let opt = |x: Option<f64>| x.map(|x| x.to_string()).unwrap_or_default();
    for (c, cand) in t.candidates.iter().enumerate() {
        let runs = cand.runs();
        let score = t.score(c, runs);
        for (s, scenario) in t.spec.scenarios.iter().enumerate() {
            let mut row: Vec<String> = vec![(c + 1).to_string()];
            row.extend(t.levels_of(c).iter().map(|l| l.label.clone()));
            row.push(scenario.name.clone());
            row.push(runs.to_string());
            row.push(cand.stage.to_string());
            row.push(score.feasible.to_string());
            row.push(opt(score.objective));
            for m in &metrics {
                let st = t.stat(c, s, t.metric_index(m).unwrap_or(0), runs);
                row.push(opt(st.mean));
                row.push(opt(st.sd));
            }
            w.write_record(&row)?;
        }
    }
    w.into_inner().map_err(|e| csv::Error::from(e.into_error()))
}

/// `mean ± half-width` of an estimate.
fn shown(e: &Estimate) -> String {
    with_interval(e.mean, e.half_width)
}

/// The objective of candidate `c` on its runs, at its worst scenario, with its interval.
pub fn objective_estimate(t: &Tuner, c: usize) -> Option<(Estimate, usize)> {
    let runs = t.candidates[c].runs();
    let s = t.score(c, runs);
    let e = t.stat(c, s.worst, t.metric_index(&t.spec.objective)?, runs).estimate()?;
    Some((e, s.worst))
}

/// A constraint's value in its worst scenario: the estimate, the scenario, the margin.
type Worst = (Estimate, usize, f64);

/// Per constraint (as text): the worst scenario (smallest margin), if any has a value.
fn constraint_margins(t: &Tuner, c: usize) -> Vec<(String, Option<Worst>)> {
    let runs = t.candidates[c].runs();
    t.spec
        .constraints
        .iter()
        .map(|con| {
            let worst = t.metric_index(&con.metric).and_then(|m| {
                (0..t.spec.scenarios.len())
                    .filter_map(|s| t.stat(c, s, m, runs).estimate().map(|e| (e, s, con.margin(e.mean))))
                    .min_by(|a, b| a.2.total_cmp(&b.2))
            });
            (con.to_string(), worst)
        })
        .collect()
}

/// The parameters of candidate `c` as `key = value` pairs.
fn assignments(t: &Tuner, c: usize) -> Vec<String> {
    t.spec.params.iter().zip(t.levels_of(c)).map(|(p, l)| format!("{} = {}", p.key, l.value)).collect()
}

/// What a full grid of the same resolution would cost, in runs.
fn grid_runs(t: &Tuner, runs: usize) -> f64 {
    t.grid_size() * t.spec.scenarios.len() as f64 * runs as f64
}

fn count(x: f64) -> String {
    if x < 1e15 { format!("{x:.0}") } else { format!("{x:.3e}") }
}

/// The search's cost against a full grid, one sentence.
pub fn cost_line(t: &Tuner) -> String {
    let grid = grid_runs(t, t.confirm_runs.max(1));
    let coarse = t.spec.runs as usize;
    format!(
        "{} runs for {} candidates, against {} for a full grid of the same resolution ({} candidates x {} scenario{} x {} runs): {} of it; a grid at the coarse design's {coarse} run{} would take {}",
        t.runs_spent,
        t.candidates.len(),
        count(grid),
        count(t.grid_size()),
        t.spec.scenarios.len(),
        if t.spec.scenarios.len() == 1 { "" } else { "s" },
        t.confirm_runs,
        percent(t.runs_spent as f64 / grid),
        if coarse == 1 { "" } else { "s" },
        count(grid_runs(t, coarse)),
    )
}

fn percent(f: f64) -> String {
    let p = 100.0 * f;
    if p >= 10.0 { format!("{p:.0} %") } else { format!("{} %", sig(p, 2)) }
}

/// The comment lines of recommendation.toml (and the summary's figures): the objective's
/// interval and each constraint's margin.
fn evidence(t: &Tuner, c: usize, prefix: &str) -> String {
    let mut out = String::new();
    let runs = t.candidates[c].runs();
    let scen = |s: usize| t.spec.scenarios[s].name.clone();
    let dir = if t.spec.maximize { "maximise" } else { "minimise" };
    if let Some((e, s)) = objective_estimate(t, c) {
        let _ = writeln!(
            out,
            "{prefix}objective ({dir}): {} = {} (95 % CI over {runs} runs; worst scenario: {})",
            t.spec.objective,
            shown(&e),
            scen(s)
        );
    }
    if !t.spec.constraints.is_empty() {
        let _ = writeln!(out, "{prefix}constraints (worst scenario; margin to the bound, > 0 = satisfied):");
        for (text, worst) in constraint_margins(t, c) {
            match worst {
                Some((e, s, m)) => {
                    let noise = if e.half_width.is_some_and(|h| m.abs() < h) {
                        " (within the interval: not certain)"
                    } else {
                        ""
                    };
                    let _ = writeln!(
                        out,
                        "{prefix}  {text}: {} in {}, margin {}{noise}",
                        shown(&e),
                        scen(s),
                        sig(m, 3)
                    );
                }
                None => {
                    let _ = writeln!(out, "{prefix}  {text}: no value");
                }
            }
        }
    }
    out
}

/// recommendation.toml, or `None` when nothing is feasible.
pub fn recommendation(t: &Tuner) -> Option<String> {
    let c = t.winner?;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Recommended by `retrysim tune` for experiment \"{}\" (seed {}), strategy \"{}\".",
        t.exp.name, t.exp.seed, t.spec.strategy_name
    );
    let scenarios: Vec<&str> = t.spec.scenarios.iter().map(|s| s.name.as_str()).collect();
    let _ = writeln!(out, "# Scenarios: {}.", scenarios.join(", "));
    out.push_str(&evidence(t, c, "# "));
    let _ = writeln!(out, "# Search: {}.", cost_line(t));
    if t.spec.uses_preset() {
        let _ = writeln!(
            out,
            "# The strategy starts from a preset: [client]'s keys of the experiment still apply."
        );
    }
    out.push_str(&strategy_block(t, c));
    Some(out)
}

/// The chart(s) of the search.
pub fn chart_data(t: &Tuner) -> Vec<crate::report::chart::Chart> {
    let ranked_points: Vec<TunePoint> = (0..t.candidates.len())
        .filter_map(|c| {
            let s = t.score(c, t.candidates[c].runs());
            let objective = s.objective?;
            Some(TunePoint {
                position: t.levels_of(c).iter().map(|l| l.position).collect(),
                objective,
                feasible: s.feasible,
                recommended: t.winner == Some(c),
            })
        })
        .collect();
    let params = t
        .spec
        .params
        .iter()
        .zip(&t.lattice)
        .map(|(p, levels)| {
            let positions: Vec<f64> = levels.iter().map(|l| l.position).collect();
            let numeric = levels.iter().all(|l| l.numeric);
            let names = (!numeric).then(|| levels.iter().map(|l| l.label.clone()).collect());
            let (log, duration) = match &p.domain {
                Domain::Range { low, high, ty } => {
                    (*low > 0.0 && (*ty != Numeric::Int || high / low >= 10.0), *ty == Numeric::Duration)
                }
                Domain::Values(v) => (true, v.iter().all(|v| v.is_str())),
            };
            let title = if duration && numeric { format!("{} (s)", p.key) } else { p.key.clone() };
            (param_axis(&positions, names, log), title)
        })
        .collect();
    let y = Axis::for_values(ranked_points.iter().map(|p| p.objective), true, false);
    let title = format!(
        "{} of {} over the space",
        crate::report::chart::sweep_lines::capitalise(&label(&t.spec.objective)),
        t.spec.strategy_name
    );
    let data = TuneChart {
        params,
        objective: (y, format!("{} (worst scenario)", axis_title(&t.spec.objective))),
        points: ranked_points,
        plane: false,
    };
    charts(&format!("tune-{}", paths::sanitize(&t.spec.objective)), &title, data)
}

/// Writes tune.csv, recommendation.toml (removing a stale one when nothing is feasible) and
/// the charts into `dir`; returns the paths written.
pub fn write(t: &Tuner, dir: &Path) -> Result<Vec<PathBuf>, ReportError> {
    std::fs::create_dir_all(dir).map_err(WriteError::at(dir))?;
    let mut written = Vec::new();
    let csv_path = dir.join(TUNE_CSV);
    let bytes =
        csv_text(t).map_err(|e| WriteError { path: csv_path.clone(), source: std::io::Error::other(e) })?;
    write_atomically(&csv_path, &bytes)?;
    written.push(csv_path);
    let rec = dir.join(RECOMMENDATION);
    match recommendation(t) {
        Some(text) => {
            write_atomically(&rec, text.as_bytes())?;
            written.push(rec);
        }
        None => {
            if rec.exists() {
                std::fs::remove_file(&rec).map_err(WriteError::at(&rec))?;
            }
        }
    }
    let exports = super::export::exports(t)
        .map_err(|e| WriteError { path: dir.join(RECOMMENDATION), source: std::io::Error::other(e) })?;
    for e in &exports {
        let path = dir.join(&e.file);
        write_atomically(&path, e.exported.text.as_bytes())?;
        written.push(path);
    }
    // A format not written this time (nothing feasible, or no longer in `[tune] export`)
    // leaves no stale file of an earlier search.
    for format in crate::interop::formats() {
        let file = format!("recommendation.{}", format.extension());
        let path = dir.join(&file);
        if !exports.iter().any(|e| e.file == file) && path.exists() {
            std::fs::remove_file(&path).map_err(WriteError::at(&path))?;
        }
    }
    let charts_dir = dir.join(paths::CHARTS_DIR);
    std::fs::create_dir_all(&charts_dir).map_err(WriteError::at(&charts_dir))?;
    for chart in chart_data(t) {
        let svg = paths::chart_file(dir, &chart.stem, "svg");
        write_atomically(&svg, chart.svg()?.as_bytes())?;
        written.push(svg);
        let png = paths::chart_file(dir, &chart.stem, "png");
        write_atomically(&png, &chart.png()?)?;
        written.push(png);
    }
    Ok(written)
}

/// The summary printed at the end: the question, the recommended values, the objective with
/// its interval, each constraint's margin, the runs spent against a full grid; or, when
/// nothing is feasible, which constraint binds and the closest candidate.
pub fn summary(t: &Tuner) -> String {
    let mut out = String::new();
    let spec = t.spec;
    let scenarios: Vec<&str> = spec.scenarios.iter().map(|s| s.name.as_str()).collect();
    let keys: Vec<&str> = spec.params.iter().map(|p| p.key.as_str()).collect();
    let _ = writeln!(
        out,
        "{}: tune strategy \"{}\" over {} ({}); scenario{}: {}",
        t.exp.name,
        spec.strategy_name,
        keys.join(", "),
        t.lattice.iter().map(|l| l.len().to_string()).collect::<Vec<_>>().join(" x ") + " values",
        if scenarios.len() == 1 { "" } else { "s" },
        scenarios.join(", ")
    );
    let constraints: Vec<String> = spec.constraints.iter().map(|c| c.to_string()).collect();
    let _ = writeln!(
        out,
        "{} {} at its worst scenario{}",
        if spec.maximize { "maximise" } else { "minimise" },
        spec.objective,
        if constraints.is_empty() {
            String::new()
        } else {
            format!(", subject to {}", constraints.join(" and "))
        }
    );
    out.push('\n');
    match t.winner {
        Some(c) => {
            let _ = writeln!(
                out,
                "recommended (candidate {}, {} runs per scenario):",
                c + 1,
                t.candidates[c].runs()
            );
            for a in assignments(t, c) {
                let _ = writeln!(out, "  {a}");
            }
            out.push_str(&evidence(t, c, ""));
            out.push_str(&neighbourhood(t, c));
            let others: Vec<usize> = t.finalists.iter().copied().filter(|&f| f != c).collect();
            if !others.is_empty() {
                let _ = writeln!(out, "other finalists:");
                for f in others {
                    let s = t.score(f, t.candidates[f].runs());
                    let obj = objective_estimate(t, f).map(|(e, _)| shown(&e)).unwrap_or_else(|| "-".into());
                    let _ = writeln!(
                        out,
                        "  candidate {} ({}): {} {obj}{}",
                        f + 1,
                        assignments(t, f).join(", "),
                        spec.objective,
                        if s.feasible { "" } else { ", infeasible" }
                    );
                }
            }
            if let Ok(exports) = super::export::exports(t) {
                for e in exports {
                    match e.exported.dropped.as_slice() {
                        [] => {
                            let _ = writeln!(out, "{}: every value exported", e.file);
                        }
                        dropped => {
                            let _ = writeln!(out, "{}: {} cannot express, dropped:", e.file, e.kind);
                            for d in dropped {
                                let _ = writeln!(out, "  {d}");
                            }
                        }
                    }
                }
            }
        }
        None => infeasible(t, &mut out),
    }
    let _ = writeln!(out, "search: {}", cost_line(t));
    let _ = writeln!(
        out,
        "  {} coarse candidates, {} refinement neighbours, {} finalists at {} runs per scenario{}",
        t.coarse,
        t.candidates.len() - t.coarse,
        t.finalists.len(),
        t.confirm_runs,
        match t.invalid.len() {
            0 => String::new(),
            n => format!(
                "; {n} lattice point{} refused by validation (e.g. {})",
                if n == 1 { "" } else { "s" },
                t.invalid.values().next().map(String::as_str).unwrap_or("")
            ),
        }
    );
    out
}

/// The evaluated candidates one level away from `c` on one parameter: how sharp the optimum
/// is, and which way lies a failing constraint.
fn neighbourhood(t: &Tuner, c: usize) -> String {
    let mut lines = Vec::new();
    let index = &t.candidates[c].index;
    for (j, p) in t.spec.params.iter().enumerate() {
        for up in [false, true] {
            let Some(level) = (if up { index[j].checked_add(1) } else { index[j].checked_sub(1) }) else {
                continue;
            };
            if level >= t.lattice[j].len() {
                continue;
            }
            let mut at = index.clone();
            at[j] = level;
            let Some(n) = t.candidate_at(&at) else { continue };
            let s = t.score(n, t.candidates[n].runs());
            let what = if t.same_outcome(c, n) {
                "the same results (this key changes nothing here)".to_owned()
            } else if s.feasible {
                match s.objective {
                    Some(o) => format!("{} {}", t.spec.objective, sig(o, 4)),
                    None => "no objective".to_owned(),
                }
            } else {
                let worst = constraint_margins(t, n)
                    .into_iter()
                    .filter_map(|(text, w)| w.map(|(e, s, m)| (text, e, s, m)))
                    .min_by(|a, b| a.3.total_cmp(&b.3));
                match worst {
                    Some((text, e, s, _)) => {
                        format!("fails `{text}` ({} in {})", sig(e.mean, 4), t.spec.scenarios[s].name)
                    }
                    None => "infeasible".to_owned(),
                }
            };
            lines.push(format!("  {} = {}: {what}", p.key, t.lattice[j][level].value));
        }
    }
    if lines.is_empty() {
        return String::new();
    }
    format!("one level away (evaluated, on the runs each got):\n{}\n", lines.join("\n"))
}

/// When nothing is feasible: which constraint binds, and the closest candidate.
fn infeasible(t: &Tuner, out: &mut String) {
    let _ = writeln!(out, "no candidate satisfies every constraint ({} evaluated)", t.candidates.len());
    let cons = &t.spec.constraints;
    let holds_all_but = |c: usize, skip: usize| {
        let runs = t.candidates[c].runs();
        cons.iter().enumerate().filter(|(k, _)| *k != skip).all(|(_, con)| {
            t.metric_index(&con.metric).is_some_and(|m| {
                (0..t.spec.scenarios.len()).all(|s| t.stat(c, s, m, runs).mean.is_some_and(|x| con.holds(x)))
            })
        })
    };
    let ranked = t.ranked();
    let mut any = false;
    for (k, con) in cons.iter().enumerate() {
        let without: Vec<usize> = ranked.iter().copied().filter(|&c| holds_all_but(c, k)).collect();
        if without.is_empty() {
            continue;
        }
        any = true;
        let mut best = without.clone();
        best.sort_by(|&a, &b| {
            let oa = objective_estimate(t, a).map(|e| e.0.mean);
            let ob = objective_estimate(t, b).map(|e| e.0.mean);
            let o = oa.unwrap_or(f64::INFINITY).total_cmp(&ob.unwrap_or(f64::INFINITY));
            if t.spec.maximize { o.reverse() } else { o }
        });
        let b = best[0];
        let _ = writeln!(
            out,
            "`{con}` binds: without it {} candidate{} would be feasible, the best being candidate {} ({}): {} {}",
            without.len(),
            if without.len() == 1 { "" } else { "s" },
            b + 1,
            assignments(t, b).join(", "),
            t.spec.objective,
            objective_estimate(t, b).map(|(e, _)| shown(&e)).unwrap_or_else(|| "-".into())
        );
    }
    if !any {
        let _ =
            writeln!(out, "no single constraint binds: dropping any one still leaves no feasible candidate");
    }
    if let Some(&c) = ranked.first() {
        let _ = writeln!(out, "closest candidate: {} ({}):", c + 1, assignments(t, c).join(", "));
        out.push_str(&evidence(t, c, "  "));
    }
}
