//! D-17 end to end: post-call deliveries survive a dashboard outage.
//!
//! Real post-call processing (`calllock::call::delivery`), the real dashboard
//! client over loopback HTTP to a fake dashboard that goes down, a real
//! outbox in SQLite (and PostgreSQL when it is reachable), virtual
//! wall-clock time for the backoff so ten minutes pass in a moment.
//!
//! And what the operator sees (issue 22): an emergency alert is delivered
//! while the job of its call keeps failing; `/outbox` says when each item
//! is really attempted next and why it waits; "retry now" attempts the
//! delivery and answers with what happened — on a real `calllock serve`.

#[path = "support/served.rs"]
mod served;

use agent::responder::ScriptedResponder;
use agent::{BusinessProfile, Session, State};
use calllock::call::delivery::{Backoff, Clock, OutboxWorker, PostCall};
use calllock::call::outcome::{Ending, Outcome};
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
    Outcome::of_session(s, Ending::Caller, now - 120.0, now)
}

fn kind_of(path: &str) -> &'static str {
    match path {
        "/jobs" => "job",
        "/calls" => "call",
        _ => "alert",
    }
}

/// Checks on what the dashboard received: every delivery exactly once
/// (by idempotency key and by call + kind), job → call per call (the
/// alert in its own lane), late call records linked to their job.
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
        // The job before its call record (which links to it); the alert
        // travels in its own lane, in no order with them.
        let ordinary: Vec<&str> = kinds.iter().copied().filter(|k| *k != "alert").collect();
        assert_eq!(ordinary, ["job", "call"], "call #{i} {call}");
        let alerts = kinds.iter().filter(|k| **k == "alert").count();
        assert_eq!(alerts, usize::from(n.is_multiple_of(3)), "call #{i} {call}");
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

/// A safety-exit call (gas leak) while the dashboard is down: its job, call
/// record and emergency alert all wait in the outbox.
async fn gas_leak_queued(store: &store::Store, fake: &FakeHttp, vc: &VirtualClock) {
    let dash = dashboard_client(fake);
    fake.stop();
    tokio::task::yield_now().await;
    let post = post_call(store, dash, vc.clock());
    let mut o = outcome(0, vc.now());
    assert_eq!(o.session.state, State::SafetyExit);
    post.handle_call_ended(&mut o, false).await;
    assert_eq!(store.outbox_pending().await.unwrap().len(), 3);
}

/// Issue 22: with the dashboard rejecting jobs, the gas-leak alert queued
/// behind the call's job was never attempted (per-call order held it).
/// Alerts travel in their own lane: the worker delivers it on its first
/// pass while the job keeps failing, and the call record still waits for
/// its job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_emergency_alert_is_not_held_behind_a_failing_job() {
    let dir = tempfile::tempdir().unwrap();
    let store = store::Store::open(&dir.path().join("gas.db"))
        .await
        .unwrap();
    let fake = dashboard_fake();
    let vc = VirtualClock::new();
    gas_leak_queued(&store, &fake, &vc).await;
    // Back up, but the jobs endpoint fails.
    fake.set(
        "/jobs",
        vec![FakeResponse::json(503, json!({"error": "jobs are down"}))],
    );
    fake.restart().unwrap();
    tokio::task::yield_now().await;
    let w = worker(&store, dashboard_client(&fake), "worker-0");
    for _ in 0..3 {
        vc.advance(400.0);
        w.drain_once(vc.now()).await.unwrap();
    }
    assert_eq!(fake.count("/alerts"), 1, "the alert went out once");
    assert!(fake.count("/jobs") >= 3, "the job was retried");
    assert_eq!(fake.count("/calls"), 0, "the call record waits for its job");
    let items = store.outbox_for_call("CA-outage-000").await.unwrap();
    let status = |k: store::OutboxKind| items.iter().find(|i| i.kind == k).unwrap().status;
    assert_eq!(
        status(store::OutboxKind::Alert),
        store::OutboxStatus::Delivered
    );
    assert_eq!(status(store::OutboxKind::Job), store::OutboxStatus::Pending);
    assert_eq!(
        status(store::OutboxKind::Call),
        store::OutboxStatus::Pending
    );
}

/// The running worker (`OutboxWorker::run`, as `calllock serve` starts it)
/// delivers an alert while an ordinary delivery of another call hangs: the
/// lanes are separate loops. The job's answer never comes (the fake holds
/// it past the client's timeout, which the test sets long), so the alert
/// must be delivered while the job's attempt is still in flight (its
/// attempt not yet counted); waits on the store, bounded generously.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_alert_goes_out_while_a_job_delivery_hangs() {
    let dir = tempfile::tempdir().unwrap();
    let store = store::Store::open(&dir.path().join("hang.db"))
        .await
        .unwrap();
    let fake = dashboard_fake();
    let hang = std::time::Duration::from_secs(3600);
    fake.set(
        "/jobs",
        vec![FakeResponse::delay(
            hang,
            FakeResponse::json(200, json!({"success": true})),
        )],
    );
    let sleeper: providers::dashboard::Sleeper = Arc::new(|_| Box::pin(async {}));
    let dash = Arc::new(
        DashboardClient::new(DashboardConfig {
            jobs_url: format!("{}/jobs", fake.url()),
            calls_url: format!("{}/calls", fake.url()),
            alerts_url: format!("{}/alerts", fake.url()),
            webhook_secret: "s3cret".into(),
            user_email: "owner@example.com".into(),
            timeout: hang,
        })
        .unwrap()
        .with_sleeper(sleeper),
    );
    let now = calllock::call::delivery::system_clock()();
    let enqueue = |call: &str, kind: store::OutboxKind, path: &str| {
        let item = store::NewOutboxItem {
            call_id: call.into(),
            kind,
            target_url: format!("{}{path}", fake.url()),
            payload: json!({"call_id": call}),
        };
        let store = store.clone();
        async move { store.outbox_enqueue(&item, now).await.unwrap() }
    };
    let job = enqueue("CA_a_slow", store::OutboxKind::Job, "/jobs").await;
    let alert = enqueue("CA_gas", store::OutboxKind::Alert, "/alerts").await;
    let (stop, rx) = tokio::sync::watch::channel(false);
    let w = worker(&store, dash, "worker-run");
    let running = tokio::spawn(w.run(
        calllock::call::delivery::system_clock(),
        std::time::Duration::from_millis(50),
        rx,
    ));
    let limit = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let it = store.outbox_item(&alert).await.unwrap().unwrap();
        if it.status == store::OutboxStatus::Delivered {
            break;
        }
        assert!(
            std::time::Instant::now() < limit,
            "the alert waited: {it:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(fake.count("/alerts"), 1);
    let j = store.outbox_item(&job).await.unwrap().unwrap();
    assert_eq!(
        (j.status, j.attempts),
        (store::OutboxStatus::Pending, 0),
        "the job's attempt is still in flight: {j:?}"
    );
    let _ = stop.send(true);
    running.abort();
}

const OPERATOR_PASSWORD: &str = "outbox password";

/// A signed-in operator of a real `calllock serve` whose dashboard is
/// `fake`: its cookie and CSRF token. The server's own worker polls once an
/// hour, so only the test moves the outbox.
async fn operator(fake: &FakeHttp) -> (served::Served, reqwest::Client, String, String) {
    let hash = calllock::operator::hash_password(OPERATOR_PASSWORD).unwrap();
    let url = fake.url();
    let s = served::serve_with(|c| {
        c.serve.operator_password_hash = hash;
        c.outbox.poll_s = 3600.0;
        c.dashboard.jobs_url = format!("{url}/jobs");
        c.dashboard.calls_url = format!("{url}/calls");
        c.dashboard.alerts_url = format!("{url}/alerts");
        c.dashboard.webhook_secret = "s3cret".into();
        c.dashboard.user_email = "owner@example.com".into();
    })
    .await;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let base = format!("http://{}", s.server.addr);
    let r = client
        .post(format!("{base}/login"))
        .form(&[("password", OPERATOR_PASSWORD)])
        .send()
        .await
        .unwrap();
    let cookie = r.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    let session: Value = client
        .get(format!("{base}/api/session"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let csrf = session["csrf"].as_str().unwrap().to_string();
    (s, client, cookie, csrf)
}

fn wall_now() -> f64 {
    calllock::call::delivery::system_clock()()
}

/// Enqueue `kind` for `call` at the fake's path, due now.
async fn queue(
    store: &store::Store,
    fake: &FakeHttp,
    call: &str,
    kind: store::OutboxKind,
) -> String {
    let path = match kind {
        store::OutboxKind::Job => "/jobs",
        store::OutboxKind::Call => "/calls",
        _ => "/alerts",
    };
    store
        .outbox_enqueue(
            &store::NewOutboxItem {
                call_id: call.into(),
                kind,
                target_url: format!("{}{path}", fake.url()),
                payload: json!({"call_id": call}),
            },
            wall_now(),
        )
        .await
        .unwrap()
}

/// Fail `id` `n` times with `error`, the next attempt `next_in` s away.
async fn fail(store: &store::Store, id: &str, n: usize, error: &str, next_in: f64) {
    for _ in 0..n {
        let now = wall_now();
        match store
            .outbox_claim_item(id, "test", now, 60.0)
            .await
            .unwrap()
        {
            store::OutboxClaim::Claimed(_) => {}
            other => panic!("cannot claim {id}: {other:?}"),
        }
        assert!(store
            .outbox_mark_failed(id, "test", error, now + next_in)
            .await
            .unwrap());
    }
}

/// The table row of the page that names `needle` (a call id).
fn row_of<'a>(page: &'a str, needle: &str) -> Vec<&'a str> {
    page.split("<tr>").filter(|r| r.contains(needle)).collect()
}

/// Issue 22: with the dashboard down, a gas-leak alert queued behind a
/// failing job showed "due now" though nothing would attempt it. The page
/// now says, per item, when it is really attempted next and why not
/// sooner: behind the failing job (and when that one is retried), backing
/// off after its failures (with the error), leased to a worker, or due on
/// the worker's next pass — the alert due at once, in its own lane.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_outbox_page_says_when_and_why_each_item_waits() {
    let fake = dashboard_fake();
    let (s, client, cookie, _) = operator(&fake).await;
    let store = s.server.store().clone();
    let job = queue(&store, &fake, "CA_gas", store::OutboxKind::Job).await;
    queue(&store, &fake, "CA_gas", store::OutboxKind::Call).await;
    queue(&store, &fake, "CA_gas", store::OutboxKind::Alert).await;
    fail(&store, &job, 3, "the dashboard answered 503", 600.0).await;
    let leased = queue(&store, &fake, "CA_busy", store::OutboxKind::Job).await;
    let now = wall_now();
    match store
        .outbox_claim_item(&leased, "worker-x", now, 900.0)
        .await
        .unwrap()
    {
        store::OutboxClaim::Claimed(_) => {}
        other => panic!("{other:?}"),
    }

    let page = client
        .get(format!("http://{}/outbox", s.server.addr))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let gas = row_of(&page, "CA_gas");
    assert_eq!(gas.len(), 3, "{page}");
    let row = |kind: &str| {
        gas.iter()
            .find(|r| r.contains(&format!("<td>{kind}")))
            .unwrap_or_else(|| panic!("no {kind} row in {page}"))
            .to_string()
    };
    let (job_row, call_row, alert_row) = (row("job"), row("call"), row("alert"));
    assert!(
        job_row.contains("backing off after 3 failed attempts: the dashboard answered 503"),
        "{job_row}"
    );
    assert!(
        job_row.contains("in 59") || job_row.contains("in 600 s"),
        "{job_row}"
    );
    assert!(
        call_row.contains("waiting behind the job of the same call")
            && call_row.contains("failed 3 times: the dashboard answered 503"),
        "{call_row}"
    );
    assert!(
        call_row.contains("in 59") || call_row.contains("in 600 s"),
        "the call record goes after its job: {call_row}"
    );
    assert!(
        alert_row.contains("due now — the worker tries it within 3600 s"),
        "{alert_row}"
    );
    assert!(!alert_row.contains("behind"), "{alert_row}");
    let busy = row_of(&page, "CA_busy").join("");
    assert!(
        busy.contains("leased by worker-x until in 9") && busy.contains("an attempt is under way"),
        "{busy}"
    );
    s.server.stop().await;
}

/// Issue 22: "retry now" answered "retrying now" and attempted nothing.
/// It now attempts the delivery at once and answers with what happened:
/// delivered (the dashboard got it), failed (with the dashboard's error
/// and when the worker tries again), or not attempted and why (behind
/// another delivery of its call, or gone).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_now_really_attempts_the_delivery() {
    let fake = dashboard_fake();
    fake.set(
        "/jobs",
        vec![FakeResponse::json(503, json!({"error": "jobs are down"}))],
    );
    let (s, client, cookie, csrf) = operator(&fake).await;
    let store = s.server.store().clone();
    let retry = |id: String| {
        let (client, cookie, csrf) = (client.clone(), cookie.clone(), csrf.clone());
        let url = format!("http://{}/api/outbox/{id}/retry", s.server.addr);
        async move {
            let r = client
                .post(url)
                .header("cookie", cookie)
                .header("x-csrf-token", csrf)
                .send()
                .await
                .unwrap();
            let status = r.status().as_u16();
            (status, r.json::<Value>().await.unwrap())
        }
    };
    // An alert waiting an hour: delivered now.
    let alert = queue(&store, &fake, "CA_gas", store::OutboxKind::Alert).await;
    fail(&store, &alert, 1, "connection refused", 3600.0).await;
    let (status, said) = retry(alert.clone()).await;
    assert_eq!(status, 200, "{said}");
    assert_eq!(said["outcome"], "delivered", "{said}");
    assert_eq!(fake.count("/alerts"), 1, "the dashboard got the alert");
    let it = store.outbox_item(&alert).await.unwrap().unwrap();
    assert_eq!(it.status, store::OutboxStatus::Delivered);

    // A job the dashboard refuses: attempted, and the answer says why.
    let job = queue(&store, &fake, "CA_gas", store::OutboxKind::Job).await;
    let (status, said) = retry(job.clone()).await;
    assert_eq!(status, 200, "{said}");
    assert_eq!(said["outcome"], "failed", "{said}");
    assert!(said["error"].as_str().unwrap().contains("503"), "{said}");
    assert!(
        said["message"].as_str().unwrap().contains("tries again in"),
        "{said}"
    );
    assert_eq!(fake.count("/jobs"), 1);
    let it = store.outbox_item(&job).await.unwrap().unwrap();
    assert_eq!((it.status, it.attempts), (store::OutboxStatus::Pending, 1));
    assert!(it.next_attempt_unix > wall_now(), "backing off: {it:?}");

    // Its call record cannot go before it: not attempted, and why.
    let call = queue(&store, &fake, "CA_gas", store::OutboxKind::Call).await;
    let (status, said) = retry(call).await;
    assert_eq!(status, 409, "{said}");
    let why = said["error"].as_str().unwrap();
    assert!(
        why.contains("waits behind the job of the same call"),
        "{why}"
    );
    assert!(why.contains(&job) && why.contains("503"), "{why}");
    assert_eq!(fake.count("/calls"), 0, "nothing was sent");

    // Delivered already, or never there: 404 that says so.
    let (status, said) = retry(alert).await;
    assert_eq!(status, 404, "{said}");
    assert!(
        said["error"]
            .as_str()
            .unwrap()
            .contains("delivered already"),
        "{said}"
    );
    let (status, _) = retry("ob_nope".into()).await;
    assert_eq!(status, 404);
    s.server.stop().await;
}
