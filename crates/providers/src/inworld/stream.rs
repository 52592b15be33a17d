//! The `voice:stream` request body and its response, line by line
//! (sans-IO).
//!
//! **Request** ([`request_body`]): `{"text", "voiceId", "modelId",
//! "audioConfig": {"audioEncoding": "LINEAR16", "sampleRateHertz"},
//! "timestampType": "WORD", "timestampTransportStrategy"?}`.
//!
//! **Response**: one JSON object per line, each either
//! `{"result": {...}}` or `{"error": {"code", "message", "details"}}`; an
//! error may come after audio. A result may carry
//!
//! * `audioContent`: base64 audio (with `LINEAR16`, a WAV header per
//!   chunk; see [`super::wav`]);
//! * `timestampInfo.wordAlignment`: `{"words": [...],
//!   "wordStartTimeSeconds": [...], "wordEndTimeSeconds": [...]}`, times
//!   from the start of *this request's* audio — with or without audio on
//!   the same line;
//! * `usage`, `timestampInfo.characterAlignment`, phonetic details and
//!   whatever comes next, all ignored.
//!
//! [`parse_line`] is tolerant where it can afford to be: unknown fields are
//! ignored, a line with neither `result` nor `error` is skipped, base64 is
//! accepted with or without padding and in either alphabet, word arrays of
//! different lengths are paired as far as both go, a word entry of the
//! wrong type is skipped (its audio still plays; the accountant loses one
//! timing). It is strict where audio would be lost or garbled: a line that
//! is not a JSON object, or audio that is not a base64 string, is an error.
//!
//! [`StreamDecoder`] is the whole response: [`super::ndjson`] framing, this
//! parser and [`super::wav`]'s PCM assembly, fed with whatever bytes the
//! socket gave and yielding audio and word timings in order, then at most
//! one error, after which it yields nothing.

use super::ndjson::{LineSplitter, LineTooLong};
use super::wav::{PcmAssembler, WavError};
use base64::alphabet;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::Engine;
use serde_json::{json, Map, Value};
use std::time::Duration;
use voice::accountant::WordTiming;

/// Longest response line accepted by default (a line is one audio chunk
/// in base64; real ones are tens of KiB).
pub const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

/// Longest excerpt of a bad line or a vendor message put in an error.
const EXCERPT_CHARS: usize = 160;

/// What to synthesize and how (the request body's fields).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpeechRequest<'a> {
    pub text: &'a str,
    pub voice_id: &'a str,
    pub model_id: &'a str,
    /// `audioConfig.sampleRateHertz` (Inworld accepts 8000–48000).
    pub sample_rate: u32,
    /// `timestampTransportStrategy` (`SYNC`: timings travel with their
    /// audio; `ASYNC`: they may come on later lines), or the server's
    /// default when `None`.
    pub timestamp_transport: Option<&'a str>,
}

/// The JSON body of a `voice:stream` request: 16-bit PCM (`LINEAR16`) at
/// the requested rate with word timestamps.
pub fn request_body(r: &SpeechRequest<'_>) -> Value {
    let mut body = json!({
        "text": r.text,
        "voiceId": r.voice_id,
        "modelId": r.model_id,
        "audioConfig": {
            "audioEncoding": "LINEAR16",
            "sampleRateHertz": r.sample_rate,
        },
        "timestampType": "WORD",
    });
    if let (Some(t), Some(obj)) = (r.timestamp_transport, body.as_object_mut()) {
        obj.insert("timestampTransportStrategy".into(), json!(t));
    }
    body
}

/// Why a response stream cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    /// An `{"error": …}` line from Inworld.
    #[error("error {code}: {message}")]
    Vendor { code: String, message: String },
    /// A line longer than the limit.
    #[error(transparent)]
    LineTooLong(#[from] LineTooLong),
    /// A line that is not what the protocol says.
    #[error("unreadable response line ({reason}): {excerpt}")]
    BadLine {
        reason: &'static str,
        excerpt: String,
    },
    /// Audio that cannot be played.
    #[error("unusable audio: {0}")]
    BadAudio(String),
}

impl From<WavError> for StreamError {
    fn from(e: WavError) -> Self {
        StreamError::BadAudio(e.to_string())
    }
}

/// One line of the response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// A result: raw audio (still with any WAV header) and word timings
    /// relative to the request's audio, either possibly empty.
    Result {
        audio: Vec<u8>,
        words: Vec<WordTiming>,
    },
    /// Inworld reported an error.
    Error { code: String, message: String },
    /// Nothing we use (no `result`, no `error`).
    Other,
}

/// A short printable excerpt.
pub(crate) fn excerpt(text: &str) -> String {
    let mut out: String = text
        .chars()
        .take(EXCERPT_CHARS)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if text.chars().nth(EXCERPT_CHARS).is_some() {
        out.push('…');
    }
    out
}

fn bad_line(reason: &'static str, line: &[u8]) -> StreamError {
    StreamError::BadLine {
        reason,
        excerpt: excerpt(&String::from_utf8_lossy(line.get(..1024).unwrap_or(line))),
    }
}

const LENIENT: GeneralPurposeConfig = GeneralPurposeConfig::new()
    .with_decode_padding_mode(DecodePaddingMode::Indifferent)
    .with_decode_allow_trailing_bits(true);
const STANDARD: GeneralPurpose = GeneralPurpose::new(&alphabet::STANDARD, LENIENT);
const URL_SAFE: GeneralPurpose = GeneralPurpose::new(&alphabet::URL_SAFE, LENIENT);

/// Decode base64 in the standard or URL-safe alphabet, padded or not,
/// ignoring ASCII whitespace.
pub fn decode_base64(s: &str) -> Option<Vec<u8>> {
    let compact;
    let s = if s.bytes().any(|b| b.is_ascii_whitespace()) {
        compact = s
            .chars()
            .filter(|c| !c.is_ascii_whitespace())
            .collect::<String>();
        compact.as_str()
    } else {
        s
    };
    STANDARD.decode(s).or_else(|_| URL_SAFE.decode(s)).ok()
}

/// A number, or a string holding one.
fn seconds(v: &Value) -> Option<Duration> {
    let secs = match v {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => s.trim().parse::<f64>().ok()?,
        _ => return None,
    };
    if secs.is_nan() {
        return None;
    }
    Duration::try_from_secs_f64(secs.max(0.0)).ok()
}

fn word_timings(result: &Map<String, Value>) -> Vec<WordTiming> {
    let info = result
        .get("timestampInfo")
        .or_else(|| result.get("audioChunk")?.get("timestampInfo"));
    let Some(align) = info.and_then(|i| i.get("wordAlignment")) else {
        return Vec::new();
    };
    let (Some(words), Some(starts)) = (
        align.get("words").and_then(Value::as_array),
        align.get("wordStartTimeSeconds").and_then(Value::as_array),
    ) else {
        return Vec::new();
    };
    words
        .iter()
        .zip(starts)
        .filter_map(|(w, s)| {
            let word = w.as_str().map(str::trim).filter(|w| !w.is_empty())?;
            Some(WordTiming {
                word: word.to_string(),
                start: seconds(s)?,
            })
        })
        .collect()
}

fn error_fields(e: &Value) -> (String, String) {
    let code = match e.get("code") {
        Some(Value::String(s)) => excerpt(s),
        Some(Value::Number(n)) => n.to_string(),
        _ => "?".to_string(),
    };
    let message = match e {
        Value::String(s) => s.as_str(),
        _ => e.get("message").and_then(Value::as_str).unwrap_or(""),
    };
    let message = if message.trim().is_empty() {
        "no message".to_string()
    } else {
        excerpt(message.trim())
    };
    (code, message)
}

/// Parse one (trimmed, non-blank) line of the response.
pub fn parse_line(line: &[u8]) -> Result<Line, StreamError> {
    let v: Value = serde_json::from_slice(line).map_err(|_| bad_line("not JSON", line))?;
    let Value::Object(obj) = v else {
        return Err(bad_line("not a JSON object", line));
    };
    if let Some(e) = obj.get("error").filter(|e| !e.is_null()) {
        let (code, message) = error_fields(e);
        return Ok(Line::Error { code, message });
    }
    let result = match obj.get("result") {
        None | Some(Value::Null) => return Ok(Line::Other),
        Some(Value::Object(r)) => r,
        Some(_) => return Err(bad_line("result is not an object", line)),
    };
    let content = result
        .get("audioContent")
        .or_else(|| result.get("audioChunk")?.get("audioContent"));
    let audio = match content {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => {
            decode_base64(s).ok_or_else(|| bad_line("audioContent is not base64", line))?
        }
        Some(_) => return Err(bad_line("audioContent is not a string", line)),
    };
    Ok(Line::Result {
        audio,
        words: word_timings(result),
    })
}

/// What the decoder yields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// Whole PCM16 samples (no WAV header), never empty, and the sample
    /// rate of the last WAV header seen, if any.
    Audio { pcm: Vec<u8>, rate: Option<u32> },
    /// A word and its start from the start of the request's audio.
    Word(WordTiming),
}

/// A whole `voice:stream` response, fed in any pieces; see the module docs.
#[derive(Debug, Clone)]
pub struct StreamDecoder {
    lines: LineSplitter,
    pcm: PcmAssembler,
    failed: bool,
    /// Audio bytes yielded so far.
    audio_bytes: u64,
}

impl StreamDecoder {
    /// A decoder refusing lines longer than `max_line_bytes`.
    pub fn new(max_line_bytes: usize) -> Self {
        StreamDecoder {
            lines: LineSplitter::new(max_line_bytes),
            pcm: PcmAssembler::new(),
            failed: false,
            audio_bytes: 0,
        }
    }

    /// Whether an error was yielded (nothing more comes out).
    pub fn failed(&self) -> bool {
        self.failed
    }

    /// Audio bytes yielded so far.
    pub fn audio_bytes(&self) -> u64 {
        self.audio_bytes
    }

    /// The sample rate of the last WAV header in the audio, if any.
    pub fn header_rate(&self) -> Option<u32> {
        self.pcm.header_rate()
    }

    /// Feed the next body bytes; returns what they complete, in order (an
    /// error is last).
    pub fn push(&mut self, bytes: &[u8]) -> Vec<Result<Event, StreamError>> {
        let mut out = Vec::new();
        if self.failed {
            return out;
        }
        for line in self.lines.push(bytes) {
            let step = line
                .map_err(StreamError::from)
                .and_then(|l| self.line(&l, &mut out));
            if let Err(e) = step {
                self.failed = true;
                out.push(Err(e));
                break;
            }
        }
        out
    }

    /// The body ended: the last line (without a line end) and the last
    /// samples.
    pub fn finish(&mut self) -> Vec<Result<Event, StreamError>> {
        let mut out = Vec::new();
        if self.failed {
            return out;
        }
        if let Some(line) = self.lines.finish() {
            if let Err(e) = self.line(&line, &mut out) {
                self.failed = true;
                out.push(Err(e));
                return out;
            }
        }
        let (last, dropped) = self.pcm.finish();
        if dropped > 0 {
            tracing::debug!(dropped, "Inworld audio ended with a torn sample or header");
        }
        self.audio(last, &mut out);
        out
    }

    fn line(
        &mut self,
        line: &[u8],
        out: &mut Vec<Result<Event, StreamError>>,
    ) -> Result<(), StreamError> {
        match parse_line(line)? {
            Line::Result { audio, words } => {
                out.extend(words.into_iter().map(|w| Ok(Event::Word(w))));
                if !audio.is_empty() {
                    let pcm = self.pcm.push(&audio)?;
                    self.audio(pcm, out);
                }
                Ok(())
            }
            Line::Error { code, message } => Err(StreamError::Vendor { code, message }),
            Line::Other => Ok(()),
        }
    }

    fn audio(&mut self, pcm: Vec<u8>, out: &mut Vec<Result<Event, StreamError>>) {
        if !pcm.is_empty() {
            self.audio_bytes += pcm.len() as u64;
            let rate = self.pcm.header_rate();
            out.push(Ok(Event::Audio { pcm, rate }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inworld::wav::canonical_header;
    use base64::engine::general_purpose::STANDARD as B64;

    fn result_line(audio: &[u8], words: &[(&str, f64)]) -> String {
        let mut r = json!({"audioContent": B64.encode(audio)});
        if !words.is_empty() {
            r["timestampInfo"] = json!({"wordAlignment": {
                "words": words.iter().map(|w| w.0).collect::<Vec<_>>(),
                "wordStartTimeSeconds": words.iter().map(|w| w.1).collect::<Vec<_>>(),
                "wordEndTimeSeconds": words.iter().map(|w| w.1 + 0.1).collect::<Vec<_>>(),
            }});
        }
        format!("{}\n", json!({ "result": r }))
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn the_request_body_is_as_documented() {
        let r = SpeechRequest {
            text: "Hello.",
            voice_id: "Ashley",
            model_id: "inworld-tts-1.5-max",
            sample_rate: 8000,
            timestamp_transport: Some("SYNC"),
        };
        assert_eq!(
            request_body(&r),
            json!({"text": "Hello.", "voiceId": "Ashley", "modelId": "inworld-tts-1.5-max",
                "audioConfig": {"audioEncoding": "LINEAR16", "sampleRateHertz": 8000},
                "timestampType": "WORD", "timestampTransportStrategy": "SYNC"})
        );
        let r = SpeechRequest {
            timestamp_transport: None,
            ..r
        };
        assert!(request_body(&r).get("timestampTransportStrategy").is_none());
    }

    #[test]
    fn lines_parse_tolerantly() {
        let l = result_line(&[1, 2, 3, 4], &[("Hi", 0.0), ("there", 0.25)]);
        assert_eq!(
            parse_line(l.trim().as_bytes()),
            Ok(Line::Result {
                audio: vec![1, 2, 3, 4],
                words: vec![
                    WordTiming {
                        word: "Hi".into(),
                        start: ms(0)
                    },
                    WordTiming {
                        word: "there".into(),
                        start: ms(250)
                    },
                ],
            })
        );
        // Timestamps without audio, mismatched arrays, bad entries, strings.
        let l = br#"{"result":{"timestampInfo":{"wordAlignment":{"words":["a","b",7,"c",""],
            "wordStartTimeSeconds":[0.5,-1,0.7,"1.5",2,3]}}}}"#;
        let Ok(Line::Result { audio, words }) = parse_line(l) else {
            panic!("{:?}", parse_line(l));
        };
        assert!(audio.is_empty());
        let got: Vec<(&str, Duration)> = words.iter().map(|w| (w.word.as_str(), w.start)).collect();
        assert_eq!(got, [("a", ms(500)), ("b", ms(0)), ("c", ms(1500))]);
        // Unpadded and URL-safe base64, whitespace inside.
        for b64 in ["+/8", "-_8=", "+/8=\n"] {
            let l = format!(
                r#"{{"result":{{"audioContent":"{}"}}}}"#,
                b64.escape_debug()
            );
            assert_eq!(
                parse_line(l.as_bytes()),
                Ok(Line::Result {
                    audio: vec![0xfb, 0xff],
                    words: vec![]
                }),
                "{b64}"
            );
        }
        assert_eq!(parse_line(br#"{"usage":{}}"#), Ok(Line::Other));
        assert_eq!(
            parse_line(br#"{"result":null,"error":null}"#),
            Ok(Line::Other)
        );
    }

    #[test]
    fn errors_and_garbage() {
        assert_eq!(
            parse_line(br#"{"error":{"code":8,"message":"quota exhausted","details":[]}}"#),
            Ok(Line::Error {
                code: "8".into(),
                message: "quota exhausted".into()
            })
        );
        assert_eq!(
            parse_line(br#"{"result":{"audioContent":"AAAA"},"error":"boom"}"#),
            Ok(Line::Error {
                code: "?".into(),
                message: "boom".into()
            })
        );
        for (line, reason) in [
            (&b"{\"result\":"[..], "not JSON"),
            (b"[1,2]", "not a JSON object"),
            (br#"{"result":[]}"#, "result is not an object"),
            (
                br#"{"result":{"audioContent":5}}"#,
                "audioContent is not a string",
            ),
            (
                br#"{"result":{"audioContent":"@@@@"}}"#,
                "audioContent is not base64",
            ),
        ] {
            match parse_line(line) {
                Err(StreamError::BadLine { reason: r, .. }) => assert_eq!(r, reason),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn the_decoder_strips_headers_keeps_order_and_stops_at_an_error() {
        let h = canonical_header(8000, 4);
        let body = [
            result_line(&[h.clone(), vec![1, 2, 3]].concat(), &[("one", 0.0)]),
            "\r\n".to_string(),
            result_line(&[h.clone(), vec![4, 5, 6]].concat(), &[("two", 0.5)]),
            r#"{"error":{"code":13,"message":"internal"}}"#.to_string() + "\n",
            result_line(&[7, 8], &[]),
        ]
        .concat();
        let mut d = StreamDecoder::new(MAX_LINE_BYTES);
        let mut got = Vec::new();
        for b in body.as_bytes().chunks(7) {
            got.extend(d.push(b));
        }
        got.extend(d.finish());
        let word = |w: &str, t| {
            Ok(Event::Word(WordTiming {
                word: w.into(),
                start: ms(t),
            }))
        };
        assert_eq!(
            got,
            vec![
                word("one", 0),
                Ok(Event::Audio {
                    pcm: vec![1, 2],
                    rate: Some(8000)
                }),
                word("two", 500),
                Ok(Event::Audio {
                    pcm: vec![3, 4, 5, 6],
                    rate: Some(8000)
                }),
                Err(StreamError::Vendor {
                    code: "13".into(),
                    message: "internal".into()
                }),
            ]
        );
        assert!(d.failed());
        assert_eq!(d.audio_bytes(), 6);
        assert_eq!(d.header_rate(), Some(8000));
    }

    #[test]
    fn a_last_line_without_newline_and_a_too_long_line() {
        let mut d = StreamDecoder::new(MAX_LINE_BYTES);
        let line = result_line(&[9, 9], &[("end", 1.0)]);
        assert!(d.push(line.trim_end().as_bytes()).is_empty());
        assert_eq!(d.finish().len(), 2);
        let mut d = StreamDecoder::new(64);
        let got = d.push(result_line(&[0; 100], &[]).as_bytes());
        assert_eq!(
            got,
            vec![Err(StreamError::LineTooLong(LineTooLong { limit: 64 }))]
        );
        assert!(got[0]
            .as_ref()
            .is_err_and(|e| e.to_string().contains("64 bytes")));
        assert!(d.push(b"{}\n").is_empty());
        assert!(d.finish().is_empty());
    }

    #[test]
    fn excerpts_are_short_and_single_line() {
        let e = excerpt(&format!("a\nb{}", "é".repeat(500)));
        assert!(!e.contains('\n'));
        assert_eq!(e.chars().count(), EXCERPT_CHARS + 1);
    }
}
