//! Turn detection on the caller's audio: a [`SpeechDetector`] turns audio
//! into speech-started / speech-stopped events (with hysteresis), which this
//! stage sends downstream as [`ControlFrame::UserStartedSpeaking`] /
//! [`ControlFrame::UserStoppedSpeaking`] right after the audio that caused
//! them. Caller audio in µ-law (as Twilio sends it) is decoded to PCM16
//! here and goes on as PCM16.

use crate::frames::{Audio, ControlFrame, Data, Encoding, Frame};
use crate::stage::{Ctx, Direction, Stage};
pub use audio::vad::{VadEvent, VadParams};

/// Audio in, speaking-state changes out.
pub trait SpeechDetector: Send + 'static {
    /// Analyse one chunk of caller audio (PCM16); the events it causes.
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
        // µ-law (as Twilio sends it) is decoded here rather than in a stage
        // of its own: one task hop less for every 20 ms of every call.
        let frame = match frame {
            Frame::Data(d) => match d.data {
                Data::InputAudio(a) => Frame::data(d.epoch, Data::InputAudio(a.into_pcm16())),
                data => Frame::data(d.epoch, data),
            },
            f => f,
        };
        let events = match &frame {
            Frame::Data(d) => match &d.data {
                Data::InputAudio(a) => self.detector.process(a),
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

    #[tokio::test]
    async fn mulaw_is_decoded_before_the_detector_and_goes_on_as_pcm16() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut p = Pipeline::builder()
            .stage(VadStage::new(Seen(seen.clone())))
            .tail(16)
            .build();
        let pcm: Vec<i16> = (0..160)
            .map(|i| if i % 2 == 0 { 8000 } else { -8000 })
            .collect();
        let mut ulaw = Vec::new();
        audio::mulaw::encode(&pcm, &mut ulaw);
        let input = p.input().unwrap().clone();
        input
            .send(Frame::input_audio(Audio::mulaw(ulaw.clone(), 8000)))
            .await
            .unwrap();
        drop(input);
        p.end(Duration::from_secs(5)).await;
        let want = audio::mulaw::decode_to_pcm16le(&ulaw);
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].encoding, Encoding::Pcm16);
        assert_eq!(seen[0].bytes, want);
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
        assert_eq!(audio_out.len(), 1);
        assert_eq!(audio_out[0].encoding, Encoding::Pcm16);
        assert_eq!(audio_out[0].bytes, want);
        assert_eq!(started, 1, "the decoded audio drove the detector");
    }
}
