//! `FakeHttp`: a scripted HTTP/1.1 server on 127.0.0.1 for tests of the V2
//! backend and dashboard clients, plus [`HostMap`], which stands fakes in for
//! the hosts of absolute URLs (`https://app.example.com/...`).
//!
//! The server runs on its own thread with its own Tokio runtime, so it works
//! the same under any test runtime (current-thread, paused time or none) and
//! can be stopped and restarted on the same port to simulate a vendor going
//! down and coming back.
//!
//! Scripting: a map from request path to a list of [`FakeResponse`]s served
//! in order; the last one repeats. A request to a path that is not scripted
//! is recorded and then the connection is closed without an answer (a
//! network error for the client). Every request is recorded
//! ([`RecordedRequest`]): method, path, headers, raw body bytes, parsed JSON.
//!
//! The request reader is our own: request line, headers, a `Content-Length`
//! or chunked body, `Expect: 100-continue`; connections are kept alive unless
//! the client asks for `Connection: close` or the response ends the
//! connection (network error, garbage, 1xx/204/304 statuses). It is
//! stricter and fuller than the vendor fakes' shared reader (`wire`):
//! pipelining, chunked request bodies and header names as sent are what
//! the conformance runner and its clients need.

use serde_json::Value;
use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Process-wide request sequence: orders requests across several fakes.
static SEQUENCE: AtomicU64 = AtomicU64::new(1);

/// Longest request head (request line + headers) the fake accepts.
const MAX_HEAD: usize = 64 * 1024;
/// Largest request body the fake accepts.
const MAX_BODY: usize = 16 * 1024 * 1024;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

// ---------------------------------------------------------------------------
// Responses

/// One scripted answer of the fake server.
#[derive(Debug, Clone, PartialEq)]
pub enum FakeResponse {
    /// `status` with a JSON body (`Content-Type: application/json`).
    Json {
        /// HTTP status code.
        status: u16,
        /// The body, serialized compactly.
        body: Value,
    },
    /// `status` with a raw text body (`Content-Type: text/plain`); an empty
    /// body for a bare `{"status": n}` spec.
    Text {
        /// HTTP status code.
        status: u16,
        /// The raw body.
        body: String,
    },
    /// `status` with arbitrary body bytes and content type.
    Bytes {
        /// HTTP status code.
        status: u16,
        /// The `Content-Type` header value.
        content_type: String,
        /// The raw body.
        body: Vec<u8>,
    },
    /// Read the request, then close the connection without answering.
    NetworkError,
    /// Wait, then answer with the inner response (to test timeouts).
    Delay(Duration, Box<FakeResponse>),
    /// Write these raw bytes instead of a valid response, then close.
    Garbage(Vec<u8>),
}

impl FakeResponse {
    /// `status` with a JSON body.
    pub fn json(status: u16, body: Value) -> Self {
        FakeResponse::Json { status, body }
    }

    /// `status` with a raw text body.
    pub fn text(status: u16, body: impl Into<String>) -> Self {
        FakeResponse::Text {
            status,
            body: body.into(),
        }
    }

    /// `status` with an empty body.
    pub fn status(status: u16) -> Self {
        FakeResponse::text(status, "")
    }

    /// `response`, after waiting `delay`.
    pub fn delay(delay: Duration, response: FakeResponse) -> Self {
        FakeResponse::Delay(delay, Box::new(response))
    }

    /// Parse a conformance response spec (README §8): `{"status": n, "json":
    /// value}`, `{"status": n, "text": "raw"}`, `{"status": n}` (empty body)
    /// or `{"network_error": true}`. Extension: `"delay_s": s` delays any of
    /// them. The status defaults to 200. Unknown keys are an error.
    pub fn from_spec(spec: &Value) -> Result<FakeResponse, String> {
        let obj = spec
            .as_object()
            .ok_or_else(|| format!("a response spec must be an object, got {spec}"))?;
        for key in obj.keys() {
            if !["status", "json", "text", "network_error", "delay_s"].contains(&key.as_str()) {
                return Err(format!("unknown key {key:?} in response spec {spec}"));
            }
        }
        let base = if obj.get("network_error") == Some(&Value::Bool(true)) {
            FakeResponse::NetworkError
        } else {
            let status = match obj.get("status") {
                None => 200,
                Some(s) => s
                    .as_u64()
                    .and_then(|n| u16::try_from(n).ok())
                    .ok_or_else(|| format!("bad status {s} in response spec"))?,
            };
            match (obj.get("json"), obj.get("text")) {
                (Some(_), Some(_)) => {
                    return Err(format!("response spec has both json and text: {spec}"))
                }
                (Some(j), None) => FakeResponse::json(status, j.clone()),
                (None, Some(t)) => FakeResponse::text(
                    status,
                    t.as_str()
                        .ok_or_else(|| format!("text must be a string in {spec}"))?,
                ),
                (None, None) => FakeResponse::status(status),
            }
        };
        match obj.get("delay_s") {
            None => Ok(base),
            Some(d) => {
                let secs = d
                    .as_f64()
                    .filter(|s| s.is_finite() && *s >= 0.0)
                    .ok_or_else(|| format!("bad delay_s {d} in response spec"))?;
                Ok(FakeResponse::delay(Duration::from_secs_f64(secs), base))
            }
        }
    }

    /// Parse one response spec or a list of them (served in order, the last
    /// repeating). An empty list is an error.
    pub fn list_from_spec(spec: &Value) -> Result<Vec<FakeResponse>, String> {
        let list = match spec {
            Value::Array(items) => items
                .iter()
                .map(FakeResponse::from_spec)
                .collect::<Result<Vec<_>, _>>()?,
            other => vec![FakeResponse::from_spec(other)?],
        };
        if list.is_empty() {
            return Err("an empty list of responses".into());
        }
        Ok(list)
    }
}

// ---------------------------------------------------------------------------
// Recorded requests

/// One request the fake received.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// Process-wide arrival order (comparable across fakes).
    pub seq: u64,
    /// The fake's base URL, `http://127.0.0.1:PORT`.
    pub origin: String,
    /// Request method, e.g. `POST`.
    pub method: String,
    /// Request target as sent (path and query), e.g. `/webhook/retell/lookup_caller`.
    pub path: String,
    /// Headers in arrival order, names as sent.
    pub headers: Vec<(String, String)>,
    /// The raw body bytes.
    pub body: Vec<u8>,
    /// The body parsed as JSON, when it is JSON.
    pub json: Option<Value>,
}

impl RecordedRequest {
    /// The first header with this name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The loopback URL the request was sent to.
    pub fn url(&self) -> String {
        format!("{}{}", self.origin, self.path)
    }

    /// The body as text (lossy UTF-8).
    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

// ---------------------------------------------------------------------------
// The server

#[derive(Default)]
struct Route {
    responses: Vec<FakeResponse>,
    served: usize,
}

#[derive(Default)]
struct Shared {
    routes: Mutex<HashMap<String, Route>>,
    requests: Mutex<Vec<RecordedRequest>>,
}

impl Shared {
    /// The next scripted response for a request target: exact match first,
    /// then the path without its query. `None`: not scripted.
    fn next_response(&self, target: &str) -> Option<FakeResponse> {
        let mut routes = lock(&self.routes);
        let key = if routes.contains_key(target) {
            target.to_string()
        } else {
            let path = target.split('?').next().unwrap_or(target);
            if routes.contains_key(path) {
                path.to_string()
            } else {
                return None;
            }
        };
        let route = routes.get_mut(&key)?;
        let last = route.responses.len().checked_sub(1)?;
        let r = route.responses.get(route.served.min(last)).cloned();
        route.served = route.served.saturating_add(1);
        r
    }
}

struct Running {
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Running {
    fn stop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A scripted loopback HTTP/1.1 server. Dropping it stops it.
pub struct FakeHttp {
    port: u16,
    shared: Arc<Shared>,
    running: Mutex<Option<Running>>,
}

impl std::fmt::Debug for FakeHttp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeHttp")
            .field("url", &self.url())
            .field("running", &self.is_running())
            .finish()
    }
}

impl FakeHttp {
    /// Start a fake on a free loopback port. Panics (test-only code) when no
    /// loopback port can be bound; see [`FakeHttp::try_start`].
    pub fn start() -> FakeHttp {
        match FakeHttp::try_start() {
            Ok(f) => f,
            Err(e) => panic!("FakeHttp: cannot listen on 127.0.0.1: {e}"),
        }
    }

    /// Start a fake on a free loopback port.
    pub fn try_start() -> io::Result<FakeHttp> {
        let listener = std::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))?;
        let port = listener.local_addr()?.port();
        let shared = Arc::new(Shared::default());
        let running = spawn_server(listener, port, shared.clone())?;
        Ok(FakeHttp {
            port,
            shared,
            running: Mutex::new(Some(running)),
        })
    }

    /// `http://127.0.0.1:PORT` (no trailing slash).
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The loopback port (kept across [`FakeHttp::restart`]).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Script `path` (e.g. `/webhook/retell/lookup_caller`; a query may be
    /// included to match only that query) with responses served in order, the
    /// last one repeating. Replaces an earlier script for the path and
    /// restarts its sequence. An empty list unscripts the path.
    pub fn set(&self, path: &str, responses: Vec<FakeResponse>) {
        let mut routes = lock(&self.shared.routes);
        if responses.is_empty() {
            routes.remove(path);
        } else {
            routes.insert(
                path.to_string(),
                Route {
                    responses,
                    served: 0,
                },
            );
        }
    }

    /// Remove every script (all paths then answer like a network error).
    pub fn clear_routes(&self) {
        lock(&self.shared.routes).clear();
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).clone()
    }

    /// Requests received so far to this path (query ignored).
    pub fn requests_to(&self, path: &str) -> Vec<RecordedRequest> {
        lock(&self.shared.requests)
            .iter()
            .filter(|r| r.path.split('?').next() == Some(path))
            .cloned()
            .collect()
    }

    /// Number of requests received so far.
    pub fn request_count(&self) -> usize {
        lock(&self.shared.requests).len()
    }

    /// Number of requests received so far to this path (query ignored).
    pub fn count(&self, path: &str) -> usize {
        lock(&self.shared.requests)
            .iter()
            .filter(|r| r.path.split('?').next() == Some(path))
            .count()
    }

    /// Forget the recorded requests.
    pub fn clear_requests(&self) {
        lock(&self.shared.requests).clear();
    }

    /// Whether the server is accepting connections.
    pub fn is_running(&self) -> bool {
        lock(&self.running).is_some()
    }

    /// Stop listening and drop every open connection (in-flight requests
    /// fail). Scripts and recorded requests are kept. Idempotent.
    ///
    /// Like a real server restart, this leaves clients with pooled
    /// connections that are now closed. A client on a current-thread runtime
    /// that was blocked in `stop`/`restart` has not yet noticed: let it run
    /// once (`tokio::task::yield_now().await`) before its next request, or
    /// that request may fail with "connection closed before message
    /// completed" without reaching the fake.
    pub fn stop(&self) {
        let running = lock(&self.running).take();
        if let Some(mut r) = running {
            r.stop();
        }
    }

    /// Listen again on the same port after [`FakeHttp::stop`] (a no-op when
    /// running). Retries briefly while the port is still being released.
    pub fn restart(&self) -> io::Result<()> {
        let mut running = lock(&self.running);
        if running.is_some() {
            return Ok(());
        }
        let addr = SocketAddr::from(([127, 0, 0, 1], self.port));
        let mut last_err = None;
        for _ in 0..50 {
            match std::net::TcpListener::bind(addr) {
                Ok(listener) => {
                    *running = Some(spawn_server(listener, self.port, self.shared.clone())?);
                    return Ok(());
                }
                Err(e) => {
                    last_err = Some(e);
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        }
        Err(last_err.unwrap_or_else(|| io::Error::other("cannot rebind")))
    }
}

impl Drop for FakeHttp {
    fn drop(&mut self) {
        self.stop();
    }
}

fn spawn_server(
    listener: std::net::TcpListener,
    port: u16,
    shared: Arc<Shared>,
) -> io::Result<Running> {
    listener.set_nonblocking(true)?;
    let (tx, mut rx) = tokio::sync::oneshot::channel::<()>();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<io::Result<()>>();
    let origin = format!("http://127.0.0.1:{port}");
    // The runtime is built, used and dropped on the server thread only, so
    // starting and stopping work from inside any async test.
    let thread = std::thread::Builder::new()
        .name(format!("fake-http-{port}"))
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return;
                }
            };
            runtime.block_on(async move {
                let listener = match TcpListener::from_std(listener) {
                    Ok(l) => l,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let _ = ready_tx.send(Ok(()));
                loop {
                    tokio::select! {
                        _ = &mut rx => break,
                        accepted = listener.accept() => match accepted {
                            Ok((sock, _)) => {
                                tokio::spawn(serve_connection(sock, shared.clone(), origin.clone()));
                            }
                            Err(_) => tokio::time::sleep(Duration::from_millis(5)).await,
                        },
                    }
                }
            });
            // Dropping the runtime cancels every connection task and closes
            // their sockets; the listener is already closed.
            drop(runtime);
        })?;
    match ready_rx.recv() {
        Ok(Ok(())) => Ok(Running {
            shutdown: Some(tx),
            thread: Some(thread),
        }),
        Ok(Err(e)) => {
            let _ = thread.join();
            Err(e)
        }
        Err(_) => {
            let _ = thread.join();
            Err(io::Error::other(
                "the fake server thread ended during start-up",
            ))
        }
    }
}

async fn serve_connection(mut sock: TcpStream, shared: Arc<Shared>, origin: String) {
    let _ = sock.set_nodelay(true);
    let mut buf = Vec::new();
    loop {
        let req = match read_request(&mut sock, &mut buf).await {
            Ok(Some(r)) => r,
            // Clean end of the connection, or a request we cannot parse:
            // close (the client sees a network error).
            Ok(None) | Err(_) => return,
        };
        let client_close = req
            .header("connection")
            .is_some_and(|v| v.to_ascii_lowercase().contains("close"));
        let response = shared.next_response(&req.target);
        let json = serde_json::from_slice::<Value>(&req.body).ok();
        lock(&shared.requests).push(RecordedRequest {
            seq: SEQUENCE.fetch_add(1, Ordering::SeqCst),
            origin: origin.clone(),
            method: req.method,
            path: req.target,
            headers: req.headers,
            body: req.body,
            json,
        });
        let Some(response) = response else { return };
        let keep = write_response(&mut sock, response, !client_close).await;
        if !keep {
            let _ = sock.shutdown().await;
            return;
        }
    }
}

/// Write `response`; `Ok(true)` when the connection may be reused.
async fn write_response(
    sock: &mut TcpStream,
    mut response: FakeResponse,
    keep_alive: bool,
) -> bool {
    loop {
        match response {
            FakeResponse::Delay(d, inner) => {
                tokio::time::sleep(d).await;
                response = *inner;
            }
            FakeResponse::NetworkError => return false,
            FakeResponse::Garbage(bytes) => {
                let _ = sock.write_all(&bytes).await;
                let _ = sock.flush().await;
                return false;
            }
            FakeResponse::Json { status, body } => {
                let bytes = serde_json::to_vec(&body).unwrap_or_default();
                return write_full(sock, status, "application/json", &bytes, keep_alive).await;
            }
            FakeResponse::Text { status, body } => {
                return write_full(
                    sock,
                    status,
                    "text/plain; charset=utf-8",
                    body.as_bytes(),
                    keep_alive,
                )
                .await;
            }
            FakeResponse::Bytes {
                status,
                content_type,
                body,
            } => return write_full(sock, status, &content_type, &body, keep_alive).await,
        }
    }
}

async fn write_full(
    sock: &mut TcpStream,
    status: u16,
    content_type: &str,
    body: &[u8],
    keep_alive: bool,
) -> bool {
    // Statuses without a body (or interim ones) end the connection so the
    // body bytes can never be misread as the next response.
    let keep = keep_alive && status >= 200 && status != 204 && status != 304;
    let out = super::wire::sized_response(status, content_type, body, keep);
    super::wire::write(sock, &out).await && keep
}

// ---------------------------------------------------------------------------
// Request reader

struct ParsedRequest {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl ParsedRequest {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn bad(msg: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.to_string())
}

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|i| i + from)
}

/// Read more bytes into `buf`; an error on EOF.
async fn fill(sock: &mut TcpStream, buf: &mut Vec<u8>) -> io::Result<()> {
    let mut chunk = [0u8; 8192];
    let n = sock.read(&mut chunk).await?;
    if n == 0 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "connection closed mid-request",
        ));
    }
    buf.extend_from_slice(&chunk[..n]);
    Ok(())
}

/// Read one request from the connection. `Ok(None)`: the client closed the
/// connection cleanly between requests. Bytes after the request stay in
/// `buf` (pipelining).
async fn read_request(
    sock: &mut TcpStream,
    buf: &mut Vec<u8>,
) -> io::Result<Option<ParsedRequest>> {
    let head_end = loop {
        if let Some(i) = find(buf, b"\r\n\r\n", 0) {
            break i + 4;
        }
        if buf.len() > MAX_HEAD {
            return Err(bad("request head too long"));
        }
        let mut chunk = [0u8; 8192];
        let n = sock.read(&mut chunk).await?;
        if n == 0 {
            return if buf.is_empty() {
                Ok(None)
            } else {
                Err(bad("connection closed mid-head"))
            };
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = std::str::from_utf8(&buf[..head_end]).map_err(|_| bad("head is not UTF-8"))?;
    let mut lines = head.split("\r\n");
    let request_line = lines.next().ok_or_else(|| bad("no request line"))?;
    let mut parts = request_line.split(' ');
    let method = parts.next().filter(|m| !m.is_empty());
    let target = parts.next().filter(|t| !t.is_empty());
    let version = parts.next();
    let (Some(method), Some(target), Some(version)) = (method, target, version) else {
        return Err(bad("malformed request line"));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(bad("not HTTP/1.x"));
    }
    let mut headers = Vec::new();
    for line in lines.filter(|l| !l.is_empty()) {
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| bad("malformed header"))?;
        headers.push((name.trim().to_string(), value.trim().to_string()));
    }
    let mut req = ParsedRequest {
        method: method.to_string(),
        target: target.to_string(),
        headers,
        body: Vec::new(),
    };
    if req
        .header("expect")
        .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"))
    {
        sock.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").await?;
    }
    let chunked = req
        .header("transfer-encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    let consumed = if chunked {
        read_chunked(sock, buf, head_end, &mut req.body).await?
    } else {
        let len = match req.header("content-length") {
            None => 0,
            Some(v) => v.parse::<usize>().map_err(|_| bad("bad Content-Length"))?,
        };
        if len > MAX_BODY {
            return Err(bad("request body too large"));
        }
        let end = head_end + len;
        while buf.len() < end {
            fill(sock, buf).await?;
        }
        req.body = buf[head_end..end].to_vec();
        end
    };
    buf.drain(..consumed);
    Ok(Some(req))
}

/// Decode a chunked body starting at `pos`; returns the end offset.
async fn read_chunked(
    sock: &mut TcpStream,
    buf: &mut Vec<u8>,
    mut pos: usize,
    body: &mut Vec<u8>,
) -> io::Result<usize> {
    loop {
        let line_end = loop {
            if let Some(i) = find(buf, b"\r\n", pos) {
                break i;
            }
            if buf.len() - pos > 1024 {
                return Err(bad("chunk size line too long"));
            }
            fill(sock, buf).await?;
        };
        let line = std::str::from_utf8(&buf[pos..line_end]).map_err(|_| bad("bad chunk size"))?;
        let size_text = line.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_text, 16).map_err(|_| bad("bad chunk size"))?;
        pos = line_end + 2;
        if size == 0 {
            // Trailers, then an empty line.
            loop {
                let end = loop {
                    if let Some(i) = find(buf, b"\r\n", pos) {
                        break i;
                    }
                    if buf.len() - pos > MAX_HEAD {
                        return Err(bad("trailers too long"));
                    }
                    fill(sock, buf).await?;
                };
                let empty = end == pos;
                pos = end + 2;
                if empty {
                    return Ok(pos);
                }
            }
        }
        if body.len() + size > MAX_BODY {
            return Err(bad("request body too large"));
        }
        while buf.len() < pos + size + 2 {
            fill(sock, buf).await?;
        }
        body.extend_from_slice(&buf[pos..pos + size]);
        if &buf[pos + size..pos + size + 2] != b"\r\n" {
            return Err(bad("chunk not terminated"));
        }
        pos += size + 2;
    }
}

// ---------------------------------------------------------------------------
// Host mapping

/// Split an absolute `http(s)` URL into its origin (`scheme://host[:port]`,
/// normalized: lowercase host, default port dropped) and its path with query
/// (at least `/`).
pub fn split_url(url: &str) -> Result<(String, String), String> {
    let u = reqwest::Url::parse(url).map_err(|e| format!("bad URL {url:?}: {e}"))?;
    if !matches!(u.scheme(), "http" | "https") {
        return Err(format!("URL {url:?} is not http or https"));
    }
    let host = u
        .host_str()
        .ok_or_else(|| format!("URL {url:?} has no host"))?;
    let origin = match u.port() {
        Some(p) => format!("{}://{host}:{p}", u.scheme()),
        None => format!("{}://{host}", u.scheme()),
    };
    let mut path = u.path().to_string();
    if path.is_empty() {
        path.push('/');
    }
    if let Some(q) = u.query() {
        path.push('?');
        path.push_str(q);
    }
    Ok((origin, path))
}

/// A request mapped back to the logical URL the client was configured with.
#[derive(Debug, Clone, PartialEq)]
pub struct MappedRequest {
    /// The logical URL, e.g. `https://app.example.com/api/webhook/jobs`.
    pub url: String,
    /// What the fake recorded.
    pub request: RecordedRequest,
}

/// One [`FakeHttp`] per logical origin (`scheme://host[:port]`): tests and
/// the conformance runner configure clients with [`HostMap::local_url`]
/// instead of the real URL, script responses by logical URL, and read the
/// recorded requests back with their logical URLs.
#[derive(Debug, Default)]
pub struct HostMap {
    hosts: Vec<(String, FakeHttp)>,
}

impl HostMap {
    /// An empty map (no fakes started yet).
    pub fn new() -> Self {
        HostMap::default()
    }

    fn index_for(&mut self, origin: &str) -> Result<usize, String> {
        if let Some(i) = self.hosts.iter().position(|(o, _)| o == origin) {
            return Ok(i);
        }
        let fake = FakeHttp::try_start()
            .map_err(|e| format!("cannot start a fake server for {origin}: {e}"))?;
        self.hosts.push((origin.to_string(), fake));
        Ok(self.hosts.len() - 1)
    }

    /// The loopback URL standing in for `logical_url` (same path and query),
    /// starting a fake for its origin if there is none yet.
    pub fn local_url(&mut self, logical_url: &str) -> Result<String, String> {
        let (origin, path) = split_url(logical_url)?;
        let i = self.index_for(&origin)?;
        Ok(format!("{}{path}", self.hosts[i].1.url()))
    }

    /// Script the responses for an absolute logical URL.
    pub fn set(&mut self, logical_url: &str, responses: Vec<FakeResponse>) -> Result<(), String> {
        let (origin, path) = split_url(logical_url)?;
        let i = self.index_for(&origin)?;
        self.hosts[i].1.set(&path, responses);
        Ok(())
    }

    /// Load a conformance `server` map (README §8): keys are absolute URLs
    /// or paths relative to `base_url`; values are a response spec or a list
    /// of them ([`FakeResponse::list_from_spec`]).
    pub fn load_server(&mut self, base_url: Option<&str>, server: &Value) -> Result<(), String> {
        let map = server
            .as_object()
            .ok_or_else(|| format!("server must be an object, got {server}"))?;
        for (key, spec) in map {
            let url = if key.starts_with('/') {
                let base =
                    base_url.ok_or_else(|| format!("server path {key:?} needs a base_url"))?;
                format!("{}{key}", base.trim_end_matches('/'))
            } else {
                key.clone()
            };
            let responses = FakeResponse::list_from_spec(spec)
                .map_err(|e| format!("server entry {key:?}: {e}"))?;
            self.set(&url, responses)?;
        }
        Ok(())
    }

    /// Remove every script on every fake (recorded requests are kept).
    pub fn clear_routes(&self) {
        for (_, f) in &self.hosts {
            f.clear_routes();
        }
    }

    /// The fake standing in for the origin of `logical_url`, if started.
    pub fn fake(&self, logical_url: &str) -> Option<&FakeHttp> {
        let (origin, _) = split_url(logical_url).ok()?;
        self.hosts
            .iter()
            .find(|(o, _)| *o == origin)
            .map(|(_, f)| f)
    }

    /// The logical origins and their fakes.
    pub fn fakes(&self) -> impl Iterator<Item = (&str, &FakeHttp)> {
        self.hosts.iter().map(|(o, f)| (o.as_str(), f))
    }

    /// The logical URL of a recorded request (its loopback URL when the
    /// request came from a fake this map does not know).
    pub fn logical_url(&self, req: &RecordedRequest) -> String {
        match self.hosts.iter().find(|(_, f)| f.url() == req.origin) {
            Some((origin, _)) => format!("{origin}{}", req.path),
            None => req.url(),
        }
    }

    /// Translate a loopback URL of one of the fakes back to its logical URL
    /// (unchanged when it belongs to no fake).
    pub fn to_logical(&self, local_url: &str) -> String {
        for (origin, f) in &self.hosts {
            if let Some(rest) = local_url.strip_prefix(&f.url()) {
                if rest.is_empty() || rest.starts_with('/') || rest.starts_with('?') {
                    return format!("{origin}{rest}");
                }
            }
        }
        local_url.to_string()
    }

    /// Every request received by every fake, in arrival order, with logical URLs.
    pub fn requests(&self) -> Vec<MappedRequest> {
        let mut all: Vec<MappedRequest> = self
            .hosts
            .iter()
            .flat_map(|(origin, f)| {
                f.requests().into_iter().map(move |r| MappedRequest {
                    url: format!("{origin}{}", r.path),
                    request: r,
                })
            })
            .collect();
        all.sort_by_key(|m| m.request.seq);
        all
    }

    /// Total number of requests received by all fakes.
    pub fn request_count(&self) -> usize {
        self.hosts.iter().map(|(_, f)| f.request_count()).sum()
    }

    /// Stop every fake (vendors down).
    pub fn stop_all(&self) {
        for (_, f) in &self.hosts {
            f.stop();
        }
    }

    /// Restart every stopped fake on its port.
    pub fn restart_all(&self) -> io::Result<()> {
        for (_, f) in &self.hosts {
            f.restart()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::io::{Read, Write};

    fn connect(fake: &FakeHttp) -> std::net::TcpStream {
        let s = std::net::TcpStream::connect(("127.0.0.1", fake.port())).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s
    }

    /// Read one response with a Content-Length body from a kept-alive socket.
    fn read_response(sock: &mut std::net::TcpStream) -> String {
        let mut buf = Vec::new();
        let mut byte = [0u8; 1];
        while find(&buf, b"\r\n\r\n", 0).is_none() {
            assert_eq!(sock.read(&mut byte).unwrap(), 1, "EOF in head");
            buf.push(byte[0]);
        }
        let head = String::from_utf8(buf.clone()).unwrap();
        let len: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("Content-Length: "))
            .unwrap()
            .parse()
            .unwrap();
        let mut body = vec![0u8; len];
        sock.read_exact(&mut body).unwrap();
        head + &String::from_utf8(body).unwrap()
    }

    #[test]
    fn keep_alive_pipelining_and_the_last_response_repeats() {
        let fake = FakeHttp::start();
        fake.set(
            "/a",
            vec![
                FakeResponse::json(200, json!({"n": 1})),
                FakeResponse::text(503, "busy"),
            ],
        );
        let mut sock = connect(&fake);
        // Two requests in one write (pipelined), then a third.
        sock.write_all(
            b"POST /a HTTP/1.1\r\nContent-Length: 3\r\n\r\n[1]GET /a?x=1 HTTP/1.1\r\n\r\n",
        )
        .unwrap();
        let first = read_response(&mut sock);
        assert!(first.starts_with("HTTP/1.1 200 OK\r\n"), "{first}");
        assert!(first.contains("Connection: keep-alive") && first.ends_with("{\"n\":1}"));
        let second = read_response(&mut sock);
        assert!(
            second.starts_with("HTTP/1.1 503 Service Unavailable\r\n") && second.ends_with("busy")
        );
        sock.write_all(b"POST /a HTTP/1.1\r\ncontent-length: 0\r\n\r\n")
            .unwrap();
        assert!(read_response(&mut sock).ends_with("busy"));
        let reqs = fake.requests();
        assert_eq!(reqs.len(), 3);
        assert_eq!(reqs[0].json, Some(json!([1])));
        assert_eq!(reqs[1].method, "GET");
        assert_eq!(reqs[1].path, "/a?x=1");
        assert!(reqs[0].seq < reqs[1].seq && reqs[1].seq < reqs[2].seq);
        assert_eq!(fake.count("/a"), 3);
    }

    #[test]
    fn chunked_bodies_and_expect_continue_are_read() {
        let fake = FakeHttp::start();
        fake.set("/c", vec![FakeResponse::json(200, json!({}))]);
        let mut sock = connect(&fake);
        sock.write_all(
            b"POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\nX-Mixed-Case: v\r\n\r\n4;ext=1\r\n{\"a\"\r\n4\r\n: 1}\r\n0\r\nTrailer: t\r\n\r\n",
        )
        .unwrap();
        assert!(read_response(&mut sock).starts_with("HTTP/1.1 200"));
        sock.write_all(b"POST /c HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n")
            .unwrap();
        let mut cont = [0u8; 25];
        sock.read_exact(&mut cont).unwrap();
        assert_eq!(&cont, b"HTTP/1.1 100 Continue\r\n\r\n");
        sock.write_all(b"{}").unwrap();
        assert!(read_response(&mut sock).starts_with("HTTP/1.1 200"));
        let reqs = fake.requests();
        assert_eq!(reqs[0].body, b"{\"a\": 1}");
        assert_eq!(reqs[0].json, Some(json!({"a": 1})));
        assert_eq!(reqs[0].header("x-mixed-case"), Some("v"));
        assert_eq!(reqs[0].header("X-MIXED-CASE"), Some("v"));
        assert_eq!(reqs[1].body_text(), "{}");
    }

    #[test]
    fn unknown_paths_network_errors_and_garbage_close_the_connection() {
        let fake = FakeHttp::start();
        fake.set("/net", vec![FakeResponse::NetworkError]);
        fake.set("/junk", vec![FakeResponse::Garbage(b"\x00junk".to_vec())]);
        for (path, expect) in [("/nope", &b""[..]), ("/net", b""), ("/junk", b"\x00junk")] {
            let mut sock = connect(&fake);
            write!(sock, "POST {path} HTTP/1.1\r\nContent-Length: 0\r\n\r\n").unwrap();
            let mut out = Vec::new();
            let _ = sock.read_to_end(&mut out);
            assert_eq!(out, expect, "{path}");
        }
        assert_eq!(fake.request_count(), 3);
        // A malformed request is not recorded and closes the connection.
        let mut sock = connect(&fake);
        sock.write_all(b"garbage\r\n\r\n").unwrap();
        let mut out = Vec::new();
        let _ = sock.read_to_end(&mut out);
        assert!(out.is_empty());
        assert_eq!(fake.request_count(), 3);
    }

    #[test]
    fn stop_and_restart_keep_the_port_scripts_and_records() {
        let fake = FakeHttp::start();
        let port = fake.port();
        fake.set("/x", vec![FakeResponse::status(204)]);
        let mut s = connect(&fake);
        s.write_all(b"GET /x HTTP/1.1\r\n\r\n").unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        assert!(out.starts_with("HTTP/1.1 204"), "{out}");
        assert!(out.contains("Connection: close"), "{out}");
        fake.stop();
        fake.stop();
        assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
        fake.restart().unwrap();
        assert_eq!(fake.port(), port);
        assert!(fake.is_running());
        let mut s = connect(&fake);
        s.write_all(b"GET /x HTTP/1.1\r\n\r\n").unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        assert!(out.starts_with("HTTP/1.1 204"), "{out}");
        assert_eq!(fake.request_count(), 2);
        fake.clear_requests();
        assert_eq!(fake.request_count(), 0);
    }

    #[test]
    fn response_specs() {
        assert_eq!(
            FakeResponse::from_spec(&json!({"status": 200, "json": {"a": 1}})),
            Ok(FakeResponse::json(200, json!({"a": 1})))
        );
        assert_eq!(
            FakeResponse::from_spec(&json!({"status": 500})),
            Ok(FakeResponse::status(500))
        );
        assert_eq!(
            FakeResponse::from_spec(&json!({"status": 200, "text": "raw"})),
            Ok(FakeResponse::text(200, "raw"))
        );
        assert_eq!(
            FakeResponse::from_spec(&json!({"network_error": true})),
            Ok(FakeResponse::NetworkError)
        );
        assert_eq!(
            FakeResponse::from_spec(&json!({"status": 200, "delay_s": 0.5})),
            Ok(FakeResponse::delay(
                Duration::from_millis(500),
                FakeResponse::status(200)
            ))
        );
        assert!(FakeResponse::from_spec(&json!({"status": 200, "body": 1})).is_err());
        assert!(FakeResponse::from_spec(&json!({"status": 70000})).is_err());
        assert!(FakeResponse::from_spec(&json!({"status": 200, "json": 1, "text": ""})).is_err());
        assert!(FakeResponse::from_spec(&json!([])).is_err());
        assert!(FakeResponse::list_from_spec(&json!([])).is_err());
        assert_eq!(
            FakeResponse::list_from_spec(&json!([{"status": 503}, {"status": 200}]))
                .map(|l| l.len()),
            Ok(2)
        );
    }

    #[test]
    fn split_url_normalizes() {
        assert_eq!(
            split_url("https://App.Example.com:443/api/x?q=1"),
            Ok(("https://app.example.com".into(), "/api/x?q=1".into()))
        );
        assert_eq!(
            split_url("http://h.example.com:8080"),
            Ok(("http://h.example.com:8080".into(), "/".into()))
        );
        assert!(split_url("ftp://x/").is_err());
        assert!(split_url("/relative").is_err());
    }

    #[test]
    fn host_map_maps_hosts_to_fakes_and_back() {
        let mut hosts = HostMap::new();
        hosts
            .load_server(
                Some("https://v2.example.com/"),
                &json!({
                    "/webhook/retell/lookup_caller": {"status": 200, "json": {"found": false}},
                    "https://app.example.com/api/webhook/jobs": [{"status": 503}, {"status": 200, "json": {}}],
                }),
            )
            .unwrap();
        let v2 = hosts.local_url("https://v2.example.com").unwrap();
        let jobs = hosts
            .local_url("https://app.example.com/api/webhook/jobs")
            .unwrap();
        let calls = hosts
            .local_url("https://app.example.com/api/webhook/calls")
            .unwrap();
        assert_eq!(hosts.fakes().count(), 2, "one fake per host");
        assert!(v2.starts_with("http://127.0.0.1:") && v2.ends_with('/'));
        assert!(jobs.ends_with("/api/webhook/jobs"));
        assert_eq!(
            jobs.trim_end_matches("/api/webhook/jobs"),
            calls.trim_end_matches("/api/webhook/calls")
        );
        assert_eq!(
            hosts.to_logical(&calls),
            "https://app.example.com/api/webhook/calls"
        );
        assert_eq!(hosts.to_logical("http://elsewhere/x"), "http://elsewhere/x");

        let post = |url: &str| {
            let (origin, path) = split_url(url).unwrap();
            let port: u16 = origin.rsplit(':').next().unwrap().parse().unwrap();
            let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
            write!(
                s,
                "POST {path} HTTP/1.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            )
            .unwrap();
            let mut out = String::new();
            let _ = s.read_to_string(&mut out);
            out
        };
        assert!(post(&jobs).starts_with("HTTP/1.1 503"));
        assert!(post(&format!("{v2}webhook/retell/lookup_caller")).starts_with("HTTP/1.1 200"));
        assert!(post(&jobs).starts_with("HTTP/1.1 200"));
        assert_eq!(post(&calls), "", "not scripted: closed");
        let urls: Vec<String> = hosts.requests().into_iter().map(|m| m.url).collect();
        assert_eq!(
            urls,
            [
                "https://app.example.com/api/webhook/jobs",
                "https://v2.example.com/webhook/retell/lookup_caller",
                "https://app.example.com/api/webhook/jobs",
                "https://app.example.com/api/webhook/calls",
            ]
        );
        let first = &hosts.requests()[1].request;
        assert_eq!(
            hosts.logical_url(first),
            "https://v2.example.com/webhook/retell/lookup_caller"
        );
        assert_eq!(hosts.request_count(), 4);
        hosts.clear_routes();
        assert_eq!(post(&jobs), "");
        assert!(hosts
            .load_server(None, &json!({"/relative": {"status": 200}}))
            .is_err());
        assert!(hosts.fake("https://app.example.com/other").is_some());
        assert!(hosts.fake("https://unknown.example.com/").is_none());
    }
}
