//! Twilio: the Media Streams WebSocket protocol of a bidirectional
//! `<Connect><Stream>` ([`media_streams`]). Wire types only — the voice
//! pipeline stays vendor-free; the server that answers calls wires them.

pub mod media_streams;
