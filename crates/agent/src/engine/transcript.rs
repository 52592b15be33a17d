//! The session's transcript as a projection of the call's log, and back:
//! the one place that says how a log entry becomes a transcript line.

use super::*;
use history::{AgentSource, Event, Speaker};
use std::time::Duration;

/// The engine's time (Unix seconds) on the log's clock (a duration since
/// the epoch); a time before it, or no time at all, is the epoch.
pub(super) fn at(now: f64) -> Duration {
    Duration::try_from_secs_f64(now).unwrap_or(Duration::ZERO)
}

/// The session's transcript (`Session::transcript_log`) of a call's log:
/// [`EventLog::transcript`] in the session's words — a caller line per
/// utterance, an agent line where it was captured (as far as it was
/// heard; none for a line cut off before its first word), a tool line per
/// answer — each with its time (Unix seconds) and state.
pub fn transcript_of(log: &EventLog) -> Vec<TranscriptEntry> {
    transcript_since(log, 0)
}

/// The session's `conversation_history` of a call's log: every caller
/// utterance, in order, as the engine keeps it (a user message each).
pub fn caller_lines(log: &EventLog) -> Vec<HistoryMessage> {
    log.events()
        .iter()
        .filter_map(|e| match &e.event {
            Event::CallerSaid { text } => Some(HistoryMessage {
                role: "user".into(),
                content: text.clone(),
            }),
            _ => None,
        })
        .collect()
}

/// The lines of [`transcript_of`] the log's entries from `start` on
/// write down.
pub fn transcript_since(log: &EventLog, start: usize) -> Vec<TranscriptEntry> {
    log.transcript_since(start)
        .into_iter()
        .map(|l| {
            let (role, content, name, result) = match l.speaker {
                Speaker::Caller => (Role::User, Some(l.text), None, None),
                Speaker::Agent => (Role::Agent, Some(l.text), None, None),
                Speaker::Tool => {
                    let result = serde_json::from_str(&l.text).unwrap_or(Value::String(l.text));
                    (Role::Tool, None, l.tool, Some(result))
                }
            };
            TranscriptEntry {
                role,
                content,
                name,
                result,
                timestamp: Some(l.at.as_secs_f64()),
                state: (!l.phase.is_empty()).then(|| l.phase.to_string()),
                interrupted: l.interrupted,
            }
        })
        .collect()
}

/// A log that holds `transcript` (a session carried over, or a record
/// read back): [`transcript_of`] gives it back.
pub fn log_of_transcript(transcript: &[TranscriptEntry]) -> EventLog {
    let mut log = EventLog::new();
    for e in transcript {
        log.set_phase(
            e.state
                .as_deref()
                .and_then(|s| s.parse::<State>().ok())
                .map_or("", State::as_str),
        );
        let when = at(e.timestamp.unwrap_or(0.0));
        let text = e.content.clone().unwrap_or_default();
        match e.role {
            // A line of a role this engine does not write is read as the
            // caller's.
            Role::User | Role::Other => {
                log.append(when, Event::CallerSaid { text });
            }
            Role::Agent => {
                let msg_id = log.next_msg_id();
                log.append(
                    when,
                    Event::AgentSaid {
                        msg_id,
                        text: text.clone(),
                        source: AgentSource::Llm,
                    },
                );
                log.append(when, Event::Captured { msg_id });
                if e.interrupted {
                    log.append(
                        when,
                        Event::Interrupted {
                            msg_id,
                            heard_text: text,
                        },
                    );
                }
            }
            Role::Tool => {
                let name = e.name.clone().unwrap_or_default();
                let result = e.result.as_ref().map(Value::to_string).unwrap_or_default();
                let ok = history::ToolOutcome::Ok;
                log.append_tool(when, name, String::new(), result, ok);
            }
        }
    }
    log
}
