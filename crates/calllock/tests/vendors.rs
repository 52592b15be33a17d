//! End to end with the vendors: the real `calllock` binary holds a call
//! typed on its stdin while talking to a local OpenAI-compatible fake (the
//! conversation LLM, extraction and classification), a fake V2 booking
//! backend and a fake dashboard, all over loopback HTTP.
//!
//! * `a_full_call_through_the_vendors`: every vendor is up; the LLM's
//!   words are spoken, the V2 backend books with the real call id, the
//!   dashboard receives one signed job (with the LLM's classification) and
//!   one call record, and nothing waits in the outbox.
//! * `vendors_go_down_mid_call_and_nothing_is_lost`: all three vendors are
//!   switched off after the caller gave their ZIP code; the agent keeps
//!   answering every line within 3.5 s with its scripted lines, the call ends
//!   with a complete record, the undelivered work waits in the outbox, and
//!   once the V2 backend and the dashboard are back (the LLM is not needed
//!   after the call) `calllock outbox deliver` delivers each item exactly
//!   once. "Switched off" means the port is closed (connection refused).
//!
//! The fakes run in this process (FakeOpenAi on the test's multi-thread
//! runtime, FakeHttp on its own threads); the child process is driven from
//! blocking tasks so the runtime keeps serving the fake LLM.

#[path = "support/fake_llm.rs"]
mod fake_llm;

use fake_llm::{llm_handler, LLM_LINE};
use providers::fake::http::{FakeHttp, FakeResponse, RecordedRequest};
use providers::fake::openai::FakeOpenAi;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const SECRET: &str = "e2e-webhook-secret";
/// The longest the caller may wait for the agent after a line (no dead air).
const DEAD_AIR: Duration = Duration::from_millis(3500);

const BOOKING_LINES: [&str; 9] = [
    "my AC stopped cooling",
    "no, nothing like that",
    "78745",
    "My name is Dana Fields",
    "It's 4329 Franklin Street",
    "no that's all",
    "as soon as possible",
    "yes that's right",
    "thanks, bye",
];

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_calllock"));
    // Never pick up a developer's config, database or vendors.
    for var in [
        "CALLLOCK_CONFIG",
        "CALLLOCK_DATABASE",
        "CALLLOCK_BACKEND",
        "CALLLOCK_LLM_MODEL",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "CALLLOCK_LOG",
    ] {
        c.env_remove(var);
    }
    c.env("HOME", std::env::temp_dir()).env(
        "XDG_DATA_HOME",
        std::env::temp_dir().join("calllock-test-xdg"),
    );
    c
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).to_string()
}

// ---------------------------------------------------------------------------
// The fake vendors

struct Fakes {
    llm: Arc<FakeOpenAi>,
    v2: Arc<FakeHttp>,
    dash: Arc<FakeHttp>,
}

impl Fakes {
    async fn start() -> Fakes {
        let llm = FakeOpenAi::start(vec![]).await;
        llm.set_handler(Arc::new(llm_handler));

        let v2 = FakeHttp::start();
        let ok = |v: Value| vec![FakeResponse::json(200, v)];
        v2.set(
            "/webhook/retell/lookup_caller",
            ok(json!({"found": false, "message": "new caller"})),
        );
        v2.set(
            "/webhook/retell/book_appointment",
            ok(json!({
                "success": true,
                "booked": true,
                "booking_confirmed": true,
                "appointment_time": "2026-03-02T13:00:00-06:00",
                "appointmentId": "apt-1",
                "confirmationMessage": "Appointment confirmed"
            })),
        );
        v2.set(
            "/webhook/retell/create_callback",
            ok(json!({"success": true, "message": "ok"})),
        );
        v2.set(
            "/webhook/retell/send_sales_lead_alert",
            ok(json!({"success": true, "message": "ok"})),
        );
        v2.set(
            "/webhook/retell/manage_appointment",
            ok(json!({"success": true, "message": "ok"})),
        );

        let dash = FakeHttp::start();
        dash.set(
            "/jobs",
            ok(json!({"success": true, "job_id": "job-1", "lead_id": "lead-1"})),
        );
        dash.set("/calls", ok(json!({"success": true})));
        dash.set("/alerts", ok(json!({"success": true})));
        Fakes {
            llm: Arc::new(llm),
            v2: Arc::new(v2),
            dash: Arc::new(dash),
        }
    }

    /// The environment that points `calllock` at these fakes (the ports
    /// stay the same across `FakeHttp::restart`).
    fn env(&self) -> Vec<(String, String)> {
        let d = self.dash.url();
        [
            ("CALLLOCK_LLM_BASE_URL", self.llm.base_url()),
            ("CALLLOCK_LLM_API_KEY", "sk-e2e".to_string()),
            ("V2_BACKEND_URL", self.v2.url()),
            ("V2_API_KEY", "v2-e2e-key".to_string()),
            ("DASHBOARD_JOBS_URL", format!("{d}/jobs")),
            ("DASHBOARD_CALLS_URL", format!("{d}/calls")),
            ("DASHBOARD_ALERTS_URL", format!("{d}/alerts")),
            ("DASHBOARD_WEBHOOK_SECRET", SECRET.to_string()),
            ("DASHBOARD_USER_EMAIL", "owner@example.com".to_string()),
            // Speed up the clock-bound parts; the timers are still real.
            ("CALLLOCK_BUFFER_DEBOUNCE_S", "0.1".to_string()),
            ("CALLLOCK_LLM_LATENCY_S", "0".to_string()),
            ("CALLLOCK_TOOL_LATENCY_S", "0".to_string()),
            ("CALLLOCK_SPEECH_CHARS_PER_S", "5000".to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }
}

/// `calllock --db DB ARGS…` with the vendor environment; waits for it.
fn calllock(db: &Path, env: &[(String, String)], args: &[&str]) -> (ExitStatus, String, String) {
    let out = bin()
        .arg("--db")
        .arg(db)
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .expect("calllock runs");
    (out.status, text(&out.stdout), text(&out.stderr))
}

/// `calllock … --json` parsed, or a panic with the output.
fn calllock_json(db: &Path, env: &[(String, String)], args: &[&str]) -> Value {
    let (status, stdout, stderr) = calllock(db, env, args);
    assert!(
        status.success(),
        "calllock {args:?} failed:\n{stdout}\n{stderr}"
    );
    serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("calllock {args:?} printed no JSON ({e}):\n{stdout}\n{stderr}"))
}

// ---------------------------------------------------------------------------
// Driving `calllock chat`

/// A running `calllock chat`, its stdout read line by line as it comes.
struct Chat {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<(Instant, String)>,
    stdout_reader: Option<JoinHandle<()>>,
    stderr_reader: Option<JoinHandle<String>>,
    /// Every stdout line so far.
    seen: Vec<String>,
}

/// What `calllock chat` left behind.
struct Finished {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

impl Finished {
    fn dump(&self) -> String {
        format!(
            "--- stdout ---\n{}\n--- stderr ---\n{}",
            self.stdout, self.stderr
        )
    }
}

fn is_agent_line(l: &str) -> bool {
    l.contains(" Agent [")
}

impl Chat {
    fn start(db: &Path, env: &[(String, String)]) -> Chat {
        let mut child = bin()
            .arg("--db")
            .arg(db)
            .arg("chat")
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("calllock chat starts");
        let stdout = child.stdout.take().expect("stdout piped");
        let mut stderr = child.stderr.take().expect("stderr piped");
        let (tx, rx) = std::sync::mpsc::channel();
        let stdout_reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if tx.send((Instant::now(), line)).is_err() {
                    return;
                }
            }
        });
        let stderr_reader = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr.read_to_string(&mut s);
            s
        });
        Chat {
            stdin: child.stdin.take(),
            child,
            lines: rx,
            stdout_reader: Some(stdout_reader),
            stderr_reader: Some(stderr_reader),
            seen: Vec::new(),
        }
    }

    /// Read stdout until `pred` matches a line (true) or `timeout` passes.
    fn wait_for(&mut self, timeout: Duration, pred: impl Fn(&str) -> bool) -> Option<Instant> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok((at, line)) => {
                    let hit = pred(&line);
                    self.seen.push(line);
                    if hit {
                        return Some(at);
                    }
                }
                Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => {
                    return None
                }
            }
        }
    }

    /// Read stdout until it has been quiet for `quiet` (at most `max`).
    fn settle(&mut self, quiet: Duration, max: Duration) {
        let end = Instant::now() + max;
        while Instant::now() < end {
            match self.lines.recv_timeout(quiet) {
                Ok((_, line)) => self.seen.push(line),
                Err(_) => return,
            }
        }
    }

    /// Type `line` as the caller; returns how long the agent took to say
    /// something (`None`: nothing within `budget`). Then lets the agent
    /// finish what it is saying.
    fn say(&mut self, line: &str, budget: Duration) -> Option<Duration> {
        let stdin = self.stdin.as_mut().expect("the caller has not hung up");
        let sent = Instant::now();
        writeln!(stdin, "{line}").expect("calllock chat reads stdin");
        let answered = self
            .wait_for(budget, is_agent_line)
            .map(|at| at.saturating_duration_since(sent));
        self.settle(Duration::from_millis(300), Duration::from_secs(3));
        answered
    }

    /// Hang up (Ctrl-D) and wait for post-call processing and exit.
    fn hang_up(mut self, timeout: Duration) -> Finished {
        drop(self.stdin.take());
        let deadline = Instant::now() + timeout;
        let status = loop {
            if let Some(s) = self.child.try_wait().expect("wait for calllock") {
                break Some(s);
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                break None;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        if let Some(h) = self.stdout_reader.take() {
            let _ = h.join();
        }
        while let Ok((_, line)) = self.lines.try_recv() {
            self.seen.push(line);
        }
        let stderr = self
            .stderr_reader
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        let stdout = self.seen.join("\n");
        match status {
            Some(status) => Finished {
                status,
                stdout,
                stderr,
            },
            None => {
                let _ = self.child.wait();
                panic!(
                    "calllock chat did not exit within {timeout:?} of the hang-up\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}"
                )
            }
        }
    }
}

/// The call id from chat's "saved; see `calllock calls show ID`" note.
fn saved_call_id(f: &Finished) -> String {
    let marker = "calllock calls show ";
    let at = f
        .stderr
        .find(marker)
        .unwrap_or_else(|| panic!("no saved-call note\n{}", f.dump()));
    f.stderr[at + marker.len()..]
        .split(|c: char| c == '`' || c.is_whitespace())
        .next()
        .unwrap_or_default()
        .to_string()
}

fn signed(r: &RecordedRequest) -> bool {
    r.header("X-Webhook-Signature") == Some(&providers::dashboard::sign(SECRET, &r.body))
}

fn json_of(r: &RecordedRequest) -> Value {
    r.json
        .clone()
        .unwrap_or_else(|| panic!("{} body is not JSON: {}", r.path, r.body_text()))
}

fn user_contents(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|m| m["role"] == "user")
                .filter_map(|m| m["content"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// The call `id` in `db` keeps one log: its journal, its record and the
/// fake LLM's turn requests (this test's only call; `None` when an ADK
/// agent, not the engine, kept the conversation the LLM was sent) are
/// projections of it.
async fn assert_one_log(db: &Path, id: &str, llm: Option<&FakeOpenAi>) {
    let store = store::Store::open(db).await.unwrap();
    let bodies: Option<Vec<Value>> =
        llm.map(|llm| llm.requests().into_iter().map(|r| r.body).collect());
    let bad = calllock::one_log::stored_call(&store, id, bodies.as_deref()).await;
    assert!(
        bad.is_empty(),
        "{id} does not keep one log:\n  {}",
        bad.join("\n  ")
    );
}

fn db_in(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("calllock.db")
}

// ---------------------------------------------------------------------------
// The tests

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_call_through_the_vendors() {
    full_call_through_the_vendors(&[]).await;
}

/// The same booking call with a Google ADK agent phrasing the replies
/// (`llm.kind = "adk"`): the same assertions hold, and the model's
/// requests come from the agent — CallLock's prompt for the state as its
/// instruction, the conversation from its session.
#[cfg(feature = "adk")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_call_through_the_vendors_with_an_adk_agent() {
    let fakes = full_call_through_the_vendors(&[("CALLLOCK_LLM_KIND", "adk")]).await;
    let streams: Vec<_> = fakes
        .llm
        .requests()
        .into_iter()
        .filter(|r| r.is_stream())
        .collect();
    let last = streams.last().expect("streamed requests");
    let messages = last.messages();
    let first = &messages[0];
    assert_eq!(first["role"], "user", "the agent's instruction: {first}");
    assert!(
        first["content"]
            .as_str()
            .is_some_and(|c| c.contains("ACE Cooling")),
        "CallLock's prompt is the instruction: {first}"
    );
    let replies = messages
        .iter()
        .filter(|m| m["role"] == "assistant" && m["content"] == LLM_LINE)
        .count();
    assert!(
        replies >= 3,
        "the agent's session holds its earlier replies: {messages:?}"
    );
}

async fn full_call_through_the_vendors(extra_env: &[(&str, &str)]) -> Fakes {
    let fakes = Fakes::start().await;
    let mut env = fakes.env();
    env.extend(
        extra_env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);

    let (db2, env2) = (db.clone(), env.clone());
    let (finished, late) = tokio::task::spawn_blocking(move || {
        let mut chat = Chat::start(&db2, &env2);
        chat.wait_for(Duration::from_secs(10), is_agent_line);
        let mut late = Vec::new();
        for line in BOOKING_LINES {
            if chat.say(line, Duration::from_secs(5)).is_none() {
                late.push(line);
            }
        }
        if !chat.seen.iter().any(|l| l.contains("agent hung up")) {
            chat.wait_for(Duration::from_secs(5), |l| l.contains("agent hung up"));
        }
        (chat.hang_up(Duration::from_secs(30)), late)
    })
    .await
    .unwrap();
    let dump = finished.dump();
    assert!(finished.status.success(), "calllock chat failed\n{dump}");
    assert!(late.is_empty(), "no agent reply to {late:?}\n{dump}");
    let out = &finished.stdout;

    // The LLM's words were spoken; the call booked and ended normally.
    let llm_lines = out
        .lines()
        .filter(|l| is_agent_line(l) && l.ends_with(LLM_LINE))
        .count();
    assert!(llm_lines >= 5, "the LLM's replies were not spoken\n{dump}");
    assert!(
        out.contains("final state confirm, end_call_reason completed, booking confirmed"),
        "{dump}"
    );
    assert!(out.contains("agent hung up"), "{dump}");
    assert!(
        finished.stderr.contains("delivered to the dashboard"),
        "{dump}"
    );
    assert!(
        !finished.stderr.contains("unavailable"),
        "a vendor fell back although all were up\n{dump}"
    );

    // The fake LLM was asked for streamed replies carrying the
    // conversation, for extractions and for one classification.
    let reqs = fakes.llm.requests();
    let streams: Vec<_> = reqs.iter().filter(|r| r.is_stream()).collect();
    assert!(streams.len() >= 5, "{} streaming requests", streams.len());
    assert!(
        streams
            .iter()
            .all(|r| r.header("authorization") == Some("Bearer sk-e2e")),
        "the API key is sent"
    );
    let heard: Vec<String> = streams
        .iter()
        .flat_map(|r| user_contents(&r.body))
        .collect();
    for line in ["my AC stopped cooling", "78745", "My name is Dana Fields"] {
        assert!(
            heard.iter().any(|h| h.contains(line)),
            "the LLM never saw {line:?}: {heard:?}"
        );
    }
    let extraction = agent::extract::extraction_instruction();
    let extractions: Vec<_> = reqs
        .iter()
        .filter(|r| r.messages().first().map(|m| m["content"].clone()) == Some(json!(extraction)))
        .collect();
    assert!(!extractions.is_empty(), "no extraction request");
    assert!(extractions
        .iter()
        .all(|r| r.body["response_format"]["type"] == "json_object"));
    assert!(
        extractions.iter().any(|r| user_contents(&r.body)
            .iter()
            .any(|c| c.contains("Franklin"))),
        "extraction never saw the address"
    );
    let classifications = reqs
        .iter()
        .filter(|r| {
            user_contents(&r.body)
                .first()
                .is_some_and(|c| c.starts_with("You review finished phone calls"))
        })
        .count();
    assert_eq!(classifications, 1, "one classification request");

    // The V2 backend was asked with the real call id (D-18) and the key.
    let id = saved_call_id(&finished);
    assert!(id.starts_with("chat-"), "{id}");
    let lookups = fakes.v2.requests_to("/webhook/retell/lookup_caller");
    let books = fakes.v2.requests_to("/webhook/retell/book_appointment");
    assert_eq!(lookups.len(), 1, "{dump}");
    assert_eq!(books.len(), 1, "{dump}");
    for r in lookups.iter().chain(&books) {
        let b = json_of(r);
        assert_eq!(b["call"]["call_id"], json!(id), "D-18: {b}");
        assert_eq!(b["call"]["from_number"], "+15125559876");
        assert_eq!(r.header("X-API-Key"), Some("v2-e2e-key"));
    }
    let book = json_of(&books[0]);
    assert_eq!(book["args"]["customer_name"], "Dana Fields", "{book}");
    assert_eq!(book["args"]["service_address"], "4329 Franklin Street");
    assert_eq!(fakes.v2.count("/webhook/retell/create_callback"), 0);

    // The dashboard got exactly one signed job (with the LLM's
    // classification) and one signed call record linked to it.
    let jobs = fakes.dash.requests_to("/jobs");
    let calls = fakes.dash.requests_to("/calls");
    assert_eq!((jobs.len(), calls.len()), (1, 1), "{dump}");
    assert_eq!(fakes.dash.count("/alerts"), 0);
    for r in [&jobs[0], &calls[0]] {
        assert!(signed(r), "{} is not signed with the secret", r.path);
        assert_eq!(r.header("X-Webhook-Secret"), Some(SECRET));
        assert!(r.header("Idempotency-Key").is_some_and(|k| !k.is_empty()));
    }
    let job = json_of(&jobs[0]);
    assert_eq!(job["call_id"], json!(id));
    assert_eq!(job["call_type"], "SERVICE", "{job}");
    assert_eq!(job["call_subtype"], "REPAIR_AC");
    assert_eq!(job["card_headline"], "AC repair booked");
    assert_eq!(job["sentiment_score"], 4);
    assert_eq!(job["booking_status"], "confirmed");
    assert_eq!(job["user_email"], "owner@example.com");
    // Where and when (issue 15): the address, the ZIP and the booked time.
    assert_eq!(job["customer_address"], "4329 Franklin Street", "{job}");
    assert_eq!(job["service_zip"], "78745", "{job}");
    assert!(
        job["scheduled_at"].as_str().is_some_and(|t| !t.is_empty()),
        "{job}"
    );
    assert_eq!(job["end_call_reason"], "completed");
    assert_eq!(job["primary_intent"], "booking_request");
    let call = json_of(&calls[0]);
    assert_eq!(call["call_id"], json!(id));
    assert_eq!(
        (call["job_id"].clone(), call["lead_id"].clone()),
        (json!("job-1"), json!("lead-1"))
    );

    // The saved record and the outbox.
    let rec = calllock_json(&db, &env, &["calls", "show", &id, "--json"]);
    let adk = extra_env
        .iter()
        .any(|(k, v)| *k == "CALLLOCK_LLM_KIND" && *v == "adk");
    assert_one_log(&db, &id, (!adk).then_some(&*fakes.llm)).await;
    assert_eq!(rec["final_state"], "confirm", "{rec}");
    assert_eq!(rec["booking_status"], "confirmed");
    assert_eq!(rec["classification"]["call_type"], "SERVICE");
    assert_eq!(rec["session"]["customer_name"], "Dana Fields");
    let (status, stdout, stderr) = calllock(&db, &env, &["outbox"]);
    assert!(status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("nothing pending"), "{stdout}");
    fakes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vendors_go_down_mid_call_and_nothing_is_lost() {
    let fakes = Fakes::start().await;
    let env = fakes.env();
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let (before, after) = BOOKING_LINES.split_at(3); // the ZIP code is the 3rd line

    let (db2, env2) = (db.clone(), env.clone());
    let (llm, v2, dash) = (fakes.llm.clone(), fakes.v2.clone(), fakes.dash.clone());
    let (finished, waits) = tokio::task::spawn_blocking(move || {
        let mut chat = Chat::start(&db2, &env2);
        chat.wait_for(Duration::from_secs(10), is_agent_line);
        for line in before {
            chat.say(line, Duration::from_secs(5));
        }
        // Every vendor goes away at once.
        llm.stop();
        v2.stop();
        dash.stop();
        let mut waits = Vec::new();
        for line in after {
            waits.push((*line, chat.say(line, DEAD_AIR)));
        }
        // The agent may keep the line open after a failed booking: the
        // caller hangs up.
        chat.wait_for(Duration::from_millis(1500), |l| l.contains("agent hung up"));
        (chat.hang_up(Duration::from_secs(40)), waits)
    })
    .await
    .unwrap();
    let dump = finished.dump();
    assert!(finished.status.success(), "calllock chat failed\n{dump}");

    // No dead air, as the caller experienced it.
    for (line, wait) in &waits {
        assert!(
            wait.is_some(),
            "dead air: nothing within {DEAD_AIR:?} after the caller said {line:?}; waits {waits:?}\n{dump}"
        );
    }
    // The scripted fallback spoke; the LLM never did after the outage.
    let outage_at = finished
        .stdout
        .lines()
        .position(|l| l.ends_with(&format!("Caller: {}", after[0])))
        .unwrap_or_else(|| panic!("the caller's line {:?} is missing\n{dump}", after[0]));
    let agent_after: Vec<&str> = finished
        .stdout
        .lines()
        .skip(outage_at)
        .filter(|l| is_agent_line(l))
        .collect();
    assert!(
        agent_after.iter().all(|l| !l.contains("LLM:")),
        "the LLM spoke while down: {agent_after:#?}"
    );
    // Responder lines carry no canned id: "Agent [state]: text".
    let responder_lines = agent_after.iter().filter(|l| l.contains("]: ")).count();
    assert!(
        responder_lines >= 3,
        "the scripted responder did not stand in for the LLM: {agent_after:#?}"
    );
    assert!(
        finished
            .stderr
            .contains("LLM reply unavailable; speaking the scripted line"),
        "{dump}"
    );

    // The call ended with a complete record.
    let id = saved_call_id(&finished);
    assert!(id.starts_with("chat-"), "{id}");
    let rec = calllock_json(&db, &env, &["calls", "show", &id, "--json"]);
    assert_one_log(&db, &id, Some(&fakes.llm)).await;
    assert_eq!(rec["final_state"], "booking_failed", "{rec}");
    assert_eq!(rec["booking_status"], "attempted_failed");
    // A callback was promised (it waits in the outbox): the record says
    // so, not "customer_hangup" (issue 15).
    assert_eq!(rec["end_call_reason"], "callback_later", "{rec}");
    assert_eq!(rec["session"]["customer_name"], "Dana Fields");
    assert_eq!(rec["session"]["service_address"], "4329 Franklin Street");
    assert_eq!(rec["job_payload"]["call_id"], json!(id));
    let transcript_text = rec["transcript_text"].as_str().unwrap_or_default();
    for line in BOOKING_LINES {
        assert!(
            transcript_text.contains(&format!("Caller: {line}")),
            "the record lost {line:?}:\n{transcript_text}"
        );
    }

    // The saved transcript shows an agent line within 3.5 s of every
    // caller line after the outage.
    let dumped = calllock_json(&db, &env, &["transcript", &id, "--json"]);
    let entries = dumped["entries"].as_array().cloned().unwrap_or_default();
    let t = |e: &Value| e["t"].as_f64().unwrap_or(f64::NAN);
    for line in after {
        let said = entries
            .iter()
            .find(|e| e["role"] == "user" && e["content"] == *line)
            .unwrap_or_else(|| panic!("{line:?} is not in the transcript: {dumped}"));
        let answered = entries
            .iter()
            .filter(|e| e["role"] == "agent" && t(e) >= t(said))
            .map(t)
            .fold(f64::INFINITY, f64::min);
        assert!(
            answered - t(said) <= DEAD_AIR.as_secs_f64(),
            "dead air in the transcript after {line:?} (t={}): next agent line at {answered}\n{dumped}",
            t(said)
        );
    }

    // What could not be done waits in the outbox: the job, the call record
    // and the callback the agent promised.
    let (status, waiting, stderr) = calllock(&db, &env, &["outbox"]);
    assert!(status.success(), "{waiting}\n{stderr}");
    let pending_kinds: Vec<&str> = waiting
        .lines()
        .filter(|l| l.starts_with("pending") && l.contains(&id))
        .filter_map(|l| l.split_whitespace().nth(1))
        .collect();
    let mut sorted = pending_kinds.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, ["call", "callback", "job"], "{waiting}");
    assert!(waiting.contains("3 pending"), "{waiting}");
    assert_eq!(fakes.dash.request_count(), 0, "the dashboard was down");
    let v2_before = fakes.v2.request_count();

    // The vendors come back; one delivery pass sends everything once.
    fakes.v2.restart().expect("the V2 fake restarts");
    fakes.dash.restart().expect("the dashboard fake restarts");
    let (status, stdout, stderr) = calllock(&db, &env, &["outbox", "deliver", "--now"]);
    assert!(status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("attempted 3: 3 delivered, 0 failed"),
        "{stdout}\n{stderr}"
    );
    assert!(stdout.contains("0 pending"), "{stdout}");

    let jobs = fakes.dash.requests_to("/jobs");
    let calls = fakes.dash.requests_to("/calls");
    assert_eq!(
        (jobs.len(), calls.len()),
        (1, 1),
        "{:#?}",
        fakes.dash.requests()
    );
    assert_eq!(fakes.dash.count("/alerts"), 0);
    let keys: Vec<&str> = jobs
        .iter()
        .chain(&calls)
        .map(|r| r.header("Idempotency-Key").unwrap_or(""))
        .collect();
    assert!(
        keys.iter().all(|k| !k.is_empty()) && keys[0] != keys[1],
        "{keys:?}"
    );
    for r in jobs.iter().chain(&calls) {
        assert!(signed(r), "{} is not signed with the secret", r.path);
    }
    let job = json_of(&jobs[0]);
    assert_eq!(job["call_id"], json!(id));
    assert_eq!(job["booking_status"], "attempted_failed", "{job}");
    assert_eq!(job["end_call_reason"], "callback_later", "{job}");
    let call = json_of(&calls[0]);
    assert_eq!(call["call_id"], json!(id));
    // The job was accepted late: the waiting call record got its ids.
    assert_eq!(
        (call["job_id"].clone(), call["lead_id"].clone()),
        (json!("job-1"), json!("lead-1"))
    );
    let callbacks: Vec<_> = fakes.v2.requests().into_iter().skip(v2_before).collect();
    assert_eq!(callbacks.len(), 1, "{callbacks:#?}");
    assert_eq!(callbacks[0].path, "/webhook/retell/create_callback");
    let cb = json_of(&callbacks[0]);
    assert_eq!(cb["call"]["call_id"], json!(id), "D-18: {cb}");
    assert_eq!(cb["call"]["from_number"], "+15125559876");

    let (_, stdout, _) = calllock(&db, &env, &["outbox"]);
    assert!(stdout.contains("nothing pending"), "{stdout}");

    // A second pass sends nothing more.
    let (dash_n, v2_n) = (fakes.dash.request_count(), fakes.v2.request_count());
    let (status, stdout, stderr) = calllock(&db, &env, &["outbox", "deliver", "--now"]);
    assert!(status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("attempted 0: 0 delivered, 0 failed"),
        "{stdout}"
    );
    assert_eq!(
        (fakes.dash.request_count(), fakes.v2.request_count()),
        (dash_n, v2_n),
        "a second delivery pass sent something again"
    );
}

/// A vendor that hangs is worse than one that is down: every reply waits
/// for the first-token budget (2.5 s), extraction runs in the background,
/// and the caller still hears the agent within 3.5 s of every line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_llm_never_leaves_the_caller_in_dead_air() {
    let fakes = Fakes::start().await;
    let env = fakes.env();
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let (before, after) = BOOKING_LINES.split_at(3);
    let (db2, env2, llm) = (db.clone(), env.clone(), fakes.llm.clone());
    let (finished, waits) = tokio::task::spawn_blocking(move || {
        let mut chat = Chat::start(&db2, &env2);
        chat.wait_for(Duration::from_secs(10), is_agent_line);
        for line in before {
            chat.say(line, Duration::from_secs(5));
        }
        // Requests are accepted and never answered.
        llm.set_mode(providers::fake::openai::FakeMode::Hang);
        let mut waits = Vec::new();
        for line in &after[..4] {
            waits.push((*line, chat.say(line, DEAD_AIR)));
        }
        (chat.hang_up(Duration::from_secs(40)), waits)
    })
    .await
    .unwrap();
    let dump = finished.dump();
    assert!(finished.status.success(), "calllock chat failed\n{dump}");
    for (i, (line, wait)) in waits.iter().enumerate() {
        let wait = wait.unwrap_or_else(|| {
            panic!("dead air: nothing within {DEAD_AIR:?} after {line:?}; waits {waits:?}\n{dump}")
        });
        if i < 3 {
            // The fallback waited for the LLM's first words first.
            assert!(
                wait >= Duration::from_millis(2000),
                "answered in {wait:?}: the hanging LLM was not even tried?\n{dump}"
            );
        } else {
            // Three failed replies in a row opened the LLM's breaker: the
            // scripted line comes without the wait.
            assert!(
                wait < Duration::from_millis(2000),
                "answered in {wait:?}: the open breaker still waited\n{dump}"
            );
        }
    }
    assert!(
        finished
            .stderr
            .contains("LLM reply unavailable; speaking the scripted line"),
        "{dump}"
    );
    let id = saved_call_id(&finished);
    let rec = calllock_json(&db, &env, &["calls", "show", &id, "--json"]);
    assert_eq!(rec["job_payload"]["call_id"], json!(id), "{rec}");
}
