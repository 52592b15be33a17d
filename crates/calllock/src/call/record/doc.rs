//! The stored post-call record, typed.
//!
//! [`super::classify`] builds a [`FinishedCall`]; it is stored as JSON (the
//! `record` column, and what the dashboard and the API hand out), and every
//! reader — `calls show`, the operator dashboard, `agenda` — reads it back
//! through these same types with [`FinishedCall::from_stored`]. So the
//! writer and its readers cannot drift apart on a key's name, and a record
//! stored by an older build (a field missing) reads with that field empty.
//!
//! Two parts stay free-form JSON on purpose: `job_payload` and
//! `call_payload` are the V2 backend's and the dashboard's wire formats
//! (built in `agent::postcall`), and `transcript_object` is SPEC §7.9's
//! array as the reference writes it.

use agent::session::Session;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The classified record of one finished call (SPEC §7.2–§7.9, D-15/D-16).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FinishedCall {
    pub call_id: String,
    pub phone: String,
    pub final_state: String,
    pub end_call_reason: String,
    pub booking_status: String,
    /// Who ended the call: `agent`, `caller`, `time_limit`, `interrupted`.
    pub ended_by: String,
    /// From the first to the last frame on the line, in seconds (0.1 s).
    pub duration_s: f64,
    /// Taxonomy category → tags (SPEC §7.6).
    pub tags: BTreeMap<String, Vec<String>>,
    pub priority: Priority,
    pub revenue: Revenue,
    /// The session as the call left it.
    pub session: Session,
    /// The V2 backend's job payload (wire format).
    pub job_payload: Value,
    /// The dashboard's call payload (wire format).
    pub call_payload: Value,
    /// Who said what, when and in which state.
    pub transcript: Vec<TimedLine>,
    pub transcript_text: String,
    /// SPEC §7.9's transcript array, as the reference writes it.
    pub transcript_object: Value,
    /// The LLM's post-call classification, when one was made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub classification: Option<Map<String, Value>>,
}

/// The call's priority colour and why (SPEC §7.7).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Priority {
    pub color: String,
    pub reason: String,
}

/// The revenue estimate (SPEC §7.8, D-15).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Revenue {
    pub tier: String,
    pub tier_label: String,
    pub signals: Vec<String>,
    pub confidence: String,
}

/// One transcript line of the record: SPEC §7.9's entry plus the state it
/// was said in and `t` (seconds from the start of the call).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TimedLine {
    /// `user`, `agent` or `tool`.
    pub role: String,
    /// What was said (user and agent lines).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// The tool (tool lines).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The tool's answer (tool lines).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    pub state: String,
    pub t: f64,
    /// An agent line the caller heard only part of: `content` is the part.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
}

/// The appointment a job payload carries, as the CLI shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct JobAppointment {
    pub appointment_time: Option<String>,
    /// `book` or `reschedule` (anything else: booked).
    pub appointment_action: Option<String>,
}

/// Why a stored record cannot be read.
#[derive(Debug)]
pub struct UnreadableRecord(serde_json::Error);

impl std::fmt::Display for UnreadableRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the stored record cannot be read: {}", self.0)
    }
}

impl std::error::Error for UnreadableRecord {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

impl FinishedCall {
    /// Read a record as stored (the `record` column). Fields an older build
    /// did not write read empty; a field of the wrong shape is an error.
    pub fn from_stored(record: &Value) -> Result<FinishedCall, UnreadableRecord> {
        FinishedCall::deserialize(record).map_err(UnreadableRecord)
    }

    /// The record as stored.
    pub fn to_stored(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// The appointment in the job payload, if any.
    pub fn job_appointment(&self) -> JobAppointment {
        JobAppointment::deserialize(&self.job_payload).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_record_reads_back_as_written() {
        let mut fc = FinishedCall {
            call_id: "CA1".into(),
            final_state: "confirm".into(),
            duration_s: 42.5,
            ..FinishedCall::default()
        };
        fc.tags.insert("HAZARD".into(), vec!["GAS_LEAK".into()]);
        fc.transcript.push(TimedLine {
            role: "agent".into(),
            content: Some("Thanks for calling".into()),
            state: "welcome".into(),
            t: 0.5,
            interrupted: true,
            ..TimedLine::default()
        });
        fc.classification = Some(Map::new());
        let stored = fc.to_stored();
        assert_eq!(stored["transcript"][0]["interrupted"], true);
        assert!(stored["transcript"][0].get("name").is_none());
        assert_eq!(FinishedCall::from_stored(&stored).unwrap(), fc);
    }

    #[test]
    fn an_older_record_reads_with_what_it_has() {
        let old =
            json!({"call_id": "CA2", "final_state": "callback", "priority": {"color": "red"}});
        let fc = FinishedCall::from_stored(&old).unwrap();
        assert_eq!(
            (fc.call_id.as_str(), fc.priority.color.as_str()),
            ("CA2", "red")
        );
        assert!(fc.transcript.is_empty() && fc.priority.reason.is_empty());
        assert!(fc.classification.is_none());
    }

    #[test]
    fn a_field_of_the_wrong_shape_is_an_error_not_a_panic() {
        for bad in [
            json!("text"),
            json!({"duration_s": "long"}),
            json!({"tags": [1, 2]}),
        ] {
            assert!(FinishedCall::from_stored(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_appointment_is_read_from_the_job_payload() {
        let fc = FinishedCall {
            job_payload: json!({"appointment_time": "2026-11-27T10:00:00", "appointment_action": "book", "urgency": "routine"}),
            ..FinishedCall::default()
        };
        let a = fc.job_appointment();
        assert_eq!(a.appointment_time.as_deref(), Some("2026-11-27T10:00:00"));
        assert_eq!(a.appointment_action.as_deref(), Some("book"));
    }
}
