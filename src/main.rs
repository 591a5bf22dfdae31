//! `retrysim`: parse the command line, call the library, map errors to exit codes.

use clap::Parser;
use retrysim::cli::{Cli, Command, OverrideArgs};
use retrysim::experiment::{self, Experiment, Overrides};
use retrysim::{Error, report, sweep};
use std::path::PathBuf;
use std::time::Instant;

fn main() {
    let cli = Cli::parse();
    if let Err(e) = dispatch(cli.command) {
        eprintln!("error: {e}");
        std::process::exit(e.exit_code());
    }
}

fn dispatch(cmd: Command) -> Result<(), Error> {
    match cmd {
        Command::Check(a) => {
            let exp = load(&a.file, &a.overrides)?;
            warn(&a.file, &exp);
            let cells = sweep::cell_count(&exp);
            println!(
                "{}: ok ({} point(s) x {} strateg{} x {} run(s) = {cells} runs)",
                a.file.display(),
                exp.points.len(),
                exp.points[0].strategies.len(),
                if exp.points[0].strategies.len() == 1 { "y" } else { "ies" },
                exp.runs
            );
            Ok(())
        }
        Command::Run(a) => {
            let exp = load(&a.file, &a.overrides)?;
            warn(&a.file, &exp);
            let out = a.out.unwrap_or_else(|| PathBuf::from("results").join(&exp.name));
            let threads = a
                .threads
                .map(usize::from)
                .unwrap_or_else(|| std::thread::available_parallelism().map(usize::from).unwrap_or(1));
            let (results, stats) = run_on_threads(&exp, threads, a.stats)?;
            for p in report::write_all(&out, &exp, &results)? {
                println!("wrote {}", p.display());
            }
            if let Some(line) = stats {
                println!("{line}");
            }
            Ok(())
        }
    }
}

/// Prints the setup's warnings (valid, but testing less than it seems) on stderr.
fn warn(file: &std::path::Path, exp: &Experiment) {
    for w in experiment::warnings(exp) {
        eprintln!("warning: {}: {w}", file.display());
    }
}

fn load(file: &std::path::Path, o: &OverrideArgs) -> Result<Experiment, Error> {
    let set = o.set.iter().map(|kv| experiment::parse_set_arg(kv)).collect::<Result<Vec<_>, _>>()?;
    Ok(experiment::load(file, &Overrides { set, runs: o.runs, seed: o.seed })?)
}

/// Runs every cell on a pool of `threads` workers with a progress bar (shown on a terminal
/// only). Returns the results and, with `--stats`, the statistics line.
fn run_on_threads(
    exp: &Experiment,
    threads: usize,
    stats: bool,
) -> Result<(sweep::Results, Option<String>), Error> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| Error::Threads { threads, message: e.to_string() })?;
    let bar = indicatif::ProgressBar::new(sweep::cell_count(exp));
    bar.set_style(
        indicatif::ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} runs, {elapsed} (eta {eta})")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar.set_message(exp.name.clone());
    let started = Instant::now();
    let results = pool.install(|| sweep::run(exp, &|_| bar.inc(1)));
    let wall = started.elapsed().as_secs_f64();
    let events = results.events();
    let line = format!(
        "{}: {} runs, {events} events in {wall:.3} s on {threads} thread(s): {:.2} M events/s; peak memory {}",
        exp.name,
        results.runs.len(),
        events as f64 / wall.max(1e-9) / 1e6,
        retrysim::stats::peak_memory().map_or("unknown".into(), |b| format!("{:.1} MB", b as f64 / 1e6)),
    );
    // The bar's last line says what the run cost; on a pipe the bar is hidden.
    bar.finish_with_message(line.clone());
    Ok((results, stats.then_some(line)))
}
