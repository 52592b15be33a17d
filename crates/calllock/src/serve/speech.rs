//! The speech vendors of served calls.
//!
//! **Ears.** Deepgram live STT when `[deepgram]` has a key, else local
//! speech (Whisper, [`crate::local_speech`]) when installed, else the
//! offline speech codec (`voice::offline`) — text carried in the audio
//! itself, which `calllock dial` speaks and hears — so a whole call runs
//! with no keys either way. When Deepgram is lost mid-call (a refused key,
//! every reconnect failed, three stalls), Whisper hears the rest of the
//! call, starting with the words Deepgram never answered
//! ([`FallbackStt`]); without local speech the call apologises and ends
//! with a callback.
//!
//! **Voice.** A chain, first to last, of the voices configured (SPEC §8.5);
//! "offline" is the local voice (Flite) when installed, else the codec:
//!
//! | keys set            | primary | fallback | last resort   |
//! |---------------------|---------|----------|---------------|
//! | Inworld + Deepgram  | Inworld | Aura     | offline voice |
//! | Inworld only        | Inworld | offline  | —             |
//! | Deepgram only       | Aura    | offline  | —             |
//! | none                | offline | —        | —             |
//!
//! The vendors' HTTP clients and the primary's circuit breaker belong to
//! the process ([`Voices`]), so connections are reused and one call's
//! failures spare the next call the wait; each call gets its own
//! [`FallbackTts`] (the fallback is started lazily, per call).

use crate::config::Config;
use crate::local_speech::LocalSpeech;
use anyhow::{Context, Result};
use futures_util::StreamExt;
use providers::deepgram::aura::{AuraConfig, AuraTts};
use providers::deepgram::listen::ListenOptions;
use providers::deepgram::live::LiveConfig;
use providers::deepgram::stt::DeepgramStt;
use providers::inworld::{InworldConfig, InworldTts};
use providers::tts_fallback::{FallbackOptions, FallbackTts, VoiceBreaker};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;
use voice::frames::Encoding;
use voice::offline::{CodecDetector, CodecStt, CodecTts};
use voice::stages::stt::Stt;
use voice::stages::stt_fallback::{FallbackStt, MakeBackup};
use voice::stages::tts::{Tts, TtsEvent};
use voice::stages::vad::{SpeechDetector, VadParams};

/// Ears and voice for one call.
pub struct Speech {
    pub stt: Box<dyn Stt>,
    pub detector: Box<dyn SpeechDetector>,
    pub tts: Arc<dyn Tts>,
    /// Set once the call's speech recognition is unusable (Deepgram with
    /// nothing to fall back to: Whisper and the offline codec cannot fail).
    pub lost: Option<Arc<AtomicBool>>,
}

/// The process's voices: vendor clients built once, and the primary
/// voice's breaker shared by every call.
pub struct Voices {
    primary: Option<Arc<dyn Tts>>,
    fallback: Option<Arc<dyn Tts>>,
    offline: Arc<dyn Tts>,
    local: LocalSpeech,
    breaker: Arc<VoiceBreaker>,
    first_audio_timeout: Duration,
    hedge_after: Duration,
    stall_after: Duration,
    /// Who speaks first, for logs and `/health`.
    pub chain: Vec<&'static str>,
}

impl Voices {
    /// The voices `cfg` configures (see the module table), the offline
    /// one from `local` when it is in use.
    pub fn new(cfg: &Config, local: LocalSpeech) -> Result<Voices> {
        let offline: Arc<dyn Tts> = match local.voice(8000) {
            Some(v) => v,
            None => Arc::new(CodecTts {
                rate: 8000,
                chars_per_second: cfg.sim.speech_chars_per_s,
                first_audio: Duration::from_millis(150),
            }),
        };
        let inworld: Option<Arc<dyn Tts>> = match cfg.inworld.enabled() {
            true => Some(Arc::new(
                InworldTts::new(inworld(cfg)).context("setting up Inworld text-to-speech")?,
            )),
            false => None,
        };
        let aura: Option<Arc<dyn Tts>> = match cfg.deepgram.enabled() {
            true => Some(Arc::new(
                AuraTts::new(aura(cfg)).context("setting up Deepgram Aura text-to-speech")?,
            )),
            false => None,
        };
        let mut chain = Vec::new();
        if inworld.is_some() {
            chain.push("inworld");
        }
        if aura.is_some() {
            chain.push("aura");
        }
        chain.push(if local.is_on() { "local" } else { "offline" });
        let (primary, fallback) = match (inworld, aura) {
            (Some(i), a) => (Some(i), a),
            (None, a) => (a, None),
        };
        let t = &cfg.tts;
        Ok(Voices {
            primary,
            fallback,
            offline,
            local,
            breaker: VoiceBreaker::new(t.breaker_failures, t.breaker_cooldown_s),
            first_audio_timeout: Duration::from_secs_f64(t.first_audio_timeout_s),
            hedge_after: Duration::from_secs_f64(t.hedge_after_s),
            stall_after: Duration::from_secs_f64(t.stall_after_s),
            chain,
        })
    }

    /// The local speech in use (or why not).
    pub fn local(&self) -> &LocalSpeech {
        &self.local
    }

    /// Who hears the callers, for logs and `/health`.
    pub fn ears(&self, cfg: &Config) -> &'static str {
        if cfg.deepgram.enabled() {
            "deepgram"
        } else if self.local.is_on() {
            "whisper"
        } else {
            "codec"
        }
    }

    /// Whether a vendor voice comes first (a breaker to watch).
    pub fn has_primary(&self) -> bool {
        self.primary.is_some()
    }

    /// Who hears the rest of a call when Deepgram is lost mid-call.
    pub fn ears_fallback(&self, cfg: &Config) -> Option<&'static str> {
        (cfg.deepgram.enabled() && self.local.is_on()).then_some("whisper")
    }

    /// The primary voice's breaker (for `/health`).
    pub fn breaker(&self) -> &Arc<VoiceBreaker> {
        &self.breaker
    }

    /// One call's voice.
    pub fn tts(&self) -> Arc<dyn Tts> {
        let Some(primary) = self.primary.clone() else {
            return self.offline.clone();
        };
        let (fallback, last_resort) = match &self.fallback {
            Some(f) => (f.clone(), Some(self.offline.clone())),
            None => (self.offline.clone(), None),
        };
        Arc::new(FallbackTts::new(
            primary,
            Box::new(move || fallback.clone()),
            FallbackOptions {
                breaker: self.breaker.clone(),
                first_audio_timeout: self.first_audio_timeout,
                hedge_after: self.hedge_after,
                stall_after: self.stall_after,
                last_resort,
            },
        ))
    }

    /// The speech of one call as configured.
    pub fn for_call(&self, cfg: &Config) -> Speech {
        let vendor = cfg.deepgram.enabled();
        let (stt, lost): (Box<dyn Stt>, _) = if vendor {
            let dg = DeepgramStt::new(deepgram(cfg));
            match self.local.is_on().then(|| self.local.clone()) {
                // Deepgram lost mid-call: Whisper hears the rest of it.
                Some(local) => {
                    let backup: MakeBackup = Box::new(move || {
                        metrics::counter!(crate::metrics::STT_FALLBACKS).increment(1);
                        match local.stt() {
                            Some(stt) => stt,
                            None => Box::new(CodecStt::default()),
                        }
                    });
                    (
                        Box::new(FallbackStt::new(Box::new(dg), "whisper", backup)),
                        None,
                    )
                }
                // Nothing to fall back to: the call ends with a callback.
                None => {
                    let lost = dg.failed();
                    (Box::new(dg), Some(lost))
                }
            }
        } else if let Some(local) = self.local.stt() {
            (local, None)
        } else {
            (Box::new(CodecStt::default()), None)
        };
        let model = match cfg.serve.vad.as_str() {
            "model" => true,
            "codec" => false,
            _ => vendor || self.local.is_on(),
        };
        let detector: Box<dyn SpeechDetector> = match model {
            true => match audio::vad::Vad::new(VadParams::telephone(), 8000) {
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
            tts: self.tts(),
            lost,
        }
    }

    /// `text` said in the call's voice as 8 kHz µ-law, whole (for a line
    /// spoken after the pipeline stopped). Never empty for a non-empty
    /// text: the offline voice speaks when every vendor fails.
    pub async fn say_ulaw(&self, cfg: &Config, text: &str) -> Vec<u8> {
        let mut ulaw = Vec::new();
        let mut stream = self.tts().synthesize(text);
        // The primary's wait, then a short line from the fallback: a caller
        // being let go is not kept waiting long.
        let limit = Duration::from_secs_f64(cfg.tts.first_audio_timeout_s + 5.0);
        let collect = async {
            while let Some(item) = stream.next().await {
                let Ok(TtsEvent::Audio(a)) = item else {
                    continue;
                };
                match (a.encoding, a.rate) {
                    (Encoding::MuLaw, 8000) => ulaw.extend_from_slice(&a.bytes),
                    (Encoding::Pcm16, 8000) => {
                        ulaw.extend(audio::mulaw::encode_pcm16le(&a.bytes));
                    }
                    (enc, rate) => {
                        tracing::warn!(?enc, rate, "a voice's audio is not 8 kHz; skipped");
                    }
                }
            }
        };
        if tokio::time::timeout(limit, collect).await.is_err() {
            tracing::warn!("the goodbye took too long to synthesize; cut short");
        }
        if ulaw.is_empty() {
            let (samples, _) =
                voice::offline::codec::encode(text, 8000, cfg.sim.speech_chars_per_s);
            audio::mulaw::encode(&samples, &mut ulaw);
        }
        ulaw
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

/// Inworld as configured.
pub(crate) fn inworld(cfg: &Config) -> InworldConfig {
    let i = &cfg.inworld;
    InworldConfig {
        base_url: i.url.trim().trim_end_matches('/').to_string(),
        voice_id: i.voice_id.trim().to_string(),
        model_id: i.model.trim().to_string(),
        ..InworldConfig::new(i.api_key.trim())
    }
}

/// Aura as configured (the Deepgram key).
pub(crate) fn aura(cfg: &Config) -> AuraConfig {
    let d = &cfg.deepgram;
    AuraConfig::new(d.api_key.trim())
        .with_base_url(d.tts_url.trim().trim_end_matches('/'))
        .with_voice(d.tts_voice.trim())
}
