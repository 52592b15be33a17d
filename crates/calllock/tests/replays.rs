//! Whole calls replayed through the real `calllock replay` binary (virtual
//! time, in-memory copy of the demo backend): the safety answers of issue 9
//! take their routes; danger in the first sentence, terminal states and
//! out-of-area callers behave as a caller and an owner expect (issue 15).

use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn replay(script: &Path) -> Value {
    replay_at(script, "2026-02-23T10:15:00-06:00")
}

fn replay_at(script: &Path, now: &str) -> Value {
    replay_with(script, &["--now", now])
}

fn replay_with(script: &Path, args: &[&str]) -> Value {
    let mut args = args.to_vec();
    if !args.contains(&"--now") {
        args.extend(["--now", "2026-02-23T10:15:00-06:00"]);
    }
    let out = Command::new(env!("CARGO_BIN_EXE_calllock"))
        .env_remove("CALLLOCK_CONFIG")
        .env_remove("CALLLOCK_DATABASE")
        .arg("replay")
        .arg(script)
        .arg("--json")
        .args(&args)
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
        let states = states_of(&r);
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
        assert_eq!(
            r["priority"]["color"], "red",
            "{first:?}: {}",
            r["priority"]
        );
        assert!(
            r["tags"]["HAZARD"]
                .as_array()
                .is_some_and(|t| !t.is_empty()),
            "{first:?}: {}",
            r["tags"]
        );
    }
}

fn write_script(dir: &Path, lines: &[&str]) -> std::path::PathBuf {
    let script = dir.join("call.jsonl");
    let body: Vec<String> = lines
        .iter()
        .map(|l| serde_json::json!({"caller": l}).to_string())
        .collect();
    std::fs::write(&script, body.join("\n")).unwrap();
    script
}

/// The state of every transcript entry, in order.
fn states_of(r: &Value) -> Vec<&str> {
    r["transcript"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["state"].as_str())
        .collect()
}

fn agent_lines(r: &Value) -> Vec<String> {
    r["transcript"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["role"] == "agent")
        .filter_map(|e| e["content"].as_str().map(String::from))
        .collect()
}

fn assert_no_line_twice_in_a_row(lines: &[String]) {
    for pair in lines.windows(2) {
        assert_ne!(pair[0], pair[1], "a line said twice in a row: {lines:#?}");
    }
}

/// Issue 15, items 4 and 5: an out-of-area caller is told so, the call back
/// is promised only as the business hours allow, the script is said once,
/// and a callback number the caller gives is used and read back.
#[test]
fn out_of_area_caller_is_told_and_their_number_is_used() {
    let dir = tempfile::tempdir().unwrap();
    let script = write_script(
        dir.path(),
        &[
            "my AC is broken",
            "no, nothing like that",
            "my zip is 90210",
            "no, call my cell 512 555 0199",
            "thanks",
        ],
    );
    let r = replay(&script);
    assert_eq!(r["final_state"], "callback");
    let lines = agent_lines(&r);
    let script_lines: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("passing this"))
        .collect();
    assert_eq!(script_lines.len(), 1, "the script is said once: {lines:#?}");
    assert!(
        script_lines[0].contains("90210 is outside the area we serve"),
        "{}",
        script_lines[0]
    );
    assert!(
        script_lines[0].contains("within the hour"),
        "{}",
        script_lines[0]
    );
    assert!(
        lines.iter().any(|l| l.contains("512-555-0199")),
        "the number is read back: {lines:#?}"
    );
    assert_no_line_twice_in_a_row(&lines);
    let callbacks: Vec<&Value> = r["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["tool"] == "create_callback")
        .collect();
    assert_eq!(
        callbacks.last().unwrap()["args"]["phone"],
        "+15125550199",
        "the callback goes to the number the caller gave: {callbacks:?}"
    );
    assert_eq!(r["session"]["callback_phone"], "+15125550199");

    // After hours nobody calls "within the hour".
    let r = replay_at(&script, "2026-02-23T20:30:00-06:00");
    let lines = agent_lines(&r);
    let promise = lines.iter().find(|l| l.contains("passing this")).unwrap();
    assert!(!promise.contains("within the hour"), "{promise}");
    assert!(promise.contains("when we open tomorrow at 9"), "{promise}");
}

/// "Is this the best number?" — "no" gets asked for the number instead of a
/// goodbye.
#[test]
fn a_no_to_the_best_number_question_asks_for_the_number() {
    let dir = tempfile::tempdir().unwrap();
    let script = write_script(
        dir.path(),
        &[
            "my AC is broken",
            "no, nothing like that",
            "my zip is 90210",
            "no",
            "it's five one two, five five five, zero one nine nine",
        ],
    );
    let r = replay(&script);
    let lines = agent_lines(&r);
    assert!(
        lines
            .iter()
            .any(|l| l.contains("best number to reach you?")),
        "{lines:#?}"
    );
    assert!(
        lines.iter().any(|l| l.contains("512-555-0199")),
        "{lines:#?}"
    );
    assert_eq!(r["session"]["callback_phone"], "+15125550199");
    assert_no_line_twice_in_a_row(&lines);
}

/// The 911 script is said once; a reply after it gets a short urging line,
/// not the script again.
#[test]
fn the_safety_script_is_said_once() {
    let dir = tempfile::tempdir().unwrap();
    let script = write_script(
        dir.path(),
        &["I smell gas in the kitchen", "okay, what do I do?"],
    );
    let r = replay(&script);
    let lines = agent_lines(&r);
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.contains("call 911 once you're outside"))
            .count(),
        1,
        "{lines:#?}"
    );
    assert_no_line_twice_in_a_row(&lines);
}

/// Issue 15, item 2: the time the caller names is read back exactly and
/// booked (Monday 2026-02-23, 10:15).
#[test]
fn the_time_the_caller_names_is_read_back_and_booked() {
    let dir = tempfile::tempdir().unwrap();
    for (when, said_back, booked) in [
        (
            "tomorrow at 2 please",
            "Tuesday, February 24 at 2 PM",
            "2026-02-24T14:00:00-06:00",
        ),
        (
            "Friday at 3pm",
            "Friday, February 27 at 3 PM",
            "2026-02-27T15:00:00-06:00",
        ),
        (
            "next Tuesday at 2",
            "Tuesday, March 3 at 2 PM",
            "2026-03-03T14:00:00-06:00",
        ),
        (
            "next week is fine",
            "Monday, March 2 at 9 AM",
            "2026-03-02T09:00:00-06:00",
        ),
    ] {
        let script = write_script(
            dir.path(),
            &[
                "Hi, my AC stopped cooling last night",
                "No, nothing like that",
                "It's 78745",
                "My name is Dana Fields",
                "It's 4329 Franklin Street",
                "No, that's everything",
                when,
                "Yes, that's right",
                "thanks, bye",
            ],
        );
        let r = replay(&script);
        let lines = agent_lines(&r);
        let read_back = lines
            .iter()
            .find(|l| l.contains("Let me make sure"))
            .unwrap_or_else(|| panic!("{when:?}: no read-back: {lines:#?}"));
        assert!(read_back.contains(said_back), "{when:?}: {read_back}");
        let book = r["tool_calls"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["tool"] == "book_service")
            .unwrap_or_else(|| panic!("{when:?}: not booked: {lines:#?}"));
        assert_eq!(book["args"]["preferred_time"], booked, "{when:?}");
        assert_eq!(
            book["result"]["appointment_time"], booked,
            "{when:?}: {book}"
        );
        assert_eq!(r["final_state"], "confirm", "{when:?}");
    }
}

/// Issue 15, item 3: off-script questions are answered from the business
/// profile and the call goes back to the step in progress — a price question
/// is no billing call, a question at the read-back is no correction.
#[test]
fn off_script_questions_are_answered_and_the_call_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let script = write_script(
        dir.path(),
        &[
            "how much do you charge for a visit?",
            "are you a robot?",
            "my AC is not cooling",
            "no, nothing like that",
            "do you service Carrier units?",
            "78745",
            "My name is Dana Fields",
            "It's 4329 Franklin Street",
            "what are your hours?",
            "as soon as possible",
            "how much will this cost?",
            "yes",
        ],
    );
    let r = replay(&script);
    let lines = agent_lines(&r);
    for answer in [
        "$89",
        "virtual receptionist",
        "all major brands",
        "open every day from 9 AM to 6 PM",
    ] {
        assert!(
            lines.iter().any(|l| l.contains(answer)),
            "{answer:?} not said: {lines:#?}"
        );
    }
    let states = states_of(&r);
    assert!(
        !states.contains(&"non_service"),
        "a price question is no billing call: {states:?}"
    );
    assert!(!states.contains(&"callback"), "{states:?}");
    assert_eq!(r["final_state"], "confirm", "{lines:#?}");
    assert_eq!(r["booking_status"], "confirmed");
    assert_no_line_twice_in_a_row(&lines);
}

/// Issue 15, item 6: returning callers are not sent in circles.
#[test]
fn returning_callers_get_what_they_called_for() {
    let dir = tempfile::tempdir().unwrap();
    // Jonas has an appointment: "just checking on it" is a status check.
    let script = write_script(
        dir.path(),
        &[
            "hi, just checking on my appointment",
            "just checking on it",
            "ok thanks",
        ],
    );
    let r = replay_with(&script, &["--caller-id", "+15125550100"]);
    let lines = agent_lines(&r);
    assert!(
        r["tool_calls"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["tool"] == "manage_appointment" && t["args"]["action"] == "status"),
        "{lines:#?}"
    );
    assert!(
        lines.iter().any(|l| l.contains("still on for")),
        "{lines:#?}"
    );
    assert_eq!(r["final_state"], "confirm");
    assert_no_line_twice_in_a_row(&lines);

    // Maria is owed a callback: "nobody called me back" is a follow-up, not
    // a cheerful safety check.
    let script = write_script(dir.path(), &["hi, nobody called me back"]);
    let r = replay_with(&script, &["--caller-id", "+15125550101"]);
    let lines = agent_lines(&r);
    assert_eq!(r["final_state"], "follow_up", "{lines:#?}");
    assert!(
        !lines.iter().any(|l| l.contains("safety check")),
        "{lines:#?}"
    );
    assert!(
        lines.iter().any(|l| l.contains("sorry for the wait")),
        "{lines:#?}"
    );
}
