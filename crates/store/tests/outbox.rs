//! The durable outbox (D-17), on SQLite and PostgreSQL.

use serde_json::json;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use store::{NewOutboxItem, OutboxKind, OutboxStatus, Store, StoreError};

#[macro_use]
mod common;

const NOW: f64 = 1_771_862_400.0;

fn item(call_id: &str, kind: OutboxKind, n: u32) -> NewOutboxItem {
    NewOutboxItem {
        call_id: call_id.into(),
        kind,
        target_url: format!("https://dash.example/{kind}"),
        payload: json!({"call_id": call_id, "n": n, "text": "ünïcode ✓"}),
    }
}

both! {
    #[tokio::test]
    async fn enqueue_assigns_per_call_sequence(fx) {
        let s = fx.store().await;
        let a1 = s.outbox_enqueue(&item("CA_a", OutboxKind::Job, 1), NOW).await.unwrap();
        let b1 = s.outbox_enqueue(&item("CA_b", OutboxKind::Alert, 1), NOW + 1.0).await.unwrap();
        let a2 = s.outbox_enqueue(&item("CA_a", OutboxKind::Call, 2), NOW + 2.0).await.unwrap();
        assert!(a1.starts_with("ob_") && a1 != a2 && a1 != b1, "{a1} {a2} {b1}");
        let a = s.outbox_for_call("CA_a").await.unwrap();
        assert_eq!(a.iter().map(|i| (i.seq, i.kind)).collect::<Vec<_>>(), [(1, OutboxKind::Job), (2, OutboxKind::Call)]);
        let x = &a[0];
        assert_eq!(x.id, a1);
        assert_eq!(x.status, OutboxStatus::Pending);
        assert_eq!(x.attempts, 0);
        assert_eq!(x.next_attempt_unix, NOW);
        assert_eq!(x.created_unix, NOW);
        assert_eq!(x.target_url, "https://dash.example/job");
        assert_eq!(x.payload, item("CA_a", OutboxKind::Job, 1).payload);
        assert_eq!((x.lease_owner.as_deref(), x.lease_until, x.delivered_unix), (None, None, None));
        assert_eq!((x.last_error.as_str(), x.response.as_ref()), ("", None));
        assert_eq!(s.outbox_for_call("CA_b").await.unwrap()[0].seq, 1);
        assert_eq!(s.outbox_item(&b1).await.unwrap().unwrap().kind, OutboxKind::Alert);
        assert!(s.outbox_item("ob_nope").await.unwrap().is_none());
    }
}

both! {
    #[tokio::test]
    async fn per_call_order(fx) {
        let s = fx.store().await;
        let a1 = s.outbox_enqueue(&item("CA_a", OutboxKind::Job, 1), NOW).await.unwrap();
        let a2 = s.outbox_enqueue(&item("CA_a", OutboxKind::Call, 2), NOW).await.unwrap();
        let b1 = s.outbox_enqueue(&item("CA_b", OutboxKind::Job, 1), NOW + 0.5).await.unwrap();

        let got = s.outbox_claim_due("w1", NOW + 1.0, 30.0, 10).await.unwrap();
        assert_eq!(got.iter().map(|i| i.id.as_str()).collect::<Vec<_>>(), [a1.as_str(), b1.as_str()]);
        assert!(got.iter().all(|i| i.lease_owner.as_deref() == Some("w1") && i.lease_until == Some(NOW + 31.0)));
        // a2 waits for a1, even for another worker.
        assert!(s.outbox_claim_due("w2", NOW + 2.0, 30.0, 10).await.unwrap().is_empty());

        assert!(s.outbox_mark_delivered(&a1, "w1", &json!({"ok": true}), NOW + 3.0).await.unwrap());
        let got = s.outbox_claim_due("w2", NOW + 4.0, 30.0, 10).await.unwrap();
        assert_eq!(got.iter().map(|i| i.id.as_str()).collect::<Vec<_>>(), [a2.as_str()]);

        let d = s.outbox_item(&a1).await.unwrap().unwrap();
        assert_eq!(d.status, OutboxStatus::Delivered);
        assert_eq!(d.delivered_unix, Some(NOW + 3.0));
        assert_eq!(d.response, Some(json!({"ok": true})));
        assert_eq!(d.lease_owner.as_deref(), Some("w1"));
        assert_eq!(d.lease_until, None);
        let pending: Vec<_> = s.outbox_pending().await.unwrap().into_iter().map(|i| i.id).collect();
        assert_eq!(pending, [a2.clone(), b1.clone()]);
        // What waits, for the metrics: a2 (created at NOW) and b1.
        assert_eq!(s.outbox_waiting().await.unwrap(), (2, Some(NOW)));
    }
}

both! {
    #[tokio::test]
    async fn an_empty_outbox_has_nothing_waiting(fx) {
        let s = fx.store().await;
        assert_eq!(s.outbox_waiting().await.unwrap(), (0, None));
    }
}

both! {
    #[tokio::test]
    async fn leases(fx) {
        let s = fx.store().await;
        let id = s.outbox_enqueue(&item("CA1", OutboxKind::Call, 1), NOW).await.unwrap();
        assert_eq!(s.outbox_claim_due("w1", NOW, 10.0, 5).await.unwrap().len(), 1);
        // Leased: nobody gets it again before the lease ends…
        assert!(s.outbox_claim_due("w1", NOW + 5.0, 10.0, 5).await.unwrap().is_empty());
        assert!(s.outbox_claim_due("w2", NOW + 10.0, 10.0, 5).await.unwrap().is_empty());
        // …and after it, another worker may.
        let stolen = s.outbox_claim_due("w2", NOW + 10.5, 10.0, 5).await.unwrap();
        assert_eq!(stolen.len(), 1);
        assert_eq!(stolen[0].lease_owner.as_deref(), Some("w2"));
        // The first worker's late report is refused.
        assert!(!s.outbox_mark_delivered(&id, "w1", &json!({}), NOW + 11.0).await.unwrap());
        assert!(!s.outbox_mark_failed(&id, "w1", "late", NOW + 60.0).await.unwrap());
        assert!(!s.outbox_mark_dead(&id, "w1", "late").await.unwrap());
        assert!(s.outbox_mark_delivered(&id, "w2", &json!({"id": 7}), NOW + 12.0).await.unwrap());
        // Delivered is final.
        assert!(!s.outbox_mark_delivered(&id, "w2", &json!({}), NOW + 13.0).await.unwrap());
        assert!(s.outbox_claim_due("w3", NOW + 1000.0, 10.0, 5).await.unwrap().is_empty());
        assert!(s.outbox_pending().await.unwrap().is_empty());
    }
}

both! {
    #[tokio::test]
    async fn backoff_and_dead_items(fx) {
        let s = fx.store().await;
        let a1 = s.outbox_enqueue(&item("CA1", OutboxKind::Job, 1), NOW).await.unwrap();
        let a2 = s.outbox_enqueue(&item("CA1", OutboxKind::Call, 2), NOW).await.unwrap();
        assert_eq!(s.outbox_claim_due("w", NOW, 30.0, 5).await.unwrap().len(), 1);
        assert!(s.outbox_mark_failed(&a1, "w", "HTTP 503", NOW + 60.0).await.unwrap());
        let f = s.outbox_item(&a1).await.unwrap().unwrap();
        assert_eq!((f.attempts, f.last_error.as_str(), f.next_attempt_unix), (1, "HTTP 503", NOW + 60.0));
        assert_eq!((f.lease_owner, f.lease_until), (None, None));
        assert_eq!(f.status, OutboxStatus::Pending);
        // Not due yet (and a2 still waits behind it).
        assert!(s.outbox_claim_due("w", NOW + 30.0, 30.0, 5).await.unwrap().is_empty());
        let again = s.outbox_claim_due("w", NOW + 60.0, 30.0, 5).await.unwrap();
        assert_eq!(again.len(), 1);
        assert_eq!(again[0].attempts, 1);
        // Given up: the call's next item proceeds.
        assert!(s.outbox_mark_dead(&a1, "w", "HTTP 400: rejected").await.unwrap());
        let d = s.outbox_item(&a1).await.unwrap().unwrap();
        assert_eq!((d.status, d.attempts), (OutboxStatus::Dead, 2));
        let next = s.outbox_claim_due("w", NOW + 61.0, 30.0, 5).await.unwrap();
        assert_eq!(next.iter().map(|i| i.id.clone()).collect::<Vec<_>>(), [a2]);
        assert!(s.outbox_claim_due("w", NOW, 30.0, 0).await.unwrap().is_empty());
    }
}

both! {
    #[tokio::test]
    async fn payload_updates_and_listings(fx) {
        let s = fx.store().await;
        let mut ids = Vec::new();
        for n in 0..5 {
            ids.push(s.outbox_enqueue(&item(&format!("CA{n}"), OutboxKind::Callback, n), NOW + n as f64).await.unwrap());
        }
        assert!(s.outbox_update_payload(&ids[0], &json!({"retry": true})).await.unwrap());
        assert_eq!(s.outbox_item(&ids[0]).await.unwrap().unwrap().payload, json!({"retry": true}));
        assert!(!s.outbox_update_payload("ob_nope", &json!({})).await.unwrap());
        let claimed = s.outbox_claim_due("w", NOW + 10.0, 30.0, 1).await.unwrap();
        assert_eq!(claimed[0].id, ids[0]);
        s.outbox_mark_delivered(&ids[0], "w", &json!(null), NOW + 11.0).await.unwrap();
        assert!(!s.outbox_update_payload(&ids[0], &json!({})).await.unwrap(), "delivered: frozen");

        let newest: Vec<_> = s.outbox_all(3).await.unwrap().into_iter().map(|i| i.id).collect();
        assert_eq!(newest, [ids[4].clone(), ids[3].clone(), ids[2].clone()]);
        assert_eq!(s.outbox_all(100).await.unwrap().len(), 5);
        assert_eq!(s.outbox_pending().await.unwrap().len(), 4);
    }
}

both! {
    #[tokio::test]
    async fn corrupt_payload_is_an_error(fx) {
        let s = fx.store().await;
        let id = s.outbox_enqueue(&item("CA1", OutboxKind::Job, 1), NOW).await.unwrap();
        sqlx::query("UPDATE outbox SET payload = '{oops' WHERE id = $1")
            .bind(&id)
            .execute(s.pool())
            .await
            .unwrap();
        let err = s.outbox_pending().await.unwrap_err();
        assert!(matches!(err, StoreError::Json { .. }), "{err:?}");
        assert!(err.to_string().contains(&id), "{err}");
        sqlx::query("UPDATE outbox SET payload = '{}', kind = 'fax' WHERE id = $1")
            .bind(&id)
            .execute(s.pool())
            .await
            .unwrap();
        let err = s.outbox_claim_due("w", NOW, 1.0, 5).await.unwrap_err();
        assert!(matches!(err, StoreError::BadValue { .. }), "{err:?}");
    }
}

/// 200 items over 50 calls (4 each), claimed and delivered by two stores
/// (separate pools on one database) with two loops each: no item is
/// claimed or delivered twice, each call's items go in order, all are
/// delivered.
async fn parallel_claims(at: &str) {
    let s1 = Store::connect(at).await.unwrap();
    let s2 = Store::connect(at).await.unwrap();
    for n in 0..4u32 {
        for call in 0..50 {
            s1.outbox_enqueue(&item(&format!("CA{call:02}"), OutboxKind::Job, n), NOW)
                .await
                .unwrap();
        }
    }
    // id -> worker, and per call the seqs in delivery order.
    let claimed: Arc<Mutex<HashMap<String, String>>> = Arc::default();
    let order: Arc<Mutex<HashMap<String, Vec<i64>>>> = Arc::default();
    let mut loops = Vec::new();
    for (w, store) in [("s1-a", &s1), ("s1-b", &s1), ("s2-a", &s2), ("s2-b", &s2)] {
        let (store, claimed, order) = (store.clone(), claimed.clone(), order.clone());
        loops.push(tokio::spawn(async move {
            let deadline = std::time::Instant::now() + Duration::from_secs(60);
            let mut idle = 0;
            while idle < 20 {
                assert!(std::time::Instant::now() < deadline, "{w}: too slow");
                // No lease ever expires here: a second claim is a bug.
                let got = store
                    .outbox_claim_due(w, NOW + 1.0, 3600.0, 3)
                    .await
                    .unwrap();
                if got.is_empty() {
                    idle += 1;
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    continue;
                }
                idle = 0;
                for it in got {
                    if let Some(other) =
                        claimed.lock().unwrap().insert(it.id.clone(), w.to_string())
                    {
                        panic!("{} claimed by {other} and {w}", it.id);
                    }
                    order
                        .lock()
                        .unwrap()
                        .entry(it.call_id.clone())
                        .or_default()
                        .push(it.seq);
                    tokio::task::yield_now().await;
                    assert!(
                        store
                            .outbox_mark_delivered(&it.id, w, &json!({"by": w}), NOW + 2.0)
                            .await
                            .unwrap(),
                        "{w} lost {}",
                        it.id
                    );
                }
            }
        }));
    }
    for l in loops {
        l.await.unwrap();
    }
    {
        let claimed = claimed.lock().unwrap();
        assert_eq!(claimed.len(), 200);
        let workers: std::collections::HashSet<_> = claimed.values().collect();
        assert!(workers.len() >= 2, "only {workers:?} worked");
        for (call, seqs) in order.lock().unwrap().iter() {
            assert_eq!(seqs, &[1, 2, 3, 4], "{call}");
        }
    }
    assert!(s2.outbox_pending().await.unwrap().is_empty());
    let all = s2.outbox_all(1000).await.unwrap();
    assert_eq!(all.len(), 200);
    assert!(all.iter().all(|i| i.status == OutboxStatus::Delivered
        && i.response.as_ref().and_then(|r| r["by"].as_str()) == i.lease_owner.as_deref()));
    s1.close().await;
    s2.close().await;
}

both! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn two_stores_claim_in_parallel_without_duplicates(fx) {
        parallel_claims(&fx.location().await).await;
    }
}

both! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_enqueues_of_one_call_get_distinct_seqs(fx) {
        let at = fx.location().await;
        let s1 = Store::connect(&at).await.unwrap();
        let s2 = Store::connect(&at).await.unwrap();
        let mut tasks = Vec::new();
        for n in 0..40u32 {
            let s = if n % 2 == 0 { s1.clone() } else { s2.clone() };
            tasks.push(tokio::spawn(async move {
                s.outbox_enqueue(&item("CA1", OutboxKind::Alert, n), NOW).await
            }));
        }
        for t in tasks {
            t.await.unwrap().unwrap();
        }
        let seqs: Vec<i64> = s1.outbox_for_call("CA1").await.unwrap().iter().map(|i| i.seq).collect();
        assert_eq!(seqs, (1..=40).collect::<Vec<i64>>());
        s1.close().await;
        s2.close().await;
    }
}

both! {
    #[tokio::test]
    async fn retry_now_makes_a_pending_item_due(fx) {
        let s = fx.store().await;
        let id = s.outbox_enqueue(&item("CA1", OutboxKind::Job, 1), NOW).await.unwrap();
        assert_eq!(s.outbox_claim_due("w", NOW, 30.0, 5).await.unwrap().len(), 1);
        assert!(s.outbox_mark_failed(&id, "w", "HTTP 503", NOW + 600.0).await.unwrap());
        assert!(s.outbox_claim_due("w", NOW + 1.0, 30.0, 5).await.unwrap().is_empty());
        assert!(s.outbox_retry_now(&id, NOW + 1.0).await.unwrap());
        assert_eq!(s.outbox_claim_due("w", NOW + 1.0, 30.0, 5).await.unwrap().len(), 1);
        assert!(!s.outbox_retry_now("ob_nope", NOW).await.unwrap());
    }
}

both! {
    #[tokio::test]
    async fn the_operator_password_hash_is_kept_and_replaced(fx) {
        let s = fx.store().await;
        assert_eq!(s.operator_password_hash().await.unwrap(), None);
        s.set_operator_password_hash("$argon2id$v=19$one", NOW).await.unwrap();
        s.set_operator_password_hash("$argon2id$v=19$two", NOW + 1.0).await.unwrap();
        assert_eq!(s.operator_password_hash().await.unwrap().as_deref(), Some("$argon2id$v=19$two"));
    }
}

both! {
    /// Issue 22: an alert queued behind a job that keeps failing was never
    /// claimed (per-call order). Alerts travel in their own lane: claimed
    /// at once (and first), while the call record still waits for its job.
    #[tokio::test]
    async fn an_alert_is_claimed_while_the_job_of_its_call_waits(fx) {
        use store::OutboxLane;
        let s = fx.store().await;
        let job = s.outbox_enqueue(&item("CA_gas", OutboxKind::Job, 1), NOW).await.unwrap();
        let call = s.outbox_enqueue(&item("CA_gas", OutboxKind::Call, 2), NOW).await.unwrap();
        let alert = s.outbox_enqueue(&item("CA_gas", OutboxKind::Alert, 3), NOW).await.unwrap();
        let other = s.outbox_enqueue(&item("CA_old", OutboxKind::Job, 1), NOW - 60.0).await.unwrap();

        // Both lanes at once: the alert first, then the heads of the other
        // lane, oldest first; the call record waits behind its job.
        let got = s.outbox_claim_due("w", NOW + 1.0, 30.0, 10).await.unwrap();
        let ids: Vec<&str> = got.iter().map(|i| i.id.as_str()).collect();
        assert_eq!(ids, [alert.as_str(), other.as_str(), job.as_str()]);
        assert!(s.outbox_mark_failed(&job, "w", "HTTP 503", NOW + 300.0).await.unwrap());
        assert!(s.outbox_mark_failed(&alert, "w", "timeout", NOW + 5.0).await.unwrap());
        assert!(s.outbox_mark_delivered(&other, "w", &json!({}), NOW + 2.0).await.unwrap());

        // One lane at a time: the alert lane sees only the alert.
        let alerts = s.outbox_claim_lane(OutboxLane::Alerts, "a", NOW + 10.0, 30.0, 10).await.unwrap();
        assert_eq!(alerts.iter().map(|i| i.id.as_str()).collect::<Vec<_>>(), [alert.as_str()]);
        let ordinary = s.outbox_claim_lane(OutboxLane::Ordinary, "o", NOW + 10.0, 30.0, 10).await.unwrap();
        assert!(ordinary.is_empty(), "the job backs off, its call record waits: {ordinary:?}");
        assert!(s.outbox_mark_delivered(&alert, "a", &json!({"ok": true}), NOW + 11.0).await.unwrap());

        // The job delivered: its call record is next.
        let got = s.outbox_claim_lane(OutboxLane::Ordinary, "o", NOW + 400.0, 30.0, 10).await.unwrap();
        assert_eq!(got.iter().map(|i| i.id.as_str()).collect::<Vec<_>>(), [job.as_str()]);
        assert!(s.outbox_mark_delivered(&job, "o", &json!({}), NOW + 401.0).await.unwrap());
        let got = s.outbox_claim_lane(OutboxLane::Ordinary, "o", NOW + 402.0, 30.0, 10).await.unwrap();
        assert_eq!(got.iter().map(|i| i.id.as_str()).collect::<Vec<_>>(), [call.as_str()]);
    }
}

both! {
    /// The operator's "retry now": one item leased now, due or not — or
    /// why not (behind an earlier item of its call and lane, leased to a
    /// worker, not waiting any more).
    #[tokio::test]
    async fn one_item_is_claimed_now_or_told_why_not(fx) {
        use store::OutboxClaim;
        let s = fx.store().await;
        let job = s.outbox_enqueue(&item("CA_a", OutboxKind::Job, 1), NOW).await.unwrap();
        let call = s.outbox_enqueue(&item("CA_a", OutboxKind::Call, 2), NOW).await.unwrap();
        let alert = s.outbox_enqueue(&item("CA_a", OutboxKind::Alert, 3), NOW).await.unwrap();
        // Not due for an hour.
        let OutboxClaim::Claimed(it) = s.outbox_claim_item(&job, "w", NOW, 30.0).await.unwrap() else {
            panic!("the job is claimable");
        };
        assert_eq!((it.lease_owner.as_deref(), it.lease_until), (Some("w"), Some(NOW + 30.0)));
        assert!(s.outbox_mark_failed(&job, "w", "HTTP 503", NOW + 3600.0).await.unwrap());
        match s.outbox_claim_item(&call, "op", NOW + 1.0, 30.0).await.unwrap() {
            OutboxClaim::Behind(ahead) => assert_eq!((ahead.id.as_str(), ahead.attempts), (job.as_str(), 1)),
            other => panic!("the call record waits behind its job: {other:?}"),
        }
        // The alert is in its own lane: claimable now, and then leased.
        assert!(matches!(s.outbox_claim_item(&alert, "op", NOW + 1.0, 30.0).await.unwrap(), OutboxClaim::Claimed(_)));
        match s.outbox_claim_item(&alert, "other", NOW + 2.0, 30.0).await.unwrap() {
            OutboxClaim::Leased(it) => assert_eq!(it.lease_owner.as_deref(), Some("op")),
            other => panic!("{other:?}"),
        }
        assert!(s.outbox_claim_due("w2", NOW + 3.0, 30.0, 10).await.unwrap().iter().all(|i| i.id != alert));
        assert!(s.outbox_mark_delivered(&alert, "op", &json!({}), NOW + 3.0).await.unwrap());
        match s.outbox_claim_item(&alert, "op", NOW + 4.0, 30.0).await.unwrap() {
            OutboxClaim::NotWaiting(Some(it)) => assert_eq!(it.status, OutboxStatus::Delivered),
            other => panic!("{other:?}"),
        }
        assert!(matches!(s.outbox_claim_item("ob_nope", "op", NOW, 30.0).await.unwrap(), OutboxClaim::NotWaiting(None)));
    }
}
