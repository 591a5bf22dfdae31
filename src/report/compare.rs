//! The comparison printed at the end of a run, and the ranking of a sweep's rows under
//! constraints (`--rank METRIC --where "METRIC OP VALUE"`).
//!
//! Pure functions of a [`ResultSet`] returning text: plain ASCII apart from `±`, no control
//! characters unless [`CompareOptions::color`] is set (the caller says whether it writes to
//! a terminal).

use super::ReportError;
use super::table::{ResultSet, SummaryRow};
use crate::metrics::catalogue::{self, Better, label};
use crate::metrics::constraint::{Constraint, Op};
use crate::stats::Estimate;
use crate::stats::sig;
use std::fmt::Write as _;

/// How to print a comparison.
#[derive(Clone, Debug)]
pub struct CompareOptions {
    /// Mark the best values in bold green (ANSI escapes) instead of `*`: only for a terminal.
    pub color: bool,
    /// The columns, in order; those without values, or equal in every row, are left out.
    pub metrics: Vec<String>,
    /// A sweep with at most this many points lists every point; a larger one only each
    /// strategy's best point.
    pub max_points: usize,
}

/// The metrics of the end-of-run comparison, in column order.
pub const COMPARE_METRICS: &[&str] = &[
    "success_rate",
    "calls",
    "server_calls",
    "amplification",
    "completion_time_s",
    "latency_p99_s",
    "duplicates",
    "recovery_time_s",
    "metastable",
];

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            color: false,
            metrics: COMPARE_METRICS.iter().map(|s| s.to_string()).collect(),
            max_points: 6,
        }
    }
}

const BOLD_GREEN: &str = "\x1b[1;32m";
const RESET: &str = "\x1b[0m";

/// One (point, strategy) row of a comparison.
#[derive(Clone, Copy, Debug)]
struct Row {
    point: usize,
    strategy: usize,
}

/// Whether `a` is better than `b` in direction `better`.
pub(super) fn is_better(better: Better, a: f64, b: f64) -> bool {
    match better {
        Better::Lower => a < b,
        Better::Higher => a > b,
    }
}

/// The metric that picks each strategy's best point in a large sweep: the first compared
/// metric with a direction whose means are not all equal.
pub(super) fn primary_metric(set: &ResultSet, metrics: &[usize]) -> Option<usize> {
    metrics.iter().copied().find(|&m| catalogue::better(&set.metrics[m]).is_some())
}

/// One table of a comparison: a title (a sweep point, or none), its header, its rows of
/// cells, and the notable differences between its rows.
#[derive(Clone, Debug, PartialEq)]
pub struct CompareTable {
    /// The point the rows share, or what the rows are; empty without a sweep.
    pub title: String,
    /// Column names: `strategy`, `point` in a large sweep, then the metrics.
    pub header: Vec<String>,
    /// Rows of cells, as in `header`.
    pub rows: Vec<Vec<CompareCell>>,
    /// One sentence per column whose best and worst rows' intervals do not overlap.
    pub notes: Vec<String>,
}

/// One cell of a [`CompareTable`].
#[derive(Clone, Debug, PartialEq)]
pub struct CompareCell {
    /// `mean ± half-width`, `never (k of n runs)`, a name, or `-`.
    pub text: String,
    /// The best value of its column (of several rows).
    pub best: bool,
}

/// What the comparison says, for the terminal ([`comparison`]) and the report's table.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// What the rows are: strategies, points and runs.
    pub heading: String,
    /// Columns left out, each line naming them: equal in every row, or repeating another.
    pub left_out: Vec<String>,
    /// The tables; none when no metric differs between rows.
    pub tables: Vec<CompareTable>,
}

/// The comparison of `set` as data: one row per strategy (per point for sweeps of at most
/// `max_points` points, else each strategy's best point), each compared metric as
/// `mean ± 95 % half-width`, the best of each column marked, and per table one line per
/// notable difference (best against worst of a column, when their intervals do not overlap).
pub fn compare(set: &ResultSet, opts: &CompareOptions) -> Comparison {
    let mut candidate: Vec<usize> =
        opts.metrics.iter().filter_map(|m| set.metric_index(m)).filter(|&m| set.has_values(m)).collect();
    // Columns equal in every row say nothing about the strategies: one line lists them.
    let mut constant = Vec::new();
    candidate.retain(|&m| {
        // An empty cell (no run recovered, say) differs from any value.
        let mut values = set.summary.iter().map(|r| r.mean[m]);
        let first = values.next().flatten();
        let same = first.is_some() && values.all(|v| v == first);
        if let (true, Some(first)) = (same, first) {
            constant.push(format!("{} = {}", set.metrics[m], sig(first, 4)));
        }
        !same
    });
    // A column within 0.1 % of an earlier one in every row (`server_calls` and `calls` without
    // gateway layers or message loss: they differ by the requests in flight at the horizon)
    // repeats it: left out, named once.
    let close = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => (a - b).abs() <= 1e-3 * a.abs().max(b.abs()),
        (a, b) => a.is_none() && b.is_none(),
    };
    let mut repeats = Vec::new();
    let mut kept: Vec<usize> = Vec::new();
    for m in candidate {
        let same_as = kept.iter().copied().find(|&k| set.summary.iter().all(|r| close(r.mean[m], r.mean[k])));
        match same_as {
            Some(k) => repeats.push(format!("{} = {} (within 0.1 %)", set.metrics[m], set.metrics[k])),
            None => kept.push(m),
        }
    }
    let metrics = kept;

    let runs = set.manifest.runs.or_else(|| set.summary.first().map(|r| r.runs)).unwrap_or(0);
    let heading = format!(
        "{}: {} strateg{}, {} point{}, {} run{} each; mean ± 95 % CI half-width",
        set.name(),
        set.strategies.len(),
        if set.strategies.len() == 1 { "y" } else { "ies" },
        set.points.len(),
        if set.points.len() == 1 { "" } else { "s" },
        runs,
        if runs == 1 { "" } else { "s" },
    );
    let mut left_out = Vec::new();
    if !constant.is_empty() {
        left_out.push(format!("same in every row: {}", constant.join(", ")));
    }
    if !repeats.is_empty() {
        left_out.push(format!("in every row: {}", repeats.join(", ")));
    }
    if metrics.is_empty() {
        return Comparison { heading, left_out, tables: Vec::new() };
    }

    let groups: Vec<(String, Vec<Row>)> = if set.points.len() <= opts.max_points {
        (0..set.points.len())
            .map(|p| {
                let title = if set.sweep_keys.is_empty() { String::new() } else { set.point_label(p) };
                let rows = (0..set.strategies.len())
                    .filter(|&s| set.summary_row(p, s).is_some())
                    .map(|s| Row { point: p, strategy: s })
                    .collect();
                (title, rows)
            })
            .collect()
    } else {
        let primary = primary_metric(set, &metrics).unwrap_or(metrics[0]);
        let better = catalogue::better(&set.metrics[primary]).unwrap_or(Better::Lower);
        let rows = (0..set.strategies.len())
            .filter_map(|s| {
                let mut best: Option<(usize, f64)> = None;
                for p in 0..set.points.len() {
                    if let Some(v) = set.summary_row(p, s).and_then(|r| r.mean[primary])
                        && best.is_none_or(|(_, b)| is_better(better, v, b))
                    {
                        best = Some((p, v));
                    }
                }
                best.map(|(p, _)| Row { point: p, strategy: s })
            })
            .collect();
        let title = format!(
            "{} points: each strategy's best point by {} (every point is in summary.csv and report.html)",
            set.points.len(),
            set.metrics[primary]
        );
        vec![(title, rows)]
    };
    let show_point = set.points.len() > opts.max_points;
    let tables =
        groups.into_iter().map(|(title, rows)| table(set, title, &rows, &metrics, show_point)).collect();
    Comparison { heading, left_out, tables }
}

/// The end-of-run comparison as text (see [`compare`]): best values marked `*`, or bold
/// green with [`CompareOptions::color`].
pub fn comparison(set: &ResultSet, opts: &CompareOptions) -> String {
    let c = compare(set, opts);
    let mut out = String::new();
    let _ =
        writeln!(out, "{}; {}", c.heading, if opts.color { "best in bold" } else { "* = best in column" });
    for line in &c.left_out {
        let _ = writeln!(out, "{line}");
    }
    if c.tables.is_empty() {
        let _ = writeln!(out, "(no metric differs between rows)");
        return out;
    }
    for t in &c.tables {
        out.push('\n');
        if !t.title.is_empty() {
            let _ = writeln!(out, "{}", t.title);
        }
        render_table(&mut out, t, opts.color);
    }
    out
}

/// One table of rows, with its notable differences.
fn table(set: &ResultSet, title: String, rows: &[Row], metrics: &[usize], show_point: bool) -> CompareTable {
    let estimates: Vec<Vec<Option<Estimate>>> = rows
        .iter()
        .map(|r| metrics.iter().map(|&m| set.estimate(r.point, r.strategy, m)).collect())
        .collect();
    // The best mean of each column (all rows sharing it are marked).
    let best: Vec<Option<f64>> = (0..metrics.len())
        .map(|c| {
            let better = catalogue::better(&set.metrics[metrics[c]])?;
            estimates
                .iter()
                .filter_map(|e| e[c].map(|e| e.mean))
                .reduce(|a, b| if is_better(better, b, a) { b } else { a })
        })
        .collect();

    let mut header = vec!["strategy".to_string()];
    if show_point {
        header.push("point".into());
    }
    header.extend(metrics.iter().map(|&m| set.metrics[m].clone()));
    let plain = |text: String| CompareCell { text, best: false };
    let mut cells_of_rows = Vec::new();
    for (r, row) in rows.iter().enumerate() {
        let mut cells = vec![plain(set.strategies[row.strategy].clone())];
        if show_point {
            cells.push(plain(set.point_label(row.point)));
        }
        for (c, &m) in metrics.iter().enumerate() {
            let is_best = rows.len() > 1 && estimates[r][c].is_some_and(|e| best[c] == Some(e.mean));
            cells.push(CompareCell { text: set.cell_text(row.point, row.strategy, m), best: is_best });
        }
        cells_of_rows.push(cells);
    }

    // Notable differences: per column, the best row against the worst, when the intervals
    // do not overlap.
    let mut notes = Vec::new();
    for (c, &m) in metrics.iter().enumerate() {
        let Some(better) = catalogue::better(&set.metrics[m]) else { continue };
        let mut present: Vec<(usize, Estimate)> =
            estimates.iter().enumerate().filter_map(|(r, e)| e[c].map(|e| (r, e))).collect();
        if present.len() < 2 {
            continue;
        }
        present.sort_by(|a, b| {
            let o = a.1.mean.total_cmp(&b.1.mean);
            if better == Better::Higher { o.reverse() } else { o }
        });
        let (b, best) = present[0];
        let (w, worst) = present[present.len() - 1];
        if best.overlaps(&worst) || best.mean == worst.mean {
            continue;
        }
        let name = |r: usize| {
            let row = rows[r];
            if show_point {
                format!("{} ({})", set.strategies[row.strategy], set.point_label(row.point))
            } else {
                set.strategies[row.strategy].clone()
            }
        };
        notes.push(difference(&set.metrics[m], better, &name(b), best.mean, &name(w), worst.mean));
    }
    CompareTable { title, header, rows: cells_of_rows, notes }
}

/// A table as aligned text, then its notes indented.
fn render_table(out: &mut String, t: &CompareTable, color: bool) {
    // Column widths count characters (`±` is one); a star takes one more.
    let widths: Vec<usize> = (0..t.header.len())
        .map(|c| {
            t.rows
                .iter()
                .map(|cells| cells[c].text.chars().count() + usize::from(!color && cells[c].best))
                .chain([t.header[c].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut line = String::new();
    for (c, h) in t.header.iter().enumerate() {
        pad(&mut line, h, widths[c], true);
    }
    let _ = writeln!(out, "{}", line.trim_end());
    for cells in &t.rows {
        let mut line = String::new();
        for (c, cell) in cells.iter().enumerate() {
            let shown = match (cell.best, color) {
                (true, true) => format!("{BOLD_GREEN}{}{RESET}", cell.text),
                (true, false) => format!("{}*", cell.text),
                _ => cell.text.clone(),
            };
            let visible = cell.text.chars().count() + usize::from(cell.best && !color);
            line.push_str(&shown);
            if c + 1 < cells.len() {
                line.push_str(&" ".repeat(widths[c] - visible + 2));
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    for n in &t.notes {
        let _ = writeln!(out, "  {n}");
    }
}

/// Left-aligns the first column, right-aligns numbers, two spaces between columns.
fn pad(line: &mut String, text: &str, width: usize, left: bool) {
    let fill = " ".repeat(width.saturating_sub(text.chars().count()));
    if left {
        line.push_str(text);
        line.push_str(&fill);
    } else {
        line.push_str(&fill);
        line.push_str(text);
    }
    line.push_str("  ");
}

/// Metrics that count things ("fewer"), as opposed to amounts ("lower").
fn is_count(metric: &str) -> bool {
    matches!(metric, "calls" | "duplicates" | "server_calls" | "failed" | "ops")
        || metric.starts_with("failed_")
}

fn percent(x: f64) -> String {
    if x < 10.0 { format!("{x:.1}") } else { format!("{x:.0}") }
}

/// "full-jitter: 57 % fewer calls than exponential".
fn difference(metric: &str, better: Better, best: &str, b: f64, worst: &str, w: f64) -> String {
    let what = label(metric);
    match better {
        Better::Lower if catalogue::find(metric).map_or("", |m| m.unit).starts_with("fraction") => format!(
            "{best}: {what}: {} % of the runs, against {} % for {worst}",
            sig(100.0 * b, 3),
            sig(100.0 * w, 3)
        ),
        Better::Lower if w > 0.0 => {
            let pct = percent(100.0 * (w - b) / w);
            let word = if is_count(metric) { "fewer" } else { "lower" };
            format!("{best}: {pct} % {word} {what} than {worst} ({} vs {})", sig(b, 4), sig(w, 4))
        }
        Better::Higher
            if metric == "success_rate"
                || catalogue::find(metric).map_or("", |m| m.unit).starts_with("fraction") =>
        {
            format!(
                "{best}: {what} {} percentage points higher than {worst} ({} vs {})",
                percent(100.0 * (b - w)),
                sig(b, 3),
                sig(w, 3)
            )
        }
        Better::Higher if w > 0.0 => {
            format!(
                "{best}: {} % higher {what} than {worst} ({} vs {})",
                percent(100.0 * (b - w) / w),
                sig(b, 4),
                sig(w, 4)
            )
        }
        _ => format!("{best}: {what} {} vs {} for {worst}", sig(b, 4), sig(w, 4)),
    }
}

/// The index of a metric, or an error that lists the metrics and suggests the closest.
fn metric_or_error(set: &ResultSet, name: &str) -> Result<usize, ReportError> {
    set.metric_index(name).ok_or_else(|| {
        let closest = crate::suggest::closest(name, set.metrics.iter().map(String::as_str));
        ReportError::UnknownMetric {
            name: name.to_string(),
            suggestion: closest.map(|m| format!(" (did you mean `{m}`?)")).unwrap_or_default(),
            known: set.metrics.join(", "),
        }
    })
}

/// Ranks every (point, strategy) row that satisfies all `constraints` by `metric`, best
/// first (largest first for metrics where higher is better, else smallest first), each with
/// its interval and the constrained metrics. When no row is feasible, says which constraint
/// binds: the one whose removal would leave feasible rows, with the best of those.
pub fn rank<'s>(set: &'s ResultSet, metric: &str, constraints: &[Constraint]) -> Result<String, ReportError> {
    let m = metric_or_error(set, metric)?;
    let cons: Vec<(usize, &Constraint)> = constraints
        .iter()
        .map(|c| metric_or_error(set, &c.metric).map(|i| (i, c)))
        .collect::<Result<_, _>>()?;
    let better = catalogue::better(metric).unwrap_or(Better::Lower);
    let holds = |row: &SummaryRow, (ci, c): (usize, &Constraint)| row.mean[ci].is_some_and(|x| c.holds(x));
    let describe = |point: usize, strategy: usize| {
        let mut s = set.strategies[strategy].clone();
        if !set.sweep_keys.is_empty() {
            let _ = write!(s, " [{}]", set.point_label(point));
        }
        s
    };
    let value_of = |point: usize, strategy: usize, metric: usize| {
        format!("{} {}", set.metrics[metric], set.cell_text(point, strategy, metric))
    };
    let sorted = |rows: Vec<&'s SummaryRow>| sorted_by(rows, m, better);
    let mut out = String::new();
    let where_text = if constraints.is_empty() {
        String::new()
    } else {
        format!(" where {}", constraints.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(" and "))
    };
    let feasible = sorted(set.summary.iter().filter(|r| cons.iter().all(|&c| holds(r, c))).collect());
    let _ = writeln!(
        out,
        "rank by {metric} ({} first){where_text}: {} of {} rows feasible",
        if better == Better::Higher { "largest" } else { "smallest" },
        feasible.len(),
        set.summary.len()
    );
    if !feasible.is_empty() {
        let names: Vec<String> = feasible.iter().map(|r| describe(r.point, r.strategy)).collect();
        let width = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
        for (i, (r, name)) in feasible.iter().zip(&names).enumerate() {
            let mut line = format!("{:>3}. {name:<width$}  {}", i + 1, value_of(r.point, r.strategy, m));
            for &(ci, _) in &cons {
                if ci != m {
                    let _ = write!(line, "  {}", value_of(r.point, r.strategy, ci));
                }
            }
            let _ = writeln!(out, "{line}");
        }
        return Ok(out);
    }
    let _ = writeln!(out, "no row satisfies every constraint");
    let mut some_binds = false;
    for (k, &(_, c)) in cons.iter().enumerate() {
        let without = sorted(
            set.summary
                .iter()
                .filter(|r| cons.iter().enumerate().all(|(j, &o)| j == k || holds(r, o)))
                .collect(),
        );
        if let Some(first) = without.first() {
            some_binds = true;
            let _ = writeln!(
                out,
                "`{c}` binds: without it {} row{} would be feasible, the best by {metric} being {} ({})",
                without.len(),
                if without.len() == 1 { "" } else { "s" },
                describe(first.point, first.strategy),
                cons.iter()
                    .map(|&(ci, _)| value_of(first.point, first.strategy, ci))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    if !some_binds {
        let _ = writeln!(out, "no single constraint binds: dropping any one still leaves no feasible row");
    }
    // How close each constrained metric gets, anywhere.
    for &(ci, c) in &cons {
        let toward = match c.op {
            Op::Le | Op::Lt => Better::Lower,
            Op::Ge | Op::Gt => Better::Higher,
        };
        let best = set
            .summary
            .iter()
            .filter_map(|r| r.mean[ci].map(|v| (r, v)))
            .reduce(|a, b| if is_better(toward, b.1, a.1) { b } else { a });
        if let Some((r, _)) = best {
            let _ = writeln!(
                out,
                "  `{c}`: the best any row reaches is {} ({})",
                value_of(r.point, r.strategy, ci),
                describe(r.point, r.strategy)
            );
        }
    }
    Ok(out)
}

/// Rows with a value of metric `m`, best first; ties in summary order.
fn sorted_by(rows: Vec<&SummaryRow>, m: usize, better: Better) -> Vec<&SummaryRow> {
    let mut rows: Vec<_> = rows.into_iter().filter(|r| r.mean[m].is_some()).collect();
    rows.sort_by(|a, b| {
        let o = a.mean[m].unwrap_or(0.0).total_cmp(&b.mean[m].unwrap_or(0.0));
        let o = if better == Better::Higher { o.reverse() } else { o };
        o.then(a.point.cmp(&b.point)).then(a.strategy.cmp(&b.strategy))
    });
    rows
}
