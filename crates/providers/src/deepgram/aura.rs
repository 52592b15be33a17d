//! Deepgram Aura-2 text-to-speech over HTTP: one `POST /v1/speak` per
//! line, the audio played from its first byte.
//!
//! [`AuraTts`] is the pipeline's fallback voice (a
//! [`voice::stages::tts::Tts`]). For each line it sends
//!
//! ```text
//! POST https://api.deepgram.com/v1/speak?model=aura-2-helena-en&encoding=mulaw&sample_rate=8000&container=none
//! Authorization: Token <key>
//! Content-Type: application/json
//!
//! {"text": "…"}
//! ```
//!
//! and Deepgram answers `200` with the audio itself — raw 8 kHz µ-law
//! samples, streamed (chunked) while they are made — or another status
//! with a JSON error (`{"err_code", "err_msg", "request_id"}`). The query
//! and the response rules live in the sans-IO [`wire`] module; this module
//! is the I/O around them.
//!
//! # Streaming, lazily
//!
//! The TTS stage pulls a synthesis only about half a second ahead of
//! playback, so the body is read only as the [`TtsStream`] is polled: a
//! long line waits in Deepgram's socket (TCP flow control), not in memory.
//! Each network read becomes [`TtsEvent::Audio`] at once — µ-law as
//! Deepgram sent it (never decoded: at 8 kHz the pipeline hands it to
//! Twilio byte for byte), at the request's rate, in pieces of at most
//! 100 ms. Aura gives no word timings: no [`TtsEvent::Word`] is sent, and
//! the accountant estimates what the caller heard from the audio's length.
//!
//! Dropping the stream (a barge-in) drops the request: the connection is
//! closed mid-body, and Deepgram stops.
//!
//! # Time bounds
//!
//! No whole-request timeout (a long line legitimately streams for a
//! minute). Instead: [`AuraConfig::connect_timeout`] for the TCP/TLS
//! connection, [`AuraConfig::first_byte_timeout`] from sending a request to
//! its first audio bytes (head included), and [`AuraConfig::chunk_timeout`]
//! for each later wait for more bytes — counted only while the stream is
//! being polled, so the stage's own pacing never trips it.
//!
//! # Errors
//!
//! Every failure is one [`TtsError`] at the point it happens, after the
//! audio already delivered, and then the stream ends: a status other than
//! 200 (the status and Deepgram's `err_code: err_msg`), a 200 whose
//! `Content-Type` is JSON or text, a 200 with an empty body, a body that
//! breaks off or stalls. The API key never appears in an error text, a
//! log line or `Debug` output.
//!
//! # Long lines
//!
//! Aura takes at most 2,000 characters per request
//! ([`wire::MAX_TEXT_CHARS`]); a longer line is cut at sentence (else
//! word) boundaries ([`crate::speech_text::split_text`], as for Inworld)
//! and its pieces are requested one after another, each when the previous
//! one's audio has been read, in order.

#[path = "aura_wire.rs"]
pub mod wire;

use crate::v2::{describe_error, ConfigError};
use futures_util::stream;
use reqwest::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use voice::frames::Audio;
use voice::stages::tts::{Tts, TtsError, TtsEvent, TtsStream};
use wire::Reply;

pub use wire::{DEFAULT_BASE_URL, DEFAULT_SAMPLE_RATE, DEFAULT_VOICE, MAX_TEXT_CHARS};

/// Default bound on opening the connection (TCP and TLS).
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// Default bound from sending a request to its first audio bytes.
pub const DEFAULT_FIRST_BYTE_TIMEOUT: Duration = Duration::from_secs(5);
/// Default bound on each later wait for more audio.
pub const DEFAULT_CHUNK_TIMEOUT: Duration = Duration::from_secs(5);
/// Default cap on the audio of one request (a server that never stops).
pub const DEFAULT_MAX_AUDIO: Duration = Duration::from_secs(300);

/// How to reach Aura and what to ask it for.
#[derive(Clone, PartialEq, Eq)]
pub struct AuraConfig {
    /// The API root, default `https://api.deepgram.com` (a fake's
    /// `http://127.0.0.1:PORT`; a `ws(s)://` root is taken as `http(s)://`).
    pub base_url: String,
    /// The Deepgram API key (`DEEPGRAM_API_KEY`), sent as
    /// `Authorization: Token <key>`.
    pub api_key: String,
    /// The voice model, default `aura-2-helena-en`.
    pub voice: String,
    /// Output rate in Hz, default 8000 (Twilio's µ-law rate).
    pub sample_rate: u32,
    /// Opening the connection, default 3 s.
    pub connect_timeout: Duration,
    /// From sending a request to its first audio bytes, default 5 s.
    pub first_byte_timeout: Duration,
    /// Each later wait for more bytes while the stream is polled,
    /// default 5 s.
    pub chunk_timeout: Duration,
    /// Longest text per request, default [`MAX_TEXT_CHARS`] (2,000);
    /// longer lines are split.
    pub max_text_chars: usize,
    /// Most audio accepted for one request, default 5 minutes.
    pub max_audio: Duration,
}

impl AuraConfig {
    /// Deepgram's defaults with this key.
    pub fn new(api_key: impl Into<String>) -> AuraConfig {
        AuraConfig {
            base_url: DEFAULT_BASE_URL.to_string(),
            api_key: api_key.into(),
            voice: DEFAULT_VOICE.to_string(),
            sample_rate: DEFAULT_SAMPLE_RATE,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            first_byte_timeout: DEFAULT_FIRST_BYTE_TIMEOUT,
            chunk_timeout: DEFAULT_CHUNK_TIMEOUT,
            max_text_chars: MAX_TEXT_CHARS,
            max_audio: DEFAULT_MAX_AUDIO,
        }
    }

    /// The same configuration at another API root.
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> AuraConfig {
        self.base_url = base_url.into();
        self
    }

    /// The same configuration with another voice.
    pub fn with_voice(mut self, voice: impl Into<String>) -> AuraConfig {
        self.voice = voice.into();
        self
    }

    /// The endpoint every request goes to, query included (no key in
    /// it): for `calllock doctor` and logs. `Err` says why the base URL is
    /// unusable.
    pub fn speak_url(&self) -> Result<String, String> {
        wire::speak_url(&self.base_url, &self.voice, self.sample_rate).map(String::from)
    }
}

impl Default for AuraConfig {
    /// Deepgram's defaults without a key (set `api_key` before
    /// [`AuraTts::new`]).
    fn default() -> Self {
        AuraConfig::new("")
    }
}

impl std::fmt::Debug for AuraConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuraConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &"<redacted>")
            .field("voice", &self.voice)
            .field("sample_rate", &self.sample_rate)
            .field("connect_timeout", &self.connect_timeout)
            .field("first_byte_timeout", &self.first_byte_timeout)
            .field("chunk_timeout", &self.chunk_timeout)
            .field("max_text_chars", &self.max_text_chars)
            .field("max_audio", &self.max_audio)
            .finish()
    }
}

/// What every request of one [`AuraTts`] shares.
struct Inner {
    http: reqwest::Client,
    url: reqwest::Url,
    auth: HeaderValue,
    key: String,
    cfg: AuraConfig,
}

/// Deepgram Aura as the pipeline's voice; see the module docs. Cheap to
/// clone (one HTTP client and its connection pool per `AuraTts::new`).
#[derive(Clone)]
pub struct AuraTts {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for AuraTts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuraTts")
            .field("url", &self.inner.url.as_str())
            .finish_non_exhaustive()
    }
}

impl AuraTts {
    /// Check the configuration and build the HTTP client (rustls, no
    /// redirects, no whole-request timeout). Fails on a missing key, a key
    /// that cannot be a header, an unusable base URL, zero rate or limits.
    pub fn new(cfg: AuraConfig) -> Result<AuraTts, ConfigError> {
        if cfg.api_key.trim().is_empty() {
            return Err(ConfigError("Deepgram Aura: no API key".into()));
        }
        if cfg.sample_rate == 0 || cfg.max_text_chars == 0 {
            return Err(ConfigError(
                "Deepgram Aura: sample_rate and max_text_chars must be positive".into(),
            ));
        }
        let url = wire::speak_url(&cfg.base_url, &cfg.voice, cfg.sample_rate)
            .map_err(|e| ConfigError(format!("Deepgram Aura: {e}")))?;
        let mut auth =
            HeaderValue::from_str(&format!("Token {}", cfg.api_key.trim())).map_err(|_| {
                ConfigError("Deepgram Aura: the API key is not a valid header value".into())
            })?;
        auth.set_sensitive(true);
        let http = reqwest::Client::builder()
            .connect_timeout(cfg.connect_timeout)
            .redirect(reqwest::redirect::Policy::none())
            .tcp_nodelay(true)
            .pool_idle_timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| {
                ConfigError(format!(
                    "Deepgram Aura: cannot set up the HTTP client: {}",
                    describe_error(e)
                ))
            })?;
        Ok(AuraTts {
            inner: Arc::new(Inner {
                http,
                url,
                auth,
                key: cfg.api_key.trim().to_string(),
                cfg,
            }),
        })
    }

    /// The configuration it was made with.
    pub fn config(&self) -> &AuraConfig {
        &self.inner.cfg
    }

    /// The endpoint, query included (no key in it).
    pub fn speak_url(&self) -> &str {
        self.inner.url.as_str()
    }
}

impl Tts for AuraTts {
    /// Speak `text`: nothing is sent until the stream is first polled;
    /// blank text gives an empty stream (no request).
    fn synthesize(&self, text: &str) -> TtsStream {
        let pieces: VecDeque<String> =
            crate::speech_text::split_text(text, self.inner.cfg.max_text_chars).into();
        let speech = Speech {
            inner: self.inner.clone(),
            pieces,
            current: None,
            ready: VecDeque::new(),
            done: false,
        };
        Box::pin(stream::unfold(speech, |mut s| async move {
            let item = s.next_event().await?;
            Some((item, s))
        }))
    }
}

/// The response being read.
struct Current {
    resp: reqwest::Response,
    reply: Reply,
    /// When the first audio bytes are due (the request was sent
    /// `first_byte_timeout` before).
    first_audio_due: Instant,
}

/// One line being spoken: the pieces still to request, the response being
/// read, the audio read but not yet handed out.
struct Speech {
    inner: Arc<Inner>,
    pieces: VecDeque<String>,
    current: Option<Current>,
    ready: VecDeque<Audio>,
    done: bool,
}

impl Speech {
    fn fail(&mut self, e: TtsError) -> Option<Result<TtsEvent, TtsError>> {
        tracing::warn!(error = %e.0, "Deepgram Aura request failed");
        self.done = true;
        self.current = None;
        self.ready.clear();
        Some(Err(e))
    }

    async fn next_event(&mut self) -> Option<Result<TtsEvent, TtsError>> {
        loop {
            if self.done {
                return None;
            }
            if let Some(a) = self.ready.pop_front() {
                return Some(Ok(TtsEvent::Audio(a)));
            }
            let Some(cur) = self.current.as_mut() else {
                let Some(text) = self.pieces.pop_front() else {
                    self.done = true;
                    return None;
                };
                match self.open(&text).await {
                    Ok(cur) => self.current = Some(cur),
                    Err(e) => return self.fail(e),
                }
                continue;
            };
            let cfg = &self.inner.cfg;
            // Counted from now: the time between polls (the stage's
            // pacing) is never a stall.
            let first = cur.reply.is_audio() && cur.reply.audio_bytes() == 0;
            let due = if first {
                cur.first_audio_due
            } else {
                Instant::now() + cfg.chunk_timeout
            };
            match tokio::time::timeout_at(due, cur.resp.chunk()).await {
                Err(_) => {
                    let why = if first {
                        let secs = cfg.first_byte_timeout.as_secs_f64();
                        format!("no audio within {secs:.1} s")
                    } else {
                        format!("no data for {:.1} s", cfg.chunk_timeout.as_secs_f64())
                    };
                    let e = cur.reply.on_broken(&why);
                    return self.fail(e);
                }
                Ok(Err(e)) => {
                    let e = cur.reply.on_broken(&describe_error(e));
                    return self.fail(e);
                }
                Ok(Ok(Some(bytes))) => match cur.reply.on_chunk(&bytes) {
                    Ok(audio) => self.ready.extend(audio),
                    Err(e) => return self.fail(e),
                },
                Ok(Ok(None)) => match cur.reply.on_end() {
                    Ok(()) => {
                        tracing::debug!(bytes = cur.reply.audio_bytes(), "Deepgram Aura line done");
                        self.current = None;
                    }
                    Err(e) => return self.fail(e),
                },
            }
        }
    }

    /// Send one request and read its head.
    async fn open(&self, text: &str) -> Result<Current, TtsError> {
        let inner = &self.inner;
        let cfg = &inner.cfg;
        tracing::debug!(chars = text.chars().count(), voice = %cfg.voice, "Deepgram Aura request");
        let first_audio_due = Instant::now() + cfg.first_byte_timeout;
        let send = inner
            .http
            .post(inner.url.clone())
            .header(AUTHORIZATION, inner.auth.clone())
            .header(CONTENT_TYPE, "application/json")
            .body(wire::request_body(text).to_string())
            .send();
        let resp = match tokio::time::timeout_at(first_audio_due, send).await {
            Err(_) => {
                return Err(TtsError(format!(
                    "Deepgram Aura: no answer within {:.1} s",
                    cfg.first_byte_timeout.as_secs_f64()
                )))
            }
            Ok(Err(e)) => {
                let what = if e.is_connect() {
                    "cannot connect"
                } else {
                    "request failed"
                };
                let why = crate::v2::excerpt(describe_error(e).as_bytes(), &[inner.key.as_str()]);
                return Err(TtsError(format!("Deepgram Aura: {what}: {why}")));
            }
            Ok(Ok(r)) => r,
        };
        let content_type = resp
            .headers()
            .get(CONTENT_TYPE)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        let max_audio_bytes = (cfg.max_audio.as_secs_f64() * f64::from(cfg.sample_rate))
            .min(usize::MAX as f64) as usize;
        let reply = Reply::new(
            resp.status().as_u16(),
            content_type.as_deref(),
            cfg.sample_rate,
        )
        .redacting(&inner.key)
        .with_max_audio_bytes(max_audio_bytes);
        Ok(Current {
            resp,
            reply,
            first_audio_due,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_url() {
        let cfg = AuraConfig::new("k");
        assert_eq!(cfg.base_url, "https://api.deepgram.com");
        assert_eq!(cfg.voice, "aura-2-helena-en");
        assert_eq!(cfg.sample_rate, 8000);
        assert_eq!(
            cfg.speak_url().unwrap(),
            "https://api.deepgram.com/v1/speak?model=aura-2-helena-en&encoding=mulaw&sample_rate=8000&container=none"
        );
    }

    #[test]
    fn the_key_never_shows() {
        let cfg = AuraConfig::new("dg-secret-key");
        assert!(!format!("{cfg:?}").contains("dg-secret-key"));
        let tts = AuraTts::new(cfg).unwrap();
        assert!(!format!("{tts:?}").contains("dg-secret-key"));
        assert!(!tts.speak_url().contains("dg-secret-key"));
    }

    #[test]
    fn bad_configs_are_refused_without_the_key() {
        assert!(AuraTts::new(AuraConfig::default()).is_err());
        let e = AuraTts::new(AuraConfig::new("bad\nkey")).unwrap_err();
        assert!(!e.0.contains("bad\nkey"));
        assert!(AuraTts::new(AuraConfig::new("k").with_base_url("nope")).is_err());
    }

    #[tokio::test]
    async fn blank_text_sends_nothing() {
        use futures_util::StreamExt;
        let tts = AuraTts::new(AuraConfig::new("k").with_base_url("http://127.0.0.1:9")).unwrap();
        assert!(tts.synthesize("   ").next().await.is_none());
    }
}
