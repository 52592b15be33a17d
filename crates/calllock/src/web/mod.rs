//! The operator's web dashboard, served by `calllock serve`: pages
//! rendered on the server from the database (no front-end build, no CDN,
//! everything embedded), refreshed in place while calls are live.
//!
//! | page | shows |
//! |---|---|
//! | `/` | calls, live and finished, newest first, filterable ([`calls`]) |
//! | `/calls/{id}` | one call: transcript, states, tools, fields, deliveries, turn latency, the recording ([`call`]) |
//! | `/calls/{id}/recording.wav` | the call's recording, both sides ([`recording`]) |
//! | `/outbox` | deliveries waiting, why, next attempt; retry now ([`outbox`]) |
//! | `/status` | the server's health: vendors, breakers, database, version |
//! | `/phone` | the browser phone: call the agent with the microphone ([`phone`]) |
//!
//! Every page needs the signed-in operator's session ([`crate::operator`]);
//! without one it redirects to `/login`.

pub mod call;
pub mod calls;
pub mod html;
pub mod outbox;
pub mod phone;
pub mod recording;

use crate::serve::App;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use std::sync::Arc;

/// The dashboard's routes.
pub(crate) fn router() -> axum::Router<Arc<App>> {
    axum::Router::new()
        .route("/", get(calls::page))
        .route("/calls/{id}", get(call::page))
        .route("/calls/{id}/recording.wav", get(recording::file))
        .route("/outbox", get(outbox::page))
        .route("/status", get(status))
        .route("/phone", get(phone::page))
        .route("/ws/phone", get(phone::socket))
}

/// The operator's session (else answer [`to_login`]).
pub(crate) fn signed_in(app: &App, headers: &HeaderMap) -> Option<crate::operator::Session> {
    crate::serve::signin::session_of(app, headers).map(|(_, s)| s)
}

/// The redirect to sign in.
pub(crate) fn to_login() -> Response {
    (StatusCode::SEE_OTHER, [(header::LOCATION, "/login")]).into_response()
}

/// A page, or (with `fragment`) only its live part.
pub(crate) fn answer(title: &str, body: String, fragment: bool) -> Response {
    if fragment {
        Html(body).into_response()
    } else {
        Html(html::page(title, &body)).into_response()
    }
}

/// A message page (an error the operator can act on).
pub(crate) fn message(status: StatusCode, title: &str, text: &str) -> Response {
    let body = format!("<h1>{}</h1><p>{}</p>", html::esc(title), html::esc(text));
    (status, Html(html::page(title, &body))).into_response()
}

/// `/status`: what `/health?verbose=1` says, for a person.
async fn status(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    if signed_in(&app, &headers).is_none() {
        return to_login();
    }
    let health = crate::serve::health_report(&app).await;
    let mut rows = String::new();
    flatten("", &health, &mut rows);
    let body = format!("<h1>Health</h1><table><tr><th>what</th><th>value</th></tr>{rows}</table>");
    answer("Health", body, false)
}

/// Rows of `path → value` for every leaf of `v`.
fn flatten(path: &str, v: &serde_json::Value, rows: &mut String) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                flatten(&p, v, rows);
            }
        }
        other => {
            let text = match other {
                serde_json::Value::String(s) => s.clone(),
                v => v.to_string(),
            };
            rows.push_str(&format!(
                "<tr><td>{}</td><td>{}</td></tr>",
                html::esc(path),
                html::esc(&text)
            ));
        }
    }
}
