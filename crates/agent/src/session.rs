//! The per-call session (SPEC §1.4 plus `lead_alert_sent` of D-5).
//!
//! Field names are the SPEC's, so a session serializes to exactly the shape
//! the conformance cases, the replay `--json` output and the post-call
//! builders use.

use crate::state::State;
use serde::{Deserialize, Serialize};

/// Who said a transcript line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Agent,
    Tool,
    /// Roles we do not produce but may read back (e.g. a given history).
    #[serde(other)]
    Other,
}

/// One line of the call transcript (SPEC §5.3): a caller line, an agent line
/// (LLM or canned, D-16) or a tool call with its result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TranscriptEntry {
    pub role: Role,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<serde_json::Value>,
    /// Unix seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// An agent line the caller cut off: `content` is what they heard.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
}

impl TranscriptEntry {
    pub fn user(content: impl Into<String>, timestamp: f64, state: State) -> Self {
        TranscriptEntry {
            role: Role::User,
            content: Some(content.into()),
            name: None,
            result: None,
            timestamp: Some(timestamp),
            state: Some(state.to_string()),
            interrupted: false,
        }
    }

    pub fn agent(content: impl Into<String>, timestamp: f64, state: State) -> Self {
        TranscriptEntry {
            role: Role::Agent,
            content: Some(content.into()),
            name: None,
            result: None,
            timestamp: Some(timestamp),
            state: Some(state.to_string()),
            interrupted: false,
        }
    }

    pub fn tool(name: &str, result: serde_json::Value, timestamp: f64, state: State) -> Self {
        TranscriptEntry {
            role: Role::Tool,
            content: None,
            name: Some(name.to_string()),
            result: Some(result),
            timestamp: Some(timestamp),
            state: Some(state.to_string()),
            interrupted: false,
        }
    }
}

/// A caller line in `conversation_history` (agent lines are never added).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryMessage {
    pub role: String,
    pub content: String,
}

fn default_routine() -> String {
    "routine".to_string()
}
fn default_service() -> String {
    "service".to_string()
}

/// Everything known about one call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Session {
    pub phone_number: String,
    pub state: State,
    pub caller_known: bool,
    pub customer_name: String,
    pub zip_code: String,
    pub service_address: String,
    pub has_appointment: bool,
    pub appointment_date: String,
    pub appointment_time: String,
    pub appointment_uid: String,
    pub callback_promise: String,
    pub caller_intent: String,
    pub problem_description: String,
    pub equipment_type: String,
    pub problem_duration: String,
    pub is_third_party: bool,
    pub site_contact_name: String,
    pub site_contact_phone: String,
    pub preferred_time: String,
    #[serde(default = "default_routine")]
    pub urgency_tier: String,
    pub lead_type: String,
    /// D-5: the sales-lead alert has been sent (it is sent once).
    pub lead_alert_sent: bool,
    pub caller_confirmed: bool,
    pub booking_confirmed: bool,
    pub booking_attempted: bool,
    pub booked_time: String,
    pub appointment_id: String,
    pub confirmation_message: String,
    pub callback_created: bool,
    pub callback_attempts: i64,
    /// D-6: `service`, `estimate`, `billing`, `warranty` or `follow_up`.
    #[serde(default = "default_service")]
    pub callback_type: String,
    /// The number the caller asked to be called back at ("call my cell …"),
    /// as `+1XXXXXXXXXX`; "" = the number they are calling from.
    pub callback_phone: String,
    /// In `pre_confirm`: the visit time that will be booked (ISO-8601 local,
    /// D-14), read back to the caller and sent to `book_service` as is.
    pub booking_time: String,
    pub terminal_reply_used: bool,
    pub call_sid: String,
    /// Unix seconds.
    pub start_time: f64,
    /// The call's transcript. A live engine writes it when the call
    /// finishes (until then its event log is the one record:
    /// `Engine::transcript`); a session read back from a record has it.
    pub transcript_log: Vec<TranscriptEntry>,
    pub turn_count: i64,
    pub state_turn_count: i64,
    pub agent_has_responded: bool,
    pub conversation_history: Vec<HistoryMessage>,
    /// D-8: the appointment action the caller asked for in `manage_booking`
    /// (`cancel`, `reschedule`, `status`; "" = none yet).
    pub manage_action: String,
    /// D-8: the caller's words naming the new time for a reschedule.
    pub manage_time_hint: String,
    /// The agent ended the call because the caller stopped answering (the
    /// idle prompts went unanswered): the record says `no_response`, not
    /// that the caller hung up.
    pub caller_silent: bool,
    /// Where a reschedule moved the appointment, as said to a person: the
    /// backend's new date and time when it gives them, else the time the
    /// agent asked for (the V2 backend answers without them, SPEC §6.3.5).
    pub rescheduled_to: String,
    /// What the caller's last utterance did, as the state machine
    /// understood it ([`crate::understand`]): the scripted responder words
    /// its line from this instead of reading the words again.
    pub heard: Heard,
    /// The agent's pending question and how many times it has been put
    /// (the second time reworded, the third a change of strategy, never a
    /// fourth: see [`crate::machine`]).
    pub asked: crate::understand::Asked,
    pub asked_times: u32,
    /// The caller turned a callback down ("I'll call you"): none is created.
    pub callback_declined: bool,
    /// Why a callback is owed when it is not the problem (an escalation to
    /// a manager); sent as the callback's reason.
    pub callback_reason: String,
    /// What a non-service caller is after (sales, a job, a wrong number),
    /// as first said.
    pub errand: crate::understand::Errand,
    /// The ZIP was said by the caller in this call (not read from the
    /// file): the service-area step takes it without asking again.
    pub zip_said: bool,
    /// The caller said when they want the visit before being asked (the
    /// state machine took it, not background extraction): "how soon?" is
    /// not asked.
    pub time_said: bool,
}

/// The acts of the caller's last utterance the agent's next line answers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Heard {
    /// The caller asked a question (answered first, then the pending
    /// question again).
    pub question: Option<crate::understand::Asking>,
    /// The caller asked to hear it again.
    pub repeat: bool,
    /// Fields the caller corrected (`name`, `address`, `zip`, `problem`,
    /// `time`): the read-back is said again with the change.
    pub changed: Vec<String>,
    /// The caller said goodbye.
    pub goodbye: bool,
    /// The caller asked for a manager or a person.
    pub wants_person: bool,
    /// The caller said no (to the read-back: "what should I change?").
    pub no: bool,
    /// The caller's time talk could not be placed: ask which day.
    pub unclear_time: bool,
}

impl Default for Session {
    fn default() -> Self {
        Session {
            phone_number: String::new(),
            state: State::Welcome,
            caller_known: false,
            customer_name: String::new(),
            zip_code: String::new(),
            service_address: String::new(),
            has_appointment: false,
            appointment_date: String::new(),
            appointment_time: String::new(),
            appointment_uid: String::new(),
            callback_promise: String::new(),
            caller_intent: String::new(),
            problem_description: String::new(),
            equipment_type: String::new(),
            problem_duration: String::new(),
            is_third_party: false,
            site_contact_name: String::new(),
            site_contact_phone: String::new(),
            preferred_time: String::new(),
            urgency_tier: default_routine(),
            lead_type: String::new(),
            lead_alert_sent: false,
            caller_confirmed: false,
            booking_confirmed: false,
            booking_attempted: false,
            booked_time: String::new(),
            appointment_id: String::new(),
            confirmation_message: String::new(),
            callback_created: false,
            callback_attempts: 0,
            callback_type: default_service(),
            callback_phone: String::new(),
            booking_time: String::new(),
            terminal_reply_used: false,
            call_sid: String::new(),
            start_time: 0.0,
            transcript_log: Vec::new(),
            turn_count: 0,
            state_turn_count: 0,
            agent_has_responded: false,
            conversation_history: Vec::new(),
            manage_action: String::new(),
            manage_time_hint: String::new(),
            caller_silent: false,
            rescheduled_to: String::new(),
            heard: Heard::default(),
            asked: crate::understand::Asked::Nothing,
            asked_times: 0,
            callback_declined: false,
            callback_reason: String::new(),
            errand: crate::understand::Errand::None,
            zip_said: false,
            time_said: false,
        }
    }
}

impl Session {
    /// A fresh session for a call from `phone_number`.
    pub fn new(phone_number: impl Into<String>) -> Self {
        Session {
            phone_number: phone_number.into(),
            ..Session::default()
        }
    }

    pub fn is_high_ticket(&self) -> bool {
        self.lead_type == "high_ticket"
    }

    /// The appointment on file as said to a person: "Friday at 2 PM", the
    /// date or the time alone when only one is known, "" when neither is.
    pub fn appointment_when(&self) -> String {
        let d = self.appointment_date.trim();
        let t = self.appointment_time.trim();
        match (d.is_empty(), t.is_empty()) {
            (false, false) => format!("{d} at {t}"),
            (false, true) => d.to_string(),
            (true, false) => t.to_string(),
            (true, true) => String::new(),
        }
    }

    /// The callback type of D-6: `estimate` for high-ticket leads, the
    /// non-service kind set at welcome (`billing` / `warranty`), `follow_up`
    /// for follow-up callers, `service` otherwise.
    pub fn effective_callback_type(&self) -> &str {
        if self.is_high_ticket() {
            "estimate"
        } else if !self.callback_type.is_empty() && self.callback_type != "service" {
            &self.callback_type
        } else if self.caller_intent == "follow_up" {
            "follow_up"
        } else {
            "service"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_spec() {
        let s = Session::new("+15125551234");
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["state"], "welcome");
        assert_eq!(v["urgency_tier"], "routine");
        assert_eq!(v["callback_type"], "service");
        assert_eq!(v["start_time"], 0.0);
        assert_eq!(v["lead_alert_sent"], false);
    }

    #[test]
    fn partial_json_keeps_defaults() {
        let s: Session = serde_json::from_str(r#"{"customer_name":"Jonas"}"#).unwrap();
        assert_eq!(s.customer_name, "Jonas");
        assert_eq!(s.urgency_tier, "routine");
        assert_eq!(s.callback_type, "service");
    }

    #[test]
    fn transcript_entry_skips_absent_keys() {
        let e = TranscriptEntry::user("hi", 1.0, State::Welcome);
        let v = serde_json::to_value(&e).unwrap();
        assert!(v.get("name").is_none());
        assert_eq!(v["role"], "user");
    }
}
