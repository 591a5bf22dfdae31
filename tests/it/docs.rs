//! The design and the references live in the repository: every design citation in the code
//! names a section of `docs/design.md`, every "reference §x" a section of
//! `docs/retry-policies.md`, nothing points to the folder outside the repository the project
//! started from, and the seed derivation that `docs/design.md` states is the one
//! `engine::rng` computes.

use retrysim::engine::rng::{derive, mix64, run_seed};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The files under `dirs` (relative to the repository), recursively, as (relative path, text);
/// files that are not UTF-8 are skipped.
fn texts_under(dirs: &[&str]) -> Vec<(String, String)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    for d in dirs {
        walk(&root().join(d), &mut files);
    }
    files.sort();
    files
        .into_iter()
        .filter_map(|p| {
            let text = std::fs::read_to_string(&p).ok()?;
            Some((p.strip_prefix(root()).unwrap().display().to_string(), text))
        })
        .collect()
}

/// Section numbers of a Markdown file's headings that start with `prefix` and then the
/// number: `"## §4.1 Backoff"` gives `4.1` for prefix `"§"`, `"### 1b. botocore"` gives `1b`
/// for prefix `""`.
fn heading_sections(markdown: &str, prefix: &str) -> BTreeSet<String> {
    markdown
        .lines()
        .filter_map(|l| {
            let rest = l.trim_start_matches('#');
            if rest.len() == l.len() || !rest.starts_with(' ') {
                return None;
            }
            let number = rest.trim_start().strip_prefix(prefix)?;
            let number: String =
                number.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '.').collect();
            let number = number.trim_end_matches('.');
            (!number.is_empty() && number.starts_with(|c: char| c.is_ascii_digit()))
                .then(|| number.to_owned())
        })
        .collect()
}

/// Every section cited after `marker` in `text`: `marker §3.3, §3.6` gives 3.3 and 3.6, and
/// `marker §1a/§1b` gives 1a and 1b. Comment markers between the word and `§` (a citation
/// broken over two comment lines) are skipped. Each citation comes with its line number.
fn citations(text: &str, marker: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = text[from..].find(marker) {
        let at = from + i;
        from = at + marker.len();
        let mut rest =
            text[from..].trim_start_matches(|c: char| c.is_whitespace() || c == '/' || c == '!' || c == '#');
        let line = text[..at].matches('\n').count() + 1;
        while let Some(after) = rest.strip_prefix('§') {
            let number: String =
                after.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '.').collect();
            let number = number.trim_end_matches('.').to_owned();
            rest = &after[number.len()..];
            // "§x" with a letter is the convention written out, not a citation.
            if !number.starts_with(|c: char| c.is_ascii_digit()) {
                break;
            }
            out.push((line, number));
            // A list continues with ", §x", " and §x" or "/§x".
            let cont = rest.trim_start_matches('.');
            let cont = cont
                .strip_prefix('/')
                .or_else(|| cont.strip_prefix(", "))
                .or_else(|| cont.strip_prefix(" and "));
            match cont {
                Some(c) if c.starts_with('§') => rest = c,
                _ => break,
            }
        }
    }
    out
}

/// Checks that every citation after `marker` in `dirs` names one of `sections`; returns how
/// many citations were checked.
fn check_citations(dirs: &[&str], marker: &str, sections: &BTreeSet<String>, target: &str) -> usize {
    let mut bad = Vec::new();
    let mut n = 0;
    for (path, text) in texts_under(dirs) {
        for (line, section) in citations(&text, marker) {
            n += 1;
            if !sections.contains(&section) {
                bad.push(format!("{path}:{line}: {marker} §{section}"));
            }
        }
    }
    assert!(bad.is_empty(), "citations of sections that {target} does not have:\n{}", bad.join("\n"));
    n
}

#[test]
fn design_citations_name_sections_of_the_design() {
    let sections = heading_sections(&read("docs/design.md"), "§");
    for s in ["2", "3.3", "4.1", "5", "8"] {
        assert!(sections.contains(s), "docs/design.md has a heading for §{s}: {sections:?}");
    }
    // Spelled in two pieces so that this file is not one of the citations it checks.
    let marker = ["DES", "IGN"].concat();
    let n = check_citations(&["src", "tests", "benches", "scripts"], &marker, &sections, "docs/design.md");
    assert!(n >= 60, "only {n} design citations found: the parser lost some");
}

#[test]
fn reference_citations_name_sections_of_retry_policies() {
    let doc = read("docs/retry-policies.md");
    let sections = heading_sections(&doc, "");
    for s in ["0", "1b", "2", "3a", "3e", "6", "10"] {
        assert!(sections.contains(s), "docs/retry-policies.md has a heading for §{s}: {sections:?}");
    }
    let n = check_citations(&["src", "tests"], "reference", &sections, "docs/retry-policies.md");
    assert!(n >= 60, "only {n} reference citations found: the parser lost some");
}

/// The files git tracks, relative to the repository.
fn tracked_files() -> Vec<String> {
    let out = Command::new("git").args(["ls-files", "-z"]).current_dir(root()).output().expect("git runs");
    assert!(out.status.success(), "git ls-files: {}", String::from_utf8_lossy(&out.stderr));
    let files: Vec<String> = out
        .stdout
        .split(|b| *b == 0)
        .filter(|f| !f.is_empty())
        .map(|f| String::from_utf8_lossy(f).into_owned())
        .collect();
    assert!(files.len() > 100, "git ls-files listed {} files", files.len());
    files
}

/// The lines of tracked files that contain `needle`, as "path:line: text".
fn tracked_lines_containing(needle: &str) -> Vec<String> {
    let mut hits = Vec::new();
    for f in tracked_files() {
        let Ok(bytes) = std::fs::read(root().join(&f)) else { continue };
        for (i, line) in String::from_utf8_lossy(&bytes).lines().enumerate() {
            if line.contains(needle) {
                hits.push(format!("{f}:{}: {}", i + 1, line.trim()));
            }
        }
    }
    hits
}

#[test]
fn no_tracked_file_points_outside_the_repository() {
    // Spelled in pieces so that this file does not match its own patterns.
    let bad: Vec<String> = [["..", "/shared"].concat(), ["shared", "/reference"].concat()]
        .iter()
        .flat_map(|p| tracked_lines_containing(p))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    assert!(
        bad.is_empty(),
        "files of the repository cite the folder outside it; cite docs/design.md, docs/retry-policies.md, \
         docs/overload-and-topology.md or docs/real-clients.md instead:\n{}",
        bad.join("\n")
    );
}

/// The one line of `docs/design.md` that states the seed derivation.
fn seed_sentence() -> String {
    let design = read("docs/design.md");
    let lines: Vec<&str> = design.lines().filter(|l| l.contains("**Seed derivation:**")).collect();
    assert_eq!(lines.len(), 1, "docs/design.md states the seed derivation in exactly one place: {lines:?}");
    lines[0].to_owned()
}

/// The `u64` that follows `prefix` in `s`, in decimal or `0x` hexadecimal.
fn number_after(s: &str, prefix: &str) -> Option<u64> {
    let rest = &s[s.find(prefix)? + prefix.len()..];
    if let Some(hex) = rest.strip_prefix("0x") {
        let digits: String = hex.chars().take_while(char::is_ascii_hexdigit).collect();
        return u64::from_str_radix(&digits, 16).ok();
    }
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

#[test]
fn the_documented_seed_derivation_is_the_code() {
    let sentence = seed_sentence();
    // The inputs: the experiment seed and the run index, nothing else (no sweep point, no
    // strategy), as `run_seed`'s signature has it.
    assert!(
        sentence.contains("`run_seed(seed, run) = derive(derive(seed, 0), run)`"),
        "the sentence gives run_seed's inputs and formula: {sentence}"
    );
    let rng = read("src/engine/rng.rs");
    assert!(
        rng.contains("pub fn run_seed(experiment_seed: u64, run: u64) -> u64"),
        "run_seed takes (seed, run)"
    );
    let constant = number_after(&sentence, "mix64(label + ").expect("the sentence gives derive's constant");
    // The worked examples, each `run_seed(S, R) = V`, evaluated.
    let mut examples = 0;
    let mut rest = sentence.as_str();
    while let Some(i) = rest.find("`run_seed(") {
        rest = &rest[i + "`run_seed(".len()..];
        let Some(close) = rest.find(") = ") else { continue };
        let args: Vec<&str> = rest[..close].split(", ").collect();
        let (Ok(seed), Ok(run)) = (args[0].parse::<u64>(), args.get(1).unwrap_or(&"").parse::<u64>()) else {
            continue;
        };
        let printed = number_after(rest, ") = ").expect("a value after '='");
        assert_eq!(run_seed(seed, run), printed, "docs/design.md: run_seed({seed}, {run}) = {printed}");
        let by_formula = derive(derive(seed, 0), run);
        assert_eq!(by_formula, printed, "the stated formula gives the printed value");
        let by_derive_formula = {
            let d = |p: u64, l: u64| mix64(p ^ mix64(l.wrapping_add(constant)));
            d(d(seed, 0), run)
        };
        assert_eq!(by_derive_formula, printed, "the stated derive() gives the printed value");
        examples += 1;
    }
    assert!(examples >= 1, "the sentence has a worked example run_seed(S, R) = V: {sentence}");
}

#[test]
fn no_file_says_the_sweep_point_enters_the_seed() {
    let bad = tracked_lines_containing(&["point", ", run)"].concat());
    assert!(
        bad.is_empty(),
        "the run seed depends on (seed, run) alone (docs/design.md §2):\n{}",
        bad.join("\n")
    );
}
