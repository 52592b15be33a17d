//! Property test of the call driver: any caller script runs to an end in
//! virtual time — no panic, no endless loop, the call always finishes.

use agent::backend::{Backend, ToolCall};
use agent::engine::{Engine, EngineConfig};
use agent::responder::ScriptedResponder;
use agent::state::Tool;
use agent::{BusinessProfile, Session};
use async_trait::async_trait;
use calllock::call::driver::{CallDriver, Quiet, ScriptItem, Timing, When};
use calllock::call::outcome::Ending;
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

/// One call of `script` through the real engine, driver and scripted
/// responder, in virtual time.
fn run(script: Vec<ScriptItem>) -> calllock::call::outcome::Outcome {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let profile = BusinessProfile::default();
        let engine = Engine::new(
            Session::new("+15125550000"),
            profile.clone(),
            EngineConfig::default(),
        );
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
    })
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
        let outcome = run(script);
        prop_assert!(outcome.end_time >= outcome.start_time);
        prop_assert!(outcome.ended_by != Ending::TimeLimit, "a call ran into the time limit");
        // Every transcript line is stamped within the call.
        for e in &outcome.session.transcript_log {
            let t = e.timestamp.unwrap_or(outcome.start_time);
            prop_assert!(t >= outcome.start_time - 1e-6 && t <= outcome.end_time + 1e-6);
        }
    }
}

/// Caller lines from every corner of a call, natural and not.
fn caller_line() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => proptest::sample::select(vec![
            "my AC is broken",
            "hey, so the heat won't turn on",
            "no nothing like that",
            "um, what?",
            "sorry, can you repeat that",
            "how much is a visit?",
            "is that covered by the warranty?",
            "are you a robot",
            "78701",
            "my zip is 90210",
            "it's Dev Raman",
            "uh yeah",
            "2201 Barton Hills Drive",
            "no wait, it's 5120 not 5210",
            "actually make that Friday",
            "no rush",
            "after the holiday",
            "perfect",
            "that works",
            "nope",
            "I don't know",
            "hmm",
            "okay",
            "let me talk to a manager",
            "I'll call you back",
            "I gotta run, bye",
            "what time is my tech coming?",
        ])
        .prop_map(str::to_string),
        1 => "[a-z ]{0,30}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]
    /// SPEC §5.9 and issue 23: whatever the caller says, no agent line is
    /// said twice in a row, and none of the agent's questions is put more
    /// than three times (the second time reworded, the third a change of
    /// strategy; then the call moves on).
    #[test]
    fn no_line_twice_in_a_row_and_no_question_a_fourth_time(
        lines in proptest::collection::vec(caller_line(), 1..30)
    ) {
        let script = lines
            .into_iter()
            .map(|text| ScriptItem::Caller { text, when: When::Default })
            .collect();
        let outcome = run(script);
        let said: Vec<&str> = outcome
            .session
            .transcript_log
            .iter()
            .filter(|e| e.role == agent::session::Role::Agent)
            .filter_map(|e| e.content.as_deref())
            .collect();
        for pair in said.windows(2) {
            prop_assert_ne!(pair[0], pair[1], "said twice in a row");
        }
        use agent::understand::Asked;
        for asked in [
            Asked::Safety, Asked::Zip, Asked::Name, Asked::Problem, Asked::Address,
            Asked::Time, Asked::ReadBack, Asked::Appointment, Asked::NewTime,
        ] {
            let wordings: Vec<&str> = (1..=3).filter_map(|n| agent::wording::ask(asked, n)).collect();
            let times = said.iter().filter(|l| wordings.iter().any(|w| l.contains(w))).count();
            prop_assert!(times <= 3, "{asked:?} put {times} times: {said:#?}");
            for w in &wordings {
                let same = said.iter().filter(|l| l.contains(w)).count();
                prop_assert!(same <= 2, "{w:?} said {same} times: {said:#?}");
            }
        }
    }
}
