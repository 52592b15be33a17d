//! Barge-in: decides when the caller's speech interrupts the agent.
//!
//! The caller interrupts when the agent holds the floor (speaking, or a
//! reply on its way: [`Floor::agent_active`]), barge-in is not muted (first
//! greeting, a running tool: [`Floor::muted`]), and the rules are met:
//! the VAD says the caller started speaking (its start time — 0.4 s by
//! default — is the first filter), they kept speaking for `min_speech`
//! more, and the transcript so far has at least `min_words` words.
//!
//! Muting suppresses the *interruption*, never the caller's words: what
//! they say during a greeting or a lookup still reaches the conversation
//! (the post-tool buffer of the brain depends on it).

use crate::floor::Floor;
use crate::frames::{ControlFrame, Data, Frame};
use crate::stage::{Ctx, Direction, Stage};
use std::sync::Arc;
use std::time::Duration;

/// When caller speech counts as a barge-in.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BargeInRules {
    /// Caller speech must last this long after the VAD's start (0 = at
    /// once).
    pub min_speech: Duration,
    /// The transcript of the interrupting speech must have this many words
    /// (0 = no transcript needed).
    pub min_words: usize,
    /// Barge-in at all.
    pub enabled: bool,
}

impl Default for BargeInRules {
    fn default() -> Self {
        BargeInRules {
            min_speech: Duration::ZERO,
            min_words: 0,
            enabled: true,
        }
    }
}

/// The turn-taking stage.
pub struct TurnStage {
    floor: Arc<Floor>,
    rules: BargeInRules,
    speaking: bool,
    /// Counts speech runs, so a late timer of an old run is ignored.
    run: u64,
    long_enough: bool,
    words: usize,
    interrupted: bool,
}

impl TurnStage {
    pub fn new(floor: Arc<Floor>, rules: BargeInRules) -> Self {
        TurnStage {
            floor,
            rules,
            speaking: false,
            run: 0,
            long_enough: false,
            words: 0,
            interrupted: false,
        }
    }

    fn consider(&mut self, ctx: &mut Ctx<'_>) {
        if !self.rules.enabled
            || self.interrupted
            || !self.speaking
            || !self.long_enough
            || self.words < self.rules.min_words
        {
            return;
        }
        if self.floor.agent_active() && !self.floor.muted() {
            self.interrupted = true;
            let epoch = ctx.interrupt();
            tracing::debug!(epoch, "barge-in");
            // calllock::metrics::BARGE_INS (the catalogue describes it).
            metrics::counter!("calllock_barge_ins_total").increment(1);
        }
    }
}

impl Stage for TurnStage {
    fn name(&self) -> &'static str {
        "turn"
    }
    fn handle(&mut self, frame: Frame, dir: Direction, ctx: &mut Ctx<'_>) {
        match &frame {
            Frame::Control(ControlFrame::UserStartedSpeaking) => {
                self.speaking = true;
                self.run += 1;
                self.words = 0;
                self.interrupted = false;
                self.long_enough = self.rules.min_speech.is_zero();
                if !self.long_enough {
                    let run = self.run;
                    let wait = self.rules.min_speech;
                    // On the control lane: a timer is never stale.
                    let token = ctx.scope().call_token().clone();
                    ctx.spawn_control(token, async move {
                        tokio::time::sleep(wait).await;
                        Frame::Control(ControlFrame::SpeechLongEnough { run })
                    });
                }
                ctx.pass(frame, dir);
                self.consider(ctx);
                return;
            }
            Frame::Control(ControlFrame::UserStoppedSpeaking) => {
                self.speaking = false;
            }
            Frame::Control(ControlFrame::SpeechLongEnough { run }) => {
                if *run == self.run && self.speaking {
                    self.long_enough = true;
                    self.consider(ctx);
                }
                return;
            }
            Frame::Data(d) => {
                if let Data::Transcript { text, .. } = &d.data {
                    self.words = self.words.max(text.split_whitespace().count());
                    ctx.pass(frame, dir);
                    self.consider(ctx);
                    return;
                }
            }
            _ => {}
        }
        ctx.pass(frame, dir);
    }
}
