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
    /// Caller turns recognised at once (worker threads; 0: one for every
    /// `whisper_threads` cores).
    pub whisper_workers: usize,
    /// CPU threads per recognition (0: the machine's cores, at most 4).
    pub whisper_threads: usize,
    /// Calls that Whisper hears at once; beyond, a caller gets the busy
    /// line and a callback, as beyond `serve.max_calls`, rather than every
    /// call being misheard. 0: what this machine can hear,
    /// [`CALLS_PER_CORE`] per core (measure yours with `cargo bench -p
    /// calllock --features local-speech --bench local_speech_capacity`).
    pub max_calls: u32,
}

/// Calls Whisper (tiny.en, q8_0) hears at once per core, with every
/// caller turn recognised within 1.5 s of the VAD's stop. The
/// `local_speech_capacity` bench measured 11 per core on a 2-core machine (22
/// calls: p95 1.0 s, max 1.37 s; 23 calls: one turn unheard); this keeps
/// a margin for a busier or slower machine (README, "Local speech").
pub const CALLS_PER_CORE: f64 = 8.0;

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

impl Default for SpeechSection {
    fn default() -> Self {
        SpeechSection {
            local: "auto".into(),
            whisper_model: String::new(),
            whisper_workers: 0,
            whisper_threads: 0,
            max_calls: 0,
        }
    }
}

impl SpeechSection {
    /// CPU threads per recognition: `whisper_threads`, or the machine's
    /// cores, at most 4 (more help one clip little).
    pub fn whisper_threads_or_default(&self) -> usize {
        match self.whisper_threads {
            0 => cores().clamp(1, 4),
            n => n,
        }
    }

    /// Recognitions at once: `whisper_workers`, or one for every
    /// [`whisper_threads_or_default`](Self::whisper_threads_or_default)
    /// cores.
    pub fn whisper_workers_or_default(&self) -> usize {
        match self.whisper_workers {
            0 => (cores() / self.whisper_threads_or_default()).max(1),
            n => n,
        }
    }

    /// Calls Whisper hears at once: `max_calls`, or [`CALLS_PER_CORE`] for
    /// every core.
    pub fn max_calls_or_default(&self) -> u32 {
        match self.max_calls {
            0 => ((CALLS_PER_CORE * cores() as f64).floor() as u32).max(1),
            n => n,
        }
    }

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
    if s.whisper_workers > 16 {
        out.push(format!(
            "speech.whisper_workers = {} must be at most 16 (0: one for every whisper_threads cores)",
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_sizes_follow_the_machine_and_set_ones_win() {
        let s = SpeechSection::default();
        let threads = s.whisper_threads_or_default();
        assert!((1..=4).contains(&threads));
        assert_eq!(s.whisper_workers_or_default(), (cores() / threads).max(1));
        let calls = s.max_calls_or_default();
        assert!(calls >= 1);
        assert_eq!(calls, ((CALLS_PER_CORE * cores() as f64) as u32).max(1));
        let set = SpeechSection {
            whisper_workers: 3,
            whisper_threads: 2,
            max_calls: 7,
            ..SpeechSection::default()
        };
        assert_eq!(
            (
                set.whisper_workers_or_default(),
                set.whisper_threads_or_default(),
                set.max_calls_or_default()
            ),
            (3, 2, 7)
        );
    }

    #[test]
    fn zero_workers_is_automatic_and_too_many_is_refused() {
        let ok = SpeechSection::default();
        assert!(problems(&ok).is_empty(), "{:?}", problems(&ok));
        let bad = SpeechSection {
            whisper_workers: 17,
            ..SpeechSection::default()
        };
        let p = problems(&bad);
        assert!(p.iter().any(|p| p.contains("whisper_workers")), "{p:?}");
    }
}
