//! D-17 end to end: post-call deliveries survive a dashboard outage.
//!
//! Real post-call processing (`calllock::delivery`), the real dashboard
//! client over loopback HTTP to a fake dashboard that goes down, a real
//! outbox in SQLite (and PostgreSQL when it is reachable), virtual
//! wall-clock time for the backoff so ten minutes pass in a moment.

use agent::responder::ScriptedResponder;
use agent::{BusinessProfile, Session, State};
use calllock::delivery::{Backoff, Clock, OutboxWorker, PostCall};
use calllock::sim::{EndedBy, Outcome};
use providers::dashboard::{DashboardClient, DashboardConfig};
use providers::fake::http::{FakeHttp, FakeResponse, RecordedRequest};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

const T0: f64 = 1_790_000_000.0;

struct VirtualClock(Arc<AtomicU64>);

impl VirtualClock {
    fn new() -> Self {
        VirtualClock(Arc::new(AtomicU64::new((T0 * 1000.0) as u64)))
    }
    fn clock(&self) -> Clock {
        let c = self.0.clone();
        Arc::new(move || c.load(Ordering::SeqCst) as f64 / 1000.0)
    }
    fn now(&self) -> f64 {
        self.0.load(Ordering::SeqCst) as f64 / 1000.0
    }
    fn advance(&self, s: f64) {
        self.0.fetch_add((s * 1000.0) as u64, Ordering::SeqCst);
    }
}

fn dashboard_fake() -> FakeHttp {
    let fake = FakeHttp::start();
    fake.set(
        "/jobs",
        vec![FakeResponse::json(
            200,
            json!({"success": true, "job_id": "job-9", "lead_id": "lead-9"}),
        )],
    );
    fake.set(
        "/calls",
        vec![FakeResponse::json(200, json!({"success": true}))],
    );
    fake.set(
        "/alerts",
        vec![FakeResponse::json(200, json!({"success": true}))],
    );
    fake
}

fn dashboard_client(fake: &FakeHttp) -> Arc<DashboardClient> {
    let sleeper: providers::dashboard::Sleeper = Arc::new(|_| Box::pin(async {}));
    Arc::new(
        DashboardClient::new(DashboardConfig {
            jobs_url: format!("{}/jobs", fake.url()),
            calls_url: format!("{}/calls", fake.url()),
            alerts_url: format!("{}/alerts", fake.url()),
            webhook_secret: "s3cret".into(),
            user_email: "owner@example.com".into(),
            ..DashboardConfig::default()
        })
        .unwrap()
        .with_sleeper(sleeper),
    )
}

fn post_call(store: &store::Store, dash: Arc<DashboardClient>, clock: Clock) -> PostCall {
    PostCall {
        store: store.clone(),
        dashboard: Some(dash),
        user_email: "owner@example.com".into(),
        backend: Arc::new(store::EmbeddedBackend::new(
            store.clone(),
            BusinessProfile::default(),
        )),
        callback_target: "embedded:create_callback".into(),
        responder: Arc::new(ScriptedResponder::new(BusinessProfile::default())),
        backoff: Backoff::default(),
        clock,
        sleeper: Arc::new(|_| Box::pin(async {})),
        reserve_s: 60.0,
        worker: "post-call".into(),
    }
}

fn worker(store: &store::Store, dash: Arc<DashboardClient>, name: &str) -> OutboxWorker {
    OutboxWorker {
        store: store.clone(),
        dashboard: Some(dash),
        backend: Arc::new(store::EmbeddedBackend::new(
            store.clone(),
            BusinessProfile::default(),
        )),
        worker: name.into(),
        backoff: Backoff::default(),
        lease_s: 60.0,
        batch: 7,
    }
}

/// A finished call: every third one a safety exit (job, call, alert).
fn outcome(i: usize, now: f64) -> Outcome {
    let mut s = Session::new(format!("+1512555{i:04}"));
    s.call_sid = format!("CA-outage-{i:03}");
    s.customer_name = format!("Caller {i}");
    s.problem_description = "AC blowing warm air".into();
    s.state = if i.is_multiple_of(3) {
        State::SafetyExit
    } else {
        State::Confirm
    };
    s.start_time = now - 120.0;
    s.transcript_log = vec![agent::session::TranscriptEntry::user(
        "my AC is blowing warm air",
        now - 100.0,
        State::Welcome,
    )];
    Outcome {
        start_time: now - 120.0,
        end_time: now,
        session: s,
        ended_by: EndedBy::Caller,
        tools: Vec::new(),
    }
}

fn kind_of(path: &str) -> &'static str {
    match path {
        "/jobs" => "job",
        "/calls" => "call",
        _ => "alert",
    }
}

/// Checks on what the dashboard received: every delivery exactly once
/// (by idempotency key and by call + kind), job → call → alert per call,
/// late call records linked to their job.
fn check_deliveries(reqs: &[RecordedRequest], calls: usize) {
    let mut keys = BTreeSet::new();
    let mut per_call: BTreeMap<String, Vec<&'static str>> = BTreeMap::new();
    for r in reqs {
        let key = r
            .header("Idempotency-Key")
            .expect("idempotency key")
            .to_string();
        assert!(
            keys.insert(key.clone()),
            "delivered twice: {key} ({})",
            r.path
        );
        let body = r.json.clone().unwrap_or(Value::Null);
        let call_id = body["call_id"].as_str().unwrap_or("?").to_string();
        per_call.entry(call_id).or_default().push(kind_of(&r.path));
        let want = providers::dashboard::sign("s3cret", &r.body);
        assert_eq!(r.header("X-Webhook-Signature"), Some(want.as_str()));
        if r.path == "/calls" {
            assert_eq!(
                body["job_id"], "job-9",
                "late call record not linked: {body}"
            );
            assert_eq!(body["lead_id"], "lead-9");
        }
    }
    assert_eq!(per_call.len(), calls, "{per_call:?}");
    for (i, (call, kinds)) in per_call.iter().enumerate() {
        let n: usize = call.trim_start_matches("CA-outage-").parse().unwrap();
        let want: &[&str] = if n.is_multiple_of(3) {
            &["job", "call", "alert"]
        } else {
            &["job", "call"]
        };
        assert_eq!(kinds, want, "call #{i} {call}");
    }
}

/// Ten minutes of outage, then recovery; `workers` stores share the
/// outbox (separate connection pools, as separate processes would).
async fn outage(stores: Vec<store::Store>, calls: usize) {
    let fake = dashboard_fake();
    let dash = dashboard_client(&fake);
    fake.stop();
    tokio::task::yield_now().await;
    let vc = VirtualClock::new();
    let post = post_call(&stores[0], dash.clone(), vc.clock());
    let mut expected = 0;
    for i in 0..calls {
        let mut o = outcome(i, vc.now());
        let report = post.handle_call_ended(&mut o, false).await;
        expected += if i.is_multiple_of(3) { 3 } else { 2 };
        assert!(!report.pending.is_empty());
        vc.advance(1.0);
    }
    assert_eq!(fake.request_count(), 0);
    assert_eq!(stores[0].outbox_pending().await.unwrap().len(), expected);

    let workers: Vec<OutboxWorker> = stores
        .iter()
        .enumerate()
        .map(|(i, s)| worker(s, dash.clone(), &format!("worker-{i}")))
        .collect();
    // Ten minutes down: every attempt fails, nothing is lost.
    let until = vc.now() + 600.0;
    let mut attempts = 0;
    while vc.now() < until {
        let passes = workers.iter().map(|w| w.drain_once(vc.now()));
        for r in futures_util::future::join_all(passes).await {
            let r = r.unwrap();
            assert_eq!(r.delivered, 0);
            attempts += r.failed;
        }
        assert_eq!(stores[0].outbox_pending().await.unwrap().len(), expected);
        vc.advance(5.0);
    }
    assert!(attempts > expected, "backoff retried: {attempts} attempts");
    let items = stores[0].outbox_pending().await.unwrap();
    assert!(items.iter().all(|i| !i.last_error.is_empty()));
    // The longest wait is capped (5 min), so everything is due again
    // within five minutes of the dashboard coming back.
    assert!(items
        .iter()
        .all(|i| i.next_attempt_unix <= vc.now() + 300.0));

    fake.restart().unwrap();
    tokio::task::yield_now().await;
    let back = vc.now();
    while !stores[0].outbox_pending().await.unwrap().is_empty() {
        assert!(
            vc.now() < back + 400.0,
            "deliveries still pending long after recovery"
        );
        let passes = workers.iter().map(|w| w.drain_once(vc.now()));
        for r in futures_util::future::join_all(passes).await {
            r.unwrap();
        }
        vc.advance(5.0);
    }
    let reqs = fake.requests();
    assert_eq!(reqs.len(), expected, "each delivery exactly once");
    check_deliveries(&reqs, calls);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dashboard_down_for_ten_minutes_then_every_delivery_arrives_once_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = store::Store::open(&dir.path().join("outage.db"))
        .await
        .unwrap();
    outage(vec![store], 12).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_on_one_sqlite_file_never_deliver_twice() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    let a = store::Store::open(&path).await.unwrap();
    let b = store::Store::open(&path).await.unwrap();
    outage(vec![a, b], 12).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_on_postgresql_never_deliver_twice() {
    let Some(db) = store::testing::pg_test_db().await else {
        return; // pg_test_db printed why it skips
    };
    let a = db.store().await.unwrap();
    let b = db.store().await.unwrap();
    outage(vec![a, b], 12).await;
}

/// Garbage from the dashboard never loses a delivery: whatever it answers
/// (random bytes, truncated or non-object JSON, HTML, any status), the item
/// is either delivered (2xx with a JSON object) or still pending with the
/// reason — 500 answers over real sockets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_answers_never_lose_a_delivery() {
    let dir = tempfile::tempdir().unwrap();
    let store = store::Store::open(&dir.path().join("garbage.db"))
        .await
        .unwrap();
    let fake = dashboard_fake();
    let dash = dashboard_client(&fake);
    let w = worker(&store, dash, "garbage");
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let valid = br#"{"success": true, "job_id": "j"}"#;
    for i in 0..500 {
        let status = [200u16, 201, 400, 401, 404, 500, 502, 503][(next() % 8) as usize];
        let body: Vec<u8> = match next() % 6 {
            0 => (0..next() % 64).map(|_| next() as u8).collect(),
            1 => valid[..(next() as usize % valid.len())].to_vec(),
            2 => b"<html><body>Bad Gateway</body></html>".to_vec(),
            3 => b"[1, 2, 3]".to_vec(),
            4 => Vec::new(),
            _ => valid.to_vec(),
        };
        let accepted = (200..300).contains(&status)
            && matches!(serde_json::from_slice::<Value>(&body), Ok(Value::Object(_)));
        fake.set(
            "/jobs",
            vec![FakeResponse::Bytes {
                status,
                content_type: "application/json".into(),
                body: body.clone(),
            }],
        );
        let call_id = format!("CA-garbage-{i:03}");
        let id = store
            .outbox_enqueue(
                &store::NewOutboxItem {
                    call_id: call_id.clone(),
                    kind: store::OutboxKind::Job,
                    target_url: format!("{}/jobs", fake.url()),
                    payload: json!({"call_id": call_id}),
                },
                T0,
            )
            .await
            .unwrap();
        let r = w.drain_once(T0 + 1.0).await.unwrap();
        assert_eq!(r.claimed, 1, "case {i}");
        let item = store.outbox_item(&id).await.unwrap().unwrap();
        if accepted {
            assert_eq!(
                item.status,
                store::OutboxStatus::Delivered,
                "case {i}: {status} {body:?}"
            );
        } else {
            assert_eq!(
                item.status,
                store::OutboxStatus::Pending,
                "case {i}: {status} {body:?}"
            );
            assert!(!item.last_error.is_empty(), "case {i}: no reason kept");
            assert_eq!(item.attempts, 1);
            // Backed off: not due again in this test's frozen time.
            assert!(item.next_attempt_unix > T0 + 1.0, "case {i}: no backoff");
        }
    }
}
