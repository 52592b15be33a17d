//! The replay corpus (`examples/replays/corpus/`): calls written the way
//! people really call — questions, corrections, hazards, returning
//! callers, speech-to-text damage — each with its expected outcome in a
//! `# expect: {…}` line (`job.<key>` names a key of the dashboard job;
//! `# caller-id: …` where it matters). Every call
//! runs through the real `calllock replay` binary and must end as expected,
//! never say an agent line twice in a row, never loop (no line three times,
//! no turn-limit hand-off) and leave a record that matches what happened.
//! Every call also keeps one log: its LLM requests, transcript, journal and
//! record are all projections of the engine's log (`calllock::one_log`).

#[path = "support/replay_checks.rs"]
mod replay_checks;

use agent::backend::Backend;
use agent::engine::Engine;
use agent::extract::ExtractedFields;
use agent::responder::{
    ChatMessage, ExtractionRequest, ReplyStream, Responder, ResponderError, ScopedRequest,
    ScriptedResponder, TurnRequest,
};
use agent::session::{Session, TranscriptEntry};
use calllock::call::delivery::PostCall;
use calllock::call::driver::{CallDriver, Quiet, Timing};
use calllock::call::journal::{Journal, JournalObserver};
use calllock::call::record;
use calllock::cli::script;
use calllock::config::Config;
use calllock::one_log;
use replay_checks::{call_files, problems, read_call, Call};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use voice::history::{Event, EventLog};

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/replays/corpus")
}

fn replay(call: &Call) -> Value {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_calllock"));
    cmd.env_remove("CALLLOCK_CONFIG")
        .env_remove("CALLLOCK_DATABASE")
        .arg("replay")
        .arg(&call.path)
        .args(["--json", "--now", "2026-02-23T10:15:00-06:00"]);
    if let Some(id) = &call.caller_id {
        cmd.args(["--caller-id", id]);
    }
    let out = cmd.output().expect("calllock runs");
    assert!(
        out.status.success(),
        "{}: {}",
        call.path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn every_corpus_call_ends_as_expected() {
    let paths = call_files(&corpus_dir());
    assert!(paths.len() >= 30, "the corpus has {} calls", paths.len());
    let mut failures = Vec::new();
    for path in &paths {
        let call = read_call(path);
        let r = replay(&call);
        let bad = problems(&call, &r);
        let name = path.file_name().unwrap().to_string_lossy();
        println!("{name}: {}", if bad.is_empty() { "ok" } else { "FAILED" });
        if !bad.is_empty() {
            failures.push(format!("{name}: {}", bad.join("; ")));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_checks_catch_loops_and_false_records() {
    let call = Call::expecting(serde_json::json!({"final_state": "confirm"}));
    let looping = serde_json::json!({
        "final_state": "urgency", "end_call_reason": "completed", "booking_status": "not_requested",
        "session": {},
        "transcript": [
            {"role": "agent", "content": "How soon?"},
            {"role": "user", "content": "eh"},
            {"role": "agent", "content": "How soon?"},
            {"role": "agent", "content": "How soon?"}
        ]
    });
    let bad = problems(&call, &looping);
    for kind in [
        "final_state: expected",
        "said twice in a row",
        "a loop",
        "record: urgency",
    ] {
        assert!(bad.iter().any(|b| b.starts_with(kind)), "{kind}: {bad:?}");
    }
}

/// A responder that keeps the messages of every LLM turn request it
/// answers (the scripted responder answers).
struct Recording {
    inner: ScriptedResponder,
    turns: Mutex<Vec<Vec<ChatMessage>>>,
}

#[async_trait::async_trait]
impl Responder for Recording {
    async fn reply(&self, req: &TurnRequest) -> Result<ReplyStream, ResponderError> {
        self.turns.lock().unwrap().push(req.messages.clone());
        self.inner.reply(req).await
    }
    async fn scoped_reply(&self, req: &ScopedRequest) -> Result<String, ResponderError> {
        self.inner.scoped_reply(req).await
    }
    async fn extract(&self, req: &ExtractionRequest) -> Result<ExtractedFields, ResponderError> {
        self.inner.extract(req).await
    }
    fn name(&self) -> &str {
        "recording"
    }
}

/// One corpus call as `calllock replay` runs it (same engine, driver,
/// backend and post-call promise), with a journal and the LLM requests
/// kept: every copy of what was said is a projection of the one log.
async fn one_log_problems(call: &Call) -> Vec<String> {
    let cfg = Config::default();
    let start = chrono::DateTime::parse_from_rfc3339("2026-02-23T10:15:00-06:00")
        .unwrap()
        .timestamp() as f64;
    let store = store::Store::open_in_memory().await.unwrap();
    let now = record::utc(start);
    let embedded = store::EmbeddedBackend::with_clock(
        store.clone(),
        cfg.business.clone(),
        Arc::new(move || now),
    );
    embedded.seed_demo(now).await.unwrap();
    let backend: Arc<dyn Backend> = Arc::new(embedded);
    let responder = Arc::new(Recording {
        inner: ScriptedResponder::new(cfg.business.clone()),
        turns: Mutex::new(Vec::new()),
    });
    let caller = call
        .caller_id
        .clone()
        .unwrap_or_else(|| "+15125559876".into());
    let mut session = Session::new(&caller);
    session.call_sid = "CA-one-log".into();
    let engine = Engine::new(
        session,
        cfg.business.clone(),
        cfg.engine.text_engine_config(),
    );
    let journal = Journal::begin(&store, "CA-one-log", &caller, start, "test")
        .await
        .unwrap();
    let mut quiet = Quiet;
    let mut observer = JournalObserver::new(journal.clone(), start, &mut quiet);
    let script = script::parse_bytes(&std::fs::read(&call.path).unwrap()).unwrap();
    let driver = CallDriver::new(
        engine,
        backend.clone(),
        responder.clone(),
        Timing::of(&cfg),
        start,
        &mut observer,
    );
    let mut outcome = driver.run_script(script).await;
    journal.close().await;
    let events = store.events("CA-one-log").await.unwrap();
    let turns = responder.turns.lock().unwrap().clone();
    let mut bad = one_log::requests(&outcome.log, &turns);
    bad.extend(one_log::transcript(
        &outcome.log,
        &outcome.session.transcript_log,
    ));
    bad.extend(one_log::journal(
        &outcome.log,
        &one_log::journal_rows(&events),
    ));
    // Post-call work (the callback promised) adds to the log; the record
    // is built from the session, whose transcript is the log's.
    let end = outcome.end_time;
    PostCall::local(store, backend, &cfg, Arc::new(move || end))
        .keep_callback_promise(&mut outcome)
        .await;
    bad.extend(one_log::transcript(
        &outcome.log,
        &outcome.session.transcript_log,
    ));
    bad.extend(one_log::record(
        &outcome.log,
        &record::classify(&outcome, ""),
        false,
    ));
    if turns.is_empty()
        && outcome
            .log
            .events()
            .iter()
            .any(|e| matches!(e.event, Event::LlmAsked { .. }))
    {
        bad.push("the LLM was asked, but no request was seen".into());
    }
    bad
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_corpus_call_keeps_one_log() {
    let paths = call_files(&corpus_dir());
    assert!(paths.len() >= 30, "the corpus has {} calls", paths.len());
    let mut failures = Vec::new();
    for path in &paths {
        let call = read_call(path);
        let bad = one_log_problems(&call).await;
        let name = path.file_name().unwrap().to_string_lossy();
        println!(
            "{name}: {}",
            if bad.is_empty() { "one log" } else { "FAILED" }
        );
        if !bad.is_empty() {
            failures.push(format!("{name}:\n  {}", bad.join("\n  ")));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The check is not blind: a record, journal or request that is not the
/// log's projection is caught.
#[tokio::test]
async fn the_one_log_check_catches_a_copy_that_drifted() {
    let call = read_call(&call_files(&corpus_dir())[0]);
    assert!(one_log_problems(&call).await.is_empty());
    let mut log = EventLog::new();
    log.set_phase("welcome");
    log.append(
        Duration::from_secs(1),
        Event::CallerSaid { text: "Hi.".into() },
    );
    log.append(
        Duration::from_secs(1),
        Event::LlmAsked { text: "Hi.".into() },
    );
    let said = TranscriptEntry::user("Hi.", 1.0, agent::State::Welcome);
    assert!(one_log::transcript(&log, std::slice::from_ref(&said)).is_empty());
    let mut other = said.clone();
    other.content = Some("Hello.".into());
    assert!(
        !one_log::transcript(&log, &[other]).is_empty(),
        "a changed line"
    );
    assert!(!one_log::transcript(&log, &[]).is_empty(), "a lost line");
    let asked = vec![ChatMessage::system("prompt"), ChatMessage::user("Hi.")];
    assert!(one_log::requests(&log, &[asked]).is_empty());
    let drifted = vec![ChatMessage::system("prompt"), ChatMessage::user("Hello.")];
    assert!(
        !one_log::requests(&log, &[drifted]).is_empty(),
        "a request off the log"
    );
    let rows: Vec<_> = log
        .events()
        .iter()
        .map(|e| {
            (
                e.at.as_secs_f64(),
                calllock::call::journal::log::row(&log, e),
            )
        })
        .collect();
    assert!(one_log::journal(&log, &rows).is_empty());
    assert!(
        !one_log::journal(&log, &rows[..1]).is_empty(),
        "a journal missing an event"
    );
}
