//! Signing in to the operator's dashboard and API (see
//! [`crate::operator`]): `GET /login` (the form), `POST /login`, `POST
//! /logout`.
//!
//! `POST /login` answers, besides the session (303) or a wrong password
//! (401): 429 with `Retry-After` when this client, or everyone together,
//! used up the attempts of the window ([`SignInLimits`]); 503 with
//! `Retry-After` when the password checks are all busy, or no password is
//! set. Each answer is the form again with why, in words.

use crate::operator::{
    cookie_token, device_token, forwarded_client, is_known_device, Refused, SignInLimits, COOKIE,
    DEVICE_COOKIE, DEVICE_TTL, PASSWORD_CONFIRM_EVERY, SESSION_TTL,
};
use crate::serve::app::App;
use axum::extract::{ConnectInfo, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The password hash in force: the configured one, else the database's
/// (`None`: no password is set).
async fn read_password_hash(app: &App) -> Result<Option<String>, store::StoreError> {
    let configured = app.cfg.serve.operator_password_hash.trim();
    if !configured.is_empty() {
        return Ok(Some(configured.to_string()));
    }
    app.vendors.store.operator_password_hash().await
}

/// [`read_password_hash`], a failed read logged and taken as none.
async fn password_hash(app: &App) -> Option<String> {
    read_password_hash(app).await.unwrap_or_else(|e| {
        tracing::error!(error = %e, "cannot read the operator password");
        None
    })
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

/// The session of a request's cookie (signed in with the password in
/// force, as [`fresh_password`] read it before the request went on).
pub(crate) fn session_of(
    app: &App,
    headers: &HeaderMap,
) -> Option<(String, crate::operator::Session)> {
    let cookies = headers.get(header::COOKIE)?.to_str().ok()?;
    let token = cookie_token(cookies)?;
    app.operator.session(token).map(|s| (token.to_string(), s))
}

/// The client a sign-in comes from: the connecting address, or behind a
/// trusted proxy the last `X-Forwarded-For` entry (see
/// [`forwarded_client`] for why the last).
fn client_of(app: &App, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
    if !app.cfg.serve.trusted_proxy {
        return peer;
    }
    forwarded_client(
        peer,
        headers
            .get_all("x-forwarded-for")
            .iter()
            .map(|v| v.to_str().unwrap_or("")),
    )
}

/// The form with `message`, waiting `retry_after` (whole seconds, at
/// least one) said in `Retry-After`.
fn page_retry(status: StatusCode, message: &str, retry_after: Duration) -> Response {
    let secs = retry_after.as_secs() + u64::from(retry_after.subsec_nanos() > 0);
    let mut r = page(status, message);
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(secs.max(1)));
    r
}

/// "5 seconds", "1 minute", "2 minutes".
fn how_long(d: Duration) -> String {
    let secs = (d.as_secs() + u64::from(d.subsec_nanos() > 0)).max(1);
    match secs {
        1 => "a second".into(),
        s if s < 60 => format!("{s} seconds"),
        s if s < 120 => "a minute".into(),
        s => format!("{} minutes", s.div_ceil(60)),
    }
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
        super::html::esc(message)
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
/// the dashboard, or the form again with why not. The attempt is counted
/// before the password is checked (a success uncounts it), and the check
/// runs in the operator's bounded pool.
pub(super) async fn sign_in(
    State(app): State<Arc<App>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    form: Result<
        axum::extract::Form<HashMap<String, String>>,
        axum::extract::rejection::FormRejection,
    >,
) -> Response {
    let ip = client_of(&app, peer.ip(), &headers);
    let limits = SignInLimits::of(&app.cfg.serve);
    // A browser that signed in before is exempt from the global back-off
    // (its token is checked against the password in force; only a request
    // that carries one costs the extra read).
    let known_device = match device_cookie(&headers) {
        Some(token) => password_hash(&app)
            .await
            .is_some_and(|hash| is_known_device(token, &hash)),
        None => false,
    };
    let attempt = match app
        .operator
        .reserve(ip, &limits, Instant::now(), known_device)
    {
        Ok(a) => a,
        Err(refused) => {
            let wait = how_long(refused.retry_after());
            let message = match refused {
                Refused::Client(_) => {
                    format!("Too many failed sign-ins from this address; try again in {wait}.")
                }
                Refused::Everyone(_) => format!(
                    "Too many sign-in attempts on this server just now, so sign-in is \
                     paused for everyone; try again in {wait}."
                ),
            };
            return page_retry(
                StatusCode::TOO_MANY_REQUESTS,
                &message,
                refused.retry_after(),
            );
        }
    };
    let read_at = Instant::now();
    let Some(hash) = password_hash(&app).await else {
        app.operator.give_back(attempt);
        return page(
            StatusCode::SERVICE_UNAVAILABLE,
            "No operator password is set: run `calllock operator password` on the server.",
        );
    };
    let password = form
        .as_ref()
        .ok()
        .and_then(|f| f.get("password"))
        .cloned()
        .unwrap_or_default();
    let ok = match app
        .operator
        .check_password(password, hash.clone(), &limits)
        .await
    {
        Ok(ok) => ok,
        Err(crate::operator::Busy) => {
            app.operator.give_back(attempt);
            tracing::warn!(%ip, "sign-in refused: the password checks are all busy");
            return page_retry(
                StatusCode::SERVICE_UNAVAILABLE,
                "The server is busy checking other sign-ins; try again in a few seconds.",
                Duration::from_secs(5),
            );
        }
    };
    if !ok {
        // The attempt stays counted.
        drop(attempt);
        tracing::warn!(%ip, "a failed operator sign-in");
        return page(StatusCode::UNAUTHORIZED, "Wrong password.");
    }
    app.operator.give_back(attempt);
    let (token, _) = app.operator.sign_in(&hash, read_at);
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
    // This browser is known from now on (sent only to /login).
    let device = format!(
        "{DEVICE_COOKIE}={}; Path=/login; HttpOnly; SameSite=Strict; Max-Age={}{secure}",
        device_token(&hash),
        DEVICE_TTL.as_secs()
    );
    let mut r = (StatusCode::SEE_OTHER, [(header::LOCATION, "/")]).into_response();
    for c in [cookie, device] {
        if let Ok(v) = HeaderValue::from_str(&c) {
            r.headers_mut().append(header::SET_COOKIE, v);
        }
    }
    r
}

/// The known-device token among a request's cookies.
fn device_cookie(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|p| p.trim().split_once('='))
        .find(|(k, _)| *k == DEVICE_COOKIE)
        .map(|(_, v)| v)
        .filter(|v| !v.is_empty())
}

/// Middleware: a request with a session cookie is judged against the
/// password hash in force as read at most [`PASSWORD_CONFIRM_EVERY`] ago —
/// when what this process knows is older, the hash is read again *before*
/// the request goes on (a one-row read), so not even the first request
/// after `calllock operator password` gets in with an old session.
pub(crate) async fn fresh_password(
    State(app): State<Arc<App>>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let with_session = req
        .headers()
        .get(header::COOKIE)
        .and_then(|v| v.to_str().ok())
        .and_then(cookie_token)
        .is_some();
    if with_session
        && app
            .operator
            .password_stale(PASSWORD_CONFIRM_EVERY, Instant::now())
    {
        let read_at = Instant::now();
        match read_password_hash(&app).await {
            Ok(hash) => app.operator.confirmed(hash.as_deref(), read_at),
            // What was known stays, and stays stale: the next request
            // reads again.
            Err(e) => tracing::error!(error = %e, "cannot read the operator password"),
        }
    }
    next.run(req).await
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
