//! `retrysim serve` (DESIGN §8): the experiment's `[server]` as a real HTTP/1.1 server on
//! the loopback, in wall-clock time, for testing a real client against the server the
//! simulation models. One file per concept:
//!
//! - [`plan`]: what of the file serve plays, and what it refuses;
//! - [`http`]: the HTTP front; [`headers`]: what a request says about itself;
//!   [`response`]: what an answer looks like over HTTP;
//! - [`live`]: the model's server driven by the wall clock;
//! - [`log`]: `requests.csv`; [`summary`]: `summary.csv` and `timeseries.csv`.
//!
//! The model is not changed for it: [`live`] calls the same [`crate::model::server::Server`]
//! that `run` simulates.

pub mod headers;
pub mod http;
pub mod live;
pub mod log;
pub mod plan;
pub mod response;
pub mod summary;

use crate::engine::Instant;
use crate::results::WriteError;
use live::Live;
use log::RequestLog;
use plan::Plan;
use response::RetryAfterStyle;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use summary::{Summary, Tally};
use tokio::sync::Notify;

/// How to serve.
#[derive(Clone, Debug)]
pub struct Options {
    pub listen: SocketAddr,
    pub out: PathBuf,
    /// Stop after this long (otherwise at the stop flag only).
    pub run_for: Option<Duration>,
    pub retry_after: RetryAfterStyle,
}

/// What a finished session wrote.
#[derive(Clone, Debug)]
pub struct Served {
    pub summary: Summary,
    pub files: Vec<PathBuf>,
}

/// The wall clock since serve started.
pub struct Clock(std::time::Instant);

impl Clock {
    pub fn now(&self) -> Instant {
        Instant::from_ns(self.0.elapsed().as_nanos() as u64)
    }
}

/// What the front's tasks share.
pub struct Shared {
    /// `None` once serve stopped.
    pub live: Mutex<Option<Live>>,
    pub clock: Clock,
    /// Wakes the timer task: a new timer may be due earlier than the one it waits for.
    pub timers_changed: Notify,
}

/// Why serve could not run.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot start the server's runtime: {0}")]
    Runtime(#[source] std::io::Error),
    #[error(transparent)]
    Write(#[from] WriteError),
}

/// Serves `plan` until `stop` is raised or `opts.run_for` has passed; `bound` is told the
/// address listened on once connections are accepted. Writes requests.csv, summary.csv and
/// timeseries.csv into `opts.out` when it stops.
pub fn serve(
    plan: Plan,
    opts: &Options,
    stop: &AtomicBool,
    bound: impl FnOnce(SocketAddr),
) -> Result<Served, ServeError> {
    raise_file_limit();
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(ServeError::Runtime)?;
    let listener = std::net::TcpListener::bind(opts.listen)
        .and_then(|l| l.set_nonblocking(true).map(|()| l))
        .map_err(|source| ServeError::Listen { addr: opts.listen, source })?;
    let addr = listener.local_addr().map_err(|source| ServeError::Listen { addr: opts.listen, source })?;
    // Created once the address is ours: a refused address leaves no folder behind.
    std::fs::create_dir_all(&opts.out).map_err(WriteError::at(&opts.out))?;
    let log = RequestLog::create(&opts.out)?;
    let tally = Tally::new(plan.bucket_ns);
    let stopped = runtime.block_on(async {
        let listener = tokio::net::TcpListener::from_std(listener)
            .map_err(|source| ServeError::Listen { addr, source })?;
        let shared = Arc::new(Shared {
            live: Mutex::new(Some(Live::new(plan.server, plan.run_seed, opts.retry_after, log, tally))),
            clock: Clock(std::time::Instant::now()),
            timers_changed: Notify::new(),
        });
        let timers = tokio::spawn(play_timers(Arc::clone(&shared)));
        let front = tokio::spawn(http::accept(listener, Arc::clone(&shared)));
        bound(addr);
        let started = std::time::Instant::now();
        while !stop.load(Ordering::SeqCst) && opts.run_for.is_none_or(|d| started.elapsed() < d) {
            let left =
                opts.run_for.map_or(Duration::from_millis(20), |d| d.saturating_sub(started.elapsed()));
            tokio::time::sleep(left.min(Duration::from_millis(20))).await;
        }
        front.abort();
        timers.abort();
        let now = shared.clock.now();
        let live = shared.live.lock().unwrap_or_else(|p| p.into_inner()).take();
        let live = live.expect("only the stop takes the server");
        Ok::<_, ServeError>((live.stop(now), now))
    })?;
    // Connections still open are closed with the runtime, unanswered.
    drop(runtime);
    let (stopped, at) = stopped;
    let summary = stopped.tally.summary(at.as_secs_f64(), stopped.keys_peak);
    let requests = stopped.log.finish()?;
    stopped.tally.write(&opts.out, &summary)?;
    let files = vec![requests, opts.out.join("summary.csv"), opts.out.join("timeseries.csv")];
    Ok(Served { summary, files })
}

/// The timer task: plays the model's timers when the wall clock reaches them.
async fn play_timers(shared: Arc<Shared>) {
    let origin = tokio::time::Instant::now() - std::time::Duration::from_nanos(shared.clock.now().as_ns());
    loop {
        let next = {
            let mut live = shared.live.lock().unwrap_or_else(|p| p.into_inner());
            let Some(live) = live.as_mut() else { return };
            live.advance(shared.clock.now());
            live.next_timer()
        };
        match next {
            Some(at) => {
                let due = origin + std::time::Duration::from_nanos(at.as_ns());
                let _ = tokio::time::timeout_at(due, shared.timers_changed.notified()).await;
            }
            None => shared.timers_changed.notified().await,
        }
    }
}

/// Raises the soft limit on open files to the hard one, so that thousands of connections can
/// be open at once (many systems start at 1024).
fn raise_file_limit() {
    #[cfg(unix)]
    // SAFETY: getrlimit and setrlimit only read and write the struct passed.
    unsafe {
        let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            let _ = libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}
