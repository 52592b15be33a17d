//! Whisper (whisper.cpp through `whisper-rs`): the local recogniser.
//!
//! One model per process, loaded once ([`Whisper::load`]); a small pool of
//! worker threads ([`crate::pool::Workers`]) each with its own decoding
//! state, so a decode never runs on the async runtime. A call hears
//! through [`crate::utterances::UtteranceStt`], which cuts the caller's
//! audio into clips at the VAD's turns.
//!
//! Whisper's encoder hears a 30 s window whatever the clip's length (~1 s
//! of two cores for a caller's 2 s line). A clip is decoded with a window
//! of its own length plus [`CONTEXT_MARGIN_S`] instead, about a third of
//! the work. A window that short makes Whisper repeat itself on a clip of
//! one short word ("7 7 7 7 …"); such a text is thrown away and the clip
//! decoded again with the whole window ([`repeats_itself`]), so accuracy
//! is what the whole window gives (measured on the committed recordings:
//! `tests/speech_accuracy.rs`).
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

/// Seconds of encoder window beyond a clip's length (Whisper encodes 50
/// frames a second, 1,500 for its whole 30 s). Shorter margins make
/// Whisper repeat whole sentences.
pub const CONTEXT_MARGIN_S: f64 = 6.0;

/// Encoder frames for a clip of `samples` at 16 kHz: its length plus the
/// margin, at most the whole window.
fn audio_ctx(samples: usize) -> i32 {
    let secs = samples as f64 / 16_000.0 + CONTEXT_MARGIN_S;
    (secs * 50.0).ceil().min(1500.0) as i32
}

/// Whether `text` says the same words three times running (a window too
/// short for the clip: "7 7 7 7", "No. No. No. No."): a sign to decode
/// again with the whole window, which hears what was said.
pub fn repeats_itself(text: &str) -> bool {
    let words: Vec<String> = text
        .split_whitespace()
        .map(|w| {
            w.chars()
                .filter(|c| c.is_alphanumeric())
                .collect::<String>()
                .to_lowercase()
        })
        .filter(|w| !w.is_empty())
        .collect();
    (1..=words.len() / 3).any(|n| {
        (0..=words.len() - 3 * n).any(|i| {
            words[i..i + n] == words[i + n..i + 2 * n]
                && words[i..i + n] == words[i + 2 * n..i + 3 * n]
        })
    })
}

/// Decode `clip` with `state`: with a window of the clip's length, and
/// again with the whole window when that text repeats itself.
fn decode(
    state: &mut whisper_rs::WhisperState,
    clip: &[f32],
    threads: usize,
) -> Result<String, String> {
    let short = decode_with(state, clip, threads, audio_ctx(clip.len()))?;
    if !repeats_itself(&short) {
        return Ok(short);
    }
    decode_with(state, clip, threads, 1500)
}

/// Decode `clip` with `state` and an encoder window of `audio_ctx` frames.
fn decode_with(
    state: &mut whisper_rs::WhisperState,
    clip: &[f32],
    threads: usize,
    audio_ctx: i32,
) -> Result<String, String> {
    let mut p = FullParams::new(SamplingStrategy::Greedy { best_of: 1 });
    p.set_audio_ctx(audio_ctx);
    // A window's repetition ends here rather than at the model's limit.
    p.set_max_tokens((24.0 + clip.len() as f64 / 16_000.0 * 8.0) as i32);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_that_says_the_same_words_three_times_repeats_itself() {
        assert!(repeats_itself("7 7 7 7 7 8, 8, 8"));
        assert!(repeats_itself("No. No. No. No."));
        assert!(repeats_itself(
            "Okay, thanks. Okay, thanks. Okay, thanks. Okay,"
        ));
        assert!(repeats_itself("It's 7 8 7. It's 7 8 7. It's 7 8 7."));
        // Twice is speech ("no, no"), and so is a zip code's digits.
        assert!(!repeats_itself("No, no, I'm fine."));
        assert!(!repeats_itself("It's 7 8 7 0 1."));
        assert!(!repeats_itself("It's 77001."));
        assert!(!repeats_itself(""));
        assert!(!repeats_itself("Hi, my AC stopped cooling last night."));
    }

    #[test]
    fn the_window_is_the_clip_and_the_margin_at_most_whisper_s_own() {
        assert_eq!(audio_ctx(0), (CONTEXT_MARGIN_S * 50.0) as i32);
        assert_eq!(
            audio_ctx(16_000 * 2),
            ((2.0 + CONTEXT_MARGIN_S) * 50.0) as i32
        );
        assert_eq!(audio_ctx(16_000 * 40), 1500);
    }
}
