//! The one-log check (a test kit, for the voice harness, the replay corpus
//! and the served calls' tests): what a call's LLM was asked, its
//! transcript, its journal and its record all derive from the one log the
//! engine kept ([`voice::history::EventLog`]).
//!
//! Given the log and a copy, each function says where the copy is not the
//! log's projection (an empty list: it is):
//! - [`requests`]: every LLM turn request is the system prompt, then the
//!   LLM projection of the log as it was when the request was made (a
//!   prefix of it; later requests on longer prefixes);
//! - [`transcript`]: the session's transcript is the transcript projection
//!   of the log ([`agent::engine::transcript_of`]);
//! - [`journal`]: the journal holds one event per log entry
//!   ([`crate::call::journal::log::row`], stamped with the entry's time),
//!   and read back ([`crate::call::journal::log::log_of_rows`]) gives the
//!   same transcript — what a call rebuilt after a crash gets;
//! - [`record`]: the stored record's transcript (SPEC §7.9's array and
//!   the timed lines) is the projection — plus, after the journal closed,
//!   the `create_callback` answers post-call work added, which a rebuilt
//!   call gets by running post-call again.

use crate::call::journal::entry::Entry;
use crate::call::journal::log::{log_of_rows, row};
use crate::call::record::{timed_transcript, FinishedCall};
use agent::responder::{ChatMessage, ChatRole};
use agent::session::TranscriptEntry;
use voice::history::EventLog;

/// The LLM messages (after the system prompt) the log's first `n`
/// entries make.
fn context_at(log: &EventLog, n: usize) -> Vec<ChatMessage> {
    let mut m = agent::engine::llm_context_of("", &log.prefix(n));
    m.remove(0);
    m
}

/// Each request (its messages, in the order made) against the log.
pub fn requests(log: &EventLog, requests: &[Vec<ChatMessage>]) -> Vec<String> {
    let mut v = Vec::new();
    let mut from = 0;
    for (i, req) in requests.iter().enumerate() {
        if req.first().map(|m| m.role) != Some(ChatRole::System) {
            v.push(format!(
                "LLM request {i} does not start with the system prompt"
            ));
            continue;
        }
        let asked = &req[1..];
        match (from..=log.len()).find(|&n| context_at(log, n) == asked) {
            Some(n) => from = n,
            None => v.push(format!(
                "LLM request {i} is not the log's context at any point from entry {from} on:\n  request: {asked:?}\n  log:     {:?}",
                context_at(log, log.len())
            )),
        }
    }
    v
}

/// The session's transcript against the log.
pub fn transcript(log: &EventLog, transcript: &[TranscriptEntry]) -> Vec<String> {
    let projected = agent::engine::transcript_of(log);
    if projected == transcript {
        return Vec::new();
    }
    vec![format!(
        "the transcript is not the log's:\n  transcript: {transcript:?}\n  log:        {projected:?}"
    )]
}

/// The journal's events of the log's kinds (`(at_unix, entry)`, in order)
/// against the log.
pub fn journal(log: &EventLog, journal: &[(f64, Entry)]) -> Vec<String> {
    let mut v = Vec::new();
    let written: Vec<(f64, Entry)> = log
        .events()
        .iter()
        .map(|entry| (entry.at.as_secs_f64(), row(log, entry)))
        .collect();
    if written != journal {
        let at = written
            .iter()
            .zip(journal)
            .position(|(a, b)| a != b)
            .unwrap_or(written.len().min(journal.len()));
        v.push(format!(
            "the journal is not the log written down: {} events for {} entries; first difference at {at}: journal {:?}, log {:?}",
            journal.len(),
            written.len(),
            journal.get(at),
            written.get(at)
        ));
    }
    let read_back = log_of_rows(journal.iter().map(|(at, e)| (*at, e)));
    let rebuilt = agent::engine::transcript_of(&read_back);
    let projected = agent::engine::transcript_of(log);
    if rebuilt != projected {
        v.push(format!(
            "the journal read back gives another transcript:\n  journal: {rebuilt:?}\n  log:     {projected:?}"
        ));
    }
    v
}

/// The stored record's transcript against the log (`post_call`: lines
/// after the log's may be post-call `create_callback` answers).
pub fn record(log: &EventLog, fc: &FinishedCall, post_call: bool) -> Vec<String> {
    let mut v = Vec::new();
    let projected = agent::engine::transcript_of(log);
    let n = projected.len();
    let extra = fc.transcript.get(n..).unwrap_or_default();
    let later_callbacks = extra
        .iter()
        .all(|l| l.role == "tool" && l.name.as_deref() == Some("create_callback"));
    if fc.transcript.len() < n || !(extra.is_empty() || post_call && later_callbacks) {
        v.push(format!(
            "the record has {} transcript lines, the log {n}: {:?}",
            fc.transcript.len(),
            fc.transcript
        ));
        return v;
    }
    let timed = timed_transcript(&projected, fc.session.start_time);
    for (i, (got, want)) in fc.transcript.iter().zip(&timed).enumerate() {
        let same = got.role == want.role
            && got.content == want.content
            && got.name == want.name
            && got.result == want.result
            && got.state == want.state
            && got.interrupted == want.interrupted
            && (got.t - want.t).abs() <= 0.011;
        if !same {
            v.push(format!(
                "record line {i} is not the log's: {got:?} / {want:?}"
            ));
        }
    }
    let object = agent::transcript::to_json_array(&projected);
    let stored = fc.transcript_object.as_array().map(Vec::as_slice);
    let ours = object.as_array().map(Vec::as_slice).unwrap_or_default();
    if stored.and_then(|s| s.get(..ours.len())) != Some(ours) {
        v.push(format!(
            "the record's transcript_object is not the log's: {} / {object}",
            fc.transcript_object
        ));
    }
    v
}

/// The journal events of the log's kinds among a call's stored events
/// (the `session` and `latency` events left out).
pub fn journal_rows(events: &[store::StoredEvent]) -> Vec<(f64, Entry)> {
    events
        .iter()
        .filter_map(|e| Some((e.at_unix, Entry::read(&e.kind, &e.data)?)))
        .collect()
}

/// The messages of each LLM turn request (`stream: true`) a fake
/// OpenAI-compatible server received, in order.
pub fn openai_turns(bodies: &[serde_json::Value]) -> Vec<Vec<ChatMessage>> {
    bodies
        .iter()
        .filter(|b| b["stream"] == true)
        .filter_map(|b| serde_json::from_value(b["messages"].clone()).ok())
        .collect()
}

/// A stored call against the log its journal holds: the journal is a log
/// written down (read back and written again it is the same), the saved
/// record's transcript is its projection (plus what post-call work
/// added), and the LLM turn requests (`llm_bodies`: the request bodies a
/// fake OpenAI-compatible server received, when they were all this
/// call's) were its context when each was made.
pub async fn stored_call(
    store: &store::Store,
    call_id: &str,
    llm_bodies: Option<&[serde_json::Value]>,
) -> Vec<String> {
    let events = match store.events(call_id).await {
        Ok(e) => e,
        Err(e) => return vec![format!("{call_id}: no journal: {e}")],
    };
    let rows = journal_rows(&events);
    let log = log_of_rows(rows.iter().map(|(at, e)| (*at, e)));
    let mut bad = journal(&log, &rows);
    match store.get_call(call_id).await {
        Ok(Some(rec)) => match FinishedCall::from_stored(&rec.record) {
            Ok(fc) => bad.extend(record(&log, &fc, true)),
            Err(e) => bad.push(format!("{call_id}: the record cannot be read: {e}")),
        },
        other => bad.push(format!("{call_id}: no record: {other:?}")),
    }
    if let Some(bodies) = llm_bodies {
        bad.extend(requests(&log, &openai_turns(bodies)));
    }
    bad
}
