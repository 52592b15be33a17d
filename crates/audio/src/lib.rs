//! # audio — pure DSP for the voice pipeline
//!
//! No I/O, no async, no knowledge of calls: functions and small stateful
//! structs that turn bytes into bytes (or into events). The `voice` pipeline
//! wraps them in stages; tests and tools use them directly.
//!
//! | module | what | state |
//! |---|---|---|
//! | [`mulaw`] | G.711 µ-law encode/decode (Twilio's 8 kHz codec) | none |
//! | [`resample`] | streaming 8 / 16 / 24 kHz conversion of PCM16 (rubato FFT, 20 ms blocks, delay-compensated; SPEC §8.6) | per stream |
//! | [`vad`] | voice activity: [`vad::VadHysteresis`] (sans-IO, Pipecat semantics, SPEC §8.4) and [`vad::Vad`] (earshot model + volume gate + hysteresis) | per stream |
//! | [`wav`] | in-memory WAV read (PCM16, µ-law) and write | none |
//!
//! Conventions shared by every module:
//!
//! * Audio is 16-bit signed mono PCM; byte buffers are little-endian
//!   (`pcm16le`). Byte entry points accept **any length**: a streaming type
//!   keeps an odd trailing byte for its next call, a one-shot function drops
//!   it.
//! * No input panics. Bad configuration (an unsupported rate, a NaN
//!   threshold, a malformed WAV header) is a `thiserror` error naming the
//!   problem; audio itself is never "invalid".
//! * Streaming types append to a caller-owned output vector and reuse their
//!   internal buffers, so steady-state processing of 20 ms chunks does not
//!   allocate (`tests/no_alloc.rs`).
//! * Tests sit beside the code (including proptests); `tests/fuzz.rs` fuzzes
//!   every entry point with proptest (`PROPTEST_CASES` sets the depth).

pub mod mulaw;
pub mod resample;
pub mod vad;
pub mod wav;
