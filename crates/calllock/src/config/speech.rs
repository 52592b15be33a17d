//! The speech vendor sections: `[deepgram]` (live speech-to-text, and the
//! Aura fallback voice on the same key), `[inworld]` (the primary voice)
//! and `[tts]` (how a line falls back from one voice to the next).

use serde::{Deserialize, Serialize};

/// Deepgram live STT (SPEC §8.4). Off while `api_key` is empty: callers
/// are heard through the offline speech codec.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DeepgramSection {
    /// Env `DEEPGRAM_API_KEY`.
    pub api_key: String,
    /// The live endpoint's base (env `CALLLOCK_DEEPGRAM_URL`).
    pub url: String,
    /// Env `CALLLOCK_DEEPGRAM_MODEL`.
    pub model: String,
    /// Silence that ends an utterance (Deepgram's `endpointing`), ms.
    pub endpointing_ms: u32,
    /// Gap after the last final word that ends an utterance when
    /// endpointing never fires (background noise), ms.
    pub utterance_end_ms: u32,
    /// Aura text-to-speech's base URL (env `CALLLOCK_DEEPGRAM_TTS_URL`).
    pub tts_url: String,
    /// Aura voice (env `DEEPGRAM_TTS_VOICE`).
    pub tts_voice: String,
}

impl Default for DeepgramSection {
    fn default() -> Self {
        DeepgramSection {
            api_key: String::new(),
            url: "wss://api.deepgram.com".into(),
            model: "nova-3".into(),
            endpointing_ms: 500,
            utterance_end_ms: 1000,
            tts_url: "https://api.deepgram.com".into(),
            tts_voice: "aura-2-helena-en".into(),
        }
    }
}

impl DeepgramSection {
    /// Whether callers are heard through Deepgram.
    pub fn enabled(&self) -> bool {
        !self.api_key.trim().is_empty()
    }
}

/// Environment overrides of this section.
pub(super) fn apply_env(d: &mut DeepgramSection, get: &dyn Fn(&str) -> Option<String>) {
    if let Some(v) = get("DEEPGRAM_API_KEY") {
        d.api_key = v.trim().to_string();
    }
    if let Some(v) = get("CALLLOCK_DEEPGRAM_URL") {
        d.url = v.trim().to_string();
    }
    if let Some(v) = get("CALLLOCK_DEEPGRAM_MODEL") {
        d.model = v.trim().to_string();
    }
    if let Some(v) = get("CALLLOCK_DEEPGRAM_TTS_URL") {
        d.tts_url = v.trim().to_string();
    }
    if let Some(v) = get("DEEPGRAM_TTS_VOICE") {
        d.tts_voice = v.trim().to_string();
    }
}

/// What is wrong with this section, in plain words.
pub(super) fn problems(d: &DeepgramSection) -> Vec<String> {
    let mut out = Vec::new();
    let u = d.url.trim();
    if !(u.starts_with("wss://") || u.starts_with("ws://")) {
        out.push(format!(
            "deepgram.url (CALLLOCK_DEEPGRAM_URL) = {u:?} must be a wss:// or ws:// URL"
        ));
    }
    if d.model.trim().is_empty() {
        out.push("deepgram.model must not be empty (e.g. \"nova-3\")".into());
    }
    if !http_url(&d.tts_url) {
        out.push(format!(
            "deepgram.tts_url (CALLLOCK_DEEPGRAM_TTS_URL) = {:?} must be an https:// or http:// URL",
            d.tts_url.trim()
        ));
    }
    if d.tts_voice.trim().is_empty() {
        out.push(
            "deepgram.tts_voice (DEEPGRAM_TTS_VOICE) must not be empty (e.g. \"aura-2-helena-en\")"
                .into(),
        );
    }
    if !(10..=5000).contains(&d.endpointing_ms) {
        out.push(format!(
            "deepgram.endpointing_ms = {} must be between 10 and 5000",
            d.endpointing_ms
        ));
    }
    if !(1000..=5000).contains(&d.utterance_end_ms) {
        out.push(format!(
            "deepgram.utterance_end_ms = {} must be between 1000 and 5000 (Deepgram sends interim results about once a second)",
            d.utterance_end_ms
        ));
    }
    out
}

fn http_url(u: &str) -> bool {
    let u = u.trim();
    (u.starts_with("https://") || u.starts_with("http://"))
        && u.split("://").nth(1).is_some_and(|h| !h.is_empty())
}

/// Inworld streaming text-to-speech (SPEC §8.5), the primary voice. Off
/// while `api_key` is empty.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct InworldSection {
    /// Env `INWORLD_API_KEY` (Inworld's Base64 "Basic" credential).
    pub api_key: String,
    /// The API's base (env `CALLLOCK_INWORLD_URL`).
    pub url: String,
    /// Env `INWORLD_VOICE_ID`.
    pub voice_id: String,
    /// Env `INWORLD_MODEL`.
    pub model: String,
}

impl Default for InworldSection {
    fn default() -> Self {
        InworldSection {
            api_key: String::new(),
            url: "https://api.inworld.ai".into(),
            voice_id: "Ashley".into(),
            model: "inworld-tts-1.5-max".into(),
        }
    }
}

impl InworldSection {
    /// Whether the agent speaks through Inworld.
    pub fn enabled(&self) -> bool {
        !self.api_key.trim().is_empty()
    }
}

/// Environment overrides of `[inworld]`.
pub(super) fn apply_inworld_env(s: &mut InworldSection, get: &dyn Fn(&str) -> Option<String>) {
    for (name, field) in [
        ("INWORLD_API_KEY", &mut s.api_key),
        ("CALLLOCK_INWORLD_URL", &mut s.url),
        ("INWORLD_VOICE_ID", &mut s.voice_id),
        ("INWORLD_MODEL", &mut s.model),
    ] {
        if let Some(v) = get(name) {
            *field = v.trim().to_string();
        }
    }
}

/// What is wrong with `[inworld]`, in plain words.
pub(super) fn inworld_problems(s: &InworldSection) -> Vec<String> {
    let mut out = Vec::new();
    if !http_url(&s.url) {
        out.push(format!(
            "inworld.url (CALLLOCK_INWORLD_URL) = {:?} must be an https:// or http:// URL",
            s.url.trim()
        ));
    }
    if s.voice_id.trim().is_empty() {
        out.push("inworld.voice_id (INWORLD_VOICE_ID) must not be empty (e.g. \"Ashley\")".into());
    }
    if s.model.trim().is_empty() {
        out.push(
            "inworld.model (INWORLD_MODEL) must not be empty (e.g. \"inworld-tts-1.5-max\")".into(),
        );
    }
    out
}

/// How a line falls back from one voice to the next (SPEC §8.5, issue 24):
/// the primary's circuit breaker, its time to first audio, the hedge and
/// the stall.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TtsSection {
    /// Longest wait for the primary voice's first audio; then the
    /// fallback says the line alone.
    pub first_audio_timeout_s: f64,
    /// The primary this late with its first audio: the fallback is asked
    /// too, and whichever voice speaks first says the line. 0.5 s keeps a
    /// stalled first sentence inside the 1.5 s dead-air budget (issue 24):
    /// endpointing 0.5 s + the LLM's first words ~0.4 s + this + the
    /// fallback's first audio.
    pub hedge_after_s: f64,
    /// A gap this long in the primary's audio after it started: the
    /// fallback says the rest of the line.
    pub stall_after_s: f64,
    /// Lines failed in a row (by any call) that open the breaker.
    pub breaker_failures: u32,
    /// How long an open breaker sends every line to the fallback.
    pub breaker_cooldown_s: f64,
}

impl Default for TtsSection {
    fn default() -> Self {
        TtsSection {
            first_audio_timeout_s: 5.0,
            hedge_after_s: 0.5,
            stall_after_s: 1.0,
            breaker_failures: 3,
            breaker_cooldown_s: 60.0,
        }
    }
}

/// What is wrong with `[tts]`, in plain words.
pub(super) fn tts_problems(t: &TtsSection) -> Vec<String> {
    let mut out = Vec::new();
    if !(t.first_audio_timeout_s.is_finite() && (0.1..=60.0).contains(&t.first_audio_timeout_s)) {
        out.push(format!(
            "tts.first_audio_timeout_s = {} must be between 0.1 and 60 seconds",
            t.first_audio_timeout_s
        ));
    }
    for (name, v) in [
        ("tts.hedge_after_s", t.hedge_after_s),
        ("tts.stall_after_s", t.stall_after_s),
    ] {
        if !(v.is_finite() && (0.1..=60.0).contains(&v)) {
            out.push(format!("{name} = {v} must be between 0.1 and 60 seconds"));
        }
    }
    if t.breaker_failures == 0 {
        out.push("tts.breaker_failures must be at least 1".into());
    }
    if !(t.breaker_cooldown_s.is_finite() && (0.0..=3600.0).contains(&t.breaker_cooldown_s)) {
        out.push(format!(
            "tts.breaker_cooldown_s = {} must be between 0 and 3600 seconds",
            t.breaker_cooldown_s
        ));
    }
    out
}
