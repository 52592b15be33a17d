//! Speech to text. A vendor implements [`Stt`]: synchronous results are
//! returned from [`Stt::push_audio`]; a streaming vendor keeps the
//! [`TranscriptOut`] given at start and sends results from its own task.
//! Caller audio ends here (nothing after the STT needs it).
//!
//! Caller audio reaches the STT in the encoding it arrived in (the VAD
//! stage decodes only for its detector): 8 kHz µ-law from a phone line,
//! PCM16 from elsewhere. Every engine takes both — one that streams µ-law
//! to a vendor forwards the bytes as they are, one that needs samples
//! decodes them ([`Audio::into_pcm16`]).

use crate::frames::{Audio, Data, Frame, SystemFrame};
use crate::inbox::Sender;
use crate::stage::{Ctx, Direction, Stage};
use std::sync::Arc;

/// One speech-to-text result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transcript {
    pub text: String,
    pub is_final: bool,
}

/// Where a streaming STT sends results from its own task.
#[derive(Clone)]
pub struct TranscriptOut {
    tx: Sender,
}

impl TranscriptOut {
    /// Results go into `tx` (the STT stage's own inbox, or a test's).
    pub fn new(tx: Sender) -> Self {
        TranscriptOut { tx }
    }

    /// Send a result into the pipeline (waits when the stage is backed up;
    /// results are never dropped).
    pub async fn send(&self, t: Transcript) -> bool {
        let frame = Frame::data(
            0,
            Data::Transcript {
                text: Arc::from(t.text),
                is_final: t.is_final,
            },
        );
        self.tx.send(frame).await.is_ok()
    }

    /// The caller spoke, but no words will come for it: the conversation
    /// asks them to say it again ([`Data::NotHeard`]).
    pub async fn not_heard(&self) -> bool {
        self.tx.send(Frame::data(0, Data::NotHeard)).await.is_ok()
    }
}

/// A speech-to-text engine that can hear nothing more on this call (a
/// vendor refused the key, or went away for good), with the caller's audio
/// it received but never turned into words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lost {
    pub why: String,
    /// The audio not covered by any transcript (may be empty).
    pub unheard: Audio,
}

/// A speech-to-text engine for one call.
pub trait Stt: Send + 'static {
    /// The pipeline started; streaming vendors keep `out`.
    fn start(&mut self, _out: TranscriptOut) {}
    /// Caller audio, µ-law or PCM16 (see the module's notes); results
    /// available right away.
    fn push_audio(&mut self, audio: &Audio) -> Vec<Transcript>;
    /// The call is ending.
    fn finish(&mut self) -> Vec<Transcript> {
        Vec::new()
    }
    /// The VAD heard the caller start: a recogniser of whole utterances
    /// starts a clip.
    fn user_started_speaking(&mut self) {}
    /// The VAD heard the caller stop: a streaming vendor may flush what it
    /// holds (Deepgram's `Finalize`).
    fn user_stopped_speaking(&mut self) {}
    /// `Some` once, when the engine has become unusable for the call
    /// (checked with every audio frame, so it must be cheap). Engines that
    /// cannot fail keep the default.
    fn lost(&mut self) -> Option<Lost> {
        None
    }
}

impl<S: Stt + ?Sized> Stt for Box<S> {
    fn start(&mut self, out: TranscriptOut) {
        (**self).start(out)
    }
    fn push_audio(&mut self, audio: &Audio) -> Vec<Transcript> {
        (**self).push_audio(audio)
    }
    fn finish(&mut self) -> Vec<Transcript> {
        (**self).finish()
    }
    fn user_started_speaking(&mut self) {
        (**self).user_started_speaking()
    }
    fn user_stopped_speaking(&mut self) {
        (**self).user_stopped_speaking()
    }
    fn lost(&mut self) -> Option<Lost> {
        (**self).lost()
    }
}

/// The STT stage.
pub struct SttStage<S> {
    stt: S,
}

impl<S: Stt> SttStage<S> {
    pub fn new(stt: S) -> Self {
        SttStage { stt }
    }
}

fn push_all(ctx: &mut Ctx<'_>, ts: Vec<Transcript>) {
    for t in ts {
        ctx.push(Frame::data(
            0,
            Data::Transcript {
                text: Arc::from(t.text),
                is_final: t.is_final,
            },
        ));
    }
}

impl<S: Stt> Stage for SttStage<S> {
    fn name(&self) -> &'static str {
        "stt"
    }
    fn handle(&mut self, frame: Frame, dir: Direction, ctx: &mut Ctx<'_>) {
        match frame {
            Frame::System(SystemFrame::Start) => {
                self.stt.start(TranscriptOut::new(ctx.self_sender()))
            }
            Frame::Data(d) => match &d.data {
                Data::InputAudio(a) => {
                    let ts = self.stt.push_audio(a);
                    push_all(ctx, ts);
                }
                _ => ctx.push(Frame::Data(d)),
            },
            Frame::Control(crate::frames::ControlFrame::End) => {
                let ts = self.stt.finish();
                push_all(ctx, ts);
            }
            f @ Frame::Control(crate::frames::ControlFrame::UserStartedSpeaking) => {
                self.stt.user_started_speaking();
                ctx.pass(f, dir);
            }
            f @ Frame::Control(crate::frames::ControlFrame::UserStoppedSpeaking) => {
                self.stt.user_stopped_speaking();
                ctx.pass(f, dir);
            }
            f => ctx.pass(f, dir),
        }
    }
}
