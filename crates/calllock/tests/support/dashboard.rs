//! A fake dashboard (`FakeHttp`) that accepts every job, call record and
//! alert, for tests whose calls are delivered to it.
#![allow(dead_code)]

use providers::fake::http::{FakeHttp, FakeResponse};
use serde_json::json;

/// Answers `/jobs` with a job and lead id, `/calls` and `/alerts` with
/// success.
pub fn accepting() -> FakeHttp {
    let fake = FakeHttp::start();
    fake.set(
        "/jobs",
        vec![FakeResponse::json(
            200,
            json!({"success": true, "job_id": "job-1", "lead_id": "lead-1"}),
        )],
    );
    for path in ["/calls", "/alerts"] {
        fake.set(
            path,
            vec![FakeResponse::json(200, json!({"success": true}))],
        );
    }
    fake
}
