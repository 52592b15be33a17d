//! Inworld as the pipeline's voice: [`InworldTts`] implements
//! [`voice::stages::tts::Tts`] over `POST {base}/tts/v1/voice:stream`.
//!
//! A line is synthesized lazily: nothing is sent until its stream is first
//! polled, and the response body is read only as the stream is polled, one
//! socket read at a time — the TTS stage pulls about half a second ahead of
//! playback, so the rest waits in TCP (the server's send buffer, not our
//! memory). Dropping the stream drops the response, which closes the
//! connection: that is how a barge-in cancels a request (Inworld has no
//! cancel message for HTTP).
//!
//! Text over [`InworldConfig::max_chars`] is sent as several requests, one
//! after the other (the next starts when the previous body ended); word
//! times are shifted by the audio of the earlier pieces so they stay
//! relative to the start of the line.
//!
//! Failures are one [`TtsError`] and the end of the stream: a connection
//! or status error before any audio, an `{"error": …}` line, a broken body
//! (reset or cut mid-stream), an unreadable line, or no bytes within
//! [`InworldConfig::first_byte_timeout`] (request sent → first body bytes)
//! or [`InworldConfig::chunk_timeout`] (each later wait). What an error
//! means — fall back, or cut the line short — is the fallback wrapper's
//! decision (`crate::tts_fallback`). The HTTP client has no whole-request
//! timeout: a long line legitimately streams for longer than any sane one.
//!
//! The key is sent as `Authorization: Basic <key>` (Inworld's key already
//! is the Basic credential), marked sensitive, and never appears in logs,
//! `Debug` output or error texts.

use super::stream::{request_body, Event, SpeechRequest, StreamDecoder, MAX_LINE_BYTES};
use super::MAX_CHARS;
use crate::speech_text::split_text;
use crate::v2::{check_url, describe_error, excerpt, ConfigError};
use reqwest::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::time::Instant;
use voice::accountant::WordTiming;
use voice::frames::Audio;
use voice::stages::tts::{Tts, TtsError, TtsEvent, TtsStream};

/// Inworld's API root.
pub const DEFAULT_BASE_URL: &str = "https://api.inworld.ai";
/// The reference deployment's voice.
pub const DEFAULT_VOICE: &str = "Ashley";
/// The reference deployment's model.
pub const DEFAULT_MODEL: &str = "inworld-tts-1.5-max";
/// The path of the streaming synthesis.
pub const STREAM_PATH: &str = "/tts/v1/voice:stream";
/// The path of the voice list (the probe).
pub const VOICES_PATH: &str = "/tts/v1/voices";

/// How to reach Inworld and what voice to ask for.
#[derive(Clone, PartialEq, Eq)]
pub struct InworldConfig {
    /// API root (default [`DEFAULT_BASE_URL`]; a trailing `/` is ignored).
    pub base_url: String,
    /// `INWORLD_API_KEY`: the Basic credential, sent as is.
    pub api_key: String,
    /// `INWORLD_VOICE_ID` (default "Ashley").
    pub voice_id: String,
    /// `INWORLD_MODEL` (default "inworld-tts-1.5-max").
    pub model_id: String,
    /// PCM sample rate asked for (default 8000: the phone's, no resampling).
    pub sample_rate: u32,
    /// `timestampTransportStrategy` (default `Some("SYNC")`: a word's
    /// timing arrives with its audio, so the accountant knows every word
    /// that played; `None` leaves the server's default).
    pub timestamp_transport: Option<String>,
    /// TCP + TLS connect bound (default 3 s).
    pub connect_timeout: Duration,
    /// Request sent → first body bytes of each piece (default 5 s).
    pub first_byte_timeout: Duration,
    /// Each later wait for body bytes (default 5 s).
    pub chunk_timeout: Duration,
    /// Longest text per request, in characters (default 2,000).
    pub max_chars: usize,
    /// Longest response line, in bytes (default 4 MiB).
    pub max_line_bytes: usize,
}

impl InworldConfig {
    /// The defaults with this key.
    pub fn new(api_key: impl Into<String>) -> Self {
        InworldConfig {
            api_key: api_key.into(),
            ..Self::default()
        }
    }

    fn base(&self) -> &str {
        self.base_url.trim_end_matches('/')
    }
}

impl Default for InworldConfig {
    /// Inworld's API, voice "Ashley", model "inworld-tts-1.5-max", 8 kHz,
    /// no key.
    fn default() -> Self {
        InworldConfig {
            base_url: DEFAULT_BASE_URL.into(),
            api_key: String::new(),
            voice_id: DEFAULT_VOICE.into(),
            model_id: DEFAULT_MODEL.into(),
            sample_rate: 8000,
            timestamp_transport: Some("SYNC".into()),
            connect_timeout: Duration::from_secs(3),
            first_byte_timeout: Duration::from_secs(5),
            chunk_timeout: Duration::from_secs(5),
            max_chars: MAX_CHARS,
            max_line_bytes: MAX_LINE_BYTES,
        }
    }
}

impl std::fmt::Debug for InworldConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InworldConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &"<redacted>")
            .field("voice_id", &self.voice_id)
            .field("model_id", &self.model_id)
            .field("sample_rate", &self.sample_rate)
            .field("timestamp_transport", &self.timestamp_transport)
            .field("connect_timeout", &self.connect_timeout)
            .field("first_byte_timeout", &self.first_byte_timeout)
            .field("chunk_timeout", &self.chunk_timeout)
            .field("max_chars", &self.max_chars)
            .field("max_line_bytes", &self.max_line_bytes)
            .finish()
    }
}

/// `Authorization: Basic <key>`, marked sensitive.
fn auth_header(key: &str) -> Result<HeaderValue, ConfigError> {
    let key = key.trim();
    if key.is_empty() {
        return Err(ConfigError("INWORLD_API_KEY is empty".into()));
    }
    let mut v = HeaderValue::from_str(&format!("Basic {key}")).map_err(|_| {
        ConfigError("INWORLD_API_KEY has characters an HTTP header cannot carry".into())
    })?;
    v.set_sensitive(true);
    Ok(v)
}

/// A per-request id: process id, process start time and a counter.
fn request_id() -> String {
    static BASE: OnceLock<String> = OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let base = BASE.get_or_init(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        format!("calllock-{:x}-{:x}", std::process::id(), nanos)
    });
    format!("{base}-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

struct Inner {
    http: reqwest::Client,
    url: reqwest::Url,
    auth: HeaderValue,
    cfg: InworldConfig,
}

/// Inworld streaming TTS; see the module docs. Cheap to clone (one HTTP
/// client, shared).
#[derive(Clone)]
pub struct InworldTts {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for InworldTts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InworldTts")
            .field("cfg", &self.inner.cfg)
            .finish_non_exhaustive()
    }
}

impl InworldTts {
    /// Check the configuration and build the HTTP client (rustls).
    pub fn new(cfg: InworldConfig) -> Result<Self, ConfigError> {
        check_url("INWORLD base URL", cfg.base())?;
        let url = reqwest::Url::parse(&format!("{}{STREAM_PATH}", cfg.base()))
            .map_err(|e| ConfigError(format!("INWORLD base URL: {e}")))?;
        let auth = auth_header(&cfg.api_key)?;
        if !(8000..=48000).contains(&cfg.sample_rate) {
            return Err(ConfigError(format!(
                "Inworld sample rate {} is outside 8000–48000 Hz",
                cfg.sample_rate
            )));
        }
        let http = reqwest::Client::builder()
            .connect_timeout(cfg.connect_timeout)
            .pool_idle_timeout(Duration::from_secs(60))
            .tcp_nodelay(true)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("calllock/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| {
                ConfigError(format!(
                    "cannot set up the HTTP client: {}",
                    describe_error(e)
                ))
            })?;
        Ok(InworldTts {
            inner: Arc::new(Inner {
                http,
                url,
                auth,
                cfg,
            }),
        })
    }

    /// The configuration in use.
    pub fn config(&self) -> &InworldConfig {
        &self.inner.cfg
    }

    /// The synthesis of `text` as a stream (what [`Tts::synthesize`]
    /// returns).
    pub fn stream(&self, text: &str) -> TtsStream {
        let cfg = &self.inner.cfg;
        let synthesis = Synthesis {
            inner: self.inner.clone(),
            pieces: split_text(text, cfg.max_chars).into(),
            queue: VecDeque::new(),
            body: None,
            decoder: StreamDecoder::new(cfg.max_line_bytes),
            deadline: None,
            offset: Duration::ZERO,
            piece_before: Duration::ZERO,
            piece_samples: 0,
            rate: cfg.sample_rate,
            request_id: String::new(),
            done: false,
        };
        Box::pin(futures_util::stream::unfold(
            synthesis,
            |mut s| async move {
                let item = s.next_item().await?;
                Some((item, s))
            },
        ))
    }
}

impl Tts for InworldTts {
    fn synthesize(&self, text: &str) -> TtsStream {
        self.stream(text)
    }
}

/// One line in flight.
struct Synthesis {
    inner: Arc<Inner>,
    /// Pieces not requested yet.
    pieces: VecDeque<String>,
    /// Items ready to go out.
    queue: VecDeque<Result<TtsEvent, TtsError>>,
    /// The response of the piece being read.
    body: Option<reqwest::Response>,
    decoder: StreamDecoder,
    /// Until when the first body bytes of this piece may take.
    deadline: Option<Instant>,
    /// Audio of the earlier pieces.
    offset: Duration,
    /// Audio of this piece at earlier sample rates (a WAV header may
    /// change the rate).
    piece_before: Duration,
    /// Samples of this piece at `rate` (after `piece_before`).
    piece_samples: u64,
    rate: u32,
    request_id: String,
    done: bool,
}

impl Synthesis {
    /// Audio of the current piece so far.
    fn piece_audio(&self) -> Duration {
        self.piece_before
            .saturating_add(duration_of(self.piece_samples, self.rate))
    }
}

fn duration_of(samples: u64, rate: u32) -> Duration {
    let nanos = u128::from(samples) * 1_000_000_000 / u128::from(rate.max(1));
    Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
}

impl Synthesis {
    async fn next_item(&mut self) -> Option<Result<TtsEvent, TtsError>> {
        loop {
            if let Some(item) = self.queue.pop_front() {
                return Some(item);
            }
            if self.done {
                return None;
            }
            if self.body.is_some() {
                self.read().await;
            } else {
                let Some(text) = self.pieces.pop_front() else {
                    self.done = true;
                    return None;
                };
                if let Err(e) = self.open(&text).await {
                    self.fail(e);
                }
            }
        }
    }

    fn fail(&mut self, message: String) {
        tracing::debug!(request_id = %self.request_id, error = %message, "Inworld synthesis failed");
        self.queue.push_back(Err(TtsError(message)));
        self.body = None;
        self.pieces.clear();
        self.done = true;
    }

    /// Send the request for the next piece.
    async fn open(&mut self, text: &str) -> Result<(), String> {
        let cfg = &self.inner.cfg;
        self.request_id = request_id();
        self.decoder = StreamDecoder::new(cfg.max_line_bytes);
        self.piece_before = Duration::ZERO;
        self.piece_samples = 0;
        self.rate = cfg.sample_rate;
        let body = request_body(&SpeechRequest {
            text,
            voice_id: &cfg.voice_id,
            model_id: &cfg.model_id,
            sample_rate: cfg.sample_rate,
            timestamp_transport: cfg.timestamp_transport.as_deref(),
        });
        tracing::debug!(request_id = %self.request_id, chars = text.chars().count(), "Inworld request");
        let deadline = Instant::now() + cfg.first_byte_timeout;
        let send = self
            .inner
            .http
            .post(self.inner.url.clone())
            .header(AUTHORIZATION, self.inner.auth.clone())
            .header(CONTENT_TYPE, "application/json")
            .header("X-Request-Id", self.request_id.as_str())
            .body(body.to_string())
            .send();
        let resp = match tokio::time::timeout_at(deadline, send).await {
            Err(_) => return Err(self.timed_out(cfg.first_byte_timeout)),
            Ok(Err(e)) => return Err(format!("Inworld: request failed: {}", describe_error(e))),
            Ok(Ok(r)) => r,
        };
        let status = resp.status();
        if status != reqwest::StatusCode::OK {
            return Err(self.status_error(status, resp).await);
        }
        self.deadline = Some(deadline);
        self.body = Some(resp);
        Ok(())
    }

    fn timed_out(&self, after: Duration) -> String {
        format!(
            "Inworld: no data within {:.1} s (request {})",
            after.as_secs_f64(),
            self.request_id
        )
    }

    /// A status error quoting the start of the body (at most 4 KiB, read
    /// for at most a second).
    async fn status_error(&self, status: reqwest::StatusCode, resp: reqwest::Response) -> String {
        let read = crate::v2::read_some(resp, 4096);
        let raw = tokio::time::timeout(Duration::from_secs(1), read)
            .await
            .unwrap_or_default();
        let text = excerpt(&raw, &[self.inner.cfg.api_key.trim()]);
        let mut msg = format!("Inworld: HTTP {status} (request {})", self.request_id);
        if !text.is_empty() {
            msg.push_str(": ");
            msg.push_str(&text);
        }
        msg
    }

    /// Read the next body bytes of the current piece and decode them.
    async fn read(&mut self) {
        let cfg = &self.inner.cfg;
        let (deadline, wait) = match self.deadline {
            Some(d) => (d, cfg.first_byte_timeout),
            None => (Instant::now() + cfg.chunk_timeout, cfg.chunk_timeout),
        };
        let Some(body) = self.body.as_mut() else {
            return;
        };
        let chunk = match tokio::time::timeout_at(deadline, body.chunk()).await {
            Err(_) => {
                let e = self.timed_out(wait);
                self.fail(e);
                return;
            }
            Ok(Err(e)) => {
                let e = format!(
                    "Inworld: the response broke off (request {}): {}",
                    self.request_id,
                    describe_error(e)
                );
                self.fail(e);
                return;
            }
            Ok(Ok(c)) => c,
        };
        let events = match &chunk {
            Some(bytes) => {
                if !bytes.is_empty() {
                    self.deadline = None;
                }
                self.decoder.push(bytes)
            }
            None => self.decoder.finish(),
        };
        self.take(events);
        if chunk.is_none() && !self.done {
            // This piece is complete: the next one's words start after it.
            self.body = None;
            self.offset = self.offset.saturating_add(self.piece_audio());
        }
    }

    fn take(&mut self, events: Vec<Result<Event, super::stream::StreamError>>) {
        for e in events {
            match e {
                Ok(Event::Word(w)) => self.queue.push_back(Ok(TtsEvent::Word(WordTiming {
                    word: w.word,
                    start: self.offset.saturating_add(w.start),
                }))),
                Ok(Event::Audio { pcm, rate }) => {
                    // A WAV header's rate wins over the one asked for.
                    if let Some(r) = rate.filter(|r| (1000..=384_000).contains(r)) {
                        if r != self.rate {
                            self.piece_before = self.piece_audio();
                            self.piece_samples = 0;
                            self.rate = r;
                        }
                    }
                    self.piece_samples += pcm.len() as u64 / 2;
                    self.queue
                        .push_back(Ok(TtsEvent::Audio(Audio::pcm16(pcm, self.rate))));
                }
                Err(e) => {
                    let e = format!("Inworld: {e} (request {})", self.request_id);
                    self.fail(e);
                    return;
                }
            }
        }
    }
}

/// `calllock doctor`: is the key accepted, and is the voice there?
///
/// `GET {base}/tts/v1/voices` — Inworld's voice list (`ListVoices`, a
/// `{"voices": [{"voiceId", "displayName", "languages", …}]}` answer, as
/// the docs' API reference and the LiveKit/Pipecat-style clients use it) —
/// is authenticated with the same Basic key, costs no characters and
/// creates nothing. 401/403 mean the key was refused; the key itself is
/// never printed.
pub async fn probe(cfg: &InworldConfig) -> Result<String, String> {
    let auth = auth_header(&cfg.api_key).map_err(|e| e.to_string())?;
    let base = cfg.base();
    check_url("INWORLD base URL", base).map_err(|e| e.to_string())?;
    let http = reqwest::Client::builder()
        .connect_timeout(cfg.connect_timeout)
        .timeout(cfg.connect_timeout + Duration::from_secs(10))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| format!("cannot set up the HTTP client: {}", describe_error(e)))?;
    let resp = http
        .get(format!("{base}{VOICES_PATH}"))
        .header(AUTHORIZATION, auth)
        .header("X-Request-Id", request_id())
        .send()
        .await
        .map_err(|e| format!("cannot reach Inworld at {base}: {}", describe_error(e)))?;
    let status = resp.status();
    let body = crate::v2::read_capped(resp, 8 * 1024 * 1024)
        .await
        .map_err(|e| format!("Inworld's answer broke off: {}", describe_error(e)))?;
    let key = cfg.api_key.trim();
    match status.as_u16() {
        200 => {}
        401 | 403 => {
            return Err(format!(
                "Inworld refused the key (HTTP {}): check INWORLD_API_KEY",
                status.as_u16()
            ))
        }
        _ => {
            return Err(format!(
                "Inworld answered HTTP {status}: {}",
                excerpt(&body, &[key])
            ))
        }
    }
    let voices: Vec<String> = serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| v.get("voices")?.as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(|v| v.get("voiceId")?.as_str().map(str::to_string))
        .collect();
    if voices.is_empty() {
        return Ok("Inworld accepted the key (no voice list in the answer)".into());
    }
    let voice = if voices.iter().any(|v| v == &cfg.voice_id) {
        format!("voice {:?} available", cfg.voice_id)
    } else {
        format!(
            "voice {:?} NOT in the list (check INWORLD_VOICE_ID)",
            cfg.voice_id
        )
    };
    Ok(format!(
        "Inworld accepted the key: {} voices, {voice}",
        voices.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_debug_hides_the_key_and_bad_configs_are_refused() {
        let cfg = InworldConfig::new("c2VjcmV0LWtleQ==");
        assert!(!format!("{cfg:?}").contains("c2VjcmV0"));
        assert!(InworldTts::new(cfg.clone()).is_ok());
        let tts = InworldTts::new(cfg.clone()).unwrap();
        assert!(!format!("{tts:?}").contains("c2VjcmV0"));
        for bad in [
            InworldConfig::new(""),
            InworldConfig::new("bad\nkey"),
            InworldConfig {
                base_url: "ftp://x".into(),
                ..cfg.clone()
            },
            InworldConfig {
                sample_rate: 4000,
                ..cfg.clone()
            },
        ] {
            let e = InworldTts::new(bad).unwrap_err();
            assert!(!e.0.contains("bad\nkey"), "{e}");
        }
    }

    #[test]
    fn request_ids_are_unique_and_durations_exact() {
        assert_ne!(request_id(), request_id());
        assert_eq!(duration_of(8000, 8000), Duration::from_secs(1));
        assert_eq!(duration_of(1, 3), Duration::from_nanos(333_333_333));
        assert_eq!(duration_of(5, 0), Duration::from_secs(5));
    }
}
