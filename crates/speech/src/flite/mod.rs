//! The Flite voice (`cmu_us_slt`, Debian `flite1-dev`, BSD-like licence):
//! small, fast (a sentence in ~50 ms, real-time factor ~0.02 on this
//! machine kind) and the clearest of the classic engines on the phone.
//!
//! Flite is a C library with process-wide state and an error path that
//! exits the process, so it runs on its own worker thread
//! ([`crate::pool::Workers`]) and only ever sees text it can read: plain
//! printable characters, no NUL, at most [`MAX_TEXT`] characters per call
//! (longer text is spoken in pieces).

mod ffi;
mod tts;

pub use tts::FliteTts;

use crate::pool::{Busy, Workers};
use std::ffi::CString;
use std::sync::{Arc, Once, OnceLock};

/// The longest text handed to Flite at once.
pub const MAX_TEXT: usize = 600;

/// Flite's native rate for `cmu_us_slt`.
pub const FLITE_RATE: u32 = 16_000;

/// A registered Flite voice (owned by one worker thread).
struct Voice(*mut ffi::CstVoice);

// SAFETY: the voice is created, used and kept on one worker thread; the
// pointer only moves with the worker's engine at start.
unsafe impl Send for Voice {}

static INIT: Once = Once::new();

impl Voice {
    fn new() -> Result<Voice, String> {
        // SAFETY: flite_init has no preconditions; Once makes it run once.
        INIT.call_once(|| unsafe {
            ffi::flite_init();
        });
        // SAFETY: a NULL voxdir is what Flite's own main passes.
        let v = unsafe { ffi::register_cmu_us_slt(std::ptr::null()) };
        if v.is_null() {
            return Err("Flite could not register the cmu_us_slt voice".into());
        }
        Ok(Voice(v))
    }

    /// Speak `text` (already made readable); 16-bit samples at the wave's
    /// rate.
    fn speak(&mut self, text: &str) -> Result<(Vec<i16>, u32), String> {
        let c = CString::new(text).map_err(|_| "text with a NUL byte".to_string())?;
        // SAFETY: `c` outlives the call; the voice is valid (registered).
        let w = unsafe { ffi::flite_text_to_wave(c.as_ptr(), self.0) };
        if w.is_null() {
            return Err("Flite produced no audio".into());
        }
        // SAFETY: `w` is a valid wave from Flite; read then freed once.
        let out = unsafe {
            let wave = &*w;
            let n = usize::try_from(wave.num_samples).unwrap_or(0)
                * usize::try_from(wave.num_channels.max(1)).unwrap_or(1);
            let samples = if wave.samples.is_null() || n == 0 {
                Vec::new()
            } else {
                std::slice::from_raw_parts(wave.samples, n).to_vec()
            };
            let rate = u32::try_from(wave.sample_rate).unwrap_or(FLITE_RATE);
            ffi::delete_wave(w);
            (samples, rate)
        };
        Ok(out)
    }
}

/// `text` as Flite can read it: typographic quotes and dashes made plain,
/// other non-ASCII and control characters dropped, whitespace collapsed.
pub fn readable(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let c = match c {
            '\u{2018}' | '\u{2019}' | '\u{02BC}' => '\'',
            '\u{201C}' | '\u{201D}' => '"',
            '\u{2013}' | '\u{2014}' => ',',
            '\u{2026}' => '.',
            c if c.is_ascii_graphic() => c,
            c if c.is_whitespace() => ' ',
            _ => continue,
        };
        out.push(c);
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Split `text` into pieces of at most `max` bytes, at sentence ends or
/// spaces where possible.
pub fn pieces(text: &str, max: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text.trim();
    while rest.len() > max {
        let window = &rest[..max];
        let cut = window
            .rfind(['.', '!', '?', ';', ','])
            .map(|i| i + 1)
            .or_else(|| window.rfind(' '))
            .filter(|&i| i > 0)
            .unwrap_or(max);
        out.push(rest[..cut].trim());
        rest = rest[cut..].trim_start();
    }
    if !rest.is_empty() {
        out.push(rest);
    }
    out
}

/// The process's Flite voice: one worker thread, shared by every caller.
///
/// Flite keeps process-wide state (the lexicon, the voice list, its error
/// jump buffer) that is not safe to touch from two threads at once, so a
/// process has exactly one: [`Flite::start`] hands out the same one every
/// time. (Two voices on two threads crashed the test binary with SIGSEGV.)
pub struct Flite {
    workers: Workers<Voice>,
}

impl Flite {
    /// The process's voice, started on first use.
    pub fn start() -> Result<Arc<Flite>, String> {
        static THE_ONE: OnceLock<Result<Arc<Flite>, String>> = OnceLock::new();
        THE_ONE
            .get_or_init(|| {
                let workers = Workers::start("flite", 1, 64, Voice::new)?;
                Ok(Arc::new(Flite { workers }))
            })
            .clone()
    }

    /// Speak `text`: 16-bit samples at [`FLITE_RATE`], later.
    pub fn speak(
        &self,
        text: &str,
    ) -> Result<tokio::sync::oneshot::Receiver<Result<Vec<i16>, String>>, Busy> {
        let text = readable(text);
        self.workers.run(move |voice: &mut Voice| {
            let mut all = Vec::new();
            for piece in pieces(&text, MAX_TEXT) {
                let (samples, rate) = voice.speak(piece)?;
                if rate == FLITE_RATE {
                    all.extend(samples);
                } else {
                    let bytes: Vec<u8> = samples.iter().flat_map(|s| s.to_le_bytes()).collect();
                    let out = audio::resample::resample_all(rate, FLITE_RATE, &bytes)
                        .map_err(|e| e.to_string())?;
                    all.extend(
                        out.chunks_exact(2)
                            .map(|b| i16::from_le_bytes([b[0], b[1]])),
                    );
                }
            }
            Ok(all)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_made_readable() {
        assert_eq!(
            readable("It\u{2019}s \u{201C}fine\u{201D}\u{2014}ok\u{2026}"),
            "It's \"fine\",ok."
        );
        assert_eq!(readable("a\0b\u{7}\tc\n  d é"), "ab c d");
    }

    #[test]
    fn long_text_is_cut_at_sentences_then_spaces() {
        let t = "One two three. Four five six seven eight nine.";
        assert_eq!(
            pieces(t, 20),
            vec!["One two three.", "Four five six seven", "eight nine."]
        );
        assert_eq!(pieces("abcdefghij", 4), vec!["abcd", "efgh", "ij"]);
        assert!(pieces("   ", 10).is_empty());
    }

    #[tokio::test]
    async fn flite_speaks_a_line() {
        let flite = Flite::start().expect("Flite starts");
        assert!(
            Arc::ptr_eq(&flite, &Flite::start().unwrap()),
            "one per process"
        );
        let samples = flite
            .speak("Thanks for calling ACE Cooling.")
            .unwrap()
            .await
            .unwrap()
            .unwrap();
        let secs = samples.len() as f64 / f64::from(FLITE_RATE);
        assert!((1.0..4.0).contains(&secs), "{secs} s");
        assert!(samples.iter().any(|s| s.unsigned_abs() > 3000), "audible");
        // Nothing to say is no audio, not an error.
        let none = flite.speak(" \u{7} ").unwrap().await.unwrap().unwrap();
        assert!(none.len() < 16_000, "{}", none.len());
    }
}
