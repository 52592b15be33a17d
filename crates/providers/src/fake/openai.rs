//! A loopback OpenAI-compatible server for tests.
//!
//! [`FakeOpenAi`] listens on `127.0.0.1:<random port>`, reads real HTTP/1.1
//! requests (request line, headers, `Content-Length` body), records each one
//! ([`RecordedRequest`]) and answers `POST /v1/chat/completions` from a
//! script of [`Behaviour`]s, one per request in order, then a default
//! behaviour. Streams are real `chat.completion.chunk` SSE events in a
//! chunked HTTP response; JSON answers are `chat.completion` objects. By
//! default every response carries `Connection: close`;
//! [`FakeOpenAi::set_keep_alive`] makes the fake keep connections open
//! for further requests (to check that a client reuses them).
//!
//! It also notices a client that goes away before its response finished
//! ([`RecordedRequest::client_disconnected`]), and can be switched off
//! mid-test ([`FakeOpenAi::set_mode`], [`FakeOpenAi::stop`]).
//!
//! ```ignore
//! use providers::fake::openai::{Behaviour, FakeOpenAi};
//! let fake = FakeOpenAi::start(vec![
//!     Behaviour::text_stream(["Hello", " there."]),
//!     Behaviour::json(r#"{"customer_name":"Jonas"}"#),
//! ])
//! .await;
//! let cfg = OpenAiConfig { base_url: fake.base_url(), ..OpenAiConfig::default() };
//! // … use the client …
//! assert_eq!(fake.requests()[0].body["stream"], true);
//! ```

use super::wire::{self, client_gone, http_chunk, write, LAST_CHUNK};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

/// The path the fake answers (with the `/v1` of [`FakeOpenAi::base_url`]).
pub const CHAT_PATH: &str = "/v1/chat/completions";

/// Largest request body the fake reads.
const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;
/// How long the fake waits for a complete request.
const REQUEST_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// One tool call the fake streams in pieces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeToolCall {
    /// The call id, e.g. `call_1`.
    pub id: String,
    /// The function name.
    pub name: String,
    /// The whole arguments text (split over several deltas when streamed).
    pub arguments: String,
}

/// How the fake answers one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Behaviour {
    /// Answer in the shape asked for: a text stream of `text` (split after
    /// spaces) when the request has `"stream": true`, else [`Behaviour::Json`].
    Reply(String),
    /// Stream these text deltas, each after its delay, then
    /// `finish_reason: "stop"` and `[DONE]`. A first chunk carries
    /// `delta.role` (as OpenAI does).
    Stream {
        /// (delay before the chunk, the delta's content)
        chunks: Vec<(Duration, String)>,
    },
    /// Stream tool calls: for each call a delta with index, id, type and
    /// function name, then its arguments split into `pieces` deltas; then
    /// `finish_reason: "tool_calls"` and `[DONE]`.
    StreamToolCall {
        /// The calls, indexed in order.
        calls: Vec<FakeToolCall>,
        /// Argument fragments per call (at least 1).
        pieces: usize,
    },
    /// Send the headers and these text deltas, then hang (until the client
    /// goes away).
    Stall {
        /// Text deltas sent before stalling.
        chunks: Vec<String>,
    },
    /// Read the request and never answer (no headers).
    Hang,
    /// Answer with this status and body (`application/json` when the body
    /// is JSON, else `text/plain`).
    Status(u16, String),
    /// Stream one good text delta ("Hel"), then an event whose data is
    /// broken JSON, then hang.
    MalformedChunk,
    /// Stream an `{"error": {"message": …}}` object, then end the body.
    StreamError(String),
    /// Send the headers and these text deltas, then close the connection
    /// in the middle of the chunked body (no final chunk).
    DropConnection {
        /// Text deltas sent before the connection is closed.
        chunks: Vec<String>,
    },
    /// A non-streaming answer whose `choices[0].message.content` is this.
    Json(String),
    /// A `200 text/event-stream` chunked body of exactly these bytes (each
    /// piece written after its delay as one HTTP chunk; empty pieces are
    /// skipped), then the final chunk.
    RawStream {
        /// (delay before the piece, the bytes)
        chunks: Vec<(Duration, Vec<u8>)>,
    },
    /// Wait, then behave as the inner behaviour.
    Delay(Duration, Box<Behaviour>),
}

impl Behaviour {
    /// [`Behaviour::Stream`] of these deltas with no delays.
    pub fn text_stream<I, S>(chunks: I) -> Behaviour
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Behaviour::Stream {
            chunks: chunks
                .into_iter()
                .map(|c| (Duration::ZERO, c.into()))
                .collect(),
        }
    }

    /// [`Behaviour::Stream`] of these deltas, each `delay` apart.
    pub fn slow_stream<I, S>(delay: Duration, chunks: I) -> Behaviour
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Behaviour::Stream {
            chunks: chunks.into_iter().map(|c| (delay, c.into())).collect(),
        }
    }

    /// [`Behaviour::Json`] with this message content.
    pub fn json(content: impl Into<String>) -> Behaviour {
        Behaviour::Json(content.into())
    }

    /// [`Behaviour::Status`].
    pub fn status(code: u16, body: impl Into<String>) -> Behaviour {
        Behaviour::Status(code, body.into())
    }

    /// [`Behaviour::Delay`].
    pub fn delayed(delay: Duration, then: Behaviour) -> Behaviour {
        Behaviour::Delay(delay, Box::new(then))
    }
}

/// How the fake treats new requests (see [`FakeOpenAi::set_mode`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FakeMode {
    /// Answer from the script (the default).
    #[default]
    Answer,
    /// Read and record requests but never answer them (a dead upstream:
    /// clients time out).
    Hang,
    /// Accept connections and close them at once without reading (clients
    /// see the connection closed before a response).
    Close,
}

/// One request the fake received.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// `POST`, …
    pub method: String,
    /// The request target, e.g. `/v1/chat/completions`.
    pub path: String,
    /// Header names lower-cased, values as sent, in order.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON (`Value::Null` when it is not JSON).
    pub body: Value,
    /// The raw body (lossy UTF-8).
    pub raw_body: String,
    /// The client closed the connection before the response was complete.
    pub client_disconnected: bool,
    /// The whole response was written.
    pub response_finished: bool,
    /// Which TCP connection carried the request (1 = the first accepted).
    pub connection: usize,
}

impl RecordedRequest {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Whether the request asked for a streamed answer.
    pub fn is_stream(&self) -> bool {
        self.body.get("stream").and_then(Value::as_bool) == Some(true)
    }

    /// The `messages` of the request (empty when absent).
    pub fn messages(&self) -> Vec<Value> {
        self.body
            .get("messages")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    }
}

/// Chooses the answer from the request body (consulted before the script;
/// `None` falls through to the script).
pub type Handler = Arc<dyn Fn(&Value) -> Option<Behaviour> + Send + Sync>;

struct Shared {
    handler: Mutex<Option<Handler>>,
    script: Mutex<VecDeque<Behaviour>>,
    default: Mutex<Behaviour>,
    requests: Mutex<Vec<RecordedRequest>>,
    mode: Mutex<FakeMode>,
    keep_alive: AtomicBool,
    connections: AtomicUsize,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    fn next_behaviour(&self, body: &Value) -> Behaviour {
        let handler = lock(&self.handler).clone();
        if let Some(b) = handler.and_then(|h| h(body)) {
            return b;
        }
        match lock(&self.script).pop_front() {
            Some(b) => b,
            None => lock(&self.default).clone(),
        }
    }

    fn update(&self, index: usize, f: impl FnOnce(&mut RecordedRequest)) {
        if let Some(r) = lock(&self.requests).get_mut(index) {
            f(r);
        }
    }
}

/// The loopback OpenAI-compatible server; see the module docs. Dropping it
/// stops the server and cuts open connections.
pub struct FakeOpenAi {
    addr: SocketAddr,
    shared: Arc<Shared>,
    server: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for FakeOpenAi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeOpenAi")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl FakeOpenAi {
    /// Start a fake answering `script` in order, then
    /// `Behaviour::Reply("Okay.")`. Must run inside a tokio runtime.
    ///
    /// # Panics
    /// If no loopback port can be bound (see [`FakeOpenAi::try_start`]).
    pub async fn start(script: Vec<Behaviour>) -> FakeOpenAi {
        match FakeOpenAi::try_start(script, Behaviour::Reply("Okay.".into())).await {
            Ok(f) => f,
            Err(e) => panic!("FakeOpenAi: cannot listen on 127.0.0.1: {e}"),
        }
    }

    /// Start a fake answering `script` in order, then `default`.
    pub async fn try_start(
        script: Vec<Behaviour>,
        default: Behaviour,
    ) -> std::io::Result<FakeOpenAi> {
        let shared = Arc::new(Shared {
            handler: Mutex::new(None),
            script: Mutex::new(script.into()),
            default: Mutex::new(default),
            requests: Mutex::new(Vec::new()),
            mode: Mutex::new(FakeMode::Answer),
            keep_alive: AtomicBool::new(false),
            connections: AtomicUsize::new(0),
        });
        let conns = shared.clone();
        let (addr, server) = wire::listen(move |stream| {
            let id = conns.connections.fetch_add(1, Ordering::SeqCst) + 1;
            serve(stream, id, conns.clone())
        })
        .await?;
        Ok(FakeOpenAi {
            addr,
            shared,
            server: Mutex::new(Some(server)),
        })
    }

    /// The API root to configure a client with: `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Append a behaviour to the script.
    pub fn push(&self, behaviour: Behaviour) {
        lock(&self.shared.script).push_back(behaviour);
    }

    /// Answer from the request itself: `handler` sees each chat request's
    /// JSON body first (e.g. to answer extraction requests with what the
    /// caller said); `None` falls through to the script.
    pub fn set_handler(&self, handler: Handler) {
        *lock(&self.shared.handler) = Some(handler);
    }

    /// Replace the behaviour used once the script is exhausted.
    pub fn set_default(&self, behaviour: Behaviour) {
        *lock(&self.shared.default) = behaviour;
    }

    /// How new connections are treated from now on (requests already being
    /// answered continue).
    pub fn set_mode(&self, mode: FakeMode) {
        *lock(&self.shared.mode) = mode;
    }

    /// Keep connections open after complete responses
    /// (`Connection: keep-alive`) instead of closing them (the default).
    pub fn set_keep_alive(&self, on: bool) {
        self.shared.keep_alive.store(on, Ordering::SeqCst);
    }

    /// How many TCP connections were accepted so far.
    pub fn connection_count(&self) -> usize {
        self.shared.connections.load(Ordering::SeqCst)
    }

    /// Switch the server off for good: the port stops listening (new
    /// connections are refused) and open connections are cut.
    pub fn stop(&self) {
        if let Some(h) = lock(&self.server).take() {
            h.abort();
        }
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).clone()
    }

    /// How many requests were received so far.
    pub fn request_count(&self) -> usize {
        lock(&self.shared.requests).len()
    }

    /// Wait until `pred` holds for the recorded requests, at most
    /// `timeout`. Returns whether it held.
    pub async fn wait_until(
        &self,
        timeout: Duration,
        pred: impl Fn(&[RecordedRequest]) -> bool,
    ) -> bool {
        wire::wait_until(timeout, || pred(&lock(&self.shared.requests))).await
    }

    /// Wait until at least `n` requests arrived (at most `timeout`).
    pub async fn wait_for_requests(&self, n: usize, timeout: Duration) -> bool {
        self.wait_until(timeout, |r| r.len() >= n).await
    }

    /// Wait until the client of request `index` went away before its
    /// response finished (at most `timeout`).
    pub async fn wait_for_disconnect(&self, index: usize, timeout: Duration) -> bool {
        self.wait_until(timeout, |r| {
            r.get(index).is_some_and(|q| q.client_disconnected)
        })
        .await
    }
}

impl Drop for FakeOpenAi {
    fn drop(&mut self) {
        self.stop();
    }
}

/// How answering a request ended.
enum Outcome {
    /// The whole response was written.
    Finished,
    /// A write failed: the client is gone.
    WriteFailed,
    /// We closed the connection on purpose mid-response.
    Dropped,
}

async fn serve(stream: TcpStream, connection: usize, shared: Arc<Shared>) {
    if *lock(&shared.mode) == FakeMode::Close {
        return;
    }
    let _ = stream.set_nodelay(true);
    let (mut rd, mut wr) = stream.into_split();
    loop {
        let Ok(Some(req)) = tokio::time::timeout(
            REQUEST_READ_TIMEOUT,
            wire::read_request(&mut rd, MAX_BODY_BYTES),
        )
        .await
        else {
            return;
        };
        let mode = *lock(&shared.mode);
        if mode == FakeMode::Close {
            return;
        }
        let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
        let keep_alive = shared.keep_alive.load(Ordering::SeqCst)
            && !req
                .headers
                .iter()
                .any(|(n, v)| n == "connection" && v.eq_ignore_ascii_case("close"));
        let recorded = RecordedRequest {
            method: req.method.clone(),
            path: req.target.clone(),
            headers: req.headers,
            body: body.clone(),
            raw_body: String::from_utf8_lossy(&req.body).into_owned(),
            client_disconnected: false,
            response_finished: false,
            connection,
        };
        let index = {
            let mut all = lock(&shared.requests);
            all.push(recorded);
            all.len() - 1
        };
        let behaviour = if mode == FakeMode::Hang {
            Behaviour::Hang
        } else if req.method != "POST" || req.target != CHAT_PATH {
            Behaviour::Status(
                404,
                json!({"error": {"message": format!("no route for {} {}", req.method, req.target)}})
                    .to_string(),
            )
        } else {
            shared.next_behaviour(&body)
        };
        let ctx = Ctx {
            model: body
                .get("model")
                .and_then(Value::as_str)
                .unwrap_or("fake-model")
                .to_string(),
            stream: body.get("stream").and_then(Value::as_bool) == Some(true),
            keep_alive,
        };
        let outcome = tokio::select! {
            biased;
            o = answer(&behaviour, &ctx, &mut wr) => o,
            () = client_gone(&mut rd) => Outcome::WriteFailed,
        };
        match outcome {
            Outcome::Finished => {
                shared.update(index, |r| r.response_finished = true);
                if !keep_alive {
                    let _ = wr.shutdown().await;
                    return;
                }
            }
            Outcome::WriteFailed => {
                shared.update(index, |r| r.client_disconnected = true);
                return;
            }
            Outcome::Dropped => return,
        }
    }
}

struct Ctx {
    model: String,
    stream: bool,
    keep_alive: bool,
}

impl Ctx {
    fn connection_header(&self) -> &'static str {
        if self.keep_alive {
            "keep-alive"
        } else {
            "close"
        }
    }
}

fn chunk_event(ctx: &Ctx, delta: Value, finish: Option<&str>) -> String {
    let v = json!({
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": ctx.model,
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
    });
    format!("data: {v}\n\n")
}

async fn write_stream_head(ctx: &Ctx, wr: &mut OwnedWriteHalf) -> bool {
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\
Transfer-Encoding: chunked\r\nConnection: {}\r\n\r\n",
        ctx.connection_header()
    );
    write(wr, head.as_bytes()).await
}

async fn write_sized(
    ctx: &Ctx,
    wr: &mut OwnedWriteHalf,
    code: u16,
    content_type: &str,
    body: &[u8],
) -> bool {
    let out = wire::sized_response(code, content_type, body, ctx.keep_alive);
    write(wr, &out).await
}

/// Stream text deltas after a role delta; `false` if a write failed.
async fn send_text_chunks(
    ctx: &Ctx,
    wr: &mut OwnedWriteHalf,
    chunks: &[(Duration, String)],
) -> bool {
    let role = chunk_event(ctx, json!({"role": "assistant", "content": ""}), None);
    if !write(wr, &http_chunk(role.as_bytes())).await {
        return false;
    }
    for (delay, text) in chunks {
        if !delay.is_zero() {
            tokio::time::sleep(*delay).await;
        }
        let ev = chunk_event(ctx, json!({ "content": text }), None);
        if !write(wr, &http_chunk(ev.as_bytes())).await {
            return false;
        }
    }
    true
}

/// The closing events (finish_reason, `[DONE]`) and the last HTTP chunk in
/// one write.
async fn send_end(ctx: &Ctx, wr: &mut OwnedWriteHalf, finish: &str) -> bool {
    let mut out = http_chunk(chunk_event(ctx, json!({}), Some(finish)).as_bytes());
    out.extend(http_chunk(b"data: [DONE]\n\n"));
    out.extend_from_slice(LAST_CHUNK);
    write(wr, &out).await
}

fn no_delays(chunks: &[String]) -> Vec<(Duration, String)> {
    chunks.iter().map(|c| (Duration::ZERO, c.clone())).collect()
}

/// Split `s` into `n` pieces on character boundaries (some may be empty).
fn split_pieces(s: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    let n = n.max(1);
    let size = chars.len().div_ceil(n).max(1);
    let mut out: Vec<String> = chars.chunks(size).map(|c| c.iter().collect()).collect();
    while out.len() < n {
        out.push(String::new());
    }
    out
}

fn finished(ok: bool) -> Outcome {
    if ok {
        Outcome::Finished
    } else {
        Outcome::WriteFailed
    }
}

async fn answer(behaviour: &Behaviour, ctx: &Ctx, wr: &mut OwnedWriteHalf) -> Outcome {
    let mut behaviour = behaviour.clone();
    loop {
        match behaviour {
            Behaviour::Delay(d, inner) => {
                tokio::time::sleep(d).await;
                behaviour = *inner;
            }
            Behaviour::Reply(text) => {
                behaviour = if ctx.stream {
                    Behaviour::Stream {
                        chunks: text
                            .split_inclusive(' ')
                            .map(|w| (Duration::ZERO, w.to_string()))
                            .collect(),
                    }
                } else {
                    Behaviour::Json(text)
                };
            }
            other => return answer_plain(&other, ctx, wr).await,
        }
    }
}

async fn answer_plain(behaviour: &Behaviour, ctx: &Ctx, wr: &mut OwnedWriteHalf) -> Outcome {
    match behaviour {
        Behaviour::Delay(..) | Behaviour::Reply(_) => Outcome::Finished,
        Behaviour::Stream { chunks } => finished(
            write_stream_head(ctx, wr).await
                && send_text_chunks(ctx, wr, chunks).await
                && send_end(ctx, wr, "stop").await,
        ),
        Behaviour::StreamToolCall { calls, pieces } => {
            if !(write_stream_head(ctx, wr).await
                && write(
                    wr,
                    &http_chunk(
                        chunk_event(ctx, json!({"role": "assistant", "content": null}), None)
                            .as_bytes(),
                    ),
                )
                .await)
            {
                return Outcome::WriteFailed;
            }
            for (i, call) in calls.iter().enumerate() {
                let first = json!({"tool_calls": [{
                    "index": i, "id": call.id, "type": "function",
                    "function": {"name": call.name, "arguments": ""}
                }]});
                if !write(wr, &http_chunk(chunk_event(ctx, first, None).as_bytes())).await {
                    return Outcome::WriteFailed;
                }
                for piece in split_pieces(&call.arguments, *pieces) {
                    let d = json!({"tool_calls": [{"index": i, "function": {"arguments": piece}}]});
                    if !write(wr, &http_chunk(chunk_event(ctx, d, None).as_bytes())).await {
                        return Outcome::WriteFailed;
                    }
                }
            }
            finished(send_end(ctx, wr, "tool_calls").await)
        }
        Behaviour::Stall { chunks } => {
            if !(write_stream_head(ctx, wr).await
                && send_text_chunks(ctx, wr, &no_delays(chunks)).await)
            {
                return Outcome::WriteFailed;
            }
            std::future::pending::<()>().await;
            Outcome::Finished
        }
        Behaviour::Hang => {
            std::future::pending::<()>().await;
            Outcome::Finished
        }
        Behaviour::Status(code, body) => {
            let ct = if serde_json::from_str::<Value>(body).is_ok() {
                "application/json"
            } else {
                "text/plain; charset=utf-8"
            };
            finished(write_sized(ctx, wr, *code, ct, body.as_bytes()).await)
        }
        Behaviour::MalformedChunk => {
            if !(write_stream_head(ctx, wr).await
                && send_text_chunks(ctx, wr, &no_delays(&["Hel".to_string()])).await
                && write(
                    wr,
                    &http_chunk(b"data: {\"choices\":[{\"delta\":{\"content\":\"lo\"\n\n"),
                )
                .await)
            {
                return Outcome::WriteFailed;
            }
            std::future::pending::<()>().await;
            Outcome::Finished
        }
        Behaviour::StreamError(message) => {
            let ev = format!(
                "data: {}\n\n",
                json!({"error": {"message": message, "type": "server_error", "code": null}})
            );
            let mut out = http_chunk(ev.as_bytes());
            out.extend_from_slice(LAST_CHUNK);
            finished(write_stream_head(ctx, wr).await && write(wr, &out).await)
        }
        Behaviour::DropConnection { chunks } => {
            if write_stream_head(ctx, wr).await
                && send_text_chunks(ctx, wr, &no_delays(chunks)).await
            {
                Outcome::Dropped
            } else {
                Outcome::WriteFailed
            }
        }
        Behaviour::Json(content) => {
            let body = json!({
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "created": 1_700_000_000,
                "model": ctx.model,
                "choices": [{
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop"
                }],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
            });
            finished(
                write_sized(
                    ctx,
                    wr,
                    200,
                    "application/json",
                    body.to_string().as_bytes(),
                )
                .await,
            )
        }
        Behaviour::RawStream { chunks } => {
            if !write_stream_head(ctx, wr).await {
                return Outcome::WriteFailed;
            }
            for (delay, bytes) in chunks {
                if !delay.is_zero() {
                    tokio::time::sleep(*delay).await;
                }
                if !bytes.is_empty() && !write(wr, &http_chunk(bytes)).await {
                    return Outcome::WriteFailed;
                }
            }
            finished(write(wr, LAST_CHUNK).await)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_pieces_keeps_text_and_count() {
        for (s, n) in [("{\"a\":1}", 3), ("", 2), ("é€😀", 5), ("abc", 1)] {
            let p = split_pieces(s, n);
            assert_eq!(p.len(), n.max(1), "{s} {n}");
            assert_eq!(p.concat(), s);
        }
    }
}
