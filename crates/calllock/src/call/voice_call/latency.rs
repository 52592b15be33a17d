//! Measuring where a turn's time goes, live (sans-IO: every method takes
//! the time it is told about).
//!
//! The conversation stage already sees everything a turn is made of, so
//! the measurement costs no new channel and nothing per audio frame:
//!
//! - the caller stopping (the VAD's [`UserStoppedSpeaking`] on its way
//!   downstream) and the STT final the engine answers;
//! - what the engine does with it: a tool call and its answer, the
//!   post-tool debounce timer, the scoped reply, then the reply itself —
//!   an LLM request or a canned line;
//! - the reply's [milestones](voice::latency) coming back upstream, stamped
//!   where they happened: LLM requested and first token, TTS requested and
//!   first audio, first outbound frame, first heard (the transport's first
//!   mark echo).
//!
//! A turn starts at an STT final the engine will answer. If the caller
//! says more before a reply was made (a fragment during the debounce, an
//! utterance queued behind a tool), the turn moves to the newest final:
//! that is the speech the reply answers. The reply is the first agent
//! utterance made while handling the turn; later lines of the same turn
//! (the "all set" after "one moment") are not its latency. A turn is
//! written when its reply was first heard, when the next turn starts, or
//! when the call ends — whichever comes first; a turn without a reply is
//! never written.
//!
//! [`UserStoppedSpeaking`]: voice::frames::ControlFrame::UserStoppedSpeaking

use crate::call::latency::{Anchor, ReplyKind, TurnLatency};
use std::time::Duration;
use tokio::time::Instant;
use voice::frames::UtteranceId;
use voice::latency::Milestone;

/// A wait inside a turn that is not our own time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Wait {
    /// A backend tool (vendor).
    Tool,
    /// The post-tool debounce (policy).
    Debounce,
    /// The scoped reply of a terminal state (the LLM vendor, not streamed).
    Scoped,
    /// The caller's line waited for the turn before it, still suspended on
    /// its tool or scoped reply (the engine queues it until that is done).
    Queued,
}

/// How many kinds of [`Wait`] there are.
const WAITS: usize = 4;

impl Wait {
    fn index(self) -> usize {
        self as usize
    }
}

/// The milestones of a reply, in pipeline order.
const MILESTONES: usize = 8;

fn slot(m: Milestone) -> usize {
    match m {
        Milestone::LlmRequested => 0,
        Milestone::LlmFirstToken => 1,
        Milestone::TtsRequested => 2,
        Milestone::TtsFirstAudio => 3,
        Milestone::FirstOutbound => 4,
        Milestone::FirstHeard { .. } => 5,
        Milestone::TtsQueued => 6,
        Milestone::PlayerFree => 7,
    }
}

/// One turn being measured.
#[derive(Debug)]
struct Turn {
    /// The VAD's stop that ended the speech answered (`None`: not yet, or
    /// never).
    speech_end: Option<Instant>,
    /// The final arrived while the VAD still heard speech: its stop, when
    /// it comes, is this turn's speech end.
    awaiting_stop: bool,
    stt_final: Instant,
    /// Open waits (since when) and the time waited so far.
    open: [Option<Instant>; WAITS],
    waited: [Duration; WAITS],
    /// The reply: its utterance and how it was made.
    reply: Option<(UtteranceId, ReplyKind)>,
    turn: u32,
    milestones: [Option<Instant>; MILESTONES],
    heard_audio_ms: Option<u32>,
}

impl Turn {
    fn new(stt_final: Instant, speech_end: Option<Instant>, awaiting_stop: bool) -> Self {
        Turn {
            speech_end,
            awaiting_stop,
            stt_final,
            open: [None; WAITS],
            waited: [Duration::ZERO; WAITS],
            reply: None,
            turn: 0,
            milestones: [None; MILESTONES],
            heard_audio_ms: None,
        }
    }

    fn close(&mut self, w: Wait, at: Instant) {
        if let Some(from) = self.open[w.index()].take() {
            self.waited[w.index()] += at.saturating_duration_since(from);
        }
    }
}

/// Milliseconds from `anchor` to `t` (negative when `t` came first), to
/// a tenth.
fn offset_ms(t: Instant, anchor: Instant) -> f64 {
    let ms = if t >= anchor {
        (t - anchor).as_secs_f64() * 1000.0
    } else {
        -((anchor - t).as_secs_f64() * 1000.0)
    };
    (ms * 10.0).round() / 10.0
}

fn dur_ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 10_000.0).round() / 10.0
}

/// The turn clocks of one call.
#[derive(Debug)]
pub(super) struct TurnClocks {
    /// The call's start: an instant and its Unix time.
    origin: (Instant, f64),
    /// The VAD hears the caller.
    speaking: bool,
    /// The VAD's last stop, while it may still end the speech of a final
    /// to come: a final uses it up, and words heard after it prove it was
    /// a pause, not the end.
    last_stop: Option<Instant>,
    current: Option<Turn>,
    answered: u32,
    /// The engine is handling an input whose effects may be a turn's
    /// reply (a final, a tool's answer, the debounce, a scoped reply) —
    /// not the greeting or an idle prompt.
    answering: bool,
}

impl TurnClocks {
    pub(super) fn new(start: Instant, start_unix: f64) -> Self {
        TurnClocks {
            origin: (start, start_unix),
            speaking: false,
            last_stop: None,
            current: None,
            answered: 0,
            answering: false,
        }
    }

    /// The call (re)started at `start` (Unix `start_unix`).
    pub(super) fn set_origin(&mut self, start: Instant, start_unix: f64) {
        self.origin = (start, start_unix);
    }

    /// Whether the input about to be handled may produce a turn's reply;
    /// returns the previous setting (restore it afterwards: inputs nest).
    pub(super) fn set_answering(&mut self, answering: bool) -> bool {
        std::mem::replace(&mut self.answering, answering)
    }

    /// The VAD heard the caller start speaking.
    pub(super) fn caller_started(&mut self) {
        self.speaking = true;
        if let Some(t) = self.current.as_mut() {
            t.awaiting_stop = false;
        }
    }

    /// The VAD heard the caller stop at `at`.
    pub(super) fn caller_stopped(&mut self, at: Instant) {
        self.speaking = false;
        self.last_stop = Some(at);
        if let Some(t) = self.current.as_mut().filter(|t| t.awaiting_stop) {
            t.awaiting_stop = false;
            t.speech_end = Some(at);
        }
    }

    /// The STT heard words (an interim result). After the VAD's stop,
    /// they mean that stop did not end the speech: an utterance too short
    /// for the VAD to start on (0.4 s by default: "yes") follows, and the
    /// turn counts from its final instead.
    pub(super) fn caller_words(&mut self) {
        if !self.speaking {
            self.last_stop = None;
        }
    }

    /// A final transcript the engine will answer arrived at `at`. Returns
    /// the previous turn when it is done (it had its reply).
    pub(super) fn stt_final(&mut self, at: Instant) -> Option<TurnLatency> {
        let speech_end = if self.speaking {
            None
        } else {
            self.last_stop.take()
        };
        let awaiting_stop = self.speaking;
        match self.current.as_mut() {
            Some(t) if t.reply.is_none() => {
                // More speech before a reply: the reply answers this one.
                t.stt_final = at;
                t.speech_end = speech_end;
                t.awaiting_stop = awaiting_stop;
                t.waited = [Duration::ZERO; WAITS];
                for open in t.open.iter_mut().flatten() {
                    *open = (*open).max(at);
                }
                None
            }
            _ => {
                let done = self.current.take().and_then(|t| self.entry(t));
                self.current = Some(Turn::new(at, speech_end, awaiting_stop));
                done
            }
        }
    }

    /// A wait started at `at` (a tool call, the debounce timer, a scoped
    /// request). Any of them ends a running debounce: the buffer flushed.
    pub(super) fn wait_started(&mut self, w: Wait, at: Instant) {
        let Some(t) = self.current.as_mut().filter(|t| t.reply.is_none()) else {
            return;
        };
        // A line queued behind the turn before: only a new turn's wait (a
        // turn's own tool or scoped request, still open, is already
        // counted, and the line moved onto it).
        if w == Wait::Queued && t.open.iter().any(Option::is_some) {
            return;
        }
        if w != Wait::Debounce {
            t.close(Wait::Debounce, at);
        }
        let open = &mut t.open[w.index()];
        if open.is_none() {
            *open = Some(at);
        }
    }

    /// A tool answered or the scoped reply came, at `at`.
    pub(super) fn wait_ended(&mut self, w: Wait, at: Instant) {
        if let Some(t) = self.current.as_mut().filter(|t| t.reply.is_none()) {
            t.close(w, at);
        }
    }

    /// The engine made utterance `id` (an LLM request or a canned line)
    /// at `at`: the reply of the current turn, if it has none yet.
    pub(super) fn reply(&mut self, id: UtteranceId, kind: ReplyKind, at: Instant) {
        if !self.answering {
            return;
        }
        let Some(t) = self.current.as_mut().filter(|t| t.reply.is_none()) else {
            return;
        };
        // A debounce still open was flushed into this reply, and a line
        // queued behind the turn before was waited for until now; a tool
        // or scoped request still open was not waited for.
        t.close(Wait::Debounce, at);
        t.close(Wait::Queued, at);
        t.open = [None; WAITS];
        self.answered += 1;
        t.turn = self.answered;
        t.reply = Some((id, kind));
    }

    /// Utterance `id` reached `m` at `at`. Returns the turn when this
    /// completed it (its reply was first heard).
    pub(super) fn milestone(
        &mut self,
        id: UtteranceId,
        m: Milestone,
        at: Instant,
    ) -> Option<TurnLatency> {
        let t = self
            .current
            .as_mut()
            .filter(|t| t.reply.is_some_and(|(r, _)| r == id))?;
        let s = &mut t.milestones[slot(m)];
        if s.is_none() {
            *s = Some(at);
            if let Milestone::FirstHeard { confirmed_ms } = m {
                t.heard_audio_ms = Some(confirmed_ms);
                let t = self.current.take()?;
                return self.entry(t);
            }
        }
        None
    }

    /// The call ended: the last turn, if it was answered.
    pub(super) fn finish(&mut self) -> Option<TurnLatency> {
        let t = self.current.take()?;
        self.entry(t)
    }

    /// The stored form of a turn (none without a reply).
    fn entry(&self, t: Turn) -> Option<TurnLatency> {
        let (msg_id, reply) = t.reply?;
        let (anchor_kind, anchor) = match t.speech_end {
            Some(end) => (Anchor::SpeechEnd, end),
            None => (Anchor::SttFinal, t.stt_final),
        };
        let (start, start_unix) = self.origin;
        let off = |i: usize| t.milestones[i].map(|at| offset_ms(at, anchor));
        Some(TurnLatency {
            turn: t.turn,
            msg_id,
            reply,
            anchor: anchor_kind,
            at: start_unix + anchor.saturating_duration_since(start).as_secs_f64(),
            stt_final_ms: Some(offset_ms(t.stt_final, anchor)),
            llm_request_ms: off(0),
            llm_first_token_ms: off(1),
            tts_queued_ms: off(6),
            tts_request_ms: off(2),
            tts_first_audio_ms: off(3),
            player_free_ms: off(7),
            first_outbound_ms: off(4),
            first_heard_ms: off(5),
            heard_audio_ms: t.heard_audio_ms,
            tool_ms: dur_ms(t.waited[Wait::Tool.index()]),
            debounce_ms: dur_ms(t.waited[Wait::Debounce.index()]),
            scoped_ms: dur_ms(t.waited[Wait::Scoped.index()]),
            queued_ms: dur_ms(t.waited[Wait::Queued.index()]),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_turn_with_a_tool_and_the_debounce() {
        let t0 = Instant::now();
        let mut c = TurnClocks::new(t0, 1000.0);
        c.caller_started();
        c.caller_stopped(t0 + ms(2000));
        assert!(c.stt_final(t0 + ms(2010)).is_none());
        c.set_answering(true);
        c.wait_started(Wait::Tool, t0 + ms(2011));
        c.wait_ended(Wait::Tool, t0 + ms(2311));
        c.wait_started(Wait::Debounce, t0 + ms(2311));
        c.reply(5, ReplyKind::Llm, t0 + ms(3811));
        c.set_answering(false);
        for (m, at) in [
            (Milestone::LlmRequested, 3812),
            (Milestone::LlmFirstToken, 4112),
            (Milestone::TtsRequested, 4200),
            (Milestone::TtsFirstAudio, 4350),
            // The agent's earlier audio ("One moment.") was sent at 4400.
            (Milestone::PlayerFree, 4400),
            (Milestone::FirstOutbound, 4401),
        ] {
            assert!(c.milestone(5, m, t0 + ms(at)).is_none());
        }
        // Another utterance's milestones are not this turn's.
        assert!(c.milestone(4, Milestone::FirstOutbound, t0).is_none());
        let done = c
            .milestone(
                5,
                Milestone::FirstHeard { confirmed_ms: 100 },
                t0 + ms(4551),
            )
            .expect("heard completes the turn");
        assert_eq!(done.turn, 1);
        assert_eq!(done.anchor, Anchor::SpeechEnd);
        assert_eq!(done.at, 1002.0);
        assert_eq!(done.stt_final_ms, Some(10.0));
        assert_eq!((done.tool_ms, done.debounce_ms), (300.0, 1500.0));
        assert_eq!(done.llm_request_ms, Some(1812.0));
        assert_eq!(done.first_heard_ms, Some(2551.0));
        assert_eq!(done.heard_audio_ms, Some(100));
        assert_eq!(done.ours_before_ms(), Some(2.0));
        assert_eq!(done.player_free_ms, Some(2400.0));
        assert_eq!(done.ours_after_ms(), Some(1.0));
        assert!(c.finish().is_none(), "written once");
    }

    #[test]
    fn a_final_before_the_vad_stop_and_more_speech_before_the_reply() {
        let t0 = Instant::now();
        let mut c = TurnClocks::new(t0, 0.0);
        c.caller_started();
        // The final beats the VAD: its stop becomes the speech end.
        c.stt_final(t0 + ms(1000));
        c.caller_stopped(t0 + ms(1005));
        // Not answered (no reply); the caller goes on.
        c.caller_started();
        c.caller_stopped(t0 + ms(3000));
        c.stt_final(t0 + ms(3400));
        // The greeting or an idle prompt is no reply.
        c.reply(1, ReplyKind::Canned, t0 + ms(3401));
        c.set_answering(true);
        c.reply(2, ReplyKind::Canned, t0 + ms(3402));
        c.set_answering(false);
        let done = c.finish().expect("answered");
        assert_eq!(done.msg_id, 2);
        assert_eq!(done.reply, ReplyKind::Canned);
        assert_eq!(done.stt_final_ms, Some(400.0));
        assert_eq!(done.first_outbound_ms, None);
    }

    #[test]
    fn a_line_queued_behind_the_turn_before_waits_for_it_not_for_us() {
        let t0 = Instant::now();
        let mut c = TurnClocks::new(t0, 0.0);
        c.set_answering(true);
        // Turn 1: "one moment", then the booking tool runs for 6 s.
        c.caller_stopped(t0 + ms(1000));
        c.stt_final(t0 + ms(1000));
        c.reply(1, ReplyKind::Canned, t0 + ms(1001));
        c.wait_started(Wait::Tool, t0 + ms(1002));
        // Turn 2 arrives meanwhile; the engine queues it.
        c.caller_stopped(t0 + ms(2000));
        let first = c.stt_final(t0 + ms(2000)).expect("turn 1 had its reply");
        assert_eq!(first.tool_ms, 0.0, "the tool began after turn 1's reply");
        c.wait_started(Wait::Queued, t0 + ms(2000));
        // The booking answers at 7 s; turn 2's reply is made then.
        c.wait_ended(Wait::Tool, t0 + ms(7000));
        c.reply(2, ReplyKind::Canned, t0 + ms(7001));
        c.milestone(2, Milestone::TtsQueued, t0 + ms(7002));
        let second = c.finish().expect("turn 2");
        assert_eq!(second.queued_ms, 5001.0);
        assert_eq!(second.ours_before_ms(), Some(1.0), "{second:?}");

        // A turn's own tool still running when the caller says more: the
        // line moves onto the turn, and the tool's wait is not counted twice.
        let mut c = TurnClocks::new(t0, 0.0);
        c.set_answering(true);
        c.stt_final(t0 + ms(1000));
        c.wait_started(Wait::Tool, t0 + ms(1001));
        c.stt_final(t0 + ms(1500));
        c.wait_started(Wait::Queued, t0 + ms(1500));
        c.wait_ended(Wait::Tool, t0 + ms(3000));
        c.reply(1, ReplyKind::Llm, t0 + ms(3001));
        c.milestone(1, Milestone::LlmRequested, t0 + ms(3002));
        let t = c.finish().expect("answered");
        assert_eq!((t.tool_ms, t.queued_ms), (1500.0, 0.0));
        assert_eq!(t.ours_before_ms(), Some(2.0), "{t:?}");
    }

    #[test]
    fn speech_the_vad_missed_counts_from_its_final() {
        let t0 = Instant::now();
        let mut c = TurnClocks::new(t0, 0.0);
        c.set_answering(true);
        c.caller_started();
        c.caller_stopped(t0 + ms(1000));
        c.stt_final(t0 + ms(1000));
        c.reply(1, ReplyKind::Llm, t0 + ms(1000));
        // "Yes": too short for the VAD, heard by the STT only. The last
        // stop was the previous turn's.
        c.caller_words();
        let first = c.stt_final(t0 + ms(6000)).expect("the first turn");
        assert_eq!(first.anchor, Anchor::SpeechEnd);
        c.reply(2, ReplyKind::Llm, t0 + ms(6000));
        // Noise the VAD took for speech, then a short word: the noise's
        // stop is not the word's end.
        c.caller_started();
        c.caller_stopped(t0 + ms(8000));
        c.caller_words();
        let second = c.stt_final(t0 + ms(9000)).expect("the second turn");
        assert_eq!(
            (second.anchor, second.stt_final_ms),
            (Anchor::SttFinal, Some(0.0))
        );
        c.reply(3, ReplyKind::Llm, t0 + ms(9000));
        let third = c.finish().expect("the third turn");
        assert_eq!(
            (third.anchor, third.stt_final_ms),
            (Anchor::SttFinal, Some(0.0))
        );
    }

    #[test]
    fn the_next_turn_writes_the_last_and_unanswered_turns_are_not_written() {
        let t0 = Instant::now();
        let mut c = TurnClocks::new(t0, 0.0);
        c.set_answering(true);
        c.stt_final(t0);
        c.reply(1, ReplyKind::Llm, t0);
        let done = c.stt_final(t0 + ms(5000)).expect("the first turn");
        assert_eq!((done.turn, done.anchor), (1, Anchor::SttFinal));
        assert!(c.finish().is_none(), "the second was never answered");
    }
}
