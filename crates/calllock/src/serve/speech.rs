//! The speech vendors of a served call. Today: the offline speech codec
//! (`voice::offline`) — text carried in the audio itself, which `calllock
//! dial` speaks and hears — so a whole call runs with no keys. Real
//! recognisers and voices plug in here.

use crate::config::Config;
use std::sync::Arc;
use std::time::Duration;
use voice::offline::{CodecDetector, CodecStt, CodecTts};
use voice::stages::tts::Tts;

/// Ears and voice for one call.
pub struct Speech {
    pub stt: CodecStt,
    pub detector: CodecDetector,
    pub tts: Arc<dyn Tts>,
}

/// The offline speech codec at the configured speaking rate.
pub fn offline(cfg: &Config) -> Speech {
    Speech {
        stt: CodecStt::default(),
        detector: CodecDetector::default(),
        tts: Arc::new(CodecTts {
            rate: 8000,
            chars_per_second: cfg.sim.speech_chars_per_s,
            first_audio: Duration::from_millis(150),
        }),
    }
}
