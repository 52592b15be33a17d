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
