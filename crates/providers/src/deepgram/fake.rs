//! A loopback Deepgram live endpoint for tests (feature `testing`).
//!
//! It speaks the real protocol — a WebSocket at `/v1/listen` with the
//! `Authorization: Token …` header, binary audio up in the `encoding` and
//! `sample_rate` the query names, JSON results down — and "recognises" the
//! offline speech codec
//! (`voice::offline::codec`): the words a test phone speaks are the words
//! it transcribes. Timing follows the audio, not the wall clock (20 ms per
//! 160-byte frame), so tests may send audio faster than real time:
//!
//! * an interim `Results` after every word; a final one every
//!   [`FakeBehaviour::final_every_words`] words;
//! * after 500 ms of silence a final segment with `speech_final` (unless
//!   [`FakeBehaviour::speech_final`] is off), then `UtteranceEnd` after
//!   1 s without a word;
//! * `Finalize` → the pending words as a final `from_finalize` segment;
//!   `CloseStream` → the rest, `Metadata`, close;
//! * an empty final segment every 2 s of silence (as Deepgram does);
//! * an empty binary frame closes the socket (Deepgram reads it as a
//!   broken stream), and so do 10 s without any message (1011
//!   `NET-0001`).
//!
//! The audio is read as the query says: `encoding=mulaw` (one byte a
//! sample, as Twilio sends it) or `encoding=linear16` (16-bit
//! little-endian), at `sample_rate=8000` — the codec's telephone rate. A
//! query without them, or with another format, is refused with 400 (as
//! Deepgram refuses a bad query; raw audio needs both), so a client that
//! sends one format and names another is caught. Every audio byte received
//! is kept ([`FakeDeepgram::audio_received`]) unless
//! [`FakeBehaviour::keep_audio`] is off.
//!
//! Faults for the fault tests: refuse the handshake, drop the first socket
//! without a close frame after some words, never finalize with
//! `speech_final`, or hear but never transcribe.

use super::listen::{self, ClientMessage, Segment};
use futures_util::{SinkExt, StreamExt};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message;
use voice::offline::codec::{decode, decode_mulaw, from_bytes, Decoded, FRAME_SAMPLES_8K};

/// How the fake behaves (shared by every socket it accepts).
#[derive(Debug, Clone)]
pub struct FakeBehaviour {
    /// The key a client must present (`Authorization: Token <key>`).
    pub key: String,
    /// Refuse every handshake with this HTTP status.
    pub refuse: Option<u16>,
    /// Drop the first socket (no close frame) once it heard this many words.
    pub drop_after_words: Option<usize>,
    /// Finalize on 500 ms of silence with `speech_final` (Deepgram's
    /// endpointing); off: only `UtteranceEnd` ends an utterance.
    pub speech_final: bool,
    /// Hear audio but never send a transcript.
    pub silent: bool,
    /// A final segment every this many words.
    pub final_every_words: usize,
    /// Keep every audio byte for [`FakeDeepgram::audio_received`] (off
    /// for a load test: a thousand calls of it is 8 MB a second).
    pub keep_audio: bool,
}

impl Default for FakeBehaviour {
    fn default() -> Self {
        FakeBehaviour {
            key: "test-key".into(),
            refuse: None,
            drop_after_words: None,
            speech_final: true,
            silent: false,
            final_every_words: 3,
            keep_audio: true,
        }
    }
}

/// What the fake saw.
#[derive(Debug, Clone, Default)]
pub struct FakeLog {
    /// Sockets opened (handshakes accepted).
    pub connections: usize,
    /// Handshakes refused.
    pub refused: usize,
    /// The request paths with their queries.
    pub queries: Vec<String>,
    pub binary_frames: usize,
    pub empty_frames: usize,
    pub keepalives: usize,
    pub finalizes: usize,
    pub close_streams: usize,
    /// Every word heard in the audio, over all sockets, in order.
    pub words_heard: Vec<String>,
}

struct Shared {
    behaviour: Mutex<FakeBehaviour>,
    log: Mutex<FakeLog>,
    /// Every binary audio byte received, over all sockets, in order.
    audio: Mutex<Vec<u8>>,
}

/// How a socket's audio is encoded (its query's `encoding`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    /// G.711 µ-law, one byte a sample.
    MuLaw,
    /// 16-bit little-endian PCM.
    Linear16,
}

impl Format {
    fn bytes_per_sample(self) -> usize {
        match self {
            Format::MuLaw => 1,
            Format::Linear16 => 2,
        }
    }
}

/// The audio format a `/v1/listen` query names; `Err` says why the fake
/// cannot hear it.
fn format_of(path_and_query: &str) -> Result<Format, String> {
    let query = path_and_query.split_once('?').map_or("", |(_, q)| q);
    let param = |name: &str| {
        query
            .split('&')
            .filter_map(|kv| kv.split_once('='))
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v)
    };
    let format = match param("encoding") {
        Some("mulaw") => Format::MuLaw,
        Some("linear16") => Format::Linear16,
        Some(other) => return Err(format!("the fake hears mulaw or linear16, not {other:?}")),
        None => return Err("raw audio needs an encoding".into()),
    };
    match param("sample_rate") {
        Some("8000") => Ok(format),
        Some(other) => Err(format!("the fake hears 8000 Hz, not {other:?}")),
        None => Err("raw audio needs a sample_rate".into()),
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A running fake; stops when dropped.
pub struct FakeDeepgram {
    addr: SocketAddr,
    shared: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
}

impl FakeDeepgram {
    /// Listen on 127.0.0.1 (a free port).
    ///
    /// # Panics
    /// If no loopback port can be bound.
    pub async fn start(behaviour: FakeBehaviour) -> FakeDeepgram {
        let shared = Arc::new(Shared {
            behaviour: Mutex::new(behaviour),
            log: Mutex::new(FakeLog::default()),
            audio: Mutex::new(Vec::new()),
        });
        let conns = shared.clone();
        let listening = crate::fake::wire::listen(move |stream| serve(stream, conns.clone()));
        let (addr, server) = match listening.await {
            Ok(l) => l,
            Err(e) => panic!("FakeDeepgram: cannot listen on 127.0.0.1: {e}"),
        };
        FakeDeepgram {
            addr,
            shared,
            server,
        }
    }

    /// The base URL to configure a client with: `ws://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("ws://{}", self.addr)
    }

    /// What the fake saw so far.
    pub fn log(&self) -> FakeLog {
        lock(&self.shared.log).clone()
    }

    /// Every byte of binary audio received so far, over all sockets, in
    /// order, as it came off the socket (audio sent again after a
    /// reconnect appears again).
    pub fn audio_received(&self) -> Vec<u8> {
        lock(&self.shared.audio).clone()
    }

    /// Change the behaviour for the sockets accepted from now on.
    pub fn set_behaviour(&self, b: FakeBehaviour) {
        *lock(&self.shared.behaviour) = b;
    }
}

impl Drop for FakeDeepgram {
    fn drop(&mut self) {
        self.server.abort();
    }
}

// The handshake callback's error type is tungstenite's (an HTTP response).
#[allow(clippy::result_large_err)]
async fn serve(stream: TcpStream, shared: Arc<Shared>) {
    let behaviour = lock(&shared.behaviour).clone();
    // The audio format the accepted query names.
    let audio_format = std::sync::OnceLock::new();
    let check = |req: &Request, resp: Response| -> Result<Response, ErrorResponse> {
        let refuse = |status: u16, why: &str| {
            let mut r = ErrorResponse::new(Some(why.to_string()));
            *r.status_mut() = http_status(status)
                .unwrap_or(tokio_tungstenite::tungstenite::http::StatusCode::FORBIDDEN);
            if let Ok(v) = why.parse() {
                r.headers_mut().insert("dg-error", v);
            }
            Err(r)
        };
        let path = req
            .uri()
            .path_and_query()
            .map(|p| p.as_str().to_string())
            .unwrap_or_default();
        if let Some(status) = behaviour.refuse {
            lock(&shared.log).refused += 1;
            return refuse(status, "refused by the fake");
        }
        let auth = req
            .headers()
            .get("Authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        if auth != format!("Token {}", behaviour.key) || !path.starts_with("/v1/listen") {
            lock(&shared.log).refused += 1;
            return refuse(401, "Invalid credentials.");
        }
        match format_of(&path) {
            Ok(f) => {
                let _ = audio_format.set(f);
            }
            Err(why) => {
                lock(&shared.log).refused += 1;
                return refuse(400, &why);
            }
        }
        let mut log = lock(&shared.log);
        log.connections += 1;
        log.queries.push(path);
        Ok(resp)
    };
    let Ok(ws) = tokio_tungstenite::accept_hdr_async(stream, check).await else {
        return;
    };
    // Set by the handshake, which refuses a query without one.
    let Some(&format) = audio_format.get() else {
        return;
    };
    let first_socket = lock(&shared.log).connections == 1;
    let (mut tx, mut rx) = ws.split();
    let mut ear = Ear::new(behaviour.clone(), format);
    let mut words_this_socket = 0usize;
    loop {
        let msg = match tokio::time::timeout(Duration::from_secs(10), rx.next()).await {
            Err(_) => {
                let _ = tx
                    .send(Message::Close(Some(CloseFrame {
                        code: CloseCode::Error,
                        reason: "NET-0001".into(),
                    })))
                    .await;
                return;
            }
            Ok(None) | Ok(Some(Err(_))) => return,
            Ok(Some(Ok(m))) => m,
        };
        let out = match msg {
            Message::Binary(b) => {
                {
                    let mut log = lock(&shared.log);
                    log.binary_frames += 1;
                    if b.is_empty() {
                        log.empty_frames += 1;
                    }
                }
                if behaviour.keep_audio {
                    lock(&shared.audio).extend_from_slice(&b);
                }
                if b.is_empty() {
                    let _ = tx
                        .send(Message::Close(Some(CloseFrame {
                            code: CloseCode::Protocol,
                            reason: "DATA-0000".into(),
                        })))
                        .await;
                    return;
                }
                let (out, words) = ear.hear(&b);
                words_this_socket += words.len();
                lock(&shared.log).words_heard.extend(words);
                if first_socket
                    && behaviour
                        .drop_after_words
                        .is_some_and(|n| words_this_socket >= n)
                {
                    return; // gone without a close frame (1006 for the client)
                }
                out
            }
            Message::Text(t) => match listen::parse_client(t.as_str()) {
                ClientMessage::KeepAlive => {
                    lock(&shared.log).keepalives += 1;
                    Vec::new()
                }
                ClientMessage::Finalize => {
                    lock(&shared.log).finalizes += 1;
                    ear.finalize()
                }
                ClientMessage::CloseStream => {
                    lock(&shared.log).close_streams += 1;
                    let mut out = ear.close();
                    out.push(listen::metadata_message("fake-request", ear.t));
                    for m in out {
                        let _ = tx.send(Message::text(m)).await;
                    }
                    let _ = tx.send(Message::Close(None)).await;
                    return;
                }
                ClientMessage::Unknown => vec![serde_json::json!({"type": "Error",
                    "variant": "SchemaError", "description": "Could not deserialize last text message"})
                .to_string()],
            },
            Message::Close(_) => return,
            _ => Vec::new(),
        };
        for m in out {
            if tx.send(Message::text(m)).await.is_err() {
                return;
            }
        }
    }
}

fn http_status(code: u16) -> Option<tokio_tungstenite::tungstenite::http::StatusCode> {
    tokio_tungstenite::tungstenite::http::StatusCode::from_u16(code).ok()
}

/// The fake's recogniser: codec words in, Deepgram messages out.
struct Ear {
    b: FakeBehaviour,
    format: Format,
    /// Audio time of this socket (s).
    t: f64,
    pending: Vec<u8>,
    /// Words since the last final segment, and where that segment starts.
    words: Vec<String>,
    seg_start: f64,
    /// Words since the last `UtteranceEnd` (one per utterance).
    utterance_words: bool,
    /// Words since the last `speech_final`.
    endpoint_open: bool,
    last_word_end: f64,
    silence: f64,
    /// Silence already acknowledged with an empty final segment.
    acked_silence: f64,
}

impl Ear {
    fn new(b: FakeBehaviour, format: Format) -> Self {
        Ear {
            b,
            format,
            t: 0.0,
            pending: Vec::new(),
            words: Vec::new(),
            seg_start: 0.0,
            utterance_words: false,
            endpoint_open: false,
            last_word_end: 0.0,
            silence: 0.0,
            acked_silence: 0.0,
        }
    }

    fn segment(&mut self, is_final: bool, speech_final: bool, from_finalize: bool) -> String {
        let seg = Segment {
            transcript: self.words.join(" "),
            is_final,
            speech_final,
            from_finalize,
            start: self.seg_start,
            duration: (self.t - self.seg_start).max(0.0),
        };
        if is_final {
            self.words.clear();
            self.seg_start = self.t;
        }
        listen::results_message(&seg, "fake-request")
    }

    /// Audio in; messages out and the words heard.
    fn hear(&mut self, audio: &[u8]) -> (Vec<String>, Vec<String>) {
        self.pending.extend_from_slice(audio);
        let mut out = Vec::new();
        let mut heard = Vec::new();
        let frame_bytes = FRAME_SAMPLES_8K * self.format.bytes_per_sample();
        let mut pending = std::mem::take(&mut self.pending);
        let whole = pending.len() / frame_bytes * frame_bytes;
        for frame in pending[..whole].chunks(frame_bytes) {
            self.t += 0.02;
            let decoded = match self.format {
                Format::MuLaw => decode_mulaw(frame),
                Format::Linear16 => decode(&from_bytes(frame)),
            };
            match decoded {
                Decoded::Word(w) => {
                    heard.push(w.clone());
                    self.silence = 0.0;
                    self.acked_silence = 0.0;
                    if self.b.silent {
                        continue;
                    }
                    if self.words.is_empty() {
                        self.seg_start = self.t - 0.02;
                    }
                    self.words.push(w);
                    self.utterance_words = true;
                    self.endpoint_open = true;
                    self.last_word_end = self.t;
                    if self.words.len() >= self.b.final_every_words.max(1) {
                        out.push(self.segment(true, false, false));
                    } else {
                        out.push(self.segment(false, false, false));
                    }
                }
                Decoded::Voice => self.silence = 0.0,
                Decoded::Silence => {
                    self.silence += 0.02;
                    if self.b.silent {
                        continue;
                    }
                    if self.silence >= 0.5 - 1e-9 {
                        if self.b.speech_final && self.endpoint_open {
                            // Endpointing: the segment up to the pause,
                            // empty when its words were already final.
                            self.endpoint_open = false;
                            out.push(self.segment(true, true, false));
                        } else if !self.words.is_empty() {
                            out.push(self.segment(true, false, false));
                        }
                    }
                    if self.utterance_words && self.silence >= 1.0 - 1e-9 {
                        self.utterance_words = false;
                        out.push(listen::utterance_end_message(self.last_word_end));
                    }
                    if self.words.is_empty() && self.silence - self.acked_silence >= 2.0 - 1e-9 {
                        self.acked_silence = self.silence;
                        out.push(self.segment(true, false, false));
                    }
                }
            }
        }
        pending.drain(..whole);
        self.pending = pending;
        (out, heard)
    }

    fn finalize(&mut self) -> Vec<String> {
        if self.b.silent || self.words.is_empty() {
            return Vec::new(); // an answer is not guaranteed
        }
        vec![self.segment(true, false, true)]
    }

    fn close(&mut self) -> Vec<String> {
        if self.b.silent || self.words.is_empty() {
            return Vec::new();
        }
        vec![self.segment(true, true, false)]
    }
}
