//! The event log's hot path on a SQLite file: appends run on the caller's
//! thread, on a connection of their own.
//!
//! Why not through sqlx: sqlx runs each SQLite connection on a worker
//! thread, so every statement is two cross-thread hand-offs (task → worker
//! → task), and the event writer task adds two more. Measured on the
//! 2-core CI machine (`benches/events.rs`, 200 calls, ~5,700 appends/s)
//! that path gave p50 ≈ 65 µs and p99 ≈ 2.6 ms, against ≈ 7 µs for the
//! `INSERT` itself (WAL, `synchronous=NORMAL`: a commit is a `write()`,
//! not an `fsync`). So on a SQLite file an append locks one `rusqlite`
//! connection (the same bundled libsqlite3 that sqlx links), runs the one
//! cached `INSERT` — autocommit: committed when it returns — and unlocks.
//! It occupies the calling runtime thread for those few microseconds only:
//!
//! * the lock is a tokio mutex: a waiting append yields, never parks the
//!   thread;
//! * the connection has `busy_timeout = 0`: if another connection holds
//!   SQLite's write lock (a booking transaction, say), the append returns
//!   at once and is retried after an async sleep — never blocking the
//!   runtime in SQLite's busy handler (up to the store's 10 s busy timeout
//!   in total);
//! * it never checkpoints the WAL itself (`wal_autocheckpoint = 0`): a
//!   checkpoint copies pages and syncs the database file — milliseconds on
//!   the path of whichever commit crosses the threshold, and with ~11,000
//!   WAL frames a second at the benchmark's load that was every ~90 ms.
//!
//! ## Checkpoints
//!
//! A background thread with its own connection checkpoints every
//! [`CHECKPOINT_EVERY`], in two steps. A `PASSIVE` checkpoint first copies
//! the bulk of the WAL into the database while appends go on. But with
//! appends never pausing, a passive checkpoint never catches up with the
//! end of the WAL, and SQLite only starts the WAL over once everything in
//! it is checkpointed — the file would grow without bound. So the thread
//! then holds the appenders' lock for a second, short `PASSIVE` pass over
//! the frames written meanwhile (and one sync); the next append starts the
//! WAL over. Appends queue asynchronously for that moment (about a
//! millisecond on the CI machine, once per interval). `journal_size_limit`
//! trims the WAL file after a burst.
//!
//! The SQL is the same constant the portable path uses
//! ([`INSERT_ONE`](crate::events::INSERT_ONE)).

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

/// The appenders' connection (`None` once closed).
type Shared = Arc<Mutex<Option<Connection>>>;

/// Appends to one SQLite file (see the module documentation).
pub(crate) struct SqliteAppender {
    conn: Shared,
    /// Set by appends, cleared by the checkpoint thread.
    dirty: Arc<AtomicBool>,
    path: PathBuf,
    busy_limit: Duration,
    /// Dropping it stops the checkpoint thread.
    _stop_checkpoints: mpsc::Sender<()>,
}

/// One failed attempt.
enum Attempt {
    /// Another connection holds the write lock: try again later.
    Busy,
    Failed(StoreError),
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
        let seen = Arc::clone(&dirty);
        std::thread::Builder::new()
            .name("calllock-wal-checkpoint".into())
            .spawn(move || checkpoint_loop(checkpoints, shared, seen, stopped))
            .map_err(|e| {
                StoreError::EventLog(format!("cannot start the checkpoint thread: {e}"))
            })?;
        Ok(SqliteAppender {
            conn,
            dirty,
            path: path.to_path_buf(),
            busy_limit,
            _stop_checkpoints: stop,
        })
    }

    /// Append one event; returns once it is committed.
    pub(crate) async fn append(
        &self,
        call_id: &str,
        seq: i64,
        at_unix: f64,
        kind: &str,
        data: &str,
    ) -> Result<(), StoreError> {
        let start = Instant::now();
        let mut pause = Duration::from_micros(500);
        loop {
            let attempt = {
                let guard = self.conn.lock().await;
                match guard.as_ref() {
                    None => return Err(StoreError::Closed),
                    Some(conn) => self.try_append(conn, call_id, seq, at_unix, kind, data),
                }
            };
            match attempt {
                Ok(()) => {
                    self.dirty.store(true, Ordering::Relaxed);
                    return Ok(());
                }
                Err(Attempt::Failed(e)) => return Err(e),
                Err(Attempt::Busy) if start.elapsed() >= self.busy_limit => {
                    return Err(StoreError::EventLog(format!(
                        "{} stayed locked by another writer for {} s",
                        self.path.display(),
                        self.busy_limit.as_secs()
                    )));
                }
                Err(Attempt::Busy) => {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(20));
                }
            }
        }
    }

    fn try_append(
        &self,
        conn: &Connection,
        call_id: &str,
        seq: i64,
        at_unix: f64,
        kind: &str,
        data: &str,
    ) -> Result<(), Attempt> {
        let run = || -> rusqlite::Result<usize> {
            conn.prepare_cached(INSERT_ONE)?
                .execute(rusqlite::params![call_id, seq, at_unix, kind, data])
        };
        match run() {
            Ok(_) => Ok(()),
            Err(e) => Err(match e.sqlite_error_code() {
                Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => Attempt::Busy,
                Some(ErrorCode::ConstraintViolation) if is_unique(&e) => {
                    Attempt::Failed(StoreError::DuplicateEvent {
                        call_id: call_id.into(),
                        seq,
                    })
                }
                _ => Attempt::Failed(StoreError::EventLog(format!(
                    "appending event {seq} of call {call_id} to {}: {e}",
                    self.path.display()
                ))),
            }),
        }
    }

    /// Close the connection; later appends fail with [`StoreError::Closed`].
    pub(crate) async fn close(&self) {
        if let Some(conn) = self.conn.lock().await.take() {
            if let Err((_, e)) = conn.close() {
                tracing::warn!(error = %e, "closing the event log connection");
            }
        }
    }
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

/// Every [`CHECKPOINT_EVERY`] with appends since the last time, checkpoint
/// the WAL and let it start over (see the module documentation); until the
/// appender is gone.
fn checkpoint_loop(
    conn: Connection,
    appenders: Shared,
    dirty: Arc<AtomicBool>,
    stop: mpsc::Receiver<()>,
) {
    while let Err(mpsc::RecvTimeoutError::Timeout) = stop.recv_timeout(CHECKPOINT_EVERY) {
        if !dirty.swap(false, Ordering::Relaxed) {
            continue;
        }
        // The bulk, while appends go on.
        let Some((frames, _)) = passive_checkpoint(&conn) else {
            continue;
        };
        // The rest, with appends paused, so that the WAL can start over.
        let paused = Instant::now();
        let guard = appenders.blocking_lock();
        if guard.is_none() {
            break;
        }
        passive_checkpoint(&conn);
        drop(guard);
        tracing::debug!(frames, pause = ?paused.elapsed(), "WAL checkpointed; it starts over");
    }
}
