//! How a verb learns that it must stop early: SIGINT (Ctrl-C), SIGTERM (what Slurm sends at a
//! job's time limit and Kubernetes at eviction) and SIGHUP all raise one flag, which the
//! sweep, the search, the validation suite and the merge poll. The verb then drops its
//! temporary files, leaves the results already in its folder untouched, and exits with
//! 128 + the signal's number (130 for SIGINT, 143 for SIGTERM), what a shell reports for a
//! process the signal ended. A second signal ends the process at once (its default action).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// The signals handled, with their names for messages.
#[cfg(unix)]
const SIGNALS: [(i32, &str); 3] = [
    (signal_hook::consts::SIGINT, "SIGINT"),
    (signal_hook::consts::SIGTERM, "SIGTERM"),
    (signal_hook::consts::SIGHUP, "SIGHUP"),
];
#[cfg(not(unix))]
const SIGNALS: [(i32, &str); 0] = [];

/// The process's stop flag and the signal that raised it.
#[derive(Debug)]
pub struct Interrupt {
    raised: Arc<AtomicBool>,
    signal: Arc<AtomicUsize>,
}

impl Interrupt {
    /// The process's handler, installed on first use. Handlers that cannot be installed leave
    /// that signal's default action (the flag then never rises for it).
    pub fn installed() -> &'static Interrupt {
        static ONE: OnceLock<Interrupt> = OnceLock::new();
        ONE.get_or_init(|| {
            let me =
                Interrupt { raised: Arc::new(AtomicBool::new(false)), signal: Arc::new(AtomicUsize::new(0)) };
            for (signal, _) in SIGNALS {
                // Registered first, so it sees the flag as the previous signal left it.
                let _ = signal_hook::flag::register_conditional_default(signal, Arc::clone(&me.raised));
                let _ = signal_hook::flag::register_usize(signal, Arc::clone(&me.signal), signal as usize);
                let _ = signal_hook::flag::register(signal, Arc::clone(&me.raised));
            }
            me
        })
    }

    /// Raised once a signal arrived: what the sweep and the writers poll.
    pub fn flag(&self) -> &AtomicBool {
        &self.raised
    }

    /// The signal that arrived, if any.
    pub fn signal(&self) -> Option<Signal> {
        if !self.raised.load(Ordering::SeqCst) {
            return None;
        }
        Some(Signal(self.signal.load(Ordering::SeqCst) as i32))
    }
}

/// A signal number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Signal(pub i32);

impl Signal {
    /// The shell's exit status for a process this signal ended.
    pub fn exit_code(self) -> i32 {
        128 + self.0
    }
}

impl std::fmt::Display for Signal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match SIGNALS.iter().find(|(n, _)| *n == self.0) {
            Some((_, name)) => f.write_str(name),
            None => write!(f, "signal {}", self.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_the_shell() {
        assert_eq!(Signal(2).exit_code(), 130);
        assert_eq!(Signal(15).exit_code(), 143);
        assert_eq!(Signal(15).to_string(), "SIGTERM");
    }
}
