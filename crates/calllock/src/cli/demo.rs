//! `calllock demo` (scripted callers against the real database) and the
//! engine of `calllock replay` (a script against an in-memory backend).

use crate::call::delivery::{self, PostCall};
use crate::call::driver::{self, CallDriver, ScriptItem, Timing, When};
use crate::call::outcome::Outcome;
use crate::call::record;
use crate::cli::display;
use crate::config::Config;
use agent::backend::Backend;
use agent::engine::Engine;
use agent::responder::{Responder, ScriptedResponder};
use agent::Session;
use anyhow::{Context, Result};
use serde_json::{json, Value};
use std::io::IsTerminal;
use std::sync::Arc;

/// Options of one replay.
pub struct ReplayOptions {
    pub caller_id: String,
    /// Unix seconds of the call start (pins "now").
    pub start: f64,
    pub timing: Timing,
    pub demo_data: bool,
    pub call_id: String,
}

/// Run a script in virtual time against an in-memory backend; returns the
/// replay report (see `--json`).
pub async fn replay(cfg: &Config, items: Vec<ScriptItem>, opts: ReplayOptions) -> Result<Value> {
    let store = store::Store::open_in_memory()
        .await
        .context("opening the in-memory database")?;
    let now = record::utc(opts.start);
    let embedded = store::EmbeddedBackend::with_clock(
        store.clone(),
        cfg.business.clone(),
        Arc::new(move || now),
    );
    if opts.demo_data {
        embedded.seed_demo(now).await.context("seeding demo data")?;
    }
    let backend: Arc<dyn Backend> = Arc::new(embedded);
    let mut outcome = run_call(
        cfg,
        backend.clone(),
        items,
        &opts.caller_id,
        &opts.call_id,
        opts.start,
        opts.timing,
        &mut driver::Quiet,
    )
    .await;
    // The report shows the call as post-call processing leaves it (a
    // promised callback kept); nothing else of post-call runs: a replay
    // records and delivers nothing.
    let end = outcome.end_time;
    PostCall::local(store, backend, cfg, Arc::new(move || end))
        .keep_callback_promise(&mut outcome)
        .await;
    Ok(report(&outcome))
}

/// Drive one scripted call.
#[allow(clippy::too_many_arguments)]
pub async fn run_call(
    cfg: &Config,
    backend: Arc<dyn Backend>,
    items: Vec<ScriptItem>,
    caller_id: &str,
    call_id: &str,
    start: f64,
    timing: Timing,
    observer: &mut dyn driver::Observer,
) -> Outcome {
    let responder: Arc<dyn Responder> = Arc::new(ScriptedResponder::new(cfg.business.clone()));
    let mut session = Session::new(caller_id);
    session.call_sid = call_id.to_string();
    let engine = Engine::new(
        session,
        cfg.business.clone(),
        cfg.engine.text_engine_config(),
    );
    let driver = CallDriver::new(engine, backend, responder, timing, start, observer);
    driver.run_script(items).await
}

/// The replay report: outcome, session, timed transcript, tool calls and
/// the job the dashboard would receive.
pub fn report(outcome: &Outcome) -> Value {
    let fc = record::classify(outcome, "");
    let tools: Vec<Value> = outcome
        .tools
        .iter()
        .map(|t| {
            json!({
                "t": (t.t * 100.0).round() / 100.0,
                "tool": t.call.tool().as_str(),
                "args": t.call.args_json(),
                "result": t.result,
            })
        })
        .collect();
    json!({
        "call_id": fc.call_id,
        "final_state": fc.final_state,
        "end_call_reason": fc.end_call_reason,
        "booking_status": fc.booking_status,
        "ended_by": outcome.ended_by,
        "duration_s": fc.duration_s,
        "priority": fc.priority,
        "revenue": fc.revenue,
        "tags": fc.tags,
        "session": outcome.session,
        "transcript": fc.transcript,
        "tool_calls": tools,
        "job_payload": fc.job_payload,
    })
}

/// One scripted demo caller.
pub struct Scenario {
    pub name: &'static str,
    pub title: &'static str,
    pub caller_id: &'static str,
    pub script: Vec<ScriptItem>,
    pub expect_state: &'static str,
}

fn say(text: &str) -> ScriptItem {
    ScriptItem::Caller {
        text: text.into(),
        when: When::Default,
    }
}

fn after(text: &str, s: f64) -> ScriptItem {
    ScriptItem::Caller {
        text: text.into(),
        when: When::After(s),
    }
}

/// The demo callers.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "booking",
            title: "New caller books a repair",
            caller_id: "+15125557001",
            script: vec![
                say("Hi, my AC stopped cooling last night"),
                say("No, nothing like that"),
                say("It's 78745"),
                say("My name is Dana Fields"),
                say("The AC is blowing warm air"),
                say("It's 4329 Franklin Street"),
                say("No, that's everything"),
                say("As soon as possible please"),
                say("Yes, that's right"),
                say("How much is the visit?"),
                say("Great, thanks, bye"),
            ],
            expect_state: "confirm",
        },
        Scenario {
            name: "emergency",
            title: "Caller smells gas",
            caller_id: "+15125557002",
            script: vec![
                say("My furnace is acting up"),
                say("Actually yes, I smell gas in the hallway right now"),
                say("Okay, we're going outside"),
            ],
            expect_state: "safety_exit",
        },
        Scenario {
            name: "out-of-area",
            title: "Caller outside the service area",
            caller_id: "+15125557003",
            script: vec![
                say("My heater won't turn on"),
                say("No"),
                say("My zip is 90210"),
                say("Yes, this number is fine"),
                say("Thanks"),
            ],
            expect_state: "callback",
        },
        Scenario {
            name: "reschedule",
            title: "Returning caller reschedules",
            caller_id: "+15125550100",
            script: vec![
                say("Hi, I need to reschedule my appointment"),
                after("Can we move it to Friday afternoon?", 5.0),
                say("Perfect, thank you, bye"),
            ],
            expect_state: "confirm",
        },
        Scenario {
            name: "high-ticket",
            title: "High-ticket replacement lead",
            caller_id: "+15125557005",
            script: vec![
                say("I'd like a quote for a whole new AC system"),
                say("No, nothing like that"),
                say("78704"),
                say("It's Priya Shah"),
                say("I want to replace my old AC with a new system"),
                say("It's 1200 Barton Springs Road"),
                say("No, that's all"),
                say("Whenever works"),
                say("Great, thanks"),
            ],
            expect_state: "urgency_callback",
        },
    ]
}

/// `calllock demo`: play every scenario against the user's database.
pub async fn run(cfg: &Config, only: Option<&str>, brief: bool) -> Result<()> {
    let mut all = scenarios();
    if let Some(name) = only {
        all.retain(|s| s.name == name);
        if all.is_empty() {
            let names: Vec<&str> = scenarios().iter().map(|s| s.name).collect();
            anyhow::bail!(
                "no demo scenario {name:?}; choose one of: {}",
                names.join(", ")
            );
        }
    }
    let store = store::Store::open(&cfg.database)
        .await
        .with_context(|| format!("opening the database {}", cfg.database.display()))?;
    let embedded = store::EmbeddedBackend::new(store.clone(), cfg.business.clone());
    embedded
        .seed_demo(chrono::Utc::now())
        .await
        .context("seeding demo data")?;
    let backend: Arc<dyn Backend> = Arc::new(embedded);
    let post = PostCall::local(
        store.clone(),
        backend.clone(),
        cfg,
        delivery::system_clock(),
    );
    let color = std::io::stdout().is_terminal();
    let timing = Timing::of(cfg);
    let mut failures = Vec::new();
    for sc in all {
        println!(
            "{}",
            display::bold(
                &format!("=== {} — {} ({})", sc.name, sc.title, sc.caller_id),
                color
            )
        );
        let call_id = format!(
            "demo-{}-{}",
            sc.name,
            chrono::Utc::now().format("%Y%m%d-%H%M%S-%3f")
        );
        let start = chrono::Utc::now().timestamp() as f64;
        let mut printer = display::LivePrinter::new(color);
        printer.enabled = !brief;
        let mut outcome = run_call(
            cfg,
            backend.clone(),
            sc.script,
            sc.caller_id,
            &call_id,
            start,
            timing,
            &mut printer,
        )
        .await;
        // Post-call processing as for any call: the promised callback, the
        // record.
        let fc = post.handle_call_ended(&mut outcome, false).await.finished;
        display::print_summary(&fc, color);
        let ok = fc.final_state == sc.expect_state;
        let evidence = demo_evidence(&store, &outcome).await;
        println!(
            "{} expected final state {}, got {}{}\n",
            if ok { "✓" } else { "✗" },
            sc.expect_state,
            fc.final_state,
            evidence
        );
        if !ok {
            failures.push(sc.name);
        }
    }
    if failures.is_empty() {
        println!("all demo calls ended as expected; see them with `calllock calls`");
        Ok(())
    } else {
        anyhow::bail!(
            "demo calls ended in the wrong state: {}",
            failures.join(", ")
        )
    }
}

/// What the database shows for a finished demo call.
async fn demo_evidence(store: &store::Store, outcome: &Outcome) -> String {
    let s = &outcome.session;
    let mut parts = Vec::new();
    if s.booking_confirmed {
        if let Ok(appts) = store.appointments_for(&s.phone_number).await {
            parts.push(format!(
                "{} appointment row(s) for {}",
                appts.len(),
                s.phone_number
            ));
        }
    }
    if s.callback_created {
        if let Ok(cbs) = store.callbacks_for(&s.phone_number).await {
            parts.push(format!("{} callback row(s)", cbs.len()));
        }
    }
    if s.lead_alert_sent {
        if let Ok(leads) = store.sales_leads_for(&s.phone_number).await {
            parts.push(format!("{} sales lead(s)", leads.len()));
        }
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" — database: {}", parts.join(", "))
    }
}
