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
//! Event kinds and their `data`:
//! * `caller` `{text, state}` — a caller line.
//! * `agent` `{text, state, canned?}` — an agent line (canned id when it was
//!   a canned line).
//! * `tool_call` `{tool, args}`, `tool_result` `{tool, result, state}`.
//! * `state` `{from, to}`.
//! * `session` — the session (without its transcript) after it changed.
//! * `ended` `{by}`.
//! * `latency` — where one answered turn's time went (voice calls only;
//!   see [`crate::call::latency::TurnLatency`]).

use crate::call::driver::{CallEvent, Observer};
use crate::call::outcome::{Ending, Outcome};
use agent::session::{Session, TranscriptEntry};
use agent::State;
use serde_json::Value;
use std::time::Duration;

pub mod entry;

pub use entry::{Entry, Line};
use tokio::sync::oneshot;

/// One event waiting to be written.
struct Pending {
    at: f64,
    kind: &'static str,
    data: Value,
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
            let append = Box::pin(store.append_event(&call_id, seq + 1, e.at, e.kind, &e.data));
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

/// Journals the session (without its transcript) each time it changed.
///
/// Only a fingerprint of the last snapshot is kept (a live call must stay
/// small: the snapshot holds the whole conversation history, and a
/// thousand calls would each carry one).
#[derive(Default)]
pub struct SessionSnapshots {
    last: Option<u64>,
}

impl SessionSnapshots {
    /// Record `session` at `at` unless it equals the last one recorded.
    pub fn record(&mut self, journal: &Journal, at: f64, session: &Session) {
        use std::hash::{Hash, Hasher};
        let snap = session_snapshot(session);
        let mut h = std::collections::hash_map::DefaultHasher::new();
        snap.to_string().hash(&mut h);
        let print = h.finish();
        if self.last != Some(print) {
            journal.record(at, "session", snap);
            self.last = Some(print);
        }
    }
}

/// An [`Observer`] that journals every event (and the session when it
/// changes) and passes events on to `inner` (the console printer).
pub struct JournalObserver<'a> {
    journal: Journal,
    inner: &'a mut dyn Observer,
    start_unix: f64,
    snapshots: SessionSnapshots,
}

impl<'a> JournalObserver<'a> {
    pub fn new(journal: Journal, start_unix: f64, inner: &'a mut dyn Observer) -> Self {
        JournalObserver {
            journal,
            inner,
            start_unix,
            snapshots: SessionSnapshots::default(),
        }
    }
}

/// The JSON form of a call event: its kind and data.
pub fn event_json(event: &CallEvent) -> (&'static str, Value) {
    let line = |text: &str, state: State| Line {
        text: text.to_string(),
        state: state.as_str().to_string(),
        ..Line::default()
    };
    let entry = match event {
        CallEvent::Agent {
            text,
            state,
            canned,
        } => Entry::Agent(Line {
            canned: canned.clone(),
            ..line(text, *state)
        }),
        CallEvent::Caller { text, state } => Entry::Caller(line(text, *state)),
        CallEvent::ToolCall(call) => Entry::ToolCall(entry::ToolCall {
            tool: call.tool().as_str().to_string(),
            args: call.args_json(),
        }),
        CallEvent::ToolResult {
            tool,
            result,
            state,
        } => Entry::ToolResult(entry::ToolResult {
            tool: tool.as_str().to_string(),
            result: result.clone(),
            state: state.as_str().to_string(),
            outcome: None,
        }),
        CallEvent::StateChanged { from, to } => Entry::State(entry::StateChange {
            from: from.as_str().to_string(),
            to: to.as_str().to_string(),
        }),
        CallEvent::Ended(by) => Entry::Ended(entry::Ended {
            by: by.as_str().to_string(),
        }),
    };
    entry.into_stored()
}

/// The session without its transcript (the events carry the lines).
pub fn session_snapshot(s: &Session) -> Value {
    let mut v = serde_json::to_value(s).unwrap_or(Value::Null);
    if let Some(o) = v.as_object_mut() {
        o.remove("transcript_log");
    }
    v
}

impl Observer for JournalObserver<'_> {
    fn on_event(&mut self, t: f64, event: &CallEvent) {
        let (kind, data) = event_json(event);
        self.journal.record(self.start_unix + t, kind, data);
        self.inner.on_event(t, event);
    }

    fn on_session(&mut self, t: f64, session: &Session) {
        self.snapshots
            .record(&self.journal, self.start_unix + t, session);
        self.inner.on_session(t, session);
    }
}

/// Rebuild the outcome of a call from its journal: the last session
/// snapshot, the transcript from the caller/agent/tool lines, the end from
/// the last event (`ended_by` is `Interrupted` unless an `ended` event
/// says otherwise). An agent line the journal says was cut short keeps
/// only what was heard, marked interrupted, and one cut before a word was
/// heard is left out — as the live call's engine records it.
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
    let state_of = |state: &str| state.parse::<State>().unwrap_or(session.state);
    // What was heard of each agent line cut short (voice calls).
    let cut: std::collections::HashMap<u64, String> = events
        .iter()
        .filter_map(|e| match Entry::read(&e.kind, &e.data) {
            Some(Entry::Interrupted(i)) => Some((i.msg_id, i.heard.trim().to_string())),
            _ => None,
        })
        .collect();
    let mut log = Vec::new();
    let mut ended_by = Ending::Interrupted;
    for e in events {
        match Entry::read(&e.kind, &e.data) {
            Some(Entry::Agent(l)) if l.msg_id.is_some_and(|id| cut.contains_key(&id)) => {
                let heard = &cut[&l.msg_id.unwrap_or_default()];
                if !heard.is_empty() {
                    let mut line = TranscriptEntry::agent(heard, e.at_unix, state_of(&l.state));
                    line.interrupted = true;
                    log.push(line);
                }
            }
            Some(Entry::Caller(l)) => log.push(TranscriptEntry::user(
                &l.text,
                e.at_unix,
                state_of(&l.state),
            )),
            Some(Entry::Agent(l)) => log.push(TranscriptEntry::agent(
                &l.text,
                e.at_unix,
                state_of(&l.state),
            )),
            Some(Entry::ToolResult(t)) => log.push(TranscriptEntry::tool(
                if t.tool.is_empty() { "tool" } else { &t.tool },
                t.result,
                e.at_unix,
                state_of(&t.state),
            )),
            Some(Entry::Ended(end)) => ended_by = Ending::from_stored(&end.by),
            _ => {}
        }
    }
    session.transcript_log = log;
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
        ended_by,
        start_time: started_unix,
        end_time: end,
        tools: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
            ev(4, 103.0, "session", session_snapshot(&s)),
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
