//! The `[deepgram]` section: hearing callers through Deepgram live
//! speech-to-text instead of the offline speech codec.

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
}

impl Default for DeepgramSection {
    fn default() -> Self {
        DeepgramSection {
            api_key: String::new(),
            url: "wss://api.deepgram.com".into(),
            model: "nova-3".into(),
            endpointing_ms: 500,
            utterance_end_ms: 1000,
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
