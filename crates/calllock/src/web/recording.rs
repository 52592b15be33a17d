//! A call's recording on the dashboard: the player on the call page and
//! `/calls/{id}/recording.wav` (8 kHz stereo µ-law: left the caller, right
//! the agent), served with Range requests so the player can seek.
//!
//! A `Range` the server cannot use is ignored, as RFC 9110 §14.2 says —
//! a malformed one, another unit, several ranges at once — and the whole
//! file is sent (200). A well-formed single range is served (206), or
//! answered 416 when it lies beyond the file's end.

use super::html::esc;
use crate::serve::app::App;
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
    mut req: Request,
) -> Response {
    if super::page::signed_in(&app, req.headers()).is_none() {
        return super::page::to_login();
    }
    let Some(rec) = &app.recordings else {
        return super::page::message(
            StatusCode::NOT_FOUND,
            "Recording",
            "Calls are not recorded (recording.enabled = false).",
        );
    };
    let Some(path) = rec.file(&id) else {
        return super::page::message(
            StatusCode::NOT_FOUND,
            "Recording",
            &format!("No recording of call {id}."),
        );
    };
    let usable = req
        .headers()
        .get(header::RANGE)
        .map(|v| v.to_str().is_ok_and(one_byte_range));
    if usable == Some(false) {
        req.headers_mut().remove(header::RANGE);
    }
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

/// Whether a `Range` value is one well-formed byte range — `bytes=0-99`,
/// `bytes=100-`, `bytes=-500` (RFC 9110 §14.1.1; the last position, when
/// given, not before the first). Anything else is to be ignored.
fn one_byte_range(value: &str) -> bool {
    // Exactly as the file server reads it: `bytes=`, no spaces.
    let Some(spec) = value.strip_prefix("bytes=") else {
        return false;
    };
    let Some((first, last)) = spec.split_once('-') else {
        return false;
    };
    let number = |s: &str| -> Option<u64> {
        (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    match (first.is_empty(), last.is_empty()) {
        // `-N`: the last N bytes.
        (true, false) => number(last).is_some(),
        // `N-`: from N to the end.
        (false, true) => number(first).is_some(),
        (false, false) => matches!((number(first), number(last)), (Some(a), Some(b)) if a <= b),
        (true, true) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::one_byte_range;

    #[test]
    fn only_one_well_formed_byte_range_is_used() {
        for ok in [
            "bytes=0-43",
            "bytes=100-",
            "bytes=-500",
            "bytes=7-7",
            "bytes=99999999-",
        ] {
            assert!(one_byte_range(ok), "{ok}");
        }
        for ignored in [
            "bytes=abc",
            "Bytes = 7-7",
            "bytes= 0-1",
            "bytes=5-2",
            "bytes=-",
            "bytes=",
            "bytes=0-1,4-5",
            "items=0-1",
            "0-1",
            "bytes=1-2-3",
            "bytes=+1-2",
            "bytes=99999999999999999999999-",
            "",
        ] {
            assert!(!one_byte_range(ignored), "{ignored}");
        }
    }
}
