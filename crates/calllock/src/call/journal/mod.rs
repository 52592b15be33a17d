//! The durable event log of a live call.
//!
//! Every event of a call (caller line, agent line, tool call and result,
//! state change with a session snapshot, end) is appended to the database
//! as it happens, in order, by one writer task per call: the conversation
//! never waits for the disk, and an event is committed a few hundred
//! microseconds after it happened. A process killed mid-call (`kill -9`)
//! leaves the call `active` with every committed event; the next start
//! marks it `interrupted`, rebuilds its record from the events
//! ([`rebuild`]) and runs post-call processing for it.
//!
//! The journal is the call's log ([`voice::history::EventLog`], kept by the
//! engine) written down, one event per log entry ([`log`]); the `session`
//! and `latency` events come beside it. Event kinds and their `data`:
//! * `caller` `{text, state}` — a caller line.
//! * `llm` `{role, text, reply?}` — a message added to the LLM context.
//! * `said` `{text, state, msg_id, source, canned?}` — an agent line said.
//! * `agent` `{text, state, msg_id, source, canned?}` — an agent line
//!   written into the transcript (canned id when it was a canned line).
//! * `speech_started`, `speech_finished` `{msg_id}`, `interrupted`
//!   `{msg_id, heard}` — what became of an agent line on the phone.
//! * `tool_call` `{tool, args}`, `tool_result` `{tool, result, state,
//!   outcome}`.
//! * `state` `{from, to}`; `note` `{kind, text}`.
//! * `session` — the session (without its transcript) after it changed.
//! * `ended` `{by}`.
//! * `latency` — where one answered turn's time went (voice calls only;
//!   see [`crate::call::latency::TurnLatency`]).

use crate::call::driver::{CallEvent, Observer};
use crate::call::outcome::{Ending, Outcome};
use agent::session::Session;
use serde_json::Value;
use std::time::Duration;

pub mod entry;
pub mod log;
mod snapshot;

pub use entry::{Entry, Line};
pub use snapshot::{session_snapshot, SessionSnapshots};
use tokio::sync::oneshot;

/// One event waiting to be written, its data already JSON text (a busy
/// database makes events wait; as text they take a fraction of the memory
/// of a `Value` tree).
struct Pending {
    at: f64,
    kind: &'static str,
    data: Box<str>,
}

/// What the call's handles hand to its writer. A plain queue rather than a
/// channel: a channel keeps a block of slots allocated for as long as the
/// call lives, this queue holds nothing while it is empty (a thousand live
/// calls each have one).
#[derive(Default)]
struct Queue {
    events: std::collections::VecDeque<Pending>,
    /// [`Journal::close`] was called: the writer reports here when done.
    close: Option<oneshot::Sender<JournalStats>>,
    /// Every handle is gone.
    dropped: bool,
}

struct Shared {
    queue: std::sync::Mutex<Queue>,
    wake: tokio::sync::Notify,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The handles' side; the writer learns when the last one is dropped.
struct Handle(std::sync::Arc<Shared>);

impl Drop for Handle {
    fn drop(&mut self) {
        self.0.lock().dropped = true;
        self.0.wake.notify_one();
    }
}

/// What the writer did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JournalStats {
    /// Events committed.
    pub written: u64,
    /// Events that could not be written before the close deadline.
    pub lost: u64,
    /// Failed attempts that were retried.
    pub retries: u64,
}

/// The append side of one call's event log. Cheap to clone.
#[derive(Clone)]
pub struct Journal {
    handle: std::sync::Arc<Handle>,
    call_id: std::sync::Arc<str>,
}

/// How long [`Journal::close`] waits for events still being written.
pub const CLOSE_DEADLINE: Duration = Duration::from_secs(10);

impl Journal {
    /// Register the call as live (owned by `instance`) and start its writer.
    pub async fn begin(
        store: &store::Store,
        call_id: &str,
        phone: &str,
        started_unix: f64,
        instance: &str,
    ) -> Result<Journal, store::StoreError> {
        store
            .begin_call(call_id, phone, started_unix, instance)
            .await?;
        Ok(Journal::writing(store, call_id))
    }

    /// Like [`Journal::begin`], for a call that must be new: a call id the
    /// database already has (live anywhere, interrupted or completed) is
    /// [`store::StoreError::CallExists`] and nothing is written.
    pub async fn begin_new(
        store: &store::Store,
        call_id: &str,
        phone: &str,
        started_unix: f64,
        instance: &str,
    ) -> Result<Journal, store::StoreError> {
        store
            .begin_new_call(call_id, phone, started_unix, instance)
            .await?;
        Ok(Journal::writing(store, call_id))
    }

    /// Start the writer of a call already registered.
    fn writing(store: &store::Store, call_id: &str) -> Journal {
        let shared = std::sync::Arc::new(Shared {
            queue: Default::default(),
            wake: tokio::sync::Notify::new(),
        });
        tokio::spawn(writer(store.clone(), call_id.to_string(), shared.clone()));
        Journal {
            handle: std::sync::Arc::new(Handle(shared)),
            call_id: call_id.into(),
        }
    }

    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// Append one event (never blocks; written in order by the writer).
    pub fn record(&self, at_unix: f64, kind: &'static str, data: Value) {
        self.record_json(at_unix, kind, data.to_string());
    }

    /// [`Journal::record`] for data already written as JSON text (one JSON
    /// value).
    pub fn record_json(&self, at_unix: f64, kind: &'static str, data: String) {
        let data = data.into_boxed_str();
        let shared = &self.handle.0;
        {
            let mut q = shared.lock();
            if q.close.is_some() {
                return; // closed: nothing after the close
            }
            q.events.push_back(Pending {
                at: at_unix,
                kind,
                data,
            });
        }
        shared.wake.notify_one();
    }

    /// Wait until every recorded event is committed (at most
    /// [`CLOSE_DEADLINE`] while the database keeps failing).
    pub async fn close(self) -> JournalStats {
        let (tx, rx) = oneshot::channel();
        let shared = &self.handle.0;
        {
            let mut q = shared.lock();
            if q.close.is_some() {
                return JournalStats::default();
            }
            q.close = Some(tx);
        }
        shared.wake.notify_one();
        rx.await.unwrap_or_default()
    }
}

async fn writer(store: store::Store, call_id: String, shared: std::sync::Arc<Shared>) {
    let mut stats = JournalStats::default();
    let mut seq: i64 = 0;
    let mut closing: Option<(tokio::time::Instant, oneshot::Sender<JournalStats>)> = None;
    let mut backlog: std::collections::VecDeque<Pending> = Default::default();
    loop {
        // Take whatever is waiting, keeping order.
        let gone = {
            let mut q = shared.lock();
            if backlog.is_empty() {
                std::mem::swap(&mut backlog, &mut q.events);
            } else {
                backlog.extend(q.events.drain(..));
            }
            if let Some(done) = q.close.take() {
                closing = Some((tokio::time::Instant::now() + CLOSE_DEADLINE, done));
            }
            q.dropped
        };
        if backlog.is_empty() {
            backlog = Default::default(); // give a burst's memory back
            if let Some((_, done)) = closing.take() {
                let _ = done.send(stats);
                return;
            }
            if gone {
                return;
            }
            shared.wake.notified().await;
            continue;
        }
        let mut delay = Duration::from_millis(10);
        while let Some(e) = backlog.front() {
            // Boxed: the database call's state would otherwise be part of
            // every call's idle writer task.
            let append =
                Box::pin(store.append_event_json(&call_id, seq + 1, e.at, e.kind, &e.data));
            match append.await {
                Ok(()) => {
                    seq += 1;
                    stats.written += 1;
                    backlog.pop_front();
                    delay = Duration::from_millis(10);
                }
                Err(e) => {
                    stats.retries += 1;
                    if stats.retries == 1 || stats.retries % 100 == 0 {
                        tracing::warn!(call_id, error = %e, retries = stats.retries, "cannot write a call event yet; retrying");
                    }
                    if closing.is_none() {
                        if let Some(done) = shared.lock().close.take() {
                            closing = Some((tokio::time::Instant::now() + CLOSE_DEADLINE, done));
                        }
                    }
                    if let Some((deadline, _)) = &closing {
                        if tokio::time::Instant::now() >= *deadline {
                            stats.lost += backlog.len() as u64;
                            stats.lost += std::mem::take(&mut shared.lock().events).len() as u64;
                            tracing::error!(
                                call_id,
                                lost = stats.lost,
                                "call events could not be written"
                            );
                            backlog.clear();
                            break;
                        }
                    }
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(1));
                }
            }
        }
    }
}

/// Writes a call's log into its journal as it grows, one event per entry
/// ([`log::row`], stamped with the entry's time: the engine's clock is
/// Unix time).
#[derive(Debug, Default)]
pub struct LogWriter {
    written: usize,
}

impl LogWriter {
    /// A writer for a log whose entries so far are in the journal.
    pub fn after(log: &voice::history::EventLog) -> Self {
        LogWriter { written: log.len() }
    }

    /// Write the entries `log` gained since the last call.
    pub fn write(&mut self, journal: &Journal, log: &voice::history::EventLog) {
        for e in &log.events()[self.written.min(log.len())..] {
            let (kind, data) = log::row(log, e).into_stored();
            journal.record(e.at.as_secs_f64(), kind, data);
        }
        self.written = self.written.max(log.len());
    }
}

/// An [`Observer`] that journals the call's log as it grows (and the
/// session when it changes) and passes events on to `inner` (the console
/// printer).
pub struct JournalObserver<'a> {
    journal: Journal,
    inner: &'a mut dyn Observer,
    start_unix: f64,
    rows: LogWriter,
    snapshots: SessionSnapshots,
}

impl<'a> JournalObserver<'a> {
    pub fn new(journal: Journal, start_unix: f64, inner: &'a mut dyn Observer) -> Self {
        JournalObserver {
            journal,
            inner,
            start_unix,
            rows: LogWriter::default(),
            snapshots: SessionSnapshots::default(),
        }
    }
}

impl Observer for JournalObserver<'_> {
    fn on_event(&mut self, t: f64, event: &CallEvent) {
        self.inner.on_event(t, event);
    }

    fn on_log(&mut self, log: &voice::history::EventLog) {
        self.rows.write(&self.journal, log);
        self.inner.on_log(log);
    }

    fn on_session(&mut self, t: f64, session: &Session) {
        if let Some(snap) = self.snapshots.changed(session) {
            self.journal
                .record_json(self.start_unix + t, "session", snap);
        }
        self.inner.on_session(t, session);
    }
}

/// Rebuild the outcome of a call from its journal: the last session
/// snapshot, the transcript as the projection of the log the journal
/// holds ([`log::log_of_rows`], then [`agent::engine::transcript_of`], as
/// for a live call: an agent line cut short keeps only what was heard,
/// marked interrupted, and one cut before a word was heard is left out),
/// the end from the last event (`ended_by` is `Interrupted` unless an
/// `ended` event says otherwise).
pub fn rebuild(call_id: &str, events: &[store::StoredEvent], started_unix: f64) -> Outcome {
    let mut session: Session = events
        .iter()
        .rev()
        .find(|e| e.kind == "session")
        .and_then(|e| serde_json::from_value(e.data.clone()).ok())
        .unwrap_or_else(|| Session::new(String::new()));
    if session.call_sid.is_empty() {
        session.call_sid = call_id.to_string();
    }
    let rows: Vec<(f64, Entry)> = events
        .iter()
        .filter_map(|e| Some((e.at_unix, Entry::read(&e.kind, &e.data)?)))
        .collect();
    let ended_by = rows
        .iter()
        .rev()
        .find_map(|(_, e)| match e {
            Entry::Ended(end) => Some(Ending::from_stored(&end.by)),
            _ => None,
        })
        .unwrap_or(Ending::Interrupted);
    let log = log::log_of_rows(rows.iter().map(|(at, e)| (*at, e)));
    session.transcript_log = agent::engine::transcript_of(&log);
    if session.conversation_history.is_empty() {
        // Snapshots leave the caller lines out; the log has each one.
        session.conversation_history = agent::engine::caller_lines(&log);
    }
    if session.start_time <= 0.0 {
        session.start_time = started_unix;
    }
    let end = events
        .last()
        .map(|e| e.at_unix)
        .unwrap_or(started_unix)
        .max(started_unix);
    Outcome {
        session,
        log,
        ended_by,
        start_time: started_unix,
        end_time: end,
        tools: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent::State;
    use serde_json::json;

    #[tokio::test]
    async fn events_are_written_in_order_and_close_waits_for_them() {
        let store = store::Store::open_in_memory().await.unwrap();
        let j = Journal::begin(&store, "CA1", "+15125550142", 100.0, "test:1:0")
            .await
            .unwrap();
        let other = j.clone();
        for i in 0..200 {
            let h = if i % 2 == 0 { &j } else { &other };
            h.record(100.0 + f64::from(i), "caller", json!({ "n": i }));
        }
        drop(other);
        let stats = j.clone().close().await;
        assert_eq!(
            stats,
            JournalStats {
                written: 200,
                lost: 0,
                retries: 0
            }
        );
        j.record(400.0, "caller", json!({"n": "after close"}));
        let events = store.events("CA1").await.unwrap();
        let ns: Vec<i64> = events
            .iter()
            .map(|e| e.data["n"].as_i64().unwrap())
            .collect();
        assert_eq!(
            ns,
            (0..200).collect::<Vec<_>>(),
            "in order, nothing after close"
        );
        let seqs: Vec<i64> = events.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, (1..=200).collect::<Vec<_>>());
    }

    fn ev(seq: i64, at: f64, kind: &str, data: Value) -> store::StoredEvent {
        store::StoredEvent {
            call_id: "CA1".into(),
            seq,
            at_unix: at,
            kind: kind.into(),
            data,
        }
    }

    #[test]
    fn rebuild_keeps_only_what_was_heard_of_a_line_cut_short() {
        let line = |id: u64, text: &str| json!({"text": text, "state": "safety", "msg_id": id});
        let events = [
            ev(
                1,
                51.0,
                "agent",
                line(1, "Thanks for calling! How can I help?"),
            ),
            ev(
                2,
                52.0,
                "agent",
                line(2, "Quick safety check — any gas smell?"),
            ),
            ev(
                3,
                53.0,
                "interrupted",
                json!({"msg_id": 2, "heard": "Quick safety"}),
            ),
            ev(4, 54.0, "agent", line(3, "Never heard.")),
            ev(5, 55.0, "interrupted", json!({"msg_id": 3, "heard": " "})),
        ];
        let o = rebuild("CA3", &events, 50.0);
        let agent: Vec<(String, bool)> = o
            .session
            .transcript_log
            .iter()
            .map(|e| (e.content.clone().unwrap_or_default(), e.interrupted))
            .collect();
        assert_eq!(
            agent,
            [
                ("Thanks for calling! How can I help?".to_string(), false),
                ("Quick safety".to_string(), true),
            ]
        );
    }

    #[test]
    fn rebuild_takes_the_last_session_and_the_lines_in_order() {
        let mut s = Session::new("+15125550142");
        s.customer_name = "Dana".into();
        s.state = State::Discovery;
        s.conversation_history = vec![agent::session::HistoryMessage {
            role: "user".into(),
            content: "my AC is out".into(),
        }];
        let snapshot = session_snapshot(&s);
        assert!(
            snapshot.get("conversation_history").is_none()
                && snapshot.get("transcript_log").is_none(),
            "a snapshot leaves the lines to the events: {snapshot}"
        );
        let events = vec![
            ev(
                1,
                100.0,
                "agent",
                json!({"text": "Thanks for calling!", "state": "welcome"}),
            ),
            ev(
                2,
                102.0,
                "caller",
                json!({"text": "my AC is out", "state": "welcome"}),
            ),
            ev(
                3,
                102.5,
                "tool_result",
                json!({"tool": "lookup_caller", "result": {"found": false}, "state": "lookup"}),
            ),
            ev(4, 103.0, "session", snapshot),
            ev(
                5,
                104.0,
                "caller",
                json!({"text": "78745", "state": "service_area"}),
            ),
        ];
        let o = rebuild("CA1", &events, 100.0);
        assert_eq!(o.session.customer_name, "Dana");
        assert_eq!(o.session.state, State::Discovery);
        assert_eq!(o.session.call_sid, "CA1");
        assert_eq!(o.ended_by, Ending::Interrupted);
        assert_eq!((o.start_time, o.end_time), (100.0, 104.0));
        let text = agent::transcript::to_plain_text(&o.session.transcript_log);
        assert_eq!(
            text,
            "Agent: Thanks for calling!\nCaller: my AC is out\n[Tool: lookup_caller]\nCaller: 78745"
        );
        // The caller lines (what post-call extraction reads) come back
        // from the events, the one after the snapshot included.
        let lines: Vec<&str> = o
            .session
            .conversation_history
            .iter()
            .map(|m| m.content.as_str())
            .collect();
        assert_eq!(lines, ["my AC is out", "78745"]);
        assert!(o
            .session
            .conversation_history
            .iter()
            .all(|m| m.role == "user"));
    }

    #[test]
    fn rebuild_of_nothing_is_an_empty_interrupted_call_and_an_end_event_counts() {
        let o = rebuild("CA2", &[], 50.0);
        assert!(o.session.transcript_log.is_empty());
        assert_eq!(o.session.call_sid, "CA2");
        assert_eq!(o.ended_by, Ending::Interrupted);
        let o = rebuild("CA2", &[ev(1, 60.0, "ended", json!({"by": "agent"}))], 50.0);
        assert_eq!(o.ended_by, Ending::Agent);
    }
}
