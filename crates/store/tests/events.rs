//! The call event log and call lifecycle, on SQLite and PostgreSQL.

use chrono::{Duration, TimeZone, Utc};
use serde_json::json;
use std::sync::Arc;
use store::{CallRecord, CallStatus, Dialect, Store, StoreError};

#[macro_use]
mod common;

/// 2026-02-23 16:00 UTC.
const T0: f64 = 1_771_862_400.0;

fn record(id: &str, phone: &str) -> CallRecord {
    let start = Utc.timestamp_opt(T0 as i64, 0).unwrap();
    CallRecord {
        call_id: id.into(),
        phone: phone.into(),
        started_at: start,
        ended_at: Some(start + Duration::seconds(95)),
        final_state: "confirm".into(),
        end_call_reason: "completed".into(),
        booking_status: "confirmed".into(),
        urgency: "Routine".into(),
        priority_color: "green".into(),
        revenue_tier: "standard_repair".into(),
        customer_name: "Jonas Weber".into(),
        problem: "AC blowing warm air".into(),
        record: json!({"job": {"customer_name": "Jonas Weber"}}),
        transcript: json!([{"role": "agent", "content": "Hi"}]),
    }
}

both! {
    #[tokio::test]
    async fn events_round_trip_in_order(fx) {
        let s = fx.store().await;
        s.begin_call("CA1", "(512) 555-0100", T0, "inst-a").await.unwrap();
        let payloads = [
            (3, "agent_said", json!({"msg_id": 2, "text": "Booked ✓ for Tuesday"})),
            (1, "caller_said", json!({"text": "my AC is \"broken\"", "confidence": 0.93})),
            (2, "tool_called", json!({"tool": "book_service", "args": {"n": [1, 2.5, null]}})),
        ];
        for (seq, kind, data) in &payloads {
            s.append_event("CA1", *seq, T0 + *seq as f64 * 0.125, kind, data)
                .await
                .unwrap();
        }
        s.append_event("CA_other", 1, T0, "caller_said", &json!({})).await.unwrap();
        let evs = s.events("CA1").await.unwrap();
        assert_eq!(evs.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2, 3]);
        for e in &evs {
            let (_, kind, data) = payloads.iter().find(|p| p.0 == e.seq).unwrap();
            assert_eq!(e.call_id, "CA1");
            assert_eq!(&e.kind, kind);
            assert_eq!(&e.data, data);
            assert_eq!(e.at_unix, T0 + e.seq as f64 * 0.125);
        }
        assert!(s.events("CA_missing").await.unwrap().is_empty());
    }
}

both! {
    #[tokio::test]
    async fn duplicate_seq_is_a_clear_error(fx) {
        let s = fx.store().await;
        s.append_event("CA1", 1, T0, "caller_said", &json!({"text": "hi"}))
            .await
            .unwrap();
        let err = s
            .append_event("CA1", 1, T0 + 1.0, "caller_said", &json!({"text": "again"}))
            .await
            .unwrap_err();
        assert!(
            matches!(&err, StoreError::DuplicateEvent { call_id, seq: 1 } if call_id == "CA1"),
            "{err:?}"
        );
        assert!(err.to_string().contains("event 1 of call CA1"), "{err}");
        // The first one stands.
        let evs = s.events("CA1").await.unwrap();
        assert_eq!(evs.len(), 1);
        assert_eq!(evs[0].data["text"], "hi");
    }
}

both! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_appends_each_get_their_own_answer(fx) {
        // Many appends at once (batched by the group-commit writer, or
        // inline on a SQLite file); a duplicate fails alone and the others
        // are committed. SQLite: in memory (writer) and on a file (inline).
        let s = fx.store().await;
        check_concurrent_appends(&s).await;
        let s = Store::connect(&fx.location().await).await.unwrap();
        check_concurrent_appends(&s).await;
        s.close().await;
    }
}

async fn check_concurrent_appends(s: &Store) {
    let mut tasks = Vec::new();
    for call in 0..20 {
        for seq in 0..30i64 {
            let s = s.clone();
            tasks.push(tokio::spawn(async move {
                let id = format!("CA{call}");
                // seq 7 twice per call.
                let seq = if seq == 8 { 7 } else { seq };
                let r = s
                    .append_event(&id, seq, T0 + seq as f64, "tick", &json!({"call": call}))
                    .await;
                (id, seq, r)
            }));
        }
    }
    let mut dups = 0;
    for t in tasks {
        let (id, seq, r) = t.await.unwrap();
        match r {
            Ok(()) => {}
            Err(StoreError::DuplicateEvent { call_id, seq: 7 }) if call_id == id && seq == 7 => {
                dups += 1
            }
            Err(e) => panic!("{id} {seq}: {e:?}"),
        }
    }
    assert_eq!(dups, 20);
    for call in 0..20 {
        let evs = s.events(&format!("CA{call}")).await.unwrap();
        assert_eq!(evs.len(), 29, "CA{call}");
        assert!(evs.windows(2).all(|w| w[0].seq < w[1].seq));
    }
}

both! {
    #[tokio::test]
    async fn crash_then_mark_interrupted(fx) {
        let at = fx.location().await;
        {
            let s = Store::connect(&at).await.unwrap();
            s.begin_call("CA_live", "+15125550100", T0, "inst-a").await.unwrap();
            s.begin_call("CA_other_instance", "+15125550101", T0 + 1.0, "inst-b")
                .await
                .unwrap();
            s.begin_call("CA_done", "+15125550102", T0 + 2.0, "inst-a").await.unwrap();
            s.save_call(&record("CA_done", "+15125550102")).await.unwrap();
            for seq in 1..=50 {
                s.append_event("CA_live", seq, T0 + seq as f64, "caller_said", &json!({"n": seq}))
                    .await
                    .unwrap();
            }
            // The process dies: no close, no final record.
            drop(s);
        }
        let s = Store::connect(&at).await.unwrap();
        // inst-b is alive (a heartbeat within the lease); inst-a died.
        let now = T0 + 100.0;
        s.heartbeat("inst-a", now - 31.0).await.unwrap();
        s.heartbeat("inst-b", now - 5.0).await.unwrap();
        assert_eq!(s.live_instances(now, 30.0).await.unwrap(), ["inst-b"]);
        assert_eq!(s.mark_orphans_interrupted(now, 30.0).await.unwrap(), ["CA_live"]);
        assert!(s.mark_orphans_interrupted(now, 30.0).await.unwrap().is_empty());
        let evs = s.events("CA_live").await.unwrap();
        assert_eq!(evs.len(), 50);
        assert!(evs.iter().enumerate().all(|(i, e)| e.seq == i as i64 + 1 && e.data["n"] == e.seq));

        assert_eq!(s.call_status("CA_live").await.unwrap(), Some(CallStatus::Interrupted));
        assert_eq!(s.call_status("CA_other_instance").await.unwrap(), Some(CallStatus::Active));
        assert_eq!(s.call_status("CA_done").await.unwrap(), Some(CallStatus::Completed));
        assert_eq!(s.call_status("CA_nope").await.unwrap(), None);

        // Listable and readable without a final record.
        let listed = s.list_calls_with(None, Some(CallStatus::Interrupted), 10).await.unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].call_id, "CA_live");
        assert_eq!(listed[0].phone, "+15125550100");
        let rec = s.get_call("CA_live").await.unwrap().unwrap();
        assert!(rec.record.is_null());
        assert_eq!(rec.transcript, json!([]));
        assert_eq!(rec.ended_at, None);
        assert_eq!(rec.started_at.timestamp(), T0 as i64);

        // Post-call processing of the interrupted call.
        let pending: Vec<String> = s.calls_pending_postcall(now, 30.0).await.unwrap().into_iter().map(|(id, _, _)| id).collect();
        assert_eq!(pending, ["CA_live"]);
        // Two live processes recover at once: one of them takes the call,
        // and from then on it is that live process's (nobody else's).
        s.heartbeat("inst-c", now - 1.0).await.unwrap();
        let (b, c) = tokio::join!(
            s.claim_call("CA_live", "inst-b", now, 30.0),
            s.claim_call("CA_live", "inst-c", now, 30.0),
        );
        assert!(b.unwrap() ^ c.unwrap(), "exactly one claim wins");
        assert!(!s.claim_call("CA_live", "inst-b", now, 30.0).await.unwrap());
        assert!(s.calls_pending_postcall(now, 30.0).await.unwrap().is_empty(), "owned by a live process");
        assert!(!s.claim_call("CA_other_instance", "inst-c", now, 30.0).await.unwrap(), "a live process's call");
        assert!(!s.claim_call("CA_done", "inst-c", now, 30.0).await.unwrap(), "post-call done");
        // Its claimer dies in turn: once its lease is out, it is taken over again.
        let later = now + 40.0;
        s.heartbeat("inst-d", later).await.unwrap();
        let pending: Vec<String> = s.calls_pending_postcall(later, 30.0).await.unwrap().into_iter().map(|(id, _, _)| id).collect();
        assert_eq!(pending, ["CA_live"]);
        assert!(s.claim_call("CA_live", "inst-d", later, 30.0).await.unwrap());
        s.retire_instance("inst-d").await.unwrap();
        assert!(s.mark_postcall_done("CA_live").await.unwrap());
        assert!(!s.mark_postcall_done("CA_nope").await.unwrap());
        assert!(s.calls_pending_postcall(now, 30.0).await.unwrap().is_empty());
        // Once inst-b's heartbeat is older than the lease, its call is an
        // orphan too; a clean stop (retire) makes it one at once.
        assert_eq!(s.mark_orphans_interrupted(now + 26.0, 30.0).await.unwrap(), ["CA_other_instance"]);
        s.heartbeat("inst-b", now + 30.0).await.unwrap();
        s.retire_instance("inst-b").await.unwrap();
        assert!(s.live_instances(now + 30.0, 30.0).await.unwrap().is_empty());
        // Its final record, built later, completes it.
        s.save_call(&record("CA_live", "+15125550100")).await.unwrap();
        assert_eq!(s.call_status("CA_live").await.unwrap(), Some(CallStatus::Completed));
        s.close().await;
    }
}

both! {
    #[tokio::test]
    async fn save_call_completes_the_begun_row(fx) {
        let s = fx.store().await;
        s.begin_call("CA1", "+15125550100", T0 + 0.75, "inst-a").await.unwrap();
        // Begun twice (the same call coming back): still one active row.
        s.begin_call("CA1", "+15125550100", T0 + 0.75, "inst-b").await.unwrap();
        let live = s.call_summary("CA1").await.unwrap().unwrap();
        assert_eq!(live.status, CallStatus::Active);
        assert_eq!(live.started_at.timestamp_millis(), (T0 * 1000.0) as i64 + 750);
        assert_eq!(s.count_calls().await.unwrap(), 1);

        s.save_call(&record("CA1", "+15125550100")).await.unwrap();
        assert_eq!(s.count_calls().await.unwrap(), 1);
        let rec = s.get_call("CA1").await.unwrap().unwrap();
        assert_eq!(rec, record("CA1", "+15125550100"));
        assert_eq!(
            s.call_summary("CA1").await.unwrap().unwrap(),
            record("CA1", "+15125550100").summary()
        );
        // A completed call does not begin again.
        let err = s.begin_call("CA1", "+15125550100", T0, "inst-a").await.unwrap_err();
        assert!(matches!(&err, StoreError::CallCompleted { call_id } if call_id == "CA1"), "{err:?}");
        assert!(s.mark_orphans_interrupted(T0 + 10.0, 30.0).await.unwrap().is_empty());

        // Saved without begin_call: completed too.
        s.save_call(&record("CA2", "+15125550101")).await.unwrap();
        assert_eq!(s.call_status("CA2").await.unwrap(), Some(CallStatus::Completed));
        assert!(s.calls_pending_postcall(T0 + 10.0, 30.0).await.unwrap().is_empty());
    }
}

both! {
    #[tokio::test]
    async fn listing_by_status_and_since(fx) {
        let s = fx.store().await;
        s.save_call(&record("CA_old", "+15125550100")).await.unwrap();
        s.begin_call("CA_live", "+15125550101", T0 + 3600.0, "i").await.unwrap();
        s.begin_call("CA_cut", "+15125550102", T0 + 7200.5, "j").await.unwrap();
        // "i" is alive, "j" is gone.
        s.heartbeat("i", T0 + 7300.0).await.unwrap();
        s.mark_orphans_interrupted(T0 + 7300.0, 30.0).await.unwrap();

        let all = s.list_calls_with(None, None, 10).await.unwrap();
        let ids: Vec<_> = all.iter().map(|c| (c.call_id.as_str(), c.status)).collect();
        assert_eq!(
            ids,
            [
                ("CA_cut", CallStatus::Interrupted),
                ("CA_live", CallStatus::Active),
                ("CA_old", CallStatus::Completed)
            ]
        );
        let recent = s.list_calls_with(Some(T0 + 1800.0), None, 10).await.unwrap();
        assert_eq!(recent.len(), 2);
        let recent = s.list_calls_with(Some(T0 + 7200.25), None, 10).await.unwrap();
        assert_eq!(recent.len(), 1, "whole seconds: {recent:?}");
        let done = s.list_calls_with(None, Some(CallStatus::Completed), 10).await.unwrap();
        assert_eq!(done.len(), 1);
        assert_eq!(s.list_calls_with(None, None, 1).await.unwrap().len(), 1);
        // The older DateTime form still works.
        let since = Utc.timestamp_opt(T0 as i64 + 1, 0).unwrap();
        assert_eq!(s.list_calls(Some(since), 10).await.unwrap().len(), 2);
        // A caller's history leaves out live calls.
        assert!(s.calls_for("+15125550101", 5).await.unwrap().is_empty());
        assert_eq!(s.calls_for("+15125550102", 5).await.unwrap().len(), 1);
    }
}

both! {
    #[tokio::test]
    async fn live_call_is_not_history_in_lookup(fx) {
        use agent::backend::Backend;
        let s = fx.store().await;
        let b = store::EmbeddedBackend::with_clock(
            s.clone(),
            agent::BusinessProfile::default(),
            Arc::new(|| Utc.with_ymd_and_hms(2026, 2, 25, 16, 0, 0).unwrap()),
        );
        b.seed_demo(b.now()).await.unwrap();
        s.begin_call("CA_now", "+15125550100", T0, "i").await.unwrap();
        let v = b.lookup_caller("+15125550100", "CA_now").await;
        assert_eq!(v["recentCalls"], json!([]), "{v}");
    }
}

both! {
    #[tokio::test]
    async fn corrupt_stored_values_are_errors_not_panics(fx) {
        let s = fx.store().await;
        sqlx::query(
            "INSERT INTO call_events (call_id, seq, at_unix, kind, data) \
             VALUES ('CA1', 1, 0, 'x', '{not json')",
        )
        .execute(s.pool())
        .await
        .unwrap();
        let err = s.events("CA1").await.unwrap_err();
        assert!(matches!(err, StoreError::Json { .. }), "{err:?}");
        assert!(err.to_string().contains("call CA1 seq 1"), "{err}");

        s.begin_call("CA2", "", T0, "i").await.unwrap();
        sqlx::query("UPDATE calls SET status = 'exploded', record = '[' WHERE call_id = 'CA2'")
            .execute(s.pool())
            .await
            .unwrap();
        let err = s.list_calls_with(None, None, 10).await.unwrap_err();
        assert!(matches!(err, StoreError::BadValue { .. }), "{err:?}");
        assert!(err.to_string().contains("exploded"), "{err}");
        sqlx::query("UPDATE calls SET status = 'active' WHERE call_id = 'CA2'")
            .execute(s.pool())
            .await
            .unwrap();
        let err = s.get_call("CA2").await.unwrap_err();
        assert!(matches!(err, StoreError::Json { .. }), "{err:?}");
    }
}

both! {
    #[tokio::test]
    async fn append_after_close_fails_cleanly(fx) {
        let s = fx.store().await;
        s.append_event("CA1", 1, T0, "x", &json!(1)).await.unwrap();
        s.close().await;
        let err = s.append_event("CA1", 2, T0, "x", &json!(2)).await.unwrap_err();
        assert!(matches!(err, StoreError::Closed), "{err:?}");
    }
}

both! {
    #[tokio::test]
    async fn dialect_and_description(fx) {
        let s = fx.store().await;
        if fx.is_pg() {
            assert_eq!(s.dialect(), Dialect::Postgres);
            assert!(s.describe().starts_with("postgres://"), "{}", s.describe());
        } else {
            assert_eq!(s.dialect(), Dialect::Sqlite);
            assert_eq!(s.describe(), "sqlite::memory:");
        }
        let at = fx.location().await;
        let s = Store::connect(&at).await.unwrap();
        if !fx.is_pg() {
            assert_eq!(s.describe(), format!("sqlite://{at}"));
        }
        assert!(format!("{s:?}").contains(s.describe()));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_append_waits_for_another_writer() {
    // Another connection holds SQLite's write lock: the append neither
    // fails nor blocks the runtime; it goes through once the lock is free.
    let dir = std::env::temp_dir().join(format!("calllock-store-busy-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let s = Store::open(&dir.join("calllock.db")).await.unwrap();
    s.append_event("CA1", 1, T0, "x", &json!(1)).await.unwrap();
    let mut tx = s.pool().begin_with("BEGIN IMMEDIATE").await.unwrap();
    sqlx::query("INSERT INTO call_events (call_id, seq, at_unix, kind, data) VALUES ('CA0', 1, 0, 'x', '1')")
        .execute(&mut *tx)
        .await
        .unwrap();
    let s2 = s.clone();
    let append = tokio::spawn(async move { s2.append_event("CA1", 2, T0, "x", &json!(2)).await });
    // The runtime is free meanwhile.
    tokio::time::sleep(std::time::Duration::from_millis(150)).await;
    assert!(!append.is_finished());
    tx.commit().await.unwrap();
    append.await.unwrap().unwrap();
    assert_eq!(s.events("CA1").await.unwrap().len(), 2);
    assert_eq!(s.events("CA0").await.unwrap().len(), 1);
    s.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn connect_locations() {
    let dir = std::env::temp_dir().join(format!("calllock-store-connect-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let file = dir.join("a b%.db");
    let url = format!(
        "sqlite://{}",
        file.display()
            .to_string()
            .replace('%', "%25")
            .replace(' ', "%20")
    );
    let s = Store::connect(&url).await.unwrap();
    s.append_event("CA1", 1, T0, "x", &json!(1)).await.unwrap();
    s.close().await;
    assert!(file.exists(), "{url}");
    // The same file as a plain path and as sqlite:PATH.
    let s = Store::connect(file.to_str().unwrap()).await.unwrap();
    assert_eq!(s.events("CA1").await.unwrap().len(), 1);
    s.close().await;
    let s = Store::connect(&format!("sqlite:{}", dir.join("b.db").display()))
        .await
        .unwrap();
    assert_eq!(s.dialect(), Dialect::Sqlite);
    s.close().await;
    let s = Store::connect("sqlite::memory:").await.unwrap();
    assert_eq!(s.describe(), "sqlite::memory:");

    for bad in [
        "mysql://u:pw@h/db",
        "sqlite://",
        "sqlite:///x.db?mode=ro",
        "  ",
        "sqlite:///%zz",
    ] {
        let err = Store::connect(bad).await.unwrap_err();
        assert!(matches!(err, StoreError::BadUrl { .. }), "{bad}: {err:?}");
        assert!(!err.to_string().contains("pw@"), "{err}");
    }
    let err = Store::connect("postgres://u:hunter2@127.0.0.1:1/db")
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Connect { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        !text.contains("hunter2") && text.contains("u:***@127.0.0.1:1/db"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn database_from_the_first_schema_version_still_opens() {
    // A development database created before the schema was made portable
    // has the first checksum of 0001 recorded.
    let dir = std::env::temp_dir().join(format!("calllock-store-compat-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let path = dir.join("calllock.db");
    let s = Store::open(&path).await.unwrap();
    s.save_call(&record("CA1", "+15125550100")).await.unwrap();
    let new: Vec<u8> =
        sqlx::query_scalar("SELECT checksum FROM _sqlx_migrations WHERE version = 1")
            .fetch_one(s.pool())
            .await
            .unwrap();
    let old = (0..48)
        .map(|i| u8::from_str_radix(&"f8bd2a3f1a463a6ec5c6fcfca67611c27f2826215c4b4a1629d8ba7f33798b942bb5ac4b36ba36baf6d2e027f2fe7489"[2 * i..2 * i + 2], 16).unwrap())
        .collect::<Vec<u8>>();
    sqlx::query("UPDATE _sqlx_migrations SET checksum = $1 WHERE version = 1")
        .bind(old)
        .execute(s.pool())
        .await
        .unwrap();
    s.close().await;
    let s = Store::open(&path).await.unwrap();
    assert_eq!(s.count_calls().await.unwrap(), 1);
    let now: Vec<u8> =
        sqlx::query_scalar("SELECT checksum FROM _sqlx_migrations WHERE version = 1")
            .fetch_one(s.pool())
            .await
            .unwrap();
    assert_eq!(now, new);
    // Any other checksum is still refused.
    sqlx::query("UPDATE _sqlx_migrations SET checksum = $1 WHERE version = 1")
        .bind(vec![0u8; 48])
        .execute(s.pool())
        .await
        .unwrap();
    s.close().await;
    let err = Store::open(&path).await.unwrap_err();
    assert!(matches!(err, StoreError::Migrate(_)), "{err:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

both! {
    #[tokio::test]
    async fn a_new_call_never_reuses_an_existing_call_id(fx) {
        let s = fx.store().await;
        s.begin_new_call("CA1", "+15125550100", T0, "inst-a").await.unwrap();
        // Live (here or on another instance): refused, the row untouched.
        let err = s.begin_new_call("CA1", "+15125550199", T0 + 60.0, "inst-b").await.unwrap_err();
        assert!(matches!(&err, StoreError::CallExists { call_id } if call_id == "CA1"), "{err:?}");
        let live = s.call_summary("CA1").await.unwrap().unwrap();
        assert_eq!(live.status, CallStatus::Active);
        assert_eq!(live.started_at.timestamp_millis(), (T0 * 1000.0) as i64);
        assert_eq!(live.phone, "+15125550100");
        // Completed: refused too, the record kept.
        s.save_call(&record("CA1", "+15125550100")).await.unwrap();
        let err = s.begin_new_call("CA1", "+15125550100", T0 + 120.0, "inst-a").await.unwrap_err();
        assert!(matches!(err, StoreError::CallExists { .. }), "{err:?}");
        assert_eq!(s.get_call("CA1").await.unwrap().unwrap(), record("CA1", "+15125550100"));
        assert_eq!(s.count_calls().await.unwrap(), 1);
    }
}
