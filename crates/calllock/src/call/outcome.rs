//! How a call ended and what it left behind: the input of post-call
//! processing, whichever way the call ran (served, typed, replayed or
//! rebuilt after a crash).

use agent::backend::ToolCall;
use agent::session::Session;
use serde_json::Value;
use voice::history::EventLog;

/// How a call ended: the one answer, whichever way the call ran (served,
/// typed, replayed, or rebuilt after a crash).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The caller hung up, or their line dropped.
    Caller,
    /// The agent hung up after its last line.
    Agent,
    /// The server ended the call: it is shutting down (`politely`: the
    /// caller heard why and a callback was promised first).
    Shutdown { politely: bool },
    /// The caller could no longer be heard (speech recognition lost): the
    /// agent ended the call with a callback.
    SpeechLost,
    /// The driver stopped a call that ran past its time limit.
    TimeLimit,
    /// The process stopped mid-call (crash, kill); the call was rebuilt
    /// from its event log at the next start.
    Interrupted,
    /// The phone line broke the protocol (a message over the size limit):
    /// the server closed the stream with the matching close code. Nobody
    /// told the caller anything, so an unsettled call is owed a callback,
    /// as after a crash.
    LineError,
}

impl Ending {
    /// Who ended it, as stored (the record's `ended_by`, the journal's
    /// `ended`, the replay report): the server's own endings are the
    /// agent's.
    pub fn as_str(self) -> &'static str {
        match self {
            Ending::Agent | Ending::Shutdown { .. } | Ending::SpeechLost => "agent",
            Ending::Caller => "caller",
            Ending::TimeLimit => "time_limit",
            Ending::Interrupted => "interrupted",
            Ending::LineError => "line_error",
        }
    }

    /// Read back as stored; anything else was cut off.
    pub fn from_stored(s: &str) -> Ending {
        match s {
            "agent" => Ending::Agent,
            "caller" => Ending::Caller,
            "time_limit" => Ending::TimeLimit,
            "line_error" => Ending::LineError,
            _ => Ending::Interrupted,
        }
    }

    /// The `ended_by` label of `calllock_calls_total` (finer than the
    /// stored value: the server's endings are told apart).
    pub fn metric_label(self) -> &'static str {
        match self {
            Ending::Shutdown { .. } => "shutdown",
            Ending::SpeechLost => "speech_lost",
            other => other.as_str(),
        }
    }

    /// Whether our side ended the call (so it hangs up the line).
    pub fn by_agent(self) -> bool {
        matches!(
            self,
            Ending::Agent | Ending::Shutdown { .. } | Ending::SpeechLost
        )
    }
}

impl serde::Serialize for Ending {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
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
    /// The session; its transcript is the projection of `log`.
    pub session: Session,
    /// Everything said on the call (the engine's log; post-call work adds
    /// to it, then the transcript is read off it again).
    pub log: EventLog,
    pub ended_by: Ending,
    /// Unix seconds.
    pub start_time: f64,
    pub end_time: f64,
    pub tools: Vec<ToolLog>,
}

impl Outcome {
    /// The outcome of a call known only by its session (a stored record,
    /// a call turned away, a test): its log is the one that holds the
    /// session's transcript.
    pub fn of_session(session: Session, ended_by: Ending, start_time: f64, end_time: f64) -> Self {
        Outcome {
            log: agent::engine::log_of_transcript(&session.transcript_log),
            session,
            ended_by,
            start_time,
            end_time,
            tools: Vec::new(),
        }
    }
}
