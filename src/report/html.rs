//! `report.html`: one self-contained HTML5 page (no network loads, no scripts, no external
//! CSS or fonts): the verdict first, then the call graph (with `[[services]]`), the comparison
//! table, every chart inline as SVG (heatmaps first), the summary table and the experiment that ran. Every section is a
//! `<details>` with an entry in the table of contents; wide tables scroll sideways inside a
//! frozen first column. Everything that comes from the files is escaped.

use super::chart::Chart;
use super::chart::KEY_METRICS;
use super::chart::call_graph::SECTION as CALL_GRAPH;
use super::compare::Comparison;
use super::paths;
use super::table::ResultSet;
use super::text::escape;
use super::verdict::Verdict;
use crate::metrics::catalogue::axis_title;
use std::fmt::Write as _;

const STYLE: &str = "\
body{font-family:'DejaVu Sans',Verdana,sans-serif;max-width:72rem;margin:1rem auto;padding:0 1rem;color:#222;line-height:1.4}
h1{font-size:1.5rem;margin:.2rem 0 .4rem}h2{font-size:1.2rem;margin:0;display:inline}
details{margin-top:1.2rem;border-top:1px solid #ccc;padding-top:.4rem}summary{cursor:pointer}
pre{background:#f6f6f6;padding:.6rem;overflow-x:auto;font-size:.85rem;line-height:1.3}
.scroll{overflow-x:auto;max-width:100%;margin:.5rem 0}
table{border-collapse:separate;border-spacing:0;font-size:.8rem}
th,td{border-bottom:1px solid #ddd;border-right:1px solid #eee;padding:.15rem .4rem;text-align:right;white-space:nowrap;background:#fff}
th{background:#f0f0f0;position:sticky;top:0}td.l,th.l{text-align:left}
th:first-child,td:first-child{position:sticky;left:0;z-index:1;border-right:2px solid #ccc}
th:first-child{z-index:2;background:#f0f0f0}
td.best{font-weight:bold;color:#1a6e2e}td.never{color:#b00020}
figure{margin:1.2rem 0}figure svg{max-width:100%;height:auto;display:block;border:1px solid #eee}
figcaption{font-size:.85rem;color:#444;margin-top:.3rem}
.desc{white-space:pre-wrap;font-size:.9rem;color:#333}dl.facts{display:grid;grid-template-columns:max-content auto;gap:.1rem 1rem}dl.facts dt{font-weight:bold}dl.facts dd{margin:0}
#verdict{background:#fbf8ee;border:1px solid #e6dcb8;padding:.4rem .8rem;margin:.4rem 0}
#verdict p{margin:.2rem 0;font-size:.9rem}#verdict ul{margin:.3rem 0;padding-left:1.2rem;font-size:.9rem}#verdict li{margin:.15rem 0}
nav{font-size:.85rem;margin:.4rem 0}nav a{margin-right:.8rem}
.notes{font-size:.85rem;margin:.2rem 0 .8rem 1rem;padding:0}
";

/// The page for `set`: the verdict first, then the call graph, the comparison table, the charts (heatmaps
/// first), the summary table and the experiment that ran.
pub fn page(
    set: &ResultSet,
    charts: &[(&Chart, String)],
    comparison: &Comparison,
    verdict: &Verdict,
) -> String {
    let name = escape(&set.name());
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>retrysim report: {name}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n"
    );
    let m = &set.manifest;
    // A partial result says so before anything else: its tables and charts lack cells.
    if let Some(line) = super::partial_line(m) {
        let _ = writeln!(h, "<p id=\"partial\"><b>{}</b></p>", escape(&line));
    }
    let _ = writeln!(h, "<h1>{name}</h1>");

    // The verdict: what the run says, before anything else.
    let _ = writeln!(h, "<section id=\"verdict\">\n<p>{}</p>\n<ul>", escape(&verdict.intro));
    for (strategy, sentences) in &verdict.strategies {
        let _ = writeln!(h, "<li><b>{}</b>: {}</li>", escape(strategy), escape(&sentences.join("; ")));
    }
    h.push_str("</ul>\n</section>\n");

    // Table of contents, in page order.
    let mut sections: Vec<&str> = Vec::new();
    for (c, _) in charts {
        if !sections.contains(&c.section) {
            sections.push(c.section);
        }
    }
    // The call graph says what the services did, and the heatmaps show a two-key sweep at a
    // glance: both before the comparison, the graph first.
    let early = |s: &str| s == CALL_GRAPH || (s == "Heatmaps" && set.sweep_keys.len() == 2);
    sections.sort_by_key(|s| (*s != CALL_GRAPH, *s != "Heatmaps"));
    let (early, late): (Vec<&str>, Vec<&str>) = sections.iter().partition(|s| early(s));
    let mut toc: Vec<(String, String)> = sections.iter().map(|s| (section_id(s), s.to_string())).collect();
    toc.insert(early.len(), ("comparison".to_string(), "Comparison".to_string()));
    toc.push(("summary".into(), "Summary table".into()));
    toc.push(("experiment".into(), "The experiment that ran".into()));
    h.push_str("<nav>Contents:");
    for (id, title) in &toc {
        let _ = write!(h, " <a href=\"#{id}\">{}</a>", escape(title));
    }
    h.push_str("</nav>\n");
    if !m.description.trim().is_empty() {
        let _ = writeln!(h, "<p class=\"desc\">{}</p>", escape(m.description.trim()));
    }

    for s in &early {
        chart_section(&mut h, s, charts);
    }
    comparison_tables(&mut h, comparison);
    for s in &late {
        chart_section(&mut h, s, charts);
    }

    summary_table(&mut h, set);
    experiment_section(&mut h, set);

    let _ = writeln!(
        h,
        "<details open id=\"about\"><summary><h2>How this page was made</h2></summary>\n<p>By <code>retrysim plot DIR</code> (which <code>retrysim run</code> \
         also calls when it finishes), from the files of this folder only: summary.csv, runs.csv{}{}. The same files \
         give the same page, byte for byte: it has no timestamp and loads nothing from the network. Intervals are 95 % \
         confidence intervals of the mean over runs (t distribution). The charts are also in the <code>{}</code> folder \
         as SVG and PNG.</p>\n</details>\n</body>\n</html>",
        if set.timeseries.is_some() { ", timeseries.csv" } else { "" },
        if m.name.is_empty() { "" } else { ", manifest.json" },
        paths::CHARTS_DIR
    );
    h
}

/// One section of charts, collapsible.
fn chart_section(h: &mut String, s: &str, charts: &[(&Chart, String)]) {
    let _ = writeln!(h, "<details open id=\"{}\"><summary><h2>{}</h2></summary>", section_id(s), escape(s));
    for (c, svg) in charts.iter().filter(|(c, _)| c.section == s) {
        let _ = writeln!(
            h,
            "<figure id=\"{id}\" class=\"chart\">\n{svg}<figcaption>{cap} Files: <a href=\"{dir}/{stem}.svg\">{stem}.svg</a>, <a href=\"{dir}/{stem}.png\">{stem}.png</a>.</figcaption>\n</figure>",
            id = escape(&format!("chart-{}", c.stem)),
            svg = strip_xml_declaration(svg),
            cap = escape(&c.caption),
            dir = paths::CHARTS_DIR,
            stem = escape(&c.stem),
        );
    }
    h.push_str("</details>\n");
}

/// The comparison as HTML tables: the best of each column in bold, never-recovered cells
/// marked, the notable differences below each table.
fn comparison_tables(h: &mut String, c: &Comparison) {
    let _ = writeln!(
        h,
        "<details open id=\"comparison\"><summary><h2>Comparison</h2></summary>\n<p>{}; best of each column in bold.</p>",
        escape(&c.heading)
    );
    for line in &c.left_out {
        let _ = writeln!(h, "<p>{}</p>", escape(line));
    }
    if c.tables.is_empty() {
        h.push_str("<p>No metric differs between rows.</p>\n");
    }
    for t in &c.tables {
        if !t.title.is_empty() {
            let _ = writeln!(h, "<h3>{}</h3>", escape(&t.title));
        }
        h.push_str("<div class=\"scroll\"><table>\n<thead><tr>");
        for (i, name) in t.header.iter().enumerate() {
            let class = if i == 0 || name == "point" { " class=\"l\"" } else { "" };
            let title = axis_title(name);
            let _ = write!(h, "<th{class} title=\"{}\">{}</th>", escape(&title), escape(name));
        }
        h.push_str("</tr></thead>\n<tbody>\n");
        for row in &t.rows {
            h.push_str("<tr>");
            for (i, cell) in row.iter().enumerate() {
                let text_cell = i == 0 || t.header[i] == "point";
                let class = match (text_cell, cell.best, cell.text.contains("never")) {
                    (true, _, _) => " class=\"l\"",
                    (_, true, _) => " class=\"best\"",
                    (_, _, true) => " class=\"never\"",
                    _ => "",
                };
                let _ = write!(h, "<td{class}>{}</td>", escape(&cell.text));
            }
            h.push_str("</tr>\n");
        }
        h.push_str("</tbody>\n</table></div>\n");
        if !t.notes.is_empty() {
            h.push_str("<ul class=\"notes\">\n");
            for n in &t.notes {
                let _ = writeln!(h, "<li>{}</li>", escape(n));
            }
            h.push_str("</ul>\n");
        }
    }
    h.push_str("</details>\n");
}

/// What ran: the facts, the command line, the changes against the file, the effective
/// experiment and the file itself.
fn experiment_section(h: &mut String, set: &ResultSet) {
    let m = &set.manifest;
    h.push_str("<details open id=\"experiment\"><summary><h2>The experiment that ran</h2></summary>\n<dl class=\"facts\">\n");
    let mut fact = |k: &str, v: String| {
        let _ = writeln!(h, "<dt>{}</dt><dd>{}</dd>", escape(k), escape(&v));
    };
    fact("strategies", set.strategies.join(", "));
    if let Some(runs) = m.runs {
        fact("runs per (point, strategy)", runs.to_string());
    }
    if let Some(seed) = m.seed {
        fact("seed", seed.to_string());
    }
    if set.sweep_keys.is_empty() {
        fact("sweep", "none".into());
    } else {
        for (k, key) in set.sweep_keys.iter().enumerate() {
            let mut values: Vec<&str> = Vec::new();
            for p in &set.points {
                if !values.contains(&p.values[k].as_str()) {
                    values.push(&p.values[k]);
                }
            }
            fact(&format!("swept: {key}"), values.join(", "));
        }
    }
    if !m.retrysim_version.is_empty() {
        fact("retrysim version", m.retrysim_version.clone());
    }
    if !m.command_line.is_empty() {
        fact("command line", m.command_line.join(" "));
    }
    if !m.name.is_empty() {
        let changes =
            if m.overrides.is_empty() { "none: the file as written".into() } else { m.overrides.join(" ") };
        fact("changes against the file", changes);
    }
    h.push_str("</dl>\n");
    if !m.effective_toml.is_empty() {
        let _ = writeln!(
            h,
            "<h3 id=\"effective\">The experiment as run, every change applied</h3>\n<pre>{}</pre>",
            escape(m.effective_toml.trim_end())
        );
    }
    if !m.experiment_toml.is_empty() {
        let title = if m.overrides.is_empty() {
            "The experiment file"
        } else {
            "The experiment file, before the changes"
        };
        let _ =
            writeln!(h, "<h3 id=\"file\">{title}</h3>\n<pre>{}</pre>", escape(m.experiment_toml.trim_end()));
    }
    h.push_str("</details>\n");
}

fn section_id(s: &str) -> String {
    format!("s-{}", paths::sanitize(&s.to_lowercase()))
}

fn strip_xml_declaration(svg: &str) -> &str {
    match svg.strip_prefix("<?xml") {
        Some(rest) => rest.find("?>").map_or(svg, |i| rest[i + 2..].trim_start()),
        None => svg,
    }
}

/// The summary table: swept keys, strategy, runs, then the key metrics as mean ± half-width.
fn summary_table(h: &mut String, set: &ResultSet) {
    let metrics: Vec<usize> =
        KEY_METRICS.iter().filter_map(|m| set.metric_index(m)).filter(|&m| set.has_values(m)).collect();
    h.push_str("<details open id=\"summary\"><summary><h2>Summary table</h2></summary>\n<p>Mean over runs ± 95 % confidence half-width, rounded to the interval's \
                last meaningful digit; <q>never (k of n runs)</q>: runs that never recovered. Every metric, unrounded, is in summary.csv.</p>\n<div class=\"scroll\"><table>\n<thead><tr>");
    for k in &set.sweep_keys {
        let _ = write!(h, "<th class=\"l\">{}</th>", escape(k));
    }
    h.push_str("<th class=\"l\">strategy</th><th>runs</th>");
    for &m in &metrics {
        let _ = write!(
            h,
            "<th title=\"{}\">{}</th>",
            escape(&axis_title(&set.metrics[m])),
            escape(&set.metrics[m])
        );
    }
    h.push_str("</tr></thead>\n<tbody>\n");
    for row in &set.summary {
        h.push_str("<tr>");
        for v in &set.points[row.point].values {
            let _ = write!(h, "<td class=\"l\">{}</td>", escape(v));
        }
        let _ =
            write!(h, "<td class=\"l\">{}</td><td>{}</td>", escape(&set.strategies[row.strategy]), row.runs);
        for &m in &metrics {
            let text = set.cell_text(row.point, row.strategy, m);
            let class = if text.contains("never") { " class=\"never\"" } else { "" };
            let _ = write!(h, "<td{class}>{}</td>", escape(&text));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody>\n</table></div>\n</details>\n");
}
