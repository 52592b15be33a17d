//! Turn detection on the caller's audio: a [`SpeechDetector`] turns audio
//! into speech-started / speech-stopped events (with hysteresis), which this
//! stage sends downstream as [`ControlFrame::UserStartedSpeaking`] /
//! [`ControlFrame::UserStoppedSpeaking`] right after the audio that caused
//! them.

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
