//! The journal is the call's log, written down: one journal event per log
//! entry ([`row`]), written as the log grows (`LogWriter` beside
//! `Journal`), and read
//! back into a log ([`log_of_rows`]) — so a call rebuilt after a crash
//! gets its transcript from the same projection as a live one.

use super::entry::{
    Ended, Entry, Interrupted, Line, LlmLine, Note, Speech, StateChange, ToolCall, ToolResult,
};
use agent::State;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::time::Duration;
use voice::history::{self, AgentSource, Event, EventLog, MsgId, Role, ToolCallId, ToolOutcome};

/// The journal event of `entry`, a log entry of `log` (an agent line's
/// capture and a tool's answer look back in the log for the line's text
/// and the tool's name).
pub fn row(log: &EventLog, entry: &history::Entry) -> Entry {
    let state = entry.phase.to_string();
    let line = |msg_id: MsgId, text: &str, source: &AgentSource| Line {
        text: text.to_string(),
        state: state.clone(),
        msg_id: Some(msg_id.0),
        source: Some(match source {
            AgentSource::Llm => "Llm".into(),
            AgentSource::Canned { .. } => "Canned".into(),
        }),
        canned: match source {
            AgentSource::Llm => None,
            AgentSource::Canned { id } => Some(id.clone()),
        },
    };
    let earlier = || log.events()[..(entry.seq as usize).min(log.len())].iter();
    match &entry.event {
        Event::CallerSaid { text } => Entry::Caller(Line {
            text: text.clone(),
            state,
            ..Line::default()
        }),
        Event::LlmAsked { text } => Entry::Llm(LlmLine {
            role: role_name(Role::User).into(),
            text: text.clone(),
            reply: true,
        }),
        Event::Context { role, text } => Entry::Llm(LlmLine {
            role: role_name(*role).into(),
            text: text.clone(),
            reply: false,
        }),
        Event::AgentSaid {
            msg_id,
            text,
            source,
        } => Entry::Said(line(*msg_id, text, source)),
        Event::Captured { msg_id } => {
            let said = earlier().find_map(|e| match &e.event {
                Event::AgentSaid {
                    msg_id: id,
                    text,
                    source,
                } if id == msg_id => Some((text.as_str(), source)),
                _ => None,
            });
            let (text, source) = said.unwrap_or(("", &AgentSource::Llm));
            Entry::Agent(line(*msg_id, text, source))
        }
        Event::SpeechStarted { msg_id } => Entry::SpeechStarted(Speech { msg_id: msg_id.0 }),
        Event::SpeechFinished { msg_id } => Entry::SpeechFinished(Speech { msg_id: msg_id.0 }),
        Event::Interrupted { msg_id, heard_text } => Entry::Interrupted(Interrupted {
            msg_id: msg_id.0,
            heard: heard_text.clone(),
        }),
        Event::ToolCalled { name, args, .. } => Entry::ToolCall(ToolCall {
            tool: name.clone(),
            args: serde_json::from_str(args).unwrap_or(Value::Null),
        }),
        Event::ToolFinished {
            call_id,
            result,
            outcome,
        } => Entry::ToolResult(ToolResult {
            tool: earlier()
                .find_map(|e| match &e.event {
                    Event::ToolCalled {
                        call_id: id, name, ..
                    } if id == call_id => Some(name.clone()),
                    _ => None,
                })
                .unwrap_or_default(),
            result: serde_json::from_str(result).unwrap_or_else(|_| Value::String(result.clone())),
            state,
            outcome: Some(format!("{outcome:?}")),
        }),
        Event::PhaseChanged { from, to } => Entry::State(StateChange {
            from: from.to_string(),
            to: to.to_string(),
        }),
        Event::Note { kind, text } => Entry::Note(Note {
            kind: kind.clone(),
            text: text.clone(),
        }),
        Event::CallEnded { reason } => Entry::Ended(Ended { by: reason.clone() }),
    }
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

/// Append a call of the tool `name` to `log`; its id.
fn called(log: &mut EventLog, at: Duration, name: &str, args: String) -> ToolCallId {
    let call_id = log.next_tool_call_id();
    let name = name.to_string();
    log.append(
        at,
        Event::ToolCalled {
            call_id,
            name,
            args,
        },
    );
    call_id
}

/// The log a journal's events hold (`(at_unix, entry)` in order; other
/// kinds left out): the inverse of [`row`]. Journals written before the
/// log was journaled whole (no `said` events) read as well: an agent line
/// with no `said` before it was said where it was captured.
pub fn log_of_rows<'a>(rows: impl IntoIterator<Item = (f64, &'a Entry)>) -> EventLog {
    let mut log = EventLog::new();
    let mut said: HashSet<u64> = HashSet::new();
    let mut tools: HashMap<String, Vec<ToolCallId>> = HashMap::new();
    let phase = |s: &str| s.parse::<State>().ok().map(State::as_str);
    let set_phase = |log: &mut EventLog, s: &str| {
        if let Some(p) = phase(s) {
            log.set_phase(p);
        }
    };
    for (at_unix, entry) in rows {
        let at = Duration::try_from_secs_f64(at_unix).unwrap_or(Duration::ZERO);
        match entry {
            Entry::Caller(l) => {
                set_phase(&mut log, &l.state);
                log.append(
                    at,
                    Event::CallerSaid {
                        text: l.text.clone(),
                    },
                );
            }
            Entry::Llm(l) => {
                let role = match l.role.as_str() {
                    "system" => Role::System,
                    "assistant" => Role::Assistant,
                    "tool" => Role::Tool,
                    _ => Role::User,
                };
                let text = l.text.clone();
                log.append(
                    at,
                    if l.reply && role == Role::User {
                        Event::LlmAsked { text }
                    } else {
                        Event::Context { role, text }
                    },
                );
            }
            Entry::Said(l) | Entry::Agent(l) => {
                set_phase(&mut log, &l.state);
                let msg_id = l.msg_id.map_or_else(|| log.next_msg_id(), MsgId);
                // Said once: at its `said` event, or (older journals) where
                // it was captured.
                if said.insert(msg_id.0) {
                    let source = match &l.canned {
                        Some(id) => AgentSource::Canned { id: id.clone() },
                        None => AgentSource::Llm,
                    };
                    let text = l.text.clone();
                    log.append(
                        at,
                        Event::AgentSaid {
                            msg_id,
                            text,
                            source,
                        },
                    );
                }
                if matches!(entry, Entry::Agent(_)) {
                    log.append(at, Event::Captured { msg_id });
                }
            }
            Entry::Interrupted(i) => {
                log.append(
                    at,
                    Event::Interrupted {
                        msg_id: MsgId(i.msg_id),
                        heard_text: i.heard.clone(),
                    },
                );
            }
            Entry::SpeechStarted(s) => {
                log.append(
                    at,
                    Event::SpeechStarted {
                        msg_id: MsgId(s.msg_id),
                    },
                );
            }
            Entry::SpeechFinished(s) => {
                log.append(
                    at,
                    Event::SpeechFinished {
                        msg_id: MsgId(s.msg_id),
                    },
                );
            }
            Entry::ToolCall(t) => {
                let call_id = called(&mut log, at, &t.tool, t.args.to_string());
                tools.entry(t.tool.clone()).or_default().push(call_id);
            }
            Entry::ToolResult(t) => {
                set_phase(&mut log, &t.state);
                let open = tools.get_mut(&t.tool).and_then(|ids| ids.pop());
                let call_id = match open {
                    Some(id) => id,
                    None => called(&mut log, at, &t.tool, String::new()),
                };
                let outcome = match t.outcome.as_deref() {
                    Some("Failed") => ToolOutcome::Failed,
                    Some("Cancelled") => ToolOutcome::Cancelled,
                    Some("Refused") => ToolOutcome::Refused,
                    _ => ToolOutcome::Ok,
                };
                // What `row` read as JSON goes back as JSON text; a result
                // that was not JSON goes back as it was.
                let result = match &t.result {
                    Value::String(s) if serde_json::from_str::<Value>(s).is_err() => s.clone(),
                    v => v.to_string(),
                };
                log.append(
                    at,
                    Event::ToolFinished {
                        call_id,
                        result,
                        outcome,
                    },
                );
            }
            Entry::State(c) => {
                if let (Some(from), Some(to)) = (phase(&c.from), phase(&c.to)) {
                    log.set_phase(to);
                    log.append(at, Event::PhaseChanged { from, to });
                }
            }
            Entry::Note(n) => {
                let (kind, text) = (n.kind.clone(), n.text.clone());
                log.append(at, Event::Note { kind, text });
            }
            Entry::Ended(e) => {
                log.append(
                    at,
                    Event::CallEnded {
                        reason: e.by.clone(),
                    },
                );
            }
        }
    }
    log
}
