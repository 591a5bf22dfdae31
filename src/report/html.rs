//! `report.html`: one self-contained HTML5 page (no network loads, no scripts, no external
//! CSS or fonts): the experiment, the comparison, the summary table and every chart inline
//! as SVG. Everything that comes from the files is escaped.

use super::chart::Chart;
use super::chart::KEY_METRICS;
use super::format::{cell, with_interval};
use super::paths;
use super::table::ResultSet;
use super::text::escape;
use crate::metrics::catalogue::axis_title;
use std::fmt::Write as _;

const STYLE: &str = "\
body{font-family:'DejaVu Sans',Verdana,sans-serif;max-width:60rem;margin:1.5rem auto;padding:0 1rem;color:#222;line-height:1.45}
h1{font-size:1.6rem;margin-bottom:.3rem}h2{font-size:1.25rem;margin-top:2rem;border-bottom:1px solid #ccc}
pre{background:#f6f6f6;padding:.6rem;overflow-x:auto;font-size:.85rem;line-height:1.3}
table{border-collapse:collapse;font-size:.8rem;margin:.5rem 0;display:block;overflow-x:auto}
th,td{border:1px solid #ddd;padding:.15rem .4rem;text-align:right;white-space:nowrap}
th{background:#f0f0f0}td.l,th.l{text-align:left}
figure{margin:1.2rem 0}figure svg{max-width:100%;height:auto;display:block;border:1px solid #eee}
figcaption{font-size:.85rem;color:#444;margin-top:.3rem}
.desc{white-space:pre-wrap}dl.facts{display:grid;grid-template-columns:max-content auto;gap:.1rem 1rem}dl.facts dt{font-weight:bold}dl.facts dd{margin:0}
nav ul{columns:2;font-size:.85rem}
";

/// The page for `set`, its charts (with their SVG text) and the comparison text.
pub fn page(set: &ResultSet, charts: &[(&Chart, String)], comparison: &str) -> String {
    let name = escape(&set.name());
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>retrysim report: {name}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n<h1>{name}</h1>\n"
    );
    let m = &set.manifest;
    if !m.description.trim().is_empty() {
        let _ = writeln!(h, "<p class=\"desc\">{}</p>", escape(m.description.trim()));
    }

    h.push_str("<dl class=\"facts\">\n");
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
    h.push_str("</dl>\n");

    // Table of contents.
    h.push_str("<nav><ul>\n<li><a href=\"#comparison\">Comparison</a></li>\n<li><a href=\"#summary\">Summary table</a></li>\n");
    let mut sections: Vec<&str> = Vec::new();
    for (c, _) in charts {
        if !sections.contains(&c.section) {
            sections.push(c.section);
        }
    }
    for s in &sections {
        let _ = writeln!(h, "<li><a href=\"#{}\">{}</a></li>", section_id(s), escape(s));
    }
    if !m.experiment_toml.is_empty() {
        h.push_str("<li><a href=\"#experiment\">Experiment file</a></li>\n");
    }
    h.push_str("</ul></nav>\n");

    let _ =
        writeln!(h, "<h2 id=\"comparison\">Comparison</h2>\n<pre>{}</pre>", escape(comparison.trim_end()));

    summary_table(&mut h, set);

    for s in &sections {
        let _ = writeln!(h, "<h2 id=\"{}\">{}</h2>", section_id(s), escape(s));
        for (c, svg) in charts.iter().filter(|(c, _)| c.section == *s) {
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
    }

    if !m.experiment_toml.is_empty() {
        let _ = writeln!(
            h,
            "<h2 id=\"experiment\">Experiment file</h2>\n<pre>{}</pre>",
            escape(m.experiment_toml.trim_end())
        );
    }
    let _ = writeln!(
        h,
        "<h2 id=\"about\">How this page was made</h2>\n<p>By <code>retrysim plot DIR</code> (which <code>retrysim run</code> \
         also calls when it finishes), from the files of this folder only: summary.csv, runs.csv{}{}. The same files \
         give the same page, byte for byte: it has no timestamp and loads nothing from the network. Intervals are 95 % \
         confidence intervals of the mean over runs (t distribution). The charts are also in the <code>{}</code> folder \
         as SVG and PNG.</p>\n</body>\n</html>",
        if set.timeseries.is_some() { ", timeseries.csv" } else { "" },
        if m.name.is_empty() { "" } else { ", manifest.json" },
        paths::CHARTS_DIR
    );
    h
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
    h.push_str("<h2 id=\"summary\">Summary table</h2>\n<p>Mean over runs ± 95 % confidence half-width, rounded to the interval's \
                last meaningful digit. Every metric, unrounded, is in summary.csv.</p>\n<table>\n<thead><tr>");
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
            let text = match set.estimate(row.point, row.strategy, m) {
                Some(e) => with_interval(e.mean, e.half_width),
                None => cell(None),
            };
            let _ = write!(h, "<td>{}</td>", escape(&text));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody>\n</table>\n");
}
