//! Progress of a long run on stderr: a bar on a terminal, a plain line every few seconds on a
//! pipe (cells done, events per second, time left), nothing with `--quiet`. Never part of
//! results; the peak memory `--stats` prints.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// How progress is shown.
pub enum Progress {
    Bar(indicatif::ProgressBar),
    Lines { name: String, total: u64, every: Duration, started: Instant, last: Instant },
    Quiet,
}

impl Progress {
    /// A bar when stderr is a terminal, lines every `every` otherwise, or nothing.
    pub fn new(name: &str, total: u64, quiet: bool, every: Duration) -> Progress {
        if quiet {
            return Progress::Quiet;
        }
        if std::io::stderr().is_terminal() {
            let bar = indicatif::ProgressBar::new(total);
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{msg} [{bar:30}] {pos}/{len} runs, {elapsed} (eta {eta})",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            bar.set_message(name.to_owned());
            return Progress::Bar(bar);
        }
        let now = Instant::now();
        Progress::Lines { name: name.to_owned(), total, every, started: now, last: now }
    }

    /// `done` runs are finished, having processed `events` events.
    pub fn update(&mut self, done: u64, events: u64) {
        match self {
            Progress::Bar(bar) => bar.set_position(done),
            Progress::Lines { name, total, every, started, last } => {
                let now = Instant::now();
                if now.duration_since(*last) < *every || done >= *total {
                    return;
                }
                *last = now;
                let elapsed = now.duration_since(*started).as_secs_f64();
                let left = elapsed / done.max(1) as f64 * (*total - done) as f64;
                eprintln!(
                    "{name}: {done}/{total} runs, {:.1} M events/s, about {} left",
                    events as f64 / elapsed.max(1e-9) / 1e6,
                    human(left)
                );
            }
            Progress::Quiet => {}
        }
    }

    /// The work grew (or shrank) to `total` runs: `retrysim tune` learns its length as it goes.
    pub fn set_total(&mut self, new_total: u64) {
        match self {
            Progress::Bar(bar) => bar.set_length(new_total),
            Progress::Lines { total, .. } => *total = new_total,
            Progress::Quiet => {}
        }
    }

    /// What is being done now (the bar's label; the name of the lines).
    pub fn set_message(&mut self, message: &str) {
        match self {
            Progress::Bar(bar) => bar.set_message(message.to_owned()),
            Progress::Lines { name, .. } => *name = message.to_owned(),
            Progress::Quiet => {}
        }
    }

    /// The run ended; `line` says what it cost.
    pub fn finish(&self, line: &str) {
        if let Progress::Bar(bar) = self {
            bar.finish_with_message(line.to_owned());
        }
    }
}

/// `73 s`, `4 min 12 s`, `2 h 5 min`.
fn human(seconds: f64) -> String {
    let s = seconds.round() as u64;
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3600, s % 3600 / 60),
    }
}

/// Peak resident memory of this process in bytes (Linux `VmHWM`), if the system tells.
pub fn peak_memory() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

#[cfg(test)]
mod tests {
    #[test]
    fn human_durations() {
        assert_eq!(super::human(4.4), "4 s");
        assert_eq!(super::human(252.0), "4 min 12 s");
        assert_eq!(super::human(7500.0), "2 h 5 min");
    }
}
