//! The dashboard client against FakeHttp over real loopback sockets: D-17
//! signatures checked independently, the one retry after a (recorded) 2 s
//! wait, idempotency keys, classified single-attempt errors.

use hmac::{Hmac, Mac};
use providers::dashboard::{
    sign, DashboardClient, DashboardConfig, DashboardKind, DeliveryError, Sleeper, RETRY_DELAY,
};
use providers::fake::http::{FakeHttp, FakeResponse, HostMap, RecordedRequest};
use serde_json::json;
use sha2::Sha256;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const SECRET: &str = "test-secret-123";
const JOBS: &str = "https://app.example.com/api/webhook/jobs";
const CALLS: &str = "https://app.example.com/api/webhook/calls";
const ALERTS: &str = "https://alerts.example.com/api/webhook/emergency-alerts";

struct Setup {
    hosts: HostMap,
    client: DashboardClient,
    sleeps: Arc<Mutex<Vec<Duration>>>,
}

fn setup(timeout: Duration) -> Setup {
    let mut hosts = HostMap::new();
    let config = DashboardConfig {
        jobs_url: hosts.local_url(JOBS).unwrap(),
        calls_url: hosts.local_url(CALLS).unwrap(),
        alerts_url: hosts.local_url(ALERTS).unwrap(),
        webhook_secret: SECRET.into(),
        user_email: "owner@example.com".into(),
        timeout,
    };
    let sleeps: Arc<Mutex<Vec<Duration>>> = Arc::default();
    let record = sleeps.clone();
    let sleeper: Sleeper = Arc::new(move |d| {
        record.lock().unwrap().push(d);
        Box::pin(async {})
    });
    let client = DashboardClient::new(config).unwrap().with_sleeper(sleeper);
    Setup {
        hosts,
        client,
        sleeps,
    }
}

fn hmac_hex(key: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key.as_bytes()).unwrap();
    mac.update(body);
    hex::encode(mac.finalize().into_bytes())
}

fn assert_signed(r: &RecordedRequest) {
    assert_eq!(r.method, "POST");
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.header("x-webhook-secret"), Some(SECRET));
    let want = format!("sha256={}", hmac_hex(SECRET, &r.body));
    assert_eq!(r.header("X-Webhook-Signature"), Some(want.as_str()));
}

#[tokio::test]
async fn every_webhook_is_signed_over_the_exact_body() {
    let mut s = setup(Duration::from_secs(5));
    s.hosts
        .set(
            JOBS,
            vec![FakeResponse::json(
                200,
                json!({"success": true, "job_id": "j_1"}),
            )],
        )
        .unwrap();
    s.hosts
        .set(
            CALLS,
            vec![FakeResponse::json(
                200,
                json!({"success": true, "call_id": "c_1"}),
            )],
        )
        .unwrap();
    s.hosts
        .set(
            ALERTS,
            vec![FakeResponse::json(
                200,
                json!({"success": true, "alert_id": "a_1"}),
            )],
        )
        .unwrap();
    let job = json!({"customer_name": "Jonas", "call_id": "call_1", "notes": "naïve ✓ \"quoted\""});
    let call = json!({"call_id": "call_1", "phone_number": "+15125551234"});
    let alert = json!({"phone_number": "+15125551234", "problem_description": "Gas leak"});
    assert_eq!(
        s.client.send_job(&job).await,
        json!({"success": true, "job_id": "j_1"})
    );
    assert_eq!(
        s.client.send_call(&call).await,
        json!({"success": true, "call_id": "c_1"})
    );
    assert_eq!(
        s.client.send_emergency_alert(&alert).await,
        json!({"success": true, "alert_id": "a_1"})
    );
    let reqs = s.hosts.requests();
    let urls: Vec<&str> = reqs.iter().map(|m| m.url.as_str()).collect();
    assert_eq!(urls, [JOBS, CALLS, ALERTS]);
    for (m, payload) in reqs.iter().zip([&job, &call, &alert]) {
        assert_signed(&m.request);
        assert_eq!(m.request.body, serde_json::to_vec(payload).unwrap());
        assert_eq!(m.request.json.as_ref(), Some(payload));
        assert_eq!(m.request.header("idempotency-key"), None);
    }
    assert!(s.sleeps.lock().unwrap().is_empty());
}

#[tokio::test]
async fn one_retry_after_a_two_second_wait() {
    let mut s = setup(Duration::from_secs(5));
    s.hosts
        .set(
            JOBS,
            vec![
                FakeResponse::text(503, "upstream busy"),
                FakeResponse::json(200, json!({"success": true, "lead_id": "L1"})),
            ],
        )
        .unwrap();
    let r = s.client.send_job(&json!({"a": 1})).await;
    assert_eq!(r, json!({"success": true, "lead_id": "L1"}));
    assert_eq!(*s.sleeps.lock().unwrap(), vec![RETRY_DELAY]);
    assert_eq!(RETRY_DELAY, Duration::from_secs(2));
    let reqs = s.hosts.requests();
    assert_eq!(reqs.len(), 2);
    // The retry sends the same bytes with the same signature.
    assert_eq!(reqs[0].request.body, reqs[1].request.body);
    assert_signed(&reqs[1].request);
}

#[tokio::test]
async fn two_failures_give_the_failure_object() {
    let mut s = setup(Duration::from_secs(5));
    s.hosts
        .set(
            CALLS,
            vec![FakeResponse::json(500, json!({"error": "db down"}))],
        )
        .unwrap();
    let r = s.client.send_call(&json!({"call_id": "x"})).await;
    assert_eq!(r["success"], false);
    let keys: Vec<&String> = r.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["error", "success"]);
    let error = r["error"].as_str().unwrap();
    assert!(
        error.contains("HTTP 500") && error.contains("db down"),
        "{error}"
    );
    assert_eq!(s.hosts.request_count(), 2);
    assert_eq!(*s.sleeps.lock().unwrap(), vec![Duration::from_secs(2)]);
}

#[tokio::test]
async fn non_json_success_is_a_failure_and_retried() {
    let mut s = setup(Duration::from_secs(5));
    s.hosts
        .set(
            ALERTS,
            vec![
                FakeResponse::text(200, "<html>ok</html>"),
                FakeResponse::json(200, json!([true])),
            ],
        )
        .unwrap();
    let r = s.client.send_emergency_alert(&json!({})).await;
    assert_eq!(r["success"], false);
    assert!(
        r["error"].as_str().unwrap().contains("not an object"),
        "{r}"
    );
    assert_eq!(s.hosts.request_count(), 2);
}

#[tokio::test]
async fn idempotency_key_is_passed_through() {
    let mut s = setup(Duration::from_secs(5));
    s.hosts
        .set(
            JOBS,
            vec![FakeResponse::json(200, json!({"success": true}))],
        )
        .unwrap();
    let r = s
        .client
        .send(DashboardKind::Job, &json!({"a": 1}), Some("outbox-42"))
        .await;
    assert_eq!(r, json!({"success": true}));
    let body = br#"{"b": 2,   "pretty": true}"#;
    let url = s.client.url_for(DashboardKind::Job).to_string();
    let r = s.client.post_once(&url, body, Some("outbox-43")).await;
    assert_eq!(r, Ok(json!({"success": true})));
    let reqs = s.hosts.requests();
    assert_eq!(reqs[0].request.header("Idempotency-Key"), Some("outbox-42"));
    assert_eq!(reqs[1].request.header("idempotency-key"), Some("outbox-43"));
    // post_once sends and signs exactly the given bytes.
    assert_eq!(reqs[1].request.body, body.to_vec());
    assert_signed(&reqs[1].request);
    assert_eq!(
        reqs[1].request.header("x-webhook-signature"),
        Some(sign(SECRET, body).as_str())
    );
    let bad = s.client.post_once(&url, body, Some("bad\nkey")).await;
    assert!(matches!(bad, Err(DeliveryError::Request(_))), "{bad:?}");
    assert_eq!(s.hosts.request_count(), 2);
}

#[tokio::test]
async fn post_once_is_a_single_classified_attempt() {
    let s = setup(Duration::from_millis(300));
    let fake = s.hosts.fake(JOBS).unwrap();
    let url = s.client.url_for(DashboardKind::Job).to_string();
    let body = b"{}";

    fake.set(
        "/api/webhook/jobs",
        vec![FakeResponse::text(422, "missing field")],
    );
    let e = s.client.post_once(&url, body, None).await.unwrap_err();
    assert_eq!(
        e,
        DeliveryError::Status {
            status: 422,
            body_excerpt: "missing field".into()
        }
    );
    assert_eq!(e.status(), Some(422));
    assert!(e.is_retryable());

    fake.set("/api/webhook/jobs", vec![FakeResponse::text(200, "OK")]);
    let e = s.client.post_once(&url, body, None).await.unwrap_err();
    assert!(
        matches!(e, DeliveryError::NotJson { status: 200, .. }),
        "{e:?}"
    );

    fake.set("/api/webhook/jobs", vec![FakeResponse::NetworkError]);
    let e = s.client.post_once(&url, body, None).await.unwrap_err();
    assert!(matches!(e, DeliveryError::Transport(_)), "{e:?}");
    assert!(
        e.to_string()
            .starts_with("no usable answer from the dashboard"),
        "{e}"
    );

    fake.set(
        "/api/webhook/jobs",
        vec![FakeResponse::delay(
            Duration::from_secs(5),
            FakeResponse::status(200),
        )],
    );
    let e = s.client.post_once(&url, body, None).await.unwrap_err();
    assert_eq!(e, DeliveryError::Timeout(Duration::from_millis(300)));

    assert_eq!(fake.request_count(), 4);
    assert!(s.sleeps.lock().unwrap().is_empty(), "post_once never waits");
}

#[tokio::test]
async fn a_vendor_that_goes_down_and_comes_back() {
    let mut s = setup(Duration::from_secs(5));
    s.hosts
        .set(
            JOBS,
            vec![FakeResponse::json(200, json!({"success": true}))],
        )
        .unwrap();
    let url = s.client.url_for(DashboardKind::Job).to_string();
    assert!(s.client.post_once(&url, b"{}", None).await.is_ok());
    s.hosts.stop_all();
    let e = s.client.post_once(&url, b"{}", None).await.unwrap_err();
    assert!(matches!(e, DeliveryError::Transport(_)), "{e:?}");
    s.hosts.restart_all().unwrap();
    assert_eq!(
        s.client.post_once(&url, b"{}", None).await,
        Ok(json!({"success": true}))
    );
    // A quick bounce: once the client's runtime has run (so its pooled
    // connection notices the close), the next request goes through.
    s.hosts.stop_all();
    s.hosts.restart_all().unwrap();
    tokio::task::yield_now().await;
    assert_eq!(
        s.client.post_once(&url, b"{}", None).await,
        Ok(json!({"success": true}))
    );
    assert_eq!(s.hosts.request_count(), 3);
}

#[tokio::test]
async fn unconfigured_url_and_closed_client_send_nothing() {
    let s = setup(Duration::from_secs(5));
    let client = DashboardClient::new(DashboardConfig {
        jobs_url: s.client.config().jobs_url.clone(),
        webhook_secret: SECRET.into(),
        ..DashboardConfig::default()
    })
    .unwrap();
    let r = client.send_emergency_alert(&json!({})).await;
    assert_eq!(r["success"], false);
    assert!(r["error"].as_str().unwrap().contains("no URL"), "{r}");
    client.close();
    assert!(client.is_closed());
    let r = client.send_job(&json!({})).await;
    assert_eq!(
        r,
        json!({"success": false, "error": "the dashboard client is closed"})
    );
    assert_eq!(s.hosts.request_count(), 0);
}

#[tokio::test]
async fn the_secret_never_appears_in_errors() {
    let mut s = setup(Duration::from_secs(5));
    s.hosts
        .set(
            JOBS,
            vec![FakeResponse::text(403, format!("bad secret {SECRET}"))],
        )
        .unwrap();
    let r = s.client.send_job(&json!({})).await;
    let error = r["error"].as_str().unwrap();
    assert!(
        error.contains("HTTP 403") && error.contains("<redacted>"),
        "{error}"
    );
    assert!(!error.contains(SECRET));
    assert!(!format!("{:?}", s.client).contains(SECRET));
}

#[test]
fn bad_configuration_is_rejected() {
    let e = DashboardClient::new(DashboardConfig {
        jobs_url: "app.example.com/jobs".into(),
        ..DashboardConfig::default()
    })
    .unwrap_err();
    assert!(e.to_string().contains("jobs URL"), "{e}");
    let e = DashboardClient::new(DashboardConfig {
        webhook_secret: "a\r\nb".into(),
        ..DashboardConfig::default()
    })
    .unwrap_err();
    assert!(e.to_string().contains("secret"), "{e}");
}

#[test]
fn signature_format() {
    let s = sign("k", b"body");
    assert_eq!(s, format!("sha256={}", hmac_hex("k", b"body")));
    assert_eq!(s.len(), "sha256=".len() + 64);
    assert!(s["sha256=".len()..]
        .chars()
        .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c)));
    assert_ne!(sign("k", b"body"), sign("k", b"body "));
    assert_ne!(sign("k", b"body"), sign("k2", b"body"));
}

#[test]
fn fake_http_is_usable_without_a_runtime() {
    // The fake runs its own thread; plain blocking code can talk to it.
    let fake = FakeHttp::start();
    fake.set("/x", vec![FakeResponse::json(201, json!({"v": 1}))]);
    use std::io::{Read, Write};
    let mut sock = std::net::TcpStream::connect(("127.0.0.1", fake.port())).unwrap();
    sock.write_all(
        b"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
    )
    .unwrap();
    let mut out = String::new();
    sock.read_to_string(&mut out).unwrap();
    assert!(out.starts_with("HTTP/1.1 201 Created\r\n"), "{out}");
    assert!(out.ends_with("{\"v\":1}"), "{out}");
    assert_eq!(fake.requests()[0].json, Some(json!({})));
}
