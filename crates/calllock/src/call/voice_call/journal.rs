//! The voice call's events written to the call's durable journal.

use crate::call::journal::entry::{
    Ended, Entry, Interrupted, Line, Note, Speech, ToolCall, ToolResult,
};
use serde_json::Value;
use std::collections::HashMap;
use voice::history::Event;

/// The voice call's events in the journal's vocabulary (see
/// [`crate::call::journal`]): caller/agent lines, interruptions with what was
/// heard, tool calls and results, state changes, the end, the session
/// when it changed, and where each answered turn's time went.
pub(super) struct VoiceJournal {
    journal: crate::call::journal::Journal,
    tools: HashMap<u64, String>,
    snapshots: crate::call::journal::SessionSnapshots,
}

impl VoiceJournal {
    pub(super) fn new(journal: crate::call::journal::Journal) -> Self {
        VoiceJournal {
            journal,
            tools: HashMap::new(),
            snapshots: Default::default(),
        }
    }

    pub(super) fn record(&mut self, at: f64, state: agent::State, e: &Event) {
        let st = state.as_str().to_string();
        let entry = match e {
            Event::CallerSaid { text } | Event::CallerContext { text } => Entry::Caller(Line {
                text: text.clone(),
                state: st,
                ..Line::default()
            }),
            Event::AgentSaid {
                msg_id,
                text,
                source,
            } => Entry::Agent(Line {
                text: text.clone(),
                state: st,
                msg_id: Some(msg_id.0),
                source: Some(format!("{source:?}")),
                canned: None,
            }),
            Event::SpeechStarted { msg_id } => Entry::SpeechStarted(Speech { msg_id: msg_id.0 }),
            Event::SpeechFinished { msg_id } => Entry::SpeechFinished(Speech { msg_id: msg_id.0 }),
            Event::Interrupted { msg_id, heard_text } => Entry::Interrupted(Interrupted {
                msg_id: msg_id.0,
                heard: heard_text.clone(),
            }),
            Event::ToolCalled {
                call_id,
                name,
                args,
            } => {
                self.tools.insert(call_id.0, name.clone());
                Entry::ToolCall(ToolCall {
                    tool: name.clone(),
                    args: serde_json::from_str(args).unwrap_or(Value::Null),
                })
            }
            Event::ToolFinished {
                call_id,
                result,
                outcome,
            } => Entry::ToolResult(ToolResult {
                tool: self.tools.get(&call_id.0).cloned().unwrap_or_default(),
                result: serde_json::from_str(result)
                    .unwrap_or_else(|_| Value::String(result.clone())),
                state: st,
                outcome: Some(format!("{outcome:?}")),
            }),
            Event::Note { kind, text } => Entry::Note(Note {
                kind: kind.clone(),
                text: text.clone(),
            }),
            Event::CallEnded { reason } => Entry::Ended(Ended { by: reason.clone() }),
        };
        let (kind, data) = entry.into_stored();
        self.journal.record(at, kind, data);
    }

    /// One measured turn, written at `at` (a `latency` event).
    pub(super) fn latency(&self, at: f64, t: &crate::call::latency::TurnLatency) {
        let data = serde_json::to_value(t).unwrap_or(Value::Null);
        self.journal.record(at, "latency", data);
    }

    pub(super) fn session(&mut self, at: f64, session: &agent::Session) {
        self.snapshots.record(&self.journal, at, session);
    }
}
