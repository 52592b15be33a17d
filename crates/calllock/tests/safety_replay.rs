//! The safety answers of issue 9 replayed as whole calls through the real
//! `calllock replay` binary: greeting, the caller's problem, the safety
//! question, then the answer — the call must take the stated route.

use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn replay(script: &Path) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_calllock"))
        .env_remove("CALLLOCK_CONFIG")
        .env_remove("CALLLOCK_DATABASE")
        .arg("replay")
        .arg(script)
        .args(["--json", "--now", "2026-02-23T10:15:00-06:00"])
        .output()
        .expect("calllock runs");
    assert!(
        out.status.success(),
        "replay failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("replay --json prints one JSON object")
}

/// The state the call was in right after the caller's safety answer: the
/// state of the first agent line after it, or the final state.
fn route_after(r: &Value, answer: &str) -> String {
    let entries = r["transcript"].as_array().expect("a transcript");
    let at = entries
        .iter()
        .position(|e| e["role"] == "user" && e["content"] == answer)
        .unwrap_or_else(|| panic!("the answer {answer:?} is in the transcript"));
    entries[at + 1..]
        .iter()
        .find(|e| e["role"] == "agent")
        .map(|e| e["state"].as_str().unwrap_or_default().to_string())
        .unwrap_or_else(|| r["final_state"].as_str().unwrap_or_default().to_string())
}

#[test]
fn each_safety_phrasing_of_the_issue_routes_as_stated() {
    let dir = tempfile::tempdir().unwrap();
    for (answer, route) in [
        ("I don't smell any gas or smoke", "service_area"),
        ("no gas or smoke", "service_area"),
        ("neither gas nor smoke", "service_area"),
        ("don't smell gas or anything burning", "service_area"),
        ("no gas, no smoke, nothing burning", "service_area"),
        ("I don't smell anything", "service_area"),
        ("not smelling anything unusual", "service_area"),
        ("no gas but there is smoke", "safety_exit"),
    ] {
        let script = dir.path().join("call.jsonl");
        let lines = [
            serde_json::json!({"caller": "Hi, my AC stopped cooling last night"}),
            serde_json::json!({"caller": answer}),
        ];
        let body: Vec<String> = lines.iter().map(Value::to_string).collect();
        std::fs::write(&script, body.join("\n")).unwrap();
        let r = replay(&script);
        let states: Vec<&str> = r["transcript"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|e| e["state"].as_str())
            .collect();
        assert!(
            states.contains(&"safety"),
            "{answer:?}: the safety question was asked ({states:?})"
        );
        assert_eq!(route_after(&r, answer), route, "{answer:?}");
        assert_eq!(r["final_state"], route, "{answer:?}");
    }
}

#[test]
fn the_example_safety_replays_route_as_their_comments_say() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/replays");
    let r = replay(&dir.join("safety-no-gas-or-smoke.jsonl"));
    assert_eq!(
        route_after(&r, "I don't smell any gas or smoke"),
        "service_area"
    );
    assert_ne!(r["final_state"], "safety_exit");
    let r = replay(&dir.join("safety-no-gas-but-smoke.jsonl"));
    assert_eq!(r["final_state"], "safety_exit");
    assert_eq!(r["end_call_reason"], "safety_emergency");
}

/// Issue 15, item 1: a hazard in the caller's first sentence is a safety
/// exit at once (no safety question first), and the record is tagged and
/// red even when the caller hangs up right after.
#[test]
fn danger_in_the_first_sentence_is_a_safety_exit_at_once() {
    let dir = tempfile::tempdir().unwrap();
    for first in [
        "I smell gas in my kitchen",
        "hi, there's smoke coming out of my furnace",
        "my carbon monoxide alarm is going off",
    ] {
        let script = dir.path().join("call.jsonl");
        std::fs::write(&script, serde_json::json!({"caller": first}).to_string()).unwrap();
        let r = replay(&script);
        assert_eq!(r["final_state"], "safety_exit", "{first:?}: {r}");
        assert_eq!(r["end_call_reason"], "safety_emergency", "{first:?}");
        let entries = r["transcript"].as_array().unwrap();
        let agent: Vec<&str> = entries
            .iter()
            .filter(|e| e["role"] == "agent")
            .filter_map(|e| e["content"].as_str())
            .collect();
        assert!(
            !agent.iter().any(|l| l.contains("safety check")),
            "{first:?}: the safety question is not asked again: {agent:?}"
        );
        assert!(
            agent.iter().any(|l| l.contains("911")),
            "{first:?}: the 911 script is spoken: {agent:?}"
        );
        assert!(
            !entries.iter().any(|e| e["name"] == "lookup_caller"),
            "{first:?}: no lookup in an emergency"
        );
        assert_eq!(r["priority"]["color"], "red", "{first:?}: {}", r["priority"]);
        assert!(
            r["tags"]["HAZARD"].as_array().is_some_and(|t| !t.is_empty()),
            "{first:?}: {}",
            r["tags"]
        );
    }
}
