//! The event log's hot path on a SQLite file: appends run on the caller's
//! thread, on a connection of their own.
//!
//! Why not through sqlx: sqlx runs each SQLite connection on a worker
//! thread, so every statement is two cross-thread hand-offs (task → worker
//! → task), and a writer task adds two more. Measured on the 2-core CI
//! machine (`benches/events.rs`, 200 calls, ~5,700 appends/s) that path
//! gave p50 ≈ 65 µs and p99 ≈ 2.6 ms, against ≈ 7 µs for the `INSERT`
//! itself (WAL, `synchronous=NORMAL`: a commit is a `write()`, not an
//! `fsync`). So on a SQLite file an append takes one `rusqlite` connection
//! (the same bundled libsqlite3 that sqlx links) and runs the cached
//! `INSERT` — committed when it returns. It occupies the calling runtime
//! thread for those few microseconds only:
//!
//! * the connection sits behind a tokio mutex; a waiting append spins for
//!   up to [`SPIN`] (holders take microseconds, and waking a parked task
//!   from the other thread costs more on a VM), then yields — it never
//!   parks the thread;
//! * **group commit without a writer task**: an append first puts its event
//!   in a queue, then whoever gets the connection writes everything queued
//!   — alone, a plain autocommit `INSERT`; under load, the appends that
//!   queued up meanwhile, in one transaction (a duplicate fails alone) —
//!   and each finds its answer when its turn comes;
//! * the connection has `busy_timeout = 0`: if another connection holds
//!   SQLite's write lock (a booking transaction, say), nothing is written,
//!   the events go back to the queue and are retried after an async sleep
//!   — never blocking the runtime in SQLite's busy handler (up to the
//!   store's 10 s busy timeout);
//! * it never checkpoints the WAL itself (`wal_autocheckpoint = 0`): a
//!   checkpoint copies pages and syncs the files — milliseconds on the path
//!   of whichever commit crosses the threshold, which at the benchmark's
//!   ~14,000 WAL frames a second was every ~90 ms (p99 ≈ 2.6 ms).
//!
//! ## Checkpoints
//!
//! A background thread with its own connection checkpoints every
//! [`CHECKPOINT_EVERY`] when there were appends, in two steps. A `PASSIVE`
//! checkpoint first copies the bulk of the WAL into the database while
//! appends go on. But with appends never pausing, a passive checkpoint never
//! catches up with the end of the WAL, and SQLite only starts the WAL over
//! once everything in it is checkpointed — the file would grow without
//! bound. So the thread then holds the appenders' lock for a second, short
//! `PASSIVE` pass over the frames written meanwhile (one sync: 2–3 ms on the
//! CI machine); the next append starts the WAL over. Appends queue
//! asynchronously for that moment. The WAL thus holds about
//! [`CHECKPOINT_EVERY`] of appends (≈ 150 MB at the benchmark's 5,700
//! appends/s, a few MB for a typical office); the file keeps its
//! high-water size until the store closes (trimming it right after the
//! restart stalled appends for tens of milliseconds).
//!
//! Result on the CI machine (200 calls, ~5,700 appends/s, 2 runtime
//! threads, quiet machine): p50 ≈ 8.5 µs, p99 ≈ 40 µs; the checkpoint
//! pauses show at p99.9 (1–2 ms).
//!
//! The SQL is the same constant the portable path uses
//! ([`INSERT_ONE`]).

use crate::events::INSERT_ONE;
use crate::StoreError;
use rusqlite::{Connection, ErrorCode, OpenFlags};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};
use tokio::sync::Mutex;

/// How often the background thread checkpoints the WAL (when there were
/// appends): the WAL holds at most about this long of appends.
pub(crate) const CHECKPOINT_EVERY: Duration = Duration::from_secs(3);

/// How long an append spins for the connection before waiting
/// asynchronously (see `SqliteAppender::lock_conn`).
const SPIN: Duration = Duration::from_micros(100);

/// The appenders' connection (`None` once closed).
type Shared = Arc<Mutex<Option<Connection>>>;

/// Appends to one SQLite file (see the module documentation).
pub(crate) struct SqliteAppender {
    conn: Shared,
    /// Appends waiting to be written by whoever holds `conn` next.
    queue: std::sync::Mutex<Vec<Queued>>,
    /// Set by appends, cleared by the checkpoint thread.
    dirty: Arc<AtomicBool>,
    /// Set while the checkpoint thread holds (or is about to take) the
    /// connection: no point spinning for it.
    pausing: Arc<AtomicBool>,
    path: PathBuf,
    busy_limit: Duration,
    /// Dropping it stops the checkpoint thread.
    _stop_checkpoints: mpsc::Sender<()>,
}

/// Where the answer for one queued append is left.
type Slot = Arc<std::sync::Mutex<Option<Result<(), StoreError>>>>;

/// An append waiting in the queue.
struct Queued {
    call_id: String,
    seq: i64,
    at_unix: f64,
    kind: String,
    data: String,
    slot: Slot,
}

/// Another connection holds SQLite's write lock: nothing was written.
struct Busy;

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Nothing holding these locks can panic half-way through an update.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl SqliteAppender {
    /// Open the appender's connection and start the checkpoint thread.
    pub(crate) fn open(path: &Path, busy_limit: Duration) -> Result<SqliteAppender, StoreError> {
        let conn = connect(path).map_err(|e| open_error(path, &e))?;
        conn.execute_batch("PRAGMA wal_autocheckpoint = 0")
            .map_err(|e| open_error(path, &e))?;
        let checkpoints = connect(path).map_err(|e| open_error(path, &e))?;
        let conn: Shared = Arc::new(Mutex::new(Some(conn)));
        let (stop, stopped) = mpsc::channel::<()>();
        let shared = Arc::clone(&conn);
        let dirty = Arc::new(AtomicBool::new(false));
        let pausing = Arc::new(AtomicBool::new(false));
        let flags = Flags {
            dirty: Arc::clone(&dirty),
            pausing: Arc::clone(&pausing),
        };
        std::thread::Builder::new()
            .name("calllock-wal-checkpoint".into())
            .spawn(move || checkpoint_loop(checkpoints, shared, flags, stopped))
            .map_err(|e| {
                StoreError::EventLog(format!("cannot start the checkpoint thread: {e}"))
            })?;
        Ok(SqliteAppender {
            conn,
            queue: std::sync::Mutex::new(Vec::new()),
            dirty,
            pausing,
            path: path.to_path_buf(),
            busy_limit,
            _stop_checkpoints: stop,
        })
    }

    /// Append one event; returns once it is committed.
    ///
    /// The event joins the queue; then whoever gets the connection first
    /// writes everything queued in one transaction (usually just its own
    /// event; under load, the appends that queued up meanwhile — group
    /// commit without a writer task). An append whose event another one
    /// wrote finds its answer when it gets the connection.
    pub(crate) async fn append(
        &self,
        call_id: &str,
        seq: i64,
        at_unix: f64,
        kind: &str,
        data: &str,
    ) -> Result<(), StoreError> {
        let slot: Slot = Arc::default();
        lock(&self.queue).push(Queued {
            call_id: call_id.to_string(),
            seq,
            at_unix,
            kind: kind.to_string(),
            data: data.to_string(),
            slot: Arc::clone(&slot),
        });
        let start = Instant::now();
        let mut pause = Duration::from_micros(500);
        loop {
            {
                let guard = self.lock_conn().await;
                if let Some(answer) = lock(&slot).take() {
                    return answer;
                }
                let batch = std::mem::take(&mut *lock(&self.queue));
                match guard.as_ref() {
                    None => {
                        for q in batch {
                            *lock(&q.slot) = Some(Err(StoreError::Closed));
                        }
                    }
                    Some(conn) => match self.write(conn, &batch) {
                        Ok(()) => self.dirty.store(true, Ordering::Relaxed),
                        Err(Busy) => {
                            // Back to the front, in order, for the next try.
                            let mut q = lock(&self.queue);
                            let later = std::mem::replace(&mut *q, batch);
                            q.extend(later);
                        }
                    },
                }
                if let Some(answer) = lock(&slot).take() {
                    return answer;
                }
            }
            if start.elapsed() >= self.busy_limit {
                // Give up on this one (the others have their own clocks).
                lock(&self.queue).retain(|q| !Arc::ptr_eq(&q.slot, &slot));
                return Err(StoreError::EventLog(format!(
                    "{} stayed locked by another writer for {} s",
                    self.path.display(),
                    self.busy_limit.as_secs()
                )));
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(20));
        }
    }

    /// The connection. An append holds it for microseconds, so a waiter
    /// first spins for up to [`SPIN`]: parking the task and waking it from
    /// the other runtime thread costs more than that on a VM (measured on
    /// the CI machine: p99 85–115 µs with two runtime threads against
    /// 36–45 µs with one before spinning; 46–55 µs with a 100–200 µs spin).
    /// During the checkpoint's pause, or past the spin (a preempted
    /// holder), it waits asynchronously.
    async fn lock_conn(&self) -> tokio::sync::MutexGuard<'_, Option<Connection>> {
        if let Ok(g) = self.conn.try_lock() {
            return g;
        }
        let start = Instant::now();
        while start.elapsed() < SPIN && !self.pausing.load(Ordering::Relaxed) {
            for _ in 0..64 {
                std::hint::spin_loop();
            }
            if let Ok(g) = self.conn.try_lock() {
                return g;
            }
        }
        self.conn.lock().await
    }

    /// Write `batch` and leave each its answer — or, if another connection
    /// holds the write lock, write nothing and say so.
    fn write(&self, conn: &Connection, batch: &[Queued]) -> Result<(), Busy> {
        if let [one] = batch {
            // Alone: a plain autocommit INSERT.
            let answer = match insert(conn, one) {
                Err(e) if is_busy(&e) => return Err(Busy),
                r => r.map_err(|e| self.error(one, e)),
            };
            *lock(&one.slot) = Some(answer);
            return Ok(());
        }
        match conn.execute_batch("BEGIN IMMEDIATE") {
            Ok(()) => {}
            Err(e) if is_busy(&e) => return Err(Busy),
            Err(e) => {
                for q in batch {
                    *lock(&q.slot) = Some(Err(self.failed(q, &e)));
                }
                return Ok(());
            }
        }
        // A failing INSERT (a duplicate) undoes only itself; if SQLite had
        // to roll the whole transaction back, nothing of it stands.
        let mut answers: Vec<Result<(), StoreError>> = Vec::with_capacity(batch.len());
        for q in batch {
            answers.push(insert(conn, q).map_err(|e| self.error(q, e)));
            if conn.is_autocommit() {
                break;
            }
        }
        let committed = if conn.is_autocommit() {
            Err("the transaction was rolled back".to_string())
        } else {
            conn.execute_batch("COMMIT").map_err(|e| {
                let _ = conn.execute_batch("ROLLBACK");
                e.to_string()
            })
        };
        let mut answers = answers.into_iter();
        for q in batch {
            let answer = match (&committed, answers.next()) {
                (Ok(()), Some(a)) => a,
                (_, Some(Err(e @ StoreError::DuplicateEvent { .. }))) => Err(e),
                (Err(why), _) => Err(self.failed(q, why)),
                (Ok(()), None) => Err(StoreError::EventLog("not written".into())),
            };
            *lock(&q.slot) = Some(answer);
        }
        Ok(())
    }

    fn error(&self, q: &Queued, e: rusqlite::Error) -> StoreError {
        if is_unique(&e) {
            StoreError::DuplicateEvent {
                call_id: q.call_id.clone(),
                seq: q.seq,
            }
        } else {
            self.failed(q, &e)
        }
    }

    fn failed(&self, q: &Queued, why: &dyn std::fmt::Display) -> StoreError {
        StoreError::EventLog(format!(
            "appending event {} of call {} to {}: {why}",
            q.seq,
            q.call_id,
            self.path.display()
        ))
    }

    /// Close the connection; later appends fail with [`StoreError::Closed`].
    pub(crate) async fn close(&self) {
        let mut guard = self.conn.lock().await;
        // Whatever is queued was not written: its appends will say so.
        if let Some(conn) = guard.take() {
            if let Err((_, e)) = conn.close() {
                tracing::warn!(error = %e, "closing the event log connection");
            }
        }
    }
}

/// The one-row INSERT of `q` (cached statement).
fn insert(conn: &Connection, q: &Queued) -> rusqlite::Result<()> {
    conn.prepare_cached(INSERT_ONE)?.execute(rusqlite::params![
        q.call_id, q.seq, q.at_unix, q.kind, q.data
    ])?;
    Ok(())
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

/// Primary-key or unique violation (not, say, NOT NULL).
fn is_unique(e: &rusqlite::Error) -> bool {
    const SQLITE_CONSTRAINT_PRIMARYKEY: i32 = 1555;
    const SQLITE_CONSTRAINT_UNIQUE: i32 = 2067;
    matches!(
        e,
        rusqlite::Error::SqliteFailure(f, _)
            if f.extended_code == SQLITE_CONSTRAINT_PRIMARYKEY
                || f.extended_code == SQLITE_CONSTRAINT_UNIQUE
    )
}

fn open_error(path: &Path, e: &rusqlite::Error) -> StoreError {
    StoreError::EventLog(format!(
        "cannot open {} for the event log: {e}",
        path.display()
    ))
}

/// A connection like the pool's (WAL, `synchronous=NORMAL`, foreign keys)
/// but with no busy wait: callers retry asynchronously.
fn connect(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(Duration::ZERO)?;
    conn.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON",
    )?;
    Ok(conn)
}

/// `PRAGMA wal_checkpoint(PASSIVE)`: frames in the WAL and frames
/// checkpointed. "Busy" (another checkpoint is running) is not worth a log
/// line.
fn passive_checkpoint(conn: &Connection) -> Option<(i64, i64)> {
    match conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
        Ok((r.get::<_, i64>(1)?, r.get::<_, i64>(2)?))
    }) {
        Ok(v) => Some(v),
        Err(e) => {
            if !matches!(
                e.sqlite_error_code(),
                Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
            ) {
                tracing::warn!(error = %e, "WAL checkpoint failed");
            }
            None
        }
    }
}

/// What the checkpoint thread shares with the appenders.
struct Flags {
    /// Appends happened since the last checkpoint.
    dirty: Arc<AtomicBool>,
    /// The checkpoint thread is pausing appends.
    pausing: Arc<AtomicBool>,
}

/// Every [`CHECKPOINT_EVERY`] with appends since the last time, checkpoint
/// the WAL and let it start over (see the module documentation); until the
/// appender is gone.
fn checkpoint_loop(conn: Connection, appenders: Shared, flags: Flags, stop: mpsc::Receiver<()>) {
    while let Err(mpsc::RecvTimeoutError::Timeout) = stop.recv_timeout(CHECKPOINT_EVERY) {
        if !flags.dirty.swap(false, Ordering::Relaxed) {
            continue;
        }
        // The bulk, while appends go on.
        let Some((frames, _)) = passive_checkpoint(&conn) else {
            continue;
        };
        // The rest, with appends paused, so that the WAL can start over.
        let paused = Instant::now();
        flags.pausing.store(true, Ordering::Relaxed);
        let guard = appenders.blocking_lock();
        if guard.is_none() {
            break;
        }
        passive_checkpoint(&conn);
        drop(guard);
        flags.pausing.store(false, Ordering::Relaxed);
        tracing::debug!(frames, pause = ?paused.elapsed(), "WAL checkpointed; it starts over");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queued(call_id: &str, seq: i64) -> Queued {
        Queued {
            call_id: call_id.into(),
            seq,
            at_unix: 1.5,
            kind: "k".into(),
            data: "{}".into(),
            slot: Arc::default(),
        }
    }

    fn answer(q: &Queued) -> Result<(), StoreError> {
        lock(&q.slot).take().expect("answered")
    }

    #[test]
    fn a_batch_commits_together_and_a_duplicate_fails_alone() {
        let dir = std::env::temp_dir().join(format!("calllock-appender-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.db");
        let setup = Connection::open(&path).unwrap();
        setup
            .execute_batch(
                "PRAGMA journal_mode = WAL; CREATE TABLE call_events (call_id TEXT NOT NULL, \
                 seq BIGINT NOT NULL, at_unix DOUBLE PRECISION NOT NULL, kind TEXT NOT NULL, \
                 data TEXT NOT NULL, PRIMARY KEY (call_id, seq))",
            )
            .unwrap();
        let a = SqliteAppender::open(&path, Duration::from_secs(1)).unwrap();
        let guard = a.conn.blocking_lock();
        let conn = guard.as_ref().unwrap();

        let batch = [queued("CA", 1), queued("CA", 1), queued("CA", 2)];
        assert!(a.write(conn, &batch).is_ok());
        assert!(answer(&batch[0]).is_ok());
        assert!(matches!(
            answer(&batch[1]),
            Err(StoreError::DuplicateEvent { seq: 1, .. })
        ));
        assert!(answer(&batch[2]).is_ok());
        let n: i64 = setup
            .query_row("SELECT COUNT(*) FROM call_events", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 2);

        // Another connection holds the write lock: nothing is written,
        // nobody is answered, the caller retries later.
        setup.execute_batch("BEGIN IMMEDIATE").unwrap();
        let batch = [queued("CA", 3), queued("CA", 4)];
        assert!(a.write(conn, &batch).is_err());
        assert!(a.write(conn, &batch[..1]).is_err());
        assert!(lock(&batch[0].slot).is_none() && lock(&batch[1].slot).is_none());
        setup.execute_batch("COMMIT").unwrap();
        assert!(a.write(conn, &batch).is_ok());
        assert!(answer(&batch[0]).is_ok() && answer(&batch[1]).is_ok());
        drop(guard);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
