//! The plotted report (src/report/): reading result folders, every chart file produced and
//! valid, byte-identical re-rendering, clear errors on bad folders, the comparison text and
//! the ranking under constraints. Fixtures: tests/fixtures/report/ (README.md there says how they were
//! made).

use retrysim::metrics::constraint::Constraint;
use retrysim::report::{
    CompareOptions, ReportError, ReportOptions, ResultSet, comparison, rank, render_report,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report").join(name)
}

/// A copy of a fixture's input files in a fresh temporary folder (the report writes there).
fn copy_fixture(name: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for f in ["summary.csv", "runs.csv", "timeseries.csv", "manifest.json"] {
        let from = fixture(name).join(f);
        if from.exists() {
            std::fs::copy(&from, tmp.path().join(f)).unwrap();
        }
    }
    tmp
}

/// Every file under `dir/charts` plus report.html, by relative name.
fn outputs(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir.join("charts")).unwrap() {
        let p = e.unwrap().path();
        out.insert(
            format!("charts/{}", p.file_name().unwrap().to_string_lossy()),
            std::fs::read(&p).unwrap(),
        );
    }
    out.insert("report.html".into(), std::fs::read(dir.join("report.html")).unwrap());
    out
}

fn check_svg(name: &str, bytes: &[u8]) -> (f64, f64) {
    let text = std::str::from_utf8(bytes).unwrap_or_else(|e| panic!("{name}: not UTF-8: {e}"));
    let doc = roxmltree::Document::parse(text).unwrap_or_else(|e| panic!("{name}: not valid XML: {e}"));
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg", "{name}");
    // Text is drawn as outlines of the embedded font: no <text> element depends on the
    // viewer's fonts.
    assert!(doc.descendants().all(|n| n.tag_name().name() != "text"), "{name} has a <text> element");
    assert!(doc.descendants().any(|n| n.tag_name().name() == "use"), "{name} has no text at all");
    let w: f64 = root.attribute("width").unwrap().parse().unwrap();
    let h: f64 = root.attribute("height").unwrap().parse().unwrap();
    (w, h)
}

fn check_png(name: &str, bytes: &[u8]) -> (u32, u32) {
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    let mut reader = decoder.read_info().unwrap_or_else(|e| panic!("{name}: not a PNG: {e}"));
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap_or_else(|e| panic!("{name}: PNG does not decode: {e}"));
    let pixels = &buf[..info.buffer_size()];
    let distinct: std::collections::BTreeSet<&[u8]> = pixels.chunks(3).collect();
    assert!(distinct.len() > 10, "{name}: only {} colours: blank?", distinct.len());
    (info.width, info.height)
}

/// Renders a fixture and checks every output; returns the outputs.
fn render_and_check(name: &str, expected: &[&str]) -> BTreeMap<String, Vec<u8>> {
    let dir = copy_fixture(name);
    let written = render_report(dir.path(), &ReportOptions::default()).unwrap();
    let files = outputs(dir.path());
    assert_eq!(written.len(), files.len(), "{name}: paths returned vs files on disk");
    for p in &written {
        assert!(p.starts_with(dir.path()), "{}", p.display());
    }
    for stem in expected {
        for ext in ["svg", "png"] {
            assert!(
                files.contains_key(&format!("charts/{stem}.{ext}")),
                "{name}: no charts/{stem}.{ext} in {:?}",
                files.keys()
            );
        }
    }
    for (f, bytes) in &files {
        assert!(!bytes.is_empty(), "{name}: {f} is empty");
        if let Some(stem) = f.strip_suffix(".svg") {
            let (w, h) = check_svg(f, bytes);
            let (pw, ph) = check_png(f, &files[&format!("{stem}.png")]);
            assert_eq!((w as u32, h as u32), (pw, ph), "{f}: SVG and PNG sizes differ");
            assert_eq!(pw, 800, "{f}: charts are 800 px wide");
            assert!(ph >= 300, "{f}: {ph} px high");
        }
    }
    let html = String::from_utf8(files["report.html"].clone()).unwrap();
    let svgs = files.keys().filter(|f| f.ends_with(".svg")).count();
    assert_eq!(html.matches("<figure ").count(), svgs, "{name}: every chart is in report.html");
    assert!(html.starts_with("<!DOCTYPE html>"));
    for forbidden in ["<script", "http://", "https://", "<link", "@import", "url("] {
        let outside_svg_ns = html.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
        assert!(!outside_svg_ns.contains(forbidden), "{name}: report.html contains {forbidden}");
    }
    files
}

#[test]
fn no_sweep_with_timeseries() {
    let files = render_and_check(
        "storm-nosweep",
        &[
            "timeseries",
            "latency-runs-cdf",
            "success_rate-by-strategy",
            "calls-by-strategy",
            "latency_p99_s-by-strategy",
        ],
    );
    // recovery_time_s is 0 in every run: still drawn (it has values); no sweep, no heatmap;
    // no [[services]], no call graph.
    assert!(!files.keys().any(|f| f.contains("heatmap") || f.contains("-vs-") || f.contains("call-graph")));
    let html = String::from_utf8(files["report.html"].clone()).unwrap();
    assert!(!html.contains("Call graph"));
    assert!(html.contains("retry-storm"));
    assert!(html.contains("retrysim plot DIR"));
    // The experiment file is there, escaped.
    assert!(html.contains("name = &quot;retry-storm&quot;"));
}

#[test]
fn one_key_sweep_draws_lines_and_per_point_timeseries() {
    render_and_check(
        "storm-rate-sweep",
        &[
            "success_rate-vs-workload.rate",
            "amplification-vs-workload.rate",
            "latency_p99_s-vs-workload.rate",
            "recovery_time_s-vs-workload.rate",
            "timeseries-workload.rate=600.0",
            "timeseries-workload.rate=1200.0",
            "latency-runs-cdf-workload.rate=1000.0",
        ],
    );
}

#[test]
fn two_key_sweep_draws_heatmaps() {
    let files = render_and_check(
        "storm-two-keys",
        &[
            "success_rate-vs-workload.rate",
            "success_rate-vs-client.timeout",
            "heatmap-success_rate-full-jitter",
            "heatmap-latency_p99_s-immediate",
            "heatmap-amplification-decorrelated-jitter",
        ],
    );
    // No timeseries.csv: no time series chart; 9 points: latency drawn for at most 6.
    assert!(!files.keys().any(|f| f.contains("timeseries")));
    // For two swept keys the heatmaps come first, before the comparison and the other charts.
    let html = String::from_utf8(files["report.html"].clone()).unwrap();
    let at = |id: &str| html.find(&format!("<details open id=\"{id}\"")).unwrap_or_else(|| panic!("no {id}"));
    assert!(at("s-heatmaps") < at("comparison") && at("comparison") < at("s-sweeps"), "heatmaps first");
    assert_eq!(files.keys().filter(|f| f.contains("latency-runs-cdf") && f.ends_with(".svg")).count(), 6);
}

#[test]
fn aws_clients_sweep_names_the_pair() {
    render_and_check(
        "aws-clients",
        &["aws-calls-vs-clients", "aws-completion-time-vs-clients", "amplification-vs-workload.clients"],
    );
}

#[test]
fn rendering_twice_gives_identical_bytes() {
    for name in ["storm-nosweep", "storm-two-keys"] {
        let a = copy_fixture(name);
        let b = copy_fixture(name);
        render_report(a.path(), &ReportOptions::default()).unwrap();
        render_report(b.path(), &ReportOptions::default()).unwrap();
        // Rendering again over existing outputs changes nothing either.
        render_report(b.path(), &ReportOptions::default()).unwrap();
        let (fa, fb) = (outputs(a.path()), outputs(b.path()));
        assert_eq!(fa.keys().collect::<Vec<_>>(), fb.keys().collect::<Vec<_>>());
        for (k, v) in &fa {
            assert!(v == &fb[k], "{name}: {k} differs between two renderings");
        }
    }
}

#[test]
fn a_folder_that_is_not_a_result_folder_is_refused_clearly() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("notes.txt"), "hello").unwrap();
    let e = render_report(tmp.path(), &ReportOptions::default()).unwrap_err();
    assert!(matches!(e, ReportError::NotAResultFolder { missing: "summary.csv", .. }), "{e:?}");
    let msg = e.to_string();
    assert!(msg.contains(&tmp.path().display().to_string()), "{msg}");
    assert!(msg.contains("is not a retrysim result folder: summary.csv is missing"), "{msg}");
    // Nothing was written.
    assert!(!tmp.path().join("report.html").exists() && !tmp.path().join("charts").exists());

    let missing = tempfile::tempdir().unwrap();
    let e = ResultSet::read_dir(&missing.path().join("nope")).unwrap_err();
    assert!(e.to_string().contains("summary.csv is missing"), "{e}");

    // summary.csv without runs.csv.
    std::fs::copy(fixture("storm-nosweep/summary.csv"), tmp.path().join("summary.csv")).unwrap();
    let e = ResultSet::read_dir(tmp.path()).unwrap_err();
    assert!(e.to_string().contains("runs.csv is missing"), "{e}");
}

#[test]
fn damaged_files_name_the_file_line_and_column() {
    let dir = copy_fixture("storm-nosweep");
    let summary = dir.path().join("summary.csv");
    let text = std::fs::read_to_string(&summary).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    lines[2] = lines[2].replacen(",20,", ",twenty,", 1).replacen(",5,", ",five,", 1);
    std::fs::write(&summary, lines.join("\n") + "\n").unwrap();
    let e = ResultSet::read_dir(dir.path()).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, ReportError::BadNumber { line: 3, .. }), "{e:?}");
    assert!(msg.contains("summary.csv") && msg.contains("line 3") && msg.contains("five"), "{msg}");

    let dir = copy_fixture("storm-nosweep");
    std::fs::write(dir.path().join("manifest.json"), "{ not json").unwrap();
    let msg = ResultSet::read_dir(dir.path()).unwrap_err().to_string();
    assert!(msg.contains("manifest.json") && msg.contains("re-run"), "{msg}");

    let dir = copy_fixture("storm-nosweep");
    std::fs::write(dir.path().join("runs.csv"), "strategy,run,seed,ops\nnobody,0,1,5\n").unwrap();
    let msg = ResultSet::read_dir(dir.path()).unwrap_err().to_string();
    assert!(msg.contains("runs.csv") && msg.contains("`nobody` is not in summary.csv"), "{msg}");

    let dir = copy_fixture("storm-nosweep");
    std::fs::write(dir.path().join("summary.csv"), "workload.rate,ops\n1,2\n").unwrap();
    let msg = ResultSet::read_dir(dir.path()).unwrap_err().to_string();
    assert!(msg.contains("no column `strategy`"), "{msg}");
}

#[test]
fn tables_are_read_by_column_name() {
    let set = ResultSet::read_dir(&fixture("storm-two-keys")).unwrap();
    assert_eq!(set.sweep_keys, ["workload.rate", "client.timeout"]);
    assert_eq!(set.points.len(), 9);
    assert_eq!(set.strategies.len(), 6);
    assert_eq!(set.summary.len(), 54);
    assert_eq!(set.runs.len(), 54, "one run summary per cell");
    assert_eq!(set.runs.values().map(|c| c.rows).sum::<u64>(), 54 * 3, "every run is counted");
    assert_eq!(set.points[0].capacity_rps, Some(1200.0));
    assert_eq!(set.points[0].faults.len(), 1);
    let sr = set.metric_index("success_rate").unwrap();
    let e = set.estimate(0, 0, sr).unwrap();
    assert_eq!(e.n, 3);
    assert!(e.half_width.unwrap() > 0.0);
    // A metric column added later, anywhere, is picked up by name.
    let dir = copy_fixture("storm-nosweep");
    for f in ["summary.csv", "runs.csv"] {
        let p = dir.path().join(f);
        let text = std::fs::read_to_string(&p).unwrap();
        let out: String = text
            .lines()
            .enumerate()
            .map(|(i, l)| {
                let extra = if i == 0 {
                    if f == "summary.csv" { "new_metric,new_metric_sd" } else { "new_metric" }
                } else if f == "summary.csv" {
                    "7,0.5"
                } else {
                    "7"
                };
                format!("{l},{extra}\n")
            })
            .collect();
        std::fs::write(&p, out).unwrap();
    }
    let set = ResultSet::read_dir(dir.path()).unwrap();
    let m = set.metric_index("new_metric").unwrap();
    assert_eq!(set.summary[0].mean[m], Some(7.0));
    let first = set.runs.values().next().unwrap();
    assert!(first.rows > 0 && first.with_value[m] == first.rows, "runs.csv's new column is read");
    // Without a manifest the folder still reads: names from the folder and the CSV.
    std::fs::remove_file(dir.path().join("manifest.json")).unwrap();
    std::fs::remove_file(dir.path().join("timeseries.csv")).unwrap();
    let set = ResultSet::read_dir(dir.path()).unwrap();
    assert_eq!(set.strategies[0], "immediate");
    assert!(set.timeseries.is_none());
}

const NOSWEEP_COMPARISON: &str = "\
retry-storm: 6 strategies, 1 point, 5 runs each; mean ± 95 % CI half-width; * = best in column
in every row: server_calls = calls (within 0.1 %)

strategy             success_rate    calls          amplification   completion_time_s  latency_p99_s   duplicates   recovery_time_s      metastable
immediate            0.900 ± 0.002*  64900 ± 300*   1.300 ± 0.006*  50.48 ± 0.08*      0.456 ± 0.003*  3 ± 3*       0*                   0*
constant             0.33 ± 0.02     161000 ± 3000  3.23 ± 0.04     55.8 ± 0.4         6.05 ± 0.05     17700 ± 500  never (5 of 5 runs)  1
exponential          0.37 ± 0.02     161000 ± 2000  3.22 ± 0.02     60                 10.08 ± 0.06    19600 ± 400  never (5 of 5 runs)  1
full-jitter          0.335 ± 0.015   162000 ± 2000  3.24 ± 0.02     58.2 ± 0.5         8.19 ± 0.03     17600 ± 400  never (5 of 5 runs)  1
equal-jitter         0.35 ± 0.02     162000 ± 2000  3.24 ± 0.03     59.2 ± 0.4         9.10 ± 0.02     18400 ± 400  never (5 of 5 runs)  1
decorrelated-jitter  0.36 ± 0.02     157000 ± 2000  3.14 ± 0.03     60                 26.9 ± 0.2      20400 ± 200  never (5 of 5 runs)  1
  immediate: success rate 57 percentage points higher than constant (0.9 vs 0.327)
  immediate: 60 % fewer calls than full-jitter (64947 vs 161869)
  immediate: 60 % lower amplification than full-jitter (1.3 vs 3.24)
  immediate: 16 % lower completion time than decorrelated-jitter (50.48 vs 60)
  immediate: 98 % lower p99 latency than decorrelated-jitter (0.4562 vs 26.94)
  immediate: 100 % fewer duplicate side effects than decorrelated-jitter (3.2 vs 20376)
  immediate: metastable runs: 0 % of the runs, against 100 % for decorrelated-jitter
";

#[test]
fn comparison_text_is_stable() {
    let set = ResultSet::read_dir(&fixture("storm-nosweep")).unwrap();
    let text = comparison(&set, &CompareOptions::default());
    assert_eq!(text, NOSWEEP_COMPARISON, "got:\n{text}");
    for name in ["storm-nosweep", "storm-rate-sweep", "storm-two-keys", "aws-clients"] {
        let set = ResultSet::read_dir(&fixture(name)).unwrap();
        let plain = comparison(&set, &CompareOptions::default());
        assert!(
            plain.chars().all(|c| c == '\n' || !c.is_control()),
            "{name}: control characters without color"
        );
        assert!(plain.chars().all(|c| c.is_ascii() || c == '±'), "{name}: non-ASCII besides ±");
        let colored = comparison(&set, &CompareOptions { color: true, ..Default::default() });
        assert!(colored.contains("\x1b[1;32m"), "{name}: best values are highlighted with color");
        assert!(!colored.contains('*'), "{name}: no star with color");
    }
    // A large sweep lists each strategy's best point.
    let set = ResultSet::read_dir(&fixture("storm-two-keys")).unwrap();
    let text = comparison(&set, &CompareOptions::default());
    assert!(text.contains("9 points: each strategy's best point by success_rate"), "{text}");
    assert!(text.lines().filter(|l| l.contains("client.timeout=")).count() >= 6, "{text}");
    // The AWS pair: full jitter makes far fewer calls than no backoff at 100 clients.
    let set = ResultSet::read_dir(&fixture("aws-clients")).unwrap();
    let text = comparison(&set, &CompareOptions::default());
    assert!(text.contains("same in every row: success_rate = 1"), "{text}");
    assert!(text.contains("full-jitter: 67 % fewer calls than no-backoff"), "{text}");
}

#[test]
fn ranking_lists_feasible_rows_and_names_the_binding_constraint() {
    let set = ResultSet::read_dir(&fixture("storm-two-keys")).unwrap();
    let c = |t: &str| Constraint::parse(t).unwrap();
    let text = rank(&set, "calls", &[c("success_rate >= 0.95")]).unwrap();
    let first = text.lines().nth(1).unwrap();
    assert!(text.starts_with("rank by calls (smallest first) where success_rate >= 0.95:"), "{text}");
    assert!(
        first.starts_with("  1. ") && first.contains("calls ") && first.contains("success_rate "),
        "{text}"
    );
    assert!(first.contains('±'), "intervals: {text}");

    let none = rank(&set, "calls", &[c("success_rate >= 0.999"), c("latency_p99_s <= 1")]).unwrap();
    assert!(none.contains(": 0 of 54 rows feasible"), "{none}");
    assert!(none.contains("no row satisfies every constraint"), "{none}");
    assert!(
        none.contains("`success_rate >= 0.999` binds") || none.contains("`latency_p99_s <= 1` binds"),
        "{none}"
    );

    let e = rank(&set, "latency_p99", &[]).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("unknown metric `latency_p99`") && msg.contains("did you mean `latency_p99_s`?"),
        "{msg}"
    );
    let e = rank(&set, "calls", &[c("sucess_rate >= 0.9")]).unwrap_err();
    assert!(e.to_string().contains("did you mean `success_rate`?"), "{e}");
}

/// A copy of `name` whose runs.csv holds each of its rows `times` times.
fn with_runs_repeated(name: &str, times: usize) -> tempfile::TempDir {
    let dir = copy_fixture(name);
    let path = dir.path().join("runs.csv");
    let text = std::fs::read_to_string(&path).unwrap();
    let (header, rows) = text.split_once('\n').unwrap();
    let mut out = String::with_capacity(header.len() + rows.len() * times);
    out.push_str(header);
    out.push('\n');
    for _ in 0..times {
        out.push_str(rows);
    }
    std::fs::write(&path, out).unwrap();
    dir
}

#[test]
fn the_report_does_not_grow_with_the_runs() {
    // storm-nosweep has 10 runs per strategy: 200 and 20,000.
    let size = |times: usize| {
        let dir = with_runs_repeated("storm-nosweep", times);
        render_report(dir.path(), &ReportOptions::default()).unwrap();
        let html = std::fs::read(dir.path().join("report.html")).unwrap().len();
        let latency = std::fs::read(dir.path().join("charts/latency-runs-cdf.svg")).unwrap().len();
        (html, latency)
    };
    let (html_200, latency_200) = size(20);
    let (html_20k, latency_20k) = size(2000);
    // Cells of more than 500 runs are drawn through 500 quantiles: 2.5 x the points of 200
    // runs at most, where drawing every run would be 100 x.
    assert!(
        latency_20k < 3 * latency_200,
        "latency chart: {latency_200} B at 200 runs, {latency_20k} B at 20,000"
    );
    assert!(html_20k < 2 * html_200, "report.html: {html_200} B at 200 runs, {html_20k} B at 20,000");
}

/// A shipped result folder (read in place: reading writes nothing).
fn shipped(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("results").join(name)
}

/// summary.csv as maps from column to cell.
fn summary_rows(dir: &Path) -> Vec<BTreeMap<String, String>> {
    let mut reader = csv::Reader::from_path(dir.join("summary.csv")).unwrap();
    let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
    reader
        .records()
        .map(|r| header.iter().cloned().zip(r.unwrap().iter().map(String::from)).collect())
        .collect()
}

/// The verdict's paragraph of one strategy.
fn paragraph<'t>(text: &'t str, strategy: &str) -> &'t str {
    let start = format!("- {strategy}: ");
    text.lines().find(|l| l.starts_with(&start)).unwrap_or_else(|| panic!("no line for {strategy}:\n{text}"))
}

#[test]
fn verdict_sentences_of_shipped_experiments_are_golden_and_match_the_numbers() {
    use retrysim::report::{VerdictOptions, verdict};
    let golden_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/verdict");
    for name in ["retry-storm", "metastable", "budgets-vs-breakers"] {
        let set = ResultSet::read_dir(&shipped(name)).unwrap();
        let text = verdict(&set, &VerdictOptions::default()).unwrap().text();
        let golden = std::fs::read_to_string(golden_dir.join(format!("{name}.txt"))).unwrap();
        assert_eq!(text, golden, "{name}: the verdict changed; got:\n{text}");
        // One paragraph per strategy, in the folder's order.
        assert_eq!(text.lines().count(), 1 + set.strategies.len(), "{name}");
    }

    // The flagship (no sweep): never-recovered counts are runs.csv's, not guessed.
    let dir = shipped("retry-storm");
    let text = verdict(&ResultSet::read_dir(&dir).unwrap(), &VerdictOptions::default()).unwrap().text();
    let mut never: BTreeMap<String, (u32, u32)> = BTreeMap::new();
    let mut reader = csv::Reader::from_path(dir.join("runs.csv")).unwrap();
    let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
    let col = |n: &str| header.iter().position(|h| h == n).unwrap();
    let (s, rec, meta) = (col("strategy"), col("recovery_time_s"), col("metastable"));
    for r in reader.records() {
        let r = r.unwrap();
        let e = never.entry(r[s].to_string()).or_default();
        e.1 += u32::from(!r[meta].is_empty());
        e.0 += u32::from(r[rec].is_empty() && !r[meta].is_empty());
    }
    for (strategy, (k, n)) in &never {
        let line = paragraph(&text, strategy);
        match (k, n) {
            (0, _) => assert!(!line.contains("never"), "{line}"),
            (k, n) if k == n => {
                assert!(line.contains(&format!("never recovered ({k} of {n} runs)")), "{line}")
            }
            (k, n) => assert!(line.contains(&format!("never in {k} of {n} runs")), "{line}"),
        }
    }
    assert!(never.values().any(|&(k, _)| k > 0), "the flagship has never-recovered runs");

    // The two-key sweeps: each strategy's metastable cell count and worst success rate are
    // summary.csv's.
    for name in ["metastable", "budgets-vs-breakers"] {
        let dir = shipped(name);
        let text = verdict(&ResultSet::read_dir(&dir).unwrap(), &VerdictOptions::default()).unwrap().text();
        let rows = summary_rows(&dir);
        let strategies: Vec<String> = {
            let mut s: Vec<String> = rows.iter().map(|r| r["strategy"].clone()).collect();
            s.dedup();
            s.sort();
            s.dedup();
            s
        };
        for strategy in &strategies {
            let mine: Vec<&BTreeMap<String, String>> =
                rows.iter().filter(|r| &r["strategy"] == strategy).collect();
            let storm = mine.iter().filter(|r| r["metastable"].parse::<f64>().is_ok_and(|v| v > 0.0)).count();
            let line = paragraph(&text, strategy);
            if storm > 0 {
                assert!(line.contains(&format!("metastable in {storm} of {} cells", mine.len())), "{line}");
            } else {
                assert!(!line.contains("cells (in") && !line.contains("metastable in 0"), "{line}");
            }
            let worst =
                mine.iter().map(|r| r["success_rate"].parse::<f64>().unwrap()).fold(f64::INFINITY, f64::min);
            assert!(
                line.contains(&format!(": success {}", retrysim::stats::sig(worst, 3))),
                "{strategy}: worst success {worst}: {line}"
            );
        }
    }
    let text = verdict(&ResultSet::read_dir(&shipped("metastable")).unwrap(), &VerdictOptions::default())
        .unwrap()
        .text();
    assert!(
        paragraph(&text, "immediate").contains("metastable in 4 of 6 cells (in 88 % to 100 % of the runs): every cell with server.faults[0].duration >= 4s"),
        "{text}"
    );
}

/// A whole-run figure can hide a stretch of the run: each `[output] windows` window is said in
/// the verdict, in order of its start, with summary.csv's numbers.
#[test]
fn the_verdict_says_each_window_with_its_span_and_numbers() {
    use retrysim::report::{VerdictOptions, verdict};
    let dir = shipped("hedging-slowdown");
    let text = verdict(&ResultSet::read_dir(&dir).unwrap(), &VerdictOptions::default()).unwrap().text();
    for row in summary_rows(&dir) {
        let line = paragraph(&text, &row["strategy"]);
        let at = |w: &str| line.find(&format!("during {w} [")).unwrap_or_else(|| panic!("no {w}: {line}"));
        assert!(at("before") < at("first") && at("first") < at("slow") && at("slow") < at("after"), "{line}");
        let amp: f64 = row["server_amplification@first"].parse().unwrap();
        let p99: f64 = row["latency_ok_p99_s@first"].parse().unwrap();
        let expected = format!(
            "during first [20s, 30s): success {}, p99 of successes {} s, server amplification {}",
            retrysim::stats::sig(row["success_rate@first"].parse().unwrap(), 3),
            retrysim::stats::sig(p99, 3),
            retrysim::stats::sig(amp, 3)
        );
        assert!(line.contains(&expected), "{expected}\nnot in: {line}");
    }
}

#[test]
fn the_reference_point_is_chosen_by_key_and_value() {
    use retrysim::report::{VerdictOptions, verdict, verdict::parse_reference};
    let set = ResultSet::read_dir(&shipped("metastable")).unwrap();
    let opts = VerdictOptions {
        reference: vec![parse_reference("server.faults[0].duration=4s").unwrap()],
        ..Default::default()
    };
    let text = verdict(&set, &opts).unwrap().text();
    assert!(text.contains("reference point (server.faults[0].duration = 4s, server.drop_expired = false: chosen with --reference)"), "{text}");
    // no-retries at (4s, false): success 0.985 in summary.csv.
    assert!(paragraph(&text, "no-retries").contains("at the reference: success 0.985"), "{text}");
    // A duration written another way names the same point.
    let same = VerdictOptions {
        reference: vec![parse_reference("server.faults[0].duration=4000ms").unwrap()],
        ..Default::default()
    };
    assert_eq!(verdict(&set, &same).unwrap().strategies, verdict(&set, &opts).unwrap().strategies);
    for (bad, why) in [
        ("server.fault.duration=4s", "did you mean `server.faults[0].duration`?"),
        (
            "server.faults[0].duration=5s",
            "5s is not one of the swept values of `server.faults[0].duration`: 2s, 4s, 10s",
        ),
    ] {
        let opts = VerdictOptions { reference: vec![parse_reference(bad).unwrap()], ..Default::default() };
        let e = verdict(&set, &opts).unwrap_err().to_string();
        assert!(e.contains(why), "{bad}: {e}");
    }
    assert!(parse_reference("nokey").is_err());
}

#[test]
fn never_recovered_is_never_shown_blank_or_zero() {
    let dir = copy_fixture("storm-nosweep");
    let set = ResultSet::read_dir(dir.path()).unwrap();
    let text = comparison(&set, &CompareOptions::default());
    render_report(dir.path(), &ReportOptions::default()).unwrap();
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    // Five strategies never recovered in any of their 5 runs (summary.csv's empty cells).
    assert_eq!(text.matches("never (5 of 5 runs)").count(), 5, "{text}");
    assert!(html.matches("never (5 of 5 runs)").count() >= 10, "comparison and summary table");
    assert!(!html.contains("<td></td>"), "no blank cell in report.html");
}

/// A strategy that is another under a second name (the same policy: the same runs, byte for
/// byte) is drawn once in every chart kind, named with both: the sweep charts' lines, the
/// heatmaps, the time series' panels and the latency distributions' lines. The fixture is
/// tests/fixtures/storm-grid.toml (two swept keys) with `immediate` twice.
#[test]
fn identical_strategies_are_drawn_once_in_every_chart_kind() {
    use retrysim::report::chart::{Kind, plan};
    let tmp = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/storm-grid.toml"))
        .unwrap()
        .replace(
            "[[strategies]]\nname = \"no-retries\"",
            "[[strategies]]\nname = \"immediate-again\"\nbackoff = { kind = \"none\" }\n\n[[strategies]]\nname = \"no-retries\"",
        );
    let file = tmp.path().join("twins.toml");
    std::fs::write(&file, text).unwrap();
    let out = tmp.path().join("out");
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .arg("run")
        .arg(&file)
        .args(["--quiet", "--runs", "2", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let set = ResultSet::read_dir(&out).unwrap();
    assert_eq!(set.strategies, ["immediate", "immediate-again", "no-retries"]);
    let twins = "immediate = immediate-again";
    let charts = plan(&set, &ReportOptions::default());
    let (mut sweeps, mut heatmaps, mut series, mut latencies) = (0, 0, 0, 0);
    for c in &charts {
        let what = format!("{} ({})", c.stem, c.title);
        match &c.kind {
            Kind::Sweep(s) => {
                sweeps += 1;
                let names: Vec<&str> = s.legend.iter().map(|(_, n)| n.as_str()).collect();
                assert!(names.iter().any(|n| n.starts_with(twins)), "{what}: {names:?}");
                assert!(!names.contains(&"immediate-again"), "{what}: {names:?}");
                for p in &s.panels {
                    assert!(!p.lines.iter().any(|(s, _)| *s == 1), "{what}: the twin's line is drawn");
                }
            }
            Kind::Heatmap(_) => {
                heatmaps += 1;
                assert!(!c.stem.ends_with("-immediate-again"), "{what}");
                if c.stem.ends_with("-immediate") {
                    assert!(c.title.starts_with(twins), "{what}");
                    assert!(c.caption.contains("named together"), "{what}");
                }
            }
            Kind::Timeseries(t) => {
                series += 1;
                // Where no request failed, no-retries draws the same series too.
                let names: Vec<&str> = t.panels.iter().map(|p| p.name.as_str()).collect();
                assert!(
                    names == [twins, "no-retries"] || names == [format!("{twins} = no-retries")],
                    "{what}: {names:?}"
                );
                assert!(c.caption.contains("named together"), "{what}");
            }
            Kind::Latency(l) => {
                latencies += 1;
                let names: Vec<&str> = l.legend.iter().map(|(_, n)| n.as_str()).collect();
                assert!(
                    names == [twins, "no-retries"] || names == [format!("{twins} = no-retries")],
                    "{what}: {names:?}"
                );
                assert!(l.panels.iter().all(|p| p.lines.len() == names.len()), "{what}");
            }
            Kind::Tune(_) => panic!("{what}: a tune chart in a run's report"),
            Kind::CallGraph(_) => panic!("{what}: a call graph without [[services]]"),
        }
    }
    assert!(
        sweeps > 0 && heatmaps > 0 && series == 6 && latencies > 0,
        "{sweeps} {heatmaps} {series} {latencies}"
    );
    // The heatmaps: one per metric for the twins and one for no-retries (where it differs).
    let heat: Vec<&str> =
        charts.iter().filter(|c| matches!(c.kind, Kind::Heatmap(_))).map(|c| c.stem.as_str()).collect();
    assert!(
        heat.contains(&"heatmap-success_rate-immediate") && heat.contains(&"heatmap-success_rate-no-retries"),
        "{heat:?}"
    );
}

/// A call graph's chart is drawn from summary.csv alone: one box per service in rows by
/// depth (a diamond: front calls a three times and b once, both call db), one arrow per edge
/// plus the users' arrow, each label the summary's number; a fan-out of 3 is one edge with 3
/// calls per front call. On the page it comes right after the verdict.
#[test]
fn the_call_graph_is_drawn_from_summary_csv() {
    use retrysim::report::chart::call_graph::number;
    use retrysim::report::chart::{Kind, plan};
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("diamond.toml");
    std::fs::write(
        &file,
        r#"name = "diamond"
seed = 3
runs = 2
horizon = "5s"

[workload]
kind = "open"
rate = 200.0
duration = "2s"

[[services]]
name = "front"
concurrency = 1000
service_time = { dist = "constant", value = "1ms" }
calls = [{ service = "a", count = 3 }, { service = "b" }]

[[services]]
name = "a"
concurrency = 1000
service_time = { dist = "constant", value = "1ms" }
calls = [{ service = "db" }]

[[services]]
name = "b"
concurrency = 1000
service_time = { dist = "constant", value = "2ms" }
calls = [{ service = "db" }]

[[services]]
name = "db"
concurrency = 1000
service_time = { dist = "constant", value = "1ms" }
errors = [{ status = 503, probability = 0.2 }]

[[strategies]]
name = "once"
backoff = { kind = "none" }
max_attempts = 1
hop_policy = { max_attempts = 1 }

[[strategies]]
name = "hops-retry"
backoff = { kind = "none" }
max_attempts = 2
hop_policy = { max_attempts = 3 }
"#,
    )
    .unwrap();
    let out = tmp.path().join("out");
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .arg("run")
        .arg(&file)
        .args(["--quiet", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let set = ResultSet::read_dir(&out).unwrap();
    let charts = plan(&set, &ReportOptions::default());
    let graphs: Vec<_> = charts.iter().filter(|c| matches!(c.kind, Kind::CallGraph(_))).collect();
    assert_eq!(graphs.len(), 1, "one point, one call graph");
    assert_eq!(graphs[0].stem, "call-graph");
    let Kind::CallGraph(graph) = &graphs[0].kind else { unreachable!() };
    let rows = summary_rows(&out);
    let cell = |strategy: &str, column: &str| -> f64 {
        let row = rows.iter().find(|r| r["strategy"] == strategy).unwrap();
        row[column].parse().unwrap_or_else(|_| panic!("{column}: {}", row[column]))
    };
    let svg = std::fs::read_to_string(out.join("charts/call-graph.svg")).unwrap();
    assert_eq!(graph.panels.len(), 2);
    for panel in &graph.panels {
        let s = panel.name.as_str();
        // One box per service, in rows by depth: front, then a and b, then db.
        let boxes: Vec<(&str, usize)> = panel.services.iter().map(|b| (b.name.as_str(), b.depth)).collect();
        assert_eq!(boxes, [("front", 1), ("a", 2), ("b", 2), ("db", 3)], "{s}");
        // The users' arrow and one per edge: a fan-out of 3 is one arrow.
        let arrows: Vec<(Option<usize>, usize)> = panel.edges.iter().map(|e| (e.from, e.to)).collect();
        assert_eq!(arrows, [(None, 0), (Some(0), 1), (Some(0), 2), (Some(1), 3), (Some(2), 3)], "{s}");
        // Every number is summary.csv's, and the SVG says it.
        for e in &panel.edges[1..] {
            let (from, to) = (&panel.services[e.from.unwrap()].name, &panel.services[e.to].name);
            let amp = cell(s, &format!("edge_amplification@{from}:{to}"));
            let ok = cell(s, &format!("edge_success_rate@{from}:{to}"));
            assert_eq!((e.calls_per_request, e.success), (Some(amp), Some(ok)), "{s} {from}:{to}");
            // The description is escaped: "->" is "-&gt;".
            let label =
                format!("{from} -&gt; {to}: {}/request, success {}", number(Some(amp)), number(Some(ok)));
            assert!(svg.contains(&label), "{s}: the SVG's description lacks {label:?}");
        }
        for b in &panel.services {
            let calls = cell(s, &format!("service_calls@{}", b.name));
            let expected = [
                cell(s, &format!("service_amplification@{}", b.name)),
                calls / cell(s, "completion_time_s"),
                cell(s, &format!("service_success_rate@{}", b.name)),
            ];
            assert_eq!([b.calls_per_request, b.calls_per_s, b.success], expected.map(Some), "{s} {}", b.name);
            let text = format!("service {}: {} calls/request, ", b.name, number(Some(expected[0])));
            assert!(svg.contains(&text), "{s}: the SVG's description lacks {text:?}");
        }
        assert_eq!(panel.edges[0].calls_per_request, Some(cell(s, "amplification")));
        assert_eq!(panel.edges[0].success, Some(cell(s, "success_rate")));
        // The fan-out: every call into front makes 3 calls along front -> a, and their
        // retries (a's calls fail when db's do).
        let fan = panel.edges[1].calls_per_request.unwrap() / panel.services[0].calls_per_request.unwrap();
        if s == "once" {
            assert!((fan - 3.0).abs() < 1e-9, "{s}: {fan} calls to a per call into front");
        } else {
            assert!(fan > 3.0, "{s}: {fan} calls to a per call into front");
        }
    }
    // Hop retries multiply: db's calls per request are more with them.
    assert!(graph.panels[1].services[3].calls_per_request > graph.panels[0].services[3].calls_per_request);
    // On the page: right after the verdict, before the comparison.
    render_report(&out, &ReportOptions::default()).unwrap();
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let at = |needle: &str| html.find(needle).unwrap_or_else(|| panic!("no {needle} in report.html"));
    assert!(at("id=\"verdict\"") < at("id=\"s-call_graph\""));
    assert!(at("id=\"s-call_graph\"") < at("id=\"comparison\""));
    assert!(at("<nav>Contents: <a href=\"#s-call_graph\">Call graph</a> <a href=\"#comparison\">") > 0);
    assert_eq!(html.matches("<figure id=\"chart-call-graph\"").count(), 1);
}
