//! The replay corpus (`examples/replays/corpus/`): calls written the way
//! people really call — questions, corrections, hazards, returning
//! callers, speech-to-text damage — each with its expected outcome in a
//! `# expect: {…}` line (`job.<key>` names a key of the dashboard job;
//! `# caller-id: …` where it matters). Every call
//! runs through the real `calllock replay` binary and must end as expected,
//! never say an agent line twice in a row, never loop (no line three times,
//! no turn-limit hand-off) and leave a record that matches what happened.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/replays/corpus")
}

struct Call {
    path: PathBuf,
    caller_id: Option<String>,
    expect: serde_json::Map<String, Value>,
}

fn read_call(path: &Path) -> Call {
    let text = std::fs::read_to_string(path).unwrap();
    let mut caller_id = None;
    let mut expect = None;
    for line in text.lines() {
        if let Some(id) = line.strip_prefix("# caller-id:") {
            caller_id = Some(id.trim().to_string());
        }
        if let Some(e) = line.strip_prefix("# expect:") {
            let v: Value = serde_json::from_str(e.trim())
                .unwrap_or_else(|err| panic!("{}: bad expect line: {err}", path.display()));
            expect = v.as_object().cloned();
        }
    }
    Call {
        path: path.to_path_buf(),
        caller_id,
        expect: expect.unwrap_or_else(|| panic!("{}: no `# expect:` line", path.display())),
    }
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

/// What is wrong with one replayed call (empty = nothing).
fn problems(call: &Call, r: &Value) -> Vec<String> {
    let mut bad = Vec::new();
    for (key, want) in &call.expect {
        // `job.<key>`: the job the dashboard receives; otherwise the
        // record's own fields, then the session's.
        let got = match key.strip_prefix("job.") {
            Some(k) => &r["job_payload"][k],
            None => r.get(key).unwrap_or(&r["session"][key]),
        };
        if got != want {
            bad.push(format!("{key}: expected {want}, got {got}"));
        }
    }
    let lines: Vec<&str> = r["transcript"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["role"] == "agent")
        .filter_map(|e| e["content"].as_str())
        .collect();
    for pair in lines.windows(2) {
        if pair[0] == pair[1] {
            bad.push(format!("said twice in a row: {:?}", pair[0]));
        }
    }
    for l in &lines {
        if lines.iter().filter(|m| *m == l).count() >= 3 {
            bad.push(format!("a loop — said three times: {l:?}"));
            break;
        }
    }
    // The record matches what happened.
    let (state, reason, booking) = (
        r["final_state"].as_str().unwrap_or(""),
        r["end_call_reason"].as_str().unwrap_or(""),
        r["booking_status"].as_str().unwrap_or(""),
    );
    let consistent = match (state, booking) {
        ("safety_exit", _) => reason == "safety_emergency",
        (_, "confirmed") => reason == "completed",
        _ => reason != "completed",
    };
    if !consistent {
        bad.push(format!("record: {state} / {booking} saved as {reason}"));
    }
    bad
}

#[test]
fn every_corpus_call_ends_as_expected() {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    paths.sort();
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
    let call = Call {
        path: PathBuf::new(),
        caller_id: None,
        expect: serde_json::json!({"final_state": "confirm"})
            .as_object()
            .cloned()
            .unwrap(),
    };
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
