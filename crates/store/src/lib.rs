//! # store — CallLock persistence
//!
//! * [`Store`]: the CallLock database — a SQLite file (the default), a
//!   private in-memory SQLite database, or PostgreSQL (for many instances)
//!   — with embedded migrations (`migrations/`). It holds customers,
//!   appointments, callbacks, sales leads, calls and their event logs, and
//!   the durable outbox.
//! * [`EmbeddedBackend`]: the booking backend of `agent::backend::Backend`
//!   answered from that database, in the V2 response shapes (SPEC §6.3 as
//!   corrected by D-18/D-19) but truthfully: a booking that did not happen
//!   says so.
//! * The call event log ([`Store::append_event`]: committed when it
//!   returns; inline group commit on a SQLite file, a group-commit writer
//!   task on PostgreSQL) and the call lifecycle ([`Store::begin_call`],
//!   [`Store::mark_orphans_interrupted`], [`Store::save_call`]).
//! * The outbox of D-17 ([`Store::outbox_enqueue`],
//!   [`Store::outbox_claim_due`], …).
//! * [`DEMO_CUSTOMERS`] / [`EmbeddedBackend::seed_demo`]: demo data, written
//!   once per database and never over what calls changed
//!   ([`Store::demo_seeded_at`]).
//!
//! ## One set of queries, two databases
//!
//! Everything goes through sqlx's `Any` driver. Every query string is
//! written once with `$1, $2, …` placeholders (which SQLite accepts too) and
//! runs unchanged on both databases; the migrations are one portable set
//! (TEXT, BIGINT, DOUBLE PRECISION; application-generated ids). The only
//! dialect-specific SQL is locking, kept in the `dialect` module: SQLite
//! `BEGIN IMMEDIATE` versus PostgreSQL transaction-level advisory locks and
//! `FOR UPDATE SKIP LOCKED`.
//!
//! Queries are built at run time (`sqlx::query`), so building needs no
//! database.

mod backend;
mod call_search;
mod dialect;
mod events;
mod ids;
mod instances;
mod operator;
mod outbox;
mod records;
mod seed;
mod sqlite_events;
mod timefmt;

#[cfg(feature = "testing")]
pub mod testing;

pub use backend::{
    Clock, EmbeddedBackend, DEFAULT_SLOT_CAPACITY, MAX_AHEAD_DAYS, SEARCH_DAYS, VISIT_MINUTES,
};
pub use call_search::{CallPage, CallQuery, Cursor, MAX_PAGE};
pub use events::{CallStatus, StoredEvent};
pub use outbox::{NewOutboxItem, OutboxClaim, OutboxItem, OutboxKind, OutboxLane, OutboxStatus};
pub use records::{Appointment, CallRecord, CallSummary, Callback, Customer, SalesLead};
pub use seed::DEMO_CUSTOMERS;
pub use timefmt::normalize_phone;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::migrate::Migrator;
use sqlx::{AnyConnection, AnyPool, Connection, Executor};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

/// The embedded migrations (one portable set for both databases).
static MIGRATOR: Migrator = sqlx::migrate!();

/// How long a SQLite connection waits for another writer before failing.
const SQLITE_BUSY_TIMEOUT_MS: u64 = 10_000;
/// Connections in a SQLite file pool (one writer at a time anyway).
const SQLITE_POOL_SIZE: u32 = 4;
/// Connections in a PostgreSQL pool.
const POSTGRES_POOL_SIZE: u32 = 16;
/// How long to wait for a pool connection (or to connect).
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);

/// Everything that can go wrong in the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot create the directory {} for the database: {source}", path.display())]
    CreateDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot open database at {}: {source}", path.display())]
    Open { path: PathBuf, source: sqlx::Error },
    /// Connecting to a database given by URL failed (`url` has no password).
    #[error("cannot connect to the database {url}: {source}")]
    Connect { url: String, source: sqlx::Error },
    /// A database URL or path that [`Store::connect`] cannot use.
    #[error("unsupported database location {url:?}: {reason}")]
    BadUrl { url: String, reason: String },
    #[error("cannot migrate the database schema: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("database error: {0}")]
    Db(#[from] sqlx::Error),
    /// Encoding a value to store, or decoding a stored JSON column, failed.
    #[error("cannot encode or decode stored JSON ({what}): {source}")]
    Json {
        what: String,
        source: serde_json::Error,
    },
    #[error("stored timestamp {value:?} in {what} is not ISO-8601")]
    Timestamp { what: &'static str, value: String },
    /// A stored enumerated column holds something this version does not know.
    #[error("unexpected stored value {value:?} in {what}")]
    BadValue { what: String, value: String },
    /// [`Store::append_event`] with a `(call_id, seq)` already in the log.
    #[error("event {seq} of call {call_id} is already in the log (duplicate sequence number)")]
    DuplicateEvent { call_id: String, seq: i64 },
    /// [`Store::begin_call`] for a call whose final record is already saved.
    #[error("call {call_id} is already completed; it cannot begin again")]
    CallCompleted { call_id: String },
    /// [`Store::begin_new_call`] for a call id the database already has.
    #[error("call {call_id} already exists; a new call cannot reuse its id")]
    CallExists { call_id: String },
    /// The event writer could not write a batch (the reason is the first
    /// append's error; that append got the error itself).
    #[error("cannot write to the event log: {0}")]
    EventLog(String),
    /// The store was closed, or the runtime its event writer ran on is gone.
    #[error("the store is closed (or the runtime it was used on has shut down)")]
    Closed,
}

impl StoreError {
    /// A JSON encode/decode failure about `what`.
    pub(crate) fn json(what: impl Into<String>, source: serde_json::Error) -> Self {
        StoreError::Json {
            what: what.into(),
            source,
        }
    }
}

/// Which database a [`Store`] talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

impl std::fmt::Display for Dialect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Dialect::Sqlite => "sqlite",
            Dialect::Postgres => "postgres",
        })
    }
}

/// Where the data lives: how to open one more connection to it.
#[derive(Debug, Clone)]
pub(crate) enum Target {
    /// A private in-memory SQLite database: only the pool's one connection
    /// sees it.
    Memory,
    /// A SQLite file: its `sqlite://` URL and its path.
    File { url: String, path: PathBuf },
    /// A PostgreSQL URL (with its password: needed to connect).
    Postgres(String),
}

/// The CallLock database: a connection pool with the schema migrated.
/// Cheap to clone (everything is shared).
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    pool: AnyPool,
    dialect: Dialect,
    target: Target,
    described: String,
    /// Where event-log appends go, started on first use (see `events`).
    events: tokio::sync::OnceCell<events::EventSink>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("database", &self.inner.described)
            .finish_non_exhaustive()
    }
}

impl Store {
    /// Open (creating if needed) the SQLite database file at `path` and its
    /// parent directory; WAL journal with `synchronous=NORMAL`, foreign keys
    /// on, a 10 s busy timeout, migrations applied.
    pub async fn open(path: &Path) -> Result<Store, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::CreateDir {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let open_err = |source| StoreError::Open {
            path: path.to_path_buf(),
            source,
        };
        let url = sqlite_file_url(path).map_err(open_err)?;
        let opts = AnyConnectOptions::from_str(&url).map_err(open_err)?;
        sqlx::any::install_default_drivers();
        let pool = AnyPoolOptions::new()
            .max_connections(SQLITE_POOL_SIZE)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .after_connect(|conn, _meta| Box::pin(sqlite_file_pragmas(conn)))
            .connect_with(opts)
            .await
            .map_err(open_err)?;
        let described = format!("sqlite://{}", path.display());
        let target = Target::File {
            url,
            path: path.to_path_buf(),
        };
        Self::init(pool, Dialect::Sqlite, target, described).await
    }

    /// A fresh private in-memory SQLite database (one shared connection, so
    /// every query sees the same data). For replay and tests: never touches
    /// a file.
    pub async fn open_in_memory() -> Result<Store, StoreError> {
        let open_err = |source| StoreError::Open {
            path: PathBuf::from(":memory:"),
            source,
        };
        sqlx::any::install_default_drivers();
        let opts = AnyConnectOptions::from_str("sqlite::memory:").map_err(open_err)?;
        // One connection that never goes away: each new connection would be
        // a new, empty database.
        let pool = AnyPoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .after_connect(|conn, _meta| {
                Box::pin(async move {
                    conn.execute("PRAGMA foreign_keys = ON").await?;
                    Ok(())
                })
            })
            .connect_with(opts)
            .await
            .map_err(open_err)?;
        Self::init(
            pool,
            Dialect::Sqlite,
            Target::Memory,
            "sqlite::memory:".into(),
        )
        .await
    }

    /// Open the database at `location`:
    ///
    /// * `postgres://…` or `postgresql://…` — PostgreSQL (the database must
    ///   exist; migrations are applied);
    /// * `sqlite::memory:` — a private in-memory database
    ///   ([`Store::open_in_memory`]);
    /// * `sqlite://PATH` or `sqlite:PATH` — a SQLite file (`sqlite:///abs`
    ///   for an absolute path; `%XX` escapes are decoded; no `?options`);
    /// * anything else without `://` — a SQLite file path ([`Store::open`]).
    pub async fn connect(location: &str) -> Result<Store, StoreError> {
        let loc = location.trim();
        let lower = loc.to_ascii_lowercase();
        if lower.starts_with("postgres://") || lower.starts_with("postgresql://") {
            return Self::connect_postgres(loc).await;
        }
        if lower.starts_with("sqlite:") {
            let rest = &loc["sqlite:".len()..];
            let rest = rest.strip_prefix("//").unwrap_or(rest);
            if rest == ":memory:" {
                return Self::open_in_memory().await;
            }
            let bad = |reason: &str| StoreError::BadUrl {
                url: loc.to_string(),
                reason: reason.to_string(),
            };
            if rest.contains('?') {
                return Err(bad("connection parameters are not supported; give only a path (the store sets WAL, foreign keys and the busy timeout itself)"));
            }
            let path = percent_decode(rest).ok_or_else(|| bad("bad %-escape in the path"))?;
            if path.is_empty() {
                return Err(bad("no file path"));
            }
            return Self::open(Path::new(&path)).await;
        }
        if loc.contains("://") {
            return Err(StoreError::BadUrl {
                url: redact_url(loc),
                reason: "only sqlite:// and postgres:// (or a plain file path) are supported"
                    .into(),
            });
        }
        if loc.is_empty() {
            return Err(StoreError::BadUrl {
                url: String::new(),
                reason: "empty database location".into(),
            });
        }
        Self::open(Path::new(loc)).await
    }

    async fn connect_postgres(url: &str) -> Result<Store, StoreError> {
        let described = redact_url(url);
        let connect_err = |source| StoreError::Connect {
            url: described.clone(),
            source,
        };
        sqlx::any::install_default_drivers();
        let opts = AnyConnectOptions::from_str(url).map_err(connect_err)?;
        // One plain attempt first: the pool would retry until its acquire
        // timeout and then report only "timed out", hiding the real reason
        // (refused, unknown database, bad password).
        let probe = AnyConnection::connect_with(&opts)
            .await
            .map_err(connect_err)?;
        let _ = probe.close().await;
        let pool = AnyPoolOptions::new()
            .max_connections(POSTGRES_POOL_SIZE)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with(opts)
            .await
            .map_err(connect_err)?;
        Self::init(
            pool,
            Dialect::Postgres,
            Target::Postgres(url.to_string()),
            described,
        )
        .await
    }

    async fn init(
        pool: AnyPool,
        dialect: Dialect,
        target: Target,
        described: String,
    ) -> Result<Store, StoreError> {
        if dialect == Dialect::Sqlite {
            compat_0001(&pool).await?;
        }
        MIGRATOR.run(&pool).await?;
        tracing::debug!(database = %described, "store open");
        Ok(Store {
            inner: Arc::new(Inner {
                pool,
                dialect,
                target,
                described,
                events: tokio::sync::OnceCell::new(),
            }),
        })
    }

    /// Which database this is.
    pub fn dialect(&self) -> Dialect {
        self.inner.dialect
    }

    /// Where the data lives, for logs: `sqlite:///path`, `sqlite::memory:`
    /// or the PostgreSQL URL without its password.
    pub fn describe(&self) -> &str {
        &self.inner.described
    }

    /// The underlying pool (for callers with their own queries; write them
    /// portably, with `$1` placeholders).
    pub fn pool(&self) -> &AnyPool {
        &self.inner.pool
    }

    /// Stop the event writer (after the appends already queued) and close
    /// the pool (waits for connections to be returned). Later calls fail.
    pub async fn close(&self) {
        if let Some(sink) = self.inner.events.get() {
            sink.close().await;
        }
        self.inner.pool.close().await;
    }

    pub(crate) async fn event_sink(&self) -> Result<&events::EventSink, StoreError> {
        self.inner
            .events
            .get_or_try_init(|| events::EventSink::start(self.clone_for_writer()))
            .await
    }

    /// What the event writer needs of the store (not the store itself: the
    /// writer must not keep it alive).
    fn clone_for_writer(&self) -> events::WriterTarget {
        events::WriterTarget {
            pool: self.inner.pool.clone(),
            target: self.inner.target.clone(),
            busy_limit: Duration::from_millis(SQLITE_BUSY_TIMEOUT_MS),
        }
    }
}

/// The settings of every connection to a SQLite file. Set after connecting
/// because the `Any` driver builds SQLite options from the URL only.
async fn sqlite_file_pragmas(conn: &mut AnyConnection) -> Result<(), sqlx::Error> {
    // busy_timeout first: switching to WAL may have to wait for a writer.
    conn.execute(
        format!(
            "PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}; \
             PRAGMA journal_mode = WAL; \
             PRAGMA synchronous = NORMAL; \
             PRAGMA foreign_keys = ON"
        )
        .as_str(),
    )
    .await?;
    Ok(())
}

/// One more connection to `target` (not from the pool), set up like the
/// pool's. `None` for an in-memory database (only the pool's connection
/// sees it).
pub(crate) async fn dedicated_connection(
    target: &Target,
) -> Result<Option<AnyConnection>, StoreError> {
    match target {
        Target::Memory => Ok(None),
        Target::File { url, .. } => {
            let mut conn = AnyConnection::connect(url).await?;
            sqlite_file_pragmas(&mut conn).await?;
            Ok(Some(conn))
        }
        Target::Postgres(url) => Ok(Some(AnyConnection::connect(url).await.map_err(
            |source| StoreError::Connect {
                url: redact_url(url),
                source,
            },
        )?)),
    }
}

/// The `sqlite://` URL of a file path (absolute, `%`, `?`, `#` and
/// whitespace escaped), opened read-write-create.
fn sqlite_file_url(path: &Path) -> Result<String, sqlx::Error> {
    let abs = std::path::absolute(path).map_err(|e| sqlx::Error::Configuration(e.into()))?;
    let Some(s) = abs.to_str() else {
        return Err(sqlx::Error::Configuration(
            "the database path is not valid UTF-8".into(),
        ));
    };
    let mut out = String::with_capacity(s.len() + 20);
    out.push_str("sqlite://");
    for c in s.chars() {
        match c {
            '%' | '?' | '#' | ' ' | '"' | '<' | '>' | '`' | '{' | '}' => {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    out.push_str(&format!("%{b:02X}"));
                }
            }
            c if c.is_control() => {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    out.push_str(&format!("%{b:02X}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push_str("?mode=rwc");
    Ok(out)
}

/// Decode `%XX` escapes; `None` when malformed or not UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// A phone number as logs show it: only its last four digits
/// (`…0142`), so a log collector keeps no caller's number.
pub fn phone_for_logs(phone: &str) -> String {
    let digits: Vec<char> = phone.chars().filter(char::is_ascii_digit).collect();
    if digits.len() <= 4 {
        return "…".to_string();
    }
    let tail: String = digits[digits.len() - 4..].iter().collect();
    format!("…{tail}")
}

/// A database URL fit for logs: the password (in the user-info part or a
/// `password=` parameter) replaced by `***`.
pub fn redact_url(url: &str) -> String {
    let mut out = url.to_string();
    if let Some(scheme_end) = out.find("://") {
        let rest_start = scheme_end + 3;
        let authority_end = out[rest_start..]
            .find(['/', '?', '#'])
            .map_or(out.len(), |i| rest_start + i);
        if let Some(at) = out[rest_start..authority_end].rfind('@') {
            let userinfo = &out[rest_start..rest_start + at];
            if let Some(colon) = userinfo.find(':') {
                let from = rest_start + colon + 1;
                let to = rest_start + at;
                out.replace_range(from..to, "***");
            }
        }
    }
    if let Some(q) = out.find('?') {
        let (head, query) = out.split_at(q + 1);
        let query: Vec<String> = query
            .split('&')
            .map(|kv| match kv.split_once('=') {
                Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                _ => kv.to_string(),
            })
            .collect();
        out = format!("{head}{}", query.join("&"));
    }
    out
}

/// The SHA-384 checksum sqlx recorded for the first version of
/// `0001_init.sql` (INTEGER columns, before PostgreSQL support).
const OLD_0001_CHECKSUM: &str = "f8bd2a3f1a463a6ec5c6fcfca67611c27f2826215c4b4a1629d8ba7f33798b942bb5ac4b36ba36baf6d2e027f2fe7489";

/// A SQLite database created by the first `0001_init.sql` has the same
/// schema as today's (INTEGER and BIGINT are the same SQLite affinity), but
/// sqlx would refuse it for the changed checksum. Record the new checksum
/// when, and only when, the old one is there.
async fn compat_0001(pool: &AnyPool) -> Result<(), StoreError> {
    let has_table: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'",
    )
    .fetch_one(pool)
    .await?;
    if has_table == 0 {
        return Ok(());
    }
    let Some(current) = MIGRATOR.iter().find(|m| m.version == 1) else {
        return Ok(());
    };
    let old: Vec<u8> = (0..OLD_0001_CHECKSUM.len() / 2)
        .filter_map(|i| u8::from_str_radix(&OLD_0001_CHECKSUM[2 * i..2 * i + 2], 16).ok())
        .collect();
    let done = sqlx::query(
        "UPDATE _sqlx_migrations SET checksum = $1 WHERE version = 1 AND checksum = $2",
    )
    .bind(current.checksum.to_vec())
    .bind(old)
    .execute(pool)
    .await?;
    if done.rows_affected() > 0 {
        tracing::info!("database from before the portable schema: 0001 checksum updated");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_show_only_a_phone_numbers_last_four_digits() {
        assert_eq!(phone_for_logs("+1 (512) 555-0142"), "…0142");
        assert_eq!(phone_for_logs("0142"), "…");
        assert_eq!(phone_for_logs("unknown"), "…");
    }

    #[test]
    fn redacts_passwords() {
        assert_eq!(
            redact_url("postgres://u:secret@db.example:5432/calllock"),
            "postgres://u:***@db.example:5432/calllock"
        );
        assert_eq!(
            redact_url("postgres://u@h/db?sslmode=require&password=x"),
            "postgres://u@h/db?sslmode=require&password=***"
        );
        assert_eq!(redact_url("postgres://h/db"), "postgres://h/db");
        assert_eq!(
            redact_url("postgresql://a:b:c@h/db"),
            "postgresql://a:***@h/db"
        );
    }

    #[test]
    fn file_urls_escape_and_decode() {
        let url = sqlite_file_url(Path::new("/tmp/a b/c?d#e%f.db")).unwrap();
        assert_eq!(url, "sqlite:///tmp/a%20b/c%3Fd%23e%25f.db?mode=rwc");
        let path = url
            .trim_start_matches("sqlite://")
            .trim_end_matches("?mode=rwc");
        assert_eq!(percent_decode(path).unwrap(), "/tmp/a b/c?d#e%f.db");
        assert_eq!(percent_decode("%zz"), None);
        assert_eq!(percent_decode("%4"), None);
    }

    #[test]
    fn old_checksum_is_48_bytes() {
        assert_eq!(OLD_0001_CHECKSUM.len(), 96);
    }
}
