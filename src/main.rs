//! `retrysim`: parse the command line, call the library, map errors to exit codes.

use clap::Parser;
use retrysim::cli::{Cli, Command};
use retrysim::commands;

fn main() {
    let cli = Cli::parse();
    let outcome = match &cli.command {
        Command::Run(a) => commands::run(a),
        Command::Check(a) => commands::check(a),
        Command::Merge(a) => commands::merge(a),
    };
    if let Err(e) = outcome {
        eprintln!("error: {e}");
        std::process::exit(e.exit_code());
    }
}
