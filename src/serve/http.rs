//! The HTTP/1.1 front (hyper): accepts connections, reads each request's identity
//! ([`super::headers`]) and body, hands it to the wall-clock server ([`super::live`]) and
//! sends back what it answers. Any method and path are a request to the server. hyper itself
//! answers a request it cannot parse with 400 and closes the connection; a request whose
//! headers [`super::headers`] cannot read, or whose body exceeds [`MAX_BODY`], gets a 400 that
//! says why. Nothing a client sends can stop the server.

use super::Shared;
use super::headers;
use super::log::Row;
use super::response::{Answer, HttpAnswer};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

/// The largest request body read (1 MiB); a larger one is refused with 400.
pub const MAX_BODY: usize = 1 << 20;

/// The connection is closed without an answer (an outage's `"connection-error"`).
#[derive(Debug)]
struct Reset;

impl std::fmt::Display for Reset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection reset by the served fault")
    }
}

impl std::error::Error for Reset {}

/// Accepts connections until the task is dropped. A failed accept (out of file descriptors)
/// is waited out, not fatal.
pub async fn accept(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(_) => {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let shared = Arc::clone(&shared);
        tokio::spawn(async move {
            let service = service_fn(move |req| handle(req, Arc::clone(&shared)));
            // A connection's error (a client gone, a reset answer) ends that connection only.
            let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
        });
    }
}

type Reply = Response<Full<Bytes>>;

async fn handle(req: Request<Incoming>, shared: Arc<Shared>) -> Result<Reply, Reset> {
    let mut row =
        Row { method: req.method().as_str().to_owned(), path: req.uri().path().to_owned(), ..Row::default() };
    let identity = headers::identity(|name| req.headers().get(name).map(|v| v.to_str().map_err(|_| ())));
    let identity = match identity {
        Ok(id) => id,
        Err(bad) => return Ok(bad_request(&shared, row, &bad.to_string())),
    };
    (row.op_id, row.keyed, row.attempt) = (identity.op_id, identity.keyed, identity.attempt);
    // The request arrives once it is all read.
    if let Err(e) = Limited::new(req.into_body(), MAX_BODY).collect().await {
        let reason = format!("cannot read the body ({e}); at most {MAX_BODY} bytes");
        return Ok(bad_request(&shared, row, &reason));
    }
    let (reply_to, answer) = oneshot::channel();
    {
        let mut live = shared.live.lock().unwrap_or_else(|p| p.into_inner());
        let Some(live) = live.as_mut() else { return Ok(stopping()) };
        row.seq = live.next_seq();
        live.arrive(shared.clock.now(), row, reply_to);
    }
    shared.timers_changed.notify_one();
    match answer.await {
        Ok(Answer::Http(a)) => Ok(respond(&a)),
        Ok(Answer::Silence) => std::future::pending().await,
        Ok(Answer::Reset) => Err(Reset),
        // Serve stopped with the request still at the server.
        Err(_) => Ok(stopping()),
    }
}

fn stopping() -> Reply {
    text(StatusCode::SERVICE_UNAVAILABLE, "retrysim serve stopped\n")
}

fn bad_request(shared: &Shared, mut row: Row, reason: &str) -> Reply {
    if let Some(live) = shared.live.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
        row.seq = live.next_seq();
        live.bad_request(row, shared.clock.now());
    }
    text(StatusCode::BAD_REQUEST, &format!("400 Bad Request: {reason}\n"))
}

fn respond(a: &HttpAnswer) -> Reply {
    let status = StatusCode::from_u16(a.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut r = text(status, &format!("{} {}\n", status.as_u16(), status.canonical_reason().unwrap_or("")));
    let h = r.headers_mut();
    if let Some(ra) = &a.retry_after
        && let Ok(v) = ra.parse()
    {
        h.insert(hyper::header::RETRY_AFTER, v);
    }
    if let Some(ms) = a.retry_after_ms {
        h.insert("retry-after-ms", ms.into());
    }
    if let Some(ms) = a.amz_retry_after_ms {
        h.insert("x-amz-retry-after", ms.into());
    }
    if a.dont_retry {
        h.insert("x-retrysim-dont-retry", 1.into());
    }
    r
}

fn text(status: StatusCode, body: &str) -> Reply {
    let mut r = Response::new(Full::new(Bytes::from(body.to_owned())));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("text/plain"));
    r
}
