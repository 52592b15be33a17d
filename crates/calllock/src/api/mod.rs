//! The operator's JSON API, served by `calllock serve` under `/api`:
//!
//! | route | answers |
//! |---|---|
//! | `GET /api/calls` | calls, newest first, filtered, a page at a time |
//! | `GET /api/calls/{id}` | one call: its summary, record and transcript |
//! | `GET /api/calls/{id}/events` | one call's event log (live calls too) |
//! | `GET /api/outbox` | deliveries waiting, why, and when they are retried |
//! | `POST /api/outbox/{id}/retry` | retry a waiting delivery now |
//! | `GET /api/session` | the signed-in operator's session (its CSRF token) |
//! | `GET /api/openapi.json` | the OpenAPI 3.1 document of all of this |
//!
//! Every route needs the signed-in operator's session cookie (see
//! [`crate::operator`]) or `Authorization: Bearer <serve.api_token>`. A
//! change (`POST`) made with the cookie must carry the session's CSRF token
//! in `X-CSRF-Token`. Errors are JSON, `{"error": "…"}`, with 400 (a bad
//! parameter, named), 401, 403 (no CSRF token) or 404; a store failure is a
//! 503 that says so. Shapes are those of [`openapi::document`].

pub mod openapi;

use crate::serve::app::App;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;
use store::{CallQuery, CallStatus, CallSummary, Cursor, MAX_PAGE};

/// The page size when none is asked for.
pub const DEFAULT_PAGE: u32 = 50;

/// The `/api` routes.
pub(crate) fn router() -> axum::Router<Arc<App>> {
    axum::Router::new()
        .route("/api/calls", get(calls))
        .route("/api/calls/{id}", get(call))
        .route("/api/calls/{id}/events", get(events))
        .route("/api/outbox", get(outbox))
        .route("/api/outbox/{id}/retry", axum::routing::post(retry))
        .route("/api/session", get(session))
        .route("/api/openapi.json", get(openapi))
        // The catch-all needs a non-empty rest: `/api` and `/api/` (also
        // what a client makes of `/api/calls/..`) are named on their own.
        .route("/api", axum::routing::any(no_route))
        .route("/api/", axum::routing::any(no_route))
        .route("/api/{*rest}", axum::routing::any(no_route))
}

/// Any other `/api…` path: a JSON 404 (after the token check).
async fn no_route(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    uri: axum::http::Uri,
) -> ApiError {
    if let Err(e) = authorized(&app, &headers) {
        return e;
    }
    ApiError(
        StatusCode::NOT_FOUND,
        format!("no API route {} (see /api/openapi.json)", uri.path()),
    )
}

/// An API error: its status and what to say.
struct ApiError(StatusCode, String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut r = (self.0, axum::Json(json!({ "error": self.1 }))).into_response();
        if self.0 == StatusCode::UNAUTHORIZED {
            r.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Bearer"),
            );
        }
        r
    }
}

fn bad(what: impl Into<String>) -> ApiError {
    ApiError(StatusCode::BAD_REQUEST, what.into())
}

fn store_failed(e: store::StoreError) -> ApiError {
    tracing::error!(error = %e, "API: the database failed");
    ApiError(
        StatusCode::SERVICE_UNAVAILABLE,
        "the database is unavailable".into(),
    )
}

/// Who is asking.
enum Caller {
    /// The API token.
    Token,
    /// The signed-in operator (a session cookie).
    Session(crate::operator::Session),
}

/// The API token or a session, or why not.
fn authorized(app: &App, headers: &HeaderMap) -> Result<Caller, ApiError> {
    if crate::serve::auth::bearer_ok(headers, &app.cfg.serve.api_token) {
        return Ok(Caller::Token);
    }
    if let Some((_, s)) = crate::web::signin::session_of(app, headers) {
        return Ok(Caller::Session(s));
    }
    Err(ApiError(
        StatusCode::UNAUTHORIZED,
        "sign in (/login) or send an API token (Authorization: Bearer <serve.api_token>)".into(),
    ))
}

/// [`authorized`] for a change: a session must also carry its CSRF token.
fn authorized_change(app: &App, headers: &HeaderMap) -> Result<Caller, ApiError> {
    let who = authorized(app, headers)?;
    if let Caller::Session(s) = &who {
        if !crate::web::signin::csrf_ok(headers, &s.csrf) {
            return Err(ApiError(
                StatusCode::FORBIDDEN,
                "a change needs the session's CSRF token (X-CSRF-Token; see /api/session)".into(),
            ));
        }
    }
    Ok(who)
}

/// The query parameters, or a JSON 400 saying why they cannot be read
/// (e.g. not UTF-8 once decoded).
fn query_of(
    q: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Result<HashMap<String, String>, ApiError> {
    q.map(|Query(p)| p)
        .map_err(|e| bad(format!("the query cannot be read: {}", e.body_text())))
}

/// The call id of the path, or a JSON 400.
fn path_of(p: Result<Path<String>, PathRejection>) -> Result<String, ApiError> {
    p.map(|Path(id)| id)
        .map_err(|e| bad(format!("the call id cannot be read: {}", e.body_text())))
}

/// Reject parameters the route does not know (a typo is an error, not an
/// unfiltered answer).
fn only(params: &HashMap<String, String>, known: &[&str]) -> Result<(), ApiError> {
    let mut unknown: Vec<&str> = params
        .keys()
        .map(String::as_str)
        .filter(|k| !known.contains(k))
        .collect();
    unknown.sort_unstable();
    match unknown.first() {
        None => Ok(()),
        Some(k) => Err(bad(format!(
            "unknown parameter {k:?} (known: {})",
            known.join(", ")
        ))),
    }
}

/// The call query of `GET /api/calls`' parameters.
pub fn call_query(params: &HashMap<String, String>) -> Result<CallQuery, String> {
    let text = |k: &str| {
        params
            .get(k)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let secs = |k: &str| -> Result<Option<i64>, String> {
        text(k)
            .map(|v| {
                v.parse::<i64>()
                    .map_err(|_| format!("{k} must be Unix seconds, not {v:?}"))
            })
            .transpose()
    };
    let limit = match text("limit") {
        None => DEFAULT_PAGE,
        Some(v) => match v.parse::<u32>() {
            Ok(n) if (1..=MAX_PAGE).contains(&n) => n,
            _ => return Err(format!("limit must be 1 to {MAX_PAGE}, not {v:?}")),
        },
    };
    let status = match text("status").as_deref() {
        None => None,
        Some("live") | Some("active") => Some(CallStatus::Active),
        Some("completed") => Some(CallStatus::Completed),
        Some("interrupted") => Some(CallStatus::Interrupted),
        Some(other) => {
            return Err(format!(
                "status must be live, completed or interrupted, not {other:?}"
            ))
        }
    };
    let after = match text("cursor") {
        None => None,
        Some(c) => Some(Cursor::decode(&c).ok_or_else(|| format!("not a cursor: {c:?}"))?),
    };
    Ok(CallQuery {
        final_state: text("final_state"),
        priority: text("priority"),
        caller: text("caller"),
        since: secs("since")?,
        until: secs("until")?,
        status,
        after,
        limit,
    })
}

/// A call in the API's words (the `CallSummary` schema).
fn summary_json(c: &CallSummary, live: bool) -> Value {
    let duration = c
        .ended_at
        .map(|e| ((e - c.started_at).num_milliseconds() as f64 / 1000.0).max(0.0));
    json!({
        "call_id": c.call_id,
        "phone": c.phone,
        "started_at": c.started_at.to_rfc3339(),
        "ended_at": c.ended_at.map(|t| t.to_rfc3339()),
        "duration_s": duration,
        "status": if live { "live" } else { c.status.as_str() },
        "final_state": c.final_state,
        "end_call_reason": c.end_call_reason,
        "booking_status": c.booking_status,
        "urgency": c.urgency,
        "priority": c.priority_color,
        "revenue_tier": c.revenue_tier,
        "customer_name": c.customer_name,
        "problem": c.problem,
    })
}

async fn calls(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    params: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Result<axum::Json<Value>, ApiError> {
    authorized(&app, &headers)?;
    let params = query_of(params)?;
    only(
        &params,
        &[
            "final_state",
            "priority",
            "caller",
            "since",
            "until",
            "status",
            "cursor",
            "limit",
        ],
    )?;
    let q = call_query(&params).map_err(bad)?;
    let page = app
        .vendors
        .store
        .search_calls(&q)
        .await
        .map_err(store_failed)?;
    let calls: Vec<Value> = page
        .calls
        .iter()
        .map(|c| summary_json(c, c.status == CallStatus::Active))
        .collect();
    Ok(axum::Json(json!({
        "calls": calls,
        "next": page.next.map(|c| c.encode()),
    })))
}

/// The call a `/api/calls/{id}…` route names, after the token and the
/// (no) parameters are checked; a JSON 404 when there is none.
async fn named_call(
    app: &App,
    headers: &HeaderMap,
    id: Result<Path<String>, PathRejection>,
    params: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Result<CallSummary, ApiError> {
    authorized(app, headers)?;
    let id = path_of(id)?;
    only(&query_of(params)?, &[])?;
    match app
        .vendors
        .store
        .call_summary(&id)
        .await
        .map_err(store_failed)?
    {
        Some(summary) => Ok(summary),
        None => Err(ApiError(StatusCode::NOT_FOUND, format!("no call {id:?}"))),
    }
}

async fn call(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    id: Result<Path<String>, PathRejection>,
    params: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Result<axum::Json<Value>, ApiError> {
    let summary = named_call(&app, &headers, id, params).await?;
    let full = app
        .vendors
        .store
        .get_call(&summary.call_id)
        .await
        .map_err(store_failed)?;
    let mut v = summary_json(&summary, summary.status == CallStatus::Active);
    let (record, transcript) = match full {
        Some(r) => (r.record, r.transcript),
        None => (Value::Null, json!([])),
    };
    v["record"] = record;
    v["transcript"] = transcript;
    Ok(axum::Json(v))
}

async fn events(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    id: Result<Path<String>, PathRejection>,
    params: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Result<axum::Json<Value>, ApiError> {
    let summary = named_call(&app, &headers, id, params).await?;
    let events: Vec<Value> = app
        .vendors
        .store
        .events(&summary.call_id)
        .await
        .map_err(store_failed)?
        .into_iter()
        .map(|e| json!({"seq": e.seq, "at": e.at_unix, "kind": e.kind, "data": e.data}))
        .collect();
    Ok(axum::Json(
        json!({ "call_id": summary.call_id, "events": events }),
    ))
}

async fn outbox(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    params: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Result<axum::Json<Value>, ApiError> {
    authorized(&app, &headers)?;
    only(&query_of(params)?, &[])?;
    let items: Vec<Value> = app
        .vendors
        .store
        .outbox_pending()
        .await
        .map_err(store_failed)?
        .into_iter()
        .map(|i| {
            json!({
                "id": i.id,
                "call_id": i.call_id,
                "seq": i.seq,
                "kind": i.kind.to_string(),
                "target_url": i.target_url,
                "attempts": i.attempts,
                "next_attempt_at": i.next_attempt_unix,
                "last_error": i.last_error,
                "created_at": i.created_unix,
                "leased_until": i.lease_until,
            })
        })
        .collect();
    Ok(axum::Json(json!({ "items": items })))
}

/// `POST /api/outbox/{id}/retry`: attempt the waiting delivery now and
/// answer with what happened — `{"outcome": "delivered"}` or
/// `{"outcome": "failed", "error", "next_attempt_at"}` (200 both: it was
/// attempted), 409 with why it cannot be attempted now (it waits behind an
/// earlier delivery of its call, or a worker is attempting it), 404 when
/// no such delivery waits. `message` says it in words.
async fn retry(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    id: Result<Path<String>, PathRejection>,
) -> Result<axum::Json<Value>, ApiError> {
    use crate::call::delivery::RetryOutcome;
    authorized_change(&app, &headers)?;
    let id = path_of(id)?;
    let now = chrono::Utc::now().timestamp_millis() as f64 / 1000.0;
    let worker = app.vendors.outbox_worker(&app.cfg);
    // On a task of its own: a client that goes away (or the request
    // timeout) must not stop the attempt between sending and recording
    // its result, which would leave the item leased and sent again later.
    let attempt = {
        let id = id.clone();
        tokio::spawn(async move { worker.retry_now(&id, now).await })
    };
    let outcome = attempt.await.map_err(|e| {
        ApiError(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the attempt failed: {e}"),
        )
    })?;
    match outcome.map_err(store_failed)? {
        RetryOutcome::Delivered(answer) => Ok(axum::Json(json!({
            "id": id,
            "outcome": "delivered",
            "message": "delivered just now",
            "response": answer,
        }))),
        RetryOutcome::Failed {
            error,
            next_attempt_unix,
        } => Ok(axum::Json(json!({
            "id": id,
            "outcome": "failed",
            "error": error,
            "next_attempt_at": next_attempt_unix,
            "message": format!(
                "attempted just now and failed: {error} (the worker tries again in {})",
                crate::call::delivery::in_seconds(next_attempt_unix - now)
            ),
        }))),
        RetryOutcome::Cannot(why) => Err(ApiError(
            StatusCode::CONFLICT,
            format!("not attempted: {why}"),
        )),
        RetryOutcome::NotWaiting(why) => Err(ApiError(StatusCode::NOT_FOUND, why)),
    }
}

async fn session(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
) -> Result<axum::Json<Value>, ApiError> {
    match authorized(&app, &headers)? {
        Caller::Session(s) => Ok(axum::Json(json!({
            "signed_in": true,
            "csrf": s.csrf,
            "expires_in_s": s.expires.saturating_duration_since(std::time::Instant::now()).as_secs(),
        }))),
        Caller::Token => Err(ApiError(
            StatusCode::NOT_FOUND,
            "an API token has no session".into(),
        )),
    }
}

async fn openapi(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
) -> Result<axum::Json<Value>, ApiError> {
    authorized(&app, &headers)?;
    Ok(axum::Json(openapi::document()))
}
