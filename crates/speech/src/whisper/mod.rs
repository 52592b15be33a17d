//! Whisper (whisper.cpp through `whisper-rs`): the local recogniser.
//!
//! One model per process, loaded once ([`Whisper::load`]); a small pool of
//! worker threads ([`crate::pool::Workers`]) each with its own decoding
//! state, so a decode (~0.5–1.5 s for a short clip on two cores: Whisper
//! always encodes a 30 s window) never runs on the async runtime. A call
//! hears through [`crate::utterances::UtteranceStt`], which cuts the
//! caller's audio into clips at the VAD's turns.
//!
//! Decoding as measured in `docs/research` (local-speech §2): greedy, one
//! candidate, English, no timestamps, one segment, no temperature fallback
//! (the fallback triples the time for little gain on short clips), no
//! context carried between clips (each turn stands alone, and carried text
//! makes Whisper repeat itself).

use crate::pool::{Busy, Workers};
use crate::utterances::{Heard, Recogniser};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use whisper_rs::{FullParams, SamplingStrategy, WhisperContext, WhisperContextParameters};

/// How the recogniser runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WhisperOptions {
    /// Clips decoded at once (worker threads).
    pub workers: usize,
    /// CPU threads per decode.
    pub threads: usize,
    /// Clips waiting beyond the workers before callers are asked again.
    pub queue: usize,
}

impl Default for WhisperOptions {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        WhisperOptions {
            workers: 1,
            threads: cores.clamp(1, 4),
            queue: 8,
        }
    }
}

/// The process's Whisper model and its workers.
pub struct Whisper {
    workers: Workers<whisper_rs::WhisperState>,
    model: PathBuf,
    threads: usize,
}

/// Why the model cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum WhisperLoadError {
    #[error("no Whisper model at {0} — run scripts/setup-local-speech, or point speech.whisper_model (CALLLOCK_WHISPER_MODEL) at a whisper.cpp model file")]
    Missing(PathBuf),
    #[error("the Whisper model {path} cannot be loaded: {why}")]
    Invalid { path: PathBuf, why: String },
}

impl Whisper {
    /// Load the whisper.cpp model at `model` and start the workers.
    pub fn load(model: &Path, options: WhisperOptions) -> Result<Arc<Whisper>, WhisperLoadError> {
        if !model.is_file() {
            return Err(WhisperLoadError::Missing(model.to_path_buf()));
        }
        whisper_rs::install_logging_hooks();
        let invalid = |why: String| WhisperLoadError::Invalid {
            path: model.to_path_buf(),
            why,
        };
        let ctx = WhisperContext::new_with_params(model, WhisperContextParameters::default())
            .map_err(|e| invalid(e.to_string()))?;
        let ctx = Arc::new(ctx);
        let workers = Workers::start("whisper", options.workers, options.queue, move || {
            ctx.create_state().map_err(|e| e.to_string())
        })
        .map_err(invalid)?;
        Ok(Arc::new(Whisper {
            workers,
            model: model.to_path_buf(),
            threads: options.threads.max(1),
        }))
    }

    /// The model file.
    pub fn model(&self) -> &Path {
        &self.model
    }

    /// Recognise one clip on this thread (blocking; for tools and tests —
    /// calls go through [`Recogniser::recognise`]).
    pub async fn transcribe(&self, clip: Vec<f32>) -> Result<String, String> {
        match self.recognise(clip) {
            Ok(heard) => heard
                .await
                .unwrap_or_else(|_| Err("the recogniser stopped".into())),
            Err(b) => Err(b.to_string()),
        }
    }
}

/// Decode `clip` with `state`.
fn decode(
    state: &mut whisper_rs::WhisperState,
    clip: &[f32],
    threads: usize,
) -> Result<String, String> {
    let mut p = FullParams::new(SamplingStrategy::Greedy { best_of: 1 });
    p.set_language(Some("en"));
    p.set_n_threads(threads as i32);
    p.set_no_context(true);
    p.set_no_timestamps(true);
    p.set_single_segment(true);
    p.set_temperature_inc(0.0);
    p.set_suppress_blank(true);
    p.set_suppress_nst(true);
    p.set_print_special(false);
    p.set_print_progress(false);
    p.set_print_realtime(false);
    p.set_print_timestamps(false);
    // whisper.cpp wants at least 1 s; pad short clips with silence.
    let padded;
    let clip = if clip.len() < 16_000 + 1_600 {
        let mut v = clip.to_vec();
        v.resize(16_000 + 1_600, 0.0);
        padded = v;
        &padded
    } else {
        clip
    };
    state.full(p, clip).map_err(|e| e.to_string())?;
    let mut text = String::new();
    for segment in state.as_iter() {
        // A segment Whisper itself judges silence is not speech.
        if segment.no_speech_probability() > 0.8 {
            continue;
        }
        text.push_str(&segment.to_str_lossy().map_err(|e| e.to_string())?);
    }
    Ok(text.trim().to_string())
}

impl Recogniser for Whisper {
    fn recognise(&self, clip: Vec<f32>) -> Result<Heard, Busy> {
        let threads = self.threads;
        self.workers.run(move |state| decode(state, &clip, threads))
    }
}
