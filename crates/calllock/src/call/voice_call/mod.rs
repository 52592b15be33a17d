//! A CallLock call as a real-time voice pipeline.
//!
//! ```text
//! input ─▶ mulaw ─▶ vad ─▶ stt ─▶ turn ─▶ conversation ─▶ llm ─▶ sentences
//!       ─▶ tts ─▶ resample(8 kHz) ─▶ output ─▶ player ─▶ caller
//! ```
//!
//! The [`ConversationStage`] runs the sans-IO [`Engine`] of the brain: it
//! decides everything it decides in `chat` and `demo` (the pipeline adds no
//! business logic). Around it, the stage keeps the call's typed event log
//! ([`EventLog`]) and the interruption accountant ([`Accountant`]): every
//! agent utterance is tracked from queued to played or cut off, and a cut
//! off line is replaced — in the transcript and in the LLM context — by
//! what the caller actually heard. LLM requests are a projection of the log.
//!
//! Backend tools, the scoped wrap-up reply and extraction run in the
//! background under the *call* token (a barge-in cannot half-book); LLM and
//! TTS requests run under the turn's token (a barge-in cancels them).
//!
//! Where each answered turn's time went — caller stopped, STT final, the
//! waits, the reply's milestones up to its first mark echo — is measured
//! by [`latency`] from what the stage already sees, and journaled as one
//! `latency` event per turn (see [`crate::call::latency`]).

mod conversation;
mod journal;
mod latency;
#[cfg(all(test, feature = "testing"))]
mod latency_tests;
mod llm;
mod parts;
mod played;
mod timers;

pub use conversation::{CallControl, CallOutcome, ConversationStage};
pub use llm::{Pacing, ResponderLlm};
pub use parts::{start_call, CallParts, RunningCall, OUTPUT_RATE};
pub use played::{Played, PlayedProof};
