//! Opening databases and call records.

use chrono::{Duration, TimeZone, Utc};
use serde_json::json;
use store::{CallRecord, Store, StoreError};

#[macro_use]
mod common;

fn temp_dir(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("calllock-store-{name}-{}", std::process::id()))
}

#[tokio::test]
async fn open_creates_file_with_wal_and_foreign_keys() {
    let dir = temp_dir("open");
    let _ = std::fs::remove_dir_all(&dir);
    let path = dir.join("nested").join("calllock.db");
    let s = Store::open(&path).await.unwrap();
    assert!(path.exists());
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
        .fetch_one(s.pool())
        .await
        .unwrap();
    assert_eq!(mode.to_lowercase(), "wal");
    let fk: i64 = sqlx::query_scalar("PRAGMA foreign_keys")
        .fetch_one(s.pool())
        .await
        .unwrap();
    assert_eq!(fk, 1);
    s.close().await;

    // Reopening runs the (already applied) migrations again without error
    // and keeps the data.
    let s = Store::open(&path).await.unwrap();
    assert_eq!(s.count_calls().await.unwrap(), 0);
    s.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn open_failure_names_the_path() {
    let dir = temp_dir("openfail");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // A regular file where the parent directory should be.
    let blocker = dir.join("file");
    std::fs::write(&blocker, b"x").unwrap();
    let err = Store::open(&blocker.join("db.sqlite")).await.unwrap_err();
    assert!(matches!(err, StoreError::CreateDir { .. }), "{err:?}");
    assert!(err.to_string().contains("file"), "{err}");

    // A directory where the database file should be.
    let err = Store::open(&dir).await.unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with("cannot open database at"), "{text}");
    assert!(text.contains(&dir.display().to_string()), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn in_memory_stores_are_separate() {
    let a = Store::open_in_memory().await.unwrap();
    let b = Store::open_in_memory().await.unwrap();
    a.save_call(&record("CA1", 0)).await.unwrap();
    assert_eq!(a.count_calls().await.unwrap(), 1);
    assert_eq!(b.count_calls().await.unwrap(), 0);
}

fn record(id: &str, minutes: i64) -> CallRecord {
    let start = Utc.with_ymd_and_hms(2026, 2, 23, 16, 0, 0).unwrap() + Duration::minutes(minutes);
    CallRecord {
        call_id: id.into(),
        phone: "+15125550100".into(),
        started_at: start,
        ended_at: Some(start + Duration::seconds(95) + Duration::milliseconds(250)),
        final_state: "confirm".into(),
        end_call_reason: "completed".into(),
        booking_status: "confirmed".into(),
        urgency: "Routine".into(),
        priority_color: "green".into(),
        revenue_tier: "standard_repair".into(),
        customer_name: "Jonas Weber".into(),
        problem: "AC blowing warm air".into(),
        record: json!({"job": {"customer_name": "Jonas Weber", "tags": ["a", "b"]}, "n": 1.5}),
        transcript: json!([
            {"role": "agent", "content": "Thanks for calling!", "timestamp": 1.0},
            {"role": "user", "content": "Hi ✓", "timestamp": 2.5}
        ]),
    }
}

both! {
    #[tokio::test]
    async fn call_record_round_trip_and_upsert(fx) {
        let s = fx.store().await;
        let r = record("CA_rt", 0);
        s.save_call(&r).await.unwrap();
        assert_eq!(s.get_call("CA_rt").await.unwrap().unwrap(), r);
        assert!(s.get_call("CA_missing").await.unwrap().is_none());

        let mut r2 = r.clone();
        r2.final_state = "callback".into();
        r2.ended_at = None;
        r2.transcript = json!([]);
        s.save_call(&r2).await.unwrap();
        assert_eq!(s.count_calls().await.unwrap(), 1);
        assert_eq!(s.get_call("CA_rt").await.unwrap().unwrap(), r2);
    }
}

both! {
    #[tokio::test]
    async fn list_calls_newest_first_with_since_and_limit(fx) {
        let s = fx.store().await;
        for (i, id) in ["CA_a", "CA_b", "CA_c"].iter().enumerate() {
            s.save_call(&record(id, i as i64 * 10)).await.unwrap();
        }
        let all = s.list_calls(None, 10).await.unwrap();
        let ids: Vec<_> = all.iter().map(|c| c.call_id.as_str()).collect();
        assert_eq!(ids, ["CA_c", "CA_b", "CA_a"]);
        assert_eq!(all[0], record("CA_c", 20).summary());

        let since = Utc.with_ymd_and_hms(2026, 2, 23, 16, 10, 0).unwrap();
        let recent = s.list_calls(Some(since), 10).await.unwrap();
        assert_eq!(recent.len(), 2);
        assert_eq!(s.list_calls(None, 1).await.unwrap().len(), 1);
        assert!(s.list_calls(None, 0).await.unwrap().is_empty());

        let mine = s.calls_for("(512) 555-0100", 10).await.unwrap();
        assert_eq!(mine.len(), 3);
    }
}

both! {
    #[tokio::test]
    async fn recent_calls_show_in_lookup(fx) {
        use agent::backend::Backend;
        use std::sync::Arc;
        let s = fx.store().await;
        let b = store::EmbeddedBackend::with_clock(
            s.clone(),
            agent::BusinessProfile::default(),
            Arc::new(|| Utc.with_ymd_and_hms(2026, 2, 25, 16, 0, 0).unwrap()),
        );
        b.seed_demo(b.now()).await.unwrap();
        s.save_call(&record("CA_prev", 0)).await.unwrap();
        let v = b.lookup_caller("+15125550100", "CA_now").await;
        let recent = v["recentCalls"].as_array().unwrap();
        assert_eq!(recent.len(), 1, "{v}");
        assert_eq!(recent[0]["date"], "Monday, February 23");
        assert_eq!(recent[0]["issue"], "AC blowing warm air");
        assert_eq!(recent[0]["outcome"], "completed");
    }
}

both! {
    #[tokio::test]
    async fn search_calls_filters_and_pages_by_cursor(fx) {
        use store::{CallQuery, CallStatus, Cursor};
        let s = fx.store().await;
        // 7 calls, a minute apart; two share a start second.
        for i in 0..6 {
            let mut r = record(&format!("CA_{i}"), i);
            if i % 2 == 1 {
                r.final_state = "callback".into();
                r.priority_color = "red".into();
                r.phone = "+15125550199".into();
            }
            s.save_call(&r).await.unwrap();
        }
        s.save_call(&record("CA_5b", 5)).await.unwrap();
        let ids = |p: &store::CallPage| p.calls.iter().map(|c| c.call_id.clone()).collect::<Vec<_>>();

        let all = s.search_calls(&CallQuery { limit: 50, ..Default::default() }).await.unwrap();
        assert_eq!(ids(&all), ["CA_5", "CA_5b", "CA_4", "CA_3", "CA_2", "CA_1", "CA_0"]);
        assert_eq!(all.next, None, "a short page is the last");

        // Pages of 3, by cursor: the same calls, once each, in order.
        let mut seen = Vec::new();
        let mut q = CallQuery { limit: 3, ..Default::default() };
        loop {
            let page = s.search_calls(&q).await.unwrap();
            seen.extend(ids(&page));
            match page.next {
                Some(c) => q.after = Some(Cursor::decode(&c.encode()).unwrap()),
                None => break,
            }
        }
        assert_eq!(seen, ids(&all));

        let q = |f: fn(&mut CallQuery)| {
            let mut q = CallQuery { limit: 50, ..Default::default() };
            f(&mut q);
            q
        };
        let red = s.search_calls(&q(|q| q.priority = Some("red".into()))).await.unwrap();
        assert_eq!(ids(&red), ["CA_5", "CA_3", "CA_1"]);
        let cb = s.search_calls(&q(|q| q.final_state = Some("callback".into()))).await.unwrap();
        assert_eq!(ids(&cb), ids(&red));
        // The caller's digits, however they are written.
        let by_phone = s.search_calls(&q(|q| q.caller = Some("(512) 555-0199".into()))).await.unwrap();
        assert_eq!(ids(&by_phone), ids(&red));
        let by_tail = s.search_calls(&q(|q| q.caller = Some("0100".into()))).await.unwrap();
        assert_eq!(ids(&by_tail), ["CA_5b", "CA_4", "CA_2", "CA_0"]);
        // A time window: [start of minute 2, start of minute 4).
        let t0 = record("x", 0).started_at.timestamp();
        let window = s
            .search_calls(&q(|q| {
                q.since = Some(record("x", 2).started_at.timestamp());
                q.until = Some(record("x", 4).started_at.timestamp());
            }))
            .await
            .unwrap();
        assert_eq!(ids(&window), ["CA_3", "CA_2"], "t0 {t0}");
        let done = s.search_calls(&q(|q| q.status = Some(CallStatus::Completed))).await.unwrap();
        assert_eq!(done.calls.len(), 7);
        let live = s.search_calls(&q(|q| q.status = Some(CallStatus::Active))).await.unwrap();
        assert!(live.calls.is_empty());
        // Nothing matches: an empty page, no cursor.
        let none = s.search_calls(&q(|q| q.final_state = Some("nope".into()))).await.unwrap();
        assert!(none.calls.is_empty() && none.next.is_none());
        // The limit is clamped to 1..=500.
        let one = s.search_calls(&CallQuery { limit: 0, ..Default::default() }).await.unwrap();
        assert_eq!(one.calls.len(), 1);
    }
}

#[test]
fn cursors_round_trip_and_garbage_is_not_a_cursor() {
    use store::Cursor;
    let c = Cursor {
        started_unix: 1_771_862_400,
        call_id: "CA_x_y".into(),
    };
    assert_eq!(Cursor::decode(&c.encode()), Some(c));
    for bad in ["", "_", "12", "12_", "x_CA", "1.5_CA"] {
        assert_eq!(Cursor::decode(bad), None, "{bad:?}");
    }
}
