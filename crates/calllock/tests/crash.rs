//! Crash safety and multi-process delivery, with real processes:
//!
//! * `kill -9` of `calllock chat` mid-call: after a restart the call is
//!   listed as `interrupted` with every event up to the kill, and its
//!   post-call delivery reaches the dashboard exactly once.
//! * Two `calllock outbox deliver` processes sharing one PostgreSQL
//!   database never deliver an outbox item twice (`SKIP LOCKED`).

#[path = "support/child.rs"]
mod child;
#[path = "support/dashboard.rs"]
mod support_dashboard;

use child::{Running, PATIENCE};
use providers::fake::http::FakeHttp;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SECRET: &str = "crash-secret";
/// A process that wrote no heartbeat for this long is gone.
const LEASE_S: f64 = 1.0;

fn bin(dashboard: &FakeHttp) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_calllock"));
    c.env_remove("CALLLOCK_CONFIG")
        .env_remove("CALLLOCK_DATABASE")
        .env_remove("OPENAI_API_KEY")
        .env_remove("V2_BACKEND_URL")
        .env("HOME", std::env::temp_dir())
        .env("CALLLOCK_INSTANCE", "crash-test")
        .env("CALLLOCK_INSTANCE_LEASE_S", LEASE_S.to_string())
        .env("DASHBOARD_JOBS_URL", format!("{}/jobs", dashboard.url()))
        .env("DASHBOARD_CALLS_URL", format!("{}/calls", dashboard.url()))
        .env(
            "DASHBOARD_ALERTS_URL",
            format!("{}/alerts", dashboard.url()),
        )
        .env("DASHBOARD_WEBHOOK_SECRET", SECRET)
        .env("DASHBOARD_USER_EMAIL", "owner@example.com");
    c
}

fn dashboard() -> FakeHttp {
    support_dashboard::accepting()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).to_string()
}

/// `calllock chat` on `db` with fast timers, its stdio piped.
fn spawn_chat(fake: &FakeHttp, db: &Path) -> Running {
    Running::spawn(
        bin(fake)
            .arg("--db")
            .arg(db)
            .arg("chat")
            .env("CALLLOCK_BUFFER_DEBOUNCE_S", "0.1")
            .env("CALLLOCK_LLM_LATENCY_S", "0")
            .env("CALLLOCK_TOOL_LATENCY_S", "0")
            .env("CALLLOCK_SPEECH_CHARS_PER_S", "5000"),
    )
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Seconds since the Unix epoch, on the clock the processes write their
/// heartbeats with.
fn now_unix() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// The processes on `db` with a heartbeat at or after `since` (Unix
/// seconds).
fn heartbeats_since(db: &Path, since: f64) -> Vec<String> {
    rt().block_on(async {
        let store = store::Store::open(db).await.unwrap();
        let live = store.live_instances(since, 0.0).await.unwrap();
        store.close().await;
        live
    })
}

/// Polls until `done`; panics saying `what` never happened after
/// `within`.
fn poll_until(within: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !done() {
        assert!(Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// How long a lease wait may take: the lease runs out `LEASE_S` after the
/// last heartbeat; the rest is room for a busy machine.
fn lease_patience() -> Duration {
    Duration::from_secs_f64(30.0 * LEASE_S)
}

/// The live call in `db` and its events (polls until `min_events`).
fn wait_for_events(
    db: &Path,
    min_events: usize,
    caller_line: &str,
) -> (String, Vec<store::StoredEvent>) {
    let rt = rt();
    let mut seen = None;
    poll_until(
        PATIENCE,
        &format!("the live call never showed {min_events} events with {caller_line:?}"),
        || {
            seen = rt
                .block_on(async {
                    let store = store::Store::open(db).await.ok()?;
                    let calls = store
                        .list_calls_with(None, Some(store::CallStatus::Active), 10)
                        .await
                        .ok()?;
                    let call = calls.first()?;
                    let events = store.events(&call.call_id).await.ok()?;
                    store.close().await;
                    Some((call.call_id.clone(), events))
                })
                .filter(|(_, events)| {
                    let has_line = events
                        .iter()
                        .any(|e| e.kind == "caller" && e.data["text"] == caller_line);
                    events.len() >= min_events && has_line
                });
            seen.is_some()
        },
    );
    seen.unwrap()
}

#[test]
fn kill_9_mid_call_then_restart_recovers_the_call_and_delivers_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("crash.db");
    let fake = dashboard();
    let mut chat = spawn_chat(&fake, &db);
    let lines = [
        "my AC stopped cooling",
        "",
        "no, nothing like that",
        "78745",
        "My name is Dana Fields",
    ];
    for l in lines {
        chat.say(l);
    }
    let (call_id, before) = wait_for_events(&db, 10, "My name is Dana Fields");
    // kill -9: no chance to finish anything.
    let out = chat.kill();
    assert!(!out.status.success());
    assert_eq!(
        fake.request_count(),
        0,
        "nothing was delivered before the kill"
    );

    // Restart once the dead process's lease ran out (no heartbeat within
    // the lease): recovery, post-call, delivery.
    poll_until(
        lease_patience(),
        "the dead process's lease never ran out",
        || heartbeats_since(&db, now_unix() - LEASE_S).is_empty(),
    );
    let out = bin(&fake)
        .arg("--db")
        .arg(&db)
        .args(["outbox", "deliver"])
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains(&call_id), "recovery not reported: {stderr}");

    // The call is listed as interrupted, with every event up to the kill.
    let rt = rt();
    rt.block_on(async {
        let store = store::Store::open(&db).await.unwrap();
        let summary = store.call_summary(&call_id).await.unwrap().unwrap();
        assert_eq!(summary.status, store::CallStatus::Interrupted);
        let after = store.events(&call_id).await.unwrap();
        assert_eq!(
            &after[..before.len()],
            &before[..],
            "events lost or changed"
        );
        for l in lines.iter().filter(|l| !l.is_empty()) {
            assert!(
                after
                    .iter()
                    .any(|e| e.kind == "caller" && e.data["text"] == *l),
                "caller line {l:?} missing from the events"
            );
        }
        assert!(store.outbox_pending().await.unwrap().is_empty());
    });
    let list = bin(&fake)
        .arg("--db")
        .arg(&db)
        .arg("calls")
        .output()
        .unwrap();
    let list = text(&list.stdout);
    assert!(
        list.lines()
            .any(|l| l.contains(&call_id) && l.contains("interrupted")),
        "{list}"
    );
    let tr = bin(&fake)
        .arg("--db")
        .arg(&db)
        .args(["transcript", &call_id])
        .output()
        .unwrap();
    let tr = text(&tr.stdout);
    assert!(tr.contains("status: interrupted"), "{tr}");
    assert!(tr.contains("Caller: My name is Dana Fields"), "{tr}");

    // Exactly once: one job and one call record, signed, for this call.
    let reqs = fake.requests();
    let paths: Vec<&str> = reqs.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(paths, ["/jobs", "/calls"], "{paths:?}");
    for r in &reqs {
        let body = r.json.clone().unwrap_or(Value::Null);
        assert_eq!(body["call_id"], call_id.as_str());
        assert_eq!(
            r.header("X-Webhook-Signature"),
            Some(providers::dashboard::sign(SECRET, &r.body).as_str())
        );
    }
    assert_eq!(reqs[1].json.as_ref().unwrap()["job_id"], "job-1");

    // Another restart delivers nothing again.
    let out = bin(&fake)
        .arg("--db")
        .arg(&db)
        .args(["outbox", "deliver", "--now"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(fake.request_count(), 2, "delivered twice");
}

/// Issue 15, item 8: a second process on the same database (same instance
/// name, same host) never takes over the first one's live call: the first
/// finishes it and its real record is the one delivered, once.
#[test]
fn a_second_process_leaves_a_live_call_alone() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("two.db");
    let fake = dashboard();
    let mut chat = spawn_chat(&fake, &db);
    let first = [
        "my AC stopped cooling",
        "",
        "no, nothing like that",
        "78745",
    ];
    for l in first {
        chat.say(l);
    }
    let (call_id, _) = wait_for_events(&db, 6, "78745");
    // A second process: an operator runs `outbox deliver` (or another
    // chat) while the call is live, past the lease: had the first process
    // died when its call was seen, its lease would have run out. The
    // first process proves it is alive past that point by a heartbeat
    // written a whole lease after the call was seen.
    let seen = now_unix();
    poll_until(
        lease_patience(),
        "the live process wrote no heartbeat a lease after its call was seen",
        || !heartbeats_since(&db, seen + LEASE_S).is_empty(),
    );
    for _ in 0..2 {
        let out = bin(&fake)
            .arg("--db")
            .arg(&db)
            .args(["outbox", "deliver", "--now"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert!(
            !text(&out.stderr).contains(&call_id),
            "the live call was taken over: {}",
            text(&out.stderr)
        );
    }
    assert_eq!(fake.request_count(), 0, "nothing sent for a live call");
    rt().block_on(async {
        let store = store::Store::open(&db).await.unwrap();
        let s = store.call_summary(&call_id).await.unwrap().unwrap();
        assert_eq!(s.status, store::CallStatus::Active, "still live");
    });
    // The first process finishes its call: its record is the one sent.
    for l in [
        "My name is Dana Fields",
        "It's 4329 Franklin Street",
        "no that's all",
        "as soon as possible",
        "yes that's right",
        "thanks, bye",
    ] {
        chat.say(l);
    }
    // The goodbye is said, then the agent hangs up (chat exits by itself).
    chat.wait_for("the agent to hang up", |out| out.contains("agent hung up"));
    let out = chat.hang_up();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let reqs = fake.requests();
    let paths: Vec<&str> = reqs.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(paths, ["/jobs", "/calls"], "{paths:?}");
    let job = reqs[0].json.clone().unwrap();
    assert_eq!(job["call_id"], call_id.as_str());
    assert_eq!(job["booking_status"], "confirmed", "the real record: {job}");
    rt().block_on(async {
        let store = store::Store::open(&db).await.unwrap();
        let s = store.call_summary(&call_id).await.unwrap().unwrap();
        assert_eq!(s.status, store::CallStatus::Completed);
    });
}

#[test]
fn two_processes_on_one_postgresql_never_deliver_an_item_twice() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let Some(db) = rt.block_on(store::testing::pg_test_db()) else {
        return; // printed why it skips
    };
    let fake = dashboard();
    let jobs = format!("{}/jobs", fake.url());
    let calls = format!("{}/calls", fake.url());
    // 100 calls, each with a job then a call record, all due.
    rt.block_on(async {
        let store = db.store().await.unwrap();
        for i in 0..100 {
            let call_id = format!("CA-pg-{i:03}");
            for (kind, url) in [
                (store::OutboxKind::Job, &jobs),
                (store::OutboxKind::Call, &calls),
            ] {
                store
                    .outbox_enqueue(
                        &store::NewOutboxItem {
                            call_id: call_id.clone(),
                            kind,
                            target_url: url.clone(),
                            payload: json!({"call_id": call_id, "kind": kind.as_str()}),
                        },
                        1_000.0 + i as f64,
                    )
                    .await
                    .unwrap();
            }
        }
        store.close().await;
    });
    let spawn = |name: &str| {
        bin(&fake)
            .arg("--db")
            .arg(db.url())
            .args(["outbox", "deliver", "--now"])
            .env("CALLLOCK_INSTANCE", name)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let a = spawn("pg-a");
    let b = spawn("pg-b");
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    for o in [&a, &b] {
        assert!(
            o.status.success(),
            "{}\n{}",
            text(&o.stdout),
            text(&o.stderr)
        );
    }
    let reqs = fake.requests();
    let keys: BTreeSet<&str> = reqs
        .iter()
        .map(|r| r.header("Idempotency-Key").unwrap_or(""))
        .collect();
    assert_eq!(reqs.len(), 200, "every item delivered once");
    assert_eq!(keys.len(), 200, "an item was delivered twice");
    // Per call: the job before the call record.
    for i in 0..100 {
        let id = format!("CA-pg-{i:03}");
        let kinds: Vec<&str> = reqs
            .iter()
            .filter(|r| r.json.as_ref().is_some_and(|j| j["call_id"] == id.as_str()))
            .map(|r| r.path.as_str())
            .collect();
        assert_eq!(kinds, ["/jobs", "/calls"], "{id}");
    }
    // Both processes did some of the work (SKIP LOCKED let them share).
    let attempted = |o: &std::process::Output| {
        text(&o.stdout)
            .lines()
            .find_map(|l| l.strip_prefix("attempted "))
            .and_then(|l| l.split(':').next())
            .and_then(|n| n.trim().parse::<usize>().ok())
            .unwrap_or(0)
    };
    assert_eq!(attempted(&a) + attempted(&b), 200);
    rt.block_on(async {
        let store = db.store().await.unwrap();
        assert!(store.outbox_pending().await.unwrap().is_empty());
        store.close().await;
    });
}
