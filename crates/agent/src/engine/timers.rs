//! When the engine speaks up or hangs up on its own: the idle prompt,
//! the dead-air filler (issue 24), the hang-up after the last line (D-9,
//! D-10).

use super::*;

impl<P: Policy> Engine<P> {
    pub(super) fn timer(&mut self, timer: Timer, now: f64, out: &mut Vec<Effect>) {
        match timer {
            Timer::Debounce => {
                let due = self
                    .buffer
                    .as_ref()
                    .is_some_and(|b| now + EPS >= b.deadline);
                if due && self.turn.is_none() && !self.ended {
                    self.flush(now, out);
                }
            }
            Timer::Idle => {
                let due = self.idle_at.is_some_and(|at| now + EPS >= at);
                if due && self.idle_allowed() && self.terminal_said == Some(State::SafetyExit) {
                    // The household was told to leave: no "are you still
                    // there?" — the call ends once the script has played
                    // and the line stays quiet.
                    self.idle_at = None;
                    self.end_call(now, out);
                } else if due && self.idle_allowed() && self.hearing() {
                    // The caller spoke and no words came for it in a whole
                    // idle wait (the recogniser fell behind or lost them):
                    // they are there; ask them to say it again, once.
                    self.idle_at = None;
                    (self.speaking, self.owed) = (false, 0);
                    self.speak(Canned::NotHeard, now, out);
                } else if due && self.idle_allowed() {
                    self.idle_at = None;
                    self.idle_prompts += 1;
                    if self.idle_prompts > self.config.idle_max_prompts {
                        self.session.caller_silent = true;
                        self.speak(Canned::IdleGoodbye, now, out);
                        self.request_hangup(now, out);
                    } else if self.idle_prompts % 2 == 1 {
                        self.speak(Canned::IdlePrompt, now, out);
                    } else {
                        // Other words: never the same line twice in a row.
                        self.speak(Canned::IdlePromptAgain, now, out);
                    }
                }
            }
            Timer::Filler => {
                let due = self.filler_at.is_some_and(|at| now + EPS >= at);
                // Post-tool buffering (SPEC §5.5) counts too: it is
                // silence on the line. The flush arms it again for the
                // wait on the reply.
                if due && !self.ended && self.hangup.is_none() {
                    self.filler_at = None;
                    let n = self.fillers % FILLERS.len() as u8;
                    self.fillers = self.fillers.wrapping_add(1);
                    self.speak(Canned::Filler(n), now, out);
                }
            }
            Timer::HangupGrace | Timer::HangupCeiling => {
                let due = self.hangup.is_some_and(|h| {
                    h.grace_at.is_some_and(|g| now + EPS >= g) || now + EPS >= h.ceiling_at
                });
                if due && !self.ended {
                    self.end_call(now, out);
                }
            }
        }
    }

    // ---- utterances -------------------------------------------------------

    /// The dead-air budget (issue 24): a turn that waits on the LLM or a
    /// tool with nothing said yet gets a filler if its reply has not begun
    /// within `filler_after_s` of `from` ([`Input::ReplyStarted`] disarms
    /// it). A recogniser that was slow to give the words has used up part
    /// of that wait: the filler is then due
    /// [`FILLER_AT_THE_SOONEST_S`] after the words came (a reply whose
    /// first words come sooner needs none).
    pub(super) fn arm_filler(&mut self, from: f64, now: f64, out: &mut Vec<Effect>) {
        if self.config.filler_after_s <= 0.0 || self.ended {
            return;
        }
        let at = (from + self.config.filler_after_s).max(now + FILLER_AT_THE_SOONEST_S);
        self.filler_at = Some(at);
        out.push(Effect::StartTimer {
            timer: Timer::Filler,
            at,
        });
    }

    /// The idle controller may act: nothing in flight, nothing pending.
    /// The caller is speaking, or words they said are still owed.
    pub(super) fn hearing(&self) -> bool {
        self.speaking || self.owed > 0
    }

    /// A final result (or "not heard") came: for the oldest stretch of
    /// speech still owed, else for the speech going on (a final before
    /// the voice activity's stop).
    pub(super) fn words_came(&mut self) {
        if self.owed > 0 {
            self.owed -= 1;
        } else {
            self.speaking = false;
        }
    }

    pub(super) fn idle_allowed(&self) -> bool {
        self.config.idle_prompt_s > 0.0
            && !self.ended
            && self.turn.is_none()
            && self.buffer.is_none()
            && self.hangup.is_none()
            && self.queued.is_empty()
    }

    /// The bot finished speaking: start waiting for the caller.
    pub(super) fn arm_idle(&mut self, now: f64, out: &mut Vec<Effect>) {
        if !self.idle_allowed() {
            return;
        }
        // After the safety script the wait is only long enough for one
        // short question; then the call ends (see the idle timer).
        let wait = if self.terminal_said == Some(State::SafetyExit) {
            self.config.idle_prompt_s.min(SAFETY_EXIT_WAIT_S)
        } else {
            self.config.idle_prompt_s
        };
        let at = now + wait;
        self.idle_at = Some(at);
        out.push(Effect::StartTimer {
            timer: Timer::Idle,
            at,
        });
    }

    pub(super) fn request_hangup(&mut self, now: f64, out: &mut Vec<Effect>) {
        if self.hangup.is_some() || self.ended {
            return;
        }
        let ceiling_at = now + self.config.end_call_max_wait_s;
        self.hangup = Some(Hangup {
            grace_at: None,
            ceiling_at,
        });
        out.push(Effect::StartTimer {
            timer: Timer::HangupCeiling,
            at: ceiling_at,
        });
    }

    pub(super) fn end_call(&mut self, now: f64, out: &mut Vec<Effect>) {
        if self.ended {
            return;
        }
        self.record(
            now,
            history::Event::CallEnded {
                reason: "agent".into(),
            },
        );
        self.ended = true;
        self.hangup = None;
        self.buffer = None;
        out.push(Effect::EndCall);
    }
}
