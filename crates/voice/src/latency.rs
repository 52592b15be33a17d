//! Where a turn's time goes: the milestones of an agent utterance on its
//! way to the caller.
//!
//! Each stage that sees an utterance reach a milestone stamps it with
//! [`Instant::now`] and sends one [`ControlFrame::Milestone`] upstream, so
//! the conversation (the application stage that decided the utterance)
//! learns when each step happened without a side channel:
//!
//! | milestone | stamped by | when |
//! |---|---|---|
//! | [`Milestone::LlmRequested`] | the LLM stage | the reply's request is handed to the model |
//! | [`Milestone::LlmFirstToken`] | the LLM stage | the reply's first text arrives |
//! | [`Milestone::TtsQueued`] | the TTS stage | the utterance's first sentence reaches it (it waits there while an earlier utterance is still being spoken) |
//! | [`Milestone::TtsRequested`] | the TTS stage | the utterance's first sentence is sent to the voice |
//! | [`Milestone::TtsFirstAudio`] | the TTS stage | the utterance's first audio arrives from the voice |
//! | [`Milestone::PlayerFree`] | the [`Player`](crate::stages::output::Player) | the utterance's first frame is due, the agent's earlier audio in the same stretch of speech sent (only for an utterance that continues a stretch) |
//! | [`Milestone::FirstOutbound`] | the [`Player`](crate::stages::output::Player) | its first audio frame is handed to the sink (the wire) |
//! | [`Milestone::FirstHeard`] | the transport, through a [`MilestoneReporter`] | the far end confirms it played the utterance's first audio |
//!
//! Every milestone is sent at most once per utterance: the cost is a few
//! control frames per reply, never anything per audio frame.
//!
//! The differences between milestones are what a latency budget is made
//! of: LLM requested → first token is the model's time, TTS requested →
//! first audio the voice's, first audio → first outbound our own output
//! path (less the wait until the player is free, when the agent was
//! still saying something before it), first outbound → first heard the
//! network and the far end's playout.
//!
//! ```
//! use voice::latency::{Milestone, MilestoneReporter};
//! use voice::inbox::inbox;
//! use voice::{ControlFrame, Frame};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! // A transport reports what the far end confirmed into the pipeline's
//! // last stage, from where it travels upstream like the player's reports.
//! let (tx, mut rx) = inbox(4);
//! let reporter = MilestoneReporter::new(tx.control_handle());
//! reporter.report(7, Milestone::FirstHeard { confirmed_ms: 200 });
//! match rx.try_recv() {
//!     Some(Frame::Control(ControlFrame::Milestone { id: 7, milestone, .. })) => {
//!         assert_eq!(milestone, Milestone::FirstHeard { confirmed_ms: 200 });
//!     }
//!     other => panic!("{other:?}"),
//! }
//! # }
//! ```

use crate::frames::{ControlFrame, Frame, UtteranceId};
use crate::inbox::ControlHandle;
use tokio::time::Instant;

/// A step of an agent utterance on its way to the caller (see the
/// [module docs](self) for who stamps which).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Milestone {
    /// The LLM stage handed the reply's request to the model.
    LlmRequested,
    /// The LLM stage received the reply's first text.
    LlmFirstToken,
    /// The utterance's first sentence reached the TTS stage. It is sent
    /// to the voice at once, unless an earlier utterance is still being
    /// spoken: the agent never talks over itself, so it waits its turn
    /// (a wait of policy, not of work).
    TtsQueued,
    /// The TTS stage sent the utterance's first sentence to the voice.
    TtsRequested,
    /// The TTS stage received the utterance's first audio.
    TtsFirstAudio,
    /// The utterance's first frame is due: it continues a stretch of the
    /// agent's speech, and the earlier audio of that stretch has been sent
    /// (stamped with the frame's due time — ahead of the report, or
    /// behind it when the earlier audio went out late or ended before
    /// this utterance came). Only for an utterance that continues a
    /// stretch. The agent never talks over itself, so while it waits the
    /// caller hears the agent: not the output path's work.
    PlayerFree,
    /// The player handed the utterance's first audio frame to its sink.
    FirstOutbound,
    /// The far end confirmed it played the utterance's first audio:
    /// `confirmed_ms` of it had played when it said so (Twilio confirms
    /// with the echo of a mark sent after that much audio, so playback
    /// began about `confirmed_ms` before the milestone).
    FirstHeard { confirmed_ms: u32 },
}

impl Milestone {
    /// A control frame saying utterance `id` reached this milestone at `at`.
    pub fn frame(self, id: UtteranceId, at: Instant) -> Frame {
        Frame::Control(ControlFrame::Milestone {
            id,
            milestone: self,
            at,
        })
    }
}

/// Reports milestones that happen outside the pipeline — a transport
/// learning that the far end played audio — into a stage's control inbox
/// (normally the output stage's: the report then travels upstream like
/// the player's own). Cheap to clone; reporting never waits, and a report
/// after the pipeline stopped is dropped.
#[derive(Clone)]
pub struct MilestoneReporter {
    up: ControlHandle,
}

impl MilestoneReporter {
    /// Report into the inbox behind `up`.
    pub fn new(up: ControlHandle) -> Self {
        MilestoneReporter { up }
    }

    /// Utterance `id` reached `milestone` now.
    pub fn report(&self, id: UtteranceId, milestone: Milestone) {
        self.report_at(id, milestone, Instant::now());
    }

    /// Utterance `id` reached `milestone` at `at`.
    pub fn report_at(&self, id: UtteranceId, milestone: Milestone, at: Instant) {
        let _ = self.up.push(milestone.frame(id, at));
    }
}

impl std::fmt::Debug for MilestoneReporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MilestoneReporter")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::floor::Floor;
    use crate::frames::{Audio, Custom, Data, Epoch};
    use crate::inbox::inbox;
    use crate::offline::timed::TimedStream;
    use crate::offline::CodecTts;
    use crate::stages::llm::{Llm, LlmEvent, LlmStage, LlmStream};
    use crate::stages::output::{self, AudioSink, Player};
    use crate::stages::sentences::SentenceAggregator;
    use crate::stages::tts::TtsStage;
    use crate::{Ctx, Direction, Pipeline, Stage};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    type Seen = Arc<Mutex<Vec<(UtteranceId, Milestone, Instant)>>>;

    /// The head of the test pipeline: keeps every milestone that reaches it.
    struct Head(Seen);

    impl Stage for Head {
        fn name(&self) -> &'static str {
            "head"
        }
        fn handle(&mut self, frame: Frame, dir: Direction, ctx: &mut Ctx<'_>) {
            if let Frame::Control(ControlFrame::Milestone { id, milestone, at }) = &frame {
                self.0.lock().unwrap().push((*id, *milestone, *at));
                return;
            }
            ctx.pass(frame, dir);
        }
    }

    /// A model answering every request with the same three tokens: the
    /// first after `first`, the next ones `per` apart.
    struct Scripted {
        first: Duration,
        per: Duration,
    }

    impl Llm for Scripted {
        fn stream(&self, _: &Custom) -> LlmStream {
            let tokens = ["Hello", " there.", " How are you?"];
            let items = tokens
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    let d = if i == 0 { self.first } else { self.per };
                    (d, Ok(LlmEvent::Text(t.to_string())))
                })
                .collect();
            Box::pin(TimedStream::new(items, |_| {}))
        }
    }

    /// A far end that confirms each utterance's first audio `echo` after
    /// it was sent (as a Twilio mark echo would).
    struct Echoing {
        reporter: Arc<Mutex<Option<MilestoneReporter>>>,
        echo: Duration,
        last: Option<UtteranceId>,
    }

    impl AudioSink for Echoing {
        fn play(&mut self, audio: &Audio, id: UtteranceId, _: Epoch) {
            if self.last == Some(id) {
                return;
            }
            self.last = Some(id);
            let reporter = self.reporter.lock().unwrap().clone();
            let (echo, ms) = (self.echo, audio.duration().as_millis() as u32);
            tokio::spawn(async move {
                tokio::time::sleep(echo).await;
                if let Some(r) = reporter {
                    r.report(id, Milestone::FirstHeard { confirmed_ms: ms });
                }
            });
        }
        fn clear(&mut self) {}
    }

    /// Run the pipeline's player into a far end that echoes each
    /// utterance's first audio 100 ms later (`FirstHeard`).
    fn play_with_echoes(p: &mut Pipeline) -> tokio::task::JoinHandle<Echoing> {
        let up = p.stage_control(p.len() - 1).unwrap();
        let sink = Echoing {
            reporter: Arc::new(Mutex::new(Some(MilestoneReporter::new(up.clone())))),
            echo: Duration::from_millis(100),
            last: None,
        };
        let tail = p.take_tail().unwrap();
        let player = Player::new(
            sink,
            tail,
            up,
            p.scope().clone(),
            Arc::new(Floor::default()),
        );
        tokio::spawn(player.run())
    }

    #[tokio::test(start_paused = true)]
    async fn each_milestone_is_stamped_once_where_it_happens() {
        let seen: Seen = Arc::default();
        let (first, per) = (Duration::from_millis(300), Duration::from_millis(30));
        let voice = CodecTts::default();
        let mut p = Pipeline::builder()
            .stage(Head(seen.clone()))
            .stage(LlmStage::new(Arc::new(Scripted { first, per })))
            .stage(SentenceAggregator::default())
            .stage(TtsStage::new(Arc::new(voice.clone())))
            .stage(output::OutputStage)
            .tail(output::OUTPUT_QUEUE_FRAMES)
            .build();
        let player = play_with_echoes(&mut p);
        let t0 = Instant::now();
        let request = Data::LlmRequest {
            id: 7,
            request: Custom::new(()),
        };
        p.input()
            .unwrap()
            .send(Frame::data(0, request))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_secs(5)).await;
        p.cancel(Duration::from_secs(1)).await;
        let _ = player.await;

        let seen = seen.lock().unwrap().clone();
        let at = |m: Milestone| -> Vec<Duration> {
            seen.iter()
                .filter(|(id, s, _)| *id == 7 && *s == m)
                .map(|(_, _, at)| *at - t0)
                .collect()
        };
        let ms = Duration::from_millis;
        // The first sentence is complete when the token after "there."
        // arrives (the aggregator waits for the space after the stop).
        let sentence = first + per * 2;
        assert_eq!(at(Milestone::LlmRequested), [ms(0)], "{seen:?}");
        assert_eq!(at(Milestone::LlmFirstToken), [first]);
        assert_eq!(
            at(Milestone::TtsQueued),
            [sentence],
            "nothing was spoken before it"
        );
        assert_eq!(at(Milestone::TtsRequested), [sentence]);
        assert_eq!(at(Milestone::TtsFirstAudio), [sentence + voice.first_audio]);
        assert_eq!(at(Milestone::FirstOutbound), [sentence + voice.first_audio]);
        let heard: Vec<Duration> = seen
            .iter()
            .filter(|(_, m, _)| matches!(m, Milestone::FirstHeard { confirmed_ms } if *confirmed_ms > 0))
            .map(|(_, _, at)| *at - t0)
            .collect();
        assert_eq!(heard, [sentence + voice.first_audio + ms(100)]);
        assert_eq!(seen.len(), 7, "each milestone once: {seen:?}");
    }

    #[tokio::test]
    async fn a_report_reaches_the_inbox_and_is_dropped_once_it_closed() {
        let (tx, mut rx) = inbox(4);
        let reporter = MilestoneReporter::new(tx.control_handle());
        reporter.report(7, Milestone::FirstHeard { confirmed_ms: 200 });
        match rx.try_recv() {
            Some(Frame::Control(ControlFrame::Milestone {
                id: 7, milestone, ..
            })) => {
                assert_eq!(milestone, Milestone::FirstHeard { confirmed_ms: 200 });
            }
            other => panic!("{other:?}"),
        }
        drop(rx);
        reporter.report(7, Milestone::FirstOutbound);
    }

    #[tokio::test(start_paused = true)]
    async fn a_line_queued_behind_the_agent_s_own_speech_says_when_it_arrived() {
        let seen: Seen = Arc::default();
        let voice = CodecTts::default();
        let mut p = Pipeline::builder()
            .stage(Head(seen.clone()))
            .stage(TtsStage::new(Arc::new(voice.clone())))
            .stage(output::OutputStage)
            .tail(output::OUTPUT_QUEUE_FRAMES)
            .build();
        let player = play_with_echoes(&mut p);
        let t0 = Instant::now();
        let speak = |id: UtteranceId, text: &str| {
            Frame::data(
                0,
                Data::Speak(crate::frames::UtteranceText {
                    id,
                    text: text.into(),
                }),
            )
        };
        let input = p.input().unwrap().clone();
        let long = "one two three four five six seven eight nine ten eleven twelve";
        input.send(speak(1, long)).await.unwrap();
        input.send(speak(1, "and thirteen.")).await.unwrap();
        input.send(speak(2, "Anything else?")).await.unwrap();
        tokio::time::sleep(Duration::from_secs(10)).await;
        p.cancel(Duration::from_secs(1)).await;
        let _ = player.await;
        let seen = seen.lock().unwrap().clone();
        let at = |id: UtteranceId, m: Milestone| -> Vec<Duration> {
            seen.iter()
                .filter(|(i, s, _)| *i == id && *s == m)
                .map(|(_, _, at)| *at - t0)
                .collect()
        };
        // Each utterance is queued once, when its first sentence arrives.
        assert_eq!(at(1, Milestone::TtsQueued), [Duration::ZERO], "{seen:?}");
        assert_eq!(at(2, Milestone::TtsQueued), [Duration::ZERO], "{seen:?}");
        // The second goes to the voice only once the first has been
        // spoken (less the lead the voice may run ahead of playback).
        let requested = at(2, Milestone::TtsRequested);
        assert_eq!(requested.len(), 1, "{seen:?}");
        assert!(requested[0] >= Duration::from_secs(2), "{requested:?}");
    }
}
