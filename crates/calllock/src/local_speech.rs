//! Local speech for this process: the Whisper recogniser and the Flite
//! voice (the `speech` crate), loaded once and shared by every call.
//!
//! `[speech] local` decides (env `CALLLOCK_LOCAL_SPEECH`):
//!
//! | `local` | built with `local-speech`, installed | otherwise |
//! |---------|--------------------------------------|-----------|
//! | `auto`  | used                                 | the offline codec, and a note saying what to run |
//! | `on`    | used                                 | an error saying what to run |
//! | `off`   | the offline codec                    | the offline codec |
//!
//! Who uses it: `serve` hears callers with Whisper when no Deepgram key is
//! set, and speaks with Flite when no voice vendor is set (and as the last
//! resort of the vendors' chain); `dial` speaks the caller's typed lines
//! with Flite and hears the agent with Whisper.

use crate::config::Config;
use anyhow::{bail, Result};
use speech::utterances::Recogniser;
use std::sync::Arc;
use voice::stages::stt::Stt;
use voice::stages::tts::Tts;

/// What to run to get local speech.
pub const HOW_TO_INSTALL: &str =
    "run scripts/setup-local-speech, then build with `cargo build --release --features local-speech`";

/// The process's local speech engines (none when not in use).
#[derive(Clone, Default)]
pub struct LocalSpeech {
    ears: Option<Arc<dyn Recogniser>>,
    #[cfg(feature = "local-speech")]
    flite: Option<Arc<speech::flite::Flite>>,
    /// Why local speech is not in use, for the operator (None: in use).
    pub note: Option<String>,
}

impl LocalSpeech {
    /// No local speech, for this reason.
    pub fn off(why: impl Into<String>) -> LocalSpeech {
        LocalSpeech {
            note: Some(why.into()),
            ..LocalSpeech::default()
        }
    }

    /// Load local speech as `cfg.speech.local` says (see the module table).
    pub fn start(cfg: &Config) -> Result<LocalSpeech> {
        let s = &cfg.speech;
        if s.local == "off" {
            return Ok(LocalSpeech::off(
                "local speech is off (speech.local = \"off\")",
            ));
        }
        let required = s.local == "on";
        match Self::load(cfg) {
            Ok(l) => Ok(l),
            Err(why) if required => {
                bail!("local speech is required (speech.local = \"on\") but {why}")
            }
            Err(why) => Ok(LocalSpeech::off(why)),
        }
    }

    #[cfg(not(feature = "local-speech"))]
    fn load(_cfg: &Config) -> std::result::Result<LocalSpeech, String> {
        Err(format!(
            "this binary was built without local speech ({HOW_TO_INSTALL})"
        ))
    }

    /// Loaded once per model file and options in a process (`voice` runs
    /// a server and a phone; tests run many servers): a second load shares
    /// the first one's model and workers.
    #[cfg(feature = "local-speech")]
    fn load(cfg: &Config) -> std::result::Result<LocalSpeech, String> {
        use std::collections::HashMap;
        use std::sync::{Mutex, OnceLock};
        type Key = (std::path::PathBuf, usize, usize);
        static LOADED: OnceLock<Mutex<HashMap<Key, LocalSpeech>>> = OnceLock::new();
        let s = &cfg.speech;
        let key = (s.whisper_model_path(), s.whisper_workers, s.whisper_threads);
        let mut loaded = LOADED
            .get_or_init(Mutex::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(l) = loaded.get(&key) {
            return Ok(l.clone());
        }
        let l = Self::load_new(cfg)?;
        loaded.insert(key, l.clone());
        Ok(l)
    }

    #[cfg(feature = "local-speech")]
    fn load_new(cfg: &Config) -> std::result::Result<LocalSpeech, String> {
        use speech::whisper::{Whisper, WhisperOptions};
        let s = &cfg.speech;
        let model = s.whisper_model_path();
        let options = WhisperOptions {
            workers: s.whisper_workers_or_default(),
            threads: s.whisper_threads_or_default(),
            ..WhisperOptions::default()
        };
        let whisper = Whisper::load(&model, options).map_err(|e| format!("{e}"))?;
        let flite = speech::flite::Flite::start().map_err(|e| {
            format!("the Flite voice cannot start: {e} (apt-get install flite1-dev)")
        })?;
        tracing::info!(model = %model.display(), "local speech: Whisper and the Flite voice");
        Ok(LocalSpeech {
            ears: Some(whisper),
            flite: Some(flite),
            note: None,
        })
    }

    /// Whether local speech is in use.
    pub fn is_on(&self) -> bool {
        self.note.is_none()
    }

    /// The recogniser (for the phone's ear and tools).
    pub fn recogniser(&self) -> Option<Arc<dyn Recogniser>> {
        self.ears.clone()
    }

    /// A call's speech to text through Whisper.
    pub fn stt(&self) -> Option<Box<dyn Stt>> {
        let ears = self.ears.clone()?;
        Some(Box::new(speech::utterances::UtteranceStt::new(
            ears,
            speech::utterances::UtteranceOptions::default(),
        )))
    }

    /// The local voice at `rate` Hz.
    pub fn voice(&self, rate: u32) -> Option<Arc<dyn Tts>> {
        #[cfg(feature = "local-speech")]
        if let Some(f) = &self.flite {
            return Some(Arc::new(speech::flite::FliteTts::new(f.clone(), rate)));
        }
        let _ = rate;
        None
    }

    /// `text` spoken by the local voice as 8 kHz µ-law (the caller's side
    /// of `dial`); None without local speech or when the voice fails.
    pub async fn say_ulaw(&self, text: &str) -> Option<Vec<u8>> {
        use futures_util::StreamExt;
        let mut stream = self.voice(8000)?.synthesize(text);
        let mut ulaw = Vec::new();
        while let Some(item) = stream.next().await {
            match item {
                Ok(voice::stages::tts::TtsEvent::Audio(a)) => match a.encoding {
                    voice::frames::Encoding::MuLaw => ulaw.extend_from_slice(&a.bytes),
                    voice::frames::Encoding::Pcm16 => {
                        ulaw.extend(audio::mulaw::encode_pcm16le(&a.bytes));
                    }
                },
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "the local voice failed");
                    return None;
                }
            }
        }
        Some(ulaw)
    }

    /// One line for logs and `doctor`.
    pub fn describe(&self) -> String {
        match &self.note {
            None => "local speech (Whisper + Flite)".into(),
            Some(why) => format!("offline speech codec: {why}"),
        }
    }
}
