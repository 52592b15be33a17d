//! Speech to text and voice activity for [codec](super::codec) audio.

use super::codec::{decode, from_bytes, Decoded, QUIET};
use crate::frames::{Audio, Encoding};
use crate::stages::stt::{Stt, Transcript};
use crate::stages::vad::{SpeechDetector, VadEvent, VadParams};
use audio::vad::VadHysteresis;
use std::time::Duration;

/// Splits audio into 20 ms frames of samples (keeping partial frames);
/// µ-law is decoded, PCM16 read as it is.
///
/// Codec words start on a frame boundary, so the framer keeps in step with
/// the speaker: a quiet stretch shorter than a frame that is followed by
/// sound is a (short) silence frame of its own, and the sound starts the
/// next frame. Audio of odd lengths before (line noise, a client that
/// sends uneven chunks) therefore cannot shift every later word off its
/// frame: one moment of silence puts the framer back in step.
#[derive(Debug, Default)]
struct Framer {
    pending: Vec<i16>,
}

impl Framer {
    fn frames(&mut self, audio: &Audio) -> Vec<Vec<i16>> {
        if audio.rate == 0 {
            return Vec::new();
        }
        let per = (audio.rate as usize / 50).max(4);
        match audio.encoding {
            Encoding::Pcm16 => self.pending.extend(from_bytes(&audio.bytes)),
            Encoding::MuLaw => audio::mulaw::decode(&audio.bytes, &mut self.pending),
        }
        let mut out = Vec::new();
        loop {
            let quiet = self
                .pending
                .iter()
                .take(per)
                .take_while(|s| is_quiet(**s))
                .count();
            if quiet > 0 && quiet < per && quiet < self.pending.len() {
                out.push(self.pending.drain(..quiet).collect());
            } else if self.pending.len() >= per {
                out.push(self.pending.drain(..per).collect());
            } else {
                break;
            }
        }
        out
    }
}

/// A sample the codec counts as silence (see [`decode`]).
fn is_quiet(sample: i16) -> bool {
    sample.unsigned_abs() < QUIET
}

/// Speech to text for codec audio: an interim result after every word, a
/// final one after `endpointing` of silence.
#[derive(Debug)]
pub struct CodecStt {
    framer: Framer,
    words: Vec<String>,
    /// Sound without words since the last result (a cough, line noise).
    voiced: bool,
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
            voiced: false,
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
                Decoded::Voice => {
                    self.silence = Duration::ZERO;
                    self.voiced = true;
                }
                Decoded::Silence => {
                    self.silence += Duration::from_millis(20);
                    if (self.voiced || !self.words.is_empty()) && self.silence >= self.endpointing {
                        // Words, or an empty result for a sound without
                        // words (as speech vendors send): done with it.
                        self.voiced = false;
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
        self.voiced = false;
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

    fn pcm(samples: &[i16]) -> Audio {
        Audio {
            bytes: super::super::codec::to_bytes(samples).into(),
            rate: 8000,
            encoding: Encoding::Pcm16,
        }
    }

    #[test]
    fn words_after_odd_length_noise_are_heard() {
        let (speech, _) = super::super::codec::encode("my AC stopped", 8000, 60.0);
        let mut stt = CodecStt::default();
        // Loud noise of a length that is no whole number of frames, then a
        // moment of silence, then the words, then silence to end the turn.
        let mut line = vec![9000i16; 1234];
        line.extend(std::iter::repeat_n(0, 200));
        line.extend(&speech);
        line.extend(std::iter::repeat_n(0, 8000));
        let mut heard = Vec::new();
        // Uneven chunks too.
        for chunk in line.chunks(77) {
            heard.extend(stt.push_audio(&pcm(chunk)));
        }
        let last = heard
            .iter()
            .rev()
            .find(|t| t.is_final)
            .map(|t| t.text.as_str());
        assert_eq!(last, Some("my AC stopped"));
        // The words alone, in whole frames, are heard as before.
        let mut stt = CodecStt::default();
        let mut heard = stt.push_audio(&pcm(&speech));
        heard.extend(stt.push_audio(&pcm(&[0; 8000])));
        assert_eq!(heard.last().map(|t| t.text.as_str()), Some("my AC stopped"));
    }

    #[test]
    fn line_noise_gives_no_words() {
        // Random µ-law from the phone line, with noise frames that start
        // like a word (the mark, then a length) right after a dropout, as
        // full-scale noise does once in 256 frames: a sound without words.
        let mut seed = 0x00C0_FFEE_u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut line = Vec::new();
        for i in 0..400 {
            let mut frame: Vec<u8> = (0..160).map(|_| next() as u8).collect();
            if i % 4 == 0 {
                line.extend([0xFFu8; 160]);
                frame[0] = 0x80;
                frame[1] = (next() % 128) as u8;
            }
            line.extend(frame);
        }
        line.extend([0xFFu8; 8000]);
        let mut stt = CodecStt::default();
        let mut heard = Vec::new();
        for chunk in line.chunks(160) {
            heard.extend(stt.push_audio(&Audio {
                bytes: chunk.to_vec().into(),
                rate: 8000,
                encoding: Encoding::MuLaw,
            }));
        }
        let words: Vec<&str> = heard
            .iter()
            .map(|t| t.text.as_str())
            .filter(|t| !t.is_empty())
            .collect();
        assert!(words.is_empty(), "noise heard as {words:?}");
        assert!(
            heard.iter().any(|t| t.is_final),
            "a sound without words still ends"
        );
    }

    #[test]
    fn mulaw_is_heard_as_its_pcm16() {
        let (speech, _) = super::super::codec::encode("my AC stopped", 8000, 15.0);
        let mut line = speech.clone();
        line.extend(std::iter::repeat_n(0, 8000));
        let mut ulaw = Vec::new();
        audio::mulaw::encode(&line, &mut ulaw);
        let (mut by_pcm, mut by_ulaw) = (CodecStt::default(), CodecStt::default());
        let (mut heard_pcm, mut heard_ulaw) = (Vec::new(), Vec::new());
        let (mut vad_pcm, mut vad_ulaw) = (CodecDetector::default(), CodecDetector::default());
        let (mut ev_pcm, mut ev_ulaw) = (Vec::new(), Vec::new());
        for chunk in ulaw.chunks(160) {
            let a = Audio::mulaw(chunk.to_vec(), 8000);
            let p = a.clone().into_pcm16();
            heard_ulaw.extend(by_ulaw.push_audio(&a));
            heard_pcm.extend(by_pcm.push_audio(&p));
            ev_ulaw.extend(vad_ulaw.process(&a));
            ev_pcm.extend(vad_pcm.process(&p));
        }
        assert_eq!(
            heard_ulaw.last().map(|t| (t.text.as_str(), t.is_final)),
            Some(("my AC stopped", true))
        );
        assert_eq!(heard_ulaw, heard_pcm);
        assert!(ev_ulaw.contains(&VadEvent::SpeechStarted), "{ev_ulaw:?}");
        assert_eq!(ev_ulaw, ev_pcm);
    }

    #[test]
    fn the_default_detector_builds() {
        let _ = CodecDetector::default();
        assert!(CodecDetector::new(VadParams::default()).is_ok());
    }
}
