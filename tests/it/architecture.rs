//! The crate's layers, drawn in code (docs/design.md, "Layers"): every `crate::` path in
//! `src/` (in `use` trees and inline paths, tests included) may name only the modules that
//! its own top-level module is allowed to use. A new top-level module fails this test until
//! it is given its place here, so the shape stays a decision.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// What `tune` and `validation` may use: everything they drive.
const BELOW_THE_VERBS: &[&str] = &[
    "engine",
    "stats",
    "suggest",
    "interop",
    "policy",
    "metrics",
    "experiment",
    "model",
    "assembly",
    "sweep",
    "results",
    "report",
];

/// Each top-level module and the modules it may import, lowest layer first. Modules of the
/// same row do not import each other unless listed.
const LAYERS: &[(&str, &[&str])] = &[
    // Simulated time, event queues, random streams: knows nothing of the crate.
    ("engine", &[]),
    // Estimates, quantiles, special functions: pure numbers.
    ("stats", &[]),
    // The one did-you-mean rule of every error message.
    ("suggest", &[]),
    // Retry policies: pure functions and small state machines over engine time.
    ("policy", &["engine", "stats"]),
    // What one run measured, and the catalogue of metrics.
    ("metrics", &["engine", "stats", "policy"]),
    // Production config files (Envoy, gRPC, AWS, resilience4j, ...) <-> `[[strategies]]`
    // tables in retrysim's keys: text to text, below the file format that checks them.
    ("interop", &["engine", "stats", "suggest"]),
    // The file format: TOML -> a validated experiment. Never the model, a verb or a report.
    ("experiment", &["engine", "stats", "suggest", "interop", "policy", "metrics"]),
    // The model: workloads, network, servers, wired to events. Never the file format.
    ("model", &["engine", "stats", "policy", "metrics"]),
    // File types -> model parameters: the only place that sees both.
    ("assembly", &["engine", "stats", "policy", "metrics", "experiment", "model"]),
    // Runs the cells of an experiment, in order, on threads.
    ("sweep", &["engine", "stats", "policy", "metrics", "experiment", "model", "assembly"]),
    // Streams finished runs into CSVs and manifests (atomic writes, shards, merge).
    ("results", &["engine", "stats", "policy", "metrics", "experiment", "sweep"]),
    // Reads a finished folder and presents it: charts, report.html, the comparison.
    ("report", &["stats", "suggest", "metrics", "experiment", "results"]),
    // The verbs' own logic, above everything they drive.
    ("tune", BELOW_THE_VERBS),
    ("validation", BELOW_THE_VERBS),
    ("slurm", &["stats", "metrics", "experiment", "sweep", "results", "report"]),
    // `retrysim serve`: the model's queue server driven by the wall clock over HTTP. It
    // calls the model as the simulation's loop does, and never the sweep or the reports.
    ("serve", &["engine", "policy", "experiment", "model", "assembly", "results"]),
    ("progress", &["stats", "metrics"]),
    // Recorded attempt logs -> a fitted strategy: statistics only.
    ("fit", &["stats"]),
    // The stop flag that SIGINT, SIGTERM and SIGHUP raise.
    ("interrupt", &[]),
    ("cli", &[]),
    (
        "error",
        &[
            "experiment",
            "interop",
            "results",
            "report",
            "slurm",
            "tune",
            "validation",
            "interrupt",
            "fit",
            "serve",
        ],
    ),
    (
        "commands",
        &[
            "engine",
            "stats",
            "suggest",
            "interop",
            "policy",
            "metrics",
            "experiment",
            "model",
            "assembly",
            "sweep",
            "results",
            "report",
            "tune",
            "validation",
            "slurm",
            "serve",
            "progress",
            "cli",
            "error",
            "interrupt",
            "fit",
        ],
    ),
];

/// Upward imports that are known and scheduled to go, as (file, imported module), each with a
/// comment saying what removes it. The test fails when one of them disappears (remove it here)
/// as well as when a new one appears.
const KNOWN: &[(&str, &str)] = &[];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file below src/ (`model/server/mod.rs` -> [model, server]).
fn module_path(file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src()).unwrap();
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_str().unwrap().to_string()).collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" && stem != "main" {
        parts.push(stem.to_string());
    }
    parts
}

/// The source without comments and string literals (a path in a doc comment or a message is
/// not an import).
fn code_of(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let bytes: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let next = bytes.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < bytes.len() && bytes[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            i += 2;
            while i + 1 < bytes.len() && !(bytes[i] == '*' && bytes[i + 1] == '/') {
                i += 1;
            }
            i += 2;
        } else if c == '"' {
            i += 1;
            while i < bytes.len() && bytes[i] != '"' {
                if bytes[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' && next.is_some_and(|n| n != '\\') && bytes.get(i + 2) == Some(&'\'') {
            // a char literal such as '"' or '{'
            i += 3;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// The first segments of every path a `crate::` or `super::` prefix starts in `code`,
/// resolved against the file's module path: the top-level modules it names.
fn imported_tops(code: &str, module: &[String]) -> BTreeSet<String> {
    let mut tops = BTreeSet::new();
    let chars: Vec<char> = code.chars().collect();
    let text: String = chars.iter().collect();
    let ident = |s: &str| s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>();
    let push_tree = |rest: &str, base: &[String], tops: &mut BTreeSet<String>| {
        // `rest` follows `crate::` (base empty) or the resolved `super::` chain.
        if let Some(group) = rest.strip_prefix('{') {
            // Split the group's top level at commas.
            let mut depth = 0;
            let mut item = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        let name = ident(item.trim());
                        if let Some(top) = base.first().cloned().or(Some(name).filter(|n| !n.is_empty())) {
                            tops.insert(top);
                        }
                        item.clear();
                        continue;
                    }
                    _ => {}
                }
                item.push(c);
            }
            let name = ident(item.trim());
            if let Some(top) = base.first().cloned().or(Some(name).filter(|n| !n.is_empty())) {
                tops.insert(top);
            }
        } else {
            let name = ident(rest);
            if let Some(top) = base.first().cloned().or(Some(name).filter(|n| !n.is_empty())) {
                tops.insert(top);
            }
        }
    };
    let mut from = 0;
    while let Some(at) = text[from..].find("crate::") {
        let start = from + at;
        let before = text[..start].chars().last();
        from = start + "crate::".len();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            continue; // `$crate::` in a macro, or part of a longer name
        }
        push_tree(&text[from..], &[], &mut tops);
    }
    let mut from = 0;
    while let Some(at) = text[from..].find("super::") {
        let start = from + at;
        let before = text[..start].chars().last();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            from = start + 1;
            continue; // counted with the chain it belongs to
        }
        let mut depth = 0;
        let mut rest = &text[start..];
        while let Some(r) = rest.strip_prefix("super::") {
            depth += 1;
            rest = r;
        }
        from = text.len() - rest.len();
        if depth >= module.len() {
            // The chain reaches the crate root: what follows names a top-level module.
            push_tree(rest, &[], &mut tops);
        } else {
            push_tree(rest, &module[..module.len() - depth], &mut tops);
        }
    }
    tops
}

/// Every file below src/ in a top-level module, with that module and the other top-level
/// modules of the crate it imports.
fn imports() -> Vec<(PathBuf, String, BTreeSet<String>)> {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    files.sort();
    let tops_of_crate: BTreeSet<String> =
        files.iter().filter_map(|f| module_path(f).first().cloned()).collect();
    let mut out = Vec::new();
    for file in files {
        let module = module_path(&file);
        let Some(top) = module.first().cloned() else { continue }; // lib.rs and main.rs
        let code = code_of(&std::fs::read_to_string(&file).unwrap());
        // Its own module, or an item of the crate root (`crate::Error`), is no import of another.
        let used = imported_tops(&code, &module)
            .into_iter()
            .filter(|used| *used != top && tops_of_crate.contains(used))
            .collect();
        out.push((file, top, used));
    }
    out
}

#[test]
fn no_layer_imports_a_layer_above_it() {
    let allowed: BTreeMap<&str, BTreeSet<&str>> =
        LAYERS.iter().map(|(m, deps)| (*m, deps.iter().copied().collect())).collect();
    let imports = imports();
    let tops_of_crate: BTreeSet<&str> = imports.iter().map(|(_, top, _)| top.as_str()).collect();
    let mut violations = Vec::new();
    for top in &tops_of_crate {
        if !allowed.contains_key(top) {
            violations.push(format!("src/{top}: a top-level module without a layer: add it to LAYERS"));
        }
    }
    for (file, top, used) in &imports {
        let Some(may) = allowed.get(top.as_str()) else { continue };
        for used in used {
            if !may.contains(used.as_str()) {
                let rel = file.strip_prefix(src().parent().unwrap()).unwrap();
                violations.push(format!("{}: `{top}` imports `{used}`", rel.display()));
            }
        }
    }
    for (file, used) in KNOWN {
        let known = format!("{file}: `{}` imports `{used}`", file.split('/').nth(1).unwrap());
        let before = violations.len();
        violations.retain(|v| *v != known);
        assert!(violations.len() < before, "{known} is in KNOWN but no longer happens: remove it");
    }
    assert!(
        violations.is_empty(),
        "imports against the layers (docs/design.md, \"Layers\"):\n{}",
        violations.join("\n")
    );
}

/// A circle of imports through `graph` that starts at `from`, if there is one.
fn circle_from(graph: &BTreeMap<&str, BTreeSet<&str>>, from: &str) -> Option<Vec<String>> {
    // Depth-first, keeping the path: a module met again on the path closes a circle.
    fn walk<'a>(
        graph: &BTreeMap<&'a str, BTreeSet<&'a str>>,
        at: &'a str,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|m| *m == at) {
            return Some(path[i..].iter().chain([&at]).map(|m| m.to_string()).collect());
        }
        if !done.insert(at) {
            return None;
        }
        path.push(at);
        for next in graph.get(at).into_iter().flatten() {
            if let Some(circle) = walk(graph, next, path, done) {
                return Some(circle);
            }
        }
        path.pop();
        None
    }
    walk(graph, from, &mut Vec::new(), &mut BTreeSet::new())
}

#[test]
fn no_circle_spans_two_layers() {
    let imports = imports();
    let mut graph: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (_, top, used) in &imports {
        graph.entry(top.as_str()).or_default().extend(used.iter().map(String::as_str));
    }
    for top in graph.keys() {
        if let Some(circle) = circle_from(&graph, top) {
            panic!("the top-level modules import each other in a circle: {}", circle.join(" -> "));
        }
    }
    let mut allowed: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (m, deps) in LAYERS {
        allowed.entry(m).or_default().extend(deps.iter().copied());
    }
    for m in allowed.keys() {
        if let Some(circle) = circle_from(&allowed, m) {
            panic!("LAYERS allows a circle: {}", circle.join(" -> "));
        }
    }
    let test: BTreeMap<&str, BTreeSet<&str>> = [("a", ["b"]), ("b", ["c"]), ("c", ["a"])]
        .map(|(m, d)| (m, d.into_iter().collect()))
        .into_iter()
        .collect();
    assert_eq!(circle_from(&test, "b").unwrap(), ["b", "c", "a", "b"], "the circle finder finds circles");
}

#[test]
fn the_import_reader_sees_groups_inline_paths_and_super_chains() {
    let module = vec!["report".to_string(), "chart".to_string()];
    let code = code_of(
        "use crate::{stats::Estimate, metrics::{A, B}};\nfn f() { crate::sweep::run(); }\n\
         // crate::model::x in a comment\nlet s = \"crate::engine\";\nuse super::super::tune::X;\nuse super::html;",
    );
    let tops = imported_tops(&code, &module);
    let expected: BTreeSet<String> =
        ["stats", "metrics", "sweep", "tune", "report"].iter().map(|s| s.to_string()).collect();
    assert_eq!(tops, expected);
}
