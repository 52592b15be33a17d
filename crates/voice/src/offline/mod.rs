//! The offline speech vendor: speech carried by the [`codec`], with no
//! keys, models or network.
//!
//! [`CodecTts`] speaks text as codec audio; [`CodecStt`] and
//! [`CodecDetector`] hear it (words, end of utterance, voice activity with
//! the real hysteresis). The audio survives µ-law, so a whole call runs over
//! a real Twilio Media Streams socket: `calllock serve` hears and speaks
//! with these when no speech vendor is configured, and `calllock dial`
//! speaks the caller's typed lines with the same codec. The test kit's
//! mocks are built on them.

pub mod codec;
mod stt;
pub mod timed;
mod tts;

pub use stt::{CodecDetector, CodecStt};
pub use tts::{CodecSpeech, CodecTts};
