//! The `media` message read without building a JSON map.
//!
//! Twilio sends a `media` message every 20 ms of every call, so it is most
//! of what the server reads. The general reader ([`super::parse`]) builds
//! a `serde_json::Value` map first: every key and value copied into its
//! own allocation, then looked up. Here the message is read straight into
//! borrowed fields; only the decoded audio is allocated.
//!
//! The rule: this path answers only when it reads the message exactly as
//! the general reader would. Anything it is not sure of — another event, a
//! field of an unexpected type, a key twice, a field missing — makes it
//! step aside (`None`), and the general reader decides, with its own
//! tolerance and its own error. A test in `super` holds the two to the same
//! answers on generated messages.

use super::{Inbound, Media, WireError};
use base64::Engine as _;
use serde::de::{Deserializer, Visitor};
use serde::Deserialize;
use std::borrow::Cow;

/// A top-level `media` message, as sent.
#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow)]
    event: Cow<'a, str>,
    #[serde(rename = "sequenceNumber", default)]
    sequence_number: Option<Count>,
    #[serde(borrow)]
    media: Body<'a>,
}

/// Its `media` object.
#[derive(Deserialize)]
struct Body<'a> {
    #[serde(borrow, default)]
    track: Option<Cow<'a, str>>,
    #[serde(default)]
    chunk: Option<Count>,
    #[serde(default)]
    timestamp: Option<Count>,
    #[serde(borrow)]
    payload: Cow<'a, str>,
}

/// A count as Twilio sends it: a string ("5") or a number (5). Read as the
/// general reader reads it: a string that is not a whole number, a negative
/// or fractional number, is no count (`None`); another type steps aside.
struct Count(Option<u64>);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Count;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a count as a string or a number")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Count, E> {
                Ok(Count(s.trim().parse().ok()))
            }
            fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<Count, E> {
                Ok(Count(Some(n)))
            }
            fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<Count, E> {
                Ok(Count(u64::try_from(n).ok()))
            }
            fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Count, E> {
                Ok(Count(None))
            }
        }
        d.deserialize_any(V)
    }
}

fn count(c: Option<Count>) -> Option<u64> {
    c.and_then(|c| c.0)
}

/// Read `text` if it is a `media` message this path reads as the general
/// reader would; `None`: let the general reader decide. (The size limit is
/// checked before.)
pub(super) fn media(text: &str) -> Option<Result<(Inbound, Option<u64>), WireError>> {
    // Cheap refusal of every other event before any parsing.
    if !text.contains("\"media\"") {
        return None;
    }
    let m: Message = serde_json::from_str(text).ok()?;
    if m.event != "media" {
        return None;
    }
    let seq = count(m.sequence_number);
    let Ok(payload) = base64::engine::general_purpose::STANDARD.decode(m.media.payload.trim())
    else {
        return Some(Err(WireError::BadBase64));
    };
    let media = Media {
        track: m.media.track.as_deref().unwrap_or("inbound").to_string(),
        chunk: count(m.media.chunk).unwrap_or(0),
        timestamp_ms: count(m.media.timestamp).unwrap_or(0),
        payload,
    };
    Some(Ok((Inbound::Media(media), seq)))
}
