//! The in-process test kit (feature "testing"): run a whole voice call with
//! no vendor and no network, in virtual time.
//!
//! - [`codec`]: the symmetric speech codec — text is encoded into audio
//!   frames (a word's first 20 ms frame carries its letters, the rest is
//!   loud filler) and decoded back; silence is all zeros. The mock TTS
//!   speaks with it, the mock STT and VAD hear with it, and the harness's
//!   ear reads back exactly which words reached the caller.
//! - [`MockStt`], [`MockTts`], [`CodecDetector`] (VAD with the real
//!   hysteresis), [`MockLlm`] (scripted replies streamed token by token
//!   with chosen delays and tool calls; records every request and whether
//!   it completed or was dropped).
//! - [`Mouth`] (the caller: speaks frames in real time, silence between)
//!   and [`Ear`] (what the caller heard, with timings, and every `clear`).

pub mod codec;
mod ear;
mod llm;
mod mouth;
mod stream;
mod stt;
mod tts;

pub use ear::{Ear, EarLog, HeardFrame};
pub use llm::{LlmCall, LlmEnding, MockLlm, MockReply};
pub use mouth::Mouth;
pub use stream::ScriptedStream;
pub use stt::{CodecDetector, MockStt};
pub use tts::{MockTts, TtsCall};
