//! A loopback Deepgram Aura endpoint for tests (feature `testing`).
//!
//! [`FakeAura`] listens on `127.0.0.1:<random port>` and speaks Aura's
//! real REST protocol over HTTP/1.1: `POST /v1/speak?model=…&encoding=…
//! &sample_rate=…&container=…` with `Authorization: Token <key>` and a
//! JSON body `{"text": "…"}`, answered by a chunked `200` of raw 8 kHz
//! µ-law audio — the text spoken in the offline speech codec
//! (`voice::offline::codec`), so the words a client plays are words a test
//! phone (or the fake Deepgram listener) can hear back. Connections are
//! kept alive between complete responses, as Deepgram's are.
//!
//! Requests are checked the way Deepgram checks them, each failure a JSON
//! error `{"err_code", "err_msg", "request_id"}`: an unknown path (404), a
//! wrong or missing key (401 `INVALID_AUTH`), a body that is not JSON
//! (415 on the `Content-Type`, 400 on the body), a query the fake does not
//! serve (400 `INVALID_QUERY_PARAMETER` unless `encoding=mulaw`,
//! `sample_rate=8000`, `container=none` and an `aura-…` model), and text
//! over [`FakeAuraConfig::max_text_chars`] (413).
//!
//! A valid request is answered by the next scripted [`AuraBehaviour`]
//! ([`FakeAura::push`]) or else the default one ([`FakeAura::set_behaviour`]),
//! both switchable while the fake runs: speak (optionally slowly), an error
//! status, an empty 200, a reset after some bytes, a hang, a stall after
//! some bytes, garbage audio, or any raw response for the fuzz tests.
//!
//! Every request is recorded ([`AuraRequest`]: query, headers, JSON body),
//! with how much audio was sent and whether the client went away before
//! the end ([`AuraRequest::client_disconnected`]) — so a test can check
//! that dropping a stream (a barge-in) closed the request within a chunk.
//!
//! ```ignore
//! let fake = FakeAura::start(FakeAuraConfig::default()).await;
//! let tts = AuraTts::new(AuraConfig::new("test-key").with_base_url(fake.base_url()))?;
//! // … play tts.synthesize("Hello there.") …
//! assert_eq!(fake.requests()[0].text.as_deref(), Some("Hello there."));
//! ```

use crate::fake::wire::{self, client_gone, http_chunk, reason, write, WireRequest, LAST_CHUNK};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

/// The path the fake answers.
pub const SPEAK_PATH: &str = "/v1/speak";

/// Largest request body the fake reads.
const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;
/// How long a connection may sit idle between requests.
const IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// How the fake speaks.
#[derive(Debug, Clone)]
pub struct FakeAuraConfig {
    /// The key a client must present (`Authorization: Token <key>`).
    pub key: String,
    /// The codec's speaking rate (characters per second).
    pub chars_per_second: f64,
    /// Audio bytes per HTTP chunk (800 = 100 ms).
    pub chunk_bytes: usize,
    /// The wait before each chunk after the first (zero: as fast as the
    /// socket takes them).
    pub pace: Duration,
    /// Longest text accepted (Deepgram: 2,000 characters); longer is 413.
    pub max_text_chars: usize,
    /// The wait before a reset (default 100 ms), so the client has read
    /// the audio sent before it: a reset may discard unread data.
    pub reset_grace: Duration,
}

impl Default for FakeAuraConfig {
    fn default() -> Self {
        FakeAuraConfig {
            key: "test-key".into(),
            chars_per_second: 15.0,
            chunk_bytes: 800,
            pace: Duration::ZERO,
            max_text_chars: 2000,
            reset_grace: Duration::from_millis(100),
        }
    }
}

/// How a raw response ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RawEnd {
    /// Properly (the last chunk of a chunked body).
    Complete,
    /// A TCP reset (no final chunk).
    Reset,
    /// The connection closed (FIN) without the final chunk.
    Close,
}

/// A response written exactly as given (for the fuzz tests and the
/// refusals), with `Connection: close`: the connection is closed after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawResponse {
    pub status: u16,
    /// `Content-Type` (none: no header).
    pub content_type: Option<String>,
    /// The body in pieces: one HTTP chunk each (chunked), or written one
    /// after another (with `content_length`). Empty pieces are skipped in
    /// chunked framing (an empty chunk would end the body).
    pub chunks: Vec<Vec<u8>>,
    /// `Some(n)`: `Content-Length: n` instead of chunked framing (`n` may
    /// disagree with the pieces).
    pub content_length: Option<usize>,
    pub end: RawEnd,
}

impl RawResponse {
    /// A complete response with a JSON body of this status.
    pub fn json(status: u16, body: impl Into<String>) -> RawResponse {
        let body: String = body.into();
        RawResponse {
            status,
            content_type: Some("application/json".into()),
            content_length: Some(body.len()),
            chunks: vec![body.into_bytes()],
            end: RawEnd::Complete,
        }
    }
}

/// How the fake answers a valid request.
#[derive(Debug, Clone, PartialEq)]
pub enum AuraBehaviour {
    /// Speak the text: chunked µ-law, paced by the config.
    Speak,
    /// Speak with this wait before each chunk after the first.
    Slow(Duration),
    /// Answer this status with this body (`application/json` when it is
    /// JSON, else `text/plain`).
    Status(u16, String),
    /// A 200 audio answer with an empty body.
    Empty,
    /// Speak this many bytes, then reset the connection.
    ResetAfter(usize),
    /// Read the request and never answer.
    Hang,
    /// Send the head and this many bytes of audio, then nothing.
    StallAfter(usize),
    /// A 200 audio answer of this many pseudo-random bytes (seeded by the
    /// request's number) in odd-sized chunks.
    Garbage(usize),
    /// Exactly this response.
    Raw(RawResponse),
    /// These bytes instead of an HTTP response, then close.
    Wire(Vec<u8>),
}

/// One request the fake received.
#[derive(Debug, Clone, PartialEq)]
pub struct AuraRequest {
    pub method: String,
    /// The request target as sent (path and query).
    pub target: String,
    pub path: String,
    /// The query, decoded, in order.
    pub query: Vec<(String, String)>,
    /// Header names lower-cased, values as sent, in order.
    pub headers: Vec<(String, String)>,
    /// The body as JSON (`Null` when it is not JSON).
    pub body: Value,
    /// `body.text` when it is a string.
    pub text: Option<String>,
    /// The status answered (0: none, or raw bytes).
    pub status: u16,
    /// Audio (body) bytes written so far.
    pub bytes_sent: usize,
    /// The whole response was written.
    pub response_finished: bool,
    /// The client went away before the response was complete.
    pub client_disconnected: bool,
    /// Which TCP connection carried it (1 = the first).
    pub connection: usize,
}

impl AuraRequest {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The first value of query parameter `name`.
    pub fn query_value(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

struct Shared {
    config: Mutex<FakeAuraConfig>,
    script: Mutex<VecDeque<AuraBehaviour>>,
    default: Mutex<AuraBehaviour>,
    requests: Mutex<Vec<AuraRequest>>,
    connections: AtomicUsize,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    fn update(&self, index: usize, f: impl FnOnce(&mut AuraRequest)) {
        if let Some(r) = lock(&self.requests).get_mut(index) {
            f(r);
        }
    }
}

/// The loopback Aura server; see the module docs. Dropping it stops the
/// server and cuts open connections.
pub struct FakeAura {
    addr: SocketAddr,
    shared: Arc<Shared>,
    server: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for FakeAura {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeAura")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl FakeAura {
    /// Listen on 127.0.0.1 (a free port), answering [`AuraBehaviour::Speak`].
    /// Must run inside a tokio runtime.
    ///
    /// # Panics
    /// If no loopback port can be bound (see [`FakeAura::try_start`]).
    pub async fn start(config: FakeAuraConfig) -> FakeAura {
        match FakeAura::try_start(config).await {
            Ok(f) => f,
            Err(e) => panic!("FakeAura: cannot listen on 127.0.0.1: {e}"),
        }
    }

    /// Listen on 127.0.0.1 (a free port).
    pub async fn try_start(config: FakeAuraConfig) -> std::io::Result<FakeAura> {
        let shared = Arc::new(Shared {
            config: Mutex::new(config),
            script: Mutex::new(VecDeque::new()),
            default: Mutex::new(AuraBehaviour::Speak),
            requests: Mutex::new(Vec::new()),
            connections: AtomicUsize::new(0),
        });
        let conns = shared.clone();
        let (addr, server) = wire::listen(move |stream| {
            let id = conns.connections.fetch_add(1, Ordering::SeqCst) + 1;
            serve(stream, id, conns.clone())
        })
        .await?;
        Ok(FakeAura {
            addr,
            shared,
            server: Mutex::new(Some(server)),
        })
    }

    /// The API root to configure a client with: `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Answer the next valid request (after those already scripted) so.
    pub fn push(&self, behaviour: AuraBehaviour) {
        lock(&self.shared.script).push_back(behaviour);
    }

    /// Answer valid requests so once the script is used up.
    pub fn set_behaviour(&self, behaviour: AuraBehaviour) {
        *lock(&self.shared.default) = behaviour;
    }

    /// Change the key, speaking rate, chunking or pace (for requests from
    /// now on).
    pub fn set_config(&self, config: FakeAuraConfig) {
        *lock(&self.shared.config) = config;
    }

    /// How many TCP connections were accepted so far.
    pub fn connection_count(&self) -> usize {
        self.shared.connections.load(Ordering::SeqCst)
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<AuraRequest> {
        lock(&self.shared.requests).clone()
    }

    /// Forget the recorded requests (a long fuzz run reusing one fake).
    pub fn clear_requests(&self) {
        lock(&self.shared.requests).clear();
    }

    /// Switch the server off: the port stops listening and open
    /// connections are cut.
    pub fn stop(&self) {
        if let Some(h) = lock(&self.server).take() {
            h.abort();
        }
    }

    /// Wait until `pred` holds for the recorded requests, at most
    /// `timeout`. Returns whether it held.
    pub async fn wait_until(
        &self,
        timeout: Duration,
        pred: impl Fn(&[AuraRequest]) -> bool,
    ) -> bool {
        wire::wait_until(timeout, || pred(&lock(&self.shared.requests))).await
    }

    /// Wait until at least `n` requests arrived (at most `timeout`).
    pub async fn wait_for_requests(&self, n: usize, timeout: Duration) -> bool {
        self.wait_until(timeout, |r| r.len() >= n).await
    }

    /// Wait until the client of request `index` went away before its
    /// response was complete (at most `timeout`).
    pub async fn wait_for_disconnect(&self, index: usize, timeout: Duration) -> bool {
        self.wait_until(timeout, |r| {
            r.get(index).is_some_and(|q| q.client_disconnected)
        })
        .await
    }
}

impl Drop for FakeAura {
    fn drop(&mut self) {
        self.stop();
    }
}

/// How answering a request ended.
enum Outcome {
    /// The whole response was written; the connection may carry more.
    Finished,
    /// The whole response was written; close the connection.
    FinishedClose,
    /// A write failed or the client closed: it is gone.
    ClientGone,
    /// Close the connection now (FIN).
    Close,
    /// Reset the connection now (RST).
    Reset,
}

/// The answer to a request that is not a valid speak request, if any.
fn refusal(req: &WireRequest, cfg: &FakeAuraConfig, id: &str) -> Option<(u16, Value)> {
    let err = |code: &str, msg: String| json!({"err_code": code, "err_msg": msg, "request_id": id});
    let url = reqwest::Url::parse(&format!("http://fake{}", req.target)).ok();
    let path = url
        .as_ref()
        .map(|u| u.path().to_string())
        .unwrap_or_default();
    if path != SPEAK_PATH {
        return Some((404, err("NOT_FOUND", format!("No such path: {path}"))));
    }
    if req.method != "POST" {
        return Some((405, err("METHOD_NOT_ALLOWED", "Use POST.".into())));
    }
    if req.header("authorization") != Some(&format!("Token {}", cfg.key)) {
        return Some((401, err("INVALID_AUTH", "Invalid credentials.".into())));
    }
    let ct = req
        .header("content-type")
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    if !ct.starts_with("application/json") {
        return Some((
            415,
            err(
                "UNSUPPORTED_MEDIA_TYPE",
                format!("Unsupported Content-Type {ct:?}; use application/json."),
            ),
        ));
    }
    let query: Vec<(String, String)> = url
        .as_ref()
        .map(|u| u.query_pairs().into_owned().collect())
        .unwrap_or_default();
    let q = |name: &str| {
        query
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    };
    for (name, want) in [
        ("encoding", "mulaw"),
        ("sample_rate", "8000"),
        ("container", "none"),
    ] {
        if q(name) != Some(want) {
            return Some((
                400,
                err(
                    "INVALID_QUERY_PARAMETER",
                    format!("The fake serves {name}={want}, got {:?}.", q(name)),
                ),
            ));
        }
    }
    if !q("model").is_some_and(|m| m.starts_with("aura-")) {
        return Some((
            400,
            err(
                "INVALID_QUERY_PARAMETER",
                format!("No such model: {:?}.", q("model")),
            ),
        ));
    }
    let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
    let Some(text) = body.get("text").and_then(Value::as_str) else {
        return Some((
            400,
            err(
                "INVALID_REQUEST_BODY",
                "The body must be a JSON object with a string \"text\".".into(),
            ),
        ));
    };
    if text.chars().count() > cfg.max_text_chars {
        return Some((
            413,
            err(
                "Payload Too Large",
                format!(
                    "Input text exceeds maximum character limit of {}.",
                    cfg.max_text_chars
                ),
            ),
        ));
    }
    None
}

async fn serve(stream: TcpStream, connection: usize, shared: Arc<Shared>) {
    let _ = stream.set_nodelay(true);
    let (mut rd, mut wr) = stream.into_split();
    loop {
        let Ok(Some(req)) =
            tokio::time::timeout(IDLE_TIMEOUT, wire::read_request(&mut rd, MAX_BODY_BYTES)).await
        else {
            return;
        };
        let cfg = lock(&shared.config).clone();
        let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
        let url = reqwest::Url::parse(&format!("http://fake{}", req.target)).ok();
        let index = {
            let mut all = lock(&shared.requests);
            all.push(AuraRequest {
                method: req.method.clone(),
                target: req.target.clone(),
                path: url
                    .as_ref()
                    .map(|u| u.path().to_string())
                    .unwrap_or_default(),
                query: url
                    .as_ref()
                    .map(|u| u.query_pairs().into_owned().collect())
                    .unwrap_or_default(),
                headers: req.headers.clone(),
                text: body.get("text").and_then(Value::as_str).map(str::to_string),
                body,
                status: 0,
                bytes_sent: 0,
                response_finished: false,
                client_disconnected: false,
                connection,
            });
            all.len() - 1
        };
        let id = format!("fake-{index}");
        let behaviour = match refusal(&req, &cfg, &id) {
            Some((status, body)) => AuraBehaviour::Raw(RawResponse::json(status, body.to_string())),
            None => {
                let next = lock(&shared.script).pop_front();
                next.unwrap_or_else(|| lock(&shared.default).clone())
            }
        };
        let text = lock(&shared.requests)
            .get(index)
            .and_then(|r| r.text.clone())
            .unwrap_or_default();
        let ctx = Answer {
            shared: &shared,
            index,
            cfg: &cfg,
            text: &text,
            id: &id,
        };
        let outcome = tokio::select! {
            biased;
            o = ctx.answer(&behaviour, &mut wr) => o,
            () = client_gone(&mut rd) => Outcome::ClientGone,
        };
        match outcome {
            Outcome::Finished => shared.update(index, |r| r.response_finished = true),
            Outcome::FinishedClose => {
                shared.update(index, |r| r.response_finished = true);
                let _ = wr.shutdown().await;
                return;
            }
            Outcome::ClientGone => {
                shared.update(index, |r| r.client_disconnected = true);
                return;
            }
            Outcome::Close => {
                let _ = wr.shutdown().await;
                return;
            }
            Outcome::Reset => {
                if !cfg.reset_grace.is_zero() {
                    tokio::time::sleep(cfg.reset_grace).await;
                }
                if let Ok(stream) = rd.reunite(wr) {
                    let _ = stream.set_zero_linger();
                }
                return;
            }
        }
    }
}

/// A tiny deterministic generator (xorshift64*), for garbage.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// The codec speech of `text` as 8 kHz µ-law.
pub fn speech_mulaw(text: &str, chars_per_second: f64) -> Vec<u8> {
    let (samples, _) = voice::offline::codec::encode(text, 8000, chars_per_second);
    audio::mulaw::encode_pcm16le(&voice::offline::codec::to_bytes(&samples))
}

struct Answer<'a> {
    shared: &'a Shared,
    index: usize,
    cfg: &'a FakeAuraConfig,
    text: &'a str,
    id: &'a str,
}

impl Answer<'_> {
    fn status(&self, status: u16) {
        self.shared.update(self.index, |r| r.status = status);
    }

    fn sent(&self, n: usize) {
        self.shared.update(self.index, |r| r.bytes_sent += n);
    }

    async fn audio_head(&self, wr: &mut OwnedWriteHalf) -> bool {
        self.status(200);
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: audio/mulaw\r\nTransfer-Encoding: chunked\r\n\
dg-model-name: aura-2-fake-en\r\ndg-char-count: {}\r\ndg-request-id: {}\r\n\r\n",
            self.text.chars().count(),
            self.id
        );
        write(wr, head.as_bytes()).await
    }

    /// Stream `audio` in chunks, `pace` before each after the first;
    /// `false` if the client went away.
    async fn stream(&self, wr: &mut OwnedWriteHalf, audio: &[u8], pace: Duration) -> bool {
        for (i, chunk) in audio.chunks(self.cfg.chunk_bytes.max(1)).enumerate() {
            if i > 0 && !pace.is_zero() {
                tokio::time::sleep(pace).await;
            }
            if !write(wr, &http_chunk(chunk)).await {
                return false;
            }
            self.sent(chunk.len());
        }
        true
    }

    fn speech(&self) -> Vec<u8> {
        speech_mulaw(self.text, self.cfg.chars_per_second)
    }

    async fn answer(&self, behaviour: &AuraBehaviour, wr: &mut OwnedWriteHalf) -> Outcome {
        let gone = |ok: bool, then: Outcome| if ok { then } else { Outcome::ClientGone };
        match behaviour {
            AuraBehaviour::Speak | AuraBehaviour::Slow(_) => {
                let pace = match behaviour {
                    AuraBehaviour::Slow(d) => *d,
                    _ => self.cfg.pace,
                };
                let ok = self.audio_head(wr).await
                    && self.stream(wr, &self.speech(), pace).await
                    && write(wr, LAST_CHUNK).await;
                gone(ok, Outcome::Finished)
            }
            AuraBehaviour::Status(code, body) => {
                let ct = if serde_json::from_str::<Value>(body).is_ok() {
                    "application/json"
                } else {
                    "text/plain; charset=utf-8"
                };
                let raw = RawResponse {
                    status: *code,
                    content_type: Some(ct.into()),
                    content_length: Some(body.len()),
                    chunks: vec![body.clone().into_bytes()],
                    end: RawEnd::Complete,
                };
                self.raw(&raw, wr).await
            }
            AuraBehaviour::Empty => gone(
                self.audio_head(wr).await && write(wr, LAST_CHUNK).await,
                Outcome::Finished,
            ),
            AuraBehaviour::ResetAfter(n) => {
                let audio = self.speech();
                let part = audio.get(..(*n).min(audio.len())).unwrap_or(&[]);
                let ok = self.audio_head(wr).await && self.stream(wr, part, self.cfg.pace).await;
                gone(ok, Outcome::Reset)
            }
            AuraBehaviour::Hang => std::future::pending().await,
            AuraBehaviour::StallAfter(n) => {
                let audio = self.speech();
                let part = audio.get(..(*n).min(audio.len())).unwrap_or(&[]);
                if !(self.audio_head(wr).await && self.stream(wr, part, self.cfg.pace).await) {
                    return Outcome::ClientGone;
                }
                std::future::pending().await
            }
            AuraBehaviour::Garbage(n) => {
                let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (self.index as u64 + 1));
                if !self.audio_head(wr).await {
                    return Outcome::ClientGone;
                }
                let mut left = *n;
                while left > 0 {
                    let size = ((rng.next() % 1500) as usize + 1).min(left);
                    let chunk: Vec<u8> = (0..size).map(|_| rng.next() as u8).collect();
                    if !write(wr, &http_chunk(&chunk)).await {
                        return Outcome::ClientGone;
                    }
                    self.sent(size);
                    left -= size;
                }
                gone(write(wr, LAST_CHUNK).await, Outcome::Finished)
            }
            AuraBehaviour::Raw(raw) => self.raw(raw, wr).await,
            AuraBehaviour::Wire(bytes) => gone(write(wr, bytes).await, Outcome::Close),
        }
    }

    async fn raw(&self, raw: &RawResponse, wr: &mut OwnedWriteHalf) -> Outcome {
        self.status(raw.status);
        let mut head = format!("HTTP/1.1 {} {}\r\n", raw.status, reason(raw.status));
        if let Some(ct) = &raw.content_type {
            head.push_str(&format!("Content-Type: {ct}\r\n"));
        }
        match raw.content_length {
            Some(n) => head.push_str(&format!("Content-Length: {n}\r\n")),
            None => head.push_str("Transfer-Encoding: chunked\r\n"),
        }
        // A raw answer may frame its body wrongly: it never shares its
        // connection with the next request.
        head.push_str(&format!(
            "dg-request-id: {}\r\nConnection: close\r\n\r\n",
            self.id
        ));
        if !write(wr, head.as_bytes()).await {
            return Outcome::ClientGone;
        }
        for chunk in &raw.chunks {
            let bytes = match raw.content_length {
                Some(_) => chunk.clone(),
                None if chunk.is_empty() => continue,
                None => http_chunk(chunk),
            };
            if !write(wr, &bytes).await {
                return Outcome::ClientGone;
            }
            self.sent(chunk.len());
        }
        match raw.end {
            RawEnd::Complete => {
                if raw.content_length.is_none() && !write(wr, LAST_CHUNK).await {
                    return Outcome::ClientGone;
                }
                Outcome::FinishedClose
            }
            RawEnd::Reset => Outcome::Reset,
            RawEnd::Close => Outcome::Close,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use voice::offline::codec::{decode_mulaw, Decoded, FRAME_SAMPLES_8K};

    #[test]
    fn the_speech_decodes_back_to_the_words() {
        let ulaw = speech_mulaw("Your AC tech is on the way, café 温度!", 15.0);
        let words: Vec<String> = ulaw
            .chunks(FRAME_SAMPLES_8K)
            .filter_map(|f| match decode_mulaw(f) {
                Decoded::Word(w) => Some(w),
                _ => None,
            })
            .collect();
        assert_eq!(
            words,
            ["Your", "AC", "tech", "is", "on", "the", "way,", "café", "温度!"]
        );
    }
}
