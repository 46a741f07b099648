//! The stores a store test runs on: the in-memory store, a SQLite file in
//! a temp dir, and, when `AGENT_FSM_PG_URL` names a server, Postgres in a
//! schema of its own (created fresh, dropped after), so that tests run in
//! parallel on one database. Without the variable a Postgres run prints
//! one line saying it was skipped, and passes.

// Each test file uses a different part of this module.
#![allow(dead_code)]

use agent_fsm::store::{CheckpointStore, MemoryStore, SqliteStore};

/// The variable the Postgres tests read their server's URL from.
pub(crate) const PG_URL: &str = "AGENT_FSM_PG_URL";

/// The running test's name (libtest names the test's thread after it).
pub(crate) fn test_name() -> String {
    std::thread::current().name().unwrap_or("?").to_owned()
}

/// The Postgres URL, or `None` after printing that the test was skipped.
pub(crate) fn pg_url() -> Option<String> {
    match std::env::var(PG_URL) {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            println!("test {}: skipped ({PG_URL} is not set; scripts/postgres.sh starts a server)", test_name());
            None
        }
    }
}

/// Runs `body` against a memory store, a SQLite file, and Postgres (when
/// its URL is set).
pub(crate) fn each_store(body: impl Fn(&dyn CheckpointStore)) {
    body(&MemoryStore::new());
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SqliteStore::open(dir.path().join("agents.db")).expect("open");
    body(&store);
    #[cfg(feature = "postgres")]
    if let Some(pg) = pg::Schema::fresh() {
        body(&pg.store);
    }
}

#[cfg(feature = "postgres")]
pub(crate) mod pg {
    //! A fresh Postgres schema per test.

    use std::sync::atomic::{AtomicU32, Ordering};

    use super::{pg_url, test_name};
    use agent_fsm::store::{PgConfig, PgStore};

    /// A store in a schema of its own, dropped with it.
    pub(crate) struct Schema {
        /// The store.
        pub(crate) store: PgStore,
        /// The schema's name.
        pub(crate) name: String,
        url: String,
    }

    static NEXT: AtomicU32 = AtomicU32::new(0);

    impl Schema {
        /// A store in a new schema, or `None` (the skip line printed)
        /// without a server.
        pub(crate) fn fresh() -> Option<Self> {
            let url = pg_url()?;
            let test: String = test_name()
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' })
                .take(30)
                .collect();
            let millis = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() % 100_000_000);
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let name = format!("t_{test}_{}_{millis}_{n}", std::process::id());
            let config = PgConfig::new(url.clone()).schema(name.clone()).pool_size(2);
            let store = PgStore::connect_with(config).expect("the Postgres server at AGENT_FSM_PG_URL connects");
            Some(Self { store, name, url })
        }

        /// Runs `sql` in the schema and returns its rows, on a thread of
        /// its own (the blocking client must not run on a tokio thread).
        pub(crate) fn sql(&self, sql: &str) -> Vec<postgres::Row> {
            let (url, schema, sql) = (self.url.clone(), self.name.clone(), sql.to_owned());
            std::thread::spawn(move || {
                let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("connects");
                client.batch_execute(&format!("SET search_path TO \"{schema}\"")).expect("search path");
                client.query(sql.as_str(), &[]).unwrap_or_else(|e| panic!("{sql}: {e}"))
            })
            .join()
            .expect("the SQL thread")
        }
    }

    impl Drop for Schema {
        fn drop(&mut self) {
            let (url, name) = (self.url.clone(), self.name.clone());
            // Best effort: a schema left behind by a failed test is
            // harmless, its name unique.
            let _ = std::thread::spawn(move || {
                if let Ok(mut client) = postgres::Client::connect(&url, postgres::NoTls) {
                    let _ = client.batch_execute(&format!("DROP SCHEMA IF EXISTS \"{name}\" CASCADE"));
                }
            })
            .join();
        }
    }
}
