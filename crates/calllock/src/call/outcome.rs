//! How a call ended and what it left behind: the input of post-call
//! processing, whichever way the call ran (served, typed, replayed or
//! rebuilt after a crash).

use agent::backend::ToolCall;
use agent::session::Session;
use serde_json::Value;

/// Who ended the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EndedBy {
    Agent,
    Caller,
    /// The driver stopped a call that ran past its time limit.
    TimeLimit,
    /// The process stopped mid-call (crash, kill); the call was rebuilt
    /// from its event log at the next start.
    Interrupted,
}

impl EndedBy {
    /// As stored (the record's `ended_by`, the journal's `ended`).
    pub fn as_str(self) -> &'static str {
        match self {
            EndedBy::Agent => "agent",
            EndedBy::Caller => "caller",
            EndedBy::TimeLimit => "time_limit",
            EndedBy::Interrupted => "interrupted",
        }
    }

    /// Read back as stored; anything else was cut off.
    pub fn from_stored(s: &str) -> EndedBy {
        match s {
            "agent" => EndedBy::Agent,
            "caller" => EndedBy::Caller,
            "time_limit" => EndedBy::TimeLimit,
            _ => EndedBy::Interrupted,
        }
    }
}

/// A tool call and what it answered.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolLog {
    pub t: f64,
    pub call: ToolCall,
    pub result: Value,
}

/// The end of a driven call.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub session: Session,
    pub ended_by: EndedBy,
    /// Unix seconds.
    pub start_time: f64,
    pub end_time: f64,
    pub tools: Vec<ToolLog>,
}
