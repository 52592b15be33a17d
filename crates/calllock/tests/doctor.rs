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
/// `calllock doctor` with these variables (and no other vendor).
fn doctor_with(vars: &[(&str, &str)]) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_calllock"));
    for v in [
        "CALLLOCK_CONFIG",
        "OPENAI_API_KEY",
        "V2_BACKEND_URL",
        "DASHBOARD_JOBS_URL",
        "DEEPGRAM_API_KEY",
        "INWORLD_API_KEY",
    ] {
        cmd.env_remove(v);
    }
    cmd.env("CALLLOCK_DATABASE", dir.path().join("d.db"));
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let out = cmd.arg("doctor").output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).to_string(),
    )
}

/// Deepgram (live socket and Aura) at the fakes with `key`.
fn doctor_stt(url: &str, tts_url: &str, key: &str) -> (bool, String) {
    doctor_with(&[
        ("DEEPGRAM_API_KEY", key),
        ("CALLLOCK_DEEPGRAM_URL", url),
        ("CALLLOCK_DEEPGRAM_TTS_URL", tts_url),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_checks_the_voices_and_names_a_refused_inworld_key() {
    use providers::inworld::fake::{FakeConfig, FakeInworld};
    let iw = FakeInworld::start(FakeConfig::default()).await;
    let url = iw.base_url();
    let run = |key: &'static str| {
        let url = url.clone();
        tokio::task::spawn_blocking(move || {
            doctor_with(&[("INWORLD_API_KEY", key), ("CALLLOCK_INWORLD_URL", &url)])
        })
    };
    let (healthy, report) = run("test-key").await.unwrap();
    assert!(healthy, "{report}");
    assert!(
        report
            .lines()
            .any(|l| l.starts_with("ok") && l.contains("tts") && l.contains("Inworld at")),
        "{report}"
    );
    assert!(
        report
            .lines()
            .any(|l| l.contains("speaks with Inworld, then the offline voice")),
        "{report}"
    );
    let (healthy, report) = run("wrong-secret-key").await.unwrap();
    assert!(!healthy, "{report}");
    assert!(
        report
            .lines()
            .any(|l| l.starts_with("FAIL") && l.contains("tts") && l.contains("INWORLD_API_KEY")),
        "{report}"
    );
    assert!(
        !report.contains("wrong-secret-key"),
        "the key is never printed"
    );
    // No voice configured: the offline voice, and healthy.
    let (healthy, report) = tokio::task::spawn_blocking(|| doctor_with(&[]))
        .await
        .unwrap();
    assert!(healthy, "{report}");
    assert!(report.contains("the offline speech codec only"), "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_opens_a_deepgram_socket_with_the_key_and_names_a_refused_one() {
    use providers::deepgram::fake::{FakeBehaviour, FakeDeepgram};
    let dg = FakeDeepgram::start(FakeBehaviour::default()).await;
    let aura = providers::deepgram::aura_fake::FakeAura::start(Default::default()).await;
    let url = dg.base_url();
    let tts_url = aura.base_url();
    let (healthy, report) = tokio::task::spawn_blocking({
        let (url, tts_url) = (url.clone(), tts_url.clone());
        move || doctor_stt(&url, &tts_url, "test-key")
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
    assert!(
        report
            .lines()
            .any(|l| l.starts_with("ok") && l.contains("Deepgram Aura at")),
        "{report}"
    );
    let log = dg.log();
    assert_eq!(log.connections, 1);
    assert_eq!(log.binary_frames, 0, "a probe sends no audio");
    let (healthy, report) =
        tokio::task::spawn_blocking(move || doctor_stt(&url, &tts_url, "wrong-secret-key"))
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

#[test]
fn doctor_says_where_recordings_go_and_fails_when_they_cannot_be_kept() {
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("rec");
    let (healthy, report) = doctor_with(&[("CALLLOCK_RECORDINGS_DIR", rec.to_str().unwrap())]);
    assert!(healthy, "{report}");
    let line = report
        .lines()
        .find(|l| l.contains("recordings"))
        .unwrap_or_else(|| panic!("no recordings line: {report}"));
    assert!(
        line.starts_with("ok") && line.contains("writable") && line.contains("90 days"),
        "{line}"
    );
    assert!(rec.is_dir(), "the folder is created");

    let file = dir.path().join("a-file");
    std::fs::write(&file, b"not a folder").unwrap();
    let (healthy, report) = doctor_with(&[("CALLLOCK_RECORDINGS_DIR", file.to_str().unwrap())]);
    assert!(!healthy, "{report}");
    assert!(
        report
            .lines()
            .any(|l| l.starts_with("FAIL") && l.contains("cannot write there")),
        "{report}"
    );
    let (healthy, report) = doctor_with(&[
        ("CALLLOCK_RECORDINGS_DIR", file.to_str().unwrap()),
        ("CALLLOCK_RECORDING", "off"),
    ]);
    assert!(healthy, "{report}");
    assert!(report.contains("calls are not recorded"), "{report}");
}
