//! `/outbox`: the deliveries that wait (dashboard records, emergency
//! alerts, callbacks not yet created) — for each, when it is really
//! attempted next and why not sooner — each with a "retry now" button
//! (`POST /api/outbox/{id}/retry` with the session's CSRF token), which
//! attempts the delivery at once and says what happened.
//!
//! The reasons come from [`crate::call::delivery::explain_waits`], which applies
//! the worker's own rules: an item behind another of its call and lane
//! waits for that one (its next attempt is that one's, at the earliest);
//! an item a worker holds is being attempted; a failed one backs off; a
//! due one is tried on the worker's next pass (`outbox.poll_s`). Times are
//! relative ("in 42 s"): no time zone is involved.

use super::html::esc;
use crate::call::delivery::{explain_waits, in_seconds, Wait, WaitReason};
use crate::serve::app::App;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use std::fmt::Write;
use std::sync::Arc;

/// `GET /outbox`.
pub(super) async fn page(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    let Some(session) = super::page::signed_in(&app, &headers) else {
        return super::page::to_login();
    };
    let items = match app.vendors.store.outbox_pending().await {
        Ok(i) => i,
        Err(e) => {
            tracing::error!(error = %e, "dashboard: cannot read the outbox");
            return super::page::message(
                StatusCode::SERVICE_UNAVAILABLE,
                "Outbox",
                "The database is unavailable.",
            );
        }
    };
    let now = chrono::Utc::now().timestamp_millis() as f64 / 1000.0;
    let waits = explain_waits(items, now);
    let mut rows = String::new();
    for w in &waits {
        let i = &w.item;
        let when = if w.next_attempt_unix <= now {
            "now".to_string()
        } else {
            format!("in {}", in_seconds(w.next_attempt_unix - now))
        };
        let kind = match i.kind {
            store::OutboxKind::Alert => "alert (own lane)".to_string(),
            k => k.to_string(),
        };
        let _ = write!(
            rows,
            "<tr><td><a href=\"/calls/{call}\">{call}</a></td><td>{kind}</td><td>{when}</td>\
             <td>{why}</td><td>{attempts}</td><td><form method=\"post\" \
             action=\"/api/outbox/{id}/retry\" data-csrf=\"{csrf}\"><button type=\"submit\">\
             retry now</button> <output></output></form></td></tr>",
            call = esc(&i.call_id),
            kind = esc(&kind),
            why = esc(&why_it_waits(w, now, app.cfg.outbox.poll_s)),
            attempts = i.attempts,
            id = esc(&i.id),
            csrf = esc(&session.csrf),
        );
    }
    let body = if waits.is_empty() {
        "<h1>Outbox</h1><p>Nothing waits: every delivery was made.</p>".to_string()
    } else {
        format!(
            "<h1>Outbox</h1><p class=\"note\">{} deliveries wait. Alerts travel in their own \
             lane: they never wait behind a job or a call record. \"Retry now\" attempts the \
             delivery at once and says what happened.</p><table><tr><th>call</th>\
             <th>kind</th><th>next attempt</th><th>why it waits</th><th>failed attempts</th>\
             <th></th></tr>{rows}</table>",
            waits.len()
        )
    };
    super::page::answer("Outbox", body, false)
}

/// The "why it waits" of one item, in words.
pub(crate) fn why_it_waits(w: &Wait, now: f64, poll_s: f64) -> String {
    let last = |attempts: i64, error: &str| {
        if attempts == 0 || error.is_empty() {
            "not attempted yet".to_string()
        } else {
            format!(
                "failed {attempts} time{}: {error}",
                if attempts == 1 { "" } else { "s" }
            )
        }
    };
    match &w.why {
        WaitReason::Behind(ahead) => format!(
            "waiting behind the {} of the same call ({}), which goes first",
            ahead.kind,
            last(ahead.attempts, &ahead.last_error)
        ),
        WaitReason::Leased { owner, until } => format!(
            "leased by {owner} until in {} — an attempt is under way (if {owner} stops, \
             another worker takes it over then)",
            in_seconds(until - now)
        ),
        WaitReason::BackingOff { attempts, error } => format!(
            "backing off after {attempts} failed attempt{}: {error}",
            if *attempts == 1 { "" } else { "s" }
        ),
        WaitReason::Due => {
            let tail = if w.item.attempts > 0 {
                format!("; {}", last(w.item.attempts, &w.item.last_error))
            } else {
                String::new()
            };
            format!(
                "due now — the worker tries it within {}{tail}",
                in_seconds(poll_s.max(0.0).ceil())
            )
        }
    }
}
