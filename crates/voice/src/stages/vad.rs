//! Turn detection on the caller's audio: a [`SpeechDetector`] turns audio
//! into speech-started / speech-stopped events (with hysteresis), which this
//! stage sends downstream as [`ControlFrame::UserStartedSpeaking`] /
//! [`ControlFrame::UserStoppedSpeaking`] right after the audio that caused
//! them. The detector hears PCM16 (µ-law, as Twilio sends it, is decoded
//! for it here); the caller's audio itself goes on to the STT in the
//! encoding it arrived in, byte for byte, so a vendor that takes µ-law
//! (Deepgram live) gets the socket's bytes and an engine that needs
//! samples decodes them itself.

use crate::frames::{Audio, ControlFrame, Data, Encoding, Frame};
use crate::stage::{Ctx, Direction, Stage};
pub use audio::vad::{VadEvent, VadParams};

/// Audio in, speaking-state changes out.
pub trait SpeechDetector: Send + 'static {
    /// Analyse one chunk of caller audio (PCM16: the VAD stage decodes
    /// µ-law for the detector); the events it causes.
    fn process(&mut self, audio: &Audio) -> Vec<VadEvent>;
    /// Forget partial state.
    fn reset(&mut self) {}
}

impl<D: SpeechDetector + ?Sized> SpeechDetector for Box<D> {
    fn process(&mut self, audio: &Audio) -> Vec<VadEvent> {
        (**self).process(audio)
    }
    fn reset(&mut self) {
        (**self).reset()
    }
}

/// The production detector: the earshot model with SPEC §8.4 hysteresis.
impl SpeechDetector for audio::vad::Vad {
    fn process(&mut self, audio: &Audio) -> Vec<VadEvent> {
        if audio.encoding != Encoding::Pcm16 || audio.rate != self.sample_rate() {
            return Vec::new();
        }
        self.process_pcm16le(&audio.bytes)
    }
    fn reset(&mut self) {
        audio::vad::Vad::reset(self)
    }
}

/// The VAD stage.
pub struct VadStage<D> {
    detector: D,
    speaking: bool,
}

impl<D: SpeechDetector> VadStage<D> {
    pub fn new(detector: D) -> Self {
        VadStage {
            detector,
            speaking: false,
        }
    }
}

impl<D: SpeechDetector> Stage for VadStage<D> {
    fn name(&self) -> &'static str {
        "vad"
    }
    fn handle(&mut self, frame: Frame, dir: Direction, ctx: &mut Ctx<'_>) {
        // The detector needs samples: µ-law is decoded for it here (one
        // task hop less than a stage of its own), but the frame goes on as
        // it came — the STT decides what it needs.
        let events = match &frame {
            Frame::Data(d) => match &d.data {
                Data::InputAudio(a) => match a.encoding {
                    Encoding::Pcm16 => self.detector.process(a),
                    Encoding::MuLaw => self.detector.process(&a.clone().into_pcm16()),
                },
                _ => Vec::new(),
            },
            _ => Vec::new(),
        };
        ctx.pass(frame, dir);
        for e in events {
            match e {
                VadEvent::SpeechStarted if !self.speaking => {
                    self.speaking = true;
                    ctx.push(Frame::Control(ControlFrame::UserStartedSpeaking));
                }
                VadEvent::SpeechStopped if self.speaking => {
                    self.speaking = false;
                    ctx.push(Frame::Control(ControlFrame::UserStoppedSpeaking));
                }
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frames::Frame;
    use crate::Pipeline;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    /// Remembers what it was given; "speech" is any loud sample.
    struct Seen(Arc<Mutex<Vec<Audio>>>);

    impl SpeechDetector for Seen {
        fn process(&mut self, audio: &Audio) -> Vec<VadEvent> {
            self.0.lock().unwrap().push(audio.clone());
            let loud = audio
                .bytes
                .chunks_exact(2)
                .any(|s| i16::from_le_bytes([s[0], s[1]]).unsigned_abs() > 1000);
            if loud {
                vec![VadEvent::SpeechStarted]
            } else {
                Vec::new()
            }
        }
    }

    /// Runs `input` through a VAD stage whose detector is [`Seen`]: what
    /// the detector saw, the audio that went on, and how many times the
    /// caller started speaking.
    async fn through_vad(input: Vec<Audio>) -> (Vec<Audio>, Vec<Audio>, usize) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut p = Pipeline::builder()
            .stage(VadStage::new(Seen(seen.clone())))
            .tail(16)
            .build();
        let tx = p.input().unwrap().clone();
        for a in input {
            tx.send(Frame::input_audio(a)).await.unwrap();
        }
        drop(tx);
        p.end(Duration::from_secs(5)).await;
        let seen = seen.lock().unwrap().clone();
        let tail = p.tail().unwrap();
        let mut audio_out = Vec::new();
        let mut started = 0;
        while let Some(f) = tail.recv().await {
            match f {
                Frame::Data(d) => {
                    if let Data::InputAudio(a) = d.data {
                        audio_out.push(a)
                    }
                }
                Frame::Control(ControlFrame::UserStartedSpeaking) => started += 1,
                Frame::Control(ControlFrame::End) => break,
                _ => {}
            }
        }
        (seen, audio_out, started)
    }

    fn loud_pcm() -> Vec<i16> {
        (0..160)
            .map(|i| if i % 2 == 0 { 8000 } else { -8000 })
            .collect()
    }

    #[tokio::test]
    async fn mulaw_is_decoded_for_the_detector_and_goes_on_as_it_arrived() {
        let mut ulaw = Vec::new();
        audio::mulaw::encode(&loud_pcm(), &mut ulaw);
        // Every byte value, so no byte could be "normalised" on the way.
        ulaw.extend(0..=255u8);
        let sent = Audio::mulaw(ulaw.clone(), 8000);
        let (seen, out, started) = through_vad(vec![sent.clone()]).await;
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].encoding, Encoding::Pcm16);
        assert_eq!(seen[0].rate, 8000);
        assert_eq!(seen[0].bytes, audio::mulaw::decode_to_pcm16le(&ulaw));
        // The STT gets the socket's bytes, untouched.
        assert_eq!(out, vec![sent]);
        assert_eq!(out[0].encoding, Encoding::MuLaw);
        assert_eq!(out[0].bytes, ulaw);
        assert_eq!(started, 1, "the decoded audio drove the detector");
    }

    #[tokio::test]
    async fn pcm16_reaches_the_detector_and_goes_on_untouched() {
        let pcm: Vec<u8> = loud_pcm().iter().flat_map(|s| s.to_le_bytes()).collect();
        let sent = Audio::pcm16(pcm, 16_000);
        let (seen, out, started) = through_vad(vec![sent.clone()]).await;
        assert_eq!(seen, vec![sent.clone()]);
        assert_eq!(out, vec![sent]);
        assert_eq!(started, 1);
    }
}
