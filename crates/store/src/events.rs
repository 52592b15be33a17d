//! The call event log and the call lifecycle.
//!
//! Everything that happens in a call is appended to `call_events` as it
//! happens ([`Store::append_event`]); the call's row in `calls` says whether
//! it is `active` (owned by a live process, `instance`), `completed` (its
//! final record is saved) or `interrupted` (its process died: found by
//! [`Store::mark_orphans_interrupted`] at the next start; the events are what is
//! left of it, and post-call processing still has to run).
//!
//! ## Appending fast
//!
//! An append must be durable when it returns, and cheap: a busy instance
//! appends thousands of events a second. How depends on the database:
//!
//! * **SQLite file**: the append runs the `INSERT` on the caller's thread,
//!   on a connection reserved for the event log — one autocommit `INSERT`,
//!   or under load the appends queued meanwhile in one transaction. See
//!   `sqlite_events` for why not through sqlx, and how it never blocks the
//!   runtime on a lock or a checkpoint.
//! * **PostgreSQL** (and in-memory SQLite): a **group-commit writer** — a
//!   task that owns one connection (PostgreSQL: besides the pool, so
//!   appends never queue behind pool users), takes every append waiting in
//!   its queue (up to [`MAX_BATCH`]), writes them with one multi-row
//!   `INSERT` — one statement, one implicit transaction, one commit (one
//!   WAL flush on PostgreSQL) — and then acknowledges each. An append's
//!   future resolves only after the commit of its row. If the batch fails
//!   (a duplicate sequence number, say), its rows are retried one by one
//!   so each caller gets its own answer.
//!
//! Either starts on the first append (the writer on that caller's tokio
//! runtime) and stops when the last clone of the [`Store`] is dropped or
//! [`Store::close`] is called.

use crate::records::CallSummary;
use crate::sqlite_events::SqliteAppender;
use crate::timefmt::{normalize_phone, ts};
use crate::{dedicated_connection, Store, StoreError, Target};
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use sqlx::any::AnyRow;
use sqlx::{AnyConnection, AnyPool, Connection, Row};
use std::fmt::Write as _;
use tokio::sync::{mpsc, oneshot};

/// The single-row append, shared by every path (the group-commit writer's
/// one-row statement is this same text).
pub(crate) const INSERT_ONE: &str =
    "INSERT INTO call_events (call_id, seq, at_unix, kind, data) VALUES ($1, $2, $3, $4, $5)";

/// At most this many appends are written by one statement.
pub(crate) const MAX_BATCH: usize = 64;
/// Appends waiting for the writer before `append_event` itself waits.
const QUEUE: usize = 16_384;

/// Where a call stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CallStatus {
    /// Live: owned by the process named in `instance`.
    Active,
    /// Ended, and its final record is saved.
    Completed,
    /// Its process stopped before the call ended; the events are the record.
    Interrupted,
}

impl CallStatus {
    /// The stored spelling: `active`, `completed`, `interrupted`.
    pub fn as_str(self) -> &'static str {
        match self {
            CallStatus::Active => "active",
            CallStatus::Completed => "completed",
            CallStatus::Interrupted => "interrupted",
        }
    }

    pub(crate) fn parse(s: &str) -> Result<Self, StoreError> {
        match s {
            "active" => Ok(CallStatus::Active),
            "completed" => Ok(CallStatus::Completed),
            "interrupted" => Ok(CallStatus::Interrupted),
            other => Err(StoreError::BadValue {
                what: "calls.status".into(),
                value: other.into(),
            }),
        }
    }
}

impl std::fmt::Display for CallStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One event of a call's log, as stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoredEvent {
    pub call_id: String,
    /// Position in the call's log (assigned by the caller, unique per call).
    pub seq: i64,
    /// When it happened (unix seconds).
    pub at_unix: f64,
    /// The event type, e.g. `caller_said`.
    pub kind: String,
    pub data: Value,
}

fn event_from(row: &AnyRow) -> Result<StoredEvent, StoreError> {
    let call_id: String = row.try_get("call_id")?;
    let seq: i64 = row.try_get("seq")?;
    let data: String = row.try_get("data")?;
    let data = serde_json::from_str(&data).map_err(|source| {
        StoreError::json(
            format!("call_events.data of call {call_id} seq {seq}"),
            source,
        )
    })?;
    Ok(StoredEvent {
        seq,
        at_unix: row.try_get("at_unix")?,
        kind: row.try_get("kind")?,
        data,
        call_id,
    })
}

impl Store {
    /// Record that a call has begun on `instance` (status `active`). A call
    /// that is already active or interrupted (the same call id coming back,
    /// e.g. after a restart) is taken over by `instance` and active again;
    /// a completed call cannot begin again ([`StoreError::CallCompleted`]).
    pub async fn begin_call(
        &self,
        call_id: &str,
        phone: &str,
        started_unix: f64,
        instance: &str,
    ) -> Result<(), StoreError> {
        let on_conflict = "DO UPDATE SET status = 'active', instance = excluded.instance, \
                           postcall_done = 0 WHERE calls.status <> 'completed'";
        if !self
            .insert_active_call(on_conflict, call_id, phone, started_unix, instance)
            .await?
        {
            return Err(StoreError::CallCompleted {
                call_id: call_id.into(),
            });
        }
        Ok(())
    }

    /// Insert `call_id` as an active call; what a row already there gets
    /// is `on_conflict` (an `ON CONFLICT (call_id)` action). Whether a row
    /// was written.
    async fn insert_active_call(
        &self,
        on_conflict: &str,
        call_id: &str,
        phone: &str,
        started_unix: f64,
        instance: &str,
    ) -> Result<bool, StoreError> {
        let started = DateTime::<Utc>::from_timestamp_millis((started_unix * 1000.0) as i64)
            .unwrap_or_default();
        let sql = format!(
            "INSERT INTO calls (call_id, phone, started_at, started_unix, record, transcript, \
                 status, instance, postcall_done) \
             VALUES ($1, $2, $3, $4, 'null', '[]', 'active', $5, 0) \
             ON CONFLICT (call_id) {on_conflict}"
        );
        let done = sqlx::query(&sql)
            .bind(call_id)
            .bind(normalize_phone(phone))
            .bind(ts(&started))
            .bind(started.timestamp())
            .bind(instance)
            .execute(self.pool())
            .await?;
        Ok(done.rows_affected() > 0)
    }

    /// Record that a *new* call has begun on `instance` (status `active`),
    /// atomically: when any call with this id is already in the database —
    /// live here or on another instance, interrupted or completed — nothing
    /// is written and the answer is [`StoreError::CallExists`]. A phone
    /// server uses this, so that a stream reusing a call id can never
    /// take over, overwrite or re-run the earlier call.
    pub async fn begin_new_call(
        &self,
        call_id: &str,
        phone: &str,
        started_unix: f64,
        instance: &str,
    ) -> Result<(), StoreError> {
        if !self
            .insert_active_call("DO NOTHING", call_id, phone, started_unix, instance)
            .await?
        {
            return Err(StoreError::CallExists {
                call_id: call_id.into(),
            });
        }
        Ok(())
    }

    /// Append one event to a call's log. Returns once the event is
    /// committed; a `(call_id, seq)` already in the log is
    /// [`StoreError::DuplicateEvent`]. Concurrent appends (from every call
    /// of this store) are group-committed: see the module documentation.
    pub async fn append_event(
        &self,
        call_id: &str,
        seq: i64,
        at_unix: f64,
        kind: &str,
        data: &Value,
    ) -> Result<(), StoreError> {
        let data = serde_json::to_string(data).map_err(|source| {
            StoreError::json(format!("event {seq} ({kind}) of call {call_id}"), source)
        })?;
        self.append_event_json(call_id, seq, at_unix, kind, &data)
            .await
    }

    /// [`Store::append_event`] for `data` already written as JSON text (a
    /// live call's journal keeps its waiting events as text: a fraction of
    /// the memory of a `Value` tree). `data` must be one JSON value; it is
    /// stored as given.
    pub async fn append_event_json(
        &self,
        call_id: &str,
        seq: i64,
        at_unix: f64,
        kind: &str,
        data: &str,
    ) -> Result<(), StoreError> {
        match self.event_sink().await? {
            EventSink::Sqlite(a) => a.append(call_id, seq, at_unix, kind, data).await,
            EventSink::Writer(w) => {
                w.append(PendingEvent {
                    call_id: call_id.to_string(),
                    seq,
                    at_unix,
                    kind: kind.to_string(),
                    data: data.to_owned(),
                    ack: None,
                })
                .await
            }
        }
    }

    /// The log of one call, in `seq` order (empty for an unknown call).
    pub async fn events(&self, call_id: &str) -> Result<Vec<StoredEvent>, StoreError> {
        sqlx::query(
            "SELECT call_id, seq, at_unix, kind, data FROM call_events \
             WHERE call_id = $1 ORDER BY seq",
        )
        .bind(call_id)
        .fetch_all(self.pool())
        .await?
        .iter()
        .map(event_from)
        .collect()
    }

    /// Every call still `active` whose process is gone (no heartbeat since
    /// `now_unix - lease_s`, see [`crate::instances`]) becomes
    /// `interrupted`. Returns their ids. A live process's calls are never
    /// touched, whatever its name.
    pub async fn mark_orphans_interrupted(
        &self,
        now_unix: f64,
        lease_s: f64,
    ) -> Result<Vec<String>, StoreError> {
        let mut ids: Vec<String> = sqlx::query_scalar(&format!(
            "UPDATE calls SET status = 'interrupted' \
             WHERE status = 'active' AND {} RETURNING call_id",
            crate::instances::OWNER_GONE
        ))
        .bind(now_unix - lease_s)
        .fetch_all(self.pool())
        .await?;
        ids.sort();
        if !ids.is_empty() {
            tracing::warn!(calls = ?ids, "calls left active by a process that is gone");
        }
        Ok(ids)
    }

    /// Record that post-call processing of `call_id` is done. `false` for an
    /// unknown call.
    pub async fn mark_postcall_done(&self, call_id: &str) -> Result<bool, StoreError> {
        let done = sqlx::query("UPDATE calls SET postcall_done = 1 WHERE call_id = $1")
            .bind(call_id)
            .execute(self.pool())
            .await?;
        Ok(done.rows_affected() > 0)
    }

    /// Where a call stands (`None`: no such call).
    pub async fn call_status(&self, call_id: &str) -> Result<Option<CallStatus>, StoreError> {
        Ok(self
            .call_summary(call_id)
            .await?
            .map(|s: CallSummary| s.status))
    }
}

// ------------------------------------------------------------------ writer

/// Where appends go (see the module documentation).
pub(crate) enum EventSink {
    Sqlite(SqliteAppender),
    Writer(EventWriter),
}

impl EventSink {
    /// Start the sink for `t`.
    pub(crate) async fn start(t: WriterTarget) -> Result<EventSink, StoreError> {
        match &t.target {
            Target::File { path, .. } => {
                Ok(EventSink::Sqlite(SqliteAppender::open(path, t.busy_limit)?))
            }
            _ => Ok(EventSink::Writer(EventWriter::start(t).await?)),
        }
    }

    /// Finish what is queued, then refuse appends.
    pub(crate) async fn close(&self) {
        match self {
            EventSink::Sqlite(a) => a.close().await,
            EventSink::Writer(w) => w.close().await,
        }
    }
}

/// What the writer needs to reach the database.
pub(crate) struct WriterTarget {
    pub(crate) pool: AnyPool,
    pub(crate) target: Target,
    /// How long a SQLite append may wait for another writer.
    pub(crate) busy_limit: std::time::Duration,
}

/// An append on its way to the writer.
pub(crate) struct PendingEvent {
    call_id: String,
    seq: i64,
    at_unix: f64,
    kind: String,
    data: String,
    ack: Option<oneshot::Sender<Result<(), StoreError>>>,
}

impl PendingEvent {
    fn answer(&mut self, result: Result<(), StoreError>) {
        if let Some(ack) = self.ack.take() {
            // The caller may have given up (its future dropped): fine.
            let _ = ack.send(result);
        }
    }
}

enum Msg {
    Append(PendingEvent),
    Close(oneshot::Sender<()>),
}

/// The handle of a store's group-commit writer task.
pub(crate) struct EventWriter {
    tx: mpsc::Sender<Msg>,
}

impl EventWriter {
    /// Connect (a dedicated connection, except for an in-memory database)
    /// and spawn the writer on the current runtime.
    async fn start(t: WriterTarget) -> Result<EventWriter, StoreError> {
        let conn = match &t.target {
            Target::Memory => Conn::Pool(t.pool.clone()),
            target => Conn::Own(dedicated_connection(target).await?, target.clone()),
        };
        let (tx, rx) = mpsc::channel(QUEUE);
        tokio::spawn(run(conn, rx));
        Ok(EventWriter { tx })
    }

    async fn append(&self, mut ev: PendingEvent) -> Result<(), StoreError> {
        let (ack, done) = oneshot::channel();
        ev.ack = Some(ack);
        self.tx
            .send(Msg::Append(ev))
            .await
            .map_err(|_| StoreError::Closed)?;
        done.await.map_err(|_| StoreError::Closed)?
    }

    /// Write what is queued, then stop.
    async fn close(&self) {
        let (ack, done) = oneshot::channel();
        if self.tx.send(Msg::Close(ack)).await.is_ok() {
            let _ = done.await;
        }
    }
}

/// The writer's connection: its own, or (in-memory database) the pool's.
enum Conn {
    /// `None` after a connection failure: reconnect before the next batch.
    Own(Option<AnyConnection>, Target),
    Pool(AnyPool),
}

async fn run(mut conn: Conn, mut rx: mpsc::Receiver<Msg>) {
    let mut sql = SqlCache::default();
    let mut batch: Vec<PendingEvent> = Vec::with_capacity(MAX_BATCH);
    let mut closing = None;
    while closing.is_none() {
        match rx.recv().await {
            None => break,
            Some(Msg::Close(ack)) => closing = Some(ack),
            Some(Msg::Append(ev)) => batch.push(ev),
        }
        while closing.is_none() && batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(Msg::Append(ev)) => batch.push(ev),
                Ok(Msg::Close(ack)) => closing = Some(ack),
                Err(_) => break,
            }
        }
        if !batch.is_empty() {
            write_batch(&mut conn, &mut sql, &mut batch).await;
            batch.clear();
        }
    }
    // Refuse what arrived after the close.
    rx.close();
    while let Ok(msg) = rx.try_recv() {
        match msg {
            Msg::Append(mut ev) => ev.answer(Err(StoreError::Closed)),
            Msg::Close(ack) => {
                let _ = ack.send(());
            }
        }
    }
    if let Conn::Own(Some(c), _) = conn {
        let _ = c.close().await;
    }
    if let Some(ack) = closing {
        let _ = ack.send(());
    }
}

/// The multi-row INSERT for each batch size, built once.
#[derive(Default)]
struct SqlCache(Vec<String>);

impl SqlCache {
    fn insert(&mut self, n: usize) -> &str {
        while self.0.len() < n {
            let rows = self.0.len() + 1;
            let mut s =
                String::from("INSERT INTO call_events (call_id, seq, at_unix, kind, data) VALUES ");
            for i in 0..rows {
                let b = i * 5;
                let sep = if i == 0 { "" } else { ", " };
                let _ = write!(
                    s,
                    "{sep}(${}, ${}, ${}, ${}, ${})",
                    b + 1,
                    b + 2,
                    b + 3,
                    b + 4,
                    b + 5
                );
            }
            self.0.push(s);
        }
        &self.0[n - 1]
    }
}

/// Whether an error means the connection is unusable.
fn connection_lost(e: &sqlx::Error) -> bool {
    matches!(
        e,
        sqlx::Error::Io(_)
            | sqlx::Error::Protocol(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::WorkerCrashed
            | sqlx::Error::PoolClosed
    )
}

/// The error for the append of `ev`.
fn append_error(e: sqlx::Error, ev: &PendingEvent) -> StoreError {
    match &e {
        sqlx::Error::Database(db) if db.is_unique_violation() => StoreError::DuplicateEvent {
            call_id: ev.call_id.clone(),
            seq: ev.seq,
        },
        _ => StoreError::Db(e),
    }
}

async fn write_batch(conn: &mut Conn, sql: &mut SqlCache, batch: &mut [PendingEvent]) {
    let mut pooled;
    let c: &mut AnyConnection = match conn {
        Conn::Own(slot, target) => {
            if slot.is_none() {
                match dedicated_connection(target).await {
                    Ok(c) => *slot = c,
                    Err(e) => return fail_all(batch, e),
                }
            }
            match slot.as_mut() {
                Some(c) => c,
                None => return fail_all(batch, StoreError::Closed),
            }
        }
        Conn::Pool(pool) => match pool.acquire().await {
            Ok(c) => {
                pooled = c;
                &mut pooled
            }
            Err(e) => return fail_all(batch, e.into()),
        },
    };
    let mut lost = false;
    let res = insert(c, sql.insert(batch.len()), batch).await;
    match res {
        Ok(()) => batch.iter_mut().for_each(|ev| ev.answer(Ok(()))),
        Err(e) if batch.len() == 1 => {
            lost = connection_lost(&e);
            let err = append_error(e, &batch[0]);
            batch[0].answer(Err(err));
        }
        Err(e) => {
            // One bad row fails the statement: give each its own answer.
            tracing::debug!(error = %e, rows = batch.len(), "event batch failed; row by row");
            let one = sql.insert(1).to_string();
            for ev in batch.iter_mut() {
                if lost {
                    ev.answer(Err(StoreError::EventLog(
                        "the event log connection was lost".into(),
                    )));
                    continue;
                }
                match insert(c, &one, std::slice::from_ref(ev)).await {
                    Ok(()) => ev.answer(Ok(())),
                    Err(e) => {
                        lost = connection_lost(&e);
                        let err = append_error(e, ev);
                        ev.answer(Err(err));
                    }
                }
            }
        }
    }
    if lost {
        tracing::warn!("event log connection lost; reconnecting on the next append");
        if let Conn::Own(slot, _) = conn {
            *slot = None;
        }
    }
}

async fn insert(
    c: &mut AnyConnection,
    sql: &str,
    rows: &[PendingEvent],
) -> Result<(), sqlx::Error> {
    let mut q = sqlx::query(sql);
    for ev in rows {
        q = q
            .bind(ev.call_id.as_str())
            .bind(ev.seq)
            .bind(ev.at_unix)
            .bind(ev.kind.as_str())
            .bind(ev.data.as_str());
    }
    q.execute(c).await?;
    Ok(())
}

fn fail_all(batch: &mut [PendingEvent], first: StoreError) {
    let text = first.to_string();
    let mut first = Some(first);
    for ev in batch {
        let err = first
            .take()
            .unwrap_or_else(|| StoreError::EventLog(text.clone()));
        ev.answer(Err(err));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_statements() {
        let mut c = SqlCache::default();
        assert_eq!(c.insert(1), INSERT_ONE);
        assert!(c.insert(3).ends_with("($11, $12, $13, $14, $15)"));
        assert_eq!(c.insert(MAX_BATCH).matches('(').count(), MAX_BATCH + 1);
    }
}
