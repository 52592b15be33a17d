//! A loopback Inworld for tests (feature `testing`).
//!
//! [`FakeInworld`] listens on `127.0.0.1:<random port>` and speaks the
//! real wire protocol over HTTP/1.1: `POST /tts/v1/voice:stream` with
//! `Authorization: Basic <key>` (a wrong key gets `401` and a JSON error),
//! the request body checked as Inworld checks it (`text` of 1–2,000
//! characters, `voiceId`, `modelId`, `LINEAR16`/`PCM` at 8–48 kHz; else
//! `400`), and a chunked body of newline-delimited JSON. It "speaks" the
//! text in the offline speech codec (`voice::offline::codec`), so the
//! words come back out of the audio: one `result` line per word with the
//! word's PCM16 at the requested rate (base64, with a WAV header per chunk
//! if [`FakeConfig::wav_headers`] says so) and its
//! `timestampInfo.wordAlignment`, times from the start of the request's
//! audio. With `"timestampTransportStrategy": "ASYNC"` the timing comes on
//! a line of its own before the audio. `GET /tts/v1/voices` lists a few
//! voices (the doctor's probe).
//!
//! Faults ([`Behaviour`]), per request in order ([`FakeInworld::push`])
//! or from now on ([`FakeInworld::set_default`]): slow lines, an HTTP
//! status, an `error` line before or after audio, a reset connection, a
//! hang before or mid-body, a garbage line, or an exact raw body; and for
//! load tests a share of requests stalled at random
//! ([`FakeConfig::stall_share`]).
//!
//! Every request is recorded ([`RecordedRequest`]) with how many lines
//! went out and whether the client went away before the end — so a test
//! can check that a barge-in closed the request within a chunk.

mod wire;

use serde_json::Value;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::task::JoinHandle;

/// WAV headers in the audio chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WavHeaders {
    /// Bare PCM (Inworld's `PCM`, as Pipecat observed it).
    #[default]
    None,
    /// The canonical 44-byte header on every chunk (documented `LINEAR16`).
    Canonical,
    /// A longer header (an odd-sized `LIST` chunk before `data`).
    WithList,
}

/// How the fake speaks (shared by all requests).
#[derive(Debug, Clone)]
pub struct FakeConfig {
    /// The key a client must send (`Authorization: Basic <key>`).
    pub key: String,
    /// Speaking rate of the codec voice.
    pub chars_per_second: f64,
    /// Before the first line.
    pub first_line_delay: Duration,
    /// Between lines.
    pub line_delay: Duration,
    pub wav_headers: WavHeaders,
    /// Write each line in this many pieces (separate HTTP chunks and TCP
    /// writes; 1 = whole lines).
    pub split_lines: usize,
    /// The share (0–1) of synthesis requests answered by default that
    /// stall, chosen at random per request (from `stall_seed`): half of
    /// them after the headers, before any audio, the other half after the
    /// first word — the connection stays open until the client goes away.
    /// For load tests ([`FakeInworld::stalled`] counts them).
    pub stall_share: f64,
    /// Seeds the choice of stalled requests (the same seed stalls the same
    /// request numbers).
    pub stall_seed: u64,
}

impl Default for FakeConfig {
    fn default() -> Self {
        FakeConfig {
            key: "test-key".into(),
            chars_per_second: 15.0,
            first_line_delay: Duration::ZERO,
            line_delay: Duration::ZERO,
            wav_headers: WavHeaders::None,
            split_lines: 1,
            stall_share: 0.0,
            stall_seed: 0,
        }
    }
}

/// How the fake answers one synthesis request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Behaviour {
    /// Speak the text.
    Speak,
    /// Speak, waiting this long before each line.
    Slow(Duration),
    /// Answer with this status and a JSON error body.
    Status(u16),
    /// `200`, then an `error` line and the end of the body.
    ErrorBeforeAudio,
    /// This many word lines, then an `error` line and the end.
    ErrorAfter(usize),
    /// This many word lines, then a TCP reset (no end of body).
    ResetAfter(usize),
    /// Read the request and never answer.
    Hang,
    /// Headers and this many word lines, then nothing (the connection
    /// stays open).
    StallAfter(usize),
    /// This many word lines, then a line that is not JSON, then the rest.
    GarbageAfter(usize),
    /// `200` and exactly these body pieces (each an HTTP chunk).
    Raw(Vec<Vec<u8>>),
}

/// One request the fake received.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    pub method: String,
    /// The target, query included.
    pub path: String,
    /// Names lower-cased, in order.
    pub headers: Vec<(String, String)>,
    /// The body as JSON (`Null` if it is not).
    pub body: Value,
    /// Response lines written (word, timing, error and garbage lines).
    pub lines_sent: usize,
    /// The client closed the connection before the response was complete.
    pub client_disconnected: bool,
    /// The whole response was written.
    pub response_finished: bool,
}

impl RecordedRequest {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body's `text`.
    pub fn text(&self) -> &str {
        self.body.get("text").and_then(Value::as_str).unwrap_or("")
    }
}

pub(super) struct Shared {
    pub(super) config: Mutex<FakeConfig>,
    pub(super) script: Mutex<VecDeque<Behaviour>>,
    pub(super) default: Mutex<Behaviour>,
    pub(super) requests: Mutex<Vec<RecordedRequest>>,
    /// Synthesis requests seen (numbers the random stalls).
    pub(super) synthesis: AtomicU64,
    /// Requests stalled by [`FakeConfig::stall_share`].
    pub(super) stalled: AtomicU64,
}

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    pub(super) fn update(&self, index: usize, f: impl FnOnce(&mut RecordedRequest)) {
        if let Some(r) = lock(&self.requests).get_mut(index) {
            f(r);
        }
    }
}

/// The loopback Inworld; see the module docs. Dropping it stops the server
/// and cuts open connections.
pub struct FakeInworld {
    addr: SocketAddr,
    shared: Arc<Shared>,
    server: Mutex<Option<JoinHandle<()>>>,
}

impl FakeInworld {
    /// Listen on 127.0.0.1 (a free port), speaking by default. Must run in
    /// a tokio runtime.
    ///
    /// # Panics
    /// If no loopback port can be bound.
    pub async fn start(config: FakeConfig) -> FakeInworld {
        let shared = Arc::new(Shared {
            config: Mutex::new(config),
            script: Mutex::new(VecDeque::new()),
            default: Mutex::new(Behaviour::Speak),
            requests: Mutex::new(Vec::new()),
            synthesis: AtomicU64::new(0),
            stalled: AtomicU64::new(0),
        });
        let conns = shared.clone();
        let listening = crate::fake::wire::listen(move |stream| wire::serve(stream, conns.clone()));
        let (addr, server) = match listening.await {
            Ok(l) => l,
            Err(e) => panic!("FakeInworld: cannot listen on 127.0.0.1: {e}"),
        };
        FakeInworld {
            addr,
            shared,
            server: Mutex::new(Some(server)),
        }
    }

    /// The API root to configure a client with: `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Requests stalled at random so far ([`FakeConfig::stall_share`]).
    pub fn stalled(&self) -> u64 {
        self.shared.stalled.load(Ordering::Relaxed)
    }

    /// The key the fake accepts.
    pub fn key(&self) -> String {
        lock(&self.shared.config).key.clone()
    }

    /// Answer the next synthesis request (after those already pushed) so.
    pub fn push(&self, b: Behaviour) {
        lock(&self.shared.script).push_back(b);
    }

    /// Answer so from now on, once the pushed behaviours are used up.
    pub fn set_default(&self, b: Behaviour) {
        *lock(&self.shared.default) = b;
    }

    /// Change how the fake speaks, for requests from now on.
    pub fn set_config(&self, config: FakeConfig) {
        *lock(&self.shared.config) = config;
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).clone()
    }

    /// Wait until `pred` holds for the requests, at most `timeout`.
    pub async fn wait_until(
        &self,
        timeout: Duration,
        pred: impl Fn(&[RecordedRequest]) -> bool,
    ) -> bool {
        crate::fake::wire::wait_until(timeout, || pred(&lock(&self.shared.requests))).await
    }

    /// Wait until the client of request `index` went away before the end
    /// of its response, at most `timeout`.
    pub async fn wait_for_disconnect(&self, index: usize, timeout: Duration) -> bool {
        self.wait_until(timeout, |r| {
            r.get(index).is_some_and(|q| q.client_disconnected)
        })
        .await
    }

    /// Stop listening and cut open connections.
    pub fn stop(&self) {
        if let Some(h) = lock(&self.server).take() {
            h.abort();
        }
    }
}

impl Drop for FakeInworld {
    fn drop(&mut self) {
        self.stop();
    }
}
