//! The V2 backend client against FakeHttp over real loopback sockets:
//! request shapes, failures (401, timeouts, garbage, network errors), the
//! shared circuit breaker with an injected clock (D-20), close and health.

use agent::backend::{Backend, ToolCall};
use agent::breaker::{BreakerState, CircuitBreaker};
use agent::state::Tool;
use providers::fake::http::{FakeHttp, FakeResponse};
use providers::v2::{unavailable_result, V2Client, V2Config, UNAVAILABLE};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const LOOKUP: &str = "/webhook/retell/lookup_caller";
const BOOK: &str = "/webhook/retell/book_appointment";
const CALLBACK: &str = "/webhook/retell/create_callback";
const ALERT: &str = "/webhook/retell/send_sales_lead_alert";
const MANAGE: &str = "/webhook/retell/manage_appointment";

/// A breaker clock the test moves by hand.
#[derive(Clone)]
struct TestClock(Arc<Mutex<f64>>);

impl TestClock {
    fn new() -> Self {
        TestClock(Arc::new(Mutex::new(500.0)))
    }
    fn advance(&self, s: f64) {
        *self.0.lock().unwrap() += s;
    }
    fn install(&self, c: V2Client) -> V2Client {
        let t = self.0.clone();
        c.with_clock(Arc::new(move || *t.lock().unwrap()))
    }
}

fn client(fake: &FakeHttp) -> V2Client {
    V2Client::new(V2Config::new(fake.url()).with_api_key("test-key-123")).unwrap()
}

fn lookup(call_id: &str) -> ToolCall {
    ToolCall::LookupCaller {
        phone: "+15125551234".into(),
        call_id: call_id.into(),
    }
}

fn book() -> ToolCall {
    ToolCall::BookService {
        customer_name: "Jonas".into(),
        problem: "AC broken".into(),
        address: "4211 Cronkite Rd".into(),
        preferred_time: "2026-02-24T09:00:00-06:00".into(),
        phone: "+12487391087".into(),
        call_id: "CA01".into(),
    }
}

fn callback() -> ToolCall {
    ToolCall::CreateCallback {
        phone: "+15125551234".into(),
        callback_type: "estimate".into(),
        reason: "".into(),
        customer_name: "Maria".into(),
        urgency: "urgent".into(),
        call_id: "CA02".into(),
    }
}

fn alert() -> ToolCall {
    ToolCall::SendSalesLeadAlert {
        phone: "+15125551234".into(),
        reason: "wants a new system".into(),
        call_id: "CA03".into(),
    }
}

fn manage() -> ToolCall {
    ToolCall::ManageAppointment {
        action: "reschedule".into(),
        phone: "+15125551234".into(),
        booking_uid: "uid-9".into(),
        reason: "".into(),
        new_time: "2026-03-01T10:00:00-06:00".into(),
        call_id: "CA04".into(),
    }
}

fn is_failure_shape(tool: Tool, v: &Value) -> bool {
    let keys: Vec<&str> = v
        .as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default();
    match tool {
        Tool::LookupCaller => v["found"] == false && v["message"].is_string() && keys.len() == 2,
        Tool::BookService => v["booked"] == false && v["error"].is_string() && keys.len() == 2,
        _ => v["success"] == false && v["error"].is_string() && keys.len() == 2,
    }
}

#[tokio::test]
async fn every_tool_posts_its_envelope_to_its_path() {
    let fake = FakeHttp::start();
    for path in [LOOKUP, BOOK, CALLBACK, ALERT, MANAGE] {
        fake.set(path, vec![FakeResponse::json(200, json!({"ok": path}))]);
    }
    let c = client(&fake);
    for (call, path) in [
        (lookup("CA00"), LOOKUP),
        (book(), BOOK),
        (callback(), CALLBACK),
        (alert(), ALERT),
        (manage(), MANAGE),
    ] {
        let r = c.call(&call).await;
        assert_eq!(r, json!({"ok": path}), "{path}");
    }
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 5);
    for r in &reqs {
        assert_eq!(r.method, "POST");
        assert_eq!(r.header("content-type"), Some("application/json"));
        assert_eq!(r.header("X-API-KEY"), Some("test-key-123"));
        // The body is exactly the JSON that was parsed.
        assert_eq!(
            serde_json::from_slice::<Value>(&r.body).ok(),
            r.json.clone()
        );
    }
    let bodies: Vec<Value> = reqs.iter().map(|r| r.json.clone().unwrap()).collect();
    assert_eq!(
        bodies[0],
        json!({"call": {"call_id": "CA00", "from_number": "+15125551234", "metadata": {}}, "args": {}})
    );
    assert_eq!(
        bodies[1]["args"],
        json!({"customer_name": "Jonas", "customer_phone": "+12487391087",
               "problem_description": "AC broken", "service_address": "4211 Cronkite Rd",
               "date_time": "2026-02-24T09:00:00-06:00"})
    );
    assert_eq!(
        bodies[2]["args"],
        json!({"reason": "Callback requested", "callback_type": "estimate",
               "customer_name": "Maria", "urgency": "urgent"})
    );
    // D-18: the sales alert carries the real call id too.
    assert_eq!(
        bodies[3],
        json!({"call": {"call_id": "CA03", "from_number": "+15125551234", "metadata": {}},
               "args": {"execution_message": "wants a new system"}})
    );
    // D-19: new_time and new_date_time; empty reason omitted.
    assert_eq!(
        bodies[4]["args"],
        json!({"action": "reschedule", "booking_uid": "uid-9",
               "new_time": "2026-03-01T10:00:00-06:00",
               "new_date_time": "2026-03-01T10:00:00-06:00"})
    );
    assert_eq!(bodies[4]["call"]["call_id"], "CA04");
}

#[tokio::test]
async fn no_api_key_header_without_a_key_and_trailing_slash_stripped() {
    let fake = FakeHttp::start();
    fake.set(
        LOOKUP,
        vec![FakeResponse::json(200, json!({"found": false}))],
    );
    let c = V2Client::new(V2Config::new(format!("{}/", fake.url()))).unwrap();
    assert_eq!(c.base_url(), fake.url());
    assert_eq!(c.lookup_caller("+1", "c").await, json!({"found": false}));
    let empty_key = V2Client::new(V2Config::new(fake.url()).with_api_key("")).unwrap();
    assert_eq!(
        empty_key.lookup_caller("+1", "c").await,
        json!({"found": false})
    );
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 2);
    for r in reqs {
        assert_eq!(r.path, LOOKUP);
        assert_eq!(r.header("x-api-key"), None);
    }
}

#[test]
fn bad_configuration_is_rejected_in_plain_words() {
    let e = V2Client::new(V2Config::new("not a url")).unwrap_err();
    assert!(e.to_string().contains("not a valid URL"), "{e}");
    let e = V2Client::new(V2Config::new("ftp://x.example.com")).unwrap_err();
    assert!(e.to_string().contains("http"), "{e}");
    let e = V2Client::new(V2Config::new("http://x.example.com").with_api_key("a\nb")).unwrap_err();
    assert!(e.to_string().contains("API key"), "{e}");
    assert!(!e.to_string().contains("a\nb"));
}

#[tokio::test]
async fn unauthorized_is_a_failure_and_three_open_the_breaker() {
    let fake = FakeHttp::start();
    fake.set(
        LOOKUP,
        vec![FakeResponse::json(
            401,
            json!({"error": "Unauthorized: Invalid API key"}),
        )],
    );
    let clock = TestClock::new();
    let c = clock.install(client(&fake));
    for i in 1..=3 {
        let r = c.lookup_caller("+1", "c").await;
        assert!(is_failure_shape(Tool::LookupCaller, &r), "{r}");
        assert!(r["message"].as_str().unwrap().contains("401"), "{r}");
        assert_eq!(c.consecutive_failures(), i);
    }
    assert_eq!(c.breaker_state(), BreakerState::Open);
    // Open: nothing is sent, every tool answers "unavailable".
    for call in [lookup("c"), book(), callback(), alert(), manage()] {
        let r = c.call(&call).await;
        assert_eq!(r, unavailable_result(call.tool()));
    }
    assert_eq!(c.book_service(&book()).await["error"], UNAVAILABLE);
    assert_eq!(fake.request_count(), 3);
}

#[tokio::test]
async fn success_resets_the_failure_count() {
    let fake = FakeHttp::start();
    fake.set(
        LOOKUP,
        vec![
            FakeResponse::status(500),
            FakeResponse::status(502),
            FakeResponse::json(200, json!({"found": true})),
            FakeResponse::status(500),
        ],
    );
    let c = client(&fake);
    c.lookup_caller("+1", "c").await;
    c.lookup_caller("+1", "c").await;
    assert_eq!(c.consecutive_failures(), 2);
    assert_eq!(c.lookup_caller("+1", "c").await, json!({"found": true}));
    assert_eq!(c.consecutive_failures(), 0);
    c.lookup_caller("+1", "c").await;
    c.lookup_caller("+1", "c").await;
    assert_eq!(c.breaker_state(), BreakerState::Closed);
    assert_eq!(fake.request_count(), 5);
}

#[tokio::test]
async fn a_slow_backend_times_out_quickly() {
    let fake = FakeHttp::start();
    fake.set(
        BOOK,
        vec![FakeResponse::delay(
            Duration::from_secs(5),
            FakeResponse::json(200, json!({"booked": true})),
        )],
    );
    let c =
        V2Client::new(V2Config::new(fake.url()).with_timeout(Duration::from_millis(300))).unwrap();
    let started = Instant::now();
    let r = c.book_service(&book()).await;
    let took = started.elapsed();
    assert!(is_failure_shape(Tool::BookService, &r), "{r}");
    assert!(
        r["error"].as_str().unwrap().contains("did not answer"),
        "{r}"
    );
    assert!(took >= Duration::from_millis(250), "{took:?}");
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert_eq!(c.consecutive_failures(), 1);
}

#[tokio::test]
async fn garbage_answers_are_failures_of_the_right_shape() {
    let fake = FakeHttp::start();
    let garbage = vec![
        FakeResponse::text(200, "not json"),
        FakeResponse::text(200, "{\"found\": tr"),
        FakeResponse::text(200, "<html><body>502 Bad Gateway</body></html>"),
        FakeResponse::Bytes {
            status: 200,
            content_type: "application/octet-stream".into(),
            body: vec![0, 159, 146, 150, 255, 0, 1],
        },
        FakeResponse::json(200, json!([1, 2, 3])),
        FakeResponse::json(200, json!("a string")),
        FakeResponse::json(200, Value::Null),
        FakeResponse::status(200),
        FakeResponse::status(204),
        FakeResponse::text(302, ""),
        FakeResponse::text(503, "<html>down</html>"),
        FakeResponse::Garbage(b"HTTP/1.1 abc\r\n\r\n".to_vec()),
        FakeResponse::Garbage(b"\x00\x01\x02 not http at all".to_vec()),
        FakeResponse::Garbage(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"found\":"
                .to_vec(),
        ),
        FakeResponse::Garbage(Vec::new()),
        FakeResponse::NetworkError,
    ];
    let n = garbage.len();
    let c = client(&fake).with_breaker(CircuitBreaker::new(1_000, 60.0));
    for tool in Tool::BACKEND {
        let call = match tool {
            Tool::LookupCaller => lookup("c"),
            Tool::BookService => book(),
            Tool::CreateCallback => callback(),
            Tool::SendSalesLeadAlert => alert(),
            _ => manage(),
        };
        let path = providers::v2::tool_path(tool).unwrap();
        fake.set(path, garbage.clone());
        for i in 0..n {
            let r = c.call(&call).await;
            assert!(is_failure_shape(tool, &r), "{tool:?} answer {i}: {r}");
        }
    }
    assert_eq!(fake.request_count(), 5 * n);
    assert_eq!(c.consecutive_failures() as usize, 5 * n);
}

#[tokio::test]
async fn success_false_is_passed_through_as_is() {
    let fake = FakeHttp::start();
    let body = json!({"success": false, "message": "I'll make sure someone calls you back today."});
    fake.set(CALLBACK, vec![FakeResponse::json(200, body.clone())]);
    let c = client(&fake);
    assert_eq!(c.create_callback(&callback()).await, body);
    assert_eq!(c.consecutive_failures(), 0);
}

#[tokio::test]
async fn unknown_path_and_stopped_server_are_network_failures() {
    let fake = FakeHttp::start();
    let c = client(&fake).with_breaker(CircuitBreaker::new(10, 60.0));
    // Not scripted: recorded, then the connection is closed.
    let r = c.manage_appointment(&manage()).await;
    assert!(is_failure_shape(Tool::ManageAppointment, &r), "{r}");
    assert_eq!(fake.count(MANAGE), 1);
    // The vendor goes down: connection refused, nothing recorded.
    fake.set(
        LOOKUP,
        vec![FakeResponse::json(200, json!({"found": true}))],
    );
    fake.stop();
    assert!(!fake.is_running());
    let r = c.lookup_caller("+1", "c").await;
    assert!(is_failure_shape(Tool::LookupCaller, &r), "{r}");
    assert!(
        r["message"].as_str().unwrap().contains("no usable answer"),
        "{r}"
    );
    assert_eq!(fake.count(LOOKUP), 0);
    // ... and comes back on the same port.
    fake.restart().unwrap();
    assert_eq!(c.lookup_caller("+1", "c").await, json!({"found": true}));
    assert_eq!(fake.count(LOOKUP), 1);
    assert_eq!(c.consecutive_failures(), 0);
}

#[tokio::test]
async fn breaker_cooldown_half_open_probe_and_d20_reopen() {
    let fake = FakeHttp::start();
    fake.set(
        LOOKUP,
        vec![
            FakeResponse::status(500),
            FakeResponse::status(500),
            FakeResponse::status(500),
            FakeResponse::status(500),
            FakeResponse::json(200, json!({"found": true})),
        ],
    );
    let clock = TestClock::new();
    let c = clock.install(client(&fake));
    for _ in 0..3 {
        c.lookup_caller("+1", "c").await;
    }
    assert_eq!(c.breaker_state(), BreakerState::Open);
    clock.advance(59.9);
    c.lookup_caller("+1", "c").await;
    assert_eq!(fake.request_count(), 3, "still open before the cooldown");
    clock.advance(0.2);
    assert_eq!(c.breaker_state(), BreakerState::HalfOpen);
    // The probe fails: D-20 restarts the cooldown from now.
    let r = c.lookup_caller("+1", "c").await;
    assert_eq!(r["found"], false);
    assert_eq!(fake.request_count(), 4);
    assert_eq!(c.breaker_state(), BreakerState::Open);
    clock.advance(59.0);
    c.lookup_caller("+1", "c").await;
    assert_eq!(
        fake.request_count(),
        4,
        "the failed probe restarted the cooldown"
    );
    clock.advance(1.5);
    // The second probe succeeds and closes the breaker.
    assert_eq!(c.lookup_caller("+1", "c").await, json!({"found": true}));
    assert_eq!(c.breaker_state(), BreakerState::Closed);
    assert_eq!(c.lookup_caller("+1", "c").await, json!({"found": true}));
    assert_eq!(fake.request_count(), 6);
}

#[tokio::test]
async fn half_open_admits_one_probe_at_a_time() {
    let fake = FakeHttp::start();
    fake.set(LOOKUP, vec![FakeResponse::status(500)]);
    let clock = TestClock::new();
    let c = clock.install(client(&fake));
    for _ in 0..3 {
        c.lookup_caller("+1", "c").await;
    }
    fake.set(
        LOOKUP,
        vec![FakeResponse::delay(
            Duration::from_millis(300),
            FakeResponse::json(200, json!({"found": true})),
        )],
    );
    clock.advance(60.0);
    let (a, b) = tokio::join!(c.lookup_caller("+1", "c"), async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        c.lookup_caller("+1", "c").await
    });
    assert_eq!(a, json!({"found": true}));
    assert_eq!(b, unavailable_result(Tool::LookupCaller));
    assert_eq!(fake.request_count(), 4);
    assert_eq!(c.breaker_state(), BreakerState::Closed);
}

#[tokio::test]
async fn a_cancelled_probe_frees_the_probe_slot() {
    let fake = FakeHttp::start();
    fake.set(LOOKUP, vec![FakeResponse::status(500)]);
    let clock = TestClock::new();
    let c = clock.install(client(&fake));
    for _ in 0..3 {
        c.lookup_caller("+1", "c").await;
    }
    fake.set(
        LOOKUP,
        vec![
            FakeResponse::delay(Duration::from_secs(5), FakeResponse::status(500)),
            FakeResponse::json(200, json!({"found": true})),
        ],
    );
    clock.advance(60.0);
    let cancelled =
        tokio::time::timeout(Duration::from_millis(100), c.lookup_caller("+1", "c")).await;
    assert!(cancelled.is_err(), "the probe should still be in flight");
    assert_eq!(c.lookup_caller("+1", "c").await, json!({"found": true}));
    assert_eq!(fake.request_count(), 5);
}

#[tokio::test]
async fn a_closed_client_sends_nothing() {
    let fake = FakeHttp::start();
    fake.set(
        LOOKUP,
        vec![FakeResponse::json(200, json!({"found": true}))],
    );
    let c = client(&fake);
    assert!(!c.is_closed());
    c.close();
    assert!(c.is_closed());
    let r = c.lookup_caller("+1", "c").await;
    assert!(is_failure_shape(Tool::LookupCaller, &r), "{r}");
    assert_eq!(fake.request_count(), 0);
    assert!(c.health().await.is_err());
}

#[tokio::test]
async fn health_says_whether_the_backend_is_reachable() {
    let fake = FakeHttp::start();
    fake.set("/", vec![FakeResponse::status(404)]);
    let c = client(&fake);
    let ok = c.health().await.unwrap();
    assert!(ok.contains("reachable") && ok.contains("404"), "{ok}");
    assert_eq!(fake.requests()[0].method, "GET");
    assert_eq!(fake.requests()[0].header("x-api-key"), None);
    fake.stop();
    let err = c.health().await.unwrap_err();
    assert!(
        err.starts_with("cannot reach the V2 backend at http://127.0.0.1:"),
        "{err}"
    );
    // A health check never moves the breaker.
    assert_eq!(c.consecutive_failures(), 0);
}

/// Captures formatted log output.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn failures_are_logged_with_status_and_excerpt_never_the_key() {
    let out = Captured::default();
    let writer = out.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::WARN)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let fake = FakeHttp::start();
    // A misbehaving backend that echoes the key back.
    fake.set(
        LOOKUP,
        vec![FakeResponse::json(
            401,
            json!({"error": "Unauthorized: Invalid API key test-key-123"}),
        )],
    );
    let c = client(&fake);
    c.lookup_caller("+1", "c").await;
    let log = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
    assert!(log.contains("WARN"), "{log}");
    assert!(log.contains("status=401"), "{log}");
    assert!(log.contains("Unauthorized: Invalid API key"), "{log}");
    assert!(!log.contains("test-key-123"), "{log}");
    assert!(!format!("{c:?}").contains("test-key-123"));
}
