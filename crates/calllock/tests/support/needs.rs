//! What a test needs from the machine, and what it does without it: say
//! SKIP and why on a developer's machine, fail under CI (which installs
//! everything and must test the real stack).
#![allow(dead_code)]

use std::path::PathBuf;

/// `true` (after saying SKIP) when `why` names something missing; a
/// failure instead under CI.
pub fn skip(test: &str, why: Option<String>) -> bool {
    let Some(why) = why else { return false };
    assert!(
        std::env::var_os("CI").is_none(),
        "{test} must run in CI, but {why}"
    );
    eprintln!("SKIP {test}: {why}");
    true
}

/// Why local speech cannot be tested here, if it cannot: this build has
/// no `local-speech` feature, or no Whisper model is installed.
pub fn local_speech_missing() -> Option<String> {
    if !cfg!(feature = "local-speech") {
        return Some("built without --features local-speech".into());
    }
    let model = std::env::var("CALLLOCK_WHISPER_MODEL")
        .map(PathBuf::from)
        .unwrap_or_else(|_| speech::install::default_whisper_model());
    (!model.is_file()).then(|| {
        format!(
            "no Whisper model at {} (run scripts/setup-local-speech)",
            model.display()
        )
    })
}
