//! What a journal event says, typed: the vocabulary the writers use (chat,
//! replays and voice calls alike) and every reader (the dashboard's call
//! page, recovery's rebuild) reads back — one set of serde types, no
//! string-keyed reads of stored event data.
//!
//! An event is stored as its kind (`caller`, `agent`, `interrupted`, …)
//! and its data (JSON); [`Entry`] is both at once. The two kinds with
//! types of their own elsewhere are not here: `session` (an
//! [`agent::Session`] without its transcript) and `latency`
//! ([`crate::call::latency::TurnLatency`]).

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// One journal event: its kind (the tag) and its data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "data", rename_all = "snake_case")]
pub enum Entry {
    /// What the caller said (one utterance, as recognised).
    Caller(Line),
    /// A message added to the LLM context (the caller's words as the LLM
    /// is sent them, joined after a wait; a note): not a transcript line.
    Llm(LlmLine),
    /// An agent line said: it joins the LLM context here, and becomes a
    /// transcript line where it is captured (`agent`, same `msg_id`).
    Said(Line),
    /// An agent line written into the transcript (its whole text, as
    /// said; an `interrupted` event with the same `msg_id` says how much of
    /// it was heard).
    Agent(Line),
    /// An agent line cut short: what the caller heard of it.
    Interrupted(Interrupted),
    /// An agent line started playing (voice calls).
    SpeechStarted(Speech),
    /// An agent line played to its end (voice calls).
    SpeechFinished(Speech),
    /// A tool was called.
    ToolCall(ToolCall),
    /// A tool answered.
    ToolResult(ToolResult),
    /// The conversation moved to another state.
    State(StateChange),
    /// Something the pipeline noted (`kind`: `state`, `vendor`, …).
    Note(Note),
    /// The call ended: who ended it.
    Ended(Ended),
}

/// A caller or agent line.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Line {
    pub text: String,
    /// The state it was said in.
    pub state: String,
    /// The agent line's id on a voice call (pairs it with `interrupted`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub msg_id: Option<u64>,
    /// Where an agent line came from on a voice call (`Llm`, `Canned`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The canned line's id (`greeting`, `filler:…`), if it was one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub canned: Option<String>,
}

/// An agent line cut short.
/// A message to the LLM: `role` is `user`, `system`, `assistant` or
/// `tool`; `reply`: a reply was asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LlmLine {
    pub role: String,
    pub text: String,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub reply: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Interrupted {
    pub msg_id: u64,
    /// What the caller heard of it.
    pub heard: String,
}

/// An agent line's playback.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Speech {
    pub msg_id: u64,
}

/// A tool call.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ToolCall {
    pub tool: String,
    pub args: Value,
}

/// A tool's answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ToolResult {
    pub tool: String,
    pub result: Value,
    pub state: String,
    /// How the call went on a voice call (`Done`, `Failed`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
}

/// A state change.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct StateChange {
    pub from: String,
    pub to: String,
}

/// A note from the pipeline.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Note {
    pub kind: String,
    pub text: String,
}

impl Note {
    /// A voice call's state change (`kind` `state`, `text` `from -> to`).
    pub fn state_change(&self) -> Option<(&str, &str)> {
        (self.kind == "state")
            .then(|| self.text.split_once(" -> "))
            .flatten()
    }
}

/// The end of a call.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Ended {
    /// `agent`, `caller`, `time_limit`, `interrupted`, or a voice call's
    /// reason.
    pub by: String,
}

impl Entry {
    /// Read a stored event: none for a kind this vocabulary does not have
    /// (`session`, `latency`, a later build's) or data of the wrong shape.
    pub fn read(kind: &str, data: &Value) -> Option<Entry> {
        Entry::deserialize(json!({"kind": kind, "data": data})).ok()
    }

    /// The event as stored: its kind and its data.
    pub fn into_stored(self) -> (&'static str, Value) {
        let kind = self.kind();
        let data = match serde_json::to_value(self) {
            Ok(Value::Object(mut o)) => o.remove("data").unwrap_or(Value::Null),
            _ => Value::Null,
        };
        (kind, data)
    }

    /// The kind it is stored under.
    pub fn kind(&self) -> &'static str {
        match self {
            Entry::Caller(_) => "caller",
            Entry::Llm(_) => "llm",
            Entry::Said(_) => "said",
            Entry::Agent(_) => "agent",
            Entry::Interrupted(_) => "interrupted",
            Entry::SpeechStarted(_) => "speech_started",
            Entry::SpeechFinished(_) => "speech_finished",
            Entry::ToolCall(_) => "tool_call",
            Entry::ToolResult(_) => "tool_result",
            Entry::State(_) => "state",
            Entry::Note(_) => "note",
            Entry::Ended(_) => "ended",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_reads_back_as_written_under_its_kind() {
        let entries = [
            Entry::Caller(Line {
                text: "my AC".into(),
                state: "welcome".into(),
                ..Line::default()
            }),
            Entry::Llm(LlmLine {
                role: "user".into(),
                text: "my AC".into(),
                reply: true,
            }),
            Entry::Said(Line {
                text: "Thanks".into(),
                state: "welcome".into(),
                msg_id: Some(3),
                source: Some("Llm".into()),
                canned: None,
            }),
            Entry::Agent(Line {
                text: "Thanks".into(),
                state: "welcome".into(),
                msg_id: Some(3),
                source: Some("Llm".into()),
                canned: Some("greeting".into()),
            }),
            Entry::Interrupted(Interrupted {
                msg_id: 3,
                heard: "Thanks".into(),
            }),
            Entry::SpeechStarted(Speech { msg_id: 3 }),
            Entry::SpeechFinished(Speech { msg_id: 3 }),
            Entry::ToolCall(ToolCall {
                tool: "book_service".into(),
                args: json!({"time": "10am"}),
            }),
            Entry::ToolResult(ToolResult {
                tool: "book_service".into(),
                result: json!({"booked": true}),
                state: "booking".into(),
                outcome: Some("Done".into()),
            }),
            Entry::State(StateChange {
                from: "welcome".into(),
                to: "safety".into(),
            }),
            Entry::Note(Note {
                kind: "state".into(),
                text: "welcome -> safety".into(),
            }),
            Entry::Ended(Ended {
                by: "caller".into(),
            }),
        ];
        for e in entries {
            let (kind, data) = e.clone().into_stored();
            assert_eq!(kind, e.kind());
            assert_eq!(Entry::read(kind, &data), Some(e));
        }
    }

    #[test]
    fn the_stored_shape_is_the_journals() {
        let (kind, data) = Entry::Caller(Line {
            text: "hi".into(),
            state: "welcome".into(),
            ..Line::default()
        })
        .into_stored();
        assert_eq!(
            (kind, data),
            ("caller", json!({"text": "hi", "state": "welcome"}))
        );
        let (_, data) = Entry::Interrupted(Interrupted {
            msg_id: 2,
            heard: "Quick".into(),
        })
        .into_stored();
        assert_eq!(data, json!({"msg_id": 2, "heard": "Quick"}));
    }

    #[test]
    fn unknown_kinds_and_wrong_shapes_read_as_none() {
        assert_eq!(Entry::read("latency", &json!({})), None);
        assert_eq!(Entry::read("interrupted", &json!({"msg_id": "two"})), None);
        assert_eq!(Entry::read("caller", &json!("text")), None);
        // Missing fields read empty: an older build's event.
        assert_eq!(
            Entry::read("caller", &json!({"text": "hi"})),
            Some(Entry::Caller(Line {
                text: "hi".into(),
                ..Line::default()
            }))
        );
    }

    #[test]
    fn a_voice_calls_state_note_is_a_state_change() {
        let n = Note {
            kind: "state".into(),
            text: "safety -> discovery".into(),
        };
        assert_eq!(n.state_change(), Some(("safety", "discovery")));
        let vendor = Note {
            kind: "vendor".into(),
            text: "a -> b".into(),
        };
        assert_eq!(vendor.state_change(), None);
    }
}
