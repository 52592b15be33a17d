//! Post-call: turn a finished call into its classified record (SPEC
//! §7.2–§7.9 with D-15/D-16) and keep the promises made on it (D-4).
//!
//! The record is written to the database here (`save`), where `calllock
//! calls`, the dashboard and the API read it through the same types
//! ([`doc`]); `crate::call::delivery` sends it on to the dashboard.

pub mod doc;

pub use doc::{FinishedCall, Priority, Revenue, TimedLine};

use crate::call::outcome::Outcome;
use agent::classify::{classify_tags, detect_priority, estimate_revenue_tier};
use agent::postcall::{
    booking_status, build_call_payload, build_job_payload, end_call_reason, job_location_and_time,
    record_problem, record_urgency,
};
use agent::session::TranscriptEntry;
use agent::transcript::{to_json_array, to_plain_text};
use chrono::{DateTime, TimeZone, Utc};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

pub fn utc(ts: f64) -> DateTime<Utc> {
    Utc.timestamp_opt(ts.floor() as i64, 0)
        .single()
        .unwrap_or_default()
}

/// Record a post-call `create_callback` answer on the call: created or one
/// more failed attempt, and a tool line in the transcript. Returns whether
/// the callback was created.
pub fn apply_callback_result(outcome: &mut Outcome, result: &Value) -> bool {
    use voice::history::ToolOutcome;
    let s = &mut outcome.session;
    let ok = agent::tools::call_succeeded(result);
    if ok {
        s.callback_created = true;
    } else {
        s.callback_attempts += 1;
    }
    // Into the call's log, like every tool the call ran; the transcript
    // gains its line as the log's projection gives it (the lines before
    // it are the projection already).
    let log = &mut outcome.log;
    let at = std::time::Duration::try_from_secs_f64(outcome.end_time).unwrap_or_default();
    let n = log.len();
    log.set_phase(s.state.as_str());
    let (name, outcome) = ("create_callback".into(), ToolOutcome::of_answer(ok));
    log.append_tool(at, name, String::new(), result.to_string(), outcome);
    s.transcript_log
        .extend(agent::engine::transcript_since(log, n));
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
    // Every category is a list of tag names (SPEC §7.6).
    let tags: BTreeMap<String, Vec<String>> = serde_json::from_value(tags).unwrap_or_default();
    let revenue_tags = tags.get("REVENUE").cloned().unwrap_or_default();
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
    FinishedCall {
        call_id: s.call_sid.clone(),
        phone: s.phone_number.clone(),
        final_state: state.as_str().to_string(),
        end_call_reason: reason,
        booking_status: status,
        ended_by: outcome.ended_by.as_str().to_string(),
        duration_s: ((outcome.end_time - outcome.start_time) * 10.0).round() / 10.0,
        tags,
        priority: Priority {
            color,
            reason: priority_reason,
        },
        revenue: serde_json::from_value(revenue).unwrap_or_default(),
        session: s.clone(),
        job_payload: job,
        call_payload: call,
        transcript,
        transcript_text,
        transcript_object: to_json_array(&s.transcript_log),
        classification: None,
    }
}

/// The SPEC §7.9 JSON-array transcript plus `state` and `t` (seconds from
/// the start of the call) per entry, and `interrupted: true` on an agent
/// line the caller heard only part of.
pub fn timed_transcript(log: &[TranscriptEntry], start_time: f64) -> Vec<TimedLine> {
    let base = to_json_array(log);
    let items = base.as_array().cloned().unwrap_or_default();
    // to_json_array skips roles other than user/agent/tool; walk both in step.
    let kept = log.iter().filter(|e| {
        matches!(
            e.role,
            agent::session::Role::User | agent::session::Role::Agent | agent::session::Role::Tool
        )
    });
    items
        .into_iter()
        .zip(kept)
        .map(|(item, e)| TimedLine {
            state: e.state.clone().unwrap_or_default(),
            t: e.timestamp
                .map_or(0.0, |ts| ((ts - start_time) * 100.0).round() / 100.0),
            // An agent line cut short (a barge-in, a hang-up during it):
            // its content is what the caller heard.
            interrupted: e.interrupted,
            ..TimedLine::deserialize(&item).unwrap_or_default()
        })
        .collect()
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
        // An emergency is filed as one, with what the caller reported
        // (issue 23; see `record_urgency` / `record_problem`).
        urgency: record_urgency(s.state, s).to_string(),
        priority_color: fc.priority.color.clone(),
        revenue_tier: fc.revenue.tier.clone(),
        customer_name: s.customer_name.clone(),
        problem: record_problem(s.state, s),
        transcript: serde_json::to_value(&fc.transcript).unwrap_or_default(),
        record: fc.to_stored(),
    };
    store.save_call_as(&rec, status, postcall_done).await?;
    Ok(())
}

/// A call that ended in the safety script, as `calllock agenda` lists it
/// (issue 23): the most important record of the day, with where to send
/// someone and the number to call.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Emergency {
    pub call_id: String,
    pub started_at: DateTime<Utc>,
    pub phone: String,
    pub customer_name: String,
    /// The service address the caller gave (also after the script).
    pub address: String,
    /// The session's problem, else the caller's hazard sentence.
    pub problem: String,
    /// Always `emergency`.
    pub urgency: String,
}

/// Midnight of `now`'s day on the business's clock, in UTC.
pub fn start_of_day(business: &agent::BusinessProfile, now: DateTime<Utc>) -> DateTime<Utc> {
    let tz = business.tz();
    let midnight = now
        .with_timezone(&tz)
        .date_naive()
        .and_time(chrono::NaiveTime::MIN);
    tz.from_local_datetime(&midnight)
        .earliest()
        // A day that starts in a DST gap: its first hour.
        .or_else(|| {
            tz.from_local_datetime(&(midnight + chrono::Duration::hours(1)))
                .earliest()
        })
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or(now)
}

/// The emergencies (calls that ended in `safety_exit`) started at or after
/// `since`, newest first, at most `limit`. Address and problem come from
/// the saved session, so a record saved before issue 23 (empty problem
/// column) still names the hazard; a call whose process died before its
/// record was saved shows what the calls table has.
pub async fn emergencies_since(
    store: &store::Store,
    since: DateTime<Utc>,
    limit: u32,
) -> anyhow::Result<Vec<Emergency>> {
    let page = store
        .search_calls(&store::CallQuery {
            final_state: Some(agent::State::SafetyExit.as_str().to_string()),
            since: Some(since.timestamp()),
            limit,
            ..Default::default()
        })
        .await?;
    let mut out = Vec::with_capacity(page.calls.len());
    for c in page.calls {
        let session: Option<agent::Session> = store
            .get_call(&c.call_id)
            .await?
            .and_then(|r| FinishedCall::from_stored(&r.record).ok())
            .map(|r| r.session);
        let (address, problem, name) = match &session {
            Some(s) => (
                s.service_address.trim().to_string(),
                record_problem(agent::State::SafetyExit, s)
                    .trim()
                    .to_string(),
                s.customer_name.clone(),
            ),
            None => (String::new(), c.problem.clone(), c.customer_name.clone()),
        };
        out.push(Emergency {
            call_id: c.call_id,
            started_at: c.started_at,
            phone: c.phone,
            customer_name: if name.is_empty() {
                c.customer_name
            } else {
                name
            },
            address,
            problem,
            urgency: "emergency".into(),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::call::outcome::Ending;
    use agent::session::TranscriptEntry;
    use agent::{BusinessProfile, Session, State};

    /// Monday 2026-02-23 10:15 America/Chicago.
    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 2, 23, 16, 15, 0).unwrap()
    }

    /// A finished call at `start`: the caller's lines (in `said_in`), then
    /// the call ends in `state`.
    fn call(id: &str, start: DateTime<Utc>, state: State, said: &[(&str, State)]) -> Outcome {
        let t0 = start.timestamp() as f64;
        let mut s = Session::new("+15125559876");
        s.call_sid = id.into();
        s.start_time = t0;
        for (i, (text, st)) in said.iter().enumerate() {
            s.transcript_log
                .push(TranscriptEntry::user(*text, t0 + 2.0 * i as f64 + 1.0, *st));
            s.transcript_log.push(TranscriptEntry::agent(
                "(the agent's line)",
                t0 + 2.0 * i as f64 + 2.0,
                if i + 1 == said.len() { state } else { *st },
            ));
        }
        s.state = state;
        Outcome::of_session(s, Ending::Agent, t0, t0 + 30.0)
    }

    fn gas_then_address(id: &str, start: DateTime<Utc>) -> Outcome {
        let mut o = call(
            id,
            start,
            State::SafetyExit,
            &[
                ("I smell gas in the kitchen", State::Welcome),
                ("we are at 4329 Franklin Street", State::SafetyExit),
            ],
        );
        o.session.service_address = "4329 Franklin Street".into();
        o
    }

    #[test]
    fn the_day_starts_at_midnight_on_the_business_clock() {
        let b = BusinessProfile::default();
        assert_eq!(
            start_of_day(&b, now()),
            Utc.with_ymd_and_hms(2026, 2, 23, 6, 0, 0).unwrap()
        );
        // 23:30 Chicago is still that day (05:30 UTC the next).
        let late = Utc.with_ymd_and_hms(2026, 2, 24, 5, 30, 0).unwrap();
        assert_eq!(
            start_of_day(&b, late),
            Utc.with_ymd_and_hms(2026, 2, 23, 6, 0, 0).unwrap()
        );
    }

    /// Issue 23: the emergency's record says emergency and what the caller
    /// reported; the agenda lists today's emergencies with the address.
    #[tokio::test]
    async fn emergencies_are_recorded_and_listed_for_the_day() {
        let store = store::Store::open_in_memory().await.unwrap();
        let today = gas_then_address("CA_gas", now());
        let fc = classify(&today, "");
        assert_eq!(fc.job_payload["urgency"], "emergency");
        assert_eq!(
            fc.job_payload["issue_description"],
            "I smell gas in the kitchen"
        );
        assert_eq!(fc.job_payload["customer_address"], "4329 Franklin Street");
        save(&store, &today, &fc).await.unwrap();
        let rec = store.get_call("CA_gas").await.unwrap().unwrap();
        assert_eq!(rec.urgency, "emergency");
        assert_eq!(rec.problem, "I smell gas in the kitchen");

        // Yesterday's emergency and today's ordinary call are not listed.
        let yesterday = gas_then_address("CA_old", now() - chrono::Duration::days(1));
        save(&store, &yesterday, &classify(&yesterday, ""))
            .await
            .unwrap();
        let plain = call(
            "CA_plain",
            now() + chrono::Duration::minutes(5),
            State::Callback,
            &[("my AC is broken", State::Welcome)],
        );
        save(&store, &plain, &classify(&plain, "")).await.unwrap();
        let rec = store.get_call("CA_plain").await.unwrap().unwrap();
        assert_eq!(rec.urgency, "low");

        let b = BusinessProfile::default();
        let list = emergencies_since(&store, start_of_day(&b, now()), 20)
            .await
            .unwrap();
        assert_eq!(
            list,
            vec![Emergency {
                call_id: "CA_gas".into(),
                started_at: now(),
                phone: "+15125559876".into(),
                customer_name: String::new(),
                address: "4329 Franklin Street".into(),
                problem: "I smell gas in the kitchen".into(),
                urgency: "emergency".into(),
            }]
        );
    }
}
