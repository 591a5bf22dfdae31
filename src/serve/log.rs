//! `requests.csv`: one row per request `serve` received, written when the request's fate is
//! known (answered, silenced, refused as bad, or still at the server when serve stopped), so
//! rows come in the order requests ended; `seq` is the order they arrived in. Rows stream into
//! a temporary file in the output folder, renamed into place when serve stops: a reader never
//! sees half a log (as `results/writer.rs` does for `run`).

use crate::results::{WriteError, persist, temporary_next_to};
use std::io::BufWriter;
use std::path::{Path, PathBuf};

/// The file's columns, in order.
pub const COLUMNS: [&str; 16] = [
    "seq",
    "arrival_s",
    "method",
    "path",
    "op_id",
    "keyed",
    "attempt",
    "outcome",
    "status",
    "retry_after",
    "held_s",
    "queue_wait_s",
    "service_s",
    "effect",
    "answered_s",
    "delivered",
];

/// What the server did with a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// A worker did the work (its effect applied, unless fencing refused it); answered with the
    /// work's answer or an `after_effect` error.
    Served,
    /// Turned away without the work: an outage, an error fault, the rate limiter, a 409 while
    /// its key is in progress, or the full queue.
    Refused,
    /// Answered from the dedup store, without the work.
    Replayed,
    /// Parked on its key while another request executed it; answered with that result.
    Parked,
    /// Shed from the queue by the discipline (503).
    Shed,
    /// Never answered (an outage with `status = "timeout"`): the client sees its own timeout.
    Silenced,
    /// Closed without an answer (an outage with `status = "connection-error"`).
    Reset,
    /// Not a request the server could read: answered 400 without reaching the model.
    BadRequest,
    /// Still at the server (rate-limited, queued, in service or parked) when serve stopped.
    Pending,
}

impl Fate {
    pub fn name(self) -> &'static str {
        match self {
            Fate::Served => "served",
            Fate::Refused => "refused",
            Fate::Replayed => "replayed",
            Fate::Parked => "parked",
            Fate::Shed => "shed",
            Fate::Silenced => "silenced",
            Fate::Reset => "reset",
            Fate::BadRequest => "bad-request",
            Fate::Pending => "pending",
        }
    }
}

/// One request's row. Times are in seconds since serve started.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Row {
    pub seq: u64,
    pub arrival_s: f64,
    pub method: String,
    pub path: String,
    pub op_id: Option<String>,
    pub keyed: bool,
    pub attempt: Option<u32>,
    pub fate: Option<Fate>,
    /// The HTTP status sent (none when silenced, reset or pending).
    pub status: Option<u16>,
    /// The `Retry-After` header's value as sent.
    pub retry_after: Option<String>,
    /// How long the rate limiter held it (a delaying limiter).
    pub held_s: f64,
    /// How long it waited in the queue, or parked on its key.
    pub queue_wait_s: f64,
    pub service_s: f64,
    /// The work's side effect happened for this request.
    pub effect: bool,
    pub answered_s: Option<f64>,
    /// The answer reached an open connection (false: the client had gone).
    pub delivered: bool,
}

/// The log being written.
pub struct RequestLog {
    path: PathBuf,
    csv: ::csv::Writer<BufWriter<tempfile::NamedTempFile>>,
    rows: u64,
    /// The first write that failed: reported when serve stops.
    failed: Option<std::io::Error>,
}

impl RequestLog {
    /// Starts `dir/requests.csv` (in a temporary file until [`RequestLog::finish`]).
    pub fn create(dir: &Path) -> Result<RequestLog, WriteError> {
        let path = dir.join("requests.csv");
        let tmp = temporary_next_to(&path)?;
        let mut csv = ::csv::WriterBuilder::new()
            .terminator(::csv::Terminator::Any(b'\n'))
            .from_writer(BufWriter::with_capacity(1 << 16, tmp));
        csv.write_record(COLUMNS).map_err(|e| WriteError { path: path.clone(), source: e.into() })?;
        Ok(RequestLog { path, csv, rows: 0, failed: None })
    }

    pub fn write(&mut self, r: &Row) {
        let opt = |v: Option<String>| v.unwrap_or_default();
        let record = [
            r.seq.to_string(),
            secs(r.arrival_s),
            r.method.clone(),
            r.path.clone(),
            opt(r.op_id.clone()),
            r.keyed.to_string(),
            opt(r.attempt.map(|a| a.to_string())),
            r.fate.map_or("", Fate::name).to_owned(),
            opt(r.status.map(|s| s.to_string())),
            opt(r.retry_after.clone()),
            secs(r.held_s),
            secs(r.queue_wait_s),
            secs(r.service_s),
            r.effect.to_string(),
            opt(r.answered_s.map(secs)),
            r.delivered.to_string(),
        ];
        if let Err(e) = self.csv.write_record(&record)
            && self.failed.is_none()
        {
            self.failed = Some(e.into());
        }
        self.rows += 1;
    }

    /// Rows written so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Renames the complete log into place.
    pub fn finish(self) -> Result<PathBuf, WriteError> {
        if let Some(e) = self.failed {
            return Err(WriteError::at(&self.path)(e));
        }
        let buffered = self.csv.into_inner().map_err(|e| WriteError::at(&self.path)(e.into_error()))?;
        let tmp = buffered.into_inner().map_err(|e| WriteError::at(&self.path)(e.into_error()))?;
        persist(tmp, &self.path)?;
        Ok(self.path)
    }
}

/// Seconds to the microsecond (what a wall clock measures here, well within its jitter).
pub fn secs(s: f64) -> String {
    format!("{s:.6}")
}
