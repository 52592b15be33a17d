//! Running one test body on SQLite and on PostgreSQL.
//!
//! `both! { #[tokio::test] async fn name(fx) { … } }` makes `name::sqlite`
//! and `name::postgres`; the latter prints a SKIP line and passes when
//! PostgreSQL is not reachable (see `store::testing`).

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use store::testing::{pg_test_db, TestDb};
use store::Store;

/// Which database a test body runs on, and the databases made for it.
pub struct Fx {
    pg: bool,
    /// The database made when PostgreSQL was found reachable, not yet used.
    spare: Mutex<Option<TestDb>>,
    /// Databases in use (dropped with the fixture).
    dbs: Mutex<Vec<TestDb>>,
    /// Temporary directories of SQLite files (removed with the fixture).
    dirs: Mutex<Vec<PathBuf>>,
}

impl Fx {
    pub fn sqlite() -> Fx {
        Fx {
            pg: false,
            spare: Mutex::new(None),
            dbs: Mutex::new(Vec::new()),
            dirs: Mutex::new(Vec::new()),
        }
    }

    /// `None` (after printing SKIP) when PostgreSQL is not reachable.
    pub async fn postgres() -> Option<Fx> {
        let db = pg_test_db().await?;
        Some(Fx {
            pg: true,
            spare: Mutex::new(Some(db)),
            dbs: Mutex::new(Vec::new()),
            dirs: Mutex::new(Vec::new()),
        })
    }

    pub fn is_pg(&self) -> bool {
        self.pg
    }

    /// A fresh, empty store: in-memory SQLite, or a new PostgreSQL database.
    pub async fn store(&self) -> Store {
        if self.pg {
            Store::connect(&self.location().await).await.unwrap()
        } else {
            Store::open_in_memory().await.unwrap()
        }
    }

    /// A fresh database that several stores can open (one after the other
    /// or at once): a SQLite file in a new temporary directory, or a new
    /// PostgreSQL database. For [`Store::connect`].
    pub async fn location(&self) -> String {
        if self.pg {
            let spare = self.spare.lock().unwrap().take();
            let db = match spare {
                Some(db) => db,
                None => pg_test_db()
                    .await
                    .expect("PostgreSQL went away during the test"),
            };
            let url = db.url().to_string();
            self.dbs.lock().unwrap().push(db);
            url
        } else {
            static N: AtomicU32 = AtomicU32::new(0);
            let dir = std::env::temp_dir().join(format!(
                "calllock-store-test-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = std::fs::remove_dir_all(&dir);
            self.dirs.lock().unwrap().push(dir.clone());
            dir.join("calllock.db").display().to_string()
        }
    }
}

impl Drop for Fx {
    fn drop(&mut self) {
        for d in self.dirs.lock().unwrap().drain(..) {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

/// Define a test body once, run it as `name::sqlite` and `name::postgres`.
macro_rules! both {
    ($(#[$attr:meta])+ async fn $name:ident($fx:ident) $body:block) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            $(#[$attr])+
            async fn sqlite() {
                let $fx = $crate::common::Fx::sqlite();
                $body
            }

            $(#[$attr])+
            async fn postgres() {
                let Some($fx) = $crate::common::Fx::postgres().await else {
                    return;
                };
                $body
            }
        }
    };
}
