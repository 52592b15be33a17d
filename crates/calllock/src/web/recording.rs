//! A call's recording on the dashboard: the player on the call page and
//! `/calls/{id}/recording.wav` (8 kHz stereo µ-law: left the caller, right
//! the agent), served with Range requests so the player can seek.

use super::html::esc;
use crate::serve::App;
use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use tower::ServiceExt;
use tower_http::services::ServeFile;

/// The call page's "Recording" section.
pub(super) fn section(app: &App, id: &str, live: bool) -> String {
    let Some(rec) = &app.recordings else {
        return "<section><h2>Recording</h2><p class=\"note\">Calls are not recorded \
                (<code>recording.enabled = false</code>).</p></section>"
            .into();
    };
    if rec.file(id).is_some() {
        let src = format!("/calls/{}/recording.wav", esc(id));
        return format!(
            "<section><h2>Recording</h2><audio id=\"recording\" controls preload=\"metadata\" \
             src=\"{src}\"></audio><p class=\"note\">Left: the caller, right: the agent. \
             <a href=\"{src}\" download>Download</a></p></section>"
        );
    }
    let note = if live || rec.in_progress(id) {
        "Recording; it can be played when the call ends."
    } else {
        "No recording of this call (it had no audio, or it was made while recording was off)."
    };
    format!("<section><h2>Recording</h2><p class=\"note\">{note}</p></section>")
}

/// `GET /calls/{id}/recording.wav`.
pub(super) async fn file(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    req: Request,
) -> Response {
    if super::signed_in(&app, req.headers()).is_none() {
        return super::to_login();
    }
    let Some(rec) = &app.recordings else {
        return super::message(
            StatusCode::NOT_FOUND,
            "Recording",
            "Calls are not recorded (recording.enabled = false).",
        );
    };
    let Some(path) = rec.file(&id) else {
        return super::message(
            StatusCode::NOT_FOUND,
            "Recording",
            &format!("No recording of call {id}."),
        );
    };
    let served = ServeFile::new_with_mime(&path, &"audio/wav".parse().expect("a MIME type"))
        .oneshot(req)
        .await;
    let mut res = match served {
        Ok(r) => r.map(axum::body::Body::new),
        Err(e) => match e {},
    };
    let h = res.headers_mut();
    // A recording is personal data: never kept by a shared cache.
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, no-store"),
    );
    if let Ok(v) = HeaderValue::from_str(&format!("inline; filename=\"{id}.wav\"")) {
        h.insert(header::CONTENT_DISPOSITION, v);
    }
    res.into_response()
}
