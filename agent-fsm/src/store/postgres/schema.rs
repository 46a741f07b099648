//! The tables of a Postgres store, and the migration that creates them in
//! the configured schema when they are absent: every table of the store
//! and of a fleet of workers sharing it, created once, idempotently, by
//! whichever process connects first.

use postgres::Client;

use super::pool::{read_err, write_err};
use super::quote_ident;
use crate::store::StoreError;

/// The schema version this build writes, and the newest it reads (kept in
/// the `meta` table under `schema_version`).
pub(crate) const SCHEMA_VERSION: i64 = 1;

/// The tables, in the connection's search path (the configured schema).
/// Times are `timestamptz` at millisecond precision, as SQLite keeps them.
const TABLES: &str = "
CREATE TABLE IF NOT EXISTS agents (
    agent text PRIMARY KEY, machine text NOT NULL, format integer NOT NULL, next_seq bigint NOT NULL,
    forked_from text, forked_at bigint, created_at timestamptz NOT NULL
);
-- epoch, worker: the fence the write carried (NULL from an unfenced store).
CREATE TABLE IF NOT EXISTS events (
    agent text NOT NULL, seq bigint NOT NULL, at timestamptz NOT NULL, state text NOT NULL, event text NOT NULL,
    origin text, epoch bigint, worker text,
    PRIMARY KEY (agent, seq)
);
CREATE TABLE IF NOT EXISTS snapshots (
    agent text NOT NULL, seq bigint NOT NULL, format integer NOT NULL, state text NOT NULL, data text NOT NULL,
    PRIMARY KEY (agent, seq)
);
CREATE TABLE IF NOT EXISTS effects (
    agent text NOT NULL, kind smallint NOT NULL, key text NOT NULL, started bigint NOT NULL,
    finished bigint, deadline timestamptz, event text,
    PRIMARY KEY (agent, kind, key, started)
);
-- The work in flight, which a step finishes by kind and key (see sqlite.rs).
CREATE INDEX IF NOT EXISTS effects_in_flight ON effects (agent, kind, key) WHERE finished IS NULL;
-- Which worker runs an agent, under which epoch (the fencing token), until when.
-- failures: how many times in a row the machine failed at step failed_seq on
-- its own work (`failure` the last message); halted: no worker claims it,
-- `halt` saying why (NULL: those failures; `unreadable`: its stored rows do not
-- read; `unencodable`: a step of it does not encode).
CREATE TABLE IF NOT EXISTS leases (
    agent text PRIMARY KEY REFERENCES agents (agent), worker text, epoch bigint NOT NULL DEFAULT 0,
    expires_at timestamptz, assigned text, done boolean NOT NULL DEFAULT false,
    failures integer NOT NULL DEFAULT 0, failed_seq bigint, failure text, halted boolean NOT NULL DEFAULT false,
    halt text
);
CREATE INDEX IF NOT EXISTS leases_open ON leases (expires_at) WHERE NOT done;
-- Events sent to an agent from any process; applied_seq: the step that took it
-- (-1: refused, `refusal` saying why); failures: how many times the machine
-- panicked on it, `failure` the last panic's message.
CREATE TABLE IF NOT EXISTS inbox (
    id bigserial PRIMARY KEY, agent text NOT NULL, event text NOT NULL,
    sent_at timestamptz NOT NULL DEFAULT now(), applied_seq bigint,
    failures integer NOT NULL DEFAULT 0, failure text, refusal text
);
CREATE INDEX IF NOT EXISTS inbox_unapplied ON inbox (agent, id) WHERE applied_seq IS NULL;
-- An agent's refused rows, counted by its status, without a scan of the inbox.
CREATE INDEX IF NOT EXISTS inbox_refused ON inbox (agent, id) WHERE applied_seq = -1;
-- machine: the name of the machine a worker runs; life: a token of the process
-- that registered last under the id (both NULL from an earlier release).
CREATE TABLE IF NOT EXISTS workers (
    worker text PRIMARY KEY, capacity integer NOT NULL, heartbeat timestamptz NOT NULL DEFAULT now(),
    stopping boolean NOT NULL DEFAULT false, machine text, life text
);
";

/// The inbox and lease columns tables created by an earlier release lack.
const ADDED_COLUMNS: &str = "
ALTER TABLE inbox ADD COLUMN IF NOT EXISTS failures integer NOT NULL DEFAULT 0,
                  ADD COLUMN IF NOT EXISTS failure text, ADD COLUMN IF NOT EXISTS refusal text;
ALTER TABLE leases ADD COLUMN IF NOT EXISTS failures integer NOT NULL DEFAULT 0,
                   ADD COLUMN IF NOT EXISTS failed_seq bigint, ADD COLUMN IF NOT EXISTS failure text,
                   ADD COLUMN IF NOT EXISTS halted boolean NOT NULL DEFAULT false,
                   ADD COLUMN IF NOT EXISTS halt text;
ALTER TABLE workers ADD COLUMN IF NOT EXISTS machine text, ADD COLUMN IF NOT EXISTS life text;
";

/// How many columns [`ADDED_COLUMNS`] adds.
const ADDED: i64 = 10;

/// Creates the schema and its tables if absent, in one transaction under
/// an advisory lock (two processes connecting at once would otherwise race
/// on `CREATE SCHEMA IF NOT EXISTS`, which is not atomic), and checks the
/// schema version.
///
/// # Errors
/// [`StoreError::UnknownFormat`] for a schema written by a newer release;
/// the server's error otherwise.
pub(crate) fn migrate(client: &mut Client, schema: &str) -> Result<(), StoreError> {
    let mut tx = client.transaction().map_err(write_err)?;
    // Migrations of processes starting together take turns, however long
    // each waits: the connection's lock timeout is for the agents' writes.
    tx.batch_execute("SET LOCAL lock_timeout TO 0").map_err(write_err)?;
    let lock = format!("agent_fsm migration {schema}");
    tx.execute("SELECT pg_advisory_xact_lock(hashtext($1))", &[&lock]).map_err(write_err)?;
    tx.batch_execute(&format!(
        "CREATE SCHEMA IF NOT EXISTS {};
         CREATE TABLE IF NOT EXISTS meta (key text PRIMARY KEY, value bigint NOT NULL);",
        quote_ident(schema)
    ))
    .map_err(write_err)?;
    tx.execute(
        "INSERT INTO meta (key, value) VALUES ('schema_version', $1) ON CONFLICT (key) DO NOTHING",
        &[&SCHEMA_VERSION],
    )
    .map_err(write_err)?;
    let version: i64 =
        tx.query_one("SELECT value FROM meta WHERE key = 'schema_version'", &[]).map_err(read_err)?.get(0);
    if version > SCHEMA_VERSION {
        return Err(StoreError::UnknownFormat {
            what: format!("the store schema `{schema}`"),
            found: u32::try_from(version).unwrap_or(u32::MAX),
            supported: u32::try_from(SCHEMA_VERSION).unwrap_or(0),
        });
    }
    // `CREATE INDEX IF NOT EXISTS` locks its table against writes before
    // it finds the index there: run on every connect, it would wait for
    // every write in flight (one a paused process holds open, for as long
    // as it lives) with every other write of the table queued behind it.
    // The tables and indexes are created in one transaction, so with the
    // indexes there everything is, and the statements are skipped.
    let indexes = ["effects_in_flight", "leases_open", "inbox_unapplied", "inbox_refused"];
    let created: Option<bool> = tx
        .query_one("SELECT bool_and(to_regclass(name) IS NOT NULL) FROM unnest($1::text[]) AS name", &[&&indexes[..]])
        .map_err(read_err)?
        .try_get(0)
        .map_err(read_err)?;
    if created != Some(true) {
        tx.batch_execute(TABLES).map_err(write_err)?;
    }
    // The columns added since the tables' first release: looked up first,
    // as `ALTER TABLE` would lock the table against every write in flight.
    let added: i64 = tx
        .query_one(
            "SELECT count(*) FROM information_schema.columns WHERE table_schema = current_schema()
             AND ((table_name = 'inbox' AND column_name IN ('failures', 'failure', 'refusal'))
                  OR (table_name = 'leases' AND column_name IN ('failures', 'failed_seq', 'failure', 'halted', 'halt'))
                  OR (table_name = 'workers' AND column_name IN ('machine', 'life')))",
            &[],
        )
        .map_err(read_err)?
        .try_get(0)
        .map_err(read_err)?;
    if added < ADDED {
        tx.batch_execute(ADDED_COLUMNS).map_err(write_err)?;
    }
    tx.commit().map_err(write_err)
}
