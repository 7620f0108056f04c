//! `POST /api/v1/lineage`: the OpenLineage HTTP transport's endpoint, on loopback TCP
//! and/or a Unix socket, one request per connection.
//!
//! Bounded everywhere, so a flood costs bounded memory and loses nothing: an accepted
//! connection waits in a queue of `[openlineage] queue` for one of a few workers; with
//! the queue full it is answered 503 with Retry-After (by a refuser thread, itself
//! bounded: past that the connection is closed unanswered). A worker reads the request
//! (head and body limited), checks the token in constant time, reads the event, hands it
//! to the engine and answers 200 only once the engine has committed it. A sender that
//! got anything but a 200 sends again, so nothing it sent is lost; the engine keeps an
//! event it already has once.

use std::io::{Read, Write};
use std::sync::mpsc::{sync_channel, Receiver, Sender, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use subtle::ConstantTimeEq;

use super::super::hub::HubMessage;
use crate::engine::lineage_in::EventBatch;
use crate::lineage::openlineage::parse_event;

/// The path the OpenLineage HTTP transport posts to (its `endpoint` default).
pub const PATH: &str = "/api/v1/lineage";
/// The largest body read: an event with schema and SQL facets is rarely over a few
/// hundred KiB.
pub const MAX_BODY: usize = 1024 * 1024;
/// The largest request head.
const MAX_HEAD: usize = 16 * 1024;
/// Workers reading requests and waiting for the engine: each holds one body at most.
const WORKERS: usize = 4;
/// Connections the refuser may hold (each answered 503 in turn).
const REFUSALS: usize = 64;
/// How long a peer may take to send its request, and to read our answer.
const IO_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a worker waits for the engine to commit before answering 503.
const ENGINE_TIMEOUT: Duration = Duration::from_secs(30);

/// A connection, TCP or Unix.
pub trait Conn: Read + Write + Send {
    fn set_timeouts(&self, timeout: Duration);
    /// No more from us: the peer reads our answer to its end.
    fn shut_write(&self);
}

impl Conn for std::net::TcpStream {
    fn set_timeouts(&self, timeout: Duration) {
        let _ = self.set_read_timeout(Some(timeout));
        let _ = self.set_write_timeout(Some(timeout));
    }
    fn shut_write(&self) {
        let _ = self.shutdown(std::net::Shutdown::Write);
    }
}

impl Conn for std::os::unix::net::UnixStream {
    fn set_timeouts(&self, timeout: Duration) {
        let _ = self.set_read_timeout(Some(timeout));
        let _ = self.set_write_timeout(Some(timeout));
    }
    fn shut_write(&self) {
        let _ = self.shutdown(std::net::Shutdown::Write);
    }
}

/// Bytes read and thrown away after answering, at most: a peer still sending a body we
/// refused (too long, no token) would otherwise see the connection reset before it
/// reads the refusal.
const MAX_DRAIN: u64 = 16 * 1024 * 1024;
/// How long the peer may take to send the rest of a refused body and close.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);

type Boxed = Box<dyn Conn>;

/// Where accepted connections go: the workers' queue, or the refuser's.
#[derive(Clone)]
pub struct Intake {
    work: SyncSender<Boxed>,
    refuse: SyncSender<Boxed>,
}

impl Intake {
    /// Start the workers (each answering with `token`, handing events to `hub`) and the
    /// refuser; `queue` connections may wait for a worker.
    pub fn start(queue: usize, token: String, hub: Sender<HubMessage>) -> std::io::Result<Intake> {
        let (work, waiting) = sync_channel::<Boxed>(queue);
        let waiting = Arc::new(Mutex::new(waiting));
        let token = Arc::new(token);
        let hub = Arc::new(Mutex::new(hub));
        for n in 0..WORKERS {
            let (waiting, token, hub) =
                (Arc::clone(&waiting), Arc::clone(&token), Arc::clone(&hub));
            std::thread::Builder::new()
                .name(format!("dataward-openlineage-{n}"))
                .spawn(move || work_on(&waiting, &token, &hub))?;
        }
        let (refuse, refused) = sync_channel::<Boxed>(REFUSALS);
        std::thread::Builder::new()
            .name("dataward-openlineage-busy".into())
            .spawn(move || {
                for mut conn in refused {
                    conn.set_timeouts(Duration::from_secs(1));
                    // Read what was sent (a peer still sending when we close gets a reset
                    // instead of our answer), then say when to come back.
                    let _ = read_request(&mut *conn);
                    let _ = respond(&mut *conn, &Answer::busy());
                }
            })?;
        Ok(Intake { work, refuse })
    }

    /// Queue an accepted connection, or refuse it if the queue is full.
    pub fn take(&self, conn: Boxed) {
        match self.work.try_send(conn) {
            Ok(()) => {}
            Err(TrySendError::Full(conn)) => {
                if self.refuse.try_send(conn).is_err() {
                    tracing::warn!(
                        "OpenLineage listener: queue and refusals full; connection closed"
                    );
                }
            }
            Err(TrySendError::Disconnected(_)) => {}
        }
    }
}

fn work_on(waiting: &Mutex<Receiver<Boxed>>, token: &str, hub: &Mutex<Sender<HubMessage>>) {
    loop {
        let next = waiting.lock().map(|w| w.recv());
        let Ok(Ok(mut conn)) = next else {
            return;
        };
        conn.set_timeouts(IO_TIMEOUT);
        let answer = match read_request(&mut *conn) {
            Ok(request) => answer(request, token, hub),
            Err(answer) => answer,
        };
        if answer.status >= 400 {
            tracing::info!(
                status = answer.status,
                "OpenLineage request refused: {}",
                answer.body
            );
        }
        let _ = respond(&mut *conn, &answer);
    }
}

/// A request as far as the endpoint reads it.
#[derive(Debug)]
struct Request {
    method: String,
    path: String,
    authorization: Option<String>,
    body: Result<Vec<u8>, Answer>,
}

#[derive(Debug, Clone, PartialEq)]
struct Answer {
    status: u16,
    body: String,
    headers: Vec<(&'static str, String)>,
}

impl Answer {
    fn new(status: u16, body: impl Into<String>) -> Answer {
        Answer {
            status,
            body: body.into(),
            headers: Vec::new(),
        }
    }

    fn with(mut self, name: &'static str, value: impl Into<String>) -> Answer {
        self.headers.push((name, value.into()));
        self
    }

    fn busy() -> Answer {
        Answer::new(503, "the engine's queue is full; send again later").with("Retry-After", "1")
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        405 => "Method Not Allowed",
        411 => "Length Required",
        413 => "Payload Too Large",
        415 => "Unsupported Media Type",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "",
    }
}

/// Read the head, then the body it announces (unless too long: the answer says so).
fn read_request(conn: &mut dyn Conn) -> Result<Request, Answer> {
    let mut buffer = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = find(&buffer, b"\r\n\r\n") {
            break at + 4;
        }
        if buffer.len() > MAX_HEAD {
            return Err(Answer::new(
                431,
                format!("the request head is over {MAX_HEAD} bytes"),
            ));
        }
        match conn.read(&mut chunk) {
            Ok(0) | Err(_) => {
                return Err(Answer::new(400, "the request ended before its head did"))
            }
            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
        }
    };
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut parsed = httparse::Request::new(&mut headers);
    match parsed.parse(&buffer[..head_end]) {
        Ok(httparse::Status::Complete(_)) => {}
        _ => return Err(Answer::new(400, "not an HTTP/1.1 request")),
    }
    let header = |name: &str| {
        parsed
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| String::from_utf8_lossy(h.value).trim().to_string())
    };
    let authorization = header("authorization");
    let chunked = header("transfer-encoding").is_some();
    let length = header("content-length");
    // The transport's `compression: gzip` sends a body we do not read: say so rather
    // than call it malformed.
    let encoded = header("content-encoding").filter(|e| !e.eq_ignore_ascii_case("identity"));
    // curl asks before sending a body over 1 KiB, and waits a second for no answer.
    let expects = header("expect").is_some_and(|e| e.eq_ignore_ascii_case("100-continue"));
    let body = match (chunked, length.as_deref().map(str::parse::<usize>)) {
        _ if encoded.is_some() => Err(Answer::new(
            415,
            format!(
                "the body is {}-encoded; send events uncompressed (the transport's \
                 compression off)",
                encoded.unwrap_or_default()
            ),
        )),
        (true, _) | (false, None) => Err(Answer::new(
            411,
            "send the event with a Content-Length (chunked bodies are not read)",
        )),
        (false, Some(Err(_))) => Err(Answer::new(400, "Content-Length is not a number")),
        (false, Some(Ok(length))) if length > MAX_BODY => Err(Answer::new(
            413,
            format!("the body is {length} bytes, over the {MAX_BODY} one event may take"),
        )),
        (false, Some(Ok(length))) => {
            if expects && buffer.len() == head_end {
                let _ = conn.write_all(b"HTTP/1.1 100 Continue\r\n\r\n");
            }
            let mut body = buffer[head_end..].to_vec();
            body.truncate(length);
            let mut rest = Read::take(&mut *conn, (length - body.len()) as u64);
            match rest.read_to_end(&mut body) {
                Ok(_) if body.len() == length => Ok(body),
                _ => Err(Answer::new(400, "the body ended before its Content-Length")),
            }
        }
    };
    Ok(Request {
        method: parsed.method.unwrap_or_default().to_string(),
        path: parsed.path.unwrap_or_default().to_string(),
        authorization,
        body,
    })
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// What a request gets: refused for what it is, or its event kept and 200.
fn answer(request: Request, token: &str, hub: &Mutex<Sender<HubMessage>>) -> Answer {
    let path = request.path.split('?').next().unwrap_or_default();
    if path != PATH {
        return Answer::new(
            404,
            format!("no such endpoint: OpenLineage events go to POST {PATH}"),
        );
    }
    if request.method != "POST" {
        return Answer::new(405, format!("{} {PATH}: only POST", request.method))
            .with("Allow", "POST");
    }
    if !token_matches(request.authorization.as_deref(), token) {
        return Answer::new(
            401,
            "a bearer token is required: Authorization: Bearer TOKEN",
        )
        .with("WWW-Authenticate", "Bearer");
    }
    let body = match request.body {
        Ok(body) => body,
        Err(refused) => return refused,
    };
    let text = match std::str::from_utf8(&body) {
        Ok(text) => text,
        Err(e) => return Answer::new(400, format!("the body is not UTF-8 text ({e})")),
    };
    let event = match parse_event(text) {
        Ok(event) => event,
        Err(e) => return Answer::new(400, format!("not an OpenLineage run event: {e}")),
    };
    let (reply, stored) = std::sync::mpsc::channel();
    let batch = EventBatch {
        events: vec![("http".to_string(), event)],
        file: None,
    };
    let sent = hub
        .lock()
        .map(|hub| hub.send(HubMessage::Lineage(batch, reply)).is_ok())
        .unwrap_or(false);
    if !sent {
        return Answer::busy();
    }
    match stored.recv_timeout(ENGINE_TIMEOUT) {
        Ok(Ok(new)) => Answer::new(200, if new > 0 { "stored" } else { "already stored" }),
        Ok(Err(e)) => {
            tracing::warn!("OpenLineage event not stored: {e:#}");
            Answer::new(500, "the event was not stored; send it again")
        }
        Err(_) => Answer::busy(),
    }
}

/// `Bearer TOKEN`, compared in constant time (for tokens of the same length).
fn token_matches(authorization: Option<&str>, token: &str) -> bool {
    let Some(given) = authorization.and_then(|a| {
        a.strip_prefix("Bearer ")
            .or_else(|| a.strip_prefix("bearer "))
    }) else {
        return false;
    };
    bool::from(given.trim().as_bytes().ct_eq(token.as_bytes()))
}

/// Answer, then read what the peer still sends (bounded) until it closes, so it reads
/// the answer rather than a reset.
fn respond(conn: &mut dyn Conn, answer: &Answer) -> std::io::Result<()> {
    write_answer(conn, answer)?;
    conn.shut_write();
    conn.set_timeouts(DRAIN_TIMEOUT);
    let _ = std::io::copy(&mut Read::take(&mut *conn, MAX_DRAIN), &mut std::io::sink());
    Ok(())
}

fn write_answer(conn: &mut dyn Conn, answer: &Answer) -> std::io::Result<()> {
    let body = serde_json::json!({ "status": answer.status, "message": answer.body }).to_string();
    let mut head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        answer.status,
        reason(answer.status),
        body.len()
    );
    for (name, value) in &answer.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    conn.write_all(head.as_bytes())?;
    conn.write_all(body.as_bytes())?;
    conn.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_match_only_exactly() {
        assert!(token_matches(Some("Bearer s3cret"), "s3cret"));
        assert!(!token_matches(Some("Bearer s3cre"), "s3cret"));
        assert!(!token_matches(Some("Bearer s3cretX"), "s3cret"));
        assert!(!token_matches(Some("Basic s3cret"), "s3cret"));
        assert!(!token_matches(None, "s3cret"));
    }
}
