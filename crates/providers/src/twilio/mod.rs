//! Twilio: the Media Streams WebSocket protocol of a bidirectional
//! `<Connect><Stream>` ([`media_streams`]) and the ledger of its marks
//! ([`marks`]: what the caller actually heard). Wire types only — the voice
//! pipeline stays vendor-free; the server that answers calls wires them.

pub mod marks;
pub mod media_streams;
