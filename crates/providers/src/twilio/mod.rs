//! Twilio: everything CallLock speaks with Twilio, as wire types and thin
//! clients — the voice pipeline stays vendor-free; `calllock serve` wires
//! them. The reference facts are in the research note
//! (`telephony-speech.md` §1).
//!
//! - [`media_streams`]: the Media Streams WebSocket protocol of a
//!   bidirectional `<Connect><Stream>` (sans-IO messages and their order).
//! - [`marks`]: the ledger of marks — what the caller actually heard.
//! - [`signature`]: `X-Twilio-Signature` (HMAC-SHA1 over the URL and the
//!   sorted form parameters; the default-port quirk; the `wss://` URL of
//!   the stream upgrade) and the form decoding the server signs.
//! - [`twiml`]: the TwiML documents we answer the voice webhook with
//!   (`<Connect><Stream>` with `<Parameter>`s; say and hang up), escaped.
//! - [`rest`]: the REST hang-up (`POST …/Calls/{CallSid}.json
//!   Status=completed`; 404 means already ended).

pub mod marks;
pub mod media_streams;
pub mod rest;
pub mod signature;
pub mod twiml;
