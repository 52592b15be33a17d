//! # audio — pure DSP for the voice pipeline
//!
//! No I/O, no knowledge of calls: G.711 µ-law ([`mulaw`]). Resampling, VAD
//! and WAV helpers follow (issue 3).

pub mod mulaw;
pub mod resample;
pub mod vad;
pub mod wav;
