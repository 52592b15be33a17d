//! The only dialect-specific SQL in the store: locking.
//!
//! Every other query is written once and runs on both databases. Writers
//! that read-then-write (a slot capacity check, a per-call sequence number,
//! an outbox claim) need mutual exclusion, and the two databases spell it
//! differently:
//!
//! * **SQLite** has one writer at a time: `BEGIN IMMEDIATE` takes the write
//!   lock up front (waiting up to the busy timeout), so the whole
//!   transaction — reads included — is serialized against every other
//!   writer, in this process or another.
//! * **PostgreSQL** runs writers concurrently, so each critical section
//!   takes a transaction-level advisory lock (`pg_advisory_xact_lock`,
//!   released at commit/rollback) on a key naming what it protects; the
//!   outbox claim instead locks the rows it takes with
//!   `FOR UPDATE … SKIP LOCKED`, so concurrent workers take different rows
//!   without waiting for each other.

use crate::{Dialect, Store, StoreError};
use sqlx::{Any, Transaction};

/// What a write transaction must exclude concurrent writers from.
#[derive(Debug, Clone, Copy)]
pub(crate) enum WriteLock<'a> {
    /// The booking tables (appointments, callbacks, sales leads, customers,
    /// the demo seed): capacity checks and id allocation.
    Bookings,
    /// The outbox sequence of one call.
    OutboxCall(&'a str),
    /// The outbox claim (SQLite only; PostgreSQL locks the claimed rows).
    OutboxClaim,
}

/// Advisory lock key space (first argument of the two-key form).
const LOCK_SPACE: i32 = 0x0CA1_10CC;

impl WriteLock<'_> {
    /// The advisory lock key (second argument): a constant per table group,
    /// an FNV-1a hash for per-call locks.
    fn key(&self) -> i32 {
        match self {
            WriteLock::Bookings => 1,
            WriteLock::OutboxClaim => 2,
            WriteLock::OutboxCall(call_id) => {
                let mut h: u32 = 0x811c_9dc5;
                for b in call_id.bytes() {
                    h ^= u32::from(b);
                    h = h.wrapping_mul(0x0100_0193);
                }
                // Keep clear of the constant keys.
                i32::from_ne_bytes(h.to_ne_bytes()) | 0x100
            }
        }
    }
}

/// Begin a write transaction holding `lock` until it ends.
pub(crate) async fn begin_write(
    store: &Store,
    lock: WriteLock<'_>,
) -> Result<Transaction<'static, Any>, StoreError> {
    match store.dialect() {
        Dialect::Sqlite => Ok(store.pool().begin_with("BEGIN IMMEDIATE").await?),
        Dialect::Postgres => {
            let mut tx = store.pool().begin().await?;
            if !matches!(lock, WriteLock::OutboxClaim) {
                // The function returns void, which the Any driver cannot
                // decode: select a constant from it instead.
                sqlx::query("SELECT 1 FROM pg_advisory_xact_lock($1, $2)")
                    .bind(LOCK_SPACE)
                    .bind(lock.key())
                    .execute(&mut *tx)
                    .await?;
            }
            Ok(tx)
        }
    }
}

/// The clause that makes the outbox claim's `SELECT` (over `outbox o`) lock
/// the rows it returns and skip rows another worker has locked. Empty on
/// SQLite, where [`begin_write`] already serialized the claim.
pub(crate) fn claim_rows_clause(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Sqlite => "",
        Dialect::Postgres => " FOR UPDATE OF o SKIP LOCKED",
    }
}
