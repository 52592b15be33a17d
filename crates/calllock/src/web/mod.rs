//! The operator's web dashboard, served by `calllock serve`: pages
//! rendered on the server from the database (no front-end build, no CDN,
//! everything embedded), refreshed in place while calls are live.
//!
//! | page | shows |
//! |---|---|
//! | `/` | calls, live and finished, newest first, filterable ([`calls`]) |
//! | `/calls/{id}` | one call: first who called, what happens next, the problem, where, when; then transcript, states, tools, fields, deliveries, turn latency, the recording ([`call`]) |
//! | `/calls/{id}/recording.wav` | the call's recording, both sides ([`recording`]) |
//! | `/outbox` | deliveries waiting, why, next attempt; retry now ([`outbox`]) |
//! | `/status` | the server's health: vendors, breakers, database, version |
//! | `/phone` | the browser phone: call the agent with the microphone ([`phone`]) |
//! | `/assets/dashboard.js`, `/assets/phone.js` | the pages' scripts (no inline script) |
//!
//! Every page needs the signed-in operator's session ([`crate::operator`]);
//! without one it redirects to `/login` (and the pages' live refresh
//! follows the browser there). Every answer of the server carries
//! [`security_headers`]. Times are shown on the business's clock
//! ([`html::local_time`]).

pub mod call;
pub mod calls;
pub mod html;
pub mod outbox;
pub mod page;
pub mod phone;
pub mod recording;
pub mod signin;

use crate::serve::app::App;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use page::{answer, signed_in, to_login};
use std::sync::Arc;

/// The dashboard's routes.
pub(crate) fn router() -> axum::Router<Arc<App>> {
    axum::Router::new()
        .route("/login", get(signin::form).post(signin::sign_in))
        .route("/logout", axum::routing::post(signin::sign_out))
        .route("/", get(calls::page))
        .route("/calls/{id}", get(call::page))
        .route("/calls/{id}/recording.wav", get(recording::file))
        .route("/outbox", get(outbox::page))
        .route("/status", get(status))
        .route("/phone", get(phone::page))
        .route("/ws/phone", get(phone::socket))
        .route("/assets/dashboard.js", get(dashboard_js))
        .route("/assets/phone.js", get(phone_js))
}

/// The Content-Security-Policy of every answer: scripts only from this
/// server's own files (no inline script, no `eval`), styles from the page
/// itself, audio (the recordings), fetches and the phone's WebSocket to
/// this origin only, no plugins, never framed by another site (with
/// `X-Frame-Options` for older browsers), forms posted only here.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self' 'unsafe-inline'; img-src 'self' data:; media-src 'self'; \
     connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// The layer that adds the security headers to every answer of the server
/// (pages, API, sign-in, health, Twilio's webhook):
///
/// - `Content-Security-Policy` ([`CONTENT_SECURITY_POLICY`]),
/// - `X-Content-Type-Options: nosniff` (a recording is never read as a page),
/// - `X-Frame-Options: DENY` (no clickjacking in a frame),
/// - `Referrer-Policy: no-referrer` (a call's address never leaks in a link),
/// - `Cache-Control: no-store` unless the handler chose its own: pages and
///   API answers name callers and carry their phone numbers, so no cache —
///   the browser's back button, a proxy — may keep them.
///
/// Added to the router with `axum::middleware::from_fn(security_headers)`.
pub async fn security_headers(req: Request, next: Next) -> Response {
    let mut res = next.run(req).await;
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    if !h.contains_key(header::CACHE_CONTROL) {
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    res
}

/// A script of the dashboard: public (it holds no data), revalidated on
/// each load so a new version is picked up at once.
fn script(js: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        js,
    )
        .into_response()
}

/// `GET /assets/dashboard.js`: [`html::DASHBOARD_JS`].
async fn dashboard_js() -> Response {
    script(html::DASHBOARD_JS)
}

/// `GET /assets/phone.js`: [`phone::PHONE_JS`].
async fn phone_js() -> Response {
    script(phone::PHONE_JS)
}

/// `/status`: what `/health?verbose=1` says, for a person.
async fn status(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    if signed_in(&app, &headers).is_none() {
        return to_login();
    }
    let health = crate::serve::http::health_report(&app).await;
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
