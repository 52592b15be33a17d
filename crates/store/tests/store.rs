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

/// Seed `n` calls straight into the table (fast on both databases): a
/// minute apart, mixed final states and priorities, mostly finished,
/// every 500th live and every 97th interrupted, each with a few KB of
/// record and transcript like a real call's. They have no caller
/// suffixes (those come with `save_call`): add calls through `save_call`
/// for a caller filter to find.
async fn seed_calls(s: &Store, n: i64) {
    let wide: String = (0..60)
        .map(|i| format!("turn {i}: the caller describes the AC blowing warm air at the house. "))
        .collect();
    sqlx::query(
        "WITH RECURSIVE n (i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $1) \
         INSERT INTO calls (call_id, phone, started_at, started_unix, final_state, priority_color, \
             record, transcript, status) \
         SELECT 'CA_seed_' || i, '+1512' || (1000000 + (i * 7919) % 9000000), '2026-01-01T00:00:00Z', \
             1700000000 + 60 * i, \
             CASE i % 5 WHEN 0 THEN 'confirm' WHEN 1 THEN 'callback' WHEN 2 THEN 'safety_exit' \
                 WHEN 3 THEN 'out_of_area' ELSE 'confirm' END, \
             CASE i % 4 WHEN 0 THEN 'green' WHEN 1 THEN 'blue' WHEN 2 THEN 'red' ELSE 'gray' END, \
             $2, $2, \
             CASE WHEN i % 500 = 0 THEN 'active' WHEN i % 97 = 0 THEN 'interrupted' ELSE 'completed' END \
         FROM n",
    )
    .bind(n)
    .bind(wide)
    .execute(s.pool())
    .await
    .unwrap();
}

/// Every filter of the calls list and `/api/calls`, alone and combined
/// with others and the cursor.
fn every_filter() -> Vec<(&'static str, store::CallQuery)> {
    use store::{CallQuery, CallStatus, Cursor};
    let q = |f: &dyn Fn(&mut CallQuery)| {
        let mut q = CallQuery {
            limit: 50,
            ..Default::default()
        };
        f(&mut q);
        q
    };
    let cursor = Cursor {
        started_unix: 1_700_000_000 + 60 * 5_000,
        call_id: "CA_seed_5000".into(),
    };
    vec![
        ("no filter", q(&|_| {})),
        ("status=live", q(&|q| q.status = Some(CallStatus::Active))),
        (
            "status=finished",
            q(&|q| q.status = Some(CallStatus::Completed)),
        ),
        (
            "status=interrupted",
            q(&|q| q.status = Some(CallStatus::Interrupted)),
        ),
        (
            "final_state",
            q(&|q| q.final_state = Some("safety_exit".into())),
        ),
        ("priority", q(&|q| q.priority = Some("red".into()))),
        (
            "caller digits (few numbers)",
            q(&|q| q.caller = Some("(512) 555-0199".into())),
        ),
        (
            "caller digits (many numbers)",
            q(&|q| q.caller = Some("5".into())),
        ),
        (
            "since/until",
            q(&|q| {
                q.since = Some(1_700_000_000 + 60 * 2_000);
                q.until = Some(1_700_000_000 + 60 * 3_000);
            }),
        ),
        ("cursor", q(&|q| q.after = Some(cursor.clone()))),
        (
            "state+priority+status+cursor",
            q(&|q| {
                q.final_state = Some("callback".into());
                q.priority = Some("blue".into());
                q.status = Some(CallStatus::Completed);
                q.after = Some(cursor.clone());
            }),
        ),
        (
            "caller+state+since",
            q(&|q| {
                q.caller = Some("0199".into());
                q.final_state = Some("callback".into());
                q.since = Some(1_700_000_000);
            }),
        ),
        (
            "live+caller",
            q(&|q| {
                q.status = Some(CallStatus::Active);
                q.caller = Some("512".into());
            }),
        ),
    ]
}

both! {
    /// Issue 22: at a year of calls a rare filter (`status=live`, a
    /// caller's digits) read every wide row. Every filter's query must
    /// now be answered from an index: never a scan of the `calls` table.
    #[tokio::test]
    async fn every_filter_of_the_calls_list_is_answered_from_an_index(fx) {
        let s = fx.store().await;
        seed_calls(&s, 20_000).await;
        for i in 0..12 {
            let mut r = record(&format!("CA_known_{i}"), i);
            r.phone = "+15125550199".into();
            r.final_state = "callback".into();
            s.save_call(&r).await.unwrap();
        }
        if fx.is_pg() {
            // PostgreSQL plans from statistics (autovacuum keeps them).
            sqlx::query("ANALYZE calls").execute(s.pool()).await.unwrap();
        }
        for (name, q) in every_filter() {
            let plan = s.explain_search(&q).await.unwrap();
            let text = plan.join("\n");
            assert!(!plan.is_empty(), "{name}: no plan");
            for line in &plan {
                let scan_of_table = if fx.is_pg() {
                    line.contains("Seq Scan on calls")
                } else {
                    line.contains("SCAN calls") && !line.contains("INDEX")
                };
                assert!(!scan_of_table, "{name}: a scan of the calls table:\n{text}");
            }
            assert!(text.contains("calls_list"), "{name}: no list index in\n{text}");
        }
        // And the answers are right: the calls of the number, newest first.
        let known = s
            .search_calls(&every_filter().into_iter().find(|(n, _)| n.starts_with("caller digits (few")).unwrap().1)
            .await
            .unwrap();
        let ids: Vec<_> = known.calls.iter().map(|c| c.call_id.as_str()).collect();
        assert_eq!(ids, (0..12).rev().map(|i| format!("CA_known_{i}")).collect::<Vec<_>>());
    }
}

both! {
    /// The caller filter finds calls by any run of digits of their number,
    /// by either route (few numbers: through the suffix table; many: by
    /// walking the list), live calls included (their number is not in the
    /// suffix table until their record is saved), and pages by cursor.
    #[tokio::test]
    async fn callers_are_found_by_any_digits_of_their_number(fx) {
        use store::{CallQuery, CallStatus};
        let s = fx.store().await;
        let numbers = ["+15125550199", "+15125550100", "+12145559999", "anonymous"];
        for i in 0..40i64 {
            let mut r = record(&format!("CA_{i:02}"), i);
            r.phone = numbers[(i % 4) as usize].into();
            s.save_call(&r).await.unwrap();
        }
        s.begin_call("CA_live", "+19995550199", 1_771_862_400.0 + 7200.0, "me").await.unwrap();
        let found = |caller: &str| {
            let s = s.clone();
            let caller = caller.to_string();
            async move {
                let mut out = Vec::new();
                let mut q = CallQuery { caller: Some(caller), limit: 7, ..Default::default() };
                loop {
                    let page = s.search_calls(&q).await.unwrap();
                    out.extend(page.calls.iter().map(|c| c.call_id.clone()));
                    match page.next {
                        Some(c) => q.after = Some(c),
                        None => return out,
                    }
                }
            }
        };
        let want = |pred: &dyn Fn(&str) -> bool| {
            let mut ids: Vec<String> = (0..40i64)
                .filter(|i| pred(numbers[(i % 4) as usize]))
                .map(|i| format!("CA_{i:02}"))
                .collect();
            ids.reverse();
            ids
        };
        let mut live_first = vec!["CA_live".to_string()];
        live_first.extend(want(&|n| n.contains("5550199")));
        assert_eq!(found("555-0199").await, live_first);
        assert_eq!(found("9999").await, want(&|n| n.contains("9999")));
        assert_eq!(found("15125550100").await, want(&|n| n.contains("15125550100")));
        assert_eq!(found("99999").await, Vec::<String>::new());
        // Digits in every number: the walk-the-list route, same answers.
        assert_eq!(found("1512").await, want(&|n| n.contains("1512")));
        let mut all_555 = vec!["CA_live".to_string()];
        all_555.extend(want(&|n| n.contains("555")));
        assert_eq!(found("555").await, all_555);
        // Digits that thousands of numbers contain: the same answer by the
        // walk-the-list route.
        sqlx::query(
            "WITH RECURSIVE n (i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2500) \
             INSERT INTO call_phone_suffixes (suffix, phone) SELECT '555' || i, '+1000555' || i FROM n",
        )
        .execute(s.pool())
        .await
        .unwrap();
        assert_eq!(found("555").await, all_555);
        let mut live = CallQuery { caller: Some("0199".into()), limit: 50, ..Default::default() };
        live.status = Some(CallStatus::Active);
        let page = s.search_calls(&live).await.unwrap();
        assert_eq!(page.calls.iter().map(|c| c.call_id.as_str()).collect::<Vec<_>>(), ["CA_live"]);
    }
}

both! {
    /// A database from before the list indexes (migration 0005) with calls
    /// in it is upgraded in place when opened: its callers are found by
    /// their digits, and the list indexes exist.
    #[tokio::test]
    async fn an_existing_database_is_upgraded_in_place(fx) {
        let at = fx.location().await;
        let s = Store::connect(&at).await.unwrap();
        for i in 0..5 {
            let mut r = record(&format!("CA_old_{i}"), i);
            r.phone = format!("+1512555{:04}", 7000 + i);
            s.save_call(&r).await.unwrap();
        }
        // Back to the schema before 0005 (what an existing user has).
        for sql in [
            "DROP TABLE call_phone_suffixes",
            "DROP INDEX calls_list",
            "DROP INDEX calls_list_status",
            "DROP INDEX calls_list_state",
            "DROP INDEX calls_list_priority",
            "DROP INDEX calls_list_phone",
            "CREATE INDEX calls_phone ON calls (phone)",
            "CREATE INDEX calls_started ON calls (started_unix)",
            "DELETE FROM _sqlx_migrations WHERE version = 5",
        ] {
            sqlx::query(sql).execute(s.pool()).await.unwrap();
        }
        s.close().await;
        let s = Store::connect(&at).await.unwrap();
        let q = store::CallQuery { caller: Some("5557003".into()), limit: 50, ..Default::default() };
        let page = s.search_calls(&q).await.unwrap();
        assert_eq!(page.calls.iter().map(|c| c.call_id.as_str()).collect::<Vec<_>>(), ["CA_old_3"]);
        let indexes: Vec<String> = sqlx::query_scalar(if fx.is_pg() {
            "SELECT indexname::text FROM pg_indexes WHERE tablename = 'calls'"
        } else {
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'calls'"
        })
        .fetch_all(s.pool())
        .await
        .unwrap();
        for want in ["calls_list", "calls_list_status", "calls_list_state", "calls_list_priority", "calls_list_phone"] {
            assert!(indexes.iter().any(|i| i == want), "{want} missing: {indexes:?}");
        }
        s.close().await;
    }
}
