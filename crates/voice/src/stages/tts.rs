//! Text to speech: one sentence at a time per call, in order, each request
//! under a request token of its turn (a barge-in cancels the synthesis in
//! flight and everything queued). Audio goes downstream as it arrives;
//! what was synthesized (text, word timings, total length) goes upstream so
//! the conversation can account for what the caller heard.
//!
//! **Backpressure in time.** The stage pulls audio from the voice only
//! while less than a *synthesis lead* ([`SYNTHESIS_LEAD`], ~0.5 s) is
//! waiting ahead of playback. It keeps a model of the far end's playout
//! ([`Playout`]: audio plays in real time from the moment it is handed
//! on), so a ten-second line is never held in memory whole, a barge-in has
//! little to throw away, and a streaming vendor's socket does the waiting
//! (TCP flow control) instead of our queues. The inboxes behind the stage
//! still bound frames by count, as a backstop.
//!
//! **Milestones.** Per utterance, the stage reports upstream when its
//! first sentence went to the voice ([`Milestone::TtsRequested`]) and
//! when its first audio came back ([`Milestone::TtsFirstAudio`]): the
//! voice's time to first audio is the difference (see [`crate::latency`]).

use super::next;
use crate::accountant::WordTiming;
use crate::frames::{Audio, ControlFrame, Data, Epoch, Frame, Streamed, SystemFrame, UtteranceId};
use crate::latency::Milestone;
use crate::stage::{Ctx, Direction, Stage};
use futures_core::Stream;
use std::collections::{HashMap, VecDeque};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How far ahead of playback the stage pulls audio from the voice, by
/// default: enough to ride out a scheduling hiccup or a slow network
/// chunk, small enough that little audio waits in memory.
pub const SYNTHESIS_LEAD: Duration = Duration::from_millis(500);

/// A model of the far end's playout: when the audio handed on so far has
/// finished playing, if it plays in real time from when it is handed on.
/// Reset at a barge-in (what was queued is thrown away); audio of an
/// older turn no longer counts.
#[derive(Debug, Default)]
pub struct Playout {
    state: Mutex<(Epoch, Option<Instant>)>,
}

impl Playout {
    fn lock(&self) -> std::sync::MutexGuard<'_, (Epoch, Option<Instant>)> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Audio of turn `epoch` lasting `d` was handed on now.
    pub fn add(&self, epoch: Epoch, d: Duration) {
        let now = Instant::now();
        let mut s = self.lock();
        if epoch < s.0 {
            return;
        }
        let end = s.1.map_or(now, |e| e.max(now));
        s.1 = Some(end + d);
    }

    /// How much audio is still waiting to be played.
    pub fn ahead(&self) -> Duration {
        self.lock().1.map_or(Duration::ZERO, |e| {
            e.saturating_duration_since(Instant::now())
        })
    }

    /// A barge-in started turn `epoch`: nothing is queued any more.
    pub fn reset(&self, epoch: Epoch) {
        let mut s = self.lock();
        s.0 = s.0.max(epoch);
        s.1 = None;
    }
}

/// Forward a synthesis into the stage's inbox, pulling the next item only
/// while less than `lead` of audio waits ahead of playback.
async fn paced_pump(
    mut stream: TtsStream,
    tx: crate::inbox::Sender,
    playout: Arc<Playout>,
    epoch: Epoch,
    lead: Duration,
    wrap: impl Fn(Option<Result<TtsEvent, TtsError>>) -> Frame,
) {
    loop {
        let ahead = playout.ahead();
        if ahead > lead {
            tokio::time::sleep(ahead - lead).await;
        }
        let Some(item) = next(&mut stream).await else {
            break;
        };
        if let Ok(TtsEvent::Audio(a)) = &item {
            playout.add(epoch, a.duration());
        }
        let failed = item.is_err();
        if tx.send(wrap(Some(item))).await.is_err() || failed {
            return;
        }
    }
    let _ = tx.send(wrap(None)).await;
}

/// One event of a synthesis.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TtsEvent {
    /// Audio: PCM16 at any supported rate, or µ-law (a voice that speaks
    /// it, like Deepgram Aura at 8 kHz: passed on to the sink as it is).
    Audio(Audio),
    /// A word starts at this offset from the start of this request's audio.
    Word(WordTiming),
    /// The voice stopped before the end of the text (D-23: an error after
    /// its first audio ends the line where it is): the audio sent so far
    /// is all that will be said of it. Not an error for the pipeline — the
    /// next sentence plays — but the rest of the text was never spoken.
    Cut,
}

/// Why a synthesis failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("TTS error: {0}")]
pub struct TtsError(pub String);

/// A streamed synthesis.
pub type TtsStream = Pin<Box<dyn Stream<Item = Result<TtsEvent, TtsError>> + Send>>;

/// A speech synthesizer.
///
/// A request is cancelled by dropping its stream. The lifecycle hooks are
/// for vendors that hold a connection open across requests (default: no
/// effect): `start` when the call's pipeline starts, `stop` when it ends
/// normally, `cancel` when it is torn down.
pub trait Tts: Send + Sync + 'static {
    fn synthesize(&self, text: &str) -> TtsStream;
    fn start(&self) {}
    fn stop(&self) {}
    fn cancel(&self) {}
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

/// What synthesis job `job` reported ([`Data::TtsStreamed`], from the
/// stage's task to the stage).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TtsStreamed {
    pub job: u64,
    pub item: Streamed<TtsEvent>,
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
    playout: Arc<Playout>,
    lead: Duration,
    /// The newest utterance whose first sentence arrived
    /// ([`Milestone::TtsQueued`] is sent once per utterance).
    last_queued: Option<UtteranceId>,
}

impl TtsStage {
    pub fn new(tts: Arc<dyn Tts>) -> Self {
        TtsStage {
            tts,
            queue: VecDeque::new(),
            job: None,
            seq: 0,
            produced: HashMap::new(),
            playout: Arc::default(),
            lead: SYNTHESIS_LEAD,
            last_queued: None,
        }
    }

    /// Pull audio from the voice only while less than `lead` waits ahead
    /// of playback (default [`SYNTHESIS_LEAD`]).
    pub fn with_lead(mut self, lead: Duration) -> Self {
        self.lead = lead;
        self
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
                    let base = self.produced.get(&id).copied();
                    if base.is_none() {
                        // The utterance's first sentence goes to the voice.
                        ctx.push_up(Milestone::TtsRequested.frame(id, Instant::now()));
                    }
                    let base = base.unwrap_or_default();
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
                    let (playout, lead) = (self.playout.clone(), self.lead);
                    ctx.spawn(token, move |tx| {
                        paced_pump(stream, tx, playout, epoch, lead, move |item| {
                            let item = match item {
                                Some(Ok(e)) => Streamed::Event(e),
                                Some(Err(e)) => Streamed::Failed(e.0),
                                None => Streamed::Done,
                            };
                            let streamed = TtsStreamed { job: seq, item };
                            Frame::data(epoch, Data::TtsStreamed(Box::new(streamed)))
                        })
                    });
                }
            }
        }
    }
}

/// What of the sentence that began `base` into utterance `id`'s audio
/// exists is all that is said of it.
fn cut(id: UtteranceId, base: Duration, produced: &HashMap<UtteranceId, Duration>) -> Frame {
    let produced = produced.get(&id).copied().unwrap_or_default();
    Frame::Control(ControlFrame::SynthesisCut {
        id,
        start: base,
        spoken: produced.saturating_sub(base),
    })
}

impl Stage for TtsStage {
    fn name(&self) -> &'static str {
        "tts"
    }
    fn handle(&mut self, frame: Frame, dir: Direction, ctx: &mut Ctx<'_>) {
        match frame {
            Frame::System(SystemFrame::Interrupt { epoch }) => {
                if let Some(job) = self.job.take() {
                    job.token.cancel();
                }
                self.queue.clear();
                self.produced.clear();
                self.playout.reset(epoch);
            }
            Frame::System(SystemFrame::Start) => self.tts.start(),
            Frame::System(SystemFrame::Cancel) => {
                if let Some(job) = self.job.take() {
                    job.token.cancel();
                }
                self.tts.cancel();
            }
            Frame::Control(ControlFrame::End) => {
                if let Some(job) = self.job.take() {
                    job.token.cancel();
                }
                self.tts.stop();
            }
            Frame::Data(d) => match d.data {
                Data::Speak(t) => {
                    // Utterance ids only grow: a new one is its first sentence.
                    if self.last_queued.is_none_or(|last| t.id > last) {
                        self.last_queued = Some(t.id);
                        ctx.push_up(Milestone::TtsQueued.frame(t.id, Instant::now()));
                    }
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
                Data::TtsStreamed(streamed) => {
                    let TtsStreamed { job, item: report } = &*streamed;
                    let Some(cur) = self.job.as_ref().filter(|j| j.seq == *job) else {
                        return;
                    };
                    let (id, epoch, base) = (cur.id, cur.epoch, cur.base);
                    match report {
                        Streamed::Event(TtsEvent::Audio(a)) => {
                            let produced = self.produced.entry(id).or_default();
                            if produced.is_zero() && !a.duration().is_zero() {
                                let at = Instant::now();
                                ctx.push_up(Milestone::TtsFirstAudio.frame(id, at));
                            }
                            *produced += a.duration();
                            ctx.push(Frame::data(
                                epoch,
                                Data::OutputAudio {
                                    id,
                                    audio: a.clone(),
                                },
                            ));
                        }
                        Streamed::Event(TtsEvent::Cut) => {
                            ctx.push_up(cut(id, base, &self.produced));
                        }
                        Streamed::Event(TtsEvent::Word(w)) => {
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
                        Streamed::Failed(e) => {
                            tracing::warn!(error = %e, "TTS failed; sentence skipped");
                            ctx.push_up(cut(id, base, &self.produced));
                            ctx.push_up(Frame::Control(ControlFrame::Error {
                                stage: "tts",
                                message: Arc::from(e.as_str()),
                            }));
                            self.job = None;
                            self.kick(ctx);
                        }
                        Streamed::Done => {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frames::UtteranceText;
    use crate::offline::CodecTts;
    use crate::Pipeline;

    fn speak(epoch: Epoch, id: UtteranceId, text: &str) -> Frame {
        Frame::data(
            epoch,
            Data::Speak(UtteranceText {
                id,
                text: text.into(),
            }),
        )
    }

    /// Reads the stage's output as playback would, noting after each audio
    /// frame how far the audio handed on ran ahead of real time.
    async fn ahead_of_playback(p: &mut Pipeline, t0: Instant, until: Instant) -> (Duration, usize) {
        let tail = p.tail().expect("tail");
        let (mut handed, mut worst, mut frames) = (Duration::ZERO, Duration::ZERO, 0);
        while let Ok(Some(f)) = tokio::time::timeout_at(until, tail.recv()).await {
            if let Frame::Data(d) = f {
                if let Data::OutputAudio { audio, .. } = d.data {
                    handed += audio.duration();
                    worst = worst.max(handed.saturating_sub(t0.elapsed()));
                    frames += 1;
                }
            }
        }
        (worst, frames)
    }

    #[tokio::test(start_paused = true)]
    async fn audio_is_pulled_only_a_lead_ahead_of_playback() {
        let voice = CodecTts::default();
        let mut p = Pipeline::builder()
            .stage(TtsStage::new(Arc::new(voice.clone())).with_lead(Duration::from_millis(500)))
            .tail(1000)
            .build();
        let line = "one two three four five six seven eight nine ten eleven twelve \
                    thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty";
        let input = p.input().unwrap().clone();
        input.send(speak(0, 1, line)).await.unwrap();
        input.send(speak(0, 1, line)).await.unwrap();
        let t0 = Instant::now() + voice.first_audio;
        let (worst, frames) = ahead_of_playback(&mut p, t0, t0 + Duration::from_secs(60)).await;
        assert_eq!(frames, 40, "every word of both sentences");
        // At most the lead plus the longest word ("seventeen": 0.68 s).
        assert!(worst <= Duration::from_millis(1200), "ran {worst:?} ahead");
        assert!(
            worst >= Duration::from_millis(500),
            "paced, not starved: {worst:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_barge_in_resets_the_playout_model() {
        let playout = Playout::default();
        playout.add(0, Duration::from_secs(3));
        assert_eq!(playout.ahead(), Duration::from_secs(3));
        playout.reset(1);
        assert_eq!(playout.ahead(), Duration::ZERO);
        playout.add(0, Duration::from_secs(3)); // late audio of the old turn
        assert_eq!(playout.ahead(), Duration::ZERO);
        playout.add(1, Duration::from_millis(200));
        tokio::time::advance(Duration::from_millis(50)).await;
        assert_eq!(playout.ahead(), Duration::from_millis(150));
    }
}
