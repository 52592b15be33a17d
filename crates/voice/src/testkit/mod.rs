//! The in-process test kit (feature "testing"): run a whole voice call with
//! no vendor and no network, in virtual time.
//!
//! - [`codec`]: the symmetric speech codec of [`crate::offline`] — text is
//!   encoded into audio frames and decoded back. The mock TTS speaks with
//!   it, the STT and VAD hear with it, and the harness's ear reads back
//!   exactly which words reached the caller.
//! - [`MockStt`] (the offline STT), [`MockTts`] (the offline TTS with a
//!   request log and injected failures), [`CodecDetector`] (VAD with the
//!   real hysteresis), [`MockLlm`] (scripted replies streamed token by token
//!   with chosen delays and tool calls; records every request and whether
//!   it completed or was dropped).
//! - [`Mouth`] (the caller: speaks frames in real time, silence between)
//!   and [`Ear`] (what the caller heard, with timings, and every `clear`).
//! - [`Caller`]: the two on a telephone ([`crate::telephone`]), with a test
//!   script's steps — say, stay silent, wait for the agent's response
//!   (dead air fails), interrupt after some words, hang up. CallLock's
//!   harness and the ADK bridge's voice tests both script calls with it.

pub use crate::offline::codec;
mod caller;
mod ear;
mod llm;
mod mouth;
mod tts;

pub use crate::offline::timed::TimedStream as ScriptedStream;
pub use crate::offline::CodecDetector;
/// The offline STT ([`crate::offline::CodecStt`]) under its test name.
pub type MockStt = crate::offline::CodecStt;
pub use caller::{normalise, Caller, Heard};
pub use ear::{Ear, EarLog, HeardFrame};
pub use llm::{LlmCall, LlmEnding, MockLlm, MockReply};
pub use mouth::Mouth;
pub use tts::{MockTts, TtsCall};
