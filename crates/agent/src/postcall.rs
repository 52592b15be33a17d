//! Post-call building blocks (SPEC §7.2–§7.5, DECISIONS D-5): derived
//! outcome fields and the dashboard payloads (job, call record, emergency
//! alert). Pure functions; sending them is the orchestrator's job.

use crate::classify::{classify_tags, detect_priority, estimate_revenue_tier};
use crate::session::{Role, Session, TranscriptEntry};
use crate::state::State;
use crate::transcript::{to_json_array, to_plain_text};
use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{json, Map, Value};

/// Default `problem_description` of an emergency alert.
pub const SAFETY_ALERT_DEFAULT_PROBLEM: &str = "Safety emergency detected";
/// Minutes within which the emergency alert promises a call back.
pub const CALLBACK_PROMISED_MINUTES: i64 = 30;
/// The classification keys merged into the job payload (SPEC §7.1).
pub const CLASSIFICATION_KEYS: [&str; 6] = [
    "ai_summary",
    "card_headline",
    "card_summary",
    "call_type",
    "call_subtype",
    "sentiment_score",
];

/// Why the call ended (SPEC §7.2 with D-5, and CallLock's record of what
/// really happened — README, "Where we differ from the reference"):
///
/// - `safety_emergency` in safety_exit;
/// - `completed` in confirm with a confirmed booking;
/// - `sales_lead` for any (other) high-ticket lead;
/// - `callback_later` in callback, or wherever a callback is owed to the
///   caller: created, or promised and waiting in the outbox (a failed
///   booking, a timing callback);
/// - `appointment_cancelled` / `appointment_rescheduled` in confirm after
///   the caller's existing appointment was changed (D-8),
///   `appointment_status` after a status check (`completed` stays the
///   mark of a new booking);
/// - `no_response` when the agent ended the call because the caller
///   stopped answering;
/// - otherwise `customer_hangup`: the caller put the phone down.
///
/// The reference said `customer_hangup` for every call the agent ended
/// outside those first four rules; a session that records none of the
/// facts above still gets exactly the reference's answer.
pub fn end_call_reason(state: State, session: &Session) -> &'static str {
    if state == State::SafetyExit {
        "safety_emergency"
    } else if state == State::Confirm && session.booking_confirmed {
        "completed"
    } else if session.is_high_ticket() {
        "sales_lead"
    } else if state == State::Callback || callback_owed(state, session) {
        "callback_later"
    } else if let Some(reason) = appointment_change(state, session) {
        reason
    } else if session.caller_silent {
        "no_response"
    } else {
        "customer_hangup"
    }
}

/// A callback is owed: it was created, or a state that promises one tried
/// to create it (the outbox keeps trying, D-17).
fn callback_owed(state: State, session: &Session) -> bool {
    session.callback_created || (state.promises_callback() && session.callback_attempts > 0)
}

/// The end reason of a call that changed the caller's existing
/// appointment: `confirm` is reached from `manage_booking` only when the
/// `manage_appointment` request went through.
fn appointment_change(state: State, session: &Session) -> Option<&'static str> {
    if state != State::Confirm || session.booking_confirmed {
        return None;
    }
    match session.manage_action.as_str() {
        "cancel" => Some("appointment_cancelled"),
        "reschedule" => Some("appointment_rescheduled"),
        "status" => Some("appointment_status"),
        _ => None,
    }
}

/// What the call was for, as the dashboard files it: `booking_request`
/// for a new booking; `existing_appointment` for a caller who cancelled,
/// moved or checked an appointment; `non_service` (billing, vendors, job
/// seekers…) and `follow_up` (chasing an earlier call) for such callers;
/// else `new_lead`. A caller who went on to the safety question became a
/// service call (no appointment on file, or a new problem): a lead.
///
/// An emergency (`safety_exit`, whatever the caller first called about,
/// D-22) is filed as `new_lead`: of the values SPEC §7.3 and D-21 allow,
/// `booking_request` is for a confirmed booking only (§7.3) and D-21's
/// `existing_appointment` / `non_service` / `follow_up` are for callers who
/// are *not* new leads, while a hazard is new service work the business
/// must take on now. What marks it as the emergency is the rest of the
/// record: `end_call_reason` `safety_emergency` (D-21), urgency
/// `emergency` ([`record_urgency`]), priority red and the
/// `CRITICAL_EVACUATE` tag (§7.6).
pub fn primary_intent(state: State, session: &Session) -> &'static str {
    let service_call = on_the_service_path(state)
        || session
            .transcript_log
            .iter()
            .any(|e| e.state.as_deref() == Some(State::Safety.as_str()));
    if session.booking_confirmed {
        "booking_request"
    } else if service_call {
        "new_lead"
    } else if !session.manage_action.is_empty() || state == State::ManageBooking {
        "existing_appointment"
    } else if state == State::NonService || session.caller_intent == "non_service" {
        "non_service"
    } else if state == State::FollowUp || session.caller_intent == "follow_up" {
        "follow_up"
    } else {
        "new_lead"
    }
}

/// The states a call reaches only through the safety question (SPEC §1.2):
/// a service call, whatever the caller first asked for.
fn on_the_service_path(state: State) -> bool {
    matches!(
        state,
        State::Safety
            | State::SafetyExit
            | State::ServiceArea
            | State::Discovery
            | State::Urgency
            | State::UrgencyCallback
            | State::PreConfirm
            | State::Booking
            | State::BookingFailed
    )
}

/// Where and when, for the dashboard's job card: the service ZIP and the
/// appointment the caller changed or asked about, with what was done
/// (after a reschedule: the new time). Merged into the job beside the LLM
/// classification; the §7.3 payload itself keeps the reference's key set.
pub fn job_location_and_time(state: State, session: &Session) -> Map<String, Value> {
    let mut m = Map::new();
    if !session.zip_code.trim().is_empty() {
        m.insert("service_zip".into(), Value::from(session.zip_code.trim()));
    }
    if appointment_change(state, session).is_some() {
        // A cancellation or status check names the appointment on file;
        // a reschedule names where it moved to (never the old time).
        let when = if session.manage_action == "reschedule" {
            session.rescheduled_to.trim().to_string()
        } else {
            session.appointment_when()
        };
        if !when.is_empty() {
            m.insert("appointment_time".into(), Value::from(when));
        }
        m.insert(
            "appointment_action".into(),
            Value::from(session.manage_action.as_str()),
        );
    }
    m
}

/// What the caller said, one line per caller entry: the text tags are
/// judged on. The agent's lines never count — its own safety question
/// ("any gas smell, burning smell or smoke?") and the company name ("ACE
/// Cooling") would tag every call.
pub fn caller_words(log: &[crate::session::TranscriptEntry]) -> String {
    log.iter()
        .filter(|e| e.role == crate::session::Role::User)
        .filter_map(|e| e.content.as_deref())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The caller's line that set off the safety script (issue 23): the
/// record's problem when the session has none. Of what the caller said
/// up to the moment the call entered `safety_exit` (transcript entries
/// carry the state they were said in), the last line that states a
/// hazard (D-3's reading, [`crate::safety::triage`]), else the last line
/// before the script (a "yes" to the safety question). What the caller
/// said after the script (their address, "we're going outside") never
/// counts. `None` when the caller said nothing before the script.
pub fn hazard_sentence(log: &[TranscriptEntry]) -> Option<String> {
    let exit = State::SafetyExit.as_str();
    let entered = log
        .iter()
        .position(|e| e.state.as_deref() == Some(exit))
        .unwrap_or(log.len());
    let said: Vec<&str> = log
        .iter()
        .enumerate()
        .filter(|(i, e)| {
            e.role == Role::User
                && (*i < entered || (*i == entered && e.state.as_deref() == Some(exit)))
        })
        .filter_map(|(_, e)| e.content.as_deref().map(str::trim))
        .filter(|t| !t.is_empty())
        .collect();
    let states_hazard = |t: &&&str| {
        crate::safety::triage(t)
            .mentions
            .iter()
            .any(|m| m.reading == crate::safety::Reading::Asserted)
    };
    said.iter()
        .rev()
        .find(states_hazard)
        .or_else(|| said.last())
        .map(|t| t.to_string())
}

/// The problem the call's record and job name: the session's
/// `problem_description`; for an emergency without one, the caller's
/// hazard sentence ([`hazard_sentence`]) — never an empty problem on the
/// most important record of the day.
pub fn record_problem(state: State, session: &Session) -> String {
    let problem = session.problem_description.trim();
    if problem.is_empty() && state == State::SafetyExit {
        hazard_sentence(&session.transcript_log).unwrap_or_default()
    } else {
        session.problem_description.clone()
    }
}

/// The urgency of the call's record, job and call payload (dashboard enum
/// `low|medium|high|emergency`): `emergency` for a call that ended in the
/// safety script — SPEC §7.6 files it `CRITICAL_EVACUATE` and red, and the
/// §7.2 mapping gives `emergency` to an emergency tier, which the safety
/// exit is whatever tier the session reached before it (often none:
/// "low"); else [`map_urgency`] of the session's tier.
pub fn record_urgency(state: State, session: &Session) -> &'static str {
    if state == State::SafetyExit {
        "emergency"
    } else {
        map_urgency(&session.urgency_tier)
    }
}

/// `confirmed`, `attempted_failed` or `not_requested` (SPEC §7.2).
pub fn booking_status(session: &Session) -> &'static str {
    if session.booking_confirmed {
        "confirmed"
    } else if session.booking_attempted {
        "attempted_failed"
    } else {
        "not_requested"
    }
}

/// Session urgency tier → dashboard enum `low|medium|high|emergency`.
pub fn map_urgency(tier: &str) -> &'static str {
    match tier {
        "medium" => "medium",
        "high" | "urgent" => "high",
        "emergency" => "emergency",
        _ => "low",
    }
}

fn or_default<'a>(value: &'a str, default: &'a str) -> &'a str {
    if value.is_empty() {
        default
    } else {
        value
    }
}

/// The dashboard job payload (SPEC §7.3), without LLM classification (see
/// [`merge_classification`]). `end_time` is accepted for symmetry with the
/// call payload; the job does not use it.
pub fn build_job_payload(
    state: State,
    session: &Session,
    end_time: f64,
    user_email: &str,
) -> Value {
    let _ = end_time;
    let status = booking_status(session);
    let tags = classify_tags(state, session, &caller_words(&session.transcript_log));
    let (priority_color, priority_reason) = detect_priority(&tags, status);
    let revenue_tags: Vec<String> = tags
        .get("REVENUE")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let revenue = estimate_revenue_tier(&session.problem_description, &revenue_tags);
    let field = |k: &str| revenue.get(k).cloned().unwrap_or(Value::Null);

    let mut job = json!({
        "customer_name": or_default(&session.customer_name, "Unknown Caller"),
        "customer_phone": or_default(&session.phone_number, "unknown"),
        "customer_address": session.service_address,
        "service_type": "hvac",
        "urgency": record_urgency(state, session),
        "user_email": user_email,
        "call_id": session.call_sid,
        "call_transcript": to_plain_text(&session.transcript_log),
        "transcript_object": to_json_array(&session.transcript_log),
        "booking_status": status,
        "end_call_reason": end_call_reason(state, session),
        "issue_description": record_problem(state, session),
        "tags": tags,
        "priority_color": priority_color,
        "priority_reason": priority_reason,
        "revenue_tier": field("tier"),
        "revenue_tier_label": field("tier_label"),
        "revenue_tier_signals": field("signals"),
        "revenue_confidence": field("confidence"),
        "caller_type": "residential",
        "primary_intent": primary_intent(state, session),
        "work_type": "service",
    });
    if let Value::Object(m) = &mut job {
        if session.booking_confirmed {
            if !session.booked_time.is_empty() {
                m.insert(
                    "scheduled_at".into(),
                    Value::from(session.booked_time.clone()),
                );
            }
            m.insert("is_ai_booked".into(), Value::Bool(true));
        }
    }
    job
}

/// Merge the LLM classification into a job payload: each of
/// [`CLASSIFICATION_KEYS`] whose value is present and not null.
pub fn merge_classification(job: &mut Value, classification: &Map<String, Value>) {
    let Value::Object(m) = job else { return };
    for key in CLASSIFICATION_KEYS {
        match classification.get(key) {
            None | Some(Value::Null) => {}
            Some(v) => {
                m.insert(key.to_string(), v.clone());
            }
        }
    }
}

/// ISO-8601 UTC with a `+00:00` offset, like Python's `isoformat()`
/// (fractional seconds only when non-zero, as microseconds).
pub fn iso_utc(dt: DateTime<Utc>) -> String {
    let micros = dt.timestamp_subsec_micros();
    let format = if micros == 0 {
        SecondsFormat::Secs
    } else {
        SecondsFormat::Micros
    };
    dt.to_rfc3339_opts(format, false)
}

/// A Unix timestamp as [`iso_utc`]; 0, non-finite or out-of-range values
/// give `fallback`.
fn iso_from_unix(ts: f64, fallback: DateTime<Utc>) -> String {
    if ts == 0.0 || !ts.is_finite() {
        return iso_utc(fallback);
    }
    let mut secs = ts.floor();
    let mut micros = ((ts - secs) * 1e6).round();
    if micros >= 1e6 {
        secs += 1.0;
        micros -= 1e6;
    }
    if secs.abs() > 1e14 {
        return iso_utc(fallback);
    }
    match DateTime::<Utc>::from_timestamp(secs as i64, (micros as u32).saturating_mul(1000)) {
        Some(dt) => iso_utc(dt),
        None => iso_utc(fallback),
    }
}

/// The dashboard call record (SPEC §7.4). `now_utc` stands in for a zero
/// start or end time; `lead_id` / `job_id` appear only when given.
pub fn build_call_payload(
    state: State,
    session: &Session,
    end_time: f64,
    user_email: &str,
    lead_id: Option<&str>,
    job_id: Option<&str>,
    now_utc: DateTime<Utc>,
) -> Value {
    let duration = if session.start_time == 0.0 {
        0
    } else {
        let d = (end_time - session.start_time).trunc();
        if d.is_finite() {
            // `as` saturates at the i64 range.
            d as i64
        } else {
            0
        }
    };
    let dialogue: Vec<_> = session
        .transcript_log
        .iter()
        .filter(|e| matches!(e.role, Role::Agent | Role::User))
        .cloned()
        .collect();

    let mut call = json!({
        "call_id": session.call_sid,
        "phone_number": or_default(&session.phone_number, "unknown"),
        "customer_name": session.customer_name,
        "user_email": user_email,
        "started_at": iso_from_unix(session.start_time, now_utc),
        "ended_at": iso_from_unix(end_time, now_utc),
        "duration_seconds": duration,
        "direction": "inbound",
        "outcome": end_call_reason(state, session),
        "urgency_tier": record_urgency(state, session),
        "problem_description": record_problem(state, session),
        "booking_status": booking_status(session),
        "transcript_object": to_json_array(&dialogue),
    });
    if let Value::Object(m) = &mut call {
        if let Some(id) = lead_id {
            m.insert("lead_id".into(), Value::from(id));
        }
        if let Some(id) = job_id {
            m.insert("job_id".into(), Value::from(id));
        }
    }
    call
}

/// The emergency alert of a safety_exit call (SPEC §7.5).
pub fn build_emergency_alert(session: &Session, now_utc: DateTime<Utc>, user_email: &str) -> Value {
    json!({
        "call_id": session.call_sid,
        "phone_number": or_default(&session.phone_number, "unknown"),
        "customer_name": session.customer_name,
        "customer_address": session.service_address,
        "problem_description": or_default(&session.problem_description, SAFETY_ALERT_DEFAULT_PROBLEM),
        "user_email": user_email,
        "sms_sent_at": iso_utc(now_utc),
        "callback_promised_minutes": CALLBACK_PROMISED_MINUTES,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 2, 20, 12, 0, 0).unwrap()
    }

    fn sess(v: Value) -> Session {
        serde_json::from_value(v).unwrap()
    }

    fn subset(actual: &Value, expected: Value) {
        for (k, v) in expected.as_object().unwrap() {
            assert_eq!(actual.get(k), Some(v), "key {k}");
        }
    }

    /// The session shared by many conformance cases.
    fn jonas(urgency: &str) -> Session {
        sess(json!({
            "phone_number": "+15125551234", "call_sid": "CA_test_123", "start_time": 1000.0,
            "caller_known": true, "customer_name": "Jonas", "zip_code": "78745",
            "service_address": "4210 South Lamar Blvd", "problem_description": "AC blowing warm air",
            "preferred_time": "morning", "booking_confirmed": true, "booked_time": "2026-02-20T10:00:00",
            "urgency_tier": urgency,
            "transcript_log": [
                {"role": "agent", "content": "Thanks for calling ACE Cooling.", "timestamp": 1000.0, "state": "welcome"},
                {"role": "user", "content": "My AC is blowing warm air.", "timestamp": 1002.0, "state": "welcome"},
                {"role": "tool", "name": "book_service", "result": {"booked": true}, "timestamp": 1010.0, "state": "booking"},
                {"role": "agent", "content": "You're all set for tomorrow morning.", "timestamp": 1012.0, "state": "confirm"}
            ]
        }))
    }

    fn job(state: State, s: &Session) -> Value {
        build_job_payload(state, s, 1015.0, "owner@test.com")
    }

    fn call(state: State, s: &Session, end: f64, lead: Option<&str>, jid: Option<&str>) -> Value {
        build_call_payload(state, s, end, "owner@test.com", lead, jid, now())
    }

    #[test]
    fn post_end_call_reason() {
        let e = |st: State, v: Value| end_call_reason(st, &sess(v));
        assert_eq!(e(State::SafetyExit, json!({})), "safety_emergency");
        assert_eq!(
            e(State::Confirm, json!({"booking_confirmed": true})),
            "completed"
        );
        assert_eq!(e(State::Confirm, json!({})), "customer_hangup");
        assert_eq!(
            e(State::Callback, json!({"lead_type": "high_ticket"})),
            "sales_lead"
        );
        assert_eq!(e(State::Callback, json!({})), "callback_later");
        assert_eq!(
            e(State::UrgencyCallback, json!({"lead_type": "high_ticket"})),
            "sales_lead"
        );
        assert_eq!(
            e(State::Urgency, json!({"lead_type": "high_ticket"})),
            "sales_lead"
        );
        assert_eq!(
            e(State::SafetyExit, json!({"lead_type": "high_ticket"})),
            "safety_emergency"
        );
        assert_eq!(e(State::BookingFailed, json!({})), "customer_hangup");
    }

    /// Issue 15: calls the agent ended are not filed as the caller hanging
    /// up. A session that records none of these facts keeps the
    /// reference's answer (the cases above).
    #[test]
    fn the_end_reason_says_what_really_happened() {
        let e = |st: State, v: Value| end_call_reason(st, &sess(v));
        // "I'm sorry, we couldn't book that time — someone will call you."
        assert_eq!(
            e(
                State::BookingFailed,
                json!({"booking_attempted": true, "callback_created": true})
            ),
            "callback_later"
        );
        // The backend was down: the promised callback waits in the outbox.
        assert_eq!(
            e(
                State::BookingFailed,
                json!({"booking_attempted": true, "callback_attempts": 2})
            ),
            "callback_later"
        );
        // "Can someone just call me back?"
        assert_eq!(
            e(State::UrgencyCallback, json!({"callback_created": true})),
            "callback_later"
        );
        // "I need to cancel my appointment" … "cancel it please".
        assert_eq!(
            e(State::Confirm, json!({"manage_action": "cancel"})),
            "appointment_cancelled"
        );
        // "I need to reschedule" … "friday afternoon please".
        assert_eq!(
            e(State::Confirm, json!({"manage_action": "reschedule"})),
            "appointment_rescheduled"
        );
        // "Just checking on my appointment."
        assert_eq!(
            e(State::Confirm, json!({"manage_action": "status"})),
            "appointment_status"
        );
        // A cancellation that failed went to callback; the callback rules.
        assert_eq!(
            e(
                State::Callback,
                json!({"manage_action": "cancel", "callback_created": true})
            ),
            "callback_later"
        );
        // The caller stopped answering; the agent said goodbye.
        assert_eq!(
            e(State::Discovery, json!({"caller_silent": true})),
            "no_response"
        );
        // A silent caller who was owed a callback is still owed it.
        assert_eq!(
            e(
                State::Callback,
                json!({"caller_silent": true, "callback_created": true})
            ),
            "callback_later"
        );
        // Danger and high-ticket leads keep their reasons.
        assert_eq!(
            e(State::SafetyExit, json!({"caller_silent": true})),
            "safety_emergency"
        );
        assert_eq!(
            e(
                State::UrgencyCallback,
                json!({"lead_type": "high_ticket", "callback_created": true})
            ),
            "sales_lead"
        );
        // The caller hung up mid-discovery: that is a hang-up.
        assert_eq!(e(State::Discovery, json!({})), "customer_hangup");
    }

    #[test]
    fn a_cancellation_is_not_a_new_lead() {
        let p = |st: State, v: Value| primary_intent(st, &sess(v));
        assert_eq!(
            p(State::Confirm, json!({"manage_action": "cancel"})),
            "existing_appointment"
        );
        assert_eq!(
            p(State::Callback, json!({"manage_action": "reschedule"})),
            "existing_appointment"
        );
        assert_eq!(p(State::ManageBooking, json!({})), "existing_appointment");
        assert_eq!(p(State::NonService, json!({})), "non_service");
        assert_eq!(p(State::FollowUp, json!({})), "follow_up");
        assert_eq!(p(State::Callback, json!({})), "new_lead");
        assert_eq!(p(State::Discovery, json!({})), "new_lead");
        // A job seeker handed to a callback by the turn limit is still not
        // a lead.
        assert_eq!(
            p(State::Callback, json!({"caller_intent": "non_service"})),
            "non_service"
        );
        // "I need to reschedule" with no appointment on file: the call went
        // on to the safety question and became a service call — a lead.
        let went_on = json!({"manage_action": "reschedule", "transcript_log": [
            {"role": "user", "content": "I need to reschedule", "state": "welcome"},
            {"role": "agent", "content": "Any gas smell?", "state": "safety"},
        ]});
        assert_eq!(p(State::Callback, went_on.clone()), "new_lead");
        assert_eq!(
            p(State::Discovery, json!({"manage_action": "cancel"})),
            "new_lead"
        );
        assert_eq!(
            p(State::Confirm, json!({"booking_confirmed": true})),
            "booking_request"
        );
        let job = build_job_payload(
            State::Confirm,
            &sess(json!({"manage_action": "cancel"})),
            0.0,
            "",
        );
        assert_eq!(job["primary_intent"], "existing_appointment");
        assert_eq!(job["end_call_reason"], "appointment_cancelled");
    }

    #[test]
    fn the_job_card_gets_the_zip_and_the_changed_appointment() {
        let rescheduled = sess(json!({
            "zip_code": " 78704 ", "manage_action": "reschedule",
            "appointment_date": "Friday, February 27", "appointment_time": "2:00 PM",
        }));
        let m = job_location_and_time(State::Confirm, &rescheduled);
        assert_eq!(m["service_zip"], "78704");
        // The V2 backend does not say the new time (SPEC §6.3.5): the date
        // and time on file are the old ones and are not reported as new.
        assert_eq!(m.get("appointment_time"), None);
        let mut moved = rescheduled.clone();
        moved.rescheduled_to = "Friday, February 27 at 2 PM".into();
        let m = job_location_and_time(State::Confirm, &moved);
        assert_eq!(m["appointment_time"], "Friday, February 27 at 2 PM");
        assert_eq!(m["appointment_action"], "reschedule");
        let cancelled = sess(json!({"manage_action": "cancel",
            "appointment_date": "Friday, February 27", "appointment_time": "2:00 PM"}));
        let m = job_location_and_time(State::Confirm, &cancelled);
        assert_eq!(m["appointment_time"], "Friday, February 27 at 2:00 PM");
        assert_eq!(m["appointment_action"], "cancel");
        // A change that did not go through (callback) is not reported as done.
        let m = job_location_and_time(State::Callback, &rescheduled);
        assert_eq!(m.get("appointment_action"), None);
        assert_eq!(m.get("appointment_time"), None);
        // A new booking: its time is `scheduled_at` (§7.3), nothing else.
        let booked = sess(json!({"zip_code": "78745", "booking_confirmed": true,
            "booked_time": "2026-02-20T10:00:00"}));
        let m = job_location_and_time(State::Confirm, &booked);
        assert_eq!(Value::Object(m), json!({"service_zip": "78745"}));
        assert!(job_location_and_time(State::Callback, &sess(json!({}))).is_empty());
    }

    #[test]
    fn post_booking_status() {
        assert_eq!(
            booking_status(&sess(
                json!({"booking_confirmed": true, "booking_attempted": true})
            )),
            "confirmed"
        );
        assert_eq!(
            booking_status(&sess(json!({"booking_attempted": true}))),
            "attempted_failed"
        );
        assert_eq!(booking_status(&sess(json!({}))), "not_requested");
    }

    #[test]
    fn post_urgency_mapping() {
        for (tier, want) in [
            ("routine", "low"),
            ("low", "low"),
            ("medium", "medium"),
            ("high", "high"),
            ("urgent", "high"),
            ("emergency", "emergency"),
            ("banana", "low"),
            ("", "low"),
        ] {
            let s = jonas(tier);
            assert_eq!(job(State::Confirm, &s)["urgency"], want, "{tier}");
            assert_eq!(
                call(State::Confirm, &s, 1015.0, None, None)["urgency_tier"],
                want,
                "{tier}"
            );
        }
    }

    /// Issue 15, item 7: one tagging, over the caller's words. The agent's
    /// company name ("ACE Cooling") and its safety question ("any gas
    /// smell…?") tag nothing.
    #[test]
    fn job_tags_are_judged_on_the_caller_s_words_only() {
        use crate::session::TranscriptEntry;
        let mut s = Session::new("+15125551234");
        s.transcript_log = vec![
            TranscriptEntry::agent(
                "Thanks for calling ACE Cooling! How can I help you today?",
                1.0,
                State::Welcome,
            ),
            TranscriptEntry::user(
                "my furnace is making a loud banging noise",
                2.0,
                State::Welcome,
            ),
            TranscriptEntry::agent(
                "Quick safety check — any gas smell, burning smell or smoke right now?",
                3.0,
                State::Safety,
            ),
            TranscriptEntry::user("no, nothing like that", 4.0, State::Safety),
        ];
        let j = job(State::ServiceArea, &s);
        let all: Vec<String> = j["tags"]
            .as_object()
            .unwrap()
            .values()
            .flat_map(|v| v.as_array().cloned().unwrap_or_default())
            .filter_map(|v| v.as_str().map(String::from))
            .collect();
        for wrong in ["DIAGNOSTIC_SMELL", "REPAIR_AC", "GAS_LEAK"] {
            assert!(!all.iter().any(|t| t == wrong), "{wrong} in {all:?}");
        }
        assert_eq!(
            j["tags"],
            classify_tags(State::ServiceArea, &s, &caller_words(&s.transcript_log)),
            "the job carries the same tags as the record"
        );
        // The transcript sent along still has every line.
        assert!(j["call_transcript"]
            .as_str()
            .unwrap()
            .contains("ACE Cooling"));
    }

    #[test]
    fn post_job_required_fields_and_transcript() {
        let j = job(State::Confirm, &jonas("routine"));
        subset(
            &j,
            json!({"customer_name": "Jonas", "customer_phone": "+15125551234",
                "customer_address": "4210 South Lamar Blvd", "service_type": "hvac",
                "call_id": "CA_test_123", "user_email": "owner@test.com"}),
        );
        subset(
            &j,
            json!({
                "call_transcript": "Agent: Thanks for calling ACE Cooling.\nCaller: My AC is blowing warm air.\n[Tool: book_service]\nAgent: You're all set for tomorrow morning.",
                "transcript_object": [
                    {"role": "agent", "content": "Thanks for calling ACE Cooling."},
                    {"role": "user", "content": "My AC is blowing warm air."},
                    {"role": "tool", "name": "book_service", "result": {"booked": true}},
                    {"role": "agent", "content": "You're all set for tomorrow morning."}]
            }),
        );
    }

    #[test]
    fn post_job_classification_fields() {
        let j = job(State::Confirm, &jonas("routine"));
        subset(
            &j,
            json!({"tags": {"HAZARD": [], "URGENCY": ["STANDARD"], "SERVICE_TYPE": ["REPAIR_AC"], "REVENUE": [],
                    "RECOVERY": [], "LOGISTICS": [], "CUSTOMER": ["EXISTING_CUSTOMER"], "NON_CUSTOMER": [], "CONTEXT": []},
                "priority_color": "blue", "priority_reason": "Standard residential service request",
                "revenue_tier": "standard_repair", "revenue_tier_label": "$$",
                "revenue_tier_signals": ["general repair request"], "revenue_confidence": "low"}),
        );
    }

    #[test]
    fn post_job_key_set() {
        let j = job(State::Confirm, &jonas("routine"));
        let keys: Vec<&String> = j.as_object().unwrap().keys().collect();
        let want = [
            "booking_status",
            "call_id",
            "call_transcript",
            "caller_type",
            "customer_address",
            "customer_name",
            "customer_phone",
            "end_call_reason",
            "is_ai_booked",
            "issue_description",
            "primary_intent",
            "priority_color",
            "priority_reason",
            "revenue_confidence",
            "revenue_tier",
            "revenue_tier_label",
            "revenue_tier_signals",
            "scheduled_at",
            "service_type",
            "tags",
            "transcript_object",
            "urgency",
            "user_email",
            "work_type",
        ];
        assert_eq!(keys, want.iter().collect::<Vec<_>>());
        assert_eq!(j["scheduled_at"], "2026-02-20T10:00:00");
        assert_eq!(j["is_ai_booked"], true);
        assert_eq!(j["end_call_reason"], "completed");
        assert_eq!(j["primary_intent"], "booking_request");
    }

    #[test]
    fn post_job_small_sessions() {
        let j = job(
            State::BookingFailed,
            &sess(
                json!({"call_sid": "CA_test_booking_fail", "start_time": 1000.0,
                "booking_attempted": true, "caller_confirmed": true}),
            ),
        );
        subset(
            &j,
            json!({"booking_status": "attempted_failed", "end_call_reason": "customer_hangup"}),
        );

        let j = job(
            State::Callback,
            &sess(json!({"call_sid": "CA_x", "start_time": 1000.0})),
        );
        assert!(j.get("is_ai_booked").is_none());
        assert!(j.get("scheduled_at").is_none());
        subset(
            &j,
            json!({"customer_name": "Unknown Caller", "customer_address": "", "service_type": "hvac",
                "urgency": "low", "caller_type": "residential", "primary_intent": "new_lead",
                "work_type": "service", "end_call_reason": "callback_later", "issue_description": "",
                "call_transcript": "", "transcript_object": [], "revenue_tier": "diagnostic",
                "revenue_tier_label": "$$?", "revenue_tier_signals": [], "revenue_confidence": "low"}),
        );

        let j = job(
            State::Callback,
            &sess(
                json!({"lead_type": "high_ticket", "problem_description": "I want a new AC system"}),
            ),
        );
        subset(
            &j,
            json!({"end_call_reason": "sales_lead", "priority_color": "green", "revenue_tier": "replacement"}),
        );

        let j = job(
            State::UrgencyCallback,
            &sess(json!({"call_sid": "CA_d5_job", "lead_type": "high_ticket",
                "problem_description": "I want a new AC system"})),
        );
        subset(
            &j,
            json!({"end_call_reason": "sales_lead", "revenue_tier": "replacement"}),
        );

        let j = job(
            State::Callback,
            &sess(json!({"phone_number": "", "call_sid": "CA_no_phone", "start_time": 1000.0})),
        );
        assert_eq!(j["customer_phone"], "unknown");

        let j = job(
            State::Callback,
            &sess(
                json!({"call_sid": "CA_d15", "start_time": 1000.0, "transcript_log": [
                {"role": "user", "content": "please call me back", "timestamp": 1002.0, "state": "welcome"}]}),
            ),
        );
        assert_eq!(j["tags"]["SERVICE_TYPE"], json!([]));
        assert_eq!(j["priority_color"], "blue");
    }

    #[test]
    fn post_call_payloads() {
        let s = jonas("routine");
        let c = call(State::Confirm, &s, 1015.0, None, None);
        subset(
            &c,
            json!({"call_id": "CA_test_123", "phone_number": "+15125551234",
                "user_email": "owner@test.com", "duration_seconds": 15,
                "started_at": "1970-01-01T00:16:40+00:00", "ended_at": "1970-01-01T00:16:55+00:00",
                "direction": "inbound", "outcome": "completed", "booking_status": "confirmed",
                "problem_description": "AC blowing warm air", "customer_name": "Jonas"}),
        );
        assert_eq!(
            c["transcript_object"],
            json!([
                {"role": "agent", "content": "Thanks for calling ACE Cooling."},
                {"role": "user", "content": "My AC is blowing warm air."},
                {"role": "agent", "content": "You're all set for tomorrow morning."}])
        );
        assert!(c.get("lead_id").is_none() && c.get("job_id").is_none());

        let s = sess(json!({"customer_name": "Jonas", "start_time": 1000.0}));
        let c = call(State::Welcome, &s, 1070.0, Some("abc-123"), None);
        subset(&c, json!({"lead_id": "abc-123", "duration_seconds": 70}));
        assert!(c.get("job_id").is_none());
        let c = call(State::Welcome, &s, 1070.0, None, Some("job-456"));
        subset(&c, json!({"job_id": "job-456"}));
        assert!(c.get("lead_id").is_none());
    }

    #[test]
    fn post_call_time_guards() {
        let s = sess(json!({"call_sid": "CA_test_zero", "start_time": 0.0}));
        subset(
            &call(State::Callback, &s, 1015.0, None, None),
            json!({"started_at": "2026-02-20T12:00:00+00:00", "duration_seconds": 0,
                "ended_at": "1970-01-01T00:16:55+00:00"}),
        );
        subset(
            &call(State::Callback, &s, 0.0, None, None),
            json!({"started_at": "2026-02-20T12:00:00+00:00", "ended_at": "2026-02-20T12:00:00+00:00"}),
        );
        let s = sess(json!({"start_time": 1000.0}));
        subset(
            &call(State::Confirm, &s, 1015.9, None, None),
            json!({"duration_seconds": 15, "ended_at": "1970-01-01T00:16:55.900000+00:00"}),
        );
        // Garbage times never panic.
        for t in [f64::NAN, f64::INFINITY, -1e300, 1e300, -5.5] {
            let s = Session {
                start_time: t,
                ..Session::default()
            };
            let c = call(State::Welcome, &s, t, None, None);
            assert!(c["started_at"].is_string());
        }
    }

    #[test]
    fn emergency_alert() {
        let s = sess(
            json!({"phone_number": "+15125559876", "call_sid": "CA_test_456",
            "start_time": 2000.0, "customer_name": "Maria"}),
        );
        let a = build_emergency_alert(&s, now(), "owner@test.com");
        assert_eq!(
            a,
            json!({"call_id": "CA_test_456", "phone_number": "+15125559876", "customer_name": "Maria",
                "customer_address": "", "problem_description": "Safety emergency detected",
                "user_email": "owner@test.com", "sms_sent_at": "2026-02-20T12:00:00+00:00",
                "callback_promised_minutes": 30})
        );
        let s = sess(json!({"phone_number": "", "problem_description": "smoke from the furnace"}));
        let a = build_emergency_alert(&s, now(), "x");
        assert_eq!(a["phone_number"], "unknown");
        assert_eq!(a["problem_description"], "smoke from the furnace");
    }

    #[test]
    fn safety_job_tags() {
        let s = sess(
            json!({"phone_number": "+15125559876", "call_sid": "CA_test_456",
            "start_time": 2000.0, "customer_name": "Maria", "transcript_log": [
                {"role": "agent", "content": "Any safety concerns?", "timestamp": 2000.0, "state": "safety"},
                {"role": "user", "content": "I smell gas in my house", "timestamp": 2002.0, "state": "safety"},
                {"role": "agent", "content": "Please call 911 immediately.", "timestamp": 2003.0, "state": "safety_exit"}]}),
        );
        let j = job(State::SafetyExit, &s);
        assert_eq!(j["end_call_reason"], "safety_emergency");
        assert_eq!(j["priority_color"], "red");
        assert_eq!(j["tags"]["HAZARD"], json!(["GAS_LEAK"]));
        assert_eq!(j["tags"]["URGENCY"], json!(["CRITICAL_EVACUATE"]));
    }

    /// Issue 23: "I smell gas in the kitchen" first, the address after the
    /// script. The record is the emergency it was: urgency `emergency`,
    /// the hazard as the problem, the address, `safety_emergency`.
    fn gas_then_address() -> Session {
        sess(json!({
            "phone_number": "+15125559876", "call_sid": "CA_gas", "start_time": 2000.0,
            "service_address": "4329 Franklin Street", "urgency_tier": "",
            "transcript_log": [
                {"role": "agent", "content": "Thanks for calling ACE Cooling.", "timestamp": 2000.0, "state": "welcome"},
                {"role": "user", "content": "I smell gas in the kitchen", "timestamp": 2002.0, "state": "welcome"},
                {"role": "agent", "content": "Please leave the house now and call 911.", "timestamp": 2003.0, "state": "safety_exit"},
                {"role": "user", "content": "Okay. It's 4329 Franklin Street", "timestamp": 2006.0, "state": "safety_exit"},
                {"role": "agent", "content": "Got it. Please get outside.", "timestamp": 2007.0, "state": "safety_exit"}
            ]
        }))
    }

    #[test]
    fn an_emergency_record_is_complete() {
        let s = gas_then_address();
        let j = job(State::SafetyExit, &s);
        assert_eq!(j["urgency"], "emergency");
        assert_eq!(j["issue_description"], "I smell gas in the kitchen");
        assert_eq!(j["customer_address"], "4329 Franklin Street");
        assert_eq!(j["end_call_reason"], "safety_emergency");
        assert_eq!(j["primary_intent"], "new_lead");
        assert_eq!(j["priority_color"], "red");
        let c = call(State::SafetyExit, &s, 2010.0, None, None);
        assert_eq!(c["urgency_tier"], "emergency");
        assert_eq!(c["problem_description"], "I smell gas in the kitchen");
        assert_eq!(c["outcome"], "safety_emergency");
        assert_eq!(record_urgency(State::SafetyExit, &s), "emergency");
        // Whatever tier the session reached before the hazard.
        for tier in ["routine", "low", "urgent", "emergency"] {
            let s = sess(json!({ "urgency_tier": tier }));
            assert_eq!(record_urgency(State::SafetyExit, &s), "emergency");
        }
        // The session's own problem wins.
        let mut s = gas_then_address();
        s.problem_description = "gas smell near the furnace".into();
        assert_eq!(
            record_problem(State::SafetyExit, &s),
            "gas smell near the furnace"
        );
        assert_eq!(
            job(State::SafetyExit, &s)["issue_description"],
            "gas smell near the furnace"
        );
    }

    #[test]
    fn other_calls_keep_their_urgency_and_problem() {
        let s = gas_then_address();
        // Not an emergency: the session's (empty) problem and tier stand.
        assert_eq!(record_problem(State::Callback, &s), "");
        assert_eq!(record_urgency(State::Callback, &s), "low");
        let j = job(State::Confirm, &jonas("urgent"));
        assert_eq!(j["urgency"], "high");
        assert_eq!(j["issue_description"], "AC blowing warm air");
    }

    #[test]
    fn the_hazard_sentence_is_what_set_off_the_script() {
        let line = |role: &str, text: &str, state: &str| json!({"role": role, "content": text, "timestamp": 1.0, "state": state});
        let hs = |log: Vec<Value>| {
            hazard_sentence(&sess(json!({ "transcript_log": log })).transcript_log)
        };
        // At the safety question: the line that states the hazard, not
        // the earlier problem nor what came after the script.
        assert_eq!(
            hs(vec![
                line("user", "My furnace is acting up", "welcome"),
                line("agent", "Any gas smell, burning smell or smoke?", "safety"),
                line(
                    "user",
                    "Actually yes, I smell gas in the hallway right now",
                    "safety"
                ),
                line("agent", "Leave now and call 911.", "safety_exit"),
                line(
                    "user",
                    "I smell gas everywhere, we're going outside",
                    "safety_exit"
                ),
            ]),
            Some("Actually yes, I smell gas in the hallway right now".into())
        );
        // A bare "yes" to the safety question: that was the trigger.
        assert_eq!(
            hs(vec![
                line("user", "My furnace is acting up", "welcome"),
                line("agent", "Any gas smell, burning smell or smoke?", "safety"),
                line("user", "yes", "safety"),
                line("agent", "Leave now and call 911.", "safety_exit"),
            ]),
            Some("yes".into())
        );
        // The earlier line stated it; a later "yes" only confirmed it.
        assert_eq!(
            hs(vec![
                line("user", "there's smoke coming from the furnace", "discovery"),
                line("user", "yes", "discovery"),
                line("agent", "Leave now and call 911.", "safety_exit"),
            ]),
            Some("there's smoke coming from the furnace".into())
        );
        // The trigger logged in the state it moved the call to.
        assert_eq!(
            hs(vec![
                line("user", "It's 1200 Barton Springs Road", "discovery"),
                line("user", "wait, I smell burning", "safety_exit"),
                line("agent", "Leave now and call 911.", "safety_exit"),
                line("user", "ok", "safety_exit"),
            ]),
            Some("wait, I smell burning".into())
        );
        // Nothing said before the script.
        assert_eq!(
            hs(vec![
                line("agent", "Leave now and call 911.", "safety_exit"),
                line("user", "ok", "safety_exit"),
            ]),
            None
        );
        assert_eq!(hs(vec![]), None);
    }

    #[test]
    fn merge_skips_nulls() {
        let mut j = job(State::Confirm, &jonas("routine"));
        let cls = json!({"ai_summary": null, "card_headline": "AC Fix", "call_subtype": null, "other": 1});
        merge_classification(&mut j, cls.as_object().unwrap());
        assert_eq!(j["card_headline"], "AC Fix");
        assert!(j.get("ai_summary").is_none());
        assert!(j.get("call_subtype").is_none());
        assert!(j.get("other").is_none());
        let mut not_obj = json!([]);
        merge_classification(&mut not_obj, cls.as_object().unwrap());
        assert_eq!(not_obj, json!([]));
    }
}
