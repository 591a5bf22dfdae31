//! `retrysim serve` (DESIGN §8) from the outside: the binary started on port 0, driven by a
//! small HTTP/1.1 client over the loopback, stopped with SIGTERM or `--for`.
//!
//! - A scripted sequence (an `after_effect` 504 then its stored success, a 409 while a key is
//!   in progress, a full queue, a rate limit) gets, row by row, the status and Retry-After
//!   that the model's own [`Server`] gives the same requests at the arrival times the log
//!   recorded, replayed here through the model's API as the simulation's event loop calls it.
//! - An outage scheduled on [1 s, 2 s) answers 503 exactly for the arrivals the server's clock
//!   places in it, and the client sees it begin and end within 250 ms of the schedule.
//! - Unreadable requests get 400 and the server goes on; SIGTERM writes every file and exits
//!   0; 2,000 requests over 200 concurrent connections are all answered and all logged.

use retrysim::engine::Instant;
use retrysim::experiment::{Overrides, load_str};
use retrysim::model::server::idempotency::{KeyMode, KeyTag};
use retrysim::model::server::workers::{Next, SHED_STATUS};
use retrysim::model::server::{Arrival, Reply, Request, Server};
use retrysim::policy::{Outcome, RetryAfter};
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::support::Table;

/// A `serve` process on a free port of the loopback.
struct Served {
    /// `None` once it ended.
    child: Option<Child>,
    /// Its stdout after the address line, kept open (it prints a summary when it stops).
    stdout: BufReader<std::process::ChildStdout>,
    addr: SocketAddr,
    /// When it printed its address (the client's clock for the schedule).
    ready: std::time::Instant,
    out: PathBuf,
    _dir: tempfile::TempDir,
}

impl Served {
    fn start(toml: &str, args: &[&str]) -> Served {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let file = dir.path().join("e.toml");
        std::fs::write(&file, toml).expect("the file is written");
        let out = dir.path().join("out");
        let mut child = Command::new(env!("CARGO_BIN_EXE_retrysim"))
            .arg("serve")
            .arg(&file)
            .args(["--listen", "127.0.0.1:0", "--out"])
            .arg(&out)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the binary starts");
        let mut line = String::new();
        let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
        stdout.read_line(&mut line).expect("a first line");
        let ready = std::time::Instant::now();
        let addr = line
            .trim()
            .strip_prefix("listening on http://")
            .unwrap_or_else(|| panic!("serve printed {line:?}"))
            .parse()
            .expect("an address");
        Served { child: Some(child), stdout, addr, ready, out, _dir: dir }
    }

    /// Seconds since serve said it was listening.
    fn since_ready(&self) -> f64 {
        self.ready.elapsed().as_secs_f64()
    }

    /// SIGTERM, then the exit status must be 0; the log and the summary.
    fn stop(mut self) -> (Table, Table, Served) {
        let child = self.child.as_ref().expect("running");
        // SAFETY: signalling our own child by its pid.
        assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
        self.ended();
        let requests = Table::read(&self.out.join("requests.csv"));
        let summary = Table::read(&self.out.join("summary.csv"));
        (requests, summary, self)
    }

    /// Waits for it to end, which must be with status 0.
    fn ended(&mut self) {
        let mut said = String::new();
        self.stdout.read_to_string(&mut said).expect("its stdout");
        let output = self.child.take().expect("running").wait_with_output().expect("serve ends");
        assert!(
            output.status.success(),
            "serve: {:?} {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(said.contains("wrote "), "it says what it wrote: {said}");
    }
}

impl Drop for Served {
    /// A test that failed half-way leaves no server behind.
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// An answer: status and headers (lower-case names).
#[derive(Debug)]
struct Answer {
    status: u16,
    headers: HashMap<String, String>,
    body: String,
}

/// One request on a new connection (`Connection: close`): the answer, or `None` when the
/// connection ends without one.
fn send(addr: SocketAddr, raw: &[u8]) -> Option<Answer> {
    let mut s = TcpStream::connect(addr).expect("connects");
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    // A server that refuses a large body may close before it is all sent: read what it said.
    let _ = s.write_all(raw);
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    let mut lines = head.lines();
    let status = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Some(Answer { status, headers, body: body.to_owned() })
}

fn get(addr: SocketAddr, headers: &[(&str, &str)]) -> Answer {
    let mut raw = format!("GET /op HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        raw += &format!("{k}: {v}\r\n");
    }
    raw += "\r\n";
    send(addr, raw.as_bytes()).expect("an answer")
}

/// Requests sent at once, each on its own connection; their statuses.
fn at_once(addr: SocketAddr, headers: &[&[(&str, &str)]]) -> Vec<u16> {
    std::thread::scope(|s| {
        let sent: Vec<_> = headers.iter().map(|h| s.spawn(move || get(addr, h).status)).collect();
        sent.into_iter().map(|t| t.join().unwrap()).collect()
    })
}

const SCRIPTED: &str = r#"name = "scripted"
seed = 3
horizon = "1m"
[workload]
kind = "closed"
clients = 1
[server]
concurrency = 1
queue = 1
service_time = { dist = "constant", value = "150ms" }
faults = [{ kind = "errors", start = "0s", duration = "1500ms", probability = 1.0, status = 504, after_effect = true }]
[server.idempotency]
ttl = "10m"
on_in_progress = "conflict"
[server.rate_limit]
kind = "fixed-window"
limit = 8
window = "1m"
[client]
max_attempts = 3
[[strategies]]
name = "s"
backoff = { kind = "none" }
"#;

/// The model's answers to the logged requests, replayed through [`Server`] at their logged
/// arrival times, as `model/queue_model.rs` calls it: status and Retry-After (as whole
/// seconds, rounded up) per `seq`.
fn model_answers(toml: &str, log: &Table) -> BTreeMap<u64, (u16, Option<String>)> {
    let exp = load_str(toml, "e.toml", &Overrides::default()).expect("the file loads");
    let plan = retrysim::serve::plan::plan(&exp, "e.toml").expect("servable");
    let mut server = Server::new(plan.server, plan.run_seed);
    let mut rows: Vec<&Vec<String>> = log.rows.iter().collect();
    let at = |r: &Vec<String>| Instant::from_ns((log.num(r, "arrival_s") * 1e9).round() as u64);
    rows.sort_by_key(|r| (at(r), log.num(r, "seq") as u64));
    let mut done: BinaryHeap<std::cmp::Reverse<(Instant, u32)>> = BinaryHeap::new();
    let mut answers = BTreeMap::new();
    let mut keys: HashMap<String, u64> = HashMap::new();
    let answer = |answers: &mut BTreeMap<u64, _>, req: &Request, reply: Reply| {
        let status = match reply.outcome {
            Outcome::Success => 200,
            Outcome::Status(s) => s,
            other => panic!("the script has no {other:?}"),
        };
        let ra = match reply.retry_after.decode() {
            Some(RetryAfter::After(span)) => Some(span.as_ns().div_ceil(1_000_000_000).to_string()),
            _ => None,
        };
        answers.insert(req.attempt as u64, (status, ra));
    };
    let play_until =
        |server: &mut Server, answers: &mut BTreeMap<u64, _>, until: Instant, done: &mut BinaryHeap<_>| {
            while let Some(std::cmp::Reverse((t, worker))) = done.peek().copied()
                && t <= until
            {
                done.pop();
                let (req, _, _) = server.done::<false>(worker, t);
                answer(answers, &req, req.answer);
                while let Some(p) = server.pop_answered() {
                    answer(answers, &p, p.answer);
                }
                while let Some(next) = server.next_waiting::<false>(t) {
                    match next {
                        Next::Started { worker, service, .. } => {
                            done.push(std::cmp::Reverse((t + service, worker)))
                        }
                        Next::Shed(r) => answer(answers, &r, Reply::of(Outcome::Status(SHED_STATUS))),
                        Next::Dropped(_) => panic!("nothing expires"),
                    }
                }
            }
        };
    for r in rows {
        let now = at(r);
        play_until(&mut server, &mut answers, now, &mut done);
        let mut req = Request::new(0, log.num(r, "seq") as u32, Instant::NEVER);
        if log.get(r, "keyed") == "true" {
            let fresh = keys.len() as u64;
            let id = *keys.entry(log.get(r, "op_id").to_owned()).or_insert(fresh);
            req.op = id as u32;
            req.key_tag = KeyTag::new(KeyMode::PerOp, id, 0);
        }
        match server.arrive::<false>(req, now) {
            Arrival::Answered(o) | Arrival::Replayed(o) => answer(&mut answers, &req, o),
            Arrival::Started { worker, service } => done.push(std::cmp::Reverse((now + service, worker))),
            Arrival::Queued | Arrival::Parked => {}
            other => panic!("the script has no {other:?}"),
        }
    }
    play_until(&mut server, &mut answers, Instant::NEVER, &mut done);
    answers
}

#[test]
fn a_scripted_sequence_is_answered_as_the_model_answers_it() {
    let served = Served::start(SCRIPTED, &[]);
    let a = served.addr;
    // In the errors fault [0, 1.5 s): served (the effect happens), then answered 504.
    let first = get(a, &[("Idempotency-Key", "pay-1"), ("X-Attempt", "1")]);
    assert!(served.since_ready() < 1.5, "the first request missed the fault window; the machine is too slow");
    // The server's clock started before it printed its address: past 1.6 s here, it is too.
    while served.since_ready() < 1.6 {
        std::thread::sleep(Duration::from_millis(10));
    }
    // Its retry: the stored success, without the work.
    let retry = get(a, &[("Idempotency-Key", "pay-1"), ("amz-sdk-request", "attempt=2; max=3")]);
    // Two at once with one key: one executes, the other finds it in progress.
    let mut same_key = at_once(a, &[&[("Idempotency-Key", "pay-2")], &[("Idempotency-Key", "pay-2")]]);
    same_key.sort();
    // Three at once without keys, one worker and room for one: the third is rejected.
    let mut crowd = at_once(a, &[&[("X-Op-Id", "a")], &[("X-Op-Id", "b")], &[("X-Op-Id", "c")]]);
    crowd.sort();
    // The 8th request of the minute passes, the 9th is rate-limited.
    let eighth = get(a, &[("X-Op-Id", "d")]);
    let ninth = get(a, &[("X-Op-Id", "e"), ("grpc-previous-rpc-attempts", "0")]);
    let (log, summary, _served) = served.stop();

    assert_eq!((first.status, retry.status), (504, 200));
    assert_eq!(same_key, [200, 409]);
    assert_eq!(crowd, [200, 200, 503]);
    assert_eq!(eighth.status, 200);
    assert_eq!(ninth.status, 429);
    let ra: u64 = ninth.headers["retry-after"].parse().unwrap();
    assert!((58..=60).contains(&ra), "Retry-After {ra}: the window ends a minute after the start");
    // The AWS SDKs read only x-amz-retry-after, in milliseconds: the same value, unrounded.
    let amz_ms: u64 = ninth.headers["x-amz-retry-after"].parse().unwrap();
    assert!(
        amz_ms.div_ceil(1000) == ra && amz_ms > (ra - 1) * 1000,
        "x-amz-retry-after {amz_ms} ms vs {ra} s"
    );
    assert!(!first.headers.contains_key("x-amz-retry-after"), "no Retry-After, no x-amz-retry-after");

    assert_eq!(log.rows.len(), 9, "one row per request");
    let model = model_answers(SCRIPTED, &log);
    for r in &log.rows {
        let seq = log.num(r, "seq") as u64;
        let ra = log.get(r, "retry_after");
        let logged = (log.num(r, "status") as u16, (!ra.is_empty()).then(|| ra.to_owned()));
        assert_eq!(
            logged,
            model[&seq],
            "request {seq} ({:?}) answered otherwise than the model",
            log.get(r, "op_id")
        );
    }
    let pay1: Vec<_> = log.rows.iter().filter(|r| log.get(r, "op_id") == "pay-1").collect();
    let cols = |r: &Vec<String>| ["outcome", "status", "effect", "attempt"].map(|c| log.get(r, c).to_owned());
    assert_eq!(cols(pay1[0]), ["served", "504", "true", "1"]);
    assert_eq!(cols(pay1[1]), ["replayed", "200", "false", "2"]);
    let ninth_row = log.rows.iter().find(|r| log.get(r, "op_id") == "e").unwrap();
    assert_eq!(log.get(ninth_row, "attempt"), "1", "grpc-previous-rpc-attempts 0 is attempt 1");
    assert_eq!(log.get(ninth_row, "retry_after"), ninth.headers["retry-after"]);
    let served_row = log.rows.iter().find(|r| log.get(r, "op_id") == "d").unwrap();
    assert_eq!(log.num(served_row, "service_s"), 0.15, "the constant service time");
    // 9 calls, 7 operations; pay-1's 504 applied its effect, so it succeeded once applied.
    let s = &summary.rows[0];
    assert_eq!(summary.num(s, "server_calls"), 9.0);
    assert_eq!(summary.num(s, "ops"), 7.0);
    assert_eq!(summary.num(s, "duplicates"), 0.0);
    assert_eq!(summary.num(s, "applied"), 5.0, "pay-1, pay-2, a, b, d");
}

const OUTAGE: &str = r#"name = "outage"
horizon = "1m"
[workload]
kind = "closed"
clients = 1
[server]
concurrency = 4
service_time = { dist = "constant", value = "1ms" }
faults = [{ kind = "outage", start = "1s", duration = "1s", status = 503, retry_after = "2s" }]
[client]
max_attempts = 3
[[strategies]]
name = "s"
backoff = { kind = "none" }
"#;

/// The tolerance on the client's clock: the poll interval (30 ms) plus the scheduling of a
/// machine running the rest of the suite on 2 cores. On the server's own clock the check is
/// exact.
const SCHEDULE_TOLERANCE_S: f64 = 0.25;

#[test]
fn an_outage_answers_at_its_scheduled_wall_clock_time() {
    let served = Served::start(OUTAGE, &[]);
    let mut seen = Vec::new();
    while served.since_ready() < 2.4 {
        let sent_at = served.since_ready();
        let a = get(served.addr, &[]);
        seen.push((sent_at, a.status, a.headers.get("retry-after").cloned()));
        std::thread::sleep(Duration::from_millis(30));
    }
    let (log, _, _served) = served.stop();
    // On the server's clock, exactly the arrivals in [1 s, 2 s) are refused, with Retry-After 2.
    for r in &log.rows {
        let t = log.num(r, "arrival_s");
        let in_outage = (1.0..2.0).contains(&t);
        let want = if in_outage { ("503", "2") } else { ("200", "") };
        assert_eq!((log.get(r, "status"), log.get(r, "retry_after")), want, "arrival at {t} s");
    }
    // On the client's clock, within the tolerance.
    let first = seen.iter().find(|s| s.1 == 503).expect("the outage was seen");
    let last = seen.iter().rev().find(|s| s.1 == 503).unwrap();
    assert!((first.0 - 1.0).abs() < SCHEDULE_TOLERANCE_S, "outage seen from {} s", first.0);
    assert!((last.0 - 2.0).abs() < SCHEDULE_TOLERANCE_S, "outage seen until {} s", last.0);
    assert_eq!(first.2.as_deref(), Some("2"));
    assert!(seen.iter().filter(|s| s.1 == 200).count() > 10);
}

#[test]
fn unreadable_requests_get_400_and_the_server_goes_on() {
    let served = Served::start(OUTAGE, &[]);
    let a = served.addr;
    let garbage = send(a, b"GARBAGE\r\n\r\n").expect("an answer");
    assert_eq!(garbage.status, 400);
    let bad = get(a, &[("X-Attempt", "zero")]);
    assert_eq!(bad.status, 400);
    assert!(bad.body.contains("x-attempt") && bad.body.contains("not a whole number"), "{}", bad.body);
    let empty_key = get(a, &[("Idempotency-Key", "")]);
    assert_eq!(empty_key.status, 400);
    assert!(empty_key.body.contains("idempotency-key"), "{}", empty_key.body);
    let mut huge =
        format!("POST /op HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n", 2 << 20);
    huge += &"x".repeat(2 << 20);
    let too_big = send(a, huge.as_bytes());
    assert!(too_big.as_ref().is_none_or(|t| t.status == 400), "{too_big:?}");
    assert_eq!(get(a, &[]).status, 200, "the server still answers");
    let (log, summary, _served) = served.stop();
    let bad_rows = log.rows.iter().filter(|r| log.get(r, "outcome") == "bad-request").count();
    assert!(bad_rows >= 2, "the requests the server read and refused are logged");
    assert_eq!(summary.num(&summary.rows[0], "server_calls"), 1.0, "only the good request reached the model");
}

#[test]
fn sigterm_writes_every_file_and_logs_requests_still_in_service() {
    let slow = OUTAGE.replace("value = \"1ms\"", "value = \"30s\"");
    let served = Served::start(&slow, &[]);
    let a = served.addr;
    // A request that will still be in service at the stop.
    let waiting = std::thread::spawn(move || {
        let raw = format!("GET /slow HTTP/1.1\r\nHost: {a}\r\nX-Op-Id: slow\r\nConnection: close\r\n\r\n");
        send(a, raw.as_bytes())
    });
    std::thread::sleep(Duration::from_millis(300));
    let (log, summary, served) = served.stop();
    let out = &served.out;
    for f in ["requests.csv", "summary.csv", "timeseries.csv"] {
        assert!(out.join(f).exists(), "{f} written");
    }
    let leftovers: Vec<_> = std::fs::read_dir(out).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers.len(), 3, "no temporary file left: {leftovers:?}");
    assert_eq!(log.rows.len(), 1);
    let r = &log.rows[0];
    assert_eq!((log.get(r, "op_id"), log.get(r, "outcome"), log.get(r, "status")), ("slow", "pending", ""));
    assert!(summary.num(&summary.rows[0], "duration_s") > 0.2);
    let _ = waiting.join();
}

#[test]
fn two_thousand_requests_over_200_connections_are_all_answered_and_logged() {
    let load = OUTAGE.replace("concurrency = 4", "concurrency = 16").replace("faults = [", "faults_off = [");
    let load = load.replace("faults_off = [{ kind = \"outage\", start = \"1s\", duration = \"1s\", status = 503, retry_after = \"2s\" }]\n", "");
    let served = Served::start(&load, &[]);
    let a = served.addr;
    let started = std::time::Instant::now();
    let statuses: Vec<u16> = std::thread::scope(|s| {
        let conns: Vec<_> = (0..200)
            .map(|c| {
                s.spawn(move || {
                    (0..10).map(|i| get(a, &[("X-Op-Id", &format!("c{c}-{i}"))]).status).collect::<Vec<_>>()
                })
            })
            .collect();
        conns.into_iter().flat_map(|t| t.join().unwrap()).collect()
    });
    let took = started.elapsed();
    let (log, summary, _served) = served.stop();
    assert_eq!(statuses.len(), 2000);
    assert!(statuses.iter().all(|&s| s == 200), "every request answered 200");
    assert_eq!(log.rows.len(), 2000, "no request lost from the log");
    let mut ops: Vec<&str> = log.column("op_id");
    ops.sort_unstable();
    ops.dedup();
    assert_eq!(ops.len(), 2000);
    let s = &summary.rows[0];
    assert_eq!(
        (summary.num(s, "server_calls"), summary.num(s, "ops"), summary.num(s, "success_rate")),
        (2000.0, 2000.0, 1.0)
    );
    assert!(took < Duration::from_secs(60), "2,000 requests took {took:?}");
}

/// `--for` stops the server by itself; requests.csv is complete.
#[test]
fn for_duration_stops_by_itself() {
    let served = Served::start(OUTAGE, &["--for", "400ms"]);
    assert_eq!(get(served.addr, &[("X-Op-Id", "x")]).status, 200);
    let mut served = served;
    served.ended();
    let log = Table::read(&served.out.join("requests.csv"));
    assert_eq!(log.column("op_id"), ["x"]);
    assert!(served.out.join("summary.csv").exists());
}

/// docs/real-client.md's worked example is a file serve accepts.
#[test]
fn the_documented_example_is_servable() {
    let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/real-client.md")).unwrap();
    let block = page.split("```toml\n").nth(1).expect("a TOML block").split("```").next().unwrap();
    let exp = load_str(block, "docs/real-client.md", &Overrides::default()).expect("the example loads");
    let plan = retrysim::serve::plan::plan(&exp, "docs/real-client.md").expect("serve plays it");
    assert_eq!((plan.server.faults.len(), plan.server.idempotency.is_some()), (2, true));
}

/// nginx's `limit_req` (`leaky-bucket`, rate 1/s, burst 2) holds the requests within the
/// burst at the server and lets them through one per second: of 4 sent at once, one passes,
/// two are held 1 s and 2 s (then served), one is refused with nginx's 503.
#[test]
fn a_delaying_rate_limiter_holds_requests_on_the_wall_clock() {
    let toml = OUTAGE
        .replace(
            "faults = [{ kind = \"outage\", start = \"1s\", duration = \"1s\", status = 503, retry_after = \"2s\" }]\n",
            "",
        )
        .replace("[client]", "[server.rate_limit]\nkind = \"leaky-bucket\"\nrate = 1.0\nburst = 2\n[client]");
    let served = Served::start(&toml, &[]);
    let a = served.addr;
    let mut statuses = at_once(a, &[&[], &[], &[], &[]]);
    statuses.sort();
    let (log, _, _served) = served.stop();
    assert_eq!(statuses, [200, 200, 200, 503]);
    let mut held: Vec<f64> = log.rows.iter().map(|r| log.num(r, "held_s")).collect();
    held.sort_by(f64::total_cmp);
    // Four requests from four threads arrive within a few ms: nginx's milli-request
    // arithmetic makes the holds 1 s and 2 s less the time between arrivals.
    assert_eq!(held[0], 0.0);
    assert_eq!(held[1], 0.0, "the refused one is not held");
    assert!((held[2] - 1.0).abs() < 0.2 && (held[3] - 2.0).abs() < 0.2, "holds {held:?}");
    for r in &log.rows {
        if log.get(r, "status") == "200" {
            let end = log.num(r, "arrival_s")
                + log.num(r, "held_s")
                + log.num(r, "queue_wait_s")
                + log.num(r, "service_s");
            // Sent once held, queued and served, plus the timer's lag (tokio's timers tick in
            // milliseconds).
            let lag = log.num(r, "answered_s") - end;
            assert!((-2e-6..0.05).contains(&lag), "answered {lag} s after the model's instant");
        }
    }
}
