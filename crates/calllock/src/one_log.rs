//! The one-log check (a test kit, for the harness, the replay corpus and
//! the served calls' tests): what a call's LLM was asked, its transcript,
//! its journal and its record all derive from the one log the engine kept
//! ([`voice::history::EventLog`]).
//!
//! Given the log and what each copy held, [`violations`] says where a copy
//! is not its projection:
//! - every LLM turn request is the system prompt, then the LLM projection
//!   of the log as it was when the request was made (a prefix of it, later
//!   requests on longer prefixes);
//! - the record's transcript is the transcript projection of the whole
//!   log ([`agent::engine::transcript_of`]);
//! - the journal holds one event per log entry ([`crate::call::journal::log::row`],
//!   stamped with the entry's time), and reading it back gives the same
//!   transcript (what a call rebuilt after a crash gets).

use crate::call::journal::entry::Entry;
use crate::call::journal::log::{log_of_rows, row};
use agent::responder::{ChatMessage, ChatRole};
use agent::session::TranscriptEntry;
use voice::history::EventLog;

/// What a call left behind, to hold against its log.
pub struct Evidence<'a> {
    pub log: &'a EventLog,
    /// The messages of each LLM turn request, in the order made.
    pub requests: &'a [Vec<ChatMessage>],
    /// The transcript of the call's record.
    pub transcript: &'a [TranscriptEntry],
    /// The call's journal events of the log's kinds, `(at_unix, entry)`
    /// in order (`None`: the call had no journal).
    pub journal: Option<&'a [(f64, Entry)]>,
}

/// The LLM messages (after the system prompt) the log's first `n`
/// entries make.
fn context_at(log: &EventLog, n: usize) -> Vec<ChatMessage> {
    let mut m = agent::engine::llm_context_of("", &log.prefix(n));
    m.remove(0);
    m
}

/// Where the copies are not projections of the log (empty: none).
pub fn violations(e: &Evidence) -> Vec<String> {
    let mut v = Vec::new();
    let log = e.log;
    // The LLM requests, each a prefix's projection.
    let mut from = 0;
    for (i, req) in e.requests.iter().enumerate() {
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
                "LLM request {i} is not the log's context at any point after entry {from}:\n  request: {asked:?}\n  log now: {:?}",
                context_at(log, log.len())
            )),
        }
    }
    // The record's transcript.
    let projected = agent::engine::transcript_of(log);
    if projected != e.transcript {
        v.push(format!(
            "the record's transcript is not the log's:\n  record: {:?}\n  log:    {projected:?}",
            e.transcript
        ));
    }
    // The journal, entry by entry, and read back.
    if let Some(journal) = e.journal {
        let written: Vec<(f64, Entry)> = log
            .events()
            .iter()
            .map(|entry| (entry.at.as_secs_f64(), row(log, entry)))
            .collect();
        if written.as_slice() != journal {
            let at = written
                .iter()
                .zip(journal)
                .position(|(a, b)| a != b)
                .unwrap_or(written.len().min(journal.len()));
            v.push(format!(
                "the journal is not the log written down (first difference at event {at} of {} / {}): journal {:?}, log {:?}",
                journal.len(),
                written.len(),
                journal.get(at),
                written.get(at)
            ));
        }
        let read_back = log_of_rows(journal.iter().map(|(at, e)| (*at, e)));
        let rebuilt = agent::engine::transcript_of(&read_back);
        if rebuilt != projected {
            v.push(format!(
                "the journal read back gives another transcript:\n  journal: {rebuilt:?}\n  log:     {projected:?}"
            ));
        }
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
