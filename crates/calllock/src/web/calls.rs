//! `/`: the calls, live and finished, newest first — filtered by the same
//! parameters as `GET /api/calls` (final state, priority, caller, dates,
//! status), a page at a time, the table refreshed in place every few
//! seconds so live calls appear and finish without a reload.

use super::html::esc;
use crate::serve::App;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use store::{CallStatus, CallSummary};

/// Seconds between refreshes of the table.
const REFRESH_S: u32 = 3;

/// The filters a person types: dates as `YYYY-MM-DD` become the API's Unix
/// seconds (UTC, `to` inclusive).
fn api_params(params: &HashMap<String, String>) -> Result<HashMap<String, String>, String> {
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
    let day = |k: &str| -> Result<Option<i64>, String> {
        match params.get(k).map(|v| v.trim()).filter(|v| !v.is_empty()) {
            None => Ok(None),
            Some(v) => chrono::NaiveDate::parse_from_str(v, "%Y-%m-%d")
                .map(|d| {
                    Some(
                        d.and_hms_opt(0, 0, 0)
                            .unwrap_or_default()
                            .and_utc()
                            .timestamp(),
                    )
                })
                .map_err(|_| format!("{k} must be a date like 2026-11-25, not {v:?}")),
        }
    };
    if let Some(t) = day("from")? {
        p.insert("since".into(), t.to_string());
    }
    if let Some(t) = day("to")? {
        p.insert("until".into(), (t + 86_400).to_string());
    }
    Ok(p)
}

/// The tags of a record, as `CATEGORY: a, b` pieces.
fn tags(record: Option<&Value>) -> String {
    let Some(t) = record.and_then(|r| r["tags"].as_object()) else {
        return String::new();
    };
    t.iter()
        .filter_map(|(k, v)| {
            let names: Vec<&str> = v.as_array()?.iter().filter_map(Value::as_str).collect();
            (!names.is_empty()).then(|| format!("{k}: {}", names.join(", ")))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn row(c: &CallSummary, record: Option<&Value>) -> String {
    let live = c.status == CallStatus::Active;
    let duration = match c.ended_at {
        Some(e) => format!("{} s", (e - c.started_at).num_seconds().max(0)),
        None if live => "<span class=\"pill live\">live</span>".into(),
        None => "interrupted".into(),
    };
    let outcome = if c.booking_status.is_empty() {
        c.end_call_reason.clone()
    } else {
        format!("booking {}", c.booking_status)
    };
    format!(
        "<tr><td><a href=\"/calls/{id}\">{start}</a></td><td>{phone}</td><td>{duration}</td>\
         <td>{state}</td><td>{outcome}</td><td><span class=\"pill {color}\">{color}</span></td>\
         <td>{tier}</td><td>{tags}</td><td>{name}</td></tr>",
        id = esc(&c.call_id),
        start = c.started_at.format("%Y-%m-%d %H:%M:%S"),
        phone = esc(&c.phone),
        state = esc(&c.final_state),
        outcome = esc(&outcome),
        color = esc(&c.priority_color),
        tier = esc(&c.revenue_tier),
        tags = esc(&tags(record)),
        name = esc(&c.customer_name),
    )
}

fn filters(params: &HashMap<String, String>) -> String {
    let v = |k: &str| esc(params.get(k).map(String::as_str).unwrap_or(""));
    let option = |k: &str, value: &str, label: &str| {
        let sel = if params.get(k).map(String::as_str) == Some(value) {
            " selected"
        } else {
            ""
        };
        format!("<option value=\"{value}\"{sel}>{label}</option>")
    };
    let status = ["", "live", "completed", "interrupted"]
        .iter()
        .map(|s| option("status", s, if s.is_empty() { "any status" } else { s }))
        .collect::<String>();
    let priority = ["", "red", "green", "blue", "gray"]
        .iter()
        .map(|s| option("priority", s, if s.is_empty() { "any priority" } else { s }))
        .collect::<String>();
    format!(
        "<form class=\"filters\" method=\"get\" action=\"/\">\
         <input name=\"caller\" placeholder=\"caller digits\" value=\"{}\">\
         <input name=\"final_state\" placeholder=\"final state\" value=\"{}\">\
         <select name=\"priority\">{priority}</select><select name=\"status\">{status}</select>\
         <label>from <input type=\"date\" name=\"from\" value=\"{}\"></label>\
         <label>to <input type=\"date\" name=\"to\" value=\"{}\"></label>\
         <button type=\"submit\">Filter</button><a href=\"/\">clear</a></form>",
        v("caller"),
        v("final_state"),
        v("from"),
        v("to"),
    )
}

/// `GET /`: the calls page (or, with `fragment=1`, its table).
pub(super) async fn page(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    Query(params): Query<HashMap<String, String>>,
) -> Response {
    if super::signed_in(&app, &headers).is_none() {
        return super::to_login();
    }
    let fragment = params.get("fragment").is_some_and(|v| v == "1");
    let query = match api_params(&params).and_then(|p| crate::api::call_query(&p)) {
        Ok(q) => q,
        Err(why) => return super::message(StatusCode::BAD_REQUEST, "Calls", &why),
    };
    let store = &app.vendors.store;
    let page = match store.search_calls(&query).await {
        Ok(p) => p,
        Err(e) => {
            tracing::error!(error = %e, "dashboard: cannot list calls");
            return super::message(
                StatusCode::SERVICE_UNAVAILABLE,
                "Calls",
                "The database is unavailable.",
            );
        }
    };
    let ids: Vec<String> = page.calls.iter().map(|c| c.call_id.clone()).collect();
    let records = store.call_records_of(&ids).await.unwrap_or_default();
    let rows: String = page
        .calls
        .iter()
        .map(|c| row(c, records.get(&c.call_id)))
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
        "<p class=\"note\">{n} call(s) shown, {live} live now.</p><table><tr><th>started (UTC)</th>\
         <th>caller</th><th>duration</th><th>final state</th><th>outcome</th><th>priority</th>\
         <th>revenue</th><th>tags</th><th>customer</th></tr>{rows}</table>{more}",
        n = page.calls.len()
    );
    if fragment {
        return super::answer("Calls", table, true);
    }
    let body = format!(
        "<h1>Calls</h1>{}<div id=\"live\" data-refresh=\"{REFRESH_S}\">{table}</div>",
        filters(&params)
    );
    super::answer("Calls", body, false)
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
