//! The Aura `POST /v1/speak` exchange without I/O: the URL and its query,
//! the JSON body, and how one response is read ([`Reply`]) — what is
//! audio, what is an error, and what an error says.
//!
//! Everything here is a pure function of its input, so the property tests
//! can throw any status, any `Content-Type` and any body, cut at any byte,
//! at [`Reply`] without a network.
//!
//! # The wire facts this relies on
//!
//! * The query always names the voice (`model`) and the output format
//!   explicitly: `encoding=mulaw`, `sample_rate=8000`, `container=none`.
//!   Deepgram's pages disagree on the REST defaults (`wav`/`linear16`/24 kHz
//!   on one page, MP3 on others), so nothing is left to a default.
//! * With `container=none` the 200 body is raw G.711 µ-law samples (one
//!   byte a sample) sent as they are made (chunked): any byte boundary is a
//!   sample boundary, so every network read is playable as it comes.
//! * Any other status carries a JSON error object, `{"err_code": …,
//!   "err_msg": …, "request_id": …}` (some errors use `reason`, `message`
//!   or `category`/`details` instead).
//! * The text may be at most [`MAX_TEXT_CHARS`] characters; longer text is
//!   refused with `413` ("Input text exceeds maximum character limit"), so
//!   a longer line is cut at sentence or word boundaries
//!   ([`crate::speech_text::split_text`], shared with Inworld, which has
//!   the same limit) and spoken as several requests in order.

use serde_json::{json, Value};
use voice::frames::Audio;
use voice::stages::tts::TtsError;

/// Deepgram's API root.
pub const DEFAULT_BASE_URL: &str = "https://api.deepgram.com";
/// The REST text-to-speech path.
pub const SPEAK_PATH: &str = "/v1/speak";
/// The default voice (the reference's fallback voice).
pub const DEFAULT_VOICE: &str = "aura-2-helena-en";
/// The telephone rate: Twilio plays 8 kHz µ-law.
pub const DEFAULT_SAMPLE_RATE: u32 = 8000;
/// The `encoding` the client always asks for.
pub const ENCODING: &str = "mulaw";
/// The `container` the client always asks for (raw samples, no header).
pub const CONTAINER: &str = "none";

/// The longest text one request may carry, in characters.
///
/// Deepgram's text-to-speech REST guide, section "Limits → Input Text
/// Limit" (<https://developers.deepgram.com/docs/text-to-speech>): "Aura-2,
/// Aura-1: 2000" max characters; a longer payload is answered `413`
/// ("Input Text Exceeded Character Limit", per
/// <https://developers.deepgram.com/docs/errors>). An older Deepgram help
/// article said 1000 for early Aura-2; lower the split's limit (the
/// client's `max_text_chars`) if Deepgram ever answers 413 below 2000.
pub const MAX_TEXT_CHARS: usize = 2000;

/// Most of an error body that is kept (the rest is not read).
pub const MAX_ERROR_BODY_BYTES: usize = 16 * 1024;

/// The prefix of every error text of this client.
const WHO: &str = "Deepgram Aura";

/// The `/v1/speak` URL for `voice` at `sample_rate` under `base_url`
/// (`https://api.deepgram.com`, or a fake's `http://127.0.0.1:PORT`; a
/// trailing slash is ignored and a `ws://`/`wss://` root — the live
/// socket's — is taken as `http://`/`https://`). The query is URL-encoded
/// and always carries `model`, `encoding=mulaw`, `sample_rate` and
/// `container=none`. `Err` says in words why the root is unusable.
pub fn speak_url(base_url: &str, voice: &str, sample_rate: u32) -> Result<reqwest::Url, String> {
    let trimmed = base_url.trim();
    let root = if let Some(rest) = trimmed.strip_prefix("wss://") {
        format!("https://{rest}")
    } else if let Some(rest) = trimmed.strip_prefix("ws://") {
        format!("http://{rest}")
    } else {
        trimmed.to_string()
    };
    let mut url = crate::v2::http_url("the Deepgram base URL", &root).map_err(|e| e.0)?;
    let path = format!("{}{SPEAK_PATH}", url.path().trim_end_matches('/'));
    url.set_path(&path);
    url.set_query(None);
    url.set_fragment(None);
    url.query_pairs_mut()
        .append_pair("model", voice)
        .append_pair("encoding", ENCODING)
        .append_pair("sample_rate", &sample_rate.to_string())
        .append_pair("container", CONTAINER);
    Ok(url)
}

/// The request body: `{"text": "…"}`.
pub fn request_body(text: &str) -> Value {
    json!({ "text": text })
}

/// Whether a `Content-Type` can carry the audio. Text, JSON, XML and HTML
/// cannot (an error page or a JSON error with a 200); a missing type or
/// any other type (`audio/*`, `application/octet-stream`, …) is taken as
/// audio — with `container=none` the bytes are raw samples whatever the
/// label.
pub fn is_audio_type(content_type: Option<&str>) -> bool {
    let Some(ct) = content_type else {
        return true;
    };
    let mime = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    !(mime.starts_with("text/")
        || mime.ends_with("json")
        || mime.ends_with("xml")
        || mime.starts_with("multipart/")
        || mime == "application/x-www-form-urlencoded")
}

/// What a Deepgram error body says, when it is a JSON object with
/// Deepgram's fields as strings: `"<err_code>: <err_msg>"` (or `reason`,
/// `message`, `description`, `category`/`details`). `None` for anything
/// else (not JSON, other shapes, fields of other types).
pub fn deepgram_message(body: &[u8]) -> Option<String> {
    let value: Value = serde_json::from_slice(body).ok()?;
    let obj = value.as_object()?;
    let field = |names: &[&str]| {
        names.iter().find_map(|n| {
            obj.get(*n)
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty())
        })
    };
    let code = field(&["err_code", "category", "code"]);
    let msg = field(&["err_msg", "reason", "message", "description", "details"]);
    match (code, msg) {
        (Some(c), Some(m)) => Some(format!("{c}: {m}")),
        (Some(c), None) => Some(c.to_string()),
        (None, Some(m)) => Some(m.to_string()),
        (None, None) => None,
    }
}

/// The error text of an answer that is not audio: the status with its
/// reason phrase and what the body says (Deepgram's message when present,
/// else a short printable excerpt), one line, bounded, with each of
/// `secrets` replaced by `<redacted>`.
pub fn error_text(status: u16, body: &[u8], secrets: &[&str]) -> String {
    let reason = reqwest::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .map(|r| format!(" {r}"))
        .unwrap_or_default();
    let detail = match deepgram_message(body) {
        Some(m) => crate::v2::excerpt(m.as_bytes(), secrets),
        None => crate::v2::excerpt(body, secrets),
    };
    if detail.trim().is_empty() {
        format!("{WHO}: HTTP {status}{reason} (empty body)")
    } else {
        format!("{WHO}: HTTP {status}{reason}: {detail}")
    }
}

/// What kind of answer a [`Reply`] is reading.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Kind {
    /// A 200 whose body is the audio.
    Audio,
    /// Another status: the body is an error.
    Status(u16),
    /// A 200 whose `Content-Type` (its start) says it is not audio.
    NotAudio(String),
}

/// Reads one `/v1/speak` response, body chunk by body chunk, as the
/// network hands them over.
///
/// * A 200 with an audio type: each chunk comes back at once as µ-law
///   [`Audio`] at the request's rate (the bytes as Deepgram sent them:
///   nothing decoded, so the Twilio sink sends them on as they are), in
///   pieces of at most 100 ms (800 bytes at 8 kHz), so a large read is
///   never one huge frame.
///   Every byte comes out once, in order. An end without a single byte is
///   an error (nothing to play), and so is more than the audio cap.
/// * Another status, or a 200 labelled as text/JSON: the body (up to
///   [`MAX_ERROR_BODY_BYTES`]) is kept and the end gives one error that
///   names the status and what Deepgram said.
///
/// After the first error the reply is over: every later call returns that
/// error again.
#[derive(Debug, Clone)]
pub struct Reply {
    kind: Kind,
    rate: u32,
    piece_bytes: usize,
    max_audio_bytes: usize,
    audio_bytes: usize,
    body: Vec<u8>,
    secret: String,
    failed: Option<TtsError>,
}

impl Reply {
    /// A reply with this status and `Content-Type`, for audio at
    /// `sample_rate`.
    pub fn new(status: u16, content_type: Option<&str>, sample_rate: u32) -> Reply {
        let kind = if status != 200 {
            Kind::Status(status)
        } else if is_audio_type(content_type) {
            Kind::Audio
        } else {
            let ct = content_type.unwrap_or("");
            Kind::NotAudio(ct.chars().take(256).collect())
        };
        let rate = sample_rate.max(1);
        Reply {
            kind,
            rate,
            piece_bytes: (rate as usize / 10).max(1),
            max_audio_bytes: usize::MAX,
            audio_bytes: 0,
            body: Vec::new(),
            secret: String::new(),
            failed: None,
        }
    }

    /// Keep `secret` (the API key) out of every error text.
    pub fn redacting(mut self, secret: &str) -> Reply {
        self.secret = secret.to_string();
        self
    }

    /// Refuse more than `bytes` of audio (a server that never stops).
    pub fn with_max_audio_bytes(mut self, bytes: usize) -> Reply {
        self.max_audio_bytes = bytes;
        self
    }

    /// Whether the body is audio (a 200 with an audio type).
    pub fn is_audio(&self) -> bool {
        self.kind == Kind::Audio
    }

    /// Audio bytes (µ-law samples) taken so far.
    pub fn audio_bytes(&self) -> usize {
        self.audio_bytes
    }

    /// The largest [`Audio`] piece, in µ-law bytes (100 ms).
    pub fn piece_bytes(&self) -> usize {
        self.piece_bytes
    }

    fn fail(&mut self, e: TtsError) -> TtsError {
        self.failed = Some(e.clone());
        e
    }

    fn seconds(&self, bytes: usize) -> f64 {
        bytes as f64 / f64::from(self.rate)
    }

    fn error_now(&self) -> TtsError {
        let secrets = [self.secret.as_str()];
        match &self.kind {
            Kind::Status(status) => TtsError(error_text(*status, &self.body, &secrets)),
            Kind::NotAudio(ct) => {
                let ct = crate::v2::excerpt(ct.as_bytes(), &secrets);
                let said = match deepgram_message(&self.body) {
                    Some(m) => crate::v2::excerpt(m.as_bytes(), &secrets),
                    None => crate::v2::excerpt(&self.body, &secrets),
                };
                TtsError(format!(
                    "{WHO}: HTTP 200 with Content-Type {ct:?}, not audio: {said}"
                ))
            }
            Kind::Audio => TtsError(format!("{WHO}: HTTP 200 with no audio (empty body)")),
        }
    }

    /// One body chunk: the audio in it (empty for an error body, or while
    /// it is still being read).
    pub fn on_chunk(&mut self, chunk: &[u8]) -> Result<Vec<Audio>, TtsError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        if self.kind != Kind::Audio {
            let room = MAX_ERROR_BODY_BYTES.saturating_sub(self.body.len());
            self.body
                .extend_from_slice(chunk.get(..chunk.len().min(room)).unwrap_or(&[]));
            if self.body.len() >= MAX_ERROR_BODY_BYTES {
                // Enough to say what went wrong; the rest is not read.
                let e = self.error_now();
                return Err(self.fail(e));
            }
            return Ok(Vec::new());
        }
        if chunk.len() > self.max_audio_bytes.saturating_sub(self.audio_bytes) {
            let e = TtsError(format!(
                "{WHO}: more than {:.0} s of audio for one request; stopped",
                self.seconds(self.max_audio_bytes)
            ));
            return Err(self.fail(e));
        }
        self.audio_bytes += chunk.len();
        Ok(chunk
            .chunks(self.piece_bytes)
            .map(|piece| Audio::mulaw(bytes::Bytes::copy_from_slice(piece), self.rate))
            .collect())
    }

    /// The body ended normally: `Ok` when audio was delivered, else the
    /// error this reply amounts to.
    pub fn on_end(&mut self) -> Result<(), TtsError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        if self.kind == Kind::Audio && self.audio_bytes > 0 {
            return Ok(());
        }
        let e = self.error_now();
        Err(self.fail(e))
    }

    /// The body broke off (`why`: a reset, a timeout): the error to report
    /// after whatever audio was already delivered.
    pub fn on_broken(&mut self, why: &str) -> TtsError {
        if let Some(e) = &self.failed {
            return e.clone();
        }
        let why = crate::v2::excerpt(why.as_bytes(), &[self.secret.as_str()]);
        let e = match &self.kind {
            Kind::Audio if self.audio_bytes > 0 => TtsError(format!(
                "{WHO}: the audio broke off after {} bytes ({:.2} s): {why}",
                self.audio_bytes,
                self.seconds(self.audio_bytes)
            )),
            Kind::Audio => TtsError(format!("{WHO}: no audio: {why}")),
            _ => {
                let TtsError(text) = self.error_now();
                TtsError(format!("{text} (body cut off: {why})"))
            }
        };
        self.fail(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_carries_the_whole_format_encoded() {
        let u = speak_url("https://api.deepgram.com/", "aura-2-helena-en", 8000).unwrap();
        assert_eq!(
            u.as_str(),
            "https://api.deepgram.com/v1/speak?model=aura-2-helena-en&encoding=mulaw&sample_rate=8000&container=none"
        );
        let u = speak_url("wss://proxy.example/dg", "a b&c", 16000).unwrap();
        assert_eq!(
            u.as_str(),
            "https://proxy.example/dg/v1/speak?model=a+b%26c&encoding=mulaw&sample_rate=16000&container=none"
        );
        assert!(speak_url("ftp://x", "v", 8000).is_err());
        assert!(speak_url("not a url", "v", 8000).is_err());
    }

    #[test]
    fn content_types() {
        for t in [
            None,
            Some("audio/mulaw"),
            Some("audio/basic"),
            Some("application/octet-stream"),
            Some(""),
        ] {
            assert!(is_audio_type(t), "{t:?}");
        }
        for t in [
            "application/json",
            "application/json; charset=utf-8",
            "text/html",
            "application/problem+json",
            "TEXT/PLAIN",
        ] {
            assert!(!is_audio_type(Some(t)), "{t}");
        }
    }

    #[test]
    fn deepgram_errors_are_read() {
        let body =
            br#"{"err_code":"INVALID_AUTH","err_msg":"Invalid credentials.","request_id":"x"}"#;
        assert_eq!(
            error_text(401, body, &[]),
            "Deepgram Aura: HTTP 401 Unauthorized: INVALID_AUTH: Invalid credentials."
        );
        assert_eq!(
            deepgram_message(br#"{"reason":"bad"}"#).as_deref(),
            Some("bad")
        );
        assert_eq!(deepgram_message(br#"{"err_code":5,"err_msg":[]}"#), None);
        let t = error_text(500, b"oops key-123 \x00", &["key-123"]);
        assert!(t.contains("HTTP 500") && !t.contains("key-123"), "{t}");
        assert!(error_text(502, b"", &[]).contains("empty body"));
    }

    #[test]
    fn audio_comes_out_in_small_pieces() {
        let mut r = Reply::new(200, Some("audio/mulaw"), 8000);
        let body: Vec<u8> = (0..2000).map(|i| (i % 256) as u8).collect();
        let a = r.on_chunk(&body).unwrap();
        assert_eq!(
            a.iter().map(|a| a.bytes.len()).collect::<Vec<_>>(),
            [800, 800, 400]
        );
        // µ-law as Deepgram sent it: the same bytes, never decoded.
        assert!(a
            .iter()
            .all(|a| a.encoding == voice::frames::Encoding::MuLaw && a.rate == 8000));
        assert_eq!(
            a.iter().flat_map(|a| a.bytes.to_vec()).collect::<Vec<_>>(),
            body
        );
        assert!(r.on_end().is_ok());
        let mut r = Reply::new(200, None, 8000);
        assert!(r.on_chunk(&[]).unwrap().is_empty());
        assert!(r.on_end().unwrap_err().0.contains("no audio"));
        let mut r = Reply::new(200, None, 8000).with_max_audio_bytes(10);
        assert!(r.on_chunk(&[1; 11]).is_err());
        assert!(r.on_end().is_err(), "an error stays");
    }
}
