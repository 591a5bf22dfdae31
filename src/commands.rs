//! The verbs of the command line, as library functions: each reads its arguments, calls the
//! library and prints what the user should see. `main.rs` only dispatches and maps errors to
//! exit codes.

use crate::cli::{
    CheckArgs, ExplainArgs, ExportArgs, FitArgs, ImportArgs, MergeArgs, OverrideArgs, PlotArgs, PresetsArgs,
    RankArgs, RunArgs, SchemaArgs, ServeArgs, SlurmArgs, StrategiesArgs, TuneArgs, ValidateArgs,
};
use crate::experiment::presets;
use crate::experiment::{self, Experiment, Overrides};
use crate::interrupt::Interrupt;
use crate::metrics::constraint::Constraint;
use crate::progress::Progress;
use crate::results::manifest::Manifest;
use crate::results::writer::ResultWriter;
use crate::slurm::{self, ArrayJob};
use crate::sweep::{self, Shard, Stopped};
use crate::tune::TuneSpec;
use crate::{Error, report, results};
use std::path::{Path, PathBuf};

/// The process's stop flag (SIGINT, SIGTERM, SIGHUP): workers finish their run and the writers
/// delete their temporary files.
fn interrupt() -> &'static Interrupt {
    Interrupt::installed()
}

/// `Err(Interrupted)` once a signal arrived; `done` names a result already complete.
fn stopped(done: Option<&Path>) -> Result<(), Error> {
    if interrupt().signal().is_some() { Err(interrupted(done)) } else { Ok(()) }
}

/// The error of a verb stopped by the stop flag (raised only by a signal).
fn interrupted(done: Option<&Path>) -> Error {
    let signal =
        interrupt().signal().expect("only a signal handler raises the stop flag, after it stored the signal");
    Error::Interrupted { signal, done: done.map(Path::to_path_buf) }
}

/// Parses `--shard I/N`.
fn shard(arg: Option<&str>) -> Result<Option<Shard>, Error> {
    arg.map(|s| Shard::parse(s).map_err(|reason| Error::Flag { flag: format!("--shard {s}"), reason }))
        .transpose()
}

/// `retrysim check`: validate, warn, estimate.
pub fn check(a: &CheckArgs) -> Result<(), Error> {
    let (mut exp, tune) = load(&a.file, &a.overrides)?;
    only(&mut exp, &a.only)?;
    let shard = shard(a.shard.as_deref())?;
    warn(&a.file, &exp);
    skipped(&exp);
    if let Some(sh) = shard {
        let cells = sweep::cells(&exp, Some(sh)).len();
        println!(
            "shard {sh}: {cells} cell(s) x {} run(s) = {} runs",
            exp.runs,
            cells as u64 * exp.runs as u64
        );
    }
    let threads = a.threads.map(usize::from).unwrap_or_else(default_threads);
    let cost = afford(&a.file, &exp, threads)?;
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
    println!(
        "per run (the largest point): about {:.0} operations, {:.0} to {:.0} events, {} peak memory; {} on {threads} thread(s), the report's {} included",
        cost.ops_per_run,
        cost.events_per_run.0,
        cost.events_per_run.1,
        experiment::cost::mb(cost.bytes_per_run),
        experiment::cost::mb(cost.peak_bytes),
        experiment::cost::mb(cost.report_bytes),
    );
    let (arithmetic, capacity_warnings) = experiment::capacity::report(&exp);
    for line in arithmetic {
        println!("{line}");
    }
    for w in capacity_warnings {
        eprintln!("warning: {}: {w}", a.file.display());
    }
    if let Some(t) = &tune {
        let levels: Vec<String> = t.params.iter().map(|p| p.levels(t.levels).len().to_string()).collect();
        println!(
            "[tune]: strategy \"{}\", {} ({} values), {} scenario(s); `retrysim tune {}` searches it",
            t.strategy_name,
            t.params.iter().map(|p| p.key.as_str()).collect::<Vec<_>>().join(", "),
            levels.join(" x "),
            t.scenarios.len(),
            a.file.display()
        );
    }
    Ok(())
}

fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// The cost estimate, refused (exit 2, naming the key that drives it) when it exceeds the
/// machine's memory.
fn afford(file: &Path, exp: &Experiment, threads: usize) -> Result<experiment::cost::Cost, Error> {
    let cost = experiment::cost::estimate(exp, threads);
    if let Some(total) = experiment::cost::machine_memory()
        && cost.peak_bytes > total
    {
        return Err(experiment::ConfigError::InvalidValue {
            origin: file.display().to_string(),
            key: cost.driver.to_owned(),
            reason: format!(
                "a run would need about {} of memory ({} per run x {threads} thread(s)), more than this machine's {}; lower it, or run on fewer threads (--threads)",
                experiment::cost::mb(cost.peak_bytes),
                experiment::cost::mb(cost.bytes_per_run),
                experiment::cost::mb(total)
            ),
        }
        .into());
    }
    Ok(cost)
}

/// `retrysim run`: run the cells (or one shard of them) and write the result folder.
pub fn run(a: &RunArgs) -> Result<(), Error> {
    let (mut exp, _) = load(&a.file, &a.overrides)?;
    only(&mut exp, &a.only)?;
    exp.command_line = command_line();
    // A bad --rank, --where or --reference is bad input: refused before anything runs.
    let report_opts = report_options(&a.rank, Some(&exp.windows))?;
    check_reference(&exp, &report_opts.verdict.reference)?;
    let shard = shard(a.shard.as_deref())?;
    if !a.quiet {
        warn(&a.file, &exp);
        skipped(&exp);
    }
    let out = a.out.clone().unwrap_or_else(|| PathBuf::from("results").join(&exp.name));
    let all_cells = sweep::cells(&exp, shard);
    let mut finished = Vec::new();
    if a.resume {
        match previous(&out, &exp, shard, &all_cells) {
            Previous::Complete => {
                if !a.quiet {
                    println!("{}: already complete for this experiment, skipped (--resume)", out.display());
                }
                return Ok(());
            }
            Previous::Partial(done) => {
                if !a.quiet {
                    eprintln!(
                        "{}: partial result of this experiment, {} of {} cell(s) finished: running the other {} (--resume)",
                        out.display(),
                        done.len(),
                        all_cells.len(),
                        all_cells.len() - done.len()
                    );
                }
                finished = done;
            }
            Previous::Other => {}
        }
    }
    let threads = a.threads.map(usize::from).unwrap_or_else(default_threads);
    afford(&a.file, &exp, threads)?;
    let stop = interrupt().flag();

    let cells = &all_cells[finished.len()..];
    let total = cells.len() as u64 * exp.runs as u64;
    let interval = std::time::Duration::from_secs_f64(a.progress_interval.max(0.0));
    let mut progress = Progress::new(&exp.name, total, a.quiet, interval);
    progress.weigh(run_weights(&exp, cells));
    let mut writer = if finished.is_empty() {
        ResultWriter::create(&out, &exp, shard)?
    } else {
        ResultWriter::resume(&out, &exp, shard, finished)?
    };
    let started = std::time::Instant::now();
    let mut events = 0;
    let outcome = sweep::execute(
        &exp,
        cells,
        threads,
        &mut writer,
        &mut |done, ev| {
            events = ev;
            progress.update(done, ev);
        },
        stop,
    );
    match outcome {
        Ok(()) => {}
        Err(Stopped::Interrupted) => {
            progress.finish(&format!("{}: interrupted", exp.name));
            return Err(keep_partial(writer, &out, all_cells.len(), &report_opts));
        }
        Err(Stopped::Sink(e)) => return Err(e.into()),
    }
    let wall = started.elapsed().as_secs_f64();
    let line = format!(
        "{}: {total} runs, {events} events in {wall:.3} s on {threads} thread(s): {:.2} M events/s; peak memory {}",
        exp.name,
        events as f64 / wall.max(1e-9) / 1e6,
        crate::progress::peak_memory().map_or("unknown".into(), |b| format!("{:.1} MB", b as f64 / 1e6)),
    );
    progress.finish(&line);
    let mut written = writer.commit()?;
    stopped(Some(&out))?;
    // The report reads the files just written: `plot DIR` draws the same from them.
    written.extend(report::render_report(&out, &report_opts)?);
    stopped(Some(&out))?;
    if !a.quiet {
        for p in &written {
            println!("wrote {}", p.display());
        }
        println!("report: {}", out.join(report::paths::REPORT_HTML).display());
        println!();
        print!("{}", summary_text(&out, &a.rank, &report_opts.verdict)?);
    }
    if a.stats {
        println!("{line}");
    }
    Ok(())
}

/// `--reference`, checked against the sweep before a run (exit 2 naming the flag); the file's
/// `[output] reference` was checked when it loaded, and the report falls back on it (from
/// the manifest) when no flag is given.
fn check_reference(exp: &Experiment, flags: &[(String, String)]) -> Result<(), Error> {
    if flags.is_empty() {
        return Ok(());
    }
    let values: Vec<&[String]> = exp.points.iter().map(|p| p.values.as_slice()).collect();
    experiment::resolve_reference(&exp.sweep_keys, &values, flags).map(|_| ()).map_err(
        |experiment::BadReference { key, reason }| Error::Flag {
            flag: match key.and_then(|k| flags.iter().find(|(f, _)| *f == k)) {
                Some((k, v)) => format!("--reference {k}={v}"),
                None => {
                    flags.iter().map(|(k, v)| format!("--reference {k}={v}")).collect::<Vec<_>>().join(" ")
                }
            },
            reason,
        },
    )
}

/// `retrysim plot DIR`: redraw the report from the files, and print the comparison.
pub fn plot(a: &PlotArgs) -> Result<(), Error> {
    let opts = report_options(&a.rank, None)?;
    let mut set = report::ResultSet::read_dir(&a.dir)?;
    if !a.only.strategies.is_empty() {
        set.keep_strategies(&a.only.strategies).map_err(|reason| Error::Flag {
            flag: format!("--strategies {}", a.only.strategies.join(",")),
            reason,
        })?;
    }
    let written = report::render_set(&set, &a.dir, &opts)?;
    if !a.quiet {
        for p in &written {
            println!("wrote {}", p.display());
        }
        println!();
        print!("{}", summary_of(&set, &a.rank, &opts.verdict)?);
    }
    Ok(())
}

/// `retrysim explain FILE`: each strategy's resolved policy, every key with its origin.
pub fn explain(a: &ExplainArgs) -> Result<(), Error> {
    let (mut exp, _) = load(&a.file, &a.overrides)?;
    only(&mut exp, &a.only)?;
    if let Some(name) = &a.strategy {
        let names: Vec<&str> = exp.points[0].strategies.iter().map(|s| s.name.as_str()).collect();
        if !names.contains(&name.as_str()) {
            return Err(Error::Flag {
                flag: format!("--strategy {name}"),
                reason: format!(
                    "no strategy named `{name}`{}; the strategies are: {}",
                    crate::suggest::closest(name, names.iter().copied())
                        .map(|c| format!(" (did you mean `{c}`?)"))
                        .unwrap_or_default(),
                    names.join(", ")
                ),
            });
        }
    }
    warn(&a.file, &exp);
    print!("{}", experiment::provenance::explain(&exp, a.strategy.as_deref()));
    Ok(())
}

/// `--strategies`: keeps only those strategies (exit 2 naming an unknown one).
fn only(exp: &mut Experiment, a: &StrategiesArgs) -> Result<(), Error> {
    experiment::select_strategies(exp, &a.strategies)
        .map_err(|reason| Error::Flag { flag: format!("--strategies {}", a.strategies.join(",")), reason })
}

/// The arguments of a run (`retrysim` and what followed it), for the manifest.
fn command_line() -> Vec<String> {
    let mut args: Vec<String> = std::env::args().collect();
    // The program's path says where it was installed, not what ran.
    if let Some(first) = args.first_mut() {
        *first = "retrysim".into();
    }
    args
}

/// The report's options from `--rank`, `--where` and `--reference` (see [`rank_constraints`]).
fn report_options(r: &RankArgs, known_metrics: Option<&[String]>) -> Result<report::ReportOptions, Error> {
    let constraints = rank_constraints(r, known_metrics)?;
    let reference =
        r.reference.iter().map(|t| report::verdict::parse_reference(t)).collect::<Result<Vec<_>, _>>()?;
    Ok(report::ReportOptions {
        verdict: report::VerdictOptions { reference, constraints },
        ..Default::default()
    })
}

/// The verdict and the comparison printed at the end of a run (or by `plot`), or the
/// ranking when asked.
fn summary_text(dir: &Path, r: &RankArgs, verdict: &report::VerdictOptions) -> Result<String, Error> {
    summary_of(&report::ResultSet::read_dir(dir)?, r, verdict)
}

/// [`summary_text`] of a result set already read.
fn summary_of(
    set: &report::ResultSet,
    r: &RankArgs,
    verdict: &report::VerdictOptions,
) -> Result<String, Error> {
    let color = std::io::IsTerminal::is_terminal(&std::io::stdout());
    let mut verdict = report::verdict(set, verdict)?.text();
    if let Some(line) = report::partial_line(&set.manifest) {
        verdict = format!("{line}\n{verdict}");
    }
    if r.rank.is_none() && r.constraints.is_empty() {
        let opts = report::CompareOptions { color, ..Default::default() };
        return Ok(format!("{verdict}\n{}", report::comparison(set, &opts)));
    }
    let constraints = rank_constraints(r, None)?;
    let metric = r.rank.as_deref().unwrap_or("success_rate");
    Ok(format!("{verdict}\n{}", report::rank(set, metric, &constraints)?))
}

/// `retrysim tune`: search the `[tune]` space, write tune.csv, recommendation.toml and the
/// chart, print the recommendation.
pub fn tune(a: &TuneArgs) -> Result<(), Error> {
    let (exp, tune) = load(&a.file, &a.overrides)?;
    let origin = a.file.display().to_string();
    let Some(spec) = tune.as_ref() else {
        return Err(experiment::ConfigError::MissingKey {
            origin,
            key: "tune".to_owned(),
            help: Some(
                "`retrysim tune` needs a [tune] section: strategy, objective, constraints and [tune.space] (README, \"Tuning\")"
                    .to_owned(),
            ),
        }
        .into());
    };
    if !exp.sweep_keys.is_empty() {
        return Err(experiment::ConfigError::InvalidValue {
            origin,
            key: "sweep".to_owned(),
            reason: "`retrysim tune` searches [tune.space] itself and runs no sweep: remove [sweep] or add --set sweep={}".to_owned(),
        }
        .into());
    }
    if !a.quiet {
        warn(&a.file, &exp);
    }
    let out = a.out.clone().unwrap_or_else(|| PathBuf::from("results").join(format!("{}-tune", exp.name)));
    let threads = a
        .threads
        .map(usize::from)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from));
    let stop = interrupt().flag();
    let interval = std::time::Duration::from_secs_f64(a.progress_interval.max(0.0));
    // Shared by the search's callback and the end of this function.
    let progress =
        std::cell::RefCell::new(Progress::new(&format!("{} tune", exp.name), 0, a.quiet, interval));
    let started = std::time::Instant::now();
    let name = exp.name.clone();
    let mut report = |e: crate::tune::Event<'_>| match e {
        crate::tune::Event::Stage(s) => progress.borrow_mut().set_message(&format!("{name} tune: {s}")),
        crate::tune::Event::Planned(n) => progress.borrow_mut().set_total(n),
        crate::tune::Event::Done(done, events) => progress.borrow_mut().update(done, events),
    };
    let t = match crate::tune::search(&exp, spec, threads, stop, &mut report) {
        Ok(t) => t,
        Err(Stopped::Interrupted) => return Err(interrupted(None)),
        Err(Stopped::Sink(never)) => match never {},
    };
    let wall = started.elapsed().as_secs_f64();
    let line = format!(
        "{}: tune: {} runs, {} events in {wall:.1} s on {threads} thread(s)",
        exp.name, t.runs_spent, t.events
    );
    progress.borrow().finish(&line);
    stopped(None)?;
    let written = crate::tune::output::write(&t, &out)?;
    stopped(Some(&out))?;
    if !a.quiet {
        for p in &written {
            println!("wrote {}", p.display());
        }
        println!();
        print!("{}", crate::tune::output::summary(&t));
        println!("wall time: {wall:.1} s on {threads} thread(s)");
    }
    if t.winner.is_none() {
        return Err(Error::NothingFeasible { csv: out.join(crate::tune::output::TUNE_CSV) });
    }
    Ok(())
}

/// The `--where` constraints, parsed; with `known_metrics` (the experiment's windows),
/// `--rank`'s and their metrics must be columns of runs.csv (for `run`, which has not written
/// them yet; `plot` checks them against the folder's files).
fn rank_constraints(r: &RankArgs, known_metrics: Option<&[String]>) -> Result<Vec<Constraint>, Error> {
    let constraints = r
        .constraints
        .iter()
        .map(|c| Constraint::parse(c).map_err(report::ReportError::from))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(windows) = known_metrics {
        let columns = crate::metrics::catalogue::columns(windows, &[]);
        let names = columns.iter().map(String::as_str);
        for name in r.rank.iter().map(String::as_str).chain(constraints.iter().map(|c| c.metric.as_str())) {
            if !names.clone().any(|m| m == name) {
                let hint = crate::suggest::closest(name, names.clone())
                    .map(|c| format!(" (did you mean `{c}`?)"))
                    .unwrap_or_default();
                return Err(report::ReportError::UnknownMetric {
                    name: name.to_owned(),
                    suggestion: hint,
                    known: names.collect::<Vec<_>>().join(", "),
                }
                .into());
            }
        }
    }
    Ok(constraints)
}

/// `retrysim merge`: join shard folders.
pub fn merge(a: &MergeArgs) -> Result<(), Error> {
    let mut written = match results::merge::merge(&a.out, &a.shards, interrupt().flag()) {
        Err(results::merge::MergeError::Interrupted) => return Err(interrupted(None)),
        other => other?,
    };
    stopped(Some(&a.out))?;
    written.extend(report::render_report(&a.out, &report::ReportOptions::default())?);
    stopped(Some(&a.out))?;
    for p in written {
        println!("wrote {}", p.display());
    }
    Ok(())
}

/// `retrysim slurm`: write the job array and the merge job, and submit them or print how.
pub fn slurm(a: &SlurmArgs) -> Result<(), Error> {
    let (exp, _) = load(&a.file, &a.overrides)?;
    warn(&a.file, &exp);
    let o = &a.overrides;
    let mut run_args = Vec::new();
    for kv in &o.set {
        run_args.extend(["--set".to_owned(), kv.clone()]);
    }
    run_args.extend(o.runs.iter().flat_map(|r| ["--runs".to_owned(), r.to_string()]));
    run_args.extend(o.seed.iter().flat_map(|s| ["--seed".to_owned(), s.to_string()]));
    let options = slurm::Options {
        file: a.file.clone(),
        out: a.out.clone(),
        shards: a.shards,
        partition: a.partition.clone(),
        time: a.time.clone(),
        cpus_per_task: a.cpus_per_task,
        run_args,
    };
    let job = ArrayJob::new(&exp, &options)?;
    let _ = interrupt();
    let written = job.write()?;
    stopped(Some(&job.dir))?;
    for p in written {
        println!("wrote {}", p.display());
    }
    let cells = sweep::cells(&exp, None).len();
    let (fewest, most) = (cells / job.shards as usize, cells.div_ceil(job.shards as usize));
    println!(
        "{}: {cells} cell(s) x {} run(s) in {} array task(s) of {} cell(s) each; shards in {}, logs in {}",
        exp.name,
        exp.runs,
        job.shards,
        if fewest == most { most.to_string() } else { format!("{fewest}-{most}") },
        job.shard_dir(0).with_file_name("shard-*").display(),
        job.dir.join(slurm::LOGS).display(),
    );
    if !a.submit {
        println!("submit the array, then the merge once every task has succeeded:");
        println!("  {}", job.submit_command());
        return Ok(());
    }
    let ids = job.submit()?;
    println!(
        "array job {}: {} task(s), logs in {}",
        ids.array,
        job.shards,
        job.dir.join(slurm::LOGS).display()
    );
    println!(
        "merge job {}: after every task succeeds, writes {}",
        ids.merge,
        job.dir.join(report::paths::REPORT_HTML).display()
    );
    println!("follow them with: squeue -j {},{}", ids.array, ids.merge);
    println!(
        "a failed task: rerun it with `{}` and submit merge.sbatch again",
        job.rerun_command(0).replace("--array=0", "--array=I")
    );
    Ok(())
}

/// `retrysim schema`: the JSON Schema, the key reference or the outputs reference.
pub fn schema(a: &SchemaArgs) -> Result<(), Error> {
    if a.outputs {
        print!("{}", crate::report::outputs_doc::outputs_reference());
    } else if a.markdown {
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
        for p in presets::PRESETS.iter() {
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
            crate::suggest::closest(name, presets::PRESETS.iter().map(|p| p.name))
                .map(|c| format!(" (did you mean `{c}`?)"))
                .unwrap_or_default(),
            presets::PRESETS.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
        ),
    })?;
    println!("# preset \"{}\": {}", p.name, p.summary);
    println!(
        "# Sources: docs/retry-policies.md, section per line. Any key can be overridden in the strategy."
    );
    println!("{}", p.toml.trim_end());
    if !p.hop.is_empty() {
        println!("# As a gateway layer (layers[].preset) or a call-graph edge (calls[].preset), also:");
        for line in p.hop.lines() {
            println!("# {line}");
        }
    }
    let set: toml::Table = p.toml.parse().unwrap_or_default();
    let rest: Vec<String> = experiment::schema::CLIENT
        .fields
        .iter()
        .filter(|f| !set.contains_key(f.key))
        .map(|f| match (&f.default, f.default.toml()) {
            (_, Some(v)) => format!("{} = {v}  # retrysim default", f.key),
            (experiment::schema::IfAbsent::Absent(means), None) => {
                format!("# {}: not set ({means}), unless [client] sets it", f.key)
            }
            _ => format!("# {}: required", f.key),
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
    let stop = interrupt().flag();
    let findings = crate::validation::run(&suite, &a.checks, stop, &mut |f, events| {
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
    });
    let findings = match findings {
        Err(crate::validation::ValidationError::Interrupted) => return Err(interrupted(None)),
        other => other?,
    };
    let dir = a.out.clone().unwrap_or_else(|| PathBuf::from("."));
    std::fs::create_dir_all(&dir).map_err(results::WriteError::at(&dir))?;
    let path = dir.join(crate::validation::FILE);
    results::write_atomically(&path, crate::validation::markdown::render(&findings).as_bytes())?;
    stopped(Some(&dir))?;
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

/// What `run --resume` finds in its folder.
enum Previous {
    /// The complete result of this experiment: nothing to run.
    Complete,
    /// A partial result of this experiment: these first cells are finished.
    Partial(Vec<sweep::Cell>),
    /// Anything else (nothing, another experiment's files): run everything.
    Other,
}

/// Reads `dir`'s manifest, written last: a complete result of `exp` (and `shard`) when it names
/// the same experiment as run; a partial one when, its partial fields aside, it does and its
/// finished cells are the first of `cells`.
fn previous(dir: &Path, exp: &Experiment, shard: Option<Shard>, cells: &[sweep::Cell]) -> Previous {
    let Ok(bytes) = std::fs::read(dir.join(Manifest::FILE)) else { return Previous::Other };
    let Ok(m) = Manifest::parse(&bytes) else { return Previous::Other };
    let expected = Manifest::of(exp, shard);
    if !m.partial {
        return if m.same_result(&expected) { Previous::Complete } else { Previous::Other };
    }
    if !m.completed().same_result(&expected) || m.cells_done.len() > cells.len() {
        return Previous::Other;
    }
    let prefix =
        m.cells_done.iter().zip(cells).all(|(d, c)| {
            d.point == c.point && exp.points[c.point].strategies[c.strategy].name == d.strategy
        });
    if prefix { Previous::Partial(cells[..m.cells_done.len()].to_vec()) } else { Previous::Other }
}

/// After a stop: keeps the finished cells as a partial result with its report (see
/// [`ResultWriter::commit_partial`]), and returns the error that says what is there. A stop
/// before any cell finished leaves the folder untouched.
fn keep_partial(writer: ResultWriter<'_>, out: &Path, total: usize, opts: &report::ReportOptions) -> Error {
    let done = writer.done().len();
    let kept = match writer.commit_partial(total) {
        Ok(None) => return interrupted(None),
        Ok(Some(_)) => report::render_report(out, opts).map(|_| ()).map_err(Error::from),
        Err(e) => Err(e.into()),
    };
    if let Err(e) = kept {
        return e;
    }
    let signal =
        interrupt().signal().expect("only a signal handler raises the stop flag, after it stored the signal");
    Error::InterruptedPartial { signal, dir: out.to_path_buf(), done, total }
}

/// Lists on stderr the sweep points that `[sweep] skip_invalid` left out.
fn skipped(exp: &Experiment) {
    for s in &exp.skipped {
        let at: Vec<String> =
            exp.sweep_keys.iter().zip(&s.values).map(|(k, v)| format!("{k} = {v}")).collect();
        eprintln!("skipped sweep point ({}): {}", at.join(", "), s.reason);
    }
}

/// Prints the setup's warnings (valid, but testing less than it seems) on stderr.
fn warn(file: &Path, exp: &Experiment) {
    for w in experiment::warnings(exp) {
        eprintln!("warning: {}: {w}", file.display());
    }
}

/// `retrysim serve`: the file's `[server]` over HTTP until `--for` or a signal; a signal is
/// the normal way to stop it (exit 0, every file written).
pub fn serve(a: &ServeArgs) -> Result<(), Error> {
    let overrides = OverrideArgs { set: a.set.clone(), runs: None, seed: a.seed };
    let (exp, _) = load(&a.file, &overrides)?;
    let plan = crate::serve::plan::plan(&exp, &a.file.display().to_string())?;
    let flag = |flag: String, reason: String| Error::Flag { flag, reason };
    let listen: std::net::SocketAddr = a.listen.parse().map_err(|e| {
        flag(
            format!("--listen {}", a.listen),
            format!("{e}; write it like 127.0.0.1:8080 (port 0: any free port)"),
        )
    })?;
    if !listen.ip().is_loopback() {
        return Err(flag(
            format!("--listen {}", a.listen),
            "serve is a test server and listens on the loopback only (127.0.0.1 or [::1])".into(),
        ));
    }
    let run_for = a
        .run_for
        .as_deref()
        .map(|d| match experiment::Duration::parse(d) {
            Ok(d) if d.as_ns() > 0 => Ok(std::time::Duration::from_nanos(d.as_ns())),
            Ok(_) => Err(flag(format!("--for {d}"), "must be longer than 0".into())),
            Err(reason) => Err(flag(format!("--for {d}"), reason)),
        })
        .transpose()?;
    let out = a.out.clone().unwrap_or_else(|| PathBuf::from("results").join(format!("{}-serve", exp.name)));
    let opts = crate::serve::Options {
        listen,
        out,
        run_for,
        retry_after: if a.retry_after_date {
            crate::serve::response::RetryAfterStyle::Date
        } else {
            crate::serve::response::RetryAfterStyle::Seconds
        },
    };
    let served = crate::serve::serve(plan, &opts, interrupt().flag(), |addr| {
        use std::io::Write;
        println!("listening on http://{addr}");
        let _ = std::io::stdout().flush();
    })?;
    if !a.quiet {
        let s = &served.summary;
        println!(
            "served {:.1} s: {} request(s) ({} bad), {} operation(s), {:.3} calls per operation, success rate {:.4}, {} duplicate effect(s), peak {} calls/s",
            s.duration_s,
            s.server_calls,
            s.bad_requests,
            s.ops,
            s.server_amplification,
            s.success_rate,
            s.duplicates,
            s.peak_offered_rps
        );
        for f in &served.files {
            println!("wrote {}", f.display());
        }
    }
    Ok(())
}

/// Loads the experiment `file` with the command line's changes and checks its `[tune]`: every
/// verb that loads a file refuses a bad one, so `run`, which ignores `[tune]`, never runs a
/// file that `tune` would refuse.
fn load(file: &Path, o: &OverrideArgs) -> Result<(Experiment, Option<TuneSpec>), Error> {
    let set = o.set.iter().map(|kv| experiment::parse_set_arg(kv)).collect::<Result<Vec<_>, _>>()?;
    let exp = experiment::load(file, &Overrides { set, runs: o.runs, seed: o.seed })?;
    let tune = crate::tune::spec::parse(&exp)?;
    Ok((exp, tune))
}

/// The weight of one run of each of `cells`: its expected events per run (see
/// [`crate::experiment::cost::cell_events`]).
fn run_weights(exp: &crate::experiment::Experiment, cells: &[crate::sweep::Cell]) -> Vec<f64> {
    cells.iter().map(|c| crate::experiment::cost::cell_events(&exp.points[c.point], c.strategy)).collect()
}

/// `retrysim fit`: read the log, fit, print; `Err(Undecided)` (exit 1) when the log cannot
/// decide a strategy.
pub fn fit(a: &FitArgs) -> Result<(), Error> {
    let mut columns =
        if a.format == "serve" { crate::fit::Columns::serve() } else { crate::fit::Columns::plain() };
    if let Some(spec) = &a.columns {
        columns = columns.with(spec)?;
    }
    let seconds = |unit: &str| match unit {
        "ms" => 1e-3,
        "us" => 1e-6,
        _ => 1.0,
    };
    let units = crate::fit::log::Units {
        time_s: seconds(&a.time_unit),
        duration_s: seconds(a.duration_unit.as_deref().unwrap_or(&a.time_unit)),
    };
    let log = crate::fit::log::read(&a.log, &columns, units)?;
    let report = crate::fit::fit(&log, &a.log)?;
    print!("{}", crate::fit::strategy::render(&report, &a.log.display().to_string(), &a.name));
    match report.verdict {
        crate::fit::Verdict::Decided => Ok(()),
        _ => Err(Error::Undecided),
    }
}

/// `retrysim import`: the notes as `#` comments, the `[[strategies]]` block, then the
/// `[server]` keys the file implies, if any.
pub fn import(a: &ImportArgs) -> Result<(), Error> {
    let format = crate::interop::format(&a.kind)?;
    let text = std::fs::read_to_string(&a.file)
        .map_err(|source| experiment::ConfigError::Read { path: a.file.clone(), source })?;
    let stem =
        a.file.file_stem().map(|s| s.to_string_lossy().split('.').next().unwrap_or_default().to_string());
    let name = a.name.clone().or(stem).filter(|n| !n.is_empty()).unwrap_or_else(|| a.kind.clone());
    let imported = format.import(&text, &name)?;
    print!("{}", crate::interop::block::printed(&a.kind, &a.file.display().to_string(), &imported));
    Ok(())
}

/// `retrysim export`: the strategy as it runs, in the format; what `--lossy` dropped on
/// stderr.
pub fn export(a: &ExportArgs) -> Result<(), Error> {
    let format = crate::interop::format(&a.kind)?;
    let strategy = experiment::effective_strategy_in(&a.file, &a.strategy)?;
    let exported = format.export(&strategy, a.lossy)?;
    for d in &exported.dropped {
        eprintln!("export {}: --lossy dropped {d}", a.kind);
    }
    match &a.out {
        Some(path) => {
            results::write_atomically(path, exported.text.as_bytes())?;
            eprintln!("wrote {}", path.display());
        }
        None => print!("{}", exported.text),
    }
    Ok(())
}
