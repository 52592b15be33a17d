//! Text to speech: one sentence at a time per call, in order, each request
//! under a request token of its turn (a barge-in cancels the synthesis in
//! flight and everything queued). Audio goes downstream as it arrives;
//! what was synthesized (text, word timings, total length) goes upstream so
//! the conversation can account for what the caller heard.

use super::pump;
use crate::accountant::WordTiming;
use crate::frames::{Audio, ControlFrame, Custom, Data, Epoch, Frame, SystemFrame, UtteranceId};
use crate::stage::{Ctx, Direction, Stage};
use futures_core::Stream;
use std::collections::{HashMap, VecDeque};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// One event of a synthesis.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TtsEvent {
    /// Audio (PCM16 at any supported rate).
    Audio(Audio),
    /// A word starts at this offset from the start of this request's audio.
    Word(WordTiming),
}

/// Why a synthesis failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("TTS error: {0}")]
pub struct TtsError(pub String);

/// A streamed synthesis.
pub type TtsStream = Pin<Box<dyn Stream<Item = Result<TtsEvent, TtsError>> + Send>>;

/// A speech synthesizer.
pub trait Tts: Send + Sync + 'static {
    fn synthesize(&self, text: &str) -> TtsStream;
}

enum Item {
    Sentence {
        id: UtteranceId,
        epoch: Epoch,
        text: Arc<str>,
    },
    End {
        id: UtteranceId,
        epoch: Epoch,
    },
}

#[derive(Debug)]
enum Report {
    Event(TtsEvent),
    Failed(String),
    Done,
}

#[derive(Debug)]
struct FromTask {
    job: u64,
    report: Report,
}

struct Job {
    seq: u64,
    id: UtteranceId,
    epoch: Epoch,
    token: CancellationToken,
    /// Audio of this utterance before this sentence.
    base: Duration,
}

/// The TTS stage.
pub struct TtsStage {
    tts: Arc<dyn Tts>,
    queue: VecDeque<Item>,
    job: Option<Job>,
    seq: u64,
    /// Audio produced so far per utterance.
    produced: HashMap<UtteranceId, Duration>,
}

impl TtsStage {
    pub fn new(tts: Arc<dyn Tts>) -> Self {
        TtsStage {
            tts,
            queue: VecDeque::new(),
            job: None,
            seq: 0,
            produced: HashMap::new(),
        }
    }

    fn kick(&mut self, ctx: &mut Ctx<'_>) {
        while self.job.is_none() {
            let Some(item) = self.queue.pop_front() else {
                return;
            };
            match item {
                Item::End { id, epoch } => {
                    let total = self.produced.remove(&id).unwrap_or_default();
                    ctx.push_up(Frame::Control(ControlFrame::SynthesisDone { id, total }));
                    ctx.push(Frame::data(epoch, Data::SpeakEnd { id }));
                }
                Item::Sentence { id, epoch, text } => {
                    if epoch < ctx.epoch() {
                        continue; // stale
                    }
                    let (_, token) = ctx.scope().request();
                    self.seq += 1;
                    let seq = self.seq;
                    let base = self.produced.get(&id).copied().unwrap_or_default();
                    self.produced.entry(id).or_default();
                    ctx.push_up(Frame::Control(ControlFrame::SpeechSynthesized {
                        id,
                        text: text.clone(),
                        words: Arc::from(Vec::new()),
                    }));
                    let stream = self.tts.synthesize(&text);
                    self.job = Some(Job {
                        seq,
                        id,
                        epoch,
                        token: token.clone(),
                        base,
                    });
                    ctx.spawn(token, move |tx| {
                        pump(stream, tx, move |item| {
                            let report = match item {
                                Some(Ok(e)) => Report::Event(e),
                                Some(Err(e)) => Report::Failed(e.0),
                                None => Report::Done,
                            };
                            let task = FromTask { job: seq, report };
                            Frame::data(epoch, Data::Custom(Custom::new(task)))
                        })
                    });
                }
            }
        }
    }
}

impl Stage for TtsStage {
    fn name(&self) -> &'static str {
        "tts"
    }
    fn handle(&mut self, frame: Frame, dir: Direction, ctx: &mut Ctx<'_>) {
        match frame {
            Frame::System(SystemFrame::Interrupt { .. }) => {
                if let Some(job) = self.job.take() {
                    job.token.cancel();
                }
                self.queue.clear();
                self.produced.clear();
            }
            Frame::System(SystemFrame::Cancel) | Frame::Control(ControlFrame::End) => {
                if let Some(job) = self.job.take() {
                    job.token.cancel();
                }
            }
            Frame::Data(d) => match d.data {
                Data::Speak(t) => {
                    self.queue.push_back(Item::Sentence {
                        id: t.id,
                        epoch: d.epoch,
                        text: t.text,
                    });
                    self.kick(ctx);
                }
                Data::SpeakEnd { id } => {
                    self.queue.push_back(Item::End { id, epoch: d.epoch });
                    self.kick(ctx);
                }
                Data::Custom(c) if c.get::<FromTask>().is_some() => {
                    let Some(FromTask { job, report }) = c.get::<FromTask>() else {
                        return;
                    };
                    let Some(cur) = self.job.as_ref().filter(|j| j.seq == *job) else {
                        return;
                    };
                    let (id, epoch, base) = (cur.id, cur.epoch, cur.base);
                    match report {
                        Report::Event(TtsEvent::Audio(a)) => {
                            *self.produced.entry(id).or_default() += a.duration();
                            ctx.push(Frame::data(
                                epoch,
                                Data::OutputAudio {
                                    id,
                                    audio: a.clone(),
                                },
                            ));
                        }
                        Report::Event(TtsEvent::Word(w)) => {
                            let w = WordTiming {
                                word: w.word.clone(),
                                start: base + w.start,
                            };
                            ctx.push_up(Frame::Control(ControlFrame::SpeechSynthesized {
                                id,
                                text: Arc::from(""),
                                words: Arc::from(vec![w]),
                            }));
                        }
                        Report::Failed(e) => {
                            tracing::warn!(error = %e, "TTS failed; sentence skipped");
                            ctx.push_up(Frame::Control(ControlFrame::Error {
                                stage: "tts",
                                message: Arc::from(e.as_str()),
                            }));
                            self.job = None;
                            self.kick(ctx);
                        }
                        Report::Done => {
                            self.job = None;
                            self.kick(ctx);
                        }
                    }
                }
                data => ctx.push(Frame::data(d.epoch, data)),
            },
            f => ctx.pass(f, dir),
        }
    }
}
