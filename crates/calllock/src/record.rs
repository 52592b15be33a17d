//! Post-call: turn a finished call into its classified record (SPEC
//! §7.2–§7.9 with D-15/D-16) and keep the promises made on it (D-4).
//!
//! Delivery to the dashboard over HTTP is a later issue; here the record is
//! written to the database, where `calllock calls` reads it.

use crate::sim::{EndedBy, Outcome};
use agent::backend::Backend;
use agent::classify::{classify_tags, detect_priority, estimate_revenue_tier};
use agent::postcall::{
    booking_status, build_call_payload, build_job_payload, end_call_reason, job_location_and_time,
};
use agent::session::TranscriptEntry;
use agent::transcript::{to_json_array, to_plain_text};
use chrono::{DateTime, TimeZone, Utc};
use serde_json::{json, Value};

/// The classified record of one finished call.
#[derive(Debug, Clone)]
pub struct FinishedCall {
    pub call_id: String,
    pub final_state: String,
    pub end_call_reason: String,
    pub booking_status: String,
    pub priority_color: String,
    pub priority_reason: String,
    pub revenue_tier: String,
    /// The whole record as stored.
    pub record: Value,
}

pub fn utc(ts: f64) -> DateTime<Utc> {
    Utc.timestamp_opt(ts.floor() as i64, 0)
        .single()
        .unwrap_or_default()
}

/// D-4: a call that ends in a state that promised a callback, without one
/// created, gets it now (one more attempt; the durable outbox of a later
/// issue retries beyond that). Returns the backend's answer when it tried.
pub async fn keep_callback_promise(outcome: &mut Outcome, backend: &dyn Backend) -> Option<Value> {
    let s = &mut outcome.session;
    if !s.state.promises_callback() || s.callback_created {
        return None;
    }
    let call = agent::backend::callback_request(s);
    let result = backend.call(&call).await;
    apply_callback_result(outcome, &result);
    Some(result)
}

/// Record a post-call `create_callback` answer on the call: created or one
/// more failed attempt, and a tool line in the transcript. Returns whether
/// the callback was created.
pub fn apply_callback_result(outcome: &mut Outcome, result: &Value) -> bool {
    let s = &mut outcome.session;
    let ok = agent::tools::call_succeeded(result);
    if ok {
        s.callback_created = true;
    } else {
        s.callback_attempts += 1;
    }
    s.transcript_log.push(TranscriptEntry::tool(
        "create_callback",
        result.clone(),
        outcome.end_time,
        s.state,
    ));
    ok
}

/// Classify a finished call and build its payloads.
pub fn classify(outcome: &Outcome, user_email: &str) -> FinishedCall {
    let s = &outcome.session;
    let state = s.state;
    let transcript_text = to_plain_text(&s.transcript_log);
    // Tags are judged on what the caller said: the agent's own safety
    // question ("any gas smell, burning smell or smoke?") must not tag every
    // call as a gas leak or a fire.
    let caller_text = agent::postcall::caller_words(&s.transcript_log);
    let reason = end_call_reason(state, s).to_string();
    let status = booking_status(s).to_string();
    let tags = classify_tags(state, s, &caller_text);
    let (color, priority_reason) = detect_priority(&tags, &status);
    let revenue_tags: Vec<String> = tags
        .get("REVENUE")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let revenue = estimate_revenue_tier(&s.problem_description, &revenue_tags);
    let mut job = build_job_payload(state, s, outcome.end_time, user_email);
    if let Value::Object(m) = &mut job {
        m.extend(job_location_and_time(state, s));
    }
    let call = build_call_payload(
        state,
        s,
        outcome.end_time,
        user_email,
        None,
        None,
        utc(outcome.end_time),
    );
    let transcript = timed_transcript(&s.transcript_log, outcome.start_time);
    let record = json!({
        "call_id": s.call_sid,
        "phone": s.phone_number,
        "final_state": state.as_str(),
        "end_call_reason": reason,
        "booking_status": status,
        "ended_by": match outcome.ended_by {
            EndedBy::Agent => "agent",
            EndedBy::Caller => "caller",
            EndedBy::TimeLimit => "time_limit",
            EndedBy::Interrupted => "interrupted",
        },
        "duration_s": ((outcome.end_time - outcome.start_time) * 10.0).round() / 10.0,
        "tags": tags,
        "priority": {"color": color, "reason": priority_reason},
        "revenue": revenue,
        "session": s,
        "job_payload": job,
        "call_payload": call,
        "transcript": transcript,
        "transcript_text": transcript_text,
        "transcript_object": to_json_array(&s.transcript_log),
    });
    FinishedCall {
        call_id: s.call_sid.clone(),
        final_state: state.as_str().to_string(),
        end_call_reason: reason,
        booking_status: status,
        priority_color: color,
        priority_reason,
        revenue_tier: revenue
            .get("tier")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        record,
    }
}

/// The SPEC §7.9 JSON-array transcript plus `state` and `t` (seconds from
/// the start of the call) per entry.
pub fn timed_transcript(log: &[TranscriptEntry], start_time: f64) -> Value {
    let base = to_json_array(log);
    let items = base.as_array().cloned().unwrap_or_default();
    // to_json_array skips roles other than user/agent/tool; walk both in step.
    let kept = log.iter().filter(|e| {
        matches!(
            e.role,
            agent::session::Role::User | agent::session::Role::Agent | agent::session::Role::Tool
        )
    });
    let out: Vec<Value> = items
        .into_iter()
        .zip(kept)
        .map(|(mut item, e)| {
            if let Some(o) = item.as_object_mut() {
                o.insert("state".into(), json!(e.state.clone().unwrap_or_default()));
                let t = e
                    .timestamp
                    .map(|ts| ((ts - start_time) * 100.0).round() / 100.0);
                o.insert("t".into(), json!(t.unwrap_or(0.0)));
            }
            item
        })
        .collect();
    Value::Array(out)
}

/// Save a finished call into the database.
pub async fn save(
    store: &store::Store,
    outcome: &Outcome,
    fc: &FinishedCall,
) -> anyhow::Result<()> {
    save_as(store, outcome, fc, store::CallStatus::Completed, true).await
}

/// [`save`] keeping `status`, with post-call processing done or not.
pub async fn save_as(
    store: &store::Store,
    outcome: &Outcome,
    fc: &FinishedCall,
    status: store::CallStatus,
    postcall_done: bool,
) -> anyhow::Result<()> {
    let s = &outcome.session;
    let rec = store::CallRecord {
        call_id: fc.call_id.clone(),
        phone: s.phone_number.clone(),
        started_at: utc(outcome.start_time),
        ended_at: Some(utc(outcome.end_time)),
        final_state: fc.final_state.clone(),
        end_call_reason: fc.end_call_reason.clone(),
        booking_status: fc.booking_status.clone(),
        urgency: agent::postcall::map_urgency(&s.urgency_tier).to_string(),
        priority_color: fc.priority_color.clone(),
        revenue_tier: fc.revenue_tier.clone(),
        customer_name: s.customer_name.clone(),
        problem: s.problem_description.clone(),
        record: fc.record.clone(),
        transcript: fc.record["transcript"].clone(),
    };
    store.save_call_as(&rec, status, postcall_done).await?;
    Ok(())
}
