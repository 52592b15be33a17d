//! Deepgram's live transcription endpoint (`/v1/listen`), its wire
//! messages parsed and built (sans-IO).
//!
//! Every option is a query parameter fixed when the socket opens
//! ([`ListenOptions::url`]). Audio goes up as *binary* frames (never an
//! empty one: Deepgram reads that as a broken stream); control messages go
//! up as JSON *text* frames ([`KEEP_ALIVE`], [`FINALIZE`], [`CLOSE_STREAM`]).
//! Deepgram answers with JSON text frames ([`parse`]): `Results` (interim
//! and final segments), `UtteranceEnd` (a gap after the last final word),
//! `SpeechStarted` (its own VAD), `Metadata` (at close) and, for a bad
//! control message, an in-band `Error`. Fatal problems arrive as a close
//! frame instead (1011 `NET-0001`: nothing received for 10 s).

use serde_json::Value;

/// The largest message accepted from Deepgram (a result is ~1–3 KB).
pub const MAX_MESSAGE_BYTES: usize = 256 * 1024;

/// Keeps the socket open while no audio flows (send every few seconds:
/// Deepgram closes a socket that received nothing for 10 s).
pub const KEEP_ALIVE: &str = r#"{"type":"KeepAlive"}"#;
/// Process the audio received so far now and send its final results.
pub const FINALIZE: &str = r#"{"type":"Finalize"}"#;
/// Finish, send the remaining results and `Metadata`, then close.
pub const CLOSE_STREAM: &str = r#"{"type":"CloseStream"}"#;

/// The `encoding` of the audio a live socket carries, always: the caller's
/// G.711 µ-law, forwarded as it arrives from Twilio (other audio is
/// encoded to it by [`super::stt::DeepgramStt`]).
pub const ENCODING: &str = "mulaw";
/// The `sample_rate` of the audio a live socket carries, always (the
/// telephone's).
pub const SAMPLE_RATE: u32 = 8000;

/// The query of a live transcription socket. The audio's format is not an
/// option: the socket always carries what it says it carries, 8 kHz µ-law
/// ([`ENCODING`], [`SAMPLE_RATE`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenOptions {
    /// `nova-3` by default.
    pub model: String,
    pub language: String,
    /// Interim results (needed for `utterance_end_ms`, and for barge-in).
    pub interim_results: bool,
    /// Silence (ms) after which Deepgram finalizes with `speech_final`.
    pub endpointing_ms: u32,
    /// Gap (ms) after the last final word that sends `UtteranceEnd`.
    pub utterance_end_ms: u32,
    /// `SpeechStarted` messages.
    pub vad_events: bool,
    pub punctuate: bool,
    /// Off: it may hold finalization while a caller reads out digits.
    pub smart_format: bool,
    /// Words to favour (Nova-3 `keyterm`): the company name, the city.
    pub keyterms: Vec<String>,
}

impl Default for ListenOptions {
    /// The reference's design values (SPEC §8.4): 8 kHz µ-law, interim
    /// results, 500 ms endpointing, 1 s utterance end, VAD events,
    /// punctuation, no smart formatting.
    fn default() -> Self {
        ListenOptions {
            model: "nova-3".into(),
            language: "en".into(),
            interim_results: true,
            endpointing_ms: 500,
            utterance_end_ms: 1000,
            vad_events: true,
            punctuate: true,
            smart_format: false,
            keyterms: Vec::new(),
        }
    }
}

/// Percent-encode a query value (RFC 3986 unreserved characters pass).
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

impl ListenOptions {
    /// The socket URL under `base` (`wss://api.deepgram.com`, or a fake's
    /// `ws://127.0.0.1:port`).
    pub fn url(&self, base: &str) -> String {
        let mut q = vec![
            ("model", self.model.clone()),
            ("language", self.language.clone()),
            ("encoding", ENCODING.to_string()),
            ("sample_rate", SAMPLE_RATE.to_string()),
            ("channels", "1".into()),
            ("interim_results", self.interim_results.to_string()),
            ("endpointing", self.endpointing_ms.to_string()),
            ("utterance_end_ms", self.utterance_end_ms.to_string()),
            ("vad_events", self.vad_events.to_string()),
            ("punctuate", self.punctuate.to_string()),
            ("smart_format", self.smart_format.to_string()),
        ];
        for k in &self.keyterms {
            let k = k.trim();
            if !k.is_empty() {
                q.push(("keyterm", k.to_string()));
            }
        }
        let query: Vec<String> = q
            .iter()
            .map(|(k, v)| format!("{k}={}", encode(v)))
            .collect();
        format!(
            "{}/v1/listen?{}",
            base.trim_end_matches('/'),
            query.join("&")
        )
    }
}

/// A message from Deepgram.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerMessage {
    Results(Segment),
    /// No final word for `utterance_end_ms` after the one ending at
    /// `last_word_end` (seconds of this socket's audio).
    UtteranceEnd {
        last_word_end: f64,
    },
    /// Deepgram's VAD heard speech start at `timestamp` (seconds).
    SpeechStarted {
        timestamp: f64,
    },
    /// The summary sent at close.
    Metadata {
        request_id: String,
    },
    /// An in-band error (a control message it could not read).
    Error {
        description: String,
    },
    /// A message type this version does not know (tolerated).
    Other {
        kind: String,
    },
}

/// One `Results` message: a span of the audio and its best transcript.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    pub transcript: String,
    /// This span will not change again.
    pub is_final: bool,
    /// Deepgram's endpointing saw the caller stop (comes with `is_final`).
    pub speech_final: bool,
    /// The answer to a `Finalize`.
    pub from_finalize: bool,
    /// Seconds from the start of this socket's audio.
    pub start: f64,
    pub duration: f64,
}

impl Segment {
    /// Where the span ends (seconds of this socket's audio).
    pub fn end(&self) -> f64 {
        self.start + self.duration
    }
}

/// Why a message from Deepgram could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("Deepgram message of {0} bytes is over the limit")]
    TooLarge(usize),
    #[error("Deepgram message is not JSON: {0}")]
    NotJson(String),
    #[error("Deepgram message is not a JSON object with a \"type\"")]
    NoType,
    #[error("Deepgram `{kind}` message: field `{field}` is missing or of the wrong type")]
    Field { kind: String, field: &'static str },
}

/// A number field, or `default` when absent; an error when of another type.
fn num(v: &Value, field: &'static str, kind: &str, default: f64) -> Result<f64, ParseError> {
    match v.get(field) {
        None | Some(Value::Null) => Ok(default),
        Some(x) => x
            .as_f64()
            .filter(|f| f.is_finite())
            .ok_or(ParseError::Field {
                kind: kind.into(),
                field,
            }),
    }
}

fn flag(v: &Value, field: &'static str, kind: &str) -> Result<bool, ParseError> {
    match v.get(field) {
        None | Some(Value::Null) => Ok(false),
        Some(x) => x.as_bool().ok_or(ParseError::Field {
            kind: kind.into(),
            field,
        }),
    }
}

fn text(v: &Value, field: &'static str) -> String {
    v.get(field)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// Read one text frame from Deepgram.
pub fn parse(frame: &str) -> Result<ServerMessage, ParseError> {
    if frame.len() > MAX_MESSAGE_BYTES {
        return Err(ParseError::TooLarge(frame.len()));
    }
    let v: Value = serde_json::from_str(frame).map_err(|e| ParseError::NotJson(e.to_string()))?;
    let kind = v
        .get("type")
        .and_then(Value::as_str)
        .ok_or(ParseError::NoType)?
        .to_string();
    Ok(match kind.as_str() {
        "Results" => {
            let transcript = match v.pointer("/channel/alternatives/0/transcript") {
                None | Some(Value::Null) => String::new(),
                Some(Value::String(s)) => s.trim().to_string(),
                Some(_) => {
                    return Err(ParseError::Field {
                        kind,
                        field: "channel.alternatives[0].transcript",
                    })
                }
            };
            ServerMessage::Results(Segment {
                transcript,
                is_final: flag(&v, "is_final", &kind)?,
                speech_final: flag(&v, "speech_final", &kind)?,
                from_finalize: flag(&v, "from_finalize", &kind)?,
                start: num(&v, "start", &kind, 0.0)?,
                duration: num(&v, "duration", &kind, 0.0)?,
            })
        }
        "UtteranceEnd" => ServerMessage::UtteranceEnd {
            last_word_end: num(&v, "last_word_end", &kind, 0.0)?,
        },
        "SpeechStarted" => ServerMessage::SpeechStarted {
            timestamp: num(&v, "timestamp", &kind, 0.0)?,
        },
        "Metadata" => ServerMessage::Metadata {
            request_id: text(&v, "request_id"),
        },
        "Error" => {
            let mut description = text(&v, "description");
            if description.is_empty() {
                description = text(&v, "message");
            }
            ServerMessage::Error { description }
        }
        _ => ServerMessage::Other { kind },
    })
}

/// Build a `Results` message as Deepgram sends it (for the fake, and
/// tests).
pub fn results_message(seg: &Segment, request_id: &str) -> String {
    let words: Vec<Value> = seg
        .transcript
        .split_whitespace()
        .map(|w| serde_json::json!({"word": w.to_lowercase(), "punctuated_word": w, "confidence": 0.98}))
        .collect();
    serde_json::json!({
        "type": "Results",
        "channel_index": [0, 1],
        "duration": seg.duration,
        "start": seg.start,
        "is_final": seg.is_final,
        "speech_final": seg.speech_final,
        "from_finalize": seg.from_finalize,
        "channel": {"alternatives": [{"transcript": seg.transcript, "confidence": 0.98, "words": words}]},
        "metadata": {"request_id": request_id, "model_info": {"name": "fake", "version": "0", "arch": "fake"}},
    })
    .to_string()
}

/// Build an `UtteranceEnd` message.
pub fn utterance_end_message(last_word_end: f64) -> String {
    serde_json::json!({"type": "UtteranceEnd", "channel": [0, 1], "last_word_end": last_word_end})
        .to_string()
}

/// Build a `SpeechStarted` message.
pub fn speech_started_message(timestamp: f64) -> String {
    serde_json::json!({"type": "SpeechStarted", "channel": [0, 1], "timestamp": timestamp})
        .to_string()
}

/// Build the `Metadata` message sent at close.
pub fn metadata_message(request_id: &str, duration: f64) -> String {
    serde_json::json!({"type": "Metadata", "transaction_key": "deprecated", "request_id": request_id,
        "sha256": "", "created": "", "duration": duration, "channels": 1})
    .to_string()
}

/// What a client sent as a text frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientMessage {
    KeepAlive,
    Finalize,
    CloseStream,
    /// Anything else (Deepgram answers it with an in-band error).
    Unknown,
}

/// Read a client's text frame (the fake's side).
pub fn parse_client(frame: &str) -> ClientMessage {
    let v: Value = serde_json::from_str(frame).unwrap_or(Value::Null);
    match v.get("type").and_then(Value::as_str) {
        Some("KeepAlive") => ClientMessage::KeepAlive,
        Some("Finalize") => ClientMessage::Finalize,
        Some("CloseStream") => ClientMessage::CloseStream,
        _ => ClientMessage::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_url_carries_every_option_and_encodes_keyterms() {
        let o = ListenOptions {
            keyterms: vec!["ACE Cooling".into(), "Austin, Texas".into(), " ".into()],
            ..ListenOptions::default()
        };
        let url = o.url("wss://api.deepgram.com/");
        assert!(
            url.starts_with("wss://api.deepgram.com/v1/listen?model=nova-3&"),
            "{url}"
        );
        for p in [
            "encoding=mulaw",
            "sample_rate=8000",
            "interim_results=true",
            "endpointing=500",
            "utterance_end_ms=1000",
            "vad_events=true",
            "punctuate=true",
            "smart_format=false",
            "keyterm=ACE%20Cooling",
            "keyterm=Austin%2C%20Texas",
        ] {
            assert!(url.contains(p), "{p} missing in {url}");
        }
        assert_eq!(
            url.matches("keyterm=").count(),
            2,
            "blank keyterms are left out"
        );
    }

    #[test]
    fn results_round_trip_and_odd_fields_are_errors_not_panics() {
        let seg = Segment {
            transcript: "My AC is broken.".into(),
            is_final: true,
            speech_final: true,
            from_finalize: false,
            start: 1.5,
            duration: 2.25,
        };
        assert_eq!(
            parse(&results_message(&seg, "r1")),
            Ok(ServerMessage::Results(seg))
        );
        assert_eq!(
            parse(&utterance_end_message(3.5)),
            Ok(ServerMessage::UtteranceEnd { last_word_end: 3.5 })
        );
        assert_eq!(
            parse(r#"{"type":"Results","is_final":"yes"}"#),
            Err(ParseError::Field {
                kind: "Results".into(),
                field: "is_final"
            })
        );
        assert!(matches!(
            parse(r#"{"type":"Results"}"#),
            Ok(ServerMessage::Results(s)) if s.transcript.is_empty() && !s.is_final
        ));
        assert_eq!(parse("[1]"), Err(ParseError::NoType));
        assert!(matches!(parse("{"), Err(ParseError::NotJson(_))));
        assert_eq!(
            parse(r#"{"type":"Brand new","x":1}"#),
            Ok(ServerMessage::Other {
                kind: "Brand new".into()
            })
        );
        assert_eq!(
            parse(r#"{"type":"Error","variant":"SchemaError","message":"bad"}"#),
            Ok(ServerMessage::Error {
                description: "bad".into()
            })
        );
    }

    #[test]
    fn client_messages() {
        assert_eq!(parse_client(KEEP_ALIVE), ClientMessage::KeepAlive);
        assert_eq!(parse_client(FINALIZE), ClientMessage::Finalize);
        assert_eq!(parse_client(CLOSE_STREAM), ClientMessage::CloseStream);
        assert_eq!(parse_client("hello"), ClientMessage::Unknown);
    }
}
