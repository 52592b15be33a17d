//! The `[speech]` section: local speech — the Whisper recogniser and the
//! Flite voice that run on this machine with no keys (`speech` crate,
//! installed by `scripts/setup-local-speech`).

use serde::{Deserialize, Serialize};

/// Local speech.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SpeechSection {
    /// `"auto"`: hear and speak locally when no speech vendor is
    /// configured and local speech is installed (else the offline codec,
    /// saying so); `"on"`: required (a clear error when missing); `"off"`:
    /// never (env `CALLLOCK_LOCAL_SPEECH`).
    pub local: String,
    /// A whisper.cpp model file (env `CALLLOCK_WHISPER_MODEL`). Empty: the
    /// one the setup script converts, in the speech directory
    /// (`$CALLLOCK_SPEECH_DIR`, else `~/.local/share/calllock/speech`).
    pub whisper_model: String,
    /// Caller turns recognised at once (worker threads).
    pub whisper_workers: usize,
    /// CPU threads per recognition (0: the machine's cores, at most 4).
    pub whisper_threads: usize,
}

impl Default for SpeechSection {
    fn default() -> Self {
        SpeechSection {
            local: "auto".into(),
            whisper_model: String::new(),
            whisper_workers: 1,
            whisper_threads: 0,
        }
    }
}

impl SpeechSection {
    /// The Whisper model file to use.
    pub fn whisper_model_path(&self) -> std::path::PathBuf {
        match self.whisper_model.trim() {
            "" => speech::install::default_whisper_model(),
            p => std::path::PathBuf::from(p),
        }
    }
}

/// Environment overrides of this section.
pub(super) fn apply_env(s: &mut SpeechSection, get: &dyn Fn(&str) -> Option<String>) {
    if let Some(v) = get("CALLLOCK_LOCAL_SPEECH") {
        s.local = v.trim().to_ascii_lowercase();
    }
    if let Some(v) = get("CALLLOCK_WHISPER_MODEL") {
        s.whisper_model = v.trim().to_string();
    }
}

/// What is wrong with this section, in plain words.
pub(super) fn problems(s: &SpeechSection) -> Vec<String> {
    let mut out = Vec::new();
    if !matches!(s.local.as_str(), "auto" | "on" | "off") {
        out.push(format!(
            "speech.local (CALLLOCK_LOCAL_SPEECH) = {:?} must be \"auto\", \"on\" or \"off\"",
            s.local
        ));
    }
    if !(1..=16).contains(&s.whisper_workers) {
        out.push(format!(
            "speech.whisper_workers = {} must be between 1 and 16",
            s.whisper_workers
        ));
    }
    if s.whisper_threads > 64 {
        out.push(format!(
            "speech.whisper_threads = {} must be at most 64 (0: the machine's cores)",
            s.whisper_threads
        ));
    }
    out
}
