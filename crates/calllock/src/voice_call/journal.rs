//! The voice call's events written to the call's durable journal.

use serde_json::Value;
use std::collections::HashMap;
use voice::history::Event;

/// The voice call's events in the journal's vocabulary (see
/// [`crate::journal`]): caller/agent lines, interruptions with what was
/// heard, tool calls and results, state changes, the end, the session
/// when it changed, and where each answered turn's time went.
pub(super) struct VoiceJournal {
    journal: crate::journal::Journal,
    tools: HashMap<u64, String>,
    snapshots: crate::journal::SessionSnapshots,
}

impl VoiceJournal {
    pub(super) fn new(journal: crate::journal::Journal) -> Self {
        VoiceJournal {
            journal,
            tools: HashMap::new(),
            snapshots: Default::default(),
        }
    }

    pub(super) fn record(&mut self, at: f64, state: agent::State, e: &Event) {
        let st = state.as_str();
        let (kind, data) = match e {
            Event::CallerSaid { text } | Event::CallerContext { text } => {
                ("caller", serde_json::json!({"text": text, "state": st}))
            }
            Event::AgentSaid {
                msg_id,
                text,
                source,
            } => (
                "agent",
                serde_json::json!({"text": text, "state": st, "msg_id": msg_id.0, "source": format!("{source:?}")}),
            ),
            Event::SpeechStarted { msg_id } => {
                ("speech_started", serde_json::json!({"msg_id": msg_id.0}))
            }
            Event::SpeechFinished { msg_id } => {
                ("speech_finished", serde_json::json!({"msg_id": msg_id.0}))
            }
            Event::Interrupted { msg_id, heard_text } => (
                "interrupted",
                serde_json::json!({"msg_id": msg_id.0, "heard": heard_text}),
            ),
            Event::ToolCalled {
                call_id,
                name,
                args,
            } => {
                self.tools.insert(call_id.0, name.clone());
                let args: Value = serde_json::from_str(args).unwrap_or(Value::Null);
                ("tool_call", serde_json::json!({"tool": name, "args": args}))
            }
            Event::ToolFinished {
                call_id,
                result,
                outcome,
            } => {
                let result: Value =
                    serde_json::from_str(result).unwrap_or_else(|_| Value::String(result.clone()));
                let tool = self.tools.get(&call_id.0).cloned().unwrap_or_default();
                (
                    "tool_result",
                    serde_json::json!({"tool": tool, "result": result, "state": st, "outcome": format!("{outcome:?}")}),
                )
            }
            Event::Note { kind, text } => ("note", serde_json::json!({"kind": kind, "text": text})),
            Event::CallEnded { reason } => ("ended", serde_json::json!({"by": reason})),
        };
        self.journal.record(at, kind, data);
    }

    /// One measured turn, written at `at` (a `latency` event).
    pub(super) fn latency(&self, at: f64, t: &crate::latency::TurnLatency) {
        let data = serde_json::to_value(t).unwrap_or(Value::Null);
        self.journal.record(at, "latency", data);
    }

    pub(super) fn session(&mut self, at: f64, session: &agent::Session) {
        self.snapshots.record(&self.journal, at, session);
    }
}
