//! What every dashboard page shares: whether the operator is signed in,
//! the way to `/login`, and the page around a body ([`answer`],
//! [`message`]).

use super::html;
use crate::serve::app::App;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};

/// The operator's session (else answer [`to_login`]).
pub(crate) fn signed_in(app: &App, headers: &HeaderMap) -> Option<crate::operator::Session> {
    super::signin::session_of(app, headers).map(|(_, s)| s)
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
