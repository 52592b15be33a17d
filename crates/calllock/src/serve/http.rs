//! The HTTP side of `calllock serve`: `/health`, `/metrics`, the `/twiml`
//! webhook and the `/ws/twilio` upgrade, with Twilio's request signatures.
//!
//! ## Which URL is signed
//!
//! Twilio signs the URL *it* requested. Behind a proxy the server sees
//! another one, so the public base is, in order: `serve.public_url`
//! (`CALLLOCK_PUBLIC_URL`), else — only with `serve.trusted_proxy` —
//! `X-Forwarded-Proto` + `X-Forwarded-Host`, else `http://` + `Host`. The
//! webhook's signed string is that base + path + query, then the POSTed
//! form parameters; the stream's is the `wss://` URL of `<Stream url>`
//! (the base with `http`→`ws`), with no parameters. Both are checked before
//! anything else happens — no vendor connection opens for a forged request.

use super::app::App;
use axum::body::Bytes;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{ConnectInfo, OriginalUri, Query, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use providers::twilio::{signature, twiml};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

/// The server's gauges, read now for a scrape.
async fn scrape(app: &App) -> crate::metrics::Scrape {
    // Open, or half-open with its probe line in flight: lines skip the
    // primary either way.
    let tts_breaker_open = app.voices.has_primary() && !app.voices.breaker().should_try();
    // Bounded: a busy database must not cost the scrape (the gauges keep
    // their last values meanwhile, and the log says so).
    let waiting = tokio::time::timeout(
        std::time::Duration::from_secs(1),
        app.vendors.store.outbox_waiting(),
    )
    .await;
    let outbox = match waiting {
        Ok(Ok(waiting)) => Some(waiting),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "metrics: cannot read the outbox");
            None
        }
        Err(_) => {
            tracing::warn!("metrics: the outbox took over 1 s to read; its gauges are stale");
            None
        }
    };
    crate::metrics::Scrape {
        live_calls: app.calls.live(),
        pacing: app.pacing(),
        tts_breaker_open,
        outbox,
    }
}

/// `GET /metrics`: Prometheus text ([`crate::metrics`]); with
/// `serve.metrics_token` set, only for `Authorization: Bearer <token>`.
pub(super) async fn metrics(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    let token = &app.cfg.serve.metrics_token;
    if !token.is_empty() && !super::auth::bearer_ok(&headers, token) {
        return (
            StatusCode::UNAUTHORIZED,
            [(axum::http::header::WWW_AUTHENTICATE, "Bearer")],
            "a metrics token is required\n",
        )
            .into_response();
    }
    let body = crate::metrics::render(scrape(&app).await);
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        body,
    )
        .into_response()
}

/// Whether a request may read the full health report (it names the
/// database, the vendors and whether signatures are checked): the
/// signed-in operator, a bearer of the metrics or API token, or — on a
/// server that listens on loopback only, so no proxy can relay the world
/// to it unseen — a client on this very machine with no proxy's
/// forwarding headers.
fn may_read_health(app: &App, headers: &HeaderMap, peer: SocketAddr) -> bool {
    let cfg = &app.cfg.serve;
    let forwarded = ["forwarded", "x-forwarded-for", "x-real-ip"]
        .iter()
        .any(|h| headers.contains_key(*h));
    let local = app.addr.ip().is_loopback() && peer.ip().is_loopback();
    (local && !forwarded && !cfg.trusted_proxy)
        || super::auth::bearer_ok(headers, &cfg.metrics_token)
        || super::auth::bearer_ok(headers, &cfg.api_token)
        || crate::web::signin::session_of(app, headers).is_some()
}

/// `GET /health`: `ok`, or 503 `draining` (for load balancers: no
/// sign-in); `?verbose=1`: the full report as JSON, for the operator only
/// ([`may_read_health`]).
pub(super) async fn health(
    State(app): State<Arc<App>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let draining = app.calls.is_draining();
    let status = if draining {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::OK
    };
    let verbose = q
        .get("verbose")
        .is_some_and(|v| !matches!(v.as_str(), "" | "0" | "false"));
    if !verbose {
        let body = if draining { "draining" } else { "ok" };
        return (status, body).into_response();
    }
    if !may_read_health(&app, &headers, peer) {
        return (
            StatusCode::UNAUTHORIZED,
            [(axum::http::header::WWW_AUTHENTICATE, "Bearer")],
            "the full health report needs a signed-in session or the metrics token \
             (Authorization: Bearer <serve.metrics_token>); plain /health needs neither\n",
        )
            .into_response();
    }
    (status, axum::Json(health_report(&app).await)).into_response()
}

/// The server's health in full (`/health?verbose=1`, the dashboard's
/// `/status`).
pub(crate) async fn health_report(app: &App) -> serde_json::Value {
    let draining = app.calls.is_draining();
    let database = match app.vendors.store.list_calls(None, 1).await {
        Ok(_) => serde_json::json!({"ok": true, "kind": app.vendors.store.describe()}),
        Err(e) => serde_json::json!({"ok": false, "error": e.to_string()}),
    };
    let cfg = &app.cfg;
    let pacing = app.pacing();
    serde_json::json!({
        "status": if draining { "draining" } else { "ok" },
        "version": env!("CARGO_PKG_VERSION"),
        "live_calls": app.calls.live(),
        "max_calls": app.calls.max(),
        "tasks": tokio::runtime::Handle::current().metrics().num_alive_tasks(),
        // How late agent audio frames left, against their real-time schedule,
        // over every call since start (bucket bounds, ms).
        "pacing": {
            "frames": pacing.frames,
            "late_p50_ms": pacing.p50_ms,
            "late_p99_ms": pacing.p99_ms,
            "late_max_ms": pacing.max_ms,
            "late_20ms_or_more": pacing.late_20ms,
        },
        // The playout threads (`serve.playout_threads`) and the calls of
        // this process pinned to each now.
        "playout": {
            "threads": app.playout.threads(),
            "calls": app.playout.calls(),
        },
        "database": database,
        "vendors": {
            "llm": app.vendors.responder.name(),
            "backend": format!("{:?}", cfg.backend.kind).to_lowercase(),
            "dashboard": app.vendors.dashboard.is_some(),
            "speech": {
                "ears": app.voices.ears(cfg),
                "ears_fallback": app.voices.ears_fallback(cfg),
                "voices": app.voices.chain,
                "local": app.voices.local().describe(),
            },
            "twilio": {
                "signatures": cfg.twilio.signed(),
                "rest_hang_up": app.rest.is_some(),
            },
        },
    })
}

/// The base URL Twilio used to reach us (no trailing slash).
pub(super) fn public_base(app: &App, headers: &HeaderMap) -> String {
    let configured = app.cfg.serve.public_url.trim().trim_end_matches('/');
    if !configured.is_empty() {
        return configured.to_string();
    }
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.split(',').next().unwrap_or("").trim().to_string())
            .filter(|v| !v.is_empty())
    };
    if app.cfg.serve.trusted_proxy {
        if let (Some(proto), Some(host)) = (header("x-forwarded-proto"), header("x-forwarded-host"))
        {
            return format!("{proto}://{host}");
        }
    }
    let host = header("host").unwrap_or_else(|| app.addr.to_string());
    format!("http://{host}")
}

/// `http(s)://…` → `ws(s)://…`.
fn ws_base(base: &str) -> String {
    if let Some(rest) = base.strip_prefix("https://") {
        format!("wss://{rest}")
    } else if let Some(rest) = base.strip_prefix("http://") {
        format!("ws://{rest}")
    } else {
        base.to_string()
    }
}

/// The full URL of this request as Twilio saw it.
fn signed_url(base: &str, uri: &axum::http::Uri) -> String {
    let path_q = uri.path_and_query().map_or("/", |p| p.as_str());
    format!("{base}{path_q}")
}

/// Whether the request's `X-Twilio-Signature` is valid (always true when
/// no auth token is configured).
fn signature_ok(app: &App, headers: &HeaderMap, url: &str, params: &[(String, String)]) -> bool {
    if !app.cfg.twilio.signed() {
        return true;
    }
    let Some(sig) = headers
        .get("x-twilio-signature")
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    signature::validate(&app.cfg.twilio.auth_token, url, params, sig)
}

/// Whether a request was sent by a web browser on behalf of a page: it
/// carries an `Origin` header (browsers send one on every WebSocket
/// upgrade and cross-site POST), or a `Sec-Fetch-Site` other than `none`
/// (typed in the address bar) or `same-origin`. Twilio sends neither.
fn from_a_browser_page(headers: &HeaderMap) -> bool {
    if headers.contains_key(axum::http::header::ORIGIN) {
        return true;
    }
    headers
        .get("sec-fetch-site")
        .is_some_and(|v| !matches!(v.to_str().unwrap_or(""), "none" | "same-origin"))
}

/// On a server that cannot check Twilio's signatures (no auth token:
/// `calllock web`, a local `serve`), a page on any other site could make
/// the operator's browser place calls — each a record, deliveries to the
/// dashboard, maybe a callback. Such servers refuse the webhook and the
/// stream from browser pages; a signed server needs a signature no page
/// can forge.
fn refused_as_browser(app: &App, headers: &HeaderMap, what: &str) -> Option<Response> {
    if app.cfg.twilio.signed() || !from_a_browser_page(headers) {
        return None;
    }
    let origin = headers
        .get(axum::http::header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    tracing::warn!(
        origin,
        "refused {what} from a web page: this server checks no Twilio signatures, so only \
         non-browser clients (Twilio, `calllock dial`) may place calls"
    );
    metrics::counter!(crate::metrics::CALLS_REFUSED, "reason" => "browser_origin").increment(1);
    Some(
        (
            StatusCode::FORBIDDEN,
            "calls cannot be placed from a web page on a server without Twilio signatures\n",
        )
            .into_response(),
    )
}

fn twiml_response(body: String) -> Response {
    (
        StatusCode::OK,
        [(axum::http::header::CONTENT_TYPE, "text/xml; charset=utf-8")],
        body,
    )
        .into_response()
}

/// `GET|POST /twiml`: connect the call to our stream, or apologise when
/// full (a callback is created for the caller).
pub(super) async fn twiml(
    State(app): State<Arc<App>>,
    method: Method,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(refused) = refused_as_browser(&app, &headers, "/twiml") {
        return refused;
    }
    let base = public_base(&app, &headers);
    let url = signed_url(&base, &uri);
    let form = if method == Method::POST {
        signature::parse_form(&body)
    } else {
        Vec::new()
    };
    if !signature_ok(&app, &headers, &url, &form) {
        tracing::warn!(url, "refused /twiml: missing or invalid X-Twilio-Signature");
        return (StatusCode::FORBIDDEN, "invalid signature").into_response();
    }
    // Parameters: the POSTed form (Twilio's default), else the query.
    let mut params: Vec<(String, String)> = form;
    if params.is_empty() {
        params = uri
            .query()
            .map(|q| signature::parse_form(q.as_bytes()))
            .unwrap_or_default();
    }
    let param = |name: &str| {
        params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    let (from, to, call_sid) = (param("From"), param("To"), param("CallSid"));
    if !app.calls.has_room() {
        let line = agent::prompts::Canned::LinesBusy.text(&app.cfg.business);
        tracing::warn!(
            live = app.calls.live(),
            draining = app.calls.is_draining(),
            from = store::phone_for_logs(&from),
            "a call was turned away (full or draining); creating a callback"
        );
        let reason = if app.calls.is_draining() {
            "draining"
        } else {
            "full"
        };
        metrics::counter!(crate::metrics::CALLS_REFUSED, "reason" => reason).increment(1);
        let app2 = app.clone();
        tokio::spawn(async move { super::app::turned_away(&app2, &from, &call_sid).await });
        return twiml_response(twiml::say_and_hang_up(&line));
    }
    let stream_url = format!("{}/ws/twilio", ws_base(&base));
    let body = twiml::connect_stream(&stream_url, &[("From", from.as_str()), ("To", to.as_str())]);
    twiml_response(body)
}

/// The WebSocket's read buffer. A Twilio message is ~300 bytes (20 ms of
/// µ-law in base64 JSON) and they arrive 20 ms apart, so a read rarely
/// finds more than one; tungstenite's default of 128 KiB, which it zeroes
/// on every read, would cost most of a call's memory (and received
/// messages share the buffer's allocation while they live). Larger
/// messages (up to the size limit) still arrive: the buffer grows for them.
pub(crate) const READ_BUFFER_BYTES: usize = 1024;

/// Outgoing messages wait in a buffer this large until the writer flushes
/// (it does once it has sent all that is queued,
/// [`write_loop`](super::twilio_call::write_loop)): a frame of audio and
/// its mark, or a new line's lead, in one socket write. A fuller buffer is
/// written at once, so a call holds no more than about this.
pub(crate) const WRITE_BUFFER_BYTES: usize = 2048;

/// `GET /ws/twilio`: one call per connection, once its signature holds.
pub(super) async fn stream(
    State(app): State<Arc<App>>,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
    ws: WebSocketUpgrade,
) -> Response {
    if let Some(refused) = refused_as_browser(&app, &headers, "a stream") {
        return refused;
    }
    let url = signed_url(&ws_base(&public_base(&app, &headers)), &uri);
    if !signature_ok(&app, &headers, &url, &[]) {
        tracing::warn!(
            url,
            "refused a stream: missing or invalid X-Twilio-Signature"
        );
        return (StatusCode::FORBIDDEN, "invalid signature").into_response();
    }
    let Some(slot) = app.calls.try_enter() else {
        tracing::warn!("refused a stream: the server is full or draining");
        let reason = if app.calls.is_draining() {
            "draining"
        } else {
            "full"
        };
        metrics::counter!(crate::metrics::CALLS_REFUSED, "reason" => reason).increment(1);
        return (StatusCode::SERVICE_UNAVAILABLE, "full").into_response();
    };
    ws.max_message_size(providers::twilio::media_streams::MAX_MESSAGE_BYTES)
        .read_buffer_size(READ_BUFFER_BYTES)
        .write_buffer_size(WRITE_BUFFER_BYTES)
        .on_upgrade(move |socket| {
            super::twilio_call::run(app, socket, slot, super::twilio_call::Line::Twilio)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ws_base_maps_schemes() {
        assert_eq!(ws_base("https://a.example"), "wss://a.example");
        assert_eq!(ws_base("http://127.0.0.1:8765"), "ws://127.0.0.1:8765");
    }

    #[test]
    fn signed_url_keeps_the_query() {
        let uri: axum::http::Uri = "/twiml?From=%2B1&To=2".parse().unwrap();
        assert_eq!(
            signed_url("https://x.example", &uri),
            "https://x.example/twiml?From=%2B1&To=2"
        );
    }
}
