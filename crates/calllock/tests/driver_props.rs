//! Property test of the call driver: any caller script runs to an end in
//! virtual time — no panic, no endless loop, the call always finishes.

use agent::backend::{Backend, ToolCall};
use agent::engine::{Engine, EngineConfig};
use agent::responder::ScriptedResponder;
use agent::state::Tool;
use agent::{BusinessProfile, Session};
use async_trait::async_trait;
use calllock::sim::{CallDriver, EndedBy, Quiet, ScriptItem, Timing, When};
use proptest::prelude::*;
use serde_json::{json, Value};
use std::sync::Arc;

/// A backend that answers every tool with a fixed, plausible object.
struct Instant;

#[async_trait]
impl Backend for Instant {
    async fn lookup_caller(&self, _: &str, _: &str) -> Value {
        json!({"found": false})
    }
    async fn book_service(&self, _: &ToolCall) -> Value {
        json!({"booked": true, "appointment_time": "2026-02-24T09:00:00-06:00"})
    }
    async fn create_callback(&self, _: &ToolCall) -> Value {
        json!({"success": true})
    }
    async fn send_sales_lead_alert(&self, _: &ToolCall) -> Value {
        json!({"success": true})
    }
    async fn manage_appointment(&self, _: &ToolCall) -> Value {
        json!({"success": false, "error": "no appointment"})
    }
}

fn phrase() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("my AC is broken".to_string()),
        Just("no nothing like that".to_string()),
        Just("I smell gas".to_string()),
        Just("78701".to_string()),
        Just("my zip is 90210".to_string()),
        Just("My name is Dana Fields".to_string()),
        Just("It's 4329 Franklin Street".to_string()),
        Just("asap".to_string()),
        Just("yes".to_string()),
        Just("call me back".to_string()),
        Just("thanks, bye".to_string()),
        ".{0,60}",
        Just(String::new()),
    ]
}

fn item() -> impl Strategy<Value = ScriptItem> {
    let when = prop_oneof![
        Just(When::Default),
        (0.0f64..120.0).prop_map(When::At),
        (0.0f64..3.0).prop_map(When::After),
    ];
    prop_oneof![
        6 => (phrase(), when).prop_map(|(text, when)| ScriptItem::Caller { text, when }),
        1 => (0.0f64..40.0).prop_map(ScriptItem::Silence),
        1 => (0usize..5, any::<bool>()).prop_map(|(i, ok)| ScriptItem::ToolResult {
            tool: Tool::BACKEND[i],
            result: if ok { json!({"success": true, "found": true, "booked": true}) } else { json!({"garbage": [1, 2]}) },
        }),
        1 => Just(ScriptItem::HangUp),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]
    #[test]
    fn any_script_runs_to_an_end(script in proptest::collection::vec(item(), 0..25)) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let outcome = rt.block_on(async {
            let profile = BusinessProfile::default();
            let engine = Engine::new(Session::new("+15125550000"), profile.clone(), EngineConfig::default());
            let mut quiet = Quiet;
            let driver = CallDriver::new(
                engine,
                Arc::new(Instant),
                Arc::new(ScriptedResponder::new(profile)),
                Timing::default(),
                1_771_862_400.0,
                &mut quiet,
            );
            driver.run_script(script).await
        });
        prop_assert!(outcome.end_time >= outcome.start_time);
        prop_assert!(outcome.ended_by != EndedBy::TimeLimit, "a call ran into the time limit");
        // Every transcript line is stamped within the call.
        for e in &outcome.session.transcript_log {
            let t = e.timestamp.unwrap_or(outcome.start_time);
            prop_assert!(t >= outcome.start_time - 1e-6 && t <= outcome.end_time + 1e-6);
        }
    }
}
