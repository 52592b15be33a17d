//! The speech vendors of a served call: Deepgram live STT when
//! `[deepgram]` has a key, else the offline speech codec
//! (`voice::offline`) — text carried in the audio itself, which `calllock
//! dial` speaks and hears — so a whole call runs with no keys. The agent
//! speaks with the codec voice until a TTS vendor is configured.

use crate::config::Config;
use providers::deepgram::listen::ListenOptions;
use providers::deepgram::live::LiveConfig;
use providers::deepgram::stt::DeepgramStt;
use std::sync::Arc;
use std::time::Duration;
use voice::offline::{CodecDetector, CodecStt, CodecTts};
use voice::stages::stt::Stt;
use voice::stages::tts::Tts;
use voice::stages::vad::{SpeechDetector, VadParams};

/// Ears and voice for one call.
pub struct Speech {
    pub stt: Box<dyn Stt>,
    pub detector: Box<dyn SpeechDetector>,
    pub tts: Arc<dyn Tts>,
}

/// The speech of one call as configured.
pub fn for_call(cfg: &Config) -> Speech {
    let vendor = cfg.deepgram.enabled();
    let stt: Box<dyn Stt> = if vendor {
        Box::new(DeepgramStt::new(deepgram(cfg)))
    } else {
        Box::new(CodecStt::default())
    };
    let model = match cfg.serve.vad.as_str() {
        "model" => true,
        "codec" => false,
        _ => vendor,
    };
    let detector: Box<dyn SpeechDetector> = match model {
        true => match audio::vad::Vad::new(VadParams::default(), 8000) {
            Ok(v) => Box::new(v),
            Err(e) => {
                tracing::error!(error = %e, "the voice model cannot run; detecting codec speech");
                Box::new(CodecDetector::default())
            }
        },
        false => Box::new(CodecDetector::default()),
    };
    Speech {
        stt,
        detector,
        tts: Arc::new(CodecTts {
            rate: 8000,
            chars_per_second: cfg.sim.speech_chars_per_s,
            first_audio: Duration::from_millis(150),
        }),
    }
}

/// The Deepgram socket of a call: the configured endpoint and options, the
/// company name and city as key terms.
pub(crate) fn deepgram(cfg: &Config) -> LiveConfig {
    let d = &cfg.deepgram;
    let mut live = LiveConfig::new(d.url.trim(), d.api_key.trim());
    live.options = ListenOptions {
        model: d.model.trim().to_string(),
        endpointing_ms: d.endpointing_ms,
        utterance_end_ms: d.utterance_end_ms,
        keyterms: vec![cfg.business.company_name.clone(), cfg.business.city.clone()],
        ..ListenOptions::default()
    };
    live
}
