//! Issue 23: the embedded backend books exactly the start the agent read
//! back (D-14/D-25) when it is ahead, inside business hours and has room;
//! otherwise it books the next start with room and its answer says so
//! (`time_changed`, `time_change_reason`, `requested_time`, `message`).

use agent::backend::{Backend, ToolCall};
use agent::BusinessProfile;
use chrono::{DateTime, TimeZone, Utc};
use serde_json::Value;
use std::sync::Arc;
use store::EmbeddedBackend;

#[macro_use]
mod common;

/// Monday 2026-02-23 10:15 America/Chicago (CST, -06:00).
fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 2, 23, 16, 15, 0).unwrap()
}

async fn backend(fx: &common::Fx) -> EmbeddedBackend {
    EmbeddedBackend::with_clock(fx.store().await, BusinessProfile::default(), Arc::new(now))
}

fn book(phone: &str, time: &str) -> ToolCall {
    ToolCall::BookService {
        customer_name: "Ada Lovelace".into(),
        problem: "AC blowing warm air".into(),
        address: "1 Main St, Austin 78701".into(),
        preferred_time: time.into(),
        phone: phone.into(),
        call_id: format!("CA_{phone}"),
    }
}

async fn booked(b: &EmbeddedBackend, phone: &str, time: &str) -> Value {
    let v = b.book_service(&book(phone, time)).await;
    assert_eq!(v["booked"], true, "{v}");
    assert_eq!(v["booking_confirmed"], true, "{v}");
    v
}

fn assert_exact(v: &Value, time: &str) {
    assert_eq!(v["appointment_time"], time, "{v}");
    assert_eq!(v["requested_time"], time, "{v}");
    assert_eq!(v["time_changed"], false, "{v}");
    assert!(v.get("time_change_reason").is_none(), "{v}");
}

both! {
    /// 10:30 and 14:15 are booked as read back, not moved to 11:00 / 15:00.
    #[tokio::test]
    async fn exact_times_are_booked_as_asked(fx) {
        let b = backend(&fx).await;
        let v = booked(&b, "+15125550001", "2026-02-24T10:30:00-06:00").await;
        assert_exact(&v, "2026-02-24T10:30:00-06:00");
        assert_eq!(
            v["confirmationMessage"],
            "Appointment confirmed for Tuesday, February 24 at 10:30 AM"
        );
        let v = booked(&b, "+15125550002", "2026-02-24T14:15:00-06:00").await;
        assert_exact(&v, "2026-02-24T14:15:00-06:00");
        assert_eq!(
            v["confirmationMessage"],
            "Appointment confirmed for Tuesday, February 24 at 2:15 PM"
        );
        // Later today, at a quarter hour; the last start (17:00) too.
        let v = booked(&b, "+15125550003", "2026-02-23T13:45:00-06:00").await;
        assert_exact(&v, "2026-02-23T13:45:00-06:00");
        let v = booked(&b, "+15125550004", "2026-02-23T17:00:00-06:00").await;
        assert_exact(&v, "2026-02-23T17:00:00-06:00");
        // What is stored is what was answered.
        let a = b
            .store()
            .appointment(v["appointmentId"].as_str().unwrap())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(a.start_at, "2026-02-23T17:00:00-06:00");
    }
}

both! {
    /// A full time books the next start with room, and the answer says so.
    #[tokio::test]
    async fn a_full_time_books_the_next_and_says_so(fx) {
        let b = backend(&fx).await; // two visits at a time
        let t = "2026-02-24T10:30:00-06:00";
        assert_exact(&booked(&b, "+15125550001", t).await, t);
        assert_exact(&booked(&b, "+15125550002", t).await, t);
        let v = booked(&b, "+15125550003", t).await;
        // Both technicians are busy until 11:30.
        assert_eq!(v["appointment_time"], "2026-02-24T11:30:00-06:00", "{v}");
        assert_eq!(v["requested_time"], t, "{v}");
        assert_eq!(v["time_changed"], true, "{v}");
        assert_eq!(v["time_change_reason"], "taken", "{v}");
        assert_eq!(
            v["message"],
            "Tuesday, February 24 at 10:30 AM was taken; \
             booked Tuesday, February 24 at 11:30 AM instead."
        );
        assert_eq!(
            v["confirmationMessage"],
            "Appointment confirmed for Tuesday, February 24 at 11:30 AM"
        );
        // A start that overlaps both 10:30 visits is full too (11:00).
        let v = booked(&b, "+15125550004", "2026-02-24T11:00:00-06:00").await;
        assert_eq!(v["time_change_reason"], "taken", "{v}");
        assert_eq!(v["appointment_time"], "2026-02-24T11:30:00-06:00", "{v}");
        // 11:30 now has two visits: the next is 12:30 (when they end).
        let v = booked(&b, "+15125550005", "2026-02-24T11:30:00-06:00").await;
        assert_eq!(v["appointment_time"], "2026-02-24T12:30:00-06:00", "{v}");
        assert_eq!(v["time_changed"], true, "{v}");
    }
}

both! {
    /// Visits that do not run at the same moment share a technician's
    /// room: 9:00 and 10:00 leave room for one more at 9:30 (capacity 2).
    #[tokio::test]
    async fn capacity_counts_visits_running_at_once(fx) {
        let b = backend(&fx).await;
        assert_exact(&booked(&b, "+15125550001", "2026-02-24T09:00:00-06:00").await, "2026-02-24T09:00:00-06:00");
        assert_exact(&booked(&b, "+15125550002", "2026-02-24T10:00:00-06:00").await, "2026-02-24T10:00:00-06:00");
        assert_exact(&booked(&b, "+15125550003", "2026-02-24T09:30:00-06:00").await, "2026-02-24T09:30:00-06:00");
        // Now 9:30–10:00 has two visits: 9:45 is taken.
        let v = booked(&b, "+15125550004", "2026-02-24T09:45:00-06:00").await;
        assert_eq!(v["time_change_reason"], "taken", "{v}");
        assert_eq!(v["appointment_time"], "2026-02-24T10:30:00-06:00", "{v}");
    }
}

both! {
    /// Outside business hours or in the past: the next start, and why.
    #[tokio::test]
    async fn closed_and_past_times_say_why(fx) {
        let b = backend(&fx).await; // 9–18: the last start is 17:00
        let v = booked(&b, "+15125550001", "2026-02-24T17:30:00-06:00").await;
        assert_eq!(v["appointment_time"], "2026-02-25T09:00:00-06:00", "{v}");
        assert_eq!(v["time_change_reason"], "closed", "{v}");
        assert_eq!(
            v["message"],
            "Tuesday, February 24 at 5:30 PM is outside business hours; \
             booked Wednesday, February 25 at 9:00 AM instead."
        );
        let v = booked(&b, "+15125550002", "2026-02-23T09:00:00-06:00").await;
        assert_eq!(v["appointment_time"], "2026-02-23T11:00:00-06:00", "{v}");
        assert_eq!(v["time_change_reason"], "past", "{v}");
        // Seconds round up to the next whole minute.
        let v = booked(&b, "+15125550003", "2026-02-24T10:30:20-06:00").await;
        assert_exact(&v, "2026-02-24T10:31:00-06:00");
    }
}

both! {
    /// A reschedule keeps the asked start too, and says when it could not.
    #[tokio::test]
    async fn reschedule_keeps_the_asked_time(fx) {
        let b = backend(&fx).await.with_capacity(1);
        let v = booked(&b, "+15125550001", "2026-02-24T09:00:00-06:00").await;
        let uid = v["appointmentId"].as_str().unwrap().to_string();
        let manage = |t: &str| ToolCall::ManageAppointment {
            action: "reschedule".into(),
            phone: "+15125550001".into(),
            booking_uid: uid.clone(),
            reason: "caller asked".into(),
            new_time: t.into(),
            call_id: "CA_manage".into(),
        };
        let v = b.manage_appointment(&manage("2026-02-27T14:30:00-06:00")).await;
        assert_eq!(v["success"], true, "{v}");
        assert_eq!(v["appointment_time"], "2026-02-27T14:30:00-06:00", "{v}");
        assert_eq!(v["new_time"], "2:30 PM", "{v}");
        assert_eq!(v["time_changed"], false, "{v}");
        // Into a taken time: the next one, said.
        booked(&b, "+15125550002", "2026-02-27T10:00:00-06:00").await;
        let v = b.manage_appointment(&manage("2026-02-27T10:00:00-06:00")).await;
        assert_eq!(v["appointment_time"], "2026-02-27T11:00:00-06:00", "{v}");
        assert_eq!(v["time_change_reason"], "taken", "{v}");
        assert_eq!(
            v["message"],
            "Friday, February 27 at 10:00 AM was taken; \
             the appointment is moved to Friday, February 27 at 11:00 AM instead."
        );
    }
}

both! {
    /// The agent's resolver and the backend agree: every time the resolver
    /// reads back is booked as it is on an empty calendar.
    #[tokio::test]
    async fn resolved_times_are_booked_as_read_back(fx) {
        let b = backend(&fx).await;
        let now_local = chrono::DateTime::parse_from_rfc3339("2026-02-23T10:15:00-06:00").unwrap();
        let profile = BusinessProfile::default();
        for (i, said) in [
            "tomorrow at 10:30",
            "Friday at 2:15",
            "around 3",
            "day after tomorrow around one",
            "half past two tomorrow",
            "tomorrow at 5:30",
            "next week",
            "no rush",
            "ASAP",
            "this weekend at 11",
            "at 8pm",
        ]
        .iter()
        .enumerate()
        {
            let t = agent::booking_time::resolve_booking_time(said, "", now_local, &profile);
            let v = booked(&b, &format!("+1512555{:04}", i), &t).await;
            assert_exact(&v, &t);
        }
    }
}
