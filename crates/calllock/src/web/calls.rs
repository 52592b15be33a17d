//! `/`: the calls, live and finished, newest first — filtered by the same
//! parameters as `GET /api/calls` (final state, priority, caller, dates,
//! status), a page at a time, the table refreshed in place every few
//! seconds so live calls appear and finish without a reload. Said as an
//! owner says it: times on the business's clock, who called, what came of
//! it in plain words (`outcome_words`); on a phone each call is a card.

use super::html::{self, esc};
use crate::call::record::FinishedCall;
use crate::serve::app::App;
use agent::BusinessProfile;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use std::collections::HashMap;
use std::sync::Arc;
use store::{CallStatus, CallSummary};

/// Seconds between refreshes of the table.
const REFRESH_S: u32 = 3;

/// The filters a person types: dates as `YYYY-MM-DD` are days on the
/// business's clock ([`html::local_day_start`]) and become the API's Unix
/// seconds (`to` inclusive: until the next local midnight). A call at
/// 9:04 PM in Austin is under its Austin day, not UTC's next one.
fn api_params(
    params: &HashMap<String, String>,
    business: &BusinessProfile,
) -> Result<HashMap<String, String>, String> {
    let mut p: HashMap<String, String> = params
        .iter()
        .filter(|(k, v)| {
            !v.trim().is_empty()
                && matches!(
                    k.as_str(),
                    "final_state" | "priority" | "caller" | "status" | "cursor" | "limit"
                )
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let day = |k: &str| -> Result<Option<chrono::NaiveDate>, String> {
        match params.get(k).map(|v| v.trim()).filter(|v| !v.is_empty()) {
            None => Ok(None),
            Some(v) => chrono::NaiveDate::parse_from_str(v, "%Y-%m-%d")
                .map(Some)
                .map_err(|_| format!("{k} must be a date like 2026-11-25, not {v:?}")),
        }
    };
    if let Some(d) = day("from")? {
        p.insert(
            "since".into(),
            html::local_day_start(business, d).to_string(),
        );
    }
    if let Some(d) = day("to")? {
        let until = match d.succ_opt() {
            Some(next) => html::local_day_start(business, next),
            None => i64::MAX,
        };
        p.insert("until".into(), until.to_string());
    }
    Ok(p)
}

/// The tags of a record, as `CATEGORY: a, b` pieces.
fn tags(record: Option<&FinishedCall>) -> String {
    let Some(r) = record else {
        return String::new();
    };
    r.tags
        .iter()
        .filter(|(_, names)| !names.is_empty())
        .map(|(k, names)| format!("{k}: {}", names.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The conversation's states in an owner's words: where a call was, or
/// where it ended (`safety_exit` → "emergency instructions"), as in
/// "the caller hung up during the {words}".
pub(crate) fn state_words(state: &str) -> String {
    match state {
        "welcome" => "greeting".into(),
        "non_service" => "non-service question".into(),
        "lookup" => "caller lookup".into(),
        "follow_up" => "follow-up on an earlier call".into(),
        "manage_booking" => "appointment change".into(),
        "safety" => "safety question".into(),
        "safety_exit" => "emergency instructions".into(),
        "service_area" => "service-area check".into(),
        "discovery" => "questions about the problem".into(),
        "urgency" => "urgency question".into(),
        "urgency_callback" => "urgent callback".into(),
        "pre_confirm" => "read-back of the details".into(),
        "booking" => "booking".into(),
        "booking_failed" => "failed booking".into(),
        "confirm" => "confirmation".into(),
        "callback" => "callback promise".into(),
        "" => "start".into(),
        other => other.replace('_', " "),
    }
}

/// A priority colour in an owner's words.
pub(crate) fn priority_words(color: &str) -> String {
    match color {
        "red" => "Urgent".into(),
        "green" => "Sales opportunity".into(),
        "blue" => "Standard".into(),
        "gray" => "Not a customer".into(),
        "" => "—".into(),
        other => other.to_string(),
    }
}

/// What came of a call, in an owner's words ("Technician booked for
/// Friday, February 27 at 2:00 PM", "Call back: the caller is owed a
/// callback"); `record` is its post-call record when there is one.
pub(crate) fn outcome_words(
    c: &CallSummary,
    record: Option<&FinishedCall>,
    business: &BusinessProfile,
) -> String {
    match c.status {
        CallStatus::Active => return "On the line now".into(),
        CallStatus::Interrupted if c.end_call_reason.is_empty() => {
            return "Cut off: the server stopped during the call".into()
        }
        _ => {}
    }
    let booked = record
        .map(|r| r.session.booked_time.trim())
        .filter(|t| !t.is_empty());
    match c.end_call_reason.as_str() {
        "completed" => match booked {
            Some(t) => format!(
                "Technician booked for {}",
                html::appointment_time(business, t)
            ),
            None => "Technician booked".into(),
        },
        "safety_emergency" => "Emergency: caller told to leave".into(),
        "sales_lead" => "Sales lead: call back with a quote".into(),
        "callback_later" => "Call back: the caller is owed a callback".into(),
        "appointment_cancelled" => "Cancelled an appointment".into(),
        "appointment_rescheduled" => "Moved an appointment".into(),
        "appointment_status" => "Asked about an appointment".into(),
        "no_response" => "No answer: the caller stayed silent".into(),
        "customer_hangup" if c.booking_status == "attempted_failed" => {
            "Hung up after the booking failed".into()
        }
        "customer_hangup" => format!(
            "The caller hung up during the {}",
            state_words(&c.final_state)
        ),
        "" => format!("Ended during the {}", state_words(&c.final_state)),
        other => other.replace('_', " "),
    }
}

fn row(c: &CallSummary, record: Option<&FinishedCall>, business: &BusinessProfile) -> String {
    let live = c.status == CallStatus::Active;
    let duration = match c.ended_at {
        Some(e) => {
            let s = (e - c.started_at).num_seconds().max(0);
            if s < 60 {
                format!("{s} s")
            } else {
                format!("{} min {} s", s / 60, s % 60)
            }
        }
        None if live => "<span class=\"pill live\">live</span>".into(),
        None => "cut off".into(),
    };
    let name = if c.customer_name.trim().is_empty() {
        "<span class=\"note\">no name given</span>".to_string()
    } else {
        esc(&c.customer_name)
    };
    let tags = tags(record);
    let tags = if tags.is_empty() {
        String::new()
    } else {
        format!("<br><span class=\"note\">{}</span>", esc(&tags))
    };
    format!(
        "<tr><td data-label=\"When\"><a href=\"/calls/{id}\">{start}</a></td>\
         <td data-label=\"Caller\">{name}<br><span class=\"nowrap\">{phone}</span></td>\
         <td data-label=\"What happened\">{outcome}{tags}</td>\
         <td data-label=\"Problem\">{problem}</td>\
         <td data-label=\"Priority\"><span class=\"pill {color}\">{priority}</span></td>\
         <td data-label=\"Length\" class=\"nowrap\">{duration}</td></tr>",
        id = esc(&c.call_id),
        start = esc(&html::local_time(business, c.started_at)),
        phone = esc(&c.phone),
        outcome = esc(&outcome_words(c, record, business)),
        problem = esc(&c.problem),
        color = esc(&c.priority_color),
        priority = esc(&priority_words(&c.priority_color)),
    )
}

/// The final states a person may filter by.
const STATES: [&str; 16] = [
    "welcome",
    "non_service",
    "lookup",
    "follow_up",
    "manage_booking",
    "safety",
    "safety_exit",
    "service_area",
    "discovery",
    "urgency",
    "urgency_callback",
    "pre_confirm",
    "booking",
    "booking_failed",
    "confirm",
    "callback",
];

fn filters(params: &HashMap<String, String>, business: &BusinessProfile) -> String {
    let v = |k: &str| esc(params.get(k).map(String::as_str).unwrap_or(""));
    let option = |k: &str, value: &str, label: &str| {
        let sel = if params.get(k).map(String::as_str) == Some(value) {
            " selected"
        } else {
            ""
        };
        format!(
            "<option value=\"{}\"{sel}>{}</option>",
            esc(value),
            esc(label)
        )
    };
    let status = [
        ("", "any status"),
        ("live", "on the line"),
        ("completed", "finished"),
        ("interrupted", "cut off"),
    ]
    .iter()
    .map(|(s, label)| option("status", s, label))
    .collect::<String>();
    let priority = std::iter::once(option("priority", "", "any priority"))
        .chain(
            ["red", "green", "blue", "gray"]
                .iter()
                .map(|c| option("priority", c, &priority_words(c))),
        )
        .collect::<String>();
    let mut states = option("final_state", "", "ended anywhere");
    // A state typed in the address bar that is not in the list stays chosen.
    if let Some(typed) = params
        .get("final_state")
        .filter(|s| !s.is_empty() && !STATES.contains(&s.as_str()))
    {
        states.push_str(&option("final_state", typed, typed));
    }
    for s in STATES {
        states.push_str(&option(
            "final_state",
            s,
            &format!("ended during: {}", state_words(s)),
        ));
    }
    format!(
        "<form class=\"filters\" method=\"get\" action=\"/\">\
         <input name=\"caller\" placeholder=\"caller's number (digits)\" value=\"{}\">\
         <select name=\"final_state\">{states}</select>\
         <select name=\"priority\">{priority}</select><select name=\"status\">{status}</select>\
         <label>from <input type=\"date\" name=\"from\" value=\"{}\"></label>\
         <label>to <input type=\"date\" name=\"to\" value=\"{}\"></label>\
         <button type=\"submit\">Filter</button><a href=\"/\">clear</a></form>\
         <p class=\"note\">Times and dates are the business's ({tz}).</p>",
        v("caller"),
        v("from"),
        v("to"),
        tz = esc(&business.timezone),
    )
}

/// `GET /`: the calls page (or, with `fragment=1`, its table).
pub(super) async fn page(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    Query(params): Query<HashMap<String, String>>,
) -> Response {
    if super::page::signed_in(&app, &headers).is_none() {
        return super::page::to_login();
    }
    let fragment = params.get("fragment").is_some_and(|v| v == "1");
    let business = &app.cfg.business;
    let query = match api_params(&params, business).and_then(|p| crate::api::call_query(&p)) {
        Ok(q) => q,
        Err(why) => return super::page::message(StatusCode::BAD_REQUEST, "Calls", &why),
    };
    let store = &app.vendors.store;
    let page = match store.search_calls(&query).await {
        Ok(p) => p,
        Err(e) => {
            tracing::error!(error = %e, "dashboard: cannot list calls");
            return super::page::message(
                StatusCode::SERVICE_UNAVAILABLE,
                "Calls",
                "The database is unavailable.",
            );
        }
    };
    let ids: Vec<String> = page.calls.iter().map(|c| c.call_id.clone()).collect();
    // Each record read through the writer's types (one that cannot be
    // read shows as a call without one).
    let records: HashMap<String, FinishedCall> = store
        .call_records_of(&ids)
        .await
        .unwrap_or_default()
        .into_iter()
        .filter_map(|(id, r)| Some((id, FinishedCall::from_stored(&r).ok()?)))
        .collect();
    let rows: String = page
        .calls
        .iter()
        .map(|c| row(c, records.get(&c.call_id), business))
        .collect();
    let live = page
        .calls
        .iter()
        .filter(|c| c.status == CallStatus::Active)
        .count();
    let more = match &page.next {
        Some(c) => {
            let mut next = params.clone();
            next.remove("fragment");
            next.insert("cursor".into(), c.encode());
            let q: Vec<String> = next
                .iter()
                .map(|(k, v)| format!("{}={}", esc(k), esc(&urlencode(v))))
                .collect();
            format!("<p><a href=\"/?{}\">older calls →</a></p>", q.join("&amp;"))
        }
        None => String::new(),
    };
    let table = format!(
        "<p class=\"note\">{n} call(s) shown, {live} on the line now.</p>\
         <table class=\"cards\"><tr class=\"head\"><th>When</th><th>Caller</th>\
         <th>What happened</th><th>Problem</th><th>Priority</th><th>Length</th></tr>\
         {rows}</table>{more}",
        n = page.calls.len()
    );
    if fragment {
        return super::page::answer("Calls", table, true);
    }
    let body = format!(
        "<h1>Calls</h1>{}<div id=\"live\" data-refresh=\"{REFRESH_S}\">{table}</div>",
        filters(&params, business)
    );
    super::page::answer("Calls", body, false)
}

/// `s` percent-encoded for a query string.
fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}
