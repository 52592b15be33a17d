//! Test support (feature `testing`): a fresh PostgreSQL database per test.
//!
//! ```ignore
//! #[tokio::test]
//! async fn works_on_postgres() {
//!     let Some(db) = store::testing::pg_test_db().await else { return }; // prints SKIP
//!     let store = store::Store::connect(db.url()).await.unwrap();
//!     // … the database is dropped when `db` goes out of scope.
//! }
//! ```
//!
//! The admin URL is `postgres://postgres@127.0.0.1:5432/postgres`, or
//! `CALLLOCK_TEST_PG_URL`. When it cannot be reached the helper prints
//! `SKIP (PostgreSQL not reachable at …): <test>` and returns `None` — unless
//! `CALLLOCK_TEST_PG_REQUIRED=1`, which turns that into a panic (for CI
//! machines that are supposed to have PostgreSQL).

use crate::{redact_url, Store, StoreError};
use sqlx::{AnyConnection, Connection, Executor};
use std::io::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

/// The admin URL used when `CALLLOCK_TEST_PG_URL` is not set.
pub const DEFAULT_ADMIN_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";
/// Prefix of the databases this module creates.
pub const DB_PREFIX: &str = "calllock_t_";
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// A PostgreSQL database that exists for one test; dropped (connections
/// terminated) when this value is dropped.
#[derive(Debug)]
pub struct TestDb {
    admin_url: String,
    url: String,
    name: String,
}

impl TestDb {
    /// The URL of the test database (give it to [`Store::connect`]).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The database name (`calllock_t_…`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A new [`Store`] on this database (each call: a separate pool).
    pub async fn store(&self) -> Result<Store, StoreError> {
        Store::connect(&self.url).await
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let admin = self.admin_url.clone();
        let name = self.name.clone();
        // Drop may run inside a runtime (even a single-threaded one): do the
        // async work on a thread of its own and wait for it.
        let worker = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            rt.block_on(async {
                let mut c = admin_connect(&admin).await?;
                c.execute(format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)").as_str())
                    .await
                    .map_err(|e| e.to_string())?;
                let _ = c.close().await;
                Ok::<(), String>(())
            })
        });
        match worker.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => eprintln!("warning: could not drop test database {}: {e}", self.name),
            Err(_) => eprintln!("warning: dropping test database {} panicked", self.name),
        }
    }
}

/// The admin URL: `CALLLOCK_TEST_PG_URL` or [`DEFAULT_ADMIN_URL`].
pub fn admin_url() -> String {
    std::env::var("CALLLOCK_TEST_PG_URL")
        .ok()
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| DEFAULT_ADMIN_URL.to_string())
}

/// A fresh, empty database for the current test (named after libtest's
/// thread name), or `None` (after printing why) when PostgreSQL is not
/// reachable.
pub async fn pg_test_db() -> Option<TestDb> {
    let test = std::thread::current()
        .name()
        .unwrap_or("<unnamed test>")
        .to_string();
    pg_test_db_for(&test).await
}

/// [`pg_test_db`] with the test's name given.
pub async fn pg_test_db_for(test: &str) -> Option<TestDb> {
    let admin = admin_url();
    // Unreachable once, unreachable for the whole test binary: no waiting
    // for the connect timeout in every test.
    static UNREACHABLE: OnceLock<String> = OnceLock::new();
    let skip = |why: &str| {
        let msg = format!(
            "SKIP (PostgreSQL not reachable at {}): {test} [{why}]",
            redact_url(&admin)
        );
        if std::env::var("CALLLOCK_TEST_PG_REQUIRED").is_ok_and(|v| v == "1") {
            panic!("{msg} — CALLLOCK_TEST_PG_REQUIRED=1");
        }
        // Straight to the stderr handle: libtest captures `eprintln!` of
        // passing tests, and a skip must be seen.
        let _ = writeln!(std::io::stderr(), "{msg}");
    };
    if let Some(why) = UNREACHABLE.get() {
        skip(why);
        return None;
    }
    let mut conn = match admin_connect(&admin).await {
        Ok(c) => c,
        Err(e) => {
            let _ = UNREACHABLE.set(e.clone());
            skip(&e);
            return None;
        }
    };
    let name = unique_name();
    if let Err(e) = conn
        .execute(format!("CREATE DATABASE \"{name}\"").as_str())
        .await
    {
        // Reachable but unusable (no CREATEDB right, say): a real failure.
        panic!(
            "cannot create the test database {name} at {}: {e}",
            redact_url(&admin)
        );
    }
    let _ = conn.close().await;
    Some(TestDb {
        url: with_database(&admin, &name),
        admin_url: admin,
        name,
    })
}

async fn admin_connect(url: &str) -> Result<AnyConnection, String> {
    sqlx::any::install_default_drivers();
    match tokio::time::timeout(CONNECT_TIMEOUT, AnyConnection::connect(url)).await {
        Ok(Ok(c)) => Ok(c),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no answer within {} s", CONNECT_TIMEOUT.as_secs())),
    }
}

/// `calllock_t_` and 16 hex digits from the process id, the clock and a
/// counter.
fn unique_name() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in [
        u128::from(std::process::id()),
        nanos,
        u128::from(COUNTER.fetch_add(1, Ordering::Relaxed)),
    ] {
        for b in part.to_le_bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{DB_PREFIX}{h:016x}")
}

/// `url` with its database (path) replaced by `name`, parameters kept.
fn with_database(url: &str, name: &str) -> String {
    let (head, query) = match url.find('?') {
        Some(i) => url.split_at(i),
        None => (url, ""),
    };
    let authority_start = head.find("://").map_or(0, |i| i + 3);
    let base = match head[authority_start..].find('/') {
        Some(i) => &head[..authority_start + i],
        None => head,
    };
    format!("{base}/{name}{query}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_in_url() {
        assert_eq!(
            with_database("postgres://postgres@127.0.0.1:5432/postgres", "x"),
            "postgres://postgres@127.0.0.1:5432/x"
        );
        assert_eq!(
            with_database("postgres://u:p@h/db?sslmode=disable", "x"),
            "postgres://u:p@h/x?sslmode=disable"
        );
        assert_eq!(with_database("postgres://h", "x"), "postgres://h/x");
        assert!(unique_name().starts_with(DB_PREFIX));
        assert_ne!(unique_name(), unique_name());
    }
}
