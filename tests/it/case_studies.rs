//! The case studies in docs/results/ quote the committed results: every number in their
//! tables equals the committed CSV it names, rounded as shown.
//!
//! A table of numbers must follow a marker line naming its source:
//! `<!-- table from results/NAME/summary.csv -->` (or `timeseries.csv`, or `runs.csv`). Each
//! header is a CSV column, either as it stands or in backticks inside a label
//! (``cut (`server.faults[0].duration`)``). The columns before `runs` in summary.csv (the sweep
//! point and the strategy), `strategy` and `run` in runs.csv, and `strategy` and `t_s` in
//! timeseries.csv identify a row and are compared as text, except that a `t_s` cell written
//! `A-B` stands for the mean of the rows with A <= t_s < B. Every other cell is a number
//! shown with d decimals that must lie within half a unit of its d-th decimal of the CSV
//! value (commas, `**` and a trailing ` %` with the value times 100 allowed), or empty where
//! the CSV value is empty (a metric nobody measured is never written as 0).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const MARKER: &str = "<!-- table from ";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn pages() -> Vec<PathBuf> {
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root().join("docs/results"))
        .expect("docs/results exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    pages
}

type Row = BTreeMap<String, String>;

fn read_csv(path: &Path) -> (Vec<String>, Vec<Row>) {
    let mut reader = csv::Reader::from_path(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let headers: Vec<String> = reader.headers().unwrap().iter().map(str::to_string).collect();
    let rows = reader
        .records()
        .map(|r| headers.iter().cloned().zip(r.unwrap().iter().map(str::to_string)).collect())
        .collect();
    (headers, rows)
}

fn cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
    inner.split('|').map(|c| c.trim().to_string()).collect()
}

/// The CSV column a header names: the backticked part, or the header itself.
fn column(header: &str) -> String {
    match (header.find('`'), header.rfind('`')) {
        (Some(a), Some(b)) if b > a => header[a + 1..b].to_string(),
        _ => header.to_string(),
    }
}

/// The shown number and its number of decimals, or None for text.
fn shown_number(cell: &str) -> Option<(f64, u32, bool)> {
    let text = cell.replace("**", "").replace(',', "");
    let (text, percent) = match text.strip_suffix('%') {
        Some(t) => (t.trim().to_string(), true),
        None => (text.trim().to_string(), false),
    };
    let value: f64 = text.parse().ok()?;
    let decimals = text.split_once('.').map_or(0, |(_, d)| d.len() as u32);
    Some((value, decimals, percent))
}

fn mean(rows: &[&Row], col: &str) -> Option<f64> {
    let values: Vec<f64> = rows.iter().filter_map(|r| r[col].parse::<f64>().ok()).collect();
    (!values.is_empty() && values.len() == rows.len())
        .then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// Checks one marked table; returns the number of numbers compared.
fn check_table(page: &Path, source: &str, lines: &[&str]) -> usize {
    let where_ = |i: usize| format!("{}, table from {source}, row {}", page.display(), i + 1);
    let path = root().join(source);
    assert!(path.exists(), "{}: {source} does not exist", page.display());
    let (csv_headers, rows) = read_csv(&path);
    let file = Path::new(source).file_name().unwrap().to_str().unwrap();
    let keys: Vec<String> = match file {
        "summary.csv" => csv_headers.iter().take_while(|h| *h != "runs").cloned().collect(),
        "runs.csv" => vec!["strategy".into(), "run".into()],
        "timeseries.csv" => vec!["strategy".into(), "t_s".into()],
        other => panic!("{}: no rule for {other}", page.display()),
    };
    // The point columns of runs.csv and timeseries.csv also identify a row.
    let point_keys: Vec<String> = csv_headers
        .iter()
        .take_while(|h| *h != "strategy")
        .filter(|h| file != "summary.csv")
        .cloned()
        .collect();
    let header = cells(lines[0]);
    let columns: Vec<String> = header.iter().map(|h| column(h)).collect();
    for c in &columns {
        assert!(csv_headers.contains(c), "{}: header {c:?} is not a column of {source}", page.display());
    }
    let mut compared = 0;
    for (i, line) in lines[2..].iter().enumerate() {
        let row = cells(line);
        assert_eq!(row.len(), columns.len(), "{}: wrong number of cells", where_(i));
        let mut matching: Vec<&Row> = rows.iter().collect();
        for (c, cell) in columns.iter().zip(&row) {
            if !(keys.contains(c) || point_keys.contains(c)) {
                continue;
            }
            if c == "t_s" && cell.contains('-') {
                let (a, b) = cell.split_once('-').unwrap();
                let (a, b): (f64, f64) = (a.trim().parse().unwrap(), b.trim().parse().unwrap());
                matching.retain(|r| r[c].parse::<f64>().is_ok_and(|t| a <= t && t < b));
            } else {
                matching.retain(|r| r[c] == *cell);
            }
        }
        assert!(!matching.is_empty(), "{}: no row of {source} has these keys", where_(i));
        let windowed = file == "timeseries.csv" && matching.len() > 1;
        assert!(windowed || matching.len() == 1, "{}: {} rows have these keys", where_(i), matching.len());
        for (c, cell) in columns.iter().zip(&row) {
            if keys.contains(c) || point_keys.contains(c) {
                continue;
            }
            let truth = if windowed { mean(&matching, c) } else { matching[0][c].parse::<f64>().ok() };
            match (shown_number(cell), truth) {
                (None, None) if cell.is_empty() && matching[0][c].is_empty() => {}
                (None, None) => assert_eq!(cell, &matching[0][c], "{}: column {c}", where_(i)),
                (Some((shown, decimals, percent)), Some(value)) => {
                    let value = if percent { value * 100.0 } else { value };
                    let half_unit = 0.5 * 10f64.powi(-(decimals as i32));
                    assert!(
                        (shown - value).abs() <= half_unit * (1.0 + 1e-9) + 1e-12,
                        "{}: column {c} shows {cell} but {source} has {value}",
                        where_(i)
                    );
                    compared += 1;
                }
                (shown, truth) => {
                    panic!("{}: column {c} shows {cell:?} ({shown:?}) but {source} has {truth:?}", where_(i))
                }
            }
        }
    }
    compared
}

/// Every table of `page` with its marker's source (None for an unmarked table).
fn tables(text: &str) -> Vec<(Option<String>, Vec<&str>)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim_start().starts_with('|') {
            let start = i;
            while i < lines.len() && lines[i].trim_start().starts_with('|') {
                i += 1;
            }
            let marker = lines[..start]
                .iter()
                .rev()
                .find(|l| !l.trim().is_empty())
                .and_then(|l| l.trim().strip_prefix(MARKER))
                .map(|rest| rest.trim_end_matches("-->").trim().to_string());
            found.push((marker, lines[start..i].to_vec()));
        } else {
            i += 1;
        }
    }
    found
}

#[test]
fn every_number_in_a_case_study_table_is_the_committed_result() {
    let pages = pages();
    // A page per shipped experiment that has committed results (`NAME` or `NAME-tune`).
    for entry in std::fs::read_dir(root().join("experiments")).unwrap() {
        let path = entry.unwrap().path();
        let Some(stem) = path
            .file_stem()
            .and_then(|s| s.to_str())
            .filter(|_| path.extension().is_some_and(|e| e == "toml"))
        else {
            continue;
        };
        let has_results = [stem.to_string(), format!("{stem}-tune")]
            .iter()
            .any(|d| root().join("results").join(d).is_dir());
        let page = root().join("docs/results").join(format!("{stem}.md"));
        assert!(!has_results || page.exists(), "results/{stem} has no case study: write {}", page.display());
    }
    let mut total = 0;
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        for (marker, lines) in tables(&text) {
            match marker {
                Some(source) => total += check_table(page, &source, &lines),
                None => {
                    let numbers = lines[2..]
                        .iter()
                        .flat_map(|l| cells(l))
                        .filter(|c| shown_number(c).is_some())
                        .count();
                    assert!(
                        numbers == 0,
                        "{}: a table of numbers without a `{MARKER}results/...csv -->` marker:\n{}",
                        page.display(),
                        lines.join("\n")
                    );
                }
            }
        }
    }
    assert!(
        total > 300,
        "only {total} numbers compared: the case studies quote their results in marked tables"
    );
}

#[test]
fn a_changed_number_is_caught() {
    let source = "results/retry-storm/summary.csv";
    let (_, rows) = read_csv(&root().join(source));
    let success: f64 = rows[0]["success_rate"].parse().unwrap();
    let table = |shown: String| {
        let text = format!("| strategy | success_rate |\n|---|---|\n| {} | {shown} |", rows[0]["strategy"]);
        let lines: Vec<String> = text.lines().map(str::to_string).collect();
        std::panic::catch_unwind(move || {
            let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
            check_table(Path::new("probe.md"), source, &lines)
        })
    };
    assert_eq!(table(format!("{success:.3}")).ok(), Some(1));
    assert!(table(format!("{:.3}", success + 0.002)).is_err(), "a wrong number must fail");
    assert!(table(String::new()).is_err(), "an empty cell for a measured value must fail");
}
