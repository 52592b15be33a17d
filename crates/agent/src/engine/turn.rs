//! A caller turn: an utterance judged, the state machine run, the tools
//! it needs called one after another (the turn suspends on each answer),
//! terminal routing and the post-tool buffer (D-1, D-2, D-4/D-5/D-7).

use super::*;
use history::{Event, ToolOutcome};

impl<P: Policy> Engine<P> {
    /// SPEC §5.2 steps 1–3, then the turn.
    pub(super) fn utterance(&mut self, raw: &str, now: f64, out: &mut Vec<Effect>) {
        self.idle_at = None;
        self.idle_prompts = 0;
        self.capture(now);
        // Kept, shown and sent as printable text (no terminal escapes, no
        // bidi overrides: see `printable`).
        let text = crate::printable::printable(raw);
        self.session.conversation_history.push(HistoryMessage {
            role: "user".into(),
            content: text.clone(),
        });
        self.record(now, Event::CallerSaid { text: text.clone() });

        if let Some(buf) = self.buffer.as_mut() {
            buf.fragments.push(text);
            if now - buf.start + EPS >= self.config.buffer_max_s {
                self.flush(now, out);
            } else {
                buf.deadline = now + self.config.buffer_debounce_s;
                out.push(Effect::StartTimer {
                    timer: Timer::Debounce,
                    at: buf.deadline,
                });
            }
            return;
        }
        // The caller has waited since the line went quiet.
        let from = self.quiet_since.filter(|&q| q <= now).unwrap_or(now);
        self.start_turn(text.clone(), &text, from, now, out);
    }

    /// Leave buffer mode. D-1: only the fragments that arrived while
    /// buffering are judged (once, joined); with none, no state-machine run
    /// happens and the LLM just receives the text.
    pub(super) fn flush(&mut self, now: f64, out: &mut Vec<Effect>) {
        let Some(buf) = self.buffer.take() else {
            return;
        };
        let mut llm_text = buf.trigger;
        for f in &buf.fragments {
            llm_text.push(' ');
            llm_text.push_str(f);
        }
        if buf.fragments.is_empty() {
            self.forward_to_llm(llm_text, now, out);
            self.arm_filler(now, now, out);
            return;
        }
        let judged = buf.fragments.join(" ");
        // Buffering was a deliberate wait: the reply's counts from here.
        self.start_turn(llm_text, &judged, now, now, out);
    }

    /// Run the state machine on `judged` and carry the turn as far as it
    /// goes without an outside answer.
    /// `waited_from`: when the caller's wait for this reply began.
    pub(super) fn start_turn(
        &mut self,
        llm_text: String,
        judged: &str,
        waited_from: f64,
        now: f64,
        out: &mut Vec<Effect>,
    ) {
        let from = out.len();
        self.turn_body(llm_text, judged, now, out);
        let new = &out[from..];
        let speaks = new.iter().any(|e| matches!(e, Effect::Speak { .. }));
        let waits = new
            .iter()
            .any(|e| matches!(e, Effect::ToLlm { .. } | Effect::CallTool(_)));
        if waits && !speaks {
            self.arm_filler(waited_from, now, out);
        }
    }

    /// The turn itself ([`Self::start_turn`] adds the filler's timer).
    pub(super) fn turn_body(
        &mut self,
        llm_text: String,
        judged: &str,
        now: f64,
        out: &mut Vec<Effect>,
    ) {
        let start_state = self.session.state;
        let action = self.policy.process(&mut self.session, judged);
        let time_changed = self.session.heard.changed.iter().any(|c| c == "time");
        if self.session.state == State::PreConfirm
            && (start_state != State::PreConfirm
                || self.session.booking_time.is_empty()
                || time_changed)
        {
            // Fix the visit time now, so the read-back says what is booked.
            let s = &self.session;
            self.session.booking_time = resolve_booking_time(
                &s.preferred_time,
                &s.urgency_tier,
                self.local_now(now),
                &self.profile,
            );
        }
        self.note_state(start_state, now, out);
        self.turn = Some(Turn {
            llm_text,
            action,
            start_state,
            pre_tool_state: self.session.state,
            force_llm: false,
            stage: Stage::Speak,
            callback_attempted: false,
            alert_attempted: false,
            manage_attempted: false,
            awaiting: None,
        });
        self.advance(now, out);
    }

    /// Drive the current turn until it finishes or must wait.
    pub(super) fn advance(&mut self, now: f64, out: &mut Vec<Effect>) {
        loop {
            let Some(turn) = self.turn.as_mut() else {
                return;
            };
            if turn.awaiting.is_some() {
                return;
            }
            match turn.stage {
                Stage::Speak => {
                    turn.stage = Stage::MachineTool;
                    if let Some(sp) = turn.action.speak {
                        let canned = match sp {
                            Speak::FillerBookingCheck => Canned::FillerBookingCheck,
                            Speak::TurnLimitPerCall => Canned::TurnLimitPerCall,
                            Speak::TurnLimitPerState => Canned::TurnLimitPerState,
                        };
                        self.speak(canned, now, out);
                    }
                }
                Stage::MachineTool => {
                    turn.stage = Stage::Obligations;
                    turn.pre_tool_state = self.session.state;
                    if let Some(tool) = turn.action.call_tool.filter(|t| *t != Tool::EndCall) {
                        self.call_tool(tool, now, out);
                        return;
                    }
                }
                Stage::Obligations => {
                    if let Some(tool) = self.next_obligation() {
                        self.call_tool(tool, now, out);
                        return;
                    }
                    let state = self.session.state;
                    if let Some(t) = self.turn.as_mut() {
                        t.force_llm = state != t.pre_tool_state;
                        t.stage = Stage::AfterTools;
                    }
                }
                Stage::AfterTools => {
                    self.refresh_system_prompt();
                    let state = self.session.state;
                    if state.runs_extraction() {
                        self.start_extraction(out);
                    }
                    if state.has_canned_script() {
                        if let Some(t) = self.turn.as_mut() {
                            t.stage = Stage::Terminal;
                        }
                        continue;
                    }
                    if let Some(turn) = self.turn.take() {
                        self.finish_turn(turn, now, out);
                    }
                }
                Stage::Terminal => {
                    if !self.session.terminal_reply_used {
                        self.session.terminal_reply_used = true;
                        turn.awaiting = Some(Awaiting::Scoped);
                        out.push(Effect::AskScopedReply {
                            user_text: turn.llm_text.clone(),
                        });
                        return;
                    }
                    self.finish_terminal(now, out);
                }
            }
        }
    }

    /// SPEC §5.2 steps 10–12 for a turn that is not terminal-routed.
    pub(super) fn finish_turn(&mut self, turn: Turn, now: f64, out: &mut Vec<Effect>) {
        if !turn.action.end_call && self.hangup.is_some() {
            // The caller went on after a goodbye ("thanks — oh, yes,
            // schedule it"): the call is theirs again, and the pending
            // hang-up would cut it off mid-question. Its timers are stale.
            self.hangup = None;
        }
        if turn.action.end_call {
            if turn.action.needs_llm || turn.force_llm {
                self.forward_to_llm(turn.llm_text, now, out);
                self.request_hangup(now, out);
            } else {
                self.end_call(now, out);
            }
        } else if turn.force_llm {
            self.enter_buffer(turn.llm_text, now, out);
        } else if turn.action.needs_llm {
            self.forward_to_llm(turn.llm_text, now, out);
        } else {
            self.record(
                now,
                Event::Context {
                    role: history::Role::User,
                    text: turn.llm_text.clone(),
                },
            );
            out.push(Effect::ContextUserAppend {
                text: turn.llm_text,
            });
        }
    }

    /// The tool a turn still owes the caller (D-4, D-5, D-7), if any.
    pub(super) fn next_obligation(&self) -> Option<Tool> {
        let turn = self.turn.as_ref()?;
        let s = &self.session;
        if s.state == State::UrgencyCallback
            && s.is_high_ticket()
            && !s.lead_alert_sent
            && !turn.alert_attempted
        {
            return Some(Tool::SendSalesLeadAlert);
        }
        // A returning caller who asked after the appointment, or to move it
        // to a time they named, in their first words: done as soon as the
        // lookup finds it, not asked again.
        let asked_already = matches!(s.manage_action.as_str(), "status" | "cancel")
            || (s.manage_action == "reschedule" && !s.manage_time_hint.is_empty());
        if s.state == State::ManageBooking
            && turn.start_state != State::ManageBooking
            && asked_already
            && !turn.manage_attempted
        {
            return Some(Tool::ManageAppointment);
        }
        let promised = s.state.promises_callback()
            || (s.state == State::NonService
                && turn.start_state != State::NonService
                && matches!(s.callback_type.as_str(), "billing" | "warranty"));
        if promised
            && !s.callback_created
            && !s.callback_declined
            && s.callback_attempts < 2
            && !turn.callback_attempted
        {
            return Some(Tool::CreateCallback);
        }
        None
    }

    pub(super) fn call_tool(&mut self, tool: Tool, now: f64, out: &mut Vec<Effect>) {
        let call = self.build_call(tool, now);
        if let ToolCall::ManageAppointment { new_time, .. } = &call {
            if !new_time.is_empty() {
                // Kept for the record, in case the answer does not say.
                self.session.rescheduled_to = crate::booking_time::say_time(new_time);
            }
        }
        if let Some(turn) = self.turn.as_mut() {
            match tool {
                Tool::CreateCallback => turn.callback_attempted = true,
                Tool::SendSalesLeadAlert => turn.alert_attempted = true,
                Tool::ManageAppointment => turn.manage_attempted = true,
                _ => {}
            }
            turn.awaiting = Some(Awaiting::Tool(tool));
        }
        let call_id = self.log.next_tool_call_id();
        self.record(
            now,
            Event::ToolCalled {
                call_id,
                name: tool.as_str().to_string(),
                args: call.args_json().to_string(),
            },
        );
        self.open_tool = Some(call_id);
        out.push(Effect::CallTool(call));
    }

    pub(super) fn tool_result(&mut self, result: Value, now: f64, out: &mut Vec<Effect>) {
        let Some(Awaiting::Tool(tool)) = self.turn.as_ref().and_then(|t| t.awaiting) else {
            tracing::warn!("tool result with no tool call pending; ignored");
            return;
        };
        let before = self.session.state;
        self.policy
            .apply_tool_result(&mut self.session, tool, &result);
        self.note_state(before, now, out);
        if let Some(call_id) = self.open_tool.take() {
            let ok = crate::tools::call_succeeded(&result);
            self.record(
                now,
                Event::ToolFinished {
                    call_id,
                    result: result.to_string(),
                    outcome: ToolOutcome::of_answer(ok),
                },
            );
        }
        if let Some(turn) = self.turn.as_mut() {
            turn.awaiting = None;
        }
        self.advance(now, out);
    }

    pub(super) fn scoped_reply(&mut self, text: Option<String>, now: f64, out: &mut Vec<Effect>) {
        let waiting = self
            .turn
            .as_ref()
            .is_some_and(|t| t.awaiting == Some(Awaiting::Scoped));
        if !waiting {
            tracing::warn!("scoped reply with no request pending; ignored");
            return;
        }
        if let Some(reply) = text.map(|t| t.trim().to_string()) {
            if !reply.is_empty() && passes_booking_filter(&reply) {
                self.speak_text(Canned::ScopedReply, reply, now, out);
            }
        }
        if let Some(turn) = self.turn.as_mut() {
            turn.awaiting = None;
        }
        self.finish_terminal(now, out);
        self.advance(now, out);
    }

    /// Canned script of the terminal state, then the hang-up if asked for.
    pub(super) fn finish_terminal(&mut self, now: f64, out: &mut Vec<Effect>) {
        let Some(turn) = self.turn.take() else {
            return;
        };
        let state = self.session.state;
        if self.terminal_said == Some(State::SafetyExit)
            && state == State::SafetyExit
            && self.session.heard.question.is_none()
        {
            // The household was told to leave and asks nothing: no more
            // words keep them inside — the call ends now.
            self.end_call(now, out);
            return;
        }
        if self.terminal_said == Some(state) {
            // Said once; now answer the caller briefly (same canned id),
            // and never the same line twice in a row.
            let mut text = terminal_follow_up(state, &self.session, &self.profile, &turn.llm_text);
            let transcript = self.log.transcript();
            let last = transcript
                .iter()
                .rev()
                .find(|l| l.speaker == history::Speaker::Agent)
                .map(|l| l.text.as_str());
            if last == Some(text.as_str()) {
                text = format!(
                    "Thanks for calling {} — goodbye.",
                    self.profile.company_name
                );
            }
            self.speak_text(Canned::Terminal(state), text, now, out);
        } else {
            self.terminal_said = Some(state);
            if state == State::Callback {
                let when = callback_window(self.local_now(now), &self.profile);
                let text = callback_script(&self.session, &self.profile, &when);
                self.speak_text(Canned::Terminal(state), text, now, out);
            } else {
                self.speak(Canned::Terminal(state), now, out);
            }
        }
        if turn.action.end_call {
            self.request_hangup(now, out);
        }
    }

    // ---- helpers ----------------------------------------------------------

    pub(super) fn build_call(&self, tool: Tool, now: f64) -> ToolCall {
        let s = &self.session;
        let phone = s.phone_number.clone();
        let call_id = s.call_sid.clone();
        match tool {
            Tool::LookupCaller | Tool::EndCall => ToolCall::LookupCaller { phone, call_id },
            Tool::BookService => ToolCall::BookService {
                customer_name: s.customer_name.clone(),
                problem: s.problem_description.clone(),
                address: s.service_address.clone(),
                // The time read back in pre_confirm, exactly.
                preferred_time: if s.booking_time.is_empty() {
                    resolve_booking_time(
                        &s.preferred_time,
                        &s.urgency_tier,
                        self.local_now(now),
                        &self.profile,
                    )
                } else {
                    s.booking_time.clone()
                },
                phone,
                call_id,
            },
            Tool::CreateCallback => crate::backend::callback_request(s),
            Tool::SendSalesLeadAlert => ToolCall::SendSalesLeadAlert {
                phone,
                reason: s.problem_description.clone(),
                call_id,
            },
            Tool::ManageAppointment => {
                let action = if s.manage_action.is_empty() {
                    "status".to_string()
                } else {
                    s.manage_action.clone()
                };
                let new_time = if action == "reschedule" && !s.manage_time_hint.is_empty() {
                    resolve_booking_time(
                        &s.manage_time_hint,
                        "routine",
                        self.local_now(now),
                        &self.profile,
                    )
                } else {
                    String::new()
                };
                ToolCall::ManageAppointment {
                    action,
                    phone,
                    booking_uid: s.appointment_uid.clone(),
                    reason: s.problem_description.clone(),
                    new_time,
                    call_id,
                }
            }
        }
    }

    pub(super) fn enter_buffer(&mut self, trigger: String, now: f64, out: &mut Vec<Effect>) {
        let deadline = now + self.config.buffer_debounce_s;
        self.buffer = Some(Buffer {
            trigger,
            fragments: Vec::new(),
            start: now,
            deadline,
        });
        out.push(Effect::StartTimer {
            timer: Timer::Debounce,
            at: deadline,
        });
    }

    pub(super) fn start_extraction(&mut self, out: &mut Vec<Effect>) {
        let h = &self.session.conversation_history;
        let from = h.len().saturating_sub(10);
        out.push(Effect::StartExtraction {
            history: h[from..].to_vec(),
        });
    }
}
