//! Replay-corpus calls and the checks of their replays, shared by
//! `replay_corpus.rs` (the hand-written corpus) and `generated_corpus.rs`
//! (the corpus `scripts/gen-corpus` writes).
//!
//! A call file is a replay script (`crates/calllock/src/cli/script.rs`) whose
//! comment lines say what must happen:
//! - `# expect: {…}` — keys of the replay report (`job.<key>`: the job the
//!   dashboard receives; otherwise the report's own field, then the
//!   session's) and their values;
//! - `# expect-contains: {"key": "text" | ["any", "of"]}` — the value
//!   contains the text (case-insensitive);
//! - `# expect-reply: [[N, "text"], …]` — the agent's reply to caller line
//!   N (1-based) contains the text (case-insensitive);
//! - `# expect-booked-after: N` — the visit is booked only after caller
//!   line N (a question or a correction at the read-back is no yes);
//! - `# hazard: current` — the caller reports a hazard now (D-22);
//! - `# closing: true` — the call ends on a closing line, not a question;
//! - `# caller-id: +1…` — the number the caller calls from.
#![allow(dead_code)]

use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// One call of a corpus.
pub struct Call {
    pub path: PathBuf,
    pub caller_id: Option<String>,
    pub expect: Map<String, Value>,
    pub contains: Map<String, Value>,
    pub replies: Vec<(usize, String)>,
    pub booked_after: Option<usize>,
    pub hazard: bool,
    pub closing: bool,
}

impl Call {
    /// A call that expects only `expect` (tests of the checks).
    pub fn expecting(expect: Value) -> Call {
        Call {
            path: PathBuf::new(),
            caller_id: None,
            expect: expect.as_object().cloned().unwrap_or_default(),
            contains: Map::new(),
            replies: Vec::new(),
            booked_after: None,
            hazard: false,
            closing: false,
        }
    }
}

/// The `.jsonl` files of a folder, sorted by name.
pub fn call_files(dir: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    paths.sort();
    paths
}

fn json_line(path: &Path, what: &str, text: &str) -> Value {
    serde_json::from_str(text.trim())
        .unwrap_or_else(|err| panic!("{}: bad {what} line: {err}", path.display()))
}

/// Read a call file's header lines.
pub fn read_call(path: &Path) -> Call {
    let text = std::fs::read_to_string(path).unwrap();
    let mut call = Call::expecting(Value::Null);
    call.path = path.to_path_buf();
    let mut expect = None;
    for line in text.lines() {
        if let Some(id) = line.strip_prefix("# caller-id:") {
            call.caller_id = Some(id.trim().to_string());
        } else if let Some(e) = line.strip_prefix("# expect:") {
            expect = json_line(path, "expect", e).as_object().cloned();
        } else if let Some(e) = line.strip_prefix("# expect-contains:") {
            call.contains = json_line(path, "expect-contains", e)
                .as_object()
                .cloned()
                .unwrap_or_default();
        } else if let Some(e) = line.strip_prefix("# expect-reply:") {
            let v = json_line(path, "expect-reply", e);
            for pair in v.as_array().into_iter().flatten() {
                let (Some(n), Some(t)) = (pair[0].as_u64(), pair[1].as_str()) else {
                    panic!("{}: expect-reply wants [[N, \"text\"], …]", path.display());
                };
                call.replies.push((n as usize, t.to_string()));
            }
        } else if let Some(n) = line.strip_prefix("# expect-booked-after:") {
            call.booked_after = Some(n.trim().parse().unwrap_or_else(|e| {
                panic!(
                    "{}: expect-booked-after wants a line number: {e}",
                    path.display()
                )
            }));
        } else if let Some(h) = line.strip_prefix("# hazard:") {
            call.hazard = !h.trim().is_empty() && h.trim() != "no";
        } else if let Some(c) = line.strip_prefix("# closing:") {
            call.closing = c.trim() == "true";
        }
    }
    call.expect = expect.unwrap_or_else(|| panic!("{}: no `# expect:` line", path.display()));
    call
}

/// The report's value for an expectation key.
fn value_of<'a>(r: &'a Value, key: &str) -> &'a Value {
    match key.strip_prefix("job.") {
        Some(k) => &r["job_payload"][k],
        None => r.get(key).unwrap_or(&r["session"][key]),
    }
}

/// Names and addresses are compared as words: case, punctuation and
/// spacing are not what SPEC/DECISIONS pin ("600 Oak Hollow Dr." is
/// "600 Oak Hollow Dr").
fn as_words(s: &str) -> String {
    s.to_lowercase()
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { ' ' })
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

fn same(key: &str, want: &Value, got: &Value) -> bool {
    let wordy = [
        "service_address",
        "customer_name",
        "job.customer_address",
        "job.customer_name",
    ];
    match (want.as_str(), got.as_str()) {
        (Some(w), Some(g)) if wordy.contains(&key) => as_words(w) == as_words(g),
        _ => want == got,
    }
}

fn lower(s: &str) -> String {
    s.to_lowercase().replace(['\u{2019}', '\u{2018}'], "'")
}

/// The agent's lines, in order.
pub fn agent_lines(r: &Value) -> Vec<&str> {
    r["transcript"]
        .as_array()
        .map(|a| a.as_slice())
        .unwrap_or_default()
        .iter()
        .filter(|e| e["role"] == "agent")
        .filter_map(|e| e["content"].as_str())
        .collect()
}

/// What is wrong with one replayed call (empty = nothing): the
/// expectations, no agent line twice in a row, no loop (a line three
/// times) and a record that matches what happened.
pub fn problems(call: &Call, r: &Value) -> Vec<String> {
    let mut bad = Vec::new();
    for (key, want) in &call.expect {
        let got = value_of(r, key);
        if !same(key, want, got) {
            bad.push(format!("{key}: expected {want}, got {got}"));
        }
    }
    let lines = agent_lines(r);
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

/// The questions of an agent line: its sentences that end in '?'.
fn questions(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in line.chars() {
        cur.push(c);
        if matches!(c, '.' | '!' | '?' | '—') {
            let s = cur.trim().trim_start_matches(['—', '-', ' ']).to_string();
            if c == '?' && !s.is_empty() {
                out.push(lower(&s));
            }
            cur.clear();
        }
    }
    out
}

/// The checks beyond [`problems`] (the generated corpus): no question asked
/// more than 3 times, no turn-limit hand-off (`limit_lines`: the canned
/// turn-limit lines), a current hazard ends in the safety script (then
/// nothing but the instruction again), and the
/// file's `expect-contains`, `expect-reply` and `closing` lines.
pub fn more_problems(call: &Call, r: &Value, limit_lines: &[String]) -> Vec<String> {
    let mut bad = Vec::new();
    let lines = agent_lines(r);
    let mut asked: Vec<(String, usize)> = Vec::new();
    for q in lines.iter().flat_map(|l| questions(l)) {
        match asked.iter_mut().find(|(a, _)| *a == q) {
            Some((_, n)) => *n += 1,
            None => asked.push((q, 1)),
        }
    }
    if let Some((q, n)) = asked.iter().find(|(_, n)| *n > 3) {
        bad.push(format!("a question asked {n} times: {q:?}"));
    }
    if let Some(l) = lines.iter().find(|l| limit_lines.iter().any(|m| m == *l)) {
        bad.push(format!("turn-limit hand-off: {l:?}"));
    }
    if call.hazard {
        let (state, reason) = (
            r["final_state"].as_str().unwrap_or(""),
            r["end_call_reason"].as_str().unwrap_or(""),
        );
        if state != "safety_exit" || reason != "safety_emergency" {
            bad.push(format!(
                "hazard: ended in {state} / {reason}, not safety_exit / safety_emergency"
            ));
        }
        // After the safety script the agent only repeats the instruction
        // (a caller who speaks before the hang-up may hear it again); the
        // call flow never goes on.
        match lines.iter().position(|l| l.contains("911")) {
            None => bad.push("hazard: the safety script (911) was never said".into()),
            Some(i) => {
                if let Some(l) = lines[i + 1..]
                    .iter()
                    .find(|l| !l.contains("911") || l.trim_end().ends_with('?'))
                {
                    bad.push(format!(
                        "hazard: the call went on after the safety script: {l:?}"
                    ));
                }
            }
        }
    }
    for (key, want) in &call.contains {
        let got = value_of(r, key);
        let text = lower(got.as_str().unwrap_or(""));
        let needles: Vec<&str> = match want {
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            v => v.as_str().into_iter().collect(),
        };
        if !needles.iter().any(|n| text.contains(&lower(n))) {
            bad.push(format!("{key}: expected to contain {want}, got {got}"));
        }
    }
    if !call.replies.is_empty() {
        let entries = r["transcript"].as_array().cloned().unwrap_or_default();
        for (n, want) in &call.replies {
            let mut seen = 0;
            let mut reply = Vec::new();
            for e in &entries {
                if e["role"] == "user" {
                    seen += 1;
                } else if seen == *n && e["role"] == "agent" {
                    reply.push(e["content"].as_str().unwrap_or(""));
                }
            }
            let said = reply.join(" ");
            if !lower(&said).contains(&lower(want)) {
                bad.push(format!(
                    "the reply to caller line {n} does not say {want:?}: {said:?}"
                ));
            }
        }
    }
    if let Some(n) = call.booked_after {
        let mut seen = 0;
        for e in r["transcript"].as_array().into_iter().flatten() {
            if e["role"] == "user" {
                seen += 1;
            } else if e["role"] == "tool" && e["name"] == "book_service" && seen <= n {
                bad.push(format!(
                    "booked on caller line {seen}, before the caller confirmed (after line {n})"
                ));
                break;
            }
        }
    }
    if call.closing {
        if let Some(last) = lines.last().filter(|l| l.trim_end().ends_with('?')) {
            bad.push(format!(
                "the call ends on a question, not a close: {last:?}"
            ));
        }
    }
    bad
}
