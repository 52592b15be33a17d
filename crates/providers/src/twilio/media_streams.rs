//! Twilio Media Streams messages, parsed and built (sans-IO).
//!
//! Twilio sends JSON text frames: `connected` once, `start` once (stream and
//! call ids, the `<Parameter>`s, the media format), then `media` (base64
//! 8 kHz µ-law, usually 20 ms), `dtmf`, `mark` (the echo of a mark we sent,
//! once the audio before it has played — or at once after a `clear`), and
//! `stop`. `sequenceNumber`, `media.chunk` and `media.timestamp` arrive as
//! JSON *strings*; numbers are accepted too. Unknown fields and unknown
//! events are tolerated ([`Inbound::Other`]).
//!
//! [`StreamReader`] adds what one connection must hold to: `start` exactly
//! once and before any `media`, `dtmf` or `mark` (a message out of order is
//! an error the caller of `read` logs and skips — the call goes on), a size
//! limit, and a count of sequence-number gaps. The `*_message` builders make
//! what we send back: `media`, `mark`, `clear` (text frames only — a binary
//! frame from us is Twilio error 31950).

mod fast;

use std::collections::BTreeMap;

use base64::Engine as _;
use serde_json::{json, Map, Value};

/// The largest message accepted (Twilio sends ~300 bytes per 20 ms frame).
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024;

/// A message from Twilio.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inbound {
    /// First message: `protocol` ("Call"), `version`.
    Connected {
        protocol: String,
        version: String,
    },
    Start(Start),
    Media(Media),
    /// The caller pressed a key.
    Dtmf {
        digit: String,
    },
    /// The echo of our mark `name`.
    Mark {
        name: String,
    },
    /// The stream stopped (the call ended). `stream_sid` is the message's
    /// own `streamSid` ("" when it has none).
    Stop {
        call_sid: String,
        stream_sid: String,
    },
    /// An event this version does not know (tolerated).
    Other {
        event: String,
    },
}

/// The `start` message.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Start {
    pub stream_sid: String,
    pub call_sid: String,
    pub account_sid: String,
    pub tracks: Vec<String>,
    /// The `<Parameter>` name → value pairs of the TwiML (`From`, `To`, …).
    pub custom_parameters: BTreeMap<String, String>,
    pub media_format: MediaFormat,
}

/// `start.mediaFormat` (always µ-law, 8000 Hz, mono for phone calls).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MediaFormat {
    pub encoding: String,
    pub sample_rate: u32,
    pub channels: u32,
}

/// One `media` message: raw µ-law bytes and where they sit in the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Media {
    /// `inbound` (the caller) or `outbound`.
    pub track: String,
    /// 1, 2, 3, … per message.
    pub chunk: u64,
    /// Milliseconds since the stream started (the call clock).
    pub timestamp_ms: u64,
    /// Decoded µ-law bytes (8 per ms).
    pub payload: Vec<u8>,
}

/// Why a message was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("message of {0} bytes is over the {MAX_MESSAGE_BYTES}-byte limit")]
    TooLarge(usize),
    #[error("not a JSON object: {0}")]
    NotJson(String),
    #[error("no \"event\" field")]
    NoEvent,
    #[error("{event}: missing or invalid {field}")]
    BadField {
        event: &'static str,
        field: &'static str,
    },
    #[error("media payload is not valid base64")]
    BadBase64,
    #[error("{0} before start")]
    BeforeStart(&'static str),
    #[error("a second start on one stream")]
    DuplicateStart,
    #[error("message after stop")]
    AfterStop,
    /// A message naming another stream than the one this socket carries
    /// (its `streamSid` differs from the `start`'s): it is not this
    /// call's, and changes nothing.
    #[error("{event} for another stream ({got}; this stream is {ours})")]
    ForeignStream {
        event: &'static str,
        got: String,
        ours: String,
    },
}

impl WireError {
    /// A short name for counting, e.g. a metric label.
    pub fn kind(&self) -> &'static str {
        match self {
            WireError::TooLarge(_) => "too_large",
            WireError::NotJson(_) => "not_json",
            WireError::NoEvent => "no_event",
            WireError::BadField { .. } => "bad_field",
            WireError::BadBase64 => "bad_base64",
            WireError::BeforeStart(_) => "before_start",
            WireError::DuplicateStart => "duplicate_start",
            WireError::AfterStop => "after_stop",
            WireError::ForeignStream { .. } => "foreign_stream",
        }
    }
}

/// Parse one text frame from Twilio, with its `sequenceNumber` if present.
pub fn parse(text: &str) -> Result<(Inbound, Option<u64>), WireError> {
    if text.len() > MAX_MESSAGE_BYTES {
        return Err(WireError::TooLarge(text.len()));
    }
    if let Some(read) = fast::media(text) {
        return read;
    }
    general(text)
}

/// [`parse`] for any message, through a JSON map (the size is checked).
fn general(text: &str) -> Result<(Inbound, Option<u64>), WireError> {
    let v: Value = serde_json::from_str(text).map_err(|e| WireError::NotJson(e.to_string()))?;
    let Value::Object(m) = v else {
        return Err(WireError::NotJson("not an object".into()));
    };
    let event = m
        .get("event")
        .and_then(Value::as_str)
        .ok_or(WireError::NoEvent)?;
    let seq = m.get("sequenceNumber").and_then(number);
    let msg = match event {
        "connected" => Inbound::Connected {
            protocol: text_of(&m, "protocol"),
            version: text_of(&m, "version"),
        },
        "start" => Inbound::Start(start(&m)?),
        "media" => Inbound::Media(media(&m)?),
        "dtmf" => {
            let d = object(&m, "dtmf").ok_or(WireError::BadField {
                event: "dtmf",
                field: "dtmf",
            })?;
            Inbound::Dtmf {
                digit: d
                    .get("digit")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            }
        }
        "mark" => {
            let name = object(&m, "mark")
                .and_then(|k| k.get("name"))
                .and_then(Value::as_str)
                .ok_or(WireError::BadField {
                    event: "mark",
                    field: "mark.name",
                })?;
            Inbound::Mark {
                name: name.to_string(),
            }
        }
        "stop" => Inbound::Stop {
            call_sid: object(&m, "stop")
                .and_then(|s| s.get("callSid"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            stream_sid: m
                .get("streamSid")
                .and_then(Value::as_str)
                .unwrap_or("")
                .chars()
                .take(64)
                .collect(),
        },
        other => Inbound::Other {
            event: other.chars().take(64).collect(),
        },
    };
    Ok((msg, seq))
}

fn object<'a>(m: &'a Map<String, Value>, key: &str) -> Option<&'a Map<String, Value>> {
    m.get(key).and_then(Value::as_object)
}

fn text_of(m: &Map<String, Value>, key: &str) -> String {
    m.get(key).and_then(Value::as_str).unwrap_or("").to_string()
}

/// A count sent as a string ("5") or a number (5).
fn number(v: &Value) -> Option<u64> {
    match v {
        Value::String(s) => s.trim().parse().ok(),
        Value::Number(n) => n.as_u64(),
        _ => None,
    }
}

fn start(m: &Map<String, Value>) -> Result<Start, WireError> {
    let bad = |field| WireError::BadField {
        event: "start",
        field,
    };
    let s = object(m, "start").ok_or(bad("start"))?;
    let stream_sid = s
        .get("streamSid")
        .or_else(|| m.get("streamSid"))
        .and_then(Value::as_str)
        .filter(|v| !v.is_empty())
        .ok_or(bad("streamSid"))?
        .to_string();
    let call_sid = s
        .get("callSid")
        .and_then(Value::as_str)
        .filter(|v| !v.is_empty())
        .ok_or(bad("callSid"))?
        .to_string();
    let custom_parameters = object(s, "customParameters")
        .map(|p| {
            p.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                .collect()
        })
        .unwrap_or_default();
    let format = object(s, "mediaFormat");
    let media_format = MediaFormat {
        encoding: format
            .and_then(|f| f.get("encoding"))
            .and_then(Value::as_str)
            .unwrap_or("audio/x-mulaw")
            .to_string(),
        sample_rate: format
            .and_then(|f| f.get("sampleRate"))
            .and_then(number)
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(8000),
        channels: format
            .and_then(|f| f.get("channels"))
            .and_then(number)
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(1),
    };
    Ok(Start {
        stream_sid,
        call_sid,
        account_sid: text_of(s, "accountSid"),
        tracks: s
            .get("tracks")
            .and_then(Value::as_array)
            .map(|t| {
                t.iter()
                    .filter_map(|x| x.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default(),
        custom_parameters,
        media_format,
    })
}

fn media(m: &Map<String, Value>) -> Result<Media, WireError> {
    let bad = |field| WireError::BadField {
        event: "media",
        field,
    };
    let md = object(m, "media").ok_or(bad("media"))?;
    let payload = md
        .get("payload")
        .and_then(Value::as_str)
        .ok_or(bad("media.payload"))?;
    let payload = base64::engine::general_purpose::STANDARD
        .decode(payload.trim())
        .map_err(|_| WireError::BadBase64)?;
    Ok(Media {
        track: md
            .get("track")
            .and_then(Value::as_str)
            .unwrap_or("inbound")
            .to_string(),
        chunk: md.get("chunk").and_then(number).unwrap_or(0),
        timestamp_ms: md.get("timestamp").and_then(number).unwrap_or(0),
        payload,
    })
}

/// One connection's reader: order rules on top of [`parse`].
#[derive(Debug, Default)]
pub struct StreamReader {
    start: Option<Start>,
    stopped: bool,
    last_seq: Option<u64>,
    /// Sequence numbers that did not follow the one before (lost or
    /// reordered messages).
    pub sequence_gaps: u64,
}

impl StreamReader {
    pub fn new() -> Self {
        StreamReader::default()
    }

    /// The `start` of this stream, once seen.
    pub fn start(&self) -> Option<&Start> {
        self.start.as_ref()
    }

    /// Read one text frame. An error means "log it and skip this message";
    /// the stream goes on (after `stop`, it is over).
    pub fn read(&mut self, text: &str) -> Result<Inbound, WireError> {
        if self.stopped {
            return Err(WireError::AfterStop);
        }
        let (msg, seq) = parse(text)?;
        match &msg {
            Inbound::Start(s) => {
                if self.start.is_some() {
                    return Err(WireError::DuplicateStart);
                }
                self.start = Some(s.clone());
            }
            Inbound::Media(_) | Inbound::Dtmf { .. } | Inbound::Mark { .. }
                if self.start.is_none() =>
            {
                let what = match msg {
                    Inbound::Media(_) => "media",
                    Inbound::Dtmf { .. } => "dtmf",
                    _ => "mark",
                };
                return Err(WireError::BeforeStart(what));
            }
            Inbound::Stop { stream_sid, .. } => {
                // A `stop` naming another stream is not this call's end.
                let ours = self.start.as_ref().map(|s| &s.stream_sid);
                if let Some(ours) = ours.filter(|o| !stream_sid.is_empty() && *o != stream_sid) {
                    return Err(WireError::ForeignStream {
                        event: "stop",
                        got: stream_sid.clone(),
                        ours: ours.clone(),
                    });
                }
                self.stopped = true;
            }
            _ => {}
        }
        if let Some(seq) = seq {
            if self.last_seq.is_some_and(|last| seq != last + 1) {
                self.sequence_gaps += 1;
            }
            self.last_seq = Some(seq);
        }
        Ok(msg)
    }
}

/// `media` to Twilio: µ-law 8 kHz bytes, base64, queued and played in order.
///
/// Written straight into one string of the right size (it is sent 50
/// times a second per call, from the playout thread): the same JSON as
/// `json!` would give, without building a map first.
pub fn media_message(stream_sid: &str, ulaw: &[u8]) -> String {
    // Quoted and escaped (a string always serialises).
    let sid = serde_json::to_string(stream_sid).unwrap_or_else(|_| "\"\"".into());
    let payload = ulaw.len().div_ceil(3) * 4;
    let mut out = String::with_capacity(60 + sid.len() + payload);
    out.push_str(r#"{"event":"media","streamSid":"#);
    out.push_str(&sid);
    out.push_str(r#","media":{"payload":""#);
    base64::engine::general_purpose::STANDARD.encode_string(ulaw, &mut out);
    out.push_str(r#""}}"#);
    out
}

/// `mark` to Twilio: echoed when the audio queued before it has played (or
/// at once after a `clear`).
pub fn mark_message(stream_sid: &str, name: &str) -> String {
    json!({"event": "mark", "streamSid": stream_sid, "mark": {"name": name}}).to_string()
}

/// `clear` to Twilio: drop the audio not yet played; pending marks echo.
pub fn clear_message(stream_sid: &str) -> String {
    json!({"event": "clear", "streamSid": stream_sid}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_media_message_is_the_json_twilio_reads() {
        for (sid, ulaw) in [
            ("MZ18ad3ab5a668481ce02b83e7395059f0", vec![0xffu8; 160]),
            ("MZ\"odd\\sid\u{1}", vec![0x00, 0x7f, 0x80]),
            ("", Vec::new()),
        ] {
            let text = media_message(sid, &ulaw);
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            let payload = base64::engine::general_purpose::STANDARD.encode(&ulaw);
            assert_eq!(
                v,
                json!({"event": "media", "streamSid": sid, "media": {"payload": payload}}),
                "{text}"
            );
            assert!(text.capacity() >= text.len());
        }
    }

    // Shapes from Twilio's `websocket-messages` documentation.
    const CONNECTED: &str = r#"{"event":"connected","protocol":"Call","version":"1.0.0"}"#;
    const START: &str = r#"{"event":"start","sequenceNumber":"1","start":{"accountSid":"ACxx","streamSid":"MZ18ad","callSid":"CA42","tracks":["inbound"],"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000,"channels":1},"customParameters":{"From":"+15125550100","To":"+15125559999"}},"streamSid":"MZ18ad"}"#;
    const MEDIA: &str = r#"{"event":"media","sequenceNumber":"2","media":{"track":"inbound","chunk":"1","timestamp":"5","payload":"/w=="},"streamSid":"MZ18ad"}"#;
    const MARK: &str =
        r#"{"event":"mark","sequenceNumber":"3","streamSid":"MZ18ad","mark":{"name":"u1:0.20"}}"#;
    const DTMF: &str = r#"{"event":"dtmf","streamSid":"MZ18ad","sequenceNumber":"4","dtmf":{"track":"inbound_track","digit":"1"}}"#;
    const STOP: &str = r#"{"event":"stop","sequenceNumber":"5","streamSid":"MZ18ad","stop":{"accountSid":"ACxx","callSid":"CA42"}}"#;

    #[test]
    fn a_stop_for_another_stream_is_refused_and_the_stream_goes_on() {
        let mut r = StreamReader::new();
        r.read(START).unwrap();
        let foreign = STOP.replace("MZ18ad", "MZother");
        let err = r.read(&foreign).unwrap_err();
        assert_eq!(err.kind(), "foreign_stream");
        assert!(err.to_string().contains("MZother"), "{err}");
        // Still this stream's: its media is read, and its own stop ends it.
        assert!(matches!(r.read(MEDIA), Ok(Inbound::Media(_))));
        assert!(matches!(r.read(STOP), Ok(Inbound::Stop { .. })));
        assert_eq!(r.read(MEDIA), Err(WireError::AfterStop));
        // A stop that names no stream is this stream's (lenient, as Twilio
        // always names it).
        let mut r = StreamReader::new();
        r.read(START).unwrap();
        let unnamed = r#"{"event":"stop","stop":{"callSid":"CA42"}}"#;
        assert!(matches!(r.read(unnamed), Ok(Inbound::Stop { .. })));
    }

    #[test]
    fn a_whole_stream_reads_in_order() {
        let mut r = StreamReader::new();
        assert_eq!(
            r.read(CONNECTED).unwrap(),
            Inbound::Connected {
                protocol: "Call".into(),
                version: "1.0.0".into()
            }
        );
        let Inbound::Start(s) = r.read(START).unwrap() else {
            panic!("start")
        };
        assert_eq!(
            (s.stream_sid.as_str(), s.call_sid.as_str()),
            ("MZ18ad", "CA42")
        );
        assert_eq!(s.custom_parameters["From"], "+15125550100");
        assert_eq!(s.media_format.sample_rate, 8000);
        assert_eq!(s.tracks, ["inbound"]);
        assert_eq!(
            r.read(MEDIA).unwrap(),
            Inbound::Media(Media {
                track: "inbound".into(),
                chunk: 1,
                timestamp_ms: 5,
                payload: vec![0xFF],
            })
        );
        assert_eq!(
            r.read(MARK).unwrap(),
            Inbound::Mark {
                name: "u1:0.20".into()
            }
        );
        assert_eq!(r.read(DTMF).unwrap(), Inbound::Dtmf { digit: "1".into() });
        assert_eq!(
            r.read(STOP).unwrap(),
            Inbound::Stop {
                call_sid: "CA42".into(),
                stream_sid: "MZ18ad".into(),
            }
        );
        assert_eq!(r.sequence_gaps, 0);
        assert_eq!(r.read(MEDIA), Err(WireError::AfterStop));
    }

    #[test]
    fn order_rules_and_tolerance() {
        let mut r = StreamReader::new();
        assert_eq!(r.read(MEDIA), Err(WireError::BeforeStart("media")));
        assert_eq!(r.read(MARK), Err(WireError::BeforeStart("mark")));
        r.read(START).unwrap();
        assert_eq!(r.read(START), Err(WireError::DuplicateStart));
        // Unknown events and fields are tolerated; numbers for strings too.
        assert_eq!(
            r.read(r#"{"event":"brandNew","x":1}"#).unwrap(),
            Inbound::Other {
                event: "brandNew".into()
            }
        );
        let m = r
            .read(r#"{"event":"media","sequenceNumber":9,"extra":true,"media":{"chunk":2,"timestamp":25,"payload":"AAAA"}}"#)
            .unwrap();
        assert!(matches!(
            m,
            Inbound::Media(Media {
                chunk: 2,
                timestamp_ms: 25,
                ..
            })
        ));
        assert_eq!(r.sequence_gaps, 1, "1 → 9 skipped messages");
    }

    #[test]
    fn bad_messages_are_clear_errors() {
        assert!(matches!(parse("not json"), Err(WireError::NotJson(_))));
        assert!(matches!(parse("[1,2]"), Err(WireError::NotJson(_))));
        assert_eq!(parse(r#"{"x":1}"#), Err(WireError::NoEvent));
        assert_eq!(
            parse(r#"{"event":"media","media":{"payload":"%%%"}}"#),
            Err(WireError::BadBase64)
        );
        assert_eq!(
            parse(r#"{"event":"media"}"#),
            Err(WireError::BadField {
                event: "media",
                field: "media"
            })
        );
        assert_eq!(
            parse(r#"{"event":"start","start":{"streamSid":"MZ1"}}"#),
            Err(WireError::BadField {
                event: "start",
                field: "callSid"
            })
        );
        let huge = format!(
            r#"{{"event":"media","pad":"{}"}}"#,
            "a".repeat(MAX_MESSAGE_BYTES)
        );
        assert!(matches!(parse(&huge), Err(WireError::TooLarge(_))));
    }

    #[test]
    fn outbound_messages_round_trip() {
        let m: Value = serde_json::from_str(&media_message("MZ1", &[0xFF, 0x7F])).unwrap();
        assert_eq!(m["event"], "media");
        assert_eq!(m["streamSid"], "MZ1");
        assert_eq!(m["media"]["payload"], "/38=");
        let k: Value = serde_json::from_str(&mark_message("MZ1", "u3:1.20")).unwrap();
        assert_eq!(k["mark"]["name"], "u3:1.20");
        let c: Value = serde_json::from_str(&clear_message("MZ1")).unwrap();
        assert_eq!(c, json!({"event": "clear", "streamSid": "MZ1"}));
    }

    /// JSON values that a `media` message's fields may hold, right or
    /// wrong: counts as strings and numbers (negative, fractional, past
    /// u64), escapes, odd base64, other types.
    const VALUES: &[&str] = &[
        r#""media""#,
        r#""\u006dedia""#,
        r#""mark""#,
        r#""5""#,
        r#"" 7 ""#,
        r#""x""#,
        r#""""#,
        "5",
        "-3",
        "-0",
        "2.5",
        "1e3",
        "18446744073709551616",
        "null",
        "true",
        "{}",
        "[]",
        r#""inbound""#,
        r#""//8=""#,
        r#""\/\/8=""#,
        r#"" AAAA ""#,
        r#""AAA""#,
        r#""A===""#,
    ];

    /// A JSON object from its entries (keys may repeat, in any order).
    fn object_text(entries: &[(&str, String)]) -> String {
        let inner: Vec<String> = entries.iter().map(|(k, v)| format!("{k:?}:{v}")).collect();
        format!("{{{}}}", inner.join(","))
    }

    fn media_like() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        use proptest::sample::select;
        let value = || select(VALUES.to_vec()).prop_map(String::from);
        let body = prop::collection::vec(
            (
                select(vec!["track", "chunk", "timestamp", "payload", "x"]),
                value(),
            ),
            0..6,
        )
        .prop_map(|e| object_text(&e));
        let media_value = prop_oneof![3 => body, 1 => value()];
        let top = prop::collection::vec(
            (
                select(vec!["event", "sequenceNumber", "streamSid", "x"]),
                value(),
            ),
            0..5,
        );
        (
            top,
            prop::collection::vec(media_value, 0..3),
            any::<bool>(),
            any::<usize>(),
        )
            .prop_map(|(mut top, media, event_first, at)| {
                if event_first {
                    top.insert(0, ("event", r#""media""#.to_string()));
                }
                for m in media {
                    let i = at % (top.len() + 1);
                    top.insert(i, ("media", m));
                }
                object_text(&top)
            })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(20_000))]

        /// The fast `media` reader gives exactly the general reader's
        /// answer, or steps aside.
        #[test]
        fn media_is_read_as_the_general_reader_reads_it(text in media_like()) {
            if let Some(fast) = fast::media(&text) {
                proptest::prop_assert_eq!(fast, general(&text), "{}", text);
            }
        }
    }

    #[test]
    fn the_fast_reader_takes_what_twilio_sends() {
        let sent = r#"{"event":"media","sequenceNumber":"3","media":{"track":"inbound","chunk":"2","timestamp":"20","payload":"//8="},"streamSid":"MZ1"}"#;
        let read = fast::media(sent).expect("read by the fast path");
        assert_eq!(read, general(sent));
        let Ok((Inbound::Media(m), Some(3))) = read else {
            panic!("{read:?}")
        };
        assert_eq!(
            (m.chunk, m.timestamp_ms, m.payload),
            (2, 20, vec![0xFF, 0xFF])
        );
        // Numbers for counts, keys in another order, unknown fields.
        let sent = r#"{"streamSid":"MZ1","media":{"payload":"AAAA","timestamp":40,"chunk":3,"extra":[1,{"a":2}]},"sequenceNumber":4,"event":"media","more":null}"#;
        let read = fast::media(sent).expect("read by the fast path");
        assert_eq!(read, general(sent));
        // What it is not sure of, it leaves to the general reader.
        for other in [
            r#"{"event":"mark","sequenceNumber":"3","streamSid":"MZ1","mark":{"name":"media"}}"#,
            r#"{"event":"media","media":{"payload":"AAAA","chunk":true}}"#,
            r#"{"event":"media","media":{"payload":"AAAA"},"media":{"payload":"//8="}}"#,
            r#"{"event":"media","media":{}}"#,
        ] {
            assert_eq!(fast::media(other), None, "{other}");
        }
    }
}
