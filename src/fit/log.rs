//! Reading a recorded attempt log into operations: rows of (time, operation id, status, and
//! optionally the answer's duration and its Retry-After), grouped by operation and ordered by
//! time.

use super::FitError;
use std::collections::HashMap;
use std::path::Path;

/// Where each field is in the CSV, by header name.
#[derive(Clone, Debug, PartialEq)]
pub struct Columns {
    /// When the attempt arrived (seconds, or the unit of `--time-unit`).
    pub time: String,
    /// The operation the attempt belongs to: an idempotency key, or any id the client repeats
    /// on every attempt of one operation.
    pub op: String,
    /// The answer's HTTP status.
    pub status: String,
    /// How long the answer took from the attempt's arrival (same unit as `time`), as one
    /// column or the sum of several; none: the delay is measured from the arrival.
    pub duration: Vec<String>,
    /// When the answer left, on the same clock as `time` (instead of `duration`); empty for
    /// a request never answered.
    pub answered: Option<String>,
    /// The Retry-After the answer carried, in seconds (HTTP's unit); empty when none.
    pub retry_after: Option<String>,
}

impl Columns {
    /// The columns of the `requests.csv` that `retrysim serve` writes (design §8).
    pub fn serve() -> Columns {
        Columns {
            time: "arrival_s".into(),
            op: "op_id".into(),
            status: "status".into(),
            duration: vec![],
            answered: Some("answered_s".into()),
            retry_after: Some("retry_after".into()),
        }
    }

    /// A plain log: `time`, `op` and `status`, no duration or Retry-After.
    pub fn plain() -> Columns {
        Columns {
            time: "time".into(),
            op: "op".into(),
            status: "status".into(),
            duration: vec![],
            answered: None,
            retry_after: None,
        }
    }

    /// Applies `--columns field=header,...` (fields: time, op, status, duration, answered,
    /// retry_after; `duration=a+b` sums columns).
    pub fn with(mut self, spec: &str) -> Result<Columns, FitError> {
        for pair in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (field, header) = pair.split_once('=').ok_or_else(|| FitError::ColumnsFlag {
                pair: pair.into(),
                reason: "expected field=header".into(),
            })?;
            let header = header.trim().to_string();
            match field.trim() {
                "time" => self.time = header,
                "op" => self.op = header,
                "status" => self.status = header,
                "duration" => {
                    self.duration = header.split('+').map(|h| h.trim().to_string()).collect();
                    self.answered = None;
                }
                "answered" => {
                    self.answered = Some(header);
                    self.duration.clear();
                }
                "retry_after" => self.retry_after = Some(header),
                other => {
                    return Err(FitError::ColumnsFlag {
                        pair: pair.into(),
                        reason: format!(
                            "unknown field {other:?}: the fields are time, op, status, duration, answered and retry_after"
                        ),
                    });
                }
            }
        }
        Ok(self)
    }
}

/// One attempt as the server saw it.
#[derive(Clone, Debug, PartialEq)]
pub struct Attempt {
    pub at_s: f64,
    /// When the answer left, if the log says; else the arrival. `NaN` for a request the log
    /// says was never answered (the client's next attempt followed its own timeout).
    pub answered_s: f64,
    /// The answer's HTTP status; 0 for no answer.
    pub status: u16,
    pub retry_after_s: Option<f64>,
}

impl Attempt {
    pub fn succeeded(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// The attempts of one operation, in time order.
#[derive(Clone, Debug, PartialEq)]
pub struct Operation {
    pub id: String,
    pub attempts: Vec<Attempt>,
}

/// A log read into operations, with what was left out.
#[derive(Clone, Debug, PartialEq)]
pub struct AttemptLog {
    pub operations: Vec<Operation>,
    pub rows: usize,
    /// Rows with an empty operation id (a client that sends none): not groupable.
    pub without_op: usize,
    pub has_durations: bool,
}

/// The units of a log's numbers, in seconds (1 for seconds, 1e-3 for milliseconds).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Units {
    pub time_s: f64,
    pub duration_s: f64,
}

impl Units {
    pub const SECONDS: Units = Units { time_s: 1.0, duration_s: 1.0 };
}

/// Reads `path` with `columns`; numeric times and durations are in `units`.
pub fn read(path: &Path, columns: &Columns, units: Units) -> Result<AttemptLog, FitError> {
    let file =
        std::fs::File::open(path).map_err(|e| FitError::Read { path: path.into(), reason: e.to_string() })?;
    read_from(file, path, columns, units)
}

/// [`read`] from any reader; `path` only names it in errors.
pub fn read_from<R: std::io::Read>(
    input: R,
    path: &Path,
    columns: &Columns,
    units: Units,
) -> Result<AttemptLog, FitError> {
    let mut reader = csv::ReaderBuilder::new().trim(csv::Trim::All).from_reader(input);
    let headers =
        reader.headers().map_err(|e| FitError::Read { path: path.into(), reason: e.to_string() })?.clone();
    let index = |name: &str| -> Result<usize, FitError> {
        headers.iter().position(|h| h == name).ok_or_else(|| FitError::MissingColumn {
            path: path.into(),
            column: name.into(),
            present: headers.iter().map(str::to_string).collect(),
        })
    };
    let time = index(&columns.time)?;
    let op = index(&columns.op)?;
    let status = index(&columns.status)?;
    let durations = columns.duration.iter().map(|c| index(c)).collect::<Result<Vec<_>, _>>()?;
    let answered = columns.answered.as_deref().map(index).transpose()?;
    let retry_after = columns.retry_after.as_deref().map(index).transpose()?;

    let mut by_op: HashMap<String, usize> = HashMap::new();
    let mut operations: Vec<Operation> = Vec::new();
    let (mut rows, mut without_op) = (0, 0);
    for (i, record) in reader.records().enumerate() {
        let line = i + 2;
        let record = record.map_err(|e| FitError::Read { path: path.into(), reason: e.to_string() })?;
        rows += 1;
        let field = |j: usize| record.get(j).unwrap_or("");
        let bad = |column: &str, value: &str, expected: &str| FitError::BadValue {
            path: path.into(),
            line,
            column: column.into(),
            value: value.into(),
            expected: expected.into(),
        };
        let at_s = parse_time(field(time), units.time_s).ok_or_else(|| {
            bad(&columns.time, field(time), "a number (seconds, or --time-unit) or an RFC 3339 time")
        })?;
        // Empty: the request got no answer (an outage that keeps silent, a request still at
        // the server when the log ended).
        let status_value: u16 = match field(status) {
            "" => 0,
            v => v.parse().ok().filter(|s| (100..600).contains(s)).ok_or_else(|| {
                bad(&columns.status, v, "an HTTP status, 100 to 599, or empty for no answer")
            })?,
        };
        let mut took_s = 0.0;
        for (&j, name) in durations.iter().zip(&columns.duration) {
            let v = field(j);
            if v.is_empty() {
                continue;
            }
            let d: f64 = v
                .parse()
                .ok()
                .filter(|d: &f64| d.is_finite() && *d >= 0.0)
                .ok_or_else(|| bad(name, v, "a non-negative number, or empty"))?;
            took_s += d * units.duration_s;
        }
        let retry_after_s = match retry_after {
            Some(j) if !field(j).is_empty() => Some(
                field(j).parse::<f64>().ok().filter(|r| r.is_finite() && *r >= 0.0).ok_or_else(|| {
                    bad(
                        columns.retry_after.as_deref().unwrap_or(""),
                        field(j),
                        "seconds, or empty (an HTTP-date cannot be placed on the log's clock: serve without --retry-after-date)",
                    )
                })?,
            ),
            _ => None,
        };
        let answered_s = match answered {
            Some(j) => match field(j) {
                "" => f64::NAN,
                v => parse_time(v, units.time_s).ok_or_else(|| {
                    bad(
                        columns.answered.as_deref().unwrap_or(""),
                        v,
                        "a time like the time column's, or empty",
                    )
                })?,
            },
            None => at_s + took_s,
        };
        let id = field(op);
        if id.is_empty() {
            without_op += 1;
            continue;
        }
        let attempt = Attempt { at_s, answered_s, status: status_value, retry_after_s };
        let slot = *by_op.entry(id.to_string()).or_insert_with(|| {
            operations.push(Operation { id: id.to_string(), attempts: Vec::new() });
            operations.len() - 1
        });
        operations[slot].attempts.push(attempt);
    }
    for o in &mut operations {
        // Stable: attempts logged at the same instant keep the file's order.
        o.attempts.sort_by(|a, b| a.at_s.total_cmp(&b.at_s));
    }
    Ok(AttemptLog {
        operations,
        rows,
        without_op,
        has_durations: !durations.is_empty() || answered.is_some(),
    })
}

/// A time as a number in `unit_s`, or an RFC 3339 timestamp (`2026-12-03T10:00:00.123Z`, or
/// with an offset) as seconds since the Unix epoch.
fn parse_time(text: &str, unit_s: f64) -> Option<f64> {
    if let Ok(x) = text.parse::<f64>() {
        return x.is_finite().then_some(x * unit_s);
    }
    rfc3339_seconds(text)
}

/// Seconds since the epoch of an RFC 3339 date-time (`T` or a space between date and time,
/// optional fraction, `Z` or `+hh:mm` / `-hh:mm`).
fn rfc3339_seconds(text: &str) -> Option<f64> {
    let b = text.as_bytes();
    if b.len() < 20 || !matches!(b[10], b'T' | b't' | b' ') || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let num = |s: &str| s.parse::<i64>().ok();
    let (year, month, day) = (num(&text[0..4])?, num(&text[5..7])?, num(&text[8..10])?);
    let (hour, minute, second) = (num(&text[11..13])?, num(&text[14..16])?, num(&text[17..19])?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let mut rest = &text[19..];
    let mut fraction = 0.0;
    if let Some(r) = rest.strip_prefix('.') {
        let digits = r.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        fraction = format!("0.{}", &r[..digits]).parse().ok()?;
        rest = &r[digits..];
    }
    let offset_s = match rest {
        "Z" | "z" => 0,
        r if r.len() == 6 && (r.starts_with('+') || r.starts_with('-')) && &r[3..4] == ":" => {
            let sign = if r.starts_with('-') { -1 } else { 1 };
            sign * (num(&r[1..3])? * 3600 + num(&r[4..6])? * 60)
        }
        _ => return None,
    };
    // Days since 1970-01-01 in the proleptic Gregorian calendar (Howard Hinnant's
    // days_from_civil).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some((days * 86_400 + hour * 3600 + minute * 60 + second - offset_s) as f64 + fraction)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_times() {
        assert_eq!(rfc3339_seconds("1970-01-01T00:00:00Z"), Some(0.0));
        assert_eq!(rfc3339_seconds("2000-03-01T00:00:00Z"), Some(951_868_800.0));
        assert_eq!(rfc3339_seconds("2026-12-03T10:00:00.250+01:00"), Some(1_796_288_400.25));
        assert_eq!(rfc3339_seconds("2026-13-03T10:00:00Z"), None);
        assert_eq!(rfc3339_seconds("yesterday"), None);
    }

    #[test]
    fn groups_attempts_by_operation_in_time_order() {
        let csv =
            "time,op,status,took\n0.5,b,503,0.1\n0.0,a,503,0.1\n1.0,a,200,0.1\n0.7,,200,0.1\n0.9,b,200,\n";
        let cols = Columns::plain().with("duration=took").unwrap();
        let log = read_from(csv.as_bytes(), Path::new("x.csv"), &cols, Units::SECONDS).unwrap();
        assert_eq!((log.rows, log.without_op, log.operations.len()), (5, 1, 2));
        let a = &log.operations[1];
        assert_eq!(a.id, "a");
        assert_eq!(a.attempts.iter().map(|t| t.at_s).collect::<Vec<_>>(), vec![0.0, 1.0]);
        assert_eq!(a.attempts[0].answered_s, 0.1);
        assert_eq!(log.operations[0].attempts[1].answered_s, 0.9);
    }

    #[test]
    fn names_the_bad_value() {
        let csv = "time,op,status\n0.5,b,oops\n";
        let e = read_from(csv.as_bytes(), Path::new("x.csv"), &Columns::plain(), Units::SECONDS)
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2") && e.contains("status") && e.contains("oops"), "{e}");
        let e = read_from("t,op,status\n".as_bytes(), Path::new("x.csv"), &Columns::plain(), Units::SECONDS)
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"time\"") && e.contains("--columns"), "{e}");
    }
}
