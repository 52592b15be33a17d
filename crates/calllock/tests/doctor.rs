//! `calllock doctor` against fake vendors on loopback (issue 15, item 9):
//! it tests what will be used — an authenticated dashboard request — and a
//! dashboard answering 500 is a failure, not "reachable".

use providers::fake::http::{FakeHttp, FakeResponse};
use serde_json::json;
use std::process::Command;

const SECRET: &str = "doctor-secret";

fn doctor(dashboard: &FakeHttp) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_calllock"))
        .env_remove("CALLLOCK_CONFIG")
        .env_remove("OPENAI_API_KEY")
        .env_remove("V2_BACKEND_URL")
        .env("CALLLOCK_DATABASE", dir.path().join("d.db"))
        .env("DASHBOARD_JOBS_URL", format!("{}/jobs", dashboard.url()))
        .env("DASHBOARD_CALLS_URL", format!("{}/calls", dashboard.url()))
        .env(
            "DASHBOARD_ALERTS_URL",
            format!("{}/alerts", dashboard.url()),
        )
        .env("DASHBOARD_WEBHOOK_SECRET", SECRET)
        .env("DASHBOARD_USER_EMAIL", "owner@example.com")
        .arg("doctor")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).to_string(),
    )
}

#[test]
fn doctor_sends_an_authenticated_request_and_fails_on_a_500() {
    let ok = FakeHttp::start();
    for path in ["/jobs", "/calls", "/alerts"] {
        ok.set(
            path,
            vec![FakeResponse::json(200, json!({"success": true}))],
        );
    }
    let (healthy, report) = doctor(&ok);
    assert!(healthy, "{report}");
    let reqs = ok.requests();
    assert_eq!(reqs.len(), 3, "one probe per URL");
    for r in &reqs {
        assert_eq!(r.header("X-Webhook-Secret"), Some(SECRET), "{}", r.path);
        assert_eq!(
            r.header("X-Webhook-Signature"),
            Some(providers::dashboard::sign(SECRET, b"").as_str())
        );
        assert_ne!(r.method, "POST", "a probe must not create anything");
    }

    let failing = FakeHttp::start();
    failing.set(
        "/jobs",
        vec![FakeResponse::json(500, json!({"error": "boom"}))],
    );
    failing.set("/calls", vec![FakeResponse::json(200, json!({}))]);
    failing.set("/alerts", vec![FakeResponse::json(200, json!({}))]);
    let (healthy, report) = doctor(&failing);
    assert!(
        !healthy,
        "a dashboard answering 500 is not healthy:\n{report}"
    );
    assert!(
        report
            .lines()
            .any(|l| l.starts_with("FAIL") && l.contains("/jobs") && l.contains("500")),
        "{report}"
    );

    let refusing = FakeHttp::start();
    for path in ["/jobs", "/calls", "/alerts"] {
        refusing.set(
            path,
            vec![FakeResponse::json(401, json!({"error": "bad secret"}))],
        );
    }
    let (healthy, report) = doctor(&refusing);
    assert!(!healthy);
    assert!(report.contains("refused our secret"), "{report}");
}

/// `calllock doctor` with Deepgram at `url` and `key` (nothing else set).
fn doctor_stt(url: &str, key: &str) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_calllock"))
        .env_remove("CALLLOCK_CONFIG")
        .env_remove("OPENAI_API_KEY")
        .env_remove("V2_BACKEND_URL")
        .env_remove("DASHBOARD_JOBS_URL")
        .env("CALLLOCK_DATABASE", dir.path().join("d.db"))
        .env("DEEPGRAM_API_KEY", key)
        .env("CALLLOCK_DEEPGRAM_URL", url)
        .arg("doctor")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).to_string(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_opens_a_deepgram_socket_with_the_key_and_names_a_refused_one() {
    use providers::deepgram::fake::{FakeBehaviour, FakeDeepgram};
    let dg = FakeDeepgram::start(FakeBehaviour::default()).await;
    let url = dg.base_url();
    let (healthy, report) = tokio::task::spawn_blocking({
        let url = url.clone();
        move || doctor_stt(&url, "test-key")
    })
    .await
    .unwrap();
    assert!(healthy, "{report}");
    assert!(
        report
            .lines()
            .any(|l| l.starts_with("ok") && l.contains("stt") && l.contains("opens a socket")),
        "{report}"
    );
    let log = dg.log();
    assert_eq!(log.connections, 1);
    assert_eq!(log.binary_frames, 0, "a probe sends no audio");
    let (healthy, report) =
        tokio::task::spawn_blocking(move || doctor_stt(&url, "wrong-secret-key"))
            .await
            .unwrap();
    assert!(!healthy, "{report}");
    assert!(
        report.lines().any(|l| l.starts_with("FAIL")
            && l.contains("stt")
            && l.contains("401")
            && l.contains("DEEPGRAM_API_KEY")),
        "{report}"
    );
    assert!(
        !report.contains("wrong-secret-key"),
        "the key is never printed"
    );
}
