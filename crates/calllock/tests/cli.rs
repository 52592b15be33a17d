//! End-to-end tests of the `calllock` binary: real processes, real SQLite
//! files in temporary directories, no mocks of our own code.

#[path = "support/child.rs"]
mod child;

use child::{has_whole_line, Running};
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_calllock"));
    // Never pick up a developer's config or database.
    c.env_remove("CALLLOCK_CONFIG")
        .env_remove("CALLLOCK_DATABASE")
        .env("HOME", std::env::temp_dir())
        .env(
            "XDG_DATA_HOME",
            std::env::temp_dir().join("calllock-test-xdg"),
        );
    c
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn run(c: &mut Command) -> Output {
    c.output().expect("calllock runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).to_string()
}

fn replay_json(file: &Path, extra: &[&str]) -> Value {
    let out = run(bin()
        .arg("replay")
        .arg(file)
        .args(["--json", "--now", "2026-02-19T10:15:00-06:00"])
        .args(extra));
    assert!(
        out.status.success(),
        "replay failed: {}\n{}",
        text(&out.stderr),
        text(&out.stdout)
    );
    serde_json::from_slice(&out.stdout).expect("replay --json prints one JSON object")
}

fn entries(r: &Value) -> Vec<Value> {
    r["transcript"].as_array().cloned().unwrap_or_default()
}

fn t(e: &Value) -> f64 {
    e["t"].as_f64().unwrap()
}

#[test]
fn replay_fast_lookup_talkover_waits_for_the_caller() {
    let r = replay_json(
        &repo().join("examples/replays/fast-lookup-talkover.jsonl"),
        &["--caller-id", "+15125550100", "--tool-latency", "0.65"],
    );
    let es = entries(&r);
    let callers: Vec<&Value> = es.iter().filter(|e| e["role"] == "user").collect();
    let (first, last_fragment) = (callers[0], callers[2]);
    // The lookup ran on the first fragment and answered while the caller
    // was still talking.
    let lookup = es.iter().find(|e| e["role"] == "tool").unwrap();
    assert_eq!(lookup["name"], "lookup_caller");
    assert!(t(lookup) < t(callers[1]), "lookup answered mid-sentence");
    // No agent line between the first fragment and the last one + 1.5 s.
    let agent_after_first: Vec<&Value> = es
        .iter()
        .filter(|e| e["role"] == "agent" && t(e) > t(first))
        .collect();
    let reply = agent_after_first[0];
    assert!(
        t(reply) >= t(last_fragment) + 1.5 - 1e-6,
        "agent spoke at {} over a caller still talking at {}",
        t(reply),
        t(last_fragment)
    );
    // One reply for the three fragments, greeting the known caller.
    let before_next_caller = agent_after_first
        .iter()
        .filter(|e| t(e) < t(callers[3]))
        .count();
    assert_eq!(before_next_caller, 1, "one reply to the fragmented turn");
    assert!(reply["content"].as_str().unwrap().contains("Jonas"));
    assert_eq!(reply["state"], "safety");
    // D-1: the flush judged the fragments once; the trigger was judged once.
    assert_eq!(r["session"]["turn_count"], 3);
    assert_eq!(r["final_state"], "service_area");
}

#[test]
fn replay_fragmented_address_is_one_exchange() {
    let r = replay_json(
        &repo().join("examples/replays/fragmented-address.jsonl"),
        &[],
    );
    let es = entries(&r);
    let frag_start = es.iter().position(|e| e["content"] == "Okay it's").unwrap();
    let frag_end = es
        .iter()
        .position(|e| e["content"] == "Austin Texas")
        .unwrap();
    // The five fragments came in without the agent talking in between
    // (a newer fragment supersedes the reply still being generated).
    assert!(es[frag_start..=frag_end]
        .iter()
        .all(|e| e["role"] != "agent"));
    // Never escalated to a callback; the address was assembled.
    assert!(es.iter().all(|e| e["state"] != "callback"));
    assert_eq!(r["session"]["service_address"], "4329 Franklin Street");
    assert_eq!(r["final_state"], "pre_confirm");
}

#[test]
fn replay_whole_booking_call() {
    let out = run(bin()
        .args(["replay", "--now", "2026-02-23T10:15:00-06:00", "--json"])
        .arg(repo().join("examples/replays/booking.jsonl")));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["final_state"], "confirm");
    assert_eq!(r["end_call_reason"], "completed");
    assert_eq!(r["booking_status"], "confirmed");
    assert_eq!(r["ended_by"], "agent");
    let book = r["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["tool"] == "book_service")
        .unwrap();
    // D-14: ASAP at 10:15 -> 13:00 the same day.
    assert_eq!(book["args"]["preferred_time"], "2026-02-23T13:00:00-06:00");
    assert_eq!(book["args"]["address"], "4329 Franklin Street");
    assert_eq!(r["session"]["booked_time"], "2026-02-23T13:00:00-06:00");
    // The goodbye was heard in full: hang-up after the last agent line.
    let last_agent = entries(&r)
        .into_iter()
        .rfind(|e| e["role"] == "agent")
        .unwrap();
    assert!(last_agent["content"].as_str().unwrap().contains("goodbye"));
    assert!(r["duration_s"].as_f64().unwrap() > t(&last_agent));
    // Replays are deterministic.
    let again = run(bin()
        .args(["replay", "--now", "2026-02-23T10:15:00-06:00", "--json"])
        .arg(repo().join("examples/replays/booking.jsonl")));
    assert_eq!(out.stdout, again.stdout);
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

#[test]
fn replay_bad_files_fail_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "non-utf8",
            b"{\"caller\": \"hi\"}\n{\"caller\": \"\xff\xfe\"}\n".to_vec(),
            "line 2: not valid UTF-8",
        ),
        (
            "truncated",
            b"{\"caller\": \"hi\"}\n{\"caller\": \"my AC is bro".to_vec(),
            "line 2: not a JSON object",
        ),
        (
            "unknown",
            b"{\"speaker\": \"hi\"}\n".to_vec(),
            "line 1: expected one of",
        ),
        (
            "bad-tool",
            b"{\"tool_result\": {\"tool\": \"teleport\", \"result\": {}}}\n".to_vec(),
            "unknown tool",
        ),
    ];
    for (name, bytes, want) in cases {
        let p = write(dir.path(), name, &bytes);
        let out = run(bin().arg("replay").arg(&p));
        assert!(!out.status.success(), "{name} should fail");
        let err = text(&out.stderr);
        assert!(err.contains(want), "{name}: {err}");
        assert!(!err.contains("panicked"), "{name}: {err}");
    }
    let out = run(bin().arg("replay").arg(dir.path().join("missing.jsonl")));
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("cannot read replay file"));
    let out = run(bin().args(["replay", "--now", "yesterday"]).arg(write(
        dir.path(),
        "ok",
        b"{\"caller\": \"hi\"}",
    )));
    assert!(text(&out.stderr).contains("--now"));
}

#[test]
fn replay_odd_caller_text_keeps_the_call_going() {
    let dir = tempfile::tempdir().unwrap();
    let long = "my AC is broken ".repeat(640); // ~10 KB
    let lines = [
        serde_json::json!({"caller": ""}),
        serde_json::json!({"caller": "   "}),
        serde_json::json!({"caller": long}),
        serde_json::json!({"caller": "no \u{0007}\u{0000} gas \u{001b}[31m smell 🔥😀"}),
        serde_json::json!({"caller": "७८७०१ 🏠 zip seven eight seven zero one"}),
        serde_json::json!({"caller": "ok"}),
    ];
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let p = write(dir.path(), "odd.jsonl", body.as_bytes());
    let r = replay_json(&p, &[]);
    let es = entries(&r);
    // Blank lines are not turns; everything else was heard and answered.
    let callers = es.iter().filter(|e| e["role"] == "user").count();
    assert_eq!(callers, 4);
    assert!(es
        .iter()
        .any(|e| e["content"].as_str().is_some_and(|c| c.contains('🔥'))));
    assert_eq!(r["session"]["zip_code"], "78701");
    assert_eq!(r["final_state"], "discovery");
}

/// Issue 27, point 1: caller text with terminal escapes, control
/// characters and bidi overrides reaches the terminal as printable text.
#[test]
fn replay_prints_a_caller_line_with_escapes_safely() {
    let dir = tempfile::tempdir().unwrap();
    let line =
        "my \u{1b}[2J\u{1b}[31mAC\u{7} \u{202E}stopped\u{202C} cooling\u{0} \u{9b}1m last night";
    let body = format!("{}\n", serde_json::json!({"caller": line}));
    let p = write(dir.path(), "escapes.jsonl", body.as_bytes());
    let out = run(bin()
        .arg("replay")
        .arg(&p)
        .args(["--now", "2026-02-19T10:15:00-06:00"])
        .env("NO_COLOR", "1")
        // Its log at its most talkative.
        .env("CALLLOCK_LOG", "debug"));
    let shown = text(&out.stdout);
    let log = text(&out.stderr);
    assert!(out.status.success(), "{shown}\n{log}");
    assert!(shown.contains("stopped cooling"), "{shown}");
    assert!(log.contains(" DEBUG "), "{log}");
    let unsafe_char = |c: char| {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
    };
    assert!(!shown.chars().any(unsafe_char), "printed {shown:?}");
    assert!(!log.chars().any(unsafe_char), "logged {log:?}");
    // And in the JSON report, the caller's line as kept.
    let r = replay_json(&p, &[]);
    let caller = entries(&r)
        .into_iter()
        .find(|e| e["role"] == "user")
        .expect("the caller line");
    let kept = caller["content"].as_str().unwrap();
    assert_eq!(kept, "my [2J [31mAC stopped cooling 1m last night");
}

#[test]
fn replay_silence_gets_are_you_still_there_then_goodbye() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "silent.jsonl",
        b"{\"caller\": \"my AC is broken\"}\n{\"silence\": 15}\n{\"caller\": \"sorry, no, nothing like that\"}\n{\"silence\": 120}\n",
    );
    let r = replay_json(&p, &[]);
    let es = entries(&r);
    let said = |line: &str| es.iter().filter(|e| e["content"] == line).count();
    // One prompt in the first silence; two, then the goodbye, in the long
    // one — the second worded differently, never the same line twice in a
    // row.
    assert_eq!(said("Are you still there?"), 2, "{es:?}");
    assert_eq!(
        said("I can't hear anything on the line. If you're still there, please say something."),
        1,
        "{es:?}"
    );
    let last = es.last().unwrap();
    assert!(
        last["content"].as_str().unwrap().contains("Goodbye"),
        "{last}"
    );
    assert_eq!(r["ended_by"], "agent");
    assert_eq!(r["final_state"], "service_area");
    // The record says the caller stopped answering, not that they hung up.
    assert_eq!(r["end_call_reason"], "no_response");
}

#[test]
fn demo_then_calls_list_and_show() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("nested/dir/calllock.db");
    let out = run(bin().arg("--db").arg(&db).args(["demo", "--brief"]));
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(
        stdout.contains("all demo calls ended as expected"),
        "{stdout}"
    );
    assert_eq!(stdout.matches("✓ expected final state").count(), 5);
    assert!(stdout.contains("appointment row(s)"));
    assert!(stdout.contains("sales lead(s)"));

    let out = run(bin().arg("--db").arg(&db).arg("calls"));
    let list = text(&out.stdout);
    assert!(out.status.success());
    for state in ["confirm", "safety_exit", "callback", "urgency_callback"] {
        assert!(list.contains(state), "{list}");
    }
    let id = list
        .lines()
        .find(|l| l.contains("demo-booking"))
        .and_then(|l| l.split_whitespace().next())
        .unwrap()
        .to_string();
    let out = run(bin().arg("--db").arg(&db).args(["calls", "show", &id]));
    let show = text(&out.stdout);
    assert!(out.status.success());
    assert!(show.contains("end_call_reason completed"), "{show}");
    assert!(show.contains("Caller: Yes, that's right"), "{show}");
    let out = run(bin()
        .arg("--db")
        .arg(&db)
        .args(["calls", "show", &id, "--json"]));
    let rec: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rec["job_payload"]["booking_status"], "confirmed");
    assert_eq!(rec["job_payload"]["is_ai_booked"], true);

    let out = run(bin().arg("--db").arg(&db).args(["calls", "show", "nope"]));
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("no call with id"));
    let out = run(bin().arg("--db").arg(&db).args(["calls", "--since", "2x"]));
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("unit"));
    let out = run(bin().arg("--db").arg(&db).args(["calls", "--since", "1h"]));
    assert!(text(&out.stdout).contains("demo-booking"));
}

#[test]
fn voice_is_a_phone_call_over_loopback() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("voice.db");
    let mut call = Running::spawn(
        bin()
            .arg("--db")
            .arg(&db)
            .arg("voice")
            // The offline codec (words print as they play); local speech has
            // its own tests (serve_local_speech.rs).
            .env("CALLLOCK_LOCAL_SPEECH", "off")
            .env("CALLLOCK_LLM_LATENCY_S", "0.1")
            .env("CALLLOCK_SPEECH_CHARS_PER_S", "100"),
    );
    // The greeting has played to its end (its line ends when the agent
    // goes quiet): the caller answers it, not talks over it.
    call.wait_for("the whole greeting", |out| {
        has_whole_line(out, "agent:  Thanks for calling")
    });
    call.type_line("my AC is broken");
    // Speech end + STT endpointing + lookup + 1.5 s debounce + reply.
    call.wait_for("the safety question", |out| {
        has_whole_line(out, "Quick safety check")
    });
    let out = call.hang_up(); // Ctrl-D: the caller hangs up
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    // Served and dialled over loopback: the agent's words as they played
    // at the phone, then the server's record.
    assert!(stdout.contains("agent:  Thanks for calling"), "{stdout}");
    assert!(stdout.contains("caller: my AC is broken"), "{stdout}");
    assert!(stdout.contains("Quick safety check"), "{stdout}");
    assert!(stderr.contains("ended: caller hung up"), "{stderr}");
    assert!(stdout.contains("(state safety"), "{stdout}\n{stderr}");
}

#[test]
fn chat_books_a_call_typed_by_a_person() {
    let dir = tempfile::tempdir().unwrap();
    let (stdout, _) = chat_typed(
        &dir.path().join("chat.db"),
        &[
            "my AC stopped cooling",
            "",
            "no, nothing like that",
            "78745",
            "My name is Dana Fields",
            "It's 4329 Franklin Street",
            "no that's all",
            "as soon as possible",
            "yes that's right",
            "thanks, bye",
        ],
        &[],
    );
    assert!(stdout.contains("Agent [welcome] (greeting)"), "{stdout}");
    assert!(stdout.contains("[confirm]"), "{stdout}");
    assert!(
        stdout.contains("final state confirm, end_call_reason completed, booking confirmed"),
        "{stdout}"
    );
    assert!(stdout.contains("agent hung up"), "{stdout}");
}

/// Type `lines` into `calllock chat` as a person would (each once the
/// agent has answered the one before), wait for the agent to hang up, and
/// return stdout and stderr. Panics if the process fails.
fn chat_typed(db: &Path, lines: &[&str], env: &[(&str, &str)]) -> (String, String) {
    chat_typed_from("+15125559876", db, lines, env)
}

/// [`chat_typed`] from a given caller ID (the demo customers have one).
fn chat_typed_from(
    caller_id: &str,
    db: &Path,
    lines: &[&str],
    env: &[(&str, &str)],
) -> (String, String) {
    let mut chat = Running::spawn(
        bin()
            .env_remove("CALLLOCK_LOG")
            .arg("--db")
            .arg(db)
            .args(["chat", "--caller-id", caller_id])
            // Speed up the clock-bound parts; the timers are still real.
            .env("CALLLOCK_BUFFER_DEBOUNCE_S", "0.1")
            .env("CALLLOCK_LLM_LATENCY_S", "0")
            .env("CALLLOCK_TOOL_LATENCY_S", "0")
            .env("CALLLOCK_SPEECH_CHARS_PER_S", "5000")
            .envs(env.iter().copied()),
    );
    for l in lines {
        chat.say(l);
    }
    // Every call here ends with the agent hanging up: after its goodbye
    // (said, then a 0.5 s grace), or once the line stays quiet after the
    // safety script (4 s); chat then exits by itself.
    chat.wait_for("the agent to hang up", |out| out.contains("agent hung up"));
    let out = chat.hang_up();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    (stdout, stderr)
}

/// The one `chat` call saved in `db`: its id (from `calls`) and its record
/// (`calls show --json`).
fn the_chat_call(db: &Path) -> (String, Value) {
    let list = text(&run(bin().arg("--db").arg(db).arg("calls")).stdout);
    let id = list
        .lines()
        .find(|l| l.contains("chat-"))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("the call is listed: {list}"))
        .to_string();
    let out = run(bin()
        .arg("--db")
        .arg(db)
        .args(["calls", "show", &id, "--json"]));
    let rec: Value = serde_json::from_slice(&out.stdout).unwrap();
    (id, rec)
}

/// Issue 9, item 4: the read-back names the whole street address — suffix
/// and apartment — as the caller said it, and the booking carries it.
#[test]
fn chat_reads_back_the_whole_street_address() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("chat.db");
    let (stdout, _) = chat_typed(
        &db,
        &[
            "my AC stopped cooling",
            "",
            "no, nothing like that",
            "78745",
            "My name is Dana Fields",
            "I'm at 1207 Oak Hollow Drive, apartment 4B",
            "no that's all",
            "as soon as possible",
            "yes that's right",
            "thanks, bye",
        ],
        &[],
    );
    let read_back = stdout
        .lines()
        .find(|l| l.contains("Let me make sure I have this right"))
        .unwrap_or_else(|| panic!("no read-back line:\n{stdout}"));
    assert!(
        read_back.contains("at 1207 Oak Hollow Drive, Apartment 4B"),
        "{read_back}"
    );
    assert!(
        stdout.contains("final state confirm, end_call_reason completed, booking confirmed"),
        "{stdout}"
    );
    let (id, rec) = the_chat_call(&db);
    assert_eq!(
        rec["session"]["service_address"], "1207 Oak Hollow Drive, Apartment 4B",
        "the saved call keeps the address: {rec}"
    );
    // `calls show` tells the owner where and when (issue 15, item 7).
    let show = text(&run(bin().arg("--db").arg(&db).args(["calls", "show", &id])).stdout);
    assert!(
        show.contains("address 1207 Oak Hollow Drive, Apartment 4B  ZIP 78745"),
        "{show}"
    );
    assert!(show.contains("appointment "), "{show}");
}

/// Issue 15, item 7: a caller who cancels an appointment is not filed as
/// a new lead nor as a hang-up, and `calls show` says which appointment.
#[test]
fn a_cancellation_is_recorded_as_a_cancellation() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("chat.db");
    // +15125550100 is the demo customer with an upcoming appointment.
    let (stdout, _) = chat_typed_from(
        "+15125550100",
        &db,
        &[
            "I need to cancel my appointment",
            "cancel it please",
            "thanks, bye",
        ],
        &[],
    );
    assert!(
        stdout.contains("end_call_reason appointment_cancelled"),
        "{stdout}"
    );
    let (id, rec) = the_chat_call(&db);
    assert_eq!(rec["end_call_reason"], "appointment_cancelled", "{rec}");
    let job = &rec["job_payload"];
    assert_eq!(job["primary_intent"], "existing_appointment", "{job}");
    assert_eq!(job["appointment_action"], "cancel", "{job}");
    let show = text(&run(bin().arg("--db").arg(&db).args(["calls", "show", &id])).stdout);
    let when = job["appointment_time"].as_str().unwrap_or_default();
    assert!(!when.is_empty(), "{job}");
    assert!(
        show.contains(&format!("appointment {when} (cancelled)")),
        "{show}"
    );
}

#[test]
fn bad_config_lists_every_problem() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write(
        dir.path(),
        "c.toml",
        b"[business]\ntimezone = \"Mars/Base\"\nopen_hour = 25\nbusiness_days = [\"funday\"]\n",
    );
    let out = run(bin().arg("--config").arg(&cfg).args(["config"]));
    assert!(!out.status.success());
    let err = text(&out.stderr);
    for want in ["Mars/Base", "open_hour", "funday"] {
        assert!(err.contains(want), "{err}");
    }
    let out = run(bin().args(["config", "--example"]));
    assert!(text(&out.stdout).contains("[business]"));
}

/// Issue 9, item 5: the post-call transcript dump (SPEC §7.9) reaches the
/// log of a command run at a terminal whatever `CALLLOCK_LOG` says, with
/// call_sid, phone and final_state in its first chunk (a server withholds
/// it: `logging::Transcripts`).
#[test]
fn chat_always_logs_the_transcript_dump() {
    let dir = tempfile::tempdir().unwrap();
    for log in [None, Some("off"), Some("error")] {
        let env: Vec<(&str, &str)> = log.map(|l| ("CALLLOCK_LOG", l)).into_iter().collect();
        let db = dir
            .path()
            .join(format!("dump-{}.db", log.unwrap_or("unset")));
        let (stdout, stderr) = chat_typed(
            &db,
            &["my AC stopped cooling", "", "I smell gas", "okay bye"],
            &env,
        );
        let lines: Vec<String> = stderr.lines().map(String::from).collect();
        assert!(
            lines.iter().any(|l| l.contains("TRANSCRIPT_DUMP|1/")),
            "CALLLOCK_LOG={log:?}: no dump on stderr:\n{stderr}"
        );
        // Read back the way an operator's log reader does (SPEC §7.9).
        let dumps = agent::transcript::parse_transcript_dump_lines(&lines, None);
        assert_eq!(dumps.len(), 1, "one call, one dump: {stderr}");
        let dump = &dumps[0];
        assert!(
            dump["call_sid"]
                .as_str()
                .is_some_and(|s| s.starts_with("chat-")),
            "{dump}"
        );
        assert!(dump["phone"].is_string(), "{dump}");
        assert_eq!(dump["final_state"], "safety_exit", "{dump}");
        assert!(
            dump["entries"].as_array().is_some_and(|e| !e.is_empty()),
            "{dump}"
        );
        assert!(
            stdout.contains(dump["call_sid"].as_str().unwrap()),
            "{stdout}"
        );
    }
}

/// Issue 15, item 9: `calllock config` prints every section readably (as
/// TOML a person could paste into a config file), never a secret.
#[test]
fn config_prints_every_section_without_secrets() {
    let out = run(bin()
        .env("OPENAI_API_KEY", "sk-very-secret")
        .env("DASHBOARD_WEBHOOK_SECRET", "whsec-very-secret")
        .env("DEEPGRAM_API_KEY", "dg-very-secret")
        .env("INWORLD_API_KEY", "iw-very-secret")
        .env(
            "CALLLOCK_DATABASE",
            "postgres://calllock:pg-very-secret@db/calllock",
        )
        .arg("config"));
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(!stdout.contains("very-secret"), "{stdout}");
    assert!(!stdout.contains("Section {"), "no debug structs: {stdout}");
    let v: toml::Value = toml::from_str(&stdout).expect("the output is TOML");
    for section in [
        "business",
        "engine",
        "sim",
        "llm",
        "backend",
        "dashboard",
        "outbox",
        "serve",
        "twilio",
        "deepgram",
        "inworld",
        "tts",
    ] {
        assert!(
            v.get(section).is_some_and(toml::Value::is_table),
            "[{section}] missing"
        );
    }
    assert_eq!(v["llm"]["api_key"].as_str(), Some("<set>"));
    assert_eq!(v["dashboard"]["webhook_secret"].as_str(), Some("<set>"));
    assert_eq!(v["deepgram"]["api_key"].as_str(), Some("<set>"));
    assert_eq!(v["inworld"]["api_key"].as_str(), Some("<set>"));
    assert_eq!(
        v["database"].as_str(),
        Some("postgres://calllock:<set>@db/calllock")
    );
}

/// Issue 15, item 9: one command lists what the business owes its callers.
#[test]
fn agenda_lists_owed_callbacks_appointments_and_leads() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("agenda.db");
    let out = run(bin().arg("--db").arg(&db).args(["demo", "--brief"]));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = run(bin().arg("--db").arg(&db).arg("agenda"));
    let shown = text(&out.stdout);
    assert!(out.status.success(), "{shown}");
    for want in [
        "open callbacks (",
        "upcoming appointments (",
        "sales leads (1)",
        "estimate",
        "Dana Fields",
    ] {
        assert!(shown.contains(want), "{want:?} missing:\n{shown}");
    }
    let out = run(bin().arg("--db").arg(&db).args(["agenda", "--json"]));
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    for list in ["callbacks", "appointments", "leads"] {
        assert!(
            v[list].as_array().is_some_and(|a| !a.is_empty()),
            "{list}: {v}"
        );
    }
    assert!(v["callbacks"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["status"] == "open"));
    // Issue 23: the demo's gas call is the day's emergency, listed first.
    assert!(shown.contains("emergencies today (1):"), "{shown}");
    let line = shown
        .lines()
        .find(|l| l.contains("EMERGENCY"))
        .unwrap_or_else(|| panic!("no emergency line:\n{shown}"));
    assert!(line.contains("512-555-7002"), "{line}");
    assert!(
        shown.find("EMERGENCY") < shown.find("open callbacks ("),
        "{shown}"
    );
    let e = &v["emergencies"][0];
    assert_eq!(e["urgency"], "emergency", "{v}");
    assert_eq!(e["phone"], "+15125557002", "{v}");
    assert!(
        e["problem"].as_str().is_some_and(|p| !p.is_empty()),
        "the emergency names what the caller reported: {e}"
    );
}

/// Issue 23: a call that ends in the safety script is filed as the
/// emergency it was — urgency `emergency`, the hazard as the problem —
/// and `calllock agenda` lists it for the day with the number to call.
/// (The address the caller gives after the script is checked by the
/// replay corpus, `36-gas-then-address.jsonl`, and the agenda's address
/// by `record`'s unit tests.)
#[test]
fn an_emergency_is_recorded_and_on_the_agenda() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("chat.db");
    let (stdout, _) = chat_typed(&db, &["I smell gas in the kitchen"], &[]);
    assert!(
        stdout.contains("end_call_reason safety_emergency"),
        "{stdout}"
    );
    let (id, rec) = the_chat_call(&db);
    let job = &rec["job_payload"];
    assert_eq!(job["urgency"], "emergency", "{job}");
    assert_eq!(job["end_call_reason"], "safety_emergency", "{job}");
    assert_eq!(
        job["issue_description"], "I smell gas in the kitchen",
        "{job}"
    );
    assert_eq!(rec["call_payload"]["urgency_tier"], "emergency", "{rec}");
    // The saved record's own columns say so too (`calls show`).
    let show = text(&run(bin().arg("--db").arg(&db).args(["calls", "show", &id])).stdout);
    assert!(show.contains("urgency emergency"), "{show}");
    assert!(
        show.contains("problem I smell gas in the kitchen"),
        "{show}"
    );

    let out = run(bin().arg("--db").arg(&db).arg("agenda"));
    let shown = text(&out.stdout);
    assert!(out.status.success(), "{shown}");
    assert!(shown.contains("emergencies today (1):"), "{shown}");
    let line = shown
        .lines()
        .find(|l| l.contains("EMERGENCY"))
        .unwrap_or_else(|| panic!("no emergency line:\n{shown}"));
    for want in ["512-555-9876", "I smell gas in the kitchen"] {
        assert!(line.contains(want), "{want:?} missing: {line}");
    }
    let out = run(bin().arg("--db").arg(&db).args(["agenda", "--json"]));
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let e = &v["emergencies"][0];
    assert_eq!(e["phone"], "+15125559876", "{v}");
    assert_eq!(e["urgency"], "emergency", "{v}");
    assert_eq!(e["problem"], "I smell gas in the kitchen", "{v}");
    assert_eq!(e["call_id"], id.as_str(), "{v}");
}

/// The demo appointment of `db` as `agenda --json` lists it.
fn jonas_on_the_agenda(db: &Path) -> Value {
    let out = run(bin().arg("--db").arg(db).args(["agenda", "--json"]));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    v["appointments"]
        .as_array()
        .and_then(|a| a.iter().find(|a| a["uid"] == "apt_demo_jonas").cloned())
        .unwrap_or_else(|| panic!("the demo appointment is listed: {v}"))
}

/// Issue 23: every `chat` seeds the demo data, but only into a new
/// database: a reschedule made by one call is still there after the next
/// call and `calllock seed`, and `agenda` shows the moved appointment.
#[test]
fn a_reschedule_survives_the_next_call() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("chat.db");
    // +15125550100 is the demo customer with an upcoming appointment
    // (seeded by this first call: two days ahead at 10:00).
    let (stdout, _) = chat_typed_from(
        "+15125550100",
        &db,
        &[
            "Hi, I need to reschedule my appointment",
            "Can we move it to Friday afternoon?",
            "Perfect, thank you, bye",
        ],
        &[],
    );
    assert!(
        stdout.contains("end_call_reason appointment_rescheduled"),
        "{stdout}"
    );
    let moved = jonas_on_the_agenda(&db);
    let moved_at = moved["start_at"].as_str().unwrap().to_string();
    assert!(!moved_at.contains("T10:00:00"), "moved: {moved}");
    assert_eq!(moved["status"], "booked");

    // The next call (another caller) seeds again: nothing changes.
    chat_typed(&db, &["sorry, wrong number, bye"], &[]);
    let after = jonas_on_the_agenda(&db);
    assert_eq!(after["start_at"], moved_at.as_str(), "{after}");
    let shown = text(&run(bin().arg("--db").arg(&db).arg("agenda")).stdout);
    assert!(shown.contains("Jonas Weber"), "{shown}");

    // So does `calllock seed`, and it says why.
    let out = run(bin().arg("--db").arg(&db).arg("seed"));
    let said = text(&out.stdout);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("already holds the demo customers"), "{said}");
    assert_eq!(jonas_on_the_agenda(&db)["start_at"], moved_at.as_str());

    // A new database still gets them.
    let fresh = dir.path().join("fresh.db");
    let out = run(bin().arg("--db").arg(&fresh).arg("seed"));
    assert!(text(&out.stdout).contains("demo customers loaded into"));
    assert_eq!(jonas_on_the_agenda(&fresh)["status"], "booked");
}

#[test]
fn web_serves_the_dashboard_on_loopback_behind_sign_in() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let mut child = bin()
        .args(["web", "--port", "0"])
        .env("CALLLOCK_DATABASE", dir.path().join("calls.db"))
        .env("CALLLOCK_LOCAL_SPEECH", "off")
        .env_remove("PORT")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut lines = Vec::new();
    for _ in 0..4 {
        let mut l = String::new();
        out.read_line(&mut l).unwrap();
        lines.push(l);
    }
    let addr = lines[0]
        .trim()
        .strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("{lines:?}"))
        .to_string();
    assert!(addr.starts_with("127.0.0.1:"), "loopback only: {addr}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("dashboard: http://127.0.0.1:")),
        "{lines:?}"
    );
    // A plain HTTP/1.0 request: the dashboard sends a visitor to sign in.
    let get = |path: &str| {
        let mut s = std::net::TcpStream::connect(&addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
        let mut answer = String::new();
        std::io::Read::read_to_string(&mut s, &mut answer).unwrap();
        answer
    };
    let home = get("/");
    assert!(home.starts_with("HTTP/1.0 303"), "{home}");
    assert!(home.to_lowercase().contains("location: /login"), "{home}");
    let login = get("/login");
    assert!(login.starts_with("HTTP/1.0 200"), "{login}");
    assert!(login.contains("Operator password"), "{login}");
    let _ = child.kill();
    let _ = child.wait();
}

/// Issue 22, finding 8 (the terminal's share): `calls`, `calls show` and
/// `agenda` print times on the business's clock, not UTC — a call at
/// 9:04 PM in Austin is on its own day, not the next one.
#[test]
fn the_terminal_shows_calls_on_the_business_clock() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("tz.db");
    // 03:04 UTC on Nov 26 is 9:04 PM CST on Nov 25 (America/Chicago,
    // the default business's zone).
    let at = chrono::DateTime::parse_from_rfc3339("2026-11-26T03:04:00Z")
        .unwrap()
        .with_timezone(&chrono::Utc);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let store = store::Store::open(&db).await.unwrap();
        store
            .save_call(&store::CallRecord {
                call_id: "CA_evening".into(),
                phone: "+15125550111".into(),
                started_at: at,
                ended_at: Some(at + chrono::Duration::seconds(90)),
                final_state: "callback".into(),
                end_call_reason: "callback_later".into(),
                booking_status: String::new(),
                urgency: "Routine".into(),
                priority_color: "green".into(),
                revenue_tier: "standard_repair".into(),
                customer_name: "Dana".into(),
                problem: "no heat".into(),
                record: serde_json::json!({}),
                transcript: serde_json::json!([]),
            })
            .await
            .unwrap();
        store.close().await;
    });
    let out = run(bin().arg("--db").arg(&db).arg("calls"));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let list = text(&out.stdout);
    assert!(list.contains("started (America/Chicago)"), "{list}");
    assert!(list.contains("2026-11-25 21:04:00"), "{list}");
    assert!(!list.contains("2026-11-26 03:04"), "{list}");
    let out = run(bin()
        .arg("--db")
        .arg(&db)
        .args(["calls", "show", "CA_evening"]));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    assert!(shown.contains("started 2026-11-25 21:04:00 CST"), "{shown}");
    assert!(shown.contains("ended 21:05:30"), "{shown}");
}

/// A record stored with raw caller text (before caller lines were made
/// printable on the way in, or a database edited by hand) still prints
/// safely: `calls`, `calls show`, `transcript` and `agenda` send no
/// control character, escape or bidi override to the terminal.
#[test]
fn a_raw_stored_record_prints_safely_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("raw.db");
    let raw = "\u{1b}[2J\u{1b}[31mgas\u{7} in the \u{202E}kitchen\u{202C}\u{9b}0m\u{0}";
    let now = chrono::Utc::now();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let store = store::Store::open(&db).await.unwrap();
        store
            .save_call(&store::CallRecord {
                call_id: "CA_raw".into(),
                phone: "+15125550199".into(),
                started_at: now,
                ended_at: Some(now + chrono::Duration::seconds(30)),
                final_state: "safety_exit".into(),
                end_call_reason: "safety_emergency".into(),
                booking_status: String::new(),
                urgency: "emergency".into(),
                priority_color: "red".into(),
                revenue_tier: "standard_repair".into(),
                customer_name: format!("Dana{raw}"),
                problem: raw.into(),
                record: serde_json::json!({}),
                transcript: serde_json::json!([
                    {"t": 1.0, "state": "safety", "role": "user", "content": raw},
                    {"t": 2.0, "state": "safety", "role": "agent", "content": "Please leave the house now."}
                ]),
            })
            .await
            .unwrap();
        // Its event log, as a journal before the fix kept it.
        let t0 = now.timestamp() as f64;
        let events = [
            ("agent", serde_json::json!({"text": "Thanks for calling.", "state": "welcome"})),
            ("caller", serde_json::json!({"text": raw, "state": "welcome"})),
        ];
        for (seq, (kind, data)) in events.iter().enumerate() {
            store
                .append_event("CA_raw", seq as i64 + 1, t0 + seq as f64, kind, data)
                .await
                .unwrap();
        }
        store.close().await;
    });
    let unsafe_char = |c: char| {
        (c.is_control() && c != '\n')
            || matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
    };
    for args in [
        vec!["calls"],
        vec!["calls", "show", "CA_raw"],
        vec!["transcript", "CA_raw"],
        vec!["agenda"],
    ] {
        let out = run(bin().arg("--db").arg(&db).args(&args));
        let shown = text(&out.stdout);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        assert!(shown.contains("gas"), "{args:?} shows the words: {shown}");
        let bad: Vec<char> = shown.chars().filter(|c| unsafe_char(*c)).collect();
        assert!(bad.is_empty(), "{args:?} printed {bad:?}: {shown:?}");
    }
}
