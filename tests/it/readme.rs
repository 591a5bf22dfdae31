//! README.md and docs/ against the code they describe: the key reference of
//! docs/experiment-files.md is what the schema generates, docs/outputs.md's column reference
//! what the metric, series and manifest declarations generate (and every column has a
//! meaning), README's validation summary is VALIDATION.md's, README's command line lists
//! exactly clap's verbs and flags, README stays a front page (at most 300 lines), and every
//! relative link of the documentation points to a file (and heading) that exists.
//! `scripts/readme-generated.sh` splices the generated parts in after a change.

use clap::CommandFactory;
use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use retrysim::experiment::schema::markdown;
use retrysim::report::outputs_doc;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(relative: &str) -> String {
    std::fs::read_to_string(root().join(relative)).unwrap_or_else(|e| panic!("{relative}: {e}"))
}

/// The text between the line holding `begin` and `end`, trimmed.
fn between<'a>(text: &'a str, begin: &str, end: &str, file: &str) -> &'a str {
    let start = text.find(begin).unwrap_or_else(|| panic!("{file} has no marker {begin}")) + begin.len();
    let stop = text.find(end).unwrap_or_else(|| panic!("{file} has no marker {end}"));
    text[start..stop].trim()
}

#[test]
fn the_key_reference_is_generated_from_the_schema() {
    let page = read("docs/experiment-files.md");
    let committed = between(&page, markdown::BEGIN, markdown::END, "docs/experiment-files.md");
    assert!(
        committed == markdown::reference().trim(),
        "docs/experiment-files.md's key reference differs from the schema: run \
         scripts/readme-generated.sh (it splices `retrysim schema --markdown` between the markers)"
    );
}

#[test]
fn every_output_column_has_a_unit_and_a_meaning() {
    let generated = outputs_doc::outputs_reference();
    let missing: Vec<&str> = generated.lines().filter(|l| l.contains(outputs_doc::UNDOCUMENTED)).collect();
    assert!(
        missing.is_empty(),
        "columns without a unit or meaning (add them to src/metrics/catalogue.rs, \
         SERIES_MEANING in src/metrics/series.rs or MANIFEST in src/report/outputs_doc.rs):\n{}",
        missing.join("\n")
    );
}

#[test]
fn the_outputs_page_is_generated_from_the_declarations() {
    let page = read("docs/outputs.md");
    let committed = between(&page, outputs_doc::BEGIN, outputs_doc::END, "docs/outputs.md");
    assert!(
        committed == outputs_doc::outputs_reference().trim(),
        "docs/outputs.md's column reference differs from the declarations: run \
         scripts/readme-generated.sh (it splices `retrysim schema --outputs` between the markers)"
    );
}

const VALIDATION_BEGIN: &str =
    "<!-- BEGIN VALIDATION SUMMARY: copied from VALIDATION.md's Summary; do not edit by hand -->";
const VALIDATION_END: &str = "<!-- END VALIDATION SUMMARY -->";

#[test]
fn readme_validation_summary_is_validation_md_s() {
    let readme = read("README.md");
    let validation = read("VALIDATION.md");
    let from = validation.find("## Summary\n").expect("VALIDATION.md has a Summary") + "## Summary\n".len();
    let to = from + validation[from..].find("\n## ").expect("a section follows the Summary");
    assert!(
        between(&readme, VALIDATION_BEGIN, VALIDATION_END, "README.md") == validation[from..to].trim(),
        "README's validation summary differs from VALIDATION.md's: run scripts/readme-generated.sh"
    );
}

#[test]
fn readme_is_a_front_page() {
    let lines = read("README.md").lines().count();
    assert!(lines <= 300, "README.md has {lines} lines, at most 300: move the detail to a page of docs/");
}

/// Verb -> its long flags, as clap defines them (hidden ones and --help/--version left out).
fn clap_verbs() -> BTreeMap<String, BTreeSet<String>> {
    let cli = retrysim::cli::Cli::command();
    cli.get_subcommands()
        .filter(|c| !c.is_hide_set())
        .map(|verb| {
            let flags = verb
                .get_arguments()
                .filter(|a| !a.is_hide_set())
                .filter_map(|a| a.get_long())
                .filter(|l| !matches!(*l, "help" | "version"))
                .map(|l| format!("--{l}"))
                .collect();
            (verb.get_name().to_string(), flags)
        })
        .collect()
}

/// Verb -> the long flags README's usage block gives it: the first code block after
/// "## Command line", each line starting with `retrysim VERB` and continuing on the indented
/// lines that follow.
fn readme_verbs(readme: &str) -> BTreeMap<String, BTreeSet<String>> {
    let section =
        &readme[readme.find("\n## Command line\n").expect("README has a \"Command line\" section")..];
    let block_start = section.find("```").expect("a code block in \"Command line\"") + 3;
    let block = &section[block_start..];
    let block = &block[..block.find("```").expect("the code block ends")];
    let mut verbs: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut current = None;
    for line in block.lines().skip(1) {
        let mut words = line.split_whitespace();
        if let Some(rest) = line.strip_prefix("retrysim ") {
            let verb = rest.split_whitespace().next().expect("a verb after `retrysim`").to_string();
            current = Some(verb.clone());
            words = rest.split_whitespace();
            verbs.entry(verb).or_default();
        }
        let verb = current.clone().unwrap_or_else(|| panic!("README's usage line `{line}` has no verb"));
        for word in words {
            let flag = word.trim_start_matches('[').split(['=', ']', ' ']).next().unwrap_or_default();
            if flag.starts_with("--") {
                verbs.get_mut(&verb).unwrap().insert(flag.to_string());
            }
        }
    }
    verbs
}

#[test]
fn readme_command_line_lists_every_verb_and_flag_of_clap() {
    let documented = readme_verbs(&read("README.md"));
    let defined = clap_verbs();
    let mut differences = Vec::new();
    for verb in documented.keys().chain(defined.keys()).collect::<BTreeSet<_>>() {
        match (documented.get(verb), defined.get(verb)) {
            (None, _) => differences.push(format!("verb `{verb}` is missing from README")),
            (_, None) => differences.push(format!("README lists verb `{verb}`, which clap does not define")),
            (Some(d), Some(c)) => {
                for flag in c.difference(d) {
                    differences.push(format!("`{verb} {flag}` is missing from README"));
                }
                for flag in d.difference(c) {
                    differences.push(format!("README lists `{verb} {flag}`, which clap does not define"));
                }
            }
        }
    }
    assert!(
        differences.is_empty(),
        "README's \"Command line\" differs from src/cli.rs:\n{}",
        differences.join("\n")
    );
}

/// The Markdown files whose links must resolve.
fn documentation_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = ["README.md", "CHANGELOG.md", "VALIDATION.md", "benches/README.md"]
        .iter()
        .map(|f| root().join(f))
        .filter(|p| p.exists())
        .collect();
    fn walk(dir: &Path, keep: &dyn Fn(&Path) -> bool, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        let mut entries: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, keep, out);
            } else if keep(&path) {
                out.push(path);
            }
        }
    }
    walk(&root().join("docs"), &|p| p.extension().is_some_and(|e| e == "md"), &mut files);
    walk(&root().join("results"), &|p| p.file_name().is_some_and(|n| n == "README.md"), &mut files);
    files
}

/// GitHub's anchor for a heading: lower case, punctuation other than `-` and `_` dropped,
/// spaces turned into `-`; a repeated heading gets `-1`, `-2`...
fn anchors(markdown: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    let mut heading: Option<String> = None;
    for event in Parser::new_ext(markdown, Options::ENABLE_TABLES) {
        match event {
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::Text(t) | Event::Code(t) if heading.is_some() => heading.as_mut().unwrap().push_str(&t),
            Event::End(TagEnd::Heading(_)) => {
                let text = heading.take().unwrap();
                let slug: String = text
                    .to_lowercase()
                    .chars()
                    .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
                    .map(|c| if c == ' ' { '-' } else { c })
                    .collect();
                let n = seen.entry(slug.clone()).or_default();
                out.insert(if *n == 0 { slug.clone() } else { format!("{slug}-{n}") });
                *n += 1;
            }
            _ => {}
        }
    }
    out
}

/// Every link and image destination of a Markdown text.
fn links(markdown: &str) -> Vec<String> {
    Parser::new_ext(markdown, Options::ENABLE_TABLES)
        .filter_map(|event| match event {
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => {
                Some(dest_url.to_string())
            }
            _ => None,
        })
        .collect()
}

/// What is wrong with each relative link of `files` (empty when every one resolves).
fn broken_links(files: &[PathBuf]) -> Vec<String> {
    let mut broken = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file).unwrap();
        let shown = file.strip_prefix(root()).unwrap_or(file).display();
        for link in links(&text) {
            if link.contains("://") || link.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = match link.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (link.as_str(), None),
            };
            let target = if path.is_empty() { file.clone() } else { file.parent().unwrap().join(path) };
            if !target.exists() {
                broken.push(format!("{shown}: `{link}`: no file {}", target.display()));
                continue;
            }
            if let Some(anchor) = anchor
                && target.extension().is_some_and(|e| e == "md")
                && !anchors(&std::fs::read_to_string(&target).unwrap()).contains(anchor)
            {
                broken.push(format!("{shown}: `{link}`: no heading with the anchor #{anchor}"));
            }
        }
    }
    broken
}

#[test]
fn every_relative_link_of_the_documentation_resolves() {
    let files = documentation_files();
    assert!(files.len() > 5, "the walker found the documentation: {files:?}");
    let broken = broken_links(&files);
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_link_walker_finds_broken_files_and_anchors() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("page.md");
    std::fs::write(
        dir.path().join("other.md"),
        "# Other page\n\n## The `key` section\n\n## Twice\n\n## Twice\n",
    )
    .unwrap();
    std::fs::write(
        &page,
        "# Page\n\n[ok](other.md) [ok](other.md#the-key-section) [ok](other.md#twice-1) [ok](#page) \
         [web](https://example.com/x.md)\n\n[gone](missing.md) ![gone](img/none.png) [bad](other.md#nowhere) \
         [bad](#nothing)\n\n```\n[in code](not-a-link.md)\n```\n",
    )
    .unwrap();
    let broken = broken_links(std::slice::from_ref(&page));
    let expected = ["`missing.md`", "`img/none.png`", "`other.md#nowhere`", "`#nothing`"];
    assert_eq!(broken.len(), expected.len(), "{broken:#?}");
    for (b, e) in broken.iter().zip(expected) {
        assert!(b.contains(e), "{b} should name {e}");
    }
}
