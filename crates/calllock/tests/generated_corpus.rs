//! The generated corpus (`examples/replays/generated/`, written by
//! `scripts/gen-corpus`, issue 23): call-shape templates combined with many
//! phrasings of every caller act, each call with its expected outcome from
//! SPEC.md / DECISIONS.md. Every call is replayed in process exactly as
//! `calllock replay FILE --json --now 2026-02-23T10:15:00-06:00` does
//! (default configuration, demo customers seeded, the file's caller ID),
//! and checked against its expectations and the generic checks: no agent
//! line twice in a row or three times, no question more than three times,
//! no turn-limit hand-off, a record that matches what happened, and a
//! current hazard anywhere ends in the safety script.
//!
//! Prints one line per failing call and `generated corpus: N/M passed
//! (P%)`; fails unless every call passes. With `CORPUS_TRANSCRIPTS=1`
//! each failing call's conversation is printed too; `CORPUS_ONLY=text`
//! replays only the files whose name contains the text.

#[path = "support/replay_checks.rs"]
mod replay_checks;

use agent::prompts::Canned;
use calllock::call::driver::Timing;
use calllock::cli::demo::{self, ReplayOptions};
use replay_checks::{call_files, more_problems, problems, read_call, Call};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

const NOW: &str = "2026-02-23T10:15:00-06:00";
/// `calllock replay`'s default caller ID (an unknown number).
const UNKNOWN_CALLER: &str = "+15125559876";

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn generated_dir() -> PathBuf {
    repo_root().join("examples/replays/generated")
}

fn config() -> calllock::config::Config {
    // What `calllock replay` loads with no file and no environment.
    calllock::config::load_from(None, &[]).expect("the embedded defaults are valid")
}

fn limit_lines(cfg: &calllock::config::Config) -> Vec<String> {
    [Canned::TurnLimitPerCall, Canned::TurnLimitPerState]
        .iter()
        .map(|c| c.text(&cfg.business))
        .collect()
}

/// One call replayed as `calllock replay` replays it.
fn replay(rt: &tokio::runtime::Runtime, cfg: &calllock::config::Config, call: &Call) -> Value {
    let bytes = std::fs::read(&call.path).unwrap();
    let items = calllock::cli::script::parse_bytes(&bytes)
        .unwrap_or_else(|e| panic!("{}: {e}", call.path.display()));
    let start = chrono::DateTime::parse_from_rfc3339(NOW)
        .unwrap()
        .timestamp() as f64;
    let stem = call.path.file_stem().unwrap().to_string_lossy();
    let opts = ReplayOptions {
        caller_id: call
            .caller_id
            .clone()
            .unwrap_or_else(|| UNKNOWN_CALLER.to_string()),
        start,
        timing: Timing::of(cfg),
        demo_data: true,
        call_id: format!("replay-{stem}"),
    };
    rt.block_on(demo::replay(cfg, items, opts))
        .unwrap_or_else(|e| panic!("{}: {e:#}", call.path.display()))
}

/// The conversation of a replay, one line per turn (for a failing call).
fn conversation(r: &Value) -> String {
    let mut out = String::new();
    for e in r["transcript"].as_array().into_iter().flatten() {
        let who = match e["role"].as_str() {
            Some("agent") => "    agent",
            Some("user") => "    caller",
            _ => continue,
        };
        out.push_str(&format!("{who}: {}\n", e["content"].as_str().unwrap_or("")));
    }
    out.push_str(&format!(
        "    => {} / {} / {}\n",
        r["final_state"], r["booking_status"], r["end_call_reason"]
    ));
    out
}

/// Replay every call (on a few threads) and return (file name, problems,
/// conversation).
fn run_all(paths: &[PathBuf]) -> Vec<(String, Vec<String>, String)> {
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .clamp(1, 8);
    let chunk = paths.len().div_ceil(workers).max(1);
    let mut results: Vec<(String, Vec<String>, String)> = std::thread::scope(|scope| {
        let handles: Vec<_> = paths
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || {
                    let rt = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .unwrap();
                    let cfg = config();
                    let limits = limit_lines(&cfg);
                    part.iter()
                        .map(|path| {
                            let call = read_call(path);
                            let r = replay(&rt, &cfg, &call);
                            let mut bad = problems(&call, &r);
                            bad.extend(more_problems(&call, &r, &limits));
                            let name = path.file_name().unwrap().to_string_lossy().to_string();
                            (name, bad, conversation(&r))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    results.sort_by(|a, b| a.0.cmp(&b.0));
    results
}

#[test]
fn every_generated_call_ends_as_expected() {
    let mut paths = call_files(&generated_dir());
    assert!(
        paths.len() >= 500,
        "the generated corpus has {} calls; run scripts/gen-corpus",
        paths.len()
    );
    if let Ok(only) = std::env::var("CORPUS_ONLY") {
        paths.retain(|p| p.to_string_lossy().contains(&only));
    }
    let show = std::env::var_os("CORPUS_TRANSCRIPTS").is_some_and(|v| v != "0");
    let results = run_all(&paths);
    let mut failed = 0;
    for (name, bad, talk) in &results {
        if !bad.is_empty() {
            failed += 1;
            println!("FAILED {name}: {}", bad.join("; "));
            if show {
                print!("{talk}");
            }
        }
    }
    // Per template (the file name after its number), those that failed.
    let mut by_template: Vec<(String, usize, usize)> = Vec::new();
    for (name, bad, _) in &results {
        let template = name
            .trim_end_matches(".jsonl")
            .split_once('-')
            .map_or(name.as_str(), |(_, t)| t)
            .to_string();
        match by_template.iter_mut().find(|(t, _, _)| *t == template) {
            Some((_, ok, all)) => {
                *ok += usize::from(bad.is_empty());
                *all += 1;
            }
            None => by_template.push((template, usize::from(bad.is_empty()), 1)),
        }
    }
    for (template, ok, all) in by_template.iter().filter(|(_, ok, all)| ok < all) {
        println!("  {template}: {ok}/{all} passed");
    }
    let total = results.len();
    let passed = total - failed;
    let pct = 100.0 * passed as f64 / total as f64;
    println!("generated corpus: {passed}/{total} passed ({pct:.1}%)");
    assert_eq!(
        failed, 0,
        "generated corpus: {passed}/{total} passed ({pct:.1}%); the failing calls are listed above \
         (run with --nocapture)"
    );
}

#[test]
fn the_corpus_is_big_and_varied() {
    let paths = call_files(&generated_dir());
    let mut templates: Vec<String> = paths
        .iter()
        .filter_map(|p| {
            std::fs::read_to_string(p)
                .ok()?
                .lines()
                .find_map(|l| l.strip_prefix("# template:").map(|t| t.trim().to_string()))
        })
        .collect();
    templates.sort();
    templates.dedup();
    assert!(paths.len() >= 500, "{} calls", paths.len());
    assert!(templates.len() >= 40, "{} templates", templates.len());
}

#[test]
fn the_committed_corpus_is_what_the_script_generates() {
    let out = match Command::new("python3")
        .arg(repo_root().join("scripts/gen-corpus"))
        .arg("--check")
        .output()
    {
        Ok(out) => out,
        Err(e) if std::env::var_os("CI").is_none() => {
            println!("SKIP: python3 cannot be run here ({e}); CI runs scripts/gen-corpus --check");
            return;
        }
        Err(e) => panic!("python3 cannot be run ({e}): scripts/setup-local-speech installs it"),
    };
    assert!(
        out.status.success(),
        "scripts/gen-corpus --check: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_checks_catch_bad_calls() {
    let cfg = config();
    let limits = limit_lines(&cfg);
    let mut call = Call::expecting(json!({"final_state": "safety_exit"}));
    call.hazard = true;
    call.closing = true;
    call.contains = json!({"problem_description": ["n't", "not "]})
        .as_object()
        .cloned()
        .unwrap();
    call.replies = vec![(2, "5120".to_string())];
    call.booked_after = Some(3);
    // A hazard call that went on booking, asked one question four times
    // (reworded around it), handed off on the turn limit, lost the
    // negation, never said the corrected number, and ended on a question.
    let bad_call = json!({
        "final_state": "callback", "end_call_reason": "callback_later",
        "booking_status": "not_requested",
        "session": {"problem_description": "heat turning on"},
        "transcript": [
            {"role": "agent", "content": "Thanks for calling! How can I help?"},
            {"role": "user", "content": "the heat won't turn on"},
            {"role": "agent", "content": "Got it. What's the ZIP code?"},
            {"role": "user", "content": "no wait, it's 5120, not 5210"},
            {"role": "agent", "content": "Sorry — what's the ZIP code?"},
            {"role": "user", "content": "I smell gas"},
            {"role": "tool", "name": "book_service", "result": {}},
            {"role": "agent", "content": "Okay. What's the ZIP code?"},
            {"role": "user", "content": "78745"},
            {"role": "agent", "content": "Hmm. What's the ZIP code?"},
            {"role": "agent", "content": limits[1].clone()},
            {"role": "agent", "content": "Is this the best number?"}
        ]
    });
    let mut bad = problems(&call, &bad_call);
    bad.extend(more_problems(&call, &bad_call, &limits));
    for kind in [
        "final_state: expected",
        "a question asked 4 times",
        "turn-limit hand-off",
        "hazard: ended in callback",
        "hazard: the safety script (911) was never said",
        "problem_description: expected to contain",
        "the reply to caller line 2 does not say \"5120\"",
        "the call ends on a question",
        "booked on caller line 3, before the caller confirmed",
    ] {
        assert!(bad.iter().any(|b| b.starts_with(kind)), "{kind}: {bad:?}");
    }
    // The safety script said, then the call goes on.
    let went_on = json!({
        "final_state": "safety_exit", "end_call_reason": "safety_emergency",
        "booking_status": "not_requested",
        "transcript": [
            {"role": "user", "content": "I smell gas"},
            {"role": "agent", "content": "Please leave the house and call 911 from outside."},
            {"role": "user", "content": "ok"},
            {"role": "agent", "content": "What's the ZIP code?"}
        ]
    });
    let bad = more_problems(&call, &went_on, &limits);
    assert!(
        bad.iter()
            .any(|b| b.starts_with("hazard: the call went on after the safety script")),
        "{bad:?}"
    );
    // A good call passes every check; names and addresses compare as words.
    let mut good_call = Call::expecting(json!({
        "final_state": "confirm", "service_address": "600 Oak Hollow Dr",
        "customer_name": "Dev Raman"
    }));
    good_call.replies = vec![(1, "oak hollow".to_string())];
    good_call.closing = true;
    let good = json!({
        "final_state": "confirm", "end_call_reason": "completed", "booking_status": "confirmed",
        "session": {"service_address": "600 Oak Hollow Dr.", "customer_name": "dev raman"},
        "transcript": [
            {"role": "user", "content": "600 Oak Hollow Dr."},
            {"role": "agent", "content": "Got it, 600 Oak Hollow Dr. How soon?"},
            {"role": "user", "content": "bye"},
            {"role": "agent", "content": "Thanks for calling. Goodbye!"}
        ]
    });
    let mut bad = problems(&good_call, &good);
    bad.extend(more_problems(&good_call, &good, &limits));
    assert!(bad.is_empty(), "{bad:?}");
}
