//! This process among others on one database: its id, its heartbeat, and
//! taking over the calls of processes that are gone.
//!
//! The id is `<instance>:<pid>:<start ms>` — unique per process even when
//! several share a host name (two `calllock chat` on one machine) or a pid
//! (containers restart as pid 1). While the process runs, [`KeepAlive`]
//! writes a heartbeat every third of `instance_lease_s`; a call is taken
//! over by another process ([`crate::call::delivery::recover`]) only once its
//! owner's heartbeat is older than the lease.

use std::sync::OnceLock;
use std::time::Duration;

/// This process's id (computed once): `<label>:<pid>:<start ms>`.
pub fn process_id(label: &str) -> String {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| {
        let start = chrono::Utc::now().timestamp_millis();
        format!("{label}:{}:{start}", std::process::id())
    })
    .clone()
}

/// Seconds since the Unix epoch, now.
pub fn now_unix() -> f64 {
    chrono::Utc::now().timestamp_millis() as f64 / 1000.0
}

/// The heartbeat of this process while it runs.
pub struct KeepAlive {
    store: store::Store,
    id: String,
    task: tokio::task::JoinHandle<()>,
}

impl KeepAlive {
    /// Write the first heartbeat now, then one every `lease_s / 3`.
    pub async fn start(
        store: store::Store,
        id: String,
        lease_s: f64,
    ) -> Result<Self, store::StoreError> {
        store.heartbeat(&id, now_unix()).await?;
        let every = Duration::from_secs_f64((lease_s / 3.0).max(0.1));
        let task = tokio::spawn({
            let (store, id) = (store.clone(), id.clone());
            async move {
                loop {
                    tokio::time::sleep(every).await;
                    if let Err(e) = store.heartbeat(&id, now_unix()).await {
                        tracing::warn!(error = %e, "cannot write the heartbeat");
                    }
                }
            }
        });
        Ok(KeepAlive { store, id, task })
    }

    /// This process's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// A clean stop: no more heartbeats, the entry removed (a call this
    /// process still had live is then taken over at once by the next one).
    pub async fn stop(&self) {
        self.task.abort();
        if let Err(e) = self.store.retire_instance(&self.id).await {
            tracing::warn!(error = %e, "cannot retire the instance");
        }
    }
}

impl Drop for KeepAlive {
    fn drop(&mut self) {
        self.task.abort();
    }
}
