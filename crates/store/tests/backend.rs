//! The embedded backend: every tool's success and failure shapes, slot
//! capacity, business hours/days, demo seed, concurrency.

use agent::backend::{Backend, ToolCall};
use agent::BusinessProfile;
use chrono::{DateTime, TimeZone, Utc};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use store::{EmbeddedBackend, Store, DEMO_CUSTOMERS};

#[macro_use]
mod common;
use common::Fx;

/// Monday 2026-02-23 10:15 America/Chicago (CST, -06:00).
fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 2, 23, 16, 15, 0).unwrap()
}

/// A backend on a fresh database of the fixture's kind.
async fn backend_with(fx: &Fx, profile: BusinessProfile) -> EmbeddedBackend {
    EmbeddedBackend::with_clock(fx.store().await, profile, Arc::new(now))
}

async fn backend(fx: &Fx) -> EmbeddedBackend {
    backend_with(fx, BusinessProfile::default()).await
}

fn book(phone: &str, name: &str, address: &str, time: &str) -> ToolCall {
    ToolCall::BookService {
        customer_name: name.into(),
        problem: "AC blowing warm air".into(),
        address: address.into(),
        preferred_time: time.into(),
        phone: phone.into(),
        call_id: "CA_book".into(),
    }
}

fn manage(action: &str, phone: &str, uid: &str, new_time: &str) -> ToolCall {
    ToolCall::ManageAppointment {
        action: action.into(),
        phone: phone.into(),
        booking_uid: uid.into(),
        reason: "caller asked".into(),
        new_time: new_time.into(),
        call_id: "CA_manage".into(),
    }
}

fn callback(phone: &str, call_id: &str) -> ToolCall {
    ToolCall::CreateCallback {
        phone: phone.into(),
        callback_type: "estimate".into(),
        reason: "Wants a quote for a new system".into(),
        customer_name: "Dana Park".into(),
        urgency: "urgent".into(),
        call_id: call_id.into(),
    }
}

fn assert_booking_failed(v: &Value) {
    assert_eq!(v["booked"], false, "{v}");
    assert_eq!(v["booking_confirmed"], false, "{v}");
    assert!(v["error"].as_str().is_some_and(|e| !e.is_empty()), "{v}");
    assert!(v.get("appointmentId").is_none(), "{v}");
}

fn assert_failed(v: &Value) {
    assert_eq!(v["success"], false, "{v}");
    assert!(v["error"].as_str().is_some_and(|e| !e.is_empty()), "{v}");
    assert!(v["message"].as_str().is_some(), "{v}");
}

// ------------------------------------------------------------------ lookup

both! {
    #[tokio::test]
    async fn lookup_unknown_and_empty_phone(fx) {
        let b = backend(&fx).await;
        let v = b.lookup_caller("+15125559999", "CA1").await;
        assert_eq!(v["found"], false);
        assert!(v["message"].as_str().unwrap().contains("new caller"));
        let v = b.lookup_caller("", "CA1").await;
        assert_eq!(v["found"], false);
        assert!(v["message"].is_string());
        let v = b.lookup_caller("   ☃ ", "").await;
        assert_eq!(v["found"], false);
    }
}

both! {
    #[tokio::test]
    async fn lookup_demo_customers(fx) {
        let b = backend(&fx).await;
        b.seed_demo(now()).await.unwrap();

        let jonas = b.lookup_caller("+15125550100", "CA1").await;
        assert_eq!(jonas["found"], true, "{jonas}");
        assert_eq!(jonas["customerName"], "Jonas Weber");
        assert_eq!(jonas["zipCode"], "78704");
        assert!(jonas["address"]
            .as_str()
            .unwrap()
            .starts_with("4210 South Lamar Blvd"));
        let up = &jonas["upcomingAppointment"];
        assert_eq!(up["date"], "Wednesday, February 25");
        assert_eq!(up["time"], "10:00 AM");
        assert_eq!(up["uid"], "apt_demo_jonas");
        assert!(jonas.get("callbackPromise").is_none());
        assert!(jonas["recentCalls"].is_array());
        assert!(jonas["message"].as_str().unwrap().contains("Jonas Weber"));

        // The same number written differently is the same caller.
        let again = b.lookup_caller("(512) 555-0100", "CA1").await;
        assert_eq!(again["customerName"], "Jonas Weber");

        let maria = b.lookup_caller("+15125550101", "CA2").await;
        assert_eq!(maria["found"], true);
        assert_eq!(maria["customerName"], "Maria Lopez");
        assert_eq!(maria["zipCode"], "78702");
        assert!(maria.get("upcomingAppointment").is_none());
        let p = &maria["callbackPromise"];
        assert_eq!(p["date"], "Sunday, February 22", "{maria}");
        assert_eq!(p["issue"], "AC not cooling");
        assert_eq!(p["promisedBy"], "Mike");

        let priya = b.lookup_caller("+15125550102", "CA3").await;
        assert_eq!(priya["found"], true);
        assert_eq!(priya["customerName"], "Priya Shah");
        assert!(priya.get("upcomingAppointment").is_none());
        assert!(priya.get("callbackPromise").is_none());

        for (phone, what) in DEMO_CUSTOMERS {
            assert!(!what.is_empty());
            assert_eq!(b.lookup_caller(phone, "CA").await["found"], true, "{phone}");
        }
    }
}

both! {
    #[tokio::test]
    async fn callback_promise_expires_after_three_days(fx) {
        let b = backend(&fx).await;
        // Seeded four days ago: the promise (made five days ago) is too old.
        b.seed_demo(now() - chrono::Duration::days(4))
            .await
            .unwrap();
        let maria = b.lookup_caller("+15125550101", "CA").await;
        assert_eq!(maria["found"], true);
        assert!(maria.get("callbackPromise").is_none(), "{maria}");
        // And Jonas's appointment (two days after the seed) is in the past.
        let jonas = b.lookup_caller("+15125550100", "CA").await;
        assert!(jonas.get("upcomingAppointment").is_none(), "{jonas}");
        assert_eq!(jonas["pastAppointments"][0]["status"], "completed");
    }
}

both! {
    #[tokio::test]
    async fn seed_is_idempotent(fx) {
        let b = backend(&fx).await;
        b.seed_demo(now()).await.unwrap();
        b.seed_demo(now()).await.unwrap();
        let s = b.store();
        assert_eq!(
            s.count_customers().await.unwrap(),
            DEMO_CUSTOMERS.len() as i64
        );
        assert_eq!(s.count_appointments().await.unwrap(), 1);
        assert_eq!(s.count_callbacks().await.unwrap(), 1);
        assert_eq!(s.count_sales_leads().await.unwrap(), 0);
        // Seeding again does not restore a cancelled demo appointment
        // (issue 23: the demo data is written once per database).
        let v = b
            .manage_appointment(&manage("cancel", "+15125550100", "", ""))
            .await;
        assert_eq!(v["success"], true, "{v}");
        b.seed_demo(now()).await.unwrap();
        assert_eq!(s.count_booked_appointments().await.unwrap(), 0);
        assert_eq!(
            s.appointment("apt_demo_jonas").await.unwrap().unwrap().status,
            "cancelled"
        );
    }
}

both! {
    /// Issue 23: every `calllock chat` seeds; a reschedule made by one call
    /// is still there for the next one (and for `calllock agenda`), even in
    /// another process on the same database a day later.
    #[tokio::test]
    async fn seed_again_keeps_what_calls_changed(fx) {
        let at = fx.location().await;
        let b = EmbeddedBackend::with_clock(
            Store::connect(&at).await.unwrap(),
            BusinessProfile::default(),
            Arc::new(now),
        );
        assert_eq!(b.store().demo_seeded_at().await.unwrap(), None);
        b.seed_demo(now()).await.unwrap();
        assert_eq!(
            b.store().demo_seeded_at().await.unwrap(),
            Some(now().timestamp() as f64)
        );
        let before = b.store().appointment("apt_demo_jonas").await.unwrap().unwrap();
        let v = b
            .manage_appointment(&manage(
                "reschedule",
                "+15125550100",
                "",
                "2026-02-27T14:00:00-06:00",
            ))
            .await;
        assert_eq!(v["success"], true, "{v}");
        let moved = b.store().appointment("apt_demo_jonas").await.unwrap().unwrap();
        assert_ne!(moved.start_at, before.start_at);
        assert!(moved.start_at.starts_with("2026-02-27T14:00"), "{moved:?}");
        // A call changes a demo customer's address.
        let v = b
            .book_service(&book(
                "+15125550102",
                "Priya Shah",
                "55 Rainey St, Austin, TX 78701",
                "2026-02-26T09:00:00-06:00",
            ))
            .await;
        assert_eq!(v["success"], true, "{v}");
        let priya = b.store().customer("+15125550102").await.unwrap().unwrap();
        b.store().close().await;

        // The next process, a day later: it seeds again, nothing changes.
        let later = now() + chrono::Duration::days(1);
        let b2 = EmbeddedBackend::with_clock(
            Store::connect(&at).await.unwrap(),
            BusinessProfile::default(),
            Arc::new(move || later),
        );
        b2.seed_demo(later).await.unwrap();
        let s = b2.store();
        let after = s.appointment("apt_demo_jonas").await.unwrap().unwrap();
        assert_eq!(after.start_at, moved.start_at);
        assert_eq!(after.status, "booked");
        assert_eq!(s.customer("+15125550102").await.unwrap().unwrap(), priya);
        assert_eq!(s.count_callbacks().await.unwrap(), 1);
        assert_eq!(
            s.demo_seeded_at().await.unwrap(),
            Some(now().timestamp() as f64),
            "the first seed's record stays"
        );
        let jonas = b2.lookup_caller("+15125550100", "CA_next").await;
        assert_eq!(jonas["upcomingAppointment"]["date"], "Friday, February 27", "{jonas}");
        assert_eq!(jonas["upcomingAppointment"]["time"], "2:00 PM", "{jonas}");

        // A database seeded before the record existed (migration 0006):
        // the seed writes the record and still changes no row.
        sqlx::query("DELETE FROM demo_seed").execute(s.pool()).await.unwrap();
        b2.seed_demo(later).await.unwrap();
        let again = s.appointment("apt_demo_jonas").await.unwrap().unwrap();
        assert_eq!(again.start_at, moved.start_at);
        assert_eq!(s.customer("+15125550102").await.unwrap().unwrap(), priya);
        assert_eq!(s.count_customers().await.unwrap(), DEMO_CUSTOMERS.len() as i64);
        assert_eq!(s.demo_seeded_at().await.unwrap(), Some(later.timestamp() as f64));
    }
}

// ----------------------------------------------------------------- booking

both! {
    #[tokio::test]
    async fn book_success_shape_and_customer_upsert(fx) {
        let b = backend(&fx).await;
        let v = b
            .book_service(&book(
                "+15125551234",
                "Ada Lovelace",
                "100 Congress Ave, Austin, TX 78701",
                "2026-02-24T09:00:00-06:00",
            ))
            .await;
        assert_eq!(v["success"], true, "{v}");
        assert_eq!(v["booked"], true);
        assert_eq!(v["booking_confirmed"], true);
        assert_eq!(v["appointment_time"], "2026-02-24T09:00:00-06:00");
        assert_eq!(
            v["confirmationMessage"],
            "Appointment confirmed for Tuesday, February 24 at 9:00 AM"
        );
        let uid = v["appointmentId"].as_str().unwrap().to_string();
        assert!(uid.starts_with("apt_"), "{uid}");

        let s = b.store();
        let c = s.customer("+15125551234").await.unwrap().unwrap();
        assert_eq!(c.name, "Ada Lovelace");
        assert_eq!(c.zip, "78701");
        let appts = s.appointments_for("+15125551234").await.unwrap();
        assert_eq!(appts.len(), 1);
        assert_eq!(appts[0].uid, uid);
        assert_eq!(appts[0].status, "booked");
        assert_eq!(appts[0].call_id, "CA_book");
        assert_eq!(appts[0].problem, "AC blowing warm air");

        let l = b.lookup_caller("+15125551234", "CA2").await;
        assert_eq!(l["found"], true);
        assert_eq!(l["customerName"], "Ada Lovelace");
        assert_eq!(l["upcomingAppointment"]["uid"], uid.as_str());
        assert_eq!(l["upcomingAppointment"]["time"], "9:00 AM");
    }
}

both! {
    #[tokio::test]
    async fn book_failures_are_truthful(fx) {
        let b = backend(&fx).await;
        let addr = "100 Congress Ave, Austin, TX 78701";
        let t = "2026-02-24T09:00:00-06:00";
        for call in [
            book("+15125551234", "", addr, t),
            book("+15125551234", "Ada", "  ", t),
            book("", "Ada", addr, t),
            book("+15125551234", "Ada", addr, ""),
            book("+15125551234", "Ada", addr, "next tuesday-ish"),
            book("+15125551234", "Ada", addr, "2026-02-30T09:00:00-06:00"),
            book("+15125551234", "Ada", addr, "\u{0}\u{ffff}"),
            // Far future: no slot, and no overflow.
            book("+15125551234", "Ada", addr, "9999-12-31T23:00:00Z"),
            book("+15125551234", "Ada", addr, "+262143-12-31T23:00:00Z"),
        ] {
            assert_booking_failed(&b.book_service(&call).await);
        }
        // Wrong argument variant.
        assert_booking_failed(&b.book_service(&callback("+1512", "x")).await);
        assert_eq!(b.store().count_appointments().await.unwrap(), 0);
        assert_eq!(b.store().count_customers().await.unwrap(), 0);
    }
}

both! {
    #[tokio::test]
    async fn ancient_hint_books_from_now(fx) {
        let b = backend(&fx).await;
        assert_eq!(
            booked_time(&b, "+15125550001", "0001-01-01T00:00:00Z").await,
            "2026-02-23T11:00:00-06:00"
        );
    }
}

both! {
    #[tokio::test]
    async fn no_slot_within_search_window(fx) {
        let b = backend(&fx).await.with_capacity(0);
        let v = b
            .book_service(&book(
                "+15125551234",
                "Ada",
                "1 Main St 78701",
                "2026-02-24T09:00:00-06:00",
            ))
            .await;
        assert_booking_failed(&v);
        assert!(v["error"].as_str().unwrap().contains("14 days"), "{v}");
    }
}

async fn booked_time(b: &EmbeddedBackend, phone: &str, hint: &str) -> String {
    let v = b
        .book_service(&book(phone, "Ada", "1 Main St, Austin 78701", hint))
        .await;
    assert_eq!(v["booked"], true, "{v}");
    v["appointment_time"].as_str().unwrap().to_string()
}

both! {
    #[tokio::test]
    async fn third_booking_moves_to_next_hour(fx) {
        let b = backend(&fx).await;
        let h = "2026-02-24T09:00:00-06:00";
        assert_eq!(booked_time(&b, "+15125550001", h).await, h);
        assert_eq!(booked_time(&b, "+15125550002", h).await, h);
        assert_eq!(
            booked_time(&b, "+15125550003", h).await,
            "2026-02-24T10:00:00-06:00"
        );
    }
}

both! {
    #[tokio::test]
    async fn capacity_is_configurable(fx) {
        let b = backend(&fx).await.with_capacity(1);
        let h = "2026-02-24T09:00:00-06:00";
        assert_eq!(booked_time(&b, "+15125550001", h).await, h);
        assert_eq!(
            booked_time(&b, "+15125550002", h).await,
            "2026-02-24T10:00:00-06:00"
        );
    }
}

both! {
    #[tokio::test]
    async fn closed_hours_are_skipped(fx) {
        let b = backend(&fx).await;
        // After the last slot (17:00) → next morning at opening.
        assert_eq!(
            booked_time(&b, "+15125550001", "2026-02-24T17:30:00-06:00").await,
            "2026-02-25T09:00:00-06:00"
        );
        // Before opening → opening time.
        assert_eq!(
            booked_time(&b, "+15125550002", "2026-02-24T07:00:00-06:00").await,
            "2026-02-24T09:00:00-06:00"
        );
        // Between whole hours → exactly that start (issue 23: what the
        // agent read back is booked; it was moved to 14:00 before).
        assert_eq!(
            booked_time(&b, "+15125550003", "2026-02-24T13:20:00-06:00").await,
            "2026-02-24T13:20:00-06:00"
        );
        // A hint in the past → the first slot from now (10:15 → 11:00 today).
        assert_eq!(
            booked_time(&b, "+15125550004", "2026-02-20T09:00:00-06:00").await,
            "2026-02-23T11:00:00-06:00"
        );
        // Offset-less and UTC hints are read correctly.
        assert_eq!(
            booked_time(&b, "+15125550005", "2026-02-26T15:00:00").await,
            "2026-02-26T15:00:00-06:00"
        );
        assert_eq!(
            booked_time(&b, "+15125550006", "2026-02-26T22:00:00Z").await,
            "2026-02-26T16:00:00-06:00"
        );
        // After the DST change the offset is -05:00.
        assert_eq!(
            booked_time(&b, "+15125550007", "2026-03-10T09:00:00-05:00").await,
            "2026-03-10T09:00:00-05:00"
        );
    }
}

both! {
    #[tokio::test]
    async fn closed_days_are_skipped(fx) {
        let profile = BusinessProfile {
            business_days: ["mon", "tue", "wed", "thu", "fri"]
                .iter()
                .map(|d| d.to_string())
                .collect(),
            open_hour: 8,
            close_hour: 17,
            ..BusinessProfile::default()
        };
        let b = backend_with(&fx, profile).await;
        // Saturday → Monday at 08:00.
        assert_eq!(
            booked_time(&b, "+15125550001", "2026-02-28T10:00:00-06:00").await,
            "2026-03-02T08:00:00-06:00"
        );
        // Friday after closing (16:00 is the last slot) → Monday.
        let h = "2026-02-27T16:00:00-06:00";
        assert_eq!(booked_time(&b, "+15125550002", h).await, h);
        assert_eq!(booked_time(&b, "+15125550003", h).await, h);
        let v = b
            .book_service(&book("+15125550004", "Ada", "1 Main St", h))
            .await;
        assert_eq!(v["appointment_time"], "2026-03-02T08:00:00-06:00", "{v}");
        assert_eq!(
            v["confirmationMessage"],
            "Appointment confirmed for Monday, March 2 at 8:00 AM"
        );
    }
}

/// Ten bookings of one slot at once, spread over `backends`: each slot
/// takes exactly two (the capacity).
async fn concurrent_bookings(backends: Vec<EmbeddedBackend>) {
    let backends: Vec<_> = backends.into_iter().map(Arc::new).collect();
    let mut tasks = Vec::new();
    for i in 0..10 {
        let b = Arc::clone(&backends[i % backends.len()]);
        tasks.push(tokio::spawn(async move {
            b.book_service(&book(
                &format!("+1512555{i:04}"),
                "Ada",
                "1 Main St 78701",
                "2026-02-24T09:00:00-06:00",
            ))
            .await
        }));
    }
    let mut per_slot: HashMap<String, usize> = HashMap::new();
    for t in tasks {
        let v = t.await.unwrap();
        assert_eq!(v["booked"], true, "{v}");
        *per_slot
            .entry(v["appointment_time"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    assert_eq!(per_slot.len(), 5, "{per_slot:?}");
    assert!(per_slot.values().all(|n| *n == 2), "{per_slot:?}");
    assert_eq!(
        backends[0]
            .store()
            .count_booked_appointments()
            .await
            .unwrap(),
        10
    );
}

both! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_bookings_never_overfill_in_memory(fx) {
        concurrent_bookings(vec![backend(&fx).await]).await;
    }
}

both! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_bookings_never_overfill_on_file(fx) {
        // SQLite: a WAL file with a pool of connections; PostgreSQL: a pool.
        let store = Store::connect(&fx.location().await).await.unwrap();
        let b = EmbeddedBackend::with_clock(store.clone(), BusinessProfile::default(), Arc::new(now));
        concurrent_bookings(vec![b]).await;
        store.close().await;
    }
}

both! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_bookings_from_two_stores_never_overfill(fx) {
        // Two instances on one database: separate pools, one capacity.
        let at = fx.location().await;
        let (s1, s2) = (Store::connect(&at).await.unwrap(), Store::connect(&at).await.unwrap());
        let b1 = EmbeddedBackend::with_clock(s1.clone(), BusinessProfile::default(), Arc::new(now));
        let b2 = EmbeddedBackend::with_clock(s2.clone(), BusinessProfile::default(), Arc::new(now));
        concurrent_bookings(vec![b1, b2]).await;
        s1.close().await;
        s2.close().await;
    }
}

// ---------------------------------------------------------------- callbacks

both! {
    #[tokio::test]
    async fn create_callback_success_and_idempotent_per_call(fx) {
        let b = backend(&fx).await;
        let v = b.create_callback(&callback("+15125557777", "CA9")).await;
        assert_eq!(v["success"], true, "{v}");
        assert!(v.get("error").is_none());
        assert!(v["message"].as_str().unwrap().contains("30 minutes"), "{v}");
        let id = v["callback_id"].as_str().unwrap().to_string();
        assert!(id.starts_with("cb_"));

        let again = b.create_callback(&callback("+15125557777", "CA9")).await;
        assert_eq!(again["success"], true);
        assert_eq!(again["callback_id"], id.as_str());

        let cbs = b.store().callbacks_for("+15125557777").await.unwrap();
        assert_eq!(cbs.len(), 1);
        assert_eq!(cbs[0].callback_type, "estimate");
        assert_eq!(cbs[0].urgency, "urgent");
        assert_eq!(cbs[0].status, "open");
        assert_eq!(cbs[0].call_id, "CA9");
        assert_eq!(cbs[0].due_by, now() + chrono::Duration::minutes(30));
        assert_eq!(b.store().open_callbacks(10).await.unwrap().len(), 1);

        // The named caller is now known, with the open promise.
        let l = b.lookup_caller("+15125557777", "CA10").await;
        assert_eq!(l["found"], true);
        assert_eq!(l["customerName"], "Dana Park");
        assert_eq!(
            l["callbackPromise"]["issue"],
            "Wants a quote for a new system"
        );
        assert_eq!(l["callbackPromise"]["date"], "Monday, February 23");
    }
}

both! {
    #[tokio::test]
    async fn create_callback_defaults_and_failures(fx) {
        let b = backend(&fx).await;
        let v = b
            .create_callback(&ToolCall::CreateCallback {
                phone: "+15125557778".into(),
                callback_type: "nonsense".into(),
                reason: "".into(),
                customer_name: "".into(),
                urgency: "".into(),
                call_id: "".into(),
            })
            .await;
        assert_eq!(v["success"], true, "{v}");
        let cb = &b.store().callbacks_for("+15125557778").await.unwrap()[0];
        assert_eq!(cb.callback_type, "service");
        assert_eq!(cb.urgency, "normal");
        assert_eq!(cb.reason, "Customer requested callback");
        // No name → not turned into a customer.
        assert!(b.store().customer("+15125557778").await.unwrap().is_none());

        assert_failed(&b.create_callback(&callback("", "CA1")).await);
        assert_failed(&b.create_callback(&callback("  ", "CA1")).await);
        assert_failed(&b.create_callback(&book("+1", "a", "b", "c")).await);
    }
}

// -------------------------------------------------------------- sales leads

both! {
    #[tokio::test]
    async fn sales_lead_alert(fx) {
        let b = backend(&fx).await;
        let call = ToolCall::SendSalesLeadAlert {
            phone: "+15125558888".into(),
            reason: "Wants a new 4-ton system".into(),
            call_id: "CA_lead".into(),
        };
        let v = b.send_sales_lead_alert(&call).await;
        assert_eq!(v["success"], true, "{v}");
        let id = v["alertId"].as_str().unwrap().to_string();
        assert!(id.starts_with("lead_"));
        assert!(v["message"].as_str().unwrap().contains("4-ton"));
        // D-5: once per call.
        let again = b.send_sales_lead_alert(&call).await;
        assert_eq!(again["alertId"], id.as_str());
        let leads = b.store().sales_leads_for("+15125558888").await.unwrap();
        assert_eq!(leads.len(), 1);
        assert_eq!(leads[0].reason, "Wants a new 4-ton system");
        assert_eq!(b.store().count_sales_leads().await.unwrap(), 1);

        assert_failed(&b.send_sales_lead_alert(&callback("+1", "x")).await);
    }
}

// ------------------------------------------------------------- management

both! {
    #[tokio::test]
    async fn manage_status_cancel(fx) {
        let b = backend(&fx).await;
        b.seed_demo(now()).await.unwrap();
        let jonas = "+15125550100";

        let v = b
            .manage_appointment(&manage("status", jonas, "apt_demo_jonas", ""))
            .await;
        assert_eq!(v["success"], true, "{v}");
        assert_eq!(v["action_taken"], "status");
        assert_eq!(v["date"], "Wednesday, February 25");
        assert_eq!(v["time"], "10:00 AM");
        assert!(v["message"].as_str().unwrap().contains("February 25"));

        // Without a uid: the phone's upcoming appointment.
        let v = b
            .manage_appointment(&manage(" Status ", jonas, "", ""))
            .await;
        assert_eq!(v["success"], true, "{v}");
        assert_eq!(v["uid"], "apt_demo_jonas");

        let v = b.manage_appointment(&manage("cancel", jonas, "", "")).await;
        assert_eq!(v["success"], true, "{v}");
        assert_eq!(v["action_taken"], "cancel");
        let a = b
            .store()
            .appointment("apt_demo_jonas")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(a.status, "cancelled");
        let l = b.lookup_caller(jonas, "CA").await;
        assert!(l.get("upcomingAppointment").is_none(), "{l}");
        assert_eq!(l["pastAppointments"][0]["status"], "cancelled");

        // Nothing left to cancel without a uid.
        let v = b.manage_appointment(&manage("cancel", jonas, "", "")).await;
        assert_failed(&v);
        assert!(v.get("action_taken").is_none(), "{v}");
    }
}

both! {
    #[tokio::test]
    async fn manage_reschedule(fx) {
        let b = backend(&fx).await;
        b.seed_demo(now()).await.unwrap();
        let jonas = "+15125550100";
        let v = b
            .manage_appointment(&manage(
                "reschedule",
                jonas,
                "apt_demo_jonas",
                "2026-02-27T14:30:00-06:00",
            ))
            .await;
        assert_eq!(v["success"], true, "{v}");
        assert_eq!(v["action_taken"], "reschedule");
        assert_eq!(v["new_date"], "Friday, February 27");
        // Issue 23: the asked start is kept (it was moved to 15:00 before).
        assert_eq!(v["new_time"], "2:30 PM");
        assert_eq!(v["appointment_time"], "2026-02-27T14:30:00-06:00");
        let a = b
            .store()
            .appointment("apt_demo_jonas")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(a.start_at, "2026-02-27T14:30:00-06:00");
        assert_eq!(a.status, "booked");

        // Into a full slot: moves on to the next hour.
        let full = "2026-02-27T09:00:00-06:00";
        booked_time(&b, "+15125550001", full).await;
        booked_time(&b, "+15125550002", full).await;
        let v = b
            .manage_appointment(&manage("reschedule", jonas, "", full))
            .await;
        assert_eq!(v["new_time"], "10:00 AM", "{v}");

        // Rescheduling into its own slot is fine (it does not count itself).
        let b1 = backend(&fx).await.with_capacity(1);
        b1.seed_demo(now()).await.unwrap();
        let own = b1
            .store()
            .appointment("apt_demo_jonas")
            .await
            .unwrap()
            .unwrap()
            .start_at;
        let v = b1
            .manage_appointment(&manage("reschedule", jonas, "", &own))
            .await;
        assert_eq!(v["appointment_time"], own.as_str(), "{v}");
    }
}

both! {
    #[tokio::test]
    async fn manage_failures(fx) {
        let b = backend(&fx).await;
        b.seed_demo(now()).await.unwrap();
        let jonas = "+15125550100";
        for call in [
            manage("reschedule", jonas, "apt_demo_jonas", ""),
            manage("reschedule", jonas, "apt_demo_jonas", "someday"),
            manage("status", jonas, "apt_nope", ""),
            manage("status", "+15125550102", "", ""),
            manage("status", "", "", ""),
            // Someone else's appointment.
            manage("cancel", "+15125550102", "apt_demo_jonas", ""),
            manage("", jonas, "apt_demo_jonas", ""),
            manage("upgrade", jonas, "apt_demo_jonas", ""),
        ] {
            let v = b.manage_appointment(&call).await;
            assert_failed(&v);
            assert!(v.get("action_taken").is_none(), "{v}");
        }
        assert_failed(&b.manage_appointment(&callback("+1", "x")).await);
        // Nothing changed.
        let a = b
            .store()
            .appointment("apt_demo_jonas")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(a.status, "booked");

        // A cancelled appointment cannot be rescheduled.
        b.manage_appointment(&manage("cancel", jonas, "apt_demo_jonas", ""))
            .await;
        assert_failed(
            &b.manage_appointment(&manage(
                "reschedule",
                jonas,
                "apt_demo_jonas",
                "2026-02-27T09:00:00-06:00",
            ))
            .await,
        );
    }
}

both! {
    #[tokio::test]
    async fn dispatch_through_call(fx) {
        let b = backend(&fx).await;
        let v = b
            .call(&ToolCall::LookupCaller {
                phone: "+15125550000".into(),
                call_id: "CA".into(),
            })
            .await;
        assert_eq!(v["found"], false);
        let v = b
            .call(&book(
                "+15125550000",
                "Ada",
                "1 Main St",
                "2026-02-24T09:00:00-06:00",
            ))
            .await;
        assert_eq!(v["booked"], true);
    }
}

both! {
    #[tokio::test]
    async fn garbage_inputs_never_panic(fx) {
        let b = backend(&fx).await;
        b.seed_demo(now()).await.unwrap();
        let junk = [
            "",
            " ",
            "\u{0}",
            "'; DROP TABLE customers; --",
            "☃☃☃",
            "+",
            "9999999999999999999999999",
            "-2026-02-24T09:00:00Z",
            "2026-02-24T09:00:00+99:99",
        ];
        for j in junk {
            let _ = b.lookup_caller(j, j).await;
            let v = b.book_service(&book(j, j, j, j)).await;
            assert!(v.get("booked").is_some(), "{v}");
            let _ = b.create_callback(&callback(j, j)).await;
            let _ = b
                .send_sales_lead_alert(&ToolCall::SendSalesLeadAlert {
                    phone: j.into(),
                    reason: j.into(),
                    call_id: j.into(),
                })
                .await;
            for action in ["status", "cancel", "reschedule", j] {
                let _ = b.manage_appointment(&manage(action, j, j, j)).await;
            }
        }
        // Digit-less junk never became a caller; the demo data is intact.
        assert!(b.store().customer("☃☃☃").await.unwrap().is_none());
        let jonas = b
            .store()
            .appointment("apt_demo_jonas")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(jonas.status, "booked");
        assert_eq!(b.lookup_caller("+15125550101", "CA").await["found"], true);
    }
}
