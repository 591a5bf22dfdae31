//! `retrysim`: parse the command line, call the library, map errors to exit codes.

use clap::Parser;
use retrysim::cli::{Cli, Command};
use retrysim::commands;

fn main() {
    // Like every Unix tool: when the reader of our output goes away (`retrysim schema | head`),
    // end quietly instead of failing on the write.
    #[cfg(unix)]
    // SAFETY: restoring the default action of a signal, before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    let outcome = match &cli.command {
        Command::Run(a) => commands::run(a),
        Command::Check(a) => commands::check(a),
        Command::Merge(a) => commands::merge(a),
        Command::Slurm(a) => commands::slurm(a),
        Command::Plot(a) => commands::plot(a),
        Command::Tune(a) => commands::tune(a),
        Command::Schema(a) => commands::schema(a),
        Command::Presets(a) => commands::presets(a),
        Command::Explain(a) => commands::explain(a),
        Command::Validate(a) => commands::validate(a),
        Command::Fit(a) => commands::fit(a),
        Command::Serve(a) => commands::serve(a),
        Command::Import(a) => commands::import(a),
        Command::Export(a) => commands::export(a),
    };
    if let Err(e) = outcome {
        eprintln!("error: {e}");
        std::process::exit(e.exit_code());
    }
}
