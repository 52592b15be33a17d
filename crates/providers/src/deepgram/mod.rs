//! Deepgram live speech-to-text (`wss://api.deepgram.com/v1/listen`).
//!
//! * [`listen`]: the socket's query and messages (sans-IO).
//! * [`utterances`]: one caller utterance from Deepgram's interim and final
//!   segments, `speech_final`, `UtteranceEnd` and `Finalize` (sans-IO).

pub mod listen;
pub mod utterances;
