//! Fuzzing the V2 and dashboard clients' handling of what comes back
//! (proptest; no nightly needed).
//!
//! Counts per run:
//! * 10,000 random or mutated (status, body) pairs through
//!   `v2::interpret_reply` + `v2::result_for` for all five tools;
//! * 10,000 through `dashboard::interpret_reply` + `dashboard::failure_value`;
//! * 300 random answers (valid JSON, raw bodies, garbage status lines and
//!   headers, truncated messages, dropped connections) served by FakeHttp to
//!   the real V2 client over loopback sockets;
//! * 300 likewise to the real dashboard client (`post_once` and `send` with
//!   its retry).
//!
//! Properties: no panic; every V2 result is the backend's JSON object (only
//! for a 2xx JSON-object answer) or the tool's failure object; every
//! dashboard result is the JSON object or `{success: false, error}`; error
//! texts are one printable line of bounded length.
//! About 2-5 s in a debug build (the socket runs use a fresh random seed
//! each time; a failure prints the minimal input).

use agent::backend::{Backend, ToolCall};
use agent::breaker::CircuitBreaker;
use agent::state::Tool;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use providers::dashboard::{self, DashboardClient, DashboardConfig, DashboardKind, Sleeper};
use providers::fake::http::{FakeHttp, FakeResponse};
use providers::v2::{self, V2Client, V2Config};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

// ---------------------------------------------------------------------------
// Inputs

/// Realistic answers of the V2 backend and the dashboard (SPEC §6.3, §7.8),
/// plus a few typical error pages: the seeds for mutation.
const CORPUS: &[&str] = &[
    r#"{"found":true,"customerName":"Jonas","zipCode":"78745","operatorNotes":["gate code 1234"],"upcomingAppointment":{"date":"Thursday, February 19","time":"3:45 PM","issue":"AC","jobId":"j_1"},"recentCalls":[{"date":"Feb 2","issue":"noise","outcome":"booked"}],"pastAppointments":[],"callbackPromise":{"date":"2026-02-18","issue":"estimate","promisedBy":"Sam"},"message":"Returning customer","force_transition":false}"#,
    r#"{"found":false,"message":"No customer found"}"#,
    r#"{"success":true,"booking_confirmed":true,"booked":true,"appointmentId":"apt_9","confirmationMessage":"Appointment confirmed for Tuesday, February 24 at 9:00 AM","appointment_time":"2026-02-24T15:00:00Z","force_transition":false}"#,
    r#"{"success":true,"force_transition":false,"message":"Callback scheduled"}"#,
    r#"{"success":false,"message":"I'll make sure someone calls you back today."}"#,
    r#"{"success":true,"alertId":"lead_1","message":"Sales lead alert sent successfully"}"#,
    r#"{"success":true,"action_taken":"reschedule","message":"Rescheduled"}"#,
    r#"{"error":"Unauthorized: Invalid API key"}"#,
    r#"{"error":"Tool execution failed"}"#,
    r#"{"success":true,"job_id":"j_123","lead_id":null}"#,
    r#"{"success":true,"call_id":"c_1"}"#,
    r#"{"success":true,"alert_id":"a_1"}"#,
    r#"[{"success":true}]"#,
    r#""ok""#,
    "<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body><h1>502</h1></body></html>",
    "Internal Server Error",
    "",
    "{\"unicode\":\"caf\u{e9} \u{2713} \u{1F600}\",\"esc\":\"\\u0000\\n\\\"\"}",
];

#[derive(Debug, Clone)]
enum Mutation {
    Flip(usize, u8),
    Insert(usize, u8),
    Delete(usize),
    Truncate(usize),
    Duplicate(usize, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(p, b)| Mutation::Flip(p, b)),
        (any::<usize>(), any::<u8>()).prop_map(|(p, b)| Mutation::Insert(p, b)),
        any::<usize>().prop_map(Mutation::Delete),
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), 1usize..64).prop_map(|(p, n)| Mutation::Duplicate(p, n)),
    ]
}

fn mutate(mut body: Vec<u8>, mutations: &[Mutation]) -> Vec<u8> {
    for m in mutations {
        let len = body.len();
        match *m {
            Mutation::Flip(p, b) if len > 0 => body[p % len] ^= b.max(1),
            Mutation::Insert(p, b) => body.insert(p % (len + 1), b),
            Mutation::Delete(p) if len > 0 => {
                body.remove(p % len);
            }
            Mutation::Truncate(p) => body.truncate(p % (len + 1)),
            Mutation::Duplicate(p, n) if len > 0 => {
                let start = p % len;
                let end = (start + n).min(len);
                let piece = body[start..end].to_vec();
                body.splice(start..start, piece);
            }
            _ => {}
        }
    }
    body
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| json!(f)),
        "\\PC{0,16}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map("[a-zA-Z_]{1,10}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A response body: a mutated corpus entry, random bytes, random JSON or
/// random text.
fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => (0..CORPUS.len(), prop::collection::vec(mutation(), 0..6))
            .prop_map(|(i, ms)| mutate(CORPUS[i].as_bytes().to_vec(), &ms)),
        1 => prop::collection::vec(any::<u8>(), 0..256),
        2 => arb_json().prop_map(|v| serde_json::to_vec(&v).unwrap_or_default()),
        1 => "\\PC{0,64}".prop_map(String::into_bytes),
    ]
}

fn status() -> impl Strategy<Value = u16> {
    prop_oneof![
        4 => prop::sample::select(vec![
            200u16, 201, 202, 204, 299, 300, 301, 302, 304, 400, 401, 403, 404, 408, 422, 429,
            500, 502, 503, 504,
        ]),
        1 => any::<u16>(),
    ]
}

fn tool() -> impl Strategy<Value = Tool> {
    prop::sample::select(Tool::BACKEND.to_vec())
}

fn call_for(tool: Tool) -> ToolCall {
    let phone = "+15125551234".to_string();
    let call_id = "CAfuzz".to_string();
    match tool {
        Tool::LookupCaller => ToolCall::LookupCaller { phone, call_id },
        Tool::BookService => ToolCall::BookService {
            customer_name: "Jonas".into(),
            problem: "AC broken".into(),
            address: "4211 Cronkite Rd".into(),
            preferred_time: "2026-02-24T09:00:00-06:00".into(),
            phone,
            call_id,
        },
        Tool::CreateCallback => ToolCall::CreateCallback {
            phone,
            callback_type: "service".into(),
            reason: "".into(),
            customer_name: "".into(),
            urgency: "normal".into(),
            call_id,
        },
        Tool::SendSalesLeadAlert => ToolCall::SendSalesLeadAlert {
            phone,
            reason: "new system".into(),
            call_id,
        },
        _ => ToolCall::ManageAppointment {
            action: "status".into(),
            phone,
            booking_uid: "".into(),
            reason: "".into(),
            new_time: "".into(),
            call_id,
        },
    }
}

/// One answer on the wire.
fn wire() -> impl Strategy<Value = FakeResponse> {
    let header = prop_oneof![
        (0usize..400).prop_map(|n| format!("Content-Length: {n}")),
        Just("Content-Length: -1".to_string()),
        Just("Content-Length: 18446744073709551616".to_string()),
        Just("Transfer-Encoding: chunked".to_string()),
        Just("Content-Type: application/json".to_string()),
        Just("Connection: keep-alive".to_string()),
        Just("Connection: close".to_string()),
        "[ -~]{0,30}",
    ];
    let status_line = prop_oneof![
        status().prop_map(|s| format!("HTTP/1.1 {s} X")),
        status().prop_map(|s| format!("HTTP/1.0 {s}")),
        "[0-9]{0,6}".prop_map(|d| format!("HTTP/1.1 {d} Weird")),
        Just("HTTP/2 200 OK".to_string()),
        Just("http/1.1 200 ok".to_string()),
        "[ -~]{0,40}",
    ];
    let raw = (
        status_line,
        prop::collection::vec(header, 0..4),
        body(),
        prop::collection::vec(mutation(), 0..3),
    )
        .prop_map(|(line, headers, body, ms)| {
            let mut out = line.into_bytes();
            out.extend_from_slice(b"\r\n");
            for h in headers {
                out.extend_from_slice(h.as_bytes());
                out.extend_from_slice(b"\r\n");
            }
            out.extend_from_slice(b"\r\n");
            out.extend_from_slice(&body);
            FakeResponse::Garbage(mutate(out, &ms))
        });
    let success = (
        prop::sample::select(vec![200u16, 201, 202]),
        prop::collection::btree_map("[a-zA-Z_]{1,10}", arb_json(), 0..6),
    )
        .prop_map(|(s, m)| FakeResponse::json(s, Value::Object(m.into_iter().collect())));
    prop_oneof![
        3 => success,
        3 => (status(), arb_json()).prop_map(|(s, v)| FakeResponse::json(s, v)),
        2 => (0..CORPUS.len()).prop_map(|i| FakeResponse::text(200, CORPUS[i])),
        3 => (status(), body()).prop_map(|(status, body)| FakeResponse::Bytes {
            status,
            content_type: "application/json".into(),
            body,
        }),
        3 => raw,
        1 => prop::collection::vec(any::<u8>(), 0..128).prop_map(FakeResponse::Garbage),
        1 => Just(FakeResponse::NetworkError),
    ]
}

// ---------------------------------------------------------------------------
// Shape checks

fn keys(v: &Value) -> Vec<&str> {
    let mut k: Vec<&str> = v
        .as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default();
    k.sort_unstable();
    k
}

/// One printable line of bounded length (excerpts are capped).
fn is_plain_text(s: &str) -> bool {
    !s.chars().any(char::is_control) && s.chars().count() < 1_000
}

fn is_v2_failure(tool: Tool, v: &Value) -> bool {
    match tool {
        Tool::LookupCaller => {
            keys(v) == ["found", "message"]
                && v["found"] == false
                && v["message"].as_str().is_some_and(is_plain_text)
        }
        Tool::BookService => {
            keys(v) == ["booked", "error"]
                && v["booked"] == false
                && v["error"].as_str().is_some_and(is_plain_text)
        }
        _ => {
            keys(v) == ["error", "success"]
                && v["success"] == false
                && v["error"].as_str().is_some_and(is_plain_text)
        }
    }
}

fn is_dashboard_failure(v: &Value) -> bool {
    keys(v) == ["error", "success"]
        && v["success"] == false
        && v["error"].as_str().is_some_and(is_plain_text)
}

/// The independent oracle: success exactly for a 2xx JSON-object body.
fn expected_success(status: u16, body: &[u8]) -> Option<Value> {
    if !(200..300).contains(&status) {
        return None;
    }
    serde_json::from_slice::<Value>(body)
        .ok()
        .filter(Value::is_object)
}

// ---------------------------------------------------------------------------
// 10,000 + 10,000 through the pure interpretation functions

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 10_000,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn v2_interpretation_never_panics_and_has_the_right_shape(status in status(), body in body()) {
        let outcome = v2::interpret_reply(status, &body);
        let expected = expected_success(status, &body);
        prop_assert_eq!(outcome.as_ref().ok(), expected.as_ref());
        if let Err(f) = &outcome {
            prop_assert!(f.excerpt().chars().count() <= v2::EXCERPT_CHARS + 1);
            prop_assert!(is_plain_text(f.excerpt()));
        }
        for tool in Tool::BACKEND {
            let r = v2::result_for(tool, &outcome);
            match &expected {
                Some(v) => prop_assert_eq!(&r, v),
                None => prop_assert!(is_v2_failure(tool, &r), "{:?}: {}", tool, r),
            }
        }
    }

    #[test]
    fn dashboard_interpretation_never_panics_and_has_the_right_shape(status in status(), body in body()) {
        let outcome = dashboard::interpret_reply(status, &body);
        let expected = expected_success(status, &body);
        prop_assert_eq!(outcome.as_ref().ok(), expected.as_ref());
        if let Err(e) = &outcome {
            prop_assert_eq!(e.status(), Some(status));
            prop_assert!(e.is_retryable());
            let r = dashboard::failure_value(e);
            prop_assert!(is_dashboard_failure(&r), "{}", r);
        }
    }
}

// ---------------------------------------------------------------------------
// A few hundred over real sockets

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    })
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// The result a well-formed scripted answer must produce (`None`: a
/// failure, or garbage whose meaning the test does not predict). A 204 or
/// 304 answer has no body on the wire, whatever was scripted.
fn expected_for(response: &FakeResponse) -> Option<Value> {
    let (status, body) = match response {
        FakeResponse::Json { status, body } => {
            (*status, serde_json::to_vec(body).unwrap_or_default())
        }
        FakeResponse::Text { status, body } => (*status, body.clone().into_bytes()),
        FakeResponse::Bytes { status, body, .. } => (*status, body.clone()),
        _ => return None,
    };
    if status == 204 || status == 304 {
        return None;
    }
    expected_success(status, &body)
}

/// Tally of the socket runs.
#[derive(Default)]
struct Tally {
    /// Cases whose scripted answer was a well-formed success.
    expected: usize,
    /// ... and the client returned exactly that body.
    delivered: usize,
    /// Garbage that happened to be a valid HTTP answer with a JSON object.
    garbage_accepted: usize,
    failures: usize,
}

impl Tally {
    fn check(&self, what: &str) {
        eprintln!(
            "{what}: {} expected successes, {} delivered, {} garbage accepted, {} failures",
            self.expected, self.delivered, self.garbage_accepted, self.failures
        );
        assert!(
            self.expected >= 40,
            "only {} well-formed successes: the generator is off",
            self.expected
        );
        assert_eq!(
            self.delivered, self.expected,
            "well-formed successes were lost"
        );
    }
}

#[test]
fn v2_client_over_sockets() {
    let rt = runtime();
    let fake = FakeHttp::start();
    let client = V2Client::new(V2Config::new(fake.url()).with_timeout(Duration::from_secs(3)))
        .unwrap()
        // Never open: every case must reach the fake.
        .with_breaker(CircuitBreaker::new(u32::MAX, 60.0));
    let tally = std::cell::RefCell::new(Tally::default());
    runner(300)
        .run(&(tool(), wire()), |(tool, response)| {
            let path = v2::tool_path(tool).unwrap();
            let expected = expected_for(&response);
            let garbage = matches!(response, FakeResponse::Garbage(_));
            fake.set(path, vec![response]);
            let r = rt.block_on(client.call(&call_for(tool)));
            let mut t = tally.borrow_mut();
            t.expected += usize::from(expected.is_some());
            if is_v2_failure(tool, &r) && expected.as_ref() != Some(&r) {
                t.failures += 1;
            } else if garbage {
                prop_assert!(r.is_object(), "{}", r);
                t.garbage_accepted += 1;
            } else {
                prop_assert_eq!(Some(&r), expected.as_ref());
                t.delivered += 1;
            }
            Ok(())
        })
        .unwrap();
    tally.borrow().check("v2");
}

#[test]
fn dashboard_client_over_sockets() {
    let rt = runtime();
    let fake = FakeHttp::start();
    let base = fake.url();
    let no_wait: Sleeper = Arc::new(|_| Box::pin(async {}));
    let client = DashboardClient::new(DashboardConfig {
        jobs_url: format!("{base}/api/webhook/jobs"),
        calls_url: format!("{base}/api/webhook/calls"),
        alerts_url: format!("{base}/api/webhook/emergency-alerts"),
        webhook_secret: "fuzz-secret".into(),
        timeout: Duration::from_secs(3),
        ..DashboardConfig::default()
    })
    .unwrap()
    .with_sleeper(no_wait);
    let kinds = prop::sample::select(vec![
        DashboardKind::Job,
        DashboardKind::Call,
        DashboardKind::EmergencyAlert,
    ]);
    let tally = std::cell::RefCell::new(Tally::default());
    runner(300)
        .run(&(kinds, any::<bool>(), wire()), |(kind, once, response)| {
            let url = client.url_for(kind).to_string();
            let path = url.trim_start_matches(&base).to_string();
            let expected = expected_for(&response);
            let garbage = matches!(response, FakeResponse::Garbage(_));
            fake.set(&path, vec![response]);
            let r = if once {
                match rt.block_on(client.post_once(&url, b"{\"fuzz\":true}", Some("id-1"))) {
                    Ok(v) => v,
                    Err(e) => {
                        prop_assert!(is_plain_text(&e.to_string()), "{}", e);
                        dashboard::failure_value(&e)
                    }
                }
            } else {
                rt.block_on(client.send(kind, &json!({"fuzz": true}), None))
            };
            let mut t = tally.borrow_mut();
            t.expected += usize::from(expected.is_some());
            if is_dashboard_failure(&r) && expected.as_ref() != Some(&r) {
                t.failures += 1;
            } else if garbage {
                prop_assert!(r.is_object(), "{}", r);
                t.garbage_accepted += 1;
            } else {
                prop_assert_eq!(Some(&r), expected.as_ref());
                t.delivered += 1;
            }
            Ok(())
        })
        .unwrap();
    tally.borrow().check("dashboard");
    // Every request was signed over its exact body.
    for r in fake.requests() {
        assert_eq!(
            r.header("x-webhook-signature"),
            Some(dashboard::sign("fuzz-secret", &r.body).as_str())
        );
    }
}
