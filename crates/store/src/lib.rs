//! # store — CallLock persistence
//!
//! * [`Store`]: a SQLite database (file or in-memory) with embedded
//!   migrations (`migrations/`), holding customers, appointments, callbacks,
//!   sales leads and finished-call records.
//! * [`EmbeddedBackend`]: the booking backend of `agent::backend::Backend`
//!   answered from that database, in the V2 response shapes (SPEC §6.3 as
//!   corrected by D-18/D-19) but truthfully: a booking that did not happen
//!   says so.
//! * [`DEMO_CUSTOMERS`] / [`EmbeddedBackend::seed_demo`]: demo data.
//!
//! Queries are built at run time (`sqlx::query`), so building needs no
//! database; the schema is kept portable for a later PostgreSQL port.

mod backend;
mod ids;
mod records;
mod seed;
mod timefmt;

pub use backend::{
    Clock, EmbeddedBackend, DEFAULT_SLOT_CAPACITY, MAX_AHEAD_DAYS, SEARCH_DAYS, VISIT_MINUTES,
};
pub use records::{Appointment, CallRecord, CallSummary, Callback, Customer, SalesLead};
pub use seed::DEMO_CUSTOMERS;
pub use timefmt::normalize_phone;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

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
    #[error("cannot migrate the database schema: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("database error: {0}")]
    Db(#[from] sqlx::Error),
    #[error("cannot encode or decode stored JSON ({what}): {source}")]
    Json {
        what: &'static str,
        source: serde_json::Error,
    },
    #[error("stored timestamp {value:?} in {what} is not ISO-8601")]
    Timestamp { what: &'static str, value: String },
}

/// The CallLock database: a SQLite pool with the schema migrated.
/// Cheap to clone (the pool is shared).
#[derive(Debug, Clone)]
pub struct Store {
    pool: SqlitePool,
}

impl Store {
    /// Open (creating if needed) the database file at `path` and its parent
    /// directory; WAL journal, foreign keys on, migrations applied.
    pub async fn open(path: &Path) -> Result<Store, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::CreateDir {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let opts = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(10));
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(opts)
            .await
            .map_err(|source| StoreError::Open {
                path: path.to_path_buf(),
                source,
            })?;
        Self::from_pool(pool).await
    }

    /// A fresh private in-memory database (one shared connection, so every
    /// query sees the same data). For replay and tests: never touches a file.
    pub async fn open_in_memory() -> Result<Store, StoreError> {
        let opts = SqliteConnectOptions::from_str("sqlite::memory:")
            .map_err(|source| StoreError::Open {
                path: PathBuf::from(":memory:"),
                source,
            })?
            .foreign_keys(true);
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_with(opts)
            .await
            .map_err(|source| StoreError::Open {
                path: PathBuf::from(":memory:"),
                source,
            })?;
        Self::from_pool(pool).await
    }

    async fn from_pool(pool: SqlitePool) -> Result<Store, StoreError> {
        sqlx::migrate!().run(&pool).await?;
        Ok(Store { pool })
    }

    /// The underlying pool (for callers with their own queries).
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// Close the pool (waits for connections to be returned).
    pub async fn close(&self) {
        self.pool.close().await;
    }
}
