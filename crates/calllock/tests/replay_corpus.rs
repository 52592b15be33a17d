//! The replay corpus (`examples/replays/corpus/`): calls written the way
//! people really call — questions, corrections, hazards, returning
//! callers, speech-to-text damage — each with its expected outcome in a
//! `# expect: {…}` line (`job.<key>` names a key of the dashboard job;
//! `# caller-id: …` where it matters). Every call
//! runs through the real `calllock replay` binary and must end as expected,
//! never say an agent line twice in a row, never loop (no line three times,
//! no turn-limit hand-off) and leave a record that matches what happened.

#[path = "support/replay_checks.rs"]
mod replay_checks;

use replay_checks::{call_files, problems, read_call, Call};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

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
