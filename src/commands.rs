//! The verbs of the command line, as library functions: each reads its arguments, calls the
//! library and prints what the user should see. `main.rs` only dispatches and maps errors to
//! exit codes.

use crate::cli::{
    CheckArgs, MergeArgs, OverrideArgs, PlotArgs, PresetsArgs, RankArgs, RunArgs, SchemaArgs, ValidateArgs,
};
use crate::experiment::{self, Experiment, Overrides};
use crate::policy::presets;
use crate::progress::Progress;
use crate::report::manifest::Manifest;
use crate::report::writer::ResultWriter;
use crate::sweep::{self, Shard, Stopped};
use crate::{Error, report};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// Raised by Ctrl-C: workers finish their run and the writer deletes its temporary files.
static STOP: AtomicBool = AtomicBool::new(false);

/// `retrysim check`: validate, warn, estimate.
pub fn check(a: &CheckArgs) -> Result<(), Error> {
    let exp = load(&a.file, &a.overrides)?;
    warn(&a.file, &exp);
    let runs = sweep::run_count(&exp, None);
    let strategies = exp.points[0].strategies.len();
    println!(
        "{}: ok ({} point(s) x {} strateg{} x {} run(s) = {runs} runs)",
        a.file.display(),
        exp.points.len(),
        strategies,
        if strategies == 1 { "y" } else { "ies" },
        exp.runs
    );
    Ok(())
}

/// `retrysim run`: run the cells (or one shard of them) and write the result folder.
pub fn run(a: &RunArgs) -> Result<(), Error> {
    let exp = load(&a.file, &a.overrides)?;
    let shard = a.shard.as_deref().map(Shard::parse).transpose().map_err(|reason| Error::Flag {
        flag: format!("--shard {}", a.shard.as_deref().unwrap_or_default()),
        reason,
    })?;
    if !a.quiet {
        warn(&a.file, &exp);
    }
    let out = a.out.clone().unwrap_or_else(|| PathBuf::from("results").join(&exp.name));
    if a.resume && is_complete(&out, &exp, shard) {
        if !a.quiet {
            println!("{}: already complete for this experiment, skipped (--resume)", out.display());
        }
        return Ok(());
    }
    let threads = a
        .threads
        .map(usize::from)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from));
    // A second Ctrl-C (or one before the handler is set) ends the process the usual way.
    let _ = ctrlc::set_handler(|| STOP.store(true, Ordering::Relaxed));

    let cells = sweep::cells(&exp, shard);
    let total = cells.len() as u64 * exp.runs as u64;
    let interval = std::time::Duration::from_secs_f64(a.progress_interval.max(0.0));
    let mut progress = Progress::new(&exp.name, total, a.quiet, interval);
    let mut writer = ResultWriter::create(&out, &exp, shard)?;
    let started = std::time::Instant::now();
    let mut events = 0;
    let outcome = sweep::execute(
        &exp,
        &cells,
        threads,
        &mut writer,
        &mut |done, ev| {
            events = ev;
            progress.update(done, ev);
        },
        &STOP,
    );
    match outcome {
        Ok(()) => {}
        Err(Stopped::Interrupted) => return Err(Error::Interrupted),
        Err(Stopped::Sink(e)) => return Err(e.into()),
    }
    let wall = started.elapsed().as_secs_f64();
    let line = format!(
        "{}: {total} runs, {events} events in {wall:.3} s on {threads} thread(s): {:.2} M events/s; peak memory {}",
        exp.name,
        events as f64 / wall.max(1e-9) / 1e6,
        crate::stats::peak_memory().map_or("unknown".into(), |b| format!("{:.1} MB", b as f64 / 1e6)),
    );
    progress.finish(&line);
    let mut written = writer.commit()?;
    // The report reads the files just written: `plot DIR` draws the same from them.
    written.extend(report::render_report(&out, &report::ReportOptions::default())?);
    if !a.quiet {
        for p in &written {
            println!("wrote {}", p.display());
        }
        println!("report: {}", out.join(report::paths::REPORT_HTML).display());
        println!();
        print!("{}", summary_text(&out, &a.rank)?);
    }
    if a.stats {
        println!("{line}");
    }
    Ok(())
}

/// `retrysim plot DIR`: redraw the report from the files, and print the comparison.
pub fn plot(a: &PlotArgs) -> Result<(), Error> {
    let written = report::render_report(&a.dir, &report::ReportOptions::default())?;
    if !a.quiet {
        for p in &written {
            println!("wrote {}", p.display());
        }
        println!();
        print!("{}", summary_text(&a.dir, &a.rank)?);
    }
    Ok(())
}

/// The comparison printed at the end of a run (or by `plot`), or the ranking when asked.
fn summary_text(dir: &Path, r: &RankArgs) -> Result<String, Error> {
    let set = report::ResultSet::read_dir(dir)?;
    let color = std::io::IsTerminal::is_terminal(&std::io::stdout());
    if r.rank.is_none() && r.constraints.is_empty() {
        let opts = report::CompareOptions { color, ..Default::default() };
        return Ok(report::comparison(&set, &opts));
    }
    let constraints =
        r.constraints.iter().map(|c| report::Constraint::parse(c)).collect::<Result<Vec<_>, _>>()?;
    let metric = r.rank.as_deref().unwrap_or("success_rate");
    Ok(report::rank(&set, metric, &constraints)?)
}

/// `retrysim merge`: join shard folders.
pub fn merge(a: &MergeArgs) -> Result<(), Error> {
    let mut written = report::merge::merge(&a.out, &a.shards)?;
    written.extend(report::render_report(&a.out, &report::ReportOptions::default())?);
    for p in written {
        println!("wrote {}", p.display());
    }
    Ok(())
}

/// `retrysim schema`: the JSON Schema, or README's key reference.
pub fn schema(a: &SchemaArgs) -> Result<(), Error> {
    if a.markdown {
        print!("{}", experiment::schema::markdown::reference());
    } else {
        print!("{}", experiment::schema::json::text());
    }
    Ok(())
}

/// `retrysim presets [NAME]`.
pub fn presets(a: &PresetsArgs) -> Result<(), Error> {
    let Some(name) = &a.name else {
        let width = presets::PRESETS.iter().map(|p| p.name.len()).max().unwrap_or(0);
        for p in presets::PRESETS {
            println!("{:width$}  {}", p.name, p.summary);
        }
        println!(
            "\nUse one with `preset = \"NAME\"` in a [[strategies]] entry; `retrysim presets NAME` shows its values."
        );
        return Ok(());
    };
    let p = presets::find(name).ok_or_else(|| Error::Flag {
        flag: format!("presets {name}"),
        reason: format!(
            "no preset named `{name}`{}; the presets are: {}",
            experiment::schema::check::closest(name, presets::PRESETS.iter().map(|p| p.name))
                .map(|c| format!(" (did you mean `{c}`?)"))
                .unwrap_or_default(),
            presets::PRESETS.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
        ),
    })?;
    println!("# preset \"{}\": {}", p.name, p.summary);
    println!(
        "# Sources: reference/retry-policies.md, section per line. Any key can be overridden in the strategy."
    );
    println!("{}", p.toml.trim_end());
    let set: toml::Table = p.toml.parse().unwrap_or_default();
    let rest: Vec<String> = experiment::schema::CLIENT
        .fields
        .iter()
        .filter(|f| !set.contains_key(f.key))
        .map(|f| match f.default {
            experiment::schema::IfAbsent::Value(v) => format!("{} = {v}  # retrysim default", f.key),
            experiment::schema::IfAbsent::Absent(means) => {
                format!("# {}: not set ({means}), unless [client] sets it", f.key)
            }
            experiment::schema::IfAbsent::Required => format!("# {}: required", f.key),
        })
        .collect();
    if !rest.is_empty() {
        println!("\n# Keys the preset leaves out: [client]'s value if it has one, else:");
        for line in rest {
            println!("{line}");
        }
    }
    Ok(())
}

/// `retrysim validate`: run the suite, write VALIDATION.md (even when checks fail), and fail
/// with exit code 1 if any check failed. Progress and wall times go to stderr only: the file
/// is the same bytes every time.
pub fn validate(a: &ValidateArgs) -> Result<(), Error> {
    let suite = a.suite.clone().unwrap_or_else(|| PathBuf::from(crate::validation::SUITE_DIR));
    let started = std::time::Instant::now();
    let mut last = started;
    let findings = crate::validation::run(&suite, &a.checks, &mut |f, events| {
        if !a.quiet {
            let now = std::time::Instant::now();
            eprintln!(
                "{:<22} {:<4} {:>6.1} s  {:>6.1} M events",
                f.id,
                if f.passed() { "pass" } else { "FAIL" },
                now.duration_since(last).as_secs_f64(),
                events as f64 / 1e6
            );
            last = now;
        }
    })?;
    let dir = a.out.clone().unwrap_or_else(|| PathBuf::from("."));
    std::fs::create_dir_all(&dir).map_err(report::WriteError::at(&dir))?;
    let path = dir.join(crate::validation::FILE);
    report::write_atomically(&path, crate::validation::markdown::render(&findings).as_bytes())?;
    let failed: Vec<String> = findings.iter().filter(|f| !f.passed()).map(|f| f.id.clone()).collect();
    if !a.quiet {
        eprintln!(
            "{} checks, {} failed, in {:.1} s; wrote {}",
            findings.len(),
            failed.len(),
            started.elapsed().as_secs_f64(),
            path.display()
        );
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Error::ChecksFailed { failed: failed.len(), total: findings.len(), names: failed, path })
    }
}

/// Whether `dir` holds the complete result of `exp` (and `shard`): its manifest, written last,
/// names the same experiment as run.
fn is_complete(dir: &Path, exp: &Experiment, shard: Option<Shard>) -> bool {
    let Ok(bytes) = std::fs::read(dir.join(Manifest::FILE)) else { return false };
    let Ok(m) = Manifest::parse(&bytes) else { return false };
    m == Manifest::of(exp, shard)
}

/// Prints the setup's warnings (valid, but testing less than it seems) on stderr.
fn warn(file: &Path, exp: &Experiment) {
    for w in experiment::warnings(exp) {
        eprintln!("warning: {}: {w}", file.display());
    }
}

fn load(file: &Path, o: &OverrideArgs) -> Result<Experiment, Error> {
    let set = o.set.iter().map(|kv| experiment::parse_set_arg(kv)).collect::<Result<Vec<_>, _>>()?;
    Ok(experiment::load(file, &Overrides { set, runs: o.runs, seed: o.seed })?)
}
