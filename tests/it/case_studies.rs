//! The results pages (`docs/results/*.md`) quote the committed CSVs exactly, rounded as shown.
//!
//! Every Markdown table of numbers on those pages is preceded (blank lines allowed) by a marker
//! naming what it quotes:
//!
//! ```text
//! <!-- from results/retry-storm/summary.csv: keys strategy; columns success_rate amplification; where runs=20 -->
//! ```
//!
//! - `keys K...`: the table's first columns, in order, hold the values of these CSV columns;
//!   a row's key cells (backticks stripped) must equal the CSV's text exactly, and they (with
//!   `where`) must pick exactly one CSV row.
//! - `columns C...`: the remaining table columns, in order. `a/b` means the cell holds several
//!   values separated by ` / ` (e.g. `1.42 / 0.99` for `amplification/success_rate`).
//!   `COL=VALUE:a/b` quotes the row whose `COL` is `VALUE` as well, so a table can spread one
//!   key over its columns (`t_s=12:offered/successes/queued t_s=17:offered/successes/queued`).
//! - `where COL=VALUE ...` (optional): fixed values of other CSV columns for every row.
//!
//! A quoted value passes when the CSV value, rounded to as many decimals as the cell shows,
//! prints as the cell: `0.958` is checked to 3 decimals, `4214` to 0. A cell ending in `%` is
//! the CSV value times 100; `,` thousands separators and `**bold**` are ignored; an empty cell
//! quotes an empty CSV field (e.g. `recovery_time_s` when no run recovered). An unmarked table
//! with a numeric cell fails the test, so a table cannot escape the check by losing its marker.

use crate::support::Table;
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One `<!-- from ... -->` marker.
struct Marker {
    csv: String,
    keys: Vec<String>,
    columns: Vec<Column>,
    filter: Vec<(String, String)>,
}

/// One quoted table column: the CSV columns its cells hold, and the row it adds to the keys.
struct Column {
    names: Vec<String>,
    filter: Option<(String, String)>,
}

fn parse_column(word: &str) -> Result<Column, String> {
    let (filter, names) = match word.split_once(':') {
        Some((f, names)) => {
            let (k, v) = f.split_once('=').ok_or_else(|| format!("column {word}: no '='"))?;
            (Some((k.to_string(), v.to_string())), names)
        }
        None => (None, word),
    };
    Ok(Column { names: names.split('/').map(String::from).collect(), filter })
}

fn parse_marker(line: &str) -> Result<Marker, String> {
    let body = line
        .trim()
        .strip_prefix("<!-- from ")
        .and_then(|s| s.strip_suffix("-->"))
        .ok_or_else(|| format!("not a marker: {line}"))?;
    let (csv, spec) = body.split_once(':').ok_or_else(|| format!("marker without ':': {line}"))?;
    let mut marker =
        Marker { csv: csv.trim().to_string(), keys: Vec::new(), columns: Vec::new(), filter: Vec::new() };
    for clause in spec.split(';').map(str::trim).filter(|c| !c.is_empty()) {
        let mut words = clause.split_whitespace();
        match words.next() {
            Some("keys") => marker.keys = words.map(String::from).collect(),
            Some("columns") => {
                marker.columns = words.map(parse_column).collect::<Result<_, _>>()?;
            }
            Some("where") => {
                for w in words {
                    let (k, v) = w.split_once('=').ok_or_else(|| format!("where {w}: no '='"))?;
                    marker.filter.push((k.to_string(), v.to_string()));
                }
            }
            _ => return Err(format!("unknown clause {clause:?} in {line}")),
        }
    }
    if marker.columns.is_empty() {
        return Err(format!("marker quotes no columns: {line}"));
    }
    Ok(marker)
}

fn cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
    inner.split('|').map(|c| c.trim().to_string()).collect()
}

fn clean(cell: &str) -> String {
    cell.replace("**", "").replace('`', "").trim().to_string()
}

/// A cell as (number, decimals shown, percent), `None` if it is not a number.
fn shown_number(cell: &str) -> Option<(f64, usize, bool)> {
    let c = clean(cell).replace(',', "");
    let (digits, percent) = match c.strip_suffix('%') {
        Some(d) => (d.trim().to_string(), true),
        None => (c, false),
    };
    let value: f64 = digits.parse().ok()?;
    if !digits.chars().all(|ch| ch.is_ascii_digit() || ch == '.' || ch == '-') {
        return None;
    }
    let decimals = digits.split_once('.').map_or(0, |(_, f)| f.len());
    Some((value, decimals, percent))
}

/// Whether the cell quotes `csv_value` as the module's rule says; `Err` says why not.
fn check_cell(cell: &str, csv_value: &str) -> Result<(), String> {
    let shown = clean(cell);
    if shown.is_empty() || csv_value.is_empty() {
        return if shown.is_empty() && csv_value.is_empty() {
            Ok(())
        } else {
            Err(format!("shows {shown:?}, the CSV has {csv_value:?}"))
        };
    }
    let (_, decimals, percent) = shown_number(&shown).ok_or_else(|| format!("{shown:?} is not a number"))?;
    let v: f64 = csv_value.parse().map_err(|_| format!("CSV value {csv_value:?} is not a number"))?;
    let v = if percent { v * 100.0 } else { v };
    let expected = format!("{v:.decimals$}");
    let got = shown.replace(',', "").trim_end_matches('%').trim().to_string();
    // -0.00 and 0.00 are the same quote.
    if expected == got || expected.trim_start_matches('-') == got && v.abs() < 1.0 {
        Ok(())
    } else {
        Err(format!("shows {shown}, the CSV's {csv_value} rounds to {expected}"))
    }
}

/// Checks one page; returns every mismatch and the number of table cells checked.
fn check_page(page: &str, text: &str, tables: &mut HashMap<String, Table>) -> (Vec<String>, usize) {
    let mut errors = Vec::new();
    let mut checked = 0;
    let lines: Vec<&str> = text.lines().collect();
    let mut pending: Option<(usize, Result<Marker, String>)> = None;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim();
        if line.starts_with("<!-- from ") {
            pending = Some((i + 1, parse_marker(line)));
            i += 1;
            continue;
        }
        if !line.starts_with('|') {
            if !line.is_empty() {
                pending = None;
            }
            i += 1;
            continue;
        }
        let start = i;
        while i < lines.len() && lines[i].trim().starts_with('|') {
            i += 1;
        }
        let table: Vec<Vec<String>> = lines[start..i].iter().map(|l| cells(l)).collect();
        let at = format!("{page}:{}", start + 1);
        let body = if table.len() >= 2 { &table[2..] } else { &table[..0] };
        let Some((marker_line, marker)) = pending.take() else {
            if body.iter().flatten().any(|c| shown_number(c).is_some()) {
                errors.push(format!("{at}: a table of numbers without a `<!-- from ... -->` marker"));
            }
            continue;
        };
        let marker = match marker {
            Ok(m) => m,
            Err(e) => {
                errors.push(format!("{page}:{marker_line}: {e}"));
                continue;
            }
        };
        let csv_path = root().join(&marker.csv);
        if !csv_path.is_file() {
            errors.push(format!("{at}: {} does not exist", marker.csv));
            continue;
        }
        let csv = tables.entry(marker.csv.clone()).or_insert_with(|| Table::read(&csv_path));
        let width = marker.keys.len() + marker.columns.len();
        if body.is_empty() {
            errors.push(format!("{at}: a marked table without rows"));
        }
        for (r, row) in body.iter().enumerate() {
            let at = format!("{page}:{}", start + 3 + r);
            if row.len() != width {
                errors.push(format!("{at}: {} cells, the marker names {width}", row.len()));
                continue;
            }
            let keyed = |csv_row: &Vec<String>, extra: Option<&(String, String)>| {
                marker.keys.iter().zip(row).all(|(k, cell)| csv.get(csv_row, k) == clean(cell))
                    && marker.filter.iter().chain(extra).all(|(k, v)| csv.get(csv_row, k) == v)
            };
            for (cell, column) in row[marker.keys.len()..].iter().zip(&marker.columns) {
                let matches: Vec<&Vec<String>> =
                    csv.rows.iter().filter(|r| keyed(r, column.filter.as_ref())).collect();
                let [csv_row] = matches[..] else {
                    errors.push(format!(
                        "{at}: keys {:?} {:?} pick {} rows of {}, not one",
                        &row[..marker.keys.len()],
                        column.filter,
                        matches.len(),
                        marker.csv
                    ));
                    continue;
                };
                let parts: Vec<&str> = cell.split(" / ").collect();
                if parts.len() != column.names.len() {
                    errors.push(format!("{at}: {cell:?} should hold {} values", column.names.len()));
                    continue;
                }
                for (part, name) in parts.iter().zip(&column.names) {
                    checked += 1;
                    if let Err(e) = check_cell(part, csv.get(csv_row, name)) {
                        errors.push(format!("{at}: {name}: {e}"));
                    }
                }
            }
        }
    }
    (errors, checked)
}

fn pages() -> Vec<PathBuf> {
    let dir = root().join("docs/results");
    let mut pages: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    pages.sort();
    pages
}

fn relative(p: &Path) -> String {
    p.strip_prefix(root()).unwrap_or(p).display().to_string()
}

#[test]
fn every_quoted_number_equals_the_committed_csv() {
    let mut tables = HashMap::new();
    let mut errors = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let text = fs::read_to_string(&page).unwrap();
        let (e, n) = check_page(&relative(&page), &text, &mut tables);
        errors.extend(e);
        checked += n;
    }
    assert!(errors.is_empty(), "{} mismatches:\n{}", errors.len(), errors.join("\n"));
    // Every shipped experiment's results are quoted; the pages quote hundreds of numbers.
    for dir in fs::read_dir(root().join("results")).unwrap() {
        let name = dir.unwrap().file_name().to_string_lossy().into_owned();
        assert!(
            tables.keys().any(|csv| csv.starts_with(&format!("results/{name}/"))),
            "no table in docs/results/ quotes results/{name}/"
        );
    }
    assert!(checked > 500, "only {checked} numbers checked");
}

#[test]
fn an_altered_number_or_a_lost_marker_fails() {
    let page = root().join("docs/results/retry-storm.md");
    let text = fs::read_to_string(&page).unwrap();
    let mut tables = HashMap::new();
    let (errors, checked) = check_page("retry-storm.md", &text, &mut tables);
    assert!(errors.is_empty() && checked > 0, "{errors:?}");

    // Change the first quoted success rate's last digit.
    let row = text.lines().find(|l| l.starts_with("| immediate |")).expect("an immediate row");
    let cell = cells(row)[1].clone();
    let mut altered_cell = cell.clone();
    let last = altered_cell.pop().unwrap();
    altered_cell.push(if last == '9' { '8' } else { char::from(last as u8 + 1) });
    let altered_row = row.replacen(&format!("| {cell} |"), &format!("| {altered_cell} |"), 1);
    let altered = text.replacen(row, &altered_row, 1);
    let (errors, _) = check_page("retry-storm.md", &altered, &mut tables);
    assert_eq!(errors.len(), 1, "{errors:?}");

    // Remove every marker: each table of numbers is now reported.
    let unmarked: String =
        text.lines().filter(|l| !l.trim().starts_with("<!-- from ")).map(|l| format!("{l}\n")).collect();
    let (errors, _) = check_page("retry-storm.md", &unmarked, &mut tables);
    assert!(!errors.is_empty() && errors.iter().all(|e| e.contains("without a")), "{errors:?}");
}

#[test]
fn the_rounding_rule() {
    assert!(check_cell("0.958", "0.95825").is_ok());
    assert!(check_cell("0.959", "0.95825").is_err());
    assert!(check_cell("4214", "4213.7").is_ok());
    assert!(check_cell("42.2", "42.18").is_ok());
    assert!(check_cell("88.7 %", "0.8873").is_ok());
    assert!(check_cell("188,650", "188650").is_ok());
    assert!(check_cell("**0**", "0").is_ok());
    assert!(check_cell("", "").is_ok());
    assert!(check_cell("", "3").is_err());
    assert!(check_cell("0", "").is_err());
}
