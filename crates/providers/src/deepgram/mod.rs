//! Deepgram live speech-to-text (`wss://api.deepgram.com/v1/listen`) and
//! Aura text-to-speech (`https://api.deepgram.com/v1/speak`).
//!
//! * [`aura`]: Aura-2 text-to-speech over HTTP (the fallback voice).
//! * [`listen`]: the socket's query and messages (sans-IO).
//! * [`live`]: the socket of one call (keep-alive, finalize, reconnect with
//!   replay, close).
//! * `socket`: opening that socket (TCP, TLS, the HTTP upgrade) and what
//!   Deepgram's answer means (refused for good, or worth another try).
//! * `fake` (feature `testing`): a loopback Deepgram that transcribes the
//!   offline speech codec, with faults for the fault tests.
//! * [`stt`]: Deepgram as the pipeline's speech-to-text.
//! * [`utterances`]: one caller utterance from Deepgram's interim and final
//!   segments, `speech_final`, `UtteranceEnd` and `Finalize` (sans-IO).

pub mod aura;
pub mod listen;
pub mod live;
mod socket;
pub mod stt;
pub mod utterances;

#[cfg(feature = "testing")]
pub mod aura_fake;
#[cfg(feature = "testing")]
pub mod fake;
