//! The event log's hot path on a SQLite file: appends run on the caller's
//! thread, on a connection of their own.
//!
//! Why not through sqlx: sqlx runs each SQLite connection on a worker
//! thread, so every statement is two cross-thread hand-offs (task → worker
//! → task). Measured on the 2-core CI machine (`benches/events.rs`, 200
//! calls, ~5,700 appends/s) that path gives p50 ≈ 65 µs and p99 in the
//! milliseconds, against ≈ 7 µs for the `INSERT` itself (WAL,
//! `synchronous=NORMAL`: a commit is a `write()`, not an `fsync`). So on a
//! SQLite file an append takes a mutex over one `rusqlite` connection (the
//! same bundled libsqlite3 that sqlx links), runs the one cached
//! `INSERT` — autocommit: committed when it returns — and releases it.
//! It blocks the calling runtime thread for those few microseconds only:
//!
//! * the connection has `busy_timeout = 0`: if another connection holds
//!   SQLite's write lock (a booking transaction, say), the append returns
//!   at once and is retried after an async sleep, never blocking the
//!   runtime thread in SQLite's busy handler (up to the store's 10 s busy
//!   timeout in total);
//! * it never checkpoints the WAL itself (`wal_autocheckpoint = 0`): a
//!   checkpoint copies pages and syncs the database file, milliseconds on
//!   the path of whichever commit crosses the threshold. A background
//!   thread with its own connection runs a `PASSIVE` checkpoint (which
//!   never blocks writers) every [`CHECKPOINT_EVERY`] instead.
//!
//! The SQL is the same constant the portable path uses ([`INSERT_ONE`]).

use crate::events::INSERT_ONE;
use crate::StoreError;
use rusqlite::{Connection, ErrorCode, OpenFlags};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often the background thread checkpoints the WAL.
pub(crate) const CHECKPOINT_EVERY: Duration = Duration::from_millis(1000);

/// Appends to one SQLite file (see the module documentation).
pub(crate) struct SqliteAppender {
    /// `None` once closed.
    conn: Mutex<Option<Connection>>,
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
        let (stop, stopped) = mpsc::channel::<()>();
        std::thread::Builder::new()
            .name("calllock-wal-checkpoint".into())
            .spawn(move || checkpoint_loop(checkpoints, stopped))
            .map_err(|e| {
                StoreError::EventLog(format!("cannot start the checkpoint thread: {e}"))
            })?;
        Ok(SqliteAppender {
            conn: Mutex::new(Some(conn)),
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
            match self.try_append(call_id, seq, at_unix, kind, data) {
                Ok(()) => return Ok(()),
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
        call_id: &str,
        seq: i64,
        at_unix: f64,
        kind: &str,
        data: &str,
    ) -> Result<(), Attempt> {
        // A panic while holding the lock cannot leave the connection
        // half-way through a statement that matters: keep using it.
        let guard = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        let Some(conn) = guard.as_ref() else {
            return Err(Attempt::Failed(StoreError::Closed));
        };
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
    pub(crate) fn close(&self) {
        let mut guard = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(conn) = guard.take() {
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

/// Checkpoint the WAL every [`CHECKPOINT_EVERY`] until the appender is gone.
fn checkpoint_loop(conn: Connection, stop: mpsc::Receiver<()>) {
    while let Err(mpsc::RecvTimeoutError::Timeout) = stop.recv_timeout(CHECKPOINT_EVERY) {
        // PASSIVE: copies what it can without waiting for anyone; "busy"
        // (another checkpoint running) is not an error worth a log line.
        if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
            if !matches!(
                e.sqlite_error_code(),
                Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
            ) {
                tracing::warn!(error = %e, "WAL checkpoint failed");
            }
        }
    }
}
