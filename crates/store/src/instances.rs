//! Which CallLock processes are alive.
//!
//! Every process that takes calls or works the outbox names itself with an
//! id of its own (`host#pid-start`, see `calllock::instance`) and writes a
//! heartbeat every few seconds ([`Store::heartbeat`]). A live call belongs
//! to the process that began it (`calls.instance`). Recovery
//! ([`Store::mark_orphans_interrupted`], [`Store::calls_pending_postcall`])
//! only takes calls whose process has no heartbeat within the lease: a
//! second `calllock chat` or `outbox deliver` on the same database never
//! touches the first one's live call, and a crashed process's calls are
//! taken over once its lease runs out.

use crate::{Store, StoreError};

/// The SQL condition "the call's process is not alive" (`$1` = the oldest
/// heartbeat that still counts).
pub(crate) const OWNER_GONE: &str =
    "instance NOT IN (SELECT instance FROM instances WHERE heartbeat_unix >= $1)";

impl Store {
    /// `instance` is alive at `now_unix` (registers it on first call).
    pub async fn heartbeat(&self, instance: &str, now_unix: f64) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO instances (instance, started_unix, heartbeat_unix) VALUES ($1, $2, $2) \
             ON CONFLICT (instance) DO UPDATE SET heartbeat_unix = excluded.heartbeat_unix",
        )
        .bind(instance)
        .bind(now_unix)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// `instance` stopped cleanly: its heartbeat is removed (its finished
    /// calls need nothing; a call it left active is an orphan at once).
    pub async fn retire_instance(&self, instance: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM instances WHERE instance = $1")
            .bind(instance)
            .execute(self.pool())
            .await?;
        Ok(())
    }

    /// The processes with a heartbeat within `lease_s` of `now_unix`, sorted.
    pub async fn live_instances(
        &self,
        now_unix: f64,
        lease_s: f64,
    ) -> Result<Vec<String>, StoreError> {
        let mut ids: Vec<String> =
            sqlx::query_scalar("SELECT instance FROM instances WHERE heartbeat_unix >= $1")
                .bind(now_unix - lease_s)
                .fetch_all(self.pool())
                .await?;
        ids.sort();
        Ok(ids)
    }
}
