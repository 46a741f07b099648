//! The connection pool: a few std threads, each owning one
//! `postgres::Client`, taking boxed jobs from one channel. A caller sends a
//! job and blocks on its reply.
//!
//! Why threads rather than a mutex around a client: the blocking
//! `postgres::Client` drives its connection on a tokio runtime of its own
//! and panics when called from a thread that is already inside a tokio
//! runtime, which is exactly where a durable agent writes
//! ([`Durability::BeforeAction`](crate::store::Durability::BeforeAction)
//! commits on the worker's runtime thread). On a thread of the pool the
//! client never sees the caller's runtime.

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use postgres::{Client, GenericClient, NoTls, Statement};

use crate::store::StoreError;

/// A job for a connection thread.
type Job = Box<dyn FnOnce(&mut Conn) + Send>;

/// Statements prepared on one connection, by their SQL: a step's
/// statements are parsed and planned once per connection, not once per
/// step (which would double the round trips).
#[derive(Debug, Default)]
pub(crate) struct Statements(HashMap<&'static str, Statement>);

impl Statements {
    /// `sql` prepared on `client` (the connection, or a transaction on it).
    pub(crate) fn get(
        &mut self,
        client: &mut impl GenericClient,
        sql: &'static str,
    ) -> Result<Statement, postgres::Error> {
        if let Some(statement) = self.0.get(sql) {
            return Ok(statement.clone());
        }
        let statement = client.prepare(sql)?;
        self.0.insert(sql, statement.clone());
        Ok(statement)
    }
}

/// One connection thread's state: its client, opened on first use and
/// again after it broke, and its prepared statements.
pub(crate) struct Conn {
    config: Arc<postgres::Config>,
    /// The statements each new connection runs first (its search path).
    setup: Arc<str>,
    client: Option<Client>,
    statements: Statements,
    /// When the last job on the client ended.
    used: Instant,
}

/// How long a connection sits idle before a job first asks whether the
/// server still has it: the question costs a round trip, which steps that
/// come one right after another need not pay.
const IDLE_CHECK: Duration = Duration::from_millis(50);

impl Conn {
    /// The open client and its statements, connecting first when there is
    /// no client or the server closed it.
    fn open(&mut self) -> Result<(&mut Client, &mut Statements), StoreError> {
        // The blocking client reads from its socket only inside a call: a
        // connection the server closed while it sat idle (a restart, every
        // backend terminated) still says it is open, and the job would fail
        // on it although the server is back. An empty query (one round
        // trip, answered at once by a server that has the connection) takes
        // in the server's goodbye and the close. Waiting instead for the
        // client's timer to read what is already there costs more (about
        // 1.5 ms against 30 µs on loopback), and a connection that does not
        // answer within the connect timeout is as good as gone.
        let idle = self.used.elapsed() >= IDLE_CHECK;
        let limit = self.config.get_connect_timeout().copied().unwrap_or(CONNECT_TIMEOUT);
        let gone = self.client.as_mut().filter(|_| idle).and_then(|client| client.is_valid(limit).err());
        if let Some(error) = gone {
            tracing::info!(%error, "a Postgres connection closed while idle; connecting again");
            self.client = None;
        }
        if self.client.as_ref().is_none_or(Client::is_closed) {
            self.client = None;
            self.statements = Statements::default();
            self.client = Some(connect(&self.config, &self.setup)?);
        }
        match &mut self.client {
            Some(client) => Ok((client, &mut self.statements)),
            None => Err(StoreError::Read("no connection".into())),
        }
    }
}

/// How long connecting may take when the URL sets no `connect_timeout`.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A new connection, its `setup` run, within the connect timeout as a
/// whole: the client bounds only the socket's connecting by it, and a
/// server that accepts and never answers (hung, or behind a proxy holding
/// the traffic) would keep the call waiting for as long as it does. The
/// handshake runs on a thread of its own, left to end by itself when the
/// wait is given up (the connection it may open then is dropped).
fn connect(config: &Arc<postgres::Config>, setup: &Arc<str>) -> Result<Client, StoreError> {
    let limit = config.get_connect_timeout().copied().unwrap_or(CONNECT_TIMEOUT);
    let (config, setup) = (Arc::clone(config), Arc::clone(setup));
    let (tx, rx) = mpsc::channel();
    thread::Builder::new()
        .name("agent-fsm-pg-connect".to_owned())
        .spawn(move || {
            let connected = config.connect(NoTls).and_then(|mut client| client.batch_execute(&setup).map(|()| client));
            // Nobody waits any more when the wait was given up.
            let _ = tx.send(connected);
        })
        .map_err(|e| StoreError::Read(Box::new(e)))?;
    match rx.recv_timeout(limit) {
        Ok(connected) => connected.map_err(read_err),
        Err(mpsc::RecvTimeoutError::Timeout) => {
            Err(StoreError::Read(format!("the server did not answer within {limit:?}").into()))
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => Err(StoreError::Read("the connecting thread failed".into())),
    }
}

/// The pool: the job channel and its threads (which end when the last
/// store sharing the pool is dropped, with the channel).
pub(crate) struct Pool {
    jobs: Sender<Job>,
    size: usize,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool").field("size", &self.size).finish_non_exhaustive()
    }
}

impl Pool {
    /// Starts `size` connection threads (at least one). They connect on
    /// their first job, and run `setup` on each new connection.
    pub(crate) fn start(config: postgres::Config, setup: &str, size: usize) -> Result<Self, StoreError> {
        let size = size.max(1);
        let (jobs, queue) = mpsc::channel::<Job>();
        let queue = Arc::new(Mutex::new(queue));
        let config = Arc::new(config);
        let setup: Arc<str> = Arc::from(setup);
        for i in 0..size {
            let conn = Conn {
                config: Arc::clone(&config),
                setup: Arc::clone(&setup),
                client: None,
                statements: Statements::default(),
                used: Instant::now(),
            };
            let queue = Arc::clone(&queue);
            thread::Builder::new()
                .name(format!("agent-fsm-pg-{i}"))
                .spawn(move || serve(&queue, conn))
                .map_err(|e| StoreError::Read(Box::new(e)))?;
        }
        Ok(Self { jobs, size })
    }

    /// Runs `job` on a connection thread and waits for its result. The
    /// job gets the open client and its prepared statements; a job that
    /// cannot connect gets no call and the connection error is returned.
    pub(crate) fn run<R, F>(&self, job: F) -> Result<R, StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&mut Client, &mut Statements) -> Result<R, StoreError> + Send + 'static,
    {
        let (reply, result) = mpsc::sync_channel(1);
        let job: Job = Box::new(move |conn: &mut Conn| {
            let out = conn.open().and_then(|(client, statements)| job(client, statements));
            // The caller may have gone (a panic on its side): nothing to tell.
            let _ = reply.send(out);
        });
        self.jobs.send(job).map_err(|_| StoreError::Write("the store's connection threads are gone".into()))?;
        // A job that panicked dropped its reply sender.
        result.recv().map_err(|_| StoreError::Write("the store's connection thread failed mid-call".into()))?
    }
}

/// A connection thread: takes jobs until the channel closes. A job that
/// panics costs its connection (a transaction may be half done), not the
/// thread.
fn serve(queue: &Mutex<Receiver<Job>>, mut conn: Conn) {
    loop {
        let job = queue.lock().unwrap_or_else(PoisonError::into_inner).recv();
        let Ok(job) = job else { return };
        if catch_unwind(AssertUnwindSafe(|| job(&mut conn))).is_err() {
            tracing::warn!("a job on a Postgres connection thread panicked; the connection is closed");
            conn.client = None;
        }
        conn.used = Instant::now();
    }
}

/// A failed read or connection.
pub(crate) fn read_err(e: postgres::Error) -> StoreError {
    StoreError::Read(Box::new(e))
}

/// Whether the server refused to send text as UTF-8: bytes a database of
/// encoding `SQL_ASCII` stored as given, which are no UTF-8. Reading the
/// row again fails the same way.
pub(crate) fn untranslatable(e: &postgres::Error) -> bool {
    e.code().is_some_and(|code| {
        *code == postgres::error::SqlState::CHARACTER_NOT_IN_REPERTOIRE
            || *code == postgres::error::SqlState::UNTRANSLATABLE_CHARACTER
    })
}

/// The error of a read of agent `agent`'s `what` rows from step `seq` on:
/// [`StoreError::Corrupt`] for text the server cannot send as UTF-8, which
/// no retry mends, [`StoreError::Read`] otherwise.
pub(crate) fn rows_err<'a>(
    agent: &'a str,
    what: &'static str,
    seq: u64,
) -> impl Fn(postgres::Error) -> StoreError + 'a {
    move |e| if untranslatable(&e) { StoreError::corrupt(agent, what, seq, e) } else { read_err(e) }
}

/// A failed write: [`StoreError::Full`] for Postgres's "insufficient
/// resources" class (disk full, out of memory),
/// [`StoreError::Write`] otherwise.
pub(crate) fn write_err(e: postgres::Error) -> StoreError {
    match e.code() {
        Some(code) if code.code().starts_with("53") => StoreError::Full(e.to_string()),
        _ => StoreError::Write(Box::new(e)),
    }
}
