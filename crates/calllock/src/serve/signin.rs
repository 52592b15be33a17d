//! Signing in to the operator's dashboard and API (see
//! [`crate::operator`]): `GET /login` (the form), `POST /login`, `POST
//! /logout`.

use super::App;
use crate::operator::{cookie_token, verify_password, COOKIE, SESSION_TTL};
use axum::extract::{ConnectInfo, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

/// The password hash in force: the configured one, else the database's.
async fn password_hash(app: &App) -> Option<String> {
    let configured = app.cfg.serve.operator_password_hash.trim();
    if !configured.is_empty() {
        return Some(configured.to_string());
    }
    match app.vendors.store.operator_password_hash().await {
        Ok(h) => h,
        Err(e) => {
            tracing::error!(error = %e, "cannot read the operator password");
            None
        }
    }
}

/// Whether this request reached us over HTTPS (directly as configured, or
/// through a trusted proxy that says so): the cookie is then `Secure`.
fn over_https(app: &App, headers: &HeaderMap) -> bool {
    app.cfg.serve.public_url.starts_with("https://")
        || (app.cfg.serve.trusted_proxy
            && headers
                .get("x-forwarded-proto")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|p| p.eq_ignore_ascii_case("https")))
}

/// The session of a request's cookie.
pub(crate) fn session_of(
    app: &App,
    headers: &HeaderMap,
) -> Option<(String, crate::operator::Session)> {
    let cookies = headers.get(header::COOKIE)?.to_str().ok()?;
    let token = cookie_token(cookies)?;
    app.operator.session(token).map(|s| (token.to_string(), s))
}

fn page(status: StatusCode, message: &str) -> Response {
    let body = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\"><title>CallLock — sign in</title>\
         <style>body{{font:16px system-ui,sans-serif;max-width:24rem;margin:4rem auto;padding:0 1rem}}\
         input,button{{font:inherit;padding:.4rem;margin:.3rem 0;width:100%}}p.m{{color:#a00}}</style>\
         </head><body><h1>CallLock</h1><p class=\"m\">{}</p>\
         <form method=\"post\" action=\"/login\"><label>Operator password\
         <input type=\"password\" name=\"password\" autocomplete=\"current-password\" autofocus required></label>\
         <button type=\"submit\">Sign in</button></form></body></html>",
        crate::web::html::esc(message)
    );
    (status, Html(body)).into_response()
}

/// `GET /login`: the form (and a note when no password is set yet).
pub(super) async fn form(State(app): State<Arc<App>>) -> Response {
    match password_hash(&app).await {
        Some(_) => page(StatusCode::OK, ""),
        None => page(
            StatusCode::OK,
            "No operator password is set: run `calllock operator password` on the server.",
        ),
    }
}

/// `POST /login` (form `password`): a session cookie and a redirect to
/// the dashboard, or the form again with why not.
pub(super) async fn sign_in(
    State(app): State<Arc<App>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    form: Result<
        axum::extract::Form<HashMap<String, String>>,
        axum::extract::rejection::FormRejection,
    >,
) -> Response {
    let ip = peer.ip();
    if !app.operator.may_try(ip) {
        tracing::warn!(%ip, "sign-in refused: too many failures from this address");
        return page(
            StatusCode::TOO_MANY_REQUESTS,
            "Too many failed sign-ins from this address; wait a minute.",
        );
    }
    let Some(hash) = password_hash(&app).await else {
        return page(
            StatusCode::SERVICE_UNAVAILABLE,
            "No operator password is set: run `calllock operator password` on the server.",
        );
    };
    let password = form
        .as_ref()
        .ok()
        .and_then(|f| f.get("password"))
        .map(String::as_str)
        .unwrap_or("");
    // argon2 is deliberately slow: off the runtime's worker threads.
    let pw = password.to_string();
    let ok = tokio::task::spawn_blocking(move || verify_password(&pw, &hash))
        .await
        .unwrap_or(false);
    if !ok {
        app.operator.failed(ip);
        tracing::warn!(%ip, "a failed operator sign-in");
        return page(StatusCode::UNAUTHORIZED, "Wrong password.");
    }
    let (token, _) = app.operator.sign_in();
    tracing::info!(%ip, "the operator signed in");
    let secure = if over_https(&app, &headers) {
        "; Secure"
    } else {
        ""
    };
    let cookie = format!(
        "{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}{secure}",
        SESSION_TTL.as_secs()
    );
    let mut r = (StatusCode::SEE_OTHER, [(header::LOCATION, "/")]).into_response();
    if let Ok(v) = HeaderValue::from_str(&cookie) {
        r.headers_mut().insert(header::SET_COOKIE, v);
    }
    r
}

/// `POST /logout` (with the session's `X-CSRF-Token`): the session ends
/// and the cookie is cleared.
pub(super) async fn sign_out(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    let Some((token, session)) = session_of(&app, &headers) else {
        return (StatusCode::UNAUTHORIZED, "not signed in\n").into_response();
    };
    if !csrf_ok(&headers, &session.csrf) {
        return (
            StatusCode::FORBIDDEN,
            "a CSRF token is required (X-CSRF-Token)\n",
        )
            .into_response();
    }
    app.operator.sign_out(&token);
    let clear = format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0");
    let mut r = StatusCode::NO_CONTENT.into_response();
    if let Ok(v) = HeaderValue::from_str(&clear) {
        r.headers_mut().insert(header::SET_COOKIE, v);
    }
    r
}

/// Whether `headers` carry the session's CSRF token.
pub(crate) fn csrf_ok(headers: &HeaderMap, csrf: &str) -> bool {
    let given = headers
        .get("x-csrf-token")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    !csrf.is_empty() && subtle::ConstantTimeEq::ct_eq(given.as_bytes(), csrf.as_bytes()).into()
}
