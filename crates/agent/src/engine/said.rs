//! What was said: every fact goes into the call's log once, and the LLM
//! context and the transcript are read off it — canned lines (D-16), the
//! caller's words, LLM replies and their capture into the transcript
//! (SPEC §5.3), tool calls and results, and interruptions by line id.

use super::transcript::{at, transcript_of, transcript_since};
use super::*;
use history::{AgentSource, Event, Speaker, ToolOutcome};

/// The LLM context of a call: the system prompt, then the log's
/// projection (an interrupted line as far as it was heard).
pub fn llm_context_of(system: &str, log: &EventLog) -> Vec<ChatMessage> {
    let mut out = Vec::with_capacity(log.len() + 1);
    out.push(ChatMessage {
        role: ChatRole::System,
        content: system.to_string(),
    });
    out.extend(log.llm_messages().into_iter().map(|m| ChatMessage {
        role: match m.role {
            history::Role::System => ChatRole::System,
            history::Role::User => ChatRole::User,
            history::Role::Assistant => ChatRole::Assistant,
            history::Role::Tool => ChatRole::Tool,
        },
        content: m.content,
    }));
    out
}

fn log_role(role: ChatRole) -> history::Role {
    match role {
        ChatRole::System => history::Role::System,
        ChatRole::User => history::Role::User,
        ChatRole::Assistant => history::Role::Assistant,
        ChatRole::Tool => history::Role::Tool,
    }
}

impl<P: Policy> Engine<P> {
    /// Append `event` to the call's log at `now`, in the call's state.
    /// Once the call finished, the session's transcript is written (the
    /// log's projection), so it is read again when the event changes it.
    pub(super) fn record(&mut self, now: f64, event: Event) {
        let edits = matches!(event, Event::Interrupted { .. });
        let writes = matches!(
            event,
            Event::CallerSaid { .. } | Event::Captured { .. } | Event::ToolFinished { .. }
        );
        let n = self.log.len();
        self.log.set_phase(self.session.state.as_str());
        self.log.append(at(now), event);
        if !self.finished {
            // Not written while the call runs: see `Engine::session`.
            return;
        }
        if edits {
            // A line already written changes: read the transcript again.
            self.session.transcript_log = transcript_of(&self.log);
        } else if writes {
            // What this entry writes down follows what is there.
            let lines = transcript_since(&self.log, n);
            self.session.transcript_log.extend(lines);
        }
    }

    pub(super) fn speak(&mut self, canned: Canned, now: f64, out: &mut Vec<Effect>) {
        let text = canned.text(&self.profile);
        self.speak_text(canned, text, now, out);
    }

    /// Queue a canned line: D-16 writes it into the transcript now; it also
    /// joins the LLM context (so the LLM knows what was said) without
    /// counting as an agent reply for turn counting.
    pub(super) fn speak_text(
        &mut self,
        canned: Canned,
        text: String,
        now: f64,
        out: &mut Vec<Effect>,
    ) {
        self.idle_at = None;
        self.filler_at = None;
        self.capture(now);
        let msg_id = self.log.next_msg_id();
        self.record(
            now,
            Event::AgentSaid {
                msg_id,
                text: text.clone(),
                source: AgentSource::Canned { id: canned.id() },
            },
        );
        self.record(now, Event::Captured { msg_id });
        self.capture_from = self.log.len();
        out.push(Effect::Speak {
            canned,
            text,
            msg_id,
        });
    }

    pub(super) fn forward_to_llm(&mut self, text: String, now: f64, out: &mut Vec<Effect>) {
        self.idle_at = None;
        self.record(now, Event::LlmAsked { text: text.clone() });
        let reply = self.log.next_msg_id();
        out.push(Effect::ToLlm { text, reply });
    }

    /// The LLM's reply: said, and captured at once.
    pub(super) fn llm_replied(&mut self, msg_id: MsgId, text: String, now: f64) {
        self.filler_at = None;
        self.record(
            now,
            Event::AgentSaid {
                msg_id,
                text,
                source: AgentSource::Llm,
            },
        );
        self.capture(now);
    }

    /// A message from outside joins the context; an assistant message is
    /// an agent line, captured later.
    pub(super) fn context_message(&mut self, m: ChatMessage, now: f64) {
        let event = if m.role == ChatRole::Assistant {
            Event::AgentSaid {
                msg_id: self.log.next_msg_id(),
                text: m.content,
                source: AgentSource::Llm,
            }
        } else {
            Event::Context {
                role: log_role(m.role),
                text: m.content,
            }
        };
        self.record(now, event);
    }

    pub(super) fn refresh_system_prompt(&mut self) {
        self.system = SystemPrompt::AfterPersona(after_persona(
            self.session.state,
            &self.session,
            &self.profile,
        ));
    }

    /// The state moved from `before`: recorded, and reported.
    pub(super) fn note_state(&mut self, before: State, now: f64, out: &mut Vec<Effect>) {
        let after = self.session.state;
        if after != before {
            self.record(
                now,
                Event::PhaseChanged {
                    from: before.as_str(),
                    to: after.as_str(),
                },
            );
            out.push(Effect::StateChanged {
                from: before,
                to: after,
            });
        }
    }

    /// The caller heard `heard` of the line `msg_id`: the transcript and
    /// the context keep only that. A line cut off before a word was heard
    /// is no line, and no exchange (SPEC §3 counts a fragment as a new turn
    /// only after an agent reply the caller got).
    pub(super) fn agent_interrupted(&mut self, msg_id: MsgId, heard: &str, now: f64) {
        let was_line = heard.trim().is_empty() && self.log.has_line(msg_id);
        self.record(
            now,
            Event::Interrupted {
                msg_id,
                heard_text: heard.to_string(),
            },
        );
        if was_line {
            self.session.agent_has_responded = self
                .log
                .transcript()
                .iter()
                .rev()
                .take_while(|l| l.speaker != Speaker::Caller)
                .any(|l| l.speaker == Speaker::Agent);
        }
    }

    /// SPEC §5.3: LLM replies said since the last capture are written into
    /// the transcript now (in the state of now).
    pub(super) fn capture(&mut self, now: f64) {
        let replies: Vec<MsgId> = self.log.events()[self.capture_from.min(self.log.len())..]
            .iter()
            .filter_map(|e| match &e.event {
                Event::AgentSaid {
                    msg_id,
                    text,
                    source: AgentSource::Llm,
                } if !text.trim().is_empty() => Some(*msg_id),
                _ => None,
            })
            .collect();
        for msg_id in replies {
            self.record(now, Event::Captured { msg_id });
            self.session.agent_has_responded = true;
        }
        self.capture_from = self.log.len();
    }

    /// The call's pipeline stopped: capture what is left; a tool still
    /// running will not answer.
    pub(super) fn call_finished(&mut self, now: f64) {
        self.capture(now);
        if let Some(call_id) = self.open_tool.take() {
            self.record(
                now,
                Event::ToolFinished {
                    call_id,
                    result: String::new(),
                    outcome: ToolOutcome::Cancelled,
                },
            );
        }
        if !self.finished {
            self.finished = true;
            self.session.transcript_log = transcript_of(&self.log);
        }
    }

    /// The model asked for a tool: recorded, refused.
    pub(super) fn tool_refused(&mut self, name: String, args: String, now: f64) {
        // A refused call writes no transcript line: no projection to update.
        self.log.set_phase(self.session.state.as_str());
        let result = "refused: tools are chosen by the state machine".to_string();
        self.log
            .append_tool(at(now), name, args, result, ToolOutcome::Refused);
    }
}
