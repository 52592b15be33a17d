//! `/outbox`: the deliveries that wait (dashboard records, emergency
//! alerts, callbacks not yet created), why, and when they are tried next,
//! each with a "retry now" button (`POST /api/outbox/{id}/retry` with the
//! session's CSRF token).

use super::html::esc;
use crate::serve::App;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use std::fmt::Write;
use std::sync::Arc;

/// `GET /outbox`.
pub(super) async fn page(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    let Some(session) = super::signed_in(&app, &headers) else {
        return super::to_login();
    };
    let items = match app.vendors.store.outbox_pending().await {
        Ok(i) => i,
        Err(e) => {
            tracing::error!(error = %e, "dashboard: cannot read the outbox");
            return super::message(
                StatusCode::SERVICE_UNAVAILABLE,
                "Outbox",
                "The database is unavailable.",
            );
        }
    };
    let now = chrono::Utc::now().timestamp_millis() as f64 / 1000.0;
    let mut rows = String::new();
    for i in &items {
        let next = i.next_attempt_unix - now;
        let when = if next <= 0.0 {
            "due now".to_string()
        } else {
            format!("in {:.0} s", next)
        };
        let why = if i.last_error.is_empty() {
            "not tried yet"
        } else {
            &i.last_error
        };
        let _ = write!(
            rows,
            "<tr><td><a href=\"/calls/{call}\">{call}</a></td><td>{kind}</td><td>{why}</td>\
             <td>{attempts}</td><td>{when}</td><td><form method=\"post\" \
             action=\"/api/outbox/{id}/retry\" data-csrf=\"{csrf}\"><button type=\"submit\">\
             retry now</button> <output></output></form></td></tr>",
            call = esc(&i.call_id),
            kind = esc(&i.kind.to_string()),
            why = esc(why),
            attempts = i.attempts,
            id = esc(&i.id),
            csrf = esc(&session.csrf),
        );
    }
    let body = if items.is_empty() {
        "<h1>Outbox</h1><p>Nothing waits: every delivery was made.</p>".to_string()
    } else {
        format!(
            "<h1>Outbox</h1><p class=\"note\">{} deliveries wait.</p><table><tr><th>call</th>\
             <th>kind</th><th>why it waits</th><th>attempts</th><th>next attempt</th><th></th>\
             </tr>{rows}</table>",
            items.len()
        )
    };
    super::answer("Outbox", body, false)
}
