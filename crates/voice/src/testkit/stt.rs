//! Mock STT and VAD detector that hear the [codec](super::codec).

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
pub struct MockStt {
    framer: Framer,
    words: Vec<String>,
    silence: Duration,
    endpointing: Duration,
    interim: bool,
}

impl Default for MockStt {
    fn default() -> Self {
        Self::new(Duration::from_millis(500))
    }
}

impl MockStt {
    /// `endpointing`: silence that ends an utterance (SPEC §8.4: 500 ms).
    pub fn new(endpointing: Duration) -> Self {
        MockStt {
            framer: Framer::default(),
            words: Vec::new(),
            silence: Duration::ZERO,
            endpointing,
            interim: true,
        }
    }
}

impl Stt for MockStt {
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
    fn default() -> Self {
        Self::new(VadParams::default())
    }
}

impl CodecDetector {
    /// # Panics
    /// On invalid parameters (test kit only).
    pub fn new(params: VadParams) -> Self {
        CodecDetector {
            framer: Framer::default(),
            hysteresis: VadHysteresis::new(params).expect("valid VAD params"),
        }
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
