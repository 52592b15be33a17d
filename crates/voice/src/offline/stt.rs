//! Speech to text and voice activity for [codec](super::codec) audio.

use super::codec::{decode, from_bytes, Decoded};
use crate::frames::{Audio, Encoding};
use crate::stages::stt::{Stt, Transcript};
use crate::stages::vad::{SpeechDetector, VadEvent, VadParams};
use audio::vad::VadHysteresis;
use std::time::Duration;

/// Splits PCM16 audio into 20 ms frames (keeping partial frames).
#[derive(Debug, Default)]
struct Framer {
    pending: Vec<i16>,
}

impl Framer {
    fn frames(&mut self, audio: &Audio) -> Vec<Vec<i16>> {
        if audio.encoding != Encoding::Pcm16 || audio.rate == 0 {
            return Vec::new();
        }
        let per = (audio.rate as usize / 50).max(4);
        self.pending.extend(from_bytes(&audio.bytes));
        let mut out = Vec::new();
        while self.pending.len() >= per {
            out.push(self.pending.drain(..per).collect());
        }
        out
    }
}

/// Speech to text for codec audio: an interim result after every word, a
/// final one after `endpointing` of silence.
#[derive(Debug)]
pub struct CodecStt {
    framer: Framer,
    words: Vec<String>,
    silence: Duration,
    endpointing: Duration,
    interim: bool,
}

impl Default for CodecStt {
    fn default() -> Self {
        Self::new(Duration::from_millis(500))
    }
}

impl CodecStt {
    /// `endpointing`: silence that ends an utterance (SPEC §8.4: 500 ms).
    pub fn new(endpointing: Duration) -> Self {
        CodecStt {
            framer: Framer::default(),
            words: Vec::new(),
            silence: Duration::ZERO,
            endpointing,
            interim: true,
        }
    }
}

impl Stt for CodecStt {
    fn push_audio(&mut self, audio: &Audio) -> Vec<Transcript> {
        let mut out = Vec::new();
        for frame in self.framer.frames(audio) {
            match decode(&frame) {
                Decoded::Word(w) => {
                    self.silence = Duration::ZERO;
                    self.words.push(w);
                    if self.interim {
                        out.push(Transcript {
                            text: self.words.join(" "),
                            is_final: false,
                        });
                    }
                }
                Decoded::Voice => self.silence = Duration::ZERO,
                Decoded::Silence => {
                    self.silence += Duration::from_millis(20);
                    if !self.words.is_empty() && self.silence >= self.endpointing {
                        out.push(Transcript {
                            text: std::mem::take(&mut self.words).join(" "),
                            is_final: true,
                        });
                    }
                }
            }
        }
        out
    }

    fn finish(&mut self) -> Vec<Transcript> {
        if self.words.is_empty() {
            return Vec::new();
        }
        vec![Transcript {
            text: std::mem::take(&mut self.words).join(" "),
            is_final: true,
        }]
    }
}

/// VAD for codec audio: a frame is voiced when it is not silence; the real
/// hysteresis (SPEC §8.4 defaults) decides when speech starts and stops.
#[derive(Debug)]
pub struct CodecDetector {
    framer: Framer,
    hysteresis: VadHysteresis,
}

impl Default for CodecDetector {
    /// The SPEC §8.4 defaults.
    fn default() -> Self {
        CodecDetector {
            framer: Framer::default(),
            // A constant input, checked by a test: cannot fail.
            hysteresis: match VadHysteresis::new(VadParams::default()) {
                Ok(h) => h,
                Err(e) => panic!("the default VAD parameters are valid: {e}"),
            },
        }
    }
}

impl CodecDetector {
    /// A detector with these parameters (checked).
    pub fn new(params: VadParams) -> Result<Self, audio::vad::VadError> {
        Ok(CodecDetector {
            framer: Framer::default(),
            hysteresis: VadHysteresis::new(params)?,
        })
    }
}

impl SpeechDetector for CodecDetector {
    fn process(&mut self, audio: &Audio) -> Vec<VadEvent> {
        let mut out = Vec::new();
        for frame in self.framer.frames(audio) {
            let voiced = decode(&frame) != Decoded::Silence;
            let c = if voiced { 1.0 } else { 0.0 };
            if let Some(e) = self.hysteresis.update(c, c, Duration::from_millis(20)) {
                out.push(e);
            }
        }
        out
    }
    fn reset(&mut self) {
        self.hysteresis.reset();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_detector_builds() {
        let _ = CodecDetector::default();
        assert!(CodecDetector::new(VadParams::default()).is_ok());
    }
}
